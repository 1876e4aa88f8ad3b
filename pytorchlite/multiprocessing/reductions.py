"""How tensors and storages cross process boundaries: registered with multiprocessing's
ForkingPickler (what Queue, Pipe, Pool and spawn'ed Process arguments pickle with), a
tensor is sent as a reference to its storage's shared-memory segment plus its geometry,
never as bytes. Plain pickle, copy and pytorchlite.save keep copying (Tensor.__reduce_ex__).

The segment travels as a file descriptor: `multiprocessing.reduction.DupFd` hands it to a
child being spawned directly, and otherwise through the sender's resource sharer (a Unix
socket passing descriptors with SCM_RIGHTS). As with PyTorch's "file_descriptor"
strategy, the sending process must still be alive when the receiver unpickles.
"""

from multiprocessing.reduction import DupFd, ForkingPickler

import pytorchlite
from pytorchlite._storage import Storage
from pytorchlite._tensor import Tensor, make
from pytorchlite.multiprocessing import _shared_storage


def reduce_storage(st):
    if st.device.type != "cpu":
        raise RuntimeError(f"pytorchlite.multiprocessing: cannot share {st.device} memory between processes "
                           "(CUDA IPC is not supported); move the tensor to the CPU first")
    _shared_storage.share_(st)
    seg = st._owner
    return (rebuild_storage, (DupFd(seg.fd), st.nbytes, seg.key))


def rebuild_storage(dupfd, nbytes, key):
    # detach() even when this process already maps the segment: it is what lets the
    # sender release its duplicate of the descriptor
    return _shared_storage.from_fd(dupfd.detach(), nbytes, key)


def reduce_tensor(t):
    if t._requires_grad and t.grad_fn is not None:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
                           "does not support crossing process boundaries.  If you just want to transfer the data, "
                           "call detach() on the tensor before serializing (e.g., putting it on the queue).")
    return (rebuild_tensor, (t._storage, t._shape, t._stride, t._offset, t._dtype.name, t._requires_grad))


def rebuild_tensor(storage, shape, stride, offset, dtype_name, requires_grad):
    t = make(storage, shape, stride, offset, getattr(pytorchlite, dtype_name))
    if requires_grad:
        t.requires_grad_(True)
    return t


def init_reductions():
    # exact types only: nn.Parameter pickles as Parameter(tensor.detach(), requires_grad)
    # and its tensor then comes through here
    ForkingPickler.register(Tensor, reduce_tensor)
    ForkingPickler.register(Storage, reduce_storage)
