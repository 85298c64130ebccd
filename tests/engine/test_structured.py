"""Structured output through the engine: grammar masks applied before sampling, errors reported."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from engine import SamplingParams, StructuredSpec

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
    spec = StructuredSpec(json_schema=json.dumps(SCHEMA))
    outs = llm.generate([[5, 6, 7]] * 6, [sampled(spec, seed) for seed in range(6)])
    for out in outs:
        assert out.finish_reason == "stop", out
        jsonschema.validate(json.loads(out.text), SCHEMA)


def test_regex_and_choice(llm):
    regex = llm.generate([[5, 6, 7]], sampled(StructuredSpec(regex="[a-c]{3}-[0-9]{2}"), 1))[0]
    assert re.fullmatch("[a-c]{3}-[0-9]{2}", regex.text)
    choices = ["alpha", "beta", "gamma delta"]
    outs = llm.generate([[5, 6, 7]] * 4, [sampled(StructuredSpec(choice=choices), s) for s in range(4)])
    assert all(o.text in choices for o in outs)


def test_constrained_and_free_requests_share_a_batch(llm):
    free = SamplingParams(max_tokens=10, temperature=0.0, ignore_eos=True)
    alone = llm.generate([[9, 10, 11]], free)[0].token_ids
    spec = StructuredSpec(json_schema=json.dumps(SCHEMA))
    outs = llm.generate([[9, 10, 11], [5, 6, 7]], [free, sampled(spec, 3)])
    assert outs[0].token_ids == alone
    jsonschema.validate(json.loads(outs[1].text), SCHEMA)


BAD_SPECS = [
    StructuredSpec(json_schema=json.dumps({"type": "object", "properties": {"a": {"type": "strnig"}}})),
    StructuredSpec(regex="(unclosed"),
]


@pytest.mark.parametrize("spec", BAD_SPECS)
def test_bad_grammar_is_refused_before_scheduling(llm, spec):
    with pytest.raises(ValueError, match="strnig|unclosed|paren|\\("):
        llm.generate([[5, 6, 7]], SamplingParams(max_tokens=5, structured=spec))
    ok = llm.generate([[5, 6, 7]], SamplingParams(max_tokens=3, temperature=0, ignore_eos=True))[0]
    assert len(ok.token_ids) == 3


@pytest.mark.parametrize("spec", BAD_SPECS)
def test_bad_grammar_sent_to_the_core_ends_with_an_error(llm, spec):
    """A client that skips the check still gets an error output, and the core keeps serving."""
    from schemas.engine import EngineRequest

    core = llm.core
    assert core.add_request(EngineRequest(request_id="bad", prompt_token_ids=[5, 6, 7],
                                          params=SamplingParams(max_tokens=5, structured=spec))) is None
    outs = []
    while core.has_work():
        outs += core.step()
    (out,) = [o for o in outs if o.request_id == "bad"]
    assert out.finish_reason == "error" and "structured output" in out.error
    ok = llm.generate([[5, 6, 7]], SamplingParams(max_tokens=3, temperature=0, ignore_eos=True))[0]
    assert len(ok.token_ids) == 3
