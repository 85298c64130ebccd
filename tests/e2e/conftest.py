"""Whole-server fixtures: `python -m gateway serve` as a subprocess on a free port."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.helpers.tiny_bert import make_tiny_bert
from tests.helpers.tiny_model import make_tiny_model

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerProcess:
    """A gateway subprocess in its own process group (so a test can Ctrl-C it like a terminal)."""

    def __init__(self, *args: str, api_key: str | None = None, ssl_context: ssl.SSLContext | None = None,
                 port: int | None = None) -> None:  # fmt: skip
        """`ssl_context`: the client context the readiness check uses (the server then speaks HTTPS)."""
        self.port = port or free_port()
        self.api_key = api_key
        self.ssl_context = ssl_context
        self.url = f"{'https' if ssl_context else 'http'}://127.0.0.1:{self.port}"
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
                    with urllib.request.urlopen(self.url + "/health", timeout=5, context=getattr(self, "ssl_context", None)) as resp:
                        if resp.status == 200:
                            return
                except OSError:
                    pass
            time.sleep(0.2)
        raise RuntimeError(f"server not ready after {timeout_s}s:\n{self.output}")

    def _children(self) -> list[tuple[int, str]]:
        """(pid, name) of the spawned child interpreters (engine cores and the encoder)."""
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        found = []
        for pid in map(int, children):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue
            if b"spawn_main" in cmdline:
                found.append((pid, comm))
        return found

    def core_pids(self) -> list[int]:
        """The engine-core child processes (spawned interpreters running the core loop)."""
        return [pid for pid, comm in self._children() if comm != "gw-encoder"]

    def encoder_pids(self) -> list[int]:
        """The embedding encoder's process (named gw-encoder)."""
        return [pid for pid, comm in self._children() if comm == "gw-encoder"]

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


@contextlib.contextmanager
def running_server(*args: str, **kwargs):
    """A ServerProcess that is ready inside the block and stopped after it, however the block ends."""
    proc = ServerProcess(*args, **kwargs)
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("e2e-tiny"), "llama")


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> Path:
    return make_tiny_bert(tmp_path_factory.mktemp("e2e-bert") / "tiny-bert")


@pytest.fixture(scope="session")
def server(tiny_model_dir, tiny_bert_dir):
    """Two engine cores on the tiny random model and an encoder on a tiny BERT, shared by most e2e tests."""
    with running_server("--model", str(tiny_model_dir), "--data-parallel-size", "2", "--max-model-len", "512",
                        "--served-model-name", "tiny", "--num-kv-blocks", "256", "--tool-parser", "hermes",
                        "--embedding-model", str(tiny_bert_dir),
                        # tests freeze the cores (SIGSTOP) to line up requests; 5 s would kill them
                        "--engine-heartbeat-timeout", "120") as proc:
        yield proc
