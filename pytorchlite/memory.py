"""The CPU caching allocator, as seen from Python (`pytorchlite.memory`).

Every CPU tensor's memory comes from the allocator in kernels/runtime.c. It keeps freed
blocks of 256 KiB and more in a small bounded cache, because a fresh large block costs a
page fault per 4 KiB on first touch and training loops ask for the same sizes again and
again; small blocks go straight back to malloc. These functions mirror the names of
`torch.cuda`'s memory API so the same habits work on the CPU:

    >>> import pytorchlite
    >>> x = pytorchlite.empty(1 << 20)            # 4 MiB, served by the allocator
    >>> pytorchlite.memory.memory_allocated() >= 4 << 20
    True
    >>> del x                                     # freed at once; the block is cached
    >>> pytorchlite.memory.empty_cache()          # give cached blocks back to the system
    >>> pytorchlite.memory.memory_stats()["cached_bytes"]
    0

The cache is bounded: at most 64 blocks and at most the cache limit in bytes, 1 GiB by
default. A freed block that does not fit goes back to malloc at once. The limit is set
at run time with `set_cache_limit(nbytes)`, or before start-up from the environment:

    PYTORCHLITE_CPU_CACHE_LIMIT=256MiB      # bytes, or a number with K/M/G[i][B] (powers of 1024)
    PYTORCHLITE_NO_CPU_MEMORY_CACHING=1     # no cache at all (as PYTORCH_NO_CUDA_MEMORY_CACHING
                                            # does for PyTorch's CUDA allocator)

`empty_cache()` frees the cached blocks and asks malloc to return its free pages to the
operating system (glibc's malloc_trim), so resident memory (RSS) drops after large
tensors are freed. `benchmarks/bench_memory.py` checks that RSS stays flat over 10,000
training steps.
"""

import os
import re

from pytorchlite._C import ffi, lib

__all__ = ["memory_stats", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "memory_cached", "reset_peak_memory_stats", "empty_cache", "set_cache_limit",
           "get_cache_limit"]

CACHE_LIMIT_ENV = "PYTORCHLITE_CPU_CACHE_LIMIT"
NO_CACHING_ENV = "PYTORCHLITE_NO_CPU_MEMORY_CACHING"
DEFAULT_CACHE_LIMIT = 1 << 30     # the C allocator's initial limit (kernels/runtime.c)

# the order of the fields ptl_allocator_stats writes
_FIELDS = ("allocated_bytes", "peak_allocated_bytes", "cached_bytes", "cache_hits", "cache_misses",
           "cache_limit_bytes")


def memory_stats():
    """A dict of the allocator's counters: allocated_bytes (held by live tensors),
    peak_allocated_bytes, cached_bytes (freed blocks kept for reuse), reserved_bytes
    (allocated + cached: what the process holds), cache_hits and cache_misses (of large
    allocations), cache_limit_bytes. Sizes are after rounding (64 bytes for small blocks,
    4 KiB for large ones)."""
    buf = ffi.new("int64_t[6]")
    lib.ptl_allocator_stats(buf)
    stats = dict(zip(_FIELDS, (int(v) for v in buf)))
    stats["reserved_bytes"] = stats["allocated_bytes"] + stats["cached_bytes"]
    return stats


def memory_allocated():
    """Bytes held by live CPU tensors."""
    return memory_stats()["allocated_bytes"]


def max_memory_allocated():
    """The peak of memory_allocated() since start or the last reset_peak_memory_stats()."""
    return memory_stats()["peak_allocated_bytes"]


def memory_reserved():
    """Bytes the allocator holds: live tensors plus cached free blocks."""
    return memory_stats()["reserved_bytes"]


def memory_cached():
    """Bytes in freed blocks kept for reuse."""
    return memory_stats()["cached_bytes"]


def reset_peak_memory_stats():
    """Restart the peak from the current allocated bytes."""
    lib.ptl_reset_peak()


def empty_cache():
    """Return every cached free block to the system (live tensors are not affected)."""
    lib.ptl_empty_cache()


def get_cache_limit():
    """The most bytes the cache may hold."""
    return memory_stats()["cache_limit_bytes"]


def set_cache_limit(nbytes):
    """Let the cache hold at most `nbytes` bytes of free blocks (0 disables caching);
    cached blocks beyond the new limit are freed at once."""
    if not isinstance(nbytes, int) or isinstance(nbytes, bool):
        raise TypeError(f"set_cache_limit(): argument 'nbytes' must be int, not {type(nbytes).__name__}")
    if nbytes < 0:
        raise ValueError(f"set_cache_limit(): argument 'nbytes' must be non-negative, got {nbytes}")
    lib.ptl_set_cache_limit(nbytes)


_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text, name=CACHE_LIMIT_ENV):
    """Bytes from '1073741824', '512MiB', '512M', '1.5GB' or '64 kib' (units are powers of
    1024, case-insensitive); ValueError naming `name` and the value otherwise."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*(?:([kmgt])(i?b)?|(b)?)\s*", text, re.IGNORECASE)
    if m is None:
        raise ValueError(f"{name}: expected a size in bytes, optionally with a unit (e.g. 268435456, "
                         f"256MiB, 1G), got {text!r}")
    value = float(m.group(1)) * _UNITS[(m.group(2) or "").lower()]
    return int(min(value, (1 << 63) - 1))     # "no limit" in practice; the C side holds an int64


def cache_limit_from_env(environ=None):
    """The cache limit the environment asks for, or None when it asks nothing:
    PYTORCHLITE_NO_CPU_MEMORY_CACHING (set, not '0') means 0; otherwise
    PYTORCHLITE_CPU_CACHE_LIMIT parsed by parse_size."""
    env = os.environ if environ is None else environ
    if env.get(NO_CACHING_ENV, "").strip() not in ("", "0"):
        return 0
    text = env.get(CACHE_LIMIT_ENV, "")
    if not text.strip():
        return None
    return parse_size(text)


def _configure_from_env():
    limit = cache_limit_from_env()
    if limit is not None:
        lib.ptl_set_cache_limit(limit)


_configure_from_env()
