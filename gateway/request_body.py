"""Reading and decoding a request body at the edge: every way a body can be bad is a 4xx, never a 5xx."""

from __future__ import annotations

import asyncio
from typing import TypeVar

import msgspec
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError

from gateway.errors import ApiError, bad_request, from_decode_error

T = TypeVar("T")
_ENCODINGS = {"", "identity", "gzip", "x-gzip", "deflate", "br"}  # what aiohttp decodes (br with brotli installed)


async def read_bytes(request: web.Request, timeout_s: float | None) -> bytes:
    """The raw (decompressed) body; a body that arrives too slowly is a 408, a broken encoding a 400."""
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    if encoding not in _ENCODINGS:
        raise ApiError(415, f"Content-Encoding {encoding!r} is not supported (gzip, deflate or none)",
                       code="unsupported_encoding", headers={"Connection": "close"})  # fmt: skip
    try:
        return await asyncio.wait_for(request.read(), timeout_s)
    except TimeoutError:
        raise ApiError(408, f"The request body did not arrive within {timeout_s:g} s", code="request_timeout",
                       headers={"Connection": "close"}) from None  # fmt: skip
    except (HttpProcessingError, RequestPayloadError) as exc:  # e.g. Content-Encoding: gzip over a plain body
        request.content.feed_eof()  # nothing more to read: aiohttp must not linger on the broken stream
        raise ApiError(400, f"The request body could not be read (is its Content-Encoding right?): {exc}",
                       code="invalid_body", headers={"Connection": "close"}) from None  # fmt: skip


def decode_body(body: bytes, type_: type[T]) -> T:
    """The JSON body decoded into `type_`; malformed, mistyped or absurdly nested input is a 400."""
    if not body.strip():
        raise bad_request("The request body is empty; a JSON object is expected")
    try:
        return msgspec.json.decode(body, type=type_)
    except msgspec.DecodeError as exc:
        raise from_decode_error(exc) from None
    except RecursionError:
        raise ApiError(400, "Malformed JSON body: nested too deeply", code="invalid_json") from None
