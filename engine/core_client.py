"""The client end of one engine core: start it (process or thread), send messages, read replies."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import socket
import tempfile
import threading
import uuid

from engine.config import EngineConfig
from engine.core_loop import run_core_process, serve_core
from engine.wire import frame, read_core_message
from schemas.engine import CoreFailed, CoreReady, Shutdown


class CoreClient:
    """Owns the connection to one engine core and the process or thread running it."""

    def __init__(self, reader, writer, ready: CoreReady, process=None, thread=None) -> None:
        self.reader, self.writer = reader, writer
        self.ready = ready
        self.process = process
        self.thread = thread

    @classmethod
    async def start(cls, config: EngineConfig, in_process: bool = False) -> CoreClient:
        """Starts the core and waits until its model is loaded; ValueError if it cannot load."""
        if in_process:
            ours, theirs = socket.socketpair()
            thread = threading.Thread(target=serve_core, args=(config, theirs), daemon=True, name="engine-core")
            thread.start()
            reader, writer = await asyncio.open_unix_connection(sock=ours)
            return cls(reader, writer, await cls._await_ready(reader, None), thread=thread)
        path = os.path.join(tempfile.gettempdir(), f"engine-core-{uuid.uuid4().hex[:12]}.sock")
        connected: asyncio.Future = asyncio.get_running_loop().create_future()
        server = await asyncio.start_unix_server(lambda r, w: connected.done() or connected.set_result((r, w)), path)
        process = multiprocessing.get_context("spawn").Process(
            target=run_core_process, args=(config, path), daemon=True, name="engine-core"
        )
        process.start()
        try:
            while not connected.done():
                if not process.is_alive():
                    raise RuntimeError(f"the engine core process exited with code {process.exitcode} while starting")
                await asyncio.wait([connected], timeout=0.2)
        finally:
            server.close()
            os.unlink(path)
        reader, writer = connected.result()
        return cls(reader, writer, await cls._await_ready(reader, process), process=process)

    @staticmethod
    async def _await_ready(reader, process) -> CoreReady:
        message = await read_core_message(reader)
        if isinstance(message, CoreFailed):
            if process is not None:
                process.join(timeout=5)
            raise ValueError(message.message)
        if not isinstance(message, CoreReady):
            raise RuntimeError("the engine core exited while loading the model")
        return message

    @property
    def is_alive(self) -> bool:
        if self.process is not None:
            return self.process.is_alive()
        return self.thread is not None and self.thread.is_alive()

    def kill(self) -> None:
        """Ends a core that no longer answers: SIGKILL for a process (a thread cannot be killed: its socket closes)."""
        if self.process is not None:
            self.process.kill()
        else:
            self.writer.close()

    def send(self, message) -> None:
        """Queues a message on the socket without waiting (safe inside finally blocks)."""
        if not self.writer.is_closing():
            self.writer.write(frame(message))

    async def recv(self):
        return await read_core_message(self.reader)

    async def close(self, timeout: float = 10.0) -> None:
        self.send(Shutdown())
        try:
            await self.writer.drain()
        except ConnectionError:
            pass
        self.writer.close()
        if self.process is not None:
            await asyncio.to_thread(self.process.join, timeout)
            if self.process.is_alive():
                self.process.kill()
                await asyncio.to_thread(self.process.join, 5)
        elif self.thread is not None:
            await asyncio.to_thread(self.thread.join, timeout)
