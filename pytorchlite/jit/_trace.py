"""Tracing: run a function once with an interception handler installed and record each
top-level operator call as a graph node (pytorchlite/_intercept.py is the hook).

Each tensor seen is mapped to a graph `Value`: the example inputs and a module's
parameters and buffers are graph inputs; results of recorded calls are node outputs; any
other tensor (created by code that is not an operator, or captured from outside) becomes a
constant. Operators called inside a recorded operator (its parts, its backward formulas)
run under `_intercept.suspended()` and are not recorded. A composite operator (ops.yaml
`composite:`) is recorded as its parts, so `x / y` becomes the pointwise `_div_true` the
fuser knows, unless its parts read tensor values or make tensors outside the operators;
then it is recorded as one node.

Reading a traced tensor's value (`bool(t)`, `.item()`, `.tolist()`, `.numpy()`, an
operator that returns a Python number from it) raises `TracingError` naming the user's
source line: a graph cannot depend on values (torch.jit.trace silently records the one
branch it saw; torch.export refuses, as this does).
"""

import inspect
import os
import sys
import threading

from pytorchlite import _intercept as _ix
from pytorchlite._core import TensorBase
from pytorchlite.jit._ir import Graph, Node, Value, map_refs

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# operators that return a Python value computed from metadata only (safe to bake in)
_METADATA_OPS = {"numel", "dim", "ndimension", "nelement", "element_size", "is_contiguous",
                 "is_floating_point", "is_complex", "is_signed", "size", "stride", "get_device",
                 "is_same_size", "is_nonzero_shape"}
# operators whose results differ from call to call: never merged or removed by the passes
_RANDOM_WORDS = ("rand", "dropout", "bernoulli", "normal", "multinomial", "uniform", "exponential",
                 "geometric", "cauchy", "log_normal", "poisson", "empty")

_lock = threading.RLock()     # RLock: a traced function may trace (compile) another


class TracingError(RuntimeError):
    """Tracing met something a graph cannot hold (a read of a traced tensor's value)."""


def user_location():
    """`file:line (source)` of the innermost stack frame outside pytorchlite (the user's code)."""
    f = sys._getframe(1)
    while f is not None:
        path = os.path.abspath(f.f_code.co_filename)
        if not path.startswith(_PKG_DIR + os.sep) or os.sep + "tests" + os.sep in path:
            break
        f = f.f_back
    if f is None:
        return "<unknown>"
    import linecache
    line = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    return f"{f.f_code.co_filename}:{f.f_lineno}" + (f" ({line})" if line else "")


_COMPOSITES = None


def _composites():
    global _COMPOSITES
    if _COMPOSITES is None:
        from pytorchlite._ops import CompositeOp
        from pytorchlite.generated import dispatch
        _COMPOSITES = {k for k, v in vars(dispatch).items() if isinstance(v, CompositeOp)}
    return _COMPOSITES


def is_composite(site):
    key = "OP_" + site.name + ("_" + site.overload if site.overload else "")
    return key in _composites()


def is_random(name):
    return any(w in name for w in _RANDOM_WORDS)


_READ_WHAT = {"item": "`.item()`", "tolist": "`.tolist()`", "numpy": "`.numpy()`",
              "bool": "`bool()` (an `if`/`while` on a tensor, `and`/`or`/`not`)"}


def _geometry(t):
    return (id(t._storage), t._offset, t._shape, t._stride, t._dtype)


class _Frame:
    """The nodes recorded inside one composite operator (kept only if it decomposes)."""
    __slots__ = ("nodes", "opaque")

    def __init__(self):
        self.nodes = []
        self.opaque = False


class Tracer:
    """The interception handler that builds a Graph."""

    def __init__(self, what="jit.trace"):
        self.what = what
        self.graph = Graph()
        self.values = {}        # id(tensor) -> Value
        self.keep = []          # the tensors whose ids are in `values`, kept alive
        self.frames = []
        self.shape_reads = 0
        self.aliases = {}       # (storage, offset, shape, strides, dtype) -> Value
        self.thread = threading.get_ident()

    # --- values ----------------------------------------------------------------------

    def bind(self, tensor, value):
        self.values[id(tensor)] = value
        self.keep.append(tensor)
        if value.kind != "const":
            self.aliases[_geometry(tensor)] = value

    def add_input(self, name, tensor, kind="input"):
        v = Value(name, kind, tensor)
        self.graph.inputs.append(v)
        if id(tensor) not in self.values:
            self.bind(tensor, v)
        return v

    def ref(self, obj):
        """The graph reference of an argument (mapping new tensors to constants)."""
        if isinstance(obj, TensorBase):
            v = self.values.get(id(obj))
            if v is None:
                # another tensor object over exactly the memory of a traced value (the
                # autograd engine's saved outputs are such aliases): the same value
                v = self.aliases.get(_geometry(obj))
                if v is not None:
                    self.values[id(obj)] = v
                    self.keep.append(obj)
                    return v
                v = Value("c" + str(len(self.graph.constants)), "const", obj)
                v.data = obj
                self.graph.constants.append(v)
                self.bind(obj, v)
            return v
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            return tuple(self.ref(o) for o in obj)
        if isinstance(obj, (tuple, list)):
            return type(obj)(self.ref(o) for o in obj)
        if isinstance(obj, slice):
            return slice(self.ref(obj.start), self.ref(obj.stop), self.ref(obj.step))
        return obj

    def traced(self, tensor):
        v = self.values.get(id(tensor))
        return v is not None and v.kind != "const"

    # --- the handler -----------------------------------------------------------------

    def __call__(self, site, args, run):
        if threading.get_ident() != self.thread:
            return run(args)        # another thread's operators are not part of this trace
        refs = tuple(self.ref(a) for a in args)
        if is_composite(site):
            frame = _Frame()
            self.frames.append(frame)
            try:
                result = run(args)
            finally:
                self.frames.pop()
            if not frame.opaque and self._all_mapped(result):
                self._nodes().extend(frame.nodes)
                return result
        else:
            with _ix.suspended():
                result = run(args)
        self._record(site, refs, result)
        return result

    def _nodes(self):
        return self.frames[-1].nodes if self.frames else self.graph.nodes

    def _all_mapped(self, result):
        if isinstance(result, TensorBase):
            return id(result) in self.values and self.values[id(result)].kind != "const"
        if isinstance(result, (tuple, list)):
            return all(self._all_mapped(r) for r in result)
        return True

    def _record(self, site, refs, result):
        name = site.name
        mutates = site.form == "inplace" or name.endswith("_") or name == "__setitem__" or (
            "out" in site.names and refs[site.names.index("out")] is not None)
        node = Node(site, refs, [], "none", mutates=mutates, random=is_random(name))
        if isinstance(result, TensorBase):
            node.result = "tensor"
            tensors = [result]
        elif isinstance(result, (tuple, list)) and all(isinstance(r, TensorBase) for r in result):
            node.result = type(result) if hasattr(result, "_fields") else type(result).__name__
            tensors = list(result)
        elif result is None:
            tensors = []
        else:
            if name in _METADATA_OPS or not any(v.kind != "const" for v in node.inputs()):
                return          # a Python value from metadata (or from constants): baked in
            self._refuse(f"`{site.qualified_name}` (it returns a Python {type(result).__name__})")
        for i, t in enumerate(tensors):
            v = Value(self.graph.fresh(), "node", t, node=node, index=i)
            node.outputs.append(v)
            self.bind(t, v)
        self._nodes().append(node)

    def value_read(self, what, tensor):
        if threading.get_ident() != self.thread:
            return
        if what == "shape":
            if not self.frames:
                self.shape_reads += 1
            return
        if self.frames:
            # a composite operator that reads values: recorded as one node, not its parts
            self.frames[-1].opaque = True
            return
        if self.traced(tensor):
            self._refuse(_READ_WHAT.get(what, what))

    def _refuse(self, what):
        raise TracingError(
            f"{self.what}: {what} reads the value of a traced tensor at {user_location()}. A graph "
            "cannot depend on tensor values (torch.jit.trace would silently keep the one branch it saw): "
            "compute with tensor operators instead (e.g. pytorchlite.where for a data-dependent choice), "
            "or read the value outside the traced function.")

    # --- outputs ---------------------------------------------------------------------

    def output_spec(self, obj):
        """The structure of the traced function's result over graph values."""
        if isinstance(obj, TensorBase):
            return ("value", self.ref(obj))
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            return ("namedtuple", type(obj), [self.output_spec(o) for o in obj])
        if isinstance(obj, (tuple, list)):
            return (type(obj).__name__, [self.output_spec(o) for o in obj])
        if isinstance(obj, dict):
            return ("dict", {k: self.output_spec(v) for k, v in obj.items()})
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return ("literal", obj)
        raise TypeError(f"{self.what}: the traced function returned a {type(obj).__name__}; only tensors, "
                        "Python numbers and tuples, lists and dicts of them can be graph outputs")


def input_names(fn, n, offset=0):
    """Names for n positional inputs: the function's parameter names where it has them."""
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    params = params[offset:]
    names = []
    for i in range(n):
        nm = params[i] if i < len(params) else f"input{i}"
        names.append(nm if not nm.startswith("_") else "a" + nm)
    return names


def module_state(module):
    """(names, tensors) of a module's parameters then buffers, as graph inputs."""
    names, tensors = [], []
    for nm, p in module.named_parameters():
        names.append(nm)
        tensors.append(p)
    for nm, b in module.named_buffers():
        if b is not None:
            names.append(nm)
            tensors.append(b)
    return names, tensors


def trace_graph(fn, args, state=(), what="jit.trace", then=None):
    """Run fn(*args) under a Tracer; the tensors in `state` (name, tensor) are extra inputs.
    `then(tracer, result)`, if given, runs while the tracer is still installed (the joint
    forward/backward trace of `_autodiff`). Returns (graph, result, tracer)."""
    for i, a in enumerate(args):
        if not isinstance(a, (TensorBase, bool, int, float, type(None))):
            raise TypeError(f"{what}: example input {i} is a {type(a).__name__}; tensors and Python numbers "
                            "are supported")
    tracer = Tracer(what)
    names = input_names(getattr(fn, "forward", fn), len(args))
    for nm, a in zip(names, args):
        if isinstance(a, TensorBase):
            tracer.add_input(nm, a)
    for nm, t in state:
        tracer.add_input(nm, t, kind="param")
    with _lock:
        _ix.install(tracer)
        try:
            result = fn(*args)
            tracer.graph.output = tracer.output_spec(result)
            if then is not None:
                then(tracer, result)
        finally:
            _ix.uninstall(tracer)
    graph = tracer.graph
    graph.arg_kinds = tuple("tensor" if isinstance(a, TensorBase) else "literal" for a in args)
    return graph, result, tracer


__all__ = ["TracingError", "Tracer", "trace_graph", "module_state", "map_refs"]
