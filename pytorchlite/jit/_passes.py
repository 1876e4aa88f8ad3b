"""Graph passes: dead code elimination, common subexpressions, constant folding, and the
fusion of connected pointwise nodes into groups run by one generated kernel.

Nodes that mutate (in-place forms, `out=`, `__setitem__`) or draw random numbers are
never removed, merged or folded. When a graph mutates anything, CSE, folding and fusion
are skipped altogether: aliasing makes the order of every read and write matter.
"""

from pytorchlite import _intercept as _ix
from pytorchlite.autograd import grad_mode
from pytorchlite.jit._ir import Value, map_refs

stats = {"dce": 0, "cse": 0, "folded": 0, "fused_groups": 0, "fused_nodes": 0}


def _pure(node):
    return not node.mutates and not node.random


def has_mutation(graph):
    return any(n.mutates for n in graph.nodes)


def _replace(graph, mapping):
    if not mapping:
        return

    def sub(v):
        return mapping.get(v, v)
    for node in graph.nodes:
        node.args = map_refs(node.args, sub)
    graph.output = _map_output(graph.output, sub)


def _map_output(spec, fn):
    kind = spec[0]
    if kind == "value":
        return ("value", fn(spec[1]))
    if kind == "literal":
        return spec
    if kind == "namedtuple":
        return (kind, spec[1], [_map_output(s, fn) for s in spec[2]])
    if kind == "dict":
        return (kind, {k: _map_output(s, fn) for k, s in spec[1].items()})
    return (kind, [_map_output(s, fn) for s in spec[1]])


def dce(graph):
    """Remove pure nodes none of whose outputs is used, and unused constants."""
    live = set(graph.values_of_output())
    kept = []
    for node in reversed(graph.nodes):
        if not _pure(node) or any(v in live for v in node.outputs) or not node.outputs:
            kept.append(node)
            live.update(node.inputs())
        else:
            stats["dce"] += 1
    graph.nodes = kept[::-1]
    graph.constants = [c for c in graph.constants if c in live]
    return graph


def _key(ref):
    if isinstance(ref, Value):
        return ("v", id(ref))
    if isinstance(ref, (tuple, list)):
        return (type(ref).__name__,) + tuple(_key(r) for r in ref)
    if isinstance(ref, slice):
        return ("slice", _key(ref.start), _key(ref.stop), _key(ref.step))
    try:
        hash(ref)
    except TypeError:
        return ("id", id(ref))
    return (type(ref).__name__, ref)


def cse(graph):
    """Merge nodes that call the same binding on the same arguments."""
    if has_mutation(graph):
        return graph
    seen, mapping, kept = {}, {}, []
    for node in graph.nodes:
        node.args = map_refs(node.args, lambda v: mapping.get(v, v))
        if not _pure(node) or not node.outputs:
            kept.append(node)
            continue
        k = (id(node.site), _key(node.args))
        prev = seen.get(k)
        if prev is None:
            seen[k] = node
            kept.append(node)
        else:
            mapping.update(zip(node.outputs, prev.outputs))
            stats["cse"] += 1
    graph.nodes = kept
    _replace(graph, mapping)
    return graph


def fold_constants(graph):
    """Evaluate, once, pure nodes whose tensor arguments are all constants (that do not
    require grad), replacing their outputs with constants."""
    if has_mutation(graph):
        return graph
    mapping, kept = {}, []
    for node in graph.nodes:
        node.args = map_refs(node.args, lambda v: mapping.get(v, v))
        ins = node.inputs()
        if (not _pure(node) or not node.outputs or any(v.kind != "const" or v.requires_grad for v in ins)
                or any(v.requires_grad for v in node.outputs)):
            kept.append(node)
            continue
        args = map_refs(node.args, lambda v: v.data)
        with grad_mode.no_grad(), _ix.suspended():
            result = node.site.invoke(args)
        results = [result] if node.result == "tensor" else list(result)
        for v, t in zip(node.outputs, results):
            c = Value("c" + str(len(graph.constants)), "const", t)
            c.data = t
            graph.constants.append(c)
            mapping[v] = c
        stats["folded"] += 1
    graph.nodes = kept
    _replace(graph, mapping)
    return graph


def optimize(graph):
    """The passes that keep the graph a graph of binding calls: CSE, folding, DCE."""
    return dce(fold_constants(cse(graph)))
