"""PyTorch's argument checks of pointwise operators, made before any kernel runs.

ops.yaml names them (`check: pytorchlite._kernels.pointwise_checks.alpha`). Each takes
(op, operands, scalars, common dtype) and raises PyTorch's error; the fast paths of the
pointwise runtime call the check of their operator too (its result depends only on
dtypes and scalars). `not_implemented` is the error for a dtype an operator's kernel
does not have, as PyTorch words it (ops.yaml's `kernel_name:` and `dtype_errors:`).
"""

from pytorchlite import _dtype as D
from pytorchlite._core import TensorBase as Tensor

_BOOL = D.bool


def not_implemented(op, dtype):
    msg = op.dtype_errors.get(dtype.name)
    if msg is not None:
        return RuntimeError(msg)
    return NotImplementedError(f"\"{op.kernel_name}\" not implemented for '{dtype._torch_name}'")


def alpha(op, operands, scalars, common):
    alpha = scalars[0]
    if isinstance(alpha, bool):
        if common is not _BOOL:
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
    elif isinstance(alpha, float) and not common.is_floating_point:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")


def sub(op, operands, scalars, common):
    kinds = [x._dtype is _BOOL if isinstance(x, Tensor) else isinstance(x, bool) for x in operands]
    if all(kinds):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if any(kinds):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    alpha(op, operands, scalars, common)


def pow(op, operands, scalars, common):
    e = operands[1]
    if type(e) is int and e < 0 and not common.is_floating_point:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    # PyTorch answers pow(x, True/False) by copying / filling before any kernel, so only a
    # bool tensor raised to a bool *Number* works; a bool exponent tensor has no kernel
    if common is _BOOL and isinstance(e, Tensor):
        raise not_implemented(op, common)


def addcdiv(op, operands, scalars, common):
    t1, t2 = operands[1], operands[2]
    if not t1._dtype.is_floating_point and not t2._dtype.is_floating_point:
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will "
            "perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented "
            "as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
            "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the "
            "latter implementation: (input + value * tensor1 / tensor2), for all dtypes.")


_C10_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}


def lerp(op, operands, scalars, common):
    self, end, weight = operands
    want = self._dtype
    if not want.is_floating_point:      # lerp computes in self's dtype: no promotion to float
        raise not_implemented(op, want)
    for name, x in (("end", end), ("weight", weight)):
        # a 0-d weight may have another dtype; `end` and a weight with dimensions may not
        if isinstance(x, Tensor) and x._dtype is not want and (name == "end" or x._shape):
            raise RuntimeError(f"expected dtype {_C10_NAMES.get(want.name, want.name)} for `{name}` but got dtype "
                               f"{_C10_NAMES.get(x._dtype.name, x._dtype.name)}")


def clamp(op, operands, scalars, common):
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


def hardtanh(op, operands, scalars, common):
    _check_int_scalars(scalars, common, "int64_t")
    # PyTorch tests the limits as converted to the tensor's dtype (so -0.5 passes, -1.5 not)
    if common is D.uint8 and (int(scalars[0]) < 0 or int(scalars[1]) < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")


def addcmul(op, operands, scalars, common):
    _check_int_scalars(scalars, common, "int" if common is D.int32 else f"{common.name}_t")
