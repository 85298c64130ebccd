"""API keys: several keys, a key file, constant-time checks, open /health and /metrics unless --protect-metrics."""

from __future__ import annotations

import pytest

from gateway import auth
from gateway.auth import KeyChecker, collect_keys, read_key_file
from gateway.cli import main
from gateway.state import GatewaySettings

CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def test_every_key_is_accepted_and_nothing_else(make_client):
    client = await make_client(GatewaySettings(api_keys=("k1", "second-key", "k3")))
    for key in ("k1", "second-key", "k3"):
        assert (await client.post("/v1/chat/completions", json=CHAT, headers=_bearer(key))).status == 200
        assert (await client.get("/v1/models", headers=_bearer(key))).status == 200
    for headers in ({}, _bearer("k2"), _bearer("k1x"), {"Authorization": "k1"}, {"Authorization": "Basic k1"},
                    _bearer("sécret")):  # fmt: skip
        resp = await client.get("/v1/models", headers=headers)
        assert resp.status == 401
        assert (await resp.json())["error"]["code"] == "invalid_api_key"
    for path in ("/tokenize", "/detokenize", "/v1/embeddings"):
        assert (await client.post(path, json={})).status == 401


async def test_health_metrics_and_openapi_stay_open(make_client):
    client = await make_client(GatewaySettings(api_keys=("k",)))
    for path in ("/health", "/metrics", "/openapi.json"):
        assert (await client.get(path)).status == 200, path


async def test_protect_metrics(make_client):
    client = await make_client(GatewaySettings(api_keys=("k",), protect_metrics=True))
    for path in ("/health", "/metrics"):
        assert (await client.get(path)).status == 401
        assert (await client.get(path, headers=_bearer("k"))).status == 200
    assert (await client.get("/openapi.json")).status == 200


def test_every_key_is_compared_even_after_a_match(monkeypatch):
    calls = []
    real = auth.hmac.compare_digest
    monkeypatch.setattr(auth.hmac, "compare_digest", lambda a, b: calls.append(b) or real(a, b))
    checker = KeyChecker(["a", "b", "c"])
    assert checker.accepts("Bearer a") and len(calls) == 3
    assert not checker.accepts("Bearer z") and len(calls) == 6


def test_keys_from_flags_file_and_environment(tmp_path):
    key_file = tmp_path / "keys"
    key_file.write_text("# team keys\nalpha\n\n  beta  \n#gamma\n")
    assert read_key_file(str(key_file)) == ["alpha", "beta"]
    assert collect_keys(["x", "alpha"], str(key_file), "env") == ("x", "alpha", "beta")
    assert collect_keys(None, None, "env") == ("env",)
    assert collect_keys(None, None, None) == ()
    empty = tmp_path / "empty"
    empty.write_text("# nothing\n\n")
    with pytest.raises(ValueError, match="holds no key"):
        read_key_file(str(empty))
    with pytest.raises(ValueError, match="cannot read"):
        read_key_file(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="must not be empty"):
        collect_keys([" "], None, None)


def test_cli_refuses_a_bad_key_file_before_loading_anything(tmp_path, capsys):
    assert main(["serve", "--api-key-file", str(tmp_path / "missing")]) == 2
    assert "--api-key-file" in capsys.readouterr().err
