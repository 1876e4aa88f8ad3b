"""Pointwise operators against PyTorch, and against NumPy (tests/numpy_oracles.py), which
still checks the kernels where PyTorch is not installed.

The operators under test come from ops.yaml (STYLE rule 18): every `pointwise:` entry
runs over every dtype, on the standard edge inputs of tests/parity.py, through its
function, in-place and out= forms; every composite of the pointwise section (aliases,
gelu, div, clamp, round, ...) runs through its own cases. Targeted tests then pin the
promotion table, broadcasting and in-place errors, out= rules, overlap and version
counter behaviour, the Python operators and argument-type errors.
"""

import math
import os
import warnings

import numpy as np
import pytest

from parity import HAVE_TORCH, torch_or_missing, needs_torch  # noqa: E402

torch = torch_or_missing()      # without PyTorch, a test that calls it is skipped
TF = torch.nn.functional

# torch.where warns about uint8 conditions, and so does pytorchlite (on purpose)
pytestmark = pytest.mark.filterwarnings("ignore:where received a uint8 condition tensor")

import pytorchlite  # noqa: E402
import pytorchlite.nn.functional as F  # noqa: E402
from pytorchlite.generated import functions as G  # noqa: E402
from codegen.model import load_ops  # noqa: E402
from parity import (ALL_DTYPES, INT_DTYPES, TOLERANCES, CannotSay, NumpyRef, ParityError,  # noqa: E402
                    check_parity, edge_cases, from_values, random_values, to_numpy)
from parity import to_oracle as to_oracle_value  # noqa: E402
from pointwise_cases import call, edge_options, scalar_kwargs  # noqa: E402
import numpy_oracles  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPS = load_ops(os.path.join(ROOT, "ops.yaml"))
POINTWISE = [op for op in OPS if op.kind == "pointwise"]


def _section(name):
    """The operators declared under ops.yaml's `# ==== <name>` header."""
    with open(os.path.join(ROOT, "ops.yaml"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    start = next(i for i, ln in enumerate(lines) if ln.startswith("# ====") and ln.endswith(" " + name)) + 1
    end = next((i for i, ln in enumerate(lines) if i > start and ln.startswith("# ====")), len(lines))
    return [op for op in OPS if start < op.line <= end]


SECTION_COMPOSITES = [op for op in _section("pointwise") if op.kind != "pointwise"]

# ---- the oracle of each pointwise operator ----------------------------------------------
# Default: torch.<name>, torch.nn.functional.<name> or torch.special.<name>, called with the
# same arguments. Private helper operators map to the public PyTorch call they implement.
ORACLES = {
    "_gelu_erf": lambda x: TF.gelu(x),
    "_gelu_tanh": lambda x: TF.gelu(x, approximate="tanh"),
    "_silu": TF.silu, "_mish": TF.mish, "_hardsigmoid": TF.hardsigmoid, "_hardswish": TF.hardswish,
    "_elu": lambda x, alpha=1: TF.elu(x, alpha),
    "_leaky_relu": lambda x, negative_slope=0.01: TF.leaky_relu(x, negative_slope),
    "_hardtanh": lambda x, min_val=-1, max_val=1: torch._C._nn.hardtanh(x, min_val, max_val),
    "_round": torch.round,
    "_round_decimals": lambda x, decimals: torch.round(x, decimals=decimals),
    "_nan_to_num": lambda x, *values: torch.nan_to_num(x, *_numbers("_nan_to_num", values)),
    "_div_true": torch.div,
    "_div_trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "_div_floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    # (the private op wants both bounds; torch.clamp also takes None for either)
    "_clamp": lambda x, lo, hi: torch.clamp(x, *_numbers("_clamp", (lo, hi), tensors=True)),
    "threshold_backward": lambda g, x, threshold: torch.ops.aten.threshold_backward(
        *_tensors("threshold_backward", (g, x)), *_numbers("threshold_backward", (threshold,))),
}


def _tensors(op, values):
    # torch.ops.aten raises RuntimeError for a wrong argument type; a public binding, as
    # ours, raises TypeError as PyTorch's argument parser does
    for v in values:
        if not isinstance(v, torch.Tensor):
            raise TypeError(f"{op}(): expected a Tensor, got {type(v).__name__}")
    return values


def _numbers(op, values, tensors=False):
    # a private op takes Numbers (or Tensors) where the public one also takes None
    for v in values:
        if not isinstance(v, (bool, int, float) + ((torch.Tensor,) if tensors else ())):
            raise TypeError(f"{op}(): expected a Number, got {type(v).__name__}")
    return values

def oracle_for(name):
    if name in ORACLES:
        return ORACLES[name]
    for ns in (torch, TF, torch.special):
        fn = getattr(ns, name, None)
        if fn is not None:
            return fn
    return None


def ours_for(op):
    return getattr(G, op.name)


# ---- every pointwise operator, every dtype, every edge input ------------------------------

@needs_torch
def test_every_pointwise_op_has_an_oracle():
    missing = [op.name for op in POINTWISE if oracle_for(op.name) is None]
    assert not missing, f"no PyTorch oracle for {missing}: add them to ORACLES"


def test_every_pointwise_op_has_a_numpy_oracle():
    # (erfinv's comes from scipy.special, an optional dependency)
    missing = [op.name for op in POINTWISE if op.name not in numpy_oracles.POINTWISE and op.name != "erfinv"]
    assert not missing, f"no NumPy reference for {missing}: add them to tests/numpy_oracles.py"


@pytest.mark.parametrize("op", POINTWISE, ids=[op.name for op in POINTWISE])
def test_pointwise_op_matches_numpy(op):
    """The same cases as test_pointwise_op_matches_torch, for the dtypes NumPy's reference
    speaks for (run with PyTorch too, which keeps the references honest)."""
    if op.name not in numpy_oracles.POINTWISE:
        pytest.skip(f"no NumPy reference for {op.name} here (erfinv's needs scipy)")
    ours = ours_for(op)
    n = len(op.tensor_args)
    checked = 0
    for scalars in scalar_kwargs(op):
        for dtype in ALL_DTYPES:
            if dtype not in numpy_oracles.POINTWISE[op.name][2]:
                continue
            for label, tensors in edge_cases(n, dtype, **edge_options(op, dtype)):
                def reference(*arrays, dtype=dtype):
                    return call(lambda *a, **k: numpy_oracles.reference(op.name, a[:n], dtype,
                                                                        dict(zip(_scalar_names(op), a[n:]), **k)),
                                op, arrays, scalars)
                check_parity(lambda *t: call(ours, op, t, scalars), None, *tensors, numpy_oracle=reference,
                             label=f"{op.name} {dtype} {label} {scalars} (NumPy)")
                checked += 1
    assert checked, f"{op.name}: no dtype checked against NumPy"


def _scalar_names(op):
    return [a.name for a in op.schema.arguments if a.type.base == "Scalar" and a not in op.schema.kwonly]


@needs_torch
@pytest.mark.parametrize("op", POINTWISE, ids=[op.name for op in POINTWISE])
def test_pointwise_op_matches_torch(op):
    oracle = oracle_for(op.name)
    ours = ours_for(op)
    n = len(op.tensor_args)
    for scalars in scalar_kwargs(op):
        for dtype in ALL_DTYPES:
            for label, tensors in edge_cases(n, dtype, **edge_options(op, dtype)):
                check_parity(lambda *t: call(ours, op, t, scalars), lambda *t: call(oracle, op, t, scalars),
                             *tensors, label=f"{op.name} {dtype} {label} {scalars}")


def _mixed_pairs():
    return [("int32", "float32"), ("uint8", "int8"), ("bool", "int64"), ("float16", "bfloat16"),
            ("int64", "float64"), ("bool", "float16"), ("int16", "uint8"), ("float32", "float64")]


BINARY = [op for op in POINTWISE if len(op.tensor_args) >= 2]


@pytest.mark.parametrize("op", BINARY, ids=[op.name for op in BINARY])
def test_pointwise_op_promotion_matches_torch(op):
    """Operands of different dtypes, 0-d tensors and Python scalars, where the schema
    accepts them, promote as in PyTorch."""
    oracle = oracle_for(op.name)
    ours = ours_for(op)
    rng = np.random.default_rng(1)
    n = len(op.tensor_args)
    names = [a.name for a in op.tensor_args]
    for da, db in _mixed_pairs():
        for shape_b in ((3,), ()):
            for first in (da, db):
                second = db if first == da else da
                ts = [from_values(random_values((3,), first, rng, low=1), first)]
                ts += [from_values(random_values(shape_b, second, rng, low=1), second) for _ in range(n - 1)]
                check_parity(lambda *t: call(ours, op, t, {}), lambda *t: call(oracle, op, t, {}), *ts,
                             label=f"{first} with {second} {list(shape_b)}")
    # Python numbers where the schema takes them ("weak" scalars)
    for k, name in enumerate(names):
        if name not in op.tensor_scalars:
            continue
        for dtype in ("int32", "float16", "bool", "uint8", "float64"):
            for number in (2, -1, 2.5, True, 0.0):
                ts = [from_values(random_values((4,), dtype, rng, low=1), dtype) for _ in range(n)]
                ts[k] = number
                if all(not isinstance(t, pytorchlite.Tensor) for t in ts):
                    continue
                check_parity(lambda *t: call(ours, op, t, {}), lambda *t: call(oracle, op, t, {}), *ts,
                             label=f"{name}={number!r} with {dtype}")


def _variant_dtypes():
    return ["float32", "int64", "bool", "float16"]


@pytest.mark.parametrize("op", POINTWISE, ids=[op.name for op in POINTWISE])
def test_pointwise_op_inplace_and_out_match_torch(op):
    """The generated in-place method and out= form agree with PyTorch's, including the
    cast rules (an int tensor cannot take a float result in place)."""
    n = len(op.tensor_args)
    rng = np.random.default_rng(2)
    scalars = scalar_kwargs(op)[0]
    torch_inplace = getattr(torch.Tensor, op.name + "_", None)
    torch_fn = getattr(torch, op.name, None)
    for dtype in _variant_dtypes():
        opts = edge_options(op, dtype)
        # a float16 result written into a float64 out= is only as exact as float16
        tol = dict(zip(("rtol", "atol"), TOLERANCES.get(dtype, (None, None))))
        for other_dtype in (dtype, "float64", "int32"):
            def fresh():
                ts = [from_values(random_values((2, 3), dtype, rng, low=opts.get("low"), high=opts.get("high")),
                                  dtype)]
                for k in range(1, n):
                    ts.append(from_values(random_values((3,), other_dtype, rng, nonzero=True,
                                                        low=opts.get("low"), high=opts.get("high")), other_dtype))
                return ts
            if op.has_inplace and torch_inplace is not None:
                ts = fresh()

                def ours_inplace(*t):
                    x = t[0]
                    before = x._version
                    r = call(getattr(x, op.name + "_"), op, t[1:], scalars)
                    assert r is x, f"{op.name}_ must return self"
                    assert x._version > before, f"{op.name}_ must bump the version counter"
                    return x

                check_parity(ours_inplace, lambda *t: call(getattr(t[0], op.name + "_"), op, t[1:], scalars),
                             *ts, label=f"in-place {dtype} with {other_dtype}", **tol)
            if op.has_out and op.has_function and torch_fn is not None and op.python_module == "":
                for out_dtype in (dtype, "float64", "bool", "int64"):
                    ts = fresh()
                    out = pytorchlite.empty((2, 3), dtype=getattr(pytorchlite, out_dtype))

                    def ours_out(*t, out=out):
                        r = call(getattr(G, op.name), op, t, scalars, out=out)
                        assert r is out, f"{op.name}(out=) must return out"
                        return r

                    t_out = torch.empty((2, 3), dtype=getattr(torch, out_dtype))
                    check_parity(ours_out, lambda *t: call(torch_fn, op, t, scalars, out=t_out), *ts,
                                 label=f"out={out_dtype} {dtype} with {other_dtype}", **tol)


# ---- the composites of the pointwise section -------------------------------------------
# name -> (pytorchlite callable, torch callable, list of argument builders); each builder
# takes a dtype and returns (args, kwargs) of pytorchlite values.

def _t(shape=(3, 4), low=None, high=None, nonzero=False, seed=[0]):
    def make(dtype):
        seed[0] += 1
        return from_values(random_values(shape, dtype, np.random.default_rng(seed[0]), low=low, high=high,
                                         nonzero=nonzero), dtype)
    return make


def _unary(name):
    return (getattr(pytorchlite, name), getattr(torch, name), [lambda d: ((_t()(d),), {})])


def _binary(name, torch_name=None, **kw):
    return (getattr(pytorchlite, name), getattr(torch, torch_name or name), [
        lambda d: ((_t()(d), _t((4,), nonzero=True)(d)), kw),
        lambda d: ((_t()(d), 3), kw),
    ])


COMPOSITE_CASES = {
    "absolute": _unary("absolute"), "negative": _unary("negative"), "arcsin": _unary("arcsin"),
    "arccos": _unary("arccos"), "arctan": _unary("arctan"), "arcsinh": _unary("arcsinh"),
    "arccosh": _unary("arccosh"), "arctanh": _unary("arctanh"), "fix": _unary("fix"),
    "square": _unary("square"), "positive": _unary("positive"),
    "arctan2": (pytorchlite.arctan2, torch.arctan2, [lambda d: ((_t()(d), _t((4,))(d)), {})]),
    "subtract": _binary("subtract", alpha=2), "multiply": _binary("multiply"),
    "true_divide": _binary("true_divide"),
    "not_equal": _binary("not_equal"), "less": _binary("less"), "less_equal": _binary("less_equal"),
    "greater": _binary("greater"), "greater_equal": _binary("greater_equal"),
    "divide": _binary("divide", rounding_mode="floor"),
    "div": (pytorchlite.div, torch.div, [
        lambda d: ((_t()(d), _t((4,), nonzero=True)(d)), {}),
        lambda d: ((_t()(d), _t((4,), nonzero=True)(d)), {"rounding_mode": "trunc"}),
        lambda d: ((_t()(d), _t((4,), nonzero=True)(d)), {"rounding_mode": "floor"}),
        lambda d: ((_t()(d), -3), {"rounding_mode": "floor"}),
        lambda d: ((_t()(d), 2), {"rounding_mode": "bad"}),
        lambda d: ((4, _t(nonzero=True)(d)), {}),
    ]),
    "float_power": (pytorchlite.float_power, torch.float_power, [
        lambda d: ((_t(low=0)(d), _t((4,), low=-2, high=3)(d)), {}),
        lambda d: ((_t(low=0)(d), -1), {}),
        lambda d: ((2, _t((4,), low=-2, high=3)(d)), {}),
    ]),
    "float_power_": (lambda x, e: x.clone().float_power_(e), lambda x, e: x.clone().float_power_(e), [
        lambda d: ((_t(low=0)(d), _t((4,), low=-2, high=3)(d)), {}),
        lambda d: ((_t(low=0)(d), 2), {}),
        lambda d: ((_t(low=0)(d), _t((2, 3, 4))(d)), {}),
    ]),
    "round": (pytorchlite.round, torch.round, [
        lambda d: ((_t()(d),), {}), lambda d: ((_t()(d),), {"decimals": 2}),
        lambda d: ((_t(low=-3000, high=3000)(d),), {"decimals": -2}),
    ]),
    "nan_to_num": (pytorchlite.nan_to_num, torch.nan_to_num, [
        lambda d: ((from_values([math.nan, math.inf, -math.inf, 1.0] if d != "bool" and d not in INT_DTYPES
                                else [1, 0, 1, 0], d),), {}),
        lambda d: ((from_values([math.nan, math.inf, -math.inf, 1.0] if d != "bool" and d not in INT_DTYPES
                                else [1, 0, 1, 0], d),), {"nan": 2.0, "posinf": 1e300, "neginf": -5.0}),
    ]),
    "clamp": (pytorchlite.clamp, torch.clamp, [
        lambda d: ((_t()(d),), {"min": -1, "max": 2}),
        lambda d: ((_t()(d),), {"min": 0.5}),
        lambda d: ((_t()(d),), {"max": 1}),
        lambda d: ((_t()(d),), {}),
        lambda d: ((_t()(d),), {"min": 2, "max": -1}),
        lambda d: ((_t()(d), _t((4,))(d), _t((3, 1))(d)), {}),
        lambda d: ((_t()(d),), {"min": _t((4,))("float64")}),
        lambda d: ((_t()(d),), {"min": 1000}),
        lambda d: ((from_values([math.nan, 1.0, 5.0], "float32"),),
                   {"min": from_values([2.0, math.nan, 0.0], "float32"), "max": from_values([4.0, 4.0, 4.0], "float32")}),
    ]),
    "clip": (pytorchlite.clip, torch.clip, [lambda d: ((_t()(d),), {"min": -1, "max": 1})]),
    "gelu": (F.gelu, TF.gelu, [
        lambda d: ((_t()(d),), {}), lambda d: ((_t()(d),), {"approximate": "tanh"}),
        lambda d: ((_t()(d),), {"approximate": "bad"}),
    ]),
}
for _name in ("silu", "mish", "hardsigmoid", "hardswish", "relu6"):
    COMPOSITE_CASES[_name] = (getattr(F, _name), getattr(TF, _name), [lambda d: ((_t()(d),), {})])
COMPOSITE_CASES["elu"] = (F.elu, TF.elu, [lambda d: ((_t()(d),), {}), lambda d: ((_t()(d), 0.5), {})])
COMPOSITE_CASES["leaky_relu"] = (F.leaky_relu, TF.leaky_relu, [lambda d: ((_t()(d), 0.2), {})])
for _name in ("isclose", "allclose", "equal"):
    _extra = [] if _name == "equal" else [lambda d: ((_t()(d), _t()(d)), {"rtol": 0.5, "atol": 0.25,
                                                                     "equal_nan": True})]
    COMPOSITE_CASES[_name] = (getattr(pytorchlite, _name), getattr(torch, _name), [
        lambda d: ((_t()(d), _t()(d)), {}), lambda d: ((_t()(d),) * 2, {})] + _extra)
COMPOSITE_CASES["where"] = (pytorchlite.where, torch.where, [lambda d: ((_t()(d),), {})])   # where(condition)
COMPOSITE_CASES["hardtanh"] = (F.hardtanh, TF.hardtanh, [
    lambda d: ((_t()(d),), {}), lambda d: ((_t()(d), -0.5, 2.0), {}), lambda d: ((_t()(d), 2.0, -1.0), {}),
    lambda d: ((_t()(d), 0.0, 2.0), {}),
])


def test_every_composite_of_the_section_has_cases():
    missing = [op.name for op in SECTION_COMPOSITES if op.name not in COMPOSITE_CASES]
    assert not missing, f"add COMPOSITE_CASES for {missing}"


@pytest.mark.parametrize("name", sorted(COMPOSITE_CASES))
def test_composite_matches_torch(name):
    ours, oracle, builders = COMPOSITE_CASES[name]
    for dtype in ALL_DTYPES:
        for build in builders:
            args, kwargs = build(dtype)
            check_parity(ours, oracle, *args, label=dtype, **kwargs)


@pytest.mark.parametrize("name", ["silu", "mish", "elu", "leaky_relu", "hardtanh", "relu6", "hardsigmoid",
                                  "hardswish"])
def test_functional_inplace_flag(name):
    x = from_values(np.linspace(-4, 4, 12).reshape(3, 4), "float32")
    want = getattr(F, name)(x)
    before = x._version
    r = getattr(F, name)(x, inplace=True)
    assert r is x and x._version > before
    np.testing.assert_allclose(to_numpy(x), to_numpy(want))
    tx = torch.linspace(-4, 4, 12).reshape(3, 4)
    np.testing.assert_allclose(to_numpy(x), getattr(TF, name)(tx, inplace=True).numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(n for n, op in ((op.name, op) for op in SECTION_COMPOSITES)
                                        if op.has_inplace))
def test_composite_inplace_and_out(name):
    op = next(o for o in SECTION_COMPOSITES if o.name == name)
    ours, oracle, builders = COMPOSITE_CASES[name]
    for dtype in ("float32", "int64"):
        args, kwargs = builders[0](dtype)

        def ours_inplace(*a, **k):
            x = a[0].clone()
            r = getattr(x, name + "_")(*a[1:], **k)
            assert r is x
            return x
        check_parity(ours_inplace, lambda *a, **k: getattr(a[0].clone(), name + "_")(*a[1:], **k),
                     *args, label=f"in-place {dtype}", **kwargs)
        if op.has_out:
            for out_dtype in ("float64", "int64", "bool"):
                out = pytorchlite.empty(0, dtype=getattr(pytorchlite, out_dtype))
                t_out = torch.empty(0, dtype=getattr(torch, out_dtype))
                try:
                    check_parity(lambda *a, **k: ours(*a, out=out, **k),
                                 lambda *a, **k: oracle(*a, out=t_out, **k),
                                 *args, label=f"out={out_dtype} {dtype}", **kwargs)
                except ParityError as e:
                    # Known difference: a composite writes out= with the ordinary cast rules,
                    # where some PyTorch kernels (abs, round, clamp, nan_to_num, float_power)
                    # insist on the exact result dtype. Only that difference is tolerated.
                    strict = ("Found dtype", "should be same as input", "the output given to")
                    if not any(m in str(e) for m in strict):
                        raise
                    want = oracle(*[to_oracle_value(a) for a in args], **kwargs)
                    np.testing.assert_allclose(to_numpy(out).astype(np.float64),
                                               want.to(getattr(torch, out_dtype)).double().numpy())


# ---- targeted: promotion ------------------------------------------------------------------

def _pl(values, dtype):
    return pytorchlite.tensor(values, dtype=getattr(pytorchlite, dtype))


@pytest.mark.parametrize("make, expected", [
    (lambda: _pl([1, 2], "int32") + 2.5, "float32"),
    (lambda: _pl([1, 2], "float16") + 2.5, "float16"),
    (lambda: _pl([1, 2], "int32") + _pl(3, "int64"), "int32"),
    (lambda: _pl([1, 2], "int32") + _pl(3.0, "float64"), "float64"),
    (lambda: _pl([True, False], "bool") + 1, "int64"),
    (lambda: _pl([1, 2], "int32") / _pl([2, 2], "int32"), "float32"),
    (lambda: _pl([1, 2], "uint8") + _pl([1, 2], "int8"), "int16"),
    (lambda: _pl([1, 2], "float16") + _pl([1, 2], "bfloat16"), "float32"),
    (lambda: _pl([1, 2], "int64") < 2.5, "bool"),
    (lambda: pytorchlite.where(_pl([True, False], "bool"), _pl([1, 2], "int8"), 2.5), "float32"),
    (lambda: pytorchlite.pow(_pl([True], "bool"), 2), "int64"),
    (lambda: pytorchlite.float_power(_pl([2], "int32"), 2), "float64"),
    (lambda: pytorchlite.clamp(_pl([1, 5], "int64"), min=2, max=4.5), "float32"),
])
def test_promotion_table(make, expected):
    assert str(make().dtype) == f"pytorchlite.{expected}"


def test_default_dtype_drives_int_true_division():
    pytorchlite.set_default_dtype(pytorchlite.float64)
    try:
        assert (_pl([1], "int32") / 2).dtype == pytorchlite.float64
        assert pytorchlite.exp(_pl([1], "int32")).dtype == pytorchlite.float64
    finally:
        pytorchlite.set_default_dtype(pytorchlite.float32)


def test_inplace_cannot_downcast():
    x = _pl([1, 2], "int64")
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        x.add_(1.5)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        x.div_(2)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        x /= 2
    assert x.tolist() == [1, 2]


# ---- targeted: shapes -----------------------------------------------------------------------

def test_broadcast_error_message():
    a, b = pytorchlite.zeros(2, 3), pytorchlite.zeros(2, 4)
    msg = r"The size of tensor a \(3\) must match the size of tensor b \(4\) at non-singleton dimension 1"
    with pytest.raises(RuntimeError, match=msg):
        a + b
    with pytest.raises(RuntimeError, match=msg):
        torch.zeros(2, 3) + torch.zeros(2, 4)


def test_inplace_shape_error():
    x = pytorchlite.zeros(3)
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        x.add_(pytorchlite.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        x.clamp_(min=pytorchlite.ones(2, 3))


def test_out_resize_warns_when_it_held_elements():
    out = pytorchlite.zeros(5)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        pytorchlite.add(pytorchlite.ones(2, 3), 1, out=out)
    assert out.shape == (2, 3) and out.tolist() == [[2.0] * 3] * 2
    empty = pytorchlite.zeros(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pytorchlite.mul(pytorchlite.ones(4), 3, out=empty)
    assert empty.tolist() == [3.0] * 4


@pytest.mark.parametrize("fn, args, out_dtype, ok", [
    ("add", ([1, 2], "int64", 1), "float32", True),        # int result into a float out: fine
    ("add", ([1.5], "float32", 1), "int64", False),        # float into int: not allowed
    ("eq", ([1, 2], "int64", 1), "float32", True),         # bool into float
    ("eq", ([1, 2], "int64", 1), "bool", True),
    ("add", ([1.5], "float64", 1), "float32", True),       # same category, narrower: allowed
    ("add", ([1], "int64", 1), "bool", False),             # int into bool: not allowed
    ("sqrt", ([4], "int64"), "int64", False),              # int_to_float result into int
    ("sqrt", ([4], "int64"), "float64", True),
])
def test_out_dtype_cast_rules(fn, args, out_dtype, ok):
    values, dtype, *rest = args
    x = _pl(values, dtype)
    out = pytorchlite.empty(len(values), dtype=getattr(pytorchlite, out_dtype))
    tx = torch.tensor(values, dtype=getattr(torch, dtype))
    t_out = torch.empty(len(values), dtype=getattr(torch, out_dtype))
    if ok:
        getattr(pytorchlite, fn)(x, *rest, out=out)
        getattr(torch, fn)(tx, *rest, out=t_out)
        np.testing.assert_allclose(to_numpy(out).astype(float), t_out.double().numpy())
        assert str(out.dtype).endswith(out_dtype)
    else:
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            getattr(pytorchlite, fn)(x, *rest, out=out)
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            getattr(torch, fn)(tx, *rest, out=t_out)


@pytest.mark.skipif(not hasattr(pytorchlite.Tensor, "expand"), reason="expand is not declared yet")
def test_overlap_error_on_expanded_output():
    msg = "unsupported operation: more than one element of the written-to tensor refers to a single memory location"
    x = pytorchlite.zeros(1, 3).expand(2, 3)
    with pytest.raises(RuntimeError, match=msg):
        x.add_(1)
    with pytest.raises(RuntimeError, match=msg):
        pytorchlite.mul(pytorchlite.ones(2, 3), 2, out=x)
    with pytest.raises(RuntimeError, match=msg):
        torch.zeros(1, 3).expand(2, 3).add_(1)


def test_out_aliasing_an_input_is_computed_correctly():
    x = pytorchlite.arange(6.0)
    msg = "some elements of the input tensor and the written-to tensor refer to a single memory location"
    with pytest.raises(RuntimeError, match=msg):
        pytorchlite.add(x[1:], x[:-1], out=x[:-1])   # overlapping, not identical: refused as in PyTorch
    tx = torch.arange(6.0)
    with pytest.raises(RuntimeError, match=msg):
        torch.add(tx[1:], tx[:-1], out=tx[:-1])
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    z = pytorchlite.arange(6.0)
    pytorchlite.add(z[1::2], z[::2], out=z[::2])        # strided: PyTorch does not judge; computed apart
    t = torch.arange(6.0)
    torch.add(t[1::2], t[::2], out=t[::2])
    assert z.tolist() == t.tolist()
    y = pytorchlite.arange(4.0)
    pytorchlite.mul(y, y, out=y)                      # identical: written directly
    assert y.tolist() == [0.0, 1.0, 4.0, 9.0]


def test_version_counter():
    x = pytorchlite.ones(3)
    v = x._version
    x + 1
    pytorchlite.exp(x)
    assert x._version == v
    x.add_(1)
    assert x._version == v + 1
    x.abs_()
    x += 1
    assert x._version == v + 3
    out = pytorchlite.empty(3)
    w = out._version
    pytorchlite.sin(x, out=out)
    assert out._version > w
    view = x[::2]
    view.mul_(2)
    assert x._version == view._version and x._version > v + 3


# ---- targeted: Python operators -----------------------------------------------------------

def _pair(values, dtype):
    return _pl(values, dtype), torch.tensor(values, dtype=getattr(torch, dtype))


@pytest.mark.parametrize("expr", [
    "x + 2", "2 + x", "x - 2", "2 - x", "x * 3", "3 * x", "x / 2", "2 / x", "x // 2", "7 // x", "x % 3",
    "7 % x", "x ** 2", "2 ** x", "2.5 ** x", "-x", "+x", "abs(x)", "x == 2", "x != 2", "x < 2", "x <= 2",
    "x > 2", "x >= 2", "2 < x", "2 >= x", "x & 6", "6 & x", "x | 1", "1 | x", "x ^ 3", "3 ^ x", "x << 1",
    "1 << x", "x >> 1", "64 >> x", "~x", "x + y", "x * y", "x / y", "x // y", "x % y", "x ** y",
    "x & y", "x < y", "x == y",
])
@pytest.mark.parametrize("dtype", ["int64", "int32", "float32", "bool", "uint8"])
def test_python_operators(expr, dtype):
    xs = [1, 2, 3, 4] if dtype != "bool" else [True, False, True, True]
    ys = [2, 1, 3, 1] if dtype != "bool" else [True, True, False, True]
    if not HAVE_TORCH and dtype == "bool" and _bool_rules_of_torch(expr):
        pytest.skip("PyTorch's own bool rules: NumPy cannot say")
    x, y = _pl(xs, dtype), _pl(ys, dtype)
    check_parity(lambda x, y: eval(expr), lambda x, y: eval(expr), x, y, label=f"{expr} {dtype}",
                 numpy_oracle=lambda x, y: _numpy_operator(expr, x, y))


def _bool_rules_of_torch(expr):
    # PyTorch refuses these on bool tensors (or widens bool ** int to int64); NumPy computes
    return any(op in expr for op in ("-", "//", "%", "**", "abs"))


def _numpy_operator(expr, x, y):
    """NumPy's answer for a Python operator expression on same-dtype arrays: NumPy 2 treats
    Python numbers as weak, as PyTorch does, and a float64 result of non-float64 operands
    is PyTorch's default float32 (int / int, 2.5 ** int). Where NumPy raises, or refuses a
    bool operation PyTorch defines differently, it cannot say."""
    if x.dtype == bool and _bool_rules_of_torch(expr):
        raise CannotSay("PyTorch's own bool rules")
    try:
        with np.errstate(all="ignore"):
            r = np.asarray(eval(expr))
    except Exception as e:
        raise CannotSay(f"NumPy raised {type(e).__name__}") from e
    if r.dtype == np.float64 and x.dtype != np.float64:
        return NumpyRef(r, "float32")
    return r


@pytest.mark.parametrize("stmt", ["x += 2", "x -= 1", "x *= 3", "x /= 2", "x //= 2", "x %= 3", "x **= 2",
                                  "x &= 6", "x |= 1", "x ^= 3", "x <<= 1", "x >>= 1", "x += y", "x *= y"])
@pytest.mark.parametrize("dtype", ["int64", "float32", "bool"])
def test_python_inplace_operators(stmt, dtype):
    xs = [1, 2, 3, 4] if dtype != "bool" else [True, False, True, True]
    x, tx = _pair(xs, dtype)
    y, ty = _pair(xs, dtype)

    def run(x, y):
        ident = id(x)
        scope = {"x": x, "y": y}
        exec(stmt, scope)
        assert id(scope["x"]) == ident, f"{stmt} must update x in place"
        return scope["x"]
    check_parity(run, run, x, y, label=f"{stmt} {dtype}")


# ---- targeted: edge semantics ---------------------------------------------------------------

NAN = math.nan


@pytest.mark.parametrize("fn", ["maximum", "minimum", "fmax", "fmin"])
def test_nan_propagation(fn):
    a, ta = _pair([NAN, 1.0, NAN, -0.0], "float32")
    b, tb = _pair([1.0, NAN, NAN, 0.0], "float32")
    check_parity(getattr(pytorchlite, fn), getattr(torch, fn), a, b)


def test_clamp_nan():
    x = _pl([NAN, 1.0, 5.0], "float32")
    check_parity(pytorchlite.clamp, torch.clamp, x, 0, 2)
    check_parity(pytorchlite.clamp, torch.clamp, x, _pl([NAN, NAN, 0.0], "float32"), _pl([4.0, 4.0, NAN], "float32"))
    check_parity(pytorchlite.relu, torch.relu, x)


def test_integer_pow():
    x = _pl([2, 3, -1, 1, 0, -2], "int64")
    check_parity(pytorchlite.pow, torch.pow, x, _pl([-1, -2, -3, -2, 3, 63], "int64"))
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed."):
        pytorchlite.pow(x, -1)
    check_parity(pytorchlite.pow, torch.pow, x, -1.0)
    check_parity(pytorchlite.pow, torch.pow, 2, _pl([0, 1, 10, 62], "int64"))


@pytest.mark.parametrize("fn", ["remainder", "floor_divide", "fmod"])
@pytest.mark.parametrize("dtype", ["int64", "int8", "float32", "float64"])
def test_division_signs(fn, dtype):
    a = _pl([7, -7, 7, -7, 0, 5], dtype)
    b = _pl([2, 2, -2, -2, 3, -5], dtype)
    check_parity(getattr(pytorchlite, fn), getattr(torch, fn), a, b)
    check_parity(getattr(pytorchlite, fn), getattr(torch, fn), a, -3)


@pytest.mark.parametrize("fn", ["floor_divide", "remainder", "fmod"])
def test_integer_division_by_zero(fn):
    x = _pl([1, 2], "int32")
    for divisor in (0, _pl([1, 0], "int32")):
        with pytest.raises(ZeroDivisionError):
            getattr(pytorchlite, fn)(x, divisor)
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):   # what PyTorch raises
            getattr(pytorchlite, fn)(x, divisor)
    with pytest.raises(ZeroDivisionError):
        pytorchlite.div(x, 0, rounding_mode="trunc")
    with pytest.raises(ZeroDivisionError):
        x // 0
    # float division by zero is IEEE
    check_parity(pytorchlite.floor_divide, torch.floor_divide, _pl([1.0, -1.0, 0.0], "float32"), 0.0)
    assert (x / 0).tolist() == [math.inf, math.inf]


def test_integer_overflow_wraps():
    i8 = _pl([127, -128, 100], "int8")
    check_parity(pytorchlite.add, torch.add, i8, 1)
    check_parity(pytorchlite.mul, torch.mul, i8, 3)
    check_parity(pytorchlite.neg, torch.neg, i8)
    check_parity(pytorchlite.abs, torch.abs, i8)
    i64 = _pl([2 ** 62, -(2 ** 63)], "int64")
    check_parity(pytorchlite.add, torch.add, i64, i64)
    check_parity(pytorchlite.mul, torch.mul, i64, 4)
    u8 = _pl([0, 255], "uint8")
    check_parity(pytorchlite.sub, torch.sub, u8, 1)
    check_parity(pytorchlite.add, torch.add, u8, 200)


def test_half_precision_is_computed_in_float():
    for dtype in ("float16", "bfloat16"):
        x = _pl([1.0, 2.0, 1000.0, 0.1], dtype)
        for fn in ("exp", "sin", "sqrt", "sigmoid", "tanh", "log1p"):
            check_parity(getattr(pytorchlite, fn), getattr(torch, fn), x, label=dtype)
        check_parity(pytorchlite.add, torch.add, x, x, alpha=3)
        check_parity(pytorchlite.addcmul, torch.addcmul, x, x, x, value=0.5)


def test_bool_arithmetic():
    a = _pl([True, True, False, False], "bool")
    b = _pl([True, False, True, False], "bool")
    for fn in ("add", "mul", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor", "logical_xor",
               "eq", "lt", "div", "sub", "pow", "remainder", "floor_divide", "atan2"):
        check_parity(getattr(pytorchlite, fn), getattr(torch, fn), a, b, label=fn)
    check_parity(pytorchlite.add, torch.add, a, b, alpha=True)
    check_parity(pytorchlite.add, torch.add, a, True)
    check_parity(pytorchlite.mul, torch.mul, a, 2.5)
    for fn in ("neg", "abs", "relu", "sign", "floor", "bitwise_not", "logical_not", "square", "sqrt"):
        check_parity(getattr(pytorchlite, fn), getattr(torch, fn), a, label=fn)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_special_float_values(dtype):
    x = _pl([0.0, -0.0, math.inf, -math.inf, NAN, 1e-8, -1e-8, 1.0, -1.0], dtype)
    for name in ("abs", "neg", "sign", "sgn", "signbit", "floor", "ceil", "round", "trunc", "frac",
                 "reciprocal", "sqrt", "rsqrt", "exp", "expm1", "log", "log1p", "sigmoid", "tanh", "erf",
                 "erfinv", "isnan", "isinf", "isposinf", "isneginf", "isfinite", "nan_to_num", "relu"):
        check_parity(getattr(pytorchlite, name), getattr(torch, name), x, label=name)
    for name in ("atan2", "hypot", "copysign", "xlogy", "logaddexp", "remainder", "fmod", "floor_divide",
                 "pow", "maximum", "fmax", "eq", "lt"):
        check_parity(getattr(pytorchlite, name), getattr(torch, name), x, x.flip(0) if hasattr(x, "flip")
                     else _pl(list(reversed(x.tolist())), dtype), label=name)


def test_bitwise_ops_reject_floats():
    with pytest.raises(NotImplementedError, match="\"bitwise_and_cpu\" not implemented for 'Float'"):
        pytorchlite.bitwise_and(_pl([1.0], "float32"), _pl([1.0], "float32"))
    with pytest.raises(RuntimeError, match="\"lshift_cpu\" not implemented for 'Double'"):
        _pl([1.0], "float64") << 1


def test_shift_amounts_beyond_the_width():
    for dtype in ("int8", "uint8", "int32", "int64"):
        bits = np.iinfo(dtype).bits
        x = _pl([1, 5, 100, 3, 7], dtype)
        s = _pl([0, bits - 1, bits, bits + 3, 2] if dtype == "uint8" else [-1, bits - 1, bits, bits + 3, 2], dtype)
        check_parity(pytorchlite.bitwise_left_shift, torch.bitwise_left_shift, x, s, label=dtype)
        check_parity(pytorchlite.bitwise_right_shift, torch.bitwise_right_shift, x, s, label=dtype)
        if dtype != "uint8":
            check_parity(pytorchlite.bitwise_right_shift, torch.bitwise_right_shift, -x, s, label=dtype)


def test_specific_errors_match_torch():
    def T(m, values, dtype):
        return m.tensor(values, dtype=getattr(m, dtype))
    cases = [
        lambda m, x: -x,
        lambda m, x: x - x,
        lambda m, x: m.sub(T(m, [1, 2], "int64"), x),
        lambda m, x: m.relu(x),
        lambda m, x: m.add(T(m, [1], "int64"), 1, alpha=0.5),
        lambda m, x: m.add(T(m, [1.0], "float32"), 1, alpha=True),
        lambda m, x: m.where(T(m, [1, 0], "int64"), 1.0, 0.0),
        lambda m, x: m.lerp(T(m, [1.0], "float32"), T(m, [1.0], "float64"), 0.5),
        lambda m, x: m.addcdiv(T(m, [1.0], "float32"), T(m, [1], "int64"), T(m, [1], "int64")),
        lambda m, x: m.clamp_min(T(m, [1], "int8"), 1000),
        lambda m, x: m.clamp(x, min=True),
        lambda m, x: m.round(T(m, [1], "int64"), decimals=1),
        lambda m, x: m.frac(T(m, [1], "int64")),
        lambda m, x: m.div(T(m, [1.0], "float32"), 1, rounding_mode="nope"),
        lambda m, x: +x,
        lambda m, x: T(m, [1.0], "float32").float_power_(2),
        lambda m, x: m.pow(x, x),
    ]
    b = _pl([True, False], "bool")
    for i, f in enumerate(cases):
        check_parity(lambda x: f(pytorchlite, x), lambda x: f(torch, x), b, label=f"case {i}")


# ---- targeted: argument errors ------------------------------------------------------------

@pytest.mark.parametrize("call, op, arg", [
    (lambda m, x: m.add(x, "a"), "add", "other"),
    (lambda m, x: m.add(x, None), "add", "other"),
    (lambda m, x: m.add(x, x, alpha="a"), "add", "alpha"),
    (lambda m, x: m.add(x, x, alpha=m.ones(2)), "add", "alpha"),
    (lambda m, x: m.exp("a"), "exp", "input"),
    (lambda m, x: m.maximum(x, 2), "maximum", "other"),
    (lambda m, x: m.atan2(x, 1.0), "atan2", "other"),
    (lambda m, x: m.logical_and(x, True), "logical_and", "other"),
    (lambda m, x: m.lerp(x, 1.0, 0.5), "lerp", "end"),
    (lambda m, x: m.addcmul(x, 1, x), "addcmul", "tensor1"),
    (lambda m, x: x.clamp(min="a"), "clamp", "min"),
    (lambda m, x: m.where(x > 0, x, "a"), "where", "other"),
    (lambda m, x: m.div(x, 2, rounding_mode=1), "div", "rounding_mode"),
    (lambda m, x: m.round(x, decimals=1.5), "round", "decimals"),
    (lambda m, x: m.nan_to_num(x, nan="a"), "nan_to_num", "nan"),
    (lambda m, x: m.add(x, 1, out=[1]), "add", "out"),
])
def test_bad_argument_types(call, op, arg):
    x = pytorchlite.ones(2)
    with pytest.raises(TypeError) as info:
        call(pytorchlite, x)
    msg = str(info.value)
    assert f"{op}()" in msg and arg in msg, msg
    with pytest.raises(TypeError):
        call(torch, torch.ones(2))


def test_functional_argument_errors():
    x = pytorchlite.ones(2)
    with pytest.raises(TypeError, match="approximate"):
        F.gelu(x, approximate=1)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(x, approximate="fast")
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(x, 1.0, -1.0)
    with pytest.raises(TypeError, match="inplace"):
        F.silu(x, inplace="yes")


def test_parity_helper_reports_what_differs():
    x = from_values([1.0, 2.0], "float32")
    with pytest.raises(ParityError, match="value"):
        check_parity(pytorchlite.exp, torch.sin, x)
    with pytest.raises(ParityError, match="dtype"):
        check_parity(pytorchlite.exp, lambda t: torch.exp(t).double(), x)
    with pytest.raises(ParityError, match="shape"):
        check_parity(pytorchlite.exp, lambda t: torch.exp(t)[None], x)
    with pytest.raises(ParityError, match="exception"):
        check_parity(pytorchlite.exp, lambda t: torch.bitwise_not(t), x)


# --- Python-number first operands and the method form of where ----------------------------

@pytest.mark.parametrize("name", ["add", "sub", "mul", "multiply", "subtract", "divide", "true_divide", "div"])
def test_number_as_first_operand(name):
    for other in ([1., -2.], [1, 3]):
        p = getattr(pytorchlite, name)(2, pytorchlite.tensor(other))
        t = getattr(torch, name)(2, torch.tensor(other))
        assert p.tolist() == t.tolist() and str(p.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    assert getattr(pytorchlite, name)(6, 3).item() == getattr(torch, name)(6, 3).item()


def test_where_method_and_functional_aliases():
    x = pytorchlite.tensor([1., -2., 3.])
    assert x.where(x > 0, 0.).tolist() == [1., 0., 3.]
    assert x.where(x > 0, pytorchlite.tensor([9., 9., 9.])).tolist() == [1., 9., 3.]
    assert F.sigmoid(x).tolist() == pytorchlite.sigmoid(x).tolist() and F.tanh(x).tolist() == pytorchlite.tanh(x).tolist()
