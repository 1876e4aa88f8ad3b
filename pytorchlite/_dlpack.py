"""DLPack producer/consumer built on ctypes (DLPack v1.1, legacy and versioned capsules).

The Python side (numpy + ctypes) builds and reads the structs; the release hooks are
C functions of the extension (see below):

* :func:`to_dlpack_capsule` wraps a raw buffer (pointer, shape, strides in
  *elements*, dtype code) in a ``PyCapsule`` named ``"dltensor"`` (legacy
  ``DLManagedTensor``) or ``"dltensor_versioned"`` (``DLManagedTensorVersioned``).
  The ``owner`` object is kept alive until the consumer calls the deleter, or
  until the capsule dies without having been consumed.
* :func:`from_dlpack_capsule` consumes such a capsule (renaming it to
  ``"used_dltensor"`` / ``"used_dltensor_versioned"`` as the protocol demands)
  and returns an :class:`ImportedTensor`; dropping that object calls the
  producer's deleter exactly once.
* :func:`from_dlpack_object` runs the Python-level ``__dlpack__`` /
  ``__dlpack_device__`` handshake against numpy arrays, torch tensors, ...

Lifetime bookkeeping
--------------------
Every exported tensor gets an integer key (its ``manager_ctx`` on the plain
ctypes path).  ``_LIVE[key]`` holds the owner; the deleter removes the entry.
``_live_count()`` reports how many exports are still alive (used by leak tests).

Why the release path is C
-------------------------
A capsule's destructor and the managed tensor's deleter may run while a Python
exception is *pending*: ``np.from_dlpack`` raising ``BufferError`` for a bfloat16
capsule drops the capsule with the error set, and so does the interpreter when it
unwinds a frame that raised. CPython cannot run a Python-level (ctypes) callback in
that state, so both live in C (``kernels/dlpack.c``): they save and restore the pending
exception, take the GIL, ``PyMem_Free`` the managed block and drop the strong reference
held in ``manager_ctx``. That reference is a tiny ``_Keeper`` whose ``__del__`` removes
the owner from ``_LIVE``.
"""

import ctypes
import itertools
import sys

import numpy as np

__all__ = ["to_dlpack_capsule", "from_dlpack_capsule", "from_dlpack_object", "ImportedTensor"]

# ---------------------------------------------------------------------------
# DLPack constants (dlpack.h, v1.1)
# ---------------------------------------------------------------------------

DLPACK_MAJOR_VERSION = 1
DLPACK_MINOR_VERSION = 1

kDLCPU = 1
kDLCUDA = 2
kDLCUDAHost = 3

_DEVICE_NAMES = {
    1: "kDLCPU", 2: "kDLCUDA", 3: "kDLCUDAHost", 4: "kDLOpenCL", 7: "kDLVulkan",
    8: "kDLMetal", 9: "kDLVPI", 10: "kDLROCM", 11: "kDLROCMHost", 12: "kDLExtDev",
    13: "kDLCUDAManaged", 14: "kDLOneAPI", 15: "kDLWebGPU", 16: "kDLHexagon", 17: "kDLMAIA",
}

kDLInt = 0
kDLUInt = 1
kDLFloat = 2
kDLOpaqueHandle = 3
kDLBfloat = 4
kDLComplex = 5
kDLBool = 6

DLPACK_FLAG_BITMASK_READ_ONLY = 1 << 0
DLPACK_FLAG_BITMASK_IS_COPIED = 1 << 1

# pytorchlite dtype code -> (DLDataTypeCode, bits).  Lanes are always 1.
_TO_DL_DTYPE = {
    0: (kDLBool, 8),     # bool
    1: (kDLUInt, 8),     # uint8
    2: (kDLInt, 8),      # int8
    3: (kDLInt, 16),     # int16
    4: (kDLInt, 32),     # int32
    5: (kDLInt, 64),     # int64
    6: (kDLFloat, 16),   # float16
    7: (kDLBfloat, 16),  # bfloat16
    8: (kDLFloat, 32),   # float32
    9: (kDLFloat, 64),   # float64
}
_FROM_DL_DTYPE = {v: k for k, v in _TO_DL_DTYPE.items()}
_ITEMSIZE = {code: bits // 8 for code, (_, bits) in _TO_DL_DTYPE.items()}
_DL_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 3: "opaque_handle", 4: "bfloat",
                  5: "complex", 6: "bool"}


# ---------------------------------------------------------------------------
# ctypes mirrors of the dlpack.h structs (field order is ABI: do not reorder)
# ---------------------------------------------------------------------------

class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32),
                ("minor", ctypes.c_uint32)]


class DLDevice(ctypes.Structure):
    # DLDeviceType is a C enum, which is int-sized (32 bits) on every ABI we target.
    _fields_ = [("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8),
                ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p),
                ("device", DLDevice),
                ("ndim", ctypes.c_int32),
                ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),   # in elements, may be NULL
                ("byte_offset", ctypes.c_uint64)]


# The deleter fields are declared as plain pointers: we store raw function
# addresses into them (ours or numpy's) and call them through _DELETER_FN.
class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor),
                ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]      # void (*)(DLManagedTensor *)


class DLManagedTensorVersioned(ctypes.Structure):
    # version, manager_ctx and deleter come first and are ABI-stable across major
    # versions, which is what lets a consumer release a tensor it cannot parse.
    _fields_ = [("version", DLPackVersion),
                ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p),      # void (*)(DLManagedTensorVersioned *)
                ("flags", ctypes.c_uint64),
                ("dl_tensor", DLTensor)]           # last, so DLTensor can grow in later minor versions


# Signature shared by both deleters and by PyCapsule_Destructor: void f(void *).
# CFUNCTYPE (not PYFUNCTYPE): calling a foreign deleter releases the GIL, which
# is the state a C consumer would call it in; a deleter that needs the GIL takes it.
_DELETER_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _call_deleter(deleter, managed, _proto=_DELETER_FN):
    # _proto is bound at definition time so this still works while the module
    # is being torn down at interpreter exit.
    _proto(deleter)(managed)


# ---------------------------------------------------------------------------
# C API entry points.  Private prototypes (instead of setting argtypes on the
# shared ctypes.pythonapi attributes) so we never clash with other users.
# PYFUNCTYPE keeps the GIL held and turns a set Python error into an exception.
# ---------------------------------------------------------------------------

def _capi(name, restype, *argtypes):
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


_c_void_p = ctypes.c_void_p
_py_object = ctypes.py_object

_PyCapsule_New = _capi("PyCapsule_New", _py_object, _c_void_p, _c_void_p, _c_void_p)
_PyCapsule_IsValid = _capi("PyCapsule_IsValid", ctypes.c_int, _py_object, _c_void_p)
_PyCapsule_GetPointer = _capi("PyCapsule_GetPointer", _c_void_p, _py_object, _c_void_p)
_PyCapsule_GetName = _capi("PyCapsule_GetName", _c_void_p, _py_object)
_PyCapsule_SetName = _capi("PyCapsule_SetName", ctypes.c_int, _py_object, _c_void_p)
_PyCapsule_GetDestructor = _capi("PyCapsule_GetDestructor", _c_void_p, _py_object)
# Variants taking the capsule as a raw address: inside a capsule destructor the
# object is already at refcount 0, and wrapping it in py_object would incref it
# back to life and deallocate it a second time.
_PyCapsule_IsValid_raw = _capi("PyCapsule_IsValid", ctypes.c_int, _c_void_p, _c_void_p)
_PyCapsule_GetPointer_raw = _capi("PyCapsule_GetPointer", _c_void_p, _c_void_p, _c_void_p)
_PyMem_Malloc = _capi("PyMem_Malloc", _c_void_p, ctypes.c_size_t)
_PyMem_Free = _capi("PyMem_Free", None, _c_void_p)
_Py_IncRef = _capi("Py_IncRef", None, _py_object)
_Py_DecRef = _capi("Py_DecRef", None, _py_object)


def _immortal(obj):
    """Leak one reference to `obj` so it outlives module teardown.

    Capsule names and capsule destructors are referenced by raw pointer from
    capsules that may be destroyed after this module's globals are cleared at
    interpreter shutdown; they must never be freed.
    """
    _Py_IncRef(obj)
    return obj


def _cname(s):
    buf = _immortal(ctypes.create_string_buffer(s))
    return buf, ctypes.addressof(buf)


_NAME_LEGACY_BUF, _NAME_LEGACY = _cname(b"dltensor")
_NAME_VERSIONED_BUF, _NAME_VERSIONED = _cname(b"dltensor_versioned")
_NAME_USED_LEGACY_BUF, _NAME_USED_LEGACY = _cname(b"used_dltensor")
_NAME_USED_VERSIONED_BUF, _NAME_USED_VERSIONED = _cname(b"used_dltensor_versioned")

_CAPSULE_TYPE = type(_PyCapsule_New(1, _NAME_LEGACY, None))   # no destructor: harmless


# ---------------------------------------------------------------------------
# Producer-side bookkeeping
# ---------------------------------------------------------------------------

_LIVE = {}                  # key -> owner, for every export whose deleter has not run
_KEYS = itertools.count(1)  # next() on a count is atomic under the GIL; 0 stays unused


def _live_count():
    """Number of exported tensors whose deleter has not run yet (for leak tests)."""
    return len(_LIVE)


class _Keeper:
    """`manager_ctx` of an export on the numpy-C path.

    The only strong reference is the one owned by the managed tensor; numpy's
    deleter drops it, and then this finaliser releases the owner.  It holds the
    registry itself rather than looking up the global, which may already be
    gone when this runs during interpreter shutdown.
    """

    __slots__ = ("_key", "_registry")

    def __init__(self, key, registry):
        self._key = key
        self._registry = registry

    def __del__(self):
        self._registry.pop(self._key, None)


# --- release hooks: C functions in the extension (kernels/dlpack.c) ---

def _extension_hooks():
    """(capsule destructor, deleter, manager_ctx is a _Keeper) for each versioned flag.

    They are C because they may run while a Python exception is pending, where no
    Python-level callback can run (see the module docstring)."""
    from pytorchlite._C import lib
    return {False: (lib.ptl_dlpack_hook(0), lib.ptl_dlpack_hook(1), True),
            True: (lib.ptl_dlpack_hook(2), lib.ptl_dlpack_hook(3), True)}


_INT64_P = ctypes.POINTER(ctypes.c_int64)


def _header_size(versioned):
    struct = DLManagedTensorVersioned if versioned else DLManagedTensor
    return (ctypes.sizeof(struct) + 7) // 8 * 8   # shape/strides follow, int64-aligned


def _build_capsule(hooks, versioned, data_ptr, shape, strides, dl_code, bits,
                   device_type, device_id, flags, owner):
    """Allocate and fill one managed tensor, register `owner`, wrap it in a capsule.

    The struct and its shape/strides arrays are one PyMem_Malloc block, which is
    what both deleters free.
    """
    destructor, deleter, keeper_ctx = hooks[versioned]
    ndim = len(shape)
    head = _header_size(versioned)
    block = _PyMem_Malloc(head + 16 * ndim)
    if not block:
        raise MemoryError("to_dlpack_capsule: out of memory")
    ctypes.memset(block, 0, head)
    if ndim:
        dims = (ctypes.c_int64 * (2 * ndim)).from_address(block + head)
        dims[:ndim] = shape
        dims[ndim:] = strides
    if versioned:
        managed = DLManagedTensorVersioned.from_address(block)
        managed.version.major = DLPACK_MAJOR_VERSION
        managed.version.minor = DLPACK_MINOR_VERSION
        managed.flags = flags
    else:
        managed = DLManagedTensor.from_address(block)
    t = managed.dl_tensor
    t.data = data_ptr or None
    t.device.device_type = device_type
    t.device.device_id = device_id
    t.ndim = ndim
    t.dtype.code = dl_code
    t.dtype.bits = bits
    t.dtype.lanes = 1
    # Never NULL, even for 0-d: some consumers dereference strides unconditionally,
    # and DLPack >= 1.2 requires them.  For ndim == 0 nothing is read through them.
    t.shape = ctypes.cast(block + head, _INT64_P)
    t.strides = ctypes.cast(block + head + 8 * ndim, _INT64_P)
    t.byte_offset = 0

    key = next(_KEYS)
    _LIVE[key] = owner
    if keeper_ctx:
        keeper = _Keeper(key, _LIVE)
        _Py_IncRef(keeper)                  # owned by the managed tensor from now on
        managed.manager_ctx = id(keeper)
        del keeper
    else:
        managed.manager_ctx = key
    managed.deleter = deleter
    try:
        return _PyCapsule_New(block, _NAME_VERSIONED if versioned else _NAME_LEGACY, destructor)
    except BaseException:
        _call_deleter(deleter, block)       # frees the block and releases owner
        raise


_HOOKS = _extension_hooks()
_BACKEND = "c"


def _contiguous_strides(shape):
    strides = []
    acc = 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


# ---------------------------------------------------------------------------
# Producer
# ---------------------------------------------------------------------------

def to_dlpack_capsule(*, data_ptr, shape, strides, dtype_code, device_type, device_id, owner,
                      versioned, read_only=False):
    """Return a PyCapsule named 'dltensor' (versioned=False) or 'dltensor_versioned'.

    data_ptr: address of element [0, ..., 0] (0 is allowed for size-0 tensors).
    shape, strides: tuples of ints, strides counted in elements (None strides
    means C-contiguous; explicit strides are always written to the struct).
    dtype_code: pytorchlite dtype code (0 bool ... 9 float64).
    owner: kept alive until the consumer calls the deleter, or until the capsule
    is destroyed without being consumed.
    read_only: sets DLPACK_FLAG_BITMASK_READ_ONLY; the legacy struct cannot say
    "read-only", so read_only=True with versioned=False raises BufferError (the
    same policy numpy follows) rather than hand out writable memory.
    """
    shape = tuple(int(n) for n in shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"to_dlpack_capsule: negative dimension in shape {shape}")
    if strides is None:
        strides = _contiguous_strides(shape)
    strides = tuple(int(s) for s in strides)
    if len(strides) != len(shape):
        raise ValueError(f"to_dlpack_capsule: shape {shape} and strides {strides} differ in length")
    try:
        dl_code, bits = _TO_DL_DTYPE[dtype_code]
    except (KeyError, TypeError):
        raise ValueError(f"to_dlpack_capsule: unknown pytorchlite dtype code {dtype_code!r}") from None
    if not data_ptr and 0 not in shape:
        raise ValueError("to_dlpack_capsule: data_ptr may only be NULL for a tensor with no elements")
    if read_only and not versioned:
        raise BufferError("to_dlpack_capsule: cannot export a read-only tensor as a legacy "
                          "(unversioned) DLPack capsule, which has no read-only flag; the "
                          "consumer must request max_version >= (1, 0)")
    flags = DLPACK_FLAG_BITMASK_READ_ONLY if read_only else 0
    return _build_capsule(_HOOKS, bool(versioned), int(data_ptr or 0), shape, strides, dl_code,
                          bits, int(device_type), int(device_id), flags, owner)


# ---------------------------------------------------------------------------
# Consumer
# ---------------------------------------------------------------------------

class ImportedTensor:
    """A consumed DLPack tensor: a view description plus ownership of its memory.

    Attributes: data_ptr (byte_offset already applied), shape, strides (in
    elements; C-contiguous when the producer gave NULL), dtype_code (pytorchlite
    code), device_type, device_id, read_only (always False for legacy capsules,
    which cannot express it), versioned, is_copied.

    The producer's memory stays valid while this object is alive; when it is
    garbage collected the producer's deleter is called exactly once.
    """

    __slots__ = ("data_ptr", "shape", "strides", "dtype_code", "device_type", "device_id",
                 "read_only", "versioned", "is_copied", "_managed", "_deleter", "__weakref__")

    @property
    def itemsize(self):
        return _ITEMSIZE[self.dtype_code]

    @property
    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __repr__(self):
        return (f"ImportedTensor(data_ptr=0x{self.data_ptr:x}, shape={self.shape}, "
                f"strides={self.strides}, dtype_code={self.dtype_code}, "
                f"device=({self.device_type}, {self.device_id}), read_only={self.read_only})")

    def __del__(self, _call_deleter=_call_deleter):
        # __del__ runs once per object (PEP 442), and _managed is only set after
        # the capsule was successfully renamed, so the deleter runs exactly once.
        managed = getattr(self, "_managed", None)
        deleter = getattr(self, "_deleter", None)
        self._managed = self._deleter = None
        if managed and deleter:
            _call_deleter(deleter, managed)


def _device_str(device_type, device_id):
    return f"{_DEVICE_NAMES.get(device_type, 'unknown')} (device_type={device_type}, device_id={device_id})"


def _capsule_name(capsule):
    addr = _PyCapsule_GetName(capsule)
    return None if not addr else ctypes.string_at(addr)


def _mark_used(capsule, versioned):
    _PyCapsule_SetName(capsule, _NAME_USED_VERSIONED if versioned else _NAME_USED_LEGACY)


def from_dlpack_capsule(capsule):
    """Consume a 'dltensor' or 'dltensor_versioned' capsule; return an ImportedTensor.

    Raises TypeError for non-capsules, ValueError for capsules that were already
    consumed or are not DLPack capsules, and BufferError for tensors this
    framework cannot represent (unsupported dtype / lanes, DLPack major version
    other than 1).  On BufferError for dtypes the capsule is left unconsumed, so
    its destructor still releases the producer's memory; for an unknown major
    version the deleter is called immediately, as the spec asks.
    """
    if type(capsule) is not _CAPSULE_TYPE:
        raise TypeError(f"from_dlpack_capsule: expected a DLPack PyCapsule, got {type(capsule).__name__}")
    if _PyCapsule_IsValid(capsule, _NAME_VERSIONED):
        versioned, name = True, _NAME_VERSIONED
    elif _PyCapsule_IsValid(capsule, _NAME_LEGACY):
        versioned, name = False, _NAME_LEGACY
    else:
        cname = _capsule_name(capsule)
        if cname in (b"used_dltensor", b"used_dltensor_versioned"):
            raise ValueError("from_dlpack_capsule: this DLPack capsule has already been consumed "
                             "(a capsule can only be imported once)")
        raise ValueError(f"from_dlpack_capsule: not a DLPack capsule (capsule name {cname!r}, "
                         "expected b'dltensor' or b'dltensor_versioned')")

    ptr = _PyCapsule_GetPointer(capsule, name)
    if versioned:
        managed = DLManagedTensorVersioned.from_address(ptr)
        if managed.version.major != DLPACK_MAJOR_VERSION:
            major, minor = managed.version.major, managed.version.minor
            # Only version/manager_ctx/deleter can be trusted in an unknown major
            # version; take ownership and release it right away.
            _mark_used(capsule, True)
            if managed.deleter:
                _call_deleter(managed.deleter, ptr)
            raise BufferError(f"from_dlpack_capsule: unsupported DLPack version {major}.{minor} "
                              f"(this consumer understands major version {DLPACK_MAJOR_VERSION})")
        flags = managed.flags
    else:
        managed = DLManagedTensor.from_address(ptr)
        flags = 0
    t = managed.dl_tensor

    code, bits, lanes = t.dtype.code, t.dtype.bits, t.dtype.lanes
    if lanes != 1:
        raise BufferError(f"from_dlpack_capsule: vector dtypes (lanes={lanes}) are not supported")
    dtype_code = _FROM_DL_DTYPE.get((code, bits))
    if dtype_code is None:
        raise BufferError(f"from_dlpack_capsule: unsupported DLPack dtype "
                          f"{_DL_CODE_NAMES.get(code, f'code {code}')}{bits}")
    ndim = t.ndim
    if ndim < 0:
        raise BufferError(f"from_dlpack_capsule: invalid ndim {ndim}")
    shape_addr = ctypes.cast(t.shape, ctypes.c_void_p).value
    strides_addr = ctypes.cast(t.strides, ctypes.c_void_p).value
    if ndim and not shape_addr:
        raise BufferError("from_dlpack_capsule: DLTensor has ndim > 0 but a NULL shape")
    shape = tuple((ctypes.c_int64 * ndim).from_address(shape_addr)) if ndim else ()
    if ndim and strides_addr:
        strides = tuple((ctypes.c_int64 * ndim).from_address(strides_addr))
    else:
        strides = _contiguous_strides(shape)   # NULL strides mean compact row-major

    imported = ImportedTensor()
    imported.data_ptr = (t.data or 0) + t.byte_offset
    imported.shape = shape
    imported.strides = strides
    imported.dtype_code = dtype_code
    imported.device_type = t.device.device_type
    imported.device_id = t.device.device_id
    imported.read_only = bool(flags & DLPACK_FLAG_BITMASK_READ_ONLY)
    imported.is_copied = bool(flags & DLPACK_FLAG_BITMASK_IS_COPIED)
    imported.versioned = versioned
    imported._managed = None      # not armed until the capsule is ours
    imported._deleter = None
    deleter = managed.deleter
    _mark_used(capsule, versioned)
    imported._managed = ptr
    imported._deleter = deleter
    return imported


def from_dlpack_object(obj, *, max_version=(1, 1), stream=None, accept=(kDLCPU,)):
    """Import any object implementing __dlpack__/__dlpack_device__.

    Asks for a versioned capsule with `max_version` and falls back to the
    argument-less legacy call if the producer rejects the keyword (TypeError). A device
    type not in `accept` raises BufferError naming the device. For an accelerator,
    `stream` is the consumer's stream (DLPack's integer convention): the producer orders
    its pending work before it.
    """
    dev_fn = getattr(obj, "__dlpack_device__", None)
    dlpack_fn = getattr(obj, "__dlpack__", None)
    if dev_fn is None or dlpack_fn is None:
        raise TypeError(f"from_dlpack: {type(obj).__name__} does not implement the DLPack "
                        "protocol (__dlpack__ and __dlpack_device__)")
    device_type, device_id = (int(v) for v in dev_fn())
    if device_type not in accept:
        raise BufferError("from_dlpack: only CPU tensors can be imported, got a tensor on "
                          + _device_str(device_type, device_id) if accept == (kDLCPU,) else
                          "from_dlpack: no backend imports tensors on " + _device_str(device_type, device_id))
    kwargs = {} if device_type == kDLCPU or stream is None else {"stream": stream}
    try:
        capsule = dlpack_fn(max_version=max_version, **kwargs)
    except TypeError:
        capsule = dlpack_fn(**kwargs)     # producer predates the max_version keyword
    imported = from_dlpack_capsule(capsule)
    if imported.device_type != device_type:
        desc = _device_str(imported.device_type, imported.device_id)
        del imported   # releases the producer's memory
        raise BufferError(f"from_dlpack: __dlpack_device__ said {_device_str(device_type, device_id)} but the "
                          f"capsule is on {desc}")
    return imported
