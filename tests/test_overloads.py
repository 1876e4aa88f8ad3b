"""Overloads (ops.yaml `name.overload` entries): the generated parser picks the overload
PyTorch's python_arg_parser picks, and raises PyTorch's error, word for word, when none
fits; aliases (`alias_of:`) behave as their target under their own name.

Each case is an expression run with pytorchlite and with PyTorch (`L` is the library,
the tensors are that library's): the results must be equal, or both must raise the same
exception type with the same message (`torch.` read as `pytorchlite.`).
"""

import inspect

import numpy as np
import pytest

import pytorchlite as P
from pytorchlite.generated import functions as F

from parity import torch_or_missing  # noqa: E402

torch = torch_or_missing()      # without PyTorch, a test that calls it is skipped

_DATA = {
    "x": np.array([[1., 5., 3.], [4., 2., 6.]], dtype=np.float32),
    "sq": np.array([[4., 1.], [2., 3.]], dtype=np.float32),
    "xi": np.array([[1, 0, 3], [0, 2, 6]], dtype=np.int64),
    "c": np.array([[False, True, True], [True, False, False]]),
    "r": np.array([1, 2], dtype=np.int64),
    "i0": np.array(2, dtype=np.int64),
    "i1": np.array([1, 2], dtype=np.int64),
    "f0": np.array(2.5, dtype=np.float32),
}


def _env(lib):
    env = {"L": lib, "DT": lib.int32, "np": np}
    for k, v in _DATA.items():
        env[k] = lib.tensor(v)
    return env


CASES = [
    # max / min: max(), max.other, max.dim, in PyTorch's order
    "L.max(x)", "L.max(x, 1)", "L.max(x, 0, True)", "L.max(x, dim=1)", "L.max(x, 1, keepdim=True)",
    "L.max(x, x)", "L.max(x, other=x)", "L.max(input=x, other=x)", "L.max(x, i0.reshape(()) * 0)",
    "L.max(x, -1)", "L.max(x, 2)", "L.max(x, np.int64(1))", "L.max(x, dim=np.int32(0))",
    "L.max(x, 'a')", "L.max(x, 1, 'a')", "L.max(x, dim='a')", "L.max(x, 1, keepdim=1)", "L.max(x, foo=1)",
    "L.max()", "L.max(x, x, x)", "L.max(x, 1.5)", "L.max(x, 1, True, 5)", "L.max(x, 'a', keepdim=True)",
    "L.max(x, 1, out=1)", "L.max(x, x, out=1)", "L.max(x, other=1)",
    "x.max()", "x.max(0)", "x.max(x)", "x.max(dim=i0 - 1)", "x.max('a')", "x.max(1, 2, 3)",
    "L.min(x)", "L.min(x, 1)", "L.min(x, x)", "L.min(x, 'a')", "x.min(1, True)", "x.min(x * 0.5)",
    # where: the condition alone (nonzero as a tuple) and the three-argument form
    "L.where(c)", "L.where(condition=c)", "L.where(c, x, 0.5)", "L.where(c, x, x * 2)", "x.where(c, 0.)",
    "L.where(c, x, other=x, out=1)",
    # view(dtype) / view(size)
    "x.view(6)", "x.view(np.int64(6))", "x.view(3, 2)", "x.view((3, 2))", "x.view([-1])", "x.view(size=(6,))", "x.view(DT)",
    "x.view(dtype=DT)", "x.view('a')", "x.view(1.5)", "x.view(dtype='a')", "x.view(size='a')", "x.view()",
    # split with a size or a list of sizes
    "L.split(x, 1)", "L.split(x, [1, 1])", "L.split(x, 2, 1)", "L.split(x, [1, 2], dim=1)", "x.split(1)",
    "x.split([2, 1], 1)", "x.split(i0 - 1)",
    # tensor_split with indices, a tensor, or a number of sections
    "L.tensor_split(x, 2)", "L.tensor_split(x, [1])", "L.tensor_split(x, (1, 2), 1)", "L.tensor_split(x, i0, 1)",
    "L.tensor_split(x, i1, 1)", "L.tensor_split(x, 'a')", "L.tensor_split(x, 1, 1, 1)", "x.tensor_split('a')",
    "x.tensor_split(3, dim=1)", "L.tensor_split(x, f0)",
    # nonzero(as_tuple)
    "L.nonzero(xi)", "L.nonzero(xi, as_tuple=True)", "L.nonzero(xi, as_tuple=False)", "xi.nonzero(as_tuple=True)",
    "L.nonzero(xi, as_tuple=1)", "L.nonzero(xi, 1)", "xi.nonzero(as_tuple='a')",
    # norm with a number or a string
    "L.norm(x)", "L.norm(x, 'fro')", "L.norm(x, 'nuc')", "L.norm(x, 1)", "L.norm(x, 3, 1)", "L.norm(x, 'fro', 1)",
    "x.norm(p='fro', dim=(0, 1))", "x.norm(2, 1, True)", "L.norm(x, 'a')",
    # clamp / clip with Numbers or Tensors
    "L.clamp(x, 2, 4)", "L.clamp(x, min=f0)", "L.clamp(x, f0, f0 * 2)", "L.clamp(x, 'a')", "L.clip(x, 'a')",
    "L.clip(x, max=3)", "x.clamp(max=f0)", "x.clone().clamp_(2, 3)",
    # repeat_interleave with a tensor of counts, a count, or the counts alone
    "L.repeat_interleave(xi, 2)", "L.repeat_interleave(r)", "L.repeat_interleave(xi, r, dim=0)",
    "xi.repeat_interleave(2, dim=1)", "L.repeat_interleave(x, {})",
    # linalg: orders as numbers or strings
    "L.linalg.matrix_norm(x, 1)", "L.linalg.matrix_norm(x)", "L.linalg.matrix_norm(x, 'nuc')",
    "L.linalg.matrix_norm(x, 1, 1, 1, 1, 1)", "L.linalg.matrix_norm(x, {})", "L.linalg.norm(x, 'fro')",
    "L.linalg.norm(x, 2, 1)", "L.linalg.norm(x, {})", "L.linalg.cond(sq, 'fro')", "L.linalg.cond(sq, 1)",
    "L.linalg.cond(sq, {})",
    # the deprecated positional tolerances of pinv and matrix_rank
    "L.linalg.pinv(sq, 0.1)", "L.linalg.pinv(sq, f0 * 0, True)", "L.linalg.matrix_rank(sq, 1.)",
    "L.linalg.matrix_rank(sq, tol=f0)", "L.linalg.matrix_rank(sq, hermitian=True)",
    # normal with Tensors or numbers for mean and std
    "L.normal(x, x * 0).shape", "str(L.normal(x, 0.).dtype).split('.')[-1]", "L.normal(0., x * 0 + 1).shape",
    "L.normal(1., 0., (2,), dtype=L.float64)", "L.normal(x, x, (2,))", "L.normal(0., 1.)",
    "L.normal(x, x, requires_grad=True)", "L.normal(x, 1., size=(2,))", "L.normal(x, -1.)",
    # bernoulli_ with a tensor or a number
    "x.clone().bernoulli_(x * 0).sum()", "x.clone().bernoulli_(1.)", "x.clone().bernoulli_({})",
    "x.clone().bernoulli_(p=x * 0 + 1)", "x.clone().bernoulli_(1.5)",
    # aliases: the target's result, errors in the alias's name
    "L.absolute(x - 3)", "L.absolute('a')", "L.arccos(1)", "L.multiply(x, 2)", "L.divide(x, 2, rounding_mode='floor')",
    "L.greater(x, 2)", "x.greater(2)", "(x - 3).absolute_()", "L.concat([x, x], 1)", "L.true_divide(xi, 2)",
]


def _run(lib, expr):
    try:
        return "ok", eval(expr, _env(lib))
    except Exception as e:    # the exception is the result compared
        return "raised", (type(e).__name__, str(e).replace("torch.", "pytorchlite."))


def _value(r):
    if isinstance(r, (tuple, list)):
        return [_value(v) for v in r]
    if hasattr(r, "dtype") and hasattr(r, "shape"):
        return (str(r.dtype).rsplit(".", 1)[-1], tuple(r.shape), np.asarray(r.tolist()))
    return r


def _same(a, b):
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, tuple) and len(a) == 3 and isinstance(a[2], np.ndarray):
        return a[:2] == b[:2] and np.allclose(a[2], b[2], rtol=1e-5, atol=1e-6, equal_nan=True)
    return a == b


@pytest.mark.parametrize("expr", CASES)
def test_overload_parity_with_pytorch(expr):
    want = _run(torch, expr)
    got = _run(P, expr)
    assert got[0] == want[0], f"{expr}: pytorchlite {got}, PyTorch {want}"
    if want[0] == "raised":
        assert got[1] == want[1], f"{expr}:\n  pytorchlite {got[1]}\n  PyTorch     {want[1]}"
    else:
        assert _same(_value(got[1]), _value(want[1])), f"{expr}: {got[1]} != {want[1]}"


def test_where_error_lists_its_two_overloads():
    # PyTorch declares where(condition, Number, ...) overloads beside where.self; here
    # where.self takes Numbers itself (tensor_scalars), so the error lists two forms
    with pytest.raises(TypeError) as e:
        P.where(P.tensor([True]), P.tensor([1.]))
    assert str(e.value) == ("where() received an invalid combination of arguments - got (Tensor, Tensor), but "
                            "expected one of:\n * (Tensor condition)\n * (Tensor condition, Tensor input, Tensor "
                            "other, *, Tensor out = None)\n")


@pytest.mark.parametrize("expr", ["L.max(x)", "L.max(x, 1)[0]", "L.min(x)", "L.min(x, 0).values", "L.max(x, x * 2)",
                                  "L.absolute(x)", "L.clip(x, 2)", "L.split(x, 1)[0]", "L.split(x, [1, 1])[1]",
                                  "L.where(c, x, 0.)", "x.view(6)", "L.norm(x, 'fro')"])
def test_gradients_and_nodes_follow_the_overload(expr):
    """The chosen overload's derivative runs; where PyTorch's node is the same operator's,
    its name is the same too."""
    def grad_of(lib):
        env = _env(lib)
        env["x"] = env["x"].double().requires_grad_()
        out = eval(expr, env)
        out.sum().backward()
        return out.grad_fn.name(), env["x"].grad.tolist()
    (pn, pg), (tn, tg) = grad_of(P), grad_of(torch)
    assert np.allclose(pg, tg), (expr, pg, tg)
    if expr not in ("L.split(x, [1, 1])[1]", "L.norm(x, 'fro')", "L.clip(x, 2)"):   # (composites here)
        assert pn == tn, (expr, pn, tn)


def test_single_overload_names_keep_their_bindings():
    # no parser on the hot path: a + b, x.relu(), add(...) are the plain generated bindings
    assert P.add is F.add and P.Tensor.relu is F._m_relu and P.Tensor.add_ is F._m_add_
    # an overloaded name is the generated parser, in the namespace and on Tensor alike
    assert P.max is F.max and P.Tensor.max is F._m_max and P.Tensor.view is F._m_view
    assert P.split is F.split and P.Tensor.nonzero is F._m_nonzero


def test_aliases_run_their_target():
    x = P.tensor([-1.5, 2.], requires_grad=True)
    y = P.absolute(x)
    assert y.grad_fn.name() == "AbsBackward0"
    with pytest.raises(TypeError, match=r"^absolute\(\): argument 'input' \(position 1\) must be Tensor, not str$"):
        P.absolute("a")
    with pytest.raises(TypeError, match=r"^clip\(\) received an invalid combination of arguments"):
        P.clip(x, "a")
    z = P.tensor([-2, 3])
    assert z.absolute_() is z and z.tolist() == [2, 3]


def test_overloaded_docstring_lists_every_form():
    doc = inspect.cleandoc(P.max.__doc__)
    assert doc.splitlines()[:3] == ["max(input, *, out=None)", "max(input, other, *, out=None)",
                                    "max(input, dim, keepdim=False, *, out=None)"]
