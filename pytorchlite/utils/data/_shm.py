"""Moving a worker's batch to the main process through shared memory.

The batch is pickled with every tensor replaced by a reference (pickle's persistent_id);
the tensors' bytes go into one file in /dev/shm (a named segment, see
pytorchlite/multiprocessing/_segment.py), which the main process maps and unlinks at
once, so its tensors are views of that mapping: the data is copied once, in the worker,
instead of being pickled through a pipe. The file disappears from the file system as soon
as the main process has it open; the memory is freed when the last tensor over it goes.

Files are named <prefix><worker>_<n>, with a prefix unique to one loader iterator, so the
main process can remove what a killed worker left behind (see `remove_leftovers`).
"""

import glob
import io
import os
import pickle

import numpy as np

import pytorchlite
from pytorchlite.multiprocessing import _segment
from pytorchlite.multiprocessing._segment import shm_dir  # noqa: F401  (the loader names its files there)

_ALIGN = 64


class _Pickler(pickle.Pickler):
    def __init__(self, buf):
        super().__init__(buf, protocol=pickle.HIGHEST_PROTOCOL)
        self.tensors = []

    def persistent_id(self, obj):
        if isinstance(obj, pytorchlite.Tensor):
            self.tensors.append(obj)
            return len(self.tensors) - 1
        return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, buf, tensors):
        super().__init__(buf)
        self._tensors = tensors

    def persistent_load(self, pid):
        return self._tensors[pid]


def encode(obj, path):
    """(pickled structure, path or None, per-tensor metadata) for `obj`, with the tensors'
    bytes written to a new file at `path`."""
    buf = io.BytesIO()
    p = _Pickler(buf)
    p.dump(obj)
    metas, flats, offset = [], [], 0
    for t in p.tensors:
        src = t.detach()
        if src.device.type != "cpu":
            src = src.cpu()
        flat = src.contiguous().reshape(-1)
        nbytes = flat.numel() * flat.dtype.itemsize
        metas.append((offset, nbytes, flat.dtype.name, tuple(t.shape), bool(t.requires_grad),
                      isinstance(t, pytorchlite.nn.Parameter)))
        flats.append(flat)
        offset += (nbytes + _ALIGN - 1) // _ALIGN * _ALIGN
    if offset == 0:
        return buf.getvalue(), None, metas
    seg = _segment.create_named(path, offset)
    try:
        dst = np.asarray(seg)
        for (off, nbytes, *_), flat in zip(metas, flats):
            if nbytes:
                dst[off:off + nbytes] = flat.view(pytorchlite.uint8).numpy()
    except BaseException:
        os.unlink(path)
        raise
    return buf.getvalue(), path, metas


def decode(payload):
    """The object `encode` described, its tensors over the (now unlinked) shared file."""
    data, path, metas = payload
    tensors = []
    if path is not None:
        whole = np.asarray(_segment.open_named(path))   # keeps the mapping alive while any tensor does
    for off, nbytes, dtype_name, shape, requires_grad, is_param in metas:
        dtype = getattr(pytorchlite, dtype_name)
        if nbytes:
            t = pytorchlite.from_numpy(whole[off:off + nbytes])
            t = (t if dtype is pytorchlite.uint8 else t.view(dtype)).reshape(shape)
        else:
            t = pytorchlite.empty(shape, dtype=dtype)
        if is_param:
            t = pytorchlite.nn.Parameter(t, requires_grad=requires_grad)
        elif requires_grad:
            t.requires_grad_(True)
        tensors.append(t)
    return _Unpickler(io.BytesIO(data), tensors).load()


def discard(payload):
    """Free a payload that will not be decoded."""
    path = payload[1]
    if path is not None:
        try:
            os.unlink(path)
        except OSError:
            pass


def remove_leftovers(prefix):
    for path in glob.glob(glob.escape(prefix) + "*"):
        try:
            os.unlink(path)
        except OSError:
            pass
