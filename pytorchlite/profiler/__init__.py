"""pytorchlite.profiler: where a program spends its time and memory (torch.profiler's API).

    >>> from pytorchlite.profiler import profile, record_function, ProfilerActivity
    >>> x = pytorchlite.ones(4, 3, requires_grad=True)
    >>> with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    ...     with record_function("forward"):
    ...         y = (x * 2).sum()
    ...     y.backward()
    >>> names = [e.key for e in prof.key_averages()]
    >>> "aten::mul" in names and "autograd::engine::evaluate_function: SumBackward0" in names
    True

What is recorded: every operator call from the generated bindings (`aten::<ops.yaml name>`,
with input shapes and dtypes when record_shapes=True), each autograd node the engine runs
(`autograd::engine::evaluate_function: <Node>` around `<Node>`, linked to the forward
operator that made it by its sequence number), user ranges (`record_function`), optimizer
steps (`Optimizer.step#SGD.step`), DataLoader fetches
(`enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`; with workers, each worker
process's fetches in a row of its own), `ProfilerStep#N` with a
schedule, memory allocations and frees (profile_memory=True; CPU allocator and the CUDA
caching allocator), and CUDA kernels and host<->device copies (`Memcpy HtoD (Pageable ->
Device)`, category `gpu_memcpy`) timed by CUDA events (not yet run on a GPU).

`prof.key_averages().table(sort_by="self_cpu_time_total")` prints PyTorch's table;
`prof.export_chrome_trace("trace.json")` writes a trace for Perfetto / chrome://tracing;
`python -m pytorchlite.profiler plot trace.json -o timeline.png` draws it.
"""

import enum
import os
import warnings

from pytorchlite.profiler import _events, _recorder, _trace
from pytorchlite.profiler._events import EventList, FunctionEvent, FunctionEventAvg
from pytorchlite.profiler._recorder import record_function

__all__ = ["profile", "record_function", "schedule", "ProfilerAction", "ProfilerActivity",
           "tensorboard_trace_handler", "EventList", "FunctionEvent", "FunctionEventAvg", "supported_activities"]


class ProfilerActivity(enum.Enum):
    """What a profile collects: host-side events (CPU) and device kernels (CUDA)."""
    CPU = 0
    CUDA = 2

    def __repr__(self):
        return f"<ProfilerActivity.{self.name}: {self.value}>"


class ProfilerAction(enum.Enum):
    """What the profiler does at a step (the value a schedule returns)."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def _cuda_available():
    try:
        import pytorchlite.cuda as cuda
        return cuda.is_available()
    except Exception:           # no driver, no cuda-python: profile the host only
        return False


def supported_activities():
    """The activities this build can collect: CPU, and CUDA when a device is available."""
    acts = {ProfilerActivity.CPU}
    if _cuda_available():
        acts.add(ProfilerActivity.CUDA)
    return acts


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """A schedule for `profile(schedule=...)`, as torch.profiler.schedule: skip the first
    `skip_first` steps, then cycles of `wait` idle steps, `warmup` steps and `active`
    recorded steps (the last of which is RECORD_AND_SAVE: on_trace_ready is called after
    it), `repeat` cycles (0: until the profiler stops).

    >>> from pytorchlite.profiler import schedule
    >>> s = schedule(wait=1, warmup=1, active=2)
    >>> [s(i).name for i in range(5)]
    ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
    """
    for name, v in (("wait", wait), ("warmup", warmup), ("active", active), ("repeat", repeat),
                    ("skip_first", skip_first), ("skip_first_wait", skip_first_wait)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"schedule(): argument '{name}' must be int, not {type(v).__name__}")
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod = step % num_steps
        if mod < wait:
            return ProfilerAction.NONE
        if mod < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _default_schedule(_step):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An on_trace_ready that writes each trace as `<dir_name>/<worker>.<ns>.pt.trace.json`
    (TensorBoard's profiler plugin and Perfetto read it)."""
    import socket
    import time

    def handler_fn(prof):
        nonlocal worker_name
        try:
            os.makedirs(dir_name, exist_ok=True)
        except OSError as e:
            raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker_name}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))

    return handler_fn


class profile:
    """Profiler context manager (torch.profiler.profile).

    activities: ProfilerActivity.CPU and/or .CUDA (default: CPU, and CUDA when a device is
    available); schedule: a callable step -> ProfilerAction (see `schedule`), with
    `prof.step()` called at the end of each step; on_trace_ready: called with the profiler
    after each RECORD_AND_SAVE step (and at stop when recording); record_shapes: input
    shapes and dtypes of every operator; profile_memory: allocations and frees;
    with_stack: the Python frames (file(line): function) of each operator call."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False, use_cuda=None):
        if activities is None:
            activities = supported_activities()
        try:
            activities = set(activities)
        except TypeError:
            raise TypeError(f"profile(): argument 'activities' must be an iterable of ProfilerActivity, not "
                            f"{type(activities).__name__}") from None
        for a in activities:
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"profile(): argument 'activities' must hold ProfilerActivity values, got "
                                f"{type(a).__name__}")
        if use_cuda:
            activities.add(ProfilerActivity.CUDA)
        if not activities:
            raise AssertionError("No valid profiler activities found")
        if schedule is not None and not callable(schedule):
            raise TypeError(f"profile(): argument 'schedule' must be callable, not {type(schedule).__name__}")
        if on_trace_ready is not None and not callable(on_trace_ready):
            raise TypeError(f"profile(): argument 'on_trace_ready' must be callable, not "
                            f"{type(on_trace_ready).__name__}")
        self.activities = activities
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.with_stack = bool(with_stack)
        self.with_flops = bool(with_flops)
        self.with_modules = bool(with_modules)
        self._use_cuda = ProfilerActivity.CUDA in activities
        self.use_device = "cuda" if self._use_cuda else None
        self.on_trace_ready = on_trace_ready
        if schedule is not None:
            self.schedule = schedule
            self.record_steps = True
        else:
            self.schedule = _default_schedule
            self.record_steps = False
        self.step_num = 0
        self.step_rec_fn = None
        self.current_action = self.schedule(self.step_num)
        self._recorder = None       # the recording in progress or last finished
        self._events = None
        A = ProfilerAction
        prep, start, stop, ready = self.prepare_trace, self.start_trace, self.stop_trace, self._trace_ready

        def warn(msg):
            return lambda: warnings.warn(msg, stacklevel=3)

        self.action_map = {
            (A.NONE, A.NONE): [], (A.NONE, A.WARMUP): [prep], (A.NONE, A.RECORD): [prep, start],
            (A.NONE, A.RECORD_AND_SAVE): [prep, start],
            (A.WARMUP, A.NONE): [warn("Incorrect schedule: WARMUP followed by NONE"), start, stop],
            (A.WARMUP, A.WARMUP): [], (A.WARMUP, A.RECORD): [start], (A.WARMUP, A.RECORD_AND_SAVE): [start],
            (A.RECORD, A.NONE): [warn("Incorrect schedule: RECORD followed by NONE"), stop],
            (A.RECORD, A.WARMUP): [warn("Incorrect schedule: RECORD followed by WARMUP"), stop],
            (A.RECORD, A.RECORD): [], (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [stop, ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [stop, ready, prep],
            (A.RECORD_AND_SAVE, A.RECORD): [stop, ready, prep, start],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [stop, ready, prep, start],
            (A.WARMUP, None): [start, stop], (A.RECORD, None): [stop, ready],
            (A.RECORD_AND_SAVE, None): [stop, ready],
        }

    # -- the schedule -------------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()
        return False

    def start(self):
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def stop(self):
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit_action(self.current_action, None)

    def step(self):
        """Signal that the next step starts (call it at the end of each training step)."""
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        if not isinstance(self.current_action, ProfilerAction):
            raise TypeError(f"profile(): the schedule returned {self.current_action!r} for step {self.step_num}; "
                            "expected a ProfilerAction")
        self._transit_action(prev, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def _transit_action(self, prev, current):
        for action in self.action_map.get((prev, current), ()):
            action()

    def _trace_ready(self):
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # -- one recording ------------------------------------------------------------------------
    def prepare_trace(self):
        self._recorder = _recorder.Recorder(self.record_shapes, self.profile_memory, self.with_stack,
                                            cuda=self._use_cuda and _cuda_available())
        self._events = None

    def start_trace(self):
        if self._recorder is None or self._recorder.start_ns is not None:
            self.prepare_trace()
        self._recorder.start()

    def stop_trace(self):
        rec = self._recorder
        if rec is None or not rec.recording:
            return
        rec.stop()
        kernels = rec.device_kernels() if rec.kernels else ()
        events = _events.build_events(rec, kernels)
        rec.release_device_events()
        self._events = EventList(events, profile_memory=self.profile_memory, use_device=self.use_device)

    # -- results ------------------------------------------------------------------------------
    def events(self):
        """Every event of the last recording (an EventList of FunctionEvent, in start order)."""
        if self._events is None:
            raise AssertionError("Profiler must be initialized before getting the events: use it as a context "
                                 "manager or call start()/stop() and let it record")
        return self._events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        """Events grouped by name (and input shapes, the first stack frames): an EventList of
        FunctionEventAvg whose .table() prints PyTorch's summary."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path):
        """Write the trace JSON PyTorch 2.x writes (Perfetto, chrome://tracing); `.gz` compresses."""
        self.events()
        return _trace.export_chrome_trace(self, path)

    def export_memory_timeline(self, path, device=None):
        """Memory in use over time on one device: .html (a plot), .json/.json.gz ([times,
        [sizes]]), .raw.json.gz; needs profile_memory=True."""
        self.events()
        if not self.profile_memory:
            raise RuntimeError("export_memory_timeline(): the profile has no memory events; "
                               "profile with profile_memory=True")
        return _trace.export_memory_timeline(self, path, device)

    def _memory_timeline(self, device=None):
        return _trace.memory_timeline(self, device)

