"""Which engine replica gets a request: prefix-aware (keep prefix caches warm), least-loaded or round-robin.

Prefix routing hashes the prompt's first full KV blocks with the engine's own chained block hash
(`engine.kv_cache.hash_block`, the hash the prefix cache keys its blocks by), remembers which
replica each hash was last sent to, and sends a request to the replica holding the longest run of
its leading blocks, unless that replica's load (tokens of its requests in flight: the prompt tokens
its cache did not hold, plus those generated) exceeds the least loaded one's by more than
`load_margin_tokens`; then, and for a prompt no replica holds, to the least loaded one (among
equally loaded ones, the one remembering the fewest blocks, so that an idle fleet spreads new
prefixes).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from engine.kv_cache import hash_block

ROUTING_POLICIES = ("prefix", "least-loaded", "round-robin")


def prefix_block_hashes(token_ids: Sequence[int], block_size: int, max_blocks: int) -> list[int]:
    """The prefix cache's hashes of the first `max_blocks` full blocks (never the prompt's last token,
    which the engine always computes: `KVCacheManager.find_cached_prefix`)."""
    hashes: list[int] = []
    num_full = min(max_blocks, (len(token_ids) - 1) // block_size) if token_ids else 0
    for i in range(num_full):
        hashes.append(hash_block(hashes[-1] if hashes else None, tuple(token_ids[i * block_size : (i + 1) * block_size])))
    return hashes


@dataclass(frozen=True, slots=True)
class RoutingConfig:
    policy: str = "prefix"
    block_size: int = 16  # the engines' --block-size: hashes must match the prefix cache's
    max_prefix_blocks: int = 64  # leading blocks hashed per request (1,024 tokens at block size 16)
    load_margin_tokens: int = 2048  # prefix affinity yields to the least loaded replica past this gap
    max_tracked_blocks: int = 200_000  # remembered block hashes per replica (LRU)

    def __post_init__(self) -> None:
        if self.policy not in ROUTING_POLICIES:
            raise ValueError(f"--routing must be one of {', '.join(ROUTING_POLICIES)}, not {self.policy!r}")
        if self.block_size < 1 or self.max_prefix_blocks < 1 or self.load_margin_tokens < 0:
            raise ValueError("routing: block size and prefix blocks must be >= 1, the load margin >= 0")


@dataclass(frozen=True, slots=True)
class Choice:
    key: Hashable  # the chosen replica's key
    matched_blocks: int  # leading blocks it was last sent (0: none, or not prefix routing)
    reason: str  # "prefix" | "least-loaded" | "overloaded" (prefix owner too busy) | "round-robin"


class Router:
    """Routing state over replicas named by hashable keys; the pool says which are live and their load."""

    def __init__(self, config: RoutingConfig | None = None) -> None:
        self.config = config or RoutingConfig()
        self._seen: dict[Hashable, OrderedDict[int, None]] = {}
        self._turn = itertools.count()
        self.decisions = {"prefix": 0, "least-loaded": 0, "overloaded": 0, "round-robin": 0}

    def hashes(self, token_ids: Sequence[int]) -> list[int]:
        if self.config.policy != "prefix":
            return []
        return prefix_block_hashes(token_ids, self.config.block_size, self.config.max_prefix_blocks)

    def choose(self, loads: dict[Hashable, int], hashes: list[int]) -> Choice:
        """`loads`: each live replica's load in tokens (insertion order breaks ties)."""
        if not loads:
            raise LookupError("no live replica")
        keys = list(loads)
        if self.config.policy == "round-robin":
            choice = Choice(keys[next(self._turn) % len(keys)], 0, "round-robin")
        else:
            # equal loads (an idle fleet): the replica remembering fewer blocks, so new prefixes spread out
            least = min(keys, key=lambda k: (loads[k], len(self._seen.get(k, ()))))
            choice = Choice(least, 0, "least-loaded")
            if hashes:
                best, matched = least, self._matched(least, hashes)
                for key in keys:
                    n = self._matched(key, hashes)
                    if n > matched or (n == matched and n and loads[key] < loads[best]):
                        best, matched = key, n
                if matched and loads[best] - loads[least] <= self.config.load_margin_tokens:
                    choice = Choice(best, matched, "prefix")
                elif matched:
                    choice = Choice(least, self._matched(least, hashes), "overloaded")
        self.decisions[choice.reason] += 1
        return choice

    def _matched(self, key: Hashable, hashes: list[int]) -> int:
        seen = self._seen.get(key)
        if not seen:
            return 0
        n = 0
        for block_hash in hashes:
            if block_hash not in seen:
                break
            n += 1
        return n

    def record(self, key: Hashable, hashes: list[int]) -> None:
        """The replica was sent these blocks: it will hold them in its prefix cache."""
        if not hashes:
            return
        seen = self._seen.setdefault(key, OrderedDict())
        for block_hash in hashes:
            seen[block_hash] = None
            seen.move_to_end(block_hash)
        while len(seen) > self.config.max_tracked_blocks:
            seen.popitem(last=False)

    def forget(self, key: Hashable) -> None:
        """The replica lost its cache (restarted, removed)."""
        self._seen.pop(key, None)
