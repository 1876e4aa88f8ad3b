"""Kernel entries for the neural-network operators: _softmax / _log_softmax and their
backward, convolution (1-D and 2-D, plain and transposed) and convolution_backward, max /
average / adaptive average 2-D pooling and their backward (see docs/architecture.md).

Each entry checks its arguments with PyTorch's messages, makes the operands contiguous,
allocates the result and calls kernels/nn.c with integer addresses and a geometry array.
The C kernels compute in float32 or float64; float16 and bfloat16 inputs are widened to
float32 and the result rounded once, as PyTorch's CPU kernels accumulate in float.
"""

from pytorchlite import _dtype as D
from pytorchlite._C import check, ffi, lib
from pytorchlite._kernels.copy import contiguous as _contiguous
from pytorchlite._core import empty as _empty, to_dtype
from pytorchlite._argparse import wrap_dim
from pytorchlite._core import contiguous_strides
from pytorchlite._structured import Meta
from pytorchlite._views import make_view

_F32, _F64 = D.float32, D.float64
_HALF = (D.float16, D.bfloat16)


def _addr(t):
    return t._storage.ptr + t._offset * t._dtype.itemsize


def _not_implemented(name, dtype):
    return NotImplementedError(f"\"{name}\" not implemented for '{dtype._torch_name}'")


def _compute(t, name):
    """A contiguous float32/float64 operand; float16/bfloat16 widen to float32."""
    if t._device.type != "cpu":
        raise NotImplementedError(f"{name}(): no kernel for device '{t._device.type}'")
    if t._dtype in _HALF:
        return to_dtype(t, _F32)
    if t._dtype not in (_F32, _F64):
        raise _not_implemented(name, t._dtype)
    return _contiguous(t)


def _finish(out, dtype):
    """The float32 result of a widened computation, rounded back to `dtype`."""
    if out._dtype is dtype:
        return out
    return to_dtype(out, dtype)


def _reshape(t, shape):
    return make_view(t, tuple(shape), contiguous_strides(tuple(shape)), t._offset)


# --- softmax (structured: ops.yaml declares the C calls) ----------------------------------------

def _rows(shape, d):
    """(outer, n, inner): the softmax rows of `shape` along dim d."""
    outer = inner = 1
    for s in shape[:d]:
        outer *= s
    for s in shape[d + 1:]:
        inner *= s
    return outer, (shape[d] if shape else 1), inner


def _compute_dtype(dtype):
    """The kernels compute in float32 or float64: float16 and bfloat16 widen to float32."""
    return _F32 if dtype in _HALF else dtype


def _softmax_meta(op, is_log, self, dim, half_to_float):
    if half_to_float:
        raise RuntimeError("softmax with half to float conversion is not supported on CPU")
    nd = len(self._shape)
    d = wrap_dim(op, dim, nd) if nd else wrap_dim(op, dim, 1)
    if not self._dtype.is_floating_point:
        kind = "lastdim_kernel_impl" if nd == 0 or d == nd - 1 else "kernel_impl"
        raise _not_implemented(("log_softmax_" if is_log else "softmax_") + kind, self._dtype)
    outer, n, inner = _rows(self._shape, d)
    return Meta((self._shape, self._dtype), compute=_compute_dtype(self._dtype), outer=outer, n=n, inner=inner)


def softmax_meta(self, dim, half_to_float):
    return _softmax_meta("_softmax", False, self, dim, half_to_float)


def log_softmax_meta(self, dim, half_to_float):
    return _softmax_meta("_log_softmax", True, self, dim, half_to_float)


def _softmax_backward_meta(op, grad_output, output, dim, input_dtype):
    if grad_output._shape != output._shape:
        raise RuntimeError(f"{op}(): grad_output of shape {list(grad_output._shape)} does not match output of "
                           f"shape {list(output._shape)}")
    nd = len(output._shape)
    d = wrap_dim(op, dim, nd) if nd else wrap_dim(op, dim, 1)
    for t in (output, grad_output):
        if not t._dtype.is_floating_point:
            raise _not_implemented(op, t._dtype)
    outer, n, inner = _rows(output._shape, d)
    # grad_output is read in the output's compute dtype
    return Meta((output._shape, output._dtype), compute=_compute_dtype(output._dtype), outer=outer, n=n,
                inner=inner)


def softmax_backward_meta(grad_output, output, dim, input_dtype):
    return _softmax_backward_meta("_softmax_backward_data", grad_output, output, dim, input_dtype)


def log_softmax_backward_meta(grad_output, output, dim, input_dtype):
    return _softmax_backward_meta("_log_softmax_backward_data", grad_output, output, dim, input_dtype)


# --- nll_loss --------------------------------------------------------------------------------

def _nll_geometry(op, self, target, weight, spatial):
    """(N, C, D, output shape for reduction 'none') after PyTorch's checks."""
    xs, ts = tuple(self._shape), tuple(target._shape)
    if target._dtype not in (D.int64, D.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {target._dtype._torch_name}")
    if not self._dtype.is_floating_point:
        raise _not_implemented("nll_loss2d_forward_out_frame" if spatial else "nll_loss_out_frame", self._dtype)
    if spatial:
        if len(xs) != 4:
            raise RuntimeError(f"only batches of spatial inputs supported (4D tensors), but got input of "
                               f"dimension: {len(xs)}")
        if len(ts) != 3:
            raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got targets of "
                               f"dimension: {len(ts)}")
        if ts != (xs[0],) + xs[2:]:
            raise RuntimeError(f"size mismatch (got input: {list(xs)} , target: {list(ts)}")
        n, c, d, none_shape = xs[0], xs[1], xs[2] * xs[3], ts
    else:
        if len(xs) not in (1, 2):
            raise RuntimeError("input tensor should be 1D or 2D")
        if len(ts) > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if len(xs) == 1:
            if ts not in ((), (1,)):
                raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {ts[0]}")
            n, c, none_shape = 1, xs[0], ()
        else:
            if ts != (xs[0],):
                raise RuntimeError(f"size mismatch (got input: {list(xs)}, target: {list(ts)})")
            n, c, none_shape = xs[0], xs[1], ts
        d = 1
    if weight is not None:
        if weight.numel() != c:
            raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no classes but got "
                               f"weight tensor of shape: {list(weight._shape)}")
        if weight._dtype is not self._dtype:
            raise RuntimeError(f"expected scalar type {self._dtype._torch_name} but found "
                               f"{weight._dtype._torch_name}")
    return n, c, d, none_shape


def _nll_run(op, backward, src, self, target, weight, reduction, ignore_index, geometry, out, total):
    if reduction not in (0, 1, 2):
        raise RuntimeError(f"{op}(): reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction}")
    n, c, d, _ = geometry
    t = _contiguous(target)
    w = _compute(weight, op) if weight is not None else None
    bad = ffi.new("int64_t[1]")
    status = lib.ptl_nll_loss(int(backward), src._dtype.code, _addr(src), _addr(t), int(t._dtype is D.uint8),
                              _addr(w) if w is not None else 0, n, c, d, reduction, ignore_index,
                              _addr(out), _addr(total), bad)
    if status == 5:
        raise IndexError(f"Target {bad[0]} is out of bounds.")
    check(status, op)


def _nll_forward(op, self, target, weight, reduction, ignore_index, spatial):
    geometry = _nll_geometry(op, self, target, weight, spatial)
    x = _compute(self, op)
    out = _empty(geometry[3] if reduction == 0 else (), x._dtype, self._device)
    total = _empty((), x._dtype, self._device)
    _nll_run(op, False, x, self, target, weight, reduction, ignore_index, geometry, out, total)
    return _finish(out, self._dtype), _finish(total, self._dtype)


def _nll_backward(op, grad_output, self, target, weight, reduction, ignore_index, total_weight, spatial):
    geometry = _nll_geometry(op, self, target, weight, spatial)
    if total_weight.numel() != 1:
        raise RuntimeError(f"expected total_weight to be a  single element tensor, got: "
                           f"{list(total_weight._shape)} ({total_weight.numel()} elements)")
    if reduction == 0 and tuple(grad_output._shape) != tuple(geometry[3]):
        raise RuntimeError(f"{op}(): expected grad_output of size {list(geometry[3])}, but got "
                           f"{list(grad_output._shape)}")
    if reduction != 0 and grad_output.numel() != 1:
        raise RuntimeError(f"Expected a single element grad_output tensor, but got: {list(grad_output._shape)}")
    g = _compute(grad_output, op)
    tw = _compute(total_weight, op)
    if g._dtype is not tw._dtype or g._dtype is not _compute_dtype(self._dtype):
        raise RuntimeError(f"expected scalar type {self._dtype._torch_name} but found "
                           f"{grad_output._dtype._torch_name}")
    gx = _empty(self._shape, g._dtype, self._device)
    _nll_run(op, True, g, self, target, weight, reduction, ignore_index, geometry, gx, tw)
    return _finish(gx, self._dtype)


def _compute_dtype(dtype):
    return _F32 if dtype in _HALF else dtype


def nll_loss_forward(self, target, weight, reduction, ignore_index):
    return _nll_forward("nll_loss_forward", self, target, weight, reduction, ignore_index, False)


def nll_loss2d_forward(self, target, weight, reduction, ignore_index):
    return _nll_forward("nll_loss2d_forward", self, target, weight, reduction, ignore_index, True)


def nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight):
    return _nll_backward("nll_loss_backward", grad_output, self, target, weight, reduction, ignore_index,
                         total_weight, False)


def nll_loss2d_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight):
    return _nll_backward("nll_loss2d_backward", grad_output, self, target, weight, reduction, ignore_index,
                         total_weight, True)


# --- convolution -----------------------------------------------------------------------------

def _expand_param(name, v, k):
    v = tuple(v)
    if len(v) == 1:
        v = v * k
    if len(v) != k:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {k} values to match the "
                           f"convolution dimensions, but got {name}={list(v)}")
    return v


def _conv_params(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """Checks of at::convolution; returns (k, stride, padding, dilation, output_padding)."""
    nd = len(input._shape)
    k = nd - 2
    if k not in (1, 2):
        raise NotImplementedError(f"convolution(): only 1-D and 2-D convolutions are implemented, got input of "
                                  f"size {list(input._shape)}")
    stride = _expand_param("stride", stride, k)
    padding = _expand_param("padding", padding, k)
    dilation = _expand_param("dilation", dilation, k)
    output_padding = _expand_param("output_padding", output_padding, k)
    if len(weight._shape) != nd:
        raise RuntimeError(f"Expected {nd}-dimensional input for {nd}-dimensional weight {list(weight._shape)}, but "
                           f"got {len(weight._shape)}-dimensional input of size {list(input._shape)} instead")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if input._dtype is not weight._dtype:
        raise RuntimeError(f"Input type ({input.type()}) and weight type ({weight.type()}) should be the same or "
                           f"input should be a MKLDNN tensor and weight is a dense tensor")
    if bias is not None and bias._dtype is not input._dtype:
        raise RuntimeError(f"Input type ({input.type()}) and bias type ({bias.type()}) should be the same or "
                           f"input should be a MKLDNN tensor and weight is a dense tensor")
    ws, xs = list(weight._shape), list(input._shape)
    if not transposed:
        if ws[0] % groups:
            raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                               f"but got weight of size {ws} instead")
        if xs[1] != ws[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {ws}, expected input{xs} to have "
                               f"{ws[1] * groups} channels, but got {xs[1]} channels instead")
        if bias is not None and (len(bias._shape) != 1 or bias._shape[0] != ws[0]):
            raise RuntimeError(f"Given weight of size {ws}, expected bias to be 1-dimensional with {ws[0]} elements, "
                               f"but got bias of size {list(bias._shape)} instead")
        padded = [xs[2 + i] + 2 * padding[i] for i in range(k)]
        eff = [dilation[i] * (ws[2 + i] - 1) + 1 for i in range(k)]
        if any(p < e for p, e in zip(padded, eff)):
            raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                               f"size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than actual "
                               f"input size")
    else:
        if xs[1] != ws[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {ws}, expected input{xs} to have {ws[0]} "
                               f"channels, but got {xs[1]} channels instead")
        if ws[0] % groups:
            raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                               f"but got weight of size {ws} instead")
        if bias is not None and (len(bias._shape) != 1 or bias._shape[0] != ws[1] * groups):
            raise RuntimeError(f"Given transposed=1, weight of size {ws}, expected bias to be 1-dimensional with "
                               f"{ws[1] * groups} elements, but got bias of size {list(bias._shape)} instead")
        for i in range(k):
            if output_padding[i] >= stride[i] and output_padding[i] >= dilation[i]:
                raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                                   f"output_padding: {output_padding[i]}, stride: {stride[i]}, dilation: "
                                   f"{dilation[i]}")
    return k, stride, padding, dilation, output_padding


def _as2d(v, k, fill):
    return (fill,) + tuple(v) if k == 1 else tuple(v)


def _geometry(x_shape, w_shape, y_shape, k, stride, padding, dilation, groups, transposed):
    """The int64 geometry array of ptl_conv2d for the core (non-transposed) convolution:
    for a transposed convolution its output is the core's input and vice versa."""
    if transposed:
        x_shape, y_shape = y_shape, x_shape
    sp = lambda s: (1,) + tuple(s[2:]) if k == 1 else tuple(s[2:])  # noqa: E731
    xh, xw = sp(x_shape)
    yh, yw = sp(y_shape)
    kh, kw = sp(w_shape)
    sh, sw = _as2d(stride, k, 1)
    ph, pw = _as2d(padding, k, 0)
    dh, dw = _as2d(dilation, k, 1)
    o = w_shape[0]
    g = [x_shape[0], x_shape[1], xh, xw, o, kh, kw, sh, sw, ph, pw, dh, dw, groups, yh, yw]
    return ffi.new("int64_t[16]", g)


def _conv_out_shape(xs, ws, k, stride, padding, dilation, transposed, output_padding, groups):
    if not transposed:
        sp = [(xs[2 + i] + 2 * padding[i] - dilation[i] * (ws[2 + i] - 1) - 1) // stride[i] + 1 for i in range(k)]
        return (xs[0], ws[0]) + tuple(sp)
    sp = [(xs[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (ws[2 + i] - 1) + output_padding[i] + 1
          for i in range(k)]
    return (xs[0], ws[1] * groups) + tuple(sp)


def _bias_view(b, nd):
    return _reshape(b, (1, b._shape[0]) + (1,) * (nd - 2))


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    k, stride, padding, dilation, output_padding = _conv_params(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    dtype = input._dtype
    if not dtype.is_floating_point:
        raise _not_implemented("convolution", dtype)
    x, w = _compute(input, "convolution"), _compute(weight, "convolution")
    b = _compute(bias, "convolution") if bias is not None else None
    yshape = _conv_out_shape(input._shape, weight._shape, k, stride, padding, dilation, transposed,
                             output_padding, groups)
    if any(s < 0 for s in yshape):
        raise RuntimeError(f"convolution(): the output size {list(yshape)} is negative")
    y = _empty(yshape, x._dtype, input._device)
    g = _geometry(x._shape, w._shape, yshape, k, stride, padding, dilation, groups, transposed)
    if not transposed:
        check(lib.ptl_conv2d(0, x._dtype.code, g, _addr(x), _addr(w), _addr(b) if b is not None else 0, _addr(y)),
              "convolution")
    else:
        # the transposed convolution is the core convolution's input gradient
        check(lib.ptl_conv2d(1, x._dtype.code, g, _addr(x), _addr(w), _addr(y), 0), "convolution")
        if b is not None:
            from pytorchlite._kernels.pointwise import run
            from pytorchlite.generated import dispatch
            run(dispatch.OP_add, (y, _bias_view(b, len(yshape))), (1,), y, True)
    return _finish(y, dtype)


def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
                         output_padding, groups, output_mask):
    k, stride, padding, dilation, output_padding = _conv_params(
        input, weight, None, stride, padding, dilation, transposed, output_padding, groups)
    dtype = input._dtype
    if not dtype.is_floating_point:
        raise _not_implemented("convolution_backward", dtype)
    yshape = _conv_out_shape(input._shape, weight._shape, k, stride, padding, dilation, transposed,
                             output_padding, groups)
    if tuple(grad_output._shape) != yshape:
        raise RuntimeError(f"convolution_backward(): expected grad_output of size {list(yshape)}, but got "
                           f"{list(grad_output._shape)}")
    if grad_output._dtype is not dtype:
        raise RuntimeError(f"convolution_backward(): expected grad_output of dtype {dtype._torch_name}, but got "
                           f"{grad_output._dtype._torch_name}")
    mask = tuple(bool(m) for m in output_mask)
    if len(mask) != 3:
        raise RuntimeError(f"convolution_backward(): output_mask must have 3 entries, got {len(mask)}")
    gy, x, w = (_compute(t, "convolution_backward") for t in (grad_output, input, weight))
    g = _geometry(x._shape, w._shape, yshape, k, stride, padding, dilation, groups, transposed)
    code = x._dtype.code
    nbias = weight._shape[1] * groups if transposed else weight._shape[0]
    from pytorchlite._kernels.factories import zeros as _zeros
    if mask[0]:
        gx = _empty(x._shape, x._dtype, x._device)
        if not transposed:
            check(lib.ptl_conv2d(1, code, g, _addr(gy), _addr(w), _addr(gx), 0), "convolution_backward")
        else:
            check(lib.ptl_conv2d(0, code, g, _addr(gy), _addr(w), 0, _addr(gx)), "convolution_backward")
        gx = _finish(gx, dtype)
    else:
        gx = _zeros(input._shape, dtype=dtype, device=input._device)
    if mask[1]:
        gw = _empty(w._shape, x._dtype, x._device)
        if not transposed:
            check(lib.ptl_conv2d(2, code, g, _addr(x), _addr(gy), _addr(gw), 0), "convolution_backward")
        else:
            check(lib.ptl_conv2d(2, code, g, _addr(gy), _addr(x), _addr(gw), 0), "convolution_backward")
        gw = _finish(gw, dtype)
    else:
        gw = _zeros(weight._shape, dtype=dtype, device=weight._device)
    if mask[2]:
        from pytorchlite._kernels.reduce import sum as _sum
        gb = _sum(grad_output, (0,) + tuple(range(2, len(yshape))), False, None)
    else:
        gb = _zeros((nbias,), dtype=dtype, device=input._device)
    return gx, gw, gb


# --- pooling ---------------------------------------------------------------------------------

def _pair(name, v, allow_empty=False):
    v = tuple(v)
    if allow_empty and len(v) == 0:
        return None
    if len(v) == 1:
        v = v * 2
    if len(v) != 2:
        raise RuntimeError(f"max_pool2d: {name} must either be a single int, or a tuple of two ints")
    return v


def _pool_out(size, k, s, p, d, ceil_mode):
    num = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pool_planes(op, self):
    nd = len(self._shape)
    if nd not in (3, 4) or any(s == 0 for s in self._shape[-3 if nd == 3 else 1:]):
        raise RuntimeError(f"{op}(): Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got: {list(self._shape)}")
    nc = 1
    for s in self._shape[:-2]:
        nc *= s
    return nc, self._shape[-2], self._shape[-1]


def _pool_geometry(op, self, kernel_size, stride, padding, dilation, ceil_mode):
    name = "max_pool2d" if op.startswith("max") else "avg_pool2d"
    kernel_size = _pair("kernel_size", kernel_size)
    stride = _pair("stride", stride, allow_empty=True) or kernel_size
    padding = _pair("padding", padding)
    dilation = _pair("dilation", dilation)
    if any(v <= 0 for v in kernel_size):
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {kernel_size[0]} "
                           f"kW: {kernel_size[1]}")
    if any(v <= 0 for v in stride):
        raise RuntimeError("stride should not be zero")
    if any(v <= 0 for v in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {dilation[0]} "
                           f"dilationW: {dilation[1]}")
    for k, p, d in zip(kernel_size, padding, dilation):
        if p < 0 or p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
    nc, h, w = _pool_planes(name, self)
    oh = _pool_out(h, kernel_size[0], stride[0], padding[0], dilation[0], ceil_mode)
    ow = _pool_out(w, kernel_size[1], stride[1], padding[1], dilation[1], ceil_mode)
    if oh < 1 or ow < 1:
        c = self._shape[-3]
        raise RuntimeError(f"Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{oh}x{ow}). "
                           f"Output size is too small")
    p = [nc, h, w, oh, ow, kernel_size[0], kernel_size[1], stride[0], stride[1], padding[0], padding[1],
         dilation[0], dilation[1]]
    return ffi.new("int64_t[13]", p), tuple(self._shape[:-2]) + (oh, ow)


def _pool_operand(op, t):
    """Integer max pooling computes in float64 (exact up to 2**53) and converts back."""
    if t._dtype.is_floating_point:
        return _compute(t, op)
    if t._dtype is D.bool:
        raise _not_implemented(op, t._dtype)
    return to_dtype(t, _F64)


def max_pool2d_with_indices(self, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    op = "max_pool2d_with_indices"
    p, oshape = _pool_geometry(op, self, kernel_size, stride, padding, dilation, ceil_mode)
    x = _pool_operand("max_pool2d", self)
    y = _empty(oshape, x._dtype, self._device)
    idx = _empty(oshape, D.int64, self._device)
    check(lib.ptl_pool2d(0, x._dtype.code, p, _addr(x), _addr(y), _addr(idx), 0, 0), op)
    return _finish(y, self._dtype), idx


def max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
    op = "max_pool2d_with_indices_backward"
    p, oshape = _pool_geometry(op, self, kernel_size, stride, padding, dilation, ceil_mode)
    if tuple(grad_output._shape) != oshape or tuple(indices._shape) != oshape:
        raise RuntimeError(f"{op}(): expected grad_output and indices of size {list(oshape)}, but got "
                           f"{list(grad_output._shape)} and {list(indices._shape)}")
    if indices._dtype is not D.int64:
        raise RuntimeError(f"{op}(): expected indices of dtype int64, but got {indices._dtype._torch_name}")
    g = _compute(grad_output, op)
    idx = _contiguous(indices)
    gx = _empty(self._shape, g._dtype, self._device)
    check(lib.ptl_pool2d(1, g._dtype.code, p, _addr(g), _addr(gx), _addr(idx), 0, 0), op)
    return _finish(gx, grad_output._dtype)


def _avg_check(op, self, divisor_override):
    if not self._dtype.is_floating_point:
        raise _not_implemented(op, self._dtype)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")


def avg_pool2d(self, kernel_size, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    op = "avg_pool2d"
    _avg_check(op, self, divisor_override)
    p, oshape = _pool_geometry(op, self, kernel_size, stride, padding, (1,), ceil_mode)
    x = _compute(self, op)
    y = _empty(oshape, x._dtype, self._device)
    check(lib.ptl_pool2d(2, x._dtype.code, p, _addr(x), _addr(y), 0, int(count_include_pad),
                         divisor_override or 0), op)
    return _finish(y, self._dtype)


def avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override):
    op = "avg_pool2d_backward"
    _avg_check(op, self, divisor_override)
    p, oshape = _pool_geometry(op, self, kernel_size, stride, padding, (1,), ceil_mode)
    if tuple(grad_output._shape) != oshape:
        raise RuntimeError(f"{op}(): expected grad_output of size {list(oshape)}, but got "
                           f"{list(grad_output._shape)}")
    g = _compute(grad_output, op)
    gx = _empty(self._shape, g._dtype, self._device)
    check(lib.ptl_pool2d(3, g._dtype.code, p, _addr(g), _addr(gx), 0, int(count_include_pad),
                         divisor_override or 0), op)
    return _finish(gx, grad_output._dtype)


def _adaptive_geometry(op, self, output_size):
    output_size = tuple(output_size)
    if len(output_size) == 1:
        output_size = output_size * 2
    if len(output_size) != 2:
        raise RuntimeError(f"{op}: output_size must be 2")
    if any(s < 0 for s in output_size):
        raise RuntimeError(f"{op}(): output_size must be non-negative, got {list(output_size)}")
    nd = len(self._shape)
    if nd not in (3, 4) or any(s == 0 for s in self._shape[-2:]):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(self._shape)}")
    nc = 1
    for s in self._shape[:-2]:
        nc *= s
    h, w = self._shape[-2:]
    p = [nc, h, w, output_size[0], output_size[1], 1, 1, 1, 1, 0, 0, 1, 1]
    return ffi.new("int64_t[13]", p), tuple(self._shape[:-2]) + output_size


def _adaptive_avg_pool2d(self, output_size):
    op = "adaptive_avg_pool2d"
    if not self._dtype.is_floating_point:
        raise _not_implemented(op, self._dtype)
    p, oshape = _adaptive_geometry(op, self, output_size)
    x = _compute(self, op)
    y = _empty(oshape, x._dtype, self._device)
    if 0 not in oshape:
        check(lib.ptl_pool2d(4, x._dtype.code, p, _addr(x), _addr(y), 0, 0, 0), op)
    return _finish(y, self._dtype)


def _adaptive_avg_pool2d_backward(grad_output, self):
    op = "adaptive_avg_pool2d_backward"
    if not self._dtype.is_floating_point:
        raise _not_implemented(op, self._dtype)
    p, oshape = _adaptive_geometry(op, self, grad_output._shape[-2:])
    if tuple(grad_output._shape) != oshape:
        raise RuntimeError(f"{op}(): expected grad_output of size {list(oshape)}, but got "
                           f"{list(grad_output._shape)}")
    g = _compute(grad_output, op)
    gx = _empty(self._shape, g._dtype, self._device)
    if 0 in oshape:
        return _zeros_like(self)
    check(lib.ptl_pool2d(5, g._dtype.code, p, _addr(g), _addr(gx), 0, 0, 0), op)
    return _finish(gx, grad_output._dtype)


def _zeros_like(t):
    from pytorchlite._kernels.factories import zeros as _zeros
    return _zeros(t._shape, dtype=t._dtype, device=t._device)


# --- layer normalisation ---------------------------------------------------------------------

def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """(output, mean, rstd): mean and rstd have input's shape with the normalised dims kept
    as size 1."""
    op = "native_layer_norm"
    ns = tuple(normalized_shape)
    n = len(ns)
    shape = tuple(input._shape)
    if n == 0:
        raise RuntimeError(f"Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           f"element, but got normalized_shape = {list(ns)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t._shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t._shape)} and normalized_shape = {list(ns)}")
    if len(shape) < n or shape[len(shape) - n:] != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*, {', '.join(str(s) for s in ns)}], but got input of size{list(shape)}")
    if not input._dtype.is_floating_point:
        raise _not_implemented("LayerNormKernelImpl", input._dtype)
    for t in (weight, bias):
        if t is not None and t._dtype is not input._dtype:
            raise RuntimeError(f"expected scalar type {input._dtype._torch_name.capitalize()} but found "
                               f"{t._dtype._torch_name.capitalize()}")
    x = _compute(input, op)
    w = _compute(weight, op) if weight is not None else None
    b = _compute(bias, op) if bias is not None else None
    M = 1
    for s in ns:
        M *= s
    R = 1
    for s in shape[:len(shape) - n]:
        R *= s
    stat_shape = shape[:len(shape) - n] + (1,) * n
    y = _empty(shape, x._dtype, input._device)
    mean = _empty(stat_shape, x._dtype, input._device)
    rstd = _empty(stat_shape, x._dtype, input._device)
    check(lib.ptl_layer_norm(x._dtype.code, _addr(x), _addr(w) if w is not None else 0,
                             _addr(b) if b is not None else 0, _addr(y), _addr(mean), _addr(rstd), R, M,
                             float(eps)), op)
    dt = input._dtype
    return _finish(y, dt), _finish(mean, dt), _finish(rstd, dt)
