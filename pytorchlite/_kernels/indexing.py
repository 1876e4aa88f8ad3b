"""Kernel entries for the indexing operators: index_select, masked_fill(_), masked_select,
nonzero, index_put(_). The gathers and scatters are those of x[idx] / x[idx] = v
(pytorchlite/_advanced_indexing.py, kernels/index.c)."""

from pytorchlite import _advanced_indexing as A
from pytorchlite import _dtype as D
from pytorchlite._argparse import wrap_dim
from pytorchlite._C import check, lib
from pytorchlite._core import descriptors as _descs, empty as _empty, scalar_pair as _scalar_arg, broadcast_shapes, copy_into
from pytorchlite._core import TensorBase as Tensor, make, numel as _numel, to_dtype
from pytorchlite._views import make_view

# PyTorch's C++ type names, which its mask messages print
_CPP_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int",
              "int32": "int", "int64": "long int", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
              "float32": "float", "float64": "double"}


def _expanded(t, shape):
    from pytorchlite._kernels.views import expand
    return t if t._shape == shape else expand(t, shape)


def index_select(self, dim, index):
    if index._dtype not in (D.int64, D.int32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if len(index._shape) > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    nd = len(self._shape)
    d = wrap_dim("index_select", dim, nd)
    idx = index if index._shape else make_view(index, (1,), (1,), index._offset)
    src = self if nd else make_view(self, (1,), (1,), self._offset)
    if nd and self._shape[d] == 0 and _numel(idx._shape):
        # nothing to select from, even when the output would be empty anyway (PyTorch's check)
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    if not nd and _numel(idx._shape) != 1:
        raise IndexError(f"index_select(): Index to scalar can have only 1 value, got {_numel(idx._shape)} value(s)")
    if _numel(idx._shape) and idx._numpy_view().min() < 0:
        # unlike indexing with [], index_select does not count from the end
        raise IndexError("index out of range in self")
    out = A.gather(src, d, [to_dtype(idx, D.int64)], idx._shape,
                   error=lambda value, k, size: IndexError("index out of range in self"))
    if not nd:
        return make(out._storage, (), (), out._offset, out._dtype, out._vc, True)
    return out


def _check_mask(op, mask):
    if mask._dtype is not D.bool:
        raise RuntimeError(f"{op} only supports boolean masks, but got mask with dtype {_CPP_NAMES[mask._dtype.name]}")


def _fill_value(value):
    if isinstance(value, Tensor):
        if value._shape:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{len(value._shape)} dimension(s).")
        return value.item()
    return value


def _masked_fill_into(self, mask, value):
    """self[mask] = value for a bool mask already viewed at self's shape."""
    if not _numel(self._shape):
        return
    d, i = _scalar_arg(value)
    check(lib.ptl_masked_fill(_descs((self, mask), self._shape), d, i), "masked_fill_")


def masked_fill_(self, mask, value):
    _check_mask("masked_fill_", mask)
    value = _fill_value(value)
    shape = broadcast_shapes("masked_fill_", [self._shape, mask._shape])
    if shape != self._shape:
        raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the broadcast shape {list(shape)}")
    _masked_fill_into(self, _expanded(mask, shape), value)
    self._vc[0] += 1
    return self


def masked_fill(self, mask, value):
    _check_mask("masked_fill_", mask)
    value = _fill_value(value)
    shape = broadcast_shapes("masked_fill", [mask._shape, self._shape])   # PyTorch's order, for its message
    out = _empty(shape, self._dtype, self._device)
    copy_into(out, self)
    _masked_fill_into(out, _expanded(mask, shape), value)
    return out


def masked_select(self, mask):
    if mask._dtype is not D.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = broadcast_shapes("masked_select", [self._shape, mask._shape])
    src, m = _expanded(self, shape), _expanded(mask, shape)
    if not shape:
        src = make_view(src, (1,), (1,), src._offset)
        m = make_view(m, (1,), (1,), m._offset)
    return A.index(src, [m])


def nonzero(self):
    return A.nonzero_coords(self)


def index_put_(self, indices, values, accumulate=False):
    return A.index_put_(self, list(indices), values, accumulate)


def index_put(self, indices, values, accumulate=False):
    from pytorchlite._kernels.copy import clone
    return A.index_put_(clone(self), list(indices), values, accumulate)
