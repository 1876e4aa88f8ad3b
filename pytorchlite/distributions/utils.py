"""Helpers the distributions share (PyTorch's torch.distributions.utils): broadcasting
parameters, probabilities <-> logits, and lazily computed attributes."""

import functools
from numbers import Number

import pytorchlite as torch

euler_constant = 0.57721566490153286060


def broadcast_all(*values):
    """The values as tensors of one broadcast shape; numbers take the dtype and device of
    the first tensor among them (the default dtype when there is none)."""
    if not all(isinstance(v, (torch.Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, torch.Tensor or objects "
                         "implementing __torch_function__.")
    if not all(isinstance(v, torch.Tensor) for v in values):
        like = next((v for v in values if isinstance(v, torch.Tensor)), None)
        options = {"dtype": torch.get_default_dtype()} if like is None else {"dtype": like.dtype,
                                                                             "device": like.device}
        values = [v if isinstance(v, torch.Tensor) else torch.tensor(v, **options) for v in values]
    shape = torch.broadcast_shapes(*[v.shape for v in values])
    return tuple(v.expand(shape) for v in values)


def _standard_normal(shape, dtype, device):
    return torch.randn(shape, dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    """Sum out the `dim` rightmost dims of value."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:-dim] + (-1,)).sum(-1)


def clamp_probs(probs):
    """Probabilities kept inside (0, 1) by the dtype's eps."""
    eps = torch.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return torch.log(ps_clamped) - torch.log1p(-ps_clamped)
    return torch.log(ps_clamped)


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return torch.sigmoid(logits)
    return torch.softmax(logits, dim=-1)


class lazy_property:
    """A property computed on first use and then stored on the instance (PyTorch's
    lazy_property: `probs` from `logits` or the other way round)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with torch.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value



def set_probs_or_logits(dist, probs, logits):
    """Store exactly one of `probs` and `logits` on a binary distribution (as a tensor, in
    `_param` too) and return its batch shape (() for a Python number)."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    given = probs if probs is not None else logits
    (value,) = broadcast_all(given)
    setattr(dist, "probs" if probs is not None else "logits", value)
    dist._param = value
    return torch.Size() if isinstance(given, Number) else value.size()
