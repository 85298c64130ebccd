"""TLS settings: flag checks, and the server context's handling of client certificates (none / optional / required)."""

from __future__ import annotations

import ssl

import aiohttp
import pytest
from aiohttp import web

from gateway.tls import TlsSettings, parse_cert_reqs
from tests.helpers.certs import client_context, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_cert_reqs_names_and_numbers():
    assert parse_cert_reqs("required") == parse_cert_reqs("2") == ssl.CERT_REQUIRED
    assert parse_cert_reqs("Optional") == parse_cert_reqs("1") == ssl.CERT_OPTIONAL
    assert parse_cert_reqs("none") == parse_cert_reqs("0") == ssl.CERT_NONE
    with pytest.raises(ValueError, match="--ssl-cert-reqs"):
        parse_cert_reqs("always")


def test_flag_combinations(pki):
    assert TlsSettings().server_context() is None
    for bad, flag in ((TlsSettings(keyfile="k"), "--ssl-keyfile"), (TlsSettings(ca_certs="ca"), "--ssl-ca-certs"),
                      (TlsSettings(str(pki.server_key), str(pki.server_cert), cert_reqs=ssl.CERT_REQUIRED), "--ssl-cert-reqs"),
                      (TlsSettings("/missing.key", "/missing.pem"), "cannot load")):  # fmt: skip
        with pytest.raises(ValueError, match=flag):
            bad.server_context()


async def _serve(context: ssl.SSLContext):
    async def hello(request):
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_get("/", hello)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    return runner, runner.addresses[0][1]


async def _get(port: int, context: ssl.SSLContext) -> bool:
    """True when the HTTPS request got an answer, False when TLS refused it."""
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"https://127.0.0.1:{port}/", ssl=context) as resp:
                return resp.status == 200
    except (aiohttp.ClientError, ssl.SSLError, ConnectionError):
        return False


@pytest.mark.parametrize("reqs, expected", [
    ("none", {"no cert": True, "good cert": True, "other CA": True}),
    ("optional", {"no cert": True, "good cert": True, "other CA": False}),
    ("required", {"no cert": False, "good cert": True, "other CA": False}),
])  # fmt: skip
async def test_client_certificates(pki, reqs, expected):
    settings = TlsSettings(str(pki.server_key), str(pki.server_cert), str(pki.ca), parse_cert_reqs(reqs))
    runner, port = await _serve(settings.server_context())
    try:
        clients = {"no cert": client_context(pki), "good cert": client_context(pki, pki.client_cert, pki.client_key),
                   "other CA": client_context(pki, pki.other_client_cert, pki.other_client_key)}  # fmt: skip
        got = {name: await _get(port, context) for name, context in clients.items()}
        assert got == expected
        assert await _get(port, clients["good cert"])  # still serving after the refusals
    finally:
        await runner.cleanup()
