"""`pytorchlite.cuda`: devices, streams, events and the caching allocator's memory API,
with torch.cuda's names.

Importing this module never touches the GPU and never fails for lack of one. The first
call that needs a device initialises CUDA lazily; where CUDA cannot be used, that call
raises a RuntimeError that says exactly why (cuda-python missing, no NVIDIA driver, no
device, or a driver older than cuda-python needs), and `_unavailable_reason()` returns the
same words. As in PyTorch, device_count() is 0, manual_seed() is remembered, and the
memory statistics read 0 until CUDA has been initialised.

    >>> import pytorchlite
    >>> pytorchlite.cuda.is_available() in (True, False)
    True
    >>> pytorchlite.cuda.memory_allocated() >= 0
    True
"""

from pytorchlite.cuda import _backend  # noqa: F401  (registers CUDA in the device registry)
from pytorchlite.cuda import _runtime
from pytorchlite.cuda._allocator import OutOfMemoryError, memory_summary as _summary
from pytorchlite.cuda._runtime import (  # noqa: F401
    _lazy_init, _unavailable_reason, current_device, device_count, is_available, is_initialized, set_device,
)
from pytorchlite.cuda.streams import (  # noqa: F401
    Event, Stream, StreamContext, current_stream, default_stream, set_stream, stream,
)

__all__ = ["is_available", "is_initialized", "init", "device_count", "current_device", "set_device", "device",
           "get_device_name", "get_device_capability", "get_device_properties", "synchronize",
           "manual_seed", "manual_seed_all", "initial_seed", "Stream", "Event", "current_stream",
           "default_stream", "set_stream", "stream", "StreamContext", "OutOfMemoryError",
           "memory_stats", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "reset_peak_memory_stats", "reset_accumulated_memory_stats",
           "memory_summary", "memory_snapshot", "empty_cache", "mem_get_info", "caching_allocator_alloc",
           "caching_allocator_delete"]

DEFAULT_SEED = 67280421310721   # the seed of PyTorch's CUDA generators before manual_seed


def init():
    """Initialise CUDA now (otherwise it happens on first use); raises if unavailable."""
    _lazy_init()


class device:
    """Context manager that changes the current device: `with pytorchlite.cuda.device(1):`.
    `device(None)` and negative indices change nothing."""

    def __init__(self, device):
        self.idx = -1 if device is None else _runtime._index(device, optional=False)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx < 0:
            return
        self.prev_idx = current_device()
        if self.prev_idx != self.idx:
            set_device(self.idx)

    def __exit__(self, *exc):
        if self.prev_idx >= 0 and self.prev_idx != self.idx:
            set_device(self.prev_idx)
        return False


class _CudaDeviceProperties:
    __slots__ = ("name", "total_memory", "major", "minor", "multi_processor_count")

    def __init__(self, props):
        for k in self.__slots__:
            setattr(self, k, props[k])

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device=None):
    return _CudaDeviceProperties(_runtime._state(device).backend.properties())


def get_device_name(device=None):
    return get_device_properties(device).name


def get_device_capability(device=None):
    p = get_device_properties(device)
    return p.major, p.minor


def synchronize(device=None):
    """Block the host until all work queued on `device` (default: current) has finished."""
    _runtime._state(device).backend.synchronize()


def manual_seed(seed):
    """Seed the current device's random generator. Like PyTorch, safe to call without CUDA:
    the seed is remembered and applies once CUDA is initialised."""
    seed = int(seed)
    idx = current_device() if is_initialized() else 0
    _runtime._seeds[idx] = seed


def manual_seed_all(seed):
    """Seed the random generators of all devices (remembered when CUDA is not initialised)."""
    _runtime._seeds.clear()
    _runtime._seeds["all"] = int(seed)


def initial_seed():
    """The seed of the current device's generator."""
    idx = current_device()
    return _runtime._seeds.get(idx, _runtime._seeds.get("all", DEFAULT_SEED))


# --- memory API --------------------------------------------------------------------------------

def _allocator(device):
    return _runtime._state(device).allocator


def memory_stats(device=None):
    """The caching allocator's statistics as a flat dict with PyTorch's keys
    ('allocated_bytes.all.current', 'reserved_bytes.large_pool.peak', 'num_ooms', ...);
    empty while CUDA is not initialised."""
    if not is_initialized():
        return {}
    return _allocator(device).memory_stats()


def _stat(device, key):
    return memory_stats(device).get(key, 0)


def memory_allocated(device=None):
    """Bytes held by live tensors on `device` (rounded sizes: empty(1) counts 512)."""
    return _stat(device, "allocated_bytes.all.current")


def max_memory_allocated(device=None):
    """The peak of memory_allocated() since start or reset_peak_memory_stats()."""
    return _stat(device, "allocated_bytes.all.peak")


def memory_reserved(device=None):
    """Bytes the caching allocator holds from the device (allocated plus cached)."""
    return _stat(device, "reserved_bytes.all.current")


def max_memory_reserved(device=None):
    return _stat(device, "reserved_bytes.all.peak")


def reset_peak_memory_stats(device=None):
    """Restart every peak from its current value."""
    if is_initialized():
        _allocator(device).reset_peak_memory_stats()


def reset_accumulated_memory_stats(device=None):
    """Zero the totals allocated/freed and the counters (num_ooms, num_alloc_retries, ...)."""
    if is_initialized():
        _allocator(device).reset_accumulated_memory_stats()


def memory_summary(device=None, abbreviated=False):
    """A readable table of memory_stats(), per pool unless abbreviated."""
    if not is_initialized():
        return _summary({}, 0 if device is None else _runtime._index(device), abbreviated)
    st = _runtime._state(device)
    return _summary(st.allocator.memory_stats(), st.index, abbreviated)


def memory_snapshot(device=None):
    """Every segment of the caching allocator with its blocks (see CachingAllocator.snapshot)."""
    if not is_initialized():
        return []
    return _allocator(device).snapshot()


def empty_cache():
    """Give the cached, wholly free segments of every device back to the driver (memory
    held by live tensors is not affected); a no-op while CUDA is not initialised."""
    if is_initialized():
        for st in _runtime._devices:
            st.allocator.empty_cache()


def mem_get_info(device=None):
    """(free, total) bytes of the device, as the driver reports them."""
    return _runtime._state(device).backend.mem_get_info()


def caching_allocator_alloc(size, device=None, stream=None):
    """Raw memory from the caching allocator: returns the device address."""
    st = _runtime._state(device)
    handle = _runtime.current_stream_handle(st.index) if stream is None else _stream_handle(stream)
    block = st.allocator.malloc(size, handle)
    return 0 if block is None else block.ptr


def caching_allocator_delete(mem_ptr):
    """Free memory from caching_allocator_alloc."""
    _lazy_init()
    if mem_ptr == 0:
        return
    for st in _runtime._devices:
        block = st.allocator._allocated.get(mem_ptr)
        if block is not None:
            st.allocator.free(block)
            return
    raise RuntimeError(f"caching_allocator_delete(): {mem_ptr:#x} was not allocated by the caching allocator")


def _stream_handle(stream):
    return stream.cuda_stream if isinstance(stream, Stream) else int(stream)


# --- entry points the rest of pytorchlite calls ------------------------------------------------

class _BlockRelease:
    """A CUDA Storage's `free` callback: gives its block back to the caching allocator."""

    __slots__ = ("allocator", "block")

    def __init__(self, allocator, block):
        self.allocator = allocator
        self.block = block

    def __call__(self, ptr, nbytes):
        block, self.block = self.block, None
        if block is not None:
            self.allocator.free(block)


def _allocate_storage(nbytes, device):
    """A Storage of `nbytes` on a CUDA device, from the caching allocator, on the current
    stream (Storage.allocate calls this for every non-CPU device)."""
    from pytorchlite._device import device as _device_cls
    from pytorchlite._storage import Storage
    st = _runtime._state(device)
    dev = _device_cls("cuda", st.index)
    if nbytes == 0:
        return Storage(0, 0, dev)       # like PyTorch: no memory, a null pointer
    block = st.allocator.malloc(nbytes, _runtime.current_stream_handle(st.index))
    return Storage(block.ptr, nbytes, dev, free=_BlockRelease(st.allocator, block))


def _record_stream(tensor, stream):
    """Tensor.record_stream: the tensor's memory is used by work on `stream`, so the
    allocator must not reuse it before that work has finished."""
    _lazy_init()
    release = getattr(tensor._storage, "_free", None)
    if isinstance(release, _BlockRelease) and release.block is not None:
        release.allocator.record_stream(release.block, _stream_handle(stream))


def _copy(dst, src, non_blocking=False):
    """dst[...] = src where one side is on a CUDA device (not yet run on a GPU: see
    pytorchlite/cuda/_pointwise.py)."""
    _lazy_init()
    from pytorchlite.cuda import _pointwise
    return _pointwise.copy(dst, src, non_blocking)


def _run_pointwise(op, operands, scalars, out, inplace, common, out_dt, device):
    """The CUDA entry for generated pointwise operators: the kernels of
    generated/pointwise.cu (not yet run on a GPU: see pytorchlite/cuda/_pointwise.py)."""
    _lazy_init()
    from pytorchlite.cuda import _pointwise
    return _pointwise.run_pointwise(op, operands, scalars, out, inplace, common, out_dt, device)


def _dlpack_sync(t, stream):
    """Make the consumer's `stream` (a DLPack stream integer) wait for the work queued on
    our current stream, so a consumer never reads `t` before it is written. PyTorch's
    rules: None or -1 means no synchronisation, 1 the legacy default stream."""
    _lazy_init()
    if stream is not None and (not isinstance(stream, int) or isinstance(stream, bool)):
        raise TypeError("stream must be ``int`` or ``none``")
    if stream is None or stream == -1:
        return
    st = _runtime._state(t.device)
    consumer = st.backend.default_stream() if stream == 1 else stream
    producer = _runtime.current_stream_handle(st.index)
    if consumer == producer:
        return
    be = st.backend
    event = be.event_create()
    be.event_record(event, producer)
    be.stream_wait_event(consumer, event)
    be.event_destroy(event)   # legal: the wait captured the event's state when it was queued
