"""Convolution on CUDA: im2col / col2im kernels (kernels/cuda/nn.cu) around cuBLAS GEMMs
(pytorchlite/cuda/_gemm.py), the layout of kernels/nn.c's ptl_conv2d. NOT YET RUN ON A
GPU (the host side runs on the CPU emulator). cuDNN is not used: it would add a large
dependency for speed this backend has not measured yet.

`core(which, g, a, b, bias, out)` is the CUDA half of the three products of the core
(non-transposed) convolution whose geometry is g = [N, C, H, W, O, kh, kw, sh, sw, ph,
pw, dh, dw, groups, OH, OW] (input x (N, C, H, W), weight (O, C / groups, kh, kw), output
y (N, O, OH, OW)):

  which 0  out = conv(x=a, weight=b) (+ bias)                the forward convolution
  which 1  out = its input gradient from (grad_y=a, weight=b)
  which 2  out = its weight gradient from (x=a, grad_y=b)
  which 3  out = which 1 (+ bias): a transposed convolution's forward

With cols = im2col(x), a (C * kh * kw, N * OH * OW) matrix, one GEMM per group does each:
y_g = W_g @ cols_g; cols_g = W_g^T @ gy_g then col2im; gW_g = gy_g @ cols_g^T, where gy
is grad_y laid out (O, N * OH * OW).
"""

import struct

from pytorchlite.cuda import _gemm, _nn


def _geom_blob(g):
    """nn.cu's conv_geom: n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow."""
    n, c, h, w, _o, kh, kw, sh, sw, ph, pw, dh, dw, _groups, oh, ow = g
    return struct.pack("<14q", n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)


def _view(t, shape, strides, offset=0):
    from pytorchlite._core import make
    return make(t._storage, tuple(shape), tuple(strides), t._offset + offset, t._dtype, None, None)


def _empty(shape, like):
    from pytorchlite._core import empty
    return empty(tuple(shape), like._dtype, like._device)


def _run(kernel, g, src, dst, n):
    from pytorchlite.cuda import _launch
    a = _launch.Args().blob(_geom_blob(g)).ptr(_nn._ptr(src)).ptr(_nn._ptr(dst))
    _nn.launch("convolution", kernel, dst, n, a)


def _im2col(g, x):
    n, c, _h, _w, _o, kh, kw = g[:7]
    length = n * g[14] * g[15]
    col = _empty((c * kh * kw, length), x)
    _run("ptl_cu_im2col", g, x, col, c * kh * kw * length)
    return col


def _col2im(g, col, out):
    n, c, h, w = g[:4]
    _run("ptl_cu_col2im", g, col, out, n * c * h * w)


def _channels_first(t, n, o, length):
    """t (N, O, L) as a contiguous (O, N * L) matrix."""
    from pytorchlite._core import copy_into
    out = _empty((o, n, length), t)
    copy_into(out, _view(t, (o, n, length), (length, o * length, 1)))
    return _view(out, (o, n * length), (n * length, 1))


def _rows(t, start, count):
    """Rows [start, start + count) of a contiguous 2-D matrix."""
    cols = t._shape[1]
    return _view(t, (count, cols), (cols, 1), start * cols)


def _add_bias(out, bias):
    if bias is None:
        return
    from pytorchlite.cuda import _launch
    n, c = out._shape[0], out._shape[1]
    length = _nn._numel(out) // max(n * c, 1)
    a = _launch.Args().i64(n).i64(c).i64(length).ptr(_nn._ptr(out)).ptr(_nn._ptr(bias))
    _nn.launch("convolution", "ptl_cu_channel_bias", out, n * c * length, a)


def _input_gradient(g, gy, w, out):
    n, c, _h, _w, o, kh, kw = g[:7]
    groups, length = g[13], g[14] * g[15]
    og, k = o // groups, (c // groups) * kh * kw
    gyt = _channels_first(gy, n, o, length)               # (O, N * L)
    w2 = _view(w, (o, k), (k, 1))                         # (O, K) per group rows
    cols = _empty((c * kh * kw, n * length), gy)
    for grp in range(groups):
        wt = _view(w2, (k, og), (1, k), grp * og * k)     # W_g^T
        _gemm.gemm("convolution", wt, _rows(gyt, grp * og, og), _rows(cols, grp * k, k))
    _col2im(g, cols, out)


def core(which, g, a, b, bias, out):
    """See the module docstring; out is contiguous, every operand in out's dtype."""
    g = [int(v) for v in g]
    n, c, _h, _w, o, kh, kw = g[:7]
    groups, length = g[13], g[14] * g[15]
    og, k = o // groups, (c // groups) * kh * kw
    if which == 0:
        cols = _im2col(g, a)
        w2 = _view(b, (o, k), (k, 1))
        y = _empty((o, n * length), out)
        for grp in range(groups):
            _gemm.gemm("convolution", _rows(w2, grp * og, og), _rows(cols, grp * k, k), _rows(y, grp * og, og))
        from pytorchlite._core import copy_into
        # the GEMM wrote (O, N, L); the output is (N, O, L)
        copy_into(_view(out, (o, n, length), (length, o * length, 1)),
                  _view(y, (o, n, length), (n * length, length, 1)))
        _add_bias(out, bias)
    elif which in (1, 3):
        _input_gradient(g, a, b, out)
        if which == 3:
            _add_bias(out, bias)
    elif which == 2:
        cols = _im2col(g, a)
        gyt = _channels_first(b, n, o, length)
        gw = _view(out, (o, k), (k, 1))
        for grp in range(groups):
            colt = _rows(cols, grp * k, k)
            colt = _view(colt, (n * length, k), (1, n * length))      # cols_g^T
            _gemm.gemm("convolution", _rows(gyt, grp * og, og), colt, _rows(gw, grp * og, og))
    else:
        raise ValueError(f"convolution: unknown product {which}")


def convolution(m, input, weight, bias, result):
    """The structured launcher of `convolution` (ops.yaml): which 0 or 3 with the meta's
    geometry."""
    core(m.which, m.geometry, input, weight, bias, result)
