"""The kernel entry for every pointwise operator (step 4 of a call, see DESIGN.md).

It computes the result dtype (PyTorch's promotion, Python scalars weak), the broadcast
shape, casts inputs to the computation dtype, allocates or validates the output, and
hands descriptors to the generated C entry. Two paths:

* fast: every operand a contiguous CPU tensor of one dtype and shape, no out= -> the
  generated `ptl_pwc_<op>` taking raw addresses (no descriptor structs to build);
* general: broadcasting, strides, casts, out=/in-place -> `ptl_pw_<op>` with descriptors.
"""

from pytorchlite import _dtype as D
from pytorchlite._C import check, ffi, lib
from pytorchlite._promotion import result_type_of
from pytorchlite._storage import Storage
from pytorchlite._tensor import Tensor, make, contiguous_strides, _numel

_BOOL = D.bool
_NUMBER = (bool, int, float)
_alloc = Storage.allocate
_new_descs = ffi.new
_cast = ffi.cast


def broadcast_shapes(op, shapes):
    """The broadcast of several shapes, with PyTorch's error for a mismatch."""
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


def _scalar_arg(v):
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return (v, 0)
        return (v, int(v))
    if isinstance(v, Tensor):
        v = v.item()
    return (float(v), int(v))


def to_dtype(t, dtype):
    """A contiguous copy of t in `dtype` (no copy when it already is that dtype)."""
    if t._dtype is dtype:
        return t
    out = _empty(t._shape, dtype, t._device)
    copy_into(out, t)
    return out


def _empty(shape, dtype, device):
    st = _alloc(_numel(shape) * dtype.itemsize, device)
    return make(st, shape, contiguous_strides(shape), 0, dtype, None, True)


def scalar_tensor(v, dtype, device):
    t = _empty((), dtype, device)
    d, i = _scalar_arg(v)
    descs = _descs((t,), ())
    check(lib.ptl_fill(descs, d, i), "fill_")
    return t


def _descs(tensors, shape):
    """Descriptor array; every tensor viewed at `shape` (expanded as needed)."""
    n = len(tensors)
    descs = _new_descs("ptl_tensor[]", n)
    nd = len(shape)
    for k, t in enumerate(tensors):
        d = descs[k]
        d.data = _cast("void *", t._storage.ptr + t._offset * t._dtype.itemsize)
        d.dtype = t._dtype.code
        d.ndim = nd
        if nd:
            d.sizes[0:nd] = shape
            d.strides[0:nd] = t._stride if t._shape == shape else expand_strides(t, shape)
    return descs


def copy_into(dst, src):
    """dst[...] = src, broadcasting src to dst's shape and converting dtype."""
    if dst._device.type != "cpu" or src._device.type != "cpu":
        from pytorchlite import cuda
        return cuda._copy(dst, src)
    shape = dst._shape
    if len(dst._shape) > 16:
        raise RuntimeError("copy_(): tensors with more than 16 dimensions are not supported")
    check(lib.ptl_copy(_descs((dst, src), shape)), "copy_")


def _self_overlapping(t):
    for n, s in zip(t._shape, t._stride):
        if s == 0 and n > 1:
            return True
    return False


def _overlaps(a, b):
    """Whether a and b's memory ranges touch without being the same view."""
    if a._storage is not b._storage:
        return False
    if a._offset == b._offset and a._stride == b._stride and a._shape == b._shape:
        return False
    if not a._shape or not b._shape or _numel(a._shape) == 0 or _numel(b._shape) == 0:
        return a._offset == b._offset and _numel(a._shape) and _numel(b._shape)
    a_lo = a._offset
    a_hi = a._offset + sum((n - 1) * s for n, s in zip(a._shape, a._stride))
    b_lo = b._offset
    b_hi = b._offset + sum((n - 1) * s for n, s in zip(b._shape, b._stride))
    return a_lo <= b_hi and b_lo <= a_hi


def _not_implemented(op, dtype):
    return RuntimeError(f"\"{op.name}_cpu\" not implemented for '{dtype._torch_name}'")


def run(op, operands, scalars, out, inplace):
    # ---- fast path: contiguous CPU tensors of one dtype and shape, new output ----------
    if out is None:
        first = operands[0]
        if type(first) is Tensor or isinstance(first, Tensor):
            dt = first._dtype
            shape = first._shape
            ok = first._device.type == "cpu" and (first._contig or first.is_contiguous())
            if ok:
                for x in operands[1:]:
                    if not isinstance(x, Tensor) or x._dtype is not dt or x._shape != shape or \
                            x._device.type != "cpu" or not (x._contig or x.is_contiguous()):
                        ok = False
                        break
            if ok and dt.code in op.dtypes and not op.integer_division and not _needs_grad(operands):
                promo = op.promotion
                if promo == "default" or (promo == "int_to_float" and dt.is_floating_point):
                    out_dt = dt
                elif promo == "bool_out":
                    out_dt = _BOOL
                else:
                    out_dt = None
                if out_dt is not None:
                    n = 1
                    for s in shape:
                        n *= s
                    st = _alloc(n * out_dt.itemsize, first._device)
                    res = make(st, shape, first._stride if first._contig else contiguous_strides(shape),
                               0, out_dt, None, True)
                    args = [x._storage.ptr + x._offset * dt.itemsize for x in operands]
                    sc = []
                    for v in scalars:
                        sc.extend(_scalar_arg(v))
                    check(op.cpu[1](dt.code, n, st.ptr, *args, *sc), op.name)
                    return res
    return _run_general(op, operands, scalars, out, inplace)


def _needs_grad(operands):
    return False


def _run_general(op, operands, scalars, out, inplace):
    promo = op.promotion
    # ---- dtypes -------------------------------------------------------------------------
    if promo == "where":
        cond = operands[0]
        if not isinstance(cond, Tensor) or cond._dtype is not _BOOL:
            got = cond._dtype._torch_name if isinstance(cond, Tensor) else type(cond).__name__
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {got}")
        common = result_type_of(operands[1:])
    else:
        common = result_type_of(operands)
    if promo == "int_to_float" and not common.is_floating_point:
        common = D.get_default_dtype()
    out_dt = _BOOL if promo == "bool_out" else common
    if common.code not in op.dtypes:
        raise _not_implemented(op, common)

    # ---- devices and shapes ---------------------------------------------------------------
    tensors = [x for x in operands if isinstance(x, Tensor)]
    from pytorchlite._argparse import common_device
    device = common_device(op.name, tensors)
    if device.type != "cpu":
        from pytorchlite import cuda
        return cuda._run_pointwise(op, operands, scalars, out, inplace, common, out_dt, device)
    shape = broadcast_shapes(op.name, [t._shape for t in tensors]) if tensors else ()
    if len(shape) > 16:
        raise RuntimeError(f"{op.name}(): tensors with more than 16 dimensions are not supported")

    # ---- integer division by zero raises, as on PyTorch's CPU ---------------------------
    if op.integer_division and not common.is_floating_point and common is not _BOOL:
        divisor = operands[-1]
        if isinstance(divisor, Tensor):
            if divisor.numel() and not bool(divisor._numpy_view().all()):
                raise ZeroDivisionError("ZeroDivisionError")
        elif divisor == 0:
            raise ZeroDivisionError("ZeroDivisionError")

    # ---- inputs in the computation dtype ----------------------------------------------------
    ins = []
    for x in operands:
        if isinstance(x, Tensor):
            ins.append(x if x._dtype is common else to_dtype(x, common))
        else:
            ins.append(scalar_tensor(x, common, device))

    # ---- output -----------------------------------------------------------------------------
    target = None
    if inplace:
        target = operands[0]
        if target._shape != shape:
            raise RuntimeError(f"output with shape {list(target._shape)} doesn't match the broadcast shape {list(shape)}")
    elif out is not None:
        if not isinstance(out, Tensor):
            raise TypeError(f"{op.name}(): argument 'out' must be Tensor, not {type(out).__name__}")
        from pytorchlite._argparse import resize_out, check_out_autograd
        check_out_autograd(op.name, out)
        resize_out(op.name, out, shape)
        target = out
    if target is not None:
        if not D.can_cast(out_dt, target._dtype):
            raise RuntimeError(f"result type {out_dt._torch_name} can't be cast to the desired output type "
                               f"{target._dtype._torch_name}")
        if _self_overlapping(target):
            raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                               "single memory location. Please clone() the tensor before performing the operation.")
        direct = target._dtype is out_dt and not any(_overlaps(target, t) for t in ins)
        dest = target if direct else _empty(shape, out_dt, device)
    else:
        dest = _empty(shape, out_dt, device)

    sc = _new_descs("ptl_scalar[]", max(len(scalars), 1))
    for k, v in enumerate(scalars):
        sc[k].d, sc[k].i = _scalar_arg(v)
    check(op.cpu[0](len(ins) + 1, _descs([dest] + ins, shape), sc), op.name)

    if target is None:
        return dest
    if dest is not target:
        copy_into(target, dest)
    target._vc[0] += 1
    return target
