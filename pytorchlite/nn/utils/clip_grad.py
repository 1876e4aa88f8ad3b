"""Gradient clipping, in place on `.grad`, as PyTorch's torch.nn.utils.clip_grad."""

import math

import pytorchlite


def _grads(parameters):
    if isinstance(parameters, pytorchlite.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _total_norm(norms, norm_type):
    """The norm of the vector of per-tensor norms (what vector_norm(stack(norms)) gives)."""
    if norm_type == math.inf:
        total = norms[0]
        for n in norms[1:]:
            total = pytorchlite.maximum(total, n)
        return total
    if norm_type == -math.inf:
        total = norms[0]
        for n in norms[1:]:
            total = pytorchlite.minimum(total, n)
        return total
    if norm_type == 0:
        total = (norms[0] != 0).to(norms[0].dtype)
        for n in norms[1:]:
            total = total + (n != 0).to(n.dtype)
        return total
    total = norms[0].pow(norm_type)
    for n in norms[1:]:
        total = total + n.pow(norm_type)
    return total.pow(1.0 / norm_type)


@pytorchlite.no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients of `parameters` in place so that their total norm (the norm of
    all gradients concatenated into one vector) is at most `max_norm`. Returns the total
    norm before clipping.

    norm_type may be any p (float("inf") for the max-norm). With error_if_nonfinite, a nan
    or inf total norm raises instead of scaling every gradient by a nan. `foreach` is
    accepted for compatibility; pytorchlite always loops over the tensors.

    >>> import pytorchlite
    >>> w = pytorchlite.nn.Parameter(pytorchlite.zeros(2)); w.grad = pytorchlite.tensor([3., 4.])
    >>> pytorchlite.nn.utils.clip_grad_norm_([w], max_norm=1.0)
    tensor(5.)
    >>> w.grad
    tensor([0.6000, 0.8000])
    """
    grads = _grads(parameters)
    max_norm = float(max_norm)
    norm_type = float(norm_type)
    if not grads:
        return pytorchlite.tensor(0.0)
    norms = [pytorchlite.norm(g, norm_type) for g in grads]
    total_norm = _total_norm(norms, norm_type)
    if error_if_nonfinite and not bool(pytorchlite.isfinite(total_norm).item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    clip_coef = max_norm / (total_norm + 1e-6)
    # multiplying by the clamped coefficient (rather than branching on it) keeps a nan norm
    # visible in the gradients, as PyTorch does
    clip_coef_clamped = clip_coef.clamp(max=1.0)
    for g in grads:
        g.mul_(clip_coef_clamped.to(g.dtype))
    return total_norm


@pytorchlite.no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp the gradients of `parameters` in place to [-clip_value, clip_value].

    >>> import pytorchlite
    >>> w = pytorchlite.nn.Parameter(pytorchlite.zeros(3)); w.grad = pytorchlite.tensor([-2., 0.5, 3.])
    >>> pytorchlite.nn.utils.clip_grad_value_(w, 1.0); w.grad
    tensor([-1.0000,  0.5000,  1.0000])
    """
    clip_value = float(clip_value)
    for g in _grads(parameters):
        g.clamp_(min=-clip_value, max=clip_value)
