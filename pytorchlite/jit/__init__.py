"""pytorchlite.jit: trace code into a graph, optimise and fuse it, compile it with guards,
save and load it (see docs/architecture.md, "The JIT").

    trace(fn_or_module, example_inputs)    -> TracedFunction / TracedModule (.graph, .code)
    pytorchlite.compile(fn_or_module)      -> traces on first call, guards, retraces on a miss
    save(traced, path) / load(path)        -> the graph as JSON plus weights as safetensors

The pointwise fuser is `pytorchlite.jit._fuser` (FusionSpec, compile_group)."""

from pytorchlite.jit._ir import Graph, Node, Value  # noqa: F401
from pytorchlite.jit._trace import TracingError  # noqa: F401
from pytorchlite.jit._traced import TracedFunction, TracedModule, trace  # noqa: F401
from pytorchlite.jit._compile import CompiledFunction, CompiledModule, compile, config, stats  # noqa: F401,E402
from pytorchlite.jit._serialize import load, save  # noqa: F401,E402
from pytorchlite.jit._script import ScriptFunction, UnsupportedNodeError, script  # noqa: F401,E402
