"""API keys: read from flags, a file and the environment; checked in constant time on every protected route."""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from pathlib import Path

from aiohttp import web

from gateway import routes_playground
from gateway.errors import ApiError

OPEN_PATHS = ("/health", "/metrics", "/openapi.json")
METRICS_PATHS = ("/health", "/metrics")


def read_key_file(path: str) -> list[str]:
    """One key per line; blank lines and lines starting with # are skipped. ValueError if none is left."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise ValueError(f"--api-key-file: cannot read {path} ({exc.strerror})") from None
    keys = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not keys:
        raise ValueError(f"--api-key-file: {path} holds no key")
    return keys


def collect_keys(flag_keys: Iterable[str] | None, key_file: str | None, env_key: str | None) -> tuple[str, ...]:
    """Every accepted key: the repeated --api-key flags and the file's; GATEWAY_API_KEY only when neither is given."""
    keys = list(flag_keys or [])
    if key_file:
        keys += read_key_file(key_file)
    if not keys and env_key:
        keys.append(env_key)
    if any(not key.strip() for key in keys):
        raise ValueError("--api-key: a key must not be empty")
    return tuple(dict.fromkeys(keys))


class KeyChecker:
    """Compares a presented key with every accepted key, in time that does not depend on where they differ."""

    def __init__(self, keys: Iterable[str]) -> None:
        self._expected = [f"Bearer {key}".encode() for key in keys]

    def accepts_request(self, headers) -> bool:
        """`Authorization: Bearer <key>`, or Anthropic's `x-api-key: <key>`."""
        key = headers.get("x-api-key")
        return self.accepts(headers.get("Authorization", "")) or (key is not None and self.accepts(f"Bearer {key}"))

    def accepts(self, authorization: str) -> bool:
        given = authorization.encode("utf-8", "replace")
        ok = False
        for expected in self._expected:  # no early exit: every key is compared
            ok |= hmac.compare_digest(given, expected)
        return ok


def auth_middleware(keys: Iterable[str], protect_metrics: bool = False):
    """Requires `Authorization: Bearer <key>` (or `x-api-key: <key>`) with one of `keys` on every route except the open ones
    (/health, /metrics, /openapi.json and the playground page; /health and /metrics too with
    `protect_metrics`)."""
    checker = KeyChecker(keys)
    open_paths = tuple(p for p in OPEN_PATHS if not (protect_metrics and p in METRICS_PATHS))

    @web.middleware
    async def middleware(request: web.Request, handler) -> web.StreamResponse:
        if (request.path not in open_paths and not routes_playground.is_public(request.path)
                and not checker.accepts_request(request.headers)):
            raise ApiError(401, "Incorrect API key provided.", code="invalid_api_key")
        return await handler(request)

    return middleware
