"""The pointwise fast path (pytorchlite/_kernels/pointwise.py `run`) against the general
path (`_run_general`) and PyTorch.

The fast path takes contiguous same-dtype, same-shape CPU tensors, Python numbers that do
not change the result dtype, and out=/in-place tensors that are exactly the result. It
must give what the general path gives: dtype, values, version counters and errors. Every
pointwise operator of the dispatch table runs through both paths here over every dtype,
with tensor and Python-number operands, new outputs, out= and in-place.
"""

import math

import numpy as np
import pytest

import pytorchlite
from pytorchlite import _dtype as D
from pytorchlite._kernels import pointwise as pw
from pytorchlite.generated import dispatch

POINTWISE = sorted((op for op in dispatch.TABLE.values() if op.kind == "pointwise"), key=lambda op: op.name)
BINARY = [op for op in POINTWISE if len(op.inputs) >= 2]
# torch.where warns about uint8 conditions, and so does pytorchlite (on purpose)
pytestmark = pytest.mark.filterwarnings("ignore:where received a uint8 condition tensor")

DTYPES = [D.bool, D.uint8, D.int8, D.int32, D.int64, D.float16, D.bfloat16, D.float32, D.float64]
NUMBERS = [True, False, 0, 3, -2, 1.5, -0.0, 0.25, math.inf, math.nan]
VALUES = [-3, -1, 0, 1, 2, 3, 5, 7]


def _tensor(dtype, values=VALUES):
    return pytorchlite.tensor(values, dtype=D.float64).to(dtype)


def _values(t):
    """A tensor's dtype and values as float64 NumPy (bfloat16 has no NumPy type)."""
    return t.dtype, t.detach().to(D.float64).numpy().copy()


def _outcome(fn):
    """('ok', dtype, values) or ('error', type, message) of calling fn."""
    try:
        r = fn()
    except Exception as e:  # the same error from both paths is what is checked
        return ("error", type(e), str(e))
    return ("ok",) + _values(r)


def _same(a, b):
    assert a[0] == b[0], (a, b)
    if a[0] == "error":
        assert a[1:] == b[1:]
        return
    assert a[1] is b[1]
    np.testing.assert_array_equal(a[2], b[2])


def _scalars(op):
    return tuple(1 for _ in op.scalars)


@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.name)
def test_number_operand_matches_general_path(op):
    for dt in DTYPES:
        for v in NUMBERS:
            operands = (_tensor(dt),) + (v,) * (len(op.inputs) - 1)
            fast = _outcome(lambda: pw.run(op, operands, _scalars(op), None, False))
            general = _outcome(lambda: pw._run_general(op, operands, _scalars(op), None, False))
            _same(fast, general)


@pytest.mark.parametrize("op", POINTWISE, ids=lambda op: op.name)
def test_tensor_operands_out_and_inplace_match_general_path(op):
    n = len(op.inputs)
    for dt in DTYPES:
        ins = [_tensor(dt, VALUES[k:] + VALUES[:k]) for k in range(n)]
        # new output
        _same(_outcome(lambda: pw.run(op, tuple(ins), _scalars(op), None, False)),
              _outcome(lambda: pw._run_general(op, tuple(ins), _scalars(op), None, False)))
        # out=, of each dtype (only the result dtype takes the fast path)
        for odt in (dt, D.bool, D.float32):
            outs = [pytorchlite.empty(len(VALUES), dtype=odt) for _ in range(2)]
            res = []
            for out, fn in zip(outs, (pw.run, pw._run_general)):
                before = out._version
                r = _outcome(lambda: fn(op, tuple(ins), _scalars(op), out, False))
                res.append((r, out._version - before, _values(out) if r[0] == "ok" else None))
            _same(res[0][0], res[1][0])
            assert res[0][1] == res[1][1]
            if res[0][2] is not None:
                np.testing.assert_array_equal(res[0][2][1], res[1][2][1])
        # in-place on a copy of the first operand
        res = []
        for fn in (pw.run, pw._run_general):
            target = ins[0].clone()
            before = target._version
            r = _outcome(lambda: fn(op, (target,) + tuple(ins[1:]), _scalars(op), target, True))
            res.append((r, target._version - before))
        _same(res[0][0], res[1][0])
        assert res[0][1] == res[1][1]


@pytest.mark.parametrize("op", POINTWISE, ids=lambda op: op.name)
def test_strided_tier_matches_general_path(op):
    """The second tier (pw._run_strided: one dtype, broadcasting or strided operands, a new
    output, geometry cached) gives what the general path gives, or declines."""
    n = len(op.inputs)
    for dt in DTYPES:
        base = [_tensor(dt, VALUES[k:] + VALUES[:k]) for k in range(n)]
        layouts = [
            [b.view(2, 4) if k == 0 else b[:4] for k, b in enumerate(base)],                 # (2, 4) with (4,)
            [b.view(2, 4).t() if k == 0 else b.view(4, 2) for k, b in enumerate(base)],      # transposed
            [b.view(8, 1) if k == 0 else b.view(1, 8) for k, b in enumerate(base)],          # outer product
            [b[::2] for b in base],                                                          # step-sliced
        ]
        for ins in layouts:
            for _ in range(2):      # the second call takes the cached geometry
                try:
                    r = pw._run_strided(op, tuple(ins), _scalars(op))
                except Exception as e:  # the same error as the general path's is what is checked
                    fast = ("error", type(e), str(e))
                else:
                    if r is None:
                        continue
                    fast = ("ok",) + _values(r)
                _same(fast, _outcome(lambda: pw._run_general(op, tuple(ins), _scalars(op), None, False)))
    if n >= 2:   # shapes that do not broadcast are left to the general path, which raises
        assert pw._run_strided(op, (pytorchlite.ones(3), pytorchlite.ones(4)) + (pytorchlite.ones(3),) * (n - 2),
                               _scalars(op)) is None


OPERATORS = [("__add__", "add"), ("__sub__", "sub"), ("__mul__", "mul"), ("__truediv__", "_div_true")]


@pytest.mark.parametrize("dunder,name", OPERATORS)
def test_specialised_operators_match_general_path(dunder, name):
    """Tensor.__add__ and co. take a path specialised to two same-dtype, same-shape
    contiguous tensors with nothing to record (the generated TensorMethods operators, codegen/templates/functions.py.j2); it must agree with
    the general path in dtype, values and errors (bool - bool), and hand everything else
    (broadcasting, mixed dtypes, strides, gradients) to the binding."""
    op = getattr(dispatch, "OP_" + name)
    fn = getattr(pytorchlite.Tensor, dunder)
    for dt in DTYPES:
        a, b = _tensor(dt), _tensor(dt, VALUES[3:] + VALUES[:3])
        _same(_outcome(lambda: fn(a, b)), _outcome(lambda: pw._run_general(op, (a, b), _scalars(op), None, False)))
        # a result never aliases an operand, and the operands' versions do not move
        r = _outcome(lambda: fn(a, b))
        if r[0] == "ok":
            out = fn(a, b)
            assert out.data_ptr() not in (a.data_ptr(), b.data_ptr()) and a._version == b._version == 0
    x = pytorchlite.arange(6.0).view(2, 3)
    y = pytorchlite.arange(1.0, 7.0).view(3, 2).t()           # strided
    for other in (y, pytorchlite.ones(3), pytorchlite.ones(2, 3, dtype=D.int64), 2.5):
        _same(_outcome(lambda: fn(x, other)), _outcome(lambda: getattr(pytorchlite, name)(x, other)))
    # gradients are recorded (through the binding)
    w = pytorchlite.ones(3, requires_grad=True)
    out = fn(w, pytorchlite.full((3,), 2.0))
    assert out.grad_fn is not None
    out.sum().backward()
    assert w.grad is not None


@pytest.mark.parametrize("dt", [D.int32, D.float32, D.float64])
def test_out_aliasing_an_input(dt):
    for fn in (pw.run, pw._run_general):
        a = _tensor(dt)
        want = _values(a + a)[1]
        r = fn(dispatch.OP_add, (a, a), (1,), a, False)   # out is an input: written directly
        assert r is a and a._version == 1
        np.testing.assert_array_equal(_values(a)[1], want)
    # out overlapping an input at another offset: both paths refuse it, as PyTorch does,
    # before writing anything
    for fn in (pw.run, pw._run_general):
        base = _tensor(dt, list(range(9)))
        with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor"):
            fn(dispatch.OP_add, (base[1:], base[:-1]), (1,), base[:-1], False)
        np.testing.assert_array_equal(_values(base)[1], np.arange(9))


def test_against_torch():
    torch = pytest.importorskip("torch")
    for dt, tdt in ((D.float32, torch.float32), (D.int64, torch.int64), (D.uint8, torch.uint8),
                    (D.bool, torch.bool), (D.float16, torch.float16)):
        a = pytorchlite.tensor([0, 1, 2, 3], dtype=dt)
        ta = torch.tensor([0, 1, 2, 3], dtype=tdt)
        for v in (True, 2, 1.5):
            # (subtracting a bool raises in both; test_number_operand_* compares errors)
            no_bool = dt is D.bool or v is True
            for f in (lambda x: x + v, lambda x: x * v, lambda x: x if no_bool else x - v,
                      lambda x: v * x, lambda x: x == v, lambda x: x / v if v is not True else x):
                r = _outcome(lambda: f(a))
                t = f(ta)
                assert r[0] == "ok", r
                assert r[1].name == str(t.dtype).split(".")[-1]
                np.testing.assert_allclose(r[2], t.double().numpy())
        # in-place with a number, out= with a matching tensor
        b = a.clone()
        tb = ta.clone()
        if dt is not D.bool:
            b.add_(2)
            tb.add_(2)
            np.testing.assert_array_equal(_values(b)[1], tb.double().numpy())
        o = pytorchlite.empty(4, dtype=dt)
        pytorchlite.mul(a, a, out=o)
        np.testing.assert_array_equal(_values(o)[1], (ta * ta).double().numpy())
    # the fast path refuses what the general path refuses, with the same error
    a = pytorchlite.ones(4, dtype=D.int32)
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        a.add_(1.5)
    with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
        pytorchlite.add(a, a, alpha=1.5)
    x = pytorchlite.ones(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        pytorchlite.add(pytorchlite.ones(4), 1.0, out=x)


# ---- full reductions of contiguous tensors (one C call, reduce._reduce_contig) ----------

REDUCTIONS = ["sum", "mean", "prod", "amax", "amin", "nansum", "nanmean", "all", "any", "count_nonzero",
              "var", "std", "norm", "argmax", "argmin"]


@pytest.mark.parametrize("name", REDUCTIONS)
def test_full_reduction_matches_descriptor_path(name, monkeypatch):
    from pytorchlite._kernels import reduce as R
    assert R._reduce_contig is not None
    rng = np.random.default_rng(1)
    shapes = [(), (1,), (7,), (3, 5, 7), (257, 33), ((1 << 16) + 3,), (0,), (2, 0, 3)]
    for dt in (D.float32, D.float64, D.float16, D.int32, D.bool):
        for shape in shapes:
            x = pytorchlite.tensor(rng.standard_normal(shape) * 3, dtype=D.float64).to(dt)
            fn = getattr(pytorchlite, name)
            fast = _outcome(lambda: fn(x))
            with monkeypatch.context() as m:
                m.setattr(R, "_reduce_contig", None)
                general = _outcome(lambda: fn(x))
            _same(fast, general)   # bitwise: the same plan in C
            if fast[0] == "ok" and name in ("sum", "amax"):
                kd = _outcome(lambda: fn(x, dim=tuple(range(len(shape))), keepdim=True))
                assert kd[0] == "ok" and kd[2].shape == (1,) * len(shape)
