"""Autograd through views, indexing, and in-place writes into views.

Geometry is (shape, stride) for a base and (shape, stride, offset) for a view inside
it, offsets counted from the base's first element. Two differentiable primitives
move gradients between the two, each the other's backward:

* `strided_scatter(g, base, view)`: zeros laid out like the base with g written into
  the view's region (the gradient of taking a view);
* `strided_view(g, base, view)`: a copy of the view's region of a base-shaped g.

Nodes built from them: AsStridedBackward0 (and its named forms for basic indexing:
SelectBackward0, SliceBackward0, ...), and CopySlices, which PyTorch installs on a base
when an in-place operation writes through one of its views: the base's new gradient is
its incoming gradient with the view's region replaced by what the in-place operation's
node gives for its `self`.
"""

from pytorchlite._storage import Storage
from pytorchlite._core import TensorBase as Tensor, contiguous_strides, copy_into, empty as _empty, make
from pytorchlite.autograd import grad_mode
from pytorchlite.autograd.graph import Node, grad_accumulator, meta


def _span(shape, stride):
    n = 1
    for s, st in zip(shape, stride):
        if s == 0:
            return 0
        n += (s - 1) * st
    return n


def _alloc(shape, stride, dtype, device, zero):
    n = _span(shape, stride)
    st = Storage.allocate(max(n, 1) * dtype.itemsize, device)
    if zero and n:
        make(st, (n,), (1,), 0, dtype, None, True).fill_(0)
    return st


def _copy(dst, src):
    copy_into(dst, src)


def _attach(out, node, g):
    if g._requires_grad and grad_mode._state.grad:
        node._next = (edge_of(g),)
        from pytorchlite.autograd._record import set_history
        set_history(out, node)
    return out


def strided_scatter(g, base, view):
    """Zeros in the base layout, with g in the view's region (recorded when g requires grad)."""
    bshape, bstride = base
    vshape, vstride, voff = view
    dt = g._dtype
    st = _alloc(bshape, bstride, dt, g._device, True)
    if _span(vshape, vstride):
        _copy(make(st, vshape, vstride, voff, dt, None, None), g)
    out = make(st, bshape, bstride, 0, dt, None, None)
    return _attach(out, StridedScatterBackward0(base, view), g)


def strided_view(g, base, view):
    """A contiguous copy of the view's region of g, a base-shaped gradient."""
    bshape, bstride = base
    vshape, vstride, voff = view
    dt = g._dtype
    if g._stride == bstride:
        src_st, off = g._storage, g._offset
    else:
        st = _alloc(bshape, bstride, dt, g._device, False)
        _copy(make(st, bshape, bstride, 0, dt, None, None), g)
        src_st, off = st, 0
    out = _empty(vshape, dt, g._device)
    if _span(vshape, vstride):
        _copy(out, make(src_st, vshape, vstride, off + voff, dt, None, None))
    return _attach(out, AsStridedBackward0(base, view), g)


def _replace_region(grad, base, view, r):
    """grad (base-shaped) with the view's region replaced by r (zeros when r is None)."""
    if grad_mode._state.grad:
        # create_graph: the same thing written with differentiable primitives
        out = grad.add(strided_scatter(strided_view(grad, base, view), base, view), alpha=-1)
        return out if r is None else out + strided_scatter(r, base, view)
    bshape, bstride = base
    vshape, vstride, voff = view
    dt = grad._dtype
    st = _alloc(bshape, bstride, dt, grad._device, False)
    out = make(st, bshape, bstride, 0, dt, None, None)
    _copy(out, grad)
    if _span(vshape, vstride):
        region = make(st, vshape, vstride, voff, dt, None, None)
        if r is None:
            region.fill_(0)
        else:
            _copy(region, r)
    return out


class AsStridedBackward0(Node):
    """The gradient of a view, scattered into zeros shaped like its base."""

    def __init__(self, base, view):
        Node.__init__(self)
        self.base = base
        self.view = view

    def _apply(self, grads, mask):
        g = grads[0]
        if g is None or not mask[0]:
            return [None]
        return [strided_scatter(g, self.base, self.view)]


# Basic indexing (`t[0]`, `t[1:3]`, `t[None]`, `t[...]`) names its node as PyTorch does.
class SelectBackward0(AsStridedBackward0):
    pass


class SliceBackward0(AsStridedBackward0):
    pass


class UnsqueezeBackward0(AsStridedBackward0):
    pass


class AliasBackward0(AsStridedBackward0):
    pass


class StridedScatterBackward0(Node):
    """Backward of strided_scatter: the gradient's view region."""

    def __init__(self, base, view):
        Node.__init__(self)
        self.base = base
        self.view = view

    def _apply(self, grads, mask):
        g = grads[0]
        if g is None or not mask[0]:
            return [None]
        return [strided_view(g, self.base, self.view)]


class CopySlices(Node):
    """Installed on a base when an in-place op (node `fn`) wrote through one of its
    views: edge 0 is the base's previous history, the others are fn's other inputs."""

    def __init__(self, base, view, fn):
        Node.__init__(self)
        self.base = base
        self.view = view
        self.fn = fn

    def _apply(self, grads, mask):
        grad = grads[0]
        n = len(self._next)
        if grad is None:
            return [None] * n
        gs = strided_view(grad, self.base, self.view)
        res = self.fn._apply([gs], list(mask))
        out = [None] * n
        for i in range(1, n):
            out[i] = res[i]
        if mask[0]:
            r = res[0]
            if r is not None and r._shape != self.view[0]:
                from pytorchlite.autograd.engine import sum_to
                r = sum_to(r, self.view[0])
            out[0] = _replace_region(grad, self.base, self.view, r)
        return out

    def release_variables(self):
        self.fn.release_variables()


def _geometry(base, view):
    return (base._shape, base._stride), (view._shape, view._stride, view._offset - base._offset)


def current_grad_fn(t):
    """t's grad_fn, regenerated from its base when the base (or another view of it) was
    modified in place after t's grad_fn was set (PyTorch's attr_version check)."""
    fn = t._grad_fn
    m = t._ag
    if m is None or m.attr_version is None or m.attr_version == t._vc[0]:
        return fn
    b = t._base
    if not b._requires_grad:
        return fn
    bg, vg = _geometry(b, t)
    node = AsStridedBackward0(bg, vg)
    node._next = (edge_of(b),)
    t._grad_fn = node
    t._output_nr = 0
    m.attr_version = t._vc[0]
    return node


def rebase_view(view, fn):
    """An in-place op with node fn modified `view`: its base gets CopySlices, the view a
    fresh view node on top of the base's new history."""
    b = view._base
    bg, vg = _geometry(b, view)
    cs = CopySlices(bg, vg, fn)
    cs._next = (edge_of(b),) + tuple(fn._next[1:])
    b._grad_fn = cs
    b._output_nr = 0
    b._requires_grad = True
    vfn = AsStridedBackward0(bg, vg)
    vfn._next = ((cs, 0, b._shape, b._dtype),)
    view._grad_fn = vfn
    view._output_nr = 0
    view._requires_grad = True
    meta(view).attr_version = view._vc[0]


# --- advanced indexing: gather and scatter-add, each the other's backward --------------------

def index_gather(x, entries):
    """x[entries] (one entry per leading dim: None or an index tensor / bool mask)."""
    from pytorchlite import _advanced_indexing as A
    out = A.index(x, list(entries))
    if out is x:
        out = make(x._storage, x._shape, x._stride, x._offset, x._dtype, x._vc, x._contig)
    if x._requires_grad and grad_mode._state.grad:
        node = IndexBackward0(x._shape, tuple(entries))
        node._next = (edge_of(x),)
        from pytorchlite.autograd._record import set_history
        set_history(out, node)
    return out


def index_scatter_add(g, shape, entries):
    """Zeros of `shape` with g added at entries (repeated positions add up)."""
    from pytorchlite import _advanced_indexing as A
    from pytorchlite._kernels.factories import zeros
    out = zeros(tuple(shape), g._dtype, None, g._device)
    A.index_put_(out, list(entries), g, True)
    if g._requires_grad and grad_mode._state.grad:
        node = IndexPutAccumulateBackward0(tuple(entries))
        node._next = (edge_of(g),)
        from pytorchlite.autograd._record import set_history
        set_history(out, node)
    return out


def index_fill_zero(grad, entries):
    """grad with the positions named by entries set to 0 (differentiable in grad)."""
    from pytorchlite import _advanced_indexing as A
    from pytorchlite._kernels.factories import ones, zeros
    keep = ones(grad._shape, grad._dtype, None, grad._device)
    A.index_put_(keep, list(entries), zeros((), grad._dtype, None, grad._device), False)
    return grad * keep


class IndexBackward0(Node):
    """Backward of x[indices]: the gradient added back at the gathered positions."""

    def __init__(self, shape, entries):
        Node.__init__(self)
        self.shape = shape
        self.entries = entries

    def _apply(self, grads, mask):
        g = grads[0]
        if g is None or not mask[0]:
            return [None]
        return [index_scatter_add(g, self.shape, self.entries)]

    def release_variables(self):
        pass


class IndexPutAccumulateBackward0(Node):
    """Backward of a scatter-add into zeros: the gradient gathered at those positions."""

    def __init__(self, entries):
        Node.__init__(self)
        self.entries = entries

    def _apply(self, grads, mask):
        g = grads[0]
        if g is None or not mask[0]:
            return [None]
        return [index_gather(g, self.entries)]


def index_put_(view, entries, value, stripped_shape):
    """view[entries] = value, recorded (x[idx] = v with x or v requiring grad)."""
    from pytorchlite import _advanced_indexing as A
    from pytorchlite.autograd._record import check_inplace, rebase_history
    check_inplace(view)
    node = IndexPutBackward0(tuple(entries), value._shape, tuple(stripped_shape))
    node._next = (edge_of(view), edge_of(value))
    src = value
    if tuple(stripped_shape) != value._shape:
        src = make(value._storage, tuple(stripped_shape), value._stride[len(value._shape) - len(stripped_shape):],
                   value._offset, value._dtype, value._vc)
    prev = grad_mode._state.grad
    grad_mode._state.grad = False
    try:
        A.index_put_(view, list(entries), src, False)
    finally:
        grad_mode._state.grad = prev
    rebase_history(view, node)


class IndexPutBackward0(Node):
    """Backward of x[indices] = values: x's gradient is zero at the written positions,
    values' is the gradient gathered there."""

    def __init__(self, entries, value_shape, stripped_shape):
        Node.__init__(self)
        self.entries = entries
        self.value_shape = value_shape
        self.stripped_shape = stripped_shape

    def _apply(self, grads, mask):
        g = grads[0]
        if g is None:
            return [None, None]
        out = [None, None]
        if mask[0]:
            out[0] = index_fill_zero(g, self.entries)
        if mask[1]:
            from pytorchlite.autograd.engine import sum_to
            v = sum_to(index_gather(g, self.entries), self.stripped_shape)
            out[1] = v.reshape(self.value_shape) if v._shape != self.value_shape else v
        return out


_INDEX_NODES = {"select": SelectBackward0, "slice": SliceBackward0, "unsqueeze": UnsqueezeBackward0,
                "alias": AliasBackward0}


def record_index(t, v, view_geometry, kind):
    """v = t[index] (a basic index) where t requires grad: v's gradient goes back into
    zeros shaped like t. view_geometry is v's place in a contiguous tensor of t's shape."""
    from pytorchlite.autograd._record import set_history
    node = _INDEX_NODES.get(kind, AsStridedBackward0)((t._shape, contiguous_strides(t._shape)), view_geometry)
    node._next = (edge_of(t),)
    set_history(v, node)
    return v


def edge_of(t):
    """The graph edge a gradient for tensor t flows into (None if t needs none)."""
    if not isinstance(t, Tensor) or not t._requires_grad:
        return None
    fn = t._grad_fn
    if t._base is not None:
        fn = current_grad_fn(t)
    if fn is None:
        return (grad_accumulator(t), 0, t._shape, t._dtype)
    return (fn, t._output_nr, t._shape, t._dtype)
