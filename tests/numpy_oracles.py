"""NumPy references for the pointwise operators of ops.yaml, used as the oracle when PyTorch
is not installed (so that the kernels are still tested), and checked against PyTorch where it
is (tests/test_pointwise.py::test_numpy_oracle_agrees_with_torch).

`POINTWISE[name]` is `(fn, kind, dtypes)`: `fn` takes NumPy arrays (and the operator's
scalars by name) and computes the values; `kind` gives PyTorch's result dtype for operands
of one dtype (see `result_dtype`); `dtypes` are the operand dtypes the reference speaks
for. Other dtypes (where PyTorch raises, or where its integer semantics are its own) are
left to the PyTorch run: the test says how many it could not check.

Floating results are computed in float64 and rounded once to the result dtype, which is
what PyTorch's half-precision "opmath" does too (compute in float32, round once), so a
reference is at least as exact as the operator it checks.
"""

from __future__ import annotations

import math

import numpy as np

from parity import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, CannotSay, NumpyRef, dtype_name

try:
    from scipy import special as _special
except ImportError:   # erfinv is then left to the PyTorch run
    _special = None

NUMERIC = tuple(d for d in ALL_DTYPES if d != "bool")
SIGNED = tuple(d for d in NUMERIC if d != "uint8")


def result_dtype(kind, dtype):
    """PyTorch's result dtype of a `kind` operator on operands of `dtype`."""
    if kind == "bool":
        return "bool"
    if kind == "float":     # integer inputs give the default float dtype
        return dtype if dtype in FLOAT_DTYPES else "float32"
    return dtype            # "same"


def _f64(*arrays):
    # PyTorch casts integer operands to the default float dtype first (int32's 2**31 - 1
    # becomes 2**31), then computes
    return [np.asarray(a).astype(np.float32).astype(np.float64) if np.asarray(a).dtype.kind in "iub"
            else np.asarray(a, dtype=np.float64) for a in arrays]


def _opmath(fn):
    """A float-kind reference computed as PyTorch's CPU loops do: float64 in float64, every
    other dtype in float32 (where a sum that cancels, as in addcdiv, depends on it)."""
    def ref(*arrays, **scalars):
        t = np.float64 if any(np.asarray(a).dtype == np.float64 for a in arrays) else np.float32
        with np.errstate(all="ignore"):
            return fn(*[np.asarray(a).astype(t) for a in arrays], **scalars)
    return ref


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x) if x.size else x


def _erfc(x):
    return np.vectorize(math.erfc, otypes=[np.float64])(x) if x.size else x


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _softplus(x, beta=1, threshold=20):
    with np.errstate(over="ignore"):
        return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def _trunc_div(a, b):
    return np.trunc(a / b)


def _int_trunc_div(a, b):
    # in the integer dtype itself (a float quotient loses int64's low bits)
    q = np.floor_divide(a, b)
    return q + ((a - q * b != 0) & ((a < 0) != (b < 0))).astype(a.dtype)


def _shift(x, s, left):
    # PyTorch: a shift by a negative amount or by the width or more gives 0 (or -1 for a
    # negative value shifted right), as if the bits ran out
    bits = 8 * x.dtype.itemsize
    s64 = s.astype(np.int64)
    inside = (s64 >= 0) & (s64 < bits)
    amount = np.where(inside, s64, 0).astype(x.dtype)
    if left:
        return np.where(inside, np.left_shift(x, amount), np.zeros_like(x))
    fill = np.where(x < 0, np.array(-1).astype(x.dtype), np.zeros_like(x))
    return np.where(inside, np.right_shift(x, amount), fill)


def _float(fn):
    """A float-kind reference: float64 in, float64 out."""
    def ref(*arrays, **scalars):
        with np.errstate(all="ignore"):
            return fn(*_f64(*arrays), **scalars)
    return ref


def _native(fn):
    """A reference computed in the operands' own dtype (integer wraparound included)."""
    def ref(*arrays, **scalars):
        with np.errstate(all="ignore"):
            return fn(*arrays, **scalars)
    return ref


def _int_or_float(int_fn, float_fn):
    def ref(*arrays, **scalars):
        with np.errstate(all="ignore"):
            if arrays[0].dtype.kind in "iub":
                return int_fn(*arrays, **scalars)
            return float_fn(*_f64(*arrays), **scalars)
    return ref


def _clamp(x, lo, hi):
    # PyTorch: min(max(x, lo), hi), nan propagating from any operand
    return np.minimum(np.maximum(x, lo), hi)


def _round_decimals(x, decimals):
    f = 10.0 ** abs(decimals)
    return np.rint(x * f) / f if decimals >= 0 else np.rint(x / f) * f


def _nan_to_num(x, nan=None, posinf=None, neginf=None, *, dtype):
    info = np.finfo(np.float32) if dtype == "bfloat16" else np.finfo(dtype)
    big = float.fromhex("0x1.fep127") if dtype == "bfloat16" else float(info.max)
    out = np.where(np.isnan(x), 0.0 if nan is None else nan, x)
    out = np.where(np.isposinf(x), big if posinf is None else posinf, out)
    return np.where(np.isneginf(x), -big if neginf is None else neginf, out)


def _floor_div(a, b):
    if a.dtype.kind in "iu":
        return np.floor_divide(a, b)
    # PyTorch's float floor division: floor of the true quotient, corrected as fmod does
    mod = np.fmod(a, b)
    div = (a - mod) / b
    div = np.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1, div)
    floor = np.floor(div)
    floor = np.where(div - floor > 0.5, floor + 1, floor)
    q = np.where(div != 0, floor, np.copysign(0.0, a / b))
    return np.where(b == 0, a / b, q)


def _sign(x):
    if x.dtype == bool:
        return x.copy()
    return np.where(x != x, np.zeros_like(x), np.sign(x))    # PyTorch: sign(nan) is 0


def _scalar_as(value, x):
    """A Python scalar as PyTorch hands it to an integer kernel: converted to the tensor's
    dtype, wrapping (uint8's -1 is 255); floats stay floats for float tensors."""
    if x.dtype.kind in "iub":
        return np.array(value).astype(np.int64).astype(x.dtype)
    return value


def _alpha(alpha, a):
    if isinstance(alpha, bool) and a.dtype != bool:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if a.dtype.kind in "iub" and isinstance(alpha, float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    return _scalar_as(alpha, a)


F_ALL = ALL_DTYPES
F_FLOATS = FLOAT_DTYPES

# name -> (reference, kind, operand dtypes it speaks for)
POINTWISE = {
    "exp": (_float(np.exp), "float", F_ALL),
    "exp2": (_float(np.exp2), "float", F_ALL),
    "expm1": (_float(np.expm1), "float", F_ALL),
    "log": (_float(np.log), "float", F_ALL),
    "log2": (_float(np.log2), "float", F_ALL),
    "log10": (_float(np.log10), "float", F_ALL),
    "log1p": (_float(np.log1p), "float", F_ALL),
    "sqrt": (_float(np.sqrt), "float", F_ALL),
    "rsqrt": (_float(lambda x: 1.0 / np.sqrt(x)), "float", F_ALL),
    "sin": (_float(np.sin), "float", F_ALL),
    "cos": (_float(np.cos), "float", F_ALL),
    "tan": (_float(np.tan), "float", F_ALL),
    "asin": (_float(np.arcsin), "float", F_ALL),
    "acos": (_float(np.arccos), "float", F_ALL),
    "atan": (_float(np.arctan), "float", F_ALL),
    "sinh": (_float(np.sinh), "float", F_ALL),
    "cosh": (_float(np.cosh), "float", F_ALL),
    "tanh": (_float(np.tanh), "float", F_ALL),
    "asinh": (_float(np.arcsinh), "float", F_ALL),
    "acosh": (_float(np.arccosh), "float", F_ALL),
    "atanh": (_float(np.arctanh), "float", F_ALL),
    "sigmoid": (_float(_sigmoid), "float", F_ALL),
    "erf": (_float(_erf), "float", F_ALL),
    "erfc": (_float(_erfc), "float", F_ALL),
    "reciprocal": (_float(lambda x: 1.0 / x), "float", F_ALL),
    # (nan stays nan: PyTorch's relu is clamp_min(x, 0))
    "relu": (_native(lambda x: np.where((x > 0) | (x != x), x, np.zeros_like(x))), "same", NUMERIC),
    "threshold_backward": (_native(lambda g, x, threshold: np.where(x <= _scalar_as(threshold, x), np.zeros_like(g), g)),
                           "same", NUMERIC),
    "_gelu_erf": (_float(lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))), "float", F_FLOATS),
    "_gelu_tanh": (_float(lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))),
                   "float", F_FLOATS),
    "_silu": (_float(lambda x: x * _sigmoid(x)), "float", F_FLOATS),
    "_mish": (_float(lambda x: x * np.tanh(_softplus(x))), "float", F_FLOATS),
    "softplus": (_float(_softplus), "float", F_FLOATS),
    "_elu": (_float(lambda x, alpha=1: np.where(x > 0, x, alpha * np.expm1(x))), "float", F_FLOATS),
    "_leaky_relu": (_float(lambda x, negative_slope=0.01: np.where(x > 0, x, x * negative_slope)),
                    "float", F_FLOATS),
    "_hardtanh": (_float(lambda x, min_val=-1, max_val=1: _clamp(x, min_val, max_val)), "float", F_FLOATS),
    "_hardsigmoid": (_float(lambda x: np.clip(x / 6.0 + 0.5, 0.0, 1.0)), "float", F_FLOATS),
    "_hardswish": (_float(lambda x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0), "float", F_FLOATS),
    "abs": (_native(np.abs), "same", NUMERIC),
    "neg": (_native(np.negative), "same", NUMERIC),
    "floor": (_int_or_float(np.copy, np.floor), "same", NUMERIC),
    "ceil": (_int_or_float(np.copy, np.ceil), "same", NUMERIC),
    "_round": (_int_or_float(np.copy, np.rint), "same", NUMERIC),
    "_round_decimals": (_float(_round_decimals), "float", F_FLOATS),
    "trunc": (_int_or_float(np.copy, np.trunc), "same", NUMERIC),
    "frac": (_float(lambda x: x - np.trunc(x)), "float", F_FLOATS),
    "sign": (_native(_sign), "same", ALL_DTYPES),
    "sgn": (_native(_sign), "same", ALL_DTYPES),
    "isnan": (_native(np.isnan), "bool", F_FLOATS),
    "isinf": (_native(np.isinf), "bool", F_FLOATS),
    "isposinf": (_native(np.isposinf), "bool", F_FLOATS),
    "isneginf": (_native(np.isneginf), "bool", F_FLOATS),
    "isfinite": (_native(np.isfinite), "bool", F_FLOATS),
    "signbit": (_native(np.signbit), "bool", F_FLOATS + SIGNED),
    "logical_not": (_native(np.logical_not), "bool", ALL_DTYPES),
    "bitwise_not": (_native(np.invert), "same", ("bool",) + INT_DTYPES),
    "sub": (_native(lambda a, b, alpha=1: a - b * _alpha(alpha, a)), "same", NUMERIC),
    "rsub": (_native(lambda a, b, alpha=1: b - a * _alpha(alpha, a)), "same", NUMERIC),
    "add": (_int_or_float(lambda a, b, alpha=1: (a + b * _alpha(alpha, a)) if a.dtype != bool
                          else (a | (b & bool(_alpha(alpha, a)))),
                          lambda a, b, alpha=1: a + b * _alpha(alpha, a)), "same", ALL_DTYPES),
    "mul": (_int_or_float(lambda a, b: a & b if a.dtype == bool else a * b, np.multiply), "same", ALL_DTYPES),
    "_div_true": (_float(np.true_divide), "float", F_ALL),
    "_div_trunc": (_int_or_float(_int_trunc_div, _trunc_div), "same", NUMERIC),
    "_div_floor": (_int_or_float(np.floor_divide, _floor_div), "same", NUMERIC),
    "floor_divide": (_int_or_float(np.floor_divide, _floor_div), "same", NUMERIC),
    "remainder": (_native(np.remainder), "same", NUMERIC),
    "fmod": (_native(np.fmod), "same", NUMERIC),
    "pow": (_float(np.power), "float", F_FLOATS),
    "maximum": (_native(np.maximum), "same", ALL_DTYPES),
    "minimum": (_native(np.minimum), "same", ALL_DTYPES),
    "fmax": (_native(np.fmax), "same", ALL_DTYPES),
    "fmin": (_native(np.fmin), "same", ALL_DTYPES),
    "atan2": (_float(np.arctan2), "float", F_ALL),
    "hypot": (_float(np.hypot), "float", F_FLOATS),
    "copysign": (_float(np.copysign), "float", F_ALL),
    "xlogy": (_float(lambda x, y: np.where(np.isnan(y), np.nan, np.where(x == 0, 0.0, x * np.log(y)))),
              "float", F_ALL),
    "logaddexp": (_float(np.logaddexp), "float", F_FLOATS),
    "eq": (_native(np.equal), "bool", ALL_DTYPES),
    "ne": (_native(np.not_equal), "bool", ALL_DTYPES),
    "lt": (_native(np.less), "bool", ALL_DTYPES),
    "le": (_native(np.less_equal), "bool", ALL_DTYPES),
    "gt": (_native(np.greater), "bool", ALL_DTYPES),
    "ge": (_native(np.greater_equal), "bool", ALL_DTYPES),
    "logical_and": (_native(np.logical_and), "bool", ALL_DTYPES),
    "logical_or": (_native(np.logical_or), "bool", ALL_DTYPES),
    "logical_xor": (_native(np.logical_xor), "bool", ALL_DTYPES),
    "bitwise_and": (_native(np.bitwise_and), "same", ("bool",) + INT_DTYPES),
    "bitwise_or": (_native(np.bitwise_or), "same", ("bool",) + INT_DTYPES),
    "bitwise_xor": (_native(np.bitwise_xor), "same", ("bool",) + INT_DTYPES),
    "bitwise_left_shift": (_native(lambda x, s: _shift(x, s, True)), "same", INT_DTYPES),
    "bitwise_right_shift": (_native(lambda x, s: _shift(x, s, False)), "same", INT_DTYPES),
    "where": (_native(lambda c, a, b: np.where(c, a, b)), "same", ("bool",)),
    "clamp_min": (_native(lambda x, lo: np.maximum(x, lo)), "same", NUMERIC),
    "clamp_max": (_native(lambda x, hi: np.minimum(x, hi)), "same", NUMERIC),
    "_clamp": (_native(_clamp), "same", NUMERIC),
    "lerp": (_float(lambda a, b, w: np.where(np.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1.0 - w))),
             "float", F_FLOATS),
    "addcmul": (_int_or_float(lambda s, a, b, value=1: s + _scalar_as(value, s) * a * b,
                              lambda s, a, b, value=1: s + value * (a * b)), "same", NUMERIC),
    "addcdiv": (_opmath(lambda s, a, b, value=1: s + value * (a / b)), "float", F_FLOATS),
}
if _special is not None:
    POINTWISE["erfinv"] = (_float(_special.erfinv), "float", F_ALL)


def reference(name, arrays, dtype, scalars):
    """NumPy's answer for pointwise operator `name` on `arrays` (operands of `dtype`), as a
    NumpyRef of PyTorch's result dtype; None when the table does not speak for `dtype`."""
    if name not in POINTWISE:
        return None
    fn, kind, dtypes = POINTWISE[name]
    if dtype not in dtypes:
        return None
    if name == "_nan_to_num":
        scalars = dict(scalars, dtype=dtype)
    values = fn(*arrays, **scalars)
    return NumpyRef(values, result_dtype(kind, dtype))


POINTWISE["_nan_to_num"] = (_float(_nan_to_num), "same", F_FLOATS)


# ---- reductions -------------------------------------------------------------------------------
# tests/test_reductions.py calls each reduction as `fn(m, x, dim, keepdim)` with m the library
# (pytorchlite or torch); `NUMPY_REDUCTIONS` is a third such library over `NpTensor`s.


class NpTensor:
    """Values (a NumPy array, float32 for bfloat16) plus the PyTorch dtype they stand for,
    with the few view methods the reduction tests apply to either library's tensors."""

    def __init__(self, values, dtype):
        self.values, self.dtype = np.asarray(values), dtype_name(dtype)
        self.shape = self.values.shape

    def dim(self):
        return self.values.ndim

    def transpose(self, a, b):
        return NpTensor(np.swapaxes(self.values, a, b), self.dtype)

    def t(self):
        return self.transpose(0, 1) if self.dim() == 2 else self

    def __getitem__(self, index):
        return NpTensor(self.values[index], self.dtype)

    def expand(self, *shape):
        return NpTensor(np.broadcast_to(self.values, shape), self.dtype)

    def is_floating_point(self):
        return self.dtype in FLOAT_DTYPES

    def float(self):
        return NpTensor(self.values.astype(np.float32), "float32")

    def __getattr__(self, name):
        # the reductions as methods: x.argmax(1) is NUMPY_REDUCTIONS.argmax(x, 1)
        if name.startswith("_") or not hasattr(_NumpyReductions, name):
            raise AttributeError(name)
        fn = getattr(NUMPY_REDUCTIONS, name)
        return lambda *args, **kwargs: fn(self, *args, **kwargs)


def _axes(x, dim):
    """PyTorch's dims as NumPy axes: None and () reduce every dim."""
    if dim is None or dim == () or dim == []:
        return tuple(range(x.dim()))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    nd = max(x.dim(), 1)
    axes = []
    for d in dims:
        if not -nd <= d < nd:
            raise CannotSay(f"dim {d} out of range")
        axes.append(d % nd)
    if len(set(axes)) != len(axes):
        raise CannotSay("a dim repeated")
    return tuple(a for a in axes if a < x.dim())


def _keep(values, x, axes, keepdim):
    values = np.asarray(values)
    if keepdim:
        shape = [1 if i in axes else n for i, n in enumerate(x.shape)]
        values = values.reshape(shape)
    return values


def _no_empty_reduction(x, axes, name):
    if any(x.shape[a] == 0 for a in axes) or (x.values.size == 0 and not axes):
        raise CannotSay(f"{name} of an empty dim raises in PyTorch")


def _float_result(x, dtype=None):
    if dtype is not None:
        return dtype_name(dtype)
    return x.dtype if x.dtype in FLOAT_DTYPES else "float32"


class _NumpyReductions:
    """PyTorch's reductions, as tests/test_reductions.py calls them, computed with NumPy in
    float64 (int64 for integer sums) and rounded once to PyTorch's result dtype."""

    def _f64(self, x):
        return x.values.astype(np.float64)

    def sum(self, x, dim=None, keepdim=False, dtype=None, _nan=False):
        axes = _axes(x, dim)
        if dtype is not None:
            out = dtype_name(dtype)
        else:
            out = x.dtype if x.dtype in FLOAT_DTYPES else "int64"
        if out in FLOAT_DTYPES:
            v = self._f64(x)
            if _nan:
                v = np.where(np.isnan(v), 0.0, v)
            r = v.sum(axis=axes)
        elif out == "bool":
            r = x.values.astype(bool).any(axis=axes)
        else:
            r = x.values.astype(np.int64).sum(axis=axes).astype(out)
        return NumpyRef(_keep(r, x, axes, keepdim), out)

    def nansum(self, x, dim=None, keepdim=False, dtype=None):
        return self.sum(x, dim, keepdim, dtype=dtype, _nan=True)

    def mean(self, x, dim=None, keepdim=False, dtype=None, _nan=False):
        out = dtype_name(dtype) if dtype is not None else x.dtype
        if out not in FLOAT_DTYPES:
            raise CannotSay("mean of an integer dtype raises in PyTorch")
        axes = _axes(x, dim)
        v = self._f64(x)
        with np.errstate(all="ignore"):
            if _nan:
                n = (~np.isnan(v)).sum(axis=axes)
                r = np.where(np.isnan(v), 0.0, v).sum(axis=axes) / n
            else:       # (0 / 0 is nan, as PyTorch's mean of nothing)
                r = v.sum(axis=axes) / int(np.prod([x.shape[a] for a in axes]))
        return NumpyRef(_keep(r, x, axes, keepdim), out)

    def nanmean(self, x, dim=None, keepdim=False, dtype=None):
        if x.dtype not in FLOAT_DTYPES:
            raise CannotSay("nanmean of an integer dtype raises in PyTorch, dtype= or not")
        return self.mean(x, dim, keepdim, dtype=dtype, _nan=True)

    def prod(self, x, dim=None, keepdim=False, dtype=None):
        axes = _axes(x, dim)
        out = dtype_name(dtype) if dtype is not None else (x.dtype if x.dtype in FLOAT_DTYPES else "int64")
        if out in FLOAT_DTYPES:
            r = self._f64(x).prod(axis=axes)
        elif out == "bool":
            r = x.values.astype(bool).all(axis=axes)
        else:
            r = x.values.astype(np.int64).prod(axis=axes).astype(out)
        return NumpyRef(_keep(r, x, axes, keepdim), out)

    def _extreme(self, x, dim, keepdim, fn, name):
        axes = _axes(x, dim)
        _no_empty_reduction(x, axes, name)
        v = x.values
        r = fn(v, axis=axes) if axes else v.copy()
        return NumpyRef(_keep(r, x, axes, keepdim), x.dtype)

    def amax(self, x, dim=(), keepdim=False):
        return self._extreme(x, dim, keepdim, np.max, "amax")

    def amin(self, x, dim=(), keepdim=False):
        return self._extreme(x, dim, keepdim, np.min, "amin")

    def _arg(self, x, dim, keepdim, fn, name):
        if dim is None:
            _no_empty_reduction(x, _axes(x, None), name)
            r = np.asarray(fn(x.values.reshape(-1)))
            if keepdim:
                r = r.reshape([1] * x.dim())
            return NumpyRef(r, "int64")
        axes = _axes(x, dim)
        _no_empty_reduction(x, axes, name)
        if not axes:        # a 0-d tensor
            return NumpyRef(np.zeros(x.shape, np.int64), "int64")
        r = fn(x.values, axis=axes[0])
        return NumpyRef(_keep(r, x, axes, keepdim), "int64")

    def argmax(self, x, dim=None, keepdim=False):
        if x.dtype == "bool":
            raise CannotSay("PyTorch's argmax of bool")
        return self._arg(x, dim, keepdim, np.argmax, "argmax")

    def argmin(self, x, dim=None, keepdim=False):
        if x.dtype == "bool":
            raise CannotSay("PyTorch's argmin of bool")
        return self._arg(x, dim, keepdim, np.argmin, "argmin")

    def max(self, x, dim=None, keepdim=False):
        if dim is None:
            return self._extreme(x, None, False, np.max, "max")
        return (self._extreme(x, dim, keepdim, np.max, "max"), self.argmax(x, dim, keepdim))

    def min(self, x, dim=None, keepdim=False):
        if dim is None:
            return self._extreme(x, None, False, np.min, "min")
        return (self._extreme(x, dim, keepdim, np.min, "min"), self.argmin(x, dim, keepdim))

    def aminmax(self, x, *, dim=None, keepdim=False):
        if x.dtype == "bool":
            raise CannotSay("PyTorch's aminmax of bool")
        if dim is None and keepdim:
            raise CannotSay("aminmax(keepdim=True) without dim")
        return (self._extreme(x, dim, keepdim, np.min, "aminmax"), self._extreme(x, dim, keepdim, np.max, "aminmax"))

    def var(self, x, dim=None, *, correction=1, keepdim=False, _std=False):
        if x.dtype not in FLOAT_DTYPES:
            raise CannotSay("var of an integer dtype raises in PyTorch")
        axes = _axes(x, dim)
        v = self._f64(x)
        n = int(np.prod([x.shape[a] for a in axes]))
        with np.errstate(all="ignore"):
            mean = v.sum(axis=axes, keepdims=True) / n
            r = ((v - mean) ** 2).sum(axis=axes) / max(n - correction, 0)
            r = np.sqrt(r) if _std else r
        return NumpyRef(_keep(r, x, axes, keepdim), x.dtype)

    def std(self, x, dim=None, *, correction=1, keepdim=False):
        return self.var(x, dim, correction=correction, keepdim=keepdim, _std=True)

    def var_mean(self, x, dim=None, *, correction=1, keepdim=False):
        return (self.var(x, dim, correction=correction, keepdim=keepdim), self.mean(x, dim, keepdim))

    def std_mean(self, x, dim=None, unbiased=True, keepdim=False):
        return (self.std(x, dim, correction=int(unbiased), keepdim=keepdim), self.mean(x, dim, keepdim))

    def all(self, x, dim=None, keepdim=False):
        axes = () if dim == () else _axes(x, dim)      # (all and any read dim=() as no dim)
        r = (x.values != 0).all(axis=axes)
        return NumpyRef(_keep(r, x, axes, keepdim), "uint8" if x.dtype == "uint8" else "bool")

    def any(self, x, dim=None, keepdim=False):
        axes = () if dim == () else _axes(x, dim)
        r = (x.values != 0).any(axis=axes)
        return NumpyRef(_keep(r, x, axes, keepdim), "uint8" if x.dtype == "uint8" else "bool")

    def count_nonzero(self, x, dim=None):
        axes = _axes(x, dim)
        return NumpyRef((x.values != 0).sum(axis=axes), "int64")

    def logsumexp(self, x, dim, keepdim=False):
        axes = _axes(x, dim)
        v = self._f64(x) if x.dtype in FLOAT_DTYPES else x.values.astype(np.float32).astype(np.float64)
        with np.errstate(all="ignore"):
            if v.size == 0:
                r = np.log(np.exp(v).sum(axis=axes))
            else:
                m = v.max(axis=axes, keepdims=True) if all(x.shape[a] for a in axes) else np.zeros(
                    [1 if i in axes else n for i, n in enumerate(x.shape)])
                m = np.where(np.isinf(m), 0.0, m)
                r = np.log(np.exp(v - m).sum(axis=axes)) + np.squeeze(m, axis=axes)
        return NumpyRef(_keep(r, x, axes, keepdim), _float_result(x))

    def norm(self, x, p=2, dim=None, keepdim=False, dtype=None):
        if x.dtype not in FLOAT_DTYPES:
            raise CannotSay("norm of an integer dtype raises in PyTorch")
        if p != 2:
            raise CannotSay("only the 2-norm has a reference here")
        widening = {"float16": ("float32", "float64"), "bfloat16": ("float32", "float64"), "float32": ("float64",)}
        if dtype is not None and dtype_name(dtype) != x.dtype and dtype_name(dtype) not in widening.get(x.dtype, ()):
            raise CannotSay("PyTorch's norm refuses a narrowing dtype=")
        axes = _axes(x, dim)
        v = self._f64(x)
        with np.errstate(all="ignore"):
            r = np.sqrt((v * v).sum(axis=axes))
            big = np.abs(v).max(axis=axes, initial=0.0) if v.size else r
            r = np.where(np.isinf(big), np.inf, r)      # (inf * inf overflows to inf anyway)
        return NumpyRef(_keep(r, x, axes, keepdim), dtype_name(dtype) if dtype is not None else x.dtype)


    # ---- sorting (tests/test_sort.py), stable: PyTorch's order of ties with stable=True ----

    def sort(self, x, dim=-1, descending=False, stable=False):
        idx = _stable_argsort(x.values, dim, descending)
        vals = np.take_along_axis(x.values, idx, axis=dim) if x.dim() else x.values.copy()
        return SortResult(NumpyRef(vals, x.dtype), NumpyRef(idx, "int64"))

    def argsort(self, x, dim=-1, descending=False, stable=False):
        return self.sort(x, dim, descending).indices

    def topk(self, x, k, dim=-1, largest=True, sorted=True):
        r = self.sort(x, dim, descending=largest)
        if not x.dim():
            return r
        take = [slice(None)] * x.dim()
        take[dim] = slice(0, k)
        return SortResult(NumpyRef(r.values.values[tuple(take)], x.dtype),
                          NumpyRef(r.indices.values[tuple(take)], "int64"))


class SortResult(tuple):
    """(values, indices), as PyTorch's return types."""

    def __new__(cls, values, indices):
        return super().__new__(cls, (values, indices))

    values = property(lambda self: self[0])
    indices = property(lambda self: self[1])


def _stable_argsort(v, dim, descending):
    """PyTorch's stable sort order: NaN above +inf, -0.0 equal to 0.0, ties in index order
    (descending too: the ranks are negated, not the order reversed)."""
    if v.ndim == 0:
        return np.zeros((), np.int64)
    # dense ranks: np.unique puts every NaN, as one value, last, and -0.0 with 0.0
    _, inverse = np.unique(v, return_inverse=True)
    rank = inverse.reshape(v.shape).astype(np.int64)
    return np.argsort(-rank if descending else rank, axis=dim, kind="stable").astype(np.int64)


NUMPY_REDUCTIONS = _NumpyReductions()


# ---- movement (tests/test_movement.py): name of the torch function -> NumPy reference -------
# Each takes NumPy arrays where PyTorch takes tensors; the result keeps the data's dtype.
# Where PyTorch raises (bad dims, indices out of range or negative, non-int64 indices) or
# promotes mixed dtypes, the reference says CannotSay and the PyTorch run checks it.

def _index(i):
    i = np.asarray(i)
    if i.dtype != np.int64 or (i < 0).any():
        raise CannotSay("PyTorch's own index rules")
    return i


def _axis(x, dim):
    nd = max(np.ndim(x), 1)
    if not -nd <= dim < nd:
        raise CannotSay("dim out of range")
    return dim % nd


def _one_dtype(arrays):
    if len({a.dtype for a in arrays}) != 1:
        raise CannotSay("mixed dtypes promote as PyTorch does")
    return arrays


def _cat(arrays, dim=0):
    arrays = _one_dtype(list(arrays))
    if any(a.ndim == 0 for a in arrays) or any(a.shape == (0,) for a in arrays):
        raise CannotSay("0-d pieces raise, 1-d empty pieces are skipped (PyTorch's legacy rule)")
    return np.concatenate(arrays, axis=_axis(arrays[0], dim))


def _stack(arrays, dim=0):
    arrays = _one_dtype(list(arrays))
    nd = arrays[0].ndim + 1
    if not -nd <= dim < nd:
        raise CannotSay("dim out of range")
    return np.stack(arrays, axis=dim % nd)


def _gather(x, dim, index):
    index = _index(index)
    if x.ndim == 0:
        if index.ndim != 0 or index != 0:
            raise CannotSay("0-d gather")
        return x.copy()
    if index.ndim != x.ndim:
        raise CannotSay("index rank differs")
    dim = _axis(x, dim)
    if any(index.shape[d] > x.shape[d] for d in range(x.ndim) if d != dim):
        raise CannotSay("index larger than the input")
    sub = x[tuple(slice(0, index.shape[d]) if d != dim else slice(None) for d in range(x.ndim))]
    return np.take_along_axis(sub, index, axis=dim)


def _take(x, index):
    index = np.asarray(index)
    if index.dtype != np.int64:
        raise CannotSay("PyTorch's own index rules")
    return np.take(x.reshape(-1), index)      # (negative indices count from the end, as in torch.take)


def _take_along_dim(x, index, dim=None):
    index = _index(index)
    if dim is None:
        return np.take_along_axis(x.reshape(-1), index.reshape(-1), axis=0)
    if index.ndim != x.ndim:
        raise CannotSay("index rank differs")
    dim = _axis(x, dim)
    shape = [max(a, b) if d != dim else index.shape[d] for d, (a, b) in enumerate(zip(x.shape, index.shape))]
    xs = list(shape)
    xs[dim] = x.shape[dim]
    return np.take_along_axis(np.broadcast_to(x, xs), np.broadcast_to(index, shape), axis=dim)


def _flip(x, dims):
    dims = [_axis(x, d) for d in dims]
    if len(set(dims)) != len(dims):
        raise CannotSay("a dim repeated")
    return np.flip(x, axis=tuple(dims)) if x.ndim else x.copy()


def _need_2d(fn):
    def ref(x, *args):
        if x.ndim < 2:
            raise CannotSay("needs 2 dims")
        return fn(x, *args)
    return ref


def _roll(x, shifts, dims=None):
    if dims is None or dims == ():
        if dims == () and shifts == ():
            raise CannotSay("PyTorch's message for empty shifts")
        return np.roll(x.reshape(-1), shifts).reshape(x.shape)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise CannotSay("shifts and dims differ in length")
    return np.roll(x, shifts, axis=tuple(_axis(x, d) for d in dims))


def _rot90(x, k=1, dims=(0, 1)):
    if x.ndim < 2 or len(dims) != 2:
        raise CannotSay("rot90 needs 2 dims")
    a, b = _axis(x, dims[0]), _axis(x, dims[1])
    if a == b:
        raise CannotSay("the same dim twice")
    return np.rot90(x, k, axes=(a, b))


def _tri(fn):
    def ref(x, diagonal=0):
        if x.ndim < 2:
            raise CannotSay("needs 2 dims")
        return fn(x, diagonal)
    return ref


def _tile(x, reps):
    return np.tile(x, reps)


MOVEMENT = {
    "torch.cat": _cat, "torch.concat": _cat, "torch.concatenate": _cat, "torch.stack": _stack,
    "torch.gather": _gather, "torch.take": _take, "torch.take_along_dim": _take_along_dim,
    "torch.flip": _flip, "torch.fliplr": _need_2d(np.fliplr), "torch.flipud": lambda x: (
        np.flipud(x) if x.ndim >= 1 else _need_2d(None)(x)),
    "torch.roll": _roll, "torch.rot90": _rot90, "torch.tril": _tri(np.tril), "torch.triu": _tri(np.triu),
    "torch.tile": _tile,
}


def movement_reference(name, data_dtype):
    """The NumPy reference of torch function `name` as a NumPy oracle for check_parity (the
    result rounded to `data_dtype`, PyTorch's), or None where there is none."""
    fn = MOVEMENT.get(name)
    if fn is None:
        return None

    def oracle(*args, **kwargs):
        with np.errstate(all="ignore"):
            try:
                values = fn(*args, **kwargs)
            except CannotSay:
                raise
            except (ValueError, IndexError, TypeError, np.exceptions.AxisError) as e:
                raise CannotSay(f"NumPy refused: {e}") from e
        return NumpyRef(values, data_dtype)
    return oracle


# ---- dtype conversion (tests/test_tensor.py) ---------------------------------------------------

def cast(values, src, dst):
    """PyTorch's conversion of `values` (a NumPy array holding a `src` tensor's values,
    float32 for bfloat16) to `dst`, as a NumpyRef: float to integer truncates toward zero
    (callers keep to values that fit), to bool is `!= 0` (NaN is True), and conversions to
    the 16-bit floats go through float32, as c10's Half and BFloat16 constructors do."""
    v = np.asarray(values)
    src, dst = dtype_name(src), dtype_name(dst)
    with np.errstate(all="ignore"):
        if dst == "bool":
            out = v != 0
        elif dst in INT_DTYPES:
            out = (np.trunc(v) if src in FLOAT_DTYPES else v).astype(np.int64 if src in FLOAT_DTYPES else v.dtype)
            out = out.astype(dst)
        elif dst in ("float16", "bfloat16"):
            out = v.astype(np.float32)       # NumpyRef rounds float32 to bfloat16
            out = out.astype(np.float16) if dst == "float16" else out
        else:
            out = v.astype(dst)
    return NumpyRef(out, dst)


# ---- nn functional forms in float64 (tests/nn/), with gradients by central differences ----------

def numeric_grad(fn, arrays, k, upstream, eps=1e-6):
    """d/d arrays[k] of sum(fn(*arrays) * upstream), by central differences in float64."""
    a = np.array(arrays[k], dtype=np.float64)
    grad = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        vals = []
        for step in (eps, -eps):
            moved = a.copy()
            moved[i] += step
            args = list(arrays)
            args[k] = moved
            vals.append(float((np.asarray(fn(*args)) * upstream).sum()))
        grad[i] = (vals[0] - vals[1]) / (2 * eps)
    return grad


def softmax(x, dim, log=False):
    if x.ndim == 0:
        return np.zeros_like(x) if log else np.ones_like(x)
    z = x - x.max(axis=dim, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=dim, keepdims=True))
    return z - lse if log else np.exp(z - lse)


def _pair2(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """PyTorch's conv2d (cross-correlation), directly from its definition."""
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    sh, sw = _pair2(stride)
    dh, dw = _pair2(dilation)
    kh, kw = w.shape[2:]
    if padding == "valid":
        padding = 0
    if padding == "same":
        # the total padding dilation * (k - 1) goes left first (floor), the rest right
        th, tw = dh * (kh - 1), dw * (kw - 1)
        pads = ((th // 2, th - th // 2), (tw // 2, tw - tw // 2))
    else:
        ph, pw = _pair2(padding)
        pads = ((ph, ph), (pw, pw))
    x = np.pad(x, ((0, 0), (0, 0)) + pads)
    n, cin, hgt, wid = x.shape
    cout = w.shape[0]
    oh = (hgt - dh * (kh - 1) - 1) // sh + 1
    ow = (wid - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, cout, oh, ow))
    cin_g, cout_g = cin // groups, cout // groups
    for g in range(groups):
        xs = x[:, g * cin_g:(g + 1) * cin_g]
        ws = w[g * cout_g:(g + 1) * cout_g]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
                out[:, g * cout_g:(g + 1) * cout_g] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    if b is not None:
        out += b[None, :, None, None]
    return out[0] if unbatched else out


def layer_norm(x, normalized_shape, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y
