"""Argument checking and normalisation used by the generated bindings.

Messages follow PyTorch's Python argument parser: they name the operator, the argument
(and its position), what was expected and what was given.
"""

import operator
import warnings

from pytorchlite import _dtype as D
from pytorchlite._core import TensorBase as _Tensor, overlap_status, self_overlapping
from pytorchlite._device import CPU, device as _device



def _type_name(v):
    if isinstance(v, D.dtype):
        return "pytorchlite.dtype"
    return type(v).__name__


def type_error(op, name, pos, expected, value):
    where = f"argument '{name}'" + (f" (position {pos})" if pos else "")
    return TypeError(f"{op}(): {where} must be {expected}, not {_type_name(value)}")


def _is_int(v):
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    return hasattr(v, "__index__") and not isinstance(v, float) and not (
        isinstance(v, _Tensor) and (v._dtype.is_floating_point or v.numel() != 1))


def int_(op, name, pos, v):
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if _is_int(v):
        return operator.index(v)
    raise type_error(op, name, pos, "int", v)


_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def _unpack_overflow(op, name, k):
    """PyTorch's parser unpacks each element of an int list as a C int64 (long long)."""
    return TypeError(f"{op}(): argument '{name}' failed to unpack the object at pos {k + 1} with error "
                     "\"Overflow when unpacking long long\"")


def int_list(op, name, pos, v, size=None):
    if isinstance(v, int) and not isinstance(v, bool):
        if not _I64_MIN <= v <= _I64_MAX:
            raise _unpack_overflow(op, name, 0)
        return (v,) * (size or 1)
    if isinstance(v, (tuple, list)) or (hasattr(v, "__iter__") and not isinstance(v, (str, bytes)) and not isinstance(v, _Tensor)):
        out = []
        for x in v:
            if not _is_int(x):
                raise TypeError(f"{op}(): argument '{name}'" + (f" (position {pos})" if pos else "")
                                + f" must be tuple of ints, but found element of type {_type_name(x)} at pos {len(out)}")
            x = operator.index(x)
            if not _I64_MIN <= x <= _I64_MAX:
                raise _unpack_overflow(op, name, len(out))
            out.append(x)
        return tuple(out)
    if _is_int(v):
        v = operator.index(v)
        if not _I64_MIN <= v <= _I64_MAX:
            raise _unpack_overflow(op, name, 0)
        return (v,) * (size or 1)
    raise type_error(op, name, pos, "tuple of ints", v)


def varargs(op, name, v, kw=None, required=True):
    """`view(2, 3)`, `view((2, 3))` and `view(size=(2, 3))` all give (2, 3)."""
    if kw is not None:
        if v:
            raise TypeError(f"{op}() got multiple values for argument '{name}'")
        return kw
    if len(v) == 1 and not _is_int(v[0]):
        return v[0]
    if not v and required:
        raise TypeError(f"{op}() missing 1 required positional arguments: \"{name}\"")
    return v


def float_(op, name, pos, v):
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, _Tensor) and v.numel() == 1:
        return float(v.item())
    if hasattr(v, "__float__") and not isinstance(v, (str, bool)):
        return float(v)
    raise type_error(op, name, pos, "float", v)


def float_list(op, name, pos, v, size=None):
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (float(v),) * (size or 1)
    return tuple(float_(op, name, pos, x) for x in v)


def bool_(op, name, pos, v):
    if isinstance(v, bool):
        return v
    if hasattr(v, "dtype") and getattr(v, "shape", None) == () and str(v.dtype) == "bool":
        return bool(v)
    raise type_error(op, name, pos, "bool", v)


def bool_list(op, name, pos, v, size=None):
    return tuple(bool_(op, name, pos, x) for x in v)


def scalar(op, name, pos, v):
    if isinstance(v, (bool, int, float)):
        return v
    if isinstance(v, _Tensor) and v.numel() == 1 and not v._shape:
        return v.item()
    if hasattr(v, "item") and getattr(v, "shape", None) == ():   # numpy scalars
        return v.item()
    raise type_error(op, name, pos, "Number", v)


def dtype(op, name, pos, v):
    if isinstance(v, D.dtype):
        return v
    raise type_error(op, name, pos, "pytorchlite.dtype", v)


def str_(op, name, pos, v):
    if isinstance(v, str):
        return v
    raise type_error(op, name, pos, "str", v)


def device(op, name, pos, v):
    if isinstance(v, _device):
        return v
    if isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)):
        return _device(v)
    raise type_error(op, name, pos, "pytorchlite.device", v)


def generator(op, name, pos, v):
    from pytorchlite import _random
    if isinstance(v, _random.Generator):
        return v
    raise type_error(op, name, pos, "pytorchlite.Generator", v)


def tensor_list(op, name, pos, v):
    if isinstance(v, _Tensor) or not isinstance(v, (tuple, list)):
        raise type_error(op, name, pos, "tuple of Tensors", v)
    # (the types in one pass in C: cat/stack of thousands of tensors spend their time here)
    if list(map(type, v)).count(_Tensor) == len(v) or all(issubclass(tp, _Tensor) for tp in set(map(type, v))):
        return tuple(v)
    for i, x in enumerate(v):
        if not isinstance(x, _Tensor):
            raise TypeError(f"{op}(): argument '{name}'" + (f" (position {pos})" if pos else "")
                            + f" must be tuple of Tensors, but found element of type {_type_name(x)} at pos {i}")
    return tuple(v)


def wrap_dim(op, dim, ndim):
    """A dim in [-ndim, ndim) (0-d tensors accept -1 and 0), wrapped to non-negative."""
    n = max(ndim, 1)
    if dim < -n or dim >= n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def common_device(op, tensors):
    """The device the operator runs on; all tensors must agree (0-d CPU tensors may join
    a CUDA computation as scalars, as in PyTorch)."""
    dev = None
    uniform = True    # every tensor had the very same device object (no second pass needed)
    for t in tensors:
        if not isinstance(t, _Tensor):
            continue
        d = t._device
        if d is dev:      # the common case, without Device.__eq__ (cat of many tensors)
            continue
        if dev is None:
            dev = d
            continue
        uniform = False
        if d != dev:
            if d.type == "cpu" and not t._shape:
                continue
            if dev.type == "cpu":
                dev = d
                continue
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{dev} and {d}! (when checking argument for {op}())")
    if not uniform and dev is not None and dev.type == "cpu":
        for t in tensors:
            if isinstance(t, _Tensor) and t._device.type != "cpu" and t._shape:
                raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                                   f"{t._device} and cpu! (when checking argument for {op}())")
    return dev or CPU


def list_device(op, tensors):
    if not tensors:
        return CPU
    try:
        devs = [t._device for t in tensors]
    except AttributeError:      # a None in a Tensor?[] list
        return common_device(op, tensors)
    # (count compares by identity first: no Python-level __eq__ for the common case)
    return devs[0] if devs.count(devs[0]) == len(devs) else common_device(op, tensors)


def factory_device(dev):
    if dev is None:
        return CPU
    return dev if isinstance(dev, _device) else _device(dev)


def factory_out(op, dtype, device, out):
    """A factory called with out=: the dtype and device it computes in are out's (PyTorch's
    rule); a dtype= that differs from out's is refused with PyTorch's message."""
    if not isinstance(out, _Tensor):
        raise type_error(op, "out", None, "Tensor", out)
    if dtype is None:
        dtype = out._dtype
    elif dtype is not out._dtype:
        raise RuntimeError(f"dtype {dtype._torch_name} does not match dtype of out parameter "
                           f"({out._dtype._torch_name})")
    return dtype, (out._device if device is None else device)


def _check_cast(op, src_dtype, dst):
    if not D.can_cast(src_dtype, dst._dtype):
        raise RuntimeError(f"result type {src_dtype._torch_name} can't be cast to the desired output type "
                           f"{dst._dtype._torch_name}")


def resize_out(op, out, shape, warn=True):
    """PyTorch resizes a wrong-shaped out= tensor (warning when it held elements, except
    for factories, whose out= is resized silently)."""
    if out._shape == shape:
        return
    if warn and out.numel() != 0:
        warnings.warn(
            f"An output with one or more elements was resized since it had shape {list(out._shape)}, which does "
            f"not match the required output shape {list(shape)}. This behavior is deprecated, and in a future "
            "PyTorch release outputs will not be resized unless they have zero elements. You can explicitly "
            "reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).", UserWarning,
            stacklevel=4)
    out.resize_(shape)


def check_out_autograd(op, out):
    from pytorchlite.autograd import grad_mode
    if out._requires_grad and grad_mode.is_grad_enabled():
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")


# --- writing into out= and in place: PyTorch's dtype, shape and memory-overlap rules ----------
# (generated bindings call these with the operator's ops.yaml `out_dtype_error:` and
# `out_overlap:`; pointwise operators check the same in _kernels/pointwise.py)

INTERNAL_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a single "
                    "memory location. Please clone() the tensor before performing the operation.")
PARTIAL_OVERLAP = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
                   "single memory location. Please clone() the tensor before performing the operation.")
# out_overlap: what is refused of an input sharing the written-to tensor's memory
NO_CHECK, PARTIAL, ANY = 0, 1, 2

# PyTorch's C++ type names, which some of its out= dtype messages use ("dtype long int")
C_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
                "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
                "uint8": "unsigned char", "bool": "bool"}


def out_dtype_message(rule, op, out_dtype, result_dtype):
    """An ops.yaml `out_dtype_error:` message, filled in."""
    return rule.format(op=op, out=out_dtype._torch_name, result=result_dtype._torch_name,
                       out_c=C_TYPE_NAMES.get(out_dtype.name, out_dtype.name),
                       result_c=C_TYPE_NAMES.get(result_dtype.name, result_dtype.name))


def check_write(dst, inputs, mode):
    """Refuse a write into `dst` (out= or self in place) that PyTorch refuses: `dst` with
    elements that share memory (an expanded tensor), or an input overlapping it partly
    (mode PARTIAL), or at all (mode ANY). `inputs` may hold lists of tensors and
    non-tensors. The usual call costs a containment test and one identity test per input:
    the exact test runs only for an input on dst's very storage."""
    if not mode:
        return
    if 0 in dst._stride and self_overlapping(dst):
        raise RuntimeError(INTERNAL_OVERLAP)
    st = dst._storage
    for t in inputs:
        if getattr(t, "_storage", None) is st:
            lap = overlap_status(dst, t)
            if lap == 1 or (lap == 2 and mode == ANY):
                raise RuntimeError(PARTIAL_OVERLAP)
        elif t.__class__ is list or t.__class__ is tuple:
            check_write(dst, t, mode)


def write_out(op, result, out, inputs=(), overlap=PARTIAL, dtype_error=None, cast_error=None, warn_resize=True):
    """Write the functional `result` into `out=` (a tensor, or a tuple for several
    results) as PyTorch does: its dtype rule (`dtype_error`: the exact dtype, with that
    message; else a cast the result allows, refused with `cast_error`, "TypeError: <message>",
    where PyTorch has its own), resized to the result's shape (warning when it held
    elements), then the overlap rule against `inputs`."""
    if isinstance(result, tuple):
        # ops with several results (sort, topk, cummax, ...) take a tuple of out tensors
        if not isinstance(out, (tuple, list)) or not all(isinstance(t, _Tensor) for t in out):
            raise type_error(op, "out", None, "tuple of Tensors", out)
        if len(out) != len(result):
            raise TypeError(f"{op}(): argument 'out' must be tuple of {len(result)} Tensors, not a tuple of "
                            f"{len(out)}")
        for r, o in zip(result, out):
            _check_out_dtype(op, r, o, dtype_error, cast_error)
        for r, o in zip(result, out):
            write_out(op, r, o, inputs, overlap, None)
        return type(result)(*out) if hasattr(result, "_fields") else tuple(out)
    if not isinstance(out, _Tensor):
        raise type_error(op, "out", None, "Tensor", out)
    if result is out:       # a structured kernel wrote into out itself (it shares no memory with an input)
        out._vc[0] += 1
        return out
    _check_out_dtype(op, result, out, dtype_error, cast_error)
    resize_out(op, out, result._shape, warn_resize)
    check_write(out, inputs, overlap)
    out.copy_(result)
    return out


def _check_out_dtype(op, result, out, dtype_error, cast_error=None):
    # (PyTorch's linalg ops check the cast first, then the exact dtype: both may be declared)
    if cast_error is not None and not D.can_cast(result._dtype, out._dtype):
        kind, _, message = cast_error.partition(": ")
        raise (TypeError if kind == "TypeError" else RuntimeError)(
            out_dtype_message(message, op, out._dtype, result._dtype))
    if dtype_error is not None and result._dtype is not out._dtype:
        raise RuntimeError(out_dtype_message(dtype_error, op, out._dtype, result._dtype))
    _check_cast(op, result._dtype, out)


def write_inplace(op, result, self):
    if result is self:      # an inplace_kernel (ops.yaml) wrote into self itself
        self._vc[0] += 1
        return self
    if result._shape != self._shape:
        raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the broadcast shape "
                           f"{list(result._shape)}")
    _check_cast(op, result._dtype, self)
    self.copy_(result)
    return self
