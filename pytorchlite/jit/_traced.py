"""The objects `jit.trace` returns: a traced function or module, callable, with `.graph`
(TorchScript-style IR) and `.code` (the equivalent Python)."""

from pytorchlite.jit import _codegen
from pytorchlite.jit._trace import module_state, trace_graph


class TracedFunction:
    """A function recorded as a graph; calling it runs the graph's operators (through the
    bindings, so autograd records them as in eager mode)."""

    def __init__(self, graph, name="forward"):
        self.graph = graph
        self.__name__ = name
        self._forward = _codegen.build(graph, name=name)

    @property
    def code(self):
        """The graph as the Python function that runs it."""
        return self._forward.__source__

    def _check(self, args):
        if len(args) != len(self.graph.arg_kinds):
            raise TypeError(f"{self.__name__}() (traced) takes {len(self.graph.arg_kinds)} positional arguments "
                            f"but {len(args)} were given")

    def __call__(self, *args):
        self._check(args)
        return self._forward(*args)

    def __repr__(self):
        return f"TracedFunction({self.__name__})"


class TracedModule(TracedFunction):
    """A module's forward recorded as a graph whose inputs include the module's parameters
    and buffers: a call passes their current tensors, so training the module (in place,
    as optimizers do) is seen by the traced one."""

    def __init__(self, graph, module, state_names):
        self.module = module
        self._state_names = tuple(state_names)
        super().__init__(graph, type(module).__name__ + "_forward")

    def _state(self):
        names, tensors = module_state(self.module)
        if tuple(names) != self._state_names:
            raise RuntimeError(f"traced {type(self.module).__name__}: its parameters and buffers changed since it "
                               f"was traced (had {list(self._state_names)}, now {names}); trace it again")
        return tensors

    def __call__(self, *args):
        self._check(args)
        return self._forward(*args, *self._state())

    def parameters(self):
        return self.module.parameters()

    def __repr__(self):
        return f"TracedModule({type(self.module).__name__})"


def trace(func, example_inputs=None, **kwargs):
    """trace(func, example_inputs) -> TracedFunction or TracedModule

    Run `func` (a function or an `nn.Module`) once on `example_inputs` (a tensor or a
    tuple of tensors and Python numbers) and record every operator call into a graph.
    Reading a traced tensor's value (`bool(t)`, `.item()`, `if` on a tensor) raises
    `pytorchlite.jit.TracingError` naming the line, instead of recording one branch.

    >>> import pytorchlite
    >>> f = pytorchlite.jit.trace(lambda x, y: (x * y).relu(), (pytorchlite.ones(2), pytorchlite.ones(2)))
    >>> f(pytorchlite.tensor([1., -2.]), pytorchlite.tensor([3., 3.]))
    tensor([3., 0.])
    """
    unknown = set(kwargs) - {"check_trace", "check_inputs", "check_tolerance", "strict", "_force_outplace",
                             "_module_class", "_compilation_unit", "example_kwarg_inputs", "_store_inputs"}
    if unknown:
        raise TypeError(f"trace() got an unexpected keyword argument '{sorted(unknown)[0]}'")
    if example_inputs is None:
        raise ValueError("trace(): example_inputs is required (a tensor or a tuple of tensors)")
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    from pytorchlite.nn import Module
    if isinstance(func, Module):
        names, tensors = module_state(func)
        graph, _, _ = trace_graph(func, args, list(zip(names, tensors)))
        return TracedModule(graph, func, names)
    if not callable(func):
        raise TypeError(f"trace(): func must be a callable or an nn.Module, not {type(func).__name__}")
    graph, _, _ = trace_graph(func, args)
    return TracedFunction(graph, getattr(func, "__name__", "forward"))
