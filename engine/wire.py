"""Length-prefixed msgpack framing of `schemas.engine` messages over a local stream socket."""

from __future__ import annotations

import socket
import struct
import threading

import msgspec

from schemas.engine import ClientMessage, CoreMessage

_HEADER = struct.Struct(">I")
client_encoder = msgspec.msgpack.Encoder()
core_decoder = msgspec.msgpack.Decoder(CoreMessage)
client_decoder = msgspec.msgpack.Decoder(ClientMessage)


def frame(message) -> bytes:
    payload = client_encoder.encode(message)
    return _HEADER.pack(len(payload)) + payload


class BlockingConnection:
    """The core side of the connection: blocking reads (on a reader thread) and writes."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._send_lock = threading.Lock()  # the step loop and the heartbeat thread both send

    def send(self, message) -> None:
        data = frame(message)
        with self._send_lock:
            self.sock.sendall(data)

    def _read_exact(self, n: int) -> bytes | None:
        chunks, remaining = [], n
        while remaining:
            chunk = self.sock.recv(remaining)
            if not chunk:
                return None
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def recv(self):
        """The next client message, or None when the client has gone."""
        header = self._read_exact(_HEADER.size)
        if header is None:
            return None
        payload = self._read_exact(_HEADER.unpack(header)[0])
        return None if payload is None else client_decoder.decode(payload)


async def read_core_message(reader) -> object | None:
    """Async side: the next core message, or None at end of stream."""
    import asyncio

    try:
        header = await reader.readexactly(_HEADER.size)
        payload = await reader.readexactly(_HEADER.unpack(header)[0])
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    return core_decoder.decode(payload)
