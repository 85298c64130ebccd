"""The web playground: `GET /` and `/playground` serve the page, `/static/...` its files from gateway/static."""

from __future__ import annotations

import mimetypes
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

STATIC_DIR = Path(__file__).with_name("static")
PAGE_PATHS = ("/", "/playground")
STATIC_PREFIX = "/static/"
INDEX = "index.html"

# The page may talk to its own origin only; no inline script, no remote font, image or frame.
CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
])
_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".svg": "image/svg+xml",
          ".png": "image/png", ".txt": "text/plain", ".json": "application/json"}


@dataclass(frozen=True, slots=True)
class StaticFile:
    body: bytes
    content_type: str


def load_static(root: Path = STATIC_DIR) -> dict[str, StaticFile]:
    """Every file under `root`, by its relative POSIX path; read once when the app is built.

    Only these names are ever served, so no request path reaches the file system."""
    files = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.name.startswith("."):
            suffix = path.suffix.lower()
            content_type = _TYPES.get(suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            files[path.relative_to(root).as_posix()] = StaticFile(path.read_bytes(), content_type)
    if INDEX not in files:
        raise RuntimeError(f"the playground's {INDEX} is missing from {root}")
    return files


def is_public(path: str) -> bool:
    """The page and its files need no API key: the page asks for one and sends it with its API calls."""
    return path in PAGE_PATHS or path.startswith(STATIC_PREFIX)


STATIC_FILES = web.AppKey("playground_files", Mapping)


def _response(file: StaticFile, headers: dict[str, str] | None = None) -> web.Response:
    charset = "utf-8" if file.content_type.startswith("text/") or file.content_type.endswith("json") else None
    base = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
    return web.Response(body=file.body, content_type=file.content_type, charset=charset,
                        headers={**base, **(headers or {})})


async def page(request: web.Request) -> web.Response:
    file = request.app[STATIC_FILES][INDEX]
    return _response(file, {"Content-Security-Policy": CONTENT_SECURITY_POLICY, "Referrer-Policy": "no-referrer"})


async def static_file(request: web.Request) -> web.Response:
    file = request.app[STATIC_FILES].get(request.match_info["name"])
    if file is None:
        raise web.HTTPNotFound()
    return _response(file)


def add_routes(app: web.Application, root: Path = STATIC_DIR) -> None:
    app[STATIC_FILES] = load_static(root)
    for path in PAGE_PATHS:
        app.router.add_get(path, page)
    app.router.add_get(STATIC_PREFIX + "{name:.+}", static_file)
