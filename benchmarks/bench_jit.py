"""The JIT's pointwise fuser against eager execution and torch.compile (issue 12).

Two chains of 10 pointwise ops, one thread, float32:

* cheap (add/mul/sub with constants and the inputs) on 2^20 and 2^10 elements: goal at
  least 5x faster than pytorchlite eager, and faster than torch.compile;
* transcendental (exp, tanh, sigmoid among cheap ops) on 2^24 elements: goal at least
  1.2x faster than pytorchlite eager.

Columns: the fused kernel (pytorchlite.jit._fuser, one group for the whole chain),
pytorchlite eager, PyTorch eager and torch.compile (its cold first compile takes about
20 s; `--no-compile` skips it). Ratios are times: `eager/fused` 5.00x means the fused
kernel is five times faster.

    python benchmarks/bench_jit.py [--no-compile]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import CLOCK_NAME, Bench, _fmt, setup_threads  # noqa: E402

THREADS = 1


def cheap(a, b):
    x = a + b
    x = x * 1.5
    x = x - b
    x = x + 0.5
    x = x * a
    x = x + b
    x = x * 0.9
    x = x - a
    x = x + 2.0
    return x * x


def transcendental(a, b):
    x = a * b
    x = x.exp()
    x = x + a
    x = x.tanh()
    x = x * 0.5
    x = x.sigmoid()
    x = x - b
    x = x.exp()
    x = x.tanh()
    return x.sigmoid()


def cheap_spec(ptl):
    from pytorchlite.jit._fuser import FusionSpec
    IN, N, C = (lambda i: ("in", i)), (lambda j: ("node", j)), (lambda v: ("const", v))
    f32 = ptl.float32
    return FusionSpec((f32, f32), (
        ("add", (IN(0), IN(1), C(1))), ("mul", (N(0), C(1.5))), ("sub", (N(1), IN(1), C(1))),
        ("add", (N(2), C(0.5), C(1))), ("mul", (N(3), IN(0))), ("add", (N(4), IN(1), C(1))),
        ("mul", (N(5), C(0.9))), ("sub", (N(6), IN(0), C(1))), ("add", (N(7), C(2.0), C(1))),
        ("mul", (N(8), N(8)))), (9,))


def transcendental_spec(ptl):
    from pytorchlite.jit._fuser import FusionSpec
    IN, N, C = (lambda i: ("in", i)), (lambda j: ("node", j)), (lambda v: ("const", v))
    f32 = ptl.float32
    return FusionSpec((f32, f32), (
        ("mul", (IN(0), IN(1))), ("exp", (N(0),)), ("add", (N(1), IN(0), C(1))), ("tanh", (N(2),)),
        ("mul", (N(3), C(0.5))), ("sigmoid", (N(4),)), ("sub", (N(5), IN(1), C(1))), ("exp", (N(6),)),
        ("tanh", (N(7),)), ("sigmoid", (N(8),))), (9,))


class JitBench(Bench):
    FRAMEWORKS = ("fused", "eager", "torch", "torch.compile")

    def latency(self, case, *fns, repeat=7):
        """Microseconds per call of each of the four (None: not run)."""
        secs = self._measure(case, fns, None, repeat)
        self.rows.append((case, "us", [None if s is None else s * 1e6 for s in secs]))

    def print(self, file=None):
        file = file or sys.stdout
        head = ("case", "fused us", "eager us", "torch us", "compile us", "eager/fused", "compile/fused",
                "torch/fused")
        lines = []
        for case, _unit, (f, e, t, c) in self.rows:
            lines.append((case, _fmt(f), _fmt(e), _fmt(t), _fmt(c), _fmt(self.ratio("us", e, f), "x"),
                          _fmt(self.ratio("us", c, f), "x"), _fmt(self.ratio("us", t, f), "x")))
        widths = [max(len(str(r[i])) for r in [head] + lines) for i in range(len(head))]
        clock = "" if CLOCK_NAME == "wall" else ", thread CPU time"
        print(f"\n## {self.title}  (median, {THREADS} thread{clock}; ratios: the other's time / the fused "
              "kernel's, higher is better)", file=file)
        print(" | ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths))),
              file=file)
        print("-+-".join("-" * w for w in widths), file=file)
        for r in lines:
            print(" | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))),
                  file=file)
        for e in self.errors:
            print(f"  failed: {e}", file=file)
        file.flush()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ptl, torch, np = setup_threads(THREADS)
    from pytorchlite.jit._fuser import compile_group
    use_compile = torch is not None and "--no-compile" not in argv
    b = JitBench("JIT pointwise fusion: 10-op chains, float32")
    rng = np.random.default_rng(0)
    for name, fn, spec, n, repeat in (("cheap", cheap, cheap_spec(ptl), 2 ** 20, 7),
                                      ("cheap", cheap, cheap_spec(ptl), 2 ** 10, 7),
                                      ("exp/tanh/sigmoid", transcendental, transcendental_spec(ptl), 2 ** 24, 3)):
        an = rng.standard_normal(n).astype(np.float32)
        bn = rng.standard_normal(n).astype(np.float32)
        a, bb = ptl.tensor(an), ptl.tensor(bn)
        kernel = compile_group(spec)
        (got,) = kernel(a, bb)
        want = fn(a, bb)
        err = float(np.max(np.abs(got.numpy() - want.numpy()) / np.maximum(np.abs(want.numpy()), 1e-30)))
        assert err <= 1e-6, f"{name}: the fused kernel differs from eager by {err:.3g} (relative)"
        torch_fn = compile_fn = None
        if torch is not None:
            ta, tb = torch.from_numpy(an), torch.from_numpy(bn)
            torch_fn = (lambda ta=ta, tb=tb: fn(ta, tb))
            if use_compile:
                try:
                    compiled = torch.compile(fn)
                    compiled(ta, tb)
                    compile_fn = (lambda ta=ta, tb=tb, c=compiled: c(ta, tb))
                except Exception as e:  # torch.compile needs a working C++ toolchain
                    b.errors.append(f"torch.compile: {type(e).__name__}: {e}")
                    use_compile = False
        b.latency(f"{name}, 2^{n.bit_length() - 1}", (lambda a=a, bb=bb: kernel(a, bb)),
                  (lambda a=a, bb=bb: fn(a, bb)), torch_fn, compile_fn, repeat=repeat)
    b.print()


if __name__ == "__main__":
    main()
