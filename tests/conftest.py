"""Shared fixtures: tiny random models built once per session, the default model's folder."""

from __future__ import annotations

import pytest

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
