"""Whole-server fixtures: `python -m gateway serve` as a subprocess on a free port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.helpers.tiny_model import make_tiny_model

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerProcess:
    """A gateway subprocess in its own process group (so a test can Ctrl-C it like a terminal)."""

    def __init__(self, *args: str, api_key: str | None = None) -> None:
        self.port = free_port()
        self.api_key = api_key
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "gateway", "serve", "--port", str(self.port), *args]
        if api_key:
            cmd += ["--api-key", api_key]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True, env=env)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for raw in self.proc.stdout:
            self.lines.append(raw.decode(errors="replace").rstrip())

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_ready(self, timeout_s: float = 240.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.output}")
            if any(line.startswith("Serving model") for line in self.lines):
                try:
                    with urllib.request.urlopen(self.url + "/health", timeout=5) as resp:
                        if resp.status == 200:
                            return
                except OSError:
                    pass
            time.sleep(0.2)
        raise RuntimeError(f"server not ready after {timeout_s}s:\n{self.output}")

    def core_pids(self) -> list[int]:
        """The engine-core child processes (spawned interpreters running the core loop)."""
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        pids = []
        for pid in map(int, children):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"spawn_main" in cmdline:
                pids.append(pid)
        return pids

    def interrupt(self) -> None:
        """Ctrl-C as a terminal sends it: SIGINT to the whole process group."""
        os.killpg(self.proc.pid, signal.SIGINT)

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.interrupt()
                self.proc.wait(timeout=30)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                pass
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        try:  # leftover children of the group (a core that outlived its gateway)
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("e2e-tiny"), "llama")


@pytest.fixture(scope="session")
def server(tiny_model_dir):
    """Two engine cores on the tiny random model, shared by most e2e tests."""
    proc = ServerProcess("--model", str(tiny_model_dir), "--data-parallel-size", "2", "--max-model-len", "512",
                         "--served-model-name", "tiny", "--num-kv-blocks", "256", "--tool-parser", "hermes")
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.stop()
