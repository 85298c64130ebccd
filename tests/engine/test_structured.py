"""Structured output through the engine: grammar masks applied before sampling, errors reported."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from engine import ChoiceSpec, JsonSchemaSpec, RegexSpec, SamplingParams, StructuredSpec
from schemas.engine import EngineRequest

SCHEMA = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "minimum": 0, "maximum": 99},
        "tag": {"enum": ["red", "green", "blue"]},
        "ok": {"type": "boolean"},
    },
    "required": ["n", "tag", "ok"],
    "additionalProperties": False,
}


def sampled(spec: StructuredSpec, seed: int, **kw) -> SamplingParams:
    return SamplingParams(max_tokens=60, temperature=1.0, seed=seed, structured=spec, **kw)


def test_json_schema_output_validates(llm):
    spec = JsonSchemaSpec(json_schema=json.dumps(SCHEMA))
    outs = llm.generate([[5, 6, 7]] * 6, [sampled(spec, seed) for seed in range(6)])
    for out in outs:
        assert out.finish_reason == "stop", out
        jsonschema.validate(json.loads(out.text), SCHEMA)


def test_regex_and_choice(llm):
    regex = llm.generate([[5, 6, 7]], sampled(RegexSpec(regex="[a-c]{3}-[0-9]{2}"), 1))[0]
    assert re.fullmatch("[a-c]{3}-[0-9]{2}", regex.text)
    choices = ["alpha", "beta", "gamma delta"]
    outs = llm.generate([[5, 6, 7]] * 4, [sampled(ChoiceSpec(choice=choices), s) for s in range(4)])
    assert all(o.text in choices for o in outs)


def test_constrained_and_free_requests_share_a_batch(llm):
    free = SamplingParams(max_tokens=10, temperature=0.0, ignore_eos=True)
    alone = llm.generate([[9, 10, 11]], free)[0].token_ids
    spec = JsonSchemaSpec(json_schema=json.dumps(SCHEMA))
    outs = llm.generate([[9, 10, 11], [5, 6, 7]], [free, sampled(spec, 3)])
    assert outs[0].token_ids == alone
    jsonschema.validate(json.loads(outs[1].text), SCHEMA)


BAD_SPECS = [
    JsonSchemaSpec(json_schema=json.dumps({"type": "object", "properties": {"a": {"type": "strnig"}}})),
    RegexSpec(regex="(unclosed"),
]


@pytest.mark.parametrize("spec", BAD_SPECS)
def test_bad_grammar_is_refused_before_scheduling(llm, spec):
    with pytest.raises(ValueError, match="strnig|unclosed|paren|\\("):
        llm.generate([[5, 6, 7]], SamplingParams(max_tokens=5, structured=spec))
    ok = llm.generate([[5, 6, 7]], SamplingParams(max_tokens=3, temperature=0, ignore_eos=True))[0]
    assert len(ok.token_ids) == 3


@pytest.mark.parametrize("spec", BAD_SPECS)
def test_bad_grammar_sent_to_the_core_is_refused_at_admission(llm, spec):
    """The core compiles once, at admission: a bad spec is refused under `structured`, never
    accepted, and the core keeps serving."""
    core = llm.core
    core.add_request(EngineRequest(request_id="bad", prompt_token_ids=[5, 6, 7],
                                   params=SamplingParams(max_tokens=5, structured=spec)))
    accepted, refused = [], []
    while core.has_work() or not refused:
        core.step()
        more_accepted, more_refused = core.take_admissions()
        accepted += more_accepted
        refused += more_refused
    assert accepted == []
    (out,) = refused
    assert out.request_id == "bad" and out.finish_reason == "error" and out.error.startswith("structured: ")
    ok = llm.generate([[5, 6, 7]], SamplingParams(max_tokens=3, temperature=0, ignore_eos=True))[0]
    assert len(ok.token_ids) == 3


def test_min_tokens_yields_where_the_grammar_allows_only_a_stop_token(llm):
    """min_tokens suppresses EOS while the grammar allows more; once the grammar allows nothing
    but EOS (a choice is complete) the output ends there, valid, instead of failing."""
    params = [SamplingParams(max_tokens=30, min_tokens=20, temperature=1.0, seed=s, structured=ChoiceSpec(choice=["yes", "no"]))
              for s in range(4)]  # fmt: skip
    for out in llm.generate([[5, 6, 7]] * 4, params):
        assert out.text in ("yes", "no") and out.finish_reason == "stop", out
