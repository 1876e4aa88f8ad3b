"""The runtime of structured kernels (ops.yaml `structured:`; codegen/structured.py).

A structured operator is written in two parts, as torchgen's `structured: True` is:

* **meta** (hand-written, in pytorchlite/_kernels/): PyTorch's checks and the rules that
  decide the outputs. It returns a `Meta`: each output's shape and dtype, optionally the
  dtype the kernel computes in (float16 and bfloat16 widen to float32) and values the
  kernel call needs (`precomputed:`, e.g. the outer/inner sizes of a softmax row). An
  operator with one output and nothing precomputed may get a bare `(shape, dtype)` tuple
  instead (no compute dtype, no replaced inputs): building a Meta costs as much as the
  rest of a 2x2 matrix product's Python.
* **impl** (generated, generated/structured.py): allocation of the outputs (or writing
  into `out=` when it fits), the operands as the C prototype takes them (a descriptor for
  `const ptl_tensor *`, a contiguous address for `intptr_t`), the C call, the status
  check that names the operator, and the cast of a widened result back to its dtype.

The helpers below are what the generated impls call.
"""

from pytorchlite import _backends
from pytorchlite._C import check, ffi, lib, new_descriptors
from pytorchlite._core import (
    TensorBase, addr, check_ndim, contiguous_strides, copy_into, empty, fill, make, numel, to_dtype,
)

_new = ffi.new
_new_descs = new_descriptors
_object_new = object.__new__
_set_desc = lib.ptl_set_desc
_NULL = ffi.NULL
_cast = ffi.cast


class Meta:
    """What a meta function decides: the outputs, in schema order, each `(shape, dtype)`
    or `(shape, dtype, kernel_shape)` (the kernel writes the output viewed at
    kernel_shape, e.g. with the reduced dim kept, and the operator returns it at shape);
    `compute`, the dtype the kernel reads and writes when it differs from the inputs' (the
    result is cast back to each output's dtype); `inputs`, replacements for tensor
    arguments (name -> tensor, e.g. a flattened view); `error`, a callable that turns a
    failing status into PyTorch's exception (None: the generic one), for kernels that say
    what went wrong through an out-parameter; and the precomputed values the C call binds
    by name."""

    __slots__ = ("outputs", "compute", "inputs", "values", "error")

    def __init__(self, *outputs, compute=None, inputs=None, error=None, **values):
        self.outputs = outputs
        self.compute = compute
        self.inputs = inputs
        self.values = values
        self.error = error

    def __getattr__(self, name):
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(f"meta result has no precomputed value '{name}'") from None


def meta_of(outputs, inputs, values):
    """`Meta(*outputs, inputs=inputs, **values)` from a tuple and dicts already built (no
    compute dtype). Keyword arguments are packed into a dict and out again at each call,
    which costs a LAPACK call on a 4x4 matrix a tenth of its time."""
    m = _object_new(Meta)
    m.outputs = outputs
    m.compute = None
    m.inputs = inputs
    m.values = values
    m.error = None
    return m


class Done:
    """A meta function's finished answer for inputs where no kernel needs to run (empty
    inputs, a 0-d special case): the generated impl returns `result` as it is."""

    __slots__ = ("result",)

    def __init__(self, result):
        self.result = result


def operand(t, compute, contiguous):
    """A tensor argument as the kernel reads it: in the compute dtype, and contiguous when
    the C prototype takes its address (intptr_t) rather than a descriptor."""
    if t is None:
        return None
    if compute is not None and t._dtype is not compute and t._dtype.is_floating_point:
        t = to_dtype(t, compute)
    if contiguous and not (t._contig or t.is_contiguous()):
        c = empty(t._shape, t._dtype, t._device)
        copy_into(c, t)
        t = c
    return t


class _ColumnMajor:
    def __repr__(self):
        return "COLUMN_MAJOR"


COLUMN_MAJOR = _ColumnMajor()
"""An output spec `(shape, dtype, COLUMN_MAJOR)`: the matrices (last two dimensions) of a
new output are stored column-major, as LAPACK writes them and as PyTorch returns them
(the output is the transposed view of a contiguous buffer, whose address the kernel
gets). Such an output is never written into `out=` directly."""


def output(spec, device, compute):
    """A new contiguous output for `spec` = (shape, dtype[, kernel_shape or COLUMN_MAJOR]),
    in the compute dtype when there is one; None for an output the meta function left out
    (None)."""
    if spec is None:
        return None
    shape, dtype = spec[0], spec[1]
    if compute is not None and dtype.is_floating_point:
        dtype = compute
    if len(spec) > 2 and spec[2] is COLUMN_MAJOR:
        shape = tuple(shape)
        buf = empty(shape[:-2] + (shape[-1], shape[-2]), dtype, device)
        st = buf._stride
        return make(buf._storage, shape, st[:-2] + (st[-1], st[-2]), 0, dtype, None, None)
    return empty(tuple(spec[2]) if len(spec) > 2 else tuple(shape), dtype, device)


def carray(ctype, spec):
    """A scratch tensor that the call binds to a typed pointer only (ops.yaml `scratch:`;
    LAPACK's pivots and infos), as a zeroed C array of numel(spec's shape) elements: a
    tensor costs three times as much, which shows on small matrices."""
    return _new(ctype, numel(spec[0]) or 1)


def fits(out, spec, device, compute, inputs):
    """Whether an `out=` tensor can take the kernel's writes directly: exactly the output's
    shape and dtype, contiguous, on the device, no widening, no separate kernel view, and
    sharing no memory with an input. Otherwise the binding copies the result in (with
    PyTorch's resize and cast rules)."""
    shape, dtype = spec[0], spec[1]
    if not (isinstance(out, TensorBase) and out._shape == tuple(shape) and out._dtype is dtype
            and out._device == device and (compute is None or compute is dtype) and len(spec) == 2
            and (out._contig or out.is_contiguous()) and not out._requires_grad):
        return False
    st = out._storage
    return all(t is None or t._storage is not st for t in inputs)


def finish(t, spec):
    """The operator's result from the kernel's output `t`: at the output's shape, in its
    dtype."""
    if t is None:
        return None
    shape, dtype = tuple(spec[0]), spec[1]
    if t._shape != shape:
        t = make(t._storage, shape, contiguous_strides(shape), t._offset, t._dtype, t._vc, True)
    if t._dtype is not dtype:
        t = to_dtype(t, dtype)
    return t


def descriptors(n):
    """A ptl_tensor[n] array for the descriptor parameters of one call."""
    return _new_descs("ptl_tensor[]", n)


def describe(descs, k, t, spec=None):
    """Fill descriptor k with tensor t (an output is viewed at its kernel shape when its
    spec has one); NULL for an absent tensor."""
    if t is None:
        return _NULL
    if spec is not None and len(spec) > 2 and spec[2] is not COLUMN_MAJOR:
        shape = tuple(spec[2])
        stride = contiguous_strides(shape)
    else:
        shape, stride = t._shape, t._stride
    status = _set_desc(descs, k, t._storage.ptr + t._offset * t._dtype.itemsize, t._dtype.code, len(shape), shape,
                       stride)
    if status:
        check_ndim("", len(shape))     # PyTorch's message for more than 64 dims
        check(status, "descriptor")
    return descs + k


def pointer(t, ctype):
    """t's first element as a typed C pointer (int64_t *, double *, ...)."""
    return _NULL if t is None else _cast(ctype, addr(t))


def address(t):
    # addr(t) inlined: an op passes several addresses per call
    return 0 if t is None else t._storage.ptr + t._offset * t._dtype.itemsize


def size(t):
    return numel(t._shape)


_LAUNCHERS = {}


def launcher(device_type, target):
    """The launcher ops.yaml names for a device type (`cuda: module.function`), resolved
    once through the device registry: generated code never imports a backend."""
    key = (device_type, target)
    fn = _LAUNCHERS.get(key)
    if fn is None:
        fn = _LAUNCHERS[key] = _backends.get(device_type).resolve(target)
    return fn


def raise_error(m, status):
    """Raise the meta function's exception for a failing status, if it has one for it."""
    e = m.error(status)
    if e is not None:
        raise e


def init(t, source):
    """What an output or scratch tensor holds before the call (ops.yaml `init:`): a tensor
    (broadcast, cast), a number, or nothing for None."""
    if source is None:
        return
    if isinstance(source, TensorBase):
        copy_into(t, source)
    else:
        fill(t, source)


class _Impls:
    """`impls.<op>__<device>`: the generated impl of a structured operator, found when first
    used. A meta function that hands a case to another structured operator (matmul's 2-D
    case to mm) calls its impl directly, below autograd and dispatch as the old hand-written
    kernels called each other; late binding keeps generated/structured.py, which imports
    the meta functions, out of their modules' imports."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        from pytorchlite.generated import structured
        fn = getattr(structured, name)
        setattr(self, name, fn)
        return fn


impls = _Impls()
