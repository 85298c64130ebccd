"""GBNF (llama.cpp / xgrammar EBNF) grammars: what each construct accepts, and clear errors."""

from __future__ import annotations

import pytest

import grammar
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()

JSON_LIKE = r'''
# a small JSON subset, written the way llama.cpp's examples are
root   ::= object
object ::=
  "{" ws (
    string ":" ws value
    ("," ws string ":" ws value)*
  )? "}"
value  ::= object | array | string | number | ("true" | "false" | "null")
array  ::= "[" ws ( value ("," ws value)* )? "]"
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\""
number ::= "-"? [0-9]+ ("." [0-9]+)?
ws     ::= [ \t\n]{0,2}
'''


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ('{"a":1}', True),
        ('{ "a": [true, null, "x\\u00e9"], "b":{}}', True),
        ('{"a":-1.5,"b":"\\n"}', True),
        ('{"a":1,}', False),
        ('{"a":01x}', False),
        ('{"a":"\x01"}', False),
        ('{"a":1}   ', False),
    ],
)
def test_json_like_grammar(text, ok):
    assert accepts_text(grammar.compile_gbnf(JSON_LIKE, VOCAB), text) is ok


@pytest.mark.parametrize(
    ("text", "accepted", "rejected"),
    [
        ('root ::= "a"{2,3} "b"?', ["aa", "aab", "aaa"], ["a", "aaaa", "b"]),
        ('root ::= "x"{2}', ["xx"], ["x", "xxx"]),
        ('root ::= "x"{1,} "."', ["x.", "xxxx."], ["."]),
        ('root ::= [^a-c]+', ["xyz", "é"], ["a", "xb", ""]),
        ('root ::= . "!"', ["a!", "é!"], ["!", "ab!"]),
        ('root ::= "\\x41\\u00e9\\t"', ["Aé\t"], ["A"]),
        ('root ::= item-list\nitem-list ::= "(" item-list? ")"', ["()", "(())"], ["(()"]),
        ('root ::= a | b\na ::= "1"\n  # comment line\nb ::= "2"  # trailing', ["1", "2"], ["12"]),
        ('root ::= "a" |\n  "b"', ["a", "b"], ["ab"]),
    ],
)
def test_constructs(text, accepted, rejected):
    g = grammar.compile_gbnf(text, VOCAB)
    for s in accepted:
        assert accepts_text(g, s), s
    for s in rejected:
        assert not accepts_text(g, s), s


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('start ::= "a"', "no 'root'"),
        ('root ::= undefined', "'undefined' is used but not defined"),
        ('root ::= "a"\nroot ::= "b"', "defined twice"),
        ('root ::= "a', "unterminated"),
        ('root ::= [a-', "unclosed"),
        ('root ::= "a"{3,1}', "bad repetition"),
        ('root ::= ( "a"', "expected ')'"),
        ('root = "a"', "expected '::='"),
        ('root ::= root "a"', "left-recursive"),
        ('root ::= "\\q"', "unknown escape"),
        ('root ::= "a"\n"b"', "expected a rule name"),
    ],
)
def test_errors_name_the_problem_and_place(text, needle):
    with pytest.raises(grammar.GrammarError, match="gbnf") as err:
        grammar.compile_gbnf(text, VOCAB)
    assert needle in str(err.value)
