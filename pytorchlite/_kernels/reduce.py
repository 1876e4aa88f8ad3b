"""Kernel entries for reductions: sum, prod, mean, nansum, nanmean, amax/amin, max/min
(values and indices), argmax/argmin, aminmax, var/std (+ var_mean/std_mean), all/any,
count_nonzero, logsumexp and norm.

Each entry does what PyTorch decides before its kernel runs: which dims are reduced
(wrapped, checked for repeats; `None` and `()` mean all of them), the result dtype
(integer and bool sums give int64, mean refuses integers, `dtype=` casts the input
first), and the errors for reductions that have no identity on empty input. It then
allocates the result and calls the single C entry `ptl_reduce` (kernels/reduce.c) with
the output described in its keepdim shape; the C side orders and merges dims, picks the
row or column loop and spreads the work over the threads.
"""

import warnings

from pytorchlite import _backends, _dtype as D
from pytorchlite._argparse import wrap_dim
from pytorchlite._C import MAX_DIMS, check, ffi, lib, new_descriptors as _new_descs
from pytorchlite._core import check_ndim, copy_into, empty as _empty, to_dtype
from pytorchlite._storage import Storage
from pytorchlite._device import CPU as _CPU
from pytorchlite._core import contiguous_strides, make, numel as _numel
from pytorchlite import return_types
# operation codes of ptl_reduce: ops.yaml's `- reduction:` entries (generated/reductions.py)
from pytorchlite.generated.reductions import (R_ALL, R_AMAX, R_AMIN, R_ANY, R_ARGMAX, R_ARGMIN, R_COUNT_NONZERO,
                                              R_LOGSUMEXP, R_MAX, R_MEAN, R_MIN, R_NANMEAN, R_NANSUM, R_NORM,
                                              R_PROD, R_STD, R_SUM, R_VAR)


_I64 = D.int64
_BOOL = D.bool
_NULL = ffi.NULL
_new = ffi.new
_cast = ffi.cast
_set_desc = lib.ptl_set_desc
_reduce_contig = getattr(lib, "ptl_reduce_contiguous", None)   # kernels/overhead.c


# --- shared pieces ------------------------------------------------------------------------

def _dims(op, x, dim, empty_means_all=True):
    """The reduced dims as a sorted tuple. `None` (and, for most ops, `()`) means every dim."""
    nd = len(x._shape)
    if dim is None:
        return tuple(range(nd))
    if isinstance(dim, int):
        dim = (dim,)
    if not dim:
        return tuple(range(nd)) if empty_means_all else ()
    seen = []
    for d in dim:
        w = wrap_dim(op, d, nd)
        if w in seen:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        seen.append(w)
    if nd == 0:           # a 0-d tensor accepts dim 0 / -1 and has nothing to reduce
        return ()
    return tuple(sorted(seen))


def _fill(d, t, shape, stride):
    """Describe tensor t viewed at (shape, stride) in the C descriptor d."""
    d.data = _cast("void *", t._storage.ptr + t._offset * t._dtype.itemsize)
    d.dtype = t._dtype.code
    n = d.ndim = len(shape)
    if n:
        d.sizes[0:n] = shape
        d.strides[0:n] = stride


def _new_tensor(shape, dtype, device):
    return _empty(shape, dtype, device)


def _squeezed(x):
    """x without its size-1 dims (a view): what a full reduction of a tensor of more than
    MAX_DIMS dims reduces (at most 63 dims are larger than 1 when the element count fits
    int64; with a size-0 dim, one dim of size 0)."""
    if 0 in x._shape:
        return make(x._storage, (0,), (1,), x._offset, x._dtype, None, True)
    keep = [d for d, n in enumerate(x._shape) if n != 1]
    return make(x._storage, tuple(x._shape[d] for d in keep), tuple(x._stride[d] for d in keep), x._offset,
                x._dtype, None, None)


def _launch(code, op, x, dims, keepdim, out_dtype, arg=0.0, aux_dtype=None, aux_in=None):
    """Run ptl_reduce; returns the result (and the aux output when aux_dtype is given)."""
    shape = x._shape
    nd = len(shape)
    if x._device is not _CPU:
        # another device runs the same declaration through its backend (the device
        # registry: core code never imports a backend)
        return _backends.get(x._device.type).reduce(code, op, x, dims, keepdim, out_dtype, arg, aux_dtype, aux_in)
    if nd > MAX_DIMS:
        # PyTorch reduces every dim of such a tensor (dim=None) but keeps an explicit
        # dim list, and keepdim's, in a 64-bit mask and refuses it
        if len(dims) != nd or keepdim or aux_in is not None:
            check_ndim(op, nd)
        xs = _squeezed(x)
        return _launch(code, op, xs, tuple(range(len(xs._shape))), False, out_dtype, arg, aux_dtype)
    if len(dims) == nd:     # every dim reduced (the common `x.sum()`): no per-dim work
        kshape = kstride = (1,) * nd
        fshape = kshape if keepdim else ()
        if aux_dtype is None and aux_in is None and (x._contig or x.is_contiguous()) and _reduce_contig is not None:
            # a contiguous input: one C call that builds the descriptors itself
            out = make(Storage.allocate(out_dtype.itemsize, _CPU), fshape, fshape, 0, out_dtype, None, True)
            check(_reduce_contig(code, x._storage.ptr + x._offset * x._dtype.itemsize, x._dtype.code,
                                 _numel(shape), out._storage.ptr, out_dtype.code, float(arg)), op)
            return out
    else:
        kshape = tuple(1 if d in dims else s for d, s in enumerate(shape))
        fshape = kshape if keepdim else tuple(s for d, s in enumerate(shape) if d not in dims)
        kstride = contiguous_strides(kshape)
    out = _empty(fshape, out_dtype, _CPU)
    aux = aux_in
    if aux_dtype is not None:
        aux = _new_tensor(fshape, aux_dtype, x._device)
    descs = _new_descs("ptl_tensor[3]")   # one allocation for input, output and aux
    # one C call per descriptor (ptl_set_desc) instead of a cffi write per field
    _set_desc(descs, 0, x._storage.ptr + x._offset * x._dtype.itemsize, x._dtype.code, nd, shape, x._stride)
    _set_desc(descs, 1, out._storage.ptr, out_dtype.code, nd, kshape, kstride)
    if aux is not None:
        _set_desc(descs, 2, aux._storage.ptr + aux._offset * aux._dtype.itemsize, aux._dtype.code, nd, kshape,
                  kstride)
    check(lib.ptl_reduce(code, descs, descs + 1, descs + 2 if aux is not None else _NULL, float(arg)), op)
    if aux_dtype is not None:
        return out, aux
    return out


def _sum_dtype(x, dtype):
    """PyTorch: integer and bool sums and products are int64 unless dtype= says otherwise;
    with dtype= the input is converted first."""
    if dtype is not None:
        return to_dtype(x, dtype), dtype
    if x._dtype.is_floating_point:
        return x, x._dtype
    return x, _I64


def _float_dtype_for(op, x, dtype):
    """mean/nanmean: the computation dtype, which must be floating."""
    if dtype is not None:
        if not dtype.is_floating_point:
            raise RuntimeError(f"{op}(): could not infer output dtype. Optional dtype must be either a floating "
                               f"point or complex dtype. Got: {dtype._torch_name}")
        return to_dtype(x, dtype)
    if not x._dtype.is_floating_point:
        raise RuntimeError(f"{op}(): could not infer output dtype. Input dtype must be either a floating point "
                           f"or complex dtype. Got: {x._dtype._torch_name}")
    return x


def _check_nonempty(op, x, dims, full, short=False, given=None):
    """max-like reductions have no identity: refuse empty slices with PyTorch's messages
    (amax/amin name the dim as the caller spelled it, the others wrapped)."""
    if _numel(x._shape) == 0 and full:
        tail = "" if short else " Specify the reduction dim with the 'dim' argument."
        exc = IndexError if short else RuntimeError
        raise exc(f"{op}(): Expected reduction dim to be specified for input.numel() == 0.{tail}")
    nd = len(x._shape)
    for d in (given if given is not None else dims):
        if nd and x._shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


def _flat(x):
    """x as a contiguous 1-D tensor (flattened in logical order), for dim=None indices."""
    if not x.is_contiguous():
        y = _new_tensor(x._shape, x._dtype, x._device)
        copy_into(y, x)
        x = y
    return make(x._storage, (_numel(x._shape),), (1,), x._offset, x._dtype, x._vc)


# --- sums, products, means ------------------------------------------------------------------

def sum(self, dim=None, keepdim=False, dtype=None):
    x, odt = _sum_dtype(self, dtype)
    return _launch(R_SUM, "sum", x, _dims("sum", x, dim), keepdim, odt)


def nansum(self, dim=None, keepdim=False, dtype=None):
    x, odt = _sum_dtype(self, dtype)
    return _launch(R_NANSUM, "nansum", x, _dims("nansum", x, dim), keepdim, odt)


def prod(self, dim=None, keepdim=False, dtype=None):
    x, odt = _sum_dtype(self, dtype)
    dims = _dims("prod", x, None if dim is None else (dim,))
    return _launch(R_PROD, "prod", x, dims, keepdim, odt)


def mean(self, dim=None, keepdim=False, dtype=None):
    x = _float_dtype_for("mean", self, dtype)
    return _launch(R_MEAN, "mean", x, _dims("mean", x, dim), keepdim, x._dtype)


def nanmean(self, dim=None, keepdim=False, dtype=None):
    if not self._dtype.is_floating_point:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype but got "
                           f"{self._dtype._torch_name}")
    x = _float_dtype_for("nanmean", self, dtype)
    return _launch(R_NANMEAN, "nanmean", x, _dims("nanmean", x, dim), keepdim, x._dtype)


# --- extremes -----------------------------------------------------------------------------------

def amax(self, dim=(), keepdim=False):
    dims = _dims("amax", self, dim)
    _check_nonempty("amax", self, dims, not dim, given=dim)
    return _launch(R_AMAX, "amax", self, dims, keepdim, self._dtype)


def amin(self, dim=(), keepdim=False):
    dims = _dims("amin", self, dim)
    _check_nonempty("amin", self, dims, not dim, given=dim)
    return _launch(R_AMIN, "amin", self, dims, keepdim, self._dtype)


def _extreme_all(op, code, self):
    dims = tuple(range(len(self._shape)))
    _check_nonempty(op, self, dims, True)
    return _launch(code, op, self, dims, False, self._dtype)


def _extreme_dim(op, code, result, self, dim, keepdim):
    dims = _dims(op, self, (dim,))
    _check_nonempty(op, self, dims, False)
    values, indices = _launch(code, op, self, dims, keepdim, self._dtype, aux_dtype=_I64)
    return result(values, indices)


def max_all(self):
    return _extreme_all("max", R_AMAX, self)


def max_dim(self, dim, keepdim=False):
    return _extreme_dim("max", R_MAX, return_types.max, self, dim, keepdim)


def min_all(self):
    return _extreme_all("min", R_AMIN, self)


def min_dim(self, dim, keepdim=False):
    return _extreme_dim("min", R_MIN, return_types.min, self, dim, keepdim)


def _arg(op, code, self, dim, keepdim):
    if self._dtype is _BOOL:
        raise RuntimeError(f"{op}(): does not support bool input")
    if dim is None:
        _check_nonempty(op, self, (), True, short=True)
        flat = _flat(self)
        out = _launch(code, op, flat, (0,), False, _I64)
        if keepdim:
            out = make(out._storage, (1,) * len(self._shape), (1,) * len(self._shape), 0, _I64, out._vc)
        return out
    dims = _dims(op, self, (dim,))
    _check_nonempty(op, self, dims, False)
    return _launch(code, op, self, dims, keepdim, _I64)


def argmax(self, dim=None, keepdim=False):
    return _arg("argmax", R_ARGMAX, self, dim, keepdim)


def argmin(self, dim=None, keepdim=False):
    return _arg("argmin", R_ARGMIN, self, dim, keepdim)


def aminmax(self, dim=None, keepdim=False):
    if dim is None:
        if _numel(self._shape) == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation "
                               "has no identity.")
        dims = tuple(range(len(self._shape)))
    else:
        dims = _dims("aminmax", self, (dim,))
        for d in dims:
            if self._shape[d] == 0:
                raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    lo = _launch(R_AMIN, "aminmax", self, dims, keepdim, self._dtype)
    hi = _launch(R_AMAX, "aminmax", self, dims, keepdim, self._dtype)
    return return_types.aminmax(lo, hi)


# --- variance -------------------------------------------------------------------------------------

def _correction(op, unbiased, correction):
    if correction is not None and unbiased is not None:
        raise TypeError(f"{op}(): pass either 'unbiased' or 'correction', not both")
    if correction is not None:
        return float(correction)
    return 0.0 if unbiased is False else 1.0


def _var(op, code, self, dim, unbiased, keepdim, correction, with_mean):
    if not self._dtype.is_floating_point:
        what = op if with_mean else "std and var"
        raise RuntimeError(f"{what} only support floating point and complex dtypes")
    corr = _correction(op, unbiased, correction)
    dims = _dims(op, self, dim)
    n = 1
    for d in dims:
        n *= self._shape[d]
    if n - corr <= 0 and _numel(self._shape) != 0:
        warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly less than the "
                      "reduction factor (input numel divided by output numel).", UserWarning, stacklevel=4)
    if with_mean:
        return _launch(code, op, self, dims, keepdim, self._dtype, corr, aux_dtype=self._dtype)
    return _launch(code, op, self, dims, keepdim, self._dtype, corr)


def var(self, dim=None, unbiased=None, keepdim=False, correction=None):
    return _var("var", R_VAR, self, dim, unbiased, keepdim, correction, False)


def std(self, dim=None, unbiased=None, keepdim=False, correction=None):
    return _var("std", R_STD, self, dim, unbiased, keepdim, correction, False)


def var_mean(self, dim=None, unbiased=None, keepdim=False, correction=None):
    return _var("var_mean", R_VAR, self, dim, unbiased, keepdim, correction, True)


def std_mean(self, dim=None, unbiased=None, keepdim=False, correction=None):
    return _var("std_mean", R_STD, self, dim, unbiased, keepdim, correction, True)


# --- logical and counting ---------------------------------------------------------------------------

def all(self, dim=None, keepdim=False):
    # all(dim=()) reduces nothing (each element is tested on its own), as in PyTorch
    odt = D.uint8 if self._dtype is D.uint8 else _BOOL
    check_ndim("all", len(self._shape))    # PyTorch keeps even dim=None in its 64-bit mask here
    return _launch(R_ALL, "all", self, _dims("all", self, dim, empty_means_all=False), keepdim, odt)


def any(self, dim=None, keepdim=False):
    odt = D.uint8 if self._dtype is D.uint8 else _BOOL
    check_ndim("any", len(self._shape))    # PyTorch keeps even dim=None in its 64-bit mask here
    return _launch(R_ANY, "any", self, _dims("any", self, dim, empty_means_all=False), keepdim, odt)


def count_nonzero(self, dim=None):
    return _launch(R_COUNT_NONZERO, "count_nonzero", self, _dims("count_nonzero", self, dim), False, _I64)


# --- logsumexp and norms --------------------------------------------------------------------------

def logsumexp(self, dim, keepdim=False):
    x = self if self._dtype.is_floating_point else to_dtype(self, D.get_default_dtype())
    dims = _dims("logsumexp", x, dim)
    n = 1
    for d in dims:
        n *= x._shape[d]
    shift = None
    if n > 0:
        # the max of each slice, subtracted before exp so that nothing overflows
        shift = _launch(R_AMAX, "logsumexp", x, dims, True, x._dtype)
    return _launch(R_LOGSUMEXP, "logsumexp", x, dims, keepdim, x._dtype, aux_in=shift)


def norm(self, p=2, dim=None, keepdim=False, dtype=None):
    if not self._dtype.is_floating_point:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{self._dtype._torch_name}")
    x = self
    if dtype is not None:
        if not dtype.is_floating_point:
            raise RuntimeError(f"linalg.vector_norm: dtype should be floating point or complex, but got "
                               f"{dtype._torch_name}")
        if D.promote_types(x._dtype, dtype) is not dtype:
            raise RuntimeError(f"linalg.vector_norm: the dtype of the input ({x._dtype._torch_name}) should be "
                               f"convertible without narrowing to the specified dtype ({dtype._torch_name})")
        x = to_dtype(x, dtype)
    p = 2.0 if p is None else float(p)
    dims = _dims("norm", x, dim)
    if p in (float("inf"), float("-inf")):
        name = "inf" if p > 0 else "-inf"
        if _numel(x._shape) == 0 and (dim is None or not dim):
            raise RuntimeError(f"linalg.vector_norm cannot compute the {name} norm on an empty tensor because "
                               "the operation does not have an identity")
        for d in ((dim,) if isinstance(dim, int) else (dim or ())):
            if x._shape and x._shape[d] == 0:      # (a 0-d tensor has one element)
                raise RuntimeError(f"linalg.vector_norm cannot compute the {name} norm on the dimension {d}"
                                   "because this dimension is empty and the operation does not have an identity")
    return _launch(R_NORM, "norm", x, dims, keepdim, x._dtype, p)
