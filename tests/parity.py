"""The parity helper and the standard edge inputs (0-d, empty, inf/nan, integer, broadcast, non-contiguous).

    from parity import check_parity, edge_cases, from_values

    for label, (x, y) in edge_cases(2, "float32"):
        check_parity(pytorchlite.atan2, torch.atan2, x, y, label=label)

`check_parity` runs an operator in pytorchlite and in the oracle on the *same* data
(every pytorchlite Tensor among the arguments is handed to the oracle with equal values
and dtype) and compares value, shape and dtype, or, when the oracle raises, that
pytorchlite raises an exception of the same type. The oracle is PyTorch when it is
installed, else a NumPy function where one is given (the test is skipped otherwise); a
NumPy function returns an ndarray, or a `NumpyRef` (values plus PyTorch's result dtype,
bfloat16 included) when NumPy's own dtype rules differ from PyTorch's.
A failure says which of value / shape / dtype / exception differed, and on what input.

`edge_cases(n, dtype)` yields labelled tuples of n pytorchlite tensors of one dtype:
plain, 0-d, size 0, special values (inf, -inf, nan, -0.0, extremes of integer dtypes),
broadcasting pairs, and non-contiguous views (transposed, step-sliced, expanded) built
with pytorchlite's own view operations.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import pytorchlite

try:
    import torch
except ImportError:   # NumPy is the oracle then
    torch = None

HAVE_TORCH = torch is not None


class MissingTorch:
    """Stands in for the `torch` module when PyTorch is not installed, so that a test module
    that also has NumPy-checked tests need not skip as a whole: attribute chains
    (`torch.nn.functional.gelu`, `torch.float32`) resolve to placeholders, and *calling* one
    skips the test that called it. `isinstance(x, torch.Tensor)` is False; the module is falsy.

        from parity import torch_or_missing
        torch = torch_or_missing()
    """

    def __init__(self, path="torch"):
        self._path = path

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return MissingTorch(f"{self._path}.{name}")

    def __call__(self, *args, **kwargs):
        pytest.skip(f"{self._path} is PyTorch's, and PyTorch is not installed")

    def __instancecheck__(self, obj):
        return False

    def __bool__(self):
        return False

    def _skip(self, *args, **kwargs):
        pytest.skip(f"{self._path} is PyTorch's, and PyTorch is not installed")

    __hash__ = object.__hash__


# using a placeholder's value in any way (repr(torch.float32), torch.pi * 2, iterating) skips too
for _name in ("repr", "str", "format", "iter", "len", "getitem", "contains", "eq", "ne", "lt", "le", "gt", "ge",
              "int", "float", "index", "neg", "add", "radd", "sub", "rsub", "mul", "rmul", "truediv",
              "rtruediv", "matmul", "rmatmul", "pow", "enter"):
    setattr(MissingTorch, f"__{_name}__", MissingTorch._skip)


def torch_or_missing():
    """The torch module, or a MissingTorch placeholder without PyTorch."""
    return torch if torch is not None else MissingTorch()


needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (the oracle of this test)")


def _bfloat16_round(values):
    """float32 values rounded to the nearest bfloat16 (ties to even), nan and inf kept."""
    shape = np.shape(values)
    f = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    out = rounded.view(np.float32).copy()
    nan = np.isnan(f)
    out[nan] = f[nan]
    return out.reshape(shape)


class NumpyRef:
    """A NumPy oracle's answer with PyTorch's result dtype (which NumPy may not have, as
    bfloat16, or may choose differently, as float64 for `sin` of an int32 array): `values`
    are rounded to `dtype` once, here."""

    def __init__(self, values, dtype):
        dtype = dtype_name(dtype)
        values = np.asarray(values)
        with np.errstate(all="ignore"):
            if dtype == "bfloat16":
                values = _bfloat16_round(values.astype(np.float32))
            else:
                values = values.astype(dtype)
        self.values, self.dtype, self.shape = values, dtype, values.shape

    def item(self):
        return self.values.item()

    def __repr__(self):
        return f"NumpyRef({self.values!r}, {self.dtype})"

ALL_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64",
              "float16", "bfloat16", "float32", "float64")
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
INT_DTYPES = ("uint8", "int8", "int16", "int32", "int64")

# (rtol, atol) per result dtype: a few ulps, like torch.testing.assert_close's defaults
TOLERANCES = {"float16": (2e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5),
              "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}


class ParityError(AssertionError):
    pass


class CannotSay(Exception):
    """Raised by a NumPy oracle that does not know PyTorch's answer (an error PyTorch raises
    with its own type and message): check_parity then compares nothing and returns None."""


# ---- moving data between the frameworks -----------------------------------------------

def dtype_name(dt):
    """'float32' for pytorchlite.float32, torch.float32 and np.float32 alike."""
    return str(dt).rsplit(".", 1)[-1]


def to_numpy(t):
    """A NumPy copy of a pytorchlite or torch tensor (bfloat16 as float32, exactly)."""
    if dtype_name(t.dtype) == "bfloat16":
        t = t.float()
    if torch is not None and isinstance(t, torch.Tensor):
        return t.detach().numpy().copy()
    return np.array(t.numpy(), copy=True)


def to_oracle(v, numpy=False):
    """The oracle's twin of a pytorchlite argument (tensors recursively, the rest as is):
    a torch tensor, or a NumPy array without PyTorch or when `numpy` is true."""
    numpy = numpy or torch is None
    if isinstance(v, pytorchlite.Tensor):
        arr = to_numpy(v)
        if numpy:
            return arr
        out = torch.from_numpy(np.ascontiguousarray(arr)).to(getattr(torch, dtype_name(v.dtype)))
        if not arr.size:    # (from_numpy gives an empty array strides 0; PyTorch's own are contiguous)
            out = torch.empty(arr.shape, dtype=out.dtype)
        if dtype_name(v.dtype) == "bfloat16" and np.isnan(arr).any():
            # torch turns every float32 nan into the bfloat16 bits 0xffff (sign set); keep the
            # sign the pytorchlite tensor holds, so that both see the same data
            nan = torch.from_numpy(np.isnan(arr))
            neg = torch.from_numpy(np.signbit(arr))
            bits = out.view(torch.int16)
            bits[nan & neg] = -64          # 0xffc0
            bits[nan & ~neg] = 0x7fc0
        return out
    if isinstance(v, (list, tuple)):
        return type(v)(to_oracle(x, numpy) for x in v)
    if isinstance(v, pytorchlite.dtype):
        return np.dtype(dtype_name(v)) if numpy else getattr(torch, dtype_name(v))
    return v


def from_values(values, dtype):
    """A pytorchlite tensor of `dtype` holding `values` (a NumPy array or nested list); the
    values should be representable in `dtype` so that both frameworks see the same data."""
    arr = np.asarray(values)
    if dtype == "bool":
        arr = arr.astype(bool)
    elif dtype in ("float16", "bfloat16"):
        arr = arr.astype(np.float32)
    else:
        arr = arr.astype(dtype)
    t = pytorchlite.from_numpy(np.ascontiguousarray(arr))
    return t.to(getattr(pytorchlite, dtype)) if dtype == "bfloat16" or dtype == "float16" else t.clone()


# ---- comparing ----------------------------------------------------------------------------

def _describe(args, kwargs):
    def one(v):
        if isinstance(v, pytorchlite.Tensor):
            contig = "" if v.is_contiguous() else ", non-contiguous"
            return f"Tensor(shape={list(v.shape)}, {dtype_name(v.dtype)}{contig})"
        return repr(v)
    parts = [one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()]
    return "(" + ", ".join(parts) + ")"


def _compare(got, want, where, rtol=None, atol=None, equal_nan=True):
    if isinstance(want, NumpyRef):
        if not isinstance(got, pytorchlite.Tensor):
            raise ParityError(f"{where}: type: expected a Tensor, got {type(got).__name__}")
        if tuple(got.shape) != want.shape:
            raise ParityError(f"{where}: shape: expected {list(want.shape)}, got {list(got.shape)}")
        if dtype_name(got.dtype) != want.dtype:
            raise ParityError(f"{where}: dtype: expected {want.dtype}, got {dtype_name(got.dtype)}")
        _compare_values(to_numpy(got), want.values, want.dtype, where, rtol, atol, equal_nan)
        return
    if torch is not None and isinstance(want, torch.Tensor) or isinstance(want, np.ndarray):
        if not isinstance(got, pytorchlite.Tensor):
            raise ParityError(f"{where}: type: expected a Tensor, got {type(got).__name__}")
        gs, ws = tuple(got.shape), tuple(want.shape)
        if gs != ws:
            raise ParityError(f"{where}: shape: expected {list(ws)}, got {list(gs)}")
        gd, wd = dtype_name(got.dtype), dtype_name(want.dtype)
        if gd != wd:
            raise ParityError(f"{where}: dtype: expected {wd}, got {gd}")
        g = to_numpy(got)
        w = to_numpy(want) if not isinstance(want, np.ndarray) else want
        _compare_values(g, w, gd, where, rtol, atol, equal_nan)
        return
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            raise ParityError(f"{where}: expected a sequence of {len(want)}, got {got!r}")
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, f"{where}[{i}]", rtol, atol, equal_nan)
        return
    if isinstance(want, float) and isinstance(got, float):
        if not (got == want or (math.isnan(got) and math.isnan(want)) or
                math.isclose(got, want, rel_tol=rtol or 1e-7, abs_tol=atol or 0.0)):
            raise ParityError(f"{where}: value: expected {want!r}, got {got!r}")
        return
    if got != want or type(got) is not type(want):
        raise ParityError(f"{where}: value: expected {want!r}, got {got!r}")


def _compare_values(g, w, dtype, where, rtol, atol, equal_nan):
    if dtype not in TOLERANCES:      # integers and bool: exact
        if not np.array_equal(g, w):
            bad = np.argwhere(g != w)[:5].tolist()
            raise ParityError(f"{where}: value: {len(np.argwhere(g != w))} of {g.size} elements differ, "
                              f"first at {bad}: got {g[tuple(bad[0])] if g.ndim else g}, "
                              f"expected {w[tuple(bad[0])] if w.ndim else w}")
        return
    r0, a0 = TOLERANCES[dtype]
    rtol = r0 if rtol is None else rtol
    atol = a0 if atol is None else atol
    g64, w64 = g.astype(np.float64), w.astype(np.float64)
    with np.errstate(invalid="ignore"):
        same = (g64 == w64) | np.isclose(g64, w64, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if not np.all(same):
        idx = np.argwhere(~same)
        first = tuple(idx[0]) if g.ndim else ()
        raise ParityError(f"{where}: value: {len(idx)} of {g.size} elements differ beyond rtol={rtol}, "
                          f"atol={atol}; first at {list(first)}: got {g64[first]!r}, expected {w64[first]!r}")


def check_parity(ours, oracle, *args, label="", rtol=None, atol=None, equal_nan=True,
                 numpy_oracle=None, **kwargs):
    """Run `ours(*args, **kwargs)` in pytorchlite and `oracle` on the same data; check value,
    shape and dtype, or that both raise the same type of exception.

    `oracle` is a torch callable (ignored without torch); `numpy_oracle`, a NumPy callable
    taking NumPy arrays (and returning an ndarray or a NumpyRef), is used when torch is not
    installed, or always when `oracle` is None. Returns pytorchlite's result (or None when
    both raised)."""
    use_numpy = torch is None or oracle is None
    if use_numpy:
        if numpy_oracle is None:
            pytest.skip("no oracle: torch is not installed and no NumPy equivalent was given")
        oracle = numpy_oracle
    name = getattr(ours, "__name__", repr(ours))
    where = f"{name}{_describe(args, kwargs)}" + (f" [{label}]" if label else "")
    where += " (NumPy oracle)" if use_numpy and torch is not None else ""
    o_args = to_oracle(args, use_numpy)
    o_kwargs = {k: to_oracle(v, use_numpy) for k, v in kwargs.items()}
    try:
        want = oracle(*o_args, **o_kwargs)
        want_exc = None
    except CannotSay:
        return None
    except Exception as e:   # the oracle's verdict; pytorchlite must agree
        want, want_exc = None, e
    try:
        got = ours(*args, **kwargs)
        got_exc = None
    except Exception as e:
        got, got_exc = None, e
    if want_exc is not None:
        if got_exc is None:
            raise ParityError(f"{where}: exception: expected {type(want_exc).__name__}({want_exc}), "
                              f"but pytorchlite returned {got!r}")
        if not isinstance(got_exc, type(want_exc)):
            raise ParityError(f"{where}: exception: expected {type(want_exc).__name__}({want_exc}), "
                              f"got {type(got_exc).__name__}({got_exc})")
        return None
    if got_exc is not None:
        raise ParityError(f"{where}: exception: the oracle returned a result, pytorchlite raised "
                          f"{type(got_exc).__name__}: {got_exc}") from got_exc
    _compare(got, want, where, rtol, atol, equal_nan)
    return got


# ---- the standard edge inputs -------------------------------------------------------------

def special_values(dtype):
    """Values every op should see: the extremes and the special floats of `dtype`."""
    if dtype == "bool":
        return [True, False]
    if dtype in INT_DTYPES:
        info = np.iinfo(dtype)
        return [0, 1, -1 if info.min < 0 else 2, int(info.min), int(info.max), 7]
    big = {"float16": 8192.0, "bfloat16": 2.0 ** 60, "float32": 1e18}.get(dtype, 1e150)
    tiny = {"float16": 2.0 ** -14, "bfloat16": 2.0 ** -60, "float32": 1e-18}.get(dtype, 1e-150)
    return [math.inf, -math.inf, math.nan, 0.0, -0.0, 1.0, -1.0, 0.5, big, -big, tiny]


def random_values(shape, dtype, rng, *, nonzero=False, low=None, high=None):
    """Random values representable in `dtype` (float16/bfloat16 values are exact)."""
    if dtype == "bool":
        v = rng.integers(0, 2, size=shape).astype(bool)
        return np.ones(shape, bool) if nonzero else v
    if dtype in INT_DTYPES:
        lo = low if low is not None else (0 if dtype == "uint8" else -9)
        hi = high if high is not None else 10
        v = rng.integers(lo, hi, size=shape)
        if nonzero:
            v[(v == 0) | (v == -1)] = 3
        return v
    lo = -3.0 if low is None else low
    hi = 3.0 if high is None else high
    v = rng.uniform(lo, hi, size=shape)
    if dtype in ("float16", "bfloat16"):
        v = np.round(v * 32) / 32          # 1/32 steps: exact in both 16-bit formats
    if nonzero:
        v[v == 0] = 0.5
    return v


def _noncontiguous(values, dtype, kind):
    """A non-contiguous pytorchlite view holding `values` (2-d), or None when the view
    operation is not available."""
    rows, cols = values.shape
    if kind == "transposed":
        if not hasattr(pytorchlite.Tensor, "transpose"):
            return None
        return from_values(np.ascontiguousarray(values.T), dtype).transpose(0, 1)
    if kind == "step-sliced":
        big = np.zeros((rows * 2, cols), dtype=values.dtype)
        big[::2] = values
        return from_values(big, dtype)[::2]
    if kind == "expanded":
        if not hasattr(pytorchlite.Tensor, "expand"):
            return None
        return from_values(values[:1], dtype).expand(rows, cols)
    raise ValueError(kind)


def edge_cases(n, dtype, *, seed=0, nonzero_last=False, low=None, high=None, specials=True):
    """Labelled tuples of `n` pytorchlite tensors of `dtype` covering STYLE rule 16.

    nonzero_last keeps the last operand free of 0 and -1 (integer divisors: 0 raises, and
    PyTorch's own INT_MIN / -1 traps); low/high bound the random values; `specials` may be
    a function of the dtype giving the special values to use instead of special_values()."""
    rng = np.random.default_rng(seed)

    def rand(shape, k):
        return random_values(shape, dtype, rng, nonzero=nonzero_last and k == n - 1, low=low, high=high)

    def same(shape):
        return tuple(from_values(rand(shape, k), dtype) for k in range(n))

    yield "contiguous", same((3, 4))
    yield "0-d", same(())
    yield "size 0", same((0, 3))
    if specials:
        vals = specials(dtype) if callable(specials) else special_values(dtype)
        # every special value meets every other one across the operands
        grid = np.array(np.meshgrid(*[np.array(vals, dtype=object)] * n, indexing="ij")).reshape(n, -1)
        if n == 1:
            grid = np.array([vals], dtype=object)
        ops = []
        for k in range(n):
            col = grid[k]
            if nonzero_last and k == n - 1 and dtype in INT_DTYPES:
                # no 0 (raises) and no -1: PyTorch itself dies of SIGFPE on INT_MIN / -1
                col = np.array([v if v not in (0, -1) else 3 for v in col], dtype=object)
            ops.append(from_values(np.array(col.tolist(), dtype=np.float64 if dtype in FLOAT_DTYPES else None), dtype))
        yield "special values", tuple(ops)
    if n >= 2:
        shapes = [((3, 4), (4,)), ((3, 1), (1, 4)), ((), (2, 3)), ((2, 0, 3), (3,))]
        for sa, sb in shapes:
            # the first operand gets the first shape, the others the second (and vice versa)
            yield f"broadcast {list(sa)} with {list(sb)}", tuple(
                from_values(rand(sa if k == 0 else sb, k), dtype) for k in range(n))
            yield f"broadcast {list(sb)} with {list(sa)}", tuple(
                from_values(rand(sb if k == 0 else sa, k), dtype) for k in range(n))
    for kind in ("transposed", "step-sliced", "expanded"):
        views = []
        for k in range(n):
            v = _noncontiguous(rand((3, 4), k), dtype, kind)
            if v is None:
                break
            views.append(v)
        else:
            yield kind, tuple(views)
            if n >= 2:
                # only the first operand non-contiguous, the others plain
                yield f"{kind} first only", (views[0],) + tuple(
                    from_values(rand((3, 4), k), dtype) for k in range(1, n))
