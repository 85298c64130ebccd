"""End-to-end cost of JSON-schema constrained decoding: constrained vs unconstrained tokens/s, one run.

N concurrent chat requests (default 16) on the default model through the engine core
(offline LLM), each decoding exactly OUTPUT_LEN tokens: constrained requests use schemas
whose minimum valid output is longer than OUTPUT_LEN (arrays with minItems), so they stop
at the token limit like the unconstrained ones (ignore_eos) and both runs decode the same
number of tokens at the same batch size. Runs alternate constrained / unconstrained,
`--repeats` times; the table gives medians and their ratio (target: >= 0.9). Prompts differ
per request and per run (constrained and unconstrained runs included), so the prefix cache
does not help either side.

    .venv/bin/python benchmarks/structured_decode.py                     # 16 requests, 128 tokens, 3 repeats
    .venv/bin/python benchmarks/structured_decode.py --concurrency 1 16 --threads 2 --plot out.png
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from engine import LLM, SamplingParams
from schemas.engine import JsonSchemaSpec

_ITEM = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 40},
                                          "quantity": {"type": "integer", "minimum": 0},
                                          "unit": {"enum": ["kg", "g", "l", "pcs"]}},
         "required": ["name", "quantity", "unit"], "additionalProperties": False}
SCHEMAS = [
    {"type": "object", "properties": {"order_id": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
                                      "items": {"type": "array", "items": _ITEM, "minItems": 12}},
     "required": ["order_id", "items"], "additionalProperties": False},
    {"type": "object", "properties": {
        "people": {"type": "array", "minItems": 12, "items": {
            "type": "object", "properties": {"first": {"type": "string"}, "last": {"type": "string"},
                                             "age": {"type": "integer", "minimum": 0, "maximum": 130},
                                             "email": {"type": "string", "format": "email"}},
            "required": ["first", "last", "age"]}}},
     "required": ["people"]},
    {"type": "array", "minItems": 16, "items": {
        "type": "object", "properties": {"date": {"type": "string", "format": "date"},
                                         "event": {"type": "string", "minLength": 3},
                                         "attendees": {"type": "integer"}, "remote": {"type": "boolean"}},
        "required": ["date", "event", "attendees", "remote"], "additionalProperties": False}},
    {"type": "object", "properties": {
        "title": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}, "minItems": 30},
        "rating": {"type": "number", "minimum": 0, "maximum": 5}},
     "required": ["title", "tags", "rating"]},
]
TOPICS = ["a grocery order", "a team roster", "a conference schedule", "a blog post", "a warehouse delivery",
          "a family tree", "a sports season", "a movie review"]


def make_prompts(llm: LLM, num: int, run: int) -> list[list[int]]:
    prompts = []
    for i in range(num):
        schema = SCHEMAS[i % len(SCHEMAS)]
        messages = [{"role": "system", "content": f"Answer in JSON. Request {run}-{i}."},
                    {"role": "user", "content": f"Describe {TOPICS[i % len(TOPICS)]} as JSON matching this schema: "
                                                f"{json.dumps(schema)}"}]  # fmt: skip
        text = llm.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        prompts.append(llm.tokenizer.encode(text, add_special_tokens=False))
    return prompts


def run(llm: LLM, num: int, output_len: int, constrained: bool, run_index: int) -> float:
    """Output tokens/s of one batch of `num` concurrent requests."""
    prompts = make_prompts(llm, num, run_index)
    params = []
    for i in range(num):
        spec = JsonSchemaSpec(json_schema=json.dumps(SCHEMAS[i % len(SCHEMAS)])) if constrained else None
        params.append(SamplingParams(max_tokens=output_len, temperature=0.8, seed=run_index * 1000 + i,
                                     ignore_eos=not constrained, structured=spec))  # fmt: skip
    start = time.perf_counter()
    outs = llm.generate(prompts, params)
    elapsed = time.perf_counter() - start
    tokens = sum(len(o.token_ids) for o in outs)
    short = [o for o in outs if len(o.token_ids) != output_len]
    if short:
        print(f"  note: {len(short)} request(s) ended early ({[o.finish_reason for o in short]})")
    if constrained:
        _check_prefixes(outs)
    return tokens / elapsed


def _check_prefixes(outs) -> None:
    """Constrained outputs cut at the token limit must still be the start of a JSON document."""
    for o in outs:
        if not o.text.lstrip().startswith(("{", "[")):
            raise AssertionError(f"constrained output does not start a JSON value: {o.text[:60]!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[16])
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (the server gives its core cores-1)")
    ap.add_argument("--plot", default=None, help="save a PNG bar chart here")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    llm = LLM(None, max_num_seqs=max(args.concurrency), num_threads=args.threads, max_model_len=1024)
    run(llm, 2, 8, True, -1)  # warm-up: builds the grammar vocabulary, compiles
    run(llm, 2, 8, False, -1)
    rows = []
    for num in args.concurrency:
        free, constrained = [], []
        for r in range(args.repeats):
            # Distinct prompts for every run (run index in the system prompt): neither side
            # may reuse the other's prefill through the prefix cache.
            constrained.append(run(llm, num, args.output_len, True, 2 * r))
            free.append(run(llm, num, args.output_len, False, 2 * r + 1))
            print(f"n={num} repeat {r}: constrained {constrained[-1]:.1f} tok/s, unconstrained {free[-1]:.1f} tok/s",
                  flush=True)
        rows.append((num, statistics.median(constrained), statistics.median(free)))
    print(f"\nJSON-schema constrained vs unconstrained decoding, default model, {args.output_len} output tokens "
          f"per request, {args.threads} torch thread(s), median of {args.repeats}")
    print("| concurrent requests | constrained tok/s | unconstrained tok/s | ratio |")
    print("|---:|---:|---:|---:|")
    for num, c, f in rows:
        print(f"| {num} | {c:.1f} | {f:.1f} | {c / f:.2f} |")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        xs = range(len(rows))
        ax.bar([x - 0.2 for x in xs], [r[2] for r in rows], width=0.4, label="unconstrained")
        ax.bar([x + 0.2 for x in xs], [r[1] for r in rows], width=0.4, label="JSON schema")
        ax.set_xticks(list(xs), [str(r[0]) for r in rows])
        ax.set_xlabel("concurrent requests")
        ax.set_ylabel("output tokens/s")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"plot saved to {args.plot}")


if __name__ == "__main__":
    main()
