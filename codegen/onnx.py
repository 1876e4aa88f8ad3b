"""ops.yaml's `onnx:` key: an operator's ONNX form, checked here and written to
generated/onnx_table.py as one Python function per operator (the exporter's table).

The form is one expression in a small subset of Python (docs/ops_yaml.md, "ONNX forms"):

    onnx: Add(self, Mul(other, alpha))
    onnx: Gemm(mat1, mat2, self, alpha=alpha, beta=beta)
    onnx: (MaxPool(self, kernel_shape=kernel_size, strides=stride_or(kernel_size, stride), pads=pads(padding)), None)

- A call of a Capitalized name is an ONNX operator of the default domain: its positional
  arguments are the node's inputs (a Python number or list given as an input becomes a
  constant tensor), its keyword arguments the node's attributes; `_outputs=n` asks for a
  node with n outputs (a tuple).
- A lowercase call is one of the exporter's helpers (HELPERS below: each is a method of
  pytorchlite/onnx/_builder.py's `Builder`, and a test checks the two lists agree).
- Names are the schema's arguments (Tensors become ONNX values; ints, floats, lists, bools
  stay Python values), `result`, the traced outputs (a list: `.dtype` and `.shape` of each),
  and `opset`, the opset exported to.
- `a if cond else b`, comparisons, `not`, `and`/`or`, `is None`, arithmetic on Python values,
  subscripts, lists and tuples work as in Python.
- An operator with several results gives a tuple with one expression per result; `None`
  where a result has no ONNX form (using it in an exported graph is an error).

Codegen never imports onnx: ONNX operator names are checked by a test against onnx's
schemas at opset 17.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass

# helper name -> what it gives (the exporter implements each as a Builder method)
HELPERS = {
    "const": "const(value, dtype=None): a constant tensor (dtype: a pytorchlite dtype name or a value to copy it from)",
    "ints": "ints(list): a 1-D int64 tensor of sizes or axes (symbolic sizes included)",
    "cast": "cast(x, dtype): x as the ONNX type of a pytorchlite dtype (or of a value, or None: unchanged)",
    "onnx_type": "onnx_type(dtype): the TensorProto data type of a dtype (a value's, a name or a dtype)",
    "rank": "rank(x): the number of dims of a value",
    "dim": "dim(d, x): d made non-negative for x's rank",
    "dims": "dims(ds, x): each of ds made non-negative (None: every dim)",
    "pads": "pads(padding): ONNX pads (begins then ends) from PyTorch's symmetric padding",
    "stride_or": "stride_or(kernel, stride): stride, or the kernel size where stride is empty",
    "swap": "swap(x, d0, d1): the permutation of x's dims that swaps two",
    "sizes": "sizes(x, size): a view/reshape/expand size as an int64 tensor, symbolic where the traced shape is",
    "result_shape": "result_shape(i=0): the i-th result's shape as an int64 tensor, symbolic where traced so",
    "squeeze_dims": "squeeze_dims(x, dim): the dims of x of size 1 among dim (None: all)",
    "eval_only": "eval_only(flag, what): refuse to export when flag is true (training-mode behaviour)",
    "ones": "ones(x, shape): a tensor of ones of x's dtype and the given shape",
    "reduce": "reduce('ReduceX', x, dims, keepdim): an ONNX reduction over dims (None or []: all), axes as the opset wants",
    "count": "count(x, dims, minus=0): the element count of one reduction over dims, less minus (a value if dynamic)",
    "torch_pads": "torch_pads(x, pad): ONNX Pad's pads from PyTorch's pad list (last dim first)",
    "unsupported": "unsupported(what): refuse to export, saying what has no ONNX form",
}

# Python syntax the form may use
_ALLOWED = (ast.Expression, ast.Call, ast.Name, ast.Load, ast.Constant, ast.keyword, ast.Tuple, ast.List,
            ast.IfExp, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.BinOp, ast.Subscript, ast.Slice,
            ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.In, ast.NotIn,
            ast.And, ast.Or, ast.Not, ast.USub, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Div, ast.Mod,
            ast.Pow, ast.Starred, ast.ListComp, ast.comprehension, ast.Store, ast.Attribute)
# what a form may read of a value (`result[0].dtype`, `self.shape`)
_ATTRIBUTES = ("dtype", "shape")
_BUILTINS = {"len", "list", "tuple", "range", "min", "max", "int", "float", "abs", "str"}
_PY_RESERVED = {"from", "in", "is", "lambda", "global", "class", "def", "return", "import", "None"}


@dataclass(frozen=True)
class OnnxForm:
    source: str        # the expression as written in ops.yaml
    python: str        # the same expression, rewritten for the generated function
    ops: tuple         # the ONNX operator names it uses, sorted
    outputs: int       # how many results it gives (the schema's count)


def _pyname(name):
    return name + "_" if name in _PY_RESERVED else name


class _Rewrite(ast.NodeTransformer):
    """Capitalized calls -> g.op("Name", ...), helpers -> g.name(...), argument names -> their Python names."""

    def __init__(self, argnames):
        self.argnames = argnames
        self.ops = set()

    def visit_Call(self, node):
        self.generic_visit(node)
        name = node.func.id
        if name[0].isupper():
            self.ops.add(name)
            return ast.Call(func=ast.Attribute(value=ast.Name("g", ast.Load()), attr="op", ctx=ast.Load()),
                            args=[ast.Constant(name)] + node.args, keywords=node.keywords)
        if name in HELPERS:
            return ast.Call(func=ast.Attribute(value=ast.Name("g", ast.Load()), attr=name, ctx=ast.Load()),
                            args=node.args, keywords=node.keywords)
        return node

    def visit_Name(self, node):
        if node.id in ("result", "opset"):
            return ast.Attribute(value=ast.Name("g", ast.Load()), attr="results" if node.id == "result" else "opset",
                                 ctx=ast.Load())
        if node.id in self.argnames:
            return ast.Name(_pyname(node.id), ast.Load())
        return node


def parse(raw, schema, fail):
    """The `onnx:` value of an entry as an OnnxForm; `fail(msg)` makes the entry's error."""
    if not isinstance(raw, str) or not raw.strip():
        raise fail("'onnx' must be an expression over ONNX operators (docs/ops_yaml.md, 'ONNX forms'), "
                   f"got {raw!r}")
    src = " ".join(raw.split())
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError as exc:
        raise fail(f"onnx form does not parse: {exc.msg}: {src!r}") from None
    argnames = {a.name for a in schema.arguments if a not in schema.out_arguments}
    known = argnames | {"result", "opset", "None", "True", "False"} | _BUILTINS
    known |= {n.id for c in ast.walk(tree) if isinstance(c, ast.comprehension)
              for n in ast.walk(c.target) if isinstance(n, ast.Name)}
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise fail(f"onnx form: {type(node).__name__} is not allowed in an ONNX form: {src!r}")
        if isinstance(node, ast.Attribute) and node.attr not in _ATTRIBUTES:
            raise fail(f"onnx form: a form reads only {' and '.join(_ATTRIBUTES)} of a value, not '.{node.attr}'")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                raise fail(f"onnx form: call an ONNX operator or helper by its name: {src!r}")
            name = node.func.id
            if not name[0].isupper() and name not in HELPERS and name not in _BUILTINS:
                hint = difflib.get_close_matches(name, list(HELPERS), n=1)
                raise fail(f"onnx form: unknown helper '{name}'" + (f" (did you mean '{hint[0]}'?)" if hint else "")
                           + f" (helpers: {', '.join(sorted(HELPERS))})")
            if name[0].isupper() and any(k.arg is None for k in node.keywords):
                raise fail(f"onnx form: {name}(**...) is not allowed; name each attribute")
        elif isinstance(node, ast.Name) and node.id not in known and not (
                node.id[0].isupper() or node.id in HELPERS):
            hint = difflib.get_close_matches(node.id, sorted(argnames | {"result"}), n=1)
            raise fail(f"onnx form: '{node.id}' is not an argument of the schema"
                       + (f" (did you mean '{hint[0]}'?)" if hint else ""))
    body = tree.body
    outputs = len(schema.returns)
    given = len(body.elts) if isinstance(body, ast.Tuple) else 1
    # a node asked for several outputs (`TopK(..., _outputs=2)`) gives them all at once
    several = isinstance(body, ast.Call) and any(k.arg == "_outputs" for k in body.keywords)
    if outputs > 1 and given != outputs and not several:
        raise fail(f"onnx form: the operator has {outputs} results, so the form is a tuple of {outputs} "
                   f"expressions (None for a result without one), got {given}")
    rewrite = _Rewrite(argnames)
    new = ast.fix_missing_locations(rewrite.visit(tree))
    return OnnxForm(source=src, python=ast.unparse(new.body), ops=tuple(sorted(rewrite.ops)), outputs=outputs)


def params(schema):
    """The generated function's parameters: the schema's arguments (out= ones left out), by Python name."""
    return [_pyname(a.name) for a in schema.arguments if a not in schema.out_arguments]


def report(ops):
    """The text of `python -m codegen --onnx-report`: operators without an ONNX form."""
    missing = [op for op in ops if op.impl.onnx is None]
    lines = [f"{len(ops) - len(missing)} of {len(ops)} operators have an ONNX form; without one:"]
    lines += [f"  {op.file}:{op.line}: {op.full_name} ({op.impl.kind})" for op in missing]
    return "\n".join(lines) + "\n"
