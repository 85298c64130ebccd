"""How many prompt tokens a step may take while requests decode, from what steps cost here.

A fixed cap (128 tokens) suits one machine and one batch size: with 4 streams decoding 11 ms
steps, 128 prompt tokens add ~130 ms to a step (a stall ten times the inter-token latency),
while beside 64 decode rows the same chunk costs about what the rows do. The pacer states the
budget in time instead: a step's prompt tokens may cost at most `stall_ratio` times what its
decode rows cost. The costs come from the steps themselves: after each step the engine core
reports (decode tokens, prompt tokens, seconds), and an exponentially weighted least-squares fit
of `seconds = a + b * decode_tokens + c * prompt_tokens` (relative errors) keeps the three costs current (they
depend on the machine, the threads, the model; the fit forgets in ~100 steps). Until the fit
has seen both kinds of step it answers the fixed fallback. How the ratio was chosen:
docs/kernels-and-cpu-speed.md (benchmarks/schedule_sim.py, benchmarks/serve.py).
"""

from __future__ import annotations

# The fit's prior (seconds: a step, a decode token, a prompt token) and its weight in steps, each
# cost pinned at a typical size of its feature, so that steps that never vary a feature (every
# step 64 rows and 128 prompt tokens) leave the fit well posed. Steps weigh by their relative
# error (1 / seconds^2): a 2 s prefill would otherwise outweigh a hundred decode steps.
_PRIOR = (5e-3, 1e-3, 1e-3)
_PRIOR_SCALE = (1.0, 16.0, 128.0)
_PRIOR_WEIGHT = 0.5 / 0.05**2  # half a step of ~50 ms
_MIN_STEPS_SEEN = 8  # steps with decode rows and steps with prompt tokens before the fit is used

# Requests waiting for their first token, per decoding row, that the plain ratio serves; beyond it
# the ratio grows with the queue. Sixteen agents starting at once with 1,500-token prompts left one
# stream decoding beside fifteen prompts fed ~17 tokens a step (TTFT p50 3.6 s against vLLM's 0.3 s);
# 4 lifts that to 1.5 s and leaves benchmarks/serve.py's closed loops as they were (1 grew the
# bursts there: TTFT p50 at 16 streams 294 -> 571 ms). docs/kernels-and-cpu-speed.md has the runs.
QUEUE_PER_DECODE = 4

# With nobody decoding, a step's prompt tokens may cost at most this many seconds (once the costs
# are learned): a request that arrives meanwhile waits at most about this long for its turn. The
# whole budget at once (2,048 tokens, 3.5 s on the 2-vCPU Zen 4) held an agent's next turn
# (120 new tokens) 3.5-4.4 s behind a cold prompt's chunk (benchmarks/agent_workload.py); smaller
# chunks cost a few ms of step overhead each.
IDLE_STEP_SECONDS = 0.5


class PrefillPacer:
    """Learns a step's costs online; answers the prompt-token budget of the next step."""

    def __init__(self, stall_ratio: float, min_tokens: int = 16, fallback_tokens: int = 128,
                 forget: float = 0.99) -> None:  # fmt: skip
        if stall_ratio <= 0:
            raise ValueError(f"stall_ratio must be > 0, got {stall_ratio}")
        self.stall_ratio = stall_ratio
        self.min_tokens = min_tokens
        self.fallback_tokens = fallback_tokens
        self.forget = forget
        # normal equations of the weighted fit over the features (1, decode tokens, prompt tokens)
        self._xx = [[0.0] * 3 for _ in range(3)]
        self._xy = [0.0] * 3
        for i, scale in enumerate(_PRIOR_SCALE):
            self._xx[i][i] = _PRIOR_WEIGHT * scale * scale
            self._xy[i] = _PRIOR_WEIGHT * scale * scale * _PRIOR[i]
        self._seen_decode = 0
        self._seen_prefill = 0
        self.costs: tuple[float, float, float] = _PRIOR

    def observe(self, num_decode: int, num_prefill: int, seconds: float) -> None:
        """Absorbs one step: its decode tokens, prompt tokens and wall time."""
        if num_decode + num_prefill == 0 or not seconds > 0:
            return
        x = (1.0, float(num_decode), float(num_prefill))
        f, w = self.forget, 1.0 / (seconds * seconds)  # relative errors: a 2 s step weighs as much as a 5 ms one
        for i in range(3):
            self._xy[i] = f * self._xy[i] + w * x[i] * seconds
            for j in range(3):
                self._xx[i][j] = f * self._xx[i][j] + w * x[i] * x[j]
        self._seen_decode += num_decode > 0
        self._seen_prefill += num_prefill > 0
        solved = _solve3(self._xx, self._xy)
        if solved is not None:
            self.costs = solved

    @property
    def learned(self) -> bool:
        return self._seen_decode >= _MIN_STEPS_SEEN and self._seen_prefill >= _MIN_STEPS_SEEN

    def idle_budget(self) -> int | None:
        """Prompt tokens a step may take while nobody decodes: IDLE_STEP_SECONDS of them once
        learned; None (no limit of the pacer's) before."""
        a, _, c = self.costs
        if not self.learned or c <= 0:
            return None
        return max(self.min_tokens, int((IDLE_STEP_SECONDS - max(a, 0.0)) / c))

    def budget(self, num_decode: int, num_waiting: int = 0) -> int:
        """Prompt tokens the next step may take beside `num_decode` decode rows while `num_waiting`
        requests wait for their first token. A queue longer than QUEUE_PER_DECODE x the decoding
        rows scales the ratio by how much longer it is: a few decoding streams must not hold a
        crowd of prompts to a few tokens a step (see QUEUE_PER_DECODE)."""
        a, b, c = self.costs
        decode_s = a + b * num_decode
        if not self.learned or c <= 0 or decode_s <= 0:
            return self.fallback_tokens
        ratio = self.stall_ratio * max(1.0, num_waiting / (QUEUE_PER_DECODE * max(1, num_decode)))
        return max(self.min_tokens, int(ratio * decode_s / c))


def _det3(m: list[list[float]]) -> float:
    return (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]))  # fmt: skip


def _solve3(m: list[list[float]], v: list[float]) -> tuple[float, float, float] | None:
    """m x = v for a 3x3 m by Cramer's rule (a few µs in Python); None when m is singular."""
    d = _det3(m)
    if d == 0.0:
        return None
    cols = [[[v[i] if j == k else m[i][j] for j in range(3)] for i in range(3)] for k in range(3)]
    a, b, c = (_det3(mk) / d for mk in cols)
    return a, b, c
