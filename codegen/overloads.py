"""The argument parser of a name with several overloads (`max`, `max.dim`, `max.other`).

Each overload keeps the binding gen.py writes for it (named `_o_max_dim`, `_om_max_dim`
for the method); the public `max` and `Tensor.max` become a thin parser over them, as
PyTorch's python_arg_parser: the overloads are tried in declaration order, each by a
matcher function with that overload's Python signature (so Python itself binds positional
and keyword arguments) whose body checks the types (pytorchlite/_overloads.py); the first
that fits gets the call, unchanged. When none fits, the parser raises PyTorch's error from
the signatures below, printed as PyTorch prints them.

A name with one overload keeps its plain binding: nothing here runs on its calls.
"""

from __future__ import annotations

from dataclasses import dataclass

# per schema type: (predicate in pytorchlite/_overloads.py, the name PyTorch's errors use)
_SCALAR_KEYS = {
    "Scalar": ("scalar", "Number"), "int": ("int", "int"), "SymInt": ("symint", "int"),
    "float": ("float", "float"), "bool": ("bool", "bool"), "str": ("str", "str"),
    "ScalarType": ("dtype", "pytorchlite.dtype"), "Device": ("device", "pytorchlite.device"),
    "Generator": ("generator", "pytorchlite.Generator"), "Layout": ("any", "pytorchlite.layout"),
    "MemoryFormat": ("any", "pytorchlite.memory_format"), "Dimname": ("any", "name"),
}
_LIST_KEYS = {
    "Tensor": ("tensor_list", "tuple of Tensors"), "int": ("int_list", "tuple of ints"),
    "SymInt": ("symint_list", "tuple of ints"), "float": ("float_list", "tuple of floats"),
    "bool": ("any", "tuple of bools"),
}
_LISTS = ("int_list", "symint_list", "float_list", "tensor_list")


def type_key(arg, tensor_scalar):
    """(predicate key, PyTorch's type name) of one schema argument."""
    t = arg.type
    if t.is_tensor:
        return ("tensor_or_number" if tensor_scalar else "tensor"), "Tensor"
    if t.is_list:
        return _LIST_KEYS[t.base]
    return _SCALAR_KEYS[t.base]


def _display_default(arg):
    d = arg.default
    if d.startswith("[") and d.endswith("]"):
        return "{" + d[1:-1] + "}"      # PyTorch prints C++ initialiser lists
    return d


@dataclass
class Param:
    name: str           # the Python keyword
    type_name: str
    key: str
    size: int
    optional: bool      # has a default
    allow_none: bool
    kwonly: bool
    default: str = ""   # as PyTorch prints it

    def spec(self):
        return (self.name, self.type_name, self.key, self.size, self.optional, self.allow_none, self.kwonly)


# a factory's tensor options, which PyTorch's Python signatures put after out=
_TENSOR_OPTIONS = ("dtype", "layout", "device", "pin_memory", "requires_grad")


def params_of(op, method, with_out, pyname):
    """The parameters PyTorch's parser sees for one form of an operator: `self` is
    `input` in the function form and absent from the method form; out= comes last, or
    before a factory's tensor options (dtype, layout, device, pin_memory)."""
    out = []
    ts = set(op.tensor_scalars)
    names = {a.name for a in op.schema.kwonly}
    factory = "layout" in names and "device" in names
    for a in op.schema.arguments:
        if a in op.schema.out_arguments or (method and a.name == "self"):
            continue
        key, tname = type_key(a, a.name in ts)
        allow_none = a.type.optional or a.default == "None"
        default = _display_default(a) if a.default is not None else ""
        if factory and a.name == "pin_memory" and default == "None":
            default = "False"       # (PyTorch's TensorOptions spelling)
        out.append(Param(pyname(a), tname, key, a.type.size or 0, a.default is not None, allow_none,
                         a in op.schema.kwonly, default))
    if with_out:
        multi = len(op.schema.returns) > 1
        param = Param("out", "tuple of Tensors" if multi else "Tensor", "tensor_list" if multi else "tensor",
                      0, True, True, True, "None")
        at = next((i for i, p in enumerate(out) if factory and p.kwonly and p.name in _TENSOR_OPTIONS), len(out))
        out.insert(at, param)
    return out


def signature_text(params):
    """`(Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None)`"""
    parts, star = [], False
    for p in params:
        if p.kwonly and not star:
            parts.append("*")
            star = True
        parts.append(f"{p.type_name} {p.name}" + (f" = {p.default}" if p.optional else ""))
    return "(" + ", ".join(parts) + ")"


def _check_expr(p, var):
    if p.key == "tensor":
        test = f"isinstance({var}, _Tensor)"
    elif p.key == "bool":
        test = f"{var}.__class__ is _bool"
    elif p.key == "int":
        test = f"({var}.__class__ is _int or _ov.is_int({var}))"
    elif p.key == "any":
        return None
    elif p.key in _LISTS:
        test = f"_ov.is_{p.key}({var}, {p.size})"
    else:
        test = f"_ov.is_{p.key}({var})"
    return f"({var} is None or {test})" if p.allow_none else test


@dataclass
class Member:
    op: object
    binding: str        # the overload's own binding, which gets the call
    matcher: str        # a function with the binding's signature that says whether the types fit
    params: list
    varargs: str        # the name of a varargs int[] argument, or ""

    @property
    def min_args(self):
        return sum(1 for p in self.params if not p.optional)

    @property
    def max_args(self):
        return None if self.varargs else len(self.params)


@dataclass
class Dispatcher:
    """One public name's parser: `max` (function) or `_m_max` (method)."""
    pyname: str
    public: str         # the name in errors
    method: bool
    members: list
    doc: str = ""

    @property
    def table(self):
        return f"_P_{self.pyname}"

    def lines(self):
        """The body of the parser (after its docstring). An overload is tried when the
        argument counts allow it: by its matcher (Python binds the arguments) when there
        are keywords, by inline checks of the positional arguments when there are none."""
        lines = ["_p = len(args)", "_n = _p + len(kwargs)"]
        call_prefix = "self, " if self.method else ""
        for m in self.members:
            lo, hi = m.min_args, m.max_args
            conds = []
            if hi is None:
                conds.append(f"_n >= {lo}")
            elif lo == hi:
                conds.append(f"_n == {lo}")
            else:
                conds.append(f"{lo} <= _n <= {hi}" if lo else f"_n <= {hi}")
            if m.varargs:
                positional = None
            else:
                max_pos = sum(1 for p in m.params if not p.kwonly)
                if hi is None or max_pos < hi:
                    conds.append(f"_p <= {max_pos}")
                positional = [p for p in m.params if not p.kwonly]
            call = f"return {m.binding}({call_prefix}*args, **kwargs)"
            lines.append(f"if {' and '.join(conds)}:")
            if not m.params:
                lines.append(f"    {call}")
                continue
            lines += ["    if kwargs:", "        try:", f"            _ok = {m.matcher}(*args, **kwargs)",
                      "        except TypeError:", "            _ok = False", "        if _ok:", f"            {call}",
                      f"    elif {_positional_checks(m, positional)}:",
                      f"        return {m.binding}({call_prefix}*args)"]
        lines.append(f"raise _ov.no_match({self.table}, args, kwargs)")
        return lines

    def table_literal(self):
        sigs = ", ".join(f"({signature_text(m.params)!r}, ({''.join(repr(p.spec()) + ', ' for p in m.params)}))"
                         for m in self.members)
        return f"_ov.Overloads({self.public!r}, ({sigs},))"


def matcher_body(member):
    """`return <checks>` for a matcher whose parameters are the member's."""
    tests = []
    for p in member.params:
        if member.varargs and p.name == member.varargs:
            tests.append(f"_ov.is_varargs({p.name}_args, {p.name}, {p.size})")
            continue
        t = _check_expr(p, p.name)
        if t:
            tests.append(t)
    return "return " + (" and ".join(tests) if tests else "True")


def _positional_checks(member, positional):
    """The matcher's test for a call with positional arguments only (`_p` of them, within
    the member's counts): each given argument checked, the rest take their defaults."""
    if positional is None:      # a varargs int list: view(2, 3), view((2, 3))
        p = next(p for p in member.params if p.name == member.varargs)
        return f"_ov.is_varargs(args, None, {p.size})"
    if any(p.kwonly and not p.optional for p in member.params):
        return "False"          # (a required keyword-only argument is missing)
    tests = []
    for i, p in enumerate(positional):
        t = _check_expr(p, f"args[{i}]")
        if t is None:
            continue
        tests.append(t if not p.optional else f"(_p <= {i} or {t})")
    return " and ".join(tests) if tests else "True"
