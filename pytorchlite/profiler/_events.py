"""Profiler events as PyTorch's profiler returns them: FunctionEvent (one call, with its
place in the call tree of its thread), FunctionEventAvg (calls grouped by key) and
EventList (with key_averages, total_average and table)."""

import bisect

from pytorchlite._intercept import site_of
from pytorchlite.profiler._recorder import dims_as_lists
from pytorchlite.autograd.graph import _ACCUMULATE_SEQ

__all__ = ["FunctionEvent", "FunctionEventAvg", "EventList", "build_events"]

MEMORY_EVENT_NAME = "[memory]"


def format_time(time_us):
    """PyTorch's _format_time: 1.234s, 12.345ms or 123.456us."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def format_time_share(time_us, total_us):
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def format_memory(nbytes):
    """PyTorch's _format_memory: '1.50 KB', '2.00 MB', '12 B' (powers of 1024)."""
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:
        return f"{nbytes / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes / kb:.2f} KB"
    return f"{nbytes} B"


class _Formatted:
    """The *_str properties PyTorch's events have."""

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def device_time(self):
        return 0.0 if self.count == 0 else self.device_time_total / self.count

    cuda_time = device_time

    @property
    def self_cpu_time_total_str(self):
        return format_time(self.self_cpu_time_total)

    @property
    def cpu_time_total_str(self):
        return format_time(self.cpu_time_total)

    @property
    def cpu_time_str(self):
        return format_time(self.cpu_time)

    @property
    def device_time_total_str(self):
        return format_time(self.device_time_total)

    @property
    def self_device_time_total_str(self):
        return format_time(self.self_device_time_total)

    @property
    def device_time_str(self):
        return format_time(self.device_time)

    @property
    def self_cuda_time_total(self):
        return self.self_device_time_total

    @property
    def cuda_time_total(self):
        return self.device_time_total


class FunctionEvent(_Formatted):
    """One recorded call: `name`, `thread` (native thread id), `time_range` start/end in
    microseconds since the profiler started, `cpu_children`/`cpu_parent` on its thread,
    input shapes and types (record_shapes), the autograd `sequence_nr` (-1 when it made no
    node), memory allocated while it ran (profile_memory), and the device time of the CUDA
    kernels it launched. `cat` is the Chrome-trace category (cpu_op, user_annotation,
    kernel)."""

    def __init__(self, id, name, thread, start_us, end_us, cat="cpu_op", input_shapes=None, input_types=None,
                 sequence_nr=-1, is_backward=False, stack=None, device_type="cpu", device_index=-1,
                 stream=None):
        self.id = id
        self.name = name
        self.key = name
        self.trace_name = name
        self.thread = thread
        self.start_us = start_us
        self.end_us = end_us
        self.cat = cat
        self.input_shapes = [] if input_shapes is None else input_shapes
        self.input_types = [] if input_types is None else input_types
        self.sequence_nr = sequence_nr
        self.is_backward = is_backward
        self.stack = stack or []
        self.device_type = device_type
        self.device_index = device_index
        self.stream = stream
        self.cpu_children = []
        self.cpu_parent = None
        self.kernels = []
        self.process = None          # another process's pid (a DataLoader worker's row)
        self.process_name = None
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_device_memory_usage = 0
        self.count = 1
        self.node_id = -1
        self.is_async = False
        self.is_user_annotation = cat == "user_annotation"
        self.overload_name = ""
        self.flops = 0

    @property
    def time_range(self):
        return _Interval(self.start_us, self.end_us)

    @property
    def cpu_time_total(self):
        return 0.0 if self.device_type != "cpu" else self.end_us - self.start_us

    @property
    def self_cpu_time_total(self):
        if self.device_type != "cpu":
            return 0.0
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_device_time_total(self):
        if self.device_type != "cpu":
            return self.end_us - self.start_us
        return sum(k.end_us - k.start_us for k in self.kernels)

    @property
    def device_time_total(self):
        if self.device_type != "cpu":
            return self.end_us - self.start_us
        return self.self_device_time_total + sum(c.device_time_total for c in self.cpu_children)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
                f"cpu_time_total={self.cpu_time_total_str} self_cpu_time_total={self.self_cpu_time_total_str} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class _Interval:
    __slots__ = ("start", "end")

    def __init__(self, start, end):
        self.start, self.end = start, end

    def elapsed_us(self):
        return self.end - self.start


class FunctionEventAvg(_Formatted):
    """Calls grouped by key (name, and input shapes with group_by_input_shape): totals and
    the number of calls."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = -1
        self.is_async = False
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_device_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_device_memory_usage = 0
        self.input_shapes = None
        self.stack = None
        self.cpu_parent = None
        self.device_type = "cpu"
        self.is_user_annotation = False
        self.overload_name = ""
        self.flops = 0

    def add(self, other):
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.cpu_parent = other.cpu_parent
            self.device_type = other.device_type
            self.is_user_annotation = other.is_user_annotation
        elif other.key != self.key:
            raise ValueError(f"FunctionEventAvg.add(): keys differ ({other.key!r} vs {self.key!r})")
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.device_memory_usage += other.device_memory_usage
        self.self_device_memory_usage += other.self_device_memory_usage
        return self

    __iadd__ = add

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage} count={self.count}>")


class EventList(list):
    """A list of FunctionEvent (or FunctionEventAvg) with PyTorch's summaries."""

    def __init__(self, *args, profile_memory=False, use_device=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._profile_memory = profile_memory
        self._use_device = use_device

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0):
        """One FunctionEventAvg per name (and input shapes / first stack frames when asked),
        in the order each key first appears."""
        groups = {}
        for e in self:
            key = (e.key,)
            if group_by_input_shapes:
                key += (str(e.input_shapes),)
            if group_by_stack_n > 0:
                key += tuple(e.stack[:group_by_stack_n])
            g = groups.get(key)
            if g is None:
                g = groups[key] = FunctionEventAvg()
            g.add(e)
        return EventList(groups.values(), profile_memory=self._profile_memory, use_device=self._use_device)

    def total_average(self):
        """All events summed into one FunctionEventAvg keyed 'Total'."""
        total = FunctionEventAvg()
        total.key = "Total"
        for e in self:
            total.count += e.count
            total.cpu_time_total += e.cpu_time_total
            total.self_cpu_time_total += e.self_cpu_time_total
            total.device_time_total += e.device_time_total
            total.self_device_time_total += e.self_device_time_total
            total.cpu_memory_usage += e.cpu_memory_usage
            total.self_cpu_memory_usage += e.self_cpu_memory_usage
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        """The summary table PyTorch prints (see build_table)."""
        return build_table(self, sort_by=sort_by, row_limit=row_limit, header=header,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width,
                           profile_memory=self._profile_memory, top_level_events_only=top_level_events_only,
                           time_unit=time_unit)

    def __str__(self):
        return self.table()


_SORT_KEYS = ("cpu_time", "device_time", "cuda_time", "cpu_time_total", "device_time_total", "cuda_time_total",
              "self_cpu_time_total", "self_device_time_total", "self_cuda_time_total", "cpu_memory_usage",
              "device_memory_usage", "cuda_memory_usage", "self_cpu_memory_usage", "self_device_memory_usage",
              "self_cuda_memory_usage", "count")


def _time_in(time_us, unit):
    if unit == "s":
        return f"{time_us / 1e6:.3f}s"
    if unit == "ms":
        return f"{time_us / 1e3:.3f}ms"
    if unit == "us":
        return f"{time_us:.3f}us"
    return format_time(time_us)


def build_table(events, sort_by=None, row_limit=100, header=None, max_name_column_width=55,
                max_shapes_column_width=80, profile_memory=False, top_level_events_only=False, time_unit=None):
    """PyTorch's profiler table: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU
    time avg, [device columns], [CPU Mem, Self CPU Mem], # of Calls, [Input Shapes];
    rows sorted by `sort_by` (descending), at most row_limit of them."""
    if len(events) == 0:
        return ""
    if sort_by is not None:
        if sort_by not in _SORT_KEYS:
            raise ValueError(f"table(): sort_by must be one of {', '.join(_SORT_KEYS)}, got {sort_by!r}")
        attr = sort_by.replace("cuda", "device")
        events = sorted(events, key=lambda e: getattr(e, attr), reverse=True)
    if row_limit is not None and row_limit < 0:
        row_limit = None
    has_device_time = any(e.self_device_time_total > 0 for e in events)
    has_device_mem = any(e.self_device_memory_usage != 0 for e in events)
    has_shapes = any(e.input_shapes for e in events)

    name_w = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_w = min(name_w, max_name_column_width)
    shapes_w = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_w = min(shapes_w, max_shapes_column_width)
    w = 12
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if has_device_time:
        headers += ["Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
        if has_device_mem:
            headers += ["CUDA Mem", "Self CUDA Mem"]
    headers.append("# of Calls")
    widths = [name_w] + [w] * (len(headers) - 1)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_w)
    row_format = "".join("{: >" + str(x) + "}  " for x in widths)
    sep = "".join("-" * x + "  " for x in widths)
    line_length = sum(widths) + 2 * (len(widths) - 1)

    total_self_cpu = sum(e.self_cpu_time_total for e in events)
    total_self_dev = sum(e.self_device_time_total for e in events if e.device_type != "cpu")
    out = []
    if header is not None:
        out += ["=" * line_length, header]
    if top_level_events_only:
        out += ["=" * line_length, "This report only display top-level ops statistics"]
    out += [sep, row_format.format(*headers), sep]
    shown = 0
    for e in events:
        if row_limit is not None and shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row = [name, format_time_share(e.self_cpu_time_total, total_self_cpu),
               _time_in(e.self_cpu_time_total, time_unit),
               format_time_share(e.cpu_time_total, total_self_cpu), _time_in(e.cpu_time_total, time_unit),
               _time_in(e.cpu_time, time_unit)]
        if has_device_time:
            row += [_time_in(e.self_device_time_total, time_unit),
                    format_time_share(e.self_device_time_total, total_self_dev),
                    _time_in(e.device_time_total, time_unit), _time_in(e.device_time, time_unit)]
        if profile_memory:
            row += [format_memory(e.cpu_memory_usage), format_memory(e.self_cpu_memory_usage)]
            if has_device_mem:
                row += [format_memory(e.device_memory_usage), format_memory(e.self_device_memory_usage)]
        row.append(e.count)
        if has_shapes:
            shapes = str(e.input_shapes)
            if max_shapes_column_width is not None and len(shapes) >= max_shapes_column_width - 3:
                shapes = shapes[:max_shapes_column_width - 3] + "..."
            row.append(shapes)
        out.append(row_format.format(*row))
    out.append(sep)
    out.append(f"Self CPU time total: {format_time(total_self_cpu)}")
    if has_device_time:
        out.append(f"Self CUDA time total: {format_time(total_self_dev)}")
    return "\n".join(out) + "\n"


# --- from raw records to events ------------------------------------------------------------------

def _op_name(site):
    return "aten::" + site.name + ("_" if site.form == "inplace" else "")


def build_events(rec, kernels_host=None):
    """FunctionEvents from a stopped Recorder: operators, autograd nodes (PyTorch's
    'autograd::engine::evaluate_function: X' around 'X'), ranges, CUDA kernels; children
    found per thread by time, memory attributed to the innermost event running at the
    time of the allocation. Times in microseconds since the recording started."""
    base = rec.start_ns
    us = lambda t: (t - base) / 1000.0   # noqa: E731
    nid = rec.native_id
    spans = []                           # (t0, -t1, order, event)
    n = 0
    for name, cat, tid, t0, t1 in rec.ranges:
        ev = FunctionEvent(0, name, nid(tid), us(t0), us(t1), cat=cat)
        if name.startswith("ProfilerStep#"):
            # PyTorch's tables and events group the steps as one name; the trace keeps each
            ev.name = ev.key = "ProfilerStep*"
        ev.trace_name = name
        spans.append((t0, -t1, n, ev))
        n += 1
    for worker_id, pid, t0, t1 in rec.workers:
        ev = FunctionEvent(0, "DataLoader worker fetch", pid, us(t0), us(t1), cat="user_annotation")
        ev.process = pid
        ev.process_name = f"DataLoader worker {worker_id}"
        spans.append((t0, -t1, n, ev))
        n += 1
    for name, seq, tid, t0, t1 in rec.nodes:
        if seq >= _ACCUMULATE_SEQ:      # AccumulateGrad: made for a leaf, by no forward operator
            seq = -1
        tid = nid(tid)
        outer = FunctionEvent(0, "autograd::engine::evaluate_function: " + name, tid, us(t0), us(t1),
                              sequence_nr=seq, is_backward=True)
        inner = FunctionEvent(0, name, tid, us(t0), us(t1), sequence_nr=seq, is_backward=True)
        spans.append((t0, -t1, n, outer))
        spans.append((t0, -t1, n + 1, inner))
        n += 2
    for key, tid, t0, t1, dims, types, seq, stack in rec.ops:
        ev = FunctionEvent(0, _op_name(site_of(key)), nid(tid), us(t0), us(t1),
                           input_shapes=None if dims is None else dims_as_lists(dims), input_types=types,
                           sequence_nr=-1 if seq is None else seq, stack=stack)
        spans.append((t0, -t1, n, ev))
        n += 1
    spans.sort(key=lambda s: (s[0], s[1], s[2]))
    events = []
    by_thread = {}
    for t0, neg_t1, _, ev in spans:
        ev.id = len(events)
        events.append(ev)
        stack = by_thread.setdefault(ev.thread, [])
        while stack and not (stack[-1][1] >= -neg_t1 and stack[-1][0] <= t0):
            stack.pop()
        if stack:
            parent = stack[-1][2]
            ev.cpu_parent = parent
            parent.cpu_children.append(ev)
        stack.append((t0, -neg_t1, ev))
    # memory: the innermost event of the allocating thread that was running then
    starts = {}
    for ev in events:
        starts.setdefault(ev.thread, []).append(ev)
    keys = {tid: [e.start_us for e in evs] for tid, evs in starts.items()}
    for t, tid, _addr, nbytes, _ta, _tr, dev_type, _idx, _call in rec.memory:
        evs = starts.get(nid(tid))
        if not evs:
            continue
        tu = us(t)
        i = bisect.bisect_right(keys[nid(tid)], tu) - 1
        owner = None
        while i >= 0:
            cand = evs[i]
            # the latest-starting event that contains t, or an ancestor of it that does
            e = cand
            while e is not None and e.end_us < tu:
                e = e.cpu_parent
            if e is not None:
                owner = e
            break
        if owner is None:
            continue
        if dev_type == 0:
            owner.self_cpu_memory_usage += nbytes
        else:
            owner.self_device_memory_usage += nbytes
        e = owner
        while e is not None:
            if dev_type == 0:
                e.cpu_memory_usage += nbytes
            else:
                e.device_memory_usage += nbytes
            e = e.cpu_parent
    # CUDA kernels: each under the host event that launched it
    for k in (kernels_host or ()):
        index, stream, name, start_us, end_us, launch_t, tid = k
        tid = nid(tid)
        kev = FunctionEvent(len(events), name, tid, start_us, end_us, device_type="cuda",
                            cat="gpu_memcpy" if name.startswith("Memcpy ") else "kernel",
                            device_index=index, stream=stream)
        kev.launch_us = us(launch_t)
        evs = starts.get(tid)
        if evs:
            i = bisect.bisect_right(keys[tid], kev.launch_us) - 1
            e = evs[i] if i >= 0 else None
            while e is not None and e.end_us < kev.launch_us:
                e = e.cpu_parent
            if e is not None:
                e.kernels.append(kev)
                kev.cpu_parent = e
        events.append(kev)
    return events
