"""Browser-test helpers: Debian's chromium (installed with apt-get when missing), the fake-engine server
subprocess, and one playground tab that records what it requests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

from tests.e2e.conftest import ROOT, ServerProcess, free_port

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = ROOT / "build" / "test-artifacts" / "playground"
TIMEOUT_MS = 120_000  # a safety net for a loaded machine: every wait is on an element or a state


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
    output = _run(install, env)
    if not CHROMIUM.exists():  # the package lists may be stale or absent on a fresh machine
        output = _run(["apt-get", "update", "-q", *lock], env) + _run(install, env)
    if CHROMIUM.exists():
        return None
    return f"apt-get could not install chromium: {output.strip()[-400:]}"


def _run(cmd: list[str], env: dict[str, str]) -> str:
    try:
        result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{' '.join(cmd)}: {exc}\n"
    return result.stdout + result.stderr


class FakeServer(ServerProcess):
    """tests.e2e.playground_server as a subprocess: the real app over the scripted fake engine."""

    def __init__(self, tokenizer_dir: Path, api_key: str, replicas: int = 1) -> None:
        self.port = free_port()
        self.api_key = api_key
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "tests.e2e.playground_server", "--port", str(self.port),
               "--tokenizer", str(tokenizer_dir), "--api-key", api_key, "--replicas", str(replicas)]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()


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
