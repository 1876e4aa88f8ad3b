"""jit.trace: graphs recorded through operator interception, printed as TorchScript IR,
run as generated Python; value reads refused with the user's line."""

import re

import numpy as np
import pytest

import pytorchlite as P
from pytorchlite import jit


def _chain(x, y):
    z = x + y * 2
    w = (z / 3).sigmoid()
    return w, z[0], (x @ y.t()).sum(dim=1)


def test_graph_prints_like_torchscript():
    t = jit.trace(_chain, (P.ones(2, 3), P.ones(2, 3)))
    g = str(t.graph)
    assert g.startswith("graph(%x : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu),\n"
                        "      %y : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)):\n")
    assert re.search(r"%\d+ : int = prim::Constant\[value=2\]\(\)", g)
    assert re.search(r"%\d+ : Float\(2, 3, strides=\[3, 1\], requires_grad=0, device=cpu\) = aten::mul\(%y, %\d+\)", g)
    # a composite (div) is recorded as its pointwise part
    assert "aten::_div_true(" in g and "aten::div(" not in g
    assert "aten::__getitem__(" in g and "aten::matmul(" in g or "aten::mm(" in g
    assert g.rstrip().splitlines()[-1].startswith("  return (%")


def test_results_equal_eager_and_code_is_python():
    t = jit.trace(_chain, (P.ones(2, 3), P.ones(2, 3)))
    a, b = P.randn(2, 3), P.randn(2, 3)
    for got, want in zip(t(a, b), _chain(a, b)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert t.code.startswith("def _chain(x, y):\n")
    compile(t.code, "<code>", "exec")        # valid Python source


def test_module_parameters_are_inputs_and_current_values_are_used():
    P.manual_seed(0)
    m = P.nn.Sequential(P.nn.Linear(3, 4), P.nn.ReLU(), P.nn.Linear(4, 2))
    x = P.randn(5, 3)
    tm = jit.trace(m, x)
    names = [v.name for v in tm.graph.inputs]
    assert names == ["input", "0.weight", "0.bias", "2.weight", "2.bias"]
    assert "%0.weight : Float(4, 3, strides=[3, 1], requires_grad=1, device=cpu)" in str(tm.graph)
    np.testing.assert_allclose(tm(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
    with P.no_grad():
        m[0].weight.mul_(-2.0)              # training in place: the traced module sees it
    np.testing.assert_allclose(tm(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6)


def test_gradients_flow_through_a_traced_graph():
    def f(x, w):
        return (x.matmul(w).tanh() * x.sum()).exp().mean()
    x = P.randn(3, 4, dtype=P.float64)
    w = P.randn(4, 2, dtype=P.float64)
    t = jit.trace(f, (x, w))
    xs = [x.clone().requires_grad_(), x.clone().requires_grad_()]
    ws = [w.clone().requires_grad_(), w.clone().requires_grad_()]
    t(xs[0], ws[0]).backward()
    f(xs[1], ws[1]).backward()
    np.testing.assert_allclose(xs[0].grad.numpy(), xs[1].grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(ws[0].grad.numpy(), ws[1].grad.numpy(), rtol=1e-10)


def test_inplace_setitem_and_constants_replay():
    c = P.tensor([10.0, 20.0, 30.0])

    def f(x):
        y = x.clone()
        y[1] = 0.0
        y.add_(c)
        return y * P.ones(3)
    t = jit.trace(f, P.zeros(3))
    g = str(t.graph)
    assert "aten::__setitem__(" in g and "aten::add_(" in g and "aten::ones(" in g
    assert "prim::Constant[value=<Tensor>]" in g
    a = P.tensor([1.0, 2.0, 3.0])
    assert t(a).tolist() == [11.0, 20.0, 33.0]
    assert a.tolist() == [1.0, 2.0, 3.0]


def _line_of(fn, text):
    import inspect
    src, start = inspect.getsourcelines(fn)
    return start + next(i for i, s in enumerate(src) if text in s)


def _branchy(x):
    if x.sum() > 0:
        return x
    return -x


def _item(x):
    return x * x.max().item()


def _tolist(x):
    return P.tensor(x.tolist())


def _numpy(x):
    return x.numpy() * 2


@pytest.mark.parametrize("fn,text,what", [(_branchy, "if x.sum() > 0", "bool()"), (_item, ".item()", ".item()"),
                                          (_tolist, ".tolist()", ".tolist()"), (_numpy, ".numpy()", ".numpy()")])
def test_value_reads_raise_with_the_users_line(fn, text, what):
    with pytest.raises(jit.TracingError) as e:
        jit.trace(fn, P.ones(3))
    msg = str(e.value)
    assert f"{__file__}:{_line_of(fn, text)}" in msg, msg
    assert what in msg and "jit.trace" in msg


def test_values_of_untraced_tensors_may_be_read():
    k = P.tensor(3.0)

    def f(x):
        return x * k.item()
    t = jit.trace(f, P.ones(2))
    assert t(P.tensor([1.0, 2.0])).tolist() == [3.0, 6.0]


def test_bad_inputs():
    with pytest.raises(TypeError, match="example input 0 is a dict"):
        jit.trace(lambda d: d, ({"a": 1},))
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        jit.trace(lambda x: x, P.ones(1), bogus=1)
    t = jit.trace(lambda x, y: x + y, (P.ones(1), P.ones(1)))
    with pytest.raises(TypeError, match="takes 2 positional arguments but 1 were given"):
        t(P.ones(1))


def test_argument_names_never_meet_generated_names():
    def f(v1, c0, _x):
        return (v1 + c0) * _x + P.tensor([1.0, 2.0])
    a, b, c = P.tensor([1.0, 2.0]), P.tensor([3.0, 4.0]), P.tensor([2.0, 2.0])
    t = jit.trace(f, (a, b, c))
    assert t(a, b, c).tolist() == f(a, b, c).tolist() == [9.0, 14.0]
    assert t.code.startswith("def f(v1, c0, a_x):")


def test_other_threads_are_not_recorded():
    import threading
    started, release = threading.Event(), threading.Event()

    def other():
        started.set()
        while not release.is_set():
            P.ones(2).exp()

    th = threading.Thread(target=other)
    th.start()
    started.wait()
    try:
        t = jit.trace(lambda x: x.sin(), P.ones(2))
    finally:
        release.set()
        th.join()
    assert [n.site.name for n in t.graph.nodes] == ["sin"]
