"""`jit.script`: a documented subset of Python compiled from its source (not traced) into
a graph with control flow: `prim::If` for if/else on tensor (or Python) values and
`prim::Loop` for `for ... in range(...)` and `while`.

The subset (anything else raises `UnsupportedNodeError` naming the construct and its
file:line):

* statements: `x = e`, `a, b = e`, `x op= e` (+ - * / @), `if`/`elif`/`else`, `for i in
  range(stop)` / `range(start, stop[, step])`, `while cond`, `pass`, and one `return` as
  the last statement of the function;
* expressions: names, numbers, booleans, None, strings (as arguments), tuples, unary `-`
  and `not`, binary + - * / // % ** @, one comparison (< <= > >= == !=), calls of
  `pytorchlite` functions (`pytorchlite.sigmoid(x)`, through any name the module is
  bound to, e.g. `torch`), of Tensor methods (`x.sum(dim=1)`) and of `range`/`float`/
  `int`/`bool`/`len`/`min`/`max` on values, keyword arguments, `x.shape[i]`;
* a variable assigned in one branch of an `if` must be assigned in the other too when it
  is used after it; variables first assigned inside a loop are local to the loop body.

Values carry no dtype or shape (a scripted graph serves any inputs); a condition on a
tensor is read with `bool()` when the graph runs, which is the point: data-dependent
control flow that `jit.trace` refuses.
"""

import ast
import inspect
import itertools
import linecache
import textwrap

_BINOPS = {ast.Add: ("add", "+"), ast.Sub: ("sub", "-"), ast.Mult: ("mul", "*"), ast.Div: ("div", "/"),
           ast.FloorDiv: ("floor_divide", "//"), ast.Mod: ("remainder", "%"), ast.Pow: ("pow", "**"),
           ast.MatMult: ("matmul", "@")}
_CMPOPS = {ast.Lt: ("lt", "<"), ast.LtE: ("le", "<="), ast.Gt: ("gt", ">"), ast.GtE: ("ge", ">="),
           ast.Eq: ("eq", "=="), ast.NotEq: ("ne", "!=")}
_BUILTINS = {"range", "float", "int", "bool", "len", "min", "max"}
_NAMES = {ast.Attribute: "attribute access (other than x.shape and calls of methods)",
          ast.Subscript: "indexing (other than x.shape[i])", ast.Lambda: "lambdas",
          ast.ListComp: "list comprehensions", ast.DictComp: "dict comprehensions",
          ast.GeneratorExp: "generator expressions", ast.BoolOp: "and/or", ast.IfExp: "conditional expressions",
          ast.With: "with statements", ast.Try: "try blocks", ast.Raise: "raise statements",
          ast.Break: "break statements", ast.Continue: "continue statements", ast.Global: "global statements",
          ast.Nonlocal: "nonlocal statements", ast.Delete: "del statements", ast.FunctionDef: "nested functions",
          ast.ClassDef: "class definitions", ast.Import: "imports", ast.ImportFrom: "imports",
          ast.Dict: "dict literals", ast.List: "list literals", ast.Set: "set literals", ast.Starred: "starred expressions",
          ast.Yield: "yield", ast.Await: "await", ast.Assert: "assert statements", ast.JoinedStr: "f-strings"}


class UnsupportedNodeError(NotImplementedError):
    """A construct outside jit.script's subset (as torch.jit.frontend.UnsupportedNodeError)."""


class SValue:
    """A value of a scripted graph (no dtype or shape: scripted graphs serve any input)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "%" + self.name

    @property
    def py(self):
        return "_v" + self.name if self.name[0].isdigit() else self.name


class SNode:
    """kind: "call" (a pytorchlite function), "method", "op" (a Python operator), "builtin",
    "const", "tuple", "unpack", "shape", "if", "loop", "while"."""
    __slots__ = ("kind", "target", "args", "kwargs", "outputs", "blocks", "extra")

    def __init__(self, kind, target, args=(), kwargs=(), outputs=(), blocks=(), extra=None):
        self.kind, self.target, self.args, self.kwargs = kind, target, list(args), list(kwargs)
        self.outputs, self.blocks, self.extra = list(outputs), list(blocks), extra


class Block:
    def __init__(self, params=()):
        self.params = list(params)
        self.nodes = []
        self.returns = []


class _Compiler:
    def __init__(self, fn, filename, first_line):
        self.fn = fn
        self.filename = filename
        self.first_line = first_line
        self.count = itertools.count(1)
        self.modules = {n for n, v in fn.__globals__.items() if getattr(v, "__name__", None) == "pytorchlite"}
        self.block = None

    def where(self, node):
        line = self.first_line + getattr(node, "lineno", 1) - 1
        src = linecache.getline(self.filename, line).strip()
        return f"{self.filename}:{line}" + (f"\n    {src}" if src else "")

    def unsupported(self, node, what=None):
        what = what or _NAMES.get(type(node), type(node).__name__ + " nodes")
        return UnsupportedNodeError(f"jit.script: {what} aren't supported:\n  at {self.where(node)}")

    def fresh(self):
        return SValue(str(next(self.count)))

    def emit(self, kind, target, args=(), kwargs=(), n_out=1, blocks=(), extra=None):
        outs = [self.fresh() for _ in range(n_out)]
        self.block.nodes.append(SNode(kind, target, args, kwargs, outs, blocks, extra))
        return outs[0] if n_out == 1 else outs

    # --- statements ------------------------------------------------------------------

    def body(self, stmts, env, top=False):
        for i, st in enumerate(stmts):
            if isinstance(st, ast.Return):
                if not (top and i == len(stmts) - 1):
                    raise self.unsupported(st, "return statements other than the function's last statement")
                self.block.returns = [self.expr(st.value, env)] if st.value is not None else []
            elif isinstance(st, ast.Assign):
                if len(st.targets) != 1:
                    raise self.unsupported(st, "chained assignments")
                self.assign(st.targets[0], self.expr(st.value, env), env, st)
            elif isinstance(st, ast.AugAssign):
                if not isinstance(st.target, ast.Name) or type(st.op) not in _BINOPS:
                    raise self.unsupported(st, "augmented assignments other than `name op= value`")
                left = self.name(st.target, env)
                env[st.target.id] = self.emit("op", _BINOPS[type(st.op)], [left, self.expr(st.value, env)])
            elif isinstance(st, ast.If):
                self.if_(st, env)
            elif isinstance(st, ast.For):
                self.for_(st, env)
            elif isinstance(st, ast.While):
                self.while_(st, env)
            elif isinstance(st, ast.Pass):
                continue
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
                continue        # a docstring
            else:
                raise self.unsupported(st)

    def assign(self, target, value, env, st):
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, ast.Tuple) and all(isinstance(t, ast.Name) for t in target.elts):
            parts = self.emit("unpack", None, [value], n_out=len(target.elts))
            parts = parts if isinstance(parts, list) else [parts]
            for t, v in zip(target.elts, parts):
                env[t.id] = v
        else:
            raise self.unsupported(st, "assignments to anything but names or a tuple of names")

    def _sub(self, stmts, env, params=()):
        outer = self.block
        self.block = Block(params)
        e = dict(env)
        self.body(stmts, e)
        block, self.block = self.block, outer
        return block, e

    def if_(self, st, env):
        cond = self.expr(st.test, env)
        then, e1 = self._sub(st.body, env)
        other, e2 = self._sub(st.orelse, env)
        names = [n for n in dict.fromkeys(list(e1) + list(e2)) if e1.get(n) is not env.get(n) or
                 e2.get(n) is not env.get(n)]
        names = [n for n in names if n in e1 and n in e2]      # one-sided names stay local to their branch
        then.returns = [e1[n] for n in names]
        other.returns = [e2[n] for n in names]
        outs = self.emit("if", None, [cond], n_out=len(names), blocks=[then, other])
        outs = outs if isinstance(outs, list) else [outs]
        for n, v in zip(names, outs):
            env[n] = v

    def _carried(self, stmts, env):
        assigned = []
        for node in ast.walk(ast.Module(body=stmts, type_ignores=[])):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in env:
                assigned.append(node.id)
        return list(dict.fromkeys(assigned))

    def for_(self, st, env):
        it = st.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and 1 <= len(it.args) <= 3 and not it.keywords) or not isinstance(st.target, ast.Name) or st.orelse:
            raise self.unsupported(st, "for loops other than `for name in range(...)`")
        bounds = [self.expr(a, env) for a in it.args]
        carried = self._carried(st.body, env)
        counter = self.fresh()
        params = [self.fresh() for _ in carried]
        inner = dict(env)
        inner.update(zip(carried, params))
        inner[st.target.id] = counter
        body, e = self._sub(st.body, inner, [counter] + params)
        body.returns = [e[n] for n in carried]
        outs = self.emit("loop", None, [env[n] for n in carried], n_out=len(carried), blocks=[body], extra=bounds)
        outs = outs if isinstance(outs, list) else [outs]
        env.update(zip(carried, outs))

    def while_(self, st, env):
        if st.orelse:
            raise self.unsupported(st, "while/else")
        carried = self._carried(st.body, env)
        params = [self.fresh() for _ in carried]
        inner = dict(env)
        inner.update(zip(carried, params))
        outer = self.block
        self.block = Block(params)
        cond = self.expr(st.test, inner)
        cond_block, self.block = self.block, outer
        cond_block.returns = [cond]
        body, e = self._sub(st.body, inner, params)
        body.returns = [e[n] for n in carried]
        outs = self.emit("while", None, [env[n] for n in carried], n_out=len(carried), blocks=[cond_block, body])
        outs = outs if isinstance(outs, list) else [outs]
        env.update(zip(carried, outs))

    # --- expressions -----------------------------------------------------------------

    def name(self, node, env):
        if node.id not in env:
            raise UnsupportedNodeError(f"jit.script: undefined value {node.id} (only arguments and variables "
                                       f"assigned before are visible):\n  at {self.where(node)}")
        return env[node.id]

    def expr(self, node, env):
        if isinstance(node, ast.Name):
            return self.name(node, env)
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, (bool, int, float, str, type(None))):
                raise self.unsupported(node, f"{type(node.value).__name__} constants")
            return node.value
        if isinstance(node, ast.Tuple):
            return self.emit("tuple", None, [self.expr(e, env) for e in node.elts])
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return self.emit("op", _BINOPS[type(node.op)], [self.expr(node.left, env), self.expr(node.right, env)])
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
            op = ("neg", "-") if isinstance(node.op, ast.USub) else ("not", "not ")
            return self.emit("op", op, [self.expr(node.operand, env)])
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1 or type(node.ops[0]) not in _CMPOPS:
                raise self.unsupported(node, "chained or identity/membership comparisons")
            return self.emit("op", _CMPOPS[type(node.ops[0])],
                             [self.expr(node.left, env), self.expr(node.comparators[0], env)])
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
            return self.emit("shape", None, [self.expr(node.value.value, env), self.expr(node.slice, env)])
        if isinstance(node, ast.Call):
            return self.call(node, env)
        raise self.unsupported(node)

    def call(self, node, env):
        args = [self.expr(a, env) for a in node.args]
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise self.unsupported(node, "*args and **kwargs in calls")
        kwargs = [(k.arg, self.expr(k.value, env)) for k in node.keywords]
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in self.modules \
                and f.value.id not in env:
            import pytorchlite
            if not callable(getattr(pytorchlite, f.attr, None)):
                raise UnsupportedNodeError(f"jit.script: pytorchlite has no function {f.attr!r}:\n"
                                           f"  at {self.where(node)}")
            return self.emit("call", f.attr, args, kwargs)
        if isinstance(f, ast.Attribute):
            return self.emit("method", f.attr, [self.expr(f.value, env)] + args, kwargs)
        if isinstance(f, ast.Name) and f.id in _BUILTINS and f.id not in env:
            return self.emit("builtin", f.id, args, kwargs)
        raise self.unsupported(node, "calls of anything but pytorchlite functions, Tensor methods and "
                                     + "/".join(sorted(_BUILTINS)))


# --- printing and code generation ------------------------------------------------------------

def _ref(r):
    return repr(r) if isinstance(r, SValue) else f"{r!r}"


def _print_block(block, indent, lines):
    pad = "  " * indent
    for n in block.nodes:
        outs = ", ".join(repr(v) for v in n.outputs)
        args = ", ".join([_ref(a) for a in (n.extra or [])] + [_ref(a) for a in n.args] +
                         [f"{k}={_ref(v)}" for k, v in n.kwargs])
        kind = {"call": f"aten::{n.target}", "method": f"aten::{n.target}", "op": f"aten::{n.target[0] if n.target else ''}",
                "builtin": f"prim::{n.target}", "tuple": "prim::TupleConstruct", "unpack": "prim::TupleUnpack",
                "shape": "aten::size", "if": "prim::If", "loop": "prim::Loop", "while": "prim::Loop"}[n.kind]
        lines.append(f"{pad}{outs + ' = ' if outs else ''}{kind}({args})")
        for i, b in enumerate(n.blocks):
            params = ", ".join(repr(p) for p in b.params)
            lines.append(f"{pad}  block{i}({params}):")
            _print_block(b, indent + 2, lines)
            lines.append(f"{pad}    -> ({', '.join(_ref(r) for r in b.returns)})")


def _py(r):
    return r.py if isinstance(r, SValue) else repr(r)


def _emit_block(block, indent, lines):
    pad = "    " * indent
    for n in block.nodes:
        lhs = ", ".join(v.py for v in n.outputs)
        args = [_py(a) for a in n.args] + [f"{k}={_py(v)}" for k, v in n.kwargs]
        if n.kind == "call":
            lines.append(f"{pad}{lhs} = _ptl.{n.target}({', '.join(args)})")
        elif n.kind == "method":
            lines.append(f"{pad}{lhs} = {args[0]}.{n.target}({', '.join(args[1:])})")
        elif n.kind == "builtin":
            lines.append(f"{pad}{lhs} = {n.target}({', '.join(args)})")
        elif n.kind == "op":
            sym = n.target[1]
            lines.append(f"{pad}{lhs} = {sym}{args[0]}" if len(args) == 1 else f"{pad}{lhs} = {args[0]} {sym} {args[1]}")
        elif n.kind == "tuple":
            lines.append(f"{pad}{lhs} = ({''.join(a + ', ' for a in args)})")
        elif n.kind == "unpack":
            lines.append(f"{pad}{lhs}, = {args[0]}")
        elif n.kind == "shape":
            lines.append(f"{pad}{lhs} = {args[0]}.shape[{args[1]}]")
        elif n.kind == "if":
            lines.append(f"{pad}if {args[0]}:")
            for b in n.blocks:
                _emit_block(b, indent + 1, lines)
                if n.outputs:
                    lines.append(f"{pad}    {lhs}, = ({''.join(_py(r) + ', ' for r in b.returns)})")
                lines.append(f"{pad}    pass")
                if b is n.blocks[0]:
                    lines.append(f"{pad}else:")
        elif n.kind == "loop":
            body = n.blocks[0]
            counter, params = body.params[0], body.params[1:]
            _carry(pad, params, args, lines)
            lines.append(f"{pad}for {counter.py} in range({', '.join(_py(b) for b in n.extra)}):")
            _emit_block(body, indent + 1, lines)
            _carry(pad + "    ", params, [_py(r) for r in body.returns], lines)
            lines.append(f"{pad}    pass")
            _carry(pad, n.outputs, [p.py for p in params], lines)
        elif n.kind == "while":
            cond, body = n.blocks
            _carry(pad, body.params, args, lines)
            lines.append(f"{pad}while True:")
            _emit_block(cond, indent + 1, lines)
            lines.append(f"{pad}    if not {_py(cond.returns[0])}:")
            lines.append(f"{pad}        break")
            _emit_block(body, indent + 1, lines)
            _carry(pad + "    ", body.params, [_py(r) for r in body.returns], lines)
            _carry(pad, n.outputs, [p.py for p in body.params], lines)


def _carry(pad, targets, sources, lines):
    """`target = source` per carried value of a loop (into it, around it, out of it)."""
    for t, src in zip(targets, sources):
        lines.append(f"{pad}{t.py} = {src}")


class ScriptFunction:
    """What `jit.script` returns: callable, with `.graph` (prim::If / prim::Loop blocks) and
    `.code` (the Python it runs)."""

    def __init__(self, fn, block, params, types):
        self.__name__ = fn.__name__
        self.original = fn
        self._types = types
        self._block = block
        self._params = params
        lines = []
        _emit_block(block, 1, lines)
        rets = block.returns
        lines.append("    return " + (_py(rets[0]) if rets else "None"))
        name = "".join(c if c.isalnum() or c == "_" else "_" for c in fn.__name__)
        src = f"def {name}({', '.join(p.py for p in params)}):\n" + "\n".join(lines) + "\n"
        import pytorchlite
        ns = {"_ptl": pytorchlite}
        filename = f"<pytorchlite.jit.script {name}>"
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        exec(compile(src, filename, "exec"), ns)
        self._fn = ns[name]
        self.code = src

    @property
    def graph(self):
        lines = []
        _print_block(self._block, 1, lines)
        lines.append(f"  return ({', '.join(_ref(r) for r in self._block.returns)})")
        return "graph(" + ", ".join(f"%{p.name} : {self._types.get(p.name, 'Tensor')}" for p in self._params) + "):\n" + "\n".join(lines) + "\n"

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __repr__(self):
        return f"ScriptFunction({self.__name__})"


def script(obj):
    """script(fn) -> ScriptFunction

    Compile a function written in jit.script's subset of Python (see this module's
    docstring) into a graph with `prim::If`/`prim::Loop` nodes. Unlike `jit.trace`, control
    flow on tensor values is kept: each condition is read when the graph runs.

    >>> import pytorchlite
    >>> @pytorchlite.jit.script
    ... def f(x, n: int):
    ...     for i in range(n):
    ...         if x.sum() > 10:
    ...             x = x - 1
    ...         else:
    ...             x = x * 2
    ...     return x
    >>> f(pytorchlite.tensor([1., 2.]), 4)
    tensor([ 6., 14.])
    """
    if isinstance(obj, ScriptFunction):
        return obj
    if not inspect.isfunction(obj):
        raise TypeError(f"jit.script: expected a Python function, got {type(obj).__name__} (scripting nn.Modules "
                        "is not supported; use jit.trace or pytorchlite.compile)")
    try:
        lines, first = inspect.getsourcelines(obj)
    except (OSError, TypeError) as e:
        raise OSError(f"jit.script: cannot get the source of {obj.__name__} ({e}); scripting needs the function's "
                      "source code") from None
    tree = ast.parse(textwrap.dedent("".join(lines)))
    fdef = tree.body[0]
    filename = inspect.getsourcefile(obj) or "<unknown>"
    c = _Compiler(obj, filename, first)
    if not isinstance(fdef, ast.FunctionDef):
        raise c.unsupported(fdef, "lambdas and async functions")
    a = fdef.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
        raise c.unsupported(fdef, "*args, **kwargs, keyword-only arguments and defaults")
    params = [SValue(arg.arg) for arg in a.args]
    types = {arg.arg: arg.annotation.id for arg in a.args
             if isinstance(arg.annotation, ast.Name) and arg.annotation.id in ("int", "float", "bool")}
    env = {p.name: p for p in params}
    c.block = Block(params)
    c.body(fdef.body, env, top=True)
    return ScriptFunction(obj, c.block, params, types)
