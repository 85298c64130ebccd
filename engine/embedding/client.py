"""The async client of one encoder (process or thread): tokenize, send inputs, await the vectors.

Owns the tokenizer on the caller's event loop; a reader thread hands the encoder's replies
to the loop, so the loop never waits on the model.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from typing import Any

import msgspec
import numpy as np

from engine.embedding.config import EmbeddingConfig
from engine.embedding.inputs import validate_inputs
from engine.embedding.locate import resolve_embedding_model
from engine.embedding.process import run_encoder_process, serve_encoder
from engine.tokenizer import load_tokenizer
from schemas.embedding import (
    AbortEmbed,
    EmbeddingModelInfo,
    EmbedRequest,
    EmbedResult,
    EncoderFailed,
    EncoderOutbound,
    EncoderReady,
    StopEncoder,
)

_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(EncoderOutbound)


class EncoderDeadError(RuntimeError):
    """The encoder process died; requests in flight on it are lost."""


class AsyncEmbedder:
    """One encoder behind an asyncio interface; create with `await AsyncEmbedder.start(config)`."""

    def __init__(self, conn, info: EmbeddingModelInfo, tokenizer: Any, process=None, thread=None) -> None:
        self.info = info
        self.tokenizer = tokenizer
        self._conn, self._process, self._thread = conn, process, thread
        self._loop = asyncio.get_running_loop()
        self._waiting: dict[str, asyncio.Future] = {}
        self._dead = False
        self._send_lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True, name="embedder-reader").start()

    @classmethod
    async def start(cls, config: EmbeddingConfig, in_process: bool = False) -> AsyncEmbedder:
        """Starts the encoder and waits until its model is loaded; ValueError if it cannot load."""
        config.validate()
        files = await asyncio.to_thread(resolve_embedding_model, config.model, config.cache_dir)
        tokenizer = await asyncio.to_thread(load_tokenizer, files.folder)
        ours, theirs = multiprocessing.Pipe()
        process = thread = None
        if in_process:
            thread = threading.Thread(target=serve_encoder, args=(config, theirs), daemon=True, name="encoder")
            thread.start()
        else:
            process = multiprocessing.get_context("spawn").Process(
                target=run_encoder_process, args=(config, theirs), daemon=True, name="encoder")
            process.start()
            theirs.close()
        message = await asyncio.to_thread(cls._await_ready, ours, process)
        return cls(ours, message.info, tokenizer, process=process, thread=thread)

    @staticmethod
    def _await_ready(conn, process) -> EncoderReady:
        while not conn.poll(0.2):
            if process is not None and not process.is_alive():
                raise RuntimeError(f"the encoder process exited with code {process.exitcode} while starting")
        try:
            message = _DECODER.decode(conn.recv_bytes())
        except EOFError:
            raise RuntimeError("the encoder exited while loading its model") from None
        if isinstance(message, EncoderFailed):
            raise ValueError(message.message)
        return message

    @property
    def is_alive(self) -> bool:
        if self._dead:
            return False
        worker = self._process or self._thread
        return worker is not None and worker.is_alive()

    def tokenize(self, texts: list[str], truncate: int | None = None) -> list[list[int]]:
        """Token ids with the model's special tokens; `truncate` cuts each to that many tokens."""
        encoded = self.tokenizer(texts, add_special_tokens=True, truncation=truncate is not None,
                                 max_length=truncate, return_attention_mask=False, return_token_type_ids=False)  # fmt: skip
        return encoded["input_ids"]

    def validate(self, inputs: list[list[int]]) -> None:
        validate_inputs(inputs, self.info)

    async def embed(self, request_id: str, inputs: list[list[int]]) -> np.ndarray:
        """[num_inputs, dimensions] float32; cancelling the caller aborts the request in the encoder."""
        self.validate(inputs)
        if not self.is_alive:
            raise EncoderDeadError("the encoder is not running")
        if request_id in self._waiting:
            raise ValueError(f"request_id: {request_id!r} is already in flight")
        future = self._loop.create_future()
        self._waiting[request_id] = future
        try:
            self._send(EmbedRequest(request_id, inputs))
            return await future
        except asyncio.CancelledError:
            self._send(AbortEmbed(request_id))
            raise
        finally:
            self._waiting.pop(request_id, None)

    def _send(self, message) -> None:
        with self._send_lock:
            try:
                self._conn.send_bytes(_ENCODER.encode(message))
            except OSError:
                self._dead = True
                raise EncoderDeadError("the encoder is not running") from None

    def _read(self) -> None:
        try:
            while True:
                message = _DECODER.decode(self._conn.recv_bytes())
                self._loop.call_soon_threadsafe(self._deliver, message)
        except (EOFError, OSError, RuntimeError):  # RuntimeError: the loop is closed
            pass
        try:
            self._loop.call_soon_threadsafe(self._die)
        except RuntimeError:
            pass

    def _deliver(self, message: EmbedResult | EncoderFailed) -> None:
        future = self._waiting.get(message.request_id or "")
        if future is None or future.done():
            return
        if isinstance(message, EncoderFailed):
            future.set_exception(RuntimeError(message.message))
        else:
            vectors = np.frombuffer(message.vectors, dtype="<f4").reshape(message.num_inputs, -1)
            future.set_result(vectors)

    def _die(self) -> None:
        self._dead = True
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(EncoderDeadError("the encoder stopped"))

    async def shutdown(self, timeout: float = 10.0) -> None:
        if not self._dead:
            try:
                self._send(StopEncoder())
            except EncoderDeadError:
                pass
        worker = self._process or self._thread
        if worker is not None:
            await asyncio.to_thread(worker.join, timeout)
            if self._process is not None and self._process.is_alive():
                self._process.kill()
                await asyncio.to_thread(self._process.join, 5)
        self._conn.close()
