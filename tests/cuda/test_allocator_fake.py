"""The CUDA caching allocator over FakeBackend (no GPU needed): PyTorch's rounding, pools,
segment sizes, best fit, split/merge, per-stream free lists, record_stream, empty_cache,
statistics, the OOM path and the no-caching switch; plus a randomized invariant check."""

import pytest

from pytorchlite.cuda._allocator import (
    CachingAllocator, FakeBackend, OutOfMemoryError, allocation_size, caching_disabled_by_env, format_size,
    round_size,
)

KiB, MiB = 1 << 10, 1 << 20
S1, S2 = 11, 22   # two side streams of the fake device (stream 0 is the default stream)


def make(capacity=1 << 30, caching=True):
    be = FakeBackend(capacity)
    be.streams.update({S1, S2})
    return be, CachingAllocator(be, caching=caching)


def check_invariants(alloc, be):
    """No overlapping live blocks, every block inside its segment, stats match the blocks."""
    segs = alloc.snapshot()
    assert sorted(be.live) == [s["address"] for s in segs]
    allocated = reserved = active = requested = split_blocks = split_bytes = 0
    spans = []
    for s in segs:
        for b in s["blocks"]:
            if b["state"] == "inactive" and len(s["blocks"]) > 1:
                split_blocks += 1
                split_bytes += b["size"]
            if b["state"] != "inactive":
                requested += b["requested_size"]
        assert be.live[s["address"]] == s["total_size"]
        pos = s["address"]
        for b in s["blocks"]:
            assert b["address"] == pos and b["size"] > 0 and b["size"] % 512 == 0
            pos += b["size"]
            if b["state"] == "active_allocated":
                spans.append((b["address"], b["address"] + b["size"]))
        assert pos == s["address"] + s["total_size"]
        allocated += s["allocated_size"]
        reserved += s["total_size"]
        active += s["active_size"]
        # two free neighbours would have been merged
        states = [b["state"] for b in s["blocks"]]
        assert all(not (a == b == "inactive") for a, b in zip(states, states[1:]))
    spans.sort()
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    st = alloc.memory_stats()
    assert st["allocated_bytes.all.current"] == allocated <= reserved == st["reserved_bytes.all.current"]
    assert st["active_bytes.all.current"] == active
    assert st["segment.all.current"] == len(segs)
    assert st["requested_bytes.all.current"] == requested
    assert (st["inactive_split.all.current"], st["inactive_split_bytes.all.current"]) == (split_blocks, split_bytes)
    for key in ("allocated_bytes", "reserved_bytes", "active_bytes", "segment", "allocation", "requested_bytes",
                "inactive_split", "inactive_split_bytes", "active"):
        assert st[f"{key}.all.current"] == st[f"{key}.small_pool.current"] + st[f"{key}.large_pool.current"]
        assert st[f"{key}.all.current"] == st[f"{key}.all.allocated"] - st[f"{key}.all.freed"]
        assert 0 <= st[f"{key}.all.current"] <= st[f"{key}.all.peak"]


def test_helpers():
    assert [round_size(n) for n in (1, 512, 513, 1000, 1024)] == [512, 512, 1024, 1024, 1024]
    assert allocation_size(512) == allocation_size(MiB) == 2 * MiB
    assert allocation_size(MiB + 512) == allocation_size(10 * MiB - 512) == 20 * MiB
    assert allocation_size(10 * MiB) == 10 * MiB and allocation_size(11 * MiB) == 12 * MiB
    assert [format_size(n) for n in (512, 1024, 1536, 20 * MiB, 80 << 30)] == \
        ["512 bytes", "1024 bytes", "1.50 KiB", "20.00 MiB", "80.00 GiB"]


def test_rounding_and_reuse_after_free():
    be, a = make()
    b = a.malloc(1)
    assert a.memory_allocated() == 512 and a.memory_reserved() == 2 * MiB
    assert b.requested_size == 1 and a.memory_stats()["requested_bytes.all.current"] == 1
    ptr = b.ptr   # (a freed Block object is recycled by later splits: keep the address)
    a.free(b)
    assert a.memory_allocated() == 0 and a.memory_reserved() == 2 * MiB   # kept in the cache
    b2 = a.malloc(300)
    assert b2.ptr == ptr and be.malloc_calls == 1                        # served from the cache
    a.free(b2)
    assert a.malloc(0) is None and a.memory_allocated() == 0
    with pytest.raises(RuntimeError, match="already freed"):
        a.free(b2)


@pytest.mark.parametrize("request_size, pool, segment, allocated", [
    (1, "small_pool", 2 * MiB, 512), (MiB, "small_pool", 2 * MiB, MiB),
    (MiB + 1, "large_pool", 20 * MiB, MiB + 512), (10 * MiB - 512, "large_pool", 20 * MiB, 10 * MiB - 512),
    (10 * MiB - 1, "large_pool", 10 * MiB, 10 * MiB), (10 * MiB, "large_pool", 10 * MiB, 10 * MiB),
    # 25 MiB + 512 in a 26 MiB segment: the remainder is not > 1 MiB, so the block is not split
    (25 * MiB + 3, "large_pool", 26 * MiB, 26 * MiB), (27 * MiB + 3, "large_pool", 28 * MiB, 28 * MiB)])
def test_pools_and_segment_sizes(request_size, pool, segment, allocated):
    be, a = make()
    a.malloc(request_size)
    assert list(be.live.values()) == [segment]
    st = a.memory_stats()
    assert st[f"reserved_bytes.{pool}.current"] == segment and st[f"segment.{pool}.current"] == 1
    assert st[f"allocated_bytes.{pool}.current"] == allocated
    assert st[f"requested_bytes.{pool}.current"] == request_size
    other = "large_pool" if pool == "small_pool" else "small_pool"
    assert st[f"reserved_bytes.{other}.current"] == 0


def test_best_fit():
    be, a = make()
    # three separate large segments of 12, 14 and 16 MiB, all freed
    blocks = [a.malloc(n * MiB) for n in (16, 12, 14)]
    for b in blocks:
        a.free(b)
    got = a.malloc(13 * MiB)
    assert got.ptr == blocks[2].ptr           # the 14 MiB segment: smallest that fits
    assert be.malloc_calls == 3
    # 14 - 13 = 1 MiB remainder is not > 1 MiB: the large pool does not split it
    assert got.size == 14 * MiB and not got.is_split()


def test_split_rules():
    be, a = make()
    x = a.malloc(MiB)                         # small pool, 2 MiB segment: 1 MiB remainder split off
    assert x.size == MiB and x.is_split()
    st = a.memory_stats()
    assert st["inactive_split.small_pool.current"] == 1 and st["inactive_split_bytes.small_pool.current"] == MiB
    y = a.malloc(MiB - 512)                   # remainder 512 >= 512: still split in the small pool
    assert y.ptr == x.ptr + MiB and y.size == MiB - 512 and be.malloc_calls == 1
    assert a.memory_stats()["inactive_split_bytes.small_pool.current"] == 512
    z = a.malloc(512)                         # exactly the last piece
    assert z.ptr == y.ptr + y.size and be.malloc_calls == 1
    assert a.memory_stats()["inactive_split.all.current"] == 0
    big = a.malloc(19 * MiB)                  # segment rounded to 20 MiB, remainder exactly 1 MiB: no split
    assert big.size == 20 * MiB and not big.is_split()
    big2 = a.malloc(9 * MiB)                  # 20 MiB segment, remainder 11 MiB > 1 MiB: split
    assert big2.size == 9 * MiB and big2.is_split()
    assert a.memory_stats()["inactive_split_bytes.large_pool.current"] == 11 * MiB
    big3 = a.malloc(10 * MiB - 512)           # best fit is the 11 MiB remainder; 1 MiB + 512 left: split
    assert big3.ptr == big2.ptr + 9 * MiB and big3.is_split()
    assert a.memory_stats()["inactive_split_bytes.large_pool.current"] == MiB + 512
    check_invariants(a, be)


def test_split_then_merge_back_to_one_block():
    be, a = make()
    A, B, C = a.malloc(100 * KiB), a.malloc(200 * KiB), a.malloc(300 * KiB)
    assert B.ptr == A.ptr + A.size and C.ptr == B.ptr + B.size and len(be.live) == 1
    seg = next(iter(be.live))
    for blk in (B, A, C):
        a.free(blk)
        check_invariants(a, be)
    (s,) = a.snapshot()
    assert s["blocks"] == [{"address": seg, "size": 2 * MiB, "requested_size": 300 * KiB, "state": "inactive"}]
    st = a.memory_stats()
    assert st["inactive_split.all.current"] == 0 and st["inactive_split_bytes.all.current"] == 0
    assert len(a.small) == 1


def test_streams_do_not_share_free_blocks():
    be, a = make()
    b = a.malloc(4 * KiB, stream=S1)
    ptr = b.ptr   # (a freed Block object is recycled by later splits: keep the address)
    a.free(b)
    c = a.malloc(4 * KiB, stream=S2)
    assert c.ptr != ptr and be.malloc_calls == 2        # a new segment for the other stream
    d = a.malloc(4 * KiB, stream=S1)
    assert d.ptr == ptr                                 # same stream: reused
    check_invariants(a, be)


def test_record_stream_defers_reuse_until_event_completes():
    be, a = make()
    b = a.malloc(1000, stream=0)
    a.record_stream(b, 0)                    # the allocation stream itself: no-op
    assert not b.stream_uses
    a.record_stream(b, S1)
    ptr = b.ptr
    a.free(b)
    assert be.pending_events() == 1 and a.memory_allocated() == 0
    assert a.memory_stats()["active_bytes.all.current"] == 1024   # still in use on S1
    c = a.malloc(1000, stream=0)
    assert c.ptr != ptr                      # the event on S1 has not completed
    be.complete_stream(S1)
    d = a.malloc(1000, stream=0)             # this malloc processes the event first
    assert d.ptr == ptr
    assert not be.events                     # the event was destroyed after use
    check_invariants(a, be)


def test_pending_block_is_not_merged_until_returned():
    be, a = make()
    A, B = a.malloc(512), a.malloc(512)
    a.record_stream(A, S2)
    a.free(A)
    a.free(B)                                 # A is pending: B does not absorb it
    assert [blk["state"] for blk in a.snapshot()[0]["blocks"]][:2] == ["active_pending_free", "inactive"]
    be.complete_all()
    a.malloc(4 * MiB)                         # any malloc processes events
    assert [blk["state"] for blk in a.snapshot()[0]["blocks"]] == ["inactive"]


def test_empty_cache_releases_only_wholly_free_segments():
    be, a = make()
    keep = a.malloc(1000)                     # holds its small segment
    spare = a.malloc(1000)
    big = a.malloc(30 * MiB)
    a.free(spare)
    a.free(big)
    a.empty_cache()
    assert list(be.live.values()) == [2 * MiB]          # the partly used small segment stays
    assert a.memory_reserved() == 2 * MiB >= a.memory_allocated() == 1024
    a.free(keep)
    a.empty_cache()
    assert be.live == {} and a.memory_reserved() == 0
    st = a.memory_stats()
    assert st["num_device_free"] == st["num_device_alloc"] == 2


def test_empty_cache_waits_for_pending_events():
    be, a = make()
    b = a.malloc(MiB)
    a.record_stream(b, S1)
    a.free(b)
    a.empty_cache()                           # synchronises the event, then frees the segment
    assert be.live == {} and a.memory_stats()["num_sync_all_streams"] == 1


def test_peak_stats_survive_free_and_reset():
    be, a = make()
    b1, b2 = a.malloc(3 * MiB), a.malloc(5 * MiB)
    a.free(b1)
    a.free(b2)
    assert a.max_memory_allocated() == 8 * MiB and a.memory_allocated() == 0
    assert a.max_memory_reserved() == 20 * MiB   # both fit one 20 MiB segment
    a.empty_cache()
    assert a.max_memory_reserved() == 20 * MiB and a.memory_reserved() == 0
    a.reset_peak_memory_stats()
    assert a.max_memory_allocated() == 0 and a.max_memory_reserved() == 0
    st = a.memory_stats()
    assert st["allocated_bytes.all.allocated"] == st["allocated_bytes.all.freed"] == 8 * MiB
    a.reset_accumulated_memory_stats()
    assert a.memory_stats()["allocated_bytes.all.allocated"] == 0


def test_oom_frees_cache_and_retries_once():
    be, a = make(capacity=64 * MiB)
    cached = a.malloc(30 * MiB)
    a.free(cached)                            # 30 MiB cached, unsplit
    got = a.malloc(40 * MiB)                  # needs the cache released
    assert got.size == 40 * MiB
    st = a.memory_stats()
    assert st["num_alloc_retries"] == 1 and st["num_ooms"] == 0 and st["num_device_free"] == 1


def test_oom_error_message():
    be, a = make(capacity=64 * MiB)
    live = a.malloc(30 * MiB)                 # 30 MiB segment
    small = a.malloc(1000)                    # a 2 MiB segment, mostly unallocated
    with pytest.raises(OutOfMemoryError) as info:
        a.malloc(40 * MiB)
    assert isinstance(info.value, RuntimeError)
    msg = str(info.value)
    assert msg.startswith("CUDA out of memory. Tried to allocate 40.00 MiB. GPU 0 has a total capacity of "
                          "64.00 MiB of which 32.00 MiB is free. Of the allocated memory 30.00 MiB is allocated "
                          "by PyTorch, and 2.00 MiB is reserved by PyTorch but unallocated."), msg
    st = a.memory_stats()
    assert st["num_ooms"] == 1 and st["num_alloc_retries"] == 1
    assert a.memory_reserved() == 32 * MiB    # the live segments were not touched
    a.free(live)
    a.free(small)


def test_no_caching_switch(monkeypatch):
    monkeypatch.setenv("PYTORCHLITE_NO_CUDA_MEMORY_CACHING", "1")
    assert caching_disabled_by_env()
    be = FakeBackend()
    a = CachingAllocator(be)
    assert not a.caching
    b = a.malloc(1000)
    assert list(be.live.values()) == [1024]   # exact rounded size, no 2 MiB segment
    assert a.memory_allocated() == a.memory_reserved() == 1024
    a.free(b)
    assert be.live == {} and be.free_calls == 1 and a.memory_reserved() == 0
    c = a.malloc(1000)
    a.free(c)
    assert be.malloc_calls == 2
    assert a.max_memory_allocated() == 1024
    monkeypatch.setenv("PYTORCHLITE_NO_CUDA_MEMORY_CACHING", "0")
    assert not caching_disabled_by_env() and CachingAllocator(be).caching


def test_no_caching_record_stream_still_waits():
    be, a = make(caching=False)
    b = a.malloc(1000)
    a.record_stream(b, S1)
    a.free(b)
    assert be.live                             # S1 may still be reading it
    be.complete_stream(S1)
    a.malloc(10)
    assert len(be.live) == 1                   # only the new block


def test_memory_stats_keys():
    be, a = make()
    st = a.memory_stats()
    for name in ("allocated_bytes", "reserved_bytes", "active_bytes", "segment", "allocation", "active",
                 "inactive_split", "inactive_split_bytes", "requested_bytes"):
        for pool in ("all", "small_pool", "large_pool"):
            for field in ("current", "peak", "allocated", "freed"):
                assert st[f"{name}.{pool}.{field}"] == 0
    for name in ("num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc", "num_device_free"):
        assert st[name] == 0
    assert list(st) == sorted(st)


def test_memory_summary_table():
    from pytorchlite.cuda._allocator import memory_summary
    be, a = make()
    a.malloc(5 * MiB)
    text = memory_summary(a.memory_stats(), 0)
    assert "Allocated memory" in text and "from small pool" in text and "GPU reserved memory" in text
    assert all(len(line) == 77 for line in text.splitlines())
    assert "from large pool" not in memory_summary(a.memory_stats(), 0, abbreviated=True)


def test_random_interleaving_keeps_invariants():
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    sizes = st.one_of(st.integers(1, 4 * KiB), st.integers(1, 2 * MiB), st.integers(1, 24 * MiB))
    op = st.one_of(
        st.tuples(st.just("malloc"), sizes, st.sampled_from([S1, S2])),
        st.tuples(st.just("free"), st.integers(0, 1000), st.none()),
        st.tuples(st.just("record"), st.integers(0, 1000), st.sampled_from([S1, S2])),
        st.tuples(st.just("complete"), st.sampled_from([S1, S2]), st.none()),
        st.tuples(st.just("empty_cache"), st.none(), st.none()))

    @hypothesis.settings(max_examples=150, deadline=None, derandomize=True)
    @hypothesis.given(st.lists(op, max_size=60), st.booleans())
    def run(ops, caching):
        be, a = make(capacity=96 * MiB, caching=caching)
        live = []
        for kind, x, y in ops:
            if kind == "malloc":
                try:
                    live.append(a.malloc(x, stream=y))
                except OutOfMemoryError:
                    assert a.memory_stats()["num_ooms"] >= 1
            elif kind == "free" and live:
                a.free(live.pop(x % len(live)))
            elif kind == "record" and live:
                a.record_stream(live[x % len(live)], y)
            elif kind == "complete":
                be.complete_stream(x)
            elif kind == "empty_cache":
                a.empty_cache()
                # nothing wholly free and unsplit is left cached
                assert all(b.is_split() for b in a.small.blocks() + a.large.blocks())
            check_invariants(a, be)
            assert a.memory_allocated() == sum(b.size for b in live)
            for b in live:
                assert b.size >= b.requested_size and b.allocated
        for b in live:
            a.free(b)
        a.empty_cache()
        assert be.live == {} and a.memory_reserved() == 0 and a.memory_stats()["active.all.current"] == 0

    run()


def test_free_during_another_operation_waits_for_it():
    """A Storage freed by the garbage collector in the middle of an allocator operation
    (here: inside the backend's malloc and free) must not see half-updated pools: the
    free is queued and carried out when the operation ends."""
    be, alloc = make()
    a, b, c = alloc.malloc(512), alloc.malloc(512), alloc.malloc(512)    # neighbours in one segment
    assert b.prev is a and b.next is c
    alloc.free(b)
    victims = [a, c]
    real_malloc, real_free = be.malloc, be.free

    def malloc_with_gc(size):
        # the collector runs here and frees both neighbours of the free block b
        while victims:
            alloc.free(victims.pop())
        assert alloc.memory_allocated() == 2 * 512     # not yet: they are queued
        return real_malloc(size)
    be.malloc = malloc_with_gc
    big = alloc.malloc(2 * MiB)                        # a new segment: calls the backend
    be.malloc = real_malloc
    assert alloc.memory_allocated() == 2 * MiB         # a and c were freed once malloc ended
    check_invariants(alloc, be)
    seg = [s for s in alloc.snapshot() if s["address"] == a.ptr][0]
    assert [blk["state"] for blk in seg["blocks"]] == ["inactive"]    # a, b, c merged back into one
    with pytest.raises(RuntimeError, match="already freed"):
        alloc.free(a)

    d = alloc.malloc(512)
    frees = [d]

    def free_with_gc(ptr):
        while frees:
            alloc.free(frees.pop())
        return real_free(ptr)
    be.free = free_with_gc
    alloc.free(big)
    alloc.empty_cache()                                # releases big's segment: the backend frees d
    be.free = real_free
    assert alloc.memory_allocated() == 0
    check_invariants(alloc, be)
