"""The Tensor object against PyTorch: metadata, Python protocols and their errors, repr,
dtype conversions, copy_ across dtypes and strides, contiguous/clone.

Non-contiguous tensors are built over strided NumPy views (from_numpy shares memory), so
these tests do not depend on the view operators.
"""

import math

import numpy as np
import pytest

import pytorchlite as ptl

from numpy_oracles import cast  # noqa: E402
from parity import HAVE_TORCH, NumpyRef, to_numpy, torch_or_missing  # noqa: E402

torch = torch_or_missing()      # without PyTorch, a test that calls it is skipped

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
SHAPES = [(), (0,), (1,), (5,), (2, 3), (3, 1), (2, 0, 4), (1, 1, 1), (2, 3, 4)]


def tdt(name):
    return getattr(torch, name)


def pdt(name):
    return getattr(ptl, name)


def values_for(dtype, shape, seed=0):
    """Values representable in `dtype` (so both libraries hold exactly the same data)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    if dtype == "bool":
        v = rng.integers(0, 2, n).astype(bool)
    elif dtype == "uint8":
        v = rng.integers(0, 256, n)
    elif dtype in ("int8", "int16", "int32", "int64"):
        v = rng.integers(-100, 100, n)
    else:
        v = np.round(rng.standard_normal(n) * 8, 2)
    return v.reshape(shape)


def both(dtype, shape, seed=0, nonneg=False):
    """The same values as a pytorchlite and a torch tensor."""
    v = values_for(dtype, shape, seed)
    if nonneg:
        v = np.abs(v)
    t = torch.tensor(v.tolist(), dtype=tdt(dtype)).reshape(shape)
    p = ptl.tensor(t.tolist(), dtype=pdt(dtype))
    return p, t


def as_np(x):
    """Values of a torch or pytorchlite tensor (or a NumpyRef) as float64 NumPy (bfloat16-safe)."""
    if isinstance(x, NumpyRef):
        return x.values.astype(np.float64)
    if isinstance(x, torch.Tensor):
        return x.detach().to(torch.float64).numpy()
    return np.asarray(x.double().numpy())


def assert_same(p, t):
    assert tuple(p.shape) == tuple(t.shape)
    assert str(p.dtype).replace("pytorchlite.", "") == str(t.dtype).replace("torch.", "").replace("pytorchlite.", "")
    np.testing.assert_array_equal(as_np(p), as_np(t))


# --- metadata ----------------------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["bool", "int16", "float32", "float64"])
def test_metadata_matches_torch(shape, dtype):
    p, t = ptl.empty(shape, dtype=pdt(dtype)), torch.empty(shape, dtype=tdt(dtype))
    assert p.shape == tuple(t.shape) and p.size() == tuple(t.size())
    assert isinstance(p.shape, ptl.Size) and isinstance(p.size(), tuple)
    assert p.stride() == t.stride()
    assert p.dim() == t.dim() == p.ndim == p.ndimension()
    assert p.numel() == t.numel() == p.nelement()
    assert p.is_contiguous() == t.is_contiguous()
    assert p.element_size() == t.element_size() == p.itemsize
    assert p.nbytes == t.nbytes
    assert p.storage_offset() == t.storage_offset() == 0
    assert p._version == 0
    for d in range(-len(shape), len(shape)):
        assert p.size(d) == t.size(d)
        assert p.stride(d) == t.stride(d)
    assert repr(p.shape) == repr(t.shape).replace("torch.", "pytorchlite.")


@pytest.mark.parametrize("shape,dim", [((2, 3), 2), ((2, 3), -3), ((), 0), ((4,), 1)])
def test_size_dim_out_of_range(shape, dim):
    p, t = ptl.empty(shape), torch.empty(shape)
    for meth in ("size", "stride"):
        with pytest.raises(IndexError) as want:
            getattr(t, meth)(dim)
        with pytest.raises(IndexError) as got:
            getattr(p, meth)(dim)
        assert str(got.value) == str(want.value)


def test_strided_views_metadata():
    base = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    for view in (base[:, ::2], base.transpose(2, 0, 1), base[1], base[:, 1:3, ::3], base[::-1][::-1]):
        p, t = ptl.from_numpy(view), torch.from_numpy(view)
        assert p.stride() == t.stride()
        assert p.is_contiguous() == t.is_contiguous()
        assert p.data_ptr() == t.data_ptr() == view.ctypes.data
        np.testing.assert_array_equal(p.numpy(), view)


def test_data_ptr_and_storage_offset_of_slices():
    p = ptl.arange(10, dtype=ptl.int32)
    s = p[3:]
    assert s.storage_offset() == 3
    assert s.data_ptr() == p.data_ptr() + 3 * 4
    e = p[7]
    assert e.storage_offset() == 7 and e.dim() == 0
    assert e.data_ptr() == p.data_ptr() + 28


def test_version_counter_bumps_and_is_shared_with_views():
    p = ptl.zeros(4)
    v = p[1:]
    assert p._version == v._version == 0
    p.add_(1)
    assert p._version == 1 and v._version == 1
    v.fill_(2)
    assert p._version == 2
    p.copy_(ptl.ones(4))
    assert p._version == 3
    p.add(1)                      # out-of-place leaves it alone
    assert p._version == 3
    d = p.detach()
    d.mul_(2)                     # detach shares the counter, as in PyTorch
    assert p._version == 4


# --- item / tolist / len / iter / bool --------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_item_and_tolist(dtype):
    p, t = both(dtype, (2, 3))
    assert p.tolist() == t.tolist()
    p0, t0 = both(dtype, ())
    got, want = p0.item(), t0.item()
    assert got == want and type(got) is type(want)
    assert p0.tolist() == t0.tolist() and type(p0.tolist()) is type(t0.tolist())
    assert ptl.empty((0, 3), dtype=pdt(dtype)).tolist() == torch.empty((0, 3), dtype=tdt(dtype)).tolist()
    one = p[0:1, 1:2]              # one element with a non-trivial stride
    assert one.item() == t[0:1, 1:2].item()


def test_item_of_many_elements_errors_like_torch():
    with pytest.raises(RuntimeError) as want:
        torch.zeros(3).item()
    with pytest.raises(RuntimeError) as got:
        ptl.zeros(3).item()
    assert str(got.value) == str(want.value)


def test_special_float_items():
    p = ptl.tensor([math.inf, -math.inf, math.nan, -0.0])
    v = p.tolist()
    assert v[0] == math.inf and v[1] == -math.inf and math.isnan(v[2]) and math.copysign(1, v[3]) == -1


def _same_error(fn_p, fn_t, exc):
    with pytest.raises(exc) as want:
        fn_t()
    with pytest.raises(exc) as got:
        fn_p()
    assert str(got.value) == str(want.value)


def test_len_iter_bool_errors():
    _same_error(lambda: len(ptl.tensor(1.0)), lambda: len(torch.tensor(1.0)), TypeError)
    _same_error(lambda: iter(ptl.tensor(1.0)), lambda: iter(torch.tensor(1.0)), TypeError)
    _same_error(lambda: bool(ptl.zeros(2)), lambda: bool(torch.zeros(2)), RuntimeError)
    _same_error(lambda: bool(ptl.zeros(0)), lambda: bool(torch.zeros(0)), RuntimeError)
    _same_error(lambda: ptl.zeros(2).__index__(), lambda: torch.zeros(2).__index__(), TypeError)


def test_len_and_bool_values():
    assert len(ptl.zeros(4, 2)) == 4 and len(ptl.zeros(0)) == 0
    for v in (0.0, 1.0, -2.5, math.nan):
        assert bool(ptl.tensor(v)) == bool(torch.tensor(v))
        assert bool(ptl.tensor([v])) == bool(torch.tensor([v]))
    assert bool(ptl.tensor([[True]])) is True and bool(ptl.tensor(0)) is False
    assert int(ptl.tensor(7)) == 7 and float(ptl.tensor(2.5)) == 2.5
    assert [1, 2, 3][ptl.tensor(1)] == 2
    assert f"{ptl.tensor(2.5):.3f}" == f"{torch.tensor(2.5):.3f}"


@pytest.mark.skipif(not hasattr(ptl, "unbind"), reason="iteration uses unbind (view operators)")
def test_iteration_yields_rows():
    p, t = both("int32", (3, 2))
    rows = list(p)
    assert len(rows) == 3
    for r, tr in zip(rows, t):
        assert_same(r, tr)


# --- repr ----------------------------------------------------------------------------------

REPR_VALUES = {
    "bool": [[True, False, True], [False, False, True]],
    "uint8": [[0, 255, 7], [1, 2, 3]],
    "int8": [[-128, 127, 0], [1, -1, 5]],
    "int16": [[-300, 2, 1000], [0, 0, 1]],
    "int32": [[123456, -7, 0], [1, 2, 3]],
    "int64": [[2**40, -1, 0], [5, 6, 7]],
    "float16": [[1.5, -2.25, 0.0], [65504.0, 1e-3, 3.0]],
    "bfloat16": [[1.5, -2.25, 0.0], [3e38, 1e-3, 3.0]],
    "float32": [[1.5, -2.25, 0.0], [1e10, 1e-3, math.nan]],
    "float64": [[1.5, -2.25, math.inf], [1e-10, 1e-3, 3.0]],
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ["full", "row", "scalar", "empty", "empty2d"])
def test_repr_matches_torch(dtype, shape):
    data = REPR_VALUES[dtype]
    if shape == "row":
        data = data[0]
    elif shape == "scalar":
        data = data[0][1]
    t = torch.tensor(data, dtype=tdt(dtype))
    if shape == "empty":
        t = torch.empty(0, dtype=tdt(dtype))
    elif shape == "empty2d":
        t = torch.empty(2, 0, dtype=tdt(dtype))
    p = ptl.tensor(t.tolist(), dtype=pdt(dtype)) if t.numel() else ptl.empty(tuple(t.shape), dtype=pdt(dtype))
    assert repr(p) == repr(t).replace("torch.", "pytorchlite.")
    assert str(p) == str(t).replace("torch.", "pytorchlite.")


def test_repr_of_default_dtype_and_strided():
    base = np.arange(12, dtype=np.float64).reshape(3, 4) / 3
    p, t = ptl.from_numpy(base[:, ::2]), torch.from_numpy(base[:, ::2])
    assert repr(p) == repr(t).replace("torch.", "pytorchlite.")
    ptl.set_default_dtype(ptl.float64)
    torch.set_default_dtype(torch.float64)
    try:
        assert repr(ptl.tensor([1.5, 2.0])) == repr(torch.tensor([1.5, 2.0]))
        assert repr(ptl.tensor([1.5], dtype=ptl.float32)) == \
            repr(torch.tensor([1.5], dtype=torch.float32)).replace("torch.", "pytorchlite.")
    finally:
        ptl.set_default_dtype(ptl.float32)
        torch.set_default_dtype(torch.float32)


def test_repr_large_tensor_summarised():
    t = torch.arange(2000, dtype=torch.float32) / 7
    p = ptl.tensor(t.tolist())
    assert repr(p) == repr(t)


# --- conversions ---------------------------------------------------------------------------

CONVERSION_VALUES = [-129.9, -128.0, -2.7, -1.5, -1.0, -0.5, -0.0, 0.0, 0.3, 0.5, 1.0, 1.5, 2.5, 2.9, 100.7,
                     127.9, 200.2, 255.0, 300.0, 40000.5, 1e9, -3e9, 1e18]


@pytest.mark.parametrize("src", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("dst", DTYPES)
def test_float_to_any_conversion(src, dst):
    if not HAVE_TORCH:      # the same values against NumPy's casts
        p = ptl.tensor(CONVERSION_VALUES, dtype=ptl.float64).to(pdt(src))
        v = to_numpy(p).astype(np.float64)
        keep = np.isfinite(v)
        if dst not in ("float16", "bfloat16", "float32", "float64", "bool"):
            info = np.iinfo(dst)
            keep &= (v > float(info.min) - 1.0) & (v < float(info.max) + 1.0)
        p = ptl.tensor(v[keep].tolist(), dtype=pdt(src))
        assert_same(p.to(pdt(dst)), cast(to_numpy(p), src, dst))
        return
    t = torch.tensor(CONVERSION_VALUES, dtype=torch.float64).to(tdt(src))
    finite = torch.isfinite(t)
    if dst not in ("float16", "bfloat16", "float32", "float64", "bool"):
        # out-of-range float -> int is undefined behaviour in C and differs between
        # PyTorch builds; compare only values that fit the target
        info = torch.iinfo(tdt(dst))
        finite &= (t.double() > float(info.min) - 1.0) & (t.double() < float(info.max) + 1.0)
    t = t[finite]
    p = ptl.tensor(t.double().tolist(), dtype=pdt(src))
    assert_same(p.to(pdt(dst)), t.to(tdt(dst)))


@pytest.mark.parametrize("src", ["bool", "uint8", "int8", "int16", "int32", "int64"])
@pytest.mark.parametrize("dst", DTYPES)
def test_int_to_any_conversion(src, dst):
    vals = {"bool": [True, False], "uint8": [0, 1, 127, 128, 255],
            "int8": [-128, -1, 0, 1, 127], "int16": [-32768, -129, -1, 0, 255, 256, 32767],
            "int32": [-2**31, -70000, -1, 0, 65537, 2**31 - 1, 16777217],
            "int64": [-2**63, -2**40 - 1, -1, 0, 1, 2**53 + 1, 2**63 - 1]}[src]
    p = ptl.tensor(vals, dtype=pdt(src))
    if not HAVE_TORCH:
        assert_same(p.to(pdt(dst)), cast(to_numpy(p), src, dst))
        return
    t = torch.tensor(vals, dtype=tdt(src))
    assert_same(p.to(pdt(dst)), t.to(tdt(dst)))


def test_conversion_shortcuts():
    p = ptl.tensor([-1.7, 0.0, 2.9])
    for name in ("float", "double", "half", "bfloat16", "long", "int", "short", "char", "byte", "bool"):
        got, want = getattr(p, name)(), getattr(torch.tensor([-1.7, 0.0, 2.9]), name)()
        assert_same(got, want)
    assert p.long().tolist() == [-1, 0, 2]          # truncation toward zero
    assert p.bool().tolist() == [True, False, True]


def test_to_returns_self_or_copy():
    p = ptl.tensor([1.0, 2.0])
    assert p.to(ptl.float32) is p
    assert p.to("cpu") is p and p.cpu() is p
    c = p.to(ptl.float32, copy=True)
    assert c is not p and c.data_ptr() != p.data_ptr()
    assert p.to(ptl.tensor([1], dtype=ptl.int16)).dtype is ptl.int16
    assert p.to(dtype=ptl.float64).dtype is ptl.float64
    assert p.type() == "pytorchlite.FloatTensor" and p.long().type() == "pytorchlite.LongTensor"
    assert p.type_as(ptl.tensor([1])).dtype is ptl.int64


def test_conversion_of_strided_source():
    base = np.arange(24, dtype=np.float32).reshape(4, 6) - 11.5
    view = base[::2, 1::2].T
    p, t = ptl.from_numpy(view), torch.from_numpy(view)
    for d in ("int32", "float64", "bfloat16", "bool", "uint8"):
        got = p.to(pdt(d))
        assert got.is_contiguous()
        assert_same(got, t.to(tdt(d)))


# --- copy_ --------------------------------------------------------------------------------

@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", DTYPES)
def test_copy_across_dtypes(src, dst):
    # negative -> uint8 is undefined behaviour in C++ (PyTorch's result is the x86 one)
    if not HAVE_TORCH:      # the same values against NumPy's casts
        v = values_for(src, (2, 5), seed=3)
        ps = ptl.tensor((np.abs(v) if dst == "uint8" else v).tolist(), dtype=pdt(src))
        pd = ptl.zeros(2, 5, dtype=pdt(dst))
        assert pd.copy_(ps) is pd
        assert_same(pd, cast(to_numpy(ps), src, dst))
        return
    ps, ts = both(src, (2, 5), seed=3, nonneg=dst == "uint8")
    pd, td = ptl.zeros(2, 5, dtype=pdt(dst)), torch.zeros(2, 5, dtype=tdt(dst))
    r = pd.copy_(ps)
    assert r is pd
    td.copy_(ts)
    assert_same(pd, td)


def test_copy_between_strided_layouts():
    src_np = np.arange(48, dtype=np.float64).reshape(6, 8) * 0.5
    dst_np = np.zeros((8, 6), dtype=np.float32)
    dst_t = np.zeros((8, 6), dtype=np.float32)
    # destination: a transposed view, source: step-sliced, different dtypes
    pd = ptl.from_numpy(dst_np.T[::2])
    td = torch.from_numpy(dst_t.T[::2])
    ps, ts = ptl.from_numpy(src_np[::2, :]), torch.from_numpy(src_np[::2, :])
    pd.copy_(ps)
    td.copy_(ts)
    np.testing.assert_array_equal(dst_np, dst_t)          # the write lands in the base


def test_copy_broadcasts_and_checks_shape():
    p = ptl.zeros(3, 4)
    p.copy_(ptl.tensor([1.0, 2.0, 3.0, 4.0]))
    assert p.tolist() == [[1.0, 2.0, 3.0, 4.0]] * 3
    p.copy_(ptl.tensor(7))
    assert p.tolist() == [[7.0] * 4] * 3
    _same_error(lambda: ptl.zeros(3, 4).copy_(ptl.zeros(3)), lambda: torch.zeros(3, 4).copy_(torch.zeros(3)),
                RuntimeError)
    _same_error(lambda: ptl.zeros(4).copy_(ptl.zeros(2, 4)), lambda: torch.zeros(4).copy_(torch.zeros(2, 4)),
                RuntimeError)


def test_copy_from_overlapping_self():
    # partly the same memory: refused, as PyTorch refuses it, before anything is written
    base = np.arange(6, dtype=np.int64)
    p = ptl.from_numpy(base)
    tx = torch.arange(6)
    _same_error(lambda: p[1:].copy_(p[:-1]), lambda: tx[1:].copy_(tx[:-1]), RuntimeError)
    with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor"):
        p[1:].copy_(p[:-1])
    assert base.tolist() == list(range(6))
    # strided views PyTorch does not judge: the result is as if the source were read first
    q = ptl.arange(6.0)
    q[::2].copy_(q[1::2])
    t = torch.arange(6.0)
    t[::2].copy_(t[1::2])
    assert q.tolist() == t.tolist()


# --- contiguous / clone ---------------------------------------------------------------------

def test_contiguous_and_clone():
    base = np.arange(24, dtype=np.int16).reshape(4, 6)
    p = ptl.from_numpy(base)
    assert p.contiguous() is p
    v = ptl.from_numpy(base.T)
    c = v.contiguous()
    assert c is not v and c.is_contiguous() and c.stride() == (4, 1)
    np.testing.assert_array_equal(c.numpy(), base.T)
    k = p.clone()
    assert k.data_ptr() != p.data_ptr() and k.dtype is ptl.int16
    k.fill_(0)
    assert base.sum() == 276            # the clone does not alias
    cv = v.clone()
    np.testing.assert_array_equal(cv.numpy(), base.T)
    z = ptl.empty(0, 3).clone()
    assert z.shape == (0, 3) and z.stride() == torch.empty(0, 3).clone().stride()


def test_clone_preserves_dense_permuted_layout():
    base = np.arange(24, dtype=np.int16).reshape(4, 6)
    assert ptl.from_numpy(base.T).clone().stride() == torch.from_numpy(base.T).clone().stride()


@pytest.mark.parametrize("make", [
    lambda m: m.zeros(2, 3, 4).permute(2, 0, 1),          # dense, permuted: same strides
    lambda m: m.zeros(2, 1, 4).permute(2, 1, 0),          # size-1 dim keeps its stride
    lambda m: m.zeros(4, 6)[:, ::2],                      # not dense: dense in stride order
    lambda m: m.zeros(3, 4).expand(2, 3, 4),              # stride 0 dims stay put
    lambda m: m.zeros(4, 6).T[:, ::2],
    lambda m: m.zeros(2, 3, 8).permute(1, 2, 0)[:, ::2],
    lambda m: m.zeros(3, 1).expand(3, 4).T,
    lambda m: m.zeros(4, 4, 4)[::2, :, ::2].permute(2, 0, 1),
])
def test_preserve_format_layouts_match_torch(make):
    p, t = make(ptl), make(torch)
    assert p.clone().stride() == t.clone().stride()
    for fn in ("empty_like", "zeros_like", "ones_like"):
        assert getattr(ptl, fn)(p).stride() == getattr(torch, fn)(t).stride(), fn
    assert ptl.full_like(p, 2).stride() == torch.full_like(t, 2).stride()
    assert p.clone(memory_format=ptl.contiguous_format).is_contiguous()
    assert p.contiguous().is_contiguous()
    np.testing.assert_array_equal(p.clone().numpy(), p.numpy())


def test_memory_format_errors():
    x = ptl.zeros(2, 3)
    with pytest.raises(TypeError, match="memory_format"):
        x.clone(memory_format="channels_last")
    assert repr(ptl.preserve_format) == "pytorchlite.preserve_format"
