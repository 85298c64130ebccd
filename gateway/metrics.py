"""Prometheus metrics of one gateway app: request counts, latencies, tokens and engine gauges."""

from __future__ import annotations

import asyncio
import time

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from gateway.engine_pool import EnginePool

REPLICA_STATES = ("ok", "restarting", "draining", "dead")  # EnginePool.replicas()' "state"
_LATENCY_BUCKETS = (0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0)


class GatewayMetrics:
    """One registry per app (no process globals). Handlers record; `/metrics` renders."""

    def __init__(self) -> None:
        self.registry = reg = CollectorRegistry()
        self.requests = Counter("gateway_requests", "HTTP requests by route and status", ["route", "status"], registry=reg)
        self.ttft = Histogram(
            "gateway_time_to_first_token_seconds", "Time to first token", buckets=_LATENCY_BUCKETS, registry=reg
        )
        self.itl = Histogram(
            "gateway_inter_token_latency_seconds", "Time between output deltas", buckets=_LATENCY_BUCKETS, registry=reg
        )
        self.prompt_tokens = Counter("gateway_prompt_tokens", "Prompt tokens processed", registry=reg)
        self.generation_tokens = Counter("gateway_generation_tokens", "Tokens generated", registry=reg)
        self.num_inflight = Gauge("gateway_num_requests_inflight", "Engine requests in flight", registry=reg)
        self.num_running = Gauge("gateway_num_requests_running", "Requests running in the engines", registry=reg)
        self.num_waiting = Gauge("gateway_num_requests_waiting", "Requests waiting in the engines", registry=reg)
        self.kv_usage = Gauge("gateway_kv_cache_usage_ratio", "Fraction of KV blocks in use", registry=reg)
        self.kv_free = Gauge("gateway_kv_cache_free_blocks", "Free KV cache blocks", registry=reg)
        self.kv_total = Gauge("gateway_kv_cache_total_blocks", "Total KV cache blocks", registry=reg)
        self.prefix_hit_rate = Gauge("gateway_prefix_cache_hit_rate", "Prefix cache hits / queries", registry=reg)
        self.preemptions = Gauge("gateway_num_preemptions", "Preemptions so far", registry=reg)
        self.engines_alive = Gauge("gateway_engines_alive", "Engine cores alive", registry=reg)
        self.engine_restarts = Gauge("gateway_engine_restarts", "Engine cores restarted", registry=reg)
        self.engine_resident = Gauge("gateway_engine_resident_bytes", "Resident memory of the engine cores", registry=reg)
        replica = ["replica", "node"]
        self.replica_up = Gauge("gateway_replica_up", "1 while the replica serves, 0 dead/restarting/draining",
                                replica, registry=reg)  # fmt: skip
        self.replica_running = Gauge("gateway_replica_num_requests_running", "Requests running", replica, registry=reg)
        self.replica_waiting = Gauge("gateway_replica_num_requests_waiting", "Requests waiting", replica, registry=reg)
        self.replica_kv_usage = Gauge("gateway_replica_kv_cache_usage_ratio", "KV blocks in use", replica, registry=reg)
        self.replica_hit_rate = Gauge("gateway_replica_prefix_cache_hit_rate", "Prefix cache hits / queries",
                                      replica, registry=reg)  # fmt: skip
        self.replica_load = Gauge("gateway_replica_load_tokens", "Tokens in flight (routing's load)", replica,
                                  registry=reg)  # fmt: skip
        # A state set (OpenMetrics' StateSet as a gauge): one sample per state, 1 for the replica's own, so a
        # dashboard (the playground's fleet table) tells restarting from draining from dead, which _up cannot.
        self.replica_state = Gauge("gateway_replica_state", "1 for the replica's state (ok, restarting, draining, "
                                   "dead), 0 for the others", [*replica, "state"], registry=reg)  # fmt: skip
        self.replica_failovers = Gauge("gateway_replica_failovers", "Requests re-routed away from the replica after "
                                       "it died before their first token", replica, registry=reg)  # fmt: skip
        self.replicas = Gauge("gateway_replicas", "Engine replicas (autoscaling moves this)", registry=reg)
        self.failovers = Gauge("gateway_failovers", "Requests re-routed after their replica died before their "
                               "first token", registry=reg)  # fmt: skip
        self.scale_events = Gauge("gateway_scale_events", "Replicas added / removed by autoscaling", ["direction"],
                                  registry=reg)  # fmt: skip
        self.routing = Gauge("gateway_routing_decisions", "Routing decisions by reason", ["reason"], registry=reg)
        self.spec_drafts = Gauge("gateway_spec_decode_num_draft_tokens", "Speculative draft tokens verified", registry=reg)
        self.spec_accepted = Gauge("gateway_spec_decode_num_accepted_tokens", "Speculative draft tokens accepted", registry=reg)
        self.spec_rate = Gauge("gateway_spec_decode_acceptance_rate", "Accepted / verified draft tokens", registry=reg)
        self.spec_length = Gauge("gateway_spec_decode_mean_accepted_length",
                                 "Tokens per verify round: accepted drafts plus the target's own", registry=reg)  # fmt: skip

    def render(self, pool: EnginePool) -> bytes:
        stats = pool.stats()
        self.num_inflight.set(pool.num_inflight)
        self.num_running.set(stats.num_running)
        self.num_waiting.set(stats.num_waiting)
        self.kv_usage.set(stats.kv_usage)
        self.kv_free.set(stats.num_free_blocks)
        self.kv_total.set(stats.num_total_blocks)
        queries = stats.prefix_cache_queries
        self.prefix_hit_rate.set(stats.prefix_cache_hits / queries if queries else 0.0)
        self.preemptions.set(stats.num_preemptions)
        self.engines_alive.set(pool.num_alive)
        self.engine_restarts.set(pool.num_restarts)
        self.engine_resident.set(stats.resident_bytes)
        if hasattr(pool, "replicas"):  # (the unit tests' stand-in pools have no fleet)
            self._render_fleet(pool)
        self.spec_drafts.set(stats.spec_num_draft_tokens)
        self.spec_accepted.set(stats.spec_num_accepted_tokens)
        drafts, rounds = stats.spec_num_draft_tokens, stats.spec_num_rounds
        self.spec_rate.set(stats.spec_num_accepted_tokens / drafts if drafts else 0.0)
        self.spec_length.set(1.0 + stats.spec_num_accepted_tokens / rounds if rounds else 0.0)
        return generate_latest(self.registry)


    def _render_fleet(self, pool: EnginePool) -> None:
        gauges = (self.replica_up, self.replica_running, self.replica_waiting, self.replica_kv_usage,
                  self.replica_hit_rate, self.replica_load, self.replica_state, self.replica_failovers)  # fmt: skip
        for gauge in gauges:
            gauge.clear()  # replicas come and go (autoscaling, a replacement on another node)
        for row in pool.replicas():
            labels = (str(row["replica"]), row["node"])
            self.replica_up.labels(*labels).set(1.0 if row["state"] == "ok" else 0.0)
            self.replica_running.labels(*labels).set(row["running"])
            self.replica_waiting.labels(*labels).set(row["waiting"])
            self.replica_kv_usage.labels(*labels).set(row["kv_usage"])
            self.replica_hit_rate.labels(*labels).set(row["prefix_hit_rate"])
            self.replica_load.labels(*labels).set(row["load_tokens"])
            self.replica_failovers.labels(*labels).set(row["failovers"])
            for state in REPLICA_STATES:
                self.replica_state.labels(*labels, state).set(1.0 if row["state"] == state else 0.0)
        self.replicas.set(pool.size)
        self.failovers.set(pool.num_failovers)
        self.scale_events.labels("up").set(pool.num_scale_ups)
        self.scale_events.labels("down").set(pool.num_scale_downs)
        for reason, count in pool.router.decisions.items():
            self.routing.labels(reason).set(count)


class TokenTimer:
    """Times one choice's outputs: the first records TTFT, each later one an inter-token latency."""

    __slots__ = ("_metrics", "_start", "_last")

    def __init__(self, metrics: GatewayMetrics, start: float) -> None:
        self._metrics = metrics
        self._start = start
        self._last: float | None = None

    def tick(self, num_tokens: int) -> None:
        now = time.perf_counter()
        if self._last is None:
            self._metrics.ttft.observe(now - self._start)
        elif num_tokens:
            gap = (now - self._last) / num_tokens
            for _ in range(num_tokens):
                self._metrics.itl.observe(gap)
        self._last = now
        self._metrics.generation_tokens.inc(num_tokens)


def metrics_middleware(metrics: GatewayMetrics):
    """Counts every request by its matched route and final status."""

    @web.middleware
    async def middleware(request: web.Request, handler) -> web.StreamResponse:
        route = request.match_info.route.resource
        name = route.canonical if route is not None else "unmatched"
        status = 500
        try:
            response = await handler(request)
            status = response.status
            return response
        except (asyncio.CancelledError, ConnectionResetError):
            status = 499  # the client closed the request (nginx's code): not a server error
            raise
        finally:
            metrics.requests.labels(name, str(status)).inc()

    return middleware


CONTENT_TYPE = CONTENT_TYPE_LATEST
