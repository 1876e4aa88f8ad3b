"""pytorchlite.nn.functional: the operators declared in ops.yaml with
`python_module: nn.functional`, plus losses and layers written on the public API the way
user code would be."""

import warnings

import pytorchlite
from pytorchlite.generated.functions import EXPORTS as _E

globals().update(_E.get("nn.functional", {}))

_REDUCTIONS = ("none", "mean", "sum")


def _top(name):
    return getattr(pytorchlite, name)


def relu(input, inplace=False):
    """max(input, 0) elementwise."""
    return input.relu_() if inplace else pytorchlite.relu(input)


def sigmoid(input):
    """1 / (1 + exp(-input)): the same operator as pytorchlite.sigmoid (PyTorch keeps both names)."""
    return pytorchlite.sigmoid(input)


def tanh(input):
    """Hyperbolic tangent: the same operator as pytorchlite.tanh (PyTorch keeps both names)."""
    return pytorchlite.tanh(input)


def linear(input, weight, bias=None):
    """input @ weight.T + bias.

    >>> import pytorchlite
    >>> linear(pytorchlite.ones(2, 3), pytorchlite.ones(4, 3)).shape
    pytorchlite.Size([2, 4])
    """
    out = pytorchlite.matmul(input, weight.t())
    return out if bias is None else out + bias


def _softmax_dim(input, dim, name):
    if dim is None:
        warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
                      f"dim=X as an argument.", stacklevel=3)
        dim = 0 if input.dim() in (0, 1, 3) else 1
    return dim


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log(softmax(input)) along dim, by the C kernel (input - max - log(sum(exp)))."""
    return pytorchlite.log_softmax(input, _softmax_dim(input, dim, "log_softmax"), dtype=dtype)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(input) / sum(exp(input)) along dim, computed stably by the C kernel."""
    return pytorchlite.softmax(input, _softmax_dim(input, dim, "softmax"), dtype=dtype)


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


# --- convolution, pooling, normalisation, embedding (kernels in ops.yaml, see kernels/nn.c) ---

def _ntuple(v, n):
    if isinstance(v, int):
        return (v,) * n
    return tuple(v)


def _conv(name, k, input, weight, bias, stride, padding, dilation, groups):
    if input.dim() not in (k + 1, k + 2):
        raise RuntimeError(f"Expected {k + 1}D (unbatched) or {k + 2}D (batched) input to {name}, but got input of "
                           f"size: {list(input.shape)}")
    batched = input.dim() == k + 2
    if not batched:
        input = input.unsqueeze(0)
    stride, dilation = _ntuple(stride, k), _ntuple(dilation, k)
    shift = None
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * k
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            total = [d * (s - 1) for d, s in zip(dilation, weight.shape[2:])]
            # an odd total pads one more on the right (as PyTorch): pad ceil(total/2) on both
            # sides and drop the first output row/column
            padding = tuple((t + 1) // 2 for t in total)
            shift = [t % 2 for t in total]
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    out = pytorchlite.convolution(input, weight, bias, stride, _ntuple(padding, k), dilation, False, (0,) * k,
                                  groups)
    if shift is not None and any(shift):
        for i, s in enumerate(shift):
            if s:
                out = out.narrow(2 + i, 1, out.shape[2 + i] - 1)
    return out if batched else out.squeeze(0)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of (N, C, L) or (C, L) input with weight (O, C/groups, K); padding
    may be an int, a tuple, 'valid' or 'same'."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of (N, C, H, W) or (C, H, W) input with weight (O, C/groups, KH, KW).

    >>> import pytorchlite
    >>> conv2d(pytorchlite.ones(1, 1, 3, 3), pytorchlite.ones(2, 1, 2, 2)).shape
    pytorchlite.Size([1, 2, 2, 2])
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(name, k, input, weight, bias, stride, padding, output_padding, groups, dilation):
    if input.dim() not in (k + 1, k + 2):
        raise RuntimeError(f"Expected {k + 1}D (unbatched) or {k + 2}D (batched) input to {name}, but got input of "
                           f"size: {list(input.shape)}")
    batched = input.dim() == k + 2
    if not batched:
        input = input.unsqueeze(0)
    out = pytorchlite.convolution(input, weight, bias, _ntuple(stride, k), _ntuple(padding, k),
                                  _ntuple(dilation, k), True, _ntuple(output_padding, k), groups)
    return out if batched else out.squeeze(0)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The transpose (adjoint) of conv1d; weight is (C, O/groups, K)."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The transpose (adjoint) of conv2d; weight is (C, O/groups, KH, KW)."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """2-D max pooling; with return_indices, also each maximum's flat index in its plane."""
    out, indices = max_pool2d_with_indices(input, kernel_size, () if stride is None else stride, padding,  # noqa: F821
                                           dilation, ceil_mode)
    return (out, indices) if return_indices else out


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """2-D average pooling."""
    return _E["nn.functional"]["avg_pool2d"](input, kernel_size, () if stride is None else stride, padding,
                                            ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to `output_size` (an int, or a pair whose None entries keep the input size)."""
    size = _ntuple(output_size, 2)
    size = tuple(input.shape[-2 + i] if s is None else s for i, s in enumerate(size))
    return pytorchlite._adaptive_avg_pool2d(input, size)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing `normalized_shape` dims, then the elementwise affine."""
    return pytorchlite.layer_norm(input, _ntuple(normalized_shape, 1), weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise each channel group of each sample, then the per-channel affine."""
    return pytorchlite.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Batch normalisation over every dim but dim 1 (running statistics updated in training)."""
    if training:
        size = input.numel() // input.shape[1] if input.dim() > 1 else input.numel()
        if size == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {input.shape}")
    return pytorchlite.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, False)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of `weight` picked by the indices `input`; the padding_idx row gets no gradient."""
    if max_norm is not None:
        raise NotImplementedError("embedding(): max_norm is not supported")
    if padding_idx is not None:
        n = weight.shape[0]
        if padding_idx > 0 and padding_idx >= n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -n:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = n + padding_idx
    else:
        padding_idx = -1
    return pytorchlite.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)
