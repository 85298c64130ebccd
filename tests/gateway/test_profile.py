"""/start_profile and /stop_profile: only with --profiler-dir, one trace per core, key-protected, 409 out of order."""

from __future__ import annotations

import json
from pathlib import Path

from gateway.state import GatewaySettings
from tests.gateway.fake_engine import FakeLLM


async def test_routes_are_404_without_the_flag(client):
    for path in ("/start_profile", "/stop_profile"):
        resp = await client.post(path)
        assert resp.status == 404 and (await resp.json())["error"]["code"] == "not_found"


async def test_one_trace_per_core(make_client, tokenizer, tmp_path):
    engines = [FakeLLM(tokenizer), FakeLLM(tokenizer)]
    client = await make_client(GatewaySettings(profiler_dir=str(tmp_path / "traces")), engines=engines)
    assert await (await client.post("/start_profile")).json() == {"status": "started", "files": []}
    assert all(engine.profiling for engine in engines)
    body = await (await client.post("/stop_profile")).json()
    assert body["status"] == "stopped" and len(body["files"]) == 2
    for i, name in enumerate(body["files"]):
        assert Path(name).parent == tmp_path / "traces" and name.endswith(f"-core{i}.json")
        assert json.loads(Path(name).read_text()) == {"traceEvents": []}


async def test_out_of_order_calls_are_409(make_client, tmp_path):
    client = await make_client(GatewaySettings(profiler_dir=str(tmp_path)))
    assert (await client.post("/stop_profile")).status == 409
    assert (await client.post("/start_profile")).status == 200
    resp = await client.post("/start_profile")
    assert resp.status == 409 and "already running" in (await resp.json())["error"]["message"]
    assert (await client.post("/stop_profile")).status == 200


async def test_routes_need_the_api_key(make_client, tmp_path):
    client = await make_client(GatewaySettings(profiler_dir=str(tmp_path), api_keys=("k",)))
    assert (await client.post("/start_profile")).status == 401
    assert (await client.post("/start_profile", headers={"Authorization": "Bearer k"})).status == 200
    assert (await client.post("/stop_profile")).status == 401
    assert (await client.post("/stop_profile", headers={"Authorization": "Bearer k"})).status == 200
