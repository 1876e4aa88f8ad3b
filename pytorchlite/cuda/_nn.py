"""The CUDA launchers of the nn operators that kernels/cuda/nn.cu implements (ops.yaml's
`structured:` entries name them for `cuda`): softmax / log_softmax and their gradients,
nll_loss (and nll_loss2d) forward and backward, max_pool2d with indices and its gradient.
Convolution is in pytorchlite/cuda/_conv.py. NOT YET RUN ON A GPU: the host side runs on
the CPU emulator (tests/cuda/test_gpu.py's TestNN under PTL_CUDA_EMULATOR=1).

The meta functions (pytorchlite/_kernels/nn.py) have made PyTorch's checks, chosen the
compute dtype (float32 or float64) and allocated the outputs; every tensor arrives
contiguous in that dtype. The kernels are not tuned: one thread per softmax row, pooling
output or gradient element, and a single thread for a reduced nll_loss (the CPU's
summation order).
"""

import struct

from pytorchlite.cuda import _launch

SOURCE = "nn"
_SFX = {"float32": "f32", "float64": "f64"}


def _ptr(t):
    return 0 if t is None else t._storage.ptr + t._offset * t._dtype.itemsize


def _numel(t):
    n = 1
    for s in t._shape:
        n *= s
    return n


def launch(op, kernel, t, n, args):
    """Launch `kernel`_<f32|f64> (the dtype of tensor t) over n work items on t's device
    and the current stream; an empty problem launches nothing."""
    if n <= 0:
        return
    from pytorchlite.cuda import _runtime
    k = _launch.kernels_for(t._device.index or 0)
    k.launch(op, SOURCE, f"{kernel}_{_SFX[t._dtype.name]}", n, args, _runtime.current_stream_handle(k.index))


# --- softmax rows ----------------------------------------------------------------------------------

def _softmax(op, m, x, y, is_log):
    a = _launch.Args().i64(m.outer).i64(m.n).i64(m.inner).ptr(_ptr(x)).ptr(_ptr(y)).i32(is_log)
    launch(op, "ptl_cu_softmax_fwd", y, m.outer * m.inner if m.n else 0, a)


def softmax(m, self, result):
    _softmax("_softmax", m, self, result, 0)


def log_softmax(m, self, result):
    _softmax("_log_softmax", m, self, result, 1)


def _softmax_backward(op, m, g, y, gx, is_log):
    a = _launch.Args().i64(m.outer).i64(m.n).i64(m.inner).ptr(_ptr(g)).ptr(_ptr(y)).ptr(_ptr(gx)).i32(is_log)
    launch(op, "ptl_cu_softmax_bwd", gx, m.outer * m.inner if m.n else 0, a)


def softmax_backward(m, grad_output, output, result):
    _softmax_backward("_softmax_backward_data", m, grad_output, output, result, 0)


def log_softmax_backward(m, grad_output, output, result):
    _softmax_backward("_log_softmax_backward_data", m, grad_output, output, result, 1)


# --- nll_loss ----------------------------------------------------------------------------------------

def _bad_flag(device, ignore):
    """An int64 on the device that the kernel overwrites with an out-of-range target;
    it starts as ignore_index, which no out-of-range target can be."""
    from pytorchlite import _dtype as D
    from pytorchlite._core import empty, fill
    t = empty((1,), D.int64, device)
    fill(t, ignore)
    return t


def _check_bad(bad, ignore):
    # the one host read of nll_loss: kernels/nn.c raises IndexError before computing, and
    # an error here must name the same target (PyTorch's CUDA kernel asserts instead)
    v = bad.item()
    if v != ignore:
        raise IndexError(f"Target {v} is out of bounds.")


def nll_loss_forward(m, self, target, weight, output, total_weight):
    bad = _bad_flag(self._device, m.ignore)
    a = _launch.Args().i64(m.N).i64(m.C).i64(m.D).ptr(_ptr(self)).ptr(_ptr(target)).i32(m.t_u8).ptr(_ptr(weight))
    a.i64(m.ignore)
    if m.reduction == 0:
        a.ptr(_ptr(output)).ptr(_ptr(bad))
        launch("nll_loss_forward", "ptl_cu_nll_fwd_none", output, m.N * m.D, a)
        from pytorchlite._core import fill
        fill(total_weight, 0)
    else:
        a.i32(int(m.reduction == 1)).ptr(_ptr(output)).ptr(_ptr(total_weight)).ptr(_ptr(bad))
        launch("nll_loss_forward", "ptl_cu_nll_fwd_reduce", output, 1, a)
    _check_bad(bad, m.ignore)


def nll_loss_backward(m, grad_output, self, target, weight, total_weight, result):
    a = _launch.Args().i64(m.N).i64(m.C).i64(m.D).ptr(_ptr(grad_output)).ptr(_ptr(target)).i32(m.t_u8)
    a.ptr(_ptr(weight)).i64(m.ignore).i32(m.reduction).ptr(_ptr(total_weight)).ptr(_ptr(result))
    launch("nll_loss_backward", "ptl_cu_nll_bwd", result, m.N * m.C * m.D, a)


# --- max_pool2d --------------------------------------------------------------------------------------

def pool_geometry(p):
    """The bytes of nn.cu's pool_geom (13 int64: nc, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw)."""
    return struct.pack("<13q", *p)


def max_pool2d_with_indices(m, self, result0, result1):
    a = _launch.Args().blob(pool_geometry(m.geometry)).ptr(_ptr(self)).ptr(_ptr(result0)).ptr(_ptr(result1))
    launch("max_pool2d_with_indices", "ptl_cu_maxpool2d_fwd", result0, _numel(result0), a)


def max_pool2d_with_indices_backward(m, grad_output, self, indices, result):
    a = _launch.Args().blob(pool_geometry(m.geometry)).ptr(_ptr(grad_output)).ptr(_ptr(indices)).ptr(_ptr(result))
    launch("max_pool2d_with_indices_backward", "ptl_cu_maxpool2d_bwd", result, _numel(result), a)
