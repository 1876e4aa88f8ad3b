"""jit.script: a subset of Python compiled from source into prim::If / prim::Loop graphs
that keep data-dependent control flow; constructs outside the subset are errors naming
the construct and the line."""

import inspect

import numpy as np
import pytest

import pytorchlite as torch
from pytorchlite import jit


def _branchy(x, y, n: int):
    z = x * 2
    for i in range(n):
        if (z * y).sum() > 0:
            z = z - y
        elif z.mean() < -1:
            z = z + 1
        else:
            z = torch.sigmoid(z) + i
    k = 0
    while z.abs().max() > 1:
        z = z / 2
        k += 1
    a, b = z, k
    return a * x.shape[0] + b


def test_control_flow_follows_the_data():
    f = jit.script(_branchy)
    rng = np.random.default_rng(0)
    for _ in range(6):
        x = torch.tensor(rng.standard_normal(4) * 3)
        y = torch.tensor(rng.standard_normal(4))
        for n in (0, 1, 3):
            np.testing.assert_allclose(f(x, y, n).numpy(), _branchy(x, y, n).numpy(), rtol=1e-12)


def test_graph_has_if_and_loop_blocks():
    g = jit.script(_branchy).graph
    assert g.startswith("graph(%x : Tensor, %y : Tensor, %n : int):")
    assert g.count("prim::If(") == 2 and g.count("prim::Loop(") == 2
    assert "block0(" in g and "block1(" in g and "-> (" in g and "aten::sigmoid(" in g
    assert "def _branchy(x, y, n):" in jit.script(_branchy).code


def _line(fn, text):
    src, start = inspect.getsourcelines(fn)
    return start + next(i for i, s in enumerate(src) if text in s)


def _with(x):
    with torch.no_grad():
        return x


def _break(x):
    for i in range(3):
        break
    return x


def _early_return(x):
    if x.sum() > 0:
        return x
    return -x


def _list(x):
    y = [x, x]
    return y


def _undefined(x):
    if x.sum() > 0:
        y = x
    return y


def _subscript(x):
    return x[0]


@pytest.mark.parametrize("fn,text,construct", [
    (_with, "with torch.no_grad()", "with statements"),
    (_break, "break\n", "break statements"),
    (_early_return, "return x", "return statements other than the function's last statement"),
    (_list, "y = [x, x]", "list literals"),
    (_undefined, "return y", "undefined value y"),
    (_subscript, "x[0]", "indexing"),
])
def test_unsupported_constructs_name_the_construct_and_line(fn, text, construct):
    with pytest.raises(jit.UnsupportedNodeError) as e:
        jit.script(fn)
    msg = str(e.value)
    assert construct in msg and f"{__file__}:{_line(fn, text)}" in msg, msg


def test_bad_arguments():
    with pytest.raises(TypeError, match="expected a Python function, got Linear"):
        jit.script(torch.nn.Linear(2, 2))
