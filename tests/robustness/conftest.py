"""Fixtures for the robustness tests: a real gateway subprocess on the tiny model, and the time budgets."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import running_server
from tests.helpers.tiny_bert import make_tiny_bert
from tests.helpers.tiny_model import make_tiny_model

SUITE_FUZZ_SECONDS = 30.0
SUITE_SOAK_SECONDS = 20.0


@pytest.fixture(scope="session")
def fuzz_seconds(request) -> float:
    return request.config.getoption("--fuzz-seconds") or SUITE_FUZZ_SECONDS


@pytest.fixture(scope="session")
def soak_seconds(request) -> float:
    return request.config.getoption("--soak-seconds") or SUITE_SOAK_SECONDS


@pytest.fixture(scope="session")
def robust_model_dir(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("robust-tiny"), "llama")


@pytest.fixture(scope="session")
def robust_bert_dir(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("robust-bert") / "tiny-bert")


SERVER_ARGS = ("--max-model-len", "256", "--num-kv-blocks", "96", "--max-num-seqs", "16", "--served-model-name",
               "tiny", "--tool-parser", "hermes", "--grammar-compile-timeout", "5", "--body-read-timeout", "5")


@pytest.fixture(scope="session")
def robust_server(robust_model_dir, robust_bert_dir):
    """One engine core on the tiny random model, a tiny BERT encoder; shared by the fuzz and soak tests."""
    with running_server("--model", str(robust_model_dir), "--embedding-model", str(robust_bert_dir), *SERVER_ARGS) as proc:
        yield proc
