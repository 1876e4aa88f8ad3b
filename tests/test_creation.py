"""Creating tensors, against PyTorch: tensor()/as_tensor() dtype inference, factories
(zeros/ones/full/empty and their _like forms), arange, linspace, eye, and the default dtype.

Known differences from PyTorch are marked xfail(strict=True) with the file that has to
change, so fixing one turns its test into an unexpected pass that asks to drop the mark.
"""

import math
import warnings

import numpy as np
import pytest

import pytorchlite as ptl

from parity import HAVE_TORCH, torch_or_missing  # noqa: E402

torch = torch_or_missing()      # without PyTorch, a test that calls it is skipped

pytestmark = pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy")


@pytest.fixture(autouse=True)
def _default_dtype_restored():
    yield
    ptl.set_default_dtype(ptl.float32)
    if HAVE_TORCH:
        torch.set_default_dtype(torch.float32)


def name(dt):
    return str(dt).split(".")[-1]


def assert_same(p, t, exact=True):
    assert name(p.dtype) == name(t.dtype), (p.dtype, t.dtype)
    assert tuple(p.shape) == tuple(t.shape)
    pv = np.asarray(p.double().numpy()) if p.numel() else np.zeros(tuple(p.shape))
    tv = t.double().numpy()
    if exact:
        np.testing.assert_array_equal(pv, tv)
    else:
        np.testing.assert_allclose(pv, tv, rtol=2e-7 if t.dtype == torch.float32 else 1e-14, atol=1e-7)


def build(expr, lib):
    """Evaluate a data expression with `T` bound to the library, so nested tensors are
    the library's own."""
    return eval(expr, {"np": np, "T": lib, "math": math})


# --- tensor(): dtype inference -------------------------------------------------------------

INFERENCE = [
    "[1, 2, 3]", "[1, 2.0]", "[True, False]", "[True, 1]", "[True, 1.5]", "[]", "[[]]", "[[], []]",
    "[[1, 2], [3, 4]]", "((1, 2), (3, 4))", "3", "2.5", "True", "-0.0", "[math.inf, -math.inf, math.nan]",
    "range(4)", "[-2**63, 2**63 - 1]", "[1.0, 2**64]",
    "np.array([1, 2], dtype=np.int32)", "np.array([1, 2], dtype=np.float16)", "np.array([True])",
    "np.array([1], dtype=np.uint8)", "np.array(1.5)", "np.zeros((2, 0, 3))", "np.arange(6.).reshape(2, 3)[:, ::2]",
    "np.float64(1.5)", "np.float32(1.5)", "np.int32(3)", "np.bool_(True)",
    "[np.float64(1.5)]", "[np.float32(1.5), 2]", "[np.int32(1), 2]", "[np.int32(3), np.int16(2)]",
    "[1, np.float16(1.5)]", "[1.5, np.float16(1.5)]", "[np.bool_(True), False]",
    "[np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)]", "[np.array([1.5]), [2]]",
    "[T.tensor(1, dtype=T.int32), T.tensor(2, dtype=T.int32)]", "[T.tensor(1.5, dtype=T.float64), 2]",
    "[T.tensor(1.5, dtype=T.float16), 2.5]", "[[T.tensor(True)], [False]]",
]


@pytest.mark.parametrize("expr", INFERENCE)
def test_tensor_infers_dtype_like_torch(expr):
    assert_same(ptl.tensor(build(expr, ptl)), torch.tensor(build(expr, torch)))


@pytest.mark.parametrize("default", ["float64", "float16"])
@pytest.mark.parametrize("expr", ["[1.5, 2]", "2.5", "[True, 0.5]", "[np.float32(1.5), 0.5]", "[1, 2]"])
def test_tensor_inference_follows_default_dtype(default, expr):
    ptl.set_default_dtype(getattr(ptl, default))
    torch.set_default_dtype(getattr(torch, default))
    assert_same(ptl.tensor(build(expr, ptl)), torch.tensor(build(expr, torch)))


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64",
                                   "float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("expr", ["[[0, 1], [-1, 7]]", "[0.5, -2.7, 3.9, -0.0]", "[True, False]", "[]",
                                  "np.array([1.25, -3.5])", "np.array([[1, -2]], dtype=np.int16)",
                                  "[-255, 255]", "[1e-8, 1e10]", "[math.inf, -math.inf]"])
def test_tensor_with_explicit_dtype(dtype, expr):
    def make(lib):
        return lib.tensor(build(expr, lib), dtype=getattr(lib, dtype))
    try:
        want = make(torch)
    except (RuntimeError, ValueError) as e:
        with pytest.raises(type(e)) as got:
            make(ptl)
        assert str(got.value) == str(e)
        return
    assert_same(make(ptl), want)


def test_tensor_rounds_16_bit_floats_like_torch():
    # PyTorch goes double -> float -> half/bfloat16: a value just above a float32 tie
    # lands on the tie after the first rounding and then rounds to even
    vals = [1 + 2**-11 + 2**-40, 1 + 2**-8 + 2**-40, 65519.99, 65520.0, 3.4e38, 1e-8, -2.5e-8, 5.9e-8]
    for dt in ("float16", "bfloat16"):
        assert_same(ptl.tensor(vals, dtype=getattr(ptl, dt)), torch.tensor(vals, dtype=getattr(torch, dt)))
        arr = np.array(vals)
        assert_same(ptl.tensor(arr, dtype=getattr(ptl, dt)), torch.tensor(arr, dtype=getattr(torch, dt)))


@pytest.mark.parametrize("expr,dtype", [
    ("[256]", "uint8"), ("[-256]", "uint8"), ("[128]", "int8"), ("[1e20]", "int64"), ("[300.5]", "uint8"),
    ("[-0.5]", "uint8"), ("[math.nan]", "int32"), ("[math.inf]", "int16"), ("[2**63]", "int64"),
    ("[2**63]", "int8"), ("[2**63]", None), ("[-2**63 - 1]", None), ("[40000]", "int16"),
])
def test_tensor_overflow_errors_match_torch(expr, dtype):
    def make(lib):
        return lib.tensor(build(expr, lib), dtype=getattr(lib, dtype) if dtype else None)
    with pytest.raises(Exception) as want:
        make(torch)
    with pytest.raises(type(want.value)) as got:
        make(ptl)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("expr", ["[[1, 2], [3]]", "[[1, 2], 3]", "[1, [2]]", "[[[1], [2]], [[3]]]",
                                  "[np.array([1, 2]), np.array([3])]", "[np.array([1, 2]), 3]",
                                  "[3, np.array([1, 2])]", "[[1, 2], np.array([1, 2, 3])]"])
def test_ragged_lists_raise_value_error(expr):
    with pytest.raises(ValueError, match="expected"):
        ptl.tensor(build(expr, ptl))


def test_ragged_message_matches_torch():
    with pytest.raises(ValueError) as want:
        torch.tensor([[1, 2], [3]])
    with pytest.raises(ValueError) as got:
        ptl.tensor([[1, 2], [3]])
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("expr", ["'abc'", "[1, 'a']", "[b'a']", "None", "[None]", "[object()]", "{1: 2}", "{1, 2}"])
def test_uninferable_data_errors_match_torch(expr):
    with pytest.raises(Exception) as want:
        torch.tensor(build(expr, torch))
    with pytest.raises(type(want.value)) as got:
        ptl.tensor(build(expr, ptl))
    assert str(got.value) == str(want.value)


def test_tensor_copies_and_warns_on_tensor_input():
    a = np.array([1.0, 2.0])
    t = ptl.tensor(a)
    a[0] = 5
    assert t.tolist() == [1.0, 2.0]
    src = ptl.tensor([1, 2])
    with pytest.warns(UserWarning, match="clone"):
        c = ptl.tensor(src, dtype=ptl.float64)
    assert c.dtype is ptl.float64 and c.data_ptr() != src.data_ptr()
    with pytest.raises(TypeError):
        ptl.tensor([1], dtype="float32")
    assert ptl.tensor([1.5], requires_grad=True).requires_grad


def test_unsupported_numpy_dtype():
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.uint16"):
        ptl.tensor(np.zeros(2, dtype=np.uint16))
    with pytest.raises(TypeError, match="complex"):
        ptl.tensor([1j])


# --- as_tensor -----------------------------------------------------------------------------

def test_as_tensor_shares_when_it_can():
    a = np.arange(4, dtype=np.float32)
    t = ptl.as_tensor(a)
    assert t.data_ptr() == a.ctypes.data
    t2 = ptl.as_tensor(a, dtype=ptl.float64)      # a different dtype copies
    assert t2.dtype is ptl.float64 and t2.data_ptr() != a.ctypes.data
    p = ptl.tensor([1, 2])
    assert ptl.as_tensor(p) is p
    assert ptl.as_tensor(p, dtype=ptl.int64) is p
    assert ptl.as_tensor(p, dtype=ptl.int32).dtype is ptl.int32
    for expr in ("[1, 2.5]", "[[True]]", "3", "np.float64(2)", "np.arange(6)[::2]"):
        assert_same(ptl.as_tensor(build(expr, ptl)), torch.as_tensor(build(expr, torch)))
    neg = np.arange(4)[::-1]
    assert_same(ptl.as_tensor(neg), torch.as_tensor(neg.copy()))   # copied, not shared


# --- zeros / ones / full / empty and _like ---------------------------------------------------

@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("size", [(), (0,), (3,), (2, 3), (2, 0, 1)])
@pytest.mark.parametrize("dtype", [None, "bool", "uint8", "int32", "int64", "float16", "bfloat16", "float64"])
def test_basic_factories(fn, size, dtype):
    kw = {"dtype": getattr(ptl, dtype)} if dtype else {}
    tkw = {"dtype": getattr(torch, dtype)} if dtype else {}
    p, t = getattr(ptl, fn)(size, **kw), getattr(torch, fn)(size, **tkw)
    p2 = getattr(ptl, fn)(*size, **kw) if size else p   # zeros() with no size is a TypeError, as in torch
    assert p.shape == p2.shape == tuple(t.shape) and p.stride() == t.stride()
    assert name(p.dtype) == name(t.dtype)
    if fn != "empty":
        assert_same(p, t)


@pytest.mark.parametrize("value", [3, 3.5, True, -0.0, math.inf, -7, 2**40])
@pytest.mark.parametrize("dtype", [None, "bool", "uint8", "int16", "int64", "float16", "bfloat16", "float64"])
def test_full(value, dtype):
    def make(lib):
        kw = {"dtype": getattr(lib, dtype)} if dtype else {}
        return lib.full((2, 3), value, **kw)
    try:
        want = make(torch)
    except RuntimeError:
        return   # overflow (e.g. inf into an integer dtype): see test_full_overflow
    assert_same(make(ptl), want)


@pytest.mark.parametrize("dtype,value", [("int32", 1e10), ("int16", 1e6), ("int64", 1e30), ("int64", 2 ** 63),
                                         ("int8", -129), ("int8", -128.9), ("uint8", 255.9), ("uint8", 256.0),
                                         ("uint8", -1.0), ("int32", math.nan), ("float32", 1e40),
                                         ("float16", 70000.0), ("bfloat16", 1e40)])
def test_full_overflow(dtype, value):
    with pytest.raises(RuntimeError) as want:
        torch.full((2,), value, dtype=getattr(torch, dtype))
    with pytest.raises(RuntimeError) as got:
        ptl.full((2,), value, dtype=getattr(ptl, dtype))
    assert str(got.value) == str(want.value)
    with pytest.raises(RuntimeError, match="without overflow"):
        ptl.zeros(2, dtype=getattr(ptl, dtype)).fill_(value)


@pytest.mark.parametrize("dtype,value", [("uint8", -129), ("uint8", -1), ("float16", 65504.0), ("bfloat16", -math.inf),
                                         ("float32", math.inf), ("bool", 5), ("int32", True), ("int32", 1.5)])
def test_full_values_that_fit_or_wrap(dtype, value):
    want = torch.full((2,), value, dtype=getattr(torch, dtype))
    got = ptl.full((2,), value, dtype=getattr(ptl, dtype))
    assert got.tolist() == want.tolist()


def test_negative_size_errors():
    for fn in ("zeros", "ones", "empty"):
        with pytest.raises(RuntimeError):
            getattr(ptl, fn)(2, -1)
    with pytest.raises(RuntimeError):
        ptl.full((-1,), 2.0)
    with pytest.raises(TypeError):
        ptl.zeros(2, 3.0)


@pytest.mark.parametrize("fn", ["zeros_like", "ones_like", "empty_like"])
@pytest.mark.parametrize("dtype", [None, "int16", "float64", "bool"])
def test_like_factories(fn, dtype):
    src_p, src_t = ptl.tensor([[1, 2, 3], [4, 5, 6]], dtype=ptl.int16), torch.tensor(
        [[1, 2, 3], [4, 5, 6]], dtype=torch.int16)
    kw = {"dtype": getattr(ptl, dtype)} if dtype else {}
    tkw = {"dtype": getattr(torch, dtype)} if dtype else {}
    p, t = getattr(ptl, fn)(src_p, **kw), getattr(torch, fn)(src_t, **tkw)
    assert p.data_ptr() != src_p.data_ptr()
    if fn == "empty_like":
        assert p.shape == tuple(t.shape) and name(p.dtype) == name(t.dtype)
    else:
        assert_same(p, t)


@pytest.mark.parametrize("value", [7, 2.7, True])
def test_full_like_keeps_dtype(value):
    src_p, src_t = ptl.zeros(2, 2, dtype=ptl.int16), torch.zeros(2, 2, dtype=torch.int16)
    assert_same(ptl.full_like(src_p, value), torch.full_like(src_t, value))
    fp, ft = ptl.zeros(3), torch.zeros(3)
    assert_same(ptl.full_like(fp, value), torch.full_like(ft, value))


# --- arange --------------------------------------------------------------------------------

ARANGE = [
    (5,), (0, 10, 3), (10, 0, -3), (0, -5, -1), (0, 0), (3, 4), (-7, 8, 5), (2**60, 2**60 + 3),
    (0.0, 1.0, 0.1), (1, 2.5, 0.5), (-1.5, 1.5, 0.7), (0.0, 1.0, 1 / 3), (5.0, -5.0, -1.25), (0.5, 5),
    (1e-3, 2e-3, 1e-4), (-10, 10, 0.5),
]


@pytest.mark.parametrize("args", ARANGE)
def test_arange_inferred_dtype(args):
    assert_same(ptl.arange(*args), torch.arange(*args), exact=False)


@pytest.mark.parametrize("args", ARANGE)
@pytest.mark.parametrize("dtype", ["uint8", "int16", "int32", "int64", "float32", "float64"])
def test_arange_with_dtype(args, dtype):
    if dtype == "uint8" and any(v < 0 or v > 255 for v in args):
        return
    if dtype != "int64" and any(abs(v) > 30000 for v in args):
        return   # out of the dtype's range: PyTorch's result is an overflow artefact
    if dtype in ("uint8", "int16", "int32", "int64") and any(isinstance(v, float) and v != int(v) for v in args):
        return   # see test_integer_arange_truncates_start_and_step
    want = torch.arange(*args, dtype=getattr(torch, dtype))
    # float results: PyTorch's loop and its vectorised variant round differently (1 ulp)
    assert_same(ptl.arange(*args, dtype=getattr(ptl, dtype)), want, exact=not want.is_floating_point())


@pytest.mark.parametrize("args,dtype", [((-3.7, 2.1, 1.3), "int32"), ((0.5, 5), "int64"), ((-0.5, 3, 1), "int64"),
                                        ((0., 1., 0.25), "int32"), ((0, 300), "uint8"), ((2.9, -4.2, -1.5), "int16"),
                                        ((-3.7, 2.1, 1.3), "int64")])
def test_integer_arange_truncates_start_end_and_step(args, dtype):
    assert ptl.arange(*args, dtype=getattr(ptl, dtype)).tolist() == \
        torch.arange(*args, dtype=getattr(torch, dtype)).tolist()


def test_int64_arange_with_step_truncated_to_zero():
    with pytest.raises(ValueError, match="step must be nonzero"):
        ptl.arange(0, 1, 0.25, dtype=ptl.int64)


def test_arange_16_bit_floats_close():
    for dt in ("float16", "bfloat16"):
        p = ptl.arange(0, 10, 0.3, dtype=getattr(ptl, dt))
        t = torch.arange(0, 10, 0.3, dtype=getattr(torch, dt))
        assert p.shape == tuple(t.shape)
        # PyTorch's vectorised 16-bit arange rounds the step itself: allow one bfloat16 ulp
        np.testing.assert_allclose(p.double().numpy(), t.double().numpy(), rtol=8e-3)


def test_arange_length_is_computed_like_torch():
    for args in [(0, 1, 0.1), (0, 0.3, 0.1), (1, 1.0000001, 1e-7), (0, 10, 10), (0, 10, 11), (-1, 1, 2)]:
        assert ptl.arange(*args).shape == tuple(torch.arange(*args).shape), args


@pytest.mark.parametrize("args,kw", [((5, 0), {}), ((0, 5, 0), {}), ((0, math.inf), {}), ((0, math.nan), {}),
                                     ((0, 5, -1), {})])
def test_arange_errors(args, kw):
    with pytest.raises(RuntimeError) as want:
        torch.arange(*args, **kw)
    with pytest.raises(RuntimeError) as got:
        ptl.arange(*args, **kw)
    msg = str(got.value)
    assert msg == str(want.value) or msg == "arange(): " + str(want.value)


def test_arange_bool_not_implemented():
    with pytest.raises(NotImplementedError):
        ptl.arange(1, 4, dtype=ptl.bool)


# --- linspace ------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [(0, 1, 5), (0, 1, 1), (0, 1, 0), (1, 0, 11), (-3.5, 7.25, 2), (0, 1, 2),
                                  (0, 10, 6), (5, 5, 4), (-2, 3, 7), (0, 1, 100), (0, 1e6, 50)])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32"])
def test_linspace(args, dtype):
    p = ptl.linspace(*args, dtype=getattr(ptl, dtype))
    t = torch.linspace(*args, dtype=getattr(torch, dtype))
    # float results: PyTorch computes float32 linspace in float32 and its vectorised loop
    # rounds differently from its scalar tail; pytorchlite rounds the exact value once
    assert_same(p, t, exact=not t.is_floating_point())


def test_linspace_default_dtype_and_errors():
    assert ptl.linspace(0, 1, 3).dtype is ptl.float32
    ptl.set_default_dtype(ptl.float64)
    assert ptl.linspace(0, 1, 3).dtype is ptl.float64
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        ptl.linspace(0, 1, -1)
    with pytest.raises(TypeError):
        ptl.linspace(0, 1, 2.0)


# --- eye ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("nm", [(0,), (1,), (3,), (2, 4), (4, 2), (0, 3), (3, 0), (5, 5)])
@pytest.mark.parametrize("dtype", [None, "bool", "uint8", "int32", "int64", "float16", "bfloat16", "float64"])
def test_eye_exact(nm, dtype):
    kw = {"dtype": getattr(ptl, dtype)} if dtype else {}
    tkw = {"dtype": getattr(torch, dtype)} if dtype else {}
    p, t = ptl.eye(*nm, **kw), torch.eye(*nm, **tkw)
    assert_same(p, t)
    assert p.stride() == t.stride()


def test_eye_errors():
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0, got -1"):
        ptl.eye(-1)
    with pytest.raises(RuntimeError, match="must be greater or equal to 0, got -2"):
        ptl.eye(2, -2)


# --- default dtype ---------------------------------------------------------------------------

def test_default_dtype_effects_and_restore():
    assert ptl.get_default_dtype() is ptl.float32
    ptl.set_default_dtype(ptl.float64)
    torch.set_default_dtype(torch.float64)
    for fn in (lambda L: L.tensor([1.5]), lambda L: L.zeros(2), lambda L: L.arange(0.5, 2),
               lambda L: L.full((1,), 2.5), lambda L: L.linspace(0, 1, 3), lambda L: L.eye(2),
               lambda L: L.tensor([1]), lambda L: L.ones_like(L.tensor([1])), lambda L: L.tensor(np.float32(1)),
               lambda L: L.empty(1), lambda L: L.tensor(2.0), lambda L: L.arange(3)):
        p, t = fn(ptl), fn(torch)
        assert name(p.dtype) == name(t.dtype)
    assert ptl.get_default_dtype() is ptl.float64
    ptl.set_default_dtype(ptl.float32)
    assert ptl.tensor([1.5]).dtype is ptl.float32 and ptl.zeros(1).dtype is ptl.float32


@pytest.mark.parametrize("bad", ["int32", "bool", "str", "none"])
def test_set_default_dtype_rejects_non_floating(bad):
    def arg(lib):
        return {"int32": getattr(lib, "int32", None), "bool": getattr(lib, "bool", None),
                "str": "float64", "none": None}[bad]
    with pytest.raises(TypeError) as want:
        torch.set_default_dtype(arg(torch))
    with pytest.raises(TypeError) as got:
        ptl.set_default_dtype(arg(ptl))
    assert str(got.value) == str(want.value)
    assert ptl.get_default_dtype() is ptl.float32


def test_default_dtype_16_bit():
    for dt in ("float16", "bfloat16"):
        ptl.set_default_dtype(getattr(ptl, dt))
        torch.set_default_dtype(getattr(torch, dt))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert name(ptl.tensor([1.5]).dtype) == name(torch.tensor([1.5]).dtype)
            assert name(ptl.zeros(1).dtype) == name(torch.zeros(1).dtype)


# --- varargs sizes: zeros(2, 3), zeros((2, 3)) and zeros(size=(2, 3)) ----------------------

@pytest.mark.parametrize("fn", ["zeros", "ones", "empty", "rand", "randn"])
def test_size_as_varargs_tuple_or_keyword(fn):
    f = getattr(ptl, fn)
    assert f(2, 3).shape == f((2, 3)).shape == f([2, 3]).shape == f(size=(2, 3)).shape == (2, 3)
    assert f(()).shape == f(size=()).shape == ()
    with pytest.raises(TypeError, match=f"{fn}\\(\\) got multiple values for argument 'size'"):
        f(2, size=(2,))
    with pytest.raises(TypeError, match=f"{fn}\\(\\) missing 1 required positional arguments: \"size\""):
        f()


def test_method_varargs_accept_keywords():
    x = ptl.arange(6.)
    assert x.view(size=(2, 3)).shape == x.reshape(shape=(3, 2)).T.shape == (2, 3)
    assert x.view(2, 3).permute(dims=(1, 0)).shape == (3, 2)
    assert x.view(1, 6).expand(size=(4, 6)).shape == (4, 6)
