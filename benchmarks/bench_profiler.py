"""What the profiler costs, against PyTorch's: the goals of issue 14.

* no profiler: an operator binding pays at most 50 ns for the interception hook. Measured
  two ways: the binding `neg` as generated (with its `if _ix.on and _ix.claim()` line)
  against the same function compiled without that line (main before interception), and
  the flag test alone; plus a record_function with no profiler (optimizer steps and
  DataLoader fetches pay that) and the engine's per-node observer test;
* profiler recording: at most 1.5 us per event on top of the operator: `neg` on 16
  elements inside `profile()` minus outside, per recorded event, for pytorchlite and for
  torch.profiler in the same run (with record_shapes, and with profile_memory as well).

    python benchmarks/bench_profiler.py
"""

from __future__ import annotations

import inspect
import os
import statistics
import sys
import textwrap
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import CLOCK, CLOCK_NAME, setup_threads  # noqa: E402

CALLS = 5000
REPEAT = 7


def per_call(fn, calls=CALLS, repeat=REPEAT):
    """Median nanoseconds per call of fn() (each repeat runs it `calls` times)."""
    for _ in range(calls // 10):
        fn()
    samples = []
    for _ in range(repeat):
        t0 = CLOCK()
        for _ in range(calls):
            fn()
        samples.append((CLOCK() - t0) / calls)
    return statistics.median(samples)


def binding_without_hook(fn):
    """The generated binding recompiled without its interception line: the binding as it
    was before interception existed."""
    src = textwrap.dedent(inspect.getsource(fn))
    lines = [ln for ln in src.splitlines() if "_ix.on and _ix.claim()" not in ln]
    if len(lines) == len(src.splitlines()):
        raise RuntimeError(f"{fn.__name__}: no interception line found in the generated binding")
    ns = {}
    exec(compile("\n".join(lines), f"<{fn.__name__} without hook>", "exec"), fn.__globals__, ns)
    return ns[fn.__name__]


def main():
    ptl, torch, np = setup_threads(1)
    from pytorchlite import _intercept
    from pytorchlite.generated import functions as gen
    from pytorchlite.profiler import ProfilerActivity, profile, record_function

    a = ptl.ones(16)
    hooked = gen.neg
    plain = binding_without_hook(gen.neg)
    assert plain(a).tolist() == hooked(a).tolist()

    # --- no profiler --------------------------------------------------------------------------
    rows = []
    t_hooked, t_plain = [], []
    for _ in range(3):                       # interleaved: machine load hits both alike
        t_hooked.append(per_call(lambda: hooked(a)))
        t_plain.append(per_call(lambda: plain(a)))
    th, tp = statistics.median(t_hooked), statistics.median(t_plain)
    ix = _intercept

    def flag():
        if ix.on and ix.claim():
            return 1

    def empty():
        return None

    t_flag = per_call(flag, calls=200_000) - per_call(empty, calls=200_000)
    obs = None

    def node_test():
        if obs is not None:
            return 1

    t_node = per_call(node_test, calls=200_000) - per_call(empty, calls=200_000)

    def rf():
        with record_function("x"):
            pass

    t_rf = per_call(rf, calls=100_000)
    rows += [("neg(16 floats), binding as generated, no profiler", th, None),
             ("neg(16 floats), same binding without the hook line", tp, None),
             ("  difference: the hook's cost per operator call", th - tp, None),
             ("  the flag test alone (`if _ix.on and _ix.claim()`)", t_flag, None),
             ("  the engine's per-node observer test (x2 per node)", t_node, None),
             ("record_function enter+exit, no profiler", t_rf, None)]

    # --- profiler on: per event ------------------------------------------------------------------
    def ptl_event_cost(**kw):
        off = per_call(lambda: ptl.neg(a))
        with profile(activities=[ProfilerActivity.CPU], **kw) as prof:
            on = per_call(lambda: ptl.neg(a))
        n_calls = CALLS * REPEAT + CALLS // 10
        per_call_events = sum(1 for e in prof.events() if e.name.startswith("aten::")) / n_calls
        return on, off, per_call_events

    def torch_event_cost(**kw):
        ta = torch.ones(16)
        off = per_call(lambda: torch.neg(ta))
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], **kw) as prof:
            on = per_call(lambda: torch.neg(ta))
        n_calls = CALLS * REPEAT + CALLS // 10
        per_call_events = sum(1 for e in prof.events() if e.name.startswith("aten::")) / n_calls
        return on, off, per_call_events

    prof_rows = []
    for label, kw in (("profile()", {}), ("profile(record_shapes=True)", {"record_shapes": True}),
                      ("profile(record_shapes=True, profile_memory=True)",
                       {"record_shapes": True, "profile_memory": True})):
        on, off, k = ptl_event_cost(**kw)
        mine = ((on - off) / k, on, off, k)
        theirs = None
        if torch is not None:
            t_on, t_off, tk = torch_event_cost(**kw)
            theirs = ((t_on - t_off) / tk, t_on, t_off, tk)
        prof_rows.append((label, mine, theirs))

    clock = "" if CLOCK_NAME == "wall" else ", thread CPU time"
    print(f"\n## profiler: cost with no profiler  (median, 1 thread{clock}; ns per call)")
    w = max(len(r[0]) for r in rows)
    for name, v, _ in rows:
        print(f"{name.ljust(w)} | {v:8.1f} ns")
    print(f"goal: the hook costs <= 50 ns per operator call: {'met' if max(th - tp, t_flag) <= 50 else 'NOT met'}")

    print(f"\n## profiler: cost per recorded event  (median, 1 thread{clock}; 'x torch' = pytorchlite / torch, "
          "lower is better)")
    head = ("case", "pytorchlite us/event", "torch us/event", "x torch", "neg() on/off us (ptl)",
            "neg() on/off us (torch)")
    table = []
    for label, mine, theirs in prof_rows:
        ratio = "-" if theirs is None else f"{mine[0] / theirs[0]:.2f}x"
        table.append((label, f"{mine[0] / 1000:.2f}", "-" if theirs is None else f"{theirs[0] / 1000:.2f}", ratio,
                      f"{mine[1] / 1000:.2f}/{mine[2] / 1000:.2f}",
                      "-" if theirs is None else f"{theirs[1] / 1000:.2f}/{theirs[2] / 1000:.2f}"))
    widths = [max(len(str(r[i])) for r in [head] + table) for i in range(len(head))]
    print(" | ".join(h.ljust(wd) if i == 0 else h.rjust(wd) for i, (h, wd) in enumerate(zip(head, widths))))
    print("-+-".join("-" * wd for wd in widths))
    for r in table:
        print(" | ".join(c.ljust(wd) if i == 0 else c.rjust(wd) for i, (c, wd) in enumerate(zip(r, widths))))
    worst = max(m[0] for _, m, _ in prof_rows[:1])
    print(f"goal: <= 1.5 us per event (plain profile()): {'met' if worst <= 1500 else 'NOT met'} "
          f"({worst / 1000:.2f} us)")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"\n({time.perf_counter() - t0:.0f} s)")
