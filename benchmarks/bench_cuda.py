"""GPU micro-benchmarks, side by side with PyTorch's CUDA build in the same process:
large pointwise bandwidth (GB/s and the fraction of the card's peak), reductions, float32
and bfloat16 GEMM (TFLOP/s, cuBLAS in both), an MLP and the digits CNN training step,
`a + b` on a small tensor (host time per call), host <-> device copies from pageable
memory, and a device-to-device copy.

    python benchmarks/bench_cuda.py [--json PATH] [--quick]

Device time is taken with CUDA events (pytorchlite's and PyTorch's own), host time per
call with a wall clock over many calls followed by one synchronisation. --quick uses
tiny sizes (for the CPU emulator, where timings mean nothing). `python -m
pytorchlite.cuda.check` runs this and puts the table in its report.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# the HBM bandwidth each card is sold with (bytes/s), for "fraction of peak"
PEAK_BANDWIDTH = (("H200", 4.8e12), ("H100 PCIe", 2.0e12), ("H100", 3.35e12), ("A100-SXM4-80GB", 2.039e12),
                  ("A100", 1.555e12), ("L4", 0.3e12))


def peak_bandwidth(name):
    for key, bw in PEAK_BANDWIDTH:
        if key in name:
            return bw
    return None


def _events_ms(ev_cls, fn, iters, warmup=3):
    for _ in range(warmup):
        fn()
    start, end = ev_cls(enable_timing=True), ev_cls(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / iters


def _wall_s(fn, sync, calls, warmup):
    """Host wall time per call over `calls` calls, ended by one synchronisation."""
    for _ in range(warmup):
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - t0) / calls


def _host_us(fn, sync, calls):
    return _wall_s(fn, sync, calls, 50) * 1e6


def _wall_ms(fn, sync, iters):
    return _wall_s(fn, sync, iters, 1) * 1e3


def _mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def _cnn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(128, 10))


def _train_step(lib, model, batch, opt):
    """One step's closure for `lib` (pytorchlite or torch) on CUDA: forward, cross
    entropy, backward, optimizer step."""
    model = model.to("cuda")
    x = lib.randn(*batch).to("cuda")
    y = lib.randint(0, 10, (batch[0],)).to("cuda")
    o = (lib.optim.SGD(model.parameters(), lr=0.01) if opt == "sgd" else
         lib.optim.Adam(model.parameters(), lr=1e-3))

    def step():
        loss = lib.nn.functional.cross_entropy(model(x), y)
        o.zero_grad()
        loss.backward()
        o.step()
    return step


def run(quick=False):
    import pytorchlite as ptl
    try:
        import torch
        if not torch.cuda.is_available():
            torch = None
    except ImportError:
        torch = None
    name = ptl.cuda.get_device_name()
    peak = peak_bandwidth(name)
    n = 1 << 14 if quick else 1 << 26           # 256 MiB of float32 per operand
    iters = 2 if quick else 20
    rows = []

    def row(label, unit, ours, theirs, **extra):
        r = {"name": label, "unit": unit, "pytorchlite": ours, "torch": theirs,
             "ratio": (ours / theirs) if (ours and theirs) else None}
        r.update(extra)
        rows.append(r)

    def bandwidth(label, nbytes, ours, theirs):
        ms = _events_ms(ptl.cuda.Event, ours, iters)
        tms = _events_ms(torch.cuda.Event, theirs, iters) if torch else None
        gbs, tgbs = nbytes / ms / 1e6, (nbytes / tms / 1e6 if tms else None)
        row(label, "GB/s", gbs, tgbs, ms=ms, torch_ms=tms,
            fraction_of_peak=(gbs * 1e9 / peak) if peak else None,
            torch_fraction_of_peak=(tgbs * 1e9 / peak) if (peak and tgbs) else None)

    a, b, c = ptl.ones(n).cuda(), ptl.ones(n).cuda(), ptl.ones(n).cuda()
    ta = tb = tc = None
    if torch:
        ta, tb, tc = (torch.ones(n, device="cuda") for _ in range(3))
    bandwidth(f"add(a, b, out=c), 2**{n.bit_length() - 1} float32", 3 * n * 4,
              lambda: ptl.add(a, b, out=c), (lambda: torch.add(ta, tb, out=tc)) if torch else None)
    bandwidth(f"a + b (allocating), 2**{n.bit_length() - 1} float32", 3 * n * 4,
              lambda: a + b, (lambda: ta + tb) if torch else None)
    bandwidth(f"a * 2.0 (scalar), 2**{n.bit_length() - 1} float32", 2 * n * 4,
              lambda: a * 2.0, (lambda: ta * 2.0) if torch else None)
    bandwidth(f"exp(a), 2**{n.bit_length() - 1} float32", 2 * n * 4,
              lambda: ptl.exp(a), (lambda: torch.exp(ta)) if torch else None)
    at, tat = a.view(1 << (n.bit_length() // 2), -1).t(), (ta.view(1 << (n.bit_length() // 2), -1).t()
                                                           if torch else None)
    bandwidth("a.t() + 1 (strided kernel)", 2 * n * 4, lambda: at + 1, (lambda: tat + 1) if torch else None)
    bandwidth("clone() (device to device)", 2 * n * 4, lambda: a.clone(), (lambda: ta.clone()) if torch else None)

    # reductions (generated/reduce.cu): a full sum and a row sum, bandwidth of the input
    m2 = a.view(1 << (n.bit_length() // 2), -1)
    tm2 = ta.view(1 << (n.bit_length() // 2), -1) if torch else None
    bandwidth("sum() of all, float32", n * 4, lambda: a.sum(), (lambda: ta.sum()) if torch else None)
    bandwidth("sum(1) over rows, float32", n * 4, lambda: m2.sum(1), (lambda: tm2.sum(1)) if torch else None)
    del m2, tm2

    # GEMM through cuBLAS (TF32 off for float32 in both, PyTorch's default)
    if torch:
        torch.backends.cuda.matmul.allow_tf32 = False
    g = 256 if quick else 8192
    for dt in ("float32", "bfloat16"):
        x, y = ptl.randn(g, g).to(getattr(ptl, dt)).cuda(), ptl.randn(g, g).to(getattr(ptl, dt)).cuda()
        tx = ty = None
        if torch:
            tx, ty = (torch.randn(g, g, device="cuda", dtype=getattr(torch, dt)) for _ in range(2))
        ms = _events_ms(ptl.cuda.Event, lambda: ptl.mm(x, y), iters)
        tms = _events_ms(torch.cuda.Event, lambda: torch.mm(tx, ty), iters) if torch else None
        flop = 2.0 * g ** 3
        row(f"mm {g}x{g} {dt}", "TFLOP/s", flop / ms / 1e9, (flop / tms / 1e9) if tms else None, ms=ms,
            torch_ms=tms)
        del x, y, tx, ty

    # training steps (forward, backward, optimizer) of small models: host overhead and the
    # nn kernels together, wall time per step
    steps = 3 if quick else 50
    for label, build, batch in (("MLP step (784-512-512-10, batch 256, SGD)", _mlp, (256, 784)),
                                ("digits CNN step (batch 32, Adam)", _cnn, (32, 1, 8, 8))):
        ours = _train_step(ptl, build(ptl), batch, "sgd" if "SGD" in label else "adam")
        theirs = _train_step(torch, build(torch), batch, "sgd" if "SGD" in label else "adam") if torch else None
        ms = _wall_ms(ours, ptl.cuda.synchronize, steps)
        tms = _wall_ms(theirs, torch.cuda.synchronize, steps) if torch else None
        row(label, "ms", ms, tms)

    # the host side of one small op: what a training loop of small tensors pays per op
    s1, s2 = ptl.ones(1000).cuda(), ptl.ones(1000).cuda()
    ts1 = ts2 = None
    if torch:
        ts1, ts2 = torch.ones(1000, device="cuda"), torch.ones(1000, device="cuda")
    calls = 200 if quick else 5000
    us = _host_us(lambda: s1 + s2, ptl.cuda.synchronize, calls)
    tus = _host_us(lambda: ts1 + ts2, torch.cuda.synchronize, calls) if torch else None
    row("a + b, 1000 float32 (host time per call)", "us", us, tus)
    us = _host_us(lambda: s1.mul_(1.0), ptl.cuda.synchronize, calls)
    tus = _host_us(lambda: ts1.mul_(1.0), torch.cuda.synchronize, calls) if torch else None
    row("a.mul_(1.0), 1000 float32 (host time per call)", "us", us, tus)

    # host <-> device from pageable memory (what .cuda() / .cpu() of a batch costs)
    h = ptl.ones(n)
    th = torch.ones(n) if torch else None
    nbytes = n * 4
    citers = 2 if quick else 5
    ms = _wall_ms(lambda: h.cuda(), ptl.cuda.synchronize, citers)
    tms = _wall_ms(lambda: th.cuda(), torch.cuda.synchronize, citers) if torch else None
    row("host -> device copy, 256 MiB pageable" if not quick else "host -> device copy", "GB/s",
        nbytes / ms / 1e6, (nbytes / tms / 1e6) if tms else None)
    ms = _wall_ms(lambda: a.cpu(), ptl.cuda.synchronize, citers)
    tms = _wall_ms(lambda: ta.cpu(), torch.cuda.synchronize, citers) if torch else None
    row("device -> host copy, 256 MiB pageable" if not quick else "device -> host copy", "GB/s",
        nbytes / ms / 1e6, (nbytes / tms / 1e6) if tms else None)
    return {"device": name, "peak_bandwidth": peak, "torch": getattr(torch, "__version__", None),
            "quick": quick, "results": rows}


def format_table(res):
    def f(v, unit):
        if v is None:
            return "-"
        return f"{v:.1f}" if unit == "GB/s" else f"{v:.2f}"
    lines = [f"device: {res['device']}; peak bandwidth: "
             f"{res['peak_bandwidth'] / 1e12:.2f} TB/s" if res["peak_bandwidth"] else f"device: {res['device']}",
             "", "| benchmark | unit | pytorchlite | PyTorch | ratio | of peak (ptl / torch) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in res["results"]:
        frac = ""
        if r.get("fraction_of_peak") is not None:
            tf = r.get("torch_fraction_of_peak")
            frac = f"{r['fraction_of_peak']:.0%}" + (f" / {tf:.0%}" if tf is not None else "")
        ratio = f"{r['ratio']:.2f}x" if r["ratio"] else "-"
        lines.append(f"| {r['name']} | {r['unit']} | {f(r['pytorchlite'], r['unit'])} | {f(r['torch'], r['unit'])} "
                     f"| {ratio} | {frac} |")
    lines.append("")
    lines.append("ratio = pytorchlite / PyTorch: higher is better for GB/s and TFLOP/s, lower is better for us and ms.")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", help="also write the results as JSON to this path")
    p.add_argument("--quick", action="store_true", help="tiny sizes (the CPU emulator)")
    args = p.parse_args(argv)
    res = run(args.quick)
    print(format_table(res))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
