"""Indexing: `x[index]` and `x[index] = value` (Tensor.__getitem__ / __setitem__).

Follows PyTorch (torch/csrc/autograd/python_variable_indexing.cpp, ATen's TensorIndexing.h):

* Basic indices -- ints, slices with positive steps, None, Ellipsis -- are applied one by
  one, left to right, as a view: the result shares storage and the version counter.
* Everything else makes the index *advanced*: a Python bool or 0-d bool tensor (a new
  size-1 dim indexed by [0] or []), integer tensors, bool masks (a k-d mask stands for k
  integer tensors: its nonzero coordinates), lists and NumPy arrays (turned into tensors).
  The basic parts are still applied first as views; what is left is a list of tensors,
  one per dim of that view (or None), that pytorchlite/_advanced_indexing.py gathers
  (a copy) or scatters into.
* A 0-d integer tensor counts as an int (a view), as in PyTorch; a non-tuple list that
  holds sequences, slices, None or Ellipsis is read as a tuple (NumPy's old rule, which
  PyTorch keeps, with the same deprecation warning).
"""

import operator
import warnings

import numpy as np

from pytorchlite import _dtype as D
from pytorchlite.autograd.forward_ad import _state as _fws
from pytorchlite._device import CPU as _CPU
from pytorchlite import _core
from pytorchlite._core import TensorBase as Tensor, contiguous_strides, empty as _empty, make, scalar_tensor
from pytorchlite._views import make_view
from pytorchlite.autograd.grad_mode import _state as _grad_state

_MASK_DTYPES = (D.bool, D.uint8)
_INT64 = D.int64
_INDEX_DTYPES = (D.int64, D.int32, D.bool, D.uint8)


def _type_name(obj):
    t = type(obj)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def _sequence_as_tuple(seq):
    if len(seq) >= 32:
        return False
    return any(o is None or o is Ellipsis or isinstance(o, (Tensor, slice, list, tuple, range, np.ndarray))
               for o in seq)


def _as_tuple(index):
    if isinstance(index, tuple):
        return tuple(index)
    if isinstance(index, list) and _sequence_as_tuple(index):
        warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed "
                      "in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be "
                      "interpreted as tensor index, x[torch.tensor(seq)], which will result either in an error or "
                      "a different result", UserWarning, stacklevel=4)
        return tuple(index)
    return (index,)


def _index_tensor(obj):
    """A list / tuple / NumPy array used as an index -> int64 (or bool / uint8) tensor."""
    from pytorchlite._creation import tensor
    arr = obj if isinstance(obj, np.ndarray) else None
    if arr is None and not any(isinstance(o, Tensor) for o in obj):
        try:
            arr = np.asarray(obj)
        except ValueError:      # ragged: let tensor() say what is wrong
            arr = None
    if arr is not None and arr.dtype.kind in "biuf":
        # numbers (the usual x[[0, 2]]): through NumPy, which is much quicker than tensor()
        dt = D.bool if arr.dtype.kind == "b" else D.uint8 if arr.dtype == np.uint8 else D.int64
        t = _empty(arr.shape, dt, _CPU)
        if arr.size:
            t._numpy_view()[...] = np.trunc(arr) if arr.dtype.kind == "f" else arr
        return t
    if isinstance(obj, np.ndarray) and obj.dtype == np.bool_:
        t = tensor(obj, dtype=D.bool)
    else:
        try:
            t = tensor(obj)
        except (TypeError, ValueError) as e:
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             f"valid indices (got {_type_name(obj)}): {e}") from None
    if t._dtype not in _MASK_DTYPES and t._dtype is not D.int64:
        t = t.to(D.int64)   # PyTorch truncates float entries of an index list
    return t


def _is_int_like(obj):
    if isinstance(obj, (bool, np.bool_)):
        return False
    if isinstance(obj, int):
        return True
    if isinstance(obj, Tensor):
        return not obj._shape and obj._dtype not in _MASK_DTYPES and not obj._dtype.is_floating_point
    return isinstance(obj, np.integer)


def _bool_index(value):
    """The index tensor a Python bool stands for, on the size-1 dim it adds: [0] or []
    (on the CPU, where index tensors may live whatever the indexed tensor's device)."""
    from pytorchlite._kernels.factories import fill_
    t = _empty((1 if value else 0,), D.int64, _CPU)
    if value:
        fill_(t, 0)
    return t


def parse(t, index):
    """Apply the basic parts of `index` to t.

    Returns (view, advanced): `view` is t with the ints, slices, None and Ellipsis
    applied; `advanced` is None for a purely basic index, else a list with one entry per
    dim of `view`: None, or the tensor (int64 / int32 / bool mask) that indexes that dim
    (a k-d mask is one entry that covers k dims, as in index_put_'s `indices`).
    """
    ndim = len(t._shape)
    if ndim == 0 and _is_int_like(index) and not isinstance(index, Tensor):
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` "
                         "in C++ to convert a 0-dim tensor to a number")
    items = list(_as_tuple(index))
    # convert sequences to index tensors, and count the dims of t the index names
    # (Ellipsis fills in the rest)
    specified = 0
    for i, obj in enumerate(items):
        tp = type(obj)
        if tp is slice or tp is int:
            specified += 1
            continue
        if obj is None or obj is Ellipsis or tp is bool:
            continue
        if isinstance(obj, (str, bytes)):
            # PyTorch tries to build an index tensor from it, and fails there
            raise TypeError(f"invalid data type '{type(obj).__name__}' for an index")
        if isinstance(obj, (list, tuple, range, np.ndarray)):
            items[i] = obj = _index_tensor(obj)
        if isinstance(obj, Tensor) and obj._dtype in _MASK_DTYPES:
            specified += len(obj._shape)
        else:
            specified += 1
    if specified > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")

    shape, stride = list(t._shape), list(t._stride)
    offset = t._offset
    dim = 0                     # the dim of the result being built that the next item indexes
    advanced = {}               # result dim -> index tensor
    for real_dim, obj in enumerate(items):
        if type(obj) is int:                    # the commonest item first
            size = shape[dim]
            if obj < -size or obj >= size:
                raise IndexError(f"index {obj} is out of bounds for dimension {real_dim} with size {size}")
            offset += (obj + size if obj < 0 else obj) * stride[dim]
            del shape[dim], stride[dim]
        elif obj is None:
            stride.insert(dim, 1 if dim >= len(shape) else shape[dim] * stride[dim])
            shape.insert(dim, 1)
            dim += 1
        elif obj is Ellipsis:
            dim += ndim - specified
        elif isinstance(obj, slice):
            step = 1 if obj.step is None else operator.index(obj.step)
            if step == 0:
                raise ValueError("slice step cannot be zero")
            if step < 0:
                raise ValueError("step must be greater than zero")
            size = shape[dim]
            start, stop, _ = slice(obj.start, obj.stop, 1).indices(size)
            stop = max(stop, start)
            # a step beyond the size picks one element; keeping it small keeps strides in int64
            step = min(step, max(size, 1))
            offset += start * stride[dim]
            shape[dim] = (stop - start + step - 1) // step
            stride[dim] *= step
            dim += 1
        elif isinstance(obj, bool) or (isinstance(obj, Tensor) and not obj._shape and obj._dtype in _MASK_DTYPES):
            # a new size-1 dim, indexed by [0] (True) or [] (False): the result is a copy
            stride.insert(dim, 1 if dim >= len(shape) else shape[dim] * stride[dim])
            shape.insert(dim, 1)
            advanced[dim] = _bool_index(bool(obj.item() if isinstance(obj, Tensor) else obj))
            dim += 1
        elif _is_int_like(obj):
            k = int(obj.item()) if isinstance(obj, Tensor) else operator.index(obj)
            size = shape[dim]
            if k < -size or k >= size:
                raise IndexError(f"index {k} is out of bounds for dimension {real_dim} with size {size}")
            offset += (k + size if k < 0 else k) * stride[dim]
            del shape[dim], stride[dim]
        elif isinstance(obj, Tensor):
            if obj._dtype not in _INDEX_DTYPES:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            if obj._dtype is D.uint8:
                warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool "
                              "instead.", UserWarning, stacklevel=3)
                obj = obj.to(D.bool)
            advanced[dim] = obj
            dim += len(obj._shape) if obj._dtype is D.bool else 1
        else:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             f"valid indices (got {_type_name(obj)})")
    view = make_view(t, tuple(shape), tuple(stride), offset)
    if not advanced:
        return view, None
    # one entry per dim, except that a k-d mask is one entry for its k dims (as in index_put_)
    entries = []
    d = 0
    while d < len(shape):
        ix = advanced.get(d)
        entries.append(ix)
        d += len(ix._shape) if ix is not None and ix._dtype is D.bool and ix._shape else 1
    return view, entries


def getitem(t, index):
    if _fws.on and t._fw is not None:
        return _forward_ad_getitem(t, index)
    if type(index) is _core.Tensor and index._dtype is _INT64 and index._shape and not (
            t._requires_grad and _grad_state.grad):
        # x[i] with an int64 tensor: nothing basic to apply, straight to the gather
        from pytorchlite import _advanced_indexing
        return _advanced_indexing.index(t, [index])
    view, advanced = parse(t, index)
    if t._requires_grad and _grad_state.grad:
        # autograd: the view's gradient goes back into t's shape, an advanced index's
        # gradient is added back at the gathered positions (pytorchlite/autograd/_views.py)
        from pytorchlite.autograd import _views as _ag_views
        view = _ag_views.record_index(t, view, _view_geometry(t, view, index), _index_kind(index))
        return view if advanced is None else _ag_views.index_gather(view, advanced)
    if advanced is None:
        return view
    from pytorchlite import _advanced_indexing
    return _advanced_indexing.index(view, advanced)


def _view_geometry(t, view, index):
    """The view's (shape, stride, offset) inside a contiguous tensor of t's shape."""
    if t.is_contiguous():
        return view._shape, view._stride, view._offset - t._offset
    # replay the index on t's shape laid out contiguously (geometry only: no memory is read)
    dummy = make(t._storage, t._shape, contiguous_strides(t._shape), 0, t._dtype)
    v, _ = parse(dummy, index)
    return v._shape, v._stride, v._offset


def _index_kind(index):
    """PyTorch's name for the view node of a one-item index (SelectBackward0, ...)."""
    if isinstance(index, slice):
        return "slice"
    if index is None:
        return "unsqueeze"
    if index is Ellipsis:
        return "alias"
    if _is_int_like(index):
        return "select"
    return "as_strided"


def _torch_type(t):
    from pytorchlite._kernels.views import _torch_type_name
    return "pytorchlite." + _torch_type_name(t)


def value_tensor(t, value):
    """The Tensor a __setitem__ value stands for: tensors as they are, numbers as 0-d
    tensors of t's dtype; anything else is PyTorch's TypeError."""
    if isinstance(value, Tensor):
        return value
    # Python numbers and NumPy integers (float64 is a float); NumPy's other floats and
    # bools are refused, as PyTorch refuses them
    if isinstance(value, (bool, int, float, np.integer)):
        # made on the CPU (the fill kernel is a CPU one); a 0-d CPU value may be copied
        # into a tensor on any device
        return scalar_tensor(value.item() if isinstance(value, np.generic) else value, t._dtype, _CPU)
    raise TypeError(f"can't assign a {_type_name(value)} to a {_torch_type(t)}")


def strip_leading_ones(v):
    """value.view(sizes without leading 1s): PyTorch lets x[...] = v have extra size-1 dims."""
    n = 0
    while n < len(v._shape) and v._shape[n] == 1:
        n += 1
    if n == 0:
        return v
    return make_view(v, v._shape[n:], v._stride[n:], v._offset)


def _forward_ad_getitem(t, index):
    """t[index] for a dual t: the tangent is the same index of t's tangent."""
    from pytorchlite.autograd import forward_ad
    _fws.on = False
    try:
        out = getitem(t, index)
        tangent = getitem(t._fw, index)
    finally:
        _fws.on = True
    return forward_ad.attach(out, tangent)


def _forward_ad_setitem(t, index, value):
    """t[index] = value with a dual t or value: the same assignment on t's tangent (a zero
    tangent made for t if it has none, zeros written where the value has none)."""
    from pytorchlite.autograd import forward_ad
    _fws.on = False
    try:
        setitem(t, index, value)
        if t._dtype.is_floating_point:
            tangent = t._fw
            if tangent is None:
                tangent = forward_ad.zeros_for(t).contiguous()
            v_t = value._fw if isinstance(value, Tensor) and value._fw is not None else 0
            setitem(tangent, index, v_t)
    finally:
        _fws.on = True
    if t._dtype.is_floating_point and t._fw is None:
        forward_ad.attach(t, tangent)


def setitem(t, index, value):
    if _fws.on and (t._fw is not None or (isinstance(value, Tensor) and value._fw is not None)):
        return _forward_ad_setitem(t, index, value)
    if index is False:
        # PyTorch's shortcut: nothing is written (and the version stays), but the value
        # must still be one it can assign
        value_tensor(t, value)
        return
    view, advanced = parse(t, index)
    if _grad_state.grad and (t._requires_grad or (isinstance(value, Tensor) and value._requires_grad)):
        return _setitem_autograd(t, index, view, advanced, value)
    if advanced is None and isinstance(value, (bool, int, float)) and view._device.type == "cpu":
        view.fill_(value)
        return
    value = value_tensor(t, value)
    if advanced is not None:
        from pytorchlite import _advanced_indexing
        _advanced_indexing.index_put_(view, advanced, strip_leading_ones(value), False)
        return
    # basic: copy into the view (shared storage: the write lands in t); the value may
    # have extra leading 1s and must expand to the view's shape (PyTorch's copy_to)
    if value._shape == view._shape:
        view.copy_(value)
        return
    if not value._shape and value._device.type == "cpu":
        view.copy_(value)
        return
    from pytorchlite._kernels.views import expand
    view.copy_(expand(strip_leading_ones(value), view._shape))


def _setitem_autograd(t, index, view, advanced, value):
    """x[index] = value when x or value requires grad: the write is recorded like an
    in-place operation on a view of x (x's history goes through CopySlices)."""
    from pytorchlite.autograd import _views as _ag_views
    if t._requires_grad:
        view = _ag_views.record_index(t, view, _view_geometry(t, view, index), _index_kind(index))
    value = value_tensor(t, value)
    if advanced is not None:
        _ag_views.index_put_(view, advanced, value, strip_leading_ones(value)._shape)
        return
    stripped = strip_leading_ones(value)._shape
    view.copy_(value.reshape(stripped) if stripped != value._shape else value)
