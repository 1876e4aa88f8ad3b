"""pytorchlite.nn.functional: the operators declared in ops.yaml with
`python_module: nn.functional`, plus losses and layers written on the public API the way
user code would be."""

import math
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


def prelu(input, weight):
    """input where input > 0, else weight * input: one weight per channel (dim 1), or one
    shared by all.

    >>> import pytorchlite
    >>> prelu(pytorchlite.tensor([[-2., 3.], [4., -1.]]), pytorchlite.tensor([0.5, 0.1]))
    tensor([[-1.0000,  3.0000],
            [ 4.0000, -0.1000]])
    """
    if input.dtype != weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {input.dtype._torch_name} and "
                           f"{weight.dtype._torch_name}")
    if weight.numel() != 1:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.dim() > 1 else 1
        if channels != weight.numel():
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {channels}.")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    if weight.dim() != input.dim():
        weight = weight.reshape([weight.numel() if d == 1 else 1 for d in range(input.dim())])
    # at exactly 0 the slope branch: its gradient is weight, as PyTorch's
    return pytorchlite.where(input > 0, input, weight * input)


def linear(input, weight, bias=None):
    """input @ weight.T + bias.

    >>> import pytorchlite
    >>> linear(pytorchlite.ones(2, 3), pytorchlite.ones(4, 3)).shape
    pytorchlite.Size([2, 4])
    """
    if bias is not None and input.dim() == 2:
        # one GEMM that starts from the broadcast bias (PyTorch's linear does the same)
        return pytorchlite.addmm(bias, input, weight.t())
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


def _legacy_reduction(size_average, reduce, reduction):
    """`reduction`, or what the deprecated size_average / reduce flags ask for (PyTorch's rule
    and warning): both default to True; reduce=False means 'none', else size_average picks
    'mean' or 'sum'."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "none" if not reduce else ("mean" if size_average else "sum")
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                  stacklevel=3)
    return ret


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


_REDUCTION_CODES = {"none": 0, "mean": 1, "sum": 2}


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log likelihood of class indices `target` under log-probabilities `input`
    (N, C) or (N, C, d1, ...)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() > 1 and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    code = _REDUCTION_CODES.get(reduction)
    if code is None:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if weight is not None and weight.requires_grad and pytorchlite.is_grad_enabled():
        # the kernels treat the class weights as constants, as PyTorch's do; this form
        # also gives their gradient
        return _nll_loss_weight_grad(input, target, weight, ignore_index, reduction)
    nd = input.dim()
    if nd <= 2:
        return pytorchlite.nll_loss_forward(input, target, weight, code, ignore_index)[0]
    if nd == 4:
        return pytorchlite.nll_loss2d_forward(input, target, weight, code, ignore_index)[0]
    # (N, C, d1, ..., dk) as one (N, C, 1, d1 * ... * dk) image, as PyTorch does
    n, c = input.shape[0], input.shape[1]
    spatial = tuple(input.shape[2:])
    if tuple(target.shape[1:]) != spatial:
        raise ValueError(f"Expected target size {[n] + list(spatial)}, got {list(target.shape)}")
    out = pytorchlite.nll_loss2d_forward(input.contiguous().view(n, c, 1, -1), target.contiguous().view(n, 1, -1),
                                         weight, code, ignore_index)[0]
    return out.view((n,) + spatial) if code == 0 else out


def _nll_loss_weight_grad(input, target, weight, ignore_index, reduction):
    """nll_loss as differentiable operations, gradient for `weight` included."""
    if target.dtype.is_floating_point:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {target.dtype._torch_name}")
    if input.dim() == 1:
        input, target = input.unsqueeze(0), target.reshape(1)
    c = input.shape[1]
    valid = target != ignore_index
    safe_target = pytorchlite.where(valid, target, 0)
    # each sample's log-probability at its class (gathered: work of N, not N x C)
    try:
        picked = input.gather(1, safe_target.unsqueeze(1)).squeeze(1)
    except RuntimeError:
        bad = safe_target[(safe_target < 0) | (safe_target >= c)]
        if bad.numel():
            raise IndexError(f"Target {int(bad[0])} is out of bounds.") from None
        raise
    w = weight[safe_target] * valid
    loss = -(picked * w)
    return _reduce(loss, reduction, w.sum() if reduction == "mean" else None)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """Cross entropy between logits `input` and class indices (or class probabilities)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    logp = log_softmax(input, 1 if input.dim() > 1 else 0)
    if target.dtype.is_floating_point:
        w = 1.0 if weight is None else weight.view([1, -1] + [1] * (input.dim() - 2))
        c = input.shape[1] if input.dim() > 1 else input.shape[0]
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / c
        return _reduce(-(logp * target * w).sum(1 if input.dim() > 1 else 0), reduction)
    loss = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
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


def _warn_target_size(input, target):
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=3)


def _weighted(loss, input, weight, reduction):
    """An elementwise loss times `weight` (input's size), reduced with 'mean' as
    sum(loss * weight) / sum(weight), as PyTorch's weighted mse_loss and l1_loss."""
    if weight is None:
        return _reduce(loss, reduction)
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    return _reduce(loss * weight, reduction, weight.sum() if reduction == "mean" else None)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error; a target of another size broadcasts, with PyTorch's warning.

    >>> import pytorchlite
    >>> mse_loss(pytorchlite.tensor([1., 2.]), pytorchlite.tensor([1., 4.]))
    tensor(2.)
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _warn_target_size(input, target)
    return _weighted((input - target) ** 2, input, weight, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error; a target of another size broadcasts, with PyTorch's warning.

    >>> import pytorchlite
    >>> l1_loss(pytorchlite.tensor([1., 2.]), pytorchlite.tensor([1., 4.]))
    tensor(1.)
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _warn_target_size(input, target)
    return _weighted((input - target).abs(), input, weight, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 * d**2 / beta where |d| = |input - target| < beta, else |d| - 0.5 * beta.

    >>> import pytorchlite
    >>> smooth_l1_loss(pytorchlite.tensor([0., 0.]), pytorchlite.tensor([0.5, 3.]), reduction="none")
    tensor([0.1250, 2.5000])
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _warn_target_size(input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    diff = input - target
    if beta == 0.0:
        # plain L1, as PyTorch: the quadratic branch would divide by 0, and where() sends it a
        # zero gradient that 0 / 0 turns into nan
        return _reduce(diff.abs(), reduction)
    z = diff.abs()
    return _reduce(pytorchlite.where(z < beta, 0.5 * diff * diff / beta, z - 0.5 * beta), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 * d**2 where |d| = |input - target| < delta, else delta * (|d| - 0.5 * delta);
    an optional `weight` of input's size scales each element ('mean' is then the mean of the
    weighted losses, as PyTorch).

    >>> import pytorchlite
    >>> huber_loss(pytorchlite.tensor([0., 0.]), pytorchlite.tensor([0.5, 3.]), reduction="none", delta=2.)
    tensor([0.1250, 4.0000])
    """
    _warn_target_size(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    diff = input - target
    z = diff.abs()
    loss = pytorchlite.where(z < delta, 0.5 * diff * diff, delta * (z - 0.5 * delta))
    if weight is not None:
        if weight.shape != input.shape:
            raise ValueError("Weights and input must have the same size.")
        loss = loss * weight
    return _reduce(loss, reduction)


class _BinaryCrossEntropy(pytorchlite.autograd.Function):
    """Elementwise -(y log x + (1 - y) log(1 - x)), each log clamped at -100, with PyTorch's
    gradients. Composing clamp and log would give 0 * inf = nan wherever a log is clamped
    (x exactly 0 or 1, as a saturated float32 sigmoid gives) where PyTorch's
    (x - y) / max(x (1 - x), 1e-12) stays finite."""

    @staticmethod
    def forward(ctx, input, target):
        ctx.save_for_backward(input, target)
        return (target - 1) * input.neg().log1p().clamp(min=-100) - target * input.log().clamp(min=-100)

    @staticmethod
    def backward(ctx, grad):
        input, target = ctx.saved_tensors
        grad_input = grad_target = None
        if ctx.needs_input_grad[0]:
            grad_input = grad * (input - target) / ((1 - input) * input).clamp(min=1e-12)
        if ctx.needs_input_grad[1]:
            # -logit(x), not clamped: +-inf at x = 0 or 1, as PyTorch
            grad_target = grad * (input.neg().log1p() - input.log())
        return grad_input, grad_target


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Binary cross entropy of probabilities `input` (in [0, 1]) against `target` (same size
    and dtype); `weight` broadcasts to the target's size.

    >>> import pytorchlite
    >>> binary_cross_entropy(pytorchlite.tensor([0.5, 1.]), pytorchlite.tensor([1., 0.]), reduction="none")
    tensor([  0.6931, 100.0000])
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    if target.dtype != input.dtype:
        raise RuntimeError(f"binary_cross_entropy(): expected target of dtype {input.dtype} (the input's), "
                           f"but got {target.dtype}")
    # `not (x >= 0)` also catches nan, as PyTorch's check does
    if bool((~((input >= 0) & (input <= 1))).any()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    if bool((~((target >= 0) & (target <= 1))).any()):
        raise RuntimeError("all elements of target should be between 0 and 1")
    loss = _BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        shape = pytorchlite.broadcast_shapes(target.shape, weight.shape)
        if shape != target.shape:
            raise RuntimeError(f"binary_cross_entropy(): weight of size {weight.shape} does not broadcast to "
                               f"the target's size {target.shape}")
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """binary_cross_entropy(sigmoid(input), target) computed from the logits without overflow;
    `pos_weight` scales the positive term (broadcast along the class dims), `weight` the whole.

    >>> import pytorchlite
    >>> binary_cross_entropy_with_logits(pytorchlite.tensor([0., 100.]), pytorchlite.tensor([1., 0.]),
    ...                                  reduction="none")
    tensor([  0.6931, 100.0000])
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    if not target.is_floating_point():
        raise RuntimeError(f"binary_cross_entropy_with_logits(): expected a floating-point target, but got "
                           f"{target.dtype}")
    # log(sigmoid(x)) = -log(1 + e**-x), as logaddexp(0, -x): no overflow for |x| = 1000, and
    # its gradient sigmoid(-x) is exact everywhere, where the usual max(-x, 0) +
    # log1p(exp(-|x|)) form meets the kinks of max and abs at x = 0, a common logit
    log_sigmoid = -pytorchlite.logaddexp(pytorchlite.zeros((), dtype=input.dtype, device=input.device), -input)
    if pos_weight is not None:
        log_sigmoid = log_sigmoid * ((pos_weight - 1) * target + 1)
    loss = (1 - target) * input - log_sigmoid
    if weight is not None:
        loss = loss * weight
    if loss.shape != input.shape:
        raise RuntimeError(f"binary_cross_entropy_with_logits(): weight and pos_weight must broadcast to the "
                           f"input's size {input.shape}, but the loss has size {loss.shape}")
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Pointwise KL divergence target * (log(target) - input) of the log-probabilities `input`
    from `target` (log-probabilities too with log_target=True); 'batchmean' divides the sum by
    the batch size, the true KL divergence ('mean' divides by every element and warns).

    >>> import pytorchlite
    >>> kl_div(pytorchlite.tensor([[-1., -1.]]), pytorchlite.tensor([[0.5, 0.5]]), reduction="batchmean")
    tensor(0.3069)
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # xlogy: 0 * log(0) is 0, so zero-probability targets add nothing
        loss = pytorchlite.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() != 0 else loss.sum()
    return _reduce(loss, reduction)


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o].

    >>> import pytorchlite
    >>> bilinear(pytorchlite.ones(2, 3), pytorchlite.ones(2, 4), pytorchlite.ones(5, 3, 4)).shape
    pytorchlite.Size([2, 5])
    """
    tensors = [("input1", input1), ("input2", input2), ("weight", weight)] + \
        ([("bias", bias)] if bias is not None else [])
    if any(t.dtype != input1.dtype for _, t in tensors):
        raise RuntimeError("All tensors must have the same dtype, got " +
                           ", ".join(f"{n}: {t.dtype}" for n, t in tensors))
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    for i in range(input1.dim() - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got "
                               f"{input1.shape[i]} and {input2.shape[i]}")
    out_features, in1, in2 = weight.size(0), weight.size(1), weight.size(2)
    if input1.shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but "
                           f"expected {in1}")
    if input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but "
                           f"expected {in2}")
    if bias is not None and bias.size(0) != out_features:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.size(0)} but expected "
                           f"{out_features}")
    batch = tuple(input1.shape[:-1])
    x1, x2 = input1.reshape(-1, in1), input2.reshape(-1, in2)
    n = x1.shape[0]
    # one matmul contracts i for every (o, j) at once: (n, in1) @ (in1, out * in2), then a
    # batched matmul contracts j with each sample's input2
    t = pytorchlite.matmul(x1, weight.permute(1, 0, 2).reshape(in1, out_features * in2))
    out = pytorchlite.matmul(t.reshape(n, out_features, in2), x2.unsqueeze(-1)).squeeze(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(batch + (out_features,))


# --- normalisation and distances along a dim ---

def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p, eps), the norm taken along `dim` (an int or a tuple).

    >>> import pytorchlite
    >>> normalize(pytorchlite.tensor([[3., 4.], [0., 0.]]))
    tensor([[0.6000, 0.8000],
            [0.0000, 0.0000]])
    """
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    return input / denom if out is None else pytorchlite.div(input, denom, out=out)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine of the angle between x1 and x2 (broadcast together) along `dim`: the sum of
    x1 / max(||x1||, eps) times x2 / max(||x2||, eps), each norm clamped on its own (PyTorch
    2's form, which keeps the result in [-1, 1]).

    >>> import pytorchlite
    >>> cosine_similarity(pytorchlite.tensor([[1., 0.], [1., 1.]]), pytorchlite.tensor([[1., 1.], [2., 2.]]))
    tensor([0.7071, 1.0000])
    """
    dtype = pytorchlite.result_type(x1, x2)
    if not dtype.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {dtype._torch_name}")
    shape = pytorchlite.broadcast_shapes(x1.shape, x2.shape)
    factors = []
    for x in (x1, x2):
        x = (x if x.is_floating_point() else x.to(dtype)).expand(shape)
        norm = pytorchlite.linalg.vector_norm(x, 2, dim, keepdim=True).clone()
        # clamped in place out of autograd's sight, as PyTorch does: below eps the value is
        # eps, but the gradient still flows into the norm as if unclamped
        with pytorchlite.no_grad():
            norm.clamp_min_(eps)
        factors.append(x / norm)
    return (factors[0] * factors[1]).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps along the last dim of the broadcast pair.

    >>> import pytorchlite
    >>> pairwise_distance(pytorchlite.tensor([[0., 0.], [1., 1.]]), pytorchlite.tensor([[3., 4.], [1., 1.]]), eps=0.)
    tensor([5., 0.])
    """
    return (x1 - x2 + eps).norm(p, max(x1.dim(), x2.dim()) - 1, keepdim)


def _check_dropout_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout(input, p, training, inplace, kept_dims=None):
    """PyTorch's dropout: input times a Bernoulli(1 - p) noise scaled by 1 / (1 - p). The
    noise has input's size, or only its first `kept_dims` dims and size 1 after them, so
    that one draw keeps or zeroes a whole channel."""
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        # a product, not a fill: nan and inf give nan, as in PyTorch
        return input.mul_(0.0) if inplace else input * 0.0
    shape = tuple(input.shape)
    if kept_dims is not None:
        if input.dim() < kept_dims:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = shape[:kept_dims] + (1,) * (input.dim() - kept_dims)
    noise = input.new_empty(shape).bernoulli_(1 - p).div_(1 - p)
    return input.mul_(noise) if inplace else input * noise


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1/(1-p)."""
    _check_dropout_p(p)
    return _dropout(input, p, training, inplace)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero each channel of (N, C, L) or (C, L) input with probability p, scaling the kept
    channels by 1/(1-p).

    >>> import pytorchlite
    >>> dropout1d(pytorchlite.ones(2, 3), p=1.0)
    tensor([[0., 0., 0.],
            [0., 0., 0.]])
    """
    _check_dropout_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _dropout(input, p, training, inplace, kept_dims=input.dim() - 1)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero each channel of (N, C, H, W) input with probability p, scaling the kept channels
    by 1/(1-p). As in PyTorch, 3-d input is taken as (N, C, L), with a warning, and other
    sizes warn that they are deprecated.

    >>> import pytorchlite
    >>> dropout2d(pytorchlite.ones(1, 2, 2, 2), p=0.5, training=False).sum()
    tensor(8.)
    """
    _check_dropout_p(p)
    if input.dim() not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is deprecated and will "
                      "result in an error in a future release. To retain the behavior and silence this warning, "
                      "please use dropout instead. Note that dropout2d exists to provide channel-wise dropout on "
                      "inputs with 2 spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 3D or 4D inputs).", stacklevel=2)
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a "
                      "batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, "
                      "please switch to using dropout1d instead.", stacklevel=2)
    return _dropout(input, p, training, inplace, kept_dims=2)


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


def _adaptive_size(input, output_size):
    """The (height, width) to pool to: an int, or a pair whose None entries keep the input size."""
    return tuple(input.shape[-2 + i] if s is None else s for i, s in enumerate(_ntuple(output_size, 2)))


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to `output_size` (an int, or a pair whose None entries keep the input size)."""
    return pytorchlite._adaptive_avg_pool2d(input, _adaptive_size(input, output_size))


def _adaptive_windows(n, m):
    """Adaptive pooling's window [floor(i*n/m), ceil((i+1)*n/m)) for each of m outputs."""
    return [range(i * n // m, -(-(i + 1) * n // m)) for i in range(m)]


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max pooling of (N, C, H, W) or (C, H, W) input to `output_size` (an int, or a pair whose
    None entries keep the input size); with return_indices, also each maximum's flat index in
    its (H, W) plane.

    >>> import pytorchlite
    >>> adaptive_max_pool2d(pytorchlite.arange(6.).view(1, 2, 3), (1, 2), return_indices=True)
    (tensor([[[4., 5.]]]), tensor([[[4, 5]]]))
    """
    if input.dim() not in (3, 4):
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: {list(input.shape)}")
    for d in range(1, input.dim()):
        if input.shape[d] == 0:
            raise RuntimeError(f"adaptive_max_pool2d(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(input.shape)} with dimension {d} being empty")
    oh, ow = _adaptive_size(input, output_size)
    if oh < 0 or ow < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(oh, ow)}: "
                           f"{list(input.shape[:-2]) + [oh, ow]}")
    h, w = input.shape[-2:]
    # every window's flat positions in the plane, padded to one length by repeating its first
    # position: a repeat changes neither the maximum nor the first position holding it
    windows = [[r * w + c for r in rows for c in cols]
               for rows in _adaptive_windows(h, oh) for cols in _adaptive_windows(w, ow)]
    k = max(map(len, windows), default=1)
    windows = pytorchlite.tensor([p + p[:1] * (k - len(p)) for p in windows], dtype=pytorchlite.int64,
                                 device=input.device).view(oh * ow, k)
    flat = input.flatten(-2)
    first_max = flat[..., windows].argmax(-1, keepdim=True)
    indices = windows.expand(tuple(flat.shape[:-1]) + (oh * ow, k)).gather(-1, first_max).squeeze(-1)
    # gathered, not reduced, so that the gradient goes to that one position, as in PyTorch
    out = flat.gather(-1, indices).unflatten(-1, (oh, ow))
    return (out, indices.unflatten(-1, (oh, ow))) if return_indices else out


# --- pooling in one dimension: as PyTorch does, (N, C, L) or (C, L) input pooled as a
#     (N, C, 1, L) or (C, 1, L) image by the 2-d function, each size argument (1, s) ---

def _pool1d(name, pool2d, input, sizes, **options):
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for {name})")
    args2d = {}
    for arg, value in sizes.items():
        value = _ntuple(value, 1)
        if len(value) != 1:
            raise RuntimeError(f"{name}() argument '{arg}' should contain one int (got {len(value)})")
        args2d[arg] = (0 if arg == "padding" else 1,) + value
    out = pool2d(input.unsqueeze(-2), **args2d, **options)
    return tuple(t.squeeze(-2) for t in out) if isinstance(out, tuple) else out.squeeze(-2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """1-D max pooling of (N, C, L) or (C, L) input; with return_indices, also each maximum's
    index along L.

    >>> import pytorchlite
    >>> max_pool1d(pytorchlite.tensor([[1., 3., 2., 5., 4.]]), 2, return_indices=True)
    (tensor([[3., 5.]]), tensor([[1, 3]]))
    """
    sizes = {"kernel_size": kernel_size, "stride": kernel_size if stride is None else stride, "padding": padding,
             "dilation": dilation}
    return _pool1d("max_pool1d", max_pool2d, input, sizes, ceil_mode=ceil_mode, return_indices=return_indices)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """1-D average pooling of (N, C, L) or (C, L) input.

    >>> import pytorchlite
    >>> avg_pool1d(pytorchlite.tensor([[1., 2., 3., 4., 5., 6., 7.]]), kernel_size=3, stride=2)
    tensor([[2., 4., 6.]])
    """
    sizes = {"kernel_size": kernel_size, "stride": kernel_size if stride is None else stride, "padding": padding}
    return _pool1d("avg_pool1d", avg_pool2d, input, sizes, ceil_mode=ceil_mode,
                   count_include_pad=count_include_pad)


def adaptive_avg_pool1d(input, output_size):
    """Average pooling of (N, C, L) or (C, L) input to `output_size` along L.

    >>> import pytorchlite
    >>> adaptive_avg_pool1d(pytorchlite.tensor([[1., 2., 3., 4., 5.]]), 2)
    tensor([[2., 4.]])
    """
    return _pool1d("adaptive_avg_pool1d", adaptive_avg_pool2d, input, {"output_size": output_size})


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max pooling of (N, C, L) or (C, L) input to `output_size` along L; with return_indices,
    also each maximum's index along L.

    >>> import pytorchlite
    >>> adaptive_max_pool1d(pytorchlite.tensor([[1., 3., 2., 5., 4.]]), 2)
    tensor([[3., 5.]])
    """
    return _pool1d("adaptive_max_pool1d", adaptive_max_pool2d, input, {"output_size": output_size},
                   return_indices=return_indices)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing `normalized_shape` dims, then the elementwise affine."""
    if isinstance(normalized_shape, int):
        # (nn.LayerNorm takes an int; the function, like PyTorch's, wants a sequence)
        raise TypeError("layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not int")
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
        n = weight.size(0)
        if padding_idx > 0 and padding_idx >= n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -n:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = n + padding_idx
    else:
        padding_idx = -1
    return pytorchlite.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


_NEG_INF = float("-inf")


# --- scaled dot-product attention ------------------------------------------------------------

def _check_tensor(fn, name, position, value, optional=False):
    if value is None and optional:
        return
    if not isinstance(value, pytorchlite.Tensor):
        where = f" (position {position})" if position else ""
        raise TypeError(f"{fn}(): argument '{name}'{where} must be Tensor, not {type(value).__name__}")


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value over the last two dims; the leading dims
    are batch dims and broadcast as in matmul. query is (..., L, E), key (..., S, E), value
    (..., S, Ev); the result is (..., L, Ev).

    A boolean attn_mask marks with True the positions that take part; a float mask is added
    to the scores. is_causal masks out keys after each query (top-left aligned). scale
    defaults to 1/sqrt(E). With enable_gqa, key and value may have fewer heads (dim -3) than
    query, a divisor of its head count. A query whose every key is masked out gives zeros
    (and a zero gradient), as PyTorch does.

    >>> import pytorchlite
    >>> q = pytorchlite.ones(2, 3, 4)
    >>> scaled_dot_product_attention(q, q, pytorchlite.ones(2, 3, 5)).shape
    pytorchlite.Size([2, 3, 5])
    """
    fn = "scaled_dot_product_attention"
    for i, (name, t) in enumerate((("query", query), ("key", key), ("value", value))):
        _check_tensor(fn, name, i + 1, t)
    _check_tensor(fn, "attn_mask", 4, attn_mask, optional=True)
    if min(query.dim(), key.dim(), value.dim()) < 2:
        raise RuntimeError(f"Expected query, key, and value to all be at least 2 dimensional, but got query.dim: "
                           f"{query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} instead.")
    if not query.dtype == key.dtype == value.dtype:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: {query.dtype} "
                           f"key.dtype: {key.dtype} and value.dtype: {value.dtype} instead.")
    if not query.is_floating_point():
        raise RuntimeError(f"{fn}(): expected floating-point query, key and value, but got {query.dtype}")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"{fn}(): query and key must have the same embedding size (last dim), but got query of "
                           f"size {list(query.shape)} and key of size {list(key.shape)}")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"{fn}(): key and value must have the same sequence length (dim -2), but got key of "
                           f"size {list(key.shape)} and value of size {list(value.shape)}")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if attn_mask is not None:
        if is_causal:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        if attn_mask.dtype not in (pytorchlite.bool, pytorchlite.float32, query.dtype):
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                               f"attn_mask.dtype: {attn_mask.dtype} and query.dtype: {query.dtype} instead.")
    if enable_gqa:
        heads, kv_heads, v_heads = query.size(-3), key.size(-3), value.size(-3)
        if kv_heads == 0 or v_heads == 0 or heads % kv_heads or heads % v_heads:
            raise RuntimeError(f"Number of heads in key and value must divide the number of heads in query, but got "
                               f"{heads} query heads, {kv_heads} key heads and {v_heads} value heads")
        if kv_heads != heads:
            key = key.repeat_interleave(heads // kv_heads, -3)
        if v_heads != heads:
            value = value.repeat_interleave(heads // v_heads, -3)

    L, S, E = query.shape[-2], key.shape[-2], query.shape[-1]
    if scale is None:
        # with E == 0 every score is 0 whatever the scale
        scale = 1.0 / math.sqrt(E) if E else 1.0
    scores = pytorchlite.matmul(query * scale, key.transpose(-2, -1))
    if is_causal:
        keep = pytorchlite.ones(L, S, dtype=pytorchlite.bool, device=query.device).tril()
        scores = scores.masked_fill(keep.logical_not(), _NEG_INF)
    elif attn_mask is not None:
        if attn_mask.dtype == pytorchlite.bool:
            scores = pytorchlite.where(attn_mask, scores, _NEG_INF)
        else:
            scores = scores + attn_mask
    if attn_mask is None:
        weights = pytorchlite.softmax(scores, -1)
    else:
        # A row with no key left would be softmax(-inf, ..., -inf) = NaN, and its NaN would
        # also poison the backward of softmax; PyTorch gives such rows zeros. So the row is
        # made finite before softmax and zeroed after: both fills stop its gradient.
        dead = (scores == _NEG_INF).all(-1, keepdim=True)
        weights = pytorchlite.softmax(scores.masked_fill(dead, 0.0), -1).masked_fill(dead, 0.0)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True)
    return pytorchlite.matmul(weights, value)


# --- multi-head attention ----------------------------------------------------------------------

def _dtype_or_none(mask, name):
    if mask is None:
        return None
    if not isinstance(mask, pytorchlite.Tensor):
        raise TypeError(f"{name} must be a Tensor or None, not {type(mask).__name__}")
    return mask.dtype


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask (True = masked out) as an additive float mask of `target_type`; a float
    mask unchanged."""
    if mask is None:
        return None
    if not isinstance(mask, pytorchlite.Tensor):
        raise TypeError(f"{mask_name} must be a Tensor or None, not {type(mask).__name__}")
    if mask.dtype != pytorchlite.bool and not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both "
                      f"instead.", stacklevel=3)
    if not mask.is_floating_point():
        mask = pytorchlite.zeros_like(mask, dtype=target_type).masked_fill_(mask, _NEG_INF)
    return mask


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the input is batched (3-D query) or not (2-D), with PyTorch's checks."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                     f"but found {attn_mask.dim()}-D tensor instead")
            expected = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.dim() == 3 and tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query "
                         f"tensor")


def _pad_key_column(mask):
    """One more (zero: attend) column at the end of an additive mask, for an appended key."""
    if mask is None:
        return None
    return pytorchlite.cat([mask, mask.new_zeros(tuple(mask.shape[:-1]) + (1,))], -1)


def _in_projection(query, key, value, embed_dim, in_proj_weight, in_proj_bias, q_w, k_w, v_w):
    b_q = b_k = b_v = None
    if in_proj_bias is not None:
        b_q, b_k, b_v = in_proj_bias.chunk(3)
    if q_w is not None:
        return linear(query, q_w, b_q), linear(key, k_w, b_k), linear(value, v_w, b_v)
    # self-attention projects once with the packed weight; cross-attention with a shared
    # key/value source projects that source once for both
    if query is key and key is value:
        return linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
    w_q, w_k, w_v = in_proj_weight.chunk(3)
    q = linear(query, w_q, b_q)
    if key is value:
        b_kv = None if in_proj_bias is None else in_proj_bias[embed_dim:]
        k, v = linear(key, in_proj_weight[embed_dim:], b_kv).chunk(2, -1)
        return q, k, v
    return q, linear(key, w_k, b_k), linear(value, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """The computation of nn.MultiheadAttention on sequence-first (L, N, E) or unbatched
    (L, E) inputs; see that class. Returns (output, weights or None)."""
    fn = "multi_head_attention_forward"
    for i, (name, t) in enumerate((("query", query), ("key", key), ("value", value))):
        _check_tensor(fn, name, i + 1, t)
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]

    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       _dtype_or_none(attn_mask, "attn_mask"), "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        # the hint says attn_mask is the causal mask: let attention build it
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False

    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                                 f"{value.shape[:2]}")
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight is None")
        q, k, v = _in_projection(query, key, value, embed_dim, None, in_proj_bias, q_proj_weight, k_proj_weight,
                                 v_proj_weight)
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection(query, key, value, embed_dim, in_proj_weight, in_proj_bias, None, None, None)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if (bias_k is None) != (bias_v is None):
        raise AssertionError("bias_k is set but bias_v is None" if bias_v is None else
                             "bias_v is set but bias_k is None")
    if bias_k is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError(f"bias cannot be added to static {'key' if static_k is not None else 'value'}.")
        k = pytorchlite.cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = pytorchlite.cat([v, bias_v.expand(1, bsz, embed_dim)])
        attn_mask = _pad_key_column(attn_mask)
        key_padding_mask = _pad_key_column(key_padding_mask)

    # heads: (L, N, E) -> (N * heads, L, head_dim)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = _heads_or_static(k, static_k, "static_k", bsz * num_heads, head_dim)
    v = _heads_or_static(v, static_v, "static_v", bsz * num_heads, head_dim)
    if add_zero_attn:
        k = pytorchlite.cat([k, k.new_zeros((bsz * num_heads, 1, head_dim))], 1)
        v = pytorchlite.cat([v, v.new_zeros((bsz * num_heads, 1, head_dim))], 1)
        attn_mask = _pad_key_column(attn_mask)
        key_padding_mask = _pad_key_column(key_padding_mask)
    src_len = k.shape[1]

    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got {key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1).reshape(
            bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask

    if not training:
        dropout_p = 0.0

    if need_weights:
        # the weights are returned, so they are computed here (an all-masked row is NaN, as
        # in PyTorch's path)
        scores = pytorchlite.matmul(q * math.sqrt(1.0 / head_dim), k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = pytorchlite.softmax(scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p)
        out = pytorchlite.matmul(weights, v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, -1)
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights

    if attn_mask is not None:
        attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else attn_mask.view(bsz, num_heads, -1,
                                                                                           src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, -1)
    if not is_batched:
        out = out.squeeze(1)
    return out, None


def _heads_or_static(t, static, name, batch_heads, head_dim):
    if static is None:
        return t.reshape(t.shape[0], batch_heads, head_dim).transpose(0, 1)
    if static.size(0) != batch_heads:
        raise AssertionError(f"expecting {name}.size(0) of {batch_heads}, but got {static.size(0)}")
    if static.size(2) != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {static.size(2)}")
    return static
