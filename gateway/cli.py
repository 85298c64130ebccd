"""`python -m gateway serve ...`: parses flags, builds the configs, runs the server until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from aiohttp import web

from gateway.chat_output import ParserConfig
from gateway.state import DEFAULT_MAX_BODY_BYTES, GatewaySettings, Services

log = logging.getLogger("gateway")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m gateway", description="OpenAI-compatible agent gateway")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="start the HTTP server over the built-in engine")
    serve.add_argument("--model", default=None, help="HF folder or GGUF file (default: the embedded SmolLM2-135M-Instruct)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--served-model-name", default=None)
    serve.add_argument("--api-key", default=os.environ.get("GATEWAY_API_KEY"), help="also read from GATEWAY_API_KEY")
    serve.add_argument("--max-model-len", type=int, default=None)
    serve.add_argument("--max-num-seqs", type=int, default=64)
    serve.add_argument("--max-num-batched-tokens", type=int, default=2048)
    serve.add_argument("--block-size", type=int, default=16)
    serve.add_argument("--num-kv-blocks", type=int, default=None)
    serve.add_argument("--kv-cache-gib", type=float, default=1.0)
    serve.add_argument("--no-prefix-caching", action="store_true")
    serve.add_argument("--device", default=None)
    serve.add_argument("--dtype", default=None, choices=["auto", "float32", "bfloat16", "float16"],
                       help="auto (default): bfloat16 on CUDA and on CPUs with BF16 units, else float32; on CPU with the C kernels, the KV cache's dtype")
    serve.add_argument("--kv-cache-dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"],
                       help="KV cache elements (auto: float16 on the CPU kernels for a float32 model, else the model dtype); a dtype other than the model's needs the CPU kernels")
    serve.add_argument("--quantization", default="auto", choices=["auto", "none", "int8", "int4"],
                       help="linear weights on CPU: auto (default) serves int4/int8 where the weights lie exactly on such a grid (a GGUF's Q4_1/Q8_0), float32 elsewhere; int8/int4 force a grid (lossy)")
    serve.add_argument("--no-cpu-kernels", action="store_true", help="run the torch reference path instead of the C kernels on CPU")
    serve.add_argument("--model-impl", default="auto", choices=["auto", "native", "transformers"], help="auto: native where implemented, else the transformers backend")
    serve.add_argument("--num-threads", type=int, default=None, help="compute threads per engine core (default on CPU: usable cores / data-parallel-size)")
    serve.add_argument("--data-parallel-size", type=int, default=1)
    serve.add_argument("--tool-parser", default=None, help="tool-call format name, or auto")
    serve.add_argument("--reasoning-parser", default=None, help="reasoning format name, or auto")
    serve.add_argument("--reasoning-field", default="reasoning_content", choices=["reasoning_content", "reasoning", "both"])
    serve.add_argument("--grammar-compile-timeout", type=float, default=30.0, help="seconds a request's grammar may take to compile before a 400")
    serve.add_argument("--max-waiting", type=int, default=512, help="queued requests beyond the running batch before 429")
    serve.add_argument("--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES)
    serve.add_argument("--shutdown-timeout", type=float, default=60.0, help="seconds to drain in-flight requests")
    serve.add_argument("--in-process", action="store_true", help="run the engine core inside this process")
    serve.add_argument("--log-level", default="info")
    return parser


def _engine_config(args: argparse.Namespace):
    from engine import EngineConfig

    num_threads = args.num_threads
    if num_threads is None and (args.device or "cpu") == "cpu" and args.data_parallel_size > 1:
        num_threads = max(1, len(os.sched_getaffinity(0)) // args.data_parallel_size)  # one core set per engine
    config = EngineConfig(
        model=args.model,
        max_model_len=args.max_model_len,
        max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens,
        block_size=args.block_size,
        num_kv_blocks=args.num_kv_blocks,
        kv_cache_gib=args.kv_cache_gib,
        enable_prefix_caching=not args.no_prefix_caching,
        device=args.device,
        dtype=None if args.dtype == "auto" else args.dtype,
        kv_cache_dtype=None if args.kv_cache_dtype == "auto" else args.kv_cache_dtype,
        quantization=args.quantization,
        cpu_kernels=not args.no_cpu_kernels,
        model_impl=args.model_impl,
        num_threads=num_threads,
        grammar_compile_timeout=args.grammar_compile_timeout,
    )
    config.validate()
    return config


def _pool_starter(args: argparse.Namespace, config):
    from engine import AsyncLLM

    from gateway.engine_pool import EnginePool

    async def factory(index: int):
        return await AsyncLLM.start(config, in_process=args.in_process)

    async def start_pool() -> EnginePool:
        print(f"Loading {args.model or 'the default model'} on {args.data_parallel_size} engine core(s)...", flush=True)
        max_queued = args.data_parallel_size * args.max_num_seqs + args.max_waiting
        return await EnginePool.start(factory, args.data_parallel_size, max_queued=max_queued)

    return start_pool


def serve(args: argparse.Namespace) -> int:
    from gateway.app import create_app

    if args.data_parallel_size < 1:
        print("--data-parallel-size must be >= 1", file=sys.stderr)
        return 2
    settings = GatewaySettings(
        served_model_name=args.served_model_name,
        api_key=args.api_key,
        max_body_bytes=args.max_body_bytes,
        reasoning_field=args.reasoning_field,
        parsers=ParserConfig(tool_parser=args.tool_parser, reasoning_parser=args.reasoning_parser),
    )
    try:
        config = _engine_config(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    def on_ready(services: Services) -> None:
        info = services.pool.model_info
        print(f"Engine: {info.summary}", flush=True)
        print(f"Serving model {services.model_name} (max_model_len {info.max_model_len}, "
              f"{services.pool.size} engine core(s)) at http://{args.host}:{args.port}/v1", flush=True)

    app = create_app(settings, _pool_starter(args, config), on_ready=on_ready)
    try:
        web.run_app(app, host=args.host, port=args.port, print=None, shutdown_timeout=args.shutdown_timeout,
                    handler_cancellation=True, access_log=None)
    except (ValueError, RuntimeError, OSError) as exc:  # a bad model, a core that cannot start, a busy port
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("Gateway stopped.", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "serve":
        return serve(args)
    return 2
