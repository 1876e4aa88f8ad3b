"""pytorchlite.profiler: events, tables, the Chrome trace, the schedule (against
torch.profiler's when PyTorch is installed), memory events and the hooks that must cost
nothing when no profiler records."""

import collections
import gzip
import importlib
import json
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _intercept, _storage
from pytorchlite.autograd import engine
from pytorchlite.profiler import (ProfilerAction, ProfilerActivity, profile, record_function, schedule,
                                  tensorboard_trace_handler)
from pytorchlite.profiler import _events, _recorder

CPU = [ProfilerActivity.CPU]


def _train_step(model, opt, x, target):
    opt.zero_grad()
    loss = ((model(x) - target) ** 2).mean()
    loss.backward()
    opt.step()
    return loss


def _model():
    ptl.manual_seed(0)
    model = ptl.nn.Sequential(ptl.nn.Linear(3, 4), ptl.nn.ReLU(), ptl.nn.Linear(4, 1))
    return model, ptl.optim.SGD(model.parameters(), lr=0.1)


def _profiled_step(**kwargs):
    model, opt = _model()
    x, t = ptl.randn(8, 3), ptl.randn(8, 1)
    with profile(activities=CPU, **kwargs) as prof:
        with record_function("train_step"):
            _train_step(model, opt, x, t)
    return prof


def _trace(prof, tmp_path, name="trace.json"):
    path = str(tmp_path / name)
    prof.export_chrome_trace(path)
    with open(path) as f:
        return json.load(f)


# --- the trace --------------------------------------------------------------------------------

def test_trace_layout_is_pytorchs(tmp_path):
    data = _trace(_profiled_step(record_shapes=True), tmp_path)
    for key in ("schemaVersion", "traceEvents", "displayTimeUnit", "baseTimeNanoseconds"):
        assert key in data
    evs = data["traceEvents"]
    phases = collections.Counter(e["ph"] for e in evs)
    assert phases["X"] > 10 and phases["M"] >= 3 and phases["s"] == phases["f"] > 0
    names = {(e["name"], e["args"]["name"]) for e in evs if e["ph"] == "M" and e["name"].endswith("_name")}
    assert ("process_name", "python") in names
    assert any(n == "thread_name" and v.startswith("thread ") for n, v in names)
    ops = [e for e in evs if e["ph"] == "X" and e.get("cat") == "cpu_op" and e["name"].startswith("aten::")]
    for e in ops:
        assert isinstance(e["ts"], float) and e["dur"] >= 0
        assert len(e["args"]["Input Dims"]) == len(e["args"]["Input type"])
    addmm = [e for e in ops if e["name"] == "aten::addmm"][0]
    assert addmm["args"]["Input Dims"][:3] == [[4], [8, 3], [3, 4]]
    assert addmm["args"]["Input type"][:3] == ["float", "float", "float"]
    cats = {e["cat"] for e in evs if e["ph"] == "X"}
    assert {"cpu_op", "user_annotation"} <= cats


def test_events_nest_on_each_thread(tmp_path):
    evs = [e for e in _trace(_profiled_step(), tmp_path)["traceEvents"] if e["ph"] == "X" and e["pid"] != "Spans"]
    by_tid = collections.defaultdict(list)
    for e in evs:
        by_tid[e["tid"]].append((e["ts"], e["ts"] + e["dur"], e["name"]))
    for spans in by_tid.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for s, end, name in spans:
            while stack and stack[-1][1] <= s:
                stack.pop()
            if stack:   # contained in the enclosing event, never straddling its end
                assert end <= stack[-1][1] + 1e-3, f"{name} straddles {stack[-1][2]}"
            stack.append((s, end, name))


def test_every_operator_that_ran_appears(tmp_path):
    seen = collections.Counter()

    def count(site, args, run):
        seen["aten::" + site.name + ("_" if site.form == "inplace" else "")] += 1
        return run(args)

    model, opt = _model()
    x, t = ptl.randn(8, 3), ptl.randn(8, 1)
    with profile(activities=CPU) as prof:
        _intercept.install(count)       # below the profiler's handler: sees the same calls
        try:
            _train_step(model, opt, x, t)
        finally:
            _intercept.uninstall(count)
    evs = _trace(prof, tmp_path)["traceEvents"]
    got = collections.Counter(e["name"] for e in evs if e["ph"] == "X" and e["name"].startswith("aten::"))
    assert got == seen and sum(seen.values()) > 10


def test_backward_nodes_link_to_their_forward_op(tmp_path):
    x = ptl.randn(4, 3, requires_grad=True)
    w = ptl.randn(3, 2, requires_grad=True)
    with profile(activities=CPU) as prof:
        y = (x @ w).sigmoid().sum()
        y.backward()
    evs = _trace(prof, tmp_path)["traceEvents"]
    xs = [e for e in evs if e["ph"] == "X"]
    starts = {e["id"]: e for e in evs if e["ph"] == "s"}
    ends = {e["id"]: e for e in evs if e["ph"] == "f"}
    assert set(starts) == set(ends) and len(starts) >= 3
    at = {(e["tid"], e["ts"], e["args"].get("Sequence number")): e["name"] for e in xs
          if "Sequence number" in e["args"] and not e["name"].startswith("autograd::")}
    pairs = set()
    for fid, s in starts.items():
        f = ends[fid]
        assert f["cat"] == s["cat"] == "fwdbwd" and f["bp"] == "e"
        fwd = [e for e in xs if e["ts"] == s["ts"] and e["tid"] == s["tid"] and "Sequence number" in e["args"]]
        bwd = [e for e in xs if e["ts"] == f["ts"] and e["tid"] == f["tid"] and not e["name"].startswith("autograd::")
               and "Sequence number" in e["args"]]
        assert fwd and bwd and fwd[0]["args"]["Sequence number"] == bwd[0]["args"]["Sequence number"]
        pairs.add((fwd[0]["name"], bwd[0]["name"]))
    mm_node = (x @ w).grad_fn.name()
    assert pairs == {("aten::matmul", mm_node), ("aten::sigmoid", "SigmoidBackward0"), ("aten::sum", "SumBackward0")}
    assert at
    names = {e["name"] for e in xs}
    assert "autograd::engine::evaluate_function: SigmoidBackward0" in names
    assert any(n.startswith("autograd::engine::evaluate_function:") and n.endswith("AccumulateGrad") for n in names)


def test_gzip_trace_and_tensorboard_handler(tmp_path):
    prof = _profiled_step()
    path = str(tmp_path / "t.json.gz")
    prof.export_chrome_trace(path)
    with gzip.open(path, "rt") as f:
        assert json.load(f)["schemaVersion"] == 1
    tb = tmp_path / "tb"
    tensorboard_trace_handler(str(tb), worker_name="w")(prof)
    files = list(tb.iterdir())
    assert len(files) == 1 and files[0].name.startswith("w.") and files[0].name.endswith(".pt.trace.json")


# --- named ranges -------------------------------------------------------------------------------

def test_optimizer_and_dataloader_ranges():
    ds = ptl.utils.data.TensorDataset(ptl.randn(6, 3), ptl.randn(6, 1))
    loader = ptl.utils.data.DataLoader(ds, batch_size=3)
    model, opt = _model()
    adam = ptl.optim.Adam(model.parameters())
    with profile(activities=CPU) as prof:
        for x, t in loader:
            _train_step(model, opt, x, t)
        adam.step()
    counts = {e.key: e.count for e in prof.key_averages()}
    assert counts["Optimizer.step#SGD.step"] == 2
    assert counts["Optimizer.step#Adam.step"] == 1
    # two batches, then the fetch that raises StopIteration
    assert counts["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"] == 3
    step = [e for e in prof.events() if e.name == "Optimizer.step#SGD.step"][0]
    assert step.cat == "user_annotation" and any(c.name == "aten::add_" for c in step.cpu_children)


def test_record_function_context_manager_and_decorator():
    @record_function("decorated")
    def f(a):
        return a * 2

    a = ptl.ones(3)
    assert f(a).tolist() == [2.0, 2.0, 2.0]          # no profiler: just runs
    with profile(activities=CPU) as prof:
        with record_function("outer") as rf:
            f(a)
    assert rf.name == "outer"
    evs = prof.events()
    outer = [e for e in evs if e.name == "outer"][0]
    dec = [e for e in evs if e.name == "decorated"][0]
    assert dec.cpu_parent is outer and [c.name for c in dec.cpu_children] == ["aten::mul"]
    assert outer.cat == dec.cat == "user_annotation"
    assert f.__name__ == "f"
    with pytest.raises(TypeError, match="record_function"):
        record_function(3)


def test_no_profiler_records_nothing_and_hooks_are_off():
    raw = (_storage._alloc_addr, _storage._free_addr)
    with profile(activities=CPU, profile_memory=True) as prof:
        assert _intercept.on and engine._node_observer is not None and _recorder._active is not None
        assert _storage._alloc_addr is not raw[0]
    assert not _intercept.on and engine._node_observer is None and _recorder._active is None
    assert (_storage._alloc_addr, _storage._free_addr) == raw
    n = len(prof.events())
    rf = record_function("after")
    with rf:
        y = ptl.ones(2, requires_grad=True)
        (y * 3).sum().backward()
    assert len(prof.events()) == n and rf._rec is None
    with pytest.raises(AssertionError, match="initialized"):
        profile(activities=CPU).events()


def test_an_operator_error_still_closes_its_event():
    with profile(activities=CPU) as prof:
        with pytest.raises(RuntimeError):
            ptl.ones(2, 3) @ ptl.ones(2, 3)
    names = [e.name for e in prof.events()]
    assert "aten::matmul" in names
    assert not _intercept.on


def test_profilers_do_not_nest():
    with profile(activities=CPU):
        with pytest.raises(RuntimeError, match="already enabled"):
            with profile(activities=CPU):
                pass
    assert not _intercept.on


def test_bad_arguments():
    with pytest.raises(TypeError, match="activities"):
        profile(activities=["cpu"])
    with pytest.raises(TypeError, match="schedule"):
        profile(activities=CPU, schedule=3)
    with pytest.raises(AssertionError, match="Invalid profiler schedule"):
        schedule(wait=0, warmup=0, active=0)
    with pytest.raises(TypeError, match="wait"):
        schedule(wait=1.5, warmup=1, active=1)


# --- key_averages and the table ----------------------------------------------------------------

def test_key_averages_counts_and_shapes():
    a, b = ptl.ones(2, 3), ptl.ones(4)
    with profile(activities=CPU, record_shapes=True) as prof:
        for _ in range(3):
            a + a
        b + b
        a.sum()
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["aten::add"].count == 4 and avg["aten::sum"].count == 1
    by_shape = {(e.key, str(e.input_shapes)): e.count for e in prof.key_averages(group_by_input_shape=True)}
    assert by_shape[("aten::add", "[[2, 3], [2, 3], []]")] == 3
    assert by_shape[("aten::add", "[[4], [4], []]")] == 1
    total = prof.key_averages().total_average()
    assert total.count == sum(e.count for e in prof.key_averages())
    ev = avg["aten::add"]
    assert ev.cpu_time_total >= ev.self_cpu_time_total > 0
    assert abs(ev.cpu_time - ev.cpu_time_total / ev.count) < 1e-9


def test_self_time_excludes_children():
    with profile(activities=CPU) as prof:
        with record_function("outer"):
            ptl.ones(100).exp().sum()
    outer = [e for e in prof.events() if e.name == "outer"][0]
    kids = sum(c.cpu_time_total for c in outer.cpu_children)
    assert len(outer.cpu_children) == 3
    assert abs(outer.self_cpu_time_total - (outer.cpu_time_total - kids)) < 1e-6


def test_table_looks_like_pytorchs():
    prof = _profiled_step(profile_memory=True)
    text = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5)
    lines = text.splitlines()
    assert lines[0].startswith("-" * 40) and lines[2] == lines[0]
    header = lines[1].split()
    assert header[:1] == ["Name"] and "# of Calls" in lines[1] and "Self CPU Mem" in lines[1]
    cols = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "CPU Mem", "Self CPU Mem"]
    pos = [lines[1].index(c) for c in ["Self CPU %", "CPU total %", "CPU time avg", "# of Calls"]]
    assert pos == sorted(pos) and all(c in lines[1] for c in cols)
    rows = lines[3:-2]
    assert len(rows) == 5
    selfs = [r.split()[-7] for r in rows]                       # the Self CPU column
    assert lines[-1].startswith("Self CPU time total: ")
    assert all(s.endswith(("us", "ms", "s")) for s in selfs)
    with pytest.raises(ValueError, match="sort_by"):
        prof.key_averages().table(sort_by="bogus")


def test_table_header_matches_torch():
    torch = pytest.importorskip("torch")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as tp:
        torch.ones(3) + 1
    want = tp.key_averages().table(row_limit=1).splitlines()[1]
    prof = _profiled_step(profile_memory=True)
    got = prof.key_averages().table(row_limit=1).splitlines()[1]
    assert got.split("  ")[1:] == want.split("  ")[1:] or got.split() == want.split()


# --- memory ----------------------------------------------------------------------------------

def test_memory_events_balance(tmp_path):
    import gc
    gc.collect()        # no cyclic garbage of earlier tests freed (and recorded) meanwhile
    before = ptl.memory.memory_allocated()
    with profile(activities=CPU, profile_memory=True) as prof:
        for _ in range(3):
            x = ptl.ones(64, 64)
            y = x * 2
            del x, y
    evs = [e for e in _trace(prof, tmp_path)["traceEvents"] if e["ph"] == "i" and e["name"] == "[memory]"]
    assert len(evs) == 12
    assert sum(e["args"]["Bytes"] for e in evs) == 0
    live = {}
    for e in evs:
        a = e["args"]
        if a["Bytes"] > 0:
            assert a["Addr"] not in live
            live[a["Addr"]] = a["Bytes"]
        else:
            assert live.pop(a["Addr"]) == -a["Bytes"]
        assert a["Device Type"] == 0 and a["Total Allocated"] >= 0
    assert not live
    assert evs[-1]["args"]["Total Allocated"] == ptl.memory.memory_allocated() == before
    ones = [e for e in prof.key_averages() if e.key == "aten::ones"][0]
    assert ones.self_cpu_memory_usage == 3 * 64 * 64 * 4
    path = str(tmp_path / "mem.json")
    prof.export_memory_timeline(path)
    with open(path) as f:
        times, sizes = json.load(f)
    assert len(times) == len(sizes) == 12 and times == sorted(times)
    raw = str(tmp_path / "mem.raw.json.gz")
    prof.export_memory_timeline(raw)
    with gzip.open(raw, "rt") as f:
        assert len(json.load(f)) == 11


def test_memory_timeline_needs_profile_memory(tmp_path):
    with pytest.raises(RuntimeError, match="profile_memory=True"):
        _profiled_step().export_memory_timeline(str(tmp_path / "m.json"))


def test_cuda_caching_allocator_events():
    _allocator = importlib.import_module("pytorchlite.cuda._allocator")
    alloc = _allocator.CachingAllocator(_allocator.FakeBackend(capacity=64 << 20))
    rec = _recorder.Recorder(profile_memory=True, cuda=True)
    rec.start()
    try:
        b1 = alloc.malloc(1000)
        alloc.free(b1)
        b2 = alloc.malloc(1000)        # served from the cache: no device allocation call
        alloc.free(b2)
    finally:
        rec.stop()
    assert _allocator.observer is None
    mem = [m for m in rec.memory if m[6] == 1]
    assert [m[3] for m in mem] == [1024, -1024, 1024, -1024]
    assert [m[8] for m in mem] == [True, False, False, False]
    assert mem[0][4] == 1024 and mem[0][5] == 2 << 20 and mem[1][4] == 0


# --- CUDA kernels through CUDA events, with a fake device clock -------------------------------

class _ClockBackend:
    """Events whose device time is the host time of recording plus a fixed 5 us lag."""

    def __init__(self):
        self.events, self.n = {}, 0
        self.destroyed = 0

    def synchronize(self):
        pass

    def default_stream(self):
        return 0

    def event_create(self, enable_timing=False):
        self.n += 1
        return self.n

    def event_record(self, ev, stream):
        import time
        self.events[ev] = time.perf_counter_ns() / 1e6 + 0.005

    def event_synchronize(self, ev):
        pass

    def event_elapsed_time(self, a, b):
        return self.events[b] - self.events[a]

    def event_destroy(self, ev):
        self.destroyed += 1


class _Launcher:
    index = 0


def test_kernel_events_from_cuda_events(monkeypatch, tmp_path):
    be = _ClockBackend()
    monkeypatch.setattr(_recorder, "_cuda_backend", lambda index: be)
    prof = profile(activities=CPU)
    prof.start()
    rec = prof._recorder
    with record_function("launching"):
        tok = rec.kernel_begin(_Launcher(), "ptl_cu_add_c32", 7)
        rec.kernel_end(_Launcher(), "ptl_cu_add_c32", 7, tok)
    prof.stop()
    kern = [e for e in prof.events() if e.device_type == "cuda"]
    assert len(kern) == 1 and kern[0].name == "ptl_cu_add_c32" and kern[0].stream == 7
    host = [e for e in prof.events() if e.name == "launching"][0]
    assert kern[0].cpu_parent is host and host.self_device_time_total == kern[0].end_us - kern[0].start_us
    assert abs(kern[0].start_us - (tok[1] - rec.start_ns) / 1000.0) < 50
    assert be.destroyed == 3
    evs = _trace(prof, tmp_path)["traceEvents"]
    k = [e for e in evs if e.get("cat") == "kernel"]
    assert k and k[0]["pid"] == 0 and k[0]["tid"] == 7
    assert any(e["ph"] == "M" and e["args"].get("name") == "stream 7" for e in evs)
    assert "Self CUDA" in prof.key_averages().table()


# --- the schedule --------------------------------------------------------------------------------

SCHEDULES = [dict(wait=1, warmup=1, active=2), dict(wait=0, warmup=1, active=1, repeat=2),
             dict(wait=2, warmup=1, active=3, repeat=1, skip_first=1), dict(wait=1, warmup=0, active=2, repeat=0)]


@pytest.mark.parametrize("kw", SCHEDULES)
def test_schedule_actions_match_torch(kw):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine, theirs = schedule(**kw), torch.profiler.schedule(**kw)
    assert [mine(i).name for i in range(20)] == [theirs(i).name for i in range(20)]


def _run_schedule(profile_cls, activity, kw, steps, work):
    ready = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sched = (schedule if profile_cls is profile else __import__("torch").profiler.schedule)(**kw)
        with profile_cls(activities=[activity], schedule=sched,
                         on_trace_ready=lambda p: ready.append((p.step_num, sorted(
                             (e.key, e.count) for e in p.key_averages() if e.key.startswith("ProfilerStep"))))) as p:
            for _ in range(steps):
                work()
                p.step()
    return ready


@pytest.mark.parametrize("kw", SCHEDULES[:3])
def test_on_trace_ready_calls_match_torch(kw):
    torch = pytest.importorskip("torch")
    a, b = ptl.ones(3), torch.ones(3)
    mine = _run_schedule(profile, ProfilerActivity.CPU, kw, 9, lambda: a + 1)
    theirs = _run_schedule(torch.profiler.profile, torch.profiler.ProfilerActivity.CPU, kw, 9, lambda: b + 1)
    assert mine == theirs and mine


def test_schedule_without_torch():
    s = schedule(wait=1, warmup=1, active=2, repeat=1)
    assert [s(i) for i in range(6)] == [ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
                                        ProfilerAction.RECORD_AND_SAVE, ProfilerAction.NONE, ProfilerAction.NONE]
    ready = []
    a = ptl.ones(2)
    with profile(activities=CPU, schedule=s, on_trace_ready=lambda p: ready.append(
            (p.step_num, sum(e.count for e in p.key_averages() if e.key == "aten::add")))) as p:
        for _ in range(6):
            a + 1
            p.step()
    assert ready == [(4, 2)]


def test_events_module_formatting():
    assert _events.format_time(12.3456) == "12.346us"
    assert _events.format_time(1234.5) == "1.234ms" or _events.format_time(1234.5) == "1.235ms"
    assert _events.format_memory(2048) == "2.00 KB" and _events.format_memory(-12) == "-12 B"
    assert np.isclose(float(_events.format_time_share(1, 4)[:-1]), 25.0)


# --- pictures and the example -------------------------------------------------------------------

def test_plot_cli_writes_both_pictures(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from pytorchlite.profiler.__main__ import main
    path = str(tmp_path / "t.json.gz")
    _profiled_step(profile_memory=True).export_chrome_trace(path)
    out = str(tmp_path / "lanes.png")
    assert main(["plot", path, "-o", out]) == 0
    for p in (tmp_path / "lanes.png", tmp_path / "lanes_memory.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "lanes_memory.png" in capsys.readouterr().out
    # no memory events: only the timeline; a file that is not a trace: a clear error
    path2 = str(tmp_path / "plain.json")
    _profiled_step().export_chrome_trace(path2)
    assert main(["plot", path2, "-o", str(tmp_path / "p.png"), "--memory", str(tmp_path / "m.png")]) == 0
    assert (tmp_path / "p.png").exists() and not (tmp_path / "m.png").exists()
    (tmp_path / "bad.json").write_text("{}")
    assert main(["plot", str(tmp_path / "bad.json"), "-o", str(tmp_path / "x.png")]) == 1
    assert "not a Chrome trace" in capsys.readouterr().err


def test_memory_timeline_html(tmp_path):
    pytest.importorskip("matplotlib")
    with profile(activities=CPU, profile_memory=True) as prof:
        ptl.ones(1000) * 2
    path = tmp_path / "m.html"
    prof.export_memory_timeline(str(path))
    assert "data:image/png;base64," in path.read_text()


def test_train_digits_profile_writes_trace_and_pictures(tmp_path, capsys):
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    from examples_util import load_example
    written = load_example("train_digits").main(["--profile", "--profile-steps", "2", "--out", str(tmp_path)])
    assert [p.rsplit("/", 1)[1] for p in written] == ["digits_trace.json", "digits_timeline.png",
                                                       "digits_timeline_memory.png"]
    with open(written[0]) as f:
        evs = json.load(f)["traceEvents"]
    steps = {e["name"] for e in evs if e["ph"] == "X" and e["name"].startswith("ProfilerStep#")}
    assert steps == {"ProfilerStep#2", "ProfilerStep#3"}
    names = {e["name"] for e in evs if e["ph"] == "X"}
    assert {"Optimizer.step#Adam.step", "aten::convolution", "autograd::engine::evaluate_function: "
            "ConvolutionBackward0"} <= names
    assert "Self CPU time total" in capsys.readouterr().out


@pytest.mark.parametrize("obj", ["module", "schedule", "record_function"])
def test_docstring_examples_run(obj):
    import doctest
    import pytorchlite.profiler as P
    target = {"module": P, "schedule": P.schedule, "record_function": P.record_function}[obj]
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    for test in finder.find(target, obj, globs={"pytorchlite": ptl}):
        runner.run(test)
    res = runner.summarize(verbose=False)
    assert res.attempted > 0 and res.failed == 0


_EMULATED = r"""
import json, sys
import pytorchlite as ptl
from pytorchlite.profiler import profile, ProfilerActivity
a = ptl.ones(1000, device="cuda")
b = a + 1
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True) as prof:
    c = a + b
    del c
prof.export_chrome_trace(sys.argv[1])
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    back = ptl.arange(8.0).to("cuda").cpu()
assert back.tolist() == [float(i) for i in range(8)]
prof.export_chrome_trace(sys.argv[1] + ".copies.json")
"""


@pytest.mark.slow
def test_cuda_kernels_and_memory_on_the_emulator(tmp_path):
    """The launch and allocator hooks end to end through the CUDA backend on the CPU
    emulator (PTL_CUDA_EMULATOR=1: kernels built for the host, events complete at once);
    proves the host side only, not a GPU."""
    import os
    import shutil
    import subprocess
    import sys
    from pytorchlite.cuda import _nvrtc
    try:
        _nvrtc.nvrtc()
    except _nvrtc.NvrtcUnavailable:
        pytest.skip("needs NVRTC (the cuda extra)")
    if shutil.which("g++") is None:
        pytest.skip("needs g++ for the emulator")
    path = str(tmp_path / "emu.json")
    env = dict(os.environ, PTL_CUDA_EMULATOR="1", PYTHONPATH=_nvrtc.ROOT)
    r = subprocess.run([sys.executable, "-c", _EMULATED, path], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    with open(path) as f:
        evs = json.load(f)["traceEvents"]
    kernels = [e for e in evs if e.get("cat") == "kernel"]
    assert [e["name"] for e in kernels] == ["ptl_cu_add_f32_c32"] and kernels[0]["pid"] == 0
    add = [e for e in evs if e.get("name") == "aten::add"][0]
    assert add["ts"] <= kernels[0]["ts"] + 1 and kernels[0]["ts"] + kernels[0]["dur"] <= add["ts"] + add["dur"] + 1
    mem = [e["args"] for e in evs if e.get("name") == "[memory]" and e["args"]["Device Type"] == 1]
    assert [m["Bytes"] for m in mem] == [4096, -4096]
    assert any(e["ph"] == "M" and e["args"].get("name") == "stream 0" for e in evs)
    # host <-> device copies: Kineto's names and category, on the stream's lane, under the
    # operator that asked for them
    with open(path + ".copies.json") as f:
        evs = json.load(f)["traceEvents"]
    copies = [e for e in evs if e.get("cat") == "gpu_memcpy"]
    assert [e["name"] for e in copies] == ["Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pageable)"]
    assert all(e["pid"] == 0 and e["tid"] == 0 for e in copies)
    to = [e for e in evs if e.get("name") == "aten::_to_copy" or e.get("name") == "aten::to"]
    assert to, sorted({e.get("name") for e in evs if e.get("ph") == "X"})


def test_dataloader_workers_get_rows_of_their_own(tmp_path):
    ds = ptl.utils.data.TensorDataset(ptl.arange(12.0).reshape(6, 2))
    loader = ptl.utils.data.DataLoader(ds, batch_size=2, num_workers=2)
    with profile(activities=CPU) as prof:
        got = [b[0].sum().item() for b in loader]
    assert got == [6.0, 22.0, 38.0]
    names = {e.key: e.count for e in prof.key_averages()}
    assert names["enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"] == 4
    evs = _trace(prof, tmp_path)["traceEvents"]
    fetches = [e for e in evs if e["ph"] == "X" and e["name"] == "DataLoader worker fetch"]
    main_pid = [e["pid"] for e in evs if e["ph"] == "X" and e["name"].startswith("enumerate")][0]
    assert fetches and all(e["pid"] != main_pid and e["tid"] == e["pid"] for e in fetches)
    rows = {e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "process_name"}
    assert {"python", "DataLoader worker 0", "DataLoader worker 1"} <= rows


def test_each_thread_has_its_row_and_backward_runs_on_the_caller(tmp_path):
    import threading
    x = ptl.ones(3, requires_grad=True)

    def work():
        with record_function("in_thread"):
            (x * 2).sum().backward()

    with profile(activities=CPU) as prof:
        t = threading.Thread(target=work, name="worker-thread")
        t.start()
        t.join()
        ptl.ones(2) + 1
    evs = prof.events()
    rng = [e for e in evs if e.name == "in_thread"][0]
    node = [e for e in evs if e.name == "autograd::engine::evaluate_function: SumBackward0"][0]
    main = [e for e in evs if e.name == "aten::add"][0]
    assert node.thread == rng.thread == t.native_id != main.thread
    assert node.cpu_parent is rng
    data = _trace(prof, tmp_path)
    names = {e["tid"]: e["args"]["name"] for e in data["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names[t.native_id] == f"thread {t.native_id} (worker-thread)"


def test_with_stack_names_the_callers_line(tmp_path):
    def caller():
        return ptl.ones(3).exp()

    with profile(activities=CPU, with_stack=True) as prof:
        caller()
    exp = [e for e in prof.events() if e.name == "aten::exp"][0]
    assert exp.stack and exp.stack[0].startswith(__file__) and exp.stack[0].endswith(": caller")
    assert not any("/pytorchlite/" in f.split("(")[0] and "tests" not in f for f in exp.stack)
    evs = _trace(prof, tmp_path)["traceEvents"]
    assert [e for e in evs if e.get("name") == "aten::exp"][0]["args"]["Call stack"].startswith(__file__)
