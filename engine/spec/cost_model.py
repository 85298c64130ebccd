"""What a forward pass of n tokens costs: the start-up timing (`StepCost`) and its correction by
the steps the engine runs (`ObservedCost`), for the dynamic speculation policy."""

from __future__ import annotations

import bisect
from dataclasses import dataclass

OBSERVED_WEIGHT = 0.2  # weight of a newly observed faster step in its size's average (a slower one: a quarter)
CLAMP = 3.0  # an observed step counts as at most this factor off the current estimate
FIT_DECAY = 0.98  # weight of the older steps in the cost fit after each new one (~50 steps' memory)
PRIOR_STEPS = 4.0  # steps' worth of weight on the fit's prior scale
FIT_WEIGHT = 2.0  # steps' worth of weight the fit has against a size's own average


@dataclass(frozen=True, slots=True)
class StepCost:
    """Seconds of one forward pass of `sizes[i]` tokens; piecewise linear between, extended past the last."""

    sizes: list[int]
    seconds: list[float]

    def __call__(self, num_tokens: int) -> float:
        if num_tokens <= 0:
            return 0.0
        i = bisect.bisect_left(self.sizes, num_tokens)
        if i < len(self.sizes) and self.sizes[i] == num_tokens:
            return self.seconds[i]
        lo, hi = (i - 1, i) if 0 < i < len(self.sizes) else ((0, 1) if i == 0 else (-2, -1))
        if len(self.sizes) == 1:
            return self.seconds[0] * num_tokens / self.sizes[0]
        x0, x1, y0, y1 = self.sizes[lo], self.sizes[hi], self.seconds[lo], self.seconds[hi]
        return max(y0 + (y1 - y0) * (num_tokens - x0) / (x1 - x0), 0.0)


class ObservedCost:
    """The start-up `StepCost` corrected by the steps the engine actually ran.

    Load from other processes, and what the start-up timing leaves out (host work per step
    and request, the batch's attention over its contexts), shift the costs after start-up,
    by a part added per step and a part that grows with the tokens. A fit of the observed
    seconds as `scale * base + extra` (least squares over the recent steps, each older step
    weighing FIT_DECAY less) separates them once steps of several sizes have run; while
    they have not (plain decoding runs one size), a prior decides: slower than at start-up
    is taken as added seconds (pricing verify steps by the plain step's ratio made them so
    dear that the policy stopped drafting, and a size that never runs is never corrected),
    faster as a ratio (a start-up timed under load). A size seen often is priced by its own
    average (the kernels switch with the row count: sizes stray from the curve), one seen
    rarely mostly by the fit, which every step's timing improves.
    """

    def __init__(self, base: StepCost) -> None:
        self.base = base
        self.observed: dict[int, float] = {}  # size -> its average seconds
        self.counts: dict[int, int] = {}  # size -> steps seen
        self._sums = [0.0] * 5  # decayed sums of w, w*x, w*x^2, w*y, w*x*y over (start-up seconds, seen seconds)
        self._fit = (1.0, 0.0)  # (scale, extra)

    def record(self, num_tokens: int, seconds: float) -> None:
        if num_tokens <= 0:
            return
        old = self(num_tokens)
        seconds = min(max(seconds, old / CLAMP), old * CLAMP)  # a stall or an idle gap moves it a little only
        x = self.base(num_tokens)
        self._sums = [v * FIT_DECAY + d for v, d in zip(self._sums, (1.0, x, x * x, seconds, x * seconds))]
        self._fit = self._solve()
        # Rises slowly, falls fast: a stall from other processes is one sample, a real cost many.
        weight = OBSERVED_WEIGHT if seconds < old else OBSERVED_WEIGHT / 4
        average = self.observed.get(num_tokens, old)
        self.observed[num_tokens] = average + weight * (seconds - average)
        self.counts[num_tokens] = self.counts.get(num_tokens, 0) + 1

    def _solve(self) -> tuple[float, float]:
        """Least squares of y = scale * x + extra, with PRIOR_STEPS steps' worth of weight on a
        scale of 1 if the steps ran slower than at start-up, of their ratio if faster."""
        w, sx, sxx, sy, sxy = self._sums
        mean_x, mean_y = sx / w, sy / w
        prior = min(1.0, mean_y / mean_x)
        strength = PRIOR_STEPS * mean_x * mean_x
        scale = (sxy - sx * mean_y + strength * prior) / (sxx - sx * mean_x + strength)
        scale = min(max(scale, 1 / CLAMP), CLAMP)
        return scale, mean_y - scale * mean_x

    def __call__(self, num_tokens: int) -> float:
        base = self.base(num_tokens)
        if num_tokens <= 0 or not self.counts:
            return base
        scale, extra = self._fit
        fitted = max(scale * base + extra, base / CLAMP)
        count = self.counts.get(num_tokens, 0)
        if not count:
            return fitted
        return (count * self.observed[num_tokens] + FIT_WEIGHT * fitted) / (count + FIT_WEIGHT)
