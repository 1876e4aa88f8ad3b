"""ops.yaml -> frozen dataclasses, strictly.

Every entry is read by popping the keys this module knows; anything left over, a
duplicate key, a duplicate operator, an unknown type or a body that does not parse is a
CodegenError that starts with `ops.yaml:LINE: <schema>:` so the author can go straight to
the entry. The language itself is documented in docs/ops_yaml.md.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Optional

import yaml

from . import cexpr, operators as pyops, structured as structured_mod
from .schema import FunctionSchema, SchemaError, parse_schema

# dtype groups a pointwise entry may name in `dtypes:`
DTYPE_GROUPS = {
    "bool": ("bool",),
    "integral": ("uint8", "int8", "int16", "int32", "int64"),
    "floating": ("float16", "bfloat16", "float32", "float64"),
}
DTYPE_GROUPS["all"] = DTYPE_GROUPS["bool"] + DTYPE_GROUPS["integral"] + DTYPE_GROUPS["floating"]
ALL_DTYPES = DTYPE_GROUPS["all"]
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
    kind: str                      # "pointwise" | "composite" | "kernel"
    pointwise: Optional[PointwiseBody] = None
    composite: Optional[str] = None
    kernels: tuple = ()            # ((device, "module.function"), ...)
    python_module: str = ""
    doc: str = ""
    differentiable: Optional[bool] = None
    tensor_scalars: tuple = field(default=())  # Tensor args that also accept Python numbers
    inplace_kernel: bool = False   # the kernel writes the in-place form's result into self itself
    python_operators: tuple = ()   # Tensor's Python operators that call it (codegen/operators.py)
    structured: Optional[object] = None   # codegen/structured.py: Structured (meta + C calls)

    @property
    def name(self):
        return self.schema.name

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


_ENTRY_KEYS = ("func", "variants", "pointwise", "dtypes", "promotion", "composite", "kernel",
               "python_module", "doc", "differentiable", "tensor_scalars", "inplace_kernel", "operators",
               "check", "kernel_name", "dtype_errors", "out_dtype_error", "all_numbers", "structured")


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

    kinds = [k for k in ("pointwise", "composite", "kernel", "structured") if k in e]
    if len(kinds) != 1:
        raise fail("give exactly one of 'pointwise:', 'composite:', 'kernel:' or 'structured:'"
                   + (f" (got {', '.join(kinds)})" if kinds else ""))
    kind = kinds[0]
    structured = None
    if kind == "structured":
        # a kernel whose impl codegen writes (generated/structured.py) around a meta function
        raw = e.pop("structured")
        meta, pre, calls = structured_mod.parse(raw, schema, fail)
        structured = structured_mod.Structured(meta, pre, calls, **structured_mod.parse_extras(raw, fail))
        e["kernel"] = {dev: f"pytorchlite.generated.structured.{schema.name}__{dev}" for dev, _ in calls}
        kind = "kernel"

    default_variants = ["function", "method", "inplace", "out"] if kind == "pointwise" else ["function", "method"]
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

    pointwise = composite = None
    kernels = ()
    if kind == "pointwise":
        pointwise = _parse_pointwise(e, schema, fail)
        if tensor_scalars is None:
            # Every Tensor argument but the first accepts a Python number, as in PyTorch.
            tensor_scalars = [a.name for a in schema.positional[1:] if a.type.is_tensor]
    else:
        for k in ("dtypes", "promotion") + _POINTWISE_RULES:
            if k in e:
                raise fail(f"'{k}' belongs to pointwise entries only")
        if kind == "composite":
            composite = e.pop("composite")
            if not isinstance(composite, str) or not composite.strip():
                raise fail("'composite' must be a Python expression or function body")
            _check_python(composite, fail)
        else:
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

    e.pop(kind, None)
    if e:
        left = sorted(e)
        hint = difflib.get_close_matches(left[0], _ENTRY_KEYS, n=1)
        raise fail(f"unknown key '{left[0]}'" + (f" (did you mean '{hint[0]}'?)" if hint else ""))
    return Operator(schema=schema, file=file, line=line, variants=tuple(variants), kind=kind,
                    pointwise=pointwise, composite=composite, kernels=kernels,
                    python_module=python_module, doc=doc.strip(), differentiable=differentiable,
                    tensor_scalars=tuple(tensor_scalars), inplace_kernel=inplace_kernel,
                    python_operators=python_operators, structured=structured)


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
    out_err = e.pop("out_dtype_error", "")
    if not isinstance(out_err, str):
        raise fail("'out_dtype_error' must be PyTorch's message (with {op}, {out}, {result})")
    try:
        out_err.format(op="", out="", result="")
    except (KeyError, IndexError, ValueError) as exc:
        raise fail(f"'out_dtype_error' may use {{op}}, {{out}} and {{result}} only ({exc})") from None
    all_numbers = e.pop("all_numbers", False)
    if not isinstance(all_numbers, bool):
        raise fail("'all_numbers' must be true or false")
    return dict(check=check, kernel_name=kernel_name, dtype_errors=tuple(sorted(errors.items())),
                out_dtype_error=out_err, all_numbers=all_numbers)


def _parse_pointwise(e, schema, fail):
    body = e.pop("pointwise")
    dtypes_raw = e.pop("dtypes", "all")
    promotion = e.pop("promotion", "default")
    if promotion not in PROMOTIONS:
        raise fail(f"unknown promotion '{promotion}' (known: {', '.join(PROMOTIONS)})")
    try:
        groups = _as_list(dtypes_raw)
    except TypeError:
        raise fail("'dtypes' must be a list or comma-separated string") from None
    dtypes = []
    for g in groups:
        if g in DTYPE_GROUPS:
            dtypes.extend(DTYPE_GROUPS[g])
        elif g in ALL_DTYPES:
            dtypes.append(g)
        else:
            hint = difflib.get_close_matches(g, list(DTYPE_GROUPS) + list(ALL_DTYPES), n=1)
            raise fail(f"unknown dtype '{g}'" + (f" (did you mean '{hint[0]}'?)" if hint else ""))
    dtypes = tuple(d for d in ALL_DTYPES if d in dtypes)
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
    import ast
    try:
        ast.parse(src if "\n" in src.strip() else f"({src})")
    except SyntaxError as exc:
        raise fail(f"composite does not parse as Python: {exc.msg} (line {exc.lineno})") from None


def load_ops(path, display_name="ops.yaml"):
    ops = []
    seen = {}
    for raw in load_yaml(path, display_name):
        op = _parse_entry(raw, display_name)
        key = op.schema.full_name
        if key in seen:
            raise _err(display_name, op.line, str(op.schema),
                       f"duplicate operator '{key}' (first at line {seen[key]})")
        seen[key] = op.line
        ops.append(op)
    names = {}
    for op in ops:
        if op.schema.name in names:
            raise _err(display_name, op.line, str(op.schema),
                       f"overloads are not supported yet: '{op.schema.name}' is declared at line {names[op.schema.name]}")
        names[op.schema.name] = op.line
    return ops
