"""Pickling tensors (Tensor.__reduce_ex__; copy.copy and copy.deepcopy have their own
methods on Tensor, as in torch). A tensor pickles as its dtype, shape, device and raw bytes
(a contiguous copy), and its user attributes (`t.tag = ...`) as the pickle state, restored
into the new tensor's __dict__ (as torch's pickles do); checkpoints on disk use
pytorchlite.save/load (safetensors) instead. Between processes, multiprocessing's
ForkingPickler shares the memory instead (multiprocessing/reductions.py)."""

import numpy as np


def reduce_tensor(t):
    import pytorchlite
    src = t.detach()
    if src.device.type != "cpu":
        src = src.cpu()
    flat = src.contiguous().reshape(-1)
    raw = flat.view(pytorchlite.uint8).numpy().tobytes() if flat.numel() else b""
    return (_rebuild_tensor, (raw, src.dtype.name, tuple(t.shape), bool(t.requires_grad), str(t.device)),
            t.__dict__ or None)


def _rebuild_tensor(raw, dtype_name, shape, requires_grad, device):
    import pytorchlite
    dtype = getattr(pytorchlite, dtype_name)
    if raw:
        # bytearray: the tensor owns a writable copy of the bytes
        t = pytorchlite.from_numpy(np.frombuffer(bytearray(raw), dtype=np.uint8))
        t = (t if dtype is pytorchlite.uint8 else t.view(dtype)).reshape(shape)
    else:
        t = pytorchlite.empty(shape, dtype=dtype)
    if device != "cpu":
        t = t.to(device)
    return t.requires_grad_(True) if requires_grad else t
