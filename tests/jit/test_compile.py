"""pytorchlite.compile: results equal eager, guards and recompiles, dynamic dims, the
bounded cache, value reads refused, gradients equal eager."""

import os
import warnings

import numpy as np
import pytest

import pytorchlite as P
from pytorchlite import jit


@pytest.fixture(scope="module", autouse=True)
def _jit_cache(tmp_path_factory):
    from pytorchlite.jit import _fuser
    old = os.environ.get(_fuser.CACHE_ENV)
    os.environ[_fuser.CACHE_ENV] = str(tmp_path_factory.mktemp("jit-cache"))
    yield
    if old is None:
        os.environ.pop(_fuser.CACHE_ENV, None)
    else:
        os.environ[_fuser.CACHE_ENV] = old


def _cheap(x, y):
    z = x * y + 1.0
    z = (z - x).relu() * 0.5
    z = P.where(z > 0.25, z, -z) / 3
    return z.sigmoid(), z.sum()


def test_compiled_equals_eager_and_fuses():
    f = P.compile(_cheap)
    a, b = P.randn(257), P.randn(257)
    before = jit.stats()["fused_groups"]
    for _ in range(2):
        got = f(a, b)
        want = _cheap(a, b)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-7)
    assert jit.stats()["fused_groups"] == before + 1
    assert "_k" in f.code and f.code.startswith("def _cheap(x, y):")


def test_guards_count_recompiles_and_log_them(monkeypatch, capsys):
    monkeypatch.setenv("PYTORCHLITE_LOGS", "recompiles")
    f = P.compile(lambda x: x * 2 + 1, backend="eager", dynamic=False)
    f(P.ones(3))
    f(P.ones(3))
    assert f.recompiles == 0
    f(P.ones(4))                                # shape
    f(P.ones(4, dtype=P.float64))               # dtype
    f(P.ones(4, dtype=P.float64).requires_grad_())
    with P.no_grad():
        f(P.ones(4, dtype=P.float64).requires_grad_())     # grad mode
    assert f.recompiles == 4
    err = capsys.readouterr().err
    assert "Recompiling function <lambda>: tensor 'x' size mismatch: expected (3,), actual (4,)" in err
    assert "tensor 'x' dtype mismatch: expected pytorchlite.float32, actual pytorchlite.float64" in err
    assert "requires_grad mismatch" in err and "grad mode changed" in err
    f(P.ones(3))                                # every entry is still cached
    assert f.recompiles == 4
    n = jit.stats()["traces"]
    f(P.ones(4))
    assert jit.stats()["traces"] == n


def test_python_numbers_are_guarded_by_value():
    f = P.compile(lambda x, k: x * k, backend="eager")
    assert f(P.ones(2), 2).tolist() == [2.0, 2.0]
    assert f(P.ones(2), 3).tolist() == [3.0, 3.0]
    assert f.recompiles == 1


def test_automatic_dynamic_after_a_shape_miss():
    f = P.compile(lambda x, y: (x + y).tanh() * 2, backend="eager")
    f(P.ones(2, 3), P.ones(3))
    f(P.ones(5, 3), P.ones(3))                  # a shape-only miss: traced again, found size-independent
    assert f.recompiles == 1 and f.graphs[-1].dynamic
    assert "Float(*, *, strides=[*, *]" in str(f.graphs[-1])
    a, b = P.randn(7, 4), P.randn(4)
    np.testing.assert_allclose(f(a, b).numpy(), ((a + b).tanh() * 2).numpy(), rtol=1e-6)
    assert f.recompiles == 1


def test_dynamic_true_and_shape_dependent_code():
    f = P.compile(lambda x: x.exp() - 1, backend="eager", dynamic=True)
    f(P.ones(2))
    f(P.ones(9))
    assert f.recompiles == 0

    def g(x):
        return x.reshape(x.shape[0] * x.shape[1])      # reads sizes: stays static
    cg = P.compile(g, backend="eager", dynamic=True)
    cg(P.ones(2, 3))
    assert cg(P.ones(4, 5)).shape == (20,)
    assert cg.recompiles == 1 and not cg.graphs[-1].dynamic


def test_cache_size_limit(monkeypatch):
    monkeypatch.setattr(jit.config, "cache_size_limit", 2)
    f = P.compile(lambda x, k: x + k, backend="eager")
    f(P.ones(1), 1)
    f(P.ones(1), 2)
    with pytest.warns(UserWarning, match=r"hit config.cache_size_limit \(2\)"):
        assert f(P.ones(1), 3).tolist() == [4.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f(P.ones(1), 4).tolist() == [5.0]        # eager from now on, warned once
    assert len(f.graphs) == 2


def test_value_reads_raise_under_compile():
    def f(x):
        return x if x.sum() > 0 else -x
    with pytest.raises(jit.TracingError, match=r"pytorchlite.compile: `bool\(\)`.*test_compile.py:\d+"):
        P.compile(f)(P.ones(2))


def test_gradients_match_eager_float64_with_a_fused_backward():
    def f(x, w):
        h = (x @ w).tanh() * 2 + x.sum(dim=1, keepdim=True)
        return (h.sigmoid() * h).sum()
    cf = P.compile(f)
    x = P.randn(4, 3, dtype=P.float64)
    w = P.randn(3, 5, dtype=P.float64)
    for _ in range(2):                          # the miss (traced) and a hit (compiled)
        xs = [x.clone().requires_grad_() for _ in range(2)]
        ws = [w.clone().requires_grad_() for _ in range(2)]
        cf(xs[0], ws[0]).backward()
        f(xs[1], ws[1]).backward()
        np.testing.assert_allclose(xs[0].grad.numpy(), xs[1].grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(ws[0].grad.numpy(), ws[1].grad.numpy(), rtol=1e-12)
    # the backward is a fused graph of its own (derived from derivatives.yaml formulas)
    bwd = str(cf._entries[-1].backward_graph)
    assert "aten::mm(" in bwd and "aten::transpose(%x" in bwd
    # double backward through the fused backward is refused, clearly
    xg = x.clone().requires_grad_()
    cf(xg, w)                                   # traced (an eager result); the next call is compiled
    with pytest.raises(RuntimeError, match="double backward through compiled f is not supported"):
        P.autograd.grad(cf(xg, w), xg, create_graph=True)
    # with grad off the same function runs fused
    with P.no_grad():
        np.testing.assert_allclose(cf(x, w).item(), f(x, w).item(), rtol=1e-12)


def test_backward_of_broadcasts_python_numbers_and_unused_inputs():
    def f(x, b, unused, k):
        return ((x * b + k).exp() / (b - 3)).sum(dim=0), (x.abs() ** 1.5).mean()
    cf = P.compile(f)
    x = P.randn(5, 4, dtype=P.float64)
    b = P.randn(4, dtype=P.float64)
    u = P.randn(2, dtype=P.float64)
    for k in (0.5, 0.5, 2.0):
        ins = [[t.clone().requires_grad_() for t in (x, b, u)] for _ in range(2)]
        for fn, (xi, bi, ui) in zip((cf, f), ins):
            o1, o2 = fn(xi, bi, ui, k)
            (o1.sum() * 2 + o2 * 3).backward()
        for (a, e) in zip(ins[0], ins[1]):
            assert (a.grad is None) == (e.grad is None)
            if a.grad is not None:
                np.testing.assert_allclose(a.grad.numpy(), e.grad.numpy(), rtol=1e-12)
    assert cf.recompiles == 1


def test_gradcheck_through_compiled():
    cf = P.compile(lambda x, y: (x.sin() * y + y.exp()).tanh())
    x = P.randn(3, 2, dtype=P.float64, requires_grad=True)
    y = P.randn(2, dtype=P.float64, requires_grad=True)
    cf(x, y)                                     # the trace; gradcheck then runs the fused entry
    assert P.autograd.gradcheck(cf, (x, y))


def test_module_mode_is_guarded():
    P.manual_seed(0)
    m = P.nn.Sequential(P.nn.Linear(4, 4), P.nn.Dropout(0.5))
    cm = P.compile(m, backend="eager")
    x = P.ones(3, 4)
    with P.no_grad():
        cm(x)
        m.eval()                                 # the original module switched: a guard miss
        np.testing.assert_allclose(cm(x).numpy(), m[0](x).numpy(), rtol=1e-6)
    assert cm.recompiles == 1


def test_backward_that_cannot_be_captured_runs_eagerly():
    def f(x):
        y = x * 2
        y.add_(1)                                # in-place: no joint graph
        return y.exp().sum(), x.argmax()
    cf = P.compile(f)
    for _ in range(2):
        xs = P.randn(5, dtype=P.float64).requires_grad_()
        xe = xs.detach().clone().requires_grad_()
        cf(xs)[0].backward()
        f(xe)[0].backward()
        np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-12)
    assert cf._entries[-1].backward_graph is None and cf.recompiles == 0


def test_compiled_module_training_matches_eager():
    def run(compiled):
        P.manual_seed(3)
        m = P.nn.Sequential(P.nn.Linear(8, 16), P.nn.GELU(), P.nn.Linear(16, 4))
        step_model = P.compile(m) if compiled else m
        opt = P.optim.SGD(m.parameters(), lr=0.1)
        x, y = P.randn(32, 8), P.randint(0, 4, (32,))
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = P.nn.functional.cross_entropy(step_model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        with P.no_grad():
            out = step_model(x)
        return losses, out, step_model
    le, oe, _ = run(False)
    lc, oc, cm = run(True)
    np.testing.assert_allclose(lc, le, rtol=1e-6)
    np.testing.assert_allclose(oc.numpy(), oe.numpy(), rtol=1e-5, atol=1e-6)
    assert cm.recompiles == 1                   # grad on, then no_grad


def test_decorator_forms_and_bad_arguments():
    @P.compile
    def f(x):
        return x + 1

    @P.compile(backend="eager", dynamic=False)
    def g(x):
        return x - 1
    assert f(P.zeros(1)).tolist() == [1.0] and g(P.zeros(1)).tolist() == [-1.0]
    assert P.compile(f.__wrapped__, disable=True) is f.__wrapped__
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        P.compile(f, backend="nope")
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast"):
        P.compile(f, mode="fast")
    with pytest.raises(RuntimeError, match="model must be a callable"):
        P.compile(3)


def test_matches_torch_when_installed():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(0).standard_normal(100).astype(np.float32)
    b = np.random.default_rng(1).standard_normal(100).astype(np.float32)
    got = P.compile(_cheap)(P.tensor(a), P.tensor(b))
    ta, tb = torch.tensor(a), torch.tensor(b)
    z = ((ta * tb + 1.0 - ta).relu() * 0.5)
    z = torch.where(z > 0.25, z, -z) / 3
    np.testing.assert_allclose(got[0].numpy(), z.sigmoid().numpy(), rtol=1e-6)
    np.testing.assert_allclose(got[1].item(), z.sum().item(), rtol=1e-5)


def test_a_compiled_function_inside_traced_code_is_inlined():
    inner = P.compile(lambda x: (x * 3).exp())
    inner(P.ones(4))
    inner(P.ones(4))                             # a fused entry exists

    def outer(x):
        return inner(x) + 1
    t = jit.trace(outer, P.ones(4))
    g = str(t.graph)
    assert "aten::exp(" in g and "prim::Constant[value=<Tensor>]" not in g
    a = P.randn(4)
    np.testing.assert_allclose(t(a).numpy(), ((a * 3).exp() + 1).numpy(), rtol=1e-6)
    nested = P.compile(outer)
    np.testing.assert_allclose(nested(a).numpy(), ((a * 3).exp() + 1).numpy(), rtol=1e-6)
