"""Shared fixtures: tiny random models built once per session, the default model's folder."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# CI runs the same property-test examples every time (a red CI should mean a change broke
# something, not that a new random example was drawn); local runs keep exploring.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

from tests.helpers.tiny_model import make_tiny_model


@pytest.fixture(scope="session")
def tiny_model_factory(tmp_path_factory):
    """Returns a function arch -> folder of a tiny random model, building each once."""
    built: dict[str, str] = {}

    def make(arch: str = "llama") -> str:
        if arch not in built:
            built[arch] = str(make_tiny_model(tmp_path_factory.mktemp(f"tiny-{arch}"), arch))
        return built[arch]

    return make


@pytest.fixture(scope="session")
def tiny_llama_dir(tiny_model_factory) -> str:
    return tiny_model_factory("llama")


def pytest_addoption(parser):
    parser.addoption("--fuzz-seconds", type=float, default=None,
                     help="tests/robustness: seconds of fuzzing (default: a short run for the suite)")
    parser.addoption("--fuzz-seed", type=int, default=22, help="tests/robustness: the fuzz's random seed")
    parser.addoption("--soak-seconds", type=float, default=None,
                     help="tests/robustness: seconds of the soak test (default: a short run for the suite)")
