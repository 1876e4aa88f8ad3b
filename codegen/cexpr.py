"""The pointwise body language: one C expression over the operator's inputs and scalars.

    body: self > 0 ? self : alpha * expm1(self)

The same text becomes the C loop and (later) the CUDA kernel, so the language is the
common subset: numbers, names, the C operators with C precedence, `?:`, and calls of
the math functions listed in FUNCTIONS. Parsing it here (rather than handing the text to
the C compiler) lets codegen name the ops.yaml entry that is wrong, reject unknown names,
and know per dtype which functions exist.
"""

from __future__ import annotations

import re

# function name -> (arity, dtype classes it exists for: f = floating, i = integer, b = bool)
FUNCTIONS = {
    "abs": (1, "fi"), "exp": (1, "f"), "exp2": (1, "f"), "expm1": (1, "f"), "log": (1, "f"),
    "log2": (1, "f"), "log10": (1, "f"), "log1p": (1, "f"), "sqrt": (1, "f"), "rsqrt": (1, "f"),
    "sin": (1, "f"), "cos": (1, "f"), "tan": (1, "f"), "asin": (1, "f"), "acos": (1, "f"),
    "atan": (1, "f"), "sinh": (1, "f"), "cosh": (1, "f"), "tanh": (1, "f"), "asinh": (1, "f"),
    "acosh": (1, "f"), "atanh": (1, "f"), "erf": (1, "f"), "erfc": (1, "f"), "erfinv": (1, "f"),
    "lgamma": (1, "f"), "digamma": (1, "f"),
    "sigmoid": (1, "f"), "floor": (1, "fi"), "ceil": (1, "fi"), "round": (1, "fi"),
    "trunc": (1, "fi"), "frac": (1, "f"), "sign": (1, "fib"), "isnan": (1, "fib"),
    "isinf": (1, "fib"), "isfinite": (1, "fib"), "isposinf": (1, "fib"), "isneginf": (1, "fib"),
    "signbit": (1, "fib"), "round_decimals": (2, "f"),
    "atan2": (2, "f"), "pow": (2, "fi"), "fmod": (2, "fi"), "remainder": (2, "fi"),
    "floordiv": (2, "fi"), "truncdiv": (2, "fi"), "maximum": (2, "fib"), "minimum": (2, "fib"),
    "fmax": (2, "fib"), "fmin": (2, "fib"), "copysign": (2, "f"), "hypot": (2, "f"),
    "nextafter": (2, "f"), "logaddexp": (2, "f"), "logaddexp2": (2, "f"), "xlogy": (2, "f"),
    "clamp": (3, "fi"), "clamp_min": (2, "fi"), "clamp_max": (2, "fi"),
    "lerp": (3, "f"),
    "lshift": (2, "i"), "rshift": (2, "i"),
}

_BINARY = [  # lowest to highest precedence
    ("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="),
    ("<<", ">>"), ("+", "-"), ("*", "/", "%"),
]
_PREC = {op: i for i, ops in enumerate(_BINARY) for op in ops}
_TOKEN = re.compile(r"\s*(?:(?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z_]\w*)"
                    r"|(?P<op>\|\||&&|==|!=|<=|>=|<<|>>|[-+*/%<>!~&|^?:(),]))")


class BodyError(ValueError):
    pass


def _tokenize(text):
    pos, out = 0, []
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise BodyError(f"cannot read '{text[pos:pos + 10]}' at column {pos + 1}")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


class _Parser:
    def __init__(self, tokens):
        self.toks = tokens
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, value=None):
        tok = self.peek()
        if tok[0] is None or (value is not None and tok[1] != value):
            raise BodyError(f"expected '{value}'" if value else "unexpected end of expression")
        self.i += 1
        return tok

    def expr(self):
        cond = self.binary(0)
        if self.peek()[1] == "?":
            self.take("?")
            a = self.expr()
            self.take(":")
            b = self.expr()
            return ("?:", cond, a, b)
        return cond

    def binary(self, level):
        if level == len(_BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek()[0] == "op" and self.peek()[1] in _BINARY[level]:
            op = self.take()[1]
            left = ("bin", op, left, self.binary(level + 1))
        return left

    def unary(self):
        kind, val = self.peek()
        if kind == "op" and val in ("-", "+", "!", "~"):
            self.take()
            return ("un", val, self.unary())
        return self.primary()

    def primary(self):
        kind, val = self.take()
        if kind == "num":
            return ("num", val)
        if kind == "name":
            if self.peek()[1] == "(":
                self.take("(")
                args = []
                if self.peek()[1] != ")":
                    args.append(self.expr())
                    while self.peek()[1] == ",":
                        self.take(",")
                        args.append(self.expr())
                self.take(")")
                return ("call", val, args)
            return ("name", val)
        if val == "(":
            e = self.expr()
            self.take(")")
            return e
        raise BodyError(f"unexpected '{val}'")


def parse_body(text):
    """Parse a body into a small tuple AST; BodyError says what does not parse."""
    if not isinstance(text, str) or not text.strip():
        raise BodyError("empty body")
    p = _Parser(_tokenize(text))
    tree = p.expr()
    if p.i != len(p.toks):
        raise BodyError(f"unexpected '{p.toks[p.i][1]}' after a complete expression")
    return tree


def names_and_calls(tree, names=None, calls=None):
    names = set() if names is None else names
    calls = set() if calls is None else calls
    tag = tree[0]
    if tag == "name":
        names.add(tree[1])
    elif tag == "call":
        calls.add((tree[1], len(tree[2])))
        for a in tree[2]:
            names_and_calls(a, names, calls)
    elif tag in ("bin",):
        names_and_calls(tree[2], names, calls)
        names_and_calls(tree[3], names, calls)
    elif tag == "un":
        names_and_calls(tree[2], names, calls)
    elif tag == "?:":
        for t in tree[1:]:
            names_and_calls(t, names, calls)
    return names, calls


def validate(tree, allowed_names, dtype_classes):
    """Check names and function calls; dtype_classes is the set of 'f'/'i'/'b' the op
    is declared for. Returns the list of problems (empty when fine)."""
    problems = []
    names, calls = names_and_calls(tree)
    for n in sorted(names - set(allowed_names)):
        problems.append(f"unknown name '{n}' in body (known: {', '.join(sorted(allowed_names))})")
    for fn, nargs in sorted(calls):
        if fn not in FUNCTIONS:
            import difflib
            hint = difflib.get_close_matches(fn, FUNCTIONS, n=1)
            problems.append(f"unknown function '{fn}'" + (f" (did you mean '{hint[0]}'?)" if hint else ""))
            continue
        arity, classes = FUNCTIONS[fn]
        if arity != nargs:
            problems.append(f"function '{fn}' takes {arity} argument(s), given {nargs}")
        missing = sorted(set(dtype_classes) - set(classes))
        if missing:
            kinds = {"f": "floating", "i": "integer", "b": "bool"}
            problems.append(f"function '{fn}' has no {'/'.join(kinds[m] for m in missing)} "
                            f"version; restrict the body's dtypes")
    return problems


# Integer + - * (and unary -) wrap around in PyTorch, as in two's complement; in C a signed
# overflow is undefined behaviour (and the optimiser may assume it never happens), and
# int8/int16/uint8 operands promote to int, where a product of three can overflow. So
# integer bodies compute these in an unsigned type at least as wide as int, which wraps by
# definition, and convert back to the dtype (a no-op at run time).
WRAP_TYPES = {"u8": "uint32_t", "i8": "uint32_t", "i16": "uint32_t", "i32": "uint32_t", "i64": "uint64_t"}


def emit(tree, ctype, suffix, rename):
    """C text for the tree: literals are cast to the compute type (so float math stays in
    float), names go through `rename`, calls become ptl_<fn>_<suffix>, and integer
    arithmetic wraps (WRAP_TYPES)."""
    tag = tree[0]
    wrap = WRAP_TYPES.get(suffix)
    if wrap and tag == "un" and tree[1] == "-":
        return f"(({ctype})(0 - ({wrap}){emit(tree[2], ctype, suffix, rename)}))"
    if wrap and tag == "bin" and tree[1] in ("+", "-", "*"):
        a, b = emit(tree[2], ctype, suffix, rename), emit(tree[3], ctype, suffix, rename)
        return f"(({ctype})(({wrap}){a} {tree[1]} ({wrap}){b}))"
    if tag == "num":
        return f"(({ctype}){tree[1]})"
    if tag == "name":
        return rename(tree[1])
    if tag == "call":
        args = ", ".join(emit(a, ctype, suffix, rename) for a in tree[2])
        return f"ptl_{tree[1]}_{suffix}({args})"
    if tag == "un":
        return f"({tree[1]}{emit(tree[2], ctype, suffix, rename)})"
    if tag == "bin":
        return f"({emit(tree[2], ctype, suffix, rename)} {tree[1]} {emit(tree[3], ctype, suffix, rename)})"
    if tag == "?:":
        c, a, b = (emit(t, ctype, suffix, rename) for t in tree[1:])
        return f"({c} ? ({ctype})({a}) : ({ctype})({b}))"
    raise AssertionError(tag)
