"""Forward-mode automatic differentiation with dual tensors (torch.autograd.forward_ad).

Inside a `dual_level()`, `make_dual(x, t)` pairs a tensor (the primal) with a tangent of
its shape. Every operator called on a dual tensor computes, next to its result, the
result's tangent: the Jacobian-vector product J @ t, from the `result:` formula of its
derivatives.yaml entry (generated into pytorchlite/generated/autograd_nodes.py as a
`jvp_<op>` function; codegen/derivatives.py explains the formula kinds). Composite
operators need none: their parts carry the tangents. `unpack_dual(y)` gives the result's
primal and tangent. Leaving the level deletes every tangent made inside it.

    >>> import pytorchlite.autograd.forward_ad as fwAD
    >>> x = pytorchlite.tensor([1., 2.])
    >>> with fwAD.dual_level():
    ...     y = fwAD.make_dual(x, pytorchlite.tensor([1., 0.])).exp()
    ...     fwAD.unpack_dual(y).tangent
    tensor([2.7183, 0.0000])

An operator with a backward formula but no `result:` formula raises NotImplementedError
when it meets a dual tensor, rather than silently dropping the tangent. As in PyTorch, one
level at a time: nested levels are refused.

How it runs: a generated binding whose inputs include a dual tensor turns forward AD off,
calls itself (so the primal result, and the backward graph if one is recorded, come out
exactly as without forward AD), evaluates the jvp function on the primals and tangents,
turns forward AD back on and attaches the tangent to the result (`_run` below). Tangents
are plain tensors: they carry no tangents of their own (no nesting), but they do record
backward graphs, so reverse-over-forward works.
"""

import weakref
from collections import namedtuple

from pytorchlite._core import TensorBase as Tensor, make

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]


class _State:
    __slots__ = ("on", "level", "duals")

    def __init__(self):
        self.on = False        # a level is open and forward AD is not suspended (what bindings test)
        self.level = None      # the open level (0) or None
        self.duals = []        # weak references to every tensor given a tangent in this level


_state = _State()

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__doc__ = "The primal and tangent of a dual tensor (tangent None when it has none)."


def enter_dual_level():
    """Open a forward AD level and make it the current one; returns its index (0)."""
    if _state.level is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _state.level = 0
    _state.duals = []
    _state.on = True
    return 0


def exit_dual_level(*, level=None):
    """Close the current level: every tangent created inside it is deleted."""
    if _state.level is None:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. "
                           "This is not supported.") if level is not None else \
            RuntimeError("Dual level must be a positive number.")
    if level is not None and level != _state.level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. "
                           "This is not supported.")
    for ref in _state.duals:
        t = ref()
        if t is not None:
            t._fw = None
    _state.duals = []
    _state.level = None
    _state.on = False


class dual_level:
    """Context manager (and decorator) for forward AD: `with dual_level(): ...` opens a
    level on entry and closes it on exit, deleting the tangents made inside."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with dual_level():
                return fn(*args, **kwargs)
        return wrapper


def _check_level(level, what):
    if _state.level is None:
        raise RuntimeError(f"Trying to {what} for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if level is not None and level != _state.level:
        raise RuntimeError(f"Trying to {what} for forward AD at level {level}, but the current level is "
                           f"{_state.level} (only one level is supported)")


def make_dual(tensor, tangent, *, level=None):
    """A view of `tensor` whose tangent is `tangent` (same shape; floating point), for the
    current level. The tangent is kept as given (no copy)."""
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError(f"make_dual(): expected tensor and tangent to be Tensors, got "
                        f"{type(tensor).__name__} and {type(tangent).__name__}")
    _check_level(level, "create a dual Tensor")
    if not tensor._dtype.is_floating_point:
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor._dtype}")
    if not tangent._dtype.is_floating_point:
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent._dtype}")
    if tuple(tangent._shape) != tuple(tensor._shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor._shape)} while the given "
                           f"forward gradient is of size {list(tangent._shape)}.")
    if tangent._device != tensor._device:
        raise RuntimeError(f"make_dual(): the tangent is on {tangent._device} but the primal is on {tensor._device}")
    if tangent._fw is not None:
        raise RuntimeError("make_dual(): the tangent is itself a dual tensor; nested forward AD is not supported")
    dual = tensor.view_as(tensor)
    _set(dual, tangent)
    return dual


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of `tensor`: the primal is a view of it without tangent; the tangent
    is None when the tensor has none (or no level is open)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"unpack_dual(): expected a Tensor, got {type(tensor).__name__}")
    if _state.level is None or tensor._fw is None:
        return UnpackedDualTensor(tensor, None)
    was = _state.on
    _state.on = False
    try:
        primal = tensor.view_as(tensor)
    finally:
        _state.on = was
    return UnpackedDualTensor(primal, tensor._fw)


# --- what generated bindings call -----------------------------------------------------------

def _set(t, tangent):
    if t._fw is None:
        _state.duals.append(weakref.ref(t))
    t._fw = tangent


def tangent_of(x):
    """x's tangent, or None (numbers, None, tensors without one)."""
    return x._fw if isinstance(x, Tensor) else None


def tangents_of(xs):
    return None if xs is None else tuple(tangent_of(x) for x in xs)


def any_dual(xs):
    return xs is not None and any(isinstance(x, Tensor) and x._fw is not None for x in xs)


def _fit(tangent, like):
    """The tangent shaped and typed like its primal `like` (formulas may return a
    broadcastable shape or a promoted dtype; a view result's tangent keeps its layout)."""
    if tangent._shape != like._shape:
        tangent = tangent.expand(like._shape)
    if tangent._dtype != like._dtype:
        tangent = tangent.to(like._dtype)
    return tangent


def attach(result, tangent, mutated=None):
    """Give `result` (a tensor, or a tuple/list of them) its tangent(s). For an in-place or
    out= call `mutated` is the tensor written: a tangent it already has is updated in place
    (so views of it that share that tangent see the change), otherwise it gets one; so does
    a tensor whose shape an in-place view op (squeeze_, t_, ...) changed, whose tangent is
    then that op applied to the old tangent (a view of it)."""
    if isinstance(result, Tensor):
        if isinstance(tangent, tuple):
            tangent = tangent[0]     # one tensor where the schema has several returns
        if tangent is None or not result._dtype.is_floating_point:
            if mutated is not None and mutated._fw is not None:
                # an in-place op whose new value does not depend on any tangent
                mutated._fw = None
            return result
        tangent = _fit(tangent, result)
        if mutated is not None and mutated._fw is not None and mutated is result and \
                mutated._fw._shape == tangent._shape:
            was = _state.on
            _state.on = False
            try:
                mutated._fw.copy_(tangent)
            finally:
                _state.on = was
        else:
            _set(result, tangent)
        return result
    if tangent is None:
        return result
    for r, t in zip(result, tangent):
        if isinstance(r, Tensor) and t is not None and r._dtype.is_floating_point:
            _set(r, _fit(t, r))
    return result


def results(result, n):
    """An op's `n` results as a tuple (one tensor comes as (tensor, None, ...))."""
    if isinstance(result, Tensor):
        return (result,) + (None,) * (n - 1)
    return tuple(result)


def zeros_for(x):
    """A zero tangent for x (a stride-0 zero: no memory of x's size); 0 for a Python number
    (a tensor-or-number argument), None for None."""
    if not isinstance(x, Tensor):
        return None if x is None else 0
    from pytorchlite._kernels.factories import zeros
    return zeros((), x._dtype, None, x._device).expand(x._shape)


def fill_list(tangents, primals):
    return [zeros_for(p) if t is None else t for t, p in zip(tangents, primals)]


def add(acc, term):
    return term if acc is None else acc + term


def unsupported(name):
    return NotImplementedError(f"Trying to use forward AD with {name} that does not support it because it has not "
                               "been implemented yet.")


def primal_view(t):
    """A tensor over t's memory without its tangent (detach() for forward AD)."""
    return make(t._storage, t._shape, t._stride, t._offset, t._dtype, t._vc, t._contig)
