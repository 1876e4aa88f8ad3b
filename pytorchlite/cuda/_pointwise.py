"""The CUDA entries of pointwise operators, fill and copy (called from pytorchlite.cuda).

NOT YET RUN ON A GPU: this mirrors the CPU path of pytorchlite/_kernels/pointwise.py
(dtypes, broadcasting, out= and in-place rules) and launches the generated kernels of
generated/pointwise.cu and kernels/cuda/fill_copy.cu through _launch.DeviceKernels. Its
planning is unit-tested with a fake driver, and tests/cuda/test_gpu.py passes on the CPU
emulator (PTL_CUDA_EMULATOR=1); no kernel has executed on a device.

Differences from the CPU path, as in PyTorch's CUDA backend: an integer division by zero
does not raise (the kernels give 0), and no check reads device memory.
"""

from pytorchlite.cuda import _launch, _runtime
from pytorchlite._core import TensorBase as Tensor, broadcast_shapes, copy_into, empty as _empty, expand_strides, scalar_pair as _scalar_arg


def _ptr(t):
    return t._storage.ptr + t._offset * t._dtype.itemsize


def _stream(index):
    return _runtime.current_stream_handle(index)


def _scalar_pair(v):
    return _scalar_arg(v)


def fill(t, value):
    """t[...] = value on t's device (ptl_cu_fill_<dtype>)."""
    k = _launch.kernels_for(t._device.index or 0)
    d, i = _scalar_pair(value)
    blob = _launch.pack_scalars([(d, i)])[:16]        # one ptl_scalar
    k.run_elementwise("fill_", "fill_copy", f"ptl_cu_fill_{_launch.SUFFIX[t._dtype.code]}", t._shape,
                      [(t._dtype.itemsize, list(t._stride))], [_ptr(t)], (lambda a: a.blob(blob),),
                      _stream(k.index))
    return t


def _same_layout(dst, src):
    """Whether dst[...] = src is a plain byte copy: same dtype and shape, both contiguous."""
    return (dst._dtype is src._dtype and dst._shape == src._shape and dst.is_contiguous()
            and src.is_contiguous())


def copy_device(dst, src):
    """dst[...] = src with both on the same CUDA device (src broadcast to dst's shape,
    converted to dst's dtype): cuMemcpyDtoDAsync for a plain byte copy, else one
    fill_copy kernel."""
    k = _launch.kernels_for(dst._device.index or 0)
    if _same_layout(dst, src):
        nbytes = dst.numel() * dst._dtype.itemsize
        if nbytes:
            k.make_current()
            k._ok(k.d.cuMemcpyDtoDAsync(_ptr(dst), _ptr(src), nbytes, k.d.CUstream(_stream(k.index))),
                  "cuMemcpyDtoDAsync")
        return
    shape = dst._shape
    sst = list(src._stride) if src._shape == shape else expand_strides(src, shape)
    base = f"ptl_cu_copy_{_launch.SUFFIX[dst._dtype.code]}_{_launch.SUFFIX[src._dtype.code]}"
    k.run_elementwise("copy_", "fill_copy", base, shape,
                      [(dst._dtype.itemsize, list(dst._stride)), (src._dtype.itemsize, sst)],
                      [_ptr(dst), _ptr(src)], (), _stream(k.index))


def _fill_exact(dst, src):
    """Whether a one-element host `src` copied into `dst` may be a fill with src.item():
    the fill converts through (double, int64) as the copy kernel converts the value, except
    for an int64 beyond 2^53 going into a float type (double rounding)."""
    if not (dst._dtype.is_floating_point and src._dtype.code == 5):
        return True
    return abs(src.item()) <= 2 ** 53


def copy(dst, src, non_blocking=False):
    """dst[...] = src where one side or both are on a CUDA device. Host <-> device copies
    move bytes directly when both sides have the same dtype, shape and a contiguous
    layout; otherwise through a contiguous staging tensor of dst's dtype and shape (converted
    and broadcast on the host before the upload, on the device before the download). A
    one-element host source is broadcast on the device by the fill kernel. The host waits
    for every copy, as PyTorch does for pageable memory (only pinned memory makes
    non_blocking asynchronous)."""
    if dst._device.type == "cuda" and src._device.type == "cuda":
        if dst._device != src._device:
            # peer copies: through the host (correct, not fast)
            tmp = _empty(dst._shape, dst._dtype, _cpu())
            copy(tmp, src)
            return copy(dst, tmp)
        return copy_device(dst, src)
    if dst.numel() == 0:
        return None
    if dst._device.type == "cuda":               # host -> device
        if src.numel() == 1 and _fill_exact(dst, src):
            fill(dst, src.item())
            return None
        k = _launch.kernels_for(dst._device.index or 0)
        if _same_layout(dst, src):
            stage = src
        else:
            stage = _empty(dst._shape, dst._dtype, _cpu())
            copy_into(stage, src)                # convert and broadcast on the host
        target = dst if dst.is_contiguous() else _empty(dst._shape, dst._dtype, dst._device)
        k.make_current()
        stream = _stream(k.index)
        k.memcpy("HtoD", _ptr(target), _ptr(stage), stage.numel() * stage._dtype.itemsize, stream)
        # the source is pageable host memory that may be freed or changed on return
        k._ok(k.d.cuStreamSynchronize(k.d.CUstream(stream)), "cuStreamSynchronize")
        if target is not dst:
            copy_device(dst, target)
        return None
    # device -> host
    k = _launch.kernels_for(src._device.index or 0)
    if src._dtype is dst._dtype and src._shape == dst._shape and src.is_contiguous():
        dev_stage = src
    else:
        dev_stage = _empty(dst._shape, dst._dtype, src._device)
        copy_device(dev_stage, src)              # convert and broadcast on the device
    host = dst if dst.is_contiguous() else _empty(dst._shape, dst._dtype, _cpu())
    k.make_current()
    stream = _stream(k.index)
    k.memcpy("DtoH", _ptr(host), _ptr(dev_stage), host.numel() * dst._dtype.itemsize, stream)
    k._ok(k.d.cuStreamSynchronize(k.d.CUstream(stream)), "cuStreamSynchronize")
    if host is not dst:
        copy_into(dst, host)
    return None


def _cpu():
    from pytorchlite._device import CPU
    return CPU


def _scalar_operand(v, dtype, device):
    t = _empty((), dtype, device)
    return fill(t, v)


def run_pointwise(op, operands, scalars, out, inplace, common, out_dt, device):
    """The CUDA half of pointwise.run: dtypes are decided (common, out_dt) and checked by
    the caller; here: shapes, casts, the output (as on the CPU: pointwise.prepare_operands),
    and the generated kernel launch."""
    from pytorchlite._kernels.pointwise import finish_output, prepare_operands
    if any(isinstance(x, Tensor) and x._device.type != "cuda" for x in operands):
        # a 0-d host tensor joins a CUDA computation as a scalar (as in PyTorch): its
        # value goes to the device, where the kernel can read it
        operands = [_scalar_operand(x.item(), x._dtype, device) if isinstance(x, Tensor) and x._device.type != "cuda"
                    else x for x in operands]
    tensors = [x for x in operands if isinstance(x, Tensor)]
    shape = broadcast_shapes(op.name, [t._shape for t in tensors]) if tensors else ()
    if out is not None and not inplace and isinstance(out, Tensor) and out._device != device:
        raise RuntimeError(f"Expected out tensor to have device {device}, but got {out._device} instead")
    ins, target, dest = prepare_operands(op, operands, out, inplace, common, out_dt, device, shape, _scalar_operand)
    launch_pointwise(op.name, common.code, dest, ins, shape, [_scalar_pair(v) for v in scalars])
    return finish_output(target, dest)


def launch_pointwise(op_name, dtype_code, dest, ins, shape, scalar_pairs):
    """Launch ptl_cu_<op>_<dtype>_{c32,s32,s64} for dest = op(ins) over `shape`."""
    k = _launch.kernels_for(dest._device.index or 0)
    operands = [(dest._dtype.itemsize, list(dest._stride))]
    ptrs = [_ptr(dest)]
    for t in ins:
        operands.append((t._dtype.itemsize, list(t._stride) if t._shape == shape else expand_strides(t, shape)))
        ptrs.append(_ptr(t))
    extra = ()
    if scalar_pairs:
        blob = _launch.pack_scalars(scalar_pairs)
        extra = (lambda a: a.blob(blob),)
    return k.run_elementwise(op_name, "pointwise", f"ptl_cu_{op_name}_{_launch.SUFFIX[dtype_code]}", shape,
                             operands, ptrs, extra, _stream(k.index))
