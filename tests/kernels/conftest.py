"""Kernel fixtures: the compiled CPU kernels, or a skip where this machine has no C compiler."""

from __future__ import annotations

import shutil

import pytest

from kernels.cpu.ops import load_ops


@pytest.fixture(scope="session")
def cpu_ops():
    ops = load_ops()
    if ops is None:
        if shutil.which("gcc") or shutil.which("cc"):
            pytest.fail("a C compiler is present but the CPU kernels did not build (see the log)")
        pytest.skip("no C compiler: the CPU kernels cannot be built here")
    return ops
