"""pytorchlite.nn.functional: the operators declared in ops.yaml with
`python_module: nn.functional`, plus losses and layers written on the public API the way
user code would be."""

import pytorchlite
from pytorchlite.generated.functions import EXPORTS as _E

globals().update(_E.get("nn.functional", {}))

_REDUCTIONS = ("none", "mean", "sum")


def _top(name):
    return getattr(pytorchlite, name)


def relu(input, inplace=False):
    """max(input, 0) elementwise."""
    return input.relu_() if inplace else pytorchlite.relu(input)


def linear(input, weight, bias=None):
    """input @ weight.T + bias.

    >>> import pytorchlite
    >>> linear(pytorchlite.ones(2, 3), pytorchlite.ones(4, 3)).shape
    pytorchlite.Size([2, 4])
    """
    out = pytorchlite.matmul(input, weight.t())
    return out if bias is None else out + bias


def log_softmax(input, dim=None, dtype=None):
    """log(softmax(input)) computed stably as input - logsumexp(input)."""
    if dim is None:
        dim = 0 if input.dim() in (0, 1, 3) else 1
    if dtype is not None:
        input = input.to(dtype)
    return input - input.logsumexp(dim, keepdim=True)


def softmax(input, dim=None, dtype=None):
    """exp(input) / sum(exp(input)) along dim, computed stably."""
    return log_softmax(input, dim, dtype).exp()


def _reduce(loss, reduction, weight_sum=None):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / weight_sum if weight_sum is not None else loss.mean()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _one_hot(target, num_classes, dtype):
    classes = pytorchlite.arange(num_classes)
    shape = [1] * (target.dim() + 1)
    shape[1] = num_classes
    return (target.unsqueeze(1) == classes.view(shape)).to(dtype)


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """Negative log likelihood of class indices `target` under log-probabilities `input`
    (N, C) or (N, C, d1, ...)."""
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if target.dtype.is_floating_point:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype}")
    if input.dim() == 1:
        input, target = input.unsqueeze(0), target.reshape(1)
    if input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    c = input.shape[1]
    valid = target != ignore_index
    safe_target = pytorchlite.where(valid, target, pytorchlite.zeros_like(target))
    if bool(((safe_target < 0) | (safe_target >= c)).any()):
        raise IndexError(f"Target {int(safe_target.max())} is out of bounds.")
    onehot = _one_hot(safe_target, c, input.dtype)
    w = onehot if weight is None else onehot * weight.view([1, c] + [1] * (input.dim() - 2))
    w = w * valid.unsqueeze(1).to(input.dtype)
    loss = -(input * w).sum(1)
    return _reduce(loss, reduction, w.sum() if reduction == "mean" else None)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """Cross entropy between logits `input` and class indices (or class probabilities)."""
    logp = log_softmax(input, 1 if input.dim() > 1 else 0)
    if target.dtype.is_floating_point:
        w = 1.0 if weight is None else weight.view([1, -1] + [1] * (input.dim() - 2))
        c = input.shape[1] if input.dim() > 1 else input.shape[0]
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / c
        return _reduce(-(logp * target * w).sum(1 if input.dim() > 1 else 0), reduction)
    loss = nll_loss(logp, target, weight, ignore_index, reduction)
    if label_smoothing:
        c = logp.shape[1]
        smooth = -(logp if weight is None else logp * weight.view([1, c] + [1] * (logp.dim() - 2))).sum(1)
        valid = (target != ignore_index).to(logp.dtype)
        smooth = smooth * valid
        if reduction == "mean":
            denom = valid.sum() if weight is None else (_one_hot(
                pytorchlite.where(target != ignore_index, target, pytorchlite.zeros_like(target)), c, logp.dtype)
                * weight.view([1, c] + [1] * (logp.dim() - 2)) * valid.unsqueeze(1)).sum()
            smooth = smooth.sum() / denom
        else:
            smooth = _reduce(smooth, reduction)
        loss = (1 - label_smoothing) * loss + label_smoothing / c * smooth
    return loss


def mse_loss(input, target, reduction="mean"):
    """Mean squared error."""
    return _reduce((input - target) ** 2, reduction)


def l1_loss(input, target, reduction="mean"):
    """Mean absolute error."""
    return _reduce((input - target).abs(), reduction)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1/(1-p)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    mask = pytorchlite.empty_like(input).bernoulli_(1 - p)
    out = input * mask / (1 - p)
    return input.copy_(out) if inplace else out
