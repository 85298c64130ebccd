"""KV cache manager: allocation, prefix-cache hits, reference counts, LRU eviction."""

from engine.kv_cache import KVCacheManager


def test_allocate_and_free_returns_every_block():
    kv = KVCacheManager(num_blocks=8, block_size=4)
    tokens = list(range(10))
    assert kv.find_cached_prefix("a", tokens) == 0
    assert kv.allocate("a", tokens, 0, 10) == [0, 1, 2]
    assert kv.num_free_blocks == 5
    kv.free("a")
    assert kv.num_free_blocks == 8 and kv.usage == 0.0


def test_allocate_refuses_without_changing_anything():
    kv = KVCacheManager(num_blocks=2, block_size=4)
    assert kv.allocate("a", list(range(12)), 0, 12) is None
    assert kv.num_free_blocks == 2
    assert kv.allocate("a", list(range(8)), 0, 8) == [0, 1]


def test_shared_prefix_is_reused_and_ref_counted():
    kv = KVCacheManager(num_blocks=8, block_size=4)
    a = list(range(9))
    kv.find_cached_prefix("a", a)
    kv.allocate("a", a, 0, 9)
    b = list(range(8)) + [99, 100]
    assert kv.find_cached_prefix("b", b) == 8
    assert kv.block_ids("b") == kv.block_ids("a")[:2]
    kv.allocate("b", b, 8, 2)
    kv.free("a")
    assert kv.pool.blocks[kv.block_ids("b")[0]].ref_count == 1  # still held by b
    kv.free("b")
    assert kv.num_free_blocks == 8
    assert kv.num_hit_tokens == 8


def test_fully_cached_prompt_leaves_one_token_to_compute():
    kv = KVCacheManager(num_blocks=8, block_size=4)
    p = list(range(8))
    kv.find_cached_prefix("a", p)
    kv.allocate("a", p, 0, 8)
    kv.free("a")
    assert kv.find_cached_prefix("b", p) == 4


def test_lru_eviction_drops_the_oldest_cached_block():
    kv = KVCacheManager(num_blocks=2, block_size=2)
    kv.find_cached_prefix("a", [1, 2, 3])
    kv.allocate("a", [1, 2, 3], 0, 3)
    kv.free("a")
    kv.find_cached_prefix("b", [7, 8, 9])  # no hit; needs both blocks, evicting a's
    assert kv.allocate("b", [7, 8, 9], 0, 3) is not None
    kv.free("b")
    assert kv.find_cached_prefix("c", [1, 2, 3]) == 0
    kv.free("c")


def test_prefix_caching_off_never_hits():
    kv = KVCacheManager(num_blocks=8, block_size=4, enable_prefix_caching=False)
    p = list(range(9))
    kv.find_cached_prefix("a", p)
    kv.allocate("a", p, 0, 9)
    kv.free("a")
    assert kv.find_cached_prefix("b", p) == 0
    kv.free("b")


def test_cached_prefix_len_looks_without_taking():
    kv = KVCacheManager(num_blocks=8, block_size=4)
    a = list(range(9))
    kv.find_cached_prefix("a", a)
    kv.allocate("a", a, 0, 9)
    kv.free("a")  # its two full blocks stay cached, free to evict
    b = list(range(8)) + [50, 51, 52, 53, 54]
    free = kv.num_free_blocks
    assert kv.cached_prefix_len("b", b) == 8
    assert kv.num_free_blocks == free  # nothing taken: the blocks can still be evicted
    assert kv.find_cached_prefix("b", b) == 8  # what admission then takes
    kv.free("b")
    assert kv.cached_prefix_len("c", list(range(100, 120))) == 0
    kv.free("c")
    off = KVCacheManager(num_blocks=8, block_size=4, enable_prefix_caching=False)
    assert off.cached_prefix_len("a", a) == 0
