"""OpenAI error bodies: the ApiError exception and the middleware that turns every failure into one."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Iterator

import msgspec
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from schemas.openai import ErrorBody, ErrorInfo

log = logging.getLogger("gateway")

_ENCODER = msgspec.json.Encoder()
_PATH_RE = re.compile(r"at `\$\.?([^`]*)`")
_MISSING_RE = re.compile(r"missing required field `([^`]+)`")


class ApiError(Exception):
    """A request the gateway refuses; raised by handlers, rendered by `error_middleware`."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.headers = headers or {}

    def body(self) -> bytes:
        info = ErrorInfo(message=self.message, type=self.type, param=self.param, code=self.code)
        return _ENCODER.encode(ErrorBody(error=info))

    def anthropic_body(self) -> bytes:
        """Anthropic's shape: `{"type": "error", "error": {"type", "message"}}` (the type from the status)."""
        return _ENCODER.encode({"type": "error", "error": {"type": anthropic_type(self.status), "message": self.message}})

    def response(self, anthropic: bool = False) -> web.Response:
        body = self.anthropic_body() if anthropic else self.body()
        response = web.Response(status=self.status, body=body, content_type="application/json", headers=self.headers)
        if self.headers.get("Connection") == "close":
            response.force_close()  # also skips aiohttp's lingering read of an unread body
        return response


_ANTHROPIC_TYPES = {401: "authentication_error", 403: "permission_error", 404: "not_found_error",
                    413: "request_too_large", 429: "rate_limit_error", 503: "overloaded_error",
                    529: "overloaded_error"}  # fmt: skip
ANTHROPIC_PATHS = ("/v1/messages",)  # routes whose errors take Anthropic's shape


def anthropic_type(status: int) -> str:
    """Anthropic's error type for an HTTP status."""
    return _ANTHROPIC_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def bad_request(message: str, param: str | None = None) -> ApiError:
    return ApiError(400, message, param=param, code="invalid_value" if param else None)


@contextlib.contextmanager
def renamed_params(names: dict[str, str]) -> Iterator[None]:
    """Inside, an ApiError names the front door's field, not chat's: with {"messages": "input"} a
    refusal of `messages` (the translated request's) says `input` (used by the Responses and
    Messages translations)."""
    try:
        yield
    except ApiError as exc:
        root = (exc.param or "").split(".")[0].split("[")[0]
        if root in names:
            exc.param = names[root] + exc.param[len(root):]
            exc.message = re.sub(rf"\b{re.escape(root)}\b", names[root], exc.message)
        raise


def from_decode_error(exc: msgspec.DecodeError) -> ApiError:
    """Malformed JSON or a field of the wrong type: always a 400, naming the field when known."""
    text = str(exc)
    if isinstance(exc, msgspec.ValidationError):
        path = _PATH_RE.search(text)
        missing = _MISSING_RE.search(text)
        names = [m.group(1) for m in (path, missing) if m and m.group(1)]
        return ApiError(400, text, param=".".join(names) or None, code="invalid_type")
    return ApiError(400, f"Malformed JSON body: {text}", code="invalid_json")


def from_value_error(exc: ValueError) -> ApiError:
    """The engine's `ValueError("<field>: message")` as a 400 naming the field."""
    text = str(exc)
    field, sep, _ = text.partition(":")
    param = field.strip() if sep and field.strip().isidentifier() else None
    return ApiError(400, text, param=param, code="invalid_value")


_HTTP_CODES = {
    404: ("not_found_error", "not_found"),
    405: ("invalid_request_error", "method_not_allowed"),
    413: ("invalid_request_error", "request_too_large"),
}


def from_http_exception(exc: web.HTTPException) -> ApiError:
    type_, code = _HTTP_CODES.get(exc.status, ("invalid_request_error", None))
    message = exc.reason
    if exc.status == 404:
        message = "Not found"
    elif exc.status == 413:
        message = f"Request body too large: {exc.text}"
    headers = {k: v for k, v in exc.headers.items() if k.lower() == "allow"}
    return ApiError(exc.status, message, type=type_, code=code, headers=headers)


@web.middleware
async def error_middleware(request: web.Request, handler) -> web.StreamResponse:
    """Renders ApiError and aiohttp's HTTP exceptions as OpenAI error bodies (Anthropic's under
    /v1/messages); a 500 is logged."""
    anthropic = request.path.startswith(ANTHROPIC_PATHS)
    try:
        return await handler(request)
    except ApiError as exc:
        return exc.response(anthropic)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return from_http_exception(exc).response(anthropic)
    except msgspec.DecodeError as exc:
        return from_decode_error(exc).response(anthropic)
    except HttpProcessingError as exc:  # a body aiohttp could not read (bad chunking or content encoding)
        status = exc.code if 400 <= exc.code < 500 else 400
        return ApiError(status, f"The request could not be read: {exc.message}", code="invalid_body").response(anthropic)
    except (ConnectionResetError, asyncio.CancelledError):
        raise
    except Exception:
        log.exception("internal error while serving %s %s", request.method, request.path)
        return ApiError(500, "Internal server error", type="internal_error", code="internal_error").response(anthropic)
