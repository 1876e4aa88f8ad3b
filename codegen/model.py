"""ops.yaml -> frozen dataclasses, strictly.

Every entry is read by popping the keys this module knows; anything left over, a
duplicate key, a duplicate operator, an unknown type or a body that does not parse is a
CodegenError that starts with `ops.yaml:LINE: <schema>:` so the author can go straight to
the entry. The language itself is documented in docs/ops_yaml.md.

One name may have several entries, PyTorch's overloads (`max`, `max.dim`, `max.other`):
each is an operator of its own (its own binding, dispatch entry and derivative), and the
generated argument parser picks one per call. `alias_of:` gives an operator a second
name; a composite longer than one expression is a function in a Python module, checked
here against the schema (parsed with `ast`: codegen never imports pytorchlite).
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import os
import re
from dataclasses import dataclass, field
from typing import Optional

import yaml

from . import abi, cexpr, onnx as onnx_mod, operators as pyops, structured as structured_mod
from .schema import FunctionSchema, SchemaError, parse_schema

# dtype groups a pointwise entry may name in `dtypes:`
DTYPE_GROUPS = {
    "bool": ("bool",),
    "integral": ("uint8", "int8", "int16", "int32", "int64"),
    "floating": ("float16", "bfloat16", "float32", "float64"),
}
DTYPE_GROUPS["all"] = DTYPE_GROUPS["bool"] + DTYPE_GROUPS["integral"] + DTYPE_GROUPS["floating"]
ALL_DTYPES = DTYPE_GROUPS["all"]
assert ALL_DTYPES == tuple(d[0] for d in abi.DTYPES), "DTYPE_GROUPS must list the dtypes in codegen/abi.py's order"
DTYPE_CLASS = {d: ("b" if d == "bool" else "i" if d in DTYPE_GROUPS["integral"] else "f")
               for d in ALL_DTYPES}
PROMOTIONS = ("default", "int_to_float", "bool_out", "int_out", "first", "where")
VARIANTS = ("function", "method", "inplace", "out")
DEVICES = ("cpu", "cuda", "any")
PYTHON_MODULES = ("", "linalg", "nn.functional", "special", "fft")


class CodegenError(Exception):
    """An error in ops.yaml or derivatives.yaml; str() starts with file:line."""


# --- YAML with line numbers and duplicate-key rejection ------------------------------

# libyaml's parser where PyYAML has it: a quarter of `python -m codegen`'s time otherwise
class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    pass


def _construct_mapping(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise CodegenError(f"{loader.name}:{key_node.start_mark.line + 1}: duplicate key '{key}' "
                               f"(first at line {seen[key]})")
        seen[key] = key_node.start_mark.line + 1
    mapping = yaml.SafeLoader.construct_mapping(loader, node, deep=deep)
    mapping["__line__"] = node.start_mark.line + 1
    return mapping


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml(path, display_name):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    loader = _Loader(text)
    loader.name = display_name
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as e:
        raise CodegenError(f"{display_name}: not valid YAML: {e}") from None
    finally:
        loader.dispose()
    if data is None:
        return []
    if not isinstance(data, list):
        raise CodegenError(f"{display_name}: expected a list of entries at the top level")
    return data


# --- the model ------------------------------------------------------------------------

@dataclass(frozen=True)
class PointwiseBody:
    dtypes: tuple            # dtype names the kernel is generated for
    bodies: tuple            # ((dtype class set as str, parsed tree, source), ...)
    promotion: str
    # PyTorch's rules beyond the arithmetic (docs/ops_yaml.md, "pointwise rules")
    check: str = ""          # "module.function": argument checks made before the kernel
    kernel_name: str = ""    # the kernel PyTorch names in "not implemented for" errors
    dtype_errors: tuple = () # ((dtype name, message), ...): PyTorch's own error for a dtype
    out_dtype_error: str = ""  # out= must have exactly the result dtype; the message
    all_numbers: bool = False  # also runs on Python numbers alone (torch.add(2, 3))

    def body_for(self, dtype_name):
        cls = DTYPE_CLASS[dtype_name]
        for classes, tree, _src in self.bodies:
            if cls in classes:
                return tree
        raise KeyError(dtype_name)


@dataclass(frozen=True)
class Operator:
    schema: FunctionSchema
    file: str
    line: int
    variants: tuple
    kind: str                      # "pointwise" | "composite" | "kernel" | "alias" (see impl)
    pointwise: Optional[PointwiseBody] = None
    composite: Optional[str] = None
    kernels: tuple = ()            # ((device, "module.function"), ...)
    python_module: str = ""
    doc: str = ""
    differentiable: Optional[bool] = None
    tensor_scalars: tuple = field(default=())  # Tensor args that also accept Python numbers
    inplace_kernel: bool = False   # the kernel writes the in-place form's result into self itself
    # out=/in-place rules of kernel and composite entries (pointwise ones: PointwiseBody):
    out_dtype_error: str = ""      # out= must have exactly the result dtype; PyTorch's message
    out_cast_error: str = ""       # "TypeError: <message>" when out= cannot take the result's dtype
    # which memory overlap of the written-to tensor and an input is refused, (out=, in place)
    out_overlap: tuple = ("partial", "partial")
    python_operators: tuple = ()   # Tensor's Python operators that call it (codegen/operators.py)
    structured: Optional[object] = None   # codegen/structured.py: Structured (meta + C calls)
    composite_fn: str = ""         # "pytorchlite._composites.linalg.cross": the composite is that function
    alias_of: str = ""             # full name of the operator this one is another name for
    target: Optional["Operator"] = None   # (aliases) that operator, resolved by load_ops
    overloaded: bool = False       # its name has several entries (set by load_ops)
    onnx: Optional[object] = None  # codegen/onnx.py: OnnxForm, the `onnx:` key (an alias: its target's)

    @property
    def name(self):
        return self.schema.name

    @property
    def full_name(self):
        return self.schema.full_name

    @property
    def ident(self):
        """A Python identifier unique among the operators: `max_dim` for max.dim."""
        return self.name + (f"_{self.schema.overload}" if self.schema.overload else "")

    @property
    def impl(self):
        """The operator whose implementation (and derivative) runs: itself, or an alias's target."""
        return self.target if self.target is not None else self

    # The names of the generated bindings. An overloaded name's public function and method
    # are argument parsers (codegen/overloads.py) over these per-overload bindings.
    @property
    def function_pyname(self):
        return f"_o_{self.ident}" if self.overloaded else self.name

    @property
    def method_pyname(self):
        return f"_om_{self.ident}" if self.overloaded else f"_m_{self.name}"

    @property
    def inplace_pyname(self):
        return self.method_pyname + "_"

    @property
    def where(self):
        return f"{self.file}:{self.line}: {self.schema}"

    @property
    def tensor_args(self):
        return tuple(a for a in self.schema.arguments if a.type.is_tensor)

    @property
    def scalar_args(self):
        return tuple(a for a in self.schema.arguments if a.type.base == "Scalar")

    @property
    def has_method(self):
        return "method" in self.variants

    @property
    def has_function(self):
        return "function" in self.variants

    @property
    def has_inplace(self):
        return "inplace" in self.variants

    @property
    def has_out(self):
        return "out" in self.variants

    def kernel_for(self, device):
        return dict(self.kernels).get(device)


_ENTRY_KEYS = ("func", "variants", "pointwise", "dtypes", "promotion", "composite", "kernel", "alias_of",
               "python_module", "doc", "differentiable", "tensor_scalars", "inplace_kernel", "operators",
               "check", "kernel_name", "dtype_errors", "out_dtype_error", "all_numbers", "structured", "out_overlap",
               "out_cast_error", "onnx")
# keys an alias takes from its target instead
_IMPL_KEYS = ("pointwise", "dtypes", "promotion", "composite", "kernel", "structured", "differentiable",
              "tensor_scalars", "inplace_kernel", "check", "kernel_name", "dtype_errors", "out_dtype_error",
              "all_numbers", "out_overlap", "out_cast_error", "onnx")
# `composite: pytorchlite._composites.linalg.cross` names a function in a module
_COMPOSITE_FN = re.compile(r"^pytorchlite\._composites\.[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$")


def _err(file, line, func, msg):
    head = f"{file}:{line}: " + (f"{func}: " if func else "")
    return CodegenError(head + msg)


def _as_list(value):
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list):
        return [str(v) for v in value]
    raise TypeError


def _parse_entry(raw, file):
    if not isinstance(raw, dict):
        raise CodegenError(f"{file}: every entry must be a mapping, got {raw!r}")
    e = dict(raw)
    line = e.pop("__line__")
    func = e.pop("func", None)
    if not isinstance(func, str):
        raise _err(file, line, None, "entry has no 'func:' schema")
    try:
        schema = parse_schema(func)
    except SchemaError as exc:
        raise _err(file, line, func, str(exc)) from None

    def fail(msg):
        return _err(file, line, func, msg)

    structured = None
    alias_of = e.pop("alias_of", "")
    if alias_of:
        if not isinstance(alias_of, str) or not re.fullmatch(r"[A-Za-z_]\w*(\.\w+)?", alias_of):
            raise fail(f"'alias_of' must name an operator (name or name.overload), got {alias_of!r}")
        given = [k for k in _IMPL_KEYS if k in e]
        if given:
            raise fail(f"an alias runs its target's implementation: remove '{given[0]}' (alias_of: {alias_of})")
        kind = "alias"
    else:
        kinds = [k for k in ("pointwise", "composite", "kernel", "structured") if k in e]
        if len(kinds) != 1:
            raise fail("give exactly one of 'pointwise:', 'composite:', 'kernel:', 'structured:' or 'alias_of:'"
                       + (f" (got {', '.join(kinds)})" if kinds else ""))
        kind = kinds[0]
    if kind == "structured":
        # a kernel whose impl codegen writes (generated/structured.py) around a meta function
        raw = e.pop("structured")
        meta, pre, calls = structured_mod.parse(raw, schema, fail)
        structured = structured_mod.Structured(meta, pre, calls, **structured_mod.parse_extras(raw, fail))
        e["kernel"] = {dev: f"pytorchlite.generated.structured.{schema.name}__{dev}" for dev, _ in calls}
        kind = "kernel"

    default_variants = ["function", "method", "inplace", "out"] if kind == "pointwise" else ["function", "method"]
    if kind == "alias" and "variants" not in e:
        default_variants = []     # the target's, once it is known (load_ops)
    try:
        variants = _as_list(e.pop("variants", default_variants))
    except TypeError:
        raise fail("'variants' must be a list or a comma-separated string") from None
    for v in variants:
        if v not in VARIANTS:
            raise fail(f"unknown variant '{v}' (known: {', '.join(VARIANTS)})")
    # self is usually first; where(condition, self, other) binds x.where(condition, y) as in PyTorch
    if "method" in variants and not any(a.name == "self" and a.type.is_tensor for a in schema.positional):
        raise fail("a 'method' variant needs 'Tensor self' as a positional argument")
    if ("inplace" in variants or "out" in variants) and not (
            len(schema.returns) == 1 and schema.returns[0].type.is_tensor):
        # out= of several Tensor results takes a tuple of out tensors (torch.sort(x, out=(v, i)))
        if "inplace" in variants or not schema.returns or not all(
                r.type.is_tensor and not r.type.is_tensor_list for r in schema.returns):
            raise fail("'inplace' variants need a single Tensor return, 'out' variants Tensor returns")

    python_module = e.pop("python_module", "")
    if python_module not in PYTHON_MODULES:
        raise fail(f"unknown python_module '{python_module}' (known: {', '.join(m for m in PYTHON_MODULES if m)})")
    if python_module and "method" in variants:
        raise fail("functions in a python_module cannot be methods")
    doc = e.pop("doc", "")
    if not isinstance(doc, str):
        raise fail("'doc' must be a string")
    differentiable = e.pop("differentiable", None)
    tensor_scalars = e.pop("tensor_scalars", None)
    inplace_kernel = e.pop("inplace_kernel", False)
    if not isinstance(inplace_kernel, bool):
        raise fail("'inplace_kernel' must be true or false")
    if inplace_kernel and (kind != "kernel" or "inplace" not in variants):
        raise fail("'inplace_kernel' needs a kernel entry with an 'inplace' variant")
    python_operators = tuple(pyops.parse(e.pop("operators"), schema.name, fail)) if "operators" in e else ()
    onnx = onnx_mod.parse(e.pop("onnx"), schema, fail) if "onnx" in e else None

    pointwise = composite = None
    composite_fn = ""
    kernels = ()
    if kind == "pointwise":
        pointwise = _parse_pointwise(e, schema, fail)
        if tensor_scalars is None:
            # Every Tensor argument but the first accepts a Python number, as in PyTorch.
            tensor_scalars = [a.name for a in schema.positional[1:] if a.type.is_tensor]
    else:
        for k in ("dtypes", "promotion") + _POINTWISE_RULES:
            if k in e and k != "out_dtype_error":
                raise fail(f"'{k}' belongs to pointwise entries only")
        if kind == "composite":
            composite = e.pop("composite")
            if not isinstance(composite, str) or not composite.strip():
                raise fail("'composite' must be a Python expression, or a function "
                           "'pytorchlite._composites.<module>.<name>'")
            composite = composite.strip()
            if _COMPOSITE_FN.match(composite):
                composite_fn, composite = composite, None
            elif composite.startswith("pytorchlite."):
                raise fail(f"composite {composite}: name a function as pytorchlite._composites.<module>.<name>")
            else:
                _check_python(composite, fail)
        elif kind == "kernel":
            kern = e.pop("kernel")
            if isinstance(kern, str):
                kern = {"any": kern}
            if not isinstance(kern, dict):
                raise fail("'kernel' must map a device (cpu, cuda, any) to a 'module.function' entry")
            kern.pop("__line__", None)
            for dev, target in kern.items():
                if dev not in DEVICES:
                    raise fail(f"unknown device '{dev}' in kernel (known: {', '.join(DEVICES)})")
                if not isinstance(target, str) or "." not in target:
                    raise fail(f"kernel entry for {dev} must be 'module.function', got {target!r}")
            kernels = tuple(sorted(kern.items()))
    if tensor_scalars is None:
        tensor_scalars = []
    for n in tensor_scalars:
        if n not in {a.name for a in schema.arguments if a.type.is_tensor}:
            raise fail(f"tensor_scalars names '{n}', which is not a Tensor argument")

    out_dtype_error, out_overlap = "", ("partial", "partial")
    if kind != "pointwise":
        out_dtype_error = _parse_out_dtype_error(e, fail)
        if out_dtype_error and "out" not in variants:
            raise fail("'out_dtype_error' needs an 'out' variant")
    out_cast_error = ""
    if "out_cast_error" in e:
        out_cast_error = e.pop("out_cast_error")
        kind_, _, msg = out_cast_error.partition(": ") if isinstance(out_cast_error, str) else ("", "", "")
        if kind_ not in ("RuntimeError", "TypeError") or not msg:
            raise fail("'out_cast_error' must be PyTorch's exception and message: 'TypeError: <message>' or "
                       f"'RuntimeError: <message>', got {out_cast_error!r}")
        try:
            msg.format(**{k: "" for k in OUT_DTYPE_FIELDS})
        except (KeyError, IndexError, ValueError) as exc:
            raise fail(f"'out_cast_error' may use {{op}}, {{out}}, {{result}}, {{out_c}} and {{result_c}} only "
                       f"({exc})") from None
        if kind == "pointwise" or "out" not in variants:
            raise fail("'out_cast_error' needs a kernel or composite entry with an 'out' variant")
    if "out_overlap" in e:
        out_overlap = e.pop("out_overlap")
        if isinstance(out_overlap, dict):
            # {out: partial, inplace: none}: the two forms differ (addmm)
            out_overlap.pop("__line__", None)
            if not out_overlap or set(out_overlap) - {"out", "inplace"}:
                raise fail("'out_overlap' as a mapping takes the keys 'out' and 'inplace'")
            for v in out_overlap.values():
                if v not in OUT_OVERLAP:
                    raise fail(f"'out_overlap' values must be one of {', '.join(OUT_OVERLAP)}, got {v!r}")
            out_overlap = (out_overlap.get("out", "partial"), out_overlap.get("inplace", "partial"))
        elif out_overlap in OUT_OVERLAP:
            out_overlap = (out_overlap, out_overlap)
        else:
            raise fail(f"'out_overlap' must be one of {', '.join(OUT_OVERLAP)} (or a mapping of 'out' and "
                       f"'inplace' to them), got {out_overlap!r}")
        if kind == "pointwise":
            raise fail("'out_overlap' belongs to kernel and composite entries: pointwise operators refuse "
                       "partial overlap, as PyTorch's TensorIterator does")
        if "out" not in variants and "inplace" not in variants:
            raise fail("'out_overlap' needs an 'out' or 'inplace' variant")

    e.pop(kind, None)
    if e:
        left = sorted(e)
        hint = difflib.get_close_matches(left[0], _ENTRY_KEYS, n=1)
        raise fail(f"unknown key '{left[0]}'" + (f" (did you mean '{hint[0]}'?)" if hint else ""))
    return Operator(schema=schema, file=file, line=line, variants=tuple(variants), kind=kind,
                    pointwise=pointwise, composite=composite, kernels=kernels,
                    python_module=python_module, doc=doc.strip(), differentiable=differentiable,
                    tensor_scalars=tuple(tensor_scalars), inplace_kernel=inplace_kernel,
                    python_operators=python_operators, structured=structured,
                    composite_fn=composite_fn, alias_of=alias_of, out_dtype_error=out_dtype_error,
                    out_cast_error=out_cast_error, out_overlap=out_overlap, onnx=onnx)


# `out_overlap:` values: what a write into out= or self (in place) refuses of an input
# sharing its memory (PyTorch: at::assert_no_partial_overlap / assert_no_overlap / none)
OUT_OVERLAP = ("partial", "any", "none")
# what an `out_dtype_error:` message may name: the operator, and the out and result dtypes
# as PyTorch names them (`Float`) or as its C++ type names (`float`, `long int`)
OUT_DTYPE_FIELDS = ("op", "out", "result", "out_c", "result_c")


def _parse_out_dtype_error(e, fail):
    out_err = e.pop("out_dtype_error", "")
    if not isinstance(out_err, str):
        raise fail("'out_dtype_error' must be PyTorch's message (with {op}, {out}, {result}, {out_c}, {result_c})")
    try:
        out_err.format(**{k: "" for k in OUT_DTYPE_FIELDS})
    except (KeyError, IndexError, ValueError) as exc:
        raise fail(f"'out_dtype_error' may use {{op}}, {{out}}, {{result}}, {{out_c}} and {{result_c}} only "
                   f"({exc})") from None
    return out_err


_POINTWISE_RULES = ("check", "kernel_name", "dtype_errors", "out_dtype_error", "all_numbers", "structured")


def _parse_pointwise_rules(e, schema, fail):
    """The pointwise keys that state PyTorch's rules around the arithmetic."""
    check = e.pop("check", "")
    if check and (not isinstance(check, str) or "." not in check):
        raise fail(f"'check' must name a 'module.function', got {check!r}")
    kernel_name = e.pop("kernel_name", schema.name + "_cpu")
    if not isinstance(kernel_name, str) or not kernel_name:
        raise fail("'kernel_name' must be a string")
    errors = e.pop("dtype_errors", {})
    if not isinstance(errors, dict):
        raise fail("'dtype_errors' must map a dtype name to PyTorch's message")
    errors.pop("__line__", None)
    for d, msg in errors.items():
        if d not in ALL_DTYPES or not isinstance(msg, str):
            raise fail(f"'dtype_errors' must map a dtype name to a message, got {d!r}: {msg!r}")
    out_err = _parse_out_dtype_error(e, fail)
    all_numbers = e.pop("all_numbers", False)
    if not isinstance(all_numbers, bool):
        raise fail("'all_numbers' must be true or false")
    return dict(check=check, kernel_name=kernel_name, dtype_errors=tuple(sorted(errors.items())),
                out_dtype_error=out_err, all_numbers=all_numbers)


def parse_dtypes(raw, fail, what="dtypes"):
    """Dtype names and groups (a list or a comma-separated string) as dtype names, in
    ALL_DTYPES order."""
    try:
        groups = _as_list(raw)
    except TypeError:
        raise fail(f"'{what}' must be a list or comma-separated string") from None
    dtypes = []
    for g in groups:
        if g in DTYPE_GROUPS:
            dtypes.extend(DTYPE_GROUPS[g])
        elif g in ALL_DTYPES:
            dtypes.append(g)
        else:
            hint = difflib.get_close_matches(g, list(DTYPE_GROUPS) + list(ALL_DTYPES), n=1)
            where = "" if what == "dtypes" else f" in '{what}'"
            raise fail(f"unknown dtype '{g}'{where}" + (f" (did you mean '{hint[0]}'?)" if hint else ""))
    return tuple(d for d in ALL_DTYPES if d in dtypes)


def _parse_pointwise(e, schema, fail):
    body = e.pop("pointwise")
    dtypes_raw = e.pop("dtypes", "all")
    promotion = e.pop("promotion", "default")
    if promotion not in PROMOTIONS:
        raise fail(f"unknown promotion '{promotion}' (known: {', '.join(PROMOTIONS)})")
    dtypes = parse_dtypes(dtypes_raw, fail)
    for a in schema.arguments:
        if a.type.is_list or a.type.base not in ("Tensor", "Scalar"):
            raise fail(f"pointwise operators take Tensors and Scalars only; '{a.name}' is {a.type}")
        if a.type.base == "Tensor" and a.type.optional:
            raise fail(f"pointwise Tensor argument '{a.name}' cannot be optional")
    names = [a.name for a in schema.arguments]
    if isinstance(body, str):
        body = {"all": body}
    if not isinstance(body, dict):
        raise fail("'pointwise' must be a C expression, or a mapping of dtype class to expression")
    body.pop("__line__", None)
    bodies = []
    for key, src in body.items():
        classes = "".join(sorted(set("".join({"all": "bfi", "floating": "f", "integral": "i", "bool": "b"}.get(k.strip(), "?")
                                             for k in str(key).split(",")))))
        if "?" in classes:
            raise fail(f"pointwise body key '{key}' must be all, floating, integral or bool")
        try:
            tree = cexpr.parse_body(src)
        except cexpr.BodyError as exc:
            raise fail(f"pointwise body does not parse: {exc}: {src!r}") from None
        wanted = {DTYPE_CLASS[d] for d in dtypes} & set(classes)
        problems = cexpr.validate(tree, names, wanted)
        if problems:
            raise fail(problems[0])
        bodies.append((classes, tree, src))
    for d in dtypes:
        if not any(DTYPE_CLASS[d] in c for c, _, _ in bodies):
            raise fail(f"no pointwise body covers dtype {d}")
    return PointwiseBody(dtypes=dtypes, bodies=tuple(bodies), promotion=promotion,
                         **_parse_pointwise_rules(e, schema, fail))


def _check_python(src, fail):
    if "\n" in src or src.startswith("return "):
        raise fail("a composite written in YAML is one Python expression; write a longer one as a function "
                   "in a module and name it (composite: pytorchlite._composites.<topic>.<name>)")
    try:
        ast.parse(f"({src})", mode="eval")
    except SyntaxError as exc:
        raise fail(f"composite does not parse as a Python expression: {exc.msg}") from None


def load_ops(path, display_name="ops.yaml"):
    from .reductions import is_declaration
    ops = []
    seen = {}
    for raw in load_yaml(path, display_name):
        if is_declaration(raw):     # `- reduction:` / `- scan:`: codegen/reductions.py reads those
            continue
        op = _parse_entry(raw, display_name)
        key = op.schema.full_name
        if key in seen:
            raise _err(display_name, op.line, str(op.schema),
                       f"duplicate operator '{key}' (first at line {seen[key]})")
        seen[key] = op.line
        ops.append(op)
    by_full = {op.full_name: op for op in ops}
    idents, modules, count = {}, {}, {}
    for op in ops:
        count[op.name] = count.get(op.name, 0) + 1
        if op.ident in idents and idents[op.ident] != op.full_name:
            raise _err(display_name, op.line, str(op.schema),
                       f"'{op.full_name}' and '{idents[op.ident]}' both become the identifier '{op.ident}'; "
                       "rename one")
        idents[op.ident] = op.full_name
        first = modules.setdefault(op.name, op)
        if op.python_module != first.python_module:
            raise _err(display_name, op.line, str(op.schema),
                       f"the overloads of '{op.name}' live in one namespace: python_module "
                       f"'{op.python_module}' here, '{first.python_module}' at line {first.line}")
    pointwise = {}
    for op in ops:
        if op.kind == "pointwise":
            if op.name in pointwise:
                first = pointwise[op.name]
                raise _err(display_name, op.line, str(op.schema),
                           f"'{op.name}' has a pointwise overload already ({first.full_name}, line {first.line}): "
                           "the C kernels are named by the operator name; make this one composite")
            pointwise[op.name] = op
    root = os.path.dirname(os.path.abspath(path))
    out = []
    for op in ops:
        if op.alias_of:
            op = _resolve_alias(op, by_full, display_name)
        if op.composite_fn:
            _check_composite_fn(op, root, display_name)
        if count[op.name] > 1:
            op = dataclasses.replace(op, overloaded=True)
        out.append(op)
    return out


def _resolve_alias(op, by_full, file):
    def fail(msg):
        return _err(file, op.line, str(op.schema), msg)
    target = by_full.get(op.alias_of)
    if target is None:
        hint = difflib.get_close_matches(op.alias_of, list(by_full), n=1)
        raise fail(f"alias_of names '{op.alias_of}', which is not declared"
                   + (f" (did you mean '{hint[0]}'?)" if hint else ""))
    if target.alias_of:
        raise fail(f"alias_of names '{op.alias_of}', itself an alias of '{target.alias_of}': name that instead")
    mine = [str(a) for a in op.schema.arguments]
    theirs = [str(a) for a in target.schema.arguments]
    if mine != theirs or [str(r.type) for r in op.schema.returns] != [str(r.type) for r in target.schema.returns] \
            or len(op.schema.positional) != len(target.schema.positional):
        raise fail(f"an alias takes exactly its target's arguments and returns: {target.schema} "
                   f"({target.file}:{target.line})")
    variants = op.variants or target.variants
    return dataclasses.replace(op, target=target, variants=variants, tensor_scalars=target.tensor_scalars,
                               differentiable=target.differentiable, inplace_kernel=target.inplace_kernel)


# --- composites written as module functions --------------------------------------------

_PY_RESERVED = {"from", "in", "is", "lambda", "global", "class", "def", "return", "import", "None"}


def composite_params(schema):
    """(name, has default, default as a Python value, keyword-only) of each argument a
    composite function takes: the schema's, without out= arguments, in order."""
    out = []
    for a in schema.arguments:
        if a in schema.out_arguments:
            continue
        name = a.name + "_" if a.name in _PY_RESERVED else a.name
        default = a.default_value()
        if isinstance(default, str) and a.type.base in ("ScalarType", "MemoryFormat", "Layout", "Device"):
            default = None   # a named default is applied by the kernel entry, not the caller
        out.append((name, a.default is not None, default, a in schema.kwonly))
    return out


def _check_composite_fn(op, root, file):
    """The named function exists (in the tree of this ops.yaml, else this checkout's) and
    takes the schema's arguments: same names, order, keyword-only split and defaults."""
    def fail(msg):
        return _err(file, op.line, str(op.schema), f"composite {op.composite_fn}: {msg}")
    module, _, fname = op.composite_fn.rpartition(".")
    rel = module.replace(".", os.sep)
    checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for base in dict.fromkeys((root, checkout)):
        candidates = [os.path.join(base, rel + ".py"), os.path.join(base, rel, "__init__.py")]
        src = next((c for c in candidates if os.path.exists(c)), None)
        if src:
            break
    else:
        raise fail(f"no module {module} ({rel}.py)")
    with open(src, encoding="utf-8") as f:
        try:
            tree = ast.parse(f.read(), filename=src)
        except SyntaxError as exc:
            raise fail(f"{module} does not parse: {exc.msg} (line {exc.lineno})") from None
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    fn = defs.get(fname)
    if fn is None:
        hint = difflib.get_close_matches(fname, list(defs), n=1)
        raise fail(f"{module} has no function '{fname}'" + (f" (did you mean '{hint[0]}'?)" if hint else ""))
    where = f"{os.path.relpath(src, base)}:{fn.lineno}"
    a = fn.args
    if a.vararg or a.kwarg or a.posonlyargs:
        raise fail(f"def {fname} ({where}) must take the schema's arguments by name, without *args, **kwargs or /")
    pos_defaults = [None] * (len(a.args) - len(a.defaults)) + list(a.defaults)
    got = [(x.arg, d, False) for x, d in zip(a.args, pos_defaults)]
    got += [(x.arg, d, True) for x, d in zip(a.kwonlyargs, a.kw_defaults)]
    want = composite_params(op.schema)
    sig = ", ".join(n + ("=" + repr(v) if has else "") for n, has, v, _ in want)
    if [n for n, _, _ in got] != [w[0] for w in want]:
        raise fail(f"def {fname}({', '.join(n for n, _, _ in got)}) ({where}) must take ({sig}), the schema's arguments")
    for (name, node, kwonly), (_, has, value, want_kw) in zip(got, want):
        if kwonly != want_kw:
            raise fail(f"argument '{name}' of def {fname} ({where}) must be "
                       + ("keyword-only" if want_kw else "positional") + " as in the schema")
        if not has:
            if node is not None:
                raise fail(f"argument '{name}' of def {fname} ({where}) has a default; the schema gives none")
            continue
        try:
            given = ast.literal_eval(node) if node is not None else _NO_DEFAULT
        except ValueError:
            given = _NO_DEFAULT
        if isinstance(given, list):
            given = tuple(given)
        if given is _NO_DEFAULT or given != value or isinstance(given, bool) != isinstance(value, bool):
            raise fail(f"argument '{name}' of def {fname} ({where}) must default to {value!r}, as in the schema")


_NO_DEFAULT = object()
