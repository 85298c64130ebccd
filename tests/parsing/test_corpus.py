"""Every corpus case: the expected result, under every split point and random chunkings."""
from __future__ import annotations

import random

import pytest

import parsing
from tests.parsing import (corpus_gemma, corpus_json, corpus_lists, corpus_more, corpus_native, corpus_pythonic,
                           corpus_xml)
from tests.parsing.cases import Case
from tests.parsing.harness import check_events, check_expected, key, random_chunks, run

CASES: list[Case] = (corpus_json.CASES + corpus_native.CASES + corpus_xml.CASES + corpus_pythonic.CASES
                     + corpus_lists.CASES + corpus_more.CASES + corpus_gemma.CASES)
NATIVE_IDS = {"kimi_k2"}


def _keep_ids(case: Case) -> bool:
    return case.fmt in NATIVE_IDS


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_expected(case: Case) -> None:
    parsed = parsing.parse(case.text, case.fmt, case.tools, case.starts_in_reasoning)
    check_expected(case, parsed)
    check_events(run(case, [case.text]))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_split_point(case: Case) -> None:
    whole = key(parsing.parse(case.text, case.fmt, case.tools, case.starts_in_reasoning), _keep_ids(case))
    text = case.text
    for i in range(len(text) + 1):
        events = run(case, [text[:i], text[i:]])
        assert key(parsing.collect(events), _keep_ids(case)) == whole, f"split at {i}: {text[:i]!r}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_char_by_char_and_random(case: Case) -> None:
    whole = key(parsing.parse(case.text, case.fmt, case.tools, case.starts_in_reasoning), _keep_ids(case))
    events = run(case, list(case.text))
    check_events(events)
    assert key(parsing.collect(events), _keep_ids(case)) == whole
    rng = random.Random(case.id)
    for _ in range(20):
        events = run(case, random_chunks(case.text, rng, rng.choice((3, 8, 30))))
        check_events(events)
        assert key(parsing.collect(events), _keep_ids(case)) == whole
