"""tensor / as_tensor / from_numpy: building tensors from Python data and NumPy arrays."""

import numbers

import numpy as np

from pytorchlite import _dtype as D
from pytorchlite._device import CPU, device as _device
from pytorchlite._storage import Storage
from pytorchlite._tensor import Tensor, make


def _infer(data, shape, depth, flat, kinds):
    """Walk nested sequences: fill `shape` at first visit of each depth, check every
    other sequence against it, collect scalars in `flat` and their kinds."""
    if isinstance(data, Tensor):
        if data._shape:
            data = data.tolist() if data._dtype is not D.bfloat16 else data.float().tolist()
            kinds.add("t:" + "float" if False else "tensor")
        else:
            kinds.add(data._dtype)
            flat.append(data.item())
            if depth != len(shape):
                raise ValueError(f"expected sequence of length {shape[depth]} at dim {depth} (got 0-d tensor)")
            return
    if isinstance(data, np.ndarray):
        kinds.add(D.from_numpy_dtype(data.dtype) or D.float64)
        data = data.tolist()
    if isinstance(data, (list, tuple)):
        n = len(data)
        if depth == len(shape):
            if flat:
                raise ValueError(f"expected sequence of length ... at dim {depth} (got {n})")
            shape.append(n)
        elif shape[depth] != n:
            raise ValueError(f"expected sequence of length {shape[depth]} at dim {depth} (got {n})")
        for x in data:
            _infer(x, shape, depth + 1, flat, kinds)
        return
    if depth != len(shape):
        raise ValueError(f"expected sequence of length {shape[depth]} at dim {depth} (got {type(data).__name__})")
    if isinstance(data, bool) or isinstance(data, np.bool_):
        kinds.add("bool")
    elif isinstance(data, numbers.Integral):
        kinds.add("int")
    elif isinstance(data, numbers.Real):
        kinds.add("float")
    elif isinstance(data, numbers.Complex):
        raise TypeError("complex tensors are not supported by pytorchlite")
    else:
        raise TypeError(f"Could not infer dtype of {type(data).__name__}")
    flat.append(data)


def _dtype_of(kinds):
    result = None
    for k in kinds:
        if isinstance(k, D.dtype):
            d = k
        else:
            d = {"bool": D.bool, "int": D.int64, "float": D.get_default_dtype()}.get(k)
            if d is None:
                continue
        result = d if result is None else D.promote_types(result, d)
    return result or D.get_default_dtype()


def _from_values(values, shape, dtype, device):
    from pytorchlite._kernels.pointwise import _empty, copy_into
    t = _empty(tuple(shape), dtype, CPU)
    if dtype is D.bfloat16:
        tmp = _empty(tuple(shape), D.float32, CPU)
        tmp._numpy_view()[...] = np.asarray(values, dtype=np.float64).reshape(shape)
        copy_into(t, tmp)
    elif t.numel():
        arr = np.asarray(values)
        if arr.dtype.kind == "f" and dtype.np_dtype.kind in "iub":
            arr = np.trunc(arr)
        t._numpy_view()[...] = arr.reshape(shape).astype(dtype.np_dtype, copy=False) if dtype is not D.bool \
            else (arr.reshape(shape) != 0)
    if device is not None and _device(device) != CPU:
        t = t.to(_device(device))
    return t


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of `data` (nested lists, numbers, NumPy arrays,
    tensors), with PyTorch's dtype inference: bool, int64, or the default float dtype.

    >>> import pytorchlite
    >>> pytorchlite.tensor([[1, 2], [3, 4]]).dtype
    pytorchlite.int64
    """
    if dtype is not None and not isinstance(dtype, D.dtype):
        raise TypeError(f"tensor(): argument 'dtype' must be pytorchlite.dtype, not {type(dtype).__name__}")
    if isinstance(data, Tensor):
        import warnings
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach() "
                      "or sourceTensor.clone().detach().requires_grad_(True), rather than "
                      "pytorchlite.tensor(sourceTensor).", UserWarning, stacklevel=2)
        t = data.detach().to(dtype or data._dtype, device=device or data._device, copy=True)
    elif isinstance(data, np.ndarray):
        src = D.from_numpy_dtype(data.dtype)
        if src is None:
            raise TypeError(f"can't convert np.ndarray of type {data.dtype}. The only supported types are: "
                            "float64, float32, float16, int64, int32, int16, int8, uint8, and bool.")
        t = _from_values(np.ascontiguousarray(data), data.shape, dtype or src, device)
    else:
        shape, flat, kinds = [], [], set()
        if isinstance(data, (str, bytes, dict, set)) or data is None:
            raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
        _infer(data, shape, 0, flat, kinds)
        dt = dtype or _dtype_of(kinds)
        t = _from_values(flat, shape, dt, device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def scalar_tensor(s, dtype=None, device=None, requires_grad=False):
    return tensor(s, dtype=dtype or D.get_default_dtype(), device=device, requires_grad=requires_grad)


def from_numpy(ndarray):
    """A tensor sharing memory with a NumPy array (writes show through both ways).

    >>> import numpy as np, pytorchlite
    >>> a = np.array([1, 2, 3])
    >>> t = pytorchlite.from_numpy(a); t[0] = 10; a[0]
    np.int64(10)
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    dt = D.from_numpy_dtype(ndarray.dtype)
    if dt is None:
        raise TypeError(f"can't convert np.ndarray of type {ndarray.dtype}. The only supported types are: "
                        "float64, float32, float16, int64, int32, int16, int8, uint8, and bool.")
    item = ndarray.itemsize
    if any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                         "strides are not currently supported. (You can probably work around this by making a "
                         "copy of your array  with array.copy().) ")
    if any(s % item for s in ndarray.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. "
                         "Copy the numpy array to reallocate the memory.")
    ptr = ndarray.__array_interface__["data"][0]
    extent = item + sum((n - 1) * s for n, s in zip(ndarray.shape, ndarray.strides)) if ndarray.size else 0
    st = Storage(ptr, extent, CPU, owner=ndarray)
    return make(st, tuple(ndarray.shape), tuple(s // item for s in ndarray.strides), 0, dt)


def as_tensor(data, dtype=None, device=None):
    """Share memory with `data` when it is already a tensor or NumPy array of the wanted
    dtype and device; copy otherwise."""
    if isinstance(data, Tensor):
        return data.to(dtype or data._dtype, device=device or data._device)
    if isinstance(data, np.ndarray) and (device is None or _device(device) == CPU):
        src = D.from_numpy_dtype(data.dtype)
        if src is not None and (dtype is None or dtype is src) and all(s >= 0 for s in data.strides):
            return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)
