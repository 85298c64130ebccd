"""torch's profiler inside an engine core, started and stopped by client messages; writes Chrome traces."""

from __future__ import annotations

import os

import torch

from schemas.engine import ProfileResult


class CoreProfiler:
    """Owned by the core loop; `start` and `stop` run between steps, so a trace holds whole steps."""

    def __init__(self) -> None:
        self._profile: torch.profiler.profile | None = None

    def start(self) -> ProfileResult:
        if self._profile is not None:
            return ProfileResult(error="the profiler is already running")
        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        self._profile = torch.profiler.profile(activities=activities, record_shapes=True, with_stack=False)
        self._profile.start()
        return ProfileResult()

    def stop(self, path: str) -> ProfileResult:
        if self._profile is None:
            return ProfileResult(error="the profiler is not running")
        profile, self._profile = self._profile, None
        try:
            profile.stop()
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            profile.export_chrome_trace(path)
        except (OSError, RuntimeError) as exc:
            return ProfileResult(error=f"{type(exc).__name__}: {exc}")
        return ProfileResult(path=path)
