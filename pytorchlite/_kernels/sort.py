"""Kernel entries for sorting, selection, scans and counting: sort, argsort, msort, topk,
kthvalue, median, nanmedian, mode, unique, unique_consecutive, searchsorted, bucketize,
bincount, histc, one_hot, cumsum, cumprod, cummax, cummin, logcumsumexp.

Each entry checks its arguments the way PyTorch does (with PyTorch's messages), decides
the result dtype and shape, allocates the results and calls one C entry of
kernels/sort.c. The C side walks the rows along the chosen dim itself (any strides), so
only the scans and the 1-d counting kernels need contiguous inputs.
"""

import math

from pytorchlite import _dtype as D
from pytorchlite import return_types
from pytorchlite._argparse import wrap_dim
from pytorchlite._C import check, ffi, lib
from pytorchlite._core import copy_into, to_dtype
from pytorchlite._kernels.reduce import _fill, _new_tensor, _check_cpu, _flat
from pytorchlite._core import TensorBase as Tensor, contiguous_strides, make, numel as _numel, scalar_tensor
from pytorchlite._ops import ops as F
from pytorchlite.generated.reductions import SCAN_CUMMAX, SCAN_CUMMIN, SCAN_CUMPROD, SCAN_CUMSUM, SCAN_LOGCUMSUMEXP

_I64 = D.int64
_NULL = ffi.NULL
_new = ffi.new
_cast = ffi.cast

# ptl_select operation codes (kernels/sort.c holds the same enum); ptl_scan's come from the
# `- scan:` entries of ops.yaml (generated/reductions.py)
SEL_KTH, SEL_MEDIAN, SEL_NANMEDIAN, SEL_MODE = range(4)


def _ptr(t, ctype="int64_t *"):
    return _cast(ctype, t._storage.ptr + t._offset * t._dtype.itemsize)


def _contiguous(t):
    if t.is_contiguous():
        return t
    y = _new_tensor(t._shape, t._dtype, t._device)
    copy_into(y, t)
    return y


def _squeeze_dim(t, d, keep):
    """A contiguous result described with size 1 at d, without that dim unless keep."""
    if keep or not t._shape:
        return t
    shape = t._shape[:d] + t._shape[d + 1:]
    return make(t._storage, shape, contiguous_strides(shape), t._offset, t._dtype, t._vc, True)


# --- sort ------------------------------------------------------------------------------------

def _sort(op, x, dim, descending, want_values=True):
    _check_cpu(op, x)
    shape = x._shape
    d = wrap_dim(op, dim, len(shape))
    if len(shape) and shape[d] > 0xffffffff:
        raise RuntimeError(f"{op}(): rows longer than 2**32 - 1 elements are not supported")
    indices = _new_tensor(shape, _I64, x._device)
    values = _new_tensor(shape, x._dtype, x._device) if want_values else None
    descs = _new("ptl_tensor[3]")
    _fill(descs[0], x, shape, x._stride)
    _fill(descs[1], indices, shape, indices._stride)
    if values is not None:
        _fill(descs[2], values, shape, values._stride)
    check(lib.ptl_sort(descs, descs + 2 if values is not None else _NULL, descs + 1, d, bool(descending)), op)
    return values, indices


def sort(self, dim=-1, descending=False, stable=False):
    # the kernel's sort is always stable, so stable=False gives one valid order of ties
    values, indices = _sort("sort", self, dim, descending)
    return return_types.sort(values, indices)


def argsort(self, dim=-1, descending=False, stable=False):
    return _sort("argsort", self, dim, descending, want_values=False)[1]


def msort(self):
    return _sort("msort", self, 0, False)[0]


# --- topk and selections -----------------------------------------------------------------------

def topk(self, k, dim=-1, largest=True, sorted=True):
    _check_cpu("topk", self)
    if self._dtype is D.bool:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    shape = self._shape
    d = wrap_dim("topk", dim, len(shape))
    n = shape[d] if shape else 1
    if k < 0 or k > n:
        raise RuntimeError("selected index k out of range")
    oshape = shape[:d] + (k,) + shape[d + 1:] if shape else ()
    values = _new_tensor(oshape, self._dtype, self._device)
    indices = _new_tensor(oshape, _I64, self._device)
    if not shape:   # a 0-d input gives 0-d results for k = 0 and 1 alike (PyTorch)
        copy_into(values, self)
        from pytorchlite._kernels.factories import zeros
        copy_into(indices, zeros((), _I64, None, self._device))
    elif _numel(oshape):
        descs = _new("ptl_tensor[3]")
        _fill(descs[0], self, shape, self._stride)
        _fill(descs[1], values, oshape, values._stride)
        _fill(descs[2], indices, oshape, indices._stride)
        check(lib.ptl_topk(descs, descs + 1, descs + 2, d, k, bool(largest)), "topk")
    return return_types.topk(values, indices)


def _select(op, code, x, d, k, keepdim, name=None):
    """values, indices of one selection along dim d (kernels/sort.c ptl_select)."""
    shape = x._shape
    kshape = shape[:d] + (1,) + shape[d + 1:] if shape else ()
    values = _new_tensor(kshape, x._dtype, x._device)
    indices = _new_tensor(kshape, _I64, x._device)
    if _numel(kshape):
        descs = _new("ptl_tensor[3]")
        _fill(descs[0], x, shape, x._stride)
        _fill(descs[1], values, kshape, values._stride)
        _fill(descs[2], indices, kshape, indices._stride)
        check(lib.ptl_select(code, descs, descs + 1, descs + 2, d, k), op)
    return _squeeze_dim(values, d, keepdim), _squeeze_dim(indices, d, keepdim)


def _dim_nonempty(op, x, dim, given=None):
    _check_cpu(op, x)
    d = wrap_dim(op, dim, len(x._shape))
    if x._shape and x._shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d if given is None else given} to have non-zero size.")
    return d


def kthvalue(self, k, dim=-1, keepdim=False):
    _check_cpu("kthvalue", self)
    d = wrap_dim("kthvalue", dim, len(self._shape))
    n = self._shape[d] if self._shape else 1
    if self._shape and n == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if k < 1 or k > n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    values, indices = _select("kthvalue", SEL_KTH, self, d, k - 1, keepdim)
    return return_types.kthvalue(values, indices)


def _median(op, code, result, self, dim, keepdim):
    if dim is None:
        _check_cpu(op, self)
        if keepdim:
            raise TypeError(f"{op}(): argument 'keepdim' needs 'dim' to be given")
        if _numel(self._shape) == 0:
            from pytorchlite._kernels.factories import full
            # PyTorch fills with NaN cast to the dtype: True for bool
            fill = math.nan if self._dtype.is_floating_point else (
                -2 ** 63 if self._dtype is _I64 else (True if self._dtype.name == "bool" else 0))
            return full((), fill, self._dtype, None, self._device)
        _check_not_bool("median_cpu", self)
        values, _ = _select(op, code, _flat(self), 0, 0, False)
        return values
    d = _dim_nonempty("median", self, dim)
    _check_not_bool("median_out", self)
    values, indices = _select(op, code, self, d, 0, keepdim)
    return result(values, indices)


def _check_not_bool(kernel, t):
    # PyTorch's median kernels are not instantiated for bool (nanmedian shares them)
    if t._dtype.name == "bool":
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def median(self, dim=None, keepdim=False):
    return _median("median", SEL_MEDIAN, return_types.median, self, dim, keepdim)


def nanmedian(self, dim=None, keepdim=False):
    return _median("nanmedian", SEL_NANMEDIAN, return_types.nanmedian, self, dim, keepdim)


def mode(self, dim=-1, keepdim=False):
    d = _dim_nonempty("mode", self, dim)
    if not self._shape and _numel(self._shape) == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    values, indices = _select("mode", SEL_MODE, self, d, 0, keepdim)
    return return_types.mode(values, indices)


# --- scans ---------------------------------------------------------------------------------------

def _scan(op, code, self, dim, dtype=None, with_indices=False):
    _check_cpu(op, self)
    x = self
    if dtype is not None:
        x = to_dtype(x, dtype)
    elif code in (SCAN_CUMSUM, SCAN_CUMPROD) and not x._dtype.is_floating_point:
        x = to_dtype(x, _I64)   # integer and bool sums and products accumulate in int64
    d = wrap_dim(op, dim, len(x._shape))
    x = _contiguous(x)
    out = _new_tensor(x._shape, x._dtype, x._device)
    idx = _new_tensor(x._shape, _I64, x._device) if with_indices else None
    if _numel(x._shape):
        descs = _new("ptl_tensor[3]")
        _fill(descs[0], x, x._shape, x._stride)
        _fill(descs[1], out, out._shape, out._stride)
        if idx is not None:
            _fill(descs[2], idx, idx._shape, idx._stride)
        check(lib.ptl_scan(code, descs, descs + 1, descs + 2 if idx is not None else _NULL, d), op)
    return (out, idx) if with_indices else out


def cumsum(self, dim, dtype=None):
    return _scan("cumsum", SCAN_CUMSUM, self, dim, dtype)


def cumprod(self, dim, dtype=None):
    return _scan("cumprod", SCAN_CUMPROD, self, dim, dtype)


def cummax(self, dim):
    return return_types.cummax(*_scan("cummax", SCAN_CUMMAX, self, dim, with_indices=True))


def cummin(self, dim):
    return return_types.cummin(*_scan("cummin", SCAN_CUMMIN, self, dim, with_indices=True))


def logcumsumexp(self, dim):
    if not self._dtype.is_floating_point:
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{self._dtype._torch_name}'")
    return _scan("logcumsumexp", SCAN_LOGCUMSUMEXP, self, dim)


# --- unique ------------------------------------------------------------------------------------------

def _runs(op, flat, perm, return_inverse, return_counts, inverse_shape):
    """Groups of equal neighbours of the 1-d `flat`: (values, inverse, counts)."""
    n = flat._shape[0]
    uvals = _new_tensor((n,), flat._dtype, flat._device)
    # (only what is asked for: the inverse is a scatter through the sort permutation, a
    # random write per element)
    inverse = _new_tensor(inverse_shape, _I64, flat._device) if return_inverse else None
    counts = _new_tensor((n,), _I64, flat._device) if return_counts else None
    ng = _new("int64_t *")
    if n:
        desc = _new("ptl_tensor[2]")
        _fill(desc[0], flat, flat._shape, flat._stride)
        _fill(desc[1], uvals, uvals._shape, uvals._stride)
        check(lib.ptl_unique_runs(desc, _ptr(perm) if perm is not None else _NULL, desc + 1,
                                  _ptr(inverse) if inverse is not None else _NULL,
                                  _ptr(counts) if counts is not None else _NULL, ng), op)
    g = ng[0]
    from pytorchlite._kernels.copy import clone
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
    empty = _new_tensor((0,), _I64, self._device)
    if m == 0 or _numel(shape) == 0:
        from pytorchlite._kernels.copy import clone
        return _unique_result(clone(self), empty, empty, return_inverse, return_counts)
    rows = F.movedim(self, d, 0).reshape(m, -1)
    cols = rows._shape[1]
    perm = F.arange(m, device=self._device)
    if sort_rows:
        for c in range(cols - 1, -1, -1):
            key = F.index_select(F.select(rows, 1, c), 0, perm)
            perm = F.index_select(perm, 0, argsort(key, 0, False, True))
    srt = F.index_select(rows, 0, perm)
    starts = F.ones(m, dtype=D.bool, device=self._device)
    if m > 1:
        differs = F.any(F.ne(F.narrow(srt, 0, 1, m - 1), F.narrow(srt, 0, 0, m - 1)), 1)
        starts = F.cat([starts.narrow(0, 0, 1), differs]) if hasattr(F, "cat") else \
            _bool_concat(starts.narrow(0, 0, 1), differs)
    group = F.sub(F.cumsum(starts, 0), 1)
    first = F.nonzero(starts).reshape(-1)
    uniq_rows = F.index_select(srt, 0, first)
    out = F.movedim(uniq_rows.reshape((first._shape[0],) + rest), 0, d).contiguous()
    inverse = _new_tensor((m,), _I64, self._device)
    from pytorchlite._kernels.indexing import index_put_
    index_put_(inverse, (perm,), group)
    counts = F.bincount(group, None, first._shape[0])
    return _unique_result(out, inverse, counts, return_inverse, return_counts)


def _bool_concat(a, b):
    out = _new_tensor((a._shape[0] + b._shape[0],), D.bool, a._device)
    copy_into(make(out._storage, a._shape, (1,), 0, D.bool, out._vc), a)
    copy_into(make(out._storage, b._shape, (1,), a._shape[0], D.bool, out._vc), b)
    return out


def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
    # sorted=False is allowed to return any order; PyTorch's CPU kernel returns sorted
    # values here too, and so does this one
    _check_cpu("unique", self)
    if dim is not None:
        return _unique_dim("unique", self, dim, True, return_inverse, return_counts)
    flat = _flat(self)
    values, perm = _sort("unique", flat, 0, False)
    v, inv, cnt = _runs("unique", values, perm, return_inverse, return_counts, self._shape)
    return _unique_result(v, inv, cnt, return_inverse, return_counts)


def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    _check_cpu("unique_consecutive", self)
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


def _search(op, seq, values, out_int32, right, sorter, bucketize=False):
    _check_cpu(op, seq)
    values = _as_tensor(values, seq)
    if values._device != seq._device:
        raise RuntimeError(f"{op}(): Expected all tensors to be on the same device")
    common = D.promote_types(seq._dtype, values._dtype)
    if sorter is not None:
        if sorter._dtype is not _I64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{_CPP[sorter._dtype.name]}")
        if sorter._shape != seq._shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(seq._shape)}and got sorter tensor {list(sorter._shape)}")
    seq_c = _contiguous(to_dtype(seq, common))
    val_c = _contiguous(to_dtype(values, common))
    m = seq._shape[-1]
    if len(seq._shape) == 1:
        seq_rows = 1
        k = val_c._shape[-1] if val_c._shape else 1
        rows = _numel(val_c._shape) // k if k else 0
    else:
        seq_rows = rows = _numel(seq._shape[:-1])
        k = val_c._shape[-1]
    out = _new_tensor(values._shape, D.int32 if out_int32 else _I64, seq._device)
    srt = None
    if sorter is not None:
        srt = _contiguous(sorter)
        if _numel(srt._shape):
            lo, hi = int(F.min(srt).item()), int(F.max(srt).item())
            if lo < 0 or hi >= m:
                raise RuntimeError("torch.searchsorted(): sorter index out of range")
    if _numel(out._shape):
        descs = _new("ptl_tensor[3]")
        _fill(descs[0], seq_c, seq_c._shape, seq_c._stride)
        _fill(descs[1], val_c, val_c._shape, val_c._stride)
        _fill(descs[2], out, out._shape, out._stride)
        check(lib.ptl_searchsorted(descs, descs + 1, _ptr(srt) if srt is not None else _NULL, descs + 2,
                                   rows, seq_rows, m, k, bool(right)), op)
    return out


_CPP = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
        "float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double"}


def searchsorted(sorted_sequence, self, out_int32=False, right=False, side=None, sorter=None):
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
    return _search("searchsorted", seq, self, out_int32, right, sorter)


def bucketize(self, boundaries, out_int32=False, right=False):
    if len(boundaries._shape) != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({len(boundaries._shape)})")
    return _search("bucketize", boundaries, self, out_int32, right, None)


def bincount(self, weights=None, minlength=0):
    _check_cpu("bincount", self)
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if self._dtype.is_floating_point or self._dtype is D.bool:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{_CPP[self._dtype.name]}'")
    if len(self._shape) != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (len(weights._shape) != 1 or weights._shape[0] != self._shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    x = _contiguous(to_dtype(self, _I64))
    n = self._shape[0]
    nbins = minlength
    if n:
        lo, hi = int(F.min(x).item()), int(F.max(x).item())
        if lo < 0:
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        nbins = max(nbins, hi + 1)
    from pytorchlite._kernels.factories import zeros
    if weights is None:
        out = zeros((nbins,), _I64, None, self._device)
        if n:
            check(lib.ptl_bincount(_ptr(x), n, _NULL, _ptr(out, "void *"), nbins), "bincount")
        return out
    w = _contiguous(to_dtype(weights, D.float64))
    out = zeros((nbins,), D.float64, None, self._device)
    if n:
        check(lib.ptl_bincount(_ptr(x), n, _ptr(w, "double *"), _ptr(out, "void *"), nbins), "bincount")
    # float32 weights give float32 counts; every other weight dtype gives float64 (PyTorch)
    return to_dtype(out, weights._dtype) if weights._dtype is D.float32 else out


def histc(self, bins=100, min=0, max=0):
    _check_cpu("histc", self)
    if not self._dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_CPP[self._dtype.name]}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    x = _contiguous(to_dtype(_flat(self), D.float64))
    n = x._shape[0]
    if lo == hi and n:
        lo, hi = F.min(x).item(), F.max(x).item()
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        def fmt(v):
            return "-nan" if math.isnan(v) else (repr(v) if not float(v).is_integer() else str(int(v)) if
                                                 math.isfinite(v) else ("inf" if v > 0 else "-inf"))
        raise RuntimeError(f"torch.histc: range of [{fmt(lo)}, {fmt(hi)}] is not finite")
    from pytorchlite._kernels.factories import zeros
    out = zeros((bins,), D.float64, None, self._device)
    if n:
        check(lib.ptl_histc(_ptr(x, "double *"), n, _ptr(out, "double *"), bins, lo, hi), "histc")
    return to_dtype(out, self._dtype)


def one_hot(self, num_classes=-1):
    _check_cpu("one_hot", self)
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
