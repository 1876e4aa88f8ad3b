"""Operator interception: how the profiler and the JIT tracer see every operator call.

Every generated binding (pytorchlite/generated/functions.py) starts, after its argument
checks, with

    if _ix.on and _ix.claim(): return _ix.call(_IX_<binding>, (<its arguments>))

`on` is False unless a handler is installed, so with nothing installed an operator pays
one attribute load and one test (PyTorch's RecordFunction plays this role: callbacks that
cost nothing while none is registered).

A handler is a callable `handler(site, args, run)`: `site` says which binding was called
(`Site`: the ops.yaml operator name, the form, the argument names), `args` are the
arguments as the binding checked them (a tuple in `site.names` order), and `run(args)`
performs the call (handing it to the handler installed below, and at the bottom to the
binding itself) and returns its result. A handler may record, time, replace arguments or
not run the operator at all (a tracer that only records shapes). Handlers nest like
PyTorch's dispatch modes: the last installed is called first.

The operators a handler's `run` calls inside the binding (a composite's parts, the
formulas of a backward node) are intercepted again, as nested calls, unless the handler
runs them under `suspended()` (a tracer records an operator once, not its parts).
"""

import threading

on = False                  # a handler is installed (read by every generated binding)
_handlers = []
_single = None              # the handler when exactly one is installed (the usual case: no chain)
_sites = []                 # every Site, by its `key` (a recorder stores the small int, not the Site)


class _Local(threading.local):
    reentry = False         # the next claim() is a handler's own call of the binding: let it through
    suspend = 0             # >0: calls on this thread go straight to the bindings


_tls = _Local()


class Site:
    """One generated binding: the operator (its ops.yaml name and overload), the form
    ("function", "method", "inplace"), the names of the arguments in the order `call`
    passes them (the binding's Python names: `self` for methods, `input` for functions),
    and the binding itself."""

    __slots__ = ("name", "overload", "form", "names", "fn", "key", "run", "_caller")

    def __init__(self, name, overload, form, names, fn):
        self.name = name
        self.overload = overload
        self.form = form
        self.names = names
        self.fn = fn
        self._caller = None
        self.run = self.invoke          # bound once: handed to a lone handler as its `run`
        self.key = len(_sites)          # site_of(key) is this Site
        _sites.append(self)

    @property
    def qualified_name(self):
        """`add`, `add_` (in-place), `add.out` (out= given is the caller's business), `max.dim`."""
        base = self.name + ("_" if self.form == "inplace" else "")
        return base + ("." + self.overload if self.overload else "")

    def invoke(self, args):
        """Call the binding with `args` (bypassing interception for this one call)."""
        caller = self._caller
        if caller is None:
            caller = self._caller = _make_caller(self)
        _tls.reentry = True
        try:
            return caller(self.fn, args)
        finally:
            _tls.reentry = False

    def __repr__(self):
        return f"Site({self.qualified_name}, {self.form})"


def _make_caller(site):
    """A function (fn, args) -> fn(...) that passes the arguments as the binding's signature
    takes them: positionally up to the first keyword-only one, by keyword after. Compiled
    once per binding, it costs a plain call where building a dict for ** costs a
    microsecond on every intercepted operator."""
    import inspect
    names = site.names
    try:
        params = list(inspect.signature(site.fn).parameters.values())
    except (TypeError, ValueError):
        params = None
    pos_kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if (params is None or len(params) != len(names)
            or any(p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD) for p in params)
            or any(p.name != n for p, n in zip(params[1:] if site.form != "function" else params,
                                               names[1:] if site.form != "function" else names))):
        if site.form == "function":
            return lambda fn, a: fn(**dict(zip(names, a)))
        return lambda fn, a: fn(a[0], **dict(zip(names[1:], a[1:])))
    parts = [f"a[{i}]" if p.kind in pos_kinds else f"{names[i]}=a[{i}]" for i, p in enumerate(params)]
    ns = {}
    exec(f"def call(fn, a):\n    return fn({', '.join(parts)})\n", ns)
    return ns["call"]


def claim():
    """Whether this binding call goes to the handlers (False for a handler's own call of the
    binding, and on a thread under `suspended()`)."""
    t = _tls
    if t.reentry:
        t.reentry = False
        return False
    return not t.suspend


def call(site, args):
    """Hand one operator call to the installed handlers, the last installed first."""
    h = _single
    if h is not None:               # the usual case: one profiler or tracer; no chain to build
        return h(site, args, site.run)
    return _chain(len(_handlers) - 1, site, args)


def site_of(key):
    """The Site whose `key` this is."""
    return _sites[key]


def _chain(i, site, args):
    if i < 0:
        return site.invoke(args)
    handler = _handlers[i]
    return handler(site, args, lambda a=args: _chain(i - 1, site, a))


def install(handler):
    """Install a handler (it sees every operator call from now on, on every thread)."""
    global on, _single
    _handlers.append(handler)
    _single = handler if len(_handlers) == 1 else None
    on = True


def uninstall(handler):
    """Remove a handler installed with `install` (the one installed last, if it was installed twice)."""
    global on, _single
    for i in range(len(_handlers) - 1, -1, -1):
        if _handlers[i] is handler:
            del _handlers[i]
            break
    else:
        raise ValueError(f"uninstall: {handler!r} is not installed")
    _single = _handlers[0] if len(_handlers) == 1 else None
    on = bool(_handlers)


class suspended:
    """`with suspended():` operator calls on this thread go straight to their bindings."""

    __slots__ = ()

    def __enter__(self):
        _tls.suspend += 1
        return self

    def __exit__(self, *exc):
        _tls.suspend -= 1
        return False


def installed():
    """The installed handlers, first installed first."""
    return tuple(_handlers)
