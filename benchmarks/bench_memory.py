"""Memory over a long run: 10,000 training steps of the README's digits CNN (the model,
data and step of examples/train_digits.py, imported, not copied), recording the process's
resident memory (RSS), the number of live Python objects the garbage collector tracks and
pytorchlite's CPU allocator counters every `--every` steps. After the warm-up (the first
`--warmup` steps: imports, the allocator cache and Adam's state fill up) RSS must stay flat:
the goal is at most 4 MiB of growth to the end of the run. A leak (an autograd graph kept
alive, a cache that never shrinks) shows here as a steady climb; the script exits with 1
when the goal is missed. The live-object count moves by a few dozen either way as the
bounded caches of 0-d operands for Python scalars (Adam's bias corrections are new numbers
every step) fill and clear; a leak of one object per step would add 500 per row.

    python benchmarks/bench_memory.py                   # 10,000 steps, batch 32
    python benchmarks/bench_memory.py --steps 2000 --every 200
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:   # run as a script from anywhere: import the checkout's pytorchlite
    sys.path.insert(0, ROOT)

GOAL_MIB = 4.0


def rss_bytes():
    """Resident set size now, from /proc/self/statm (Linux); elsewhere the peak RSS from
    getrusage, which can only grow (the table's title says which)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


RSS_SOURCE = "/proc/self/statm" if os.path.exists("/proc/self/statm") else "peak RSS (getrusage)"


def load_train_digits():
    path = os.path.join(ROOT, "examples", "train_digits.py")
    spec = importlib.util.spec_from_file_location("train_digits", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run(steps=10_000, every=500, batch_size=32, seed=0, threads=1):
    """Train for `steps` steps (epochs of shuffled batches, as the example does, the last
    batch of an epoch shorter) and return one sample per `every` steps: dicts with step,
    rss, objects (len(gc.get_objects())), allocated and cached (allocator bytes), seconds."""
    import pytorchlite as torch
    td = load_train_digits()
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    x_train, y_train, _, _ = td.load_digits_split(seed)
    model = td.CNN()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    loss_fn = torch.nn.NLLLoss()
    n = len(x_train)
    samples = []
    perm, pos = torch.randperm(n), 0
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        if pos >= n:
            perm, pos = torch.randperm(n), 0
        idx = perm[pos:pos + batch_size]
        pos += batch_size
        loss, logits = td.train_step(model, opt, loss_fn, x_train[idx], y_train[idx])
        loss.item()
        (logits.argmax(1) == y_train[idx]).sum().item()
        if step % every == 0:
            stats = torch.memory.memory_stats()
            rss = rss_bytes()
            # collect first: CPython untracks tuples and dicts of plain values only during a
            # collection, so without it the count saw-tooths with the collector's cycle
            gc.collect()
            samples.append({"step": step, "rss": rss, "objects": len(gc.get_objects()),
                            "allocated": stats["allocated_bytes"], "cached": stats["cached_bytes"],
                            "seconds": time.perf_counter() - t0})
    return samples


def slope_per_1000(samples, key):
    """Least-squares slope of samples[key] in units per 1000 steps."""
    xs = [s["step"] for s in samples]
    ys = [s[key] for s in samples]
    if len(xs) < 2:
        return 0.0
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return 1000 * sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var if var else 0.0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=10_000)
    p.add_argument("--every", type=int, default=500, help="record every N steps (default 500)")
    p.add_argument("--warmup", type=int, default=1000, help="steps before growth is counted (default 1000)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    if args.warmup >= args.steps or args.every > args.steps - args.warmup:
        p.error("--warmup must leave at least --every steps to measure")

    import pytorchlite
    cap = pytorchlite.memory.get_cache_limit()
    samples = run(args.steps, args.every, args.batch_size, threads=args.threads)
    mib = 1 << 20
    print(f"## memory over {args.steps} training steps of the digits CNN (batch {args.batch_size}, "
          f"{args.threads} thread(s); RSS from {RSS_SOURCE}; CPU cache limit {cap / mib:.0f} MiB)")
    print("step   | RSS MiB | since warm-up MiB | live objects | allocated MiB | cached MiB | steps/s")
    print("-------+---------+-------------------+--------------+---------------+------------+--------")
    base = next((s for s in samples if s["step"] >= args.warmup), samples[-1])
    prev_t, prev_step = 0.0, 0
    for s in samples:
        rate = (s["step"] - prev_step) / max(s["seconds"] - prev_t, 1e-9)
        prev_t, prev_step = s["seconds"], s["step"]
        since = f"{(s['rss'] - base['rss']) / mib:+.2f}" if s["step"] >= base["step"] else "(warm-up)"
        print(f"{s['step']:6d} | {s['rss'] / mib:7.1f} | {since:>17} | {s['objects']:12d} | "
              f"{s['allocated'] / mib:13.2f} | {s['cached'] / mib:10.2f} | {rate:7.0f}")
    after = [s for s in samples if s["step"] >= base["step"]]
    growth = (after[-1]["rss"] - base["rss"]) / mib
    peak = (max(s["rss"] for s in after) - base["rss"]) / mib
    print(f"\nafter warm-up (step {base['step']} -> {after[-1]['step']}): RSS {growth:+.2f} MiB (peak "
          f"{peak:+.2f} MiB, slope {slope_per_1000(after, 'rss') / 1024:+.1f} KiB per 1000 steps), live objects "
          f"{after[-1]['objects'] - base['objects']:+d}, allocated {(after[-1]['allocated'] - base['allocated']) / mib:+.2f} "
          f"MiB, cached {(after[-1]['cached'] - base['cached']) / mib:+.2f} MiB")
    ok = peak <= GOAL_MIB
    print(f"goal: RSS growth after warm-up at most {GOAL_MIB:.0f} MiB: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
