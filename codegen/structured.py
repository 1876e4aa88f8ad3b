"""Structured kernels: ops.yaml `structured:` -> generated/structured.py.

    - func: _softmax(Tensor self, int dim, bool half_to_float) -> Tensor
      structured:
        meta: pytorchlite._kernels.nn.softmax_meta
        precomputed: [outer, n, inner]
        cpu: ptl_softmax_forward(dtype=self.dtype, x=self, y=result, outer=outer, n=n, inner=inner, is_log=0)

`meta` names the hand-written function that holds PyTorch's rules (checks, output shapes
and dtypes, precomputed values; pytorchlite/_structured.py: Meta). Each device key gives
the C call as a call expression whose keywords are the C prototype's parameter names
(positional arguments bind in order). A value is a tensor argument or an output (passed
as a descriptor to a `ptl_tensor *` parameter, as a contiguous address to `intptr_t`, as
a typed pointer to `int64_t *` and the like), `X.dtype` (the dtype code of a tensor), a
scalar argument of the schema, a precomputed name, a number, or `null`;
`contiguous(X)` passes a tensor argument's descriptor after making it contiguous (for
kernels that walk a descriptor's data as one contiguous block). A tensor bound to an
address or a typed pointer is always read contiguous.

A meta function may also give `error=`, a callable that turns a failing status into the
exception PyTorch raises (or returns None to fall back to the generic one), for kernels
that report what went wrong through an out-parameter (e.g. the bad target of nll_loss).
Named returns come back as `pytorchlite.return_types.<name>` when that module declares it,
and as a plain tuple otherwise (as PyTorch's aten operators without a structseq).

At generation time every call is checked against its prototype, read from
kernels/cdefs.h: the function exists and returns a status (`int`), every parameter is
bound exactly once, and each value fits the parameter's C type. The generated impl
allocates the outputs, prepares the operands, makes the call, checks the status naming
the operator, and returns the outputs (a named tuple for named returns).

Value forms for operands the kernel reads with strides of its own choosing:

* `X.data_ptr()` (an `intptr_t` parameter): the address of X's first element as X is,
  not made contiguous; the call passes the layout itself, e.g. with `X.stride(0)`.
* `X.size(d)`, `X.stride(d)` (integer parameters): one size or stride of X, d a number.
* `[X, Y, Z]` (a `ptl_tensor *` parameter): consecutive descriptors, one per tensor.

Optional keys, for kernels that need more than outputs in and out (LAPACK's batched
factorizations: a column-major work copy of the input, pivots, one `info` per matrix):

    - func: linalg_cholesky(Tensor self, *, bool upper=False) -> Tensor
      structured:
        meta: pytorchlite._kernels.lapack.cholesky_meta
        precomputed: [nb, n]
        scratch: [info]
        init: {result: self}
        cpu: ptl_lapack_cholesky(dtype=self.dtype, batch=nb, n=n, a=result, upper=upper, info=info)
        finish: pytorchlite._kernels.lapack.cholesky_finish

* `scratch:` names temporaries the call binds like outputs; the meta function gives each
  one's `(shape, dtype)` as a value of that name. One bound to typed pointers only
  (`int32_t *info`) is a zeroed C array of that type, not a tensor.
* `init:` maps an output or a scratch tensor to what it holds before the call: a tensor
  argument (as the meta function gave it in `inputs=`; None leaves the target as it is),
  a precomputed value (a tensor, a number, or None) or a number. Tensors broadcast.
* An output or scratch spec `(shape, dtype, COLUMN_MAJOR)` (pytorchlite/_structured.py)
  stores its matrices column-major, as LAPACK writes them and PyTorch returns them.
* `finish:` names a function called after the status check as
  `finish(meta, *outputs, *scratch)` (schema order, then scratch order); what it returns is
  the operator's result (PyTorch's per-matrix error checks, views of the outputs). Without
  it the outputs are returned as they are, and `out=` is written directly when it fits.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass

DEVICES = ("cpu", "cuda")
# devices whose impl is a Python launcher of the backend's kernels (resolved through the
# device registry), not a C call through cffi
LAUNCHER_DEVICES = ("cuda",)
_POINTER = re.compile(r"^(const\s+)?(int64_t|int32_t|double|float|uint8_t|void|int)\s*\*$")
_SCALAR_INT = ("int", "int32_t", "int64_t", "uint64_t", "uint32_t", "intptr_t")
_SCALAR_FLOAT = ("double", "float")


class StructuredError(Exception):
    pass


@dataclass(frozen=True)
class Param:
    ctype: str
    name: str

    @property
    def kind(self):
        t = self.ctype.replace("const ", "").strip()
        if t == "ptl_tensor *":
            return "descriptor"
        if t == "intptr_t":
            return "address"
        if _POINTER.match(self.ctype):
            return "pointer"
        if t in _SCALAR_INT:
            return "int"
        if t in _SCALAR_FLOAT:
            return "float"
        return "other"


@dataclass(frozen=True)
class Prototype:
    ret: str
    name: str
    params: tuple


def parse_prototypes(text):
    """{name: Prototype} of the `ptl_*` functions declared in a C header."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    out = {}
    for decl in text.split(";"):
        decl = " ".join(decl.split())
        m = re.match(r"^([\w\s\*]+?)\s*\b(ptl_\w+)\s*\((.*)\)$", decl)
        if not m:
            continue
        params = []
        body = m.group(3).strip()
        if body and body != "void":
            for p in body.split(","):
                p = p.strip()
                pm = re.match(r"^(.*?)(\w+)$", p)
                ctype = re.sub(r"\s*\*\s*", " *", pm.group(1).strip()).strip()
                params.append(Param(ctype, pm.group(2)))
        out[m.group(2)] = Prototype(m.group(1).strip(), m.group(2), tuple(params))
    return out


def load_prototypes(root):
    with open(os.path.join(root, "kernels", "cdefs.h"), encoding="utf-8") as f:
        return parse_prototypes(f.read())


@dataclass(frozen=True)
class Binding:
    param: Param
    source: str          # the value expression as written
    kind: str            # tensor | contiguous | dtype | scalar | literal | null | numel
    name: str = ""       # the tensor / scalar / precomputed name
    value: object = None


@dataclass(frozen=True)
class Call:
    device: str
    function: str
    bindings: tuple


@dataclass(frozen=True)
class Structured:
    meta: str
    precomputed: tuple
    calls: tuple
    scratch: tuple = ()      # names of temporaries (specs from the meta function)
    init: tuple = ()         # ((target, source text), ...)
    finish: str = ""         # "module.function" run after the call, or ""


EXTRA_KEYS = ("scratch", "init", "finish")


def parse_extras(raw, fail):
    """The optional keys of a `structured:` block: {'scratch': (...), 'init': (...), 'finish': str}."""
    out = {}
    scratch = raw.get("scratch", [])
    if isinstance(scratch, str):
        scratch = [p.strip() for p in scratch.split(",") if p.strip()]
    if not isinstance(scratch, list) or not all(isinstance(p, str) and p.isidentifier() for p in scratch):
        raise fail("'scratch' must list the names of the temporaries the C call binds")
    if scratch:
        out["scratch"] = tuple(scratch)
    init = raw.get("init", {})
    if isinstance(init, dict):
        init = {k: v for k, v in init.items() if k != "__line__"}
    if not isinstance(init, dict) or not all(isinstance(k, str) and k.isidentifier() for k in init) or \
            not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in init.values()):
        raise fail("'init' must map an output or scratch name to a tensor argument, a precomputed name or a number")
    if init:
        out["init"] = tuple((k, str(v)) for k, v in init.items())
    finish = raw.get("finish")
    if finish is not None:
        if not isinstance(finish, str) or "." not in finish:
            raise fail("'finish' must name a 'module.function' (called with the meta result and the outputs)")
        out["finish"] = finish
    return out


def parse(raw, schema, fail):
    """The `structured:` block of one entry (without the prototype check)."""
    if not isinstance(raw, dict):
        raise fail("'structured' must be a mapping with 'meta' and a C call per device")
    raw = {k: v for k, v in raw.items() if k != "__line__"}
    meta = raw.pop("meta", None)
    if not isinstance(meta, str) or "." not in meta:
        raise fail("'structured' needs 'meta: module.function' (PyTorch's checks and the output shapes)")
    pre = raw.pop("precomputed", [])
    if isinstance(pre, str):
        pre = [p.strip() for p in pre.split(",") if p.strip()]
    if not isinstance(pre, list) or not all(isinstance(p, str) and p.isidentifier() for p in pre):
        raise fail("'precomputed' must list the names of values the meta function computes")
    calls = []
    for dev in sorted(raw):
        if dev in EXTRA_KEYS:
            continue
        if dev not in DEVICES:
            raise fail(f"structured: unknown key '{dev}' (known: meta, precomputed, {', '.join(EXTRA_KEYS)}, "
                       f"{', '.join(DEVICES)})")
        src = raw[dev]
        if dev in LAUNCHER_DEVICES:
            if not isinstance(src, str) or "." not in src or "(" in src:
                raise fail(f"structured: {dev} must name the backend's launcher as 'module.function', got {src!r}")
        elif not isinstance(src, str):
            raise fail(f"structured: {dev} must be a C call such as ptl_f(x=self, y=result)")
        calls.append((dev, src))
    if not calls:
        raise fail("'structured' names no device's C call")
    return meta, tuple(pre), tuple(calls)


def _outputs(schema):
    rets = schema.returns
    if len(rets) == 1 and not rets[0].name:
        return ["result"]
    return [r.name or f"result{i}" for i, r in enumerate(rets)]


def check_call(op_where, schema, precomputed, device, src, protos, scratch=()):
    """Parse and check one device's call against its C prototype -> Call."""
    def fail(msg):
        from .model import CodegenError
        return CodegenError(f"{op_where}: structured {device}: {msg}")

    try:
        tree = ast.parse(src.strip(), mode="eval").body
    except SyntaxError as e:
        raise fail(f"not a call expression: {e.msg}: {src!r}") from None
    if not isinstance(tree, ast.Call) or not isinstance(tree.func, ast.Name):
        raise fail(f"expected a call of a C function, like ptl_f(x=self), got {src!r}")
    fname = tree.func.id
    proto = protos.get(fname)
    if proto is None:
        import difflib
        hint = difflib.get_close_matches(fname, list(protos), n=1)
        raise fail(f"no C prototype '{fname}' in kernels/cdefs.h" + (f" (did you mean '{hint[0]}'?)" if hint else ""))
    if proto.ret != "int":
        raise fail(f"{fname} returns {proto.ret}, not an int status")
    tensors = {a.name for a in schema.arguments if a.type.is_tensor and not a.type.is_list}
    scalars = {a.name: a for a in schema.arguments if not a.type.is_tensor}
    outputs = set(_outputs(schema)) | set(scratch)
    clash = sorted(set(precomputed) & (tensors | set(scalars) | outputs))
    if clash:
        raise fail(f"precomputed value '{clash[0]}' has the name of an argument, output or scratch tensor "
                   "(which a call would bind instead): rename it")
    given = {}
    if len(tree.args) > len(proto.params):
        raise fail(f"{fname} takes {len(proto.params)} arguments, {len(tree.args)} given")
    for p, a in zip(proto.params, tree.args):
        given[p.name] = a
    by_name = {p.name: p for p in proto.params}
    for kw in tree.keywords:
        if kw.arg is None or kw.arg not in by_name:
            raise fail(f"{fname} has no parameter '{kw.arg}' (its parameters: "
                       f"{', '.join(p.name for p in proto.params)})")
        if kw.arg in given:
            raise fail(f"parameter '{kw.arg}' of {fname} is bound twice")
        given[kw.arg] = kw.value
    missing = [f"{p.ctype} {p.name}" for p in proto.params if p.name not in given]
    if missing:
        raise fail(f"{fname}: parameter {', '.join(missing)} is not bound")
    bindings = []
    for p in proto.params:
        node = given[p.name]
        text = ast.unparse(node)
        b = _binding(p, node, text, tensors | outputs, scalars, set(precomputed), fail, outputs)
        bindings.append(b)
    return Call(device, fname, tuple(bindings))


def _binding(p, node, text, tensors, scalars, precomputed, fail, outputs=frozenset()):
    kind = p.kind
    where = f"parameter '{p.ctype} {p.name}' <- {text}"
    strided = _strided_binding(p, node, where, tensors, fail)
    if strided is not None:
        return strided
    if isinstance(node, ast.Name) and node.id == "null":
        if kind not in ("descriptor", "pointer", "address"):
            raise fail(f"{where}: null needs a pointer parameter")
        return Binding(p, text, "null")
    if isinstance(node, ast.Name) and node.id in tensors:
        if kind not in ("descriptor", "address", "pointer"):
            raise fail(f"{where}: a tensor needs a ptl_tensor *, intptr_t or pointer parameter")
        return Binding(p, text, "tensor", node.id)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "contiguous":
        if len(node.args) != 1 or node.keywords or not isinstance(node.args[0], ast.Name) or \
                node.args[0].id not in tensors - outputs:
            raise fail(f"{where}: contiguous() takes one tensor argument of the schema")
        if kind != "descriptor":
            raise fail(f"{where}: contiguous() is for a ptl_tensor * parameter (an address or a pointer is "
                       "always read contiguous)")
        return Binding(p, text, "contiguous", node.args[0].id)
    if isinstance(node, ast.Attribute) and node.attr == "dtype" and isinstance(node.value, ast.Name):
        if node.value.id not in tensors:
            raise fail(f"{where}: '{node.value.id}' is not a tensor argument or output")
        if kind != "int":
            raise fail(f"{where}: a dtype code needs an integer parameter")
        return Binding(p, text, "dtype", node.value.id)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "numel" and \
            len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id in tensors:
        if kind != "int":
            raise fail(f"{where}: numel() needs an integer parameter")
        return Binding(p, text, "numel", node.args[0].id)
    if isinstance(node, ast.Name) and node.id in scalars:
        arg = scalars[node.id]
        base = arg.type.base
        ok = {"int": ("int",), "SymInt": ("int",), "bool": ("int",), "float": ("float",),
              "Scalar": ("float", "int")}.get(base, ())
        if arg.type.is_list or arg.type.optional and base != "bool" or kind not in ok:
            raise fail(f"{where}: the schema's {arg.type} '{arg.name}' does not fit {p.ctype}")
        return Binding(p, text, "scalar", node.id)
    if isinstance(node, ast.Name) and node.id in precomputed:
        if kind == "descriptor":
            raise fail(f"{where}: a precomputed value cannot be a descriptor")
        return Binding(p, text, "precomputed", node.id)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and \
            not isinstance(node.value, bool) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
                                                 and isinstance(node.operand, ast.Constant)):
        value = ast.literal_eval(node)
        if kind == "int" and not isinstance(value, int) or kind not in ("int", "float"):
            raise fail(f"{where}: the number {value!r} does not fit {p.ctype}")
        return Binding(p, text, "literal", value=value)
    if isinstance(node, ast.Name):
        raise fail(f"{where}: '{node.id}' is not an argument, an output or a precomputed value")
    raise fail(f"{where}: unsupported value (use an argument, an output, X.dtype, numel(X), a precomputed "
               "name, a number or null)")


def _strided_binding(p, node, where, tensors, fail):
    """X.data_ptr(), X.size(d), X.stride(d) and [X, Y, ...]: operands the kernel reads in
    their own layout (None when the value is none of these)."""
    kind = p.kind
    if isinstance(node, ast.List):
        names = [e.id if isinstance(e, ast.Name) else None for e in node.elts]
        if not names or None in names or any(n not in tensors for n in names):
            raise fail(f"{where}: a list must name tensor arguments or outputs")
        if kind != "descriptor":
            raise fail(f"{where}: a list of tensors needs a ptl_tensor * parameter")
        return Binding(p, ast.unparse(node), "descriptors", value=tuple(names))
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("data_ptr", "size", "stride") and not node.keywords):
        return None
    obj, method = node.func.value, node.func.attr
    if not (isinstance(obj, ast.Name) and obj.id in tensors):
        raise fail(f"{where}: {method}() needs a tensor argument or output")
    if method == "data_ptr":
        if node.args or kind != "address":
            raise fail(f"{where}: data_ptr() takes no argument and needs an intptr_t parameter")
        return Binding(p, ast.unparse(node), "data_ptr", obj.id)
    try:
        (d,) = [ast.literal_eval(a) for a in node.args]
    except ValueError:
        d = None
    if not isinstance(d, int) or isinstance(d, bool):
        raise fail(f"{where}: {method}() takes one dimension, a number")
    if kind != "int":
        raise fail(f"{where}: {method}() needs an integer parameter")
    return Binding(p, ast.unparse(node), method, obj.id, d)


def check_extras(op_where, schema, st):
    """scratch, init and finish of one entry, against its schema and precomputed names."""
    def fail(msg):
        from .model import CodegenError
        return CodegenError(f"{op_where}: structured: {msg}")

    outputs = _outputs(schema)
    tensors = {a.name for a in schema.arguments if a.type.is_tensor and not a.type.is_list}
    for name in st.scratch:
        if name in outputs or name in tensors or name in st.precomputed:
            raise fail(f"scratch '{name}' is already an argument, an output or a precomputed name")
    for target, source in st.init:
        if target not in outputs and target not in st.scratch:
            raise fail(f"init: '{target}' is not an output or a scratch tensor (outputs: {', '.join(outputs)})")
        if source not in tensors and source not in st.precomputed and _number(source) is None:
            raise fail(f"init: {target} <- {source}: not a tensor argument, a precomputed name or a number")


def _number(text):
    try:
        v = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


# --- rendering --------------------------------------------------------------------------------

class StructuredView:
    """What generated/structured.py needs of one structured operator on one device."""

    launcher = None

    def __init__(self, op, call, structseqs=frozenset()):
        schema = op.schema
        self.name = op.name
        self.device = call.device
        self.entry = f"{op.name}__{call.device}"
        self.meta_module, _, self.meta_function = op.structured.meta.rpartition(".")
        self.params = [a.name for a in schema.arguments if a not in schema.out_arguments]
        self.tensor_args = [a.name for a in schema.arguments
                            if a.type.is_tensor and not a.type.is_list and a not in schema.out_arguments]
        self.outputs = _outputs(schema)
        self.named_returns = (all(r.name for r in schema.returns) and len(schema.returns) > 1
                              and op.name in structseqs)
        factory = not self.tensor_args and any(a.name == "device" for a in schema.arguments)
        if self.tensor_args:
            # the device comes from a tensor argument that is always a tensor
            sure = [t for t in self.tensor_args if t not in op.tensor_scalars] or self.tensor_args
            first = next(a for a in schema.arguments if a.name == sure[0])
            self.device_expr = (f"{_v(first.name)}._device" if not first.type.optional else
                                " or ".join(f"({_v(t)}._device if {_v(t)} is not None else None)"
                                            for t in self.tensor_args))
        elif factory:
            self.device_expr = "_a.factory_device(device)"
        else:
            self.device_expr = "_CPU"
        st = op.structured
        self.scratch = list(st.scratch)
        # scratch bound only to typed pointers (pivots, infos) are C arrays of that type:
        # cheaper than tensors, and they start zeroed
        params = {}
        for b in getattr(call, "bindings", ()):       # a launcher has none: its scratch are tensors
            if b.kind == "tensor" and b.name in self.scratch:
                params.setdefault(b.name, []).append(b.param)
        self.carrays = {}
        for name, ps in params.items():
            if all(p.kind == "pointer" for p in ps) and len({p.ctype for p in ps}) == 1:
                self.carrays[name] = ps[0].ctype.replace("const ", "").replace("*", "").strip() + "[]"
        finish_module, _, self.finish_function = st.finish.rpartition(".")
        self.finish_module = finish_module or None
        self.uses_values = bool(st.precomputed or st.scratch)
        # the meta function may answer with a bare (shape, dtype) when there is nothing else
        self.bare = len(self.outputs) == 1 and not (self.uses_values or st.init or st.finish)
        if isinstance(call, Launcher):
            # every tensor argument goes to the launcher contiguous, in the compute dtype
            self.launcher = call.target
            self.inputs = [(t, True) for t in self.tensor_args]
        else:
            self.function = call.function
            uses = {}
            for b in call.bindings:
                if b.kind in ("tensor", "contiguous"):
                    uses.setdefault(b.name, set()).add(b.kind if b.kind == "contiguous" else b.param.kind)
                elif b.kind in ("data_ptr", "size", "stride", "dtype", "numel"):
                    uses.setdefault(b.name, set()).add("strided")
                elif b.kind == "descriptors":
                    for t in b.value:
                        uses.setdefault(t, set()).add("strided")
            for _, source in st.init:
                uses.setdefault(source, set()).add("strided")
            # an input bound to an address or a typed pointer (or passed as contiguous(X)) is
            # read contiguous: the kernel walks it as one block
            self.inputs = [(t, bool(uses[t] & {"address", "pointer", "contiguous"}))
                           for t in self.tensor_args if t in uses]
        self.strided = [t for t, contiguous in self.inputs if not contiguous]
        self.strided_vars = [f"_i_{t}" for t in self.strided]
        # init statements: a tensor argument (as the meta function gave it; None: nothing) is
        # copied in, a number filled in, a precomputed value is either (_S.init)
        self.inits = []
        for target, source in st.init:
            if target in self.carrays:
                from .model import CodegenError
                raise CodegenError(f"{op.where}: structured: init: scratch '{target}' is a C array (bound to a "
                                   f"{self.carrays[target][:-2]} *): it starts zeroed and takes no init")
            t = self._var(target)
            if source in self.tensor_args:
                self.inits.append(f"if {self._var(source)} is not None: _S.copy_into({t}, {self._var(source)})")
            elif source in st.precomputed:
                self.inits.append(f"_S.init({t}, _v[{source!r}])")
            else:
                self.inits.append(f"_S.fill({t}, {source})")
        # what an out= tensor must not share memory with: the operands and what is copied in
        self.reads = [f"_i_{t}" for t, _ in self.inputs] + [
            f"_v[{source!r}]" for _, source in st.init if source in st.precomputed]
        self.ndesc = 0
        self.describe = []     # statements filling descriptor lists before the call
        self.args = []
        if self.launcher:
            return
        self.ndesc = sum(1 for b in call.bindings
                         if b.kind in ("tensor", "contiguous") and b.param.kind == "descriptor")
        self.ndesc += sum(len(b.value) for b in call.bindings if b.kind == "descriptors")
        k = 0
        for b in call.bindings:
            self.args.append(self._arg(b, k))
            if b.kind in ("tensor", "contiguous") and b.param.kind == "descriptor":
                k += 1
            elif b.kind == "descriptors":
                for i, t in enumerate(b.value):
                    spec = f", {self._spec(t)}" if t in self.outputs else ""
                    self.describe.append(f"_S.describe(_descs, {k + i}, {self._var(t)}{spec})")
                k += len(b.value)

    def _spec(self, output):
        """The expression of an output's spec in the generated impl."""
        if len(self.outputs) == 1 and not self.finish_module:
            return "_spec"
        return f"_m.outputs[{self.outputs.index(output)}]"

    def _var(self, name):
        return f"_s_{name}" if name in self.scratch else _t(name, self.outputs)

    def _arg(self, b, k):
        p = b.param
        if b.kind == "null":
            return "0" if p.kind == "address" else "_NULL"
        if b.kind == "literal":
            return repr(b.value)
        if b.kind == "scalar":
            return f"{'int' if p.kind == 'int' else 'float'}({_v(b.name)})"
        if b.kind == "precomputed":
            return f"_v[{b.name!r}]"
        if b.kind == "descriptors":
            return f"_descs + {k}" if k else "_descs"
        var = self._var(b.name)
        if b.kind == "data_ptr":
            # inline: a call costs more than the arithmetic on the matrix-product paths
            return f"{var}._storage.ptr + {var}._offset * {var}._dtype.itemsize"
        if b.kind in ("size", "stride"):
            return f"{var}._{'shape' if b.kind == 'size' else 'stride'}[{b.value}]"
        if b.kind == "dtype":
            return f"{var}._dtype.code"
        if b.kind == "numel":
            return f"_S.size({var})"
        if p.kind == "descriptor":
            spec = f", {self._spec(b.name)}" if b.name in self.outputs else ""
            return f"_S.describe(_descs, {k}, {var}{spec})"
        if b.name in self.carrays:
            return var
        # a single output and scratch tensors are never None: their addresses are computed
        # inline (a call costs more than the arithmetic)
        never_none = (var.startswith("_o_") and len(self.outputs) == 1 and not self.finish_module
                      or var.startswith("_s_"))
        at = f"{var}._storage.ptr + {var}._offset * {var}._dtype.itemsize"
        if p.kind == "address":
            return at if never_none else f"(0 if {var} is None else {at})"
        ctype = p.ctype.replace('const ', '')
        cast = f"_ffi.cast({ctype!r}, {at})"
        return cast if never_none else f"(_NULL if {var} is None else {cast})"


def _v(name):
    return name + "_" if name in ("from", "in", "is", "lambda", "global", "class", "def", "return", "import") else name


def _t(name, outputs):
    return f"_o_{name}" if name in outputs else f"_i_{name}"


@dataclass(frozen=True)
class Launcher:
    """A device whose impl is the backend's Python launcher: called with the meta result,
    the prepared inputs and the allocated outputs, by name."""
    device: str
    target: str


def structseqs(root):
    """The names pytorchlite/return_types.py declares at module level (named tuples)."""
    path = os.path.join(root, "pytorchlite", "return_types.py")
    if not os.path.exists(path):
        return frozenset()
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return frozenset(t.id for node in tree.body if isinstance(node, ast.Assign)
                     for t in node.targets if isinstance(t, ast.Name) and not t.id.startswith("_"))


def views(ops, root):
    """Check every structured call against kernels/cdefs.h; the views to render."""
    protos = load_prototypes(root)
    named = structseqs(root)
    out = []
    for op in ops:
        if op.structured is None:
            continue
        check_extras(op.where, op.schema, op.structured)
        for dev, src in op.structured.calls:
            if dev in LAUNCHER_DEVICES:
                call = Launcher(dev, src)
            else:
                call = check_call(op.where, op.schema, op.structured.precomputed, dev, src, protos,
                                  op.structured.scratch)
            out.append(StructuredView(op, call, named))
    return out
