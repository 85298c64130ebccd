"""The web playground in a real browser: Debian's chromium driven by Playwright against server subprocesses.

The tiny random model (the shared `server`) serves the chat, structured-output and metrics tests; the
scripted fake engine behind the real app (tests/e2e/playground_server.py) serves what a random model
cannot write: reasoning, a tool call, a slow stream to stop, a fleet of two replicas (one of which a
prompt kills), and it asks for an API key. Each test saves a screenshot under
build/test-artifacts/playground/ (git-ignored).
"""

from __future__ import annotations

import json

import pytest

from tests.e2e import playground_browser
from tests.e2e.playground_browser import CHROMIUM, CHROMIUM_ARGS, FakeServer, Playground, install_chromium

API_KEY = "playground-secret"


@pytest.fixture(scope="session")
def chromium() -> str:
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    problem = install_chromium()
    if problem:
        pytest.skip(f"no headless chromium for the browser tests: {problem}")
    return str(CHROMIUM)


@pytest.fixture(scope="module")
def browser(chromium):
    """Module-scoped: Playwright's sync API marks an event loop as running in this thread until it stops,
    which later asyncio tests could not share."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def fake_process(chromium, tiny_model_dir):
    """The fake-engine server, started without waiting for it: two replicas on named nodes (node-a,
    node-b), one of which the fleet test kills."""
    proc = FakeServer(tiny_model_dir, API_KEY, replicas=2)
    yield proc
    proc.stop()


@pytest.fixture(scope="session")
def tiny_server(fake_process, server):
    """The shared tiny-model server; asks for the fake one first so that both load at the same time."""
    return server


@pytest.fixture
def fake_server(fake_process):
    fake_process.wait_ready(timeout_s=120)
    return fake_process


@pytest.fixture
def open_page(browser):
    contexts = []

    def open_(url: str, query: str = "") -> Playground:
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        contexts.append(context)
        return Playground(context, url, query)

    yield open_
    for context in contexts:
        context.close()


def test_chromium_missing_skips_with_the_reason(monkeypatch, tmp_path):
    missing = tmp_path / "chromium"
    monkeypatch.setattr(playground_browser, "CHROMIUM", missing)
    monkeypatch.setattr(playground_browser.shutil, "which", lambda name: None)
    assert "apt-get is not available" in install_chromium()
    monkeypatch.setattr(playground_browser.shutil, "which", lambda name: "/usr/bin/" + name)
    monkeypatch.setattr(playground_browser.os, "geteuid", lambda: 1000)
    assert "needs root" in install_chromium()
    monkeypatch.setattr(playground_browser.os, "geteuid", lambda: 0)
    calls = []
    monkeypatch.setattr(playground_browser, "_run", lambda cmd, env: calls.append(cmd[1]) or "E: no network\n")
    assert install_chromium() == "apt-get could not install chromium: E: no network\nE: no network"
    assert calls == ["install", "update", "install"]  # stale package lists: update, then try again

    def run(cmd: list[str], env: dict) -> str:
        calls.append(cmd[1])
        missing.write_text("#!/bin/sh\n")
        return ""

    calls.clear()
    monkeypatch.setattr(playground_browser, "_run", run)
    assert install_chromium() is None and calls == ["install"]


def test_chat_streams_and_renders(open_page, tiny_server):
    tab = open_page(tiny_server.url)
    page = tab.page
    tab.wait_model("tiny")
    page.fill("input[name=max_tokens]", "100000")  # the server's 400 shows in the banner
    tab.send("Hello there")
    page.wait_for_selector("#error:not([hidden])")
    assert "max_tokens" in page.inner_text("#error-text") and page.locator(".msg").count() == 1
    page.fill("input[name=temperature]", "0")
    page.fill("input[name=max_tokens]", "24")
    page.check("input[name=ignore_eos]")
    page.click("#regenerate")
    reply = tab.reply(1)
    assert int(reply.get_attribute("data-chunks")) > 1  # rendered as it streamed, chunk by chunk
    assert reply.inner_text() and "finish: length · 24 tokens" in reply.query_selector(".meta").inner_text()
    messages = tab.messages()
    assert [m["role"] for m in messages] == ["user", "assistant"] and messages[1]["content"]

    page.reload()  # the conversation and the settings come back from local storage
    tab.wait_model("tiny")
    assert page.locator(".msg").count() == 2
    assert page.input_value("input[name=max_tokens]") == "24"

    page.click("#regenerate")
    page.wait_for_function("() => playground.chat.messages.length === 2 && !playground.chat.busy")
    tab.reply(1)

    page.hover(".msg[data-index='0']")
    page.click(".msg[data-index='0'] .edit")
    page.fill(".edit-form textarea", "Tell me more")
    page.click(".edit-form .save")
    page.wait_for_function("() => playground.chat.messages[0].content === 'Tell me more' && !playground.chat.busy")
    assert [m["role"] for m in tab.messages()] == ["user", "assistant"]
    assert page.inner_text(".msg[data-index='0'] .content") == "Tell me more"
    tab.reply(1)
    tab.screenshot("chat")
    tab.check_clean()


def test_stop_keeps_the_partial_reply(open_page, fake_server):
    tab = open_page(fake_server.url)
    tab.enter_key(API_KEY)
    tab.wait_model("fake-model")
    tab.send("Please count slowly")
    tab.page.wait_for_selector(".msg[data-index='1'][data-state='streaming']")
    tab.page.wait_for_function("() => playground.chat.messages[1].chunks >= 3")
    tab.page.click("#stop")
    reply = tab.reply(1, "stopped")
    assert "stopped" in reply.query_selector(".meta").inner_text()
    words = reply.query_selector(".content").inner_text().split()
    assert words[:3] == ["1", "2", "3"] and len(words) < 400
    assert tab.page.is_enabled("#send") and tab.page.is_hidden("#stop")
    tab.screenshot("stop")
    tab.check_clean()


SNAPSHOT_TOOL_CALL = """() => {
    window.toolCallSnapshots = [];
    new MutationObserver(() => {
        const msg = document.querySelector(".msg[data-index='1']");
        const name = msg && msg.querySelector(".tool-call .name");
        if (name) window.toolCallSnapshots.push({state: msg.dataset.state, name: name.textContent,
                                                 args: msg.querySelector(".tool-call .args").textContent});
    }).observe(document.getElementById("messages"), {childList: true, subtree: true});
}"""


def test_reasoning_and_tool_call_render(open_page, fake_server):
    tab = open_page(fake_server.url)
    page = tab.page
    tab.enter_key(API_KEY)
    tab.wait_model("fake-model")
    page.click("#tools-section summary")
    page.fill("textarea[name=tools]", '[{"type": "function", "function": {"name": "no spaces allowed"}}]')
    assert "tools[0].function.name" in page.inner_text("#tools-status")
    page.select_option("#tool-examples", "Weather")
    assert page.is_checked("input[name=tools_on]") and "1 tool: get_weather" in page.inner_text("#tools-status")
    page.evaluate(SNAPSHOT_TOOL_CALL)
    tab.send("What is the weather in Paris?")
    reply = tab.reply(1)
    final_args = reply.query_selector(".tool-call .args").inner_text()
    snapshots = [s for s in page.evaluate("window.toolCallSnapshots") if s["state"] == "streaming"]
    assert all(s["name"] == "get_weather" for s in snapshots)  # the name at once, whole
    growing = [s["args"] for s in snapshots]
    assert len(set(growing)) > 2 and all(final_args.startswith(a) for a in growing)  # the arguments growing
    assert reply.query_selector(".reasoning-text").inner_text() == "The user asks about the weather. I should call get_weather."
    assert json.loads(reply.query_selector(".tool-call .args").inner_text()) == {"city": "Paris", "unit": "celsius"}
    assert reply.query_selector(".tool-call .args .j-key") is not None
    assert "finish: tool_calls" in reply.query_selector(".meta").inner_text()

    page.fill(".tool-results textarea", '{"temperature": 18, "sky": "sunny"}')
    page.click(".tool-results .continue")
    answer = tab.reply(3)
    assert answer.query_selector(".content").inner_text() == "It is 18 °C and sunny in Paris."
    assert [m["role"] for m in tab.messages()] == ["user", "assistant", "tool", "assistant"]
    tool_message = tab.messages()[2]
    assert tool_message["tool_call_id"] == tab.messages()[1]["tool_calls"][0]["id"]
    page.click(".msg[data-index='3'] .reasoning summary")  # the reasoning block folds away
    assert page.evaluate("document.querySelector(\".msg[data-index='3'] details.reasoning\").open") is False
    page.click(".msg[data-index='3'] .reasoning summary")
    tab.screenshot("agent")
    tab.check_clean()


RENDER_PREFIXES = """async (text) => {
    const view = await import(new URL("static/js/jsonview.js", document.baseURI).href);
    return [...Array(text.length + 1).keys()].map((n) => {
        const pre = document.createElement("pre");
        view.renderJson(pre, text.slice(0, n));
        return pre.textContent;
    });
}"""


def test_schema_constrained_reply_validates(open_page, tiny_server):
    tab = open_page(tiny_server.url)
    page = tab.page
    tab.wait_model("tiny")
    page.click("#schema-section summary")
    page.fill("textarea[name=schema]", '{"type": "object", "required": 3}')
    assert "required" in page.inner_text("#schema-status")
    page.check("input[name=schema_on]")
    tab.send("Triage: the login page is down")
    page.wait_for_selector("#error:not([hidden])")
    assert "The JSON Schema is invalid" in page.inner_text("#error-text")

    page.select_option("#schema-examples", "Ticket triage")
    page.fill("input[name=max_tokens]", "120")
    page.click("#regenerate")
    reply = tab.reply(1)
    assert reply.query_selector(".validation.ok").inner_text() == "✓ valid"
    text = tab.messages()[1]["content"]
    value = json.loads(text)
    assert set(value) == {"summary", "severity", "needs_human"}
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(value, tab.messages()[1]["schema"])
    pretty = reply.query_selector("pre.json").inner_text()
    assert json.loads(pretty) == value and "\n  " in pretty  # pretty-printed
    # While it streams the view is re-rendered from the text so far: every prefix of the reply renders
    # as a prefix of the final view (it grows in place). Checked on each prefix with the page's own
    # renderer, not by catching renders of the live stream, which a busy machine delivers in one piece.
    views = page.evaluate(RENDER_PREFIXES, text)
    assert views[-1] == pretty and all(pretty.startswith(v) for v in views)
    assert len(set(views)) > len(text) // 2
    assert reply.query_selector("pre.json .j-key") and reply.query_selector("pre.json .j-literal")
    tab.screenshot("structured")
    tab.check_clean()


def test_metrics_panel_updates(open_page, tiny_server):
    # The running and KV gauges are seen only by a poll that lands while the reply generates:
    # the fastest poll the page allows and a reply as long as the tiny server's context takes
    # (200 tokens, about 0.2 s, went by between two polls 150 ms apart on a loaded machine;
    # 450 tokens at 100 ms give about four polls during the reply).
    tab = open_page(tiny_server.url, "?poll_ms=100")
    page = tab.page
    tab.wait_model("tiny")
    page.wait_for_function("() => Number(document.getElementById('metrics').dataset.samples) >= 2")
    page.fill("input[name=temperature]", "0")
    page.fill("input[name=max_tokens]", "450")
    page.check("input[name=ignore_eos]")
    tab.send("Tell me a long story")
    tab.reply(1)
    assert page.inner_text("#m-tokens") == "450"
    for cell in ("#m-tps", "#m-ttft", "#m-itl"):
        assert float(page.inner_text(cell).split()[0]) > 0
    page.wait_for_function("() => playground.metrics.samples.slice(-1)[0].generated >= playground.metrics.samples[0].generated + 450")
    samples = page.evaluate("playground.metrics.samples")
    assert max(s["genRate"] for s in samples) > 0
    assert max(s["running"] for s in samples) >= 1 or max(s["kv"] for s in samples) > 0
    inked = page.evaluate("""() => {
        const c = document.getElementById('plot-gen');
        const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 0; i < data.length; i += 4) if (data[i + 1] > 150 && data[i] < 120) n++;
        return n; }""")  # pixels of the green series line
    assert inked > 0
    # the tiny server's two local engine cores (--data-parallel-size 2): the fleet table, from the same poll
    assert [row[:3] for row in page.evaluate(FLEET_ROWS)] == [["0", "local", "ok"], ["1", "local", "ok"]]
    assert page.is_hidden("#fleet-line") and page.inner_text("#fleet-summary") == "2 · 2 ok"
    tab.screenshot("metrics")
    tab.check_clean()


FLEET_ROWS = """() => [...document.querySelectorAll('#fleet-body tr')].map(
    (tr) => [...tr.children].map((td) => td.textContent))"""
SNAPSHOT_FLEET = """() => {
    window.fleetSnapshots = [];
    new MutationObserver(() => window.fleetSnapshots.push(
        [...document.querySelectorAll('#fleet-body tr')].map((tr) => [tr.dataset.state, tr.children[7].textContent]))
    ).observe(document.getElementById("fleet-body"), {childList: true});
}"""


def test_fleet_table_follows_the_replicas(open_page, fake_server):
    """Two fake replicas on nodes node-a and node-b, read from the panel's /metrics poll (no other
    request): a slow stream shows on its replica's row (running, KV usage); a replica killed before
    its first token (the server's "crash a replica" prompt) shows restarting with the failover it
    caused while the other answers, then ok again."""
    tab = open_page(fake_server.url, "?poll_ms=100")
    page = tab.page
    tab.enter_key(API_KEY)
    tab.wait_model("fake-model")
    page.wait_for_function("() => document.querySelectorAll('#fleet-body tr').length === 2")
    assert page.is_visible("#fleet-table") and page.is_hidden("#fleet-line")
    assert [row[:3] for row in page.evaluate(FLEET_ROWS)] == [["0", "node-a", "ok"], ["1", "node-b", "ok"]]
    assert page.inner_text("#fleet-summary") == "2 · 2 ok"

    page.fill("input[name=max_tokens]", "2000")  # 126 of a replica's 1,024 fake KV blocks while it streams
    tab.send("Please count slowly")
    page.wait_for_function("() => [...document.querySelectorAll('#fleet-body tr')].some((tr) => tr.children[3].textContent === '1')")
    busy, idle = sorted(page.evaluate(FLEET_ROWS), key=lambda row: row[3], reverse=True)
    assert busy[3:5] == ["1", "0"] and float(busy[5].rstrip("%")) > 5
    assert idle[3:6] == ["0", "0", "0%"]
    page.click("#stop")
    tab.reply(1, "stopped")

    page.evaluate(SNAPSHOT_FLEET)
    tab.send("Please crash a replica")
    answer = tab.reply(3).query_selector(".content").inner_text()
    survivor = answer.split()[1]
    assert answer == f"Replica {survivor} answered instead." and survivor in ("0", "1")
    victim = str(1 - int(survivor))
    page.wait_for_selector(f"#fleet-body tr[data-replica='{victim}'][data-state='restarting']")
    tab.screenshot("fleet")
    rows = {row[0]: row for row in page.evaluate(FLEET_ROWS)}
    assert rows[victim][2:] == ["restarting", "0", "0", "0%", "0%", "1"]  # the request it lost went elsewhere
    assert rows[survivor][2] == "ok" and rows[survivor][7] == "0"
    assert page.inner_text("#fleet-summary") == "2 · 1 ok"
    page.wait_for_function(f"() => document.querySelector(\"#fleet-body tr[data-replica='{victim}']\").dataset.state === 'ok'")
    assert page.evaluate(FLEET_ROWS)[int(victim)][7] == "1"  # the replacement keeps its slot's count
    states = {snapshot[int(victim)][0] for snapshot in page.evaluate("window.fleetSnapshots")}
    assert "restarting" in states and states <= {"ok", "dead", "restarting"}  # dead until the supervisor's tick
    tab.check_clean()
    assert not [u for u in tab.requests if "/health" in u]  # the table rides on the /metrics poll


FLEET_EXPOSITION = """# HELP gateway_replica_up 1 while the replica serves
# TYPE gateway_replica_up gauge
gateway_replica_up{node="10.0.0.7/0a1b2c3d",replica="0"} 1.0
gateway_replica_up{node="we\\"ird\\\\node",replica="2"} 0.0
gateway_replica_up{node="old",replica="10"} 0.0
gateway_replica_state{node="10.0.0.7/0a1b2c3d",replica="0",state="ok"} 1.0
gateway_replica_state{node="10.0.0.7/0a1b2c3d",replica="0",state="dead"} 0.0
gateway_replica_state{node="we\\"ird\\\\node",replica="2",state="ok"} 0.0
gateway_replica_state{node="we\\"ird\\\\node",replica="2",state="draining"} 1.0
gateway_replica_num_requests_running{node="10.0.0.7/0a1b2c3d",replica="0"} 3.0
gateway_replica_num_requests_waiting{node="10.0.0.7/0a1b2c3d",replica="0"} 2.0
gateway_replica_kv_cache_usage_ratio{node="10.0.0.7/0a1b2c3d",replica="0"} 0.25
gateway_replica_kv_cache_usage_ratio{node="we\\"ird\\\\node",replica="2"} 0.004
gateway_replica_prefix_cache_hit_rate{node="10.0.0.7/0a1b2c3d",replica="0"} 0.875
gateway_replica_failovers{node="we\\"ird\\\\node",replica="2"} 2.0
gateway_num_requests_running 3.0
"""

CHECK_FLEET = """async (text) => {
    const base = document.baseURI;
    const metrics = await import(new URL("static/js/metrics.js", base).href);
    const fleet = await import(new URL("static/js/fleet.js", base).href);
    const rows = fleet.fleetRows(metrics.parseSamples(text));
    const make = (tag) => document.createElement(tag);
    const els = {section: make("section"), summary: make("small"), line: make("p"), table: make("table"), body: make("tbody")};
    const table = new fleet.FleetTable(els);
    table.show(rows);
    const cells = [...els.body.children].map((tr) => [...tr.children].map((td) => td.textContent));
    const shown = {section: !els.section.hidden, table: !els.table.hidden, line: !els.line.hidden, summary: els.summary.textContent};
    table.show(rows.slice(0, 1));
    const one = {table: !els.table.hidden, line: els.line.hidden ? null : els.line.textContent};
    table.show([]);
    return {rows, cells, shown, one, none: els.section.hidden,
            total: metrics.parsePrometheus(text).get("gateway_num_requests_running")};
}"""


def test_fleet_rows_from_an_exposition(open_page, fake_server):
    """The page's own parsing, on an exposition written out: escaped label values, replicas in numeric
    order, every state the table colours (and "down" from _up alone when a server lacks the state set)."""
    tab = open_page(fake_server.url)
    result = tab.page.evaluate(CHECK_FLEET, FLEET_EXPOSITION)
    weird = 'we"ird\\node'
    assert result["rows"] == [
        {"replica": 0, "node": "10.0.0.7/0a1b2c3d", "state": "ok", "running": 3, "waiting": 2, "kv": 0.25,
         "hitRate": 0.875, "failovers": 0},
        {"replica": 2, "node": weird, "state": "draining", "running": 0, "waiting": 0, "kv": 0.004, "hitRate": 0,
         "failovers": 2},
        {"replica": 10, "node": "old", "state": "down", "running": 0, "waiting": 0, "kv": 0, "hitRate": 0, "failovers": 0},
    ]
    assert result["cells"] == [["0", "10.0.0.7/0a1b2c3d", "ok", "3", "2", "25%", "88%", "0"],
                               ["2", weird, "draining", "0", "0", "0.4%", "0%", "2"],
                               ["10", "old", "down", "0", "0", "0%", "0%", "0"]]
    assert result["shown"] == {"section": True, "table": True, "line": False, "summary": "3 · 1 ok"}
    assert result["one"] == {"table": False, "line": "replica 0 on 10.0.0.7/0a1b2c3d: ok"}
    assert result["none"] is True and result["total"] == 3  # the panel's sums still add labelled samples
    tab.check_clean()


def test_bad_api_key_shows_the_error(open_page, fake_server):
    tab = open_page(fake_server.url)
    page = tab.page
    tab.enter_key("not-the-key")
    page.wait_for_function("() => document.getElementById('key-error').textContent !== ''")
    assert page.inner_text("#key-error") == "Incorrect API key provided."
    assert page.is_visible("#key-dialog")
    tab.screenshot("api-key")
    tab.enter_key(API_KEY)
    tab.wait_model("fake-model")
    assert page.is_hidden("#key-dialog")
    assert API_KEY in page.evaluate("Object.values(sessionStorage)")
    assert not any(API_KEY in v for v in page.evaluate("Object.values(localStorage)"))
    page.reload()  # kept for this tab: not asked again
    tab.wait_model("fake-model")
    assert page.is_hidden("#key-dialog")
    tab.check_clean()


TREE = {"$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                           "additionalProperties": False}}, "$ref": "#/$defs/node"}
IF_THEN = {"if": {"properties": {"k": {"const": "a"}}}, "then": {"required": ["x"]}, "else": {"required": ["y"]}}
CLOSED = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": False}
SCHEMA_CASES = [  # (schema, values): the page's validator must agree with the jsonschema package on each
    ({"type": "integer"}, [3, 3.5, "3"]),
    ({"type": ["string", "null"]}, [None, 1, "x"]),
    ({"enum": [1, "a", {"x": 1}]}, [{"x": 1}, {"x": 2}, "a"]),
    ({"const": {"a": [1, 2]}}, [{"a": [1, 2]}, {"a": [2, 1]}]),
    (CLOSED, [{"a": 1}, {"a": 1, "b": 2}, {}, {"a": "1"}]),
    ({"additionalProperties": {"type": "string"}, "properties": {"a": {}}}, [{"a": 1, "z": "s"}, {"z": 1}]),
    ({"patternProperties": {"^x_": {"type": "integer"}}, "additionalProperties": False}, [{"x_a": 1}, {"y": 1}, {"x_b": "s"}]),
    ({"items": {"type": "number"}, "minItems": 1, "maxItems": 3}, [[1, 2], [], [1, 2, 3, 4], ["a"]]),
    ({"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False}, [["a", 1], ["a", 1, 2], [1]]),
    ({"uniqueItems": True}, [[1, 2], [{"a": 1}, {"a": 1}], [[1], [2]]]),
    ({"contains": {"const": 5}}, [[1, 5], [1]]),
    ({"type": "string", "minLength": 2, "maxLength": 3}, ["ab", "a", "abcd", "日本", "🙂🙂"]),
    ({"pattern": "^[a-z]+$"}, ["abc", "ab1"]),
    ({"minimum": 0, "maximum": 10}, [0, -1, 10.5, 10]),
    ({"exclusiveMinimum": 0, "exclusiveMaximum": 1}, [0, 0.5, 1]),
    ({"multipleOf": 0.5}, [1.5, 1.2]),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, [1, 1.5, "s"]),
    ({"oneOf": [{"type": "integer"}, {"minimum": 2}]}, [1, 3, 2.5]),
    ({"allOf": [{"minimum": 1}, {"maximum": 2}]}, [1.5, 3]),
    ({"not": {"type": "null"}}, [None, 1]),
    (IF_THEN, [{"k": "a", "x": 1}, {"k": "b", "x": 1}, {"k": "b", "y": 1}]),
    (TREE, [{"kids": [{"kids": []}]}, {"kids": [{"k": 1}]}]),
    ({"minProperties": 1, "maxProperties": 1}, [{}, {"a": 1}, {"a": 1, "b": 2}]),
    ({"type": "string", "format": "email"}, ["a@b.c", "nope"]),
    ({"type": "string", "format": "ipv4"}, ["10.0.0.1", "10.0.0.256"]),
    (False, [1]),
    (True, [1]),
]
JSON_VIEW_VALUES = [{"a": [1, 2.5, {"b": None}], "s": "x\"y", "e": {}, "l": [], "t": True}, [[]], "plain", -1.5e3]

CHECK_MODULES = """async (args) => {
    const base = document.baseURI;
    const schema = await import(new URL("static/js/schema.js", base).href);
    const view = await import(new URL("static/js/jsonview.js", base).href);
    const verdicts = args.cases.map(([s, values]) => values.map((v) => schema.validate(s, v).length === 0));
    const viewFailures = [];
    for (const value of args.values) {
        const text = JSON.stringify(value);
        const full = document.createElement("pre");
        const result = view.renderJson(full, text);
        if (!result.complete || full.textContent !== JSON.stringify(value, null, 2)) viewFailures.push(["full", text, full.textContent]);
        for (let i = 1; i < text.length; i++) {
            const pre = document.createElement("pre");
            view.renderJson(pre, text.slice(0, i));
            if (!full.textContent.startsWith(pre.textContent)) viewFailures.push(["prefix", text.slice(0, i), pre.textContent]);
        }
    }
    return {verdicts, viewFailures, schemaProblems: schema.checkSchema({type: "strung", required: "a", properties: {x: {pattern: "("}}})};
}"""


def test_page_validator_and_json_view(open_page, fake_server):
    jsonschema = pytest.importorskip("jsonschema")
    tab = open_page(fake_server.url)
    result = tab.page.evaluate(CHECK_MODULES, {"cases": SCHEMA_CASES, "values": JSON_VIEW_VALUES})
    for (schema, values), verdicts in zip(SCHEMA_CASES, result["verdicts"], strict=True):
        checker = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
        expected = [checker.is_valid(v) for v in values]
        assert verdicts == expected, (schema, values)
    assert result["viewFailures"] == []
    problems = "\n".join(result["schemaProblems"])
    assert "$.type" in problems and "$.required" in problems and "$.properties.x.pattern" in problems
    tab.check_clean()



def test_responses_switch_continues_by_previous_response_id(open_page, tiny_server):
    """The API switch: turns go to /v1/responses, and the second sends only its new message after the
    first reply's id; the page shows one thread."""
    tab = open_page(tiny_server.url)
    page = tab.page
    tab.wait_model("tiny")
    page.select_option("select[name=api]", "responses")
    page.fill("input[name=temperature]", "0")
    page.fill("input[name=max_tokens]", "8")
    bodies = []
    page.on("request", lambda r: bodies.append(json.loads(r.post_data)) if r.url.endswith("/v1/responses") else None)
    tab.send("Hello there")
    tab.reply(1)
    tab.send("And again")
    tab.reply(3)
    messages = tab.messages()
    first, second = bodies
    assert first["input"] == [{"type": "message", "role": "user", "content": "Hello there"}]
    assert "previous_response_id" not in first and first["max_output_tokens"] == 8
    assert second["previous_response_id"] == messages[1]["response_id"]
    assert second["input"] == [{"type": "message", "role": "user", "content": "And again"}]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[3]["finish_reason"] == "length" and messages[3]["content"]
    assert page.locator(".msg").count() == 4
    tab.screenshot("responses-thread")
    tab.check_clean()
