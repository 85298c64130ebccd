"""engine/heap.py: the startup heap leaves the garbage collector's full passes."""

from __future__ import annotations

import gc
import weakref

from engine.heap import freeze_startup_heap


def test_freezing_moves_live_objects_out_of_collection_and_collects_garbage_first():
    class Node:
        pass

    kept = [Node() for _ in range(1000)]
    garbage = Node()
    garbage.self = garbage  # a cycle only the collector frees
    gone = weakref.ref(garbage)
    del garbage
    try:
        phrase = freeze_startup_heap()
        frozen = gc.get_freeze_count()
        assert frozen > 1000 and f"{frozen:,} startup objects" in phrase
        assert gone() is None  # the cycle was collected, not frozen
        assert not any(o is kept[0] for o in gc.get_objects(generation=2))  # live ones left the generations
    finally:
        gc.unfreeze()
    assert gc.get_freeze_count() == 0
