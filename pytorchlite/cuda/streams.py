"""CUDA streams and events (torch.cuda.Stream / Event / current_stream / stream).

A Stream is a queue of GPU work on one device; work on different streams may overlap.
Each thread has a current stream per device (the device's default stream until changed
with `with pytorchlite.cuda.stream(s):`); ops and the caching allocator use it. Streams
and events are integer handles of the device's backend, so the same classes run over the
real driver and over the allocator's FakeBackend in tests.

    >>> import pytorchlite
    >>> if pytorchlite.cuda.is_available():
    ...     s = pytorchlite.cuda.Stream()
    ...     with pytorchlite.cuda.stream(s):
    ...         assert pytorchlite.cuda.current_stream() == s
"""

from pytorchlite.cuda import _runtime

__all__ = ["Stream", "Event", "current_stream", "default_stream", "set_stream", "stream", "StreamContext"]


class Stream:
    """A CUDA stream on `device` (default: the current device), taken round-robin from a
    per-device pool like PyTorch's; `priority` follows CUDA (lower is more urgent)."""

    __slots__ = ("device_index", "cuda_stream", "priority")

    def __init__(self, device=None, priority=0):
        st = _runtime._state(device)
        self.device_index = st.index
        self.priority = priority
        self.cuda_stream = st.pooled_stream(priority)

    @classmethod
    def _wrap(cls, device_index, handle, priority=0):
        s = object.__new__(cls)
        s.device_index, s.cuda_stream, s.priority = device_index, handle, priority
        return s

    @property
    def device(self):
        from pytorchlite._device import device
        return device("cuda", self.device_index)

    @property
    def stream_id(self):
        return self.cuda_stream

    def _backend(self):
        return _runtime._state(self.device_index).backend

    def query(self):
        """Whether all work queued on this stream has finished."""
        return self._backend().stream_query(self.cuda_stream)

    def synchronize(self):
        """Block the host until all work queued on this stream has finished."""
        self._backend().stream_synchronize(self.cuda_stream)

    def record_event(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event):
        """Make later work on this stream wait for `event` (the host does not block)."""
        event.wait(self)

    def wait_stream(self, stream):
        """Make later work on this stream wait for the work queued on `stream` so far."""
        self.wait_event(stream.record_event())

    def __eq__(self, other):
        return (isinstance(other, Stream) and self.device_index == other.device_index
                and self.cuda_stream == other.cuda_stream)

    def __hash__(self):
        return hash((self.device_index, self.cuda_stream))

    def __repr__(self):
        return f"<pytorchlite.cuda.Stream device=cuda:{self.device_index} cuda_stream={self.cuda_stream:#x}>"


class Event:
    """A marker in a stream's work: record() it, then query(), synchronize() on it, make
    another stream wait() for it, or time the work between two with elapsed_time()."""

    __slots__ = ("enable_timing", "blocking", "_device_index", "_handle", "_backend", "__weakref__")

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise NotImplementedError("Event(interprocess=True) is not supported by pytorchlite")
        _runtime._lazy_init()  # the handle itself is created on first record, on that stream's device
        self.enable_timing = enable_timing
        self.blocking = blocking
        self._device_index = None
        self._handle = None
        self._backend = None

    def record(self, stream=None):
        stream = current_stream() if stream is None else stream
        if self._handle is None:
            self._backend = stream._backend()
            self._device_index = stream.device_index
            self._handle = self._backend.event_create(self.enable_timing)
        elif stream.device_index != self._device_index:
            raise RuntimeError(f"Event device cuda:{stream.device_index} does not match recording stream's "
                               f"device cuda:{self._device_index}.")
        self._backend.event_record(self._handle, stream.cuda_stream)

    def query(self):
        """Whether the work before the last record() has finished (True if never recorded)."""
        return self._handle is None or self._backend.event_query(self._handle)

    def synchronize(self):
        if self._handle is not None:
            self._backend.event_synchronize(self._handle)

    def wait(self, stream=None):
        stream = current_stream() if stream is None else stream
        if self._handle is not None:
            stream._backend().stream_wait_event(stream.cuda_stream, self._handle)

    def elapsed_time(self, end_event):
        """Milliseconds between this event and `end_event` (both recorded with timing)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._handle is None or end_event._handle is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return self._backend.event_elapsed_time(self._handle, end_event._handle)

    @property
    def cuda_event(self):
        return self._handle

    def __del__(self):
        handle, backend = getattr(self, "_handle", None), getattr(self, "_backend", None)
        if handle is not None and backend is not None:
            self._handle = None
            try:
                backend.event_destroy(handle)
            except Exception:  # at interpreter exit the driver may already be gone
                pass

    def __repr__(self):
        return f"<pytorchlite.cuda.Event {self._handle if self._handle is not None else 'uninitialized'}>"


def current_stream(device=None):
    """This thread's current stream on `device` (default: the current device)."""
    st = _runtime._state(device)
    return Stream._wrap(st.index, _runtime.current_stream_handle(st.index))


def default_stream(device=None):
    st = _runtime._state(device)
    return Stream._wrap(st.index, st.backend.default_stream())


def set_stream(stream):
    """Make `stream` the current stream of its device for this thread."""
    if stream is None:
        return
    _runtime.set_stream_handle(stream.device_index, stream.cuda_stream)


class StreamContext:
    """`with stream(s):` makes s the current stream (and its device the current device),
    restoring both on exit; `stream(None)` does nothing."""

    def __init__(self, stream):
        self.stream = stream
        self._saved = None

    def __enter__(self):
        s = self.stream
        if s is None:
            return None
        prev_device = _runtime.current_device()
        prev_stream = _runtime.current_stream_handle(s.device_index)
        self._saved = (prev_device, s.device_index, prev_stream)
        _runtime.set_device(s.device_index)
        set_stream(s)
        return s

    def __exit__(self, *exc):
        if self._saved is not None:
            prev_device, index, prev_stream = self._saved
            self._saved = None
            _runtime.set_stream_handle(index, prev_stream)
            _runtime.set_device(prev_device)
        return False


def stream(stream):
    """Context manager selecting a stream: `with pytorchlite.cuda.stream(s): ...`."""
    return StreamContext(stream)
