"""Composite operators of pytorchlite.nn.functional: gelu's two forms, hardtanh,
group_norm, batch_norm and embedding, written in other operators."""

from pytorchlite._ops import ops as F


def gelu(self, *, approximate="none"):
    if approximate == "none":
        return F._gelu_erf(self)
    if approximate == "tanh":
        return F._gelu_tanh(self)
    raise RuntimeError("approximate argument must be either none or tanh.")


def hardtanh(self, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return self._hardtanh_(min_val, max_val) if inplace else F._hardtanh(self, min_val, max_val)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    if input.dim() < 2 or input.shape[1] % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input "
                           f"of shape {list(input.shape)} and num_groups={num_groups}")
    x = input.reshape((input.shape[0], num_groups, -1))
    out = F.native_layer_norm(x, [x.shape[2]], None, None, eps)[0].reshape(input.shape)
    return _affine(input, out, weight, bias)


def _affine(input, out, weight, bias):
    """out * weight + bias, the per-channel (dim 1) parameters broadcast over the rest."""
    shape = (1, input.shape[1]) + (1,) * (input.dim() - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    dims = (0,) + tuple(range(2, input.dim()))
    shape = (1, input.shape[1]) + (1,) * (input.dim() - 2)
    if training:
        mean = input.mean(dims)
        var = input.var(dims, correction=0)
        count = input.numel() // input.shape[1]
        # running statistics: a no-grad exponential average; the variance is unbiased
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.detach(), alpha=momentum)
        if running_var is not None:
            running_var.mul_(1 - momentum).add_(var.detach() * (count / (count - 1 if count > 1 else 1)),
                                                alpha=momentum)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        mean, var = running_mean, running_var
    out = (input - mean.reshape(shape)) * (var.reshape(shape) + eps).rsqrt()
    return _affine(input, out, weight, bias)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    if len(weight.shape) != 2:
        raise RuntimeError("'weight' must be 2-D")
    if indices.dtype.is_floating_point or indices.dtype.name == "bool":
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {indices.type()} instead (while checking arguments for embedding)")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding(): scale_grad_by_freq and sparse are not supported")
    out = weight.index_select(0, indices.reshape(-1)).reshape(tuple(indices.shape) + (weight.shape[1],))
    if padding_idx >= 0:
        # the padding row reads as usual but gets no gradient
        out = F.where((indices != padding_idx).unsqueeze(-1), out, out.detach())
    return out
