"""Sorting, selection, scans and counting: sort, argsort, topk, kthvalue, median,
nanmedian, mode, searchsorted, bucketize, bincount, histc (structured: ops.yaml declares
the C calls into kernels/sort.c and codegen writes the rest), the scans cumsum, cumprod,
cummax, cummin, logcumsumexp, and unique, unique_consecutive, one_hot (kernel entries).

The meta functions below hold PyTorch's checks (with PyTorch's messages) and decide the
result dtypes and shapes. The C side walks the rows along the chosen dim itself (any
strides), so only the scans, the searches and the 1-d counting kernels read contiguous
inputs.
"""

import math

from pytorchlite import _dtype as D
from pytorchlite import _structured as S
from pytorchlite import return_types
from pytorchlite._argparse import wrap_dim
from pytorchlite._C import MAX_DIMS, check, ffi, lib
from pytorchlite._core import TensorBase as Tensor
from pytorchlite._core import check_ndim, empty, make, scalar_tensor, squeeze_dims, to_dtype
from pytorchlite._core import numel as _numel
from pytorchlite._kernels.copy import clone
from pytorchlite._kernels.reduce import _flat
from pytorchlite._ops import ops as F
from pytorchlite._structured import Done, Meta
from pytorchlite.generated.reductions import SCAN_CUMMAX, SCAN_CUMMIN, SCAN_CUMPROD, SCAN_CUMSUM, SCAN_LOGCUMSUMEXP

_I64 = D.int64
_F64 = D.float64

# ptl_select operation codes (kernels/sort.c holds the same enum); ptl_scan's come from the
# `- scan:` entries of ops.yaml (generated/reductions.py)
SEL_KTH, SEL_MEDIAN, SEL_NANMEDIAN, SEL_MODE = range(4)


# --- sort ------------------------------------------------------------------------------------

def _sort_dim(op, x, dim):
    d = wrap_dim(op, dim, len(x._shape))
    if x._shape and x._shape[d] > 0xffffffff:
        raise RuntimeError(f"{op}(): rows longer than 2**32 - 1 elements are not supported")
    return d


def _along(x, d, outputs, **values):
    """Meta for a kernel that works along dim d and writes outputs of x's shape (sort,
    scans). PyTorch takes tensors of more than 64 dims there; the kernel sees x without its
    size-1 dims other than d (at most 63 others are larger than 1), and the outputs are
    written at that shape and returned at x's."""
    if len(x._shape) <= MAX_DIMS:
        return Meta(*outputs, inputs={"self": x}, d=d, **values)
    xs, dims = _squeezed(x, d)
    return Meta(*((shape, dt, tuple(shape[k] for k in dims)) for shape, dt in outputs), inputs={"self": xs},
                d=dims.index(d), **values)


def _squeezed(x, d):
    """x without its size-1 dims other than d (a view), and the dims it keeps."""
    dims = squeeze_dims(x._shape, d)
    check_ndim("", len(dims))      # (more only with a size-0 dim; callers return early on those)
    return make(x._storage, tuple(x._shape[k] for k in dims), tuple(x._stride[k] for k in dims), x._offset,
                x._dtype, None, None), dims


def sort_meta(self, dim=-1, descending=False, stable=False):
    # the kernel's sort is always stable, so stable=False gives one valid order of ties
    d = _sort_dim("sort", self, dim)
    if len(self._shape) > MAX_DIMS:
        return _along(self, d, ((self._shape, self._dtype), (self._shape, _I64)))
    return Meta((self._shape, self._dtype), (self._shape, _I64), d=d)


def argsort_meta(self, dim=-1, descending=False, stable=False):
    d = _sort_dim("argsort", self, dim)
    if len(self._shape) > MAX_DIMS:
        return _along(self, d, ((self._shape, _I64),))
    return Meta((self._shape, _I64), d=d)


# --- topk and selections -----------------------------------------------------------------------

def topk_meta(self, k, dim=-1, largest=True, sorted=True):
    if self._dtype is D.bool:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    shape = self._shape
    d = wrap_dim("topk", dim, len(shape))
    n = shape[d] if shape else 1
    if k < 0 or k > n:
        raise RuntimeError("selected index k out of range")
    if not shape:   # a 0-d input gives 0-d results for k = 0 and 1 alike (PyTorch)
        from pytorchlite._kernels.factories import zeros
        return Done(return_types.topk(clone(self), zeros((), _I64, None, self._device)))
    oshape = shape[:d] + (k,) + shape[d + 1:]
    if len(shape) > MAX_DIMS:
        return _along(self, d, ((oshape, self._dtype), (oshape, _I64)))
    return Meta((oshape, self._dtype), (oshape, _I64), d=d)


def _selection(x, d, keepdim, code, index=0):
    """One selection along dim d (kernels/sort.c ptl_select; `index` counts from 0 for
    kthvalue): the kernel writes values and indices with size 1 at d, which the operator
    drops unless keepdim."""
    shape = x._shape
    kshape = shape[:d] + (1,) + shape[d + 1:] if shape else ()
    if len(shape) > MAX_DIMS:     # (as _along: the kernel sees x without its other size-1 dims)
        xs, dims = _squeezed(x, d)
        ks = tuple(kshape[k] for k in dims)
        oshape = kshape if keepdim else shape[:d] + shape[d + 1:]
        return Meta((oshape, x._dtype, ks), (oshape, _I64, ks), inputs={"self": xs}, code=code,
                    d=dims.index(d), index=index)
    if keepdim or not shape:
        return Meta((kshape, x._dtype), (kshape, _I64), code=code, d=d, index=index)
    oshape = shape[:d] + shape[d + 1:]
    return Meta((oshape, x._dtype, kshape), (oshape, _I64, kshape), code=code, d=d, index=index)


def _dim_nonempty(op, x, dim):
    d = wrap_dim(op, dim, len(x._shape))
    if x._shape and x._shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    return d


def kthvalue_meta(self, k, dim=-1, keepdim=False):
    d = _dim_nonempty("kthvalue", self, dim)
    n = self._shape[d] if self._shape else 1
    if k < 1 or k > n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    return _selection(self, d, keepdim, SEL_KTH, k - 1)


def _median_meta(op, code, self, dim, keepdim):
    if dim is None:
        if keepdim:
            raise TypeError(f"{op}(): argument 'keepdim' needs 'dim' to be given")
        if _numel(self._shape) == 0:
            from pytorchlite._kernels.factories import full
            # PyTorch fills with NaN cast to the dtype: True for bool
            fill = math.nan if self._dtype.is_floating_point else (
                -2 ** 63 if self._dtype is _I64 else (True if self._dtype is D.bool else 0))
            return Done(full((), fill, self._dtype, None, self._device))
        _check_not_bool("median_cpu", self)
        # the median of all elements (a tensor): the values of the dim-0 median of the
        # flattened input
        return Done(getattr(F, op)(_flat(self), 0).values)
    d = _dim_nonempty("median", self, dim)
    _check_not_bool("median_out", self)
    return _selection(self, d, keepdim, code)


def _check_not_bool(kernel, t):
    # PyTorch's median kernels are not instantiated for bool (nanmedian shares them)
    if t._dtype is D.bool:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def median_meta(self, dim=None, keepdim=False):
    return _median_meta("median", SEL_MEDIAN, self, dim, keepdim)


def nanmedian_meta(self, dim=None, keepdim=False):
    return _median_meta("nanmedian", SEL_NANMEDIAN, self, dim, keepdim)


def mode_meta(self, dim=-1, keepdim=False):
    return _selection(self, _dim_nonempty("mode", self, dim), keepdim, SEL_MODE)


# --- scans ---------------------------------------------------------------------------------------

def _scan_meta(op, code, self, dim, dtype=None, indices=False):
    x = self
    if dtype is not None:
        x = to_dtype(x, dtype)
    elif code in (SCAN_CUMSUM, SCAN_CUMPROD) and not x._dtype.is_floating_point:
        x = to_dtype(x, _I64)   # integer and bool sums and products accumulate in int64
    d = wrap_dim(op, dim, len(x._shape))
    outputs = ((x._shape, x._dtype), (x._shape, _I64)) if indices else ((x._shape, x._dtype),)
    if _numel(x._shape) == 0:   # nothing to scan (the kernel takes no empty rows)
        results = tuple(empty(shape, dt, x._device) for shape, dt in outputs)
        return Done(getattr(return_types, op)(*results) if indices else results[0])
    return _along(x, d, outputs, code=code)


def cumsum_meta(self, dim, dtype=None):
    return _scan_meta("cumsum", SCAN_CUMSUM, self, dim, dtype)


def cumprod_meta(self, dim, dtype=None):
    return _scan_meta("cumprod", SCAN_CUMPROD, self, dim, dtype)


def cummax_meta(self, dim):
    return _scan_meta("cummax", SCAN_CUMMAX, self, dim, indices=True)


def cummin_meta(self, dim):
    return _scan_meta("cummin", SCAN_CUMMIN, self, dim, indices=True)


def logcumsumexp_meta(self, dim):
    if not self._dtype.is_floating_point:
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{self._dtype._torch_name}'")
    return _scan_meta("logcumsumexp", SCAN_LOGCUMSUMEXP, self, dim)


# --- unique ------------------------------------------------------------------------------------------

def _runs(op, flat, perm, return_inverse, return_counts, inverse_shape):
    """Groups of equal neighbours of the 1-d `flat`: (values, inverse, counts)."""
    n = flat._shape[0]
    uvals = empty((n,), flat._dtype, flat._device)
    # (only what is asked for: the inverse is a scatter through the sort permutation, a
    # random write per element)
    inverse = empty(inverse_shape, _I64, flat._device) if return_inverse else None
    counts = empty((n,), _I64, flat._device) if return_counts else None
    ng = ffi.new("int64_t *")
    if n:
        descs = S.descriptors(2)
        check(lib.ptl_unique_runs(S.describe(descs, 0, flat), S.pointer(perm, "int64_t *"),
                                  S.describe(descs, 1, uvals), S.pointer(inverse, "int64_t *"),
                                  S.pointer(counts, "int64_t *"), ng), op)
    g = ng[0]
    # the groups fill the front of the n-element buffers: keep a copy of that part only
    values = clone(make(uvals._storage, (g,), (1,), 0, uvals._dtype, uvals._vc, True))
    if counts is not None:
        counts = clone(make(counts._storage, (g,), (1,), 0, _I64, counts._vc, True))
    return values, inverse, counts


def _unique_result(values, inverse, counts, return_inverse, return_counts):
    if return_inverse and return_counts:
        return values, inverse, counts
    if return_inverse:
        return values, inverse
    if return_counts:
        return values, counts
    return values


def _unique_dim(op, self, dim, sort_rows, return_inverse, return_counts):
    """unique / unique_consecutive over the slices along `dim`: each slice is a row of
    `rows` (dim moved first, the rest flattened). Rows are ordered lexicographically by
    stable sorts on one column at a time, last column first (an LSD sort)."""
    if not self._shape:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(op, dim, len(self._shape))
    shape = self._shape
    m = shape[d]
    rest = shape[:d] + shape[d + 1:]
    if _numel(rest) == 0 and m != 0:
        if any(s == 0 for s in rest):
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
    if m == 0 or _numel(shape) == 0:
        none = empty((0,), _I64, self._device)
        return _unique_result(clone(self), none, none, return_inverse, return_counts)
    rows = F.movedim(self, d, 0).reshape(m, -1)
    cols = rows._shape[1]
    perm = F.arange(m, device=self._device)
    if sort_rows:
        for c in range(cols - 1, -1, -1):
            key = F.index_select(F.select(rows, 1, c), 0, perm)
            perm = F.index_select(perm, 0, F.argsort(key, 0, False, stable=True))
    srt = F.index_select(rows, 0, perm)
    starts = F.ones(m, dtype=D.bool, device=self._device)
    if m > 1:
        differs = F.any(F.ne(F.narrow(srt, 0, 1, m - 1), F.narrow(srt, 0, 0, m - 1)), 1)
        starts = F.cat([starts.narrow(0, 0, 1), differs])
    group = F.sub(F.cumsum(starts, 0), 1)
    first = F.nonzero(starts).reshape(-1)
    uniq_rows = F.index_select(srt, 0, first)
    out = F.movedim(uniq_rows.reshape((first._shape[0],) + rest), 0, d).contiguous()
    inverse = empty((m,), _I64, self._device)
    from pytorchlite._kernels.indexing import index_put_
    index_put_(inverse, (perm,), group)
    counts = F.bincount(group, None, first._shape[0])
    return _unique_result(out, inverse, counts, return_inverse, return_counts)


def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
    # sorted=False is allowed to return any order; PyTorch's CPU kernel returns sorted
    # values here too, and so does this one
    if dim is not None:
        return _unique_dim("unique", self, dim, True, return_inverse, return_counts)
    values, perm = F.sort(_flat(self), 0)
    v, inv, cnt = _runs("unique", values, perm, return_inverse, return_counts, self._shape)
    return _unique_result(v, inv, cnt, return_inverse, return_counts)


def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    if dim is not None:
        return _unique_dim("unique_consecutive", self, dim, False, return_inverse, return_counts)
    flat = _flat(self)
    v, inv, cnt = _runs("unique_consecutive", flat, None, return_inverse, return_counts, self._shape)
    return _unique_result(v, inv, cnt, return_inverse, return_counts)


# --- searching and counting -------------------------------------------------------------------------

def _as_tensor(v, like):
    if isinstance(v, Tensor):
        return v
    dt = like._dtype if not (isinstance(v, float) and not like._dtype.is_floating_point) else D.get_default_dtype()
    return scalar_tensor(v, dt, like._device)


def _search(op, names, seq, values, out_int32, right, sorter):
    """Meta of searchsorted / bucketize: `seq` and `values` (the arguments `names`) are
    searched in their common dtype, each row of values in its row of seq (or all in the
    one 1-d seq)."""
    values = _as_tensor(values, seq)
    if values._device != seq._device:
        raise RuntimeError(f"{op}(): Expected all tensors to be on the same device")
    common = D.promote_types(seq._dtype, values._dtype)
    m = seq._shape[-1]
    if sorter is not None:
        if sorter._dtype is not _I64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{_CPP[sorter._dtype.name]}")
        if sorter._shape != seq._shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(seq._shape)}and got sorter tensor {list(sorter._shape)}")
        if _numel(sorter._shape):
            lo, hi = int(F.min(sorter).item()), int(F.max(sorter).item())
            if lo < 0 or hi >= m:
                raise RuntimeError("torch.searchsorted(): sorter index out of range")
    vshape = values._shape
    if len(seq._shape) == 1:
        seq_rows = 1
        k = vshape[-1] if vshape else 1
        rows = _numel(vshape) // k if k else 0
    else:
        seq_rows = rows = _numel(seq._shape[:-1])
        k = vshape[-1]
    return Meta((vshape, D.int32 if out_int32 else _I64),
                inputs={names[0]: to_dtype(seq, common), names[1]: to_dtype(values, common)}, rows=rows, seq_rows=seq_rows, m=m, k=k, side_right=int(bool(right)))


_CPP = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
        "float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double"}


def searchsorted_meta(sorted_sequence, self, out_int32=False, right=False, side=None, sorter=None):
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if side == "left" and right:
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    seq = sorted_sequence
    if not seq._shape:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    if len(seq._shape) > 1:
        vshape = self._shape if isinstance(self, Tensor) else ()
        if seq._shape[:-1] != vshape[:-1] or not vshape:
            raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                               "dimensions of boundaries tensor and input value tensor must match, but we got "
                               f"boundaries tensor {list(seq._shape)} and input value tensor {list(vshape)}")
    return _search("searchsorted", ("sorted_sequence", "self"), seq, self, out_int32, right, sorter)


def bucketize_meta(self, boundaries, out_int32=False, right=False):
    if len(boundaries._shape) != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({len(boundaries._shape)})")
    return _search("bucketize", ("boundaries", "self"), boundaries, self, out_int32, right, None)


def bincount_meta(self, weights=None, minlength=0):
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if self._dtype.is_floating_point or self._dtype is D.bool:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{_CPP[self._dtype.name]}'")
    if len(self._shape) != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (len(weights._shape) != 1 or weights._shape[0] != self._shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    x = to_dtype(self, _I64)
    nbins = minlength
    if self._shape[0]:
        lo, hi = int(F.min(x).item()), int(F.max(x).item())
        if lo < 0:
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        nbins = max(nbins, hi + 1)
    if weights is None:
        return Meta(((nbins,), _I64), inputs={"self": x}, nbins=nbins)
    # the weights are summed in float64; float32 weights give float32 counts, every other
    # weight dtype float64 (PyTorch)
    return Meta(((nbins,), D.float32 if weights._dtype is D.float32 else _F64), compute=_F64,
                inputs={"self": x, "weights": to_dtype(weights, _F64)}, nbins=nbins)


def histc_meta(self, bins=100, min=0, max=0):
    if not self._dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_CPP[self._dtype.name]}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if lo == hi and _numel(self._shape):
        lo, hi = F.min(self).item(), F.max(self).item()
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        def fmt(v):
            return "-nan" if math.isnan(v) else (repr(v) if not float(v).is_integer() else str(int(v)) if
                                                 math.isfinite(v) else ("inf" if v > 0 else "-inf"))
        raise RuntimeError(f"torch.histc: range of [{fmt(lo)}, {fmt(hi)}] is not finite")
    # counted in float64 over the flattened input
    return Meta(((bins,), self._dtype), compute=_F64, inputs={"self": _flat(self)}, lo=lo, hi=hi)


def one_hot(self, num_classes=-1):
    if self._dtype is not _I64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    n = _numel(self._shape)
    if num_classes == -1:
        if n == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(F.max(self).item()) + 1
    elif num_classes < -1:
        raise RuntimeError("num_classes should be positive")
    if n:
        if int(F.min(self).item()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(F.max(self).item()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    classes = F.arange(num_classes, dtype=_I64, device=self._device)
    return to_dtype(F.eq(self.unsqueeze(-1), classes), _I64)
