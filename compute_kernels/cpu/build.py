"""Builds the CPU kernels (compute_kernels/cpu/csrc) for the machine they run on, once, and loads them.

Compiled at first use with `-march=native`, so the code matches the CPU that runs it (AVX2,
AVX-512, or plain C elsewhere) instead of the CPU of whoever built a wheel. The library lands
in a cache folder keyed by the sources, the compiler, the flags and the CPU, so later starts
load it in milliseconds. OpenMP comes from the same libgomp that torch has loaded (same
soname), so the kernels and torch share one thread pool and `torch.set_num_threads`.
Without a C compiler `load()` returns None and says why; callers keep the torch reference.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import logging
import os
import platform
import shutil
import subprocess
import sysconfig
import tempfile
from pathlib import Path

import torch  # noqa: F401  (loads libgomp before the kernels do)

log = logging.getLogger(__name__)
CSRC = Path(__file__).parent / "csrc"
MODULE = "_cpu_ops"
FLAGS = ["-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=gnu11", "-fno-strict-aliasing"]


def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "agent-gateway" / "kernels"


def cpu_flags() -> set[str]:
    """The CPU's feature flags as Linux lists them (empty where /proc/cpuinfo is missing)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _compiler() -> str | None:
    return os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")


def _key(cc: str) -> str:
    h = hashlib.sha256()
    for path in sorted(CSRC.iterdir()):
        h.update(path.name.encode() + path.read_bytes())
    version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
    h.update(f"{version}|{FLAGS}|{sysconfig.get_config_var('EXT_SUFFIX')}|{platform.machine()}".encode())
    h.update(" ".join(sorted(cpu_flags())).encode())
    return h.hexdigest()[:16]


def _compile(cc: str, target: Path) -> None:
    sources = sorted(str(p) for p in CSRC.glob("*.c"))
    include = sysconfig.get_paths()["include"]
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
    os.close(fd)
    cmd = [cc, *FLAGS, f"-I{CSRC}", f"-I{include}", *sources, "-o", tmp, "-lm"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        os.unlink(tmp)
        raise RuntimeError(f"{' '.join(cmd)}\n{result.stderr[-4000:]}")
    os.replace(tmp, target)  # atomic: a concurrent build of the same key writes the same file


def load(cache_dir: Path | None = None):
    """The compiled kernel module, or None (with a logged reason) where it cannot be built."""
    cc = _compiler()
    if cc is None:
        log.warning("CPU kernels: no C compiler found; using the torch reference path")
        return None
    target = Path(cache_dir or default_cache_dir()) / _key(cc) / f"{MODULE}{sysconfig.get_config_var('EXT_SUFFIX')}"
    if not target.is_file():
        log.info("CPU kernels: compiling for this CPU (once) into %s", target.parent)
        try:
            _compile(cc, target)
        except (RuntimeError, OSError) as exc:
            log.warning("CPU kernels: build failed, using the torch reference path: %s", exc)
            return None
    loader = importlib.machinery.ExtensionFileLoader(f"compute_kernels.cpu.{MODULE}", str(target))
    spec = importlib.util.spec_from_file_location(f"compute_kernels.cpu.{MODULE}", str(target), loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
