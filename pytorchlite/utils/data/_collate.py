"""default_collate and default_convert: how a list of samples becomes a batch."""

import collections
import copy
import re

import numpy as np

import pytorchlite

__all__ = ["default_collate", "default_convert"]

_NP_STR_OBJ = re.compile(r"[SaUO]")
_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _stack(batch):
    stack = getattr(pytorchlite, "stack", None)
    if stack is not None:
        return stack(batch, 0)
    # Without a stack operator: copy each sample into its row of a preallocated batch.
    first = batch[0]
    for i, t in enumerate(batch):
        if t.shape != first.shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(first.shape)} at entry 0 "
                               f"and {list(t.shape)} at entry {i}")
    dtype = first.dtype
    for t in batch[1:]:
        dtype = pytorchlite.promote_types(dtype, t.dtype)
    out = pytorchlite.empty((len(batch),) + tuple(first.shape), dtype=dtype, device=first.device)
    with pytorchlite.no_grad():
        for i, t in enumerate(batch):
            out[i].copy_(t)
    return out


def default_collate(batch):
    """Stack a list of samples into a batch, recursing into their structure as PyTorch does:
    tensors are stacked; NumPy arrays become stacked tensors; Python floats a float64
    tensor, ints an int64 tensor (bools a bool tensor); strings and bytes stay a list;
    dicts/mappings collate per key; named tuples per field into the same named tuple;
    tuples and other sequences per position (tuples come back as lists, as in PyTorch).

    >>> import pytorchlite
    >>> from pytorchlite.utils.data import default_collate
    >>> default_collate([(pytorchlite.tensor([1., 2.]), 0), (pytorchlite.tensor([3., 4.]), 1)])
    [tensor([[1., 2.],
            [3., 4.]]), tensor([0, 1])]
    """
    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, pytorchlite.Tensor):
        return _stack(batch)
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_", "bytes_"):
        if isinstance(elem, np.ndarray):
            if _NP_STR_OBJ.search(elem.dtype.str) is not None:
                raise TypeError(_ERR.format(elem.dtype))
            return default_collate([pytorchlite.as_tensor(b) for b in batch])
        if elem.shape == ():  # numpy scalar
            return pytorchlite.as_tensor(np.array(batch))
    if isinstance(elem, float):
        return pytorchlite.tensor(batch, dtype=pytorchlite.float64)
    if isinstance(elem, int):
        return pytorchlite.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                # a copy keeps the mapping type's extra attributes
                clone = copy.copy(elem)
                clone.update(collated)
                return clone
            return elem_type(collated)
        except TypeError:
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # named tuple
        return elem_type(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        size = len(next(it))
        if not all(len(e) == size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = default_collate(samples)
                return clone
            return elem_type([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError(_ERR.format(elem_type))


def default_convert(data):
    """What a DataLoader without batching (batch_size=None) applies to each sample: NumPy
    arrays and scalars become tensors, recursively; everything else is left as it is.

    >>> import numpy as np
    >>> from pytorchlite.utils.data import default_convert
    >>> default_convert({"x": np.array([1, 2]), "y": "label"})
    {'x': tensor([1, 2]), 'y': 'label'}
    """
    elem_type = type(data)
    if isinstance(data, pytorchlite.Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_", "bytes_"):
        if isinstance(data, np.ndarray) and _NP_STR_OBJ.search(data.dtype.str) is not None:
            return data
        return pytorchlite.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        converted = {key: default_convert(data[key]) for key in data}
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update(converted)
                return clone
            return elem_type(converted)
        except TypeError:
            return converted
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
