"""KV cache block accounting: one pool of fixed-size blocks, per-request block lists, prefix caching.

Pure Python. A full block is identified by a chained hash (its parent's hash and its own
token ids), so two requests sharing a prompt prefix share the blocks that hold it. Freed
blocks keep their hash and sit in an LRU free queue until the pool needs them again.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field


@dataclass(slots=True)
class Block:
    block_id: int
    ref_count: int = 0
    block_hash: int | None = None


def hash_block(parent_hash: int | None, token_ids: tuple[int, ...]) -> int:
    """Chained hash of one full block: equal prefixes give equal hashes."""
    return hash((parent_hash, token_ids))


@dataclass(slots=True)
class BlockPool:
    """All blocks, a free queue in LRU order, and the hash -> block map of cached blocks."""

    num_blocks: int
    blocks: list[Block] = field(init=False)
    free_queue: OrderedDict[int, None] = field(init=False)
    cached: dict[int, int] = field(init=False)

    def __post_init__(self) -> None:
        self.blocks = [Block(i) for i in range(self.num_blocks)]
        self.free_queue = OrderedDict((i, None) for i in range(self.num_blocks))
        self.cached = {}

    @property
    def num_free(self) -> int:
        return len(self.free_queue)

    def allocate(self, count: int) -> list[int]:
        """Takes `count` blocks from the LRU end of the free queue, evicting their hashes."""
        ids = []
        for _ in range(count):
            block_id, _ = self.free_queue.popitem(last=False)
            block = self.blocks[block_id]
            if block.block_hash is not None:
                del self.cached[block.block_hash]
                block.block_hash = None
            block.ref_count = 1
            ids.append(block_id)
        return ids

    def touch(self, block_ids: list[int]) -> None:
        """Takes a reference on cached blocks, pulling free ones out of the free queue."""
        for block_id in block_ids:
            block = self.blocks[block_id]
            if block.ref_count == 0:
                del self.free_queue[block_id]
            block.ref_count += 1

    def release(self, block_ids: list[int]) -> None:
        """Drops one reference each; blocks reaching zero join the free queue's MRU end."""
        for block_id in block_ids:
            block = self.blocks[block_id]
            block.ref_count -= 1
            if block.ref_count == 0:
                self.free_queue[block_id] = None

    def register(self, block_id: int, block_hash: int) -> None:
        """Marks a full block as holding the prefix with this hash (first writer wins)."""
        if block_hash not in self.cached:
            self.cached[block_hash] = block_id
            self.blocks[block_id].block_hash = block_hash

    def reset_cache(self) -> None:
        for block_hash, block_id in self.cached.items():
            self.blocks[block_id].block_hash = None
        self.cached.clear()


@dataclass(slots=True)
class _ReqBlocks:
    block_ids: list[int] = field(default_factory=list)
    block_hashes: list[int] = field(default_factory=list)  # hashes of the full blocks, in order
    num_registered: int = 0  # full blocks already entered into the prefix cache


class KVCacheManager:
    """Allocates and frees blocks per request; called by the scheduler only."""

    def __init__(self, num_blocks: int, block_size: int, enable_prefix_caching: bool = True) -> None:
        self.block_size = block_size
        self.enable_prefix_caching = enable_prefix_caching
        self.pool = BlockPool(num_blocks)
        self.reqs: dict[str, _ReqBlocks] = {}
        self.num_queried_tokens = 0
        self.num_hit_tokens = 0

    # --- facts ------------------------------------------------------------------------
    @property
    def num_blocks(self) -> int:
        return self.pool.num_blocks

    @property
    def num_free_blocks(self) -> int:
        return self.pool.num_free

    @property
    def usage(self) -> float:
        return 1.0 - self.pool.num_free / self.pool.num_blocks

    def block_ids(self, request_id: str) -> list[int]:
        return self.reqs[request_id].block_ids

    def _hashes(self, state: _ReqBlocks, token_ids: list[int], num_tokens: int) -> list[int]:
        """Extends the request's chained hashes to cover the full blocks of token_ids[:num_tokens]."""
        bs = self.block_size
        hashes = state.block_hashes
        for i in range(len(hashes), num_tokens // bs):
            hashes.append(hash_block(hashes[-1] if hashes else None, tuple(token_ids[i * bs : (i + 1) * bs])))
        return hashes

    # --- scheduling -------------------------------------------------------------------
    def find_cached_prefix(self, request_id: str, token_ids: list[int]) -> int:
        """Takes the longest cached prefix for a new request; returns its number of tokens.

        At least one token is always left to compute, so the last full block of a prompt
        that is entirely cached is not reused.
        """
        state = self.reqs.setdefault(request_id, _ReqBlocks())
        if not self.enable_prefix_caching:
            return 0
        hit_ids = self._cached_ids(state, token_ids)
        self.num_queried_tokens += len(token_ids)
        self.num_hit_tokens += len(hit_ids) * self.block_size
        self.pool.touch(hit_ids)
        state.block_ids = hit_ids
        state.num_registered = len(hit_ids)
        return len(hit_ids) * self.block_size

    def _cached_ids(self, state: _ReqBlocks, token_ids: list[int]) -> list[int]:
        """The cached blocks of the longest cached prefix, leaving at least one token to compute."""
        hit_ids = []
        for block_hash in self._hashes(state, token_ids, len(token_ids) - 1):
            block_id = self.pool.cached.get(block_hash)
            if block_id is None:
                break
            hit_ids.append(block_id)
        return hit_ids

    def cached_prefix_len(self, request_id: str, token_ids: list[int]) -> int:
        """Tokens of a waiting request's prompt the cache holds now, taking nothing (the admission
        order asks; find_cached_prefix takes them at admission). Its hashes are kept for then."""
        if not self.enable_prefix_caching:
            return 0
        return len(self._cached_ids(self.reqs.setdefault(request_id, _ReqBlocks()), token_ids)) * self.block_size

    def allocate(self, request_id: str, token_ids: list[int], num_computed: int, num_new: int) -> list[int] | None:
        """Grows the request's blocks to hold num_computed + num_new tokens.

        Returns the newly added block ids, or None (changing nothing) when the pool is short.
        """
        state = self.reqs.setdefault(request_id, _ReqBlocks())
        num_tokens = num_computed + num_new
        needed = -(-num_tokens // self.block_size) - len(state.block_ids)
        if needed > self.pool.num_free:
            return None
        new_ids = self.pool.allocate(needed) if needed > 0 else []
        state.block_ids.extend(new_ids)
        if self.enable_prefix_caching:
            num_full = min(num_tokens, len(token_ids)) // self.block_size
            hashes = self._hashes(state, token_ids, num_full * self.block_size)
            for i in range(state.num_registered, num_full):
                self.pool.register(state.block_ids[i], hashes[i])
            state.num_registered = max(state.num_registered, num_full)
        return new_ids

    def free(self, request_id: str) -> None:
        """Returns the request's blocks; the tail goes first so shared prefixes live longest."""
        state = self.reqs.pop(request_id, None)
        if state is not None:
            self.pool.release(list(reversed(state.block_ids)))

    def reset_prefix_cache(self) -> None:
        self.pool.reset_cache()
