"""Pictures of a Chrome trace (matplotlib, the `examples` extra): the two figures of the
PyTorch paper.

* timeline: one lane per host thread and per device stream over time, events drawn as
  bars nested by depth (a flame chart per lane), steps marked; with a GPU it shows the
  host running ahead of the device (the paper's Figure 1);
* memory: bytes allocated (and reserved) over time per device, with the calls that went
  to the system or device allocator marked: with a caching allocator they vanish after
  the first iteration (the paper's Figure 2).

    python -m pytorchlite.profiler plot trace.json -o timeline.png [--memory memory.png]
"""

import gzip
import json

_DEVICE_CATS = ("kernel", "gpu_memcpy")   # events on a device stream's lane
_COLORS = {"cpu_op": "#4c72b0", "user_annotation": "#dd8452", "kernel": "#55a868", "python_function": "#8172b3",
           "gpu_memcpy": "#c44e52", "backward": "#937860"}


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ImportError("plotting a trace needs matplotlib: pip install 'pytorchlite[examples]' "
                          "(or pip install matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def load_trace(path):
    """The JSON object of a Chrome trace file (gzipped when it ends in .gz)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    if isinstance(data, list):      # the bare-array form of the format
        data = {"traceEvents": data}
    if not isinstance(data, dict) or "traceEvents" not in data:
        raise ValueError(f"{path}: not a Chrome trace (no 'traceEvents')")
    return data


def _lanes(events):
    """{(pid, tid): [X events]} for threads and streams, with a display name each."""
    names, procs, lanes = {}, {}, {}
    for e in events:
        if e.get("ph") == "M":
            if e.get("name") == "thread_name":
                names[(e["pid"], e["tid"])] = e["args"]["name"]
            elif e.get("name") == "process_labels":
                procs[e["pid"]] = e["args"]["labels"]
        elif e.get("ph") == "X" and e.get("cat") != "Trace" and isinstance(e.get("pid"), int):
            lanes.setdefault((e["pid"], e["tid"]), []).append(e)
    out = []
    for key in sorted(lanes, key=lambda k: (lanes[k][0].get("cat") in _DEVICE_CATS, k)):
        evs = lanes[key]
        label = names.get(key, f"tid {key[1]}")
        if evs[0].get("cat") in _DEVICE_CATS:
            label = f"{procs.get(key[0], 'GPU')} {label}"
        out.append((label, evs))
    return out


def _depths(evs):
    """The nesting depth of each event of one lane."""
    order = sorted(range(len(evs)), key=lambda i: (evs[i]["ts"], -evs[i]["dur"]))
    depth = [0] * len(evs)
    stack = []
    for i in order:
        e = evs[i]
        while stack and stack[-1][0] <= e["ts"]:
            stack.pop()
        depth[i] = len(stack)
        stack.append((e["ts"] + e["dur"], i))
    return depth


def timeline_figure(trace, path, max_depth=4, title=None):
    """Draw the host-thread and device-stream lanes of `trace` (a loaded trace) into `path`."""
    plt = _pyplot()
    events = trace["traceEvents"]
    lanes = _lanes(events)
    if not lanes:
        raise ValueError("the trace has no complete ('X') events to draw")
    t0 = min(e["ts"] for _, evs in lanes for e in evs)
    rows = []                 # (lane label, depth, events)
    for label, evs in lanes:
        depth = _depths(evs)
        for d in range(min(max(depth) + 1, max_depth)):
            rows.append((label if d == 0 else "", [e for e, k in zip(evs, depth) if k == d]))
    fig, ax = plt.subplots(figsize=(12, 1.0 + 0.35 * len(rows)))
    for y, (_label, evs) in enumerate(rows):
        for cat in sorted({e.get("cat", "") for e in evs}):
            bars = [((e["ts"] - t0) / 1000.0, max(e["dur"], 0.0) / 1000.0) for e in evs if e.get("cat", "") == cat]
            ax.broken_barh(bars, (y - 0.4, 0.8), facecolors=_COLORS.get(cat, "#999999"), edgecolor="none",
                           label=cat)
    steps = sorted((e["ts"], e["name"]) for e in events
                   if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"))
    for ts, _name in steps:
        ax.axvline((ts - t0) / 1000.0, color="k", lw=0.6, ls=":")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r[0] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("time (ms)")
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles))
    ax.legend(uniq.values(), uniq.keys(), loc="upper right", fontsize=8)
    ax.set_title(title or "host threads and device streams over time" +
                 (" (dotted lines: ProfilerStep)" if steps else ""))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _memory_series(events):
    """{device label: (times ms, allocated, reserved, [times ms of allocation calls])}."""
    series = {}
    mem = sorted((e for e in events if e.get("ph") == "i" and e.get("name") == "[memory]"), key=lambda e: e["ts"])
    if not mem:
        return series, 0.0
    xs = [e["ts"] for e in events if e.get("ph") == "X" and isinstance(e.get("pid"), int)]
    t0 = min(xs + [mem[0]["ts"]])
    for e in mem:
        a = e["args"]
        label = "CPU" if a.get("Device Type", 0) == 0 else f"cuda:{a.get('Device Id', 0)}"
        s = series.setdefault(label, ([], [], [], []))
        t = (e["ts"] - t0) / 1000.0
        s[0].append(t)
        s[1].append(a.get("Total Allocated", 0))
        s[2].append(a.get("Total Reserved", 0))
        if a.get("Allocation call") and a.get("Bytes", 0) > 0:
            s[3].append((t, a.get("Total Allocated", 0)))
    return series, t0


def memory_figure(trace, path, title=None):
    """Draw memory in use over time (per device) with the allocator's calls marked."""
    plt = _pyplot()
    series, t0 = _memory_series(trace["traceEvents"])
    if not series:
        raise ValueError("the trace has no memory events: profile with profile_memory=True")
    fig, axes = plt.subplots(len(series), 1, figsize=(10, 3.2 * len(series)), squeeze=False)
    steps = sorted(e["ts"] for e in trace["traceEvents"]
                   if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"))
    for ax, (label, (ts, alloc, reserved, calls)) in zip(axes[:, 0], sorted(series.items())):
        mib = 1 / (1 << 20)
        ax.step(ts, [a * mib for a in alloc], where="post", label="allocated")
        ax.step(ts, [r * mib for r in reserved], where="post", ls="--", label="reserved")
        if calls:
            ax.plot([c[0] for c in calls], [c[1] * mib for c in calls], "rv", ms=4,
                    label=f"allocator calls ({len(calls)})")
        for s in steps:
            ax.axvline((s - t0) / 1000.0, color="k", lw=0.6, ls=":")
        ax.set_ylabel(f"{label} memory (MiB)")
        ax.legend(loc="upper right", fontsize=8)
    axes[-1, 0].set_xlabel("time (ms)")
    axes[0, 0].set_title(title or "memory in use over time (markers: calls that reached the system allocator)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def memory_figure_from(times_ns, sizes, out, title="Memory timeline"):
    """A plain memory-over-time plot from (times ns, bytes) (export_memory_timeline's .html)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 3.5))
    if times_ns:
        t0 = times_ns[0]
        ax.step([(t - t0) / 1e6 for t in times_ns], [s / (1 << 20) for s in sizes], where="post")
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("memory (MiB)")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(out, format="png", dpi=100)
    plt.close(fig)


def plot(trace_path, out, memory_out=None, max_depth=4):
    """Write the timeline PNG to `out` and, when the trace has memory events, the memory PNG
    to `memory_out` (default: `out` with `_memory` before the suffix). Returns the paths."""
    trace = load_trace(trace_path)
    written = [timeline_figure(trace, out, max_depth=max_depth)]
    series, _ = _memory_series(trace["traceEvents"])
    if series:
        if memory_out is None:
            stem, dot, ext = str(out).rpartition(".")
            memory_out = f"{stem}_memory.{ext}" if dot else f"{out}_memory"
        written.append(memory_figure(trace, memory_out))
    return written
