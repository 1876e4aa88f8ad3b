"""The graph passes: DCE, CSE, constant folding, and the grouping of the fusion pass
(tested with eager_group, the FusionSpec contract run through the bindings, so grouping
is checked without compiling kernels; one test compiles for real)."""

import os

import numpy as np
import pytest

import pytorchlite as P
from pytorchlite import jit
from pytorchlite.jit import _fusion, _passes
from pytorchlite.jit._codegen import build
from pytorchlite.jit._trace import trace_graph


def _graph(fn, *args):
    return trace_graph(fn, args)[0]


def _ops(steps):
    return [s.site.name if not isinstance(s, _fusion.Group) else [n.site.name for n in s.nodes] for s in steps]


def _check(fn, graph, steps, *args):
    run = build(graph, steps)
    want = fn(*args)
    got = run(*args)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)


def test_dce_removes_unused_pure_nodes_but_keeps_mutations():
    def f(x):
        unused = x.exp() * 3      # noqa: F841
        y = x.clone()
        y.mul_(2)
        return x + 1, y
    g = _passes.dce(_graph(f, P.ones(2)))
    assert [n.site.name for n in g.nodes] == ["clone", "mul", "add"]
    _check(f, g, None, P.tensor([1.0, 2.0]))


def test_cse_merges_identical_calls():
    def f(x):
        return x.sin() + x.sin(), x.sin() * 2
    g = _passes.cse(_graph(f, P.ones(2)))
    assert [n.site.name for n in g.nodes] == ["sin", "add", "mul"]
    _check(f, g, None, P.tensor([0.5, 2.0]))


def test_cse_leaves_random_nodes_alone():
    g = _passes.cse(_graph(lambda x: P.rand(2) + P.rand(2) + x, P.ones(2)))
    assert [n.site.name for n in g.nodes].count("rand") == 2


def test_constant_folding():
    w = P.tensor([1.0, 2.0])

    def f(x):
        scale = (w * 2).exp()          # constants only: computed once
        return x * scale + P.ones(2)
    g = _passes.optimize(_graph(f, P.ones(2)))
    assert [n.site.name for n in g.nodes] == ["mul", "add"]
    assert len(g.constants) == 2
    _check(f, g, None, P.tensor([3.0, -1.0]))


def test_a_pointwise_chain_is_one_group_with_reductions_outside():
    def f(x, y):
        z = (x * y + 1).relu()
        s = z.sum()                    # a reduction reads z: z is a group output
        return (z.exp() - y) / 2, s
    g = _passes.optimize(_graph(f, P.ones(3), P.ones(3)))
    steps = _fusion.fuse(g, compile=False)
    assert _ops(steps) == [["mul", "add", "relu"], "sum", ["exp", "sub", "_div_true"]]
    first = steps[0]
    assert first.spec.outputs == (2,) and first.spec.inputs == (P.float32, P.float32)
    assert first.spec.nodes[1] == ("add", (("node", 0), ("const", 1), ("const", 1)))
    _check(f, g, steps, P.randn(3), P.randn(3))


def test_an_intermediate_read_later_is_an_output_of_its_group():
    def f(x):
        a = x.exp()
        b = a * 2
        return b + 1, a
    g = _graph(f, P.ones(4))
    (grp,) = _fusion.fuse(g, compile=False)
    assert [n.site.name for n in grp.nodes] == ["exp", "mul", "add"]
    assert grp.spec.outputs == (0, 2)
    _check(f, g, [grp], P.randn(4))


def test_non_pointwise_between_closes_the_group():
    def f(x, w):
        a = (x + 1).tanh()
        b = a @ w                    # reads a: the first group closes
        return (b * 2).sigmoid() + a.sum()
    g = _graph(f, P.ones(2, 3), P.ones(3, 3))
    steps = _fusion.fuse(g, compile=False)
    names = _ops(steps)
    assert names == [["add", "tanh"], "matmul", "sum", ["mul", "sigmoid", "add"]]
    _check(f, g, steps, P.randn(2, 3), P.randn(3, 3))


def test_mixed_dtypes_and_broadcasting_in_a_group():
    def f(i, x):
        return P.where(i > 2, x * i, x - 1.5).abs()
    g = _graph(f, P.arange(6).reshape(2, 3), P.ones(3))
    steps = _fusion.fuse(g, compile=False)
    assert _ops(steps) == [["gt", "mul", "sub", "where", "abs"]]
    _check(f, g, steps, P.arange(6).reshape(2, 3), P.randn(3))


def test_operand_limit_splits_groups():
    def f(*xs):
        acc = xs[0]
        for x in xs[1:]:
            acc = acc * x
        return acc
    args = [P.randn(4) for _ in range(10)]
    g = _graph(f, *args)
    steps = _fusion.fuse(g, compile=False)
    for s in steps:
        if isinstance(s, _fusion.Group):
            assert len(s.spec.inputs) + len(s.spec.outputs) <= 8
    assert len(steps) >= 2
    _check(f, g, steps, *args)


def test_mutation_turns_fusion_off():
    def f(x):
        y = x * 2
        y.add_(1)
        return y.exp()
    g = _graph(f, P.ones(2))
    assert _fusion.fuse(g, compile=False) == g.nodes


def test_a_real_fused_kernel_matches_the_eager_group(tmp_path, monkeypatch):
    from pytorchlite.jit import _fuser
    monkeypatch.setenv(_fuser.CACHE_ENV, str(tmp_path))

    def f(x, y):
        return ((x - y).exp() * 0.5 + y).tanh()
    g = _graph(f, P.ones(8), P.ones(8))
    (grp,) = _fusion.fuse(g, compile=True)
    assert isinstance(grp.kernel, _fuser.FusedKernel)
    a, b = P.randn(1000), P.randn(1000)
    (got,) = grp.kernel(a, b)
    (ref,) = _fusion.eager_group(grp.spec)(a, b)
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-6)
    assert os.listdir(tmp_path)


def test_stats_count_passes():
    before = jit.stats()
    g = _passes.optimize(_graph(lambda x: x.cos() + x.cos(), P.ones(1)))
    _fusion.fuse(g, compile=False)
    after = jit.stats()
    assert after["cse"] == before["cse"] + 1
    assert after["fused_groups"] == before["fused_groups"] + 1


@pytest.mark.parametrize("bad", [0])
def test_group_outputs_keep_eager_dtypes(bad):
    def f(x):
        return (x > bad) & (x < 3), (x + 1).float()
    g = _graph(f, P.arange(5))
    steps = _fusion.fuse(g, compile=False)
    _check(f, g, steps, P.arange(5))


def test_a_group_the_fuser_refuses_is_split(monkeypatch):
    from pytorchlite.jit import _fuser
    calls = []

    def picky(spec, device="cpu"):
        calls.append(len(spec.nodes))
        if len(spec.nodes) > 3:
            raise ValueError("too long for this fuser")
        return _fusion.eager_group(spec)
    monkeypatch.setattr(_fuser, "compile_group", picky)

    def f(x, y):
        for _ in range(4):
            x = (x * 1.5 + y).tanh()
        return x
    g = _graph(f, P.ones(3), P.ones(3))
    steps = _fusion.fuse(g, compile=True)
    assert calls[0] == 12 and all(isinstance(s, _fusion.Group) for s in steps)
    assert sum(len(s.nodes) for s in steps) == 12 and max(len(s.nodes) for s in steps) <= 3
    _check(f, g, steps, P.randn(3), P.randn(3))
