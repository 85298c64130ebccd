"""/metrics reports speculative decoding: drafts verified, accepted, acceptance rate, mean accepted length."""

from __future__ import annotations

from gateway.metrics import GatewayMetrics
from schemas.engine import EngineStats


class _Pool:
    num_inflight = num_alive = 1
    num_restarts = 0

    def __init__(self, stats: EngineStats) -> None:
        self._stats = stats

    def stats(self) -> EngineStats:
        return self._stats


def _value(text: str, name: str) -> float:
    line = next(line for line in text.splitlines() if line.startswith(name + " "))
    return float(line.split()[1])


def test_speculative_gauges():
    stats = EngineStats(spec_num_draft_tokens=40, spec_num_accepted_tokens=30, spec_num_rounds=10)
    text = GatewayMetrics().render(_Pool(stats)).decode()
    assert _value(text, "gateway_spec_decode_num_draft_tokens") == 40
    assert _value(text, "gateway_spec_decode_num_accepted_tokens") == 30
    assert _value(text, "gateway_spec_decode_acceptance_rate") == 0.75
    assert _value(text, "gateway_spec_decode_mean_accepted_length") == 4.0  # 1 + 30 / 10 tokens per round


def test_speculation_off_reports_zeros():
    text = GatewayMetrics().render(_Pool(EngineStats())).decode()
    assert _value(text, "gateway_spec_decode_acceptance_rate") == 0.0
    assert _value(text, "gateway_spec_decode_mean_accepted_length") == 0.0
