"""NumPy and DLPack exchange: memory is shared both ways (checked by writing through one
side and reading the other), lifetimes are kept, and what cannot be shared is refused
with PyTorch's errors."""

import gc
import sys
import weakref

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _dlpack

from parity import torch_or_missing  # noqa: E402

torch = torch_or_missing()      # without PyTorch, a test that calls it is skipped

NP_DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64]
ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def name(dt):
    return str(dt).split(".")[-1]


def sample(npdt, shape=(3, 4)):
    a = (np.arange(int(np.prod(shape))) % 7 - 2).reshape(shape)
    return a.astype(npdt)


def bump(a):
    """Change every element of an array in place, whatever its dtype."""
    if a.dtype == np.bool_:
        np.logical_not(a, out=a)
    else:
        a += 1


# --- from_numpy / .numpy() ----------------------------------------------------------------

@pytest.mark.parametrize("npdt", NP_DTYPES)
def test_from_numpy_shares_memory_both_ways(npdt):
    a = sample(npdt)
    t = ptl.from_numpy(a)
    assert name(t.dtype) == name(torch.from_numpy(a).dtype)
    assert t.shape == a.shape and t.data_ptr() == a.ctypes.data
    bump(a)                                             # numpy -> tensor
    np.testing.assert_array_equal(t.numpy(), a)
    t.fill_(1)                                          # tensor -> numpy
    assert (a == 1).all()
    assert t._version == 1


@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")
@pytest.mark.parametrize("view", ["transposed", "stepped", "column", "offset", "zero-size", "0-d", "broadcast"])
def test_from_numpy_non_contiguous(view):
    base = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    a = {"transposed": base.transpose(2, 0, 1), "stepped": base[::2, 1::2, ::3], "column": base[:, :, 2],
         "offset": base[1:, 2:], "zero-size": base[:, 1:1], "0-d": base[1, 2, 3, ...],
         "broadcast": np.broadcast_to(base[0, 0], (3, 5))}[view]
    t, tt = ptl.from_numpy(a), torch.from_numpy(a)
    assert t.stride() == tt.stride() and t.shape == tuple(tt.shape)
    assert t.is_contiguous() == tt.is_contiguous()
    if a.size:
        assert t.data_ptr() == a.__array_interface__["data"][0]
    np.testing.assert_array_equal(t.numpy(), a)
    if a.flags.writeable and a.size:
        t.mul_(2)
        np.testing.assert_array_equal(a, tt.numpy())      # the base saw the write
        base_after = base.copy()
        np.testing.assert_array_equal(base, base_after)


def test_numpy_view_of_sliced_tensor_shares():
    t = ptl.arange(24, dtype=ptl.int32)[2:]
    n = t.numpy()
    assert n.ctypes.data == t.data_ptr()
    n[0] = 100
    assert t[0].item() == 100
    s = ptl.from_numpy(np.arange(12.0).reshape(3, 4)[:, ::2])
    sn = s.numpy()
    assert sn.strides == (32, 16) and not sn.flags.c_contiguous
    sn[1, 1] = -1
    assert s[1, 1].item() == -1


def test_lifetimes_are_kept():
    a = np.arange(5.0)
    t = ptl.from_numpy(a)
    del a
    gc.collect()
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]       # the tensor keeps the array alive
    u = ptl.arange(4, dtype=ptl.float64)
    storage = weakref.ref(u.untyped_storage())
    n = u.numpy()
    del u
    gc.collect()
    assert storage() is not None                          # the array keeps the storage alive
    assert n.tolist() == [0.0, 1.0, 2.0, 3.0]
    del n
    gc.collect()
    assert storage() is None


def test_np_asarray_shares():
    t = ptl.tensor([[1.0, 2.0], [3.0, 4.0]])
    a = np.asarray(t)
    assert a.dtype == np.float32 and a.ctypes.data == t.data_ptr()
    a[0, 0] = 7
    assert t[0, 0].item() == 7
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert np.array(t).ctypes.data != t.data_ptr()       # np.array copies by default
    with pytest.raises(RuntimeError, match="requires grad"):
        np.asarray(ptl.tensor([1.0], requires_grad=True))


def test_negative_stride_error_matches_torch():
    a = np.arange(5)[::-1]
    with pytest.raises(ValueError) as want:
        torch.from_numpy(a)
    with pytest.raises(ValueError) as got:
        ptl.from_numpy(a)
    assert str(got.value) == str(want.value)
    t = ptl.as_tensor(a)                                  # as_tensor copies instead
    assert t.tolist() == [4, 3, 2, 1, 0]


@pytest.mark.parametrize("npdt", [np.complex64, np.uint16, np.uint32, object, np.str_, np.datetime64])
def test_unsupported_numpy_dtypes(npdt):
    a = np.zeros(2, dtype=npdt)
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy"):
        ptl.from_numpy(a)
    if npdt in (object,):
        with pytest.raises(TypeError) as want:
            torch.from_numpy(a)
        with pytest.raises(TypeError) as got:
            ptl.from_numpy(a)
        assert str(got.value).split(".")[:2] == str(want.value).split(".")[:2]


def test_non_native_byte_order_matches_torch():
    a = np.array([1, 2], dtype=">i4")
    with pytest.raises(ValueError) as want:
        torch.from_numpy(a)
    with pytest.raises(ValueError) as got:
        ptl.from_numpy(a)
    assert str(got.value) == str(want.value)


def test_read_only_array_warns_like_torch():
    a = np.arange(3.0)
    a.flags.writeable = False
    with pytest.warns(UserWarning, match="not writable"):
        t = ptl.from_numpy(a)
    assert t.tolist() == [0.0, 1.0, 2.0]


def test_from_numpy_rejects_non_arrays():
    with pytest.raises(TypeError, match="expected np.ndarray"):
        ptl.from_numpy([1, 2])


def test_bfloat16_numpy_raises_type_error():
    t = ptl.tensor([1.5], dtype=ptl.bfloat16)
    with pytest.raises(TypeError) as got:
        t.numpy()
    with pytest.raises(TypeError) as want:
        torch.tensor([1.5], dtype=torch.bfloat16).numpy()
    assert str(got.value) == str(want.value)
    assert t.float().numpy().tolist() == [1.5]


def test_numpy_of_requires_grad_raises():
    t = ptl.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError) as got:
        t.numpy()
    with pytest.raises(RuntimeError) as want:
        torch.tensor([1.0], requires_grad=True).numpy()
    assert str(got.value) == str(want.value)
    assert t.numpy(force=True).tolist() == [1.0]


# --- DLPack --------------------------------------------------------------------------------------

@pytest.mark.parametrize("npdt", NP_DTYPES)
def test_dlpack_from_numpy_zero_copy(npdt):
    a = sample(npdt)
    t = ptl.from_dlpack(a)
    assert t.data_ptr() == a.ctypes.data and name(t.dtype) == name(torch.from_numpy(a).dtype)
    bump(a)
    np.testing.assert_array_equal(t.numpy(), a)
    t.zero_()
    assert not a.any()


@pytest.mark.parametrize("npdt", NP_DTYPES)
def test_dlpack_to_numpy_zero_copy(npdt):
    t = ptl.from_numpy(sample(npdt).copy())
    a = np.from_dlpack(t)
    assert a.ctypes.data == t.data_ptr() and a.dtype == npdt
    bump(a)
    np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.parametrize("dt", ALL)
def test_dlpack_with_torch_both_ways(dt):
    src = torch.arange(12).reshape(3, 4).to(getattr(torch, dt))
    p = ptl.from_dlpack(src)                          # torch -> pytorchlite
    assert p.data_ptr() == src.data_ptr() and name(p.dtype) == dt
    src.mul_(0) if dt != "bool" else src.logical_not_()
    assert p.tolist() == src.tolist()
    q = ptl.tensor(src.tolist(), dtype=getattr(ptl, dt))
    back = torch.from_dlpack(q)                       # pytorchlite -> torch
    assert back.data_ptr() == q.data_ptr() and back.dtype == getattr(torch, dt)
    back.fill_(1)
    assert q.tolist() == back.tolist()


@pytest.mark.parametrize("view", ["transposed", "stepped", "offset", "0-d", "zero-size", "expanded"])
def test_dlpack_strided_both_ways(view):
    base = torch.arange(60, dtype=torch.float64).reshape(3, 4, 5)
    tv = {"transposed": base.permute(2, 0, 1), "stepped": base[::2, 1::2, ::3], "offset": base[1:, 2:],
          "0-d": base[1, 2, 3], "zero-size": base[:, 1:1], "expanded": base[0, 0].expand(3, 5)}[view]
    p = ptl.from_dlpack(tv)
    assert p.shape == tuple(tv.shape) and p.stride() == tv.stride()
    np.testing.assert_array_equal(p.numpy(), tv.numpy())
    if tv.numel():
        assert p.data_ptr() == tv.data_ptr()
    back = torch.from_dlpack(p)                       # and out again, same strides, same memory
    assert back.stride() == tv.stride() and (not tv.numel() or back.data_ptr() == tv.data_ptr())
    if view not in ("expanded", "zero-size"):
        back.add_(1000)
        np.testing.assert_array_equal(p.numpy(), tv.numpy())


def test_dlpack_capsule_used_twice_raises():
    t = ptl.tensor([1.0, 2.0])
    cap = t.__dlpack__()
    u = ptl.from_dlpack(cap)
    assert u.data_ptr() == t.data_ptr()
    with pytest.raises((ValueError, RuntimeError), match="consumed"):
        ptl.from_dlpack(cap)
    cap2 = torch.tensor([1.0]).__dlpack__()
    ptl.from_dlpack(cap2)
    with pytest.raises((ValueError, RuntimeError)):
        ptl.from_dlpack(cap2)


def test_dlpack_capsules_from_torch_utils():
    to_dlpack = pytest.importorskip("torch.utils.dlpack").to_dlpack
    src = torch.tensor([[1, 2], [3, 4]], dtype=torch.int16)
    p = ptl.from_dlpack(to_dlpack(src))
    src[0, 0] = 9
    assert p.tolist() == [[9, 2], [3, 4]]


def test_dlpack_versioned_and_legacy_capsules():
    t = ptl.tensor([3, 4], dtype=ptl.int32)
    legacy = t.__dlpack__()
    versioned = t.__dlpack__(max_version=(1, 0))
    assert "dltensor" in repr(legacy) and "dltensor_versioned" in repr(versioned)
    for cap in (legacy, versioned):
        assert ptl.from_dlpack(cap).data_ptr() == t.data_ptr()
    assert t.__dlpack_device__() == (1, 0) and t.__dlpack_device__() == torch.zeros(1).__dlpack_device__()


def test_dlpack_keeps_the_producer_alive():
    t = ptl.arange(6, dtype=ptl.float32)
    storage = weakref.ref(t.untyped_storage())
    a = np.from_dlpack(t)
    del t
    gc.collect()
    assert storage() is not None and a.tolist() == [0, 1, 2, 3, 4, 5]
    del a
    gc.collect()
    assert storage() is None
    src = np.arange(4.0)
    refs_before = sys.getrefcount(src)
    p = ptl.from_dlpack(src)
    assert sys.getrefcount(src) > refs_before          # the export holds the array
    del p
    gc.collect()
    assert sys.getrefcount(src) == refs_before


def test_dlpack_export_refusals():
    with pytest.raises(BufferError) as got:
        ptl.tensor([1.0], requires_grad=True).__dlpack__()
    with pytest.raises(BufferError) as want:
        torch.tensor([1.0], requires_grad=True).__dlpack__()
    assert str(got.value) == str(want.value)
    with pytest.raises(BufferError):
        ptl.tensor([1.0]).__dlpack__(stream=1)
    with pytest.raises(BufferError):
        ptl.tensor([1.0]).__dlpack__(dl_device=(2, 0))


def test_dlpack_bfloat16_refused_by_numpy():
    t = ptl.tensor([1.5], dtype=ptl.bfloat16)
    with pytest.raises((BufferError, RuntimeError, TypeError)):
        np.from_dlpack(t)
    assert torch.from_dlpack(t).item() == 1.5              # torch knows bfloat16


def test_dlpack_refused_export_releases_memory():
    gc.collect()
    before = _dlpack._live_count()
    for _ in range(3):
        with pytest.raises((BufferError, RuntimeError, TypeError)):
            np.from_dlpack(ptl.tensor([1.5], dtype=ptl.bfloat16))
    gc.collect()
    assert _dlpack._live_count() == before


def test_dlpack_import_refusals():
    with pytest.raises(BufferError, match="negative strides"):
        ptl.from_dlpack(np.arange(5)[::-1])
    with pytest.raises(RuntimeError, match="from_dlpack received an invalid capsule"):   # as in torch
        ptl.from_dlpack([1, 2, 3])
    with pytest.raises(BufferError):
        ptl.from_dlpack(np.zeros(2, dtype=np.complex64))


def test_from_dlpack_of_own_tensor_is_identity():
    t = ptl.zeros(2)
    assert ptl.from_dlpack(t) is t


def test_dlpack_copy_argument():
    t = ptl.tensor([1.0, 2.0])
    c = np.from_dlpack(t, copy=True)
    c[0] = 5
    assert t[0].item() == 1.0
