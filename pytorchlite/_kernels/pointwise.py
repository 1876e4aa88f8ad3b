"""The kernel entry for every pointwise operator (step 4 of a call, see DESIGN.md).

It computes the result dtype (PyTorch's promotion, Python scalars weak), the broadcast
shape, casts inputs to the computation dtype, allocates or validates the output, and
hands descriptors to the generated C entry. Two paths:

* fast: every operand a contiguous CPU tensor of one dtype and shape or a Python number
  that does not change the dtype, the output new or an exact match -> the generated
  `ptl_pwc_<op>` taking raw addresses (no descriptor structs to build);
* general: broadcasting, strides, casts, out=/in-place -> `ptl_pw_<op>` with descriptors.
"""

from pytorchlite import _dtype as D
from pytorchlite._C import check, ffi, lib
from pytorchlite._argparse import common_device as _common_device
from pytorchlite._device import CPU as _CPU
from pytorchlite._promotion import result_type_of
from pytorchlite._storage import Storage
from pytorchlite._tensor import Tensor, make, contiguous_strides, _numel

_BOOL = D.bool
_NUMBER = (bool, int, float)
_alloc = Storage.allocate
_new_descs = ffi.new
_cast = ffi.cast
_set_desc = lib.ptl_set_desc


def broadcast_shapes(op, shapes):
    """The broadcast of several shapes, with PyTorch's error for a mismatch."""
    if len(shapes) == 1 or (len(shapes) == 2 and shapes[0] == shapes[1]):
        return tuple(shapes[0])   # nothing to broadcast (the common case)
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
    """A Python scalar as the (double, int64) pair a kernel's ptl_scalar holds."""
    tv = type(v)
    if tv is int:       # the common cases first: this runs on every call with alpha=
        return (float(v), v)
    if tv is float and -9.2e18 < v < 9.2e18:   # finite and within int64
        return (v, int(v))
    if isinstance(v, float):
        # nan, inf or beyond int64: only float kernels read it; the int view saturates
        if v != v:
            return (v, 0)
        return (v, 9223372036854775807 if v > 0 else -9223372036854775808)
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
    if device.type != "cpu":
        # the C fill writes host memory: fill a host scalar, and let the device copy it
        t = _empty((), dtype, device)
        copy_into(t, scalar_tensor(v, dtype, _CPU))
        return t
    t = _empty((), dtype, device)
    d, i = _scalar_arg(v)
    descs = _descs((t,), ())
    check(lib.ptl_fill(descs, d, i), "fill_")
    return t


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


def _descs(tensors, shape):
    """Descriptor array; every tensor viewed at `shape` (expanded as needed)."""
    descs = _new_descs("ptl_tensor[]", len(tensors))
    nd = len(shape)
    # one C call per tensor (ptl_set_desc) instead of a cffi write per field: half the cost
    for k, t in enumerate(tensors):
        if _set_desc(descs, k, t._storage.ptr + t._offset * t._dtype.itemsize, t._dtype.code, nd, shape,
                     t._stride if t._shape == shape else expand_strides(t, shape)):
            raise RuntimeError(f"tensors with more than 16 dimensions are not supported (got {nd})")
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


# PyTorch names its CPU kernel in a dtype error, which is not always "<op>_cpu".
_KERNEL_NAMES = {
    "floor_divide": "div_floor_cpu", "_div_floor": "div_floor_cpu", "_div_trunc": "div_trunc_cpu",
    "pow": "pow", "bitwise_left_shift": "lshift_cpu", "bitwise_right_shift": "rshift_cpu",
    "floor": "floor_vml_cpu", "ceil": "ceil_vml_cpu", "_round": "round_vml_cpu", "trunc": "trunc_vml_cpu",
    "_round_decimals": "round_cpu", "_gelu_erf": "GeluKernelImpl", "_gelu_tanh": "GeluKernelImpl",
    "_silu": "silu_cpu", "_mish": "mish_cpu", "_elu": "elu_cpu", "_leaky_relu": "leaky_relu_cpu",
    "_hardsigmoid": "hardsigmoid_cpu", "_hardswish": "hardswish_cpu", "lerp": "lerp_kernel_scalar",
    "addcmul": "addcmul_cpu_out", "addcdiv": "addcdiv_cpu_out", "_clamp": "clamp_cpu",
}

# Dtypes PyTorch rejects with its own RuntimeError rather than "not implemented".
_NEG_BOOL = ("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
             "mask, use the `~` or `logical_not()` operator instead.")
_DTYPE_ERRORS = {
    ("neg", "bool"): _NEG_BOOL,
    ("relu", "bool"): "Boolean inputs not supported for relu",
    ("_hardtanh", "bool"): "Bool inputs not supported for hardtanh",
}


def _not_implemented(op, dtype):
    msg = _DTYPE_ERRORS.get((op.name, dtype.name))
    if msg is not None:
        return RuntimeError(msg)
    name = _KERNEL_NAMES.get(op.name, op.name + "_cpu")
    return NotImplementedError(f"\"{name}\" not implemented for '{dtype._torch_name}'")


class IntegerDivisionByZero(RuntimeError, ZeroDivisionError):
    """PyTorch's CPU kernels raise RuntimeError('ZeroDivisionError') for an integer division
    by zero; this is that error and also a Python ZeroDivisionError."""


# ---- operator-specific argument checks (PyTorch's, made before any kernel runs) ----------
# Each takes (op, operands, scalars, common dtype) and raises; the fast path calls the ones
# of operators that have scalar arguments (their checks depend only on dtype and scalars).

def _check_alpha(op, operands, scalars, common):
    alpha = scalars[0]
    if isinstance(alpha, bool):
        if common is not _BOOL:
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
    elif isinstance(alpha, float) and not common.is_floating_point:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")


def _check_sub(op, operands, scalars, common):
    kinds = [x._dtype is _BOOL if isinstance(x, Tensor) else isinstance(x, bool) for x in operands]
    if all(kinds):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if any(kinds):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    _check_alpha(op, operands, scalars, common)


def _check_pow(op, operands, scalars, common):
    e = operands[1]
    if type(e) is int and e < 0 and not common.is_floating_point:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    # PyTorch answers pow(x, True/False) by copying / filling before any kernel, so only a
    # bool tensor raised to a bool *Number* works; a bool exponent tensor has no kernel
    if common is _BOOL and isinstance(e, Tensor):
        raise _not_implemented(op, common)


def _check_addcdiv(op, operands, scalars, common):
    t1, t2 = operands[1], operands[2]
    if not t1._dtype.is_floating_point and not t2._dtype.is_floating_point:
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will "
            "perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented "
            "as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
            "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the "
            "latter implementation: (input + value * tensor1 / tensor2), for all dtypes.")


_C10_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}


def _check_lerp(op, operands, scalars, common):
    self, end, weight = operands
    want = self._dtype
    if not want.is_floating_point:      # lerp computes in self's dtype: no promotion to float
        raise _not_implemented(op, want)
    for name, x in (("end", end), ("weight", weight)):
        # a 0-d weight may have another dtype; `end` and a weight with dimensions may not
        if isinstance(x, Tensor) and x._dtype is not want and (name == "end" or x._shape):
            raise RuntimeError(f"expected dtype {_C10_NAMES.get(want.name, want.name)} for `{name}` but got dtype "
                               f"{_C10_NAMES.get(x._dtype.name, x._dtype.name)}")


def _check_clamp(op, operands, scalars, common):
    if len(operands) == 3 and isinstance(operands[1], Tensor) != isinstance(operands[2], Tensor):
        raise TypeError(f"clamp(): min and max must both be Tensors or both be Numbers, got "
                        f"{type(operands[1]).__name__} and {type(operands[2]).__name__}")
    # a Number bound must fit the tensor's integer dtype, and bool tensors take only Tensor bounds
    for x in operands[1:]:
        if isinstance(x, Tensor):
            continue
        if common is _BOOL:
            raise NotImplementedError(f"\"{op.name.strip('_')}_scalar_cpu\" not implemented for 'Bool'")
        if not common.is_floating_point and not isinstance(x, float):
            info = D.iinfo(common)
            lo = -info.max if info.min == 0 else info.min   # c10 lets -255 through for uint8
            if not lo <= x <= info.max:
                raise RuntimeError(f"value cannot be converted to type {common.name}_t without overflow")


def _check_int_scalars(scalars, common, ctype):
    """An integer kernel reads Scalars as integers: nan, inf and values beyond `common`
    cannot be converted (PyTorch's c10 overflow check)."""
    if common.is_floating_point or common is _BOOL:
        return
    info = D.iinfo(common) if ctype != "int64_t" else D.iinfo(D.int64)
    for v in scalars:
        if isinstance(v, float) and not (info.min <= v <= info.max):   # nan fails too
            raise RuntimeError(f"value cannot be converted to type {ctype} without overflow")


def _check_hardtanh(op, operands, scalars, common):
    _check_int_scalars(scalars, common, "int64_t")
    # PyTorch tests the limits as converted to the tensor's dtype (so -0.5 passes, -1.5 not)
    if common is D.uint8 and (int(scalars[0]) < 0 or int(scalars[1]) < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")


def _check_addcmul(op, operands, scalars, common):
    _check_int_scalars(scalars, common, "int" if common is D.int32 else f"{common.name}_t")


# Operators whose out= must have exactly the result dtype (PyTorch's structured kernels
# that do not cast), with PyTorch's message for each.
_SAME_OUT = "Found dtype {out} but expected {result}"
_BOOL_OUT = "{op} does not support non-boolean outputs."
_OUT_DTYPE_RULES = {
    **{name: _SAME_OUT for name in ("abs", "neg", "floor", "ceil", "_round", "trunc", "frac", "sign", "sgn",
                                    "bitwise_not", "lerp")},
    **{name: _BOOL_OUT for name in ("isposinf", "isneginf", "signbit")},
    "where": "Expected out type to be {result} but got {out}",
}

# (operator, dtype) pairs whose argument checks need the general path even when every
# operand is a contiguous tensor of that dtype (the fast path runs no checks without scalars)
_GENERAL_ONLY = {("pow", "bool")}

_CHECKS = {
    "add": _check_alpha, "sub": _check_sub, "rsub": _check_sub, "pow": _check_pow,
    "addcdiv": _check_addcdiv, "lerp": _check_lerp, "clamp_min": _check_clamp,
    "clamp_max": _check_clamp, "_clamp": _check_clamp, "_hardtanh": _check_hardtanh,
    "addcmul": _check_addcmul,
}


def _fast_out_dtypes(op):
    """The fast path's plan for an operator, computed once: (for each dtype code, the
    output dtype when every operand has that dtype, None where the fast path does not
    apply; the operator's argument check or None; its contiguous C entry)."""
    table = []
    for dt in D.BY_CODE:
        out_dt = None
        if dt.code in op.dtypes and not op.integer_division and (op.name, dt.name) not in _GENERAL_ONLY:
            promo = op.promotion
            if promo == "default" or (promo == "int_to_float" and dt.is_floating_point):
                out_dt = dt
            elif promo == "bool_out":
                out_dt = _BOOL
        table.append(out_dt)
    # with the operator's argument check and its contiguous C entry, so a call looks
    # up one tuple instead of three attributes and a dict
    plan = (tuple(table), _CHECKS.get(op.name), op.cpu[1])
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
                # (an int alpha, the default, passes _check_alpha whatever the dtype)
                if chk is not None and not (chk is _check_alpha and scalars[0].__class__ is int):
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
    if nd > 16:
        return None
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
    if first.__class__ is not Tensor or first._device is not _CPU:
        return None
    dt = first._dtype
    out_dt = (_FAST.get(op) or _fast_out_dtypes(op))[0][dt.code]
    if out_dt is None:
        return None
    key = []
    for x in operands:
        if x.__class__ is not Tensor or x._dtype is not dt or x._device is not _CPU:
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
    chk = _CHECKS.get(op.name)
    if chk is not None:
        chk(op, operands, scalars, dt)
    shape, n, out_strides, shape_arr, strides = geo
    st = _alloc(n * out_dt.itemsize, _CPU)
    res = make(st, shape, out_strides, 0, out_dt, None, True)
    descs = _new_descs("ptl_tensor[]", len(operands) + 1)
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


def binary_operator(op, slow, with_alpha):
    """`Tensor.__add__` and the like for `op`: the fast path of run(), specialised to two
    contiguous CPU tensors of one dtype and shape with no gradient to record, written out
    for exactly two operands (and alpha=1 where the operator takes one); anything else
    goes to `slow`, the generated binding. `a + b` on small tensors is mostly this Python,
    and the general loop over operands and scalars costs as much again."""
    table, chk, kern = _FAST.get(op) or _fast_out_dtypes(op)
    if chk is _check_alpha:
        chk = None          # alpha is 1 here, which every dtype takes
    elif chk is _check_sub:
        # with alpha 1 and both operands of one dtype it raises for bool only: leave bool
        # to the binding, which raises, and check nothing
        table = tuple(None if d is _BOOL else out for d, out in zip(D.BY_CODE, table))
        chk = None
    new, alloc_addr, free_addr = object.__new__, lib.ptl_alloc_addr, lib.ptl_free_addr
    from pytorchlite.autograd.forward_ad import _state as fw_state

    def operator(self, other):
        if other.__class__ is Tensor and self.__class__ is Tensor:
            dt = self._dtype
            shape = self._shape
            if other._dtype is dt and other._shape == shape and self._device is _CPU and \
                    other._device is _CPU and (self._contig or self.is_contiguous()) and \
                    (other._contig or other.is_contiguous()) and not self._requires_grad and \
                    not other._requires_grad and not fw_state.on:
                out_dt = table[dt.code]
                if out_dt is not None:
                    if chk is not None:
                        chk(op, (self, other), (1,) if with_alpha else (), dt)
                    n = 1
                    for k in shape:
                        n *= k
                    nbytes = n * out_dt.itemsize
                    p = alloc_addr(nbytes)
                    if not p:
                        raise RuntimeError(f"[CPU allocator] out of memory: tried to allocate {nbytes} bytes")
                    st = new(Storage)       # Storage.allocate, inlined
                    st.ptr = p
                    st.nbytes = nbytes
                    st.device = _CPU
                    st._owner = None
                    st._free = free_addr
                    res = make(st, shape, self._stride, 0, out_dt, None, True)
                    item = dt.itemsize
                    a = self._storage.ptr + self._offset * item
                    b = other._storage.ptr + other._offset * item
                    status = kern(dt.code, n, 0, p, a, b, 1.0, 1) if with_alpha else kern(dt.code, n, 0, p, a, b)
                    if status:
                        check(status, op.name)
                    return res
        return slow(self, other)

    operator.__name__ = slow.__name__
    operator.__qualname__ = slow.__qualname__
    operator.__doc__ = slow.__doc__
    return operator


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
        if x is not target and x.__class__ is Tensor and x._storage is st and \
                (x._offset != target._offset or x._stride != target._stride):
            return False
        if x.__class__ is not Tensor and isinstance(x, Tensor) and x._storage is st and x is not target:
            return False   # a Tensor subclass sharing memory: leave it to the general path
    return True


# Operators PyTorch also runs on Python numbers alone (giving a 0-d tensor); the others
# have no overload without a Tensor and raise TypeError.
_NUMBERS_ONLY_OK = {"add", "sub", "mul", "_div_true", "_div_trunc", "_div_floor", "floor_divide"}


def _run_general(op, operands, scalars, out, inplace):
    promo = op.promotion
    if op.name not in _NUMBERS_ONLY_OK and not any(isinstance(x, Tensor) for x in operands):
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
    chk = _CHECKS.get(op.name)
    if chk is not None:
        chk(op, operands, scalars, common)
    if common.code not in op.dtypes:
        raise _not_implemented(op, common)

    # ---- devices and shapes ---------------------------------------------------------------
    tensors = [x for x in operands if isinstance(x, Tensor)]
    device = _common_device(op.name, tensors)
    if device.type != "cpu":
        from pytorchlite import cuda
        return cuda._run_pointwise(op, operands, scalars, out, inplace, common, out_dt, device)
    shape = broadcast_shapes(op.name, [t._shape for t in tensors]) if tensors else ()
    if len(shape) > 16:
        raise RuntimeError(f"{op.name}(): tensors with more than 16 dimensions are not supported")

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
        rule = _OUT_DTYPE_RULES.get(op.name)
        if rule is not None and out._dtype is not out_dt:
            raise RuntimeError(rule.format(op=op.name, out=out._dtype._torch_name, result=out_dt._torch_name))
        resize_out(op.name, out, shape)
        target = out
    if target is None:
        return ins, None, _empty(shape, out_dt, device)
    if not D.can_cast(out_dt, target._dtype):
        raise RuntimeError(f"result type {out_dt._torch_name} can't be cast to the desired output type "
                           f"{target._dtype._torch_name}")
    if _self_overlapping(target):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                           "single memory location. Please clone() the tensor before performing the operation.")
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
