"""PyTorch's function-schema grammar, parsed into frozen dataclasses.

    name[.overload](Type arg[=default], ..., *, kwarg...) -> Return

The parser is strict and checks a round trip: printing the parsed schema must give back
the source text, so a schema pasted from PyTorch's native_functions.yaml reads the same
here and nothing in it is silently dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

BASE_TYPES = ("Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType",
              "Generator", "Device", "Layout", "MemoryFormat", "Dimname")


class SchemaError(ValueError):
    """A schema that does not parse; the message says what and where."""


@dataclass(frozen=True)
class Type:
    base: str                    # one of BASE_TYPES
    optional: bool = False       # T?
    is_list: bool = False        # T[] or T[N]
    size: Optional[int] = None   # N in T[N]
    alias: Optional[str] = None  # the annotation inside Tensor(...), e.g. "a!" or "a"

    def __str__(self):
        s = self.base
        if self.alias is not None:
            s += f"({self.alias})"
        if self.is_list:
            s += f"[{self.size if self.size is not None else ''}]"
        if self.optional:
            s += "?"
        return s

    @property
    def is_tensor(self):
        return self.base == "Tensor" and not self.is_list

    @property
    def is_tensor_list(self):
        return self.base == "Tensor" and self.is_list

    @property
    def is_mutable(self):
        return self.alias is not None and self.alias.endswith("!")


@dataclass(frozen=True)
class Argument:
    type: Type
    name: str
    default: Optional[str] = None   # the default's source text, e.g. "1", "None", "[]"

    def __str__(self):
        s = f"{self.type} {self.name}"
        if self.default is not None:
            s += f"={self.default}"
        return s

    @property
    def python_name(self):
        # PyTorch's Python bindings call `self` `input` in the functional form.
        return "input" if self.name == "self" else self.name

    def default_value(self):
        """The default as a Python value (lists become tuples)."""
        return parse_default(self.default, self.type)


@dataclass(frozen=True)
class Return:
    type: Type
    name: Optional[str] = None

    def __str__(self):
        return str(self.type) + (f" {self.name}" if self.name else "")


@dataclass(frozen=True)
class FunctionSchema:
    name: str
    overload: str
    positional: tuple
    kwonly: tuple
    returns: tuple
    returns_parenthesised: bool

    @property
    def full_name(self):
        return self.name + (f".{self.overload}" if self.overload else "")

    @property
    def arguments(self):
        return self.positional + self.kwonly

    @property
    def out_arguments(self):
        return tuple(a for a in self.kwonly if a.type.is_mutable)

    @property
    def is_inplace(self):
        return self.name.endswith("_") and not self.name.endswith("__")

    def __str__(self):
        args = [str(a) for a in self.positional]
        if self.kwonly:
            args.append("*")
            args.extend(str(a) for a in self.kwonly)
        if self.returns_parenthesised:
            rets = "(" + ", ".join(str(r) for r in self.returns) + ")"
        else:
            rets = str(self.returns[0])
        return f"{self.full_name}({', '.join(args)}) -> {rets}"


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TYPE = re.compile(r"^(?P<base>[A-Za-z]+)(?:\((?P<alias>[a-z]!?)\))?(?P<list>\[(?P<size>\d*)\])?(?P<opt>\?)?$")


def _split_top(text, sep=","):
    """Split on `sep` outside brackets and quotes."""
    parts, depth, cur, quote = [], 0, [], None
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if cur or parts:
        parts.append("".join(cur))
    return parts


def parse_type(text, near=None):
    m = _TYPE.match(text)
    if not m:
        raise SchemaError(f"cannot parse type '{text}'")
    base = m.group("base")
    if base not in BASE_TYPES:
        hint = _near_miss(base, BASE_TYPES)
        raise SchemaError(f"unknown type '{base}'" + (f" (did you mean '{hint}'?)" if hint else ""))
    alias = m.group("alias")
    if alias is not None and base != "Tensor":
        raise SchemaError(f"alias annotation on non-Tensor type '{text}'")
    size = m.group("size")
    return Type(base=base, optional=bool(m.group("opt")), is_list=bool(m.group("list")),
                size=int(size) if size else None, alias=alias)


def _parse_argument(text):
    text = text.strip()
    lhs, eq, default = text.partition("=")
    pieces = lhs.split()
    if len(pieces) != 2:
        raise SchemaError(f"expected 'Type name[=default]', got '{text}'")
    ty = parse_type(pieces[0])
    name = pieces[1]
    if not _NAME.match(name):
        raise SchemaError(f"bad argument name '{name}'")
    arg = Argument(ty, name, default if eq else None)
    if eq:
        parse_default(default, ty)   # validate now, so a bad default names its schema
    return arg


def parse_default(text, ty):
    if text is None:
        return None
    if text == "None":
        if not ty.optional:
            raise SchemaError(f"default None for non-optional type '{ty}'")
        return None
    if text in ("True", "False"):
        return text == "True"
    if text.startswith('"') and text.endswith('"') and len(text) >= 2:
        return text[1:-1]
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        items = [p.strip() for p in inner.split(",")] if inner else []
        return tuple(_number(p, text) for p in items)
    if ty.base in ("ScalarType", "Layout", "MemoryFormat", "Device") and _NAME.match(text):
        return text
    return _number(text, text)


def _number(p, whole):
    try:
        return int(p)
    except ValueError:
        pass
    try:
        return float(p)
    except ValueError:
        raise SchemaError(f"cannot parse default '{whole}'") from None


def parse_schema(text):
    """Parse one `func:` string; raises SchemaError naming what is wrong."""
    if " -> " not in text:
        raise SchemaError("missing ' -> ' between arguments and returns")
    head, rets = text.rsplit(" -> ", 1)
    if "(" not in head or not head.endswith(")"):
        raise SchemaError("expected 'name(arguments)' before ' -> '")
    fname, args_text = head.split("(", 1)
    args_text = args_text[:-1]
    name, _, overload = fname.partition(".")
    if not _NAME.match(name) or (overload and not _NAME.match(overload)):
        raise SchemaError(f"bad operator name '{fname}'")
    positional, kwonly, seen_star = [], [], False
    for piece in (_split_top(args_text) if args_text.strip() else []):
        if piece.strip() == "*":
            if seen_star:
                raise SchemaError("'*' given twice")
            seen_star = True
            continue
        (kwonly if seen_star else positional).append(_parse_argument(piece))
    names = [a.name for a in positional + kwonly]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SchemaError(f"duplicate argument name '{sorted(dup)[0]}'")
    paren = rets.startswith("(") and rets.endswith(")")
    ret_parts = _split_top(rets[1:-1]) if paren else [rets]
    returns = []
    for r in ret_parts:
        if not r.strip():
            continue
        bits = r.strip().split()
        if len(bits) > 2:
            raise SchemaError(f"cannot parse return '{r.strip()}'")
        returns.append(Return(parse_type(bits[0]), bits[1] if len(bits) == 2 else None))
    schema = FunctionSchema(name, overload, tuple(positional), tuple(kwonly), tuple(returns), paren)
    if str(schema) != text:
        raise SchemaError(f"schema does not round-trip: parsed back as '{schema}'")
    return schema


def _near_miss(word, choices):
    import difflib
    hits = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return hits[0] if hits else None
