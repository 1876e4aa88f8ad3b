"""The fusion pass: connected pointwise nodes become one group, run by one fused kernel
(`_fuser.compile_group`) or, where the fuser cannot take a group, by the group's nodes in
order through the bindings (`eager_group`, the same FusionSpec contract).

A group runs where its last node was. That is sound because a group closes as soon as
anything outside it reads one of its values (a non-pointwise node, or a pointwise node
that starts a group of its own): no node after that point can join it, so nothing placed
between its nodes needs a value it has not produced yet. A group's outputs are its values
read outside it (later nodes, the graph's result); its inputs are the values it reads from
outside, at most `_fuser.MAX_OPERANDS` tensors in all.
"""

import logging

from pytorchlite._core import TensorBase
from pytorchlite._device import CPU
from pytorchlite._ops import ops
from pytorchlite.jit import _fuser
from pytorchlite.jit._ir import Value
from pytorchlite.jit._passes import has_mutation, stats

log = logging.getLogger("pytorchlite.jit")

_NUMBER = (bool, int, float)


def _schema_args(node):
    """{schema name: ref} of a node whose binding the fuser knows, or None."""
    site = node.site
    if site is None or site.form == "inplace" or node.mutates or node.result != "tensor":
        return None
    if site.name not in _fuser._table.OPS:
        return None
    named = dict(zip(site.names, node.args))
    if named.pop("out", None) is not None:
        return None
    if "input" in named and "self" not in named:
        named["self"] = named.pop("input")
    return named


def _fusable(node):
    named = _schema_args(node)
    if named is None:
        return None
    _promo, ins, scalars = _fuser._table.OPS[node.site.name][:3]
    if set(named) != set(ins) | set(scalars):
        return None
    for n in ins:
        r = named[n]
        if isinstance(r, Value):
            if r.device != CPU or r.dtype is None:
                return None
        elif type(r) not in _NUMBER:
            return None
    if any(type(named[n]) not in _NUMBER for n in scalars):
        return None
    if node.outputs[0].device != CPU:
        return None
    return [named[n] for n in ins + scalars]


class Group:
    """Connected pointwise nodes and how they run."""

    def __init__(self):
        self.nodes = []
        self.args = []          # per node: its refs in schema order
        self.open = True
        self.kernel = None
        self.spec = None
        self.inputs = []
        self.outputs = []
        self.merged_into = None

    def external_inputs(self, extra_args=()):
        produced = {v for n in self.nodes for v in n.outputs}
        seen = []
        for refs in list(self.args) + list(extra_args):
            for r in refs:
                if isinstance(r, Value) and r not in produced and r not in seen:
                    seen.append(r)
        return seen

    def make_spec(self, used_outside):
        index = {n.outputs[0]: j for j, n in enumerate(self.nodes)}
        self.inputs = self.external_inputs()
        pos = {v: i for i, v in enumerate(self.inputs)}
        nodes = []
        for n, refs in zip(self.nodes, self.args):
            args = []
            for r in refs:
                if isinstance(r, Value):
                    args.append(("node", index[r]) if r in index else ("in", pos[r]))
                else:
                    args.append(("const", r))
            nodes.append((n.site.name, tuple(args)))
        outs = [j for j, n in enumerate(self.nodes) if n.outputs[0] in used_outside]
        self.outputs = [self.nodes[j].outputs[0] for j in outs]
        self.spec = _fuser.FusionSpec(tuple(v.dtype for v in self.inputs), tuple(nodes), tuple(outs))

    def emit(self, w):
        k = w.const(self.kernel, "_k")
        lhs = "".join(v.py + ", " for v in self.outputs)
        return f"{lhs}= {k}({', '.join(v.py for v in self.inputs)})"


def eager_group(spec):
    """A callable with FusedKernel's calling convention that runs the spec's nodes one by
    one through the bindings (for groups the fuser cannot compile, and to test grouping)."""
    table = _fuser._table.OPS

    def run(*tensors):
        results = []
        for op, args in spec.nodes:
            ins, scalars = table[op][1], table[op][2]
            vals = [tensors[i] if k == "in" else results[i] if k == "node" else i for k, i in args]
            fn = getattr(ops, op)
            results.append(fn(*vals[:len(ins)], **dict(zip(scalars, vals[len(ins):]))))
        return tuple(results[j].contiguous() for j in spec.outputs)
    run.spec = spec
    return run


def fuse(graph, compile=True):
    """The plan of the graph with its pointwise chains grouped: a list of nodes and Groups.
    `compile=False` runs each group with `eager_group` instead of a fused kernel."""
    if has_mutation(graph):
        return list(graph.nodes)
    consumers = {}
    for node in graph.nodes:
        for v in node.inputs():
            consumers.setdefault(v, []).append(node)
    outputs = set(graph.values_of_output())
    group_of = {}
    groups = []
    order = []          # per node: its group, or the node itself

    def n_outputs(g, extra=None):
        members = set(g.nodes) | ({extra} if extra is not None else set())
        return sum(1 for n in members if n.outputs[0] in outputs
                   or any(c not in members for c in consumers.get(n.outputs[0], ())))

    for node in graph.nodes:
        refs = _fusable(node)
        if refs is None:
            for v in node.inputs():
                if v in group_of:
                    group_of[v].open = False
            order.append(node)
            continue
        producers = []
        for r in refs:
            g = group_of.get(r) if isinstance(r, Value) else None
            if g is not None and g not in producers:
                producers.append(g)
        target = None
        open_producers = [g for g in producers if g.open]
        if open_producers:
            target = open_producers[0]
            size = len(target.nodes)
            for g in open_producers[1:]:
                target.nodes += g.nodes
                target.args += g.args
            n_in = len(target.external_inputs([refs]))
            if n_in + n_outputs(target, node) > _fuser.MAX_OPERANDS:
                # too many operands for one kernel: undo the merge and start afresh
                del target.nodes[size:]
                del target.args[size:]
                target = None
            else:
                for g in open_producers[1:]:
                    groups.remove(g)
                    g.merged_into = target
                    for n in g.nodes:
                        group_of[n.outputs[0]] = target
        for g in producers:
            if g is not target:
                g.open = False
        if target is None:
            target = Group()
            groups.append(target)
        target.nodes.append(node)
        target.args.append(refs)
        group_of[node.outputs[0]] = target
        order.append(target)

    used_outside = set(outputs)
    for v, cs in consumers.items():
        g = group_of.get(v)
        if g is not None and any(group_of.get(c.outputs[0] if c.outputs else None) is not g for c in cs):
            used_outside.add(v)
    plan, placed = [], set()
    last = {}
    for i, item in enumerate(order):
        while getattr(item, "merged_into", None) is not None:
            item = item.merged_into
        order[i] = item
        last[id(item)] = i
    for i, item in enumerate(order):
        if not isinstance(item, Group):
            plan.append(item)
        elif last[id(item)] == i and id(item) not in placed:
            placed.add(id(item))
            plan.extend(_finish(item, used_outside, compile))
    return plan


def _finish(group, used_outside, compile):
    """The steps that run a group: itself (with its kernel), or its nodes when it is a
    single node; a group the fuser refuses is split in two and each half tried again
    (down to single nodes), so a limit of the fuser costs a longer kernel, not the fusion."""
    if len(group.nodes) < 2:
        return list(group.nodes)
    group.make_spec(used_outside)
    if len(group.spec.inputs) + len(group.spec.outputs) > _fuser.MAX_OPERANDS:
        return list(group.nodes)
    if compile:
        try:
            group.kernel = _fuser.compile_group(group.spec)
        except (ValueError, TypeError, RuntimeError, OSError) as e:
            if len(group.nodes) < 4:
                log.warning("pytorchlite.jit: fusing %s failed (%s); running the nodes one by one",
                            [n.site.name for n in group.nodes], str(e).splitlines()[0] if str(e) else e)
                return list(group.nodes)
            log.info("pytorchlite.jit: fusing %d nodes failed (%s); splitting the group", len(group.nodes),
                     str(e).splitlines()[0] if str(e) else e)
            return _split(group, used_outside, compile)
    else:
        group.kernel = eager_group(group.spec)
    stats["fused_groups"] += 1
    stats["fused_nodes"] += len(group.nodes)
    return [group]


def _split(group, used_outside, compile):
    """Two groups of the first and second half of the nodes (in order, so the first half
    runs first): what the second half reads from the first becomes the first's outputs."""
    m = len(group.nodes) // 2
    halves = []
    for nodes, args in ((group.nodes[:m], group.args[:m]), (group.nodes[m:], group.args[m:])):
        g = Group()
        g.nodes, g.args = list(nodes), list(args)
        halves.append(g)
    read_later = {r for refs in halves[1].args for r in refs if isinstance(r, Value)}
    return (_finish(halves[0], used_outside | read_later, compile) +
            _finish(halves[1], used_outside, compile))


__all__ = ["fuse", "eager_group", "Group", "TensorBase"]
