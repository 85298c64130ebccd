"""String formats beyond the basics (RFC 3986/4291/3339/6570, JSON pointers, base64) and formats on numbers."""

from __future__ import annotations

import ipaddress
import json
import random

import pytest

import grammar
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()

STRING_CASES = {
    "ipv6": (["::", "::1", "1::", "fe80::1:2", "2001:db8:85a3:0:0:8a2e:370:7334", "::ffff:192.168.0.1", "1:2:3:4:5:6:7::"],
             ["1:2:3:4:5:6:7:8:9", ":::", "1::2::3", "12345::", "1:2", "::1.2.3", "::ffff:192.168.0.01"]),
    "duration": (["P1D", "PT1H", "P1Y2M3DT4H5M6S", "P2W", "PT5S", "P1M", "P1YT2S"],
                 ["P", "PT", "P1H", "1D", "P1DT", "P1W1D", "PT1H1S", "P1D2Y"]),
    "uri": (["https://x.org/a?b=c#d", "urn:isbn:0451450523", "mailto:a@b.c", "http://[::1]:80/", "a:"],
            ["no scheme", "a:%zz", "http://x/a#b#c", "1a:b", "http://x/a b"]),
    "uri-reference": (["", "a/b", "/x?y", "#frag", "//host/p", "https://x.org/", "../up", "a/b:c"],
                      ["1a:b", "a b", "%g0", "x#a#b"]),
    "uri-template": (["http://x/{id}", "/search{?q,lang}", "{+path}/here", "{var:3}", "x{a*}", "{a.b}", "plain"],
                     ["{}", "{a", "x}y{", "{a b}", "{a:0}", "{a..b}"]),
    "byte": (["", "YQ==", "YWI=", "YWJj", "YWJjZA==", "a+/9"], ["Y", "YQ=", "YQ===", "Y*==", "YWJjZ"]),
    "json-pointer": (["", "/a", "/a~0b/~1", "/", "//"], ["a", "/~2", "/~"]),
    "relative-json-pointer": (["0", "1/a", "2#", "10/x~1y"], ["-1", "01", "a", "1#/a"]),
    "binary": (["", "anything at all", 'quote " and backslash \\'], []),
    "password": (["hunter2"], []),
}


@pytest.mark.parametrize("fmt", sorted(STRING_CASES))
def test_string_format(fmt: str) -> None:
    good, bad = STRING_CASES[fmt]
    g = grammar.compile_json_schema({"type": "string", "format": fmt}, VOCAB)
    for text in good:
        assert accepts_text(g, json.dumps(text)), text
    for text in bad:
        assert not accepts_text(g, json.dumps(text)), text


def test_uri_slash_may_be_escaped_in_json() -> None:
    g = grammar.compile_json_schema({"type": "string", "format": "uri"}, VOCAB)
    assert accepts_text(g, '"http:\\/\\/x.org\\/a"')


def test_ipv6_agrees_with_ipaddress_module() -> None:
    """Perturbed real addresses and random strings: accepted exactly when Python parses them."""
    g = grammar.compile_json_schema({"type": "string", "format": "ipv6"}, VOCAB)
    rng = random.Random(7)
    texts = []
    for _ in range(1500):
        if rng.random() < 0.5:
            addr = ipaddress.IPv6Address(rng.getrandbits(16) << rng.choice([0, 16, 96, 112]) if rng.random() < 0.5
                                         else rng.getrandbits(128))  # fmt: skip
            text = rng.choice([addr.compressed, addr.exploded])
            edit = rng.random()
            if edit < 0.2:
                text = text.replace(":", "::", 1)
            elif edit < 0.4:
                text += rng.choice([":", "1", ":1", ".1", "::"])
            elif edit < 0.5:
                text = text.rsplit(":", 2)[0] + f":{rng.randrange(300)}.{rng.randrange(300)}.1.2"
        else:
            text = "".join(rng.choice("0123456789abcdef:.") for _ in range(rng.randrange(1, 16)))
        texts.append(text)
    for text in texts:
        try:
            ipaddress.IPv6Address(text)
            want = True
        except ValueError:
            want = False
        assert accepts_text(g, json.dumps(text)) is want, text


@pytest.mark.parametrize("schema, good, bad", [
    ({"type": "integer", "format": "int32"}, ["0", "2147483647", "-2147483648"], ["2147483648", "-2147483649"]),
    ({"type": "integer", "format": "int32", "minimum": 5}, ["5", "2147483647"], ["4", "2147483648"]),
    ({"type": "integer", "format": "int64"}, ["9223372036854775807"], ["9223372036854775808"]),
    ({"type": "integer", "format": "uint32"}, ["0", "4294967295"], ["-1", "4294967296"]),
    ({"type": "number", "format": "int64"}, ["-12"], ["1.5", "1e3"]),
    ({"type": ["integer", "null"], "format": "int32"}, ["null", "7"], ["3000000000"]),
    ({"type": "number", "format": "double"}, ["1.5", "-2e300"], ['"1"']),
    ({"type": "number", "format": "float"}, ["3.25"], ["x"]),
])  # fmt: skip
def test_numeric_formats(schema: dict, good: list[str], bad: list[str]) -> None:
    g = grammar.compile_json_schema(schema, VOCAB)
    for text in good:
        assert accepts_text(g, text), text
    for text in bad:
        assert not accepts_text(g, text), text


@pytest.mark.parametrize("schema, good, bad", [
    ({"type": "string", "format": "path"}, ['"/a b"', '""'], ["1", '"\\x"']),
    ({"type": "string", "format": "textarea", "maxLength": 3}, ['"abc"'], ['"abcd"']),
    ({"type": "string", "format": "html-selector", "pattern": "^#"}, ['"#id"'], ['".cls"']),
    ({"type": "integer", "format": "ports", "minimum": 1}, ["1", "65536"], ["0", "1.5"]),
    ({"type": "number", "format": "percent", "maximum": 100}, ["99.5", "100"], ["100.5"]),
    ({"type": "object", "properties": {"p": {"type": "number", "format": "percent"}}}, ['{"p":3}'], ['{"p":"3"}']),
])  # fmt: skip
def test_unknown_formats_are_annotations_logged_once(schema: dict, good: list[str], bad: list[str], caplog) -> None:
    """JSON Schema: a format the validator does not define asserts nothing; the rest of the schema holds."""
    with caplog.at_level("WARNING", logger="grammar"):
        g = grammar.compile_json_schema(schema, VOCAB)
    assert len([r for r in caplog.records if "unknown format" in r.getMessage()]) == 1
    for text in good:
        assert accepts_text(g, text), text
    for text in bad:
        assert not accepts_text(g, text), text


@pytest.mark.parametrize("schema, good, bad", [
    ({"type": "string", "format": "datetime"}, ['"2024-02-29T12:00:00Z"'], ['"2024-02-29"', '"now"']),
    ({"type": "string", "format": "full-date"}, ['"2024-02-29"'], ['"2024-02-29T12:00:00Z"', '"2024-13-01"']),
    ({"type": "number", "format": "timestamp"}, ["1733300000", "1733300000.25"], ['"1733300000"']),
    ({"type": "integer", "format": "timestamp"}, ["1733300000"], ["1.5"]),
    ({"type": "integer", "format": "int8"}, ["-128", "127"], ["128", "-129"]),
    ({"type": "integer", "format": "uint16"}, ["65535"], ["65536", "-1"]),
])  # fmt: skip
def test_format_aliases_are_enforced(schema: dict, good: list[str], bad: list[str], caplog) -> None:
    with caplog.at_level("WARNING", logger="grammar"):
        g = grammar.compile_json_schema(schema, VOCAB)
    assert not caplog.records
    for text in good:
        assert accepts_text(g, text), text
    for text in bad:
        assert not accepts_text(g, text), text


@pytest.mark.parametrize("schema, pointer", [
    ({"type": "string", "format": "idn-hostname"}, "/format"),
    ({"type": "object", "properties": {"p": {"type": "string", "format": "regex"}}}, "/properties/p/format"),
    ({"type": "string", "format": 5}, "/format"),
    ({"type": "number", "format": ["x"]}, "/format"),
])  # fmt: skip
def test_formats_we_cannot_enforce_raise_with_their_pointer(schema: dict, pointer: str) -> None:
    with pytest.raises(grammar.GrammarError, match=pointer):
        grammar.compile_json_schema(schema, VOCAB)


def test_an_unknown_format_on_several_types_is_one_line(caplog) -> None:
    schema = {"type": ["string", "integer", "number"], "format": "ports"}
    with caplog.at_level("WARNING", logger="grammar"):
        g = grammar.compile_json_schema(schema, VOCAB)
    assert len([r for r in caplog.records if "unknown format" in r.getMessage()]) == 1
    assert accepts_text(g, '"80:80"') and accepts_text(g, "8080") and accepts_text(g, "1.5")
