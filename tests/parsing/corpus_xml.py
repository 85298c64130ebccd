"""Corpus: XML-parameter formats (qwen3_coder, seed_oss, glm45, glm47, minimax_m2, DSML)."""
from __future__ import annotations

from tests.parsing.cases import TOOLS, Case

W = "get_weather"
CODE = 'if a < b:\n    print("</div>", \'x\')\n'


def qc(fmt: str, name: str, text: str, **kw) -> Case:
    return Case(fmt, name, text, tools=TOOLS, **kw)


def fn(name: str, *params: tuple[str, str]) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params)
    return f"<function={name}>\n{body}</function>\n"


QWEN3_CODER = [
    qc("qwen3_coder", "one_call", "I'll check.\n<tool_call>\n" + fn(W, ("city", "Paris"), ("days", "3"))
       + "</tool_call>", content="I'll check.", calls=((W, {"city": "Paris", "days": 3}),)),
    qc("qwen3_coder", "parallel_typed",
       "<tool_call>\n" + fn("run_code", ("code", CODE), ("timeout", "2.0"), ("verbose", "True"),
                            ("env", '{"A": "1"}'), ("args", "['-v', '-x']"), ("limit", "None"),
                            ("mode", "false")) + "</tool_call>\n<tool_call>\n" + fn("get_time") + "</tool_call>",
       calls=(("run_code", {"code": CODE, "timeout": 2, "verbose": True, "env": {"A": "1"},
                            "args": ["-v", "-x"], "limit": None, "mode": False}), ("get_time", {}))),
    qc("qwen3_coder", "close_tag_in_value",
       "<tool_call>\n" + fn("run_code", ("code", "s = '</parameter>'\nt = '</function>'")) + "</tool_call>",
       calls=(("run_code", {"code": "s = '</parameter>'\nt = '</function>'"}),)),
    qc("qwen3_coder", "strings_stay_strings",
       "<tool_call>\n" + fn(W, ("zip", "03106"), ("city", "true"), ("unit", "c"), ("extra", "12"))
       + "</tool_call>", calls=((W, {"zip": "03106", "city": "true", "unit": "c", "extra": "12"}),)),
    qc("qwen3_coder", "bad_values_kept",
       "<tool_call>\n" + fn(W, ("days", "three")) + "</tool_call>", calls=((W, {"days": "three"}),)),
    qc("qwen3_coder", "bare_function", "Sure.\n" + fn(W, ("city", "Oslo")) + "Done.",
       content="Sure.\nDone.", calls=((W, {"city": "Oslo"}),)),
    qc("qwen3_coder", "implicit_reasoning_end", "I should call it.\n\n<tool_call>\n" + fn(W, ("city", "Rome"))
       + "</tool_call>", reasoning="I should call it.", calls=((W, {"city": "Rome"}),), starts_in_reasoning=True),
    qc("qwen3_coder", "unrendered_template", "<tool_call>\n<function={{ name }}>\n</function>\n</tool_call>ok",
       content="ok"),
    qc("qwen3_coder", "bare_unrendered_is_not_a_call", "Use <function={{ name }}> in templates.",
       content="Use in templates."),
    qc("qwen3_coder", "truncated_string", "<tool_call>\n<function=run_code>\n<parameter=code>\nprint(1)\npri",
       calls=(("run_code", {"code": "print(1)\npri"}),)),
    qc("qwen3_coder", "truncated_typed", "<tool_call>\n<function=get_weather>\n<parameter=city>\nA\n"
       "</parameter>\n<parameter=days>\n1", calls=((W, {"city": "A"}),)),
    qc("qwen3_coder", "skipped_value_closer",
       "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n<parameter=days>\n2\n</function>\n</tool_call>",
       calls=((W, {"city": "Oslo", "days": 2}),)),
    qc("qwen3_coder", "function_close_in_value",
       "<tool_call>\n" + fn("run_code", ("code", "a = '</function>' + b")) + "</tool_call>",
       calls=(("run_code", {"code": "a = '</function>' + b"}),)),
    qc("qwen3_coder", "duplicate_parameter_dropped",
       "<tool_call>\n" + fn(W, ("city", "A"), ("city", "B"), ("days", "1")) + "</tool_call>",
       calls=((W, {"city": "A", "days": 1}),)),
    qc("qwen3_coder", "unicode", "<tool_call>\n" + fn(W, ("city", 'Zürich "東京" \\ 🌧️\t')) + "</tool_call>",
       calls=((W, {"city": 'Zürich "東京" \\ 🌧️\t'}),)),
]

SEED = [
    qc("seed_oss", "example_in_reasoning",
       "<seed:think>The format is <seed:tool_call>\n<function=x>\n</function>\n</seed:tool_call>, so"
       "</seed:think>Calling.\n<seed:tool_call>\n" + fn(W, ("city", "Lima")) + "</seed:tool_call>",
       reasoning="The format is <seed:tool_call>\n<function=x>\n</function>\n</seed:tool_call>, so",
       content="Calling.", calls=((W, {"city": "Lima"}),)),
    qc("seed_oss", "budget_reflect",
       "<seed:think>Hmm<seed:cot_budget_reflect>50 left</seed:cot_budget_reflect></seed:think>Hi",
       reasoning="Hmm<seed:cot_budget_reflect>50 left</seed:cot_budget_reflect>", content="Hi"),
    qc("seed_oss", "two_blocks",
       "<seed:tool_call>\n" + fn(W, ("days", "null")) + "</seed:tool_call><seed:tool_call>\n"
       + fn("get_time") + "</seed:tool_call>", calls=((W, {"days": None}), ("get_time", {}))),
    qc("seed_oss", "no_newlines", "<seed:tool_call><function=get_weather><parameter=city>Nice</parameter>"
       "</function></seed:tool_call>", calls=((W, {"city": "Nice"}),)),
    qc("seed_oss", "truncated_think", "<seed:think>So the", reasoning="So the"),
]


def glm(name: str, params: list[tuple[str, str]], nl: str) -> str:
    body = "".join(f"<arg_key>{k}</arg_key>{nl}<arg_value>{v}</arg_value>{nl}" for k, v in params)
    return f"<tool_call>{name}{nl}{body}</tool_call>"


GLM = [
    qc("glm45", "two_calls", "<think>Weather and time.</think>\nOn it.\n" + glm(W, [("city", "Paris"), ("days", "2")], "\n")
       + "\n" + glm("get_time", [], "\n"), reasoning="Weather and time.", content="On it.",
       calls=((W, {"city": "Paris", "days": 2}), ("get_time", {}))),
    qc("glm45", "json_values", glm("run_code", [("env", '{"k": [1, 2]}'), ("args", '["a"]'), ("code", "x</arg_value>y")], "\n"),
       calls=(("run_code", {"env": {"k": [1, 2]}, "args": ["a"], "code": "x</arg_value>y"}),)),
    qc("glm45", "no_args_short", "<tool_call>get_time\n</tool_call>", calls=(("get_time", {}),)),
    qc("glm45", "truncated_name", "Hi<tool_call>get_wea", content="Hi"),
    qc("glm45", "example_in_reasoning", "<think>use <tool_call>get_time</tool_call></think>ok",
       reasoning="use <tool_call>get_time</tool_call>", content="ok"),
    qc("glm47", "compact", "Let me see." + glm(W, [("city", "Bern"), ("days", "4")], "") + glm("get_time", [], ""),
       content="Let me see.", calls=((W, {"city": "Bern", "days": 4}), ("get_time", {}))),
    qc("glm47", "implicit_reasoning_end", "Need time." + glm("get_time", [], ""), reasoning="Need time.",
       calls=(("get_time", {}),), starts_in_reasoning=True),
    qc("glm47", "tool_call_in_value", glm("run_code", [("code", "a</tool_call>b"), ("verbose", "false")], ""),
       calls=(("run_code", {"code": "a</tool_call>b", "verbose": False}),)),
    qc("glm47", "missing_value_opener",
       "<tool_call>get_weather<arg_key>city</arg_key>Paris</arg_value><arg_key>days</arg_key>"
       "<arg_value>2</arg_value></tool_call>", calls=((W, {"city": "Paris", "days": 2}),)),
    qc("glm47", "truncated_value", glm("run_code", [("code", "abc")], "")[:-24],
       calls=(("run_code", {"code": "abc"}),)),
]


def invoke(name: str, params: list[tuple[str, str]]) -> str:
    body = "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in params)
    return f'<invoke name="{name}">\n{body}</invoke>\n'


MINIMAX = [
    qc("minimax_m2", "two_invokes", "Checking.\n</think>\n\nSure.\n<minimax:tool_call>\n"
       + invoke(W, [("city", "Seoul"), ("days", "5")]) + invoke("get_time", []) + "</minimax:tool_call>",
       reasoning="Checking.", content="Sure.", starts_in_reasoning=True,
       calls=((W, {"city": "Seoul", "days": 5}), ("get_time", {}))),
    qc("minimax_m2", "typed", "<minimax:tool_call>\n" + invoke("run_code", [
        ("timeout", "1.5"), ("verbose", "TRUE"), ("limit", "null"), ("mode", "fast"), ("code", "<b>x</b>")])
       + "</minimax:tool_call>", calls=(("run_code", {"timeout": 1.5, "verbose": True, "limit": None,
                                                      "mode": "fast", "code": "<b>x</b>"}),)),
    qc("minimax_m2", "unknown_tool_strings", "<minimax:tool_call>\n" + invoke("other", [("n", "1")])
       + "</minimax:tool_call>", calls=(("other", {"n": "1"}),)),
    qc("minimax_m2", "content_only", "Thinking done.</think>Answer: 42.", reasoning="Thinking done.",
       content="Answer: 42.", starts_in_reasoning=True),
    qc("minimax_m2", "skipped_closer_before_invoke_end",
       '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="days">3\n</invoke>\n'
       '<invoke name="get_time">\n</invoke>\n</minimax:tool_call>',
       calls=((W, {"days": 3}), ("get_time", {}))),
    qc("minimax_m2", "truncated", '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Be',
       calls=((W, {"city": "Be"}),)),
]

D = "｜DSML｜"


def dsml(block: str, invokes: list[tuple[str, list[tuple[str, str, str]]]]) -> str:
    out = [f"<{D}{block}>\n"]
    for name, params in invokes:
        out.append(f'<{D}invoke name="{name}">\n')
        out += [f'<{D}parameter name="{k}" string="{s}">{v}</{D}parameter>\n' for k, s, v in params]
        out.append(f"</{D}invoke>\n")
    out.append(f"</{D}{block}>")
    return "".join(out)


DSML = [
    qc("deepseek_v32", "two_invokes", "Thinking.</think>Let me check.\n\n" + dsml("function_calls", [
        (W, [("city", "true", "Paris"), ("days", "false", "3"), ("zip", "true", "042")]),
        ("run_code", [("env", "false", '{"a": [true, null]}'), ("code", "true", " spaced ")])]),
       reasoning="Thinking.", content="Let me check.", starts_in_reasoning=True,
       calls=((W, {"city": "Paris", "days": 3, "zip": "042"}),
              ("run_code", {"env": {"a": [True, None]}, "code": " spaced "}))),
    qc("deepseek_v32", "no_params", dsml("function_calls", [("get_time", [])]), calls=(("get_time", {}),)),
    qc("deepseek_v32", "plain", "</think>Hello.", content="Hello.", starts_in_reasoning=True),
    qc("deepseek_v32", "tags_in_string", dsml("function_calls", [("run_code", [("code", "true", "<b>\n</b>")])]),
       calls=(("run_code", {"code": "<b>\n</b>"}),)),
    qc("deepseek_v32", "example_in_reasoning_stays",
       "I could emit <" + D + "function_calls> here.</think>Fine.", reasoning="I could emit <" + D
       + "function_calls> here.", content="Fine.", starts_in_reasoning=True),
    qc("deepseek_v32", "truncated_string", f'<{D}function_calls>\n<{D}invoke name="run_code">\n'
       f'<{D}parameter name="code" string="true">print(', calls=(("run_code", {"code": "print("}),)),
    qc("deepseek_v4", "from_reasoning", "I will call." + dsml("tool_calls", [(W, [("city", "true", "Lima")])]),
       reasoning="I will call.", starts_in_reasoning=True, calls=((W, {"city": "Lima"}),)),
    qc("deepseek_v4", "after_content", "</think>Ok." + dsml("tool_calls", [("get_time", [])]),
       content="Ok.", starts_in_reasoning=True, calls=(("get_time", {}),)),
    qc("deepseek_v4", "parallel_then_text", "</think>" + dsml("tool_calls", [
        (W, [("city", "true", "A"), ("days", "false", "[1, 2]")]), (W, [("city", "true", "B")])]) + "\nDone.",
       content="Done.", starts_in_reasoning=True,
       calls=((W, {"city": "A", "days": [1, 2]}), (W, {"city": "B"}))),
    qc("deepseek_v4", "truncated_typed", f'</think><{D}tool_calls>\n<{D}invoke name="get_weather">\n'
       f'<{D}parameter name="city" string="true">Oslo</{D}parameter>\n<{D}parameter name="days" string="false">1',
       starts_in_reasoning=True, calls=((W, {"city": "Oslo"}),)),
    qc("deepseek_v4", "v32_wrapper_is_text", "</think>" + dsml("function_calls", [("get_time", [])])[:30],
       content=f"<{D}function_calls>\n<{D}", starts_in_reasoning=True),
]

CASES = QWEN3_CODER + SEED + GLM + MINIMAX + DSML
