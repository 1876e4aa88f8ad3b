"""Basic indexing (ints, slices with steps, None, Ellipsis, bools): views that share
storage; `__setitem__` writes through such a view."""

from pytorchlite._tensor import Tensor, make


def _expand_index(t, index):
    if not isinstance(index, tuple):
        index = (index,)
    consumed = sum(1 for i in index if i is not None and i is not Ellipsis and not isinstance(i, bool))
    n_ell = sum(1 for i in index if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > len(t._shape):
        raise IndexError(f"too many indices for tensor of dimension {len(t._shape)}")
    out = []
    for i in index:
        if i is Ellipsis:
            out.extend([slice(None)] * (len(t._shape) - consumed))
        else:
            out.append(i)
    return out


def _is_advanced(i):
    return isinstance(i, (Tensor, list)) or (hasattr(i, "__array__") and not isinstance(i, (int, slice)))


def basic_view(t, index):
    """The view `t[index]` for a basic index; None when the index needs advanced indexing."""
    items = _expand_index(t, index)
    if any(_is_advanced(i) for i in items):
        return None
    shape, stride = [], []
    offset = t._offset
    dim = 0
    for i in items:
        if i is None:
            shape.append(1)
            stride.append(0 if dim >= len(t._shape) else t._stride[dim] * t._shape[dim])
            continue
        if isinstance(i, bool):
            # x[True] adds a dimension of size 1; x[False] one of size 0
            shape.append(1 if i else 0)
            stride.append(0)
            continue
        if isinstance(i, slice):
            size = t._shape[dim]
            step = 1 if i.step is None else int(i.step)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            start, stop, _ = slice(i.start, i.stop, step).indices(size)
            n = max(0, (stop - start + step - 1) // step)
            if n:
                offset += start * t._stride[dim]
            shape.append(n)
            stride.append(t._stride[dim] * step)
            dim += 1
            continue
        try:
            k = i.__index__()
        except (AttributeError, TypeError):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             f"valid indices (got {type(i).__name__})") from None
        size = t._shape[dim]
        if k < -size or k >= size:
            raise IndexError(f"index {k} is out of bounds for dimension {dim} with size {size}")
        offset += (k + size if k < 0 else k) * t._stride[dim]
        dim += 1
    shape.extend(t._shape[dim:])
    stride.extend(t._stride[dim:])
    from pytorchlite import _views
    return _views.make_view(t, tuple(shape), tuple(stride), offset)


def getitem(t, index):
    v = basic_view(t, index)
    if v is None:
        from pytorchlite import _advanced_indexing
        return _advanced_indexing.getitem(t, index)
    return v


def setitem(t, index, value):
    v = basic_view(t, index)
    if v is None:
        from pytorchlite import _advanced_indexing
        return _advanced_indexing.setitem(t, index, value)
    if isinstance(value, Tensor):
        v.copy_(value)
    elif isinstance(value, (bool, int, float)):
        v.fill_(value)
    else:
        from pytorchlite._creation import tensor
        v.copy_(tensor(value, dtype=t._dtype))
