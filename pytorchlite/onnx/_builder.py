"""Building an ONNX graph: values, nodes, constants and the helpers ops.yaml's `onnx:` forms
call (codegen/onnx.py's HELPERS; generated/onnx_table.py calls them as `g.<helper>`).

A value (`OValue`) is an ONNX name with the pytorchlite dtype name and, where it is known,
the shape (ints, or `SymDim` for a dim that follows a dynamic input axis). Nodes are kept
as plain tuples and turned into onnx protos only at the end (`_export.py`), so this module
needs no onnx to import.
"""

import numpy as np

from .. import _dtype

# pytorchlite dtype name -> ONNX TensorProto data type (onnx.TensorProto's numbers)
ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "int16": 5, "int32": 6, "int64": 7, "bool": 9,
              "float16": 10, "float64": 11, "bfloat16": 16}
FROM_ONNX_TYPE = {v: k for k, v in ONNX_TYPES.items()}

# ONNX operators whose output dtype is not their first input's
_BOOL_OUT = {"Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Not", "And", "Or", "Xor", "IsNaN",
             "IsInf"}
_INT64_OUT = {"Shape", "ArgMax", "ArgMin", "NonZero", "Size"}


class OnnxExportError(RuntimeError):
    """An operator or argument the ONNX exporter cannot express."""


class SymDim(int):
    """A size that follows dynamic axes: `k * (product of the sizes of `factors`) + c`, each
    factor an axis of a graph input `(OValue, axis)`; it behaves as the traced int it was
    everywhere else. `name`: the symbol of a dim that is exactly one named dynamic axis (the
    model's inputs and outputs show it), else None."""

    def __new__(cls, value, factors, k=1, c=0, name=None):
        self = super().__new__(cls, value)
        self.factors, self.k, self.c, self.name = tuple(factors), k, c, name
        return self


class OValue:
    __slots__ = ("name", "dtype", "shape")

    def __init__(self, name, dtype, shape=None):
        self.name, self.dtype, self.shape = name, dtype, shape

    def __repr__(self):
        return f"OValue({self.name}, {self.dtype}, {self.shape})"


def _dtype_name(d):
    if isinstance(d, OValue):
        return d.dtype
    if isinstance(d, _dtype.dtype):
        return d.name
    if isinstance(d, str):
        return d
    raise OnnxExportError(f"onnx export: expected a dtype, got {d!r}")


class Builder:
    """One ONNX graph being built: `op` adds a node, the other public methods are the helpers."""

    def __init__(self, opset_version):
        self.opset = opset_version
        self.nodes = []            # (op_type, input names, output names, attrs dict)
        self.initializers = {}     # name -> numpy array
        self._ids = 0
        self._consts = {}          # (dtype, shape, bytes) -> OValue: one initializer per distinct constant
        self.where = ""            # the operator being lowered (for errors)
        self.reserved = set()      # names taken by the model's inputs, parameters and outputs
        self.results = []          # the traced results of the node being lowered (forms' `result`)

    def fresh(self, hint="v"):
        while True:
            self._ids += 1
            name = f"{hint}_{self._ids}"
            if name not in self.reserved:
                return name

    # --- nodes -------------------------------------------------------------------------

    def op(self, op_type, *inputs, _outputs=None, **attrs):
        """Add one node; Python numbers and lists among the inputs become constants of the
        first value input's dtype. Returns the output value (a tuple when _outputs > 1)."""
        if op_type == "Where" and any(isinstance(i, OValue) and i.dtype == "bool" for i in inputs[1:]):
            # onnxruntime has no Where over bool branches: choose between them as int32
            branches = [self.cast(i, "int32") for i in inputs[1:]]
            return self.cast(self.op("Where", inputs[0], *branches), "bool")
        # a number takes the type of the values it meets (Where: of the branches, not the condition)
        first = next((i for i in (inputs[1:] if op_type == "Where" else inputs) if isinstance(i, OValue)), None)
        names = []
        for x in inputs:
            if x is None:
                names.append("")
            elif isinstance(x, OValue):
                names.append(x.name)
            else:
                names.append(self.const(x, first.dtype if first is not None else None).name)
        while names and names[-1] == "":
            names.pop()
        attrs = {k: self._attr(op_type, k, v) for k, v in attrs.items() if v is not None}
        if op_type == "Cast":
            dtype = FROM_ONNX_TYPE[attrs["to"]]
        elif op_type in _BOOL_OUT:
            dtype = "bool"
        elif op_type in _INT64_OUT:
            dtype = "int64"
        elif op_type == "Where":
            dtype = inputs[1].dtype if isinstance(inputs[1], OValue) else (
                inputs[2].dtype if isinstance(inputs[2], OValue) else None)
        elif op_type == "ConstantOfShape":
            dtype = "float32"
            if "value" in attrs:
                dtype = FROM_ONNX_TYPE[ONNX_TYPES_OF_NP[attrs["value"].dtype.name]]
        else:
            dtype = first.dtype if first is not None else None
        outs = [OValue(self.fresh(op_type.lower()), dtype) for _ in range(_outputs or 1)]
        self.nodes.append((op_type, names, [o.name for o in outs], attrs))
        return outs[0] if _outputs is None else tuple(outs)

    def _attr(self, op_type, key, v):
        if isinstance(v, OValue):
            raise OnnxExportError(f"{self.where}: attribute '{key}' of ONNX {op_type} must be a constant, "
                                  "not a traced tensor")
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, (tuple, list)):
            return [int(x) if isinstance(x, bool) else x for x in v]
        if isinstance(v, np.ndarray):
            return v
        return v

    def const(self, value, dtype=None):
        """A constant tensor (an initializer, shared by equal constants)."""
        if isinstance(value, OValue):
            return value
        if dtype is None:
            flat = value
            while isinstance(flat, (list, tuple)) and flat:
                flat = flat[0]
            dtype = "bool" if isinstance(flat, bool) else "int64" if isinstance(flat, int) else "float32"
        name = _dtype_name(dtype)
        if any(isinstance(x, SymDim) for x in (value if isinstance(value, (list, tuple)) else [value])):
            return self.ints(value) if name == "int64" else self.op("Cast", self.ints(value),
                                                                     to=ONNX_TYPES[name])
        np_dtype = np.float32 if name == "bfloat16" else np.dtype(name if name != "bool" else np.bool_)
        arr = np.asarray(value, dtype=np_dtype)
        key = (name, arr.shape, arr.tobytes())
        hit = self._consts.get(key)
        if hit is None:
            if name == "bfloat16":
                raise OnnxExportError(f"{self.where}: bfloat16 constants are not supported by the exporter")
            hit = self._consts[key] = OValue(self.fresh("const"), name, tuple(arr.shape))
            self.initializers[hit.name] = arr
        return hit

    # --- helpers (codegen/onnx.py HELPERS) ------------------------------------------------

    def ints(self, values):
        """A 1-D int64 tensor; a SymDim entry is computed from its input's shape at run time."""
        values = [values] if isinstance(values, int) else list(values)
        if not any(isinstance(v, SymDim) for v in values):
            return self.const([int(v) for v in values], "int64")
        parts, run = [], []
        for v in values:
            if isinstance(v, SymDim):
                if run:
                    parts.append(self.const(run, "int64"))
                    run = []
                shape = None
                for source, axis in v.factors:
                    size = self.op("Shape", source, start=axis, end=axis + 1)
                    shape = size if shape is None else self.op("Mul", shape, size)
                if v.k != 1:
                    shape = self.op("Mul", shape, self.const([v.k], "int64"))
                if v.c:
                    shape = self.op("Add", shape, self.const([v.c], "int64"))
                parts.append(shape)
            else:
                run.append(int(v))
        if run:
            parts.append(self.const(run, "int64"))
        return parts[0] if len(parts) == 1 else self.op("Concat", *parts, axis=0)

    def cast(self, x, dtype):
        if dtype is None:
            return x
        name = _dtype_name(dtype)
        if isinstance(x, OValue) and x.dtype == name:
            return x
        if not isinstance(x, OValue):
            return self.const(x, name)
        out = self.op("Cast", x, to=ONNX_TYPES[name])
        out.shape = x.shape
        return out

    def onnx_type(self, dtype):
        return ONNX_TYPES[_dtype_name(dtype)]

    def rank(self, x):
        if not isinstance(x, OValue) or x.shape is None:
            raise OnnxExportError(f"{self.where}: the rank of {x!r} is not known")
        return len(x.shape)

    def dim(self, d, x):
        return d + max(self.rank(x), 1) if d < 0 else d

    def dims(self, ds, x):
        if ds is None:
            return list(range(self.rank(x)))
        if isinstance(ds, int):
            ds = [ds]
        return [self.dim(d, x) for d in ds]

    def pads(self, padding):
        padding = list(padding)
        return padding + padding

    def stride_or(self, kernel, stride):
        return list(stride) if stride else list(kernel)

    def swap(self, x, d0, d1):
        perm = list(range(self.rank(x)))
        d0, d1 = self.dim(d0, x), self.dim(d1, x)
        perm[d0], perm[d1] = perm[d1], perm[d0]
        return perm

    def sizes(self, x, size):
        """The size a view, reshape or expand produced: the traced result's shape (with
        SymDims where it follows a dynamic axis; one such dim alone becomes -1, which Reshape
        infers)."""
        return self.result_shape(0, reshape=True)

    def result_shape(self, i=0, reshape=False):
        shape = self.results[i].shape
        syms = [d for d in shape if isinstance(d, SymDim)]
        if reshape and len(syms) == 1:
            return self.const([-1 if isinstance(d, SymDim) else int(d) for d in shape], "int64")
        return self.ints(list(shape))

    def squeeze_dims(self, x, dim):
        shape = x.shape
        ds = range(len(shape)) if dim is None else self.dims(dim, x)
        return [d for d in ds if len(shape) and shape[d] == 1 and not isinstance(shape[d], SymDim)]

    def eval_only(self, flag, what):
        if flag:
            raise OnnxExportError(f"{self.where}: {what} in training mode has no ONNX form here; "
                                  "call model.eval() before exporting")
        return None

    def reduce(self, op_type, x, dims, keepdim):
        """An ONNX reduction over `dims` of x (None or []: all), with the axes as the opset
        wants them (ReduceSum takes them as an input from opset 13, the others from 18)."""
        if op_type not in _REDUCTIONS:
            raise OnnxExportError(f"{self.where}: reduce() takes one of {', '.join(_REDUCTIONS)}, not {op_type}")
        axes = self.dims(dims, x) if dims else []
        if op_type == "ReduceSum" or self.opset >= 18:
            return self.op(op_type, x, self.ints(axes) if axes else None, keepdims=keepdim)
        return self.op(op_type, x, axes=axes or None, keepdims=keepdim)

    def count(self, x, dims, minus=0):
        """How many elements one reduction over `dims` (None or []: all) of x takes, less
        `minus` (at least 0): a Python float, or a value of x's dtype where a dim follows a
        dynamic axis."""
        n, syms = 1, []
        for d in (self.dims(dims, x) if dims else range(self.rank(x))):
            if isinstance(x.shape[d], SymDim):
                syms.append(x.shape[d])
            else:
                n *= int(x.shape[d])
        if not syms:
            return float(max(n - minus, 0))
        total = self.op("ReduceProd", self.ints(syms), keepdims=0) if len(syms) > 1 else \
            self.op("Squeeze", self.ints(syms), self.const([0], "int64"))
        total = self.cast(total, x.dtype)
        if n != 1:
            total = self.op("Mul", total, float(n))
        if minus:
            total = self.op("Max", self.op("Sub", total, float(minus)), 0.0)
        return total

    def torch_pads(self, x, pad):
        """ONNX Pad's pads (all begins, then all ends) from PyTorch's (last dim first, pairs)."""
        n = self.rank(x)
        begins, ends = [0] * n, [0] * n
        for i in range(len(pad) // 2):
            begins[n - 1 - i], ends[n - 1 - i] = pad[2 * i], pad[2 * i + 1]
        return begins + ends

    def unsupported(self, what):
        raise OnnxExportError(f"{self.where}: {what} has no ONNX form")

    def ones(self, x, shape):
        return self.op("Expand", self.const(1, x.dtype), self.ints(list(shape)))



_REDUCTIONS = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
               "ReduceLogSumExp", "ReduceSumSquare")

ONNX_TYPES_OF_NP = {"float32": 1, "uint8": 2, "int8": 3, "int16": 5, "int32": 6, "int64": 7, "bool": 9,
                    "float16": 10, "float64": 11}
