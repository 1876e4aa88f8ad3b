"""A graph (or a plan of nodes and fused groups) as one generated Python function.

The compiled form of a graph is not an interpreter loop over nodes: it is Python source,
one line per node calling the operator's binding (or a fused kernel) with the graph's
values as local variables, exec'd once. So a call costs what the bindings cost, plus one
Python function call.
"""

import inspect
import itertools
import keyword
import linecache
import math

from pytorchlite.jit._ir import Value

_counter = itertools.count()
_DEFAULTS = {}
_SIMPLE = (bool, int, str, type(None))


def _defaults(fn):
    d = _DEFAULTS.get(fn)
    if d is None:
        try:
            d = {p.name: p.default for p in inspect.signature(fn).parameters.values()
                 if p.default is not inspect.Parameter.empty}
        except (TypeError, ValueError):
            d = {}
        _DEFAULTS[fn] = d
    return d


class _Writer:
    def __init__(self):
        self.ns = {}
        self.lines = []

    def const(self, obj, hint="_l"):
        name = f"{hint}{len(self.ns)}"
        self.ns[name] = obj
        return name

    def ref(self, r):
        if isinstance(r, Value):
            return r.py
        if type(r) in _SIMPLE:
            return repr(r)
        if type(r) is float and math.isfinite(r):
            return repr(r)
        if isinstance(r, tuple) and not hasattr(r, "_fields"):
            return "(" + "".join(self.ref(x) + ", " for x in r) + ")"
        if isinstance(r, list):
            return "[" + ", ".join(self.ref(x) for x in r) + "]"
        if isinstance(r, slice):
            return f"slice({self.ref(r.start)}, {self.ref(r.stop)}, {self.ref(r.step)})"
        if r is Ellipsis:
            return "..."
        return self.const(r)

    def output(self, spec):
        kind = spec[0]
        if kind == "value":
            return self.ref(spec[1])
        if kind == "literal":
            return self.ref(spec[1])
        if kind == "tuple":
            return "(" + "".join(self.output(s) + ", " for s in spec[1]) + ")"
        if kind == "list":
            return "[" + ", ".join(self.output(s) for s in spec[1]) + "]"
        if kind == "namedtuple":
            return f"{self.const(spec[1], '_rt')}(" + ", ".join(self.output(s) for s in spec[2]) + ")"
        if kind == "dict":
            return "{" + ", ".join(f"{k!r}: {self.output(s)}" for k, s in spec[1].items()) + "}"
        raise AssertionError(kind)


def call_expr(w, node):
    """`binding(args...)` for one node."""
    site = node.site
    fn = w.const(site.fn, "_f")
    defaults = _defaults(site.fn)
    parts = []
    for i, (name, a) in enumerate(zip(site.names, node.args)):
        if i == 0 and site.form != "function":
            parts.append(w.ref(a))
            continue
        if name in defaults and not isinstance(a, (Value, list, tuple)) and type(a) is type(defaults[name]) \
                and a == defaults[name]:
            continue
        parts.append(f"{name}={w.ref(a)}")
    return f"{fn}({', '.join(parts)})"


def assign(outputs, result):
    """The left-hand side for a node's outputs ("" when it has none)."""
    if result == "none" or not outputs:
        return ""
    if result == "tensor":
        return outputs[0].py + " = "
    return "".join(v.py + ", " for v in outputs) + "= "


def source(graph, steps=None, name="forward"):
    """(source, namespace) of the Python function computing `graph` (through `steps`, the
    plan of the passes: nodes and fused groups; the graph's nodes when None)."""
    w = _Writer()
    for c in graph.constants:
        w.ns[c.py] = c.data
    params = ", ".join(_arg_names(graph))
    body = []
    for step in (graph.nodes if steps is None else steps):
        if hasattr(step, "emit"):
            body.append(step.emit(w))
        else:
            body.append(assign(step.outputs, step.result) + call_expr(w, step))
    body.append("return " + w.output(graph.output))
    src = f"def {name}({params}):\n" + "".join("    " + line + "\n" for line in body)
    return src, w.ns


def _arg_names(graph):
    """The function's parameters: every positional argument of the traced call (a Python
    number is baked into the graph, its parameter ignored), then parameters/buffers; a
    graph without `arg_kinds` (a backward graph) takes its inputs as they are."""
    if getattr(graph, "arg_kinds", None) is None:
        return [v.py for v in graph.inputs]
    tensors = iter([v for v in graph.inputs if v.kind == "input"])
    names = []
    for i, kind in enumerate(graph.arg_kinds):
        names.append(next(tensors).py if kind == "tensor" else f"_unused{i}")
    names.extend(v.py for v in graph.inputs if v.kind == "param")
    return names


def ident(name):
    """`name` made a Python identifier that is not a keyword (`<lambda>` -> `lambda_`)."""
    n = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "forward"
    n = n if not n[0].isdigit() else "f" + n
    return n + "_" if keyword.iskeyword(n) else n


def build(graph, steps=None, name="forward"):
    """The function itself (its source registered with linecache, for tracebacks)."""
    name = ident(name)
    src, ns = source(graph, steps, name)
    filename = f"<pytorchlite.jit graph {next(_counter)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), ns)
    fn = ns[name]
    fn.__source__ = src
    return fn
