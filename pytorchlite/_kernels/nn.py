"""Neural-network operators: _softmax / _log_softmax and their backward, nll_loss (and
2-d) forward and backward, convolution (1-D and 2-D, plain and transposed), max / average
/ adaptive average 2-D pooling and their backward, and native_layer_norm are structured
(ops.yaml declares the C calls into kernels/nn.c; the meta functions below hold PyTorch's
checks and decide the outputs; docs/architecture.md traces a call). convolution_backward
is a kernel entry: up to two C calls and a sum, each for an output that output_mask asks
for.

The C kernels compute in float32 or float64; float16 and bfloat16 inputs are widened to
float32 and the result rounded once, as PyTorch's CPU kernels accumulate in float.
"""

from pytorchlite import _backends, _dtype as D
from pytorchlite import _structured as S
from pytorchlite._argparse import wrap_dim
from pytorchlite._C import check, ffi, lib
from pytorchlite._core import empty as _empty
from pytorchlite._core import to_dtype
from pytorchlite._ops import ops as F
from pytorchlite._structured import Done, Meta

_F32, _F64 = D.float32, D.float64
_HALF = (D.float16, D.bfloat16)


def _not_implemented(name, dtype):
    return NotImplementedError(f"\"{name}\" not implemented for '{dtype._torch_name}'")


def _compute_dtype(dtype):
    """The kernels compute in float32 or float64: float16 and bfloat16 widen to float32."""
    return _F32 if dtype in _HALF else dtype


def _floating(op, *tensors):
    for t in tensors:
        if not t._dtype.is_floating_point:
            raise _not_implemented(op, t._dtype)


# --- softmax (structured: ops.yaml declares the C calls) ----------------------------------------

def _rows(shape, d):
    """(outer, n, inner): the softmax rows of `shape` along dim d."""
    outer = inner = 1
    for s in shape[:d]:
        outer *= s
    for s in shape[d + 1:]:
        inner *= s
    return outer, (shape[d] if shape else 1), inner


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
    _floating(op, output, grad_output)
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


def _check_reduction(op, reduction):
    if reduction not in (0, 1, 2):
        raise RuntimeError(f"{op}(): reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction}")


def _nll_kernel(self, target, geometry, reduction, ignore_index, *outputs):
    """The rest of an nll_loss meta: the kernel's geometry, and its report of a target out
    of range (PTL_ERR_INDEX, the target in `bad`) as PyTorch's IndexError."""
    n, c, d, _ = geometry
    bad = ffi.new("int64_t[1]")

    def error(status):
        return IndexError(f"Target {bad[0]} is out of bounds.") if status == 5 else None

    # reduction and ignore for a device launcher (the C call takes them from the arguments)
    return Meta(*outputs, compute=_compute_dtype(self._dtype), error=error, N=n, C=c, D=d,
                t_u8=int(target._dtype is D.uint8), bad=bad, reduction=reduction, ignore=ignore_index)


def _nll_forward_meta(op, self, target, weight, reduction, ignore_index, spatial):
    geometry = _nll_geometry(op, self, target, weight, spatial)
    _check_reduction(op, reduction)
    return _nll_kernel(self, target, geometry, reduction, ignore_index,
                       (geometry[3] if reduction == 0 else (), self._dtype),
                       ((), self._dtype))


def _nll_backward_meta(op, grad_output, self, target, weight, reduction, ignore_index, total_weight, spatial):
    geometry = _nll_geometry(op, self, target, weight, spatial)
    if total_weight.numel() != 1:
        raise RuntimeError(f"expected total_weight to be a  single element tensor, got: "
                           f"{list(total_weight._shape)} ({total_weight.numel()} elements)")
    if reduction == 0 and tuple(grad_output._shape) != tuple(geometry[3]):
        raise RuntimeError(f"{op}(): expected grad_output of size {list(geometry[3])}, but got "
                           f"{list(grad_output._shape)}")
    if reduction != 0 and grad_output.numel() != 1:
        raise RuntimeError(f"Expected a single element grad_output tensor, but got: {list(grad_output._shape)}")
    _floating(op, grad_output, total_weight)
    g = _compute_dtype(grad_output._dtype)
    if g is not _compute_dtype(total_weight._dtype) or g is not _compute_dtype(self._dtype):
        raise RuntimeError(f"expected scalar type {self._dtype._torch_name} but found "
                           f"{grad_output._dtype._torch_name}")
    _check_reduction(op, reduction)
    return _nll_kernel(self, target, geometry, reduction, ignore_index, (self._shape, self._dtype))


def nll_loss_forward_meta(self, target, weight, reduction, ignore_index):
    return _nll_forward_meta("nll_loss_forward", self, target, weight, reduction, ignore_index, False)


def nll_loss2d_forward_meta(self, target, weight, reduction, ignore_index):
    return _nll_forward_meta("nll_loss2d_forward", self, target, weight, reduction, ignore_index, True)


def nll_loss_backward_meta(grad_output, self, target, weight, reduction, ignore_index, total_weight):
    return _nll_backward_meta("nll_loss_backward", grad_output, self, target, weight, reduction, ignore_index,
                              total_weight, False)


def nll_loss2d_backward_meta(grad_output, self, target, weight, reduction, ignore_index, total_weight):
    return _nll_backward_meta("nll_loss2d_backward", grad_output, self, target, weight, reduction, ignore_index,
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
    return [x_shape[0], x_shape[1], xh, xw, o, kh, kw, sh, sw, ph, pw, dh, dw, groups, yh, yw]


def _conv_out_shape(xs, ws, k, stride, padding, dilation, transposed, output_padding, groups):
    if not transposed:
        sp = [(xs[2 + i] + 2 * padding[i] - dilation[i] * (ws[2 + i] - 1) - 1) // stride[i] + 1 for i in range(k)]
        return (xs[0], ws[0]) + tuple(sp)
    sp = [(xs[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (ws[2 + i] - 1) + output_padding[i] + 1
          for i in range(k)]
    return (xs[0], ws[1] * groups) + tuple(sp)


def convolution_meta(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    k, stride, padding, dilation, output_padding = _conv_params(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    dtype = input._dtype
    if not dtype.is_floating_point:
        raise _not_implemented("convolution", dtype)
    yshape = _conv_out_shape(input._shape, weight._shape, k, stride, padding, dilation, transposed,
                             output_padding, groups)
    if any(s < 0 for s in yshape):
        raise RuntimeError(f"convolution(): the output size {list(yshape)} is negative")
    # ptl_conv2d 0: the convolution; 3: the transposed one (the core convolution's input
    # gradient), both with the bias added per output channel
    return Meta((yshape, dtype), compute=_compute_dtype(dtype), which=3 if transposed else 0,
                geometry=_geometry(input._shape, weight._shape, yshape, k, stride, padding, dilation, groups,
                                   transposed))


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
    compute = _compute_dtype(dtype)
    gy, x, w = (S.operand(t, compute, True) for t in (grad_output, input, weight))
    g = _geometry(x._shape, w._shape, yshape, k, stride, padding, dilation, groups, transposed)

    def conv(which, a, b, out_shape):
        # which 1: the core convolution's input gradient, 2: its weight gradient (c = the
        # result); 0: the core convolution (d = the result), a transposed one's input gradient
        out = _empty(out_shape, compute, x._device)
        if x._device.type != "cpu":
            _backends.get(x._device.type).convolution(which, g, a, b, None, out)
            return to_dtype(out, dtype)
        c, d = (0, S.address(out)) if which == 0 else (S.address(out), 0)
        check(lib.ptl_conv2d(which, compute.code, g, S.address(a), S.address(b), c, d), "convolution_backward")
        return to_dtype(out, dtype)

    from pytorchlite._kernels.factories import zeros
    gx = (conv(0 if transposed else 1, gy, w, input._shape) if mask[0] else
          zeros(input._shape, dtype=dtype, device=input._device))
    gw = (conv(2, *((gy, x) if transposed else (x, gy)), weight._shape) if mask[1] else
          zeros(weight._shape, dtype=dtype, device=weight._device))
    if mask[2]:
        gb = F.sum(grad_output, (0,) + tuple(range(2, len(yshape))))
    else:
        gb = zeros((weight._shape[1] * groups if transposed else weight._shape[0],), dtype=dtype,
                   device=input._device)
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
    return p, tuple(self._shape[:-2]) + (oh, ow)


def max_pool2d_with_indices_meta(self, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    p, oshape = _pool_geometry("max_pool2d_with_indices", self, kernel_size, stride, padding, dilation, ceil_mode)
    if not self._dtype.is_floating_point:
        if self._dtype is D.bool:
            raise _not_implemented("max_pool2d", self._dtype)
        # integer max pooling runs in float64 (exact up to 2**53) and converts back
        y, idx = F.max_pool2d_with_indices(to_dtype(self, _F64), kernel_size, stride, padding, dilation, ceil_mode)
        return Done((to_dtype(y, self._dtype), idx))
    return Meta((oshape, self._dtype), (oshape, D.int64), compute=_compute_dtype(self._dtype), geometry=p)


def max_pool2d_with_indices_backward_meta(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode,
                                          indices):
    op = "max_pool2d_with_indices_backward"
    p, oshape = _pool_geometry(op, self, kernel_size, stride, padding, dilation, ceil_mode)
    if tuple(grad_output._shape) != oshape or tuple(indices._shape) != oshape:
        raise RuntimeError(f"{op}(): expected grad_output and indices of size {list(oshape)}, but got "
                           f"{list(grad_output._shape)} and {list(indices._shape)}")
    if indices._dtype is not D.int64:
        raise RuntimeError(f"{op}(): expected indices of dtype int64, but got {indices._dtype._torch_name}")
    _floating(op, grad_output)
    return Meta((self._shape, grad_output._dtype), compute=_compute_dtype(grad_output._dtype), geometry=p)


def _avg_check(op, self, divisor_override):
    if not self._dtype.is_floating_point:
        raise _not_implemented(op, self._dtype)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")


def avg_pool2d_meta(self, kernel_size, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True,
                    divisor_override=None):
    op = "avg_pool2d"
    _avg_check(op, self, divisor_override)
    p, oshape = _pool_geometry(op, self, kernel_size, stride, padding, (1,), ceil_mode)
    return Meta((oshape, self._dtype), compute=_compute_dtype(self._dtype), geometry=p, dov=divisor_override or 0)


def avg_pool2d_backward_meta(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                             divisor_override):
    op = "avg_pool2d_backward"
    _avg_check(op, self, divisor_override)
    p, oshape = _pool_geometry(op, self, kernel_size, stride, padding, (1,), ceil_mode)
    if tuple(grad_output._shape) != oshape:
        raise RuntimeError(f"{op}(): expected grad_output of size {list(oshape)}, but got "
                           f"{list(grad_output._shape)}")
    _floating(op, grad_output)
    return Meta((self._shape, grad_output._dtype), compute=_compute_dtype(grad_output._dtype), geometry=p,
                dov=divisor_override or 0)


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
    return p, tuple(self._shape[:-2]) + output_size


def _adaptive_avg_pool2d_meta(self, output_size):
    op = "adaptive_avg_pool2d"
    _floating(op, self)
    p, oshape = _adaptive_geometry(op, self, output_size)
    if 0 in oshape:     # nothing to average (the kernel takes no empty output planes)
        return Done(_empty(oshape, self._dtype, self._device))
    return Meta((oshape, self._dtype), compute=_compute_dtype(self._dtype), geometry=p)


def _adaptive_avg_pool2d_backward_meta(grad_output, self):
    op = "adaptive_avg_pool2d_backward"
    _floating(op, self)
    p, oshape = _adaptive_geometry(op, self, grad_output._shape[-2:])
    if tuple(grad_output._shape) != oshape:
        raise RuntimeError(f"{op}(): expected grad_output of size {list(oshape)}, but got "
                           f"{list(grad_output._shape)}")
    _floating(op, grad_output)
    if 0 in oshape:
        from pytorchlite._kernels.factories import zeros
        return Done(zeros(self._shape, dtype=self._dtype, device=self._device))
    return Meta((self._shape, grad_output._dtype), compute=_compute_dtype(grad_output._dtype), geometry=p)


# --- layer normalisation ---------------------------------------------------------------------

def native_layer_norm_meta(input, normalized_shape, weight, bias, eps):
    """(output, mean, rstd): mean and rstd have input's shape with the normalised dims kept
    as size 1."""
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
    dt = input._dtype
    if not dt.is_floating_point:
        raise _not_implemented("LayerNormKernelImpl", dt)
    for t in (weight, bias):
        if t is not None and t._dtype is not dt:
            raise RuntimeError(f"expected scalar type {dt._torch_name.capitalize()} but found "
                               f"{t._dtype._torch_name.capitalize()}")
    M = R = 1
    for s in ns:
        M *= s
    for s in shape[:len(shape) - n]:
        R *= s
    stat_shape = shape[:len(shape) - n] + (1,) * n
    return Meta((shape, dt), (stat_shape, dt), (stat_shape, dt), compute=_compute_dtype(dt), R=R, M=M)
