"""The JIT's graph IR: SSA values, nodes that are operator calls, and the graph that holds them.

A `Value` is produced once (a graph input, a tensor constant, or a node's output) and
carries the dtype, shape, strides, device and requires_grad seen when it was traced.
A `Node` is one call of a generated binding (its `_intercept.Site`) or of a hand-written
Tensor method that hands itself to the handlers the same way (indexing, detach). Its
arguments are kept in the binding's order (`site.names`) as a tree of references: a
`Value`, a Python literal, or a tuple/list/slice of those.

`Graph.__str__` prints the graph as TorchScript IR does; `python_source` writes the
equivalent Python function (the compiled form runs that function, not an interpreter).
"""

import math

from pytorchlite import _dtype as D

_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                 "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                 "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


class Value:
    """One SSA value. `kind`: "input" (an argument), "param" (a module parameter or
    buffer, passed as an input), "const" (a tensor captured while tracing) or "node"."""

    __slots__ = ("name", "kind", "dtype", "shape", "stride", "device", "requires_grad", "node", "index", "data")

    def __init__(self, name, kind, tensor=None, node=None, index=0):
        self.name = name
        self.kind = kind
        self.node = node
        self.index = index
        self.data = None            # the tensor of a "const"
        if tensor is not None:
            self.dtype = tensor._dtype
            self.shape = tuple(tensor._shape)
            self.stride = tuple(tensor._stride)
            self.device = tensor._device
            self.requires_grad = bool(tensor._requires_grad)
        else:
            self.dtype = self.shape = self.stride = self.device = None
            self.requires_grad = False

    def type_str(self, dynamic=False):
        if self.dtype is None:
            return "Tensor"
        shape = ", ".join("*" if dynamic else str(s) for s in self.shape)
        strides = ", ".join("*" if dynamic else str(s) for s in self.stride)
        return (f"{_SCALAR_NAMES.get(self.dtype.name, self.dtype.name)}({shape}{', ' if shape else ''}"
                f"strides=[{strides}], requires_grad={int(self.requires_grad)}, device={self.device})")

    @property
    def py(self):
        """The value's name as a Python identifier (for generated code)."""
        # generated names start with "_" (inputs never do: see _trace.input_names), so a
        # user's argument called `v1` or `c0` cannot meet a node's value or a constant
        n = "".join(c if c.isalnum() or c == "_" else "_" for c in self.name)
        if self.kind == "const":
            return "_" + n
        return n if n[:1].isalpha() else "_v" + n

    def __repr__(self):
        return f"%{self.name}"


class Node:
    """One operator call. `site` is the binding's `_intercept.Site` (None for a fused
    group, see `_passes`); `args` the references in `site.names` order; `outputs` the
    values it produces; `result` how its Python result is built from them ("tensor",
    "tuple", "list", a namedtuple class, or "none" for a call that returns nothing)."""

    __slots__ = ("site", "args", "outputs", "result", "mutates", "random")

    def __init__(self, site, args, outputs, result, mutates=False, random=False):
        self.site = site
        self.args = args
        self.outputs = outputs
        self.result = result
        self.mutates = mutates
        self.random = random

    @property
    def kind(self):
        return "aten::" + self.site.qualified_name.split(".")[0]

    def inputs(self):
        """The values among the arguments, in order."""
        out = []
        _collect(self.args, out)
        return out

    def __repr__(self):
        return f"Node({self.kind}, {[repr(v) for v in self.outputs]})"


def _collect(ref, out):
    if isinstance(ref, Value):
        out.append(ref)
    elif isinstance(ref, (tuple, list)):
        for r in ref:
            _collect(r, out)
    elif isinstance(ref, slice):
        for r in (ref.start, ref.stop, ref.step):
            _collect(r, out)


def map_refs(ref, fn):
    """`ref` with each Value v replaced by fn(v)."""
    if isinstance(ref, Value):
        return fn(ref)
    if isinstance(ref, tuple):
        return tuple(map_refs(r, fn) for r in ref)
    if isinstance(ref, list):
        return [map_refs(r, fn) for r in ref]
    if isinstance(ref, slice):
        return slice(map_refs(ref.start, fn), map_refs(ref.stop, fn), map_refs(ref.step, fn))
    return ref


class Graph:
    """inputs (arguments, then parameters and buffers), constants, nodes in execution
    order, and `output`: the structure of the returned object over values (see
    `_trace.flatten_output`)."""

    def __init__(self):
        self.inputs = []
        self.constants = []
        self.nodes = []
        self.output = None
        self.dynamic = False     # dims are printed as `*` (the graph serves any sizes)
        self.arg_kinds = None    # per positional argument of the traced call: "tensor" or "literal"
        self._count = 0

    def fresh(self):
        self._count += 1
        return str(self._count)

    def values_of_output(self):
        out = []
        _output_values(self.output, out)
        return out

    # --- printing --------------------------------------------------------------------

    def __str__(self):
        lines = []
        counter = [self._count]

        def const(lit):
            counter[0] += 1
            name = f"%{counter[0]}"
            lines.append(f"  {name} : {_lit_type(lit)} = prim::Constant{_lit_attr(lit)}()")
            return name

        def ref(r):
            if isinstance(r, Value):
                return repr(r)
            if isinstance(r, (tuple, list)) and r:
                parts = [ref(x) for x in r]
                counter[0] += 1
                name = f"%{counter[0]}"
                t = _list_type(r)
                lines.append(f"  {name} : {t} = prim::ListConstruct({', '.join(parts)})")
                return name
            if isinstance(r, slice):
                parts = [ref(x) for x in (r.start, r.stop, r.step)]
                counter[0] += 1
                name = f"%{counter[0]}"
                lines.append(f"  {name} : slice = prim::SliceConstruct({', '.join(parts)})")
                return name
            return const(r)

        dyn = self.dynamic
        head = ",\n      ".join(f"%{v.name} : {v.type_str(dyn)}" for v in self.inputs)
        for c in self.constants:
            lines.append(f"  %{c.name} : {c.type_str(dyn)} = prim::Constant[value=<Tensor>]()")
        for node in self.nodes:
            args = []
            for name, a in zip(node.site.names, node.args) if node.site is not None else ():
                if name == "out" and a is None:
                    continue
                args.append(ref(a))
            outs = ", ".join(f"%{v.name} : {v.type_str(dyn)}" for v in node.outputs)
            call = f"{node.kind}({', '.join(args)})"
            lines.append(f"  {outs} = {call}" if outs else f"   = {call}")
        rets = ", ".join(repr(v) if isinstance(v, Value) else ref(v) for v in _output_leaves(self.output))
        lines.append(f"  return ({rets})")
        return "graph(" + head + "):\n" + "\n".join(lines) + "\n"


def _output_leaves(spec):
    kind = spec[0]
    if kind in ("value", "literal"):
        return [spec[1]]
    items = spec[1].values() if kind == "dict" else spec[-1]
    out = []
    for s in items:
        out.extend(_output_leaves(s))
    return out


def _output_values(spec, out):
    for leaf in _output_leaves(spec):
        if isinstance(leaf, Value):
            out.append(leaf)


def _lit_type(lit):
    if lit is None:
        return "NoneType"
    if isinstance(lit, bool):
        return "bool"
    if isinstance(lit, int):
        return "int"
    if isinstance(lit, float):
        return "float"
    if isinstance(lit, str):
        return "str"
    if isinstance(lit, D.dtype):
        return "ScalarType"
    if isinstance(lit, (tuple, list)):
        return _list_type(lit)
    return type(lit).__name__


def _list_type(seq):
    inner = {_lit_type(x) if not isinstance(x, Value) else "Tensor" for x in seq}
    return (inner.pop() if len(inner) == 1 else "Any") + "[]"


def _lit_attr(lit):
    if lit is None or (isinstance(lit, (tuple, list)) and not lit):
        return "" if lit is None else "[value=[]]"
    if isinstance(lit, bool):
        return f"[value={int(lit)}]"
    if isinstance(lit, float) and not math.isfinite(lit):
        return f"[value={lit}]"
    if isinstance(lit, str):
        return f'[value="{lit}"]'
    if isinstance(lit, D.dtype):
        return f"[value=pytorchlite.{lit.name}]"
    return f"[value={lit!r}]"
