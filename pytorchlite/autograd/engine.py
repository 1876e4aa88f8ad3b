"""The backward engine: runs the recorded graph from the roots to the leaves.

As PyTorch's engine does (torch/csrc/autograd/engine.cpp):

* dependencies are counted first; a node runs once, when every edge into it has
  delivered its gradient; gradients that meet at a node are summed;
* among ready nodes, the one created last in the forward pass runs first (AccumulateGrad
  nodes run as soon as they are ready);
* each gradient a node returns is checked against its input: a broadcast gradient is
  reduced to the input's shape here, centrally (`sum_to`), a shape that cannot be
  reduced is an error, and the dtype is cast to the input's;
* nodes run with grad mode = create_graph, so with create_graph=True the backward
  formulas are themselves recorded (double backward);
* without retain_graph, each node releases its saved tensors once it has run;
* autograd.grad (and backward(inputs=...)) run only the nodes on a path to the requested
  inputs and capture the gradients there.
"""

import heapq
import sys

from pytorchlite import _core
from pytorchlite._core import Size, TensorBase as Tensor, contiguous_strides, copy_into, make
from pytorchlite.autograd import anomaly_mode, grad_mode
from pytorchlite.autograd._views import edge_of
from pytorchlite.autograd.graph import AccumulateGrad, GraphRoot

_getrefcount = sys.getrefcount
heappush, heappop = heapq.heappush, heapq.heappop


# --- shape reduction ------------------------------------------------------------------------

def is_expandable_to(shape, desired):
    """Whether a tensor of `shape` broadcasts to `desired`."""
    n, m = len(shape), len(desired)
    if n > m:
        return False
    for i in range(1, n + 1):
        s = shape[-i]
        if s != 1 and s != desired[-i]:
            return False
    return True


def sum_to(g, shape):
    """Sum the broadcast dimensions of g away so that it has `shape` (differentiable: the
    sum and view are recorded when grad mode is on)."""
    gs = g._shape
    if gs == shape:
        return g
    lead = len(gs) - len(shape)
    inner = [lead + i for i, n in enumerate(shape) if n == 1 and gs[lead + i] != 1]
    r = g.sum(inner, keepdim=True) if inner else g
    if lead:
        # the leading dims summed without keepdim: the result is a tensor of its own, not a
        # view, so AccumulateGrad can take it as .grad without a copy
        r = r.sum(list(range(lead)))
    if r._shape != shape:
        r = r.reshape(shape)
    return r


# --- accumulation into .grad ---------------------------------------------------------------

def _layout_ok(g, var):
    """Whether g can become var.grad as it is: dense with var's strides (PyTorch's layout
    contract), so .grad looks like a freshly made gradient."""
    if g._stride == var._stride:
        return g.is_contiguous() or _dense(g)
    return g.is_contiguous() and var.is_contiguous()


def _dense(t):
    span = 1
    for n, s in zip(t._shape, t._stride):
        if n == 0:
            return True
        span += (n - 1) * s
    return span == t.numel()


def _clone_for(var, g):
    """A copy of g to become var.grad, in var's layout when var is dense."""
    from pytorchlite._storage import Storage
    dt = g._dtype
    if not var.is_contiguous() and _dense(var) and var._shape == g._shape:
        st = Storage.allocate(var.numel() * dt.itemsize, g._device)
        out = make(st, var._shape, var._stride, 0, dt, None, None)
    else:
        st = Storage.allocate(g.numel() * dt.itemsize, g._device)
        out = make(st, g._shape, contiguous_strides(g._shape), 0, dt, None, True)
    copy_into(out, g)
    return out


def _whole_view_of_unshared_base(g):
    base = g._base
    if base is None or base._shape != g._shape or base._stride != g._stride or base._offset != g._offset:
        return False
    # references: g._base, `base` here, getrefcount's argument; the storage: base's, g's, the argument
    return _getrefcount(base) <= 3 and _getrefcount(g._storage) <= 3


def accumulate(var, g, _steal_refs=4):
    """var.grad += g, as AccumulateGrad does: steal g when nobody else holds it, copy it
    otherwise; in place when grad mode is off, out of place (recorded) under create_graph."""
    old = var._grad
    if old is None:
        if grad_mode._state.grad:
            # create_graph: .grad must carry the graph of the gradient
            var._grad = g.clone() if g._requires_grad else _clone_for(var, g)
        elif (_getrefcount(g) <= _steal_refs and g._base is None and _getrefcount(g._storage) <= 2
              and _layout_ok(g, var)):
            var._grad = g if not g._requires_grad else g.detach()
        elif _getrefcount(g) <= _steal_refs and _whole_view_of_unshared_base(g) and _layout_ok(g._base, var):
            # g views all of a base nobody else holds, element for element (the transpose of
            # a transposed matmul gradient, as linear's weight gets): take the base
            base = g._base
            var._grad = base if not base._requires_grad else base.detach()
        else:
            var._grad = _clone_for(var, g)
    elif grad_mode._state.grad:
        var._grad = old + g
    else:
        old.add_(g)
    m = var._ag
    if m is not None and m.post_acc_hooks:
        for hook in list(m.post_acc_hooks.values()):
            hook(var)


# --- the engine -----------------------------------------------------------------------------

# An object with node_begin(node) -> token and node_end(node, token), told about every
# node the engine runs (the profiler's hook; PyTorch's RecordFunction around
# evaluate_function). The engine never imports the profiler: it registers itself here.
_node_observer = None


def set_node_observer(observer):
    """Install (or with None remove) the observer of the nodes the engine runs."""
    global _node_observer
    _node_observer = observer

def _tensor_pre_hooks(node, buf):
    """Tensor hooks registered on the outputs this node differentiates (for a leaf: on the
    leaf), then retain_grad, which always sees the final gradient."""
    if type(node) is AccumulateGrad:
        m = node.variable._ag
        if m is not None and m.hooks and buf[0] is not None:
            for hook in list(m.hooks.values()):
                r = hook(buf[0])
                if r is not None:
                    buf[0] = _check_hook_result(r, buf[0], "hook")
        return
    ph = node._pre_hooks
    if ph:
        for nr, hooks in ph.items():
            if nr < len(buf) and buf[nr] is not None:
                for hook in list(hooks.values()):
                    r = hook(buf[nr])
                    if r is not None:
                        buf[nr] = _check_hook_result(r, buf[nr], "hook")
    rt = node._retain
    if rt:
        for nr, ref in rt.items():
            t = ref()
            if t is None or nr >= len(buf) or buf[nr] is None:
                continue
            g = buf[nr]
            if t._grad is None:
                t._grad = g.clone() if grad_mode._state.grad else g.detach().clone()
            else:
                t._grad = t._grad + g


def _check_hook_result(r, g, what):
    if not isinstance(r, Tensor):
        raise TypeError(f"{what} returned an object of type {type(r).__name__}; expected a Tensor or None")
    if r._shape != g._shape:
        raise RuntimeError(f"hook returned a gradient of shape {list(r._shape)} but the gradient it replaced "
                           f"has shape {list(g._shape)}")
    return r


def _validate(node, outs):
    """Reduce each gradient to its input's shape and cast it to its dtype (validate_outputs)."""
    nxt = node._next
    if len(outs) != len(nxt):
        raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                           f"(expected {len(nxt)}, got {len(outs)})")
    outs = list(outs)
    for i, e in enumerate(nxt):
        if e is not None and outs[i] is not None:
            outs[i] = _validate_one(node, i, outs[i], e)
    return outs


def _validate_one(node, i, g, e):
    """Gradient g for edge e: a broadcast shape is summed down to the input's shape (an
    incompatible one is an error), and the dtype cast to the input's."""
    if not isinstance(g, Tensor):
        raise TypeError(f"function {node.name()} returned a gradient of type {type(g).__name__} at index {i}; "
                        "expected a Tensor or None")
    shape = e[2]
    if g._shape != shape:
        if not is_expandable_to(shape, g._shape):
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {i} - got "
                               f"{list(g._shape)} but expected shape compatible with {list(shape)}")
        g = sum_to(g, shape)
    if g._dtype is not e[3]:
        g = g.to(e[3])
    return g


def _call(node, buf, mask):
    nph = node._node_pre_hooks
    if nph:
        for hook in list(nph.values()):
            r = hook(tuple(buf))
            if r is not None:
                buf = list(r)
    if anomaly_mode._enabled:
        outs = anomaly_mode.run_node(node, buf, mask)
    else:
        outs = node._apply(buf, mask)
    outs = _validate(node, outs)
    post = node._post_hooks
    if post:
        for hook in list(post.values()):
            r = hook(tuple(outs), tuple(buf))
            if r is not None:
                outs = list(r)
    return outs


def _needed_nodes(root, targets):
    """Nodes that must run because a target lies below them."""
    needed = set()
    visited = {root}
    stack = [(root, iter(root._next))]
    while stack:
        node, it = stack[-1]
        for e in it:
            if e is not None and e[0] not in visited:
                visited.add(e[0])
                stack.append((e[0], iter(e[0]._next)))
                break
        else:
            stack.pop()
            for e in node._next:
                if e is not None and (e[0] in needed or e[0] in targets):
                    needed.add(node)
                    break
    return needed


def execute(root_edges, root_grads, keep_graph, create_graph, capture=None, accumulate_leaves=None):
    """Run the graph below root_edges.

    capture: {(node, input_nr): [result slots]} -> the gradients arriving there are
    stored into the returned list instead of flowing further (autograd.grad).
    accumulate_leaves: None to run every AccumulateGrad, or the set of AccumulateGrad
    nodes allowed to run (backward(inputs=...)).
    """
    root = GraphRoot(root_edges, root_grads)
    # dependency counts over the part of the graph reachable from the root
    deps = {}
    stack = [root]
    seen = {root}
    while stack:
        n = stack.pop()
        for e in n._next:
            if e is None:
                continue
            c = e[0]
            deps[c] = deps.get(c, 0) + 1
            if c not in seen:
                seen.add(c)
                stack.append(c)

    filt = None
    cap_nodes = None
    results = None
    if capture is not None or accumulate_leaves is not None:
        targets = set()
        cap_nodes = {}
        if capture:
            for (node, nr), slots in capture.items():
                cap_nodes.setdefault(node, []).append((nr, slots))
                targets.add(node)
        accumulate_leaves = accumulate_leaves or set()
        targets.update(accumulate_leaves)
        needed = _needed_nodes(root, targets)
        filt = needed | targets
        n_results = max((s for slots in (capture or {}).values() for s in slots), default=-1) + 1
        results = [None] * n_results

    prev_mode = grad_mode._state.grad
    grad_mode._state.grad = create_graph
    obs = _node_observer
    try:
        buffers = {}
        ready = []
        counter = 0
        heapq.heappush(ready, (-root._seq, 0, root))
        buffers[root] = []
        while ready:
            node = heappop(ready)[2]
            buf = buffers.pop(node)
            if node._pre_hooks is not None or node._retain is not None or type(node) is AccumulateGrad:
                _tensor_pre_hooks(node, buf)
            if cap_nodes is not None:
                caps = cap_nodes.get(node)
                if caps:
                    for nr, slots in caps:
                        for s in slots:
                            results[s] = buf[nr]
                if node not in needed and node not in accumulate_leaves:
                    continue
            if obs is not None:
                tok = obs.node_begin(node)
            if type(node) is AccumulateGrad:
                g = buf[0]
                del buf
                if g is not None:
                    accumulate(node.variable, g)
                    del g
                if obs is not None:
                    obs.node_end(node, tok)
                continue
            nxt = node._next
            if filt is None:
                mask = nxt      # an edge is truthy, a missing one (None) falsy: the edges are the mask
            else:
                mask = [e is not None and e[0] in filt for e in nxt]
            if node._node_pre_hooks or node._post_hooks or anomaly_mode._enabled:
                outs = _call(node, buf, mask)
            else:
                outs = node._apply(buf, mask)
                if len(outs) != len(nxt):
                    _validate(node, outs)           # raises the count error
            del buf
            if obs is not None:
                obs.node_end(node, tok)
            if not keep_graph:
                node.release_variables()
            for i, e in enumerate(nxt):
                if e is None:
                    continue
                child = e[0]
                g = outs[i]
                if g is not None and (g.__class__ is not _core.Tensor or g._shape != e[2] or g._dtype is not e[3]):
                    g = _validate_one(node, i, g, e)   # reduce / cast (validate_outputs)
                cbuf = buffers.get(child)
                if cbuf is None:
                    om = child._out_meta
                    cbuf = buffers[child] = [None] if om is None else [None] * len(om)
                if g is not None:
                    nr = e[1]
                    old = cbuf[nr]
                    cbuf[nr] = g if old is None else old + g
                d = deps[child] - 1
                deps[child] = d
                if d == 0:
                    if filt is not None and child not in filt:
                        buffers.pop(child, None)
                        continue
                    counter += 1
                    heappush(ready, (-child._seq, counter, child))
            del outs
    finally:
        grad_mode._state.grad = prev_mode
    return results


# --- the public entry points ------------------------------------------------------------------

def _size(shape):
    return repr(Size(shape))


def _make_grads(outputs, grads, is_grads_batched=False):
    out = []
    for i, (t, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if t._requires_grad:
                if t.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not t._dtype.is_floating_point:
                    raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got "
                                       f"{t._dtype._torch_name}")
                from pytorchlite._kernels.factories import ones_like
                g = ones_like(t)
            out.append(g)
            continue
        if not isinstance(g, Tensor):
            if isinstance(g, (int, float)) and not isinstance(g, bool):
                from pytorchlite._kernels.factories import full_like
                g = full_like(t, g)
            else:
                raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        elif g._shape != t._shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {_size(g._shape)} and "
                               f"output[{i}] has a shape of {_size(t._shape)}.")
        out.append(g)
    return out


def _as_tuple(x, what):
    if isinstance(x, Tensor):
        return (x,)
    if x is None:
        return None
    try:
        return tuple(x)
    except TypeError:
        raise TypeError(f"{what} must be a Tensor or a sequence of Tensors, not {type(x).__name__}") from None


def _root_edges(outputs):
    edges = []
    for i, t in enumerate(outputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"element {i} of tensors is a {type(t).__name__}, not a Tensor")
        e = edge_of(t)
        if e is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        edges.append(e)
    return edges


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Accumulate into the leaves' `.grad` the gradient of `tensors` (weighted by
    grad_tensors) with respect to them (torch.autograd.backward).

    >>> x = pytorchlite.tensor([1., 2.], requires_grad=True)
    >>> pytorchlite.autograd.backward((x * x).sum())
    >>> x.grad
    tensor([2., 4.])
    """
    if grad_variables is not None:
        grad_tensors = grad_variables
    outputs = _as_tuple(tensors, "tensors")
    if grad_tensors is None:
        grads = [None] * len(outputs)
    else:
        grads = list(_as_tuple(grad_tensors, "grad_tensors"))
        if len(grads) != len(outputs):
            raise RuntimeError(f"got {len(grads)} tensors and {len(outputs)} gradients")
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = _as_tuple(inputs, "inputs")
        if len(inputs) == 0:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    edges = _root_edges(outputs)
    grads = _make_grads(outputs, grads)
    if inputs is None:
        execute(edges, grads, retain_graph, create_graph)
        return
    # backward(inputs=...): leaves accumulate through their AccumulateGrad; non-leaf inputs
    # capture the gradient arriving at them and accumulate it into their .grad
    leaves, capture, nonleaf = set(), {}, []
    for k, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"inputs must contain Tensors, got {type(t).__name__}")
        e = edge_of(t)
        if e is None:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        if type(e[0]) is AccumulateGrad:
            leaves.add(e[0])
        else:
            capture.setdefault((e[0], e[1]), []).append(len(nonleaf))
            nonleaf.append(t)
    res = execute(edges, grads, retain_graph, create_graph, capture=capture, accumulate_leaves=leaves)
    prev = grad_mode._state.grad
    grad_mode._state.grad = create_graph
    try:
        for t, g in zip(nonleaf, res or ()):
            if g is not None:
                accumulate(t, g, _steal_refs=0)
    finally:
        grad_mode._state.grad = prev


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of `outputs` with respect to `inputs`, returned rather than
    accumulated into `.grad` (torch.autograd.grad).

    >>> x = pytorchlite.tensor([3.], requires_grad=True)
    >>> pytorchlite.autograd.grad(x * x, x)
    (tensor([6.]),)
    """
    if is_grads_batched:
        raise NotImplementedError("grad(): is_grads_batched=True is not supported")
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outs = _as_tuple(outputs, "outputs")
    ins = _as_tuple(inputs, "inputs")
    if grad_outputs is None:
        gouts = [None] * len(outs)
    else:
        gouts = list(_as_tuple(grad_outputs, "grad_outputs"))
        if len(gouts) != len(outs):
            raise RuntimeError(f"grad requires one grad_output per output: got {len(gouts)} grad_outputs and "
                               f"{len(outs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    edges = _root_edges(outs)
    gouts = _make_grads(outs, gouts)
    capture = {}
    for k, t in enumerate(ins):
        if not isinstance(t, Tensor):
            raise TypeError(f"grad(): inputs must be Tensors, got {type(t).__name__} at index {k}")
        e = edge_of(t)
        if e is None:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        capture.setdefault((e[0], e[1]), []).append(k)
    res = execute(edges, gouts, retain_graph, create_graph, capture=capture, accumulate_leaves=set())
    res = list(res) + [None] * (len(ins) - len(res))
    for k, g in enumerate(res):
        if g is None:
            if materialize_grads:
                from pytorchlite._kernels.factories import zeros_like
                res[k] = zeros_like(ins[k])
            elif not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {k} appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
        elif not create_graph and g._requires_grad:
            res[k] = g.detach()
    return tuple(res)


__all__ = ["backward", "grad", "accumulate", "sum_to", "is_expandable_to", "execute"]
