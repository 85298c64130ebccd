"""JsonScanner: finds a value's end through strings, forwards text, completes cut-off prefixes."""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from parsing.json_stream import JsonScanner

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


def scan_all(chunks: list[str]) -> tuple[str, JsonScanner, str]:
    sc, out, rest = JsonScanner(), [], ""
    for chunk in chunks:
        pos, text = sc.scan(chunk, 0)
        out.append(text)
        if sc.done or sc.failed:
            rest = chunk[pos:]
            break
    return "".join(out), sc, rest


def test_end_found_through_markers_in_strings() -> None:
    text = '{"a": "}</tool_call>\\"", "b": [1, {"c": "]"}]} tail'
    out, sc, rest = scan_all([text])
    assert sc.done and out == text[: -len(" tail")] and rest == " tail"


def test_raw_control_characters_are_escaped() -> None:
    out, sc, _ = scan_all(['{"a": "x\ny\tz"}'])
    assert sc.done and out == '{"a": "x\\ny\\tz"}' and json.loads(out) == {"a": "x\ny\tz"}


def test_invalid_atom_fails_and_completion_is_valid() -> None:
    out, sc, _ = scan_all(['{"a": 1, "b": tx}'])
    assert sc.failed
    assert json.loads(out + sc.completion()) == {"a": 1, "b": None}


def test_number_held_until_complete() -> None:
    sc = JsonScanner()
    _, out = sc.scan('{"n": 12', 0)
    assert out == '{"n": '
    _, out2 = sc.scan("3}", 0)
    assert out2 == "123}" and sc.done


@settings(max_examples=60, deadline=None)
@given(value=st.dictionaries(st.text(max_size=6), JSON, max_size=5), indent=st.sampled_from([None, 2]),
       ascii_=st.booleans(), data=st.data())
def test_every_prefix_completes_to_valid_json(value, indent, ascii_, data) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_)
    out, sc, _ = scan_all([text])
    assert sc.done and out == text
    cut = data.draw(st.integers(0, len(text)))
    sc = JsonScanner()
    _, prefix = sc.scan(text[:cut], 0)
    assert text.startswith(prefix)
    if cut:
        assert isinstance(json.loads(prefix + sc.completion()), dict)
    splits = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    chunks = [text[a:b] for a, b in zip([0] + splits, splits + [len(text)])]
    assert scan_all(chunks)[0] == text
