"""tensor / as_tensor / from_numpy: building tensors from Python data and NumPy arrays."""

import numbers
from collections.abc import Sequence

import numpy as np

from pytorchlite import _dtype as D
from pytorchlite._device import CPU, device as _device
from pytorchlite._storage import Storage
from pytorchlite._core import TensorBase as Tensor, copy_into, empty as _empty, make


def _unsupported_numpy(npdt):
    return (f"can't convert np.ndarray of type numpy.{npdt.type.__name__}. The only supported types are: "
            "float64, float32, float16, int64, int32, int16, int8, uint8, and bool.")


_NON_NATIVE = ("given numpy array has byte order different from the native byte order. "
               "Conversion between byte orders is currently not supported.")
_MAX_DIMS = 128     # PyTorch's limit on the nesting of the data given to tensor()


def _check_nesting(data):
    """PyTorch sizes nested data along first elements before reading it: more than
    _MAX_DIMS levels (a list that holds itself first, say) is a ValueError, not a
    RecursionError."""
    depth = 0
    seq = data
    while isinstance(seq, (list, tuple)):
        depth += 1
        if depth > _MAX_DIMS:
            raise ValueError(f"too many dimensions '{type(seq).__name__}'")
        if not seq:
            return
        seq = seq[0]


def _enter(shape, depth, n):
    """Record (first visit) or check the length `n` of a sequence met at `depth`."""
    if depth == len(shape):
        shape.append(n)
    elif shape[depth] != n:
        raise ValueError(f"expected sequence of length {shape[depth]} at dim {depth} (got {n})")


def _infer(data, shape, depth, flat, kinds, active=None):
    """Walk nested sequences: fill `shape` at the first visit of each depth, check every
    other sequence against it, collect the scalars in `flat` and their kinds (a dtype for
    values that carry one: NumPy arrays and scalars, tensors; else 'bool'/'int'/'float').
    `active` holds the ids of the sequences being walked: one met again is a cycle."""
    if isinstance(data, (Tensor, np.ndarray)):
        if isinstance(data, Tensor):
            dt = data._dtype
            values = data.detach().float() if dt is D.bfloat16 else data.detach()
            values = values._values_f64()
        else:
            # an array inside a list is read value by value, so its byte order does not
            # matter (PyTorch refuses a non-native array only when given it directly)
            dt = D.from_numpy_dtype(data.dtype if data.dtype.isnative else data.dtype.newbyteorder("="))
            if dt is None:
                raise TypeError(_unsupported_numpy(data.dtype))
            values = data
        if depth < len(shape) and (len(shape) - depth != values.ndim or
                                   tuple(shape[depth:]) != tuple(values.shape)):
            got = values.shape[0] if values.ndim else type(data).__name__ + " of 0 dims"
            raise ValueError(f"expected sequence of length {shape[depth]} at dim {depth} (got {got})")
        if depth == len(shape):
            if flat and values.ndim:
                raise ValueError(f"expected a number at dim {depth} (got a sequence of length {values.shape[0]})")
            shape.extend(values.shape)
        kinds.add(dt)
        flat.extend(np.asarray(values).ravel().tolist())
        return
    if isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    if isinstance(data, (list, tuple, range)) or (isinstance(data, Sequence) and not isinstance(data, np.generic)):
        if active is None:
            active = set()
        elif id(data) in active:
            # a list that contains itself (directly or deeper): PyTorch's TypeError, and
            # never a RecursionError
            raise TypeError("new(): self-referential lists are incompatible")
        n = len(data)
        if depth == len(shape) and flat:
            # numbers were already found at this depth: the nesting is ragged
            raise ValueError(f"expected a number at dim {depth} (got a sequence of length {n})")
        _enter(shape, depth, n)
        active.add(id(data))
        for x in data:
            _infer(x, shape, depth + 1, flat, kinds, active)
        active.discard(id(data))
        return
    if depth != len(shape):
        raise ValueError(f"expected sequence of length {shape[depth]} at dim {depth} (got {type(data).__name__})")
    if isinstance(data, np.generic):
        # NumPy scalars carry their dtype, as in PyTorch: np.float64(1.5) gives float64
        dt = D.from_numpy_dtype(data.dtype)
        if dt is None:
            raise TypeError(f"can't convert np.{type(data).__name__} scalars: unsupported dtype {data.dtype}")
        kinds.add(dt)
        flat.append(data.item())
        return
    if isinstance(data, bool):
        kinds.add("bool")
    elif isinstance(data, numbers.Integral):
        kinds.add("int")
    elif isinstance(data, numbers.Real):
        kinds.add("float")
    elif isinstance(data, numbers.Complex):
        raise TypeError("complex tensors are not supported by pytorchlite")
    else:
        raise RuntimeError(f"Could not infer dtype of {type(data).__name__}")
    flat.append(data)


def _dtype_of(kinds):
    result = None
    for k in kinds:
        if isinstance(k, D.dtype):
            d = k
        else:
            d = {"bool": D.bool, "int": D.int64, "float": D.get_default_dtype()}[k]
        result = d if result is None else D.promote_types(result, d)
    return result or D.get_default_dtype()


_INT64_MAX = 2**63 - 1


def _check_range(arr, dtype):
    """PyTorch's checks when Python numbers are stored in an integer dtype: every int must
    fit int64, and the value must fit the dtype (negative ints may wrap into unsigned
    types, as in two's complement; floats may not)."""
    if dtype is D.bool or dtype.is_floating_point or arr.size == 0:
        return
    if arr.dtype == object or (arr.dtype.kind == "u" and arr.max() > _INT64_MAX):
        raise ValueError("Overflow when unpacking long long")
    info = np.iinfo(dtype.np_dtype)
    if arr.dtype.kind == "f":
        bad = np.isnan(arr) | (arr < info.min) | (arr > info.max)
    elif arr.dtype.kind in "iu":
        bad = (arr < (-info.max if info.min == 0 else info.min)) | (arr > info.max)
    else:
        return
    if bad.any():
        raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")


def _from_values(values, shape, dtype, device, checked=False):
    """A new tensor of `shape` and `dtype` holding `values` (a flat list or an array).
    checked: values are Python numbers, validated against the dtype as PyTorch does."""
    shape = tuple(shape)
    t = _empty(shape, dtype, CPU)
    if t.numel():
        arr = np.asarray(values)
        if checked:
            _check_range(arr, dtype)
        with np.errstate(over="ignore", invalid="ignore"):   # overflow to inf is the expected result
            _store(t, arr.reshape(shape))
    if device is not None and _device(device) != CPU:
        t = t.to(_device(device))
    return t


def _store(t, arr):
    """Write array `arr` (t's shape, any NumPy dtype) into the new CPU tensor t."""
    dtype = t._dtype
    if dtype is D.bfloat16 or (dtype is D.float16 and not (arr.dtype.kind == "f" and arr.dtype.itemsize <= 4)):
        # PyTorch rounds to 16-bit floats through float32 (c10::Half and BFloat16 are
        # built from a float): this double rounding is its result; copy_ does the last step
        tmp = _empty(t._shape, D.float32, CPU)
        tmp._numpy_view()[...] = arr.astype(np.float64) if arr.dtype == object else arr
        copy_into(t, tmp)
    elif dtype is D.bool:
        t._numpy_view()[...] = arr != 0
    else:
        if arr.dtype.kind == "f" and dtype.np_dtype.kind in "iu":
            arr = np.trunc(arr)      # float -> int truncates toward zero
        t._numpy_view()[...] = arr.astype(dtype.np_dtype, copy=False)


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
        if not data.dtype.isnative:
            raise ValueError(_NON_NATIVE)
        src = D.from_numpy_dtype(data.dtype)
        if src is None:
            raise TypeError(_unsupported_numpy(data.dtype))
        t = _from_values(np.ascontiguousarray(data), data.shape, dtype or src, device)
    else:
        shape, flat, kinds = [], [], set()
        _check_nesting(data)
        _infer(data, shape, 0, flat, kinds)
        dt = dtype or _dtype_of(kinds)
        t = _from_values(flat, shape, dt, device, checked=True)
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
    if not ndarray.dtype.isnative:
        raise ValueError(_NON_NATIVE)
    dt = D.from_numpy_dtype(ndarray.dtype)
    if dt is None:
        raise TypeError(_unsupported_numpy(ndarray.dtype))
    if not ndarray.flags.writeable:
        import warnings
        warnings.warn("The given NumPy array is not writable, and pytorchlite does not support non-writable "
                      "tensors. This means writing to this tensor will result in undefined behavior. You may "
                      "want to copy the array to protect its data or make it writable before converting it to "
                      "a tensor.", UserWarning, stacklevel=2)
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
    if isinstance(data, np.ndarray) and not data.dtype.isnative:
        raise ValueError(_NON_NATIVE)
    if isinstance(data, np.ndarray) and (device is None or _device(device) == CPU):
        src = D.from_numpy_dtype(data.dtype)
        if src is not None and (dtype is None or dtype is src) and all(s >= 0 for s in data.strides):
            return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)
