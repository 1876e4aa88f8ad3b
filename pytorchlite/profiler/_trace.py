"""The Chrome trace JSON PyTorch 2.x writes (Kineto's format), and the memory timeline.

Layout of the trace, as torch.profiler's export_chrome_trace:

    {"schemaVersion": 1, "deviceProperties": [...], "record_shapes": 0|1, "profile_memory": 0|1,
     "displayTimeUnit": "ms", "baseTimeNanoseconds": <epoch ns>, "traceEvents": [...],
     "traceName": <path>}

traceEvents: "M" metadata (process_name, process_labels, thread_name, thread_sort_index),
"X" complete events (ts and dur in microseconds since baseTimeNanoseconds; cat cpu_op,
user_annotation, kernel), "i" instant events named "[memory]" (cat cpu_instant_event),
and "s"/"f" flow pairs (cat fwdbwd) from a forward operator to the backward node it made.
CUDA kernels sit in a process of their own per device (pid = device index), one thread
row per stream, like Kineto's "stream N" rows.
"""

import gzip
import json
import os
import socket

_BASE_ROUND_NS = 1_000_000_000


def trace_dict(prof, path=None):
    rec = prof._recorder
    events = prof.events()
    pid = os.getpid()
    base_wall = rec.start_ns + rec.wall_offset_ns
    base_ns = base_wall - base_wall % _BASE_ROUND_NS
    shift_us = (base_wall - base_ns) / 1000.0       # event times are us since the recording started

    def ts(t_us):
        return round(t_us + shift_us, 3)

    out = []
    meta_ts = ts(0.0)
    out.append({"ph": "M", "name": "process_name", "ts": meta_ts, "pid": pid, "tid": 0, "args": {"name": "python"}})
    out.append({"ph": "M", "name": "process_labels", "ts": meta_ts, "pid": pid, "tid": 0, "args": {"labels": "CPU"}})
    out.append({"ph": "M", "name": "process_sort_index", "ts": meta_ts, "pid": pid, "tid": 0,
                "args": {"sort_index": pid}})
    names = {rec.native_id(ident): name for ident, name in rec.thread_names.items()}
    for proc, pname in sorted({(e.process, e.process_name) for e in events if e.process is not None}):
        out.append({"ph": "M", "name": "process_name", "ts": meta_ts, "pid": proc, "tid": 0,
                    "args": {"name": pname}})
        out.append({"ph": "M", "name": "thread_name", "ts": meta_ts, "pid": proc, "tid": proc,
                    "args": {"name": f"thread {proc} ({pname})"}})
    threads = sorted({e.thread for e in events if e.device_type == "cpu" and e.process is None} |
                     {rec.native_id(m[1]) for m in rec.memory})
    for tid in threads:
        tname = names.get(tid, "python")
        out.append({"ph": "M", "name": "thread_name", "ts": meta_ts, "pid": pid, "tid": tid,
                    "args": {"name": f"thread {tid} ({tname})"}})
        out.append({"ph": "M", "name": "thread_sort_index", "ts": meta_ts, "pid": pid, "tid": tid,
                    "args": {"sort_index": tid}})
    devices = sorted({(e.device_index, e.stream) for e in events if e.device_type == "cuda"})
    for index in sorted({d for d, _ in devices}):
        out.append({"ph": "M", "name": "process_name", "ts": meta_ts, "pid": index, "tid": 0,
                    "args": {"name": "python"}})
        out.append({"ph": "M", "name": "process_labels", "ts": meta_ts, "pid": index, "tid": 0,
                    "args": {"labels": f"GPU {index}"}})
    for index, stream in devices:
        out.append({"ph": "M", "name": "thread_name", "ts": meta_ts, "pid": index, "tid": stream,
                    "args": {"name": f"stream {stream}"}})

    flow_ids = {}
    for ext, e in enumerate(events, 1):
        if e.device_type == "cuda":
            out.append({"ph": "X", "cat": e.cat, "name": e.name, "pid": e.device_index, "tid": e.stream,
                        "ts": ts(e.start_us), "dur": round(e.end_us - e.start_us, 3),
                        "args": {"External id": ext, "device": e.device_index, "stream": e.stream}})
            continue
        args = {"External id": ext}
        seq = e.sequence_nr
        if seq >= 0:
            args["Sequence number"] = seq
            args["Fwd thread id"] = 1 if e.is_backward else 0
        if rec.record_shapes and e.cat == "cpu_op" and not e.is_backward:
            args["Input Dims"] = e.input_shapes
            args["Input type"] = e.input_types
        if e.stack:
            args["Call stack"] = ";".join(e.stack)
        args["Ev Idx"] = ext - 1
        out.append({"ph": "X", "cat": e.cat, "name": e.trace_name, "pid": pid if e.process is None else e.process,
                    "tid": e.thread, "ts": ts(e.start_us),
                    "dur": round(e.end_us - e.start_us, 3), "args": args})
        # the forward op that made node `seq` starts an arrow that ends on the node's own event
        # (the inner one of evaluate_function)
        if seq >= 0:
            if not e.is_backward:
                fid = flow_ids.setdefault(seq, len(flow_ids) + 1)
                out.append({"ph": "s", "id": fid, "pid": pid, "tid": e.thread, "ts": ts(e.start_us),
                            "cat": "fwdbwd", "name": "fwdbwd"})
            elif not e.name.startswith("autograd::engine::") and seq in flow_ids:
                out.append({"ph": "f", "id": flow_ids[seq], "pid": pid, "tid": e.thread, "ts": ts(e.start_us),
                            "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"})
    n = len(events)
    for t, tid, addr, nbytes, total_a, total_r, dev_type, index, call in rec.memory:
        out.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": pid,
                    "tid": rec.native_id(tid),
                    "ts": ts((t - rec.start_ns) / 1000.0),
                    "args": {"Total Reserved": total_r, "Total Allocated": total_a, "Bytes": nbytes,
                             "Device Id": index, "Device Type": dev_type, "Addr": addr,
                             "Allocation call": bool(call), "Ev Idx": n}})
        n += 1
    dur_us = (rec.stop_ns - rec.start_ns) / 1000.0
    out.append({"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler",
                "ts": ts(0.0), "dur": round(dur_us, 3), "args": {"Op count": 0}})
    return {
        "schemaVersion": 1,
        "deviceProperties": _device_properties(prof),
        "record_shapes": int(rec.record_shapes),
        "profile_memory": int(rec.profile_memory),
        "host_name": socket.gethostname(),
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": base_ns,
        "traceEvents": out,
        "traceName": path or "",
    }


def _device_properties(prof):
    if not prof._use_cuda:
        return []
    try:
        import pytorchlite.cuda as cuda
        return [{"id": i, "name": cuda.get_device_name(i)} for i in range(cuda.device_count())]
    except Exception:       # a trace is still written when the device cannot be asked
        return []


def write_json(path, data):
    """Write `data` as JSON to `path`, gzipped when the path ends in .gz."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        json.dump(data, f)
    return path


def export_chrome_trace(prof, path):
    data = trace_dict(prof, path)
    return write_json(path, data)


def memory_timeline(prof, device=None):
    """(times in ns since epoch, bytes allocated) after each allocation and free on one
    device ("cpu" or "cuda:N"; the default is cpu)."""
    rec = prof._recorder
    want_type, want_index = 0, -1
    if device is not None and str(device) != "cpu":
        text = str(device)
        if not text.startswith("cuda"):
            raise ValueError(f"export_memory_timeline(): device must be 'cpu' or 'cuda:N', got {device!r}")
        want_type, want_index = 1, int(text.split(":")[1]) if ":" in text else 0
    times, sizes = [], []
    for t, _tid, _addr, _nbytes, total_a, _tr, dev_type, index, _call in rec.memory:
        if dev_type == want_type and (want_type == 0 or index == want_index):
            times.append(t + rec.wall_offset_ns)
            sizes.append(total_a)
    return times, sizes


def export_memory_timeline(prof, path, device=None):
    """As torch.profiler's export_memory_timeline, by the path's suffix: `.html` a page
    with the plot embedded as PNG (needs matplotlib); `.raw.json.gz` the raw points
    [timestamp ns, action (1 CREATE, 3 DESTROY as torch's Action), bytes, category (None)];
    `.json` / `.json.gz` the timeline [times, [sizes by category]], with one category
    (pytorchlite does not tell parameters from activations): bytes allocated."""
    times, sizes = memory_timeline(prof, device)
    if path.endswith(".html"):
        import base64
        import io
        from pytorchlite.profiler import _plot
        buf = io.BytesIO()
        _plot.memory_figure_from(times, sizes, buf, title=f"Memory timeline ({device or 'cpu'})")
        img = base64.b64encode(buf.getvalue()).decode()
        with open(path, "w", encoding="utf-8") as f:
            f.write("<html><head><meta charset=\"utf-8\" /><title>Memory Timeline HTML</title></head><body>"
                    f"<img src='data:image/png;base64,{img}'></body></html>")
        return path
    if path.endswith("raw.json.gz"):
        data = []
        prev = None
        for t, total in zip(times, sizes):
            if prev is not None:
                data.append([t, 1 if total > prev else 3, abs(total - prev), None])
            prev = total
    elif path.endswith(".json") or path.endswith(".json.gz"):
        data = [times, [[s] for s in sizes]]
    else:
        raise ValueError(f"export_memory_timeline(): path must end in .html, .json, .json.gz or .raw.json.gz, "
                         f"got {path!r}")
    return write_json(path, data)
