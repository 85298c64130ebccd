"""The playground's routes without a browser: the page, its files, its headers, and what stays locked."""

from __future__ import annotations

import asyncio
import re

import pytest
from yarl import URL

from gateway.routes_playground import CONTENT_SECURITY_POLICY, STATIC_DIR, load_static
from gateway.state import GatewaySettings
from tests.gateway.fake_engine import FakeLLM
from tests.helpers.waiting import wait_until

IMPORT_RE = re.compile(r'^import .* from "\./([\w.-]+)";$', re.M)


def raw(client, path: str) -> URL:
    """The path sent as written: the client would otherwise resolve `..` before sending."""
    return URL(str(client.make_url("/")).rstrip("/") + path, encoded=True)


@pytest.mark.parametrize("path", ["/", "/playground"])
async def test_the_page_is_served_with_a_strict_policy(client, path):
    resp = await client.get(path)
    assert resp.status == 200
    assert resp.headers["Content-Type"] == "text/html; charset=utf-8"
    assert resp.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert "connect-src 'self'" in CONTENT_SECURITY_POLICY and "default-src 'none'" in CONTENT_SECURITY_POLICY
    body = await resp.text()
    assert '<script type="module" src="static/js/main.js">' in body
    assert "http://" not in body and "https://" not in body  # nothing from elsewhere


@pytest.mark.parametrize(("name", "content_type"), [("js/main.js", "text/javascript"), ("playground.css", "text/css")])
async def test_static_files_have_their_types(client, name, content_type):
    resp = await client.get(f"/static/{name}")
    assert resp.status == 200
    assert resp.headers["Content-Type"] == f"{content_type}; charset=utf-8"
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert await resp.read() == (STATIC_DIR / name).read_bytes()


@pytest.mark.parametrize("path", ["/static/nope.js", "/static/../gateway/app.py", "/static/%2e%2e/gateway/app.py",
                                  "/static/js/../../app.py", "/static/", "/static/js"])
async def test_unknown_or_escaping_paths_are_404(client, path):
    resp = await client.session.get(raw(client, path))
    assert resp.status == 404
    assert set((await resp.json())["error"]) == {"message", "type", "param", "code"}


async def test_the_page_needs_no_key_but_the_api_does(make_client):
    client = await make_client(GatewaySettings(api_keys=("sekrit",)))
    for path in ("/", "/playground", "/static/js/main.js"):
        assert (await client.get(path)).status == 200, path
    assert (await client.get("/v1/models")).status == 401
    assert (await client.session.get(raw(client, "/static/../v1/models"))).status == 404  # the router never reaches the API
    resp = await client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]})
    assert resp.status == 401
    assert (await client.get("/v1/models", headers={"Authorization": "Bearer sekrit"})).status == 200


def test_every_module_import_resolves():
    files = load_static()
    modules = {name for name in files if name.startswith("js/")}
    assert "js/main.js" in modules
    for name in modules:
        text = files[name].body.decode()
        assert text.startswith("// "), f"{name} opens with a comment saying what it owns"
        for target in IMPORT_RE.findall(text):
            assert f"js/{target}" in modules, f"{name} imports a missing ./{target}"


def test_a_missing_page_fails_at_startup(tmp_path):
    (tmp_path / "js").mkdir()
    (tmp_path / "js" / "main.js").write_text("// x\n")
    with pytest.raises(RuntimeError, match="index.html"):
        load_static(tmp_path)


GAUGE_RE = re.compile(r'^  (gateway_\w+): "\w+",$|^const STATE = "(gateway_\w+)";$', re.M)
SAMPLE_RE = re.compile(r'^(gateway_replica_\w+)\{([^}]*)\} (\S+)$', re.M)


async def test_metrics_carry_the_fleet_the_page_shows(make_client, tokenizer):
    """The fleet table reads only /metrics (the poll the panel already makes): every gauge fleet.js
    names is there per replica, and its state set and failovers agree with /health's rows. Two
    replicas; one dies under a request that has not started (moved to the other, a failover) and,
    with no restarts, stays dead."""
    engines = [FakeLLM(tokenizer), FakeLLM(tokenizer)]
    client = await make_client(engines=engines, restart=False)
    for engine in engines:
        engine.pause()
    post = asyncio.create_task(client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "Hi"}]}))
    await wait_until(lambda: sum(e.num_inflight for e in engines) == 1)
    victim = next(e for e in engines if e.num_inflight)
    victim.kill()
    for engine in engines:
        engine.resume()
    assert (await post).status == 200

    health = await (await client.get("/health")).json()
    rows = {str(row["replica"]): row for row in health["replicas"]}
    dead = str(engines.index(victim))
    assert rows[dead]["state"] == "dead" and rows[dead]["failovers"] == 1
    assert {row["state"] for key, row in rows.items() if key != dead} == {"ok"}

    text = await (await client.get("/metrics")).text()
    samples: dict[str, dict[tuple, float]] = {}
    for name, labels, value in SAMPLE_RE.findall(text):
        samples.setdefault(name, {})[tuple(sorted(labels.split(",")))] = float(value)
    names = [a or b for a, b in GAUGE_RE.findall((STATIC_DIR / "js" / "fleet.js").read_text())]
    assert len(names) == 7 and "gateway_replica_state" in names
    for name in names:
        assert name in samples, f"fleet.js reads {name}, which /metrics lacks"
    for key, row in rows.items():
        where = (f'node="{row["node"]}"', f'replica="{key}"')
        for state in ("ok", "restarting", "draining", "dead"):
            assert samples["gateway_replica_state"][tuple(sorted((*where, f'state="{state}"')))] == (state == row["state"])
        assert samples["gateway_replica_failovers"][where] == row["failovers"]
        assert samples["gateway_replica_num_requests_running"][where] == row["running"] == 0
        assert samples["gateway_replica_kv_cache_usage_ratio"][where] == row["kv_usage"] == 0.0
