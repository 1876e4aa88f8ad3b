"""Tensor's Python operators (`+`, `+=`, `2 / t`, `~t`, `@`, `==`, ...) from ops.yaml.

An entry's `operators:` key names the dunder methods that call it:

    operators:
      __add__: self          # t + x   -> add(t, x)
      __radd__: self         # x + t   -> add(t, x)     (add commutes)
      __iadd__: inplace      # t += x  -> t.add_(x)
      __rtruediv__: reflected   # 2 / t -> div(2, t)    (the Python number first)

with optional settings per operator, written as a mapping instead of the role:

    __matmul__: {call: self, others: Tensor}          # anything else: NotImplemented
    __eq__: {call: self, others: Tensor or Number}
    __invert__: {call: self, floating_error: "..."}   # TypeError for floating tensors
    __truediv__: {call: self, fast: _div_true}        # the fast path's pointwise operator

Codegen writes each operator as a method of TensorMethods (generated/functions.py) that
pytorchlite.Tensor inherits. A binary operator with the role `self` whose operator (or
`fast:`) is a pointwise operator of two tensors first tries the fast path of
codegen/templates/functions.py.j2 (two contiguous CPU tensors of one dtype and shape,
nothing to record), written from one template for all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

ROLES = ("self", "reflected", "inplace")
OTHERS = {"Tensor": "(_Tensor,)", "Tensor or Number": "(_Tensor, bool, int, float)"}
UNARY = ("__neg__", "__pos__", "__abs__", "__invert__")
BINARY = tuple(f"__{p}{n}__" for n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and",
                                        "or", "xor", "lshift", "rshift") for p in ("", "r", "i")) + (
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")
_KEYS = ("call", "others", "floating_error", "fast")


@dataclass(frozen=True)
class PyOperator:
    dunder: str
    op: str                  # the ops.yaml operator it calls
    role: str                # self | reflected | inplace
    others: Optional[str] = None
    floating_error: Optional[str] = None
    fast: Optional[str] = None   # pointwise operator of the fast path, when there is one
    via_method: bool = True      # role self: the method binding (else the function's)

    @property
    def unary(self):
        return self.dunder in UNARY


def parse(raw, op_name, fail):
    """The `operators:` value of one entry -> [PyOperator] (without the fast path, which
    `resolve` decides once every entry is known)."""
    if isinstance(raw, list):
        raw = {d: "self" for d in raw}
    if not isinstance(raw, dict):
        raise fail("'operators' must map a Python operator (__add__, ...) to a role (self, reflected, inplace)")
    raw = {k: v for k, v in raw.items() if k != "__line__"}
    out = []
    for dunder, spec in raw.items():
        if dunder not in UNARY + BINARY:
            raise fail(f"unknown Python operator '{dunder}' in 'operators'")
        settings = {"call": spec} if isinstance(spec, str) else dict(spec) if isinstance(spec, dict) else None
        if settings is None:
            raise fail(f"operator {dunder}: expected a role or a mapping, got {spec!r}")
        settings.pop("__line__", None)
        unknown = sorted(set(settings) - set(_KEYS))
        if unknown:
            raise fail(f"operator {dunder}: unknown setting '{unknown[0]}' (known: {', '.join(_KEYS)})")
        role = settings.get("call", "self")
        if role not in ROLES:
            raise fail(f"operator {dunder}: unknown role '{role}' (known: {', '.join(ROLES)})")
        inplace_dunder = dunder.startswith("__i") and "__" + dunder[3:] in BINARY
        if (role == "inplace") != inplace_dunder or (dunder in UNARY and role != "self"):
            raise fail(f"operator {dunder} cannot have the role '{role}'")
        others = settings.get("others")
        if others is not None and others not in OTHERS:
            raise fail(f"operator {dunder}: 'others' must be one of {', '.join(OTHERS)}")
        out.append(PyOperator(dunder, op_name, role, others, settings.get("floating_error"), settings.get("fast")))
    return out


def resolve(ops):
    """Every declared Python operator, checked across entries, with its fast path decided."""
    by_name = {op.name: op for op in ops}
    seen = {}
    result = []
    for op in ops:
        for p in op.python_operators:
            if p.dunder in seen:
                raise _fail(op, f"Python operator {p.dunder} is already declared by '{seen[p.dunder]}'")
            seen[p.dunder] = op.name
            if p.role == "inplace" and not op.has_inplace:
                raise _fail(op, f"{p.dunder} calls the in-place form, but '{op.name}' has no 'inplace' variant")
            if p.role == "self" and not (op.has_method or op.has_function):
                raise _fail(op, f"{p.dunder} calls '{op.name}', which has neither a method nor a function form")
            if p.role == "reflected" and not op.has_function:
                raise _fail(op, f"{p.dunder} calls '{op.name}' with a Python number first, which needs a "
                                "'function' variant")
            if p.role == "reflected" and p.others != "Tensor":
                first = op.schema.positional[0].name if op.schema.positional else None
                if first not in op.tensor_scalars:
                    raise _fail(op, f"{p.dunder} passes a Python number first, so '{op.name}' must list "
                                    f"'{first}' in tensor_scalars")
            fast = p.fast
            if fast is not None:
                target = by_name.get(fast)
                if target is None or not _fast_candidate(target):
                    raise _fail(op, f"{p.dunder}: fast path '{fast}' must be a pointwise operator of two tensors")
            elif p.role == "self" and not p.unary and not _reflected_dunder(p.dunder) and _fast_candidate(op):
                # (x + t reaches t.__radd__ only when x is not a tensor: no fast path there)
                fast = op.name
            keep = fast is not None and p.role == "self"
            p = PyOperator(p.dunder, p.op, p.role, p.others, p.floating_error, fast if keep else None,
                           op.has_method)
            result.append((p, by_name[fast] if keep else None))
    return result


def _reflected_dunder(dunder):
    return dunder.startswith("__r") and "__" + dunder[3:] in BINARY


def _fast_candidate(op):
    """A pointwise operator of exactly two tensors whose only scalar, if any, is alpha."""
    if op.kind != "pointwise":
        return False
    tensors = [a for a in op.schema.arguments if a.type.is_tensor]
    scalars = [a.name for a in op.schema.arguments if a.type.base == "Scalar"]
    return len(tensors) == 2 and scalars in ([], ["alpha"])


def _fail(op, msg):
    from .model import CodegenError
    return CodegenError(f"{op.where}: {msg}")
