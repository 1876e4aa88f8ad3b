"""The CUDA launchers of the GEMM operators (ops.yaml `structured:` entries name them for
`cuda`): mm, bmm, addmm, baddbmm and matmul's broadcast batched product, through cuBLAS
(pytorchlite/cuda/_cublas.py; NOT YET RUN ON A GPU, see there). The meta functions
(pytorchlite/_kernels/linalg.py) have made PyTorch's checks and allocated the output;
addmm / baddbmm's output already holds `self` (ops.yaml `init:`) when beta is not 0.
"""

import threading

from pytorchlite.cuda import _cublas

_lock = threading.Lock()
_handles = None


def _library():
    """cuBLAS (or the emulator's stand-in) and its per-thread handles, loaded once."""
    global _handles
    if _handles is None:
        with _lock:
            if _handles is None:
                from pytorchlite.cuda import _emulator
                lib = _emulator.cublas() if _emulator.enabled() else _cublas.load_library()
                _handles = _cublas.Handles(lib)
    return _handles


def _ptr(t):
    return t._storage.ptr + t._offset * t._dtype.itemsize


def _strides3(t):
    """(batch, row, column) strides of a 2-D or 3-D tensor."""
    return tuple(t._stride) if len(t._shape) == 3 else (0,) + tuple(t._stride)


def _contiguous(t):
    from pytorchlite._core import copy_into, empty
    c = empty(t._shape, t._dtype, t._device)
    copy_into(c, t)
    return c


def gemm(op, a, b, c, alpha=1.0, beta=0.0):
    """c = alpha * a @ b + beta * c on CUDA for 2-D or 3-D (batched) a, b, c of one
    floating dtype; operands cuBLAS cannot read as they are are copied first."""
    name = a._dtype.name
    if name not in _cublas.DTYPES:
        # PyTorch's CUDA GEMM has no integer kernels either
        raise RuntimeError(f"{op}(): \"addmm_cuda\" not implemented for '{a._dtype._torch_name}'")
    batch = a._shape[0] if len(a._shape) == 3 else 1
    m, k = a._shape[-2], a._shape[-1]
    n = b._shape[-1]
    if batch == 0 or m == 0 or n == 0:
        return c
    target = c
    p, copy = _cublas.plan_gemm(batch, m, n, k, _strides3(a), _strides3(b), _strides3(c))
    if copy:
        a = _contiguous(a) if "a" in copy else a
        b = _contiguous(b) if "b" in copy else b
        if "c" in copy:
            c = _contiguous(c)      # (holds c's values: beta may read them)
        p, copy = _cublas.plan_gemm(batch, m, n, k, _strides3(a), _strides3(b), _strides3(c))
        assert not copy, copy
    from pytorchlite.cuda import _launch, _runtime
    index = c._device.index or 0
    # cuBLAS works in the context current on this thread: the device's primary context,
    # which the kernels use as well
    _launch.kernels_for(index).make_current()
    handles = _library()
    h = handles.get(index, _runtime.current_stream_handle(index))
    _cublas.gemm(handles.lib, h, name, p, _ptr(a), _ptr(b), _ptr(c), alpha, beta)
    if c is not target:
        from pytorchlite._core import copy_into
        copy_into(target, c)
    return target


# --- the launchers ops.yaml names (called with the meta result and the operands by name) ---------

def mm(m, self, mat2, result):
    gemm("mm", self, mat2, result)


def bmm(m, self, mat2, result):
    gemm("bmm", self, mat2, result)


def addmm(m, self, mat1, mat2, result):
    gemm("addmm", mat1, mat2, result, m.alpha_d, m.beta_d if m.seed is not None else 0.0)


def baddbmm(m, self, batch1, batch2, result):
    gemm("baddbmm", batch1, batch2, result, m.alpha_d, m.beta_d if m.seed is not None else 0.0)


def matmul(m, self, other, result):
    """The broadcast batched product of matmul_meta: self (*batch, n, k), other
    (*batch, k, p), result (*batch, n, p), contiguous; the batch dims flatten into one."""
    from pytorchlite._core import make
    n, k = self._shape[-2], self._shape[-1]
    p = other._shape[-1]
    nb = 1
    for s in self._shape[:-2]:
        nb *= s

    def flat(t, r, c):
        return make(t._storage, (nb, r, c), (r * c, c, 1), t._offset, t._dtype, None, True)
    gemm("matmul", flat(self, n, k), flat(other, k, p), flat(result, n, p))
