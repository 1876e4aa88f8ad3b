"""Tests for pytorchlite._dlpack: capsule production/consumption against numpy and torch.

The release path (capsule destructor and deleter) is C, in kernels/dlpack.c: see the
module docstring for why.
"""

import ctypes
import gc
import sys
import threading
import weakref

import numpy as np
import pytest

from pytorchlite import _dlpack as dl

NP_DTYPES = {  # pytorchlite code -> numpy dtype
    0: np.bool_, 1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64,
    6: np.float16, 8: np.float32, 9: np.float64,
}
CODE_OF_NP = {np.dtype(v): k for k, v in NP_DTYPES.items()}
TORCH_NAMES = {0: "bool", 1: "uint8", 2: "int8", 3: "int16", 4: "int32", 5: "int64",
               6: "float16", 7: "bfloat16", 8: "float32", 9: "float64"}


@pytest.fixture
def backend():
    """The release hooks are the extension's C functions (kernels/dlpack.c)."""
    return dl._BACKEND


class Owner:
    """Weak-referenceable stand-in for the Tensor that owns the memory."""

    def __init__(self, payload=None):
        self.payload = payload


def sample(dtype, shape=(3, 4)):
    n = int(np.prod(shape))
    if np.dtype(dtype) == np.bool_:
        return (np.arange(n) % 3 == 0).reshape(shape)
    return (np.arange(n) - 5).astype(dtype).reshape(shape)


def capsule_over(arr, *, versioned, owner=None, read_only=False, code=None):
    itemsize = arr.itemsize
    return dl.to_dlpack_capsule(
        data_ptr=arr.ctypes.data if arr.size else 0,
        shape=arr.shape,
        strides=tuple(s // itemsize for s in arr.strides),
        dtype_code=CODE_OF_NP[arr.dtype] if code is None else code,
        device_type=1, device_id=0, owner=arr if owner is None else owner,
        versioned=versioned, read_only=read_only)


class Exporter:
    """Minimal __dlpack__ producer handing out capsules built by pytorchlite._dlpack.

    versioned=None follows the consumer's max_version like a real producer would;
    True/False force one kind.  Records the keyword arguments it was called with.
    """

    def __init__(self, make, versioned=None, device=(1, 0)):
        self.make = make            # make(versioned: bool) -> capsule
        self.versioned = versioned
        self.device = device
        self.calls = []

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.calls.append({"max_version": max_version, "dl_device": dl_device, "copy": copy})
        versioned = self.versioned
        if versioned is None:
            versioned = max_version is not None and max_version[0] >= 1
        return self.make(versioned)

    def __dlpack_device__(self):
        return self.device


def np_exporter(arr, **kw):
    return Exporter(lambda v: capsule_over(arr, versioned=v), **kw)


def element_bytes(imp, index):
    off = sum(i * s for i, s in zip(index, imp.strides))
    return ctypes.string_at(imp.data_ptr + off * imp.itemsize, imp.itemsize)


def assert_imported_matches(imp, arr):
    """Check shape/dtype/values of an ImportedTensor against the numpy array it views."""
    assert imp.shape == arr.shape
    assert imp.dtype_code == CODE_OF_NP[arr.dtype]
    assert imp.itemsize == arr.itemsize
    assert imp.device_type == 1 and imp.device_id == 0
    for index in np.ndindex(arr.shape):
        assert element_bytes(imp, index) == arr[index].tobytes(), index


# ---------------------------------------------------------------------------
# ABI layout
# ---------------------------------------------------------------------------

@pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="64-bit layout")
def test_struct_layout_matches_dlpack_h():
    assert ctypes.sizeof(dl.DLDevice) == 8
    assert ctypes.sizeof(dl.DLDataType) == 4
    assert ctypes.sizeof(dl.DLTensor) == 48
    assert dl.DLTensor.byte_offset.offset == 40
    assert ctypes.sizeof(dl.DLManagedTensor) == 64
    assert dl.DLManagedTensor.deleter.offset == 56
    assert ctypes.sizeof(dl.DLManagedTensorVersioned) == 80
    assert dl.DLManagedTensorVersioned.manager_ctx.offset == 8
    assert dl.DLManagedTensorVersioned.flags.offset == 24
    assert dl.DLManagedTensorVersioned.dl_tensor.offset == 32


def test_release_hooks_are_the_extensions_c_functions():
    assert dl._BACKEND == "c"
    from pytorchlite._C import lib
    assert dl._HOOKS[False][0] == lib.ptl_dlpack_hook(0) and dl._HOOKS[True][1] == lib.ptl_dlpack_hook(3)


# ---------------------------------------------------------------------------
# Producer -> numpy
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("code", sorted(NP_DTYPES))
def test_numpy_consumes_all_dtypes_zero_copy(backend, code):
    arr = sample(NP_DTYPES[code])
    exp = np_exporter(arr)
    out = np.from_dlpack(exp)
    assert exp.calls[0]["max_version"] is not None and exp.calls[0]["max_version"][0] == 1
    assert out.dtype == arr.dtype and out.shape == arr.shape
    np.testing.assert_array_equal(out, arr)
    assert out.ctypes.data == arr.ctypes.data
    assert out.flags.writeable
    out[1, 2] = out[0, 0]
    assert arr[1, 2] == arr[0, 0]
    del out
    gc.collect()
    assert dl._live_count() == 0


def test_numpy_consumes_legacy_capsule_read_only(backend):
    # numpy treats legacy capsules as read-only (they cannot signal it); still zero-copy.
    arr = sample(np.float32)
    out = np.from_dlpack(np_exporter(arr, versioned=False))
    assert not out.flags.writeable
    assert out.ctypes.data == arr.ctypes.data
    arr[0, 0] = 42
    assert out[0, 0] == 42


def test_numpy_consumes_strided_views(backend):
    base = np.arange(60, dtype=np.int32).reshape(6, 10)
    for view in (base.T, base[::2, 1::3], base[::-1], base[:, ::-2].T, base[3]):
        out = np.from_dlpack(np_exporter(view))
        assert out.strides == view.strides
        np.testing.assert_array_equal(out, view)
        assert np.shares_memory(out, base)
    view = base.T
    out = np.from_dlpack(np_exporter(view))
    out[7, 2] = -1
    assert base[2, 7] == -1


def test_numpy_consumes_0d_and_size0(backend):
    s = np.array(3.5)
    out = np.from_dlpack(np_exporter(s))
    assert out.shape == () and out[()] == 3.5
    e = np.empty((0, 3), dtype=np.float64)
    out = np.from_dlpack(np_exporter(e))    # data pointer exported as NULL
    assert out.shape == (0, 3)


def test_numpy_sees_read_only_flag(backend):
    arr = sample(np.float64)
    exp = Exporter(lambda v: capsule_over(arr, versioned=v, read_only=True))
    out = np.from_dlpack(exp)
    assert not out.flags.writeable
    with pytest.raises(BufferError, match="read-only"):
        capsule_over(arr, versioned=False, read_only=True)


# ---------------------------------------------------------------------------
# Producer -> torch
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("versioned", [None, True, False])
@pytest.mark.parametrize("code", sorted(TORCH_NAMES))
def test_torch_consumes_all_dtypes_zero_copy(backend, code, versioned):
    torch = pytest.importorskip("torch")
    tdt = getattr(torch, TORCH_NAMES[code])
    src = (torch.arange(12) % 3 == 0) if code == 0 else (torch.arange(12) - 5).to(tdt)
    src = src.reshape(3, 4)
    exp = Exporter(lambda v: dl.to_dlpack_capsule(
        data_ptr=src.data_ptr(), shape=tuple(src.shape), strides=src.stride(),
        dtype_code=code, device_type=1, device_id=0, owner=src, versioned=v), versioned=versioned)
    out = torch.from_dlpack(exp)
    assert exp.calls[0]["max_version"] is not None          # torch 2.x asks for versioned
    assert out.dtype == tdt and out.data_ptr() == src.data_ptr()
    assert torch.equal(out, src)
    out[2, 3] = out[0, 0]
    assert src[2, 3] == src[0, 0]
    del out
    gc.collect()
    assert dl._live_count() == 0


def test_torch_consumes_numpy_memory_strided_and_mutates(backend):
    torch = pytest.importorskip("torch")
    base = np.arange(60, dtype=np.float32).reshape(6, 10)
    # (no negative strides: torch 2.13 aborts the process on them inside from_dlpack)
    for view in (base.T, base[::2, 1::3], base[1::2, 2:9:3]):
        out = torch.from_dlpack(np_exporter(view))
        assert tuple(out.stride()) == tuple(s // 4 for s in view.strides)
        np.testing.assert_array_equal(out.numpy(), view)
    out = torch.from_dlpack(np_exporter(base.T))
    out[9, 5] = -7
    assert base[5, 9] == -7


def test_torch_consumes_0d_and_size0(backend):
    torch = pytest.importorskip("torch")
    s = np.array(2.5, dtype=np.float32)
    out = torch.from_dlpack(np_exporter(s))
    assert out.shape == () and out.item() == 2.5
    e = np.empty((2, 0), dtype=np.int64)
    out = torch.from_dlpack(np_exporter(e))
    assert tuple(out.shape) == (2, 0)


# ---------------------------------------------------------------------------
# Consuming numpy / torch exports
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("code", sorted(NP_DTYPES))
def test_import_numpy_all_dtypes(code):
    arr = sample(NP_DTYPES[code])
    imp = dl.from_dlpack_object(arr)
    assert imp.versioned and not imp.read_only
    assert imp.data_ptr == arr.ctypes.data
    assert imp.strides == tuple(s // arr.itemsize for s in arr.strides)
    assert_imported_matches(imp, arr)


def test_import_numpy_views_share_memory():
    base = np.arange(60, dtype=np.int64).reshape(6, 10)
    for view in (base.T, base[::2, 1::3], base[::-1, ::-2], base[2], base[1:1], np.array(7.0)):
        imp = dl.from_dlpack_object(view)
        assert_imported_matches(imp, view)
    view = base[::2, 1::3]
    imp = dl.from_dlpack_object(view)
    assert imp.strides == (20, 3)
    # write through the imported pointer, observe it in numpy
    off = (1 * imp.strides[0] + 2 * imp.strides[1]) * 8
    ctypes.c_int64.from_address(imp.data_ptr + off).value = -99
    assert view[1, 2] == -99 and base[2, 7] == -99


def test_import_numpy_read_only_and_legacy_fallback():
    arr = sample(np.float32)
    arr.flags.writeable = False
    imp = dl.from_dlpack_object(arr)
    assert imp.read_only and imp.versioned
    # max_version=None asks numpy for a legacy capsule, which it refuses for read-only data
    with pytest.raises(BufferError):
        dl.from_dlpack_object(arr, max_version=None)
    imp = dl.from_dlpack_object(sample(np.float32), max_version=None)
    assert not imp.versioned


def test_import_falls_back_when_producer_rejects_max_version():
    arr = sample(np.int16)

    class OldProducer:
        calls = 0

        def __dlpack__(self, stream=None):
            OldProducer.calls += 1
            return arr.__dlpack__()

        def __dlpack_device__(self):
            return (1, 0)

    imp = dl.from_dlpack_object(OldProducer())
    assert not imp.versioned and OldProducer.calls == 1
    assert_imported_matches(imp, arr)


def test_import_torch_tensors():
    torch = pytest.importorskip("torch")
    base = torch.arange(60, dtype=torch.float32).reshape(6, 10)
    for view in (base.t(), base[::2, 1::3], base[3], base[2:2], torch.tensor(5.0)):
        imp = dl.from_dlpack_object(view)
        assert imp.versioned
        assert imp.data_ptr == view.data_ptr() or view.numel() == 0
        assert imp.shape == tuple(view.shape)
        assert imp.strides == tuple(view.stride())
        assert_imported_matches(imp, view.numpy())
    view = base.t()
    imp = dl.from_dlpack_object(view)
    ctypes.c_float.from_address(imp.data_ptr + (4 * imp.strides[0] + 2 * imp.strides[1]) * 4).value = 0.5
    assert base[2, 4].item() == 0.5


def test_import_torch_bfloat16_and_bool():
    torch = pytest.importorskip("torch")
    bf = torch.tensor([1.5, -2.0, 3.25], dtype=torch.bfloat16)
    imp = dl.from_dlpack_object(bf)
    assert imp.dtype_code == 7 and imp.itemsize == 2 and imp.shape == (3,)
    raw = bf.view(torch.int16).numpy()
    for i in range(3):
        assert ctypes.c_int16.from_address(imp.data_ptr + 2 * i).value == raw[i]
    b = torch.tensor([True, False, True])
    imp = dl.from_dlpack_object(b)
    assert imp.dtype_code == 0
    assert ctypes.string_at(imp.data_ptr, 3) == b"\x01\x00\x01"


def test_import_rejects_non_cpu_and_unsupported_dtypes():
    class Cuda:
        def __dlpack__(self, **kw):
            raise AssertionError("must not be asked for a capsule")

        def __dlpack_device__(self):
            return (2, 1)

    with pytest.raises(BufferError, match="kDLCUDA"):
        dl.from_dlpack_object(Cuda())
    for dt in (np.complex64, np.uint16, np.uint64):
        with pytest.raises(BufferError, match="unsupported DLPack dtype"):
            dl.from_dlpack_object(np.zeros(3, dtype=dt))
    with pytest.raises(TypeError):
        dl.from_dlpack_object([1, 2, 3])


def test_capsule_device_fields_round_trip(backend):
    owner = Owner()
    cap = dl.to_dlpack_capsule(data_ptr=0x1000, shape=(4,), strides=(1,), dtype_code=8,
                               device_type=dl.kDLCUDA, device_id=3, owner=owner, versioned=True)
    imp = dl.from_dlpack_capsule(cap)
    assert (imp.device_type, imp.device_id, imp.data_ptr) == (2, 3, 0x1000)
    # from_dlpack_object re-checks the capsule, not only __dlpack_device__
    ex = Exporter(lambda v: dl.to_dlpack_capsule(
        data_ptr=0x1000, shape=(4,), strides=(1,), dtype_code=8, device_type=dl.kDLCUDAHost,
        device_id=0, owner=owner, versioned=v))
    with pytest.raises(BufferError, match="kDLCUDAHost"):
        dl.from_dlpack_object(ex)
    del imp
    gc.collect()
    assert dl._live_count() == 0


# ---------------------------------------------------------------------------
# Capsule contents and protocol edge cases (producer -> own consumer)
# ---------------------------------------------------------------------------

def managed_of(cap):
    if dl._PyCapsule_IsValid(cap, dl._NAME_VERSIONED):
        return dl.DLManagedTensorVersioned.from_address(dl._PyCapsule_GetPointer(cap, dl._NAME_VERSIONED))
    return dl.DLManagedTensor.from_address(dl._PyCapsule_GetPointer(cap, dl._NAME_LEGACY))


@pytest.mark.parametrize("versioned", [False, True])
def test_round_trip_fields(backend, versioned):
    arr = sample(np.float16, (2, 3, 4)).transpose(2, 0, 1)
    cap = capsule_over(arr, versioned=versioned)
    assert str(cap).startswith('<capsule object "dltensor_versioned"' if versioned
                               else '<capsule object "dltensor"')
    m = managed_of(cap)
    assert (m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits, m.dl_tensor.dtype.lanes) == (2, 16, 1)
    if versioned:
        assert (m.version.major, m.version.minor) == (1, 1) and m.flags == 0
    imp = dl.from_dlpack_capsule(cap)
    assert '"used_dltensor' in str(cap)
    assert imp.versioned == versioned and not imp.read_only
    assert imp.strides == (1, 12, 4)
    assert_imported_matches(imp, arr)


def test_read_only_and_flags(backend):
    arr = sample(np.int32)
    imp = dl.from_dlpack_capsule(capsule_over(arr, versioned=True, read_only=True))
    assert imp.read_only and not imp.is_copied


def test_bool_is_code_6_bits_8(backend):
    cap = capsule_over(sample(np.bool_), versioned=False)
    t = managed_of(cap).dl_tensor
    assert (t.dtype.code, t.dtype.bits) == (6, 8)
    bf = dl.to_dlpack_capsule(data_ptr=0, shape=(0,), strides=(1,), dtype_code=7, device_type=1,
                              device_id=0, owner=None, versioned=True)
    t = managed_of(bf).dl_tensor
    assert (t.dtype.code, t.dtype.bits) == (4, 16)
    assert dl.from_dlpack_capsule(bf).dtype_code == 7


def test_byte_offset_null_strides_and_null_data(backend):
    arr = np.arange(12, dtype=np.int32).reshape(3, 4)
    cap = capsule_over(arr, versioned=True)
    t = managed_of(cap).dl_tensor
    t.byte_offset = 8
    t.strides = None
    imp = dl.from_dlpack_capsule(cap)
    assert imp.data_ptr == arr.ctypes.data + 8
    assert imp.strides == (4, 1)
    assert ctypes.c_int32.from_address(imp.data_ptr).value == 2
    empty = dl.from_dlpack_capsule(dl.to_dlpack_capsule(
        data_ptr=0, shape=(0, 5), strides=None, dtype_code=9, device_type=1, device_id=0,
        owner=None, versioned=False))
    assert empty.data_ptr == 0 and empty.shape == (0, 5) and empty.strides == (5, 1)


def test_unsupported_lanes_leave_capsule_unconsumed(backend):
    owner = Owner()
    ref = weakref.ref(owner)
    cap = dl.to_dlpack_capsule(data_ptr=0, shape=(0,), strides=(1,), dtype_code=8, device_type=1,
                               device_id=0, owner=owner, versioned=True)
    del owner
    managed_of(cap).dl_tensor.dtype.lanes = 4
    with pytest.raises(BufferError, match="lanes"):
        dl.from_dlpack_capsule(cap)
    assert '"dltensor_versioned"' in str(cap) and ref() is not None
    del cap
    gc.collect()
    assert ref() is None


def test_wrong_major_version_calls_deleter(backend):
    owner = Owner()
    ref = weakref.ref(owner)
    cap = dl.to_dlpack_capsule(data_ptr=0, shape=(0,), strides=(1,), dtype_code=8, device_type=1,
                               device_id=0, owner=owner, versioned=True)
    del owner
    managed_of(cap).version.major = 2
    with pytest.raises(BufferError, match="version 2"):
        dl.from_dlpack_capsule(cap)
    gc.collect()
    assert ref() is None                      # released right away ...
    with pytest.raises(ValueError, match="already been consumed"):
        dl.from_dlpack_capsule(cap)           # ... and the capsule is spent
    del cap
    assert dl._live_count() == 0


def test_invalid_capsules_and_arguments(backend):
    with pytest.raises(TypeError):
        dl.from_dlpack_capsule(object())
    foreign = dl._PyCapsule_New(1, dl._cname(b"something_else")[1], None)
    with pytest.raises(ValueError, match="not a DLPack capsule"):
        dl.from_dlpack_capsule(foreign)
    with pytest.raises(ValueError):
        dl.to_dlpack_capsule(data_ptr=8, shape=(2,), strides=(1, 1), dtype_code=8,
                             device_type=1, device_id=0, owner=None, versioned=True)
    with pytest.raises(ValueError, match="NULL"):
        dl.to_dlpack_capsule(data_ptr=0, shape=(2,), strides=(1,), dtype_code=8,
                             device_type=1, device_id=0, owner=None, versioned=True)
    with pytest.raises(ValueError):
        dl.to_dlpack_capsule(data_ptr=8, shape=(2,), strides=(1,), dtype_code=42,
                             device_type=1, device_id=0, owner=None, versioned=True)
    assert dl._live_count() == 0


# ---------------------------------------------------------------------------
# Deleter lifetime
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("versioned", [False, True])
def test_owner_lifetime_unconsumed_capsule(backend, versioned):
    owner = Owner(np.zeros(4))
    ref = weakref.ref(owner)
    cap = capsule_over(owner.payload, versioned=versioned, owner=owner)
    del owner
    gc.collect()
    assert ref() is not None and dl._live_count() == 1
    del cap
    gc.collect()
    assert ref() is None and dl._live_count() == 0


@pytest.mark.parametrize("versioned", [False, True])
def test_owner_lifetime_consumed_capsule(backend, versioned):
    owner = Owner(np.arange(4.0))
    ref = weakref.ref(owner)
    cap = capsule_over(owner.payload, versioned=versioned, owner=owner)
    del owner
    imp = dl.from_dlpack_capsule(cap)
    with pytest.raises(ValueError, match="already been consumed"):
        dl.from_dlpack_capsule(cap)
    del cap                               # renamed: its destructor must not free anything
    gc.collect()
    assert ref() is not None
    assert ctypes.c_double.from_address(imp.data_ptr + 8).value == 1.0
    del imp
    gc.collect()
    assert ref() is None and dl._live_count() == 0


def test_double_consumption_raises(backend):
    arr = np.zeros(3)
    cap = capsule_over(arr, versioned=True)
    first = dl.from_dlpack_capsule(cap)
    with pytest.raises(ValueError, match="already been consumed"):
        dl.from_dlpack_capsule(cap)
    torch = pytest.importorskip("torch")
    cap2 = capsule_over(arr, versioned=False)
    t = torch.from_dlpack(cap2)
    with pytest.raises(ValueError, match="already been consumed"):
        dl.from_dlpack_capsule(cap2)
    with pytest.raises(Exception):
        torch.from_dlpack(cap2)
    del first, t
    gc.collect()
    assert dl._live_count() == 0


def test_owner_lifetime_through_torch_and_numpy(backend):
    torch = pytest.importorskip("torch")
    for consume in (torch.from_dlpack, np.from_dlpack):
        owner = Owner(np.arange(5, dtype=np.float32))
        ref = weakref.ref(owner)
        out = consume(Exporter(lambda v: capsule_over(owner.payload, versioned=v, owner=owner)))
        del owner
        gc.collect()
        assert ref() is not None
        assert float(out[4]) == 4.0
        del out
        gc.collect()
        assert ref() is None and dl._live_count() == 0


def test_deleter_from_another_thread(backend):
    torch = pytest.importorskip("torch")
    owner = Owner(np.arange(5, dtype=np.float32))
    ref = weakref.ref(owner)
    holder = [torch.from_dlpack(Exporter(lambda v: capsule_over(owner.payload, versioned=v,
                                                                owner=owner)))]
    del owner
    th = threading.Thread(target=holder.clear)     # last reference dies on the other thread
    th.start()
    th.join()
    gc.collect()
    assert ref() is None and dl._live_count() == 0


@pytest.mark.parametrize("versioned", [False, True])
def test_no_leak_over_many_cycles(backend, versioned):
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    base_refs = sys.getrefcount(arr)
    # capsules an earlier test left in a reference cycle (a traceback holding its frame)
    # go now, not in the middle of the count
    gc.collect()
    start = dl._live_count()
    for i in range(10_000):
        cap = capsule_over(arr, versioned=versioned)
        if i % 2:
            imp = dl.from_dlpack_capsule(cap)
            del imp
        del cap
    gc.collect()
    assert dl._live_count() == start
    assert sys.getrefcount(arr) == base_refs


def test_concurrent_produce_consume(backend):
    arr = np.arange(8, dtype=np.int64)
    errors = []

    def work():
        try:
            for i in range(2_000):
                cap = capsule_over(arr, versioned=bool(i % 2))
                if i % 3:
                    imp = dl.from_dlpack_capsule(cap)
                    assert ctypes.c_int64.from_address(imp.data_ptr + 8 * 7).value == 7
                    del imp
                del cap
        except BaseException as e:   # surfaced in the main thread below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    gc.collect()
    assert dl._live_count() == 0


def test_no_leak_torch_cycles(backend):
    torch = pytest.importorskip("torch")
    arr = np.arange(6, dtype=np.float32)
    base_refs = sys.getrefcount(arr)
    exp = np_exporter(arr)
    for _ in range(2_000):
        t = torch.from_dlpack(exp)
        del t
    del exp                                  # its closure holds a reference to arr
    gc.collect()
    assert dl._live_count() == 0 and sys.getrefcount(arr) == base_refs


# ---------------------------------------------------------------------------
# Release with a Python exception in flight (why the release hooks are C)
# ---------------------------------------------------------------------------

def test_release_with_pending_exception_is_safe():
    torch = pytest.importorskip("torch")
    owner = Owner(np.zeros(4, dtype=np.uint16))
    ref = weakref.ref(owner)
    bf16 = Exporter(lambda v: dl.to_dlpack_capsule(
        data_ptr=owner.payload.ctypes.data, shape=(4,), strides=(1,), dtype_code=7,
        device_type=1, device_id=0, owner=owner, versioned=v))
    # numpy rejects bfloat16 after taking the capsule and drops it with its error set
    with pytest.raises(Exception) as info:
        np.from_dlpack(bf16)
    assert not isinstance(info.value, SystemError)
    # the interpreter drops the half-built list while ZeroDivisionError is pending
    with pytest.raises(ZeroDivisionError):
        [bf16.__dlpack__(max_version=(1, 1)), 1 / 0]
    with pytest.raises(ZeroDivisionError):
        (torch.from_dlpack(bf16), 1 / 0)
    with pytest.raises(ZeroDivisionError):
        (dl.from_dlpack_capsule(bf16.__dlpack__()), 1 / 0)
    del owner, bf16
    gc.collect()
    assert ref() is None and dl._live_count() == 0
