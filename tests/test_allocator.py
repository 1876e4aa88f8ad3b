"""The CPU caching allocator (kernels/runtime.c) and its Python face, pytorchlite.memory:
large blocks are reused after free, empty_cache() returns them, memory goes back the
moment the last reference to a tensor goes, and steady-state arithmetic does not grow."""

import threading
import weakref

import pytest

import pytorchlite as ptl
from pytorchlite import memory
from pytorchlite._C import ffi, lib

MiB = 1 << 20


def raw_stats():
    """The C counters: allocated, peak, cached, hits, misses, limit."""
    buf = ffi.new("int64_t[6]")
    lib.ptl_allocator_stats(buf)
    return dict(zip(("allocated", "peak", "cached", "hits", "misses", "limit"), list(buf)))


@pytest.fixture(autouse=True)
def clean_cache():
    limit = memory.get_cache_limit()
    memory.empty_cache()
    yield
    memory.set_cache_limit(limit)
    memory.empty_cache()


def test_public_stats_match_the_c_counters():
    s, r = memory.memory_stats(), raw_stats()
    assert s["allocated_bytes"] == r["allocated"] == memory.memory_allocated()
    assert s["peak_allocated_bytes"] == r["peak"] == memory.max_memory_allocated()
    assert s["cached_bytes"] == r["cached"] == memory.memory_cached() == 0
    assert s["cache_limit_bytes"] == r["limit"] == memory.get_cache_limit()
    assert s["reserved_bytes"] == memory.memory_reserved() == r["allocated"] + r["cached"]
    assert (s["cache_hits"], s["cache_misses"]) == (r["hits"], r["misses"])


def test_large_block_is_reused():
    base = raw_stats()
    for i in range(10):
        t = ptl.empty(16 * MiB)                                 # 64 MiB of float32
        s = raw_stats()
        assert s["allocated"] == base["allocated"] + 64 * MiB
        assert s["cached"] == 0                                 # the cached block is in use again
        del t
        s = raw_stats()
        assert s["allocated"] == base["allocated"]
        assert s["cached"] == 64 * MiB                          # kept for the next request
    s = raw_stats()
    assert s["misses"] - base["misses"] == 1                    # only the first one went to the system
    assert s["hits"] - base["hits"] == 9


def test_empty_cache_returns_cached_blocks():
    t = ptl.ones(16 * MiB)
    del t
    assert memory.memory_cached() == 64 * MiB
    assert memory.memory_reserved() == memory.memory_allocated() + 64 * MiB
    memory.empty_cache()
    assert memory.memory_cached() == 0
    misses = raw_stats()["misses"]
    t = ptl.ones(16 * MiB)                                      # nothing to reuse now
    assert raw_stats()["misses"] == misses + 1
    assert t[123].item() == 1.0


def test_a_slightly_smaller_request_reuses_a_larger_block_and_accounts_it():
    base = raw_stats()
    t = ptl.empty(16 * MiB)
    del t
    u = ptl.empty(15 * MiB)                                     # within 25%: served from the cache
    s = raw_stats()
    assert s["hits"] == base["hits"] + 1 and s["cached"] == 0
    assert s["allocated"] == base["allocated"] + 64 * MiB       # the block's real size
    del u
    s = raw_stats()
    assert s["allocated"] == base["allocated"]                  # no drift after free
    assert s["cached"] == 64 * MiB
    v = ptl.empty(4 * MiB)                                      # far smaller: not worth a 64 MiB block
    assert raw_stats()["cached"] == 64 * MiB
    del v


def test_memory_is_freed_when_the_last_reference_goes():
    before = memory.memory_allocated()
    t = ptl.empty(1000)
    st = weakref.ref(t.untyped_storage())
    view = t[10:20]
    del t
    assert st() is not None                                     # the view keeps the storage
    assert memory.memory_allocated() > before
    del view
    assert st() is None                                         # no gc.collect(): refcounting frees it
    assert memory.memory_allocated() == before


def test_steady_state_arithmetic_does_not_grow():
    a = ptl.ones(100)
    b = ptl.full((100,), 2.0)
    def step():
        c = (a + b) * a
        d = c + 1.5 + b * 3
        del c, d

    step()          # warm up: the first call keeps 0-d tensors for the Python scalars 1.5 and 3
    before = raw_stats()
    for _ in range(10_000):
        step()
    after = raw_stats()
    assert after["allocated"] == before["allocated"]
    assert after["cached"] == before["cached"]


def test_peak_and_reset():
    memory.reset_peak_memory_stats()
    base = memory.memory_allocated()
    assert memory.max_memory_allocated() == base
    t = ptl.empty(2 * MiB)                                      # 8 MiB
    del t
    assert memory.max_memory_allocated() >= base + 8 * MiB
    assert memory.memory_allocated() == base
    memory.reset_peak_memory_stats()
    assert memory.max_memory_allocated() == base


def test_cache_limit():
    memory.set_cache_limit(0)                                   # caching off
    assert memory.get_cache_limit() == 0
    t = ptl.empty(16 * MiB)
    del t
    assert memory.memory_cached() == 0
    memory.set_cache_limit(100 * MiB)
    a, b = ptl.empty(16 * MiB), ptl.empty(16 * MiB)
    del a, b                                                    # 128 MiB freed, only 64 fits
    assert memory.memory_cached() == 64 * MiB
    memory.set_cache_limit(10 * MiB)                            # lowering trims at once
    assert memory.memory_cached() == 0
    with pytest.raises(ValueError):
        memory.set_cache_limit(-1)
    with pytest.raises(TypeError):
        memory.set_cache_limit(1.5)


def test_small_blocks_bypass_the_cache():
    base = raw_stats()
    t = ptl.empty(1000)
    del t
    s = raw_stats()
    assert s["cached"] == base["cached"] and s["hits"] == base["hits"] and s["misses"] == base["misses"]


def test_allocations_are_aligned():
    for n in (1, 3, 1000, 70000, 16 * MiB):
        t = ptl.empty(n, dtype=ptl.uint8)
        assert t.data_ptr() % 64 == 0


def test_threads_keep_the_counters_consistent():
    ptl.ones(1) * 2                                             # the scalar 2 is kept once (see above)
    base = raw_stats()["allocated"]
    errors = []

    def work():
        try:
            for i in range(300):
                x = ptl.empty(100_000 if i % 3 == 0 else 100)   # mixes cached and malloc'd blocks
                y = x.fill_(1.0) * 2
                del x, y
        except Exception as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert raw_stats()["allocated"] == base


def test_out_of_memory_is_an_error_not_a_crash():
    with pytest.raises((RuntimeError, MemoryError), match="allocat|memory"):
        ptl.empty(1 << 62, dtype=ptl.uint8)


# --- the cache's bound, its configuration, and memory going back to the system ----------

def test_the_cache_never_holds_more_than_its_limit_or_64_blocks():
    memory.set_cache_limit(40 * MiB)
    sizes = [(1 << 18) * k for k in (1, 2, 3, 5, 8)]           # 1 to 8 MiB of float32
    live = [ptl.empty(n) for n in sizes * 6]                    # 114 MiB in 30 blocks
    while live:
        live.pop()
        assert memory.memory_cached() <= 40 * MiB
    assert memory.memory_cached() > 30 * MiB                    # it did cache up to the limit
    memory.set_cache_limit(1 << 40)
    memory.empty_cache()
    small = [ptl.empty(1 << 16) for _ in range(100)]            # 100 blocks of 256 KiB
    del small
    assert memory.memory_cached() == 64 * 256 * 1024            # 64 slots, the rest freed


def test_cache_limit_sizes_from_the_environment():
    env = {}
    assert memory.cache_limit_from_env(env) is None
    for text, want in [("268435456", 256 * MiB), ("256MiB", 256 * MiB), ("256m", 256 * MiB), ("1.5GB", 3 << 29),
                       (" 64 KiB ", 64 << 10), ("0", 0), ("100b", 100)]:
        assert memory.cache_limit_from_env({memory.CACHE_LIMIT_ENV: text}) == want, text
    assert memory.cache_limit_from_env({memory.NO_CACHING_ENV: "1", memory.CACHE_LIMIT_ENV: "1G"}) == 0
    assert memory.cache_limit_from_env({memory.NO_CACHING_ENV: "0", memory.CACHE_LIMIT_ENV: "1G"}) == 1 << 30
    for bad in ("lots", "-5", "1.5.5", "12 XB", "1e9"):
        with pytest.raises(ValueError, match=f"PYTORCHLITE_CPU_CACHE_LIMIT: expected a size in bytes.*got '{bad}'"):
            memory.cache_limit_from_env({memory.CACHE_LIMIT_ENV: bad})


def test_the_environment_sets_the_limit_at_import():
    import os
    import subprocess
    import sys
    code = "import pytorchlite as P; print(P.memory.get_cache_limit())"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    def run(**env):
        full = {k: v for k, v in os.environ.items()
                if k not in (memory.CACHE_LIMIT_ENV, memory.NO_CACHING_ENV)}
        full.update(env)
        return subprocess.run([sys.executable, "-c", code], env=full, cwd=root, capture_output=True, text=True)

    assert run().stdout.strip() == str(memory.DEFAULT_CACHE_LIMIT)
    assert run(PYTORCHLITE_CPU_CACHE_LIMIT="64MiB").stdout.strip() == str(64 * MiB)
    assert run(PYTORCHLITE_NO_CPU_MEMORY_CACHING="1").stdout.strip() == "0"
    bad = run(PYTORCHLITE_CPU_CACHE_LIMIT="lots")
    assert bad.returncode != 0 and "ValueError: PYTORCHLITE_CPU_CACHE_LIMIT" in bad.stderr


def _rss():
    import os
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


needs_proc = pytest.mark.skipif(not __import__("os").path.exists("/proc/self/statm"),
                                reason="reads resident memory from /proc/self/statm (Linux)")


@needs_proc
def test_empty_cache_gives_a_freed_200_mb_tensor_back_to_the_system():
    before = _rss()
    t = ptl.ones(50 * MiB)                                      # 200 MiB, every page touched
    assert _rss() - before > 190 * MiB
    del t
    assert memory.memory_cached() == 200 * MiB                  # cached, still resident
    memory.empty_cache()
    assert memory.memory_cached() == 0
    assert _rss() - before < 10 * MiB


_HEAP_SCRIPT = """
import os, pytorchlite as ptl
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
t = ptl.ones(1 << 20); del t; ptl.memory.empty_cache()   # raises the mmap threshold to 4 MiB
before = rss()
big, pins = [], []
for _ in range(200):
    big.append(ptl.ones(1 << 18))                          # 1 MiB each
    pins.append(ptl.ones(4000))                            # 16 KiB each, kept
grown = rss() - before
del big
ptl.memory.empty_cache()
print(grown, rss() - before)
"""


@needs_proc
def test_empty_cache_gives_back_many_freed_blocks_from_the_heap():
    # Blocks under glibc's mmap threshold live in the heap, where free() returns only the
    # top to the system: the 16 KiB tensors allocated between the 1 MiB ones keep the
    # freed blocks resident unless empty_cache() also trims the heap (malloc_trim). In a
    # fresh process, so that the small tensors really land between the large ones (a used
    # heap would serve them from old free chunks).
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", _HEAP_SCRIPT], cwd=root, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    grown, left = (int(v) for v in r.stdout.split())
    assert grown > 150 * MiB
    assert left < 20 * MiB, f"{left / MiB:.0f} MiB still resident after empty_cache()"
