"""CUDA runtime state: whether CUDA can be used (and exactly why not), lazy initialisation,
the current device per thread, and one caching allocator per device.

Nothing here touches the GPU at import time. The first call that needs a device goes
through _lazy_init(), which probes cuda-python's driver API and either builds a
_DriverBackend per device or raises a RuntimeError naming the step that failed:

    >>> from pytorchlite.cuda import _runtime
    >>> _runtime.is_available() in (True, False)      # never raises
    True
"""

import contextlib
import threading

from pytorchlite.cuda._allocator import CachingAllocator, DeviceBackend, DeviceOutOfMemory

INSTALL_HINT = "pip install -e '.[cuda]'"

# CUresult codes the probe explains (the rest are named by the bindings themselves)
_CUDA_ERROR_OUT_OF_MEMORY = 2
_CUDA_ERROR_STUB_LIBRARY = 34
_CUDA_ERROR_INSUFFICIENT_DRIVER = 35
_CUDA_ERROR_NO_DEVICE = 100
_CUDA_ERROR_NOT_READY = 600


# --- probing ---------------------------------------------------------------------------------

def _import_driver():
    """cuda-python's driver module, or None when cuda-python is not installed
    (PTL_CUDA_EMULATOR=1: the CPU stand-in of _emulator.py, for testing without a GPU)."""
    from pytorchlite.cuda import _emulator
    if _emulator.enabled():
        return _emulator.driver()
    try:
        from cuda.bindings import driver
        return driver
    except ImportError:
        pass
    try:
        from cuda import cuda as driver   # cuda-python < 12.6 spelled it this way
        return driver
    except ImportError:
        return None


def _bindings_version():
    """(major, minor) of the installed cuda-python bindings, or None if unknown."""
    for mod in ("cuda.bindings", "cuda"):
        try:
            v = __import__(mod, fromlist=["__version__"]).__version__
            major, minor = (int(x) for x in v.split(".")[:2])
            return major, minor
        except Exception:  # no version attribute or an odd one: the check is then skipped
            continue
    return None


def _err_name(err):
    name = getattr(err, "name", None)
    return f"{int(err)} ({name})" if name else str(int(err))


class _Probe:
    """The result of probing the driver once: `reason` is None when CUDA is usable."""

    def __init__(self, driver=None, reason=None, count=0):
        self.driver = driver
        self.reason = reason
        self.count = count


def _probe():
    driver = _import_driver()
    if driver is None:
        return _Probe(reason=f"cuda-python is not installed ({INSTALL_HINT})")
    try:
        (err,) = driver.cuInit(0)
    except Exception as e:  # cuda.pathfinder raises DynamicLibNotFoundError without libcuda.so
        return _Probe(reason=f"no NVIDIA driver found (libcuda could not be loaded: {type(e).__name__}: {e})")
    code = int(err)
    if code in (_CUDA_ERROR_INSUFFICIENT_DRIVER, _CUDA_ERROR_STUB_LIBRARY) or code == 0:
        mismatch = _version_mismatch(driver)
        if mismatch:
            return _Probe(reason=mismatch)
    if code == _CUDA_ERROR_STUB_LIBRARY:
        return _Probe(reason="no NVIDIA driver found (only the CUDA stub library libcuda.so was loaded)")
    if code == _CUDA_ERROR_NO_DEVICE:
        return _Probe(reason="no CUDA device (cuInit reported CUDA_ERROR_NO_DEVICE; check CUDA_VISIBLE_DEVICES)")
    if code != 0:
        return _Probe(reason=f"cuInit(0) failed with CUresult {_err_name(err)}")
    err, count = driver.cuDeviceGetCount()
    if int(err) != 0:
        return _Probe(reason=f"cuDeviceGetCount failed with CUresult {_err_name(err)}")
    if count == 0:
        return _Probe(reason="no CUDA device (the NVIDIA driver reports 0 devices)")
    return _Probe(driver=driver, count=count)


def _version_mismatch(driver):
    """A reason string when the driver is older than the CUDA version cuda-python targets."""
    try:
        err, version = driver.cuDriverGetVersion()
    except Exception:  # the driver could not even say its version: cuInit's code speaks
        return None
    wanted = _bindings_version()
    if int(err) != 0 or wanted is None:
        return None
    have = (version // 1000, version % 1000 // 10)
    if have[0] < wanted[0]:
        return (f"version mismatch: cuda-python {wanted[0]}.{wanted[1]} needs an NVIDIA driver for CUDA "
                f"{wanted[0]}.0 or newer, but the installed driver supports CUDA {have[0]}.{have[1]} "
                f"(update the driver, or install cuda-python {have[0]}.x)")
    return None


_probe_lock = threading.Lock()
_probed = None


def _get_probe():
    global _probed
    with _probe_lock:
        if _probed is None:
            try:
                _probed = _probe()
            except Exception as e:  # a probe must never take the caller down
                _probed = _Probe(reason=f"probing CUDA failed ({type(e).__name__}: {e})")
        return _probed


def _unavailable_reason():
    """Why CUDA cannot be used here, in words; None when it can."""
    if _devices is not None:
        return None
    return _get_probe().reason


def is_available():
    """Whether a CUDA device can be used. Never raises."""
    try:
        return _unavailable_reason() is None
    except Exception:
        return False


# --- the real backend ------------------------------------------------------------------------

class _DriverBackend(DeviceBackend):
    """DeviceBackend over cuda-python's driver API for one device (its primary context)."""

    def __init__(self, driver, index):
        self.d = driver
        self.device_index = index
        self.dev = self._ok(driver.cuDeviceGet(index), "cuDeviceGet")
        self.ctx = self._ok(driver.cuDevicePrimaryCtxRetain(self.dev), "cuDevicePrimaryCtxRetain")
        self._props = None

    def _ok(self, result, what):
        err, *rest = result
        if int(err) != 0:
            raise RuntimeError(f"CUDA error: {what} failed with CUresult {_err_name(err)} "
                               f"(device {self.device_index})")
        return rest[0] if len(rest) == 1 else (tuple(rest) if rest else None)

    def _current(self):
        # the driver API acts on the thread's current context
        self._ok(self.d.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")

    def malloc(self, size):
        self._current()
        err, ptr = self.d.cuMemAlloc(size)
        if int(err) == _CUDA_ERROR_OUT_OF_MEMORY:
            raise DeviceOutOfMemory(size)
        self._ok((err,), "cuMemAlloc")
        return int(ptr)

    def free(self, ptr):
        self._current()
        self._ok(self.d.cuMemFree(self.d.CUdeviceptr(ptr)), "cuMemFree")

    def mem_get_info(self):
        self._current()
        free, total = self._ok(self.d.cuMemGetInfo(), "cuMemGetInfo")
        return int(free), int(total)

    def event_create(self, enable_timing=False):
        self._current()
        flags = 0 if enable_timing else int(self.d.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        return int(self._ok(self.d.cuEventCreate(flags), "cuEventCreate"))

    def event_record(self, event, stream):
        self._ok(self.d.cuEventRecord(self.d.CUevent(event), self.d.CUstream(stream)), "cuEventRecord")

    def event_query(self, event):
        (err,) = self.d.cuEventQuery(self.d.CUevent(event))
        if int(err) == _CUDA_ERROR_NOT_READY:
            return False
        self._ok((err,), "cuEventQuery")
        return True

    def event_synchronize(self, event):
        self._ok(self.d.cuEventSynchronize(self.d.CUevent(event)), "cuEventSynchronize")

    def event_destroy(self, event):
        self._ok(self.d.cuEventDestroy(self.d.CUevent(event)), "cuEventDestroy")

    def event_elapsed_time(self, start, end):
        return float(self._ok(self.d.cuEventElapsedTime(self.d.CUevent(start), self.d.CUevent(end)),
                              "cuEventElapsedTime"))

    def stream_create(self, priority=0):
        self._current()
        flags = int(self.d.CUstream_flags.CU_STREAM_NON_BLOCKING)
        return int(self._ok(self.d.cuStreamCreateWithPriority(flags, priority), "cuStreamCreateWithPriority"))

    def stream_query(self, stream):
        (err,) = self.d.cuStreamQuery(self.d.CUstream(stream))
        if int(err) == _CUDA_ERROR_NOT_READY:
            return False
        self._ok((err,), "cuStreamQuery")
        return True

    def stream_synchronize(self, stream):
        self._ok(self.d.cuStreamSynchronize(self.d.CUstream(stream)), "cuStreamSynchronize")

    def stream_wait_event(self, stream, event):
        self._ok(self.d.cuStreamWaitEvent(self.d.CUstream(stream), self.d.CUevent(event), 0), "cuStreamWaitEvent")

    def synchronize(self):
        self._current()
        self._ok(self.d.cuCtxSynchronize(), "cuCtxSynchronize")

    def properties(self):
        if self._props is None:
            d, dev = self.d, self.dev
            raw = self._ok(d.cuDeviceGetName(256, dev), "cuDeviceGetName")
            attr = d.CUdevice_attribute

            def get(a):
                return int(self._ok(d.cuDeviceGetAttribute(a, dev), "cuDeviceGetAttribute"))

            self._props = {
                "name": bytes(raw).split(b"\0", 1)[0].decode("utf-8", "replace"),
                "total_memory": int(self._ok(d.cuDeviceTotalMem(dev), "cuDeviceTotalMem")),
                "major": get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                "minor": get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
                "multi_processor_count": get(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
            }
        return self._props


# --- per-device state ------------------------------------------------------------------------

class _DeviceState:
    """One device: its backend, its caching allocator and its pool of created streams."""

    STREAMS_PER_PRIORITY = 32   # PyTorch hands out streams round-robin from a pool of 32

    def __init__(self, index, backend):
        self.index = index
        self.backend = backend
        self.allocator = CachingAllocator(backend)
        self.stream_pool = {}   # priority -> list of stream handles
        self.stream_next = {}   # priority -> next index to hand out

    def pooled_stream(self, priority):
        """A stream from the pool. Streams are never destroyed: the allocator keys its free
        lists by stream handle, and a recycled handle would let one stream take memory
        that another stream's queued work still uses."""
        pool = self.stream_pool.setdefault(priority, [])
        i = self.stream_next.get(priority, 0)
        self.stream_next[priority] = (i + 1) % self.STREAMS_PER_PRIORITY
        if i == len(pool):
            pool.append(self.backend.stream_create(priority))
        return pool[i]


_devices = None               # list of _DeviceState once initialised
_init_lock = threading.RLock()
_tls = threading.local()      # .device (int), .streams ({device index: stream handle})
_seeds = {}                   # device index -> seed from manual_seed (kept for the RNG kernels)


def _lazy_init():
    """Initialise CUDA on first use, or raise RuntimeError saying exactly why it cannot."""
    global _devices
    if _devices is not None:
        return
    with _init_lock:
        if _devices is not None:
            return
        probe = _get_probe()
        if probe.reason is not None:
            raise RuntimeError(f"CUDA unavailable: {probe.reason}")
        _devices = [_DeviceState(i, _DriverBackend(probe.driver, i)) for i in range(probe.count)]


def is_initialized():
    return _devices is not None


@contextlib.contextmanager
def _install_backends(backends):
    """Run the CUDA runtime over the given DeviceBackends (one per device) instead of the
    driver, then restore the previous state. This is how the allocator, streams and the
    memory API are tested on machines without a GPU (with FakeBackend)."""
    global _devices
    with _init_lock:
        saved = _devices, getattr(_tls, "device", None), getattr(_tls, "streams", None)
        _devices = [_DeviceState(i, b) for i, b in enumerate(backends)]
        _tls.device, _tls.streams = 0, {}
    try:
        yield _devices
    finally:
        with _init_lock:
            _devices, _tls.device, _tls.streams = saved


def device_count():
    """The number of usable CUDA devices; 0 (never an error) when CUDA is unavailable."""
    if _devices is not None:
        return len(_devices)
    probe = _get_probe()
    return probe.count if probe.reason is None else 0


def _index(device, optional=True):
    """A device index from None (the current device), an int, 'cuda:1' or a device."""
    from pytorchlite._device import device as _device_cls
    if device is None:
        if optional:
            return current_device()
        raise ValueError("Expected a cuda device, but got: None")
    if isinstance(device, str):
        device = _device_cls(device)
    if isinstance(device, _device_cls):
        if device.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
        if device.index is None:
            return current_device()
        device = device.index
    if not isinstance(device, int) or isinstance(device, bool):
        raise ValueError(f"Expected a cuda device, but got: {device!r}")
    return device


def _state(device=None):
    """The _DeviceState for a device argument, initialising CUDA first."""
    _lazy_init()
    i = _index(device)
    if not 0 <= i < len(_devices):
        raise RuntimeError(f"CUDA error: invalid device ordinal {i} (this machine has {len(_devices)} "
                           f"CUDA device{'s' if len(_devices) != 1 else ''})")
    return _devices[i]


def current_device():
    _lazy_init()
    return getattr(_tls, "device", 0)


def set_device(device):
    """Make `device` the current device of this thread (negative indices are ignored)."""
    i = _index(device, optional=False) if device is not None else -1
    if i < 0:
        return
    _tls.device = _state(i).index


def current_stream_handle(device=None):
    st = _state(device)
    streams = getattr(_tls, "streams", None)
    if streams is None:
        streams = _tls.streams = {}
    return streams.get(st.index, st.backend.default_stream())


def set_stream_handle(index, handle):
    streams = getattr(_tls, "streams", None)
    if streams is None:
        streams = _tls.streams = {}
    streams[index] = handle
