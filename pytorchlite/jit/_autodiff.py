"""Compiled functions that backpropagate: one joint trace, split into a forward graph and
a backward graph, each optimised and fused, run as one autograd Function.

The joint trace runs the function on its inputs (which require grad), then, with the
tracer still installed, `autograd.grad` of its outputs with ones as the output gradients
(graph inputs of their own). The engine runs each backward node's derivatives.yaml
formula, and the formulas call operators through the bindings, so the backward is
recorded as graph nodes too, over the forward's values (a saved output is an alias of a
forward value, which the tracer recognises) -- the AOT-autograd idea, with
derivatives.yaml as the source of the backward.

The forward graph returns the outputs and every forward value the backward reads; the
backward graph takes those values and the output gradients and returns the input
gradients. `autograd.Function` ties them: forward runs the fused forward graph and saves
the values (version-checked like any saved tensor), backward runs the fused backward
graph. Double backward through it raises (the backward graph ran without recording, as
under torch.compile); anything the joint trace cannot capture (backward formulas that
make tensors outside the operators, in-place operators, outputs that do not require
grad) falls back to running the forward graph through the bindings.
"""

from pytorchlite import _intercept as _ix
from pytorchlite._core import TensorBase
from pytorchlite.autograd import grad_mode
from pytorchlite.autograd.function import Function
from pytorchlite.jit._ir import Graph, Value


class NotJoint(Exception):
    """The function's backward cannot be captured as a graph (the caller falls back)."""


def capture_backward(tracer, result):
    """The `then` of the joint trace: record the backward of `result` with respect to the
    inputs that require grad, and store what `split` needs as `tracer.joint`. When the
    backward cannot be captured, the graph is put back as the forward left it and
    `tracer.joint` is None (the reason in `tracer.not_joint`)."""
    from pytorchlite.jit._trace import TracingError
    g = tracer.graph
    kept = (len(g.nodes), len(g.constants), len(g.inputs))
    tracer.joint = None
    try:
        _capture(tracer)
    except (NotJoint, TracingError) as e:
        del g.nodes[kept[0]:], g.constants[kept[1]:], g.inputs[kept[2]:]
        tracer.joint = None
        tracer.not_joint = str(e)


def _capture(tracer):
    from pytorchlite.autograd import grad as autograd_grad
    from pytorchlite._kernels.factories import ones_like
    g = tracer.graph
    outs = g.values_of_output()
    if not outs or len(set(outs)) != len(outs):
        raise NotJoint("the outputs repeat a value")
    out_tensors = []
    for v in outs:
        t = next((t for t in tracer.keep if tracer.values.get(id(t)) is v), None)
        if t is None or v.kind != "node" or not t._requires_grad or not t._dtype.is_floating_point:
            raise NotJoint("an output is not a differentiable result of the graph")
        out_tensors.append(t)
    if any(n.mutates for n in g.nodes):
        raise NotJoint("the forward mutates tensors")
    diff = [v for v in g.inputs if v.requires_grad]
    diff_tensors = [next(t for t in tracer.keep if tracer.values.get(id(t)) is v) for v in diff]
    n_fwd, n_const = len(g.nodes), len(g.constants)
    with _ix.suspended():
        seeds = [ones_like(t) for t in out_tensors]
    seed_values = [tracer.add_input(f"grad_{i}", s, kind="grad") for i, s in enumerate(seeds)]
    # retain_graph: the eager graph of this first call stays usable for the caller's backward
    grads = autograd_grad(out_tensors, diff_tensors, grad_outputs=seeds, allow_unused=True, retain_graph=True)
    grad_refs = [None if t is None else tracer.ref(t) for t in grads]
    if len(g.constants) != n_const:
        raise NotJoint("the backward made tensors outside the operators")
    if any(n.mutates for n in g.nodes[n_fwd:]):
        raise NotJoint("the backward mutates tensors")
    tracer.joint = (n_fwd, outs, diff, seed_values, grad_refs)


def split(graph, tracer):
    """(forward graph, backward graph, outs, saved, diff) from a joint trace."""
    n_fwd, outs, diff, seeds, grad_refs = tracer.joint
    fwd_nodes, bwd_nodes = graph.nodes[:n_fwd], graph.nodes[n_fwd:]
    produced_bwd = {v for n in bwd_nodes for v in n.outputs}
    saved = []
    for r in [v for n in bwd_nodes for v in n.inputs()] + [r for r in grad_refs if isinstance(r, Value)]:
        if r.kind in ("grad", "const") or r in produced_bwd or r in saved:
            continue
        saved.append(r)
    fwd = Graph()
    fwd.inputs = [v for v in graph.inputs if v.kind != "grad"]
    fwd.arg_kinds = graph.arg_kinds
    position = _input_positions(fwd)
    fwd.constants = list(graph.constants)
    fwd.nodes = fwd_nodes
    fwd.arg_kinds = graph.arg_kinds
    extra = [s for s in saved if s not in outs and s.kind == "node"]
    fwd.output = ("tuple", [("value", v) for v in outs + extra])
    fwd._count = graph._count
    bwd = Graph()
    bwd.inputs = saved + seeds
    bwd.constants = list(graph.constants)
    bwd.nodes = bwd_nodes
    bwd.output = ("tuple", [("value", r) if isinstance(r, Value) else ("literal", None) for r in grad_refs])
    bwd._count = graph._count
    # where the backward finds each saved value: the forward graph's results (outputs, then
    # the extra values), then the Function's inputs (saved as they are)
    produced = outs + extra
    saved_inputs = [s for s in saved if s not in produced]
    saved_index = [produced.index(s) if s in produced else len(produced) + saved_inputs.index(s) for s in saved]
    return fwd, bwd, outs, saved_index, [position[v] for v in diff], [position[v] for v in saved_inputs]


def _input_positions(graph):
    """{input Value: its position among the compiled call's arguments (args, then state)}."""
    tensors = iter([v for v in graph.inputs if v.kind == "input"])
    pos = {}
    for i, kind in enumerate(graph.arg_kinds):
        if kind == "tensor":
            pos[next(tensors)] = i
    n = len(graph.arg_kinds)
    for j, v in enumerate([v for v in graph.inputs if v.kind == "param"]):
        pos[v] = n + j
    return pos


def make_function(name, fwd_fn, bwd_fn, n_out, saved_index, diff_positions, saved_inputs, n_args):
    """The autograd Function of one compiled entry (its `apply`)."""

    def forward(ctx, *inputs):
        res = fwd_fn(*inputs)
        ctx.save_for_backward(*res, *[inputs[i] for i in saved_inputs])
        return res[:n_out]

    def backward(ctx, *grad_outputs):
        if grad_mode._state.grad:
            raise RuntimeError(f"pytorchlite.compile: double backward through compiled {name} is not supported "
                               "(its backward graph runs fused, without recording); call the function uncompiled "
                               "to take higher-order gradients")
        vals = ctx.saved_tensors
        grads = bwd_fn(*[vals[i] for i in saved_index], *grad_outputs)
        out = [None] * n_args
        for pos, gr in zip(diff_positions, grads):
            out[pos] = gr
        return tuple(out)

    cls = type(name + "Compiled", (Function,), {"forward": staticmethod(forward),
                                                  "backward": staticmethod(backward)})
    return cls.apply


def rebuild(spec, outs, values):
    """The user's output structure from the Function's flat outputs."""
    kind = spec[0]
    if kind == "value":
        return values[outs.index(spec[1])]
    if kind == "literal":
        return spec[1]
    if kind == "tuple":
        return tuple(rebuild(s, outs, values) for s in spec[1])
    if kind == "list":
        return [rebuild(s, outs, values) for s in spec[1]]
    if kind == "namedtuple":
        return spec[1](*(rebuild(s, outs, values) for s in spec[2]))
    return {k: rebuild(s, outs, values) for k, s in spec[1].items()}


__all__ = ["NotJoint", "capture_backward", "split", "make_function", "rebuild", "TensorBase"]
