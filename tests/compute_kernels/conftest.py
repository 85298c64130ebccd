"""Kernel fixtures: the compiled CPU kernels (or a skip where this machine has no C compiler), and the
device the Triton tests run on."""

from __future__ import annotations

import os
import shutil

import pytest
import torch

from compute_kernels.cpu.ops import load_ops


@pytest.fixture(scope="session")
def cpu_ops():
    ops = load_ops()
    if ops is None:
        if shutil.which("gcc") or shutil.which("cc"):
            pytest.fail("a C compiler is present but the CPU kernels did not build (see the log)")
        pytest.skip("no C compiler: the CPU kernels cannot be built here")
    return ops


# Triton kernels run on the GPU where there is one, else in Triton's interpreter on CPU tensors.
# The switch is read when a kernel is decorated, so it is set before any test imports one.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.fixture(scope="session")
def triton_device() -> str:
    """Where the Triton tests put their tensors: cuda, or cpu for the interpreter."""
    return "cuda" if torch.cuda.is_available() else "cpu"
