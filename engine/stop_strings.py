"""Stop strings over streamed text: hold back only what could still become a stop string."""

from __future__ import annotations


class StopStringMatcher:
    """Per-request; fed each text delta, returns what is safe to emit and the stop hit."""

    __slots__ = ("_stops", "_include", "_held")

    def __init__(self, stops: list[str], include_stop_str_in_output: bool = False) -> None:
        self._stops = stops
        self._include = include_stop_str_in_output
        self._held = ""

    def feed(self, text: str) -> tuple[str, str | None]:
        """Returns (text to emit, the stop string that matched or None)."""
        buf = self._held + text
        best, hit = -1, None
        for stop in self._stops:
            i = buf.find(stop)
            if i >= 0 and (best < 0 or i < best):
                best, hit = i, stop
        if hit is not None:
            self._held = ""
            return buf[: best + len(hit)] if self._include else buf[:best], hit
        keep = self._partial_suffix(buf)
        self._held = buf[len(buf) - keep :] if keep else ""
        return buf[: len(buf) - keep], None

    def _partial_suffix(self, buf: str) -> int:
        """Length of the longest suffix of buf that is a proper prefix of some stop string."""
        longest = 0
        for stop in self._stops:
            for n in range(min(len(stop) - 1, len(buf)), longest, -1):
                if buf.endswith(stop[:n]):
                    longest = n
                    break
        return longest

    def flush(self) -> str:
        held, self._held = self._held, ""
        return held
