"""The kernel entry for every pointwise operator (see docs/architecture.md).

It computes the result dtype (PyTorch's promotion, Python scalars weak), the broadcast
shape, casts inputs to the computation dtype, allocates or validates the output, and
hands descriptors to the generated C entry. Two paths:

* fast: every operand a contiguous CPU tensor of one dtype and shape or a Python number
  that does not change the dtype, the output new or an exact match -> the generated
  `ptl_pwc_<op>` taking raw addresses (no descriptor structs to build);
* general: broadcasting, strides, casts, out=/in-place -> `ptl_pw_<op>` with descriptors.
"""

from pytorchlite import _dtype as D
from pytorchlite._C import MAX_DIMS, check, ffi, lib, new_descriptors as _new_desc_array
from pytorchlite._argparse import PARTIAL as _PARTIAL, check_write as _check_write, common_device as _common_device
from pytorchlite._device import CPU as _CPU
from pytorchlite._promotion import result_type_of
from pytorchlite._storage import Storage
from pytorchlite import _backends, _core
from pytorchlite._kernels import pointwise_checks as _checks
from pytorchlite._core import (  # noqa: F401  (copy_into, to_dtype: used by the CUDA pointwise path)
    TensorBase as Tensor, broadcast_shapes, contiguous_strides, copy_into, descriptors as _descs,
    empty as _empty, expand_strides, make, numel as _numel, overlaps as _overlaps, scalar_pair as _scalar_arg,
    scalar_tensor, to_dtype)
from pytorchlite._core import INT64_MAX as _INT64_MAX, storage_overflowed as _storage_overflowed

_BOOL = D.bool
_NUMBER = (bool, int, float)
_alloc = Storage.allocate
_new_descs = ffi.new
_cast = ffi.cast
_set_desc = lib.ptl_set_desc


_SCALARS = {}


def _scalar_operand(v, dtype, device):
    """A 0-d tensor holding Python scalar `v` as an input operand. Kept in a small cache:
    `x * 2` in a loop would otherwise allocate and fill one per call. Only kernels read
    these (they never escape to users), so sharing them is safe. The key tells 0.0 from
    -0.0 (equal as dict keys); NaN never hits (nan != nan), hence the bound."""
    key = (type(v), v, dtype, device, str(v) if v == 0 else None)
    t = _SCALARS.get(key)
    if t is None:
        if len(_SCALARS) >= 256:
            _SCALARS.clear()
        t = _SCALARS[key] = scalar_tensor(v, dtype, device)
    return t


class IntegerDivisionByZero(RuntimeError, ZeroDivisionError):
    """PyTorch's CPU kernels raise RuntimeError('ZeroDivisionError') for an integer division
    by zero; this is that error and also a Python ZeroDivisionError."""


def _fast_out_dtypes(op):
    """The fast path's plan for an operator, computed once: (for each dtype code, the
    output dtype when every operand has that dtype, None where the fast path does not
    apply; the operator's argument check or None; its contiguous C entry)."""
    table = []
    for dt in D.BY_CODE:
        out_dt = None
        if dt.code in op.dtypes and not op.integer_division:
            promo = op.promotion
            if promo == "default" or (promo == "int_to_float" and dt.is_floating_point):
                out_dt = dt
            elif promo == "bool_out":
                out_dt = _BOOL
        table.append(out_dt)
    # with the operator's argument check and its contiguous C entry, so a call looks
    # up one tuple instead of three attributes and a dict
    plan = (tuple(table), op.check, op.cpu[1])
    _FAST[op] = plan
    return plan


_FAST = {}
# (type, value, dtype) of a nonzero Python number -> (address, 0-d tensor) of its operand
_FAST_SCALARS = {}


def run(op, operands, scalars, out, inplace):
    # ---- fast path: contiguous CPU tensors of one dtype and shape ----------------------
    # This is most of the cost of a small op, so it avoids calls and temporaries: the
    # eligibility of (op, dtype) is a cached table, operands are checked inline. Python
    # numbers that do not change the result dtype (weak scalars: a float with a floating
    # tensor, an int with a non-bool one, a bool with any) join as one-element operands
    # read with stride 0; the output is new, or an out=/in-place tensor that is exactly
    # the result (contiguous, that shape and dtype, no partial overlap with an input).
    first = operands[0]
    if isinstance(first, Tensor) and first._device is _CPU and (first._contig or first.is_contiguous()):
        dt = first._dtype
        plan = _FAST.get(op) or _fast_out_dtypes(op)
        out_dt = plan[0][dt.code]
        if out_dt is not None:
            shape = first._shape
            item = dt.itemsize
            args = [first._storage.ptr + first._offset * item]
            bcast = 0
            bit = 2     # bit k of bcast: operand k is a Python number (C input k, stride 0)
            for x in operands[1:]:
                tx = type(x)
                if tx is float:
                    if not dt.is_floating_point:
                        break
                    bcast |= bit
                    args.append(x)
                elif tx is int:
                    if dt is _BOOL:
                        break
                    bcast |= bit
                    args.append(x)
                elif tx is bool:
                    bcast |= bit
                    args.append(x)
                elif isinstance(x, Tensor) and x._dtype is dt and x._shape == shape and x._device is _CPU and \
                        (x._contig or x.is_contiguous()):
                    args.append(x._storage.ptr + x._offset * item)
                else:
                    break
                bit += bit
            else:
                target = out
                if target is not None and not _fast_target(target, shape, out_dt, operands, inplace):
                    return _run_general(op, operands, scalars, out, inplace)
                # (autograd is recorded by the generated binding, around this call)
                chk = plan[1]
                # (an int alpha, the default, passes the alpha check whatever the dtype)
                if chk is not None and not (chk is _checks.alpha and scalars[0].__class__ is int):
                    chk(op, operands, scalars, dt)
                if bcast:
                    for k in range(1, len(args)):
                        if bcast >> k & 1:
                            v = args[k]
                            # the address of the cached one-element operand (see _scalar_operand;
                            # a zero takes the slow key, which tells 0.0 from -0.0)
                            ent = _FAST_SCALARS.get((v.__class__, v, dt)) if v else None
                            if ent is None:
                                t = _scalar_operand(v, dt, _CPU)
                                ent = (t._storage.ptr, t)     # the tensor keeps the address valid
                                if v:
                                    if len(_FAST_SCALARS) >= 256:
                                        _FAST_SCALARS.clear()
                                    _FAST_SCALARS[(v.__class__, v, dt)] = ent
                            args[k] = ent[0]
                for v in scalars:
                    if v.__class__ is int:      # alpha=1 and the like: _scalar_arg inlined
                        args.append(float(v))
                        args.append(v)
                    else:
                        args.extend(_scalar_arg(v))
                n = 1
                for s in shape:
                    n *= s
                if target is None:
                    st = _alloc(n * out_dt.itemsize, _CPU)
                    res = make(st, shape, first._stride, 0, out_dt, None, True)
                    status = plan[2](dt.code, n, bcast, st.ptr, *args)
                    if status:
                        check(status, op.name)
                    return res
                status = plan[2](dt.code, n, bcast, target._storage.ptr + target._offset * out_dt.itemsize, *args)
                if status:
                    check(status, op.name)
                target._vc[0] += 1
                return target
    if out is None and not inplace:
        res = _run_strided(op, operands, scalars)
        if res is not None:
            return res
    return _run_general(op, operands, scalars, out, inplace)


# (each operand's shape and strides) -> (broadcast shape, its size, the result's strides,
# the shape and the strides of the result and of every operand at it as C arrays); bounded
# like _FAST_SCALARS
_GEOMETRY = {}


def _geometry(key, tensors):
    shape = broadcast_shapes("", [t._shape for t in tensors])   # (a mismatch raises in the caller's try)
    nd = len(shape)
    if nd > MAX_DIMS:
        return None       # the general path drops size-1 dims to fit a descriptor
    out_strides = contiguous_strides(shape)
    geo = (shape, _numel(shape), out_strides, _new_descs("int64_t[]", shape or [0]),
           [_new_descs("int64_t[]", out_strides or [0])] +
           [_new_descs("int64_t[]", (t._stride if t._shape == shape else expand_strides(t, shape)) or [0])
            for t in tensors])
    if len(_GEOMETRY) >= 256:
        _GEOMETRY.clear()
    _GEOMETRY[key] = geo
    return geo


def _run_strided(op, operands, scalars):
    """The second tier: CPU tensors of one dtype that broadcast or are strided (no Python
    numbers, a new output). What the general path spends on this (the broadcast shape, each
    operand's strides at it, and converting both to C arrays per call) depends only on the
    operands' shapes and strides, so it is computed once per geometry and kept. None when
    the general path must decide."""
    first = operands[0]
    if first.__class__ is not _core.Tensor or first._device is not _CPU:
        return None
    dt = first._dtype
    out_dt = (_FAST.get(op) or _fast_out_dtypes(op))[0][dt.code]
    if out_dt is None:
        return None
    key = []
    for x in operands:
        if x.__class__ is not _core.Tensor or x._dtype is not dt or x._device is not _CPU:
            return None
        key.append(x._shape)
        key.append(x._stride)
    key = tuple(key)
    geo = _GEOMETRY.get(key)
    if geo is None:
        try:
            geo = _geometry(key, operands)
        except RuntimeError:
            return None       # shapes that do not broadcast: the general path raises
        if geo is None:
            return None
    chk = op.check
    if chk is not None:
        chk(op, operands, scalars, dt)
    shape, n, out_strides, shape_arr, strides = geo
    if n * out_dt.itemsize > _INT64_MAX:     # a broadcast of expanded views can be huge
        raise _storage_overflowed(shape, out_dt.itemsize)
    st = _alloc(n * out_dt.itemsize, _CPU)
    res = make(st, shape, out_strides, 0, out_dt, None, True)
    descs = _new_desc_array("ptl_tensor[]", len(operands) + 1)
    nd = len(shape)
    _set_desc(descs, 0, st.ptr, out_dt.code, nd, shape_arr, strides[0])
    item = dt.itemsize
    for k, x in enumerate(operands, 1):
        _set_desc(descs, k, x._storage.ptr + x._offset * item, dt.code, nd, shape_arr, strides[k])
    sc = _new_descs("ptl_scalar[]", max(len(scalars), 1))
    for k, v in enumerate(scalars):
        sc[k].d, sc[k].i = _scalar_arg(v)
    check(op.cpu[0](len(operands) + 1, descs, sc), op.name)
    return res


def binary_plan(op):
    """The plan of the generated fast path of a binary Python operator (`a + b`: two
    contiguous CPU tensors of one dtype and shape, nothing to record, alpha 1 where the
    operator takes one; codegen/templates/functions.py.j2): (for each dtype code the
    result dtype or None where the path does not apply, the argument check or None, the
    contiguous C entry). `a + b` on small tensors is mostly that Python, and the general
    loop over operands and scalars costs as much again."""
    table, chk, kern = _FAST.get(op) or _fast_out_dtypes(op)
    if chk is _checks.alpha:
        chk = None          # alpha is 1 here, which every dtype takes
    elif chk is _checks.sub:
        # with alpha 1 and both operands of one dtype it raises for bool only: leave bool
        # to the binding, which raises, and check nothing
        table = tuple(None if d is _BOOL else out for d, out in zip(D.BY_CODE, table))
        chk = None
    return table, chk, kern


def _fast_target(target, shape, out_dt, operands, inplace):
    """Whether the fast path can write the result straight into an out=/in-place tensor:
    one the general path would also write directly, with no check of it left to fail
    (right type, shape and dtype, contiguous, not requiring grad for out=, and sharing
    memory with no input unless it is that very input)."""
    if target is not operands[0]:    # (the first operand passed the fast path's checks)
        if not isinstance(target, Tensor) or target._shape != shape or target._device is not _CPU or \
                not (target._contig or target.is_contiguous()):
            return False
    if target._dtype is not out_dt:
        return False
    if not inplace and target._requires_grad:
        return False   # the general path raises (or checks grad mode)
    st = target._storage
    for x in operands:
        if x is not target and x.__class__ is _core.Tensor and x._storage is st and \
                (x._offset != target._offset or x._stride != target._stride):
            return False
        if x.__class__ is not _core.Tensor and isinstance(x, Tensor) and x._storage is st and x is not target:
            return False   # a Tensor subclass sharing memory: leave it to the general path
    return True


def _run_general(op, operands, scalars, out, inplace):
    promo = op.promotion
    if not op.all_numbers and not any(isinstance(x, Tensor) for x in operands):
        got = ", ".join(type(x).__name__ for x in operands)
        raise TypeError(f"{op.name}() received an invalid combination of arguments - got ({got}), but expected "
                        "at least one Tensor")
    # ---- dtypes -------------------------------------------------------------------------
    if promo == "where":
        cond = operands[0]
        if not isinstance(cond, Tensor) or cond._dtype is not _BOOL:
            got = cond._dtype._torch_name if isinstance(cond, Tensor) else type(cond).__name__
            if got != "Byte":
                raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with "
                                   f"dtype {got}")
            import warnings
            warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and will be "
                          "removed in a future version of PyTorch. Use a boolean condition instead.",
                          UserWarning, stacklevel=3)
        common = result_type_of(operands[1:])
    else:
        common = result_type_of(operands)
    if promo == "int_to_float" and not common.is_floating_point:
        common = D.get_default_dtype()
    out_dt = _BOOL if promo == "bool_out" else common
    chk = op.check
    if chk is not None:
        chk(op, operands, scalars, common)
    if common.code not in op.dtypes:
        raise _checks.not_implemented(op, common)

    # ---- devices and shapes ---------------------------------------------------------------
    tensors = [x for x in operands if isinstance(x, Tensor)]
    device = _common_device(op.name, tensors)
    if device.type != "cpu":
        # another device type: its backend runs the kernel ops.yaml generated for it
        return _backends.get(device.type).pointwise(op, op.entry(device.type), operands, scalars, out, inplace,
                                                    common, out_dt, device)
    shape = broadcast_shapes(op.name, [t._shape for t in tensors]) if tensors else ()

    # ---- integer division by zero raises, as on PyTorch's CPU ---------------------------
    # (only when something is computed: an empty result divides nothing)
    if op.integer_division and not common.is_floating_point and common is not _BOOL and _numel(shape):
        divisor = operands[-1]
        if isinstance(divisor, Tensor):
            if divisor.numel() and not bool(divisor._numpy_view().all()):
                raise IntegerDivisionByZero("ZeroDivisionError")
        elif divisor == 0:
            raise IntegerDivisionByZero("ZeroDivisionError")

    ins, target, dest = prepare_operands(op, operands, out, inplace, common, out_dt, device, shape, _scalar_operand)
    sc = _new_descs("ptl_scalar[]", max(len(scalars), 1))
    for k, v in enumerate(scalars):
        sc[k].d, sc[k].i = _scalar_arg(v)
    check(op.cpu[0](len(ins) + 1, _descs([dest] + ins, shape), sc), op.name)
    return finish_output(target, dest)


def prepare_operands(op, operands, out, inplace, common, out_dt, device, shape, scalar_operand):
    """The general path's operands, once dtypes, device and the broadcast `shape` are
    decided (the CPU and the CUDA path alike): (ins, target, dest).

    `ins` are the inputs in the computation dtype `common` (Python scalars as 0-d tensors
    made by `scalar_operand(v, dtype, device)`). `target` is the tensor the caller gets
    written (self in place, `out=`, or None), checked as PyTorch does (shape, dtype
    rule, castability, self-overlap); `dest` is where the kernel writes: `target` itself
    when it already has the result dtype and no input overlaps it, else a fresh tensor
    that finish_output copies back."""
    ins = []
    for x in operands:
        if isinstance(x, Tensor):
            ins.append(x if x._dtype is common else to_dtype(x, common))
        else:
            ins.append(scalar_operand(x, common, device))
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
        rule = op.out_dtype_error
        if rule is not None and out._dtype is not out_dt:
            from pytorchlite._argparse import out_dtype_message
            raise RuntimeError(out_dtype_message(rule, op.name, out._dtype, out_dt))
        resize_out(op.name, out, shape)
        target = out
    if target is None:
        return ins, None, _empty(shape, out_dt, device)
    if not D.can_cast(out_dt, target._dtype):
        raise RuntimeError(f"result type {out_dt._torch_name} can't be cast to the desired output type "
                           f"{target._dtype._torch_name}")
    # PyTorch's TensorIterator rules: the written-to tensor must not overlap itself, nor an
    # input in part (the very same memory is fine: a.add_(a))
    _check_write(target, operands, _PARTIAL)
    # an overlap PyTorch does not refuse (a strided view it cannot judge, a full overlap
    # read through a cast) is computed into a fresh tensor and copied in
    direct = target._dtype is out_dt and not any(_overlaps(target, t) for t in ins)
    return ins, target, target if direct else _empty(shape, out_dt, device)


def finish_output(target, dest):
    """The result of a general-path op once the kernel has written `dest` (see
    prepare_operands): copied into `target` when it is not `dest`, whose version counter
    then moves."""
    if target is None:
        return dest
    if dest is not target:
        copy_into(target, dest)
    target._vc[0] += 1
    return target
