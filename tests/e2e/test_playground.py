"""The web playground in a real browser: Debian's chromium driven by Playwright against server subprocesses.

The tiny random model (the shared `server`) serves the chat, structured-output and metrics tests; the
scripted fake engine behind the real app (tests/e2e/playground_server.py) serves what a random model
cannot write: reasoning, a tool call, a slow stream to stop, and it asks for an API key. Each test saves
a screenshot under build/test-artifacts/playground/ (git-ignored).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.e2e.conftest import ROOT, ServerProcess, free_port

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = ROOT / "build" / "test-artifacts" / "playground"
API_KEY = "playground-secret"
TIMEOUT_MS = 20_000


def install_chromium() -> str | None:
    """Installs Debian's chromium with apt-get when it is missing; says why it cannot, or None."""
    if CHROMIUM.exists():
        return None
    if shutil.which("apt-get") is None:
        return f"{CHROMIUM} is missing and apt-get is not available to install it"
    if os.geteuid() != 0:
        return f"{CHROMIUM} is missing and installing it needs root (apt-get install -y chromium)"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    lock = ["-o", "DPkg::Lock::Timeout=300"]
    install = ["apt-get", "install", "-y", "-q", *lock, "chromium"]
    output = ""
    for cmd in (install, ["apt-get", "update", "-q", *lock], install):  # the package lists may be stale or absent
        if cmd is install and CHROMIUM.exists():
            break
        try:
            result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
            output = result.stdout + result.stderr
        except (OSError, subprocess.TimeoutExpired) as exc:
            output = str(exc)
    if CHROMIUM.exists():
        return None
    return f"apt-get could not install chromium: {output.strip()[-400:]}"


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    problem = install_chromium()
    if problem:
        pytest.skip(f"no headless chromium for the browser tests: {problem}")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


class FakeServer(ServerProcess):
    """tests.e2e.playground_server as a subprocess: the real app over the scripted fake engine."""

    def __init__(self, tokenizer_dir: Path, api_key: str) -> None:
        self.port = free_port()
        self.api_key = api_key
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "tests.e2e.playground_server", "--port", str(self.port),
               "--tokenizer", str(tokenizer_dir), "--api-key", api_key]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()


@pytest.fixture(scope="module")
def fake_server(tiny_model_dir):
    proc = FakeServer(tiny_model_dir, API_KEY)
    try:
        proc.wait_ready(timeout_s=120)
        yield proc
    finally:
        proc.stop()


class Playground:
    """One browser tab on the playground; records every request the page makes and every script error."""

    def __init__(self, context, url: str, query: str = "") -> None:
        self.url = url
        self.page = page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        self.requests: list[str] = []
        self.errors: list[str] = []
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.goto(f"{url}/{query}")

    def enter_key(self, key: str) -> None:
        self.page.wait_for_selector("#key-dialog[open]")
        self.page.fill("#key-input", key)
        self.page.click("#key-form button[type=submit]")

    def wait_model(self, name: str) -> None:
        self.page.wait_for_function("(name) => document.getElementById('model').textContent === name", arg=name)

    def send(self, text: str) -> None:
        self.page.fill("#prompt", text)
        self.page.click("#send")

    def reply(self, index: int, state: str = "done"):
        return self.page.wait_for_selector(f".msg[data-index='{index}'][data-state='{state}']")

    def messages(self) -> list[dict]:
        return self.page.evaluate("playground.chat.messages")

    def screenshot(self, name: str) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"))

    def check_clean(self) -> None:
        """Nothing left the page's own origin, and no script failed."""
        origin = urlsplit(self.url)[:2]
        foreign = [u for u in self.requests if urlsplit(u)[:2] != origin and not u.startswith("data:")]
        assert not foreign, foreign
        assert not self.errors, self.errors


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


def test_chat_streams_and_renders(open_page, server):
    tab = open_page(server.url)
    page = tab.page
    tab.wait_model("tiny")
    page.fill("input[name=temperature]", "0")
    page.fill("input[name=max_tokens]", "24")
    page.check("input[name=ignore_eos]")
    tab.send("Hello there")
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


def test_reasoning_and_tool_call_render(open_page, fake_server):
    tab = open_page(fake_server.url)
    page = tab.page
    tab.enter_key(API_KEY)
    tab.wait_model("fake-model")
    page.click("#tools-section summary")
    page.select_option("#tool-examples", "Weather")
    assert page.is_checked("input[name=tools_on]") and "1 tool: get_weather" in page.inner_text("#tools-status")
    tab.send("What is the weather in Paris?")

    page.wait_for_selector(".msg[data-index='1'] .tool-call .name:text('get_weather')")
    during = page.evaluate("""() => ({state: document.querySelector(".msg[data-index='1']").dataset.state,
                                      args: document.querySelector(".tool-call .args").textContent})""")
    assert during["state"] == "streaming" and during["args"] != ""  # the name at once, the arguments growing
    reply = tab.reply(1)
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


def test_schema_constrained_reply_validates(open_page, server):
    tab = open_page(server.url)
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
    assert reply.query_selector("pre.json .j-key") and reply.query_selector("pre.json .j-literal")
    tab.screenshot("structured")
    tab.check_clean()


def test_metrics_panel_updates(open_page, server):
    tab = open_page(server.url, "?poll_ms=150")
    page = tab.page
    tab.wait_model("tiny")
    page.wait_for_function("() => Number(document.getElementById('metrics').dataset.samples) >= 2")
    page.fill("input[name=temperature]", "0")
    page.fill("input[name=max_tokens]", "300")
    page.check("input[name=ignore_eos]")
    tab.send("Tell me a long story")
    tab.reply(1)
    assert page.inner_text("#m-tokens") == "300"
    for cell in ("#m-tps", "#m-ttft", "#m-itl"):
        assert float(page.inner_text(cell).split()[0]) > 0
    page.wait_for_function("() => playground.metrics.samples.slice(-1)[0].generated >= playground.metrics.samples[0].generated + 300")
    samples = page.evaluate("playground.metrics.samples")
    assert max(s["genRate"] for s in samples) > 0
    assert max(s["running"] for s in samples) >= 1 or max(s["kv"] for s in samples) > 0
    inked = page.evaluate("""() => {
        const c = document.getElementById('plot-gen');
        const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 0; i < data.length; i += 4) if (data[i + 1] > 150 && data[i] < 120) n++;
        return n; }""")  # pixels of the green series line
    assert inked > 0
    tab.screenshot("metrics")
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
