"""HTTPS with mutual TLS on a real server: the openai client with the CA and its certificate, and every refusal."""

from __future__ import annotations

import http.client
import socket
import ssl

import openai
import pytest

from tests.e2e.conftest import running_server
from tests.helpers.certs import client_context, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def tls_server(tiny_model_dir, pki):
    good = client_context(pki, pki.client_cert, pki.client_key)
    with running_server("--model", str(tiny_model_dir), "--max-model-len", "512", "--served-model-name", "tiny",
                        "--embedding-model", "none", "--ssl-keyfile", str(pki.server_key),
                        "--ssl-certfile", str(pki.server_cert), "--ssl-ca-certs", str(pki.ca),
                        "--ssl-cert-reqs", "required", ssl_context=good) as proc:  # fmt: skip
        yield proc


def _openai(server, context: ssl.SSLContext) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60,
                         http_client=openai.DefaultHttpxClient(verify=context))  # fmt: skip


def _still_serving(server, pki) -> None:
    reply = _openai(server, client_context(pki, pki.client_cert, pki.client_key)).chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": "Hi"}], max_tokens=3, temperature=0)
    assert reply.choices[0].finish_reason in ("length", "stop")
    assert server.proc.poll() is None


def _refused(server, context: ssl.SSLContext) -> bool:
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=30)
    try:
        conn.request("GET", "/health")
        conn.getresponse().read()
    except (ssl.SSLError, ConnectionError, http.client.HTTPException):
        return True
    finally:
        conn.close()
    return False


def test_openai_client_over_https(tls_server, pki):
    assert tls_server.url.startswith("https://")
    assert "at https://127.0.0.1" in tls_server.output
    client = _openai(tls_server, client_context(pki, pki.client_cert, pki.client_key))
    assert [m.id for m in client.models.list().data] == ["tiny"]
    stream = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "Hi"}],
                                            max_tokens=4, temperature=0, stream=True)  # fmt: skip
    assert [c for c in stream]
    _still_serving(tls_server, pki)


def test_client_without_a_certificate_is_refused(tls_server, pki):
    assert _refused(tls_server, client_context(pki))
    with pytest.raises(openai.APIConnectionError):
        _openai(tls_server, client_context(pki)).models.list()
    _still_serving(tls_server, pki)


def test_certificate_of_another_ca_is_refused(tls_server, pki):
    assert _refused(tls_server, client_context(pki, pki.other_client_cert, pki.other_client_key))
    _still_serving(tls_server, pki)


def test_client_that_does_not_trust_the_server_gives_up(tls_server, pki):
    assert _refused(tls_server, ssl.create_default_context())  # the system CAs do not know ours
    _still_serving(tls_server, pki)


def test_plain_http_to_the_tls_port_is_refused_cleanly(tls_server, pki):
    with socket.create_connection(("127.0.0.1", tls_server.port), timeout=30) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        reply = b""
        while chunk := sock.recv(4096):
            reply += chunk
    assert not reply.startswith(b"HTTP/")  # no HTTP answer: the connection just closes (maybe after a TLS alert)
    _still_serving(tls_server, pki)
    assert "Traceback" not in tls_server.output
