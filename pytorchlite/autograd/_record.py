"""What the generated bindings call on their autograd path (PyTorch's VariableTypeUtils):
saving inputs and outputs, attaching history to outputs, the in-place checks and the
history rebase of a tensor modified in place.

The bindings reach this module only when grad mode is on and an input requires grad;
the no-grad path never touches it.
"""

from pytorchlite._core import TensorBase as Tensor
from pytorchlite.autograd import anomaly_mode as _anomaly
from pytorchlite.autograd import _views
from pytorchlite.autograd._views import edge_of
from pytorchlite.autograd.graph import SavedVariable, meta

__all__ = ["nth", "edges", "save", "save_list", "save_output", "save_original", "set_history", "set_history_multi",
           "set_history_list", "check_inplace", "rebase_history", "out_error", "any_requires_grad"]


def any_requires_grad(tensors):
    try:
        flags = [t._requires_grad for t in tensors]       # one fast pass for long lists
        return flags.count(False) != len(flags)
    except AttributeError:      # numbers or None among them
        pass
    for t in tensors:
        if isinstance(t, Tensor) and t._requires_grad:
            return True
    return False


def edges(tensors):
    return tuple(edge_of(t) for t in tensors)


def save(t):
    """A saved input: a SavedVariable for a tensor; numbers and None are kept as they are."""
    if isinstance(t, Tensor):
        return SavedVariable(t)
    return t


def save_list(tensors):
    return [SavedVariable(t) for t in tensors]


def save_output(t):
    """A saved output, kept without its grad_fn (no node -> output -> node cycle)."""
    return SavedVariable(t, True)


def save_original(t):
    """`self` of an in-place op, as it was before the op: a (recorded) copy, because the
    op is about to overwrite it (PyTorch's original_self)."""
    return SavedVariable(t.clone())


def set_history(t, fn):
    """t is output 0 of fn (only floating tensors get gradients)."""
    if t._dtype.is_floating_point:
        t._requires_grad = True
        t._grad_fn = fn
        t._output_nr = 0
        if t._base is not None:
            meta(t).attr_version = t._vc[0]
    if _anomaly._enabled:
        _anomaly.record(fn)


def nth(result, i):
    """Output i of an op with several outputs; an op like max() that returned a single
    tensor for this call has only output 0."""
    if isinstance(result, Tensor):
        return result if i == 0 else None
    return result[i]


def set_history_multi(outputs, fn, differentiable):
    if isinstance(outputs, Tensor):
        outputs = (outputs,)
    fn._out_meta = tuple((t._shape, t._dtype, t._device) for t in outputs)
    for i, t in enumerate(outputs):
        if differentiable[i] and t._dtype.is_floating_point:
            t._requires_grad = True
            t._grad_fn = fn
            t._output_nr = i
            if t._base is not None:
                meta(t).attr_version = t._vc[0]
    if _anomaly._enabled:
        _anomaly.record(fn)


def set_history_list(outputs, fn):
    set_history_multi(outputs, fn, (True,) * len(outputs))


def check_inplace(t):
    """In grad mode, a leaf that requires grad (or a view of one) cannot be modified in place."""
    if not t._requires_grad:
        return
    b = t._base
    if b is not None and b._requires_grad:
        if b._grad_fn is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        return
    if t._grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def rebase_history(t, fn):
    """t was modified in place by the op recorded as fn: fn becomes its history (through
    CopySlices on its base when t is a view)."""
    if not t._dtype.is_floating_point:
        return
    old, old_nr = t._grad_fn, t._output_nr
    if t._base is not None:
        _views.rebase_view(t, fn)
    else:
        t._requires_grad = True
        t._grad_fn = fn
        t._output_nr = 0
    m = t._ag
    if m is not None and m.retains_grad and old is not None and old._retain:
        # retain_grad() follows the tensor: .grad is the gradient of its latest value
        ref = old._retain.pop(old_nr, None)
        if ref is not None:
            new = t._grad_fn
            if new._retain is None:
                new._retain = {}
            new._retain[t._output_nr] = ref
    if _anomaly._enabled:
        _anomaly.record(fn)


def out_error(name):
    return RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                        "but one of the arguments requires grad.")
