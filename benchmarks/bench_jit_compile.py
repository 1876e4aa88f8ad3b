"""pytorchlite.compile end to end (issue 12), side by side with pytorchlite eager, PyTorch
eager and torch.compile in one run:

* the 10 cheap pointwise ops of bench_jit.py (one thread, float32) on 2^20 and 2^10
  elements: goal at least 5x faster than pytorchlite eager and faster than torch.compile
  (here the whole compiled call is timed: guards, the generated function, the fused
  kernel; bench_jit.py times the fused kernel alone);
* the chain of 100 small steps of bench_autograd.py on 16 elements, forward + backward:
  goal at most 0.2x PyTorch eager's time;
* a training step of an MLP and of the digits CNN (examples/train_digits.py) with the
  model compiled: goal faster than eager.

Columns are microseconds per call; ratios are the other's time over the compiled time
(higher is better). torch.compile's first compile takes about 20 s; `--no-compile` skips it.

    python benchmarks/bench_jit_compile.py [--no-compile]
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))

from bench_autograd import chain as autograd_chain  # noqa: E402
from bench_jit import cheap  # noqa: E402
from common import Bench, _fmt, print_table, setup_threads  # noqa: E402


class CompileBench(Bench):
    FRAMEWORKS = ("compiled", "eager", "torch", "torch.compile")

    def case(self, name, *fns, repeat=7):
        secs = self._measure(name, fns, None, repeat)
        self.rows.append((name, "us", [None if s is None else s * 1e6 for s in secs]))

    def print(self, file=None):
        head = ("case", "compiled", "eager", "torch", "torch.compile", "eager/compiled", "torch/compiled",
                "t.compile/compiled")
        lines = [(case, _fmt(c), _fmt(e), _fmt(t), _fmt(tc), _fmt(self.ratio("us", e, c), "x"),
                  _fmt(self.ratio("us", t, c), "x"), _fmt(self.ratio("us", tc, c), "x"))
                 for case, _u, (c, e, t, tc) in self.rows]
        print_table(f"{self.title}  (median us per call; ratios: the other's time / compiled, higher is better)",
                    head, lines, self.errors, file)


def _torch_compile(torch, fn, warm, b, state):
    if not state["on"]:
        return None
    try:
        c = torch.compile(fn)
        warm(c)
        return c
    except Exception as e:  # torch.compile needs a working C++ toolchain
        b.errors.append(f"torch.compile: {type(e).__name__}: {e}")
        state["on"] = False
        return None


def pointwise(ptl, torch, np, b, state):
    ptl.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    for n in (2 ** 20, 2 ** 10):
        an, bn = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        a, bb = ptl.tensor(an), ptl.tensor(bn)
        comp = ptl.compile(cheap)
        np.testing.assert_allclose(comp(a, bb).numpy(), cheap(a, bb).numpy(), rtol=1e-6)
        tf = tc = None
        if torch is not None:
            ta, tb = torch.from_numpy(an), torch.from_numpy(bn)
            tf = (lambda ta=ta, tb=tb: cheap(ta, tb))
            c = _torch_compile(torch, cheap, lambda c: c(ta, tb), b, state)
            tc = None if c is None else (lambda ta=ta, tb=tb, c=c: c(ta, tb))
        b.case(f"10 cheap ops, 2^{n.bit_length() - 1}, 1 thread", lambda: comp(a, bb), lambda: cheap(a, bb), tf, tc)
    ptl.set_num_threads(2)
    if torch is not None:
        torch.set_num_threads(2)


def autograd_steps(ptl, torch, np, b, state):
    xn = np.linspace(0.5, 1.5, 16).astype(np.float32)
    x = ptl.tensor(xn, requires_grad=True)
    comp = ptl.compile(autograd_chain)
    comp(x).sum().backward()
    tf = tc = None
    if torch is not None:
        tx = torch.tensor(xn, requires_grad=True)
        tf = (lambda: autograd_chain(tx).sum().backward())
        c = _torch_compile(torch, autograd_chain, lambda c: c(tx).sum().backward(), b, state)
        tc = None if c is None else (lambda: c(tx).sum().backward())
    b.case("100-step chain fwd+bwd, 16 elems", lambda: comp(x).sum().backward(),
           lambda: autograd_chain(x).sum().backward(), tf, tc)


def training(ptl, torch, np, b, state):
    from train_digits import CNN
    rng = np.random.default_rng(1)

    def mlp(nn):
        return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))

    for name, make_ptl, make_torch, xshape in (
            ("MLP 64-128-128-10 train step, batch 64", lambda: mlp(ptl.nn), lambda: mlp(torch.nn), (64, 64)),
            ("digits CNN train step, batch 64", CNN, None, (64, 1, 8, 8))):
        xn = rng.standard_normal(xshape).astype(np.float32)
        yn = rng.integers(0, 10, xshape[0])
        x, y = ptl.tensor(xn), ptl.tensor(yn)

        def stepper(model, run, lib, x, y):
            opt = lib.optim.SGD(model.parameters(), lr=0.01)

            def step():
                opt.zero_grad()
                loss = lib.nn.functional.cross_entropy(run(x), y)
                loss.backward()
                opt.step()
            return step
        ptl.manual_seed(0)
        m_eager = make_ptl()
        m_comp = make_ptl()
        cm = ptl.compile(m_comp)
        tf = tc = None
        if torch is not None and make_torch is not None:
            tx, ty = torch.from_numpy(xn), torch.from_numpy(yn)
            tm, tm2 = make_torch(), make_torch()
            tf = stepper(tm, tm, torch, tx, ty)
            c = _torch_compile(torch, tm2, lambda c: c(tx), b, state)
            tc = None if c is None else stepper(tm2, c, torch, tx, ty)
        b.case(name, stepper(m_comp, cm, ptl, x, y), stepper(m_eager, m_eager, ptl, x, y), tf, tc)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ptl, torch, np = setup_threads()
    state = {"on": torch is not None and "--no-compile" not in argv}
    b = CompileBench("pytorchlite.compile end to end")
    pointwise(ptl, torch, np, b, state)
    autograd_steps(ptl, torch, np, b, state)
    training(ptl, torch, np, b, state)
    b.print()


if __name__ == "__main__":
    main()
