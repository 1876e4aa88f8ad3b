"""The bottom layer: tensor construction, data pointers, kernel descriptors, copy/cast and
broadcasting shapes. Every other module of pytorchlite may import this one; it imports
nothing above it (the compiled kernels, dtypes, devices, storage and the device registry).

`TensorBase` is what a tensor *is* (metadata over a Storage: sizes, strides, offset,
dtype, device, version counter, autograd fields) and what kernels read of it. The
user-facing `pytorchlite.Tensor` (pytorchlite/_tensor.py) subclasses it with the Python
API and the methods generated from ops.yaml; it registers itself here once
(`set_tensor_class`), so that `make` builds tensors of that class, as PyTorch's C++ core
builds instances of the Python `torch.Tensor` it is given at start-up. Code below the
bindings tests `isinstance(x, TensorBase)`.
"""

from pytorchlite import _backends
from pytorchlite._C import MAX_DIMS, check, ffi, lib, new_descriptors as _new_descs
from pytorchlite._device import CPU
from pytorchlite._storage import Storage

_new = object.__new__
_alloc = Storage.allocate
_set_desc = lib.ptl_set_desc
_new_c = ffi.new


class Size(tuple):
    """The shape of a tensor: a tuple of ints, printed as PyTorch does."""

    def __repr__(self):
        return f"pytorchlite.Size([{', '.join(str(s) for s in self)}])"

    def numel(self):
        return numel(self)

    def __getitem__(self, item):
        r = tuple.__getitem__(self, item)
        return Size(r) if isinstance(item, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))


# --- shapes and strides ------------------------------------------------------------------

def contiguous_strides(shape):
    # every new tensor comes through here: the ranks most tensors have skip the loop
    nd = len(shape)
    if nd <= 1:
        return (1,) * nd
    if nd == 2:
        return (shape[1] or 1, 1)
    strides = [1] * nd
    acc = 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = acc
        acc *= max(shape[i], 1)
    return tuple(strides)


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


# --- size arithmetic limits (PyTorch's checked int64/uint64 arithmetic) ------------------------
#
# PyTorch computes sizes in C++ integers and checks every step; Python's integers never
# overflow, so without these checks a huge shape would reach NumPy or cffi and fail there
# (OverflowError, MemoryError) instead of with PyTorch's RuntimeError.

INT64_MAX = (1 << 63) - 1
_U64_MASK = (1 << 64) - 1


def _u64_product_overflows(sizes):
    """c10::safe_multiplies_u64: a running product of the sizes (as uint64) overflows at
    some step. A step that overflows taints the result even if a later size is 0; once
    the product is 0 it stays 0 and nothing after overflows."""
    p = 1
    for n in sizes:
        p *= n & _U64_MASK
        if p > _U64_MASK:
            return True
    return False


def check_numel(shape):
    """TensorImpl::safe_compute_numel: every tensor's (and view's) element count fits int64."""
    if _u64_product_overflows(shape) or numel(shape) & _U64_MASK > INT64_MAX:
        raise RuntimeError("numel: integer multiplication overflow")


def storage_overflowed(shape, itemsize):
    """The error computeStorageNbytesContiguous raises for a contiguous `shape` whose byte
    count leaves int64 (None when it fits)."""
    if _u64_product_overflows(shape) or numel(shape) * itemsize > INT64_MAX:
        return RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")
    return None


def storage_nbytes_strided(shape, stride, itemsize, offset=0):
    """computeStorageNbytes: the bytes a (shape, stride) layout spans, with PyTorch's
    uint64 arithmetic (a negative stride wraps and overflows); raises its RuntimeError."""
    if 0 in shape:
        return 0
    size = 1
    over = False
    for n, s in zip(shape, stride):
        part = (s & _U64_MASK) * ((n - 1) & _U64_MASK)
        over |= part > _U64_MASK
        size = size + (part & _U64_MASK)
        over |= size > _U64_MASK
        size &= _U64_MASK
    nbytes = (size + offset) * itemsize
    if over or nbytes > INT64_MAX:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)} and "
                           f"strides={list(stride)}")
    return nbytes


def _check_empty(shape, nbytes, itemsize):
    """The checks empty() runs when the byte count is suspect: beyond int64, or 0 (a
    0-size dimension can hide an overflowing product of the others)."""
    e = storage_overflowed(shape, itemsize)
    if e is not None:
        raise e
    acc = 1     # TensorImpl::empty_tensor_restride: the contiguous strides fit int64
    for n in reversed(shape[1:]):
        acc *= max(n, 1)
        if acc > INT64_MAX:
            raise RuntimeError("Stride calculation overflowed")


def is_contiguous_layout(shape, stride):
    expected = 1
    for i in range(len(shape) - 1, -1, -1):
        s = shape[i]
        if s == 1:
            continue
        if s == 0:
            return True
        if stride[i] != expected:
            return False
        expected *= s
    return True


def broadcast_shapes(op, shapes):
    """The broadcast of several shapes, with PyTorch's error for a mismatch."""
    if len(shapes) == 1 or (len(shapes) == 2 and shapes[0] == shapes[1]):
        return tuple(shapes[0])   # nothing to broadcast (the common case)
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        off = ndim - len(s)
        for i, n in enumerate(s):
            j = off + i
            m = out[j]
            if m == n or n == 1:
                continue
            if m == 1:
                out[j] = n
                continue
            # name the two shapes that disagree, as PyTorch does
            a = next(x for x in shapes if len(x) - ndim + j >= 0 and x[len(x) - ndim + j] == m)
            raise RuntimeError(
                f"The size of tensor a ({m}) must match the size of tensor b ({n}) at non-singleton "
                f"dimension {j - (ndim - max(len(a), len(s)))}")
    return tuple(out)


def expand_strides(t, shape):
    """t's strides for viewing it at the broadcast `shape` (0 where broadcast)."""
    nd = len(shape)
    off = nd - len(t._shape)
    st = [0] * nd
    for i, (n, s) in enumerate(zip(t._shape, t._stride)):
        st[off + i] = 0 if (n == 1 and shape[off + i] != 1) else s
    return st


# --- the tensor ----------------------------------------------------------------------------

class TensorBase:
    """A tensor's metadata over its Storage; see the module docstring. Subclassed once by
    pytorchlite.Tensor, which every tensor is an instance of."""

    # The metadata lives in slots (fast to read on every op). "__dict__" holds what users and
    # libraries attach (`t.tag = ...`, `p.my_flag = True`), as on torch.Tensor: CPython
    # creates the dict only when first written, so a tensor without attributes pays one
    # pointer, and slot and property reads do not look in it. Attributes belong to the
    # object: detach(), views, clone() and op results start without them; pickle, copy
    # and pytorchlite.save keep them (as torch does).
    __slots__ = ("_storage", "_shape", "_stride", "_offset", "_dtype", "_device", "_vc",
                 "_contig", "_requires_grad", "_grad", "_grad_fn", "_output_nr", "_base",
                 "_ag", "_fw", "__weakref__", "__dict__")

    # the slots that are the tensor's metadata (what Parameter copies from its data)
    _META_SLOTS = tuple(s for s in __slots__ if s not in ("__weakref__", "__dict__"))

    # numpy defers to our reflected operators instead of converting the tensor
    __array_priority__ = 1000

    def numel(self):
        return numel(self._shape)

    nelement = numel

    def dim(self):
        return len(self._shape)

    ndimension = dim

    @property
    def ndim(self):
        return len(self._shape)

    def element_size(self):
        return self._dtype.itemsize

    def storage_offset(self):
        return self._offset

    def data_ptr(self):
        return self._storage.ptr + self._offset * self._dtype.itemsize

    def untyped_storage(self):
        return self._storage

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._device

    @property
    def is_cuda(self):
        return self._device.type == "cuda"

    @property
    def is_cpu(self):
        return self._device.type == "cpu"

    def is_floating_point(self):
        return self._dtype.is_floating_point

    def is_complex(self):
        return False

    def is_signed(self):
        return self._dtype.is_signed

    @property
    def itemsize(self):
        return self._dtype.itemsize

    @property
    def nbytes(self):
        return numel(self._shape) * self._dtype.itemsize

    @property
    def _version(self):
        return self._vc[0]

    def is_contiguous(self, memory_format=None):
        c = self._contig
        if c is None:
            c = self._contig = is_contiguous_layout(self._shape, self._stride)
        return c

    def _bump_version(self):
        self._vc[0] += 1


Tensor = TensorBase   # the class `make` instantiates: pytorchlite.Tensor once registered


def set_tensor_class(cls):
    """Register the user-facing Tensor class (pytorchlite/_tensor.py does, once)."""
    global Tensor
    if not (isinstance(cls, type) and issubclass(cls, TensorBase)):
        raise TypeError(f"set_tensor_class(): expected a subclass of TensorBase, got {cls!r}")
    Tensor = cls


def make(storage, shape, stride, offset, dtype, vc=None, contig=None):
    """Build a tensor over a storage; the one constructor every op uses."""
    t = _new(Tensor)
    t._storage = storage
    t._shape = shape
    t._stride = stride
    t._offset = offset
    t._dtype = dtype
    t._device = storage.device
    t._vc = [0] if vc is None else vc
    t._contig = contig
    t._requires_grad = False
    t._grad = None
    t._grad_fn = None
    t._output_nr = 0
    t._base = None
    t._ag = None
    t._fw = None     # forward-mode tangent (pytorchlite/autograd/forward_ad.py)
    return t


def empty(shape, dtype, device=CPU):
    """A new contiguous tensor with uninitialised memory."""
    nbytes = numel(shape) * dtype.itemsize
    if not nbytes or nbytes > INT64_MAX:
        _check_empty(shape, nbytes, dtype.itemsize)
    st = _alloc(nbytes, device)
    return make(st, shape, contiguous_strides(shape), 0, dtype, None, True)


def addr(t):
    """The address of t's first element (storage pointer plus offset), as kernels take it."""
    return t._storage.ptr + t._offset * t._dtype.itemsize


# --- descriptors and scalars for the C kernels --------------------------------------------

def check_ndim(op, ndim):
    """PyTorch's error for an operator that takes a list of dims (a reduction's `dim`,
    `flip`, ...): it keeps them in a 64-bit mask (at::dim_list_to_bitset), so it refuses
    tensors of more than 64 dims even where the result would be small."""
    if ndim > MAX_DIMS:
        raise RuntimeError(f"only tensors with up to {MAX_DIMS} dims are supported")


def elementwise_geometry(shape, strides, keep=None):
    """(shape, [strides of each operand]) with the size-1 dims dropped when there are more
    than a descriptor holds: an elementwise kernel visits the same elements in the same
    order without them. A tensor of more than 64 dims always fits afterwards: its
    element count fits int64, so at most 63 of its dims are larger than 1 (or one is 0,
    and then there is nothing to visit: one dim of size 0 says so). Dim `keep` (a kernel's
    `dim`) stays; squeeze_dims gives its new position."""
    if len(shape) <= MAX_DIMS:
        return shape, strides
    if 0 in shape and keep is None:
        return (0,), [(0,) for _ in strides]
    dims = squeeze_dims(shape, keep)
    return tuple(shape[d] for d in dims), [tuple(st[d] for d in dims) for st in strides]


def squeeze_dims(shape, keep=None):
    """The dims elementwise_geometry keeps: those larger than 1, and `keep`."""
    return [d for d, s in enumerate(shape) if s != 1 or d == keep]


def descriptors(tensors, shape):
    """A ptl_tensor array describing every tensor viewed at `shape` (expanded as needed),
    for elementwise kernels (pointwise, copy, fill, random): beyond the descriptor's limit
    the size-1 dims are dropped (elementwise_geometry)."""
    descs = _new_descs("ptl_tensor[]", len(tensors))
    nd = len(shape)
    if nd > MAX_DIMS:
        shape, strides = elementwise_geometry(
            shape, [t._stride if t._shape == shape else expand_strides(t, shape) for t in tensors])
        for k, t in enumerate(tensors):
            check(_set_desc(descs, k, t._storage.ptr + t._offset * t._dtype.itemsize, t._dtype.code, len(shape),
                            shape, strides[k]), "")
        return descs
    # one C call per tensor (ptl_set_desc) instead of a cffi write per field: half the cost
    for k, t in enumerate(tensors):
        _set_desc(descs, k, t._storage.ptr + t._offset * t._dtype.itemsize, t._dtype.code, nd, shape,
                  t._stride if t._shape == shape else expand_strides(t, shape))
    return descs


def scalar_pair(v):
    """A Python scalar as the (double, int64) pair a kernel's ptl_scalar holds."""
    tv = type(v)
    if tv is int:       # the common cases first: this runs on every call with alpha=
        return (float(v), v)
    if tv is float and -9.2e18 < v < 9.2e18:   # finite and within int64
        return (v, int(v))
    if isinstance(v, float):
        # nan, inf or beyond int64: only float kernels read it; the int view saturates
        if v != v:
            return (v, 0)
        return (v, 9223372036854775807 if v > 0 else -9223372036854775808)
    if isinstance(v, TensorBase):
        v = v.item()
    return (float(v), int(v))


# --- copy and cast ---------------------------------------------------------------------------

def copy_into(dst, src):
    """dst[...] = src, broadcasting src to dst's shape and converting dtype; a copy that
    involves another device goes to that device's backend."""
    if dst._device is not CPU or src._device is not CPU:
        other = dst._device if dst._device.type != "cpu" else src._device
        return _backends.get(other.type).copy(dst, src)
    check(lib.ptl_copy(descriptors((dst, src), dst._shape)), "copy_")


def to_dtype(t, dtype):
    """A contiguous copy of t in `dtype` (t itself when it already has that dtype)."""
    if t._dtype is dtype:
        return t
    out = empty(t._shape, dtype, t._device)
    copy_into(out, t)
    return out


def fill(t, value):
    """t[...] = value (a Python number) on t's device."""
    if t._device is not CPU:
        return _backends.get(t._device.type).fill(t, value)
    d, i = scalar_pair(value)
    check(lib.ptl_fill(descriptors((t,), t._shape), d, i), "fill_")
    return t


def scalar_tensor(v, dtype, device):
    """A new 0-d tensor holding the Python number v."""
    return fill(empty((), dtype, device), v)


# --- memory overlap (PyTorch's checks before writing) ----------------------------------------

def self_overlapping(t):
    """Whether two elements of t share memory (an expanded view)."""
    for n, s in zip(t._shape, t._stride):
        if s == 0 and n > 1:
            return True
    return False


def _dense(t):
    """PyTorch's is_non_overlapping_and_dense: the strides are a permutation of contiguous
    ones (size-1 dims aside)."""
    if t._contig:
        return True
    expected = 1
    for s, n in sorted((s, n) for n, s in zip(t._shape, t._stride) if n != 1):
        if s != expected:
            return False
        expected *= n
    return True


def overlap_status(a, b):
    """PyTorch's get_overlap_status of two tensors: 2 when they are exactly the same memory
    (full overlap), 1 when they share part of it (partial), 0 when they do not, or when
    one is not dense and PyTorch does not try to tell ("too hard")."""
    if a is b:
        return 2
    if a._storage is not b._storage:      # the cheap test first: most writes stop here
        return 0
    na, nb = numel(a._shape), numel(b._shape)
    if not na or not nb or not (_dense(a) and _dense(b)):
        return 0
    # byte ranges (a view of another dtype shares the storage too)
    a_lo = a._offset * a._dtype.itemsize
    b_lo = b._offset * b._dtype.itemsize
    a_hi = a_lo + na * a._dtype.itemsize
    b_hi = b_lo + nb * b._dtype.itemsize
    if a_lo == b_lo and a_hi == b_hi:
        return 2 if a._stride == b._stride else 1
    return 1 if a_lo < b_hi and b_lo < a_hi else 0


def overlaps(a, b):
    """Whether a and b's memory ranges touch without being the same view."""
    if a._storage is not b._storage:
        return False
    if a._offset == b._offset and a._stride == b._stride and a._shape == b._shape:
        return False
    if not a._shape or not b._shape or numel(a._shape) == 0 or numel(b._shape) == 0:
        return a._offset == b._offset and numel(a._shape) and numel(b._shape)
    a_lo = a._offset
    a_hi = a._offset + sum((n - 1) * s for n, s in zip(a._shape, a._stride))
    b_lo = b._offset
    b_hi = b._offset + sum((n - 1) * s for n, s in zip(b._shape, b._stride))
    return a_lo <= b_hi and b_lo <= a_hi


# --- the CPU backend ---------------------------------------------------------------------------

class CPUBackend(_backends.Backend):
    """The CPU in the device registry. Hot paths test `device is CPU` and run inline;
    this object serves code that asks the registry for any device type alike."""

    type = "cpu"

    def allocate(self, nbytes, device):
        return _alloc(nbytes, CPU)

    def copy(self, dst, src, non_blocking=False):
        copy_into(dst, src)

    def fill(self, t, value):
        return fill(t, value)

    def dlpack_device_type(self):
        return 1   # kDLCPU


_backends.register(CPUBackend())
