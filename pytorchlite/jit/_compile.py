"""`pytorchlite.compile`: trace on the first call, guard, retrace on a guard miss.

Each cache entry is a graph traced for one guard key: per positional argument its dtype,
shape, device and requires_grad (a Python number: its type and value), whether any module
parameter requires grad, and the grad mode. A hit is one tuple built, one dict lookup and
the entry's generated function. An entry that needs no gradient runs the optimised graph
with its pointwise chains fused (`_fusion`); one that does runs the optimised graph
through the bindings, so eager autograd records it (correct; not faster than eager).

Dynamic shapes: with `dynamic=True`, or (the default `dynamic=None`) after a miss on
shapes alone, the entry serves every size of the same number of dims, keyed without
sizes. The graph must not depend on sizes: with `dynamic=None` the miss is traced again on
the new sizes and the entry becomes dynamic only when the two graphs agree except in
sizes (and neither read a shape in the traced code); with `dynamic=True` the first graph
is dynamic unless the traced code read a shape.
"""

import functools
import inspect
import logging
import os
import sys
import warnings

from pytorchlite._core import TensorBase
from pytorchlite.autograd.grad_mode import _state as _gm
from pytorchlite.jit import _autodiff, _codegen, _fusion, _passes
from pytorchlite.jit._ir import Value
from pytorchlite import _intercept as _ix
from pytorchlite.jit._trace import Tracer, module_state, trace_graph

log = logging.getLogger("pytorchlite.jit")


class config:
    """Like torch._dynamo.config: how many graphs one compiled function keeps."""
    cache_size_limit = 8


_stats = {"traces": 0, "recompiles": 0, "cache_limit_hits": 0}


def stats():
    """Counters for the whole process: traces, recompiles (traces after the first, per
    compiled function), cache_limit_hits, and the passes' counts (dce, cse, folded,
    fused_groups, fused_nodes)."""
    return {**_stats, **_passes.stats}


def _logs_on(kind):
    return kind in os.environ.get("PYTORCHLITE_LOGS", "").replace("+", "").split(",")


_TAIL = 3      # the guards after the arguments': parameters' requires_grad, grad mode, module.training


def _guard_key(args, state, module=None):
    key = [(a._dtype, a._shape, a._device, a._requires_grad) if isinstance(a, TensorBase) else (a.__class__, a)
           for a in args]
    key.append(tuple([t._requires_grad for t in state]))
    key.append(_gm.grad)
    key.append(None if module is None else module.training)
    return tuple(key)


def _dynamic_key(key):
    n = len(key) - _TAIL
    return tuple((k[0], len(k[1]), k[2], k[3]) if type(k) is tuple and len(k) == 4 else k for k in key[:n]) + key[n:]


def _signature(graph):
    """The graph without its sizes: ops and literal arguments (for the dynamic check)."""
    names = {}

    def r(ref):
        if isinstance(ref, Value):
            return ("%", names.setdefault(ref, len(names)), ref.dtype, ref.kind)
        if isinstance(ref, (tuple, list)):
            return tuple(r(x) for x in ref)
        if isinstance(ref, slice):
            return ("slice", r(ref.start), r(ref.stop), r(ref.step))
        return (type(ref).__name__, repr(ref))
    for v in graph.inputs:
        r(v)
    return tuple((n.site.qualified_name, n.site.form, r(n.args)) for n in graph.nodes)


def _why(old, new, names):
    """The first guard that failed, as torch's recompile log says it."""
    for i, (a, b) in enumerate(zip(old, new)):
        if a == b:
            continue
        if i == len(old) - 1:
            return f"module.training changed ({a} -> {b})"
        if i == len(old) - 2:
            return f"grad mode changed ({a} -> {b})"
        if i == len(old) - 3:
            return "requires_grad of the module's parameters changed"
        nm = names[i] if i < len(names) else f"input {i}"
        if type(a) is tuple and len(a) == 4 and len(b) == 4:
            for what, x, y in zip(("dtype", "size", "device", "requires_grad"), a, b):
                if x != y:
                    return f"tensor '{nm}' {what} mismatch: expected {x}, actual {y}"
        return f"'{nm}' changed: expected {a!r}, actual {b!r}"
    return "no guard matched"


def _tracing():
    return any(isinstance(h, Tracer) for h in _ix.installed())


class _Entry:
    __slots__ = ("graph", "backward_graph", "fn", "dynamic", "signature", "key")


class CompiledFunction:
    """What `pytorchlite.compile` returns for a function (calls go through the guards)."""

    def __init__(self, fn, dynamic=None, fuse=True, module=None):
        self._fn = fn
        self._module = module
        self._dynamic = dynamic
        self._fuse = fuse
        self._cache = {}
        self._dyn_cache = {}
        self._entries = []
        self._state = ()
        self.recompiles = 0
        self._names = None
        self._sig = None
        functools.update_wrapper(self, fn if module is None else module.forward, updated=())

    # --- the hot path ----------------------------------------------------------------

    def __call__(self, *args, **kwargs):
        if _ix.on and _tracing():
            # called inside code being traced: run the original, so the outer trace records
            # its operators (a fused kernel is not an operator call it could see)
            return (self._module if self._module is not None else self._fn)(*args, **kwargs)
        if kwargs:
            args = self._bind(args, kwargs)
        state = self._state
        key = _guard_key(args, state, self._module)
        entry = self._cache.get(key)
        if entry is None:
            entry = self._dyn_cache.get(_dynamic_key(key)) if self._dyn_cache else None
            if entry is None:
                return self._miss(args, key)
        return entry.fn(*args, *state)

    # --- misses ----------------------------------------------------------------------

    def _bind(self, args, kwargs):
        if self._sig is None:
            self._sig = inspect.signature(self._module.forward if self._module is not None else self._fn)
        b = self._sig.bind(*args, **kwargs)
        b.apply_defaults()
        return tuple(b.arguments.values())

    def _trace(self, args, then=None):
        if self._module is not None:
            names, tensors = module_state(self._module)
            self._state = tuple(tensors)
            graph, result, tracer = trace_graph(self._module, args, list(zip(names, tensors)),
                                                what="pytorchlite.compile", then=then)
        else:
            graph, result, tracer = trace_graph(self._fn, args, what="pytorchlite.compile", then=then)
        _stats["traces"] += 1
        if self._names is None:
            self._names = [v.name for v in graph.inputs if v.kind == "input"]
        return graph, result, tracer

    def _miss(self, args, key):
        if self._entries:
            if len(self._entries) >= config.cache_size_limit:
                _stats["cache_limit_hits"] += 1
                if not getattr(self, "_warned", False):
                    self._warned = True
                    warnings.warn(f"pytorchlite.compile: {self.__name__} hit config.cache_size_limit "
                                  f"({config.cache_size_limit}); new inputs run eagerly from now on "
                                  "(raise pytorchlite.jit.config.cache_size_limit, or mark dims dynamic)",
                                  stacklevel=3)
                return self._fn(*args)
            self.recompiles += 1
            _stats["recompiles"] += 1
            reason = _why(self._entries[-1].key, key, self._names or [])
            log.info("Recompiling %s: %s", self.__name__, reason)
            if _logs_on("recompiles"):
                print(f"pytorchlite.jit: Recompiling function {self.__name__}: {reason}", file=sys.stderr)
        if self._module is not None and not self._entries:
            self._state = tuple(module_state(self._module)[1])
        wants_grad = self._fuse and _gm.grad and (
            any(isinstance(a, TensorBase) and a._requires_grad for a in args) or
            any(t._requires_grad for t in self._state))
        graph, result, tracer = self._trace(args, _autodiff.capture_backward if wants_grad else None)
        joint = getattr(tracer, "joint", None)
        if wants_grad and joint is None:
            log.info("pytorchlite.compile: %s runs its backward eagerly: %s", self.__name__,
                     getattr(tracer, "not_joint", ""))
        state = self._state
        key = _guard_key(args, state, self._module)     # the module's state may have been taken just now
        entry = _Entry()
        entry.key = key
        entry.backward_graph = None
        entry.signature = _signature(graph)
        dynamic = False
        if self._dynamic is not False and tracer.shape_reads == 0 and joint is None:
            if self._dynamic:
                dynamic = True
            else:
                dk = _dynamic_key(key)
                dynamic = any(_dynamic_key(e.key) == dk and e.signature == entry.signature and not e.dynamic
                              for e in self._entries)
        graph.dynamic = dynamic
        if joint is not None:
            self._finish_joint(entry, graph, tracer, len(args))
        else:
            self._finish(entry, graph, key)
        entry.dynamic = dynamic
        self._entries.append(entry)
        if dynamic:
            self._dyn_cache[_dynamic_key(key)] = entry
        else:
            self._cache[key] = entry
        return result

    def _finish(self, entry, graph, key):
        _passes.optimize(graph)
        needs_grad = key[-2] and (any(v.requires_grad for v in graph.inputs) or
                                  any(v.requires_grad for v in graph.constants))
        steps = None if needs_grad or not self._fuse else _fusion.fuse(graph)
        entry.graph = graph
        entry.fn = _codegen.build(graph, steps, name=self.__name__)

    def _finish_joint(self, entry, graph, tracer, n_args):
        fwd, bwd, outs, saved_index, diff_pos, saved_inputs = _autodiff.split(graph, tracer)
        fns = []
        for g, what in ((fwd, ""), (bwd, "_backward")):
            _passes.optimize(g)
            fns.append(_codegen.build(g, _fusion.fuse(g), name=self.__name__ + what))
        apply = _autodiff.make_function(_codegen.ident(self.__name__), fns[0], fns[1], len(outs), saved_index,
                                        diff_pos, saved_inputs, n_args + len(self._state))
        spec, rebuild = graph.output, _autodiff.rebuild

        def run(*args):
            return rebuild(spec, outs, apply(*args))
        run.__source__ = fns[0].__source__ + "\n" + fns[1].__source__
        entry.graph = fwd
        entry.backward_graph = bwd
        entry.fn = run

    # --- inspection ------------------------------------------------------------------

    @property
    def graphs(self):
        """The optimised graphs of the cache entries, oldest first."""
        return [e.graph for e in self._entries]

    @property
    def code(self):
        """The generated Python of the most recent entry."""
        return self._entries[-1].fn.__source__ if self._entries else None

    def reset(self):
        """Forget every cached graph (the next call traces again)."""
        self._cache.clear()
        self._dyn_cache.clear()
        self._entries.clear()
        self.recompiles = 0


class CompiledModule(CompiledFunction):
    """What `pytorchlite.compile` returns for an nn.Module: calls its forward through the
    guards, with the module's parameters and buffers as graph inputs."""

    def __init__(self, module, dynamic=None, fuse=True):
        super().__init__(module, dynamic, fuse, module=module)
        self._orig_mod = module

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._orig_mod, name)

    def parameters(self, recurse=True):
        return self._orig_mod.parameters(recurse)

    def named_parameters(self, *a, **k):
        return self._orig_mod.named_parameters(*a, **k)

    def train(self, mode=True):
        self._orig_mod.train(mode)
        self.reset()        # a module's mode changes what forward records (dropout, batch norm)
        return self

    def eval(self):
        return self.train(False)

    def state_dict(self, *a, **k):
        return self._orig_mod.state_dict(*a, **k)


_BACKENDS = ("inductor", "pytorchlite", "eager", "aot_eager")
_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """compile(model, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None, disable=False)

    Optimise a function or nn.Module: the first call traces it into a graph (see
    `pytorchlite.jit.trace`), optimises it and fuses its pointwise chains into generated C
    kernels; later calls with inputs of the same dtypes, shapes, devices and requires_grad
    (and the same grad mode) run the compiled graph, others trace again (counted:
    `pytorchlite.jit.stats()`, logged with PYTORCHLITE_LOGS=recompiles). `backend="eager"`
    traces and guards but does not fuse. Used as a decorator without arguments or with
    keyword arguments, as torch.compile is.

    >>> import pytorchlite
    >>> f = pytorchlite.compile(lambda x: (x * 2).sigmoid() + 1)
    >>> f(pytorchlite.zeros(3))
    tensor([1.5000, 1.5000, 1.5000])
    """
    if backend not in _BACKENDS:
        raise ValueError(f"compile(): unknown backend {backend!r}; expected one of {list(_BACKENDS)}")
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: " + ", ".join(str(m) for m in _MODES[1:]))
    if dynamic not in (None, True, False):
        raise TypeError(f"compile(): dynamic must be None, True or False, not {dynamic!r}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"compile(): options must be a dict, not {type(options).__name__}")
    fuse = backend not in ("eager", "aot_eager")

    def wrap(m):
        if disable:
            return m
        from pytorchlite.nn import Module
        if isinstance(m, Module):
            return CompiledModule(m, dynamic, fuse)
        if not callable(m):
            raise RuntimeError(f"compile(): model must be a callable or an nn.Module, not {type(m).__name__}")
        return CompiledFunction(m, dynamic, fuse)

    return wrap if model is None else wrap(model)
