"""The autograd graph: Node (one per recorded operation), AccumulateGrad (the sink of a
leaf), SavedVariable (a tensor a backward formula needs, with its version) and the
per-tensor AutogradMeta (hooks, retain_grad, the weakly held grad accumulator).

Ownership, chosen so that a graph nobody references is freed at once by refcounting:

    output tensor --grad_fn--> Node --next edge--> Node ... --> AccumulateGrad --> leaf
                                 \\--saved--> SavedVariable --> tensor data

A leaf holds its AccumulateGrad only weakly, and a Node that saves one of its own
outputs keeps that output *without* its grad_fn (re-wrapped on unpack), so no tensor
points back at the Node that points at it.
"""

import itertools
import weakref

from pytorchlite._core import make

__all__ = ["Node", "AccumulateGrad", "SavedVariable", "RemovableHandle", "GraphRoot"]

# Nodes created later in the forward pass run first in backward (PyTorch's ordering).
_sequence = itertools.count()
# AccumulateGrad runs as soon as it is ready, so .grad is set before anything else runs.
_ACCUMULATE_SEQ = 1 << 62

BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward.")


class RemovableHandle:
    """Returned by register_hook: `.remove()` unregisters the hook."""

    __slots__ = ("_hooks", "id")
    _ids = itertools.count()

    def __init__(self, hooks):
        self._hooks = hooks
        self.id = next(RemovableHandle._ids)

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _add_hook(hooks, fn):
    if not callable(fn):
        raise TypeError(f"hook must be callable, got {type(fn).__name__}")
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle


class AutogradMeta:
    """Autograd state of a tensor that only some tensors need, created on first use."""

    __slots__ = ("acc", "hooks", "post_acc_hooks", "retains_grad", "attr_version")

    def __init__(self):
        self.attr_version = None     # a view: the version when its grad_fn was set
        self.acc = None              # weakref to the leaf's AccumulateGrad
        self.hooks = None            # {id: fn}: leaf tensor hooks, run before accumulation
        self.post_acc_hooks = None   # {id: fn}: run after .grad was updated
        self.retains_grad = False


def meta(t):
    m = t._ag
    if m is None:
        m = t._ag = AutogradMeta()
    return m


class Node:
    """One recorded operation. `_next[i]` is the edge for the operation's i-th Tensor
    input: None when that input needs no gradient, else a tuple
    (node, input_nr, shape, dtype) naming where its gradient goes and what shape and
    dtype the engine must reduce and cast it to."""

    # Instances get only what they set; everything rarely used is a class default, so
    # recording a node costs one attribute store besides its edges and saved values.
    _next = ()
    _pre_hooks = None        # {output_nr: {id: hook}}: tensor hooks of this node's outputs
    _retain = None           # {output_nr: weakref}: outputs that retain_grad()
    _post_hooks = None
    _node_pre_hooks = None
    _out_meta = None         # (shape, dtype, device) per output, for nodes with several
    _anomaly = None          # forward stack (anomaly mode)
    _metadata = None
    _multi_output = False
    _saved_names = ()

    def __init__(self):
        self._seq = next(_sequence)

    # --- the public Node interface (torch.autograd.graph.Node) ------------------------------

    def name(self):
        return type(self).__name__

    @property
    def next_functions(self):
        return tuple((None, 0) if e is None else (e[0], e[1]) for e in self._next)

    @property
    def metadata(self):
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) runs after this node; a non-None return replaces grad_inputs."""
        if self._post_hooks is None:
            self._post_hooks = {}
        return _add_hook(self._post_hooks, fn)

    def register_prehook(self, fn):
        """fn(grad_outputs) runs before this node; a non-None return replaces grad_outputs."""
        if self._node_pre_hooks is None:
            self._node_pre_hooks = {}
        return _add_hook(self._node_pre_hooks, fn)

    def __call__(self, *grads):
        return self.apply(list(grads))

    def apply(self, grads):
        """The gradients for every input edge, given the gradients of the outputs."""
        return self._apply(grads, [e is not None for e in self._next])

    def _apply(self, grads, mask):
        raise NotImplementedError(f"{self.name()} has no backward")

    def release_variables(self):
        """Drop saved tensors (after backward without retain_graph)."""

    def _register_tensor_hook(self, output_nr, fn):
        if self._pre_hooks is None:
            self._pre_hooks = {}
        hooks = self._pre_hooks.get(output_nr)
        if hooks is None:
            hooks = self._pre_hooks[output_nr] = {}
        return _add_hook(hooks, fn)

    def __repr__(self):
        return f"<{type(self).__name__} object at {hex(id(self))}>"


class GraphRoot(Node):
    """The node the engine starts from: it hands the root gradients to the root edges."""

    def __init__(self, edges, grads):
        self._next = tuple(edges)
        self._grads = grads
        self._seq = _ACCUMULATE_SEQ + 1

    def _apply(self, grads, mask):
        return self._grads


class AccumulateGrad(Node):
    """The sink of a leaf tensor: adds the gradient into `.grad` (see engine.accumulate)."""

    def __init__(self, variable):
        self.variable = variable
        self._seq = _ACCUMULATE_SEQ

    def name(self):
        return "pytorchlite::autograd::AccumulateGrad"

    def _apply(self, grads, mask):
        from pytorchlite.autograd.engine import accumulate
        g = grads[0]
        if g is not None:
            accumulate(self.variable, g)
        return ()


def grad_accumulator(t):
    """The AccumulateGrad of leaf t (one per leaf while any graph uses it)."""
    m = t._ag
    if m is None:
        m = t._ag = AutogradMeta()
    elif m.acc is not None:
        acc = m.acc()
        if acc is not None:
            return acc
    acc = AccumulateGrad(t)
    m.acc = weakref.ref(acc)
    return acc


class SavedVariable:
    """A tensor saved for backward, with the version it had when saved.

    A node's own output is kept without grad_fn (an alias over the same memory and
    version counter) and re-wrapped on unpack, so that the node does not keep itself
    alive through its output."""

    __slots__ = ("data", "version", "output_nr", "is_output", "released", "requires_grad", "grad_fn")

    def __init__(self, t, is_output=False):
        self.version = t._vc[0]
        self.released = False
        self.is_output = is_output
        self.requires_grad = t._requires_grad
        self.output_nr = t._output_nr
        if is_output:
            a = make(t._storage, t._shape, t._stride, t._offset, t._dtype, t._vc, t._contig)
            a._base = t._base
            self.data = a
            self.grad_fn = None
        else:
            self.data = t
            # for the error message: t's history when saved (an in-place op may rebase it)
            self.grad_fn = t._grad_fn

    def unpack(self, node=None):
        d = self.data
        if d is None:
            if self.released:
                raise RuntimeError(BACKWARD_TWICE)
            return None
        if d._vc[0] != self.version:
            raise RuntimeError(self._modified_message(node))
        if self.is_output:
            t = make(d._storage, d._shape, d._stride, d._offset, d._dtype, d._vc, d._contig)
            t._base = d._base
            if self.requires_grad:
                t._requires_grad = True
                t._grad_fn = node
                t._output_nr = self.output_nr
            return t
        return d

    def _modified_message(self, node):
        d = self.data
        fn = node if self.is_output else self.grad_fn
        from pytorchlite.autograd import anomaly_mode
        msg = (f"one of the variables needed for gradient computation has been modified by an inplace operation: "
               f"[{d.type()} [{', '.join(str(s) for s in d._shape)}]]")
        if fn is not None:
            msg += f", which is output {self.output_nr} of {fn.name()},"
        msg += f" is at version {d._vc[0]}; expected version {self.version} instead."
        if anomaly_mode.is_anomaly_enabled():
            msg += (" Hint: the backtrace further above shows the operation that failed to compute its gradient. "
                    "The variable in question was changed in there or anywhere later. Good luck!")
        else:
            msg += (" Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
                    "with pytorchlite.autograd.set_detect_anomaly(True).")
        return msg

    def release(self):
        self.data = None
        self.released = True


def unpack(v, node):
    """A saved value as the formula sees it: SavedVariables are unpacked (version
    checked), Python numbers and None pass through."""
    if type(v) is SavedVariable:
        return v.unpack(node)
    if type(v) is list:
        return [unpack(x, node) for x in v]
    return v


def release(v):
    if type(v) is SavedVariable:
        v.release()
    elif type(v) is list:
        for x in v:
            release(x)
