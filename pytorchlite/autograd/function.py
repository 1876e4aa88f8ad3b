"""autograd.Function: an operation with a hand-written backward.

    class Exp(pytorchlite.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)

As in PyTorch, `ctx` is the backward node itself (named `ExpBackward`): forward runs
without recording, its Tensor outputs get the node as grad_fn, and backward returns one
gradient per forward argument (None for arguments that are not Tensors or need none).
The newer style, a `forward(*args)` without ctx plus `setup_context(ctx, inputs,
output)`, works too.
"""

import functools

from pytorchlite._core import TensorBase as Tensor, make
from pytorchlite.autograd import grad_mode
from pytorchlite.autograd._views import edge_of
from pytorchlite.autograd.graph import BACKWARD_TWICE, Node, SavedVariable
from pytorchlite.autograd import _record

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable"]


class FunctionCtx:
    """The methods forward() may call on ctx."""

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {tensors.index(t)} is of "
                                f"type {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        self._saved_for_forward = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def set_materialize_grads(self, value):
        self._materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        saved = self._saved
        if saved is None:
            if self._released:
                raise RuntimeError(BACKWARD_TWICE)
            return ()
        return tuple(None if s is None else s.unpack(self) for s in saved)

    saved_variables = saved_tensors


class BackwardCFunction(Node, FunctionCtx):
    """The node (and ctx) of one Function.apply call."""

    _forward_cls = None
    _to_save = None
    _saved = None
    _released = False
    _dirty = ()
    _non_differentiable = ()
    _materialize_grads = True
    _is_arg_tensor = ()
    needs_input_grad = ()

    def name(self):
        return type(self).__name__

    def _apply(self, grads, mask):
        cls = self._forward_cls
        if self._materialize_grads:
            grads = list(grads)
            for i, g in enumerate(grads):
                if g is None and self._out_meta is not None and i < len(self._out_meta) \
                        and self._out_meta[i][0] is not None:
                    shape, dtype, device = self._out_meta[i]
                    from pytorchlite._kernels.factories import zeros
                    grads[i] = zeros(shape, dtype, None, device)
        res = cls.backward(self, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        n = len(self._is_arg_tensor)
        if len(res) != n:
            if len(res) > n and all(r is None for r in res[n:]):
                res = res[:n]
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients (expected {n}, "
                                   f"got {len(res)})")
        out = []
        for i, (is_t, r) in enumerate(zip(self._is_arg_tensor, res)):
            if is_t:
                out.append(r)
            elif r is not None:
                raise RuntimeError(f"function {self.name()} returned a gradient different than None at position "
                                   f"{i + 1}, but the corresponding forward input was not a Variable")
        return out

    def release_variables(self):
        if self._saved is not None:
            self._saved = None
            self._released = True


class _FunctionMeta(type):
    """Gives every Function subclass its node class (`<Name>Backward`)."""

    def __init__(cls, name, bases, attrs):
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        super().__init__(name, bases, attrs)


class Function(metaclass=_FunctionMeta):
    """Base class of operations with a custom backward; see the module docstring."""

    def __init__(self, *args, **kwargs):
        import warnings
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd functions are all static, "
                      "so you should invoke them on the class itself.", DeprecationWarning, stacklevel=2)

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = cls._backward_cls()
        is_tensor = tuple(isinstance(a, Tensor) for a in args)
        record = grad_mode._state.grad and any(t and a._requires_grad for t, a in zip(is_tensor, args))
        ctx._is_arg_tensor = is_tensor
        ctx.needs_input_grad = tuple(t and a._requires_grad and record for t, a in zip(is_tensor, args))
        new_style = cls.setup_context is not Function.setup_context
        prev = grad_mode._state.grad
        grad_mode._state.grad = False
        try:
            if new_style:
                raw = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, raw)
            else:
                raw = cls.forward(ctx, *args, **kwargs)
        finally:
            grad_mode._state.grad = prev
        single = not isinstance(raw, tuple)
        outs = (raw,) if single else raw
        if not record:
            _save(ctx, outs, outs)
            return raw
        ctx._next = tuple(edge_of(a) if t else None for t, a in zip(is_tensor, args) if t)
        nondiff = {id(t) for t in ctx._non_differentiable}
        dirty = {id(t) for t in ctx._dirty}
        inputs = {id(a) for t, a in zip(is_tensor, args) if t}
        final = []
        meta_ = []
        for i, o in enumerate(outs):
            if not isinstance(o, Tensor):
                final.append(o)
                meta_.append((None, None, None))
                continue
            if id(o) in dirty:
                _record.check_inplace(o)
            elif id(o) in inputs:
                # an input returned unchanged: the output is an alias with its own history
                a = make(o._storage, o._shape, o._stride, o._offset, o._dtype, o._vc, o._contig)
                a._base = o._base
                o = a
            meta_.append((o._shape, o._dtype, o._device))
            if id(outs[i]) not in nondiff and o._dtype.is_floating_point:
                if id(outs[i]) in dirty:
                    _record.rebase_history(o, ctx)
                    o._output_nr = i
                else:
                    o._requires_grad = True
                    o._grad_fn = ctx
                    o._output_nr = i
            final.append(o)
        ctx._out_meta = tuple(meta_)
        _save(ctx, outs, final)
        from pytorchlite.autograd import anomaly_mode
        if anomaly_mode._enabled:
            anomaly_mode.record(ctx)
        return final[0] if single else tuple(final)


def _save(ctx, raw_outs, final_outs):
    to_save = ctx._to_save
    if to_save is None:
        return
    ctx._to_save = None
    saved = []
    for t in to_save:
        if t is None:
            saved.append(None)
            continue
        k = next((i for i, o in enumerate(raw_outs) if o is t), None)
        if k is not None and final_outs[k]._grad_fn is ctx:
            saved.append(SavedVariable(final_outs[k], True))
        else:
            saved.append(SavedVariable(t))
    ctx._saved = saved


def once_differentiable(fn):
    """Decorate a backward that cannot itself be differentiated: under create_graph, its
    results are returned detached (their gradient is not tracked)."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with grad_mode.no_grad():
            return fn(ctx, *args)
    return wrapper
