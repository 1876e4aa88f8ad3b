"""Parameters to one flat vector and back, as torch.nn.utils.convert_parameters."""

import pytorchlite


def _check_same_device(param, old_device):
    if old_device is None:
        return param.device
    if param.device != old_device:
        raise TypeError(f"Found two parameters on different devices, this is currently not supported. "
                        f"({old_device} and {param.device})")
    return old_device


def parameters_to_vector(parameters):
    """Flatten `parameters` into one 1-D tensor (a copy, in order).

    >>> import pytorchlite
    >>> lin = pytorchlite.nn.Linear(2, 1)
    >>> pytorchlite.nn.utils.parameters_to_vector(lin.parameters()).shape
    pytorchlite.Size([3])
    """
    if isinstance(parameters, pytorchlite.Tensor):
        parameters = [parameters]
    params = list(parameters)
    device = None
    for p in params:
        device = _check_same_device(p, device)
    flat = [p.reshape(-1) for p in params]
    cat = getattr(pytorchlite, "cat", None)
    if cat is not None:
        return cat(flat)
    # Without a cat operator, fill a preallocated vector; this copy does not record autograd
    # history (PyTorch's, built on cat, does).
    if not flat:
        raise RuntimeError("parameters_to_vector: expected a non-empty list of Tensors")
    out = pytorchlite.empty(sum(f.numel() for f in flat), dtype=flat[0].dtype, device=flat[0].device)
    offset = 0
    with pytorchlite.no_grad():
        for f in flat:
            out[offset:offset + f.numel()].copy_(f)
            offset += f.numel()
    return out


def vector_to_parameters(vec, parameters):
    """Copy the slices of the 1-D tensor `vec` into `parameters` (their `.data`), in order.

    >>> import pytorchlite
    >>> w = pytorchlite.nn.Parameter(pytorchlite.zeros(2, 2))
    >>> pytorchlite.nn.utils.vector_to_parameters(pytorchlite.arange(4.), [w]); w.data
    tensor([[0., 1.],
            [2., 3.]])
    """
    if not isinstance(vec, pytorchlite.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    if isinstance(parameters, pytorchlite.Tensor):
        parameters = [parameters]
    device = None
    pointer = 0
    for p in parameters:
        device = _check_same_device(p, device)
        n = p.numel()
        p.data = vec[pointer:pointer + n].view_as(p).data
        pointer += n
