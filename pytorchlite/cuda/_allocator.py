"""The CUDA caching allocator: PyTorch's semantics, over an abstract device-memory backend.

Allocating device memory (cuMemAlloc) is slow and freeing it (cuMemFree) synchronises the
whole device, which would stall the host-runs-ahead pipeline on every temporary. So freed
blocks are kept and handed out again, the way c10/cuda/CUDACachingAllocator.cpp does it:

* sizes are rounded up to 512 bytes; a rounded size <= 1 MiB comes from the *small pool*,
  anything bigger from the *large pool*;
* a request that nothing cached can serve gets a fresh *segment* from the backend: 2 MiB for
  a small request, 20 MiB for a large one under 10 MiB, else the size rounded up to 2 MiB;
* free blocks are ordered by (stream, size, address) and looked up best-fit *on the same
  stream only*: work queued on a stream is ordered, so memory freed by a kernel on stream S
  may be reused at once by the next kernel on S, but not by another stream;
* a block larger than the request is split (small pool: remainder >= 512 B; large pool:
  remainder > 1 MiB); the pieces of a segment are linked prev/next and merged with their
  free neighbours when freed;
* a block used on other streams (record_stream) goes back to the pool only once an event
  recorded on each of them at free time has completed (checked at each malloc);
* when the backend is out of memory, cached unsplit segments are released and the request
  retried once before OutOfMemoryError.

The backend interface (DeviceBackend) is what cuda-python's driver API offers: malloc/free,
mem_get_info, events and streams as integer handles. FakeBackend simulates a device of N
bytes in pure Python, with events that complete when a test says so; the real backend
lives in _runtime.py.

    >>> be = FakeBackend(capacity=64 << 20)
    >>> alloc = CachingAllocator(be)
    >>> b = alloc.malloc(1, stream=0)
    >>> alloc.memory_allocated(), alloc.memory_reserved()
    (512, 2097152)
    >>> alloc.free(b); alloc.memory_allocated(), alloc.memory_reserved()
    (0, 2097152)
    >>> alloc.empty_cache(); alloc.memory_reserved()
    0
"""

import bisect
import collections
import functools
import os
import threading

__all__ = ["OutOfMemoryError", "DeviceOutOfMemory", "DeviceBackend", "FakeBackend", "CachingAllocator",
           "round_size", "allocation_size", "format_size", "caching_disabled_by_env"]

# the constants of CUDACachingAllocator.cpp
MIN_BLOCK_SIZE = 512            # every size is rounded up to a multiple of this
SMALL_SIZE = 1 << 20            # largest request served by the small pool
SMALL_BUFFER = 2 << 20          # segment size for small requests
LARGE_BUFFER = 20 << 20         # segment size for large requests under MIN_LARGE_ALLOC
MIN_LARGE_ALLOC = 10 << 20
ROUND_LARGE = 2 << 20           # bigger segments are rounded up to this

NO_CACHING_ENV = "PYTORCHLITE_NO_CUDA_MEMORY_CACHING"

# The profiler's hook: an object with cuda_alloc(allocator, block, device_call) and
# cuda_free(allocator, block), told about every block handed out and given back (None:
# nothing is told; the profiler sets it, this module never imports the profiler).
observer = None


class OutOfMemoryError(RuntimeError):
    """Raised when the device has no memory left for a request, even after the cache was
    released (PyTorch's torch.cuda.OutOfMemoryError, also a RuntimeError)."""


class DeviceOutOfMemory(Exception):
    """A backend's malloc could not get the memory (cudaErrorMemoryAllocation). Internal:
    the allocator turns it into a retry and, failing that, OutOfMemoryError."""


def round_size(size):
    """The size a request is served with: a multiple of 512 bytes, at least 512."""
    if size < MIN_BLOCK_SIZE:
        return MIN_BLOCK_SIZE
    return (size + MIN_BLOCK_SIZE - 1) // MIN_BLOCK_SIZE * MIN_BLOCK_SIZE


def allocation_size(size):
    """The segment requested from the backend for a (rounded) request that nothing cached
    can serve: big segments amortise cuMemAlloc over many small tensors."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return (size + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE


def format_size(size):
    """PyTorch's format_size: '512 bytes', '1.50 KiB', '20.00 MiB', '79.19 GiB'."""
    if size <= 1024:
        return f"{size} bytes"
    if size <= 1 << 20:
        return f"{size / 1024:.2f} KiB"
    if size <= 1 << 30:
        return f"{size / (1 << 20):.2f} MiB"
    return f"{size / (1 << 30):.2f} GiB"


def caching_disabled_by_env(environ=None):
    """Whether PYTORCHLITE_NO_CUDA_MEMORY_CACHING asks for every free to go straight to the
    device (for finding memory bugs with compute-sanitizer; much slower)."""
    value = (os.environ if environ is None else environ).get(NO_CACHING_ENV, "")
    return value.strip() not in ("", "0")


# --- backend interface ----------------------------------------------------------------------

class DeviceBackend:
    """What the allocator and the stream/event classes need from one device. Pointers,
    streams and events are plain integers (handles); stream 0 is the default stream.

    malloc(size) -> ptr, raising DeviceOutOfMemory when the device is full; free(ptr);
    mem_get_info() -> (free, total) bytes; event_create(enable_timing=False) -> event;
    event_record(event, stream); event_query(event) -> bool (completed?);
    event_synchronize(event); event_destroy(event); event_elapsed_time(start, end) -> ms;
    stream_create(priority) -> stream; stream_query(stream) -> bool;
    stream_synchronize(stream); stream_wait_event(stream, event); synchronize() (the whole
    device); default_stream() -> stream; properties() -> dict (name, total_memory, major,
    minor, multi_processor_count)."""

    device_index = 0

    def default_stream(self):
        return 0

    def _missing(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not implement this backend call")

    malloc = free = mem_get_info = _missing
    event_create = event_record = event_query = event_synchronize = event_destroy = _missing
    event_elapsed_time = stream_create = stream_query = stream_synchronize = _missing
    stream_wait_event = synchronize = properties = _missing


class FakeBackend(DeviceBackend):
    """A simulated device of `capacity` bytes, for testing the allocator without a GPU.

    Memory: malloc hands out fresh, never reused addresses (a use-after-free or an overlap
    bug then shows up as an address mismatch instead of silently aliasing), and fails with
    DeviceOutOfMemory when the bytes held would exceed the capacity. Freeing an address it
    did not hand out raises, so double frees are caught.

    Streams and events: work is not executed; an event recorded on a stream stays pending
    until the test calls complete_stream(stream) or complete_all() (the GPU caught up), or
    the host waits on it (event_synchronize / stream_synchronize / synchronize)."""

    BASE = 0x7F00_0000_0000

    def __init__(self, capacity=1 << 30, device_index=0, name="FakeGPU"):
        self.capacity = capacity
        self.device_index = device_index
        self.name = name
        self.used = 0
        self.live = {}                  # ptr -> size of every segment handed out
        self._next_ptr = self.BASE
        self._next_handle = 0x1000     # handles look like pointers: never 1 or 2 (DLPack's stream codes)
        self.events = {}                # event -> None (created) | (stream, done)
        self.streams = {0}
        self.waits = []                 # (stream, event) pairs from stream_wait_event
        self.malloc_calls = 0
        self.free_calls = 0

    def _handle(self):
        h = self._next_handle
        self._next_handle += 1
        return h

    # memory
    def malloc(self, size):
        self.malloc_calls += 1
        if size <= 0:
            raise ValueError(f"FakeBackend.malloc: size must be positive, got {size}")
        if self.used + size > self.capacity:
            raise DeviceOutOfMemory(size)
        ptr = self._next_ptr
        # leave a gap after each segment, aligned like cudaMalloc (256 B; we use 4 KiB)
        self._next_ptr += (size + 4096 + 4095) // 4096 * 4096
        self.live[ptr] = size
        self.used += size
        return ptr

    def free(self, ptr):
        self.free_calls += 1
        size = self.live.pop(ptr, None)
        if size is None:
            raise RuntimeError(f"FakeBackend.free: {ptr:#x} is not a live allocation (double free?)")
        self.used -= size

    def mem_get_info(self):
        return self.capacity - self.used, self.capacity

    # events
    def event_create(self, enable_timing=False):
        e = self._handle()
        self.events[e] = None
        return e

    def event_record(self, event, stream):
        self._check_stream(stream)
        self.events[event] = (stream, False)

    def event_query(self, event):
        state = self.events[event]
        return state is None or state[1]

    def event_synchronize(self, event):
        state = self.events[event]
        if state is not None:
            self.events[event] = (state[0], True)

    def event_destroy(self, event):
        del self.events[event]

    def event_elapsed_time(self, start, end):
        raise NotImplementedError("FakeBackend has no clock: elapsed_time needs a real device")

    # streams
    def stream_create(self, priority=0):
        s = self._handle()
        self.streams.add(s)
        return s

    def _check_stream(self, stream):
        if stream not in self.streams:
            raise RuntimeError(f"FakeBackend: unknown stream {stream}")

    def stream_query(self, stream):
        self._check_stream(stream)
        return all(st[1] for st in self.events.values() if st is not None and st[0] == stream)

    def stream_synchronize(self, stream):
        self.complete_stream(stream)

    def stream_wait_event(self, stream, event):
        self._check_stream(stream)
        self.waits.append((stream, event))

    def synchronize(self):
        self.complete_all()

    def properties(self):
        return {"name": self.name, "total_memory": self.capacity, "major": 9, "minor": 0,
                "multi_processor_count": 132}

    # test controls
    def complete_stream(self, stream):
        """Everything queued on `stream` so far has run: its events complete."""
        self._check_stream(stream)
        for e, st in self.events.items():
            if st is not None and st[0] == stream:
                self.events[e] = (stream, True)

    def complete_all(self):
        for s in list(self.streams):
            self.complete_stream(s)

    def pending_events(self):
        return sum(1 for st in self.events.values() if st is not None and not st[1])


# --- blocks, pools and statistics ------------------------------------------------------------

class Block:
    """A piece of a segment: [ptr, ptr + size) on one stream. `prev`/`next` link the pieces
    of the same segment in address order; a block with neither is a whole segment."""

    __slots__ = ("ptr", "size", "requested_size", "stream", "pool", "allocated", "prev", "next",
                 "stream_uses", "event_count")

    def __init__(self, ptr, size, stream, pool):
        self.ptr = ptr
        self.size = size
        self.requested_size = 0
        self.stream = stream
        self.pool = pool
        self.allocated = False
        self.prev = None
        self.next = None
        self.stream_uses = set()
        self.event_count = 0

    def is_split(self):
        return self.prev is not None or self.next is not None

    def __repr__(self):
        state = "allocated" if self.allocated else ("pending" if self.event_count else "free")
        return f"Block({self.ptr:#x}, size={self.size}, stream={self.stream}, {state})"


class BlockPool:
    """The free blocks of one pool in (stream, size, address) order, so that the first key
    at or after (stream, size, -1) is the best fit on that stream."""

    __slots__ = ("is_small", "name", "_keys", "_blocks")

    def __init__(self, is_small):
        self.is_small = is_small
        self.name = "small_pool" if is_small else "large_pool"
        self._keys = []
        self._blocks = {}

    @staticmethod
    def _key(b):
        return (b.stream, b.size, b.ptr)

    def insert(self, b):
        key = self._key(b)
        assert key not in self._blocks, f"{b} is already in the {self.name}"
        bisect.insort(self._keys, key)
        self._blocks[key] = b

    def remove(self, b):
        key = self._key(b)
        i = bisect.bisect_left(self._keys, key)
        assert i < len(self._keys) and self._keys[i] == key, f"{b} is not in the {self.name}"
        del self._keys[i]
        del self._blocks[key]

    def best_fit(self, stream, size):
        i = bisect.bisect_left(self._keys, (stream, size, -1))
        if i == len(self._keys) or self._keys[i][0] != stream:
            return None  # the smallest fitting block belongs to another stream: never shared
        return self._blocks[self._keys[i]]

    def blocks(self):
        return [self._blocks[k] for k in self._keys]

    def __len__(self):
        return len(self._keys)


class Stat:
    """PyTorch's Stat: current and peak values, and the totals ever added and removed."""

    __slots__ = ("current", "peak", "allocated", "freed")

    def __init__(self):
        self.current = self.peak = self.allocated = self.freed = 0

    def increase(self, n):
        self.current += n
        self.allocated += n
        if self.current > self.peak:
            self.peak = self.current

    def decrease(self, n):
        self.current -= n
        self.freed += n


_STAT_NAMES = ("allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
               "active_bytes", "inactive_split_bytes", "requested_bytes")
_STAT_TYPES = ("all", "small_pool", "large_pool")
_COUNTERS = ("num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc", "num_device_free")


class _Stats:
    def __init__(self):
        for name in _STAT_NAMES:
            setattr(self, name, {t: Stat() for t in _STAT_TYPES})
        for name in _COUNTERS:
            setattr(self, name, 0)

    def update(self, name, pool, n):
        """Add n (or remove -n) to stat `name` in the aggregate and in `pool`'s own type."""
        if n == 0:
            return
        arr = getattr(self, name)
        for t in ("all", pool.name):
            if n > 0:
                arr[t].increase(n)
            else:
                arr[t].decrease(-n)


# --- the allocator --------------------------------------------------------------------------

def _serialised(method):
    """Run an allocator operation alone, then the frees deferred while it ran (see free)."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with self._lock:
            try:
                return method(self, *args, **kwargs)
            finally:
                self._drain()
    return run


class CachingAllocator:
    """The caching allocator of one device. malloc(size, stream) returns a Block (None for
    size 0, like PyTorch's null pointer); free(block) gives it back. Not thread-safe on its
    own: the runtime serialises calls (CPython's GIL plus one caller per device).

    With caching=False (PYTORCHLITE_NO_CUDA_MEMORY_CACHING=1) every request gets its own
    segment of the rounded size and every free releases it to the backend as soon as the
    streams that used it are done; statistics keep working.

    Frees arrive from Storage.__del__, which the cyclic garbage collector may run at any
    allocation of Python objects, so in the middle of another allocator operation on the
    same thread (a block half merged, a neighbour out of its pool). Every operation
    therefore holds a lock, and a free that finds it held is queued and carried out
    when the operation in progress ends."""

    def __init__(self, backend, caching=None):
        self.backend = backend
        self.caching = (not caching_disabled_by_env()) if caching is None else bool(caching)
        self.small = BlockPool(True)
        self.large = BlockPool(False)
        self.stats = _Stats()
        self._allocated = {}                          # ptr -> Block handed out and not freed
        self._events = collections.OrderedDict()      # stream -> deque of (event, block)
        self._lock = threading.Lock()                 # not reentrant: see the class docstring
        self._deferred = []                           # blocks freed while the lock was held

    def _drain(self):
        while self._deferred:
            self._free(self._deferred.pop())

    # -- allocation ---------------------------------------------------------------------------
    @_serialised
    def malloc(self, size, stream=0):
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ValueError(f"malloc(): size must be a non-negative int, got {size!r}")
        if size == 0:
            return None
        self._process_events()
        rounded = round_size(size)
        pool = self.small if rounded <= SMALL_SIZE else self.large
        block = pool.best_fit(stream, rounded) if self.caching else None
        device_call = block is None
        if block is not None:
            pool.remove(block)
        else:
            alloc = allocation_size(rounded) if self.caching else rounded
            block = self._alloc_block(pool, stream, alloc, retry=False)
            if block is None:
                # free every cached unsplit segment (waiting for pending events) and retry
                self._release_cached_blocks()
                block = self._alloc_block(pool, stream, alloc, retry=True)
            if block is None:
                self.stats.num_ooms += 1
                raise OutOfMemoryError(self._oom_message(alloc))
        block = self._alloc_found_block(block, rounded, size)
        if observer is not None:
            observer.cuda_alloc(self, block, device_call)
        return block

    def _alloc_block(self, pool, stream, size, retry):
        if retry:
            self.stats.num_alloc_retries += 1
        try:
            ptr = self.backend.malloc(size)
        except DeviceOutOfMemory:
            return None
        self.stats.num_device_alloc += 1
        self.stats.update("segment", pool, 1)
        self.stats.update("reserved_bytes", pool, size)
        return Block(ptr, size, stream, pool)

    def _should_split(self, block, size):
        remaining = block.size - size
        if not self.caching:
            return False
        if block.pool.is_small:
            return remaining >= MIN_BLOCK_SIZE
        return remaining > SMALL_SIZE

    def _alloc_found_block(self, block, size, requested):
        pool = block.pool
        already_split = block.is_split()
        if self._should_split(block, size):
            # the front becomes the new allocated block; `remaining` keeps its place in the
            # list and goes back to the pool with what is left
            remaining = block
            block = Block(remaining.ptr, size, remaining.stream, pool)
            block.prev = remaining.prev
            if block.prev is not None:
                block.prev.next = block
            block.next = remaining
            remaining.prev = block
            remaining.ptr += size
            remaining.size -= size
            pool.insert(remaining)
            if already_split:
                self.stats.update("inactive_split_bytes", pool, -size)
            else:
                self.stats.update("inactive_split_bytes", pool, remaining.size)
                self.stats.update("inactive_split", pool, 1)
        elif already_split:
            self.stats.update("inactive_split_bytes", pool, -block.size)
            self.stats.update("inactive_split", pool, -1)
        block.allocated = True
        block.requested_size = requested
        self._allocated[block.ptr] = block
        self.stats.update("allocation", pool, 1)
        self.stats.update("allocated_bytes", pool, block.size)
        self.stats.update("active", pool, 1)
        self.stats.update("active_bytes", pool, block.size)
        self.stats.update("requested_bytes", pool, requested)
        return block

    # -- freeing ------------------------------------------------------------------------------
    def free(self, block):
        """Give a block back. If other streams used it (record_stream), it stays out of the
        pool until the events recorded on those streams now have completed."""
        if block is None:
            return
        if not block.allocated or self._allocated.get(block.ptr) is not block or block in self._deferred:
            raise RuntimeError(f"free(): {block} was not allocated by this allocator or was already freed")
        if not self._lock.acquire(blocking=False):
            self._deferred.append(block)     # an operation is under way: it frees the block when done
            return
        try:
            self._free(block)
        finally:
            try:
                self._drain()
            finally:
                self._lock.release()

    def _free(self, block):
        del self._allocated[block.ptr]
        block.allocated = False
        self.stats.update("allocation", block.pool, -1)
        self.stats.update("allocated_bytes", block.pool, -block.size)
        if observer is not None:
            observer.cuda_free(self, block)
        if block.stream_uses:
            self._insert_events(block)
        else:
            self._free_block(block)

    def _free_block(self, block):
        pool = block.pool
        size, requested = block.size, block.requested_size
        net_blocks = net_bytes = 0
        for other in (block.prev, block.next):
            subsumed = self._try_merge(block, other)
            if subsumed:
                net_blocks -= 1
                net_bytes -= subsumed
        pool.insert(block)
        if block.is_split():
            net_blocks += 1
            net_bytes += block.size
        self.stats.update("inactive_split", pool, net_blocks)
        self.stats.update("inactive_split_bytes", pool, net_bytes)
        self.stats.update("active", pool, -1)
        self.stats.update("active_bytes", pool, -size)
        self.stats.update("requested_bytes", pool, -requested)
        if not self.caching and not block.is_split():
            self._release_block(block)

    def _try_merge(self, dst, src):
        """Absorb free neighbour `src` into `dst`; returns the bytes absorbed (0: not free)."""
        if src is None or src.allocated or src.event_count > 0 or src.stream_uses:
            return 0
        src.pool.remove(src)
        if dst.prev is src:         # [src dst]
            dst.ptr = src.ptr
            dst.prev = src.prev
            if dst.prev is not None:
                dst.prev.next = dst
        else:                       # [dst src]
            dst.next = src.next
            if dst.next is not None:
                dst.next.prev = dst
        dst.size += src.size
        return src.size

    @_serialised
    def record_stream(self, block, stream):
        """Mark `block` as used by work on `stream`, so that freeing it waits for that work.
        A no-op for the stream the block was allocated on (its work is already ordered)."""
        if block is None:
            return
        if not block.allocated:
            raise RuntimeError(f"record_stream(): {block} is not allocated")
        if stream != block.stream:
            block.stream_uses.add(stream)

    def _insert_events(self, block):
        streams, block.stream_uses = block.stream_uses, set()
        for s in sorted(streams):
            event = self.backend.event_create()
            self.backend.event_record(event, s)
            block.event_count += 1
            self._events.setdefault(s, collections.deque()).append((event, block))

    def _process_events(self):
        """Return blocks whose streams have finished with them. Events are queued per
        stream, so a long-running stream does not hold back blocks freed on another one."""
        for s in list(self._events):
            queue = self._events[s]
            while queue:
                event, block = queue[0]
                if not self.backend.event_query(event):
                    break
                queue.popleft()
                self._event_done(event, block)
            if not queue:
                del self._events[s]

    def _event_done(self, event, block):
        self.backend.event_destroy(event)
        block.event_count -= 1
        if block.event_count == 0:
            self._free_block(block)

    def _synchronize_and_free_events(self):
        self.stats.num_sync_all_streams += 1
        events, self._events = self._events, collections.OrderedDict()
        for queue in events.values():
            for event, block in queue:
                self.backend.event_synchronize(event)
                self._event_done(event, block)

    # -- releasing the cache ------------------------------------------------------------------
    def _release_block(self, block):
        self.backend.free(block.ptr)
        self.stats.num_device_free += 1
        block.pool.remove(block)
        self.stats.update("segment", block.pool, -1)
        self.stats.update("reserved_bytes", block.pool, -block.size)

    def _release_cached_blocks(self):
        self._synchronize_and_free_events()
        for pool in (self.large, self.small):
            for block in pool.blocks():
                if not block.is_split():   # a split segment still has live pieces
                    self._release_block(block)

    @_serialised
    def empty_cache(self):
        """Give every cached, wholly free segment back to the device. Segments with a live
        piece stay, so memory_reserved() can remain above memory_allocated()."""
        self._release_cached_blocks()

    # -- errors -------------------------------------------------------------------------------
    def _oom_message(self, alloc_size):
        free, total = self.backend.mem_get_info()
        allocated = self.stats.allocated_bytes["all"].current
        reserved = self.stats.reserved_bytes["all"].current
        return (f"CUDA out of memory. Tried to allocate {format_size(alloc_size)}. GPU "
                f"{self.backend.device_index} has a total capacity of {format_size(total)} of which "
                f"{format_size(free)} is free. Of the allocated memory {format_size(allocated)} is "
                f"allocated by PyTorch, and {format_size(reserved - allocated)} is reserved by PyTorch "
                "but unallocated. (pytorchlite: the cache of wholly free segments was already released "
                "and the request retried; reserved-but-unallocated memory is in segments that still "
                "hold live tensors.)")

    # -- statistics ---------------------------------------------------------------------------
    @_serialised
    def memory_stats(self):
        """PyTorch's flat memory_stats() dict, keys sorted:
        'allocated_bytes.all.current', 'segment.small_pool.peak', 'num_ooms', ..."""
        out = {}
        for name in _STAT_NAMES:
            arr = getattr(self.stats, name)
            for t in _STAT_TYPES:
                st = arr[t]
                for field in ("current", "peak", "allocated", "freed"):
                    out[f"{name}.{t}.{field}"] = getattr(st, field)
        for name in _COUNTERS:
            out[name] = getattr(self.stats, name)
        out["max_split_size"] = -1      # PyTorch reports its default (unlimited) as -1
        return collections.OrderedDict(sorted(out.items()))

    def memory_allocated(self):
        return self.stats.allocated_bytes["all"].current

    def max_memory_allocated(self):
        return self.stats.allocated_bytes["all"].peak

    def memory_reserved(self):
        return self.stats.reserved_bytes["all"].current

    def max_memory_reserved(self):
        return self.stats.reserved_bytes["all"].peak

    @_serialised
    def reset_peak_memory_stats(self):
        for name in _STAT_NAMES:
            for st in getattr(self.stats, name).values():
                st.peak = st.current

    @_serialised
    def reset_accumulated_memory_stats(self):
        for name in _STAT_NAMES:
            for st in getattr(self.stats, name).values():
                st.allocated = st.freed = 0
        for name in _COUNTERS:
            setattr(self.stats, name, 0)

    @_serialised
    def snapshot(self):
        """Every segment with its blocks, in address order (like torch.cuda.memory_snapshot):
        [{'address', 'total_size', 'allocated_size', 'active_size', 'stream', 'segment_type',
          'blocks': [{'address', 'size', 'requested_size', 'state'}]}]. A block's state is
        'active_allocated', 'active_pending_free' (waiting for other streams) or 'inactive'."""
        blocks = list(self._allocated.values()) + self.small.blocks() + self.large.blocks()
        for queue in self._events.values():
            blocks.extend(b for _, b in queue)
        heads = {}
        for b in blocks:
            while b.prev is not None:
                b = b.prev
            heads[b.ptr] = b
        segments = []
        for ptr in sorted(heads):
            b = heads[ptr]
            seg = {"address": ptr, "total_size": 0, "allocated_size": 0, "active_size": 0, "stream": b.stream,
                   "segment_type": "small" if b.pool.is_small else "large", "blocks": []}
            while b is not None:
                state = ("active_allocated" if b.allocated else
                         "active_pending_free" if b.event_count or b.stream_uses else "inactive")
                seg["blocks"].append({"address": b.ptr, "size": b.size, "requested_size": b.requested_size,
                                      "state": state})
                seg["total_size"] += b.size
                if b.allocated:
                    seg["allocated_size"] += b.size
                if state != "inactive":
                    seg["active_size"] += b.size
                b = b.next
            segments.append(seg)
        return segments


# --- memory_summary ---------------------------------------------------------------------------

def _fmt_bytes(n, pref):
    units = ("B  ", "KiB", "MiB", "GiB", "TiB")
    unit = units[0]
    for nxt in units[1:]:
        if pref < 768 * 1024:
            break
        unit, n, pref = nxt, n // 1024, pref / 1024
    return f"{n:6d} {unit}"


def _fmt_count(n, pref):
    units = (" ", "K", "M")
    unit = units[0]
    for nxt in units[1:]:
        if pref < 750 * 1000:
            break
        unit, n, pref = nxt, n // 1000, pref / 1000
    return f"{n:7d} {unit} "


def memory_summary(stats, device=0, abbreviated=False):
    """A readable table of a memory_stats() dict, laid out like torch.cuda.memory_summary:
    current, peak, total allocated and total freed for each metric, per pool unless
    abbreviated."""
    width = 75
    rule, thick = "|" + "-" * width + "|", "|" + "=" * width + "|"

    def row(cells):
        return "|" + "|".join(cells) + "|"

    lines = [thick, row([f" {'pytorchlite CUDA memory summary, device ID ' + str(device):^73} "]), rule,
             row([f"{'CUDA OOMs: ' + str(stats.get('num_ooms', 0)):^37}",
                  f"{'cudaMalloc retries: ' + str(stats.get('num_alloc_retries', 0)):^37}"]),
             thick, row([f" {'Metric':<21} ", f" {'Cur Usage':^10} ", f" {'Peak Usage':^10} ",
                         f" {'Tot Alloc':^10} ", f" {'Tot Freed':^10} "])]
    metrics = (("allocated_bytes", "Allocated memory", _fmt_bytes),
               ("active_bytes", "Active memory", _fmt_bytes),
               ("requested_bytes", "Requested memory", _fmt_bytes),
               ("reserved_bytes", "GPU reserved memory", _fmt_bytes),
               ("inactive_split_bytes", "Non-releasable memory", _fmt_bytes),
               ("allocation", "Allocations", _fmt_count),
               ("active", "Active allocs", _fmt_count),
               ("segment", "GPU reserved segments", _fmt_count),
               ("inactive_split", "Non-releasable allocs", _fmt_count))
    pools = (("all", None),) if abbreviated else (("all", None), ("large_pool", "      from large pool"),
                                                  ("small_pool", "      from small pool"))
    for key, title, fmt in metrics:
        lines.append(rule)
        for pool, label in pools:
            vals = [stats.get(f"{key}.{pool}.{f}", 0) for f in ("current", "peak", "allocated", "freed")]
            name = title if label is None else label
            lines.append(row([f" {name:<21} "] + [f" {fmt(v, v):<10} " for v in vals]))
    lines.append(thick)
    return "\n".join(lines) + "\n"
