"""The encoder's loop: take requests and aborts, run one batch of at most max_batch_tokens, send results.

A batch takes inputs round-robin across the waiting requests, so a one-text query is not
stuck behind a 2048-text indexing request.

Runs as the main loop of the encoder process (`run_encoder_process`) or on a thread for the
in-process client; either way it talks to its client over one `multiprocessing` pipe end,
whose messages are msgpack of `schemas.embedding` structs.
"""

from __future__ import annotations

import logging
import queue
import signal
import threading
from collections import deque
from dataclasses import dataclass, field

import msgspec
import numpy as np

from engine.embedding.config import EmbeddingConfig
from engine.embedding.runner import EmbeddingRunner
from schemas.embedding import (
    AbortEmbed,
    EmbedRequest,
    EmbedResult,
    EncoderFailed,
    EncoderInbound,
    EncoderReady,
)

log = logging.getLogger(__name__)
_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(EncoderInbound)


@dataclass(slots=True)
class _Job:
    """One request's inputs; `vectors` fills up in input order, batch by batch."""

    request_id: str
    inputs: list[list[int]]
    vectors: list[np.ndarray] = field(default_factory=list)
    num_done: int = 0


def _reader(conn, inbox: queue.Queue) -> None:
    try:
        while True:
            inbox.put(_DECODER.decode(conn.recv_bytes()))
    except (EOFError, OSError):
        pass
    inbox.put(None)


def serve_encoder(config: EmbeddingConfig, conn) -> None:
    """Loads the encoder, announces it, then serves until the client says stop or goes away."""
    try:
        runner = EmbeddingRunner(config)
    except Exception as exc:  # report any load failure to the client instead of dying silently
        conn.send_bytes(_ENCODER.encode(EncoderFailed(str(exc) if isinstance(exc, ValueError)
                                                      else f"{type(exc).__name__}: {exc}")))  # fmt: skip
        conn.close()
        return
    conn.send_bytes(_ENCODER.encode(EncoderReady(runner.info)))
    inbox: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(conn, inbox), daemon=True, name="encoder-reader").start()
    try:
        _loop(runner, conn, inbox)
    except OSError:
        pass  # the client went away mid-send
    finally:
        conn.close()


def _take_messages(jobs: deque[_Job], inbox: queue.Queue) -> bool:
    """Applies every queued message (blocking for one when idle); False when the client said stop."""
    try:
        message = inbox.get(block=not jobs)
        while True:
            if isinstance(message, EmbedRequest):
                jobs.append(_Job(message.request_id, message.inputs))
            elif isinstance(message, AbortEmbed):
                for job in [j for j in jobs if j.request_id == message.request_id]:
                    jobs.remove(job)
            else:
                return False  # StopEncoder, or the client has gone
            message = inbox.get_nowait()
    except queue.Empty:
        return True


def _next_batch(jobs: deque[_Job], max_tokens: int) -> list[tuple[_Job, list[int]]]:
    """Inputs taken round-robin from the waiting requests, oldest first, up to `max_tokens` tokens
    (at least one input): a small request waits for one batch, not for a large one's every batch."""
    batch, num_tokens = [], 0
    taken = {id(job): job.num_done for job in jobs}  # the next input of each job
    while True:
        progressed = False
        for job in jobs:
            if taken[id(job)] == len(job.inputs):
                continue
            ids = job.inputs[taken[id(job)]]
            if batch and num_tokens + len(ids) > max_tokens:
                return batch
            batch.append((job, ids))
            num_tokens += len(ids)
            taken[id(job)] += 1
            progressed = True
        if not progressed:
            return batch


def _loop(runner: EmbeddingRunner, conn, inbox: queue.Queue) -> None:
    jobs: deque[_Job] = deque()
    while _take_messages(jobs, inbox):
        if not jobs:
            continue
        batch = _next_batch(jobs, runner.max_batch_tokens)
        try:
            vectors = runner.run([ids for _, ids in batch])  # [len(batch), dimensions]
        except Exception as exc:  # a batch that fails (out of memory) fails its requests, not the process
            log.exception("embedding batch failed")
            for job in {id(j): j for j, _ in batch}.values():
                jobs.remove(job)
                conn.send_bytes(_ENCODER.encode(EncoderFailed(f"{type(exc).__name__}: {exc}", job.request_id)))
            continue
        for (job, _), row in zip(batch, vectors):
            job.vectors.append(row)
            job.num_done += 1
        for job in [j for j in jobs if j.num_done == len(j.inputs)]:
            jobs.remove(job)
            data = np.stack(job.vectors).astype("<f4", copy=False).tobytes()
            conn.send_bytes(_ENCODER.encode(EmbedResult(job.request_id, data, len(job.inputs))))


PROCESS_NAME = "gw-encoder"


def _set_process_name(name: str) -> None:
    """Shows the process as `name` in ps/top (Linux; a no-op elsewhere)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


def run_encoder_process(config: EmbeddingConfig, conn) -> None:
    """Entry point of the encoder process: serve over the inherited pipe end."""
    _set_process_name(PROCESS_NAME)
    logging.basicConfig(level=logging.WARNING)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the gateway drains, then stops this process
    serve_encoder(config, conn)
