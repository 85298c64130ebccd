"""The engine core's busy loop: take new requests and aborts, step, send outputs.

Runs as the main loop of the core process (`run_core_process`) or on a thread for the
in-process client; either way it talks to its client over one local socket.
"""

from __future__ import annotations

import logging
import queue
import signal
import socket
import threading

import msgspec

from engine.config import EngineConfig
from engine.core import EngineCore
from engine.heap import freeze_startup_heap
from engine.profiling import CoreProfiler
from engine.wire import BlockingConnection
from schemas.engine import (
    AbortRequests,
    AddRequest,
    CoreFailed,
    CoreReady,
    HEARTBEAT_INTERVAL_S,
    Heartbeat,
    ResetPrefixCache,
    StartProfile,
    StepOutputs,
    StopProfile,
)

log = logging.getLogger(__name__)
_HANDLED = (AddRequest, AbortRequests, ResetPrefixCache, StartProfile, StopProfile)


def _reader(conn: BlockingConnection, inbox: queue.Queue) -> None:
    try:
        while (message := conn.recv()) is not None:
            inbox.put(message)
    except OSError:
        pass
    inbox.put(None)


def _beat(conn: BlockingConnection, stop: threading.Event) -> None:
    """Tells the client this process is alive (a stopped or frozen process falls silent)."""
    while not stop.wait(HEARTBEAT_INTERVAL_S):
        try:
            conn.send(Heartbeat())
        except OSError:
            return


def serve_core(config: EngineConfig, sock: socket.socket, freeze_heap: bool = False) -> None:
    """Loads the model, announces it, then serves until the client says stop or goes away.
    `freeze_heap` (a core process of its own) keeps the loaded heap out of full GC passes
    (engine/heap.py) and says so in the summary the client logs."""
    conn = BlockingConnection(sock)
    try:
        core = EngineCore(config)
    except Exception as exc:  # report any load failure to the client instead of dying silently
        conn.send(CoreFailed(message=str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"))
        return
    info = core.info
    if freeze_heap:
        info = msgspec.structs.replace(info, summary=f"{info.summary}; {freeze_startup_heap()}")
    conn.send(CoreReady(info))
    inbox: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(conn, inbox), daemon=True, name="core-reader").start()
    stop_beating = threading.Event()
    threading.Thread(target=_beat, args=(conn, stop_beating), daemon=True, name="core-heartbeat").start()
    try:
        _loop(core, conn, inbox)
    except OSError:
        pass  # the client went away mid-send
    finally:
        stop_beating.set()
        sock.close()


def _apply(message, core: EngineCore, profiler: CoreProfiler, conn: BlockingConnection) -> None:
    """One client message; profiler answers go out at once, admission answers with the next send."""
    if isinstance(message, AddRequest):
        core.add_request(message.request)
    elif isinstance(message, AbortRequests):
        core.abort(message.request_ids)
    elif isinstance(message, StartProfile):
        conn.send(profiler.start())
    elif isinstance(message, StopProfile):
        conn.send(profiler.stop(message.path))
    else:
        core.kv.reset_prefix_cache()


def _send_admissions(core: EngineCore, conn: BlockingConnection, outputs: list) -> bool:
    """Sends what the core has admitted or refused (with `outputs`); False when there was nothing."""
    accepted, refused = core.take_admissions()
    if not (accepted or refused or outputs):
        return False
    conn.send(StepOutputs(refused + outputs, core.stats(), accepted))
    return True


def _loop(core: EngineCore, conn: BlockingConnection, inbox: queue.Queue) -> None:
    profiler = CoreProfiler()
    while True:
        changed = False
        try:
            message = inbox.get(block=not core.has_work())
            while True:
                if message is None or not isinstance(message, _HANDLED):
                    return  # Shutdown, or the client has gone
                changed = True
                _apply(message, core, profiler, conn)
                message = inbox.get_nowait()
        except queue.Empty:
            pass
        # Admission answers go out before the step, so a client waiting on them does not wait a step.
        sent = _send_admissions(core, conn, [])
        outputs = core.step() if core.has_work() else []
        if not _send_admissions(core, conn, outputs) and changed and not sent:
            conn.send(StepOutputs([], core.stats()))  # an abort or reset changed the stats


def run_core_process(config: EngineConfig, socket_path: str) -> None:
    """Entry point of the engine-core process: connect back to the client, then serve."""
    logging.basicConfig(level=logging.WARNING)
    # Ctrl-C reaches the whole process group; the client (gateway) drains in-flight requests
    # and then shuts this core down, so the core itself must not die of SIGINT.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(socket_path)
    serve_core(config, sock, freeze_heap=True)
