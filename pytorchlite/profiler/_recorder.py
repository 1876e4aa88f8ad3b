"""The recorder: what the profiler sees while it records, kept as cheap raw tuples.

Sources, each a hook that costs nothing (or one test) while no recorder is active:

* operators: an interception handler (pytorchlite._intercept) around every binding call;
* autograd nodes: the engine's node observer (autograd/engine.py `set_node_observer`);
* user ranges, optimizer steps, DataLoader fetches: `record_function`, which checks one
  module global (`_active`) and does nothing when it is None;
* CPU memory: the allocation/free functions of pytorchlite._storage are swapped for
  recording ones while memory is profiled (storages made then free through them);
* CUDA memory and kernels: the observers of pytorchlite.cuda._allocator and
  pytorchlite.cuda._launch, set only when the CUDA backend is already imported.

Recording appends one tuple per event; names, shapes and the event tree are worked out
when the recording stops (`Recorder.finish`), so the hot path stays near 1 us an event.
"""

import os
import sys
import threading
import time

from pytorchlite import _intercept, _storage, generated as _generated
from pytorchlite._C import ffi as _ffi, lib as _lib
from pytorchlite._core import TensorBase
from pytorchlite._tensor import Tensor as _Tensor
from pytorchlite.autograd import engine as _engine, graph as _graph

_pc = time.perf_counter_ns
# Events carry the thread's Python ident (a C call of some 60 ns); the native id the trace
# shows costs a gettid system call (600 ns here), so it is looked up once per thread at stop.
_tid = threading.get_ident

_active = None      # the Recorder that is recording, or None (read by record_function)

# PyTorch's spelling of dtypes in "Input type" (c10's ScalarType names as the C++ types print)
_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
               "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
               "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
               "complex128": "c10::complex<double>"}


def type_name(dtype):
    return _TYPE_NAMES.get(dtype.name, dtype.name)


def describe_inputs(args):
    """("Input Dims", "Input type") of an operator's arguments, as PyTorch records them:
    a tensor's sizes and dtype, a number as Scalar, a list of numbers as ScalarList, a list
    of tensors as their sizes and TensorList, anything else (None, a dtype) as []/"".
    Sizes are kept as the tensors' (immutable) size tuples; `dims_as_lists` turns them into
    lists when the recording is read."""
    dims, types = [], []
    for a in args:
        if isinstance(a, TensorBase):
            dims.append(a._shape)
            dt = a._dtype
            types.append(_TYPE_BY_DTYPE.get(dt) or _type_of(dt))
        elif a is None:
            dims.append(())
            types.append("")
        elif isinstance(a, (bool, int, float, complex)):
            dims.append(())
            types.append("Scalar")
        elif isinstance(a, (list, tuple)) and a and all(isinstance(x, TensorBase) for x in a):
            dims.append([x._shape for x in a])
            types.append("TensorList")
        elif isinstance(a, (list, tuple)) and all(isinstance(x, (bool, int, float)) for x in a):
            dims.append(())
            types.append("ScalarList")
        else:
            dims.append(())
            types.append("")
    return dims, types


_TYPE_BY_DTYPE = {}


def _type_of(dtype):
    name = _TYPE_BY_DTYPE[dtype] = type_name(dtype)
    return name


def dims_as_lists(dims):
    """The recorded sizes as PyTorch's nested lists."""
    return [[list(x) for x in d] if isinstance(d, list) else list(d) for d in dims]


# CPU memory: while a recording profiles memory, Storage.allocate uses these two (and the
# storages it makes keep _free_recorded as their free function: after the recording it
# costs them one global test). They report to `_mem_sink`, the recording's event function.
_mem_sink = None


def _alloc_recorded(nbytes, _raw=_lib.ptl_alloc_addr):
    p = _raw(nbytes)
    sink = _mem_sink
    if p and sink is not None:
        sink(p, nbytes)
    return p


def _free_recorded(p, nbytes, _raw=_lib.ptl_free_addr):
    # the C function is a default argument: storages freed at interpreter exit, after this
    # module's globals were cleared, still reach it
    _raw(p, nbytes)
    sink = _mem_sink
    if sink is not None:
        sink(p, -nbytes)


def _set_mem_sink(sink):
    global _mem_sink
    _mem_sink = sink


_MISSING = object()


def _grad_fn_of(res):
    if isinstance(res, TensorBase):
        return res._grad_fn
    if isinstance(res, tuple) and res and isinstance(res[0], TensorBase):
        return res[0]._grad_fn
    return None


class Recorder:
    """One recording: start() installs the hooks, stop() removes them; `ops`, `nodes`,
    `ranges`, `memory` and `kernels` hold the raw events (nanoseconds of perf_counter)."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False, cuda=False):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.cuda = cuda
        # raw events
        self.ops = []          # (Site.key, tid, t0, t1, dims, types, seq, stack)
        self.nodes = []        # (name, seq, tid, t0, t1)
        self.ranges = []       # (name, cat, tid, t0, t1)
        self.workers = []      # (DataLoader worker id, pid, t0, t1) of each batch fetched in a worker
        self.memory = []       # (t, tid, addr, bytes, total_allocated, total_reserved, device_type, index, call)
        self.kernels = []      # (device index, stream, name, start event, end event, launch t, tid)
        self._cuda_refs = {}   # device index -> (backend, reference event, host t)
        self.thread_names = {}   # thread ident -> name
        self.native_ids = {}     # thread ident -> native id
        self.start_ns = self.stop_ns = None
        self.wall_offset_ns = 0
        self._claimed = set()
        self._handler = None
        self._saved_alloc = None
        self._cuda_hooks = None
        self._prev_thread_profile = None

    # -- operators ----------------------------------------------------------------------------
    def _make_handler(self):
        append = self.ops.append
        claimed = self._claimed
        first_seq = next(_graph._sequence)      # nodes made before the recording are not ours
        pc, tid = _pc, _tid
        shapes = self.record_shapes
        stack = self.with_stack
        missing = _MISSING

        def seq_of(res):
            # the innermost operator whose result carries a node made during the recording
            # created it (a composite returns its last part's node: that part claims it first)
            fn = getattr(res, "_grad_fn", missing)
            if fn is missing:
                fn = _grad_fn_of(res)
            if fn is not None:
                s = fn._seq
                if s >= first_seq and s not in claimed:
                    claimed.add(s)
                    return s
            return None

        # Events hold the site's key, not the Site: a tuple of plain values leaves the
        # garbage collector's lists, so a long recording does not slow every collection.
        def on_op(site, args, run):
            t0 = pc()
            try:
                res = run(args)
            except BaseException:
                append((site.key, tid(), t0, pc(), None, None, None, None))
                raise
            t1 = pc()
            fn = getattr(res, "_grad_fn", None)
            append((site.key, tid(), t0, t1, None, None, seq_of(res) if fn is not None or
                    res.__class__ is not _Tensor else None, None))
            return res

        def on_op_detailed(site, args, run):
            dims, types = describe_inputs(args) if shapes else (None, None)
            where = _python_stack() if stack else None
            t0 = pc()
            try:
                res = run(args)
            except BaseException:
                append((site.key, tid(), t0, pc(), dims, types, None, where))
                raise
            t1 = pc()
            append((site.key, tid(), t0, t1, dims, types, seq_of(res), where))
            return res

        return on_op_detailed if (shapes or stack) else on_op

    # -- autograd nodes -----------------------------------------------------------------------
    def node_begin(self, node):
        return _pc()

    def node_end(self, node, t0):
        if type(node) is not _graph.GraphRoot:    # the engine's own start, not a node of the graph
            self.nodes.append((node.name(), node._seq, _tid(), t0, _pc()))

    # -- DataLoader worker processes ---------------------------------------------------------
    def worker_span(self, worker_id, pid, t0, t1):
        """A batch fetched by a DataLoader worker process (perf_counter_ns is the system's
        monotonic clock, shared by the processes of one machine): a row of its own."""
        if self.recording:
            self.workers.append((worker_id, pid, t0, t1))

    # -- memory -------------------------------------------------------------------------------
    def _install_cpu_memory(self):
        global _mem_sink
        buf = _ffi.new("int64_t[6]")
        stats = _lib.ptl_allocator_stats
        append = self.memory.append
        pc, tid = _pc, _tid

        def totals():
            stats(buf)
            return buf[0], buf[0] + buf[2]

        reserved = [totals()[1]]

        def sink(p, nbytes):
            a, r = totals()
            # an allocation that made the allocator hold more reached the system allocator
            append((pc(), tid(), p, nbytes, a, r, 0, -1, nbytes > 0 and r > reserved[0]))
            reserved[0] = r

        self._saved_alloc = (_storage._alloc_addr, _storage._free_addr)
        _storage._alloc_addr, _storage._free_addr = _alloc_recorded, _free_recorded
        _mem_sink = sink

    def cuda_alloc(self, allocator, block, device_call):
        if self.recording:
            self.memory.append((_pc(), _tid(), block.ptr, block.size, allocator.memory_allocated(),
                                allocator.memory_reserved(), 1, allocator.backend.device_index, device_call))

    def cuda_free(self, allocator, block):
        if self.recording:
            self.memory.append((_pc(), _tid(), block.ptr, -block.size, allocator.memory_allocated(),
                                allocator.memory_reserved(), 1, allocator.backend.device_index, False))

    # -- CUDA kernels (through CUDA events; NOT YET RUN ON A GPU) ------------------------------
    # Each launch gets a timing event recorded on its stream before and after it. A device's
    # first launch records a reference event on an idle device and notes the host clock, so
    # that at stop() every kernel's start and end (cuEventElapsedTime from the reference)
    # become host times: the device lanes of the trace line up with the host thread's.
    def kernel_begin(self, launcher, kernel, stream):
        index = launcher.index
        ref = self._cuda_refs.get(index)
        if ref is None:
            be = _cuda_backend(index)
            be.synchronize()
            ev = be.event_create(True)
            be.event_record(ev, be.default_stream())
            be.event_synchronize(ev)
            ref = self._cuda_refs[index] = (be, ev, _pc())
        be = ref[0]
        start = be.event_create(True)
        be.event_record(start, stream)
        return (start, _pc())

    def kernel_end(self, launcher, kernel, stream, token):
        be = self._cuda_refs[launcher.index][0]
        end = be.event_create(True)
        be.event_record(end, stream)
        self.kernels.append((launcher.index, stream, kernel, token[0], end, token[1], _tid()))

    def device_kernels(self):
        """(device, stream, kernel name, start us, end us, launch ns, thread) of every kernel,
        in microseconds since the recording started (waits for the device)."""
        out = []
        for index, stream, name, start, end, launch_t, tid in self.kernels:
            be, ref, t_ref = self._cuda_refs[index]
            be.event_synchronize(end)
            ref_us = (t_ref - self.start_ns) / 1000.0
            s_us = ref_us + be.event_elapsed_time(ref, start) * 1000.0
            e_us = ref_us + be.event_elapsed_time(ref, end) * 1000.0
            out.append((index, stream, name, s_us, e_us, launch_t, tid))
        return out

    def release_device_events(self):
        for index, _stream, _name, start, end, _t, _tid in self.kernels:
            be = self._cuda_refs[index][0]
            be.event_destroy(start)
            be.event_destroy(end)
        for be, ref, _t in self._cuda_refs.values():
            be.event_destroy(ref)
        self.kernels = []
        self._cuda_refs = {}

    # -- start / stop -------------------------------------------------------------------------
    recording = False

    def start(self):
        global _active
        if _active is not None:
            raise RuntimeError("Profiler is already enabled on this thread")
        self.wall_offset_ns = time.time_ns() - _pc()
        self._watch_threads()
        self._handler = self._make_handler()
        if self.profile_memory:
            self._install_cpu_memory()
        if self.cuda:
            self._cuda_hooks = _install_cuda(self)
        self.recording = True
        self.start_ns = _pc()
        _intercept.install(self._handler)
        _engine.set_node_observer(self)
        _active = self

    def stop(self):
        global _active
        if not self.recording:
            return
        self.stop_ns = _pc()
        self.recording = False
        _active = None
        _engine.set_node_observer(None)
        _intercept.uninstall(self._handler)
        if self._saved_alloc is not None:
            _storage._alloc_addr, _storage._free_addr = self._saved_alloc
            self._saved_alloc = None
            _set_mem_sink(None)
        if self._cuda_hooks is not None:
            self._cuda_hooks()
            self._cuda_hooks = None
        threading.setprofile(self._prev_thread_profile)
        self._note_threads()

    def _note_threads(self):
        for t in threading.enumerate():
            if t.ident is not None:
                self.native_ids[t.ident] = t.native_id if t.native_id is not None else t.ident
                self.thread_names.setdefault(t.ident, t.name)

    def _watch_threads(self):
        """Note the native id and name of every thread: those running now, and (through
        threading.setprofile, whose function a new thread calls once as it starts and then
        drops) those started while recording, which may end before stop()."""
        self._note_threads()
        prev = self._prev_thread_profile = threading.getprofile()
        rec = self

        def note_new_thread(frame, event, arg):
            sys.setprofile(prev)
            t = threading.current_thread()
            rec.native_ids[t.ident] = t.native_id if t.native_id is not None else t.ident
            rec.thread_names[t.ident] = t.name
            if prev is not None:
                return prev(frame, event, arg)

        threading.setprofile(note_new_thread)

    def native_id(self, ident):
        """The operating system's id of a thread seen while recording (its Python ident if
        it ended before the recording stopped)."""
        return self.native_ids.get(ident, ident)


# pytorchlite's own frames (the package, and generated/ wherever codegen put it)
_OWN_DIRS = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
             os.path.dirname(os.path.abspath(_generated.__file__)) + os.sep)


def _python_stack(limit=8):
    """file(line): function of the Python frames that called the operator (pytorchlite's
    own frames left out), innermost first."""
    f = sys._getframe(2)
    out = []
    while f is not None and len(out) < limit:
        co = f.f_code
        if not co.co_filename.startswith(_OWN_DIRS):
            out.append(f"{co.co_filename}({f.f_lineno}): {co.co_name}")
        f = f.f_back
    return out


def _cuda_backend(index):
    from pytorchlite.cuda import _runtime
    return _runtime._state(index).backend


def _install_cuda(rec):
    """Set the CUDA allocator's and launcher's observers if the backend is loaded; returns
    the function that removes them."""
    alloc_mod = sys.modules.get("pytorchlite.cuda._allocator")
    launch_mod = sys.modules.get("pytorchlite.cuda._launch")
    if alloc_mod is not None and rec.profile_memory:
        alloc_mod.observer = rec
    if launch_mod is not None:
        launch_mod.observer = rec

    def remove():
        if alloc_mod is not None and alloc_mod.observer is rec:
            alloc_mod.observer = None
        if launch_mod is not None and launch_mod.observer is rec:
            launch_mod.observer = None
    return remove


class record_function:
    """A named range in the profile (torch.profiler.record_function / torch.autograd.
    profiler.record_function): a context manager, and a decorator. With no profiler
    recording it costs one global test.

    >>> from pytorchlite.profiler import profile, record_function
    >>> with profile() as prof:
    ...     with record_function("my_block"):
    ...         y = pytorchlite.ones(2) + 1
    >>> [e.name for e in prof.events()][:2]
    ['my_block', 'aten::ones']
    """

    def __init__(self, name, args=None):
        if not isinstance(name, str):
            raise TypeError(f"record_function(): argument 'name' must be str, not {type(name).__name__}")
        self.name = name
        self.args = args
        self._rec = None
        self._t0 = 0
        self.cat = "user_annotation"

    def __enter__(self):
        rec = _active
        if rec is not None:
            self._rec = rec
            self._t0 = _pc()
        return self

    def __exit__(self, *exc):
        rec = self._rec
        if rec is not None:
            self._rec = None
            if rec.recording:
                rec.ranges.append((self.name, self.cat, _tid(), self._t0, _pc()))
        return False

    def __call__(self, fn):
        import functools
        name, cat = self.name, self.cat

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            rec = _active
            if rec is None:
                return fn(*args, **kwargs)
            t0 = _pc()
            try:
                return fn(*args, **kwargs)
            finally:
                if rec.recording:
                    rec.ranges.append((name, cat, _tid(), t0, _pc()))
        return wrapper


def is_recording():
    return _active is not None
