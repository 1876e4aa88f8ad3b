"""Helpers that derivatives.yaml formulas may call (listed in codegen/derivatives.py
HELPERS; a test keeps the two lists equal).

Each is written with pytorchlite operators (or the differentiable view and index
primitives of _views.py), so what it computes is recorded under create_graph and double
backward needs nothing more. Operators that are not declared yet are looked up when a
formula runs, not when codegen checks it.
"""

import math

import numpy as np

from pytorchlite._C import MAX_DIMS as _MAX_DIMS
from pytorchlite._ops import ops as _F
from pytorchlite._core import TensorBase as Tensor, broadcast_shapes, contiguous_strides
from pytorchlite.autograd import _views
from pytorchlite.autograd.engine import sum_to as _sum_to

__all__ = [
    "sum_to", "materialize", "maybe_multiply", "zeros_of", "reduced_dims", "expand_reduced", "reduce_count",
    "mean_backward", "nansum_backward", "nanmean_backward", "prod_backward", "amax_backward", "minmax_backward",
    "var_backward", "std_backward", "var_mean_backward", "std_mean_backward",
    "aminmax_backward", "logsumexp_backward", "norm_backward", "matmul_backward", "invert_permutation",
    "movedim_backward", "narrow_backward", "select_backward", "split_backward", "unbind_backward",
    "diagonal_backward", "as_strided_backward", "unfold_backward", "index_select_backward",
    "masked_select_backward", "index_put_self_backward", "index_put_values_backward", "masked_fill_value_backward",
    "pow_self_backward", "pow_exponent_backward", "mm_mat2_backward", "gelu_tanh_backward", "mish_backward", "softplus_backward",
    "hardswish_backward", "copysign_backward", "xlogy_self_backward", "xlogy_other_backward",
]


# --- generic -------------------------------------------------------------------------------

def sum_to(t, shape):
    """t summed down to `shape` (the reverse of broadcasting t from shape)."""
    return _sum_to(t, tuple(shape))


def maybe_multiply(t, s):
    """t * s, skipping the multiplication when s is 1 (alpha / beta of add, addmm, ...)."""
    if not isinstance(s, Tensor) and s == 1:
        return t
    return t * s


def zeros_of(shape, like):
    """Zeros of `shape` with like's dtype and device."""
    return _F.zeros(tuple(shape), dtype=like._dtype, device=like._device)


def materialize(grads, out_meta):
    """Gradients of a node with several outputs, zeros where an output got none."""
    out = list(grads)
    for i, g in enumerate(out):
        if g is None:
            shape, dtype, device = out_meta[i]
            if dtype is not None and dtype.is_floating_point:
                out[i] = _F.zeros(shape, dtype=dtype, device=device)
    return out


# --- reductions -----------------------------------------------------------------------------

def reduced_dims(shape, dim):
    """The reduced dims, wrapped and sorted (None and an empty list mean all)."""
    nd = len(shape)
    if dim is None:
        return list(range(nd))
    if isinstance(dim, int):
        dim = (dim,)
    if len(dim) == 0 or nd == 0:
        return list(range(nd))
    return sorted(d % nd for d in dim)


def expand_reduced(grad, shape, dim, keepdim):
    """The gradient of a reduction's output, broadcast back over the reduced dims."""
    if not keepdim and len(grad._shape) != len(shape):
        for d in reduced_dims(shape, dim):
            grad = grad.unsqueeze(d)
    return grad.expand(tuple(shape))


def _keep(t, shape, dim, keepdim):
    """A reduction result viewed with the reduced dims kept (size 1)."""
    if not keepdim and len(t._shape) != len(shape):
        for d in reduced_dims(shape, dim):
            t = t.unsqueeze(d)
    return t


def reduce_count(shape, dim):
    n = 1
    for d in reduced_dims(shape, dim):
        n *= shape[d]
    return n


def mean_backward(grad, shape, dim, keepdim):
    n = reduce_count(shape, dim)
    g = expand_reduced(grad, shape, dim, keepdim)
    return g * (1.0 / n) if n else g * float("nan")


def nansum_backward(grad, self, dim, keepdim):
    g = expand_reduced(grad, self.shape, dim, keepdim)
    return g.masked_fill(self.isnan(), 0)


def nanmean_backward(grad, self, dim, keepdim):
    keep = self.isnan().logical_not()
    count = keep.sum(dim, keepdim=True) if dim is not None else keep.sum()
    g = expand_reduced(grad, self.shape, dim, keepdim)
    return (g / count).masked_fill(self.isnan(), 0)


def prod_backward(grad, self, result, dim, keepdim):
    """d prod / d x_i = the product of the other elements. Without zeros that is
    result / x_i; with a zero in the input it is computed directly (each element's
    product with itself replaced by 1), which stays right for double backward too."""
    shape = self.shape
    if self.numel() == 0:
        return zeros_of(shape, self)
    if dim is None:
        g = grad.reshape(()).expand(shape)
        r = result.reshape(()).expand(shape)
    else:
        g = expand_reduced(grad, shape, [dim], keepdim)
        r = expand_reduced(result, shape, [dim], keepdim)
    if not bool((self == 0).any()):
        return g * r / self
    if dim is None:
        flat = self.reshape(-1)
        return g * _prod_of_others(flat).reshape(shape)
    if not shape:
        return g * zeros_of(shape, self).add(1)
    d = dim % len(shape)
    return g * _prod_of_others(self.movedim(d, -1)).movedim(-1, d)


def _prod_of_others(x):
    """For x of shape (..., n): out[..., i] = prod over j != i of x[..., j]."""
    n = x.shape[-1]
    rows = x.unsqueeze(-2).expand(tuple(x.shape[:-1]) + (n, n))
    eye = _F.eye(n, dtype=_bool_dtype(), device=x.device)
    return rows.masked_fill(eye, 1).prod(-1)


def _bool_dtype():
    from pytorchlite import _dtype
    return _dtype.bool


def amax_backward(grad, self, result, dim, keepdim):
    """amax / amin: the gradient shared evenly among the elements equal to the extreme."""
    shape = self.shape
    mask = (self == _keep(result, shape, dim, keepdim)).to(grad.dtype)
    count = mask.sum(reduced_dims(shape, dim), keepdim=True)
    return expand_reduced(grad, shape, dim, keepdim) * mask / count


def minmax_backward(grad, self, dim, keepdim, values, indices):
    """max / min over all elements (shared among ties, as PyTorch's
    evenly_distribute_backward) or along one dim (to the index of the chosen element)."""
    if dim is None:
        mask = (self == values).to(grad.dtype)
        return grad * mask / mask.sum()
    shape = self.shape
    d = dim % len(shape) if shape else 0
    idx = indices if keepdim or not shape else indices.unsqueeze(d)
    g = grad if keepdim or not shape else grad.unsqueeze(d)
    if not shape:
        return g
    return _scatter_along(g, shape, d, idx)


def _along_dim_entries(shape, d, idx):
    """Index entries selecting, for every position of idx (shaped like `shape` with dim d
    replaced), the element idx gives along dim d (gather / scatter along a dim)."""
    entries = []
    nd = len(shape)
    for k in range(nd):
        if k == d:
            entries.append(idx)
        else:
            n = idx._shape[k]
            view = [1] * nd
            view[k] = n
            entries.append(_F.arange(n, device=idx._device).reshape(view))
    return entries


def _correction(unbiased, correction):
    if correction is not None:
        return correction
    if unbiased is None:
        return 1
    return 1 if unbiased else 0


def var_backward(grad, self, dim, unbiased, correction, keepdim):
    shape = self.shape
    n = reduce_count(shape, dim)
    c = _correction(unbiased, correction)
    dims = reduced_dims(shape, dim)
    mean = self.mean(dims, keepdim=True) if dims else self
    g = expand_reduced(grad, shape, dim, keepdim)
    scale = 2.0 / (n - c) if n - c > 0 else float("inf")
    return g * self.add(mean, alpha=-1) * scale


def std_backward(result, grad, self, dim, unbiased, correction, keepdim):
    g = grad / (result * 2)
    return var_backward(g.masked_fill(result == 0, 0), self, dim, unbiased, correction, keepdim)


def var_mean_backward(grads, self, dim, unbiased, correction, keepdim):
    gv, gm = grads[0], grads[1]
    out = var_backward(gv, self, dim, unbiased, correction, keepdim)
    return out + mean_backward(gm, self.shape, dim, keepdim)


def std_mean_backward(grads, self, dim, unbiased, correction, keepdim, std):
    gs, gm = grads[0], grads[1]
    out = std_backward(std, gs, self, dim, unbiased, correction, keepdim)
    return out + mean_backward(gm, self.shape, dim, keepdim)


def aminmax_backward(grads, self, dim, keepdim, lo, hi):
    dims = None if dim is None else [dim]
    a = amax_backward(grads[0], self, lo, dims, keepdim)
    b = amax_backward(grads[1], self, hi, dims, keepdim)
    return a + b


def logsumexp_backward(grad, self, result, dim, keepdim):
    shape = self.shape
    r = _keep(result, shape, dim, keepdim)
    return expand_reduced(grad, shape, dim, keepdim) * self.add(r, alpha=-1).exp()


def norm_backward(grad, self, p, result, dim, keepdim):
    """The gradient of the p-norm (0 where the norm is 0), p = 0, 1, 2, inf, -inf or any."""
    shape = self.shape
    p = 2.0 if p is None else float(p)
    g = expand_reduced(grad, shape, dim, keepdim)
    r = _keep(result, shape, dim, keepdim)
    if p == 0.0:
        return zeros_of(shape, self)
    if p == 1.0:
        return g * self.sign()
    if p == 2.0:
        return (g * self / r).masked_fill(r == 0, 0)
    if p in (float("inf"), float("-inf")):
        a = self.abs()
        mask = (a == r).to(g.dtype)
        count = mask.sum(reduced_dims(shape, dim), keepdim=True)
        return g * self.sign() * mask / count
    a = self.abs()
    out = g * self * a.pow(p - 2) / r.pow(p - 1)
    return out.masked_fill(r == 0, 0)


# --- linear algebra ---------------------------------------------------------------------------

def matmul_backward(grad, self, other, mask):
    """Gradients of matmul for every combination of 1-D, 2-D and batched operands (the
    batch broadcast is summed away by the engine)."""
    a, b = self, other
    da, db = len(a._shape), len(b._shape)
    if da == 1 and db == 1:
        return (grad * b if mask[0] else None, grad * a if mask[1] else None)
    ga = gb = None
    if da == 1:
        a2, g2 = a.unsqueeze(0), grad.unsqueeze(-2)
        if mask[0]:
            ga = _F.matmul(g2, b.transpose(-1, -2))
            ga = _squash_to(ga, a2._shape).squeeze(0) if len(ga._shape) > 1 else ga
        if mask[1]:
            gb = _F.matmul(a2.transpose(-1, -2), g2)
        return ga, gb
    if db == 1:
        b2, g2 = b.unsqueeze(-1), grad.unsqueeze(-1)
        if mask[0]:
            ga = _F.matmul(g2, b2.transpose(-1, -2))
        if mask[1]:
            gb = _F.matmul(a.transpose(-1, -2), g2)
            gb = _squash_to(gb, b2._shape).squeeze(-1)
        return ga, gb
    if mask[0]:
        ga = _F.matmul(grad, b.transpose(-1, -2))
    if mask[1]:
        if db == 2:
            # a matrix shared by the batch: one GEMM over the flattened batch, computed in
            # b's own layout, so that linear's weight.t() hands the weight a contiguous
            # gradient (AccumulateGrad then keeps it instead of copying)
            a2 = a if da == 2 else a.reshape(-1, a._shape[-1])
            g2 = grad if da == 2 else grad.reshape(-1, grad._shape[-1])
            if b._stride[0] == 1 and b._stride[1] != 1:
                gb = _F.mm(g2.transpose(0, 1), a2).transpose(0, 1)
            else:
                gb = _F.mm(a2.transpose(0, 1), g2)
        else:
            gb = _F.matmul(a.transpose(-1, -2), grad)
    return ga, gb


def mm_mat2_backward(grad, mat1, mat2, alpha):
    """alpha * mat1.T @ grad, computed in mat2's own layout: for linear's weight.t() (column-
    major) that is (grad.T @ mat1).T, whose base is a contiguous weight-shaped gradient that
    AccumulateGrad keeps instead of copying."""
    if mat2._stride[0] == 1 and mat2._stride[1] != 1:
        out = _F.mm(grad.transpose(0, 1), mat1).transpose(0, 1)
    else:
        out = _F.mm(mat1.transpose(0, 1), grad)
    return out if alpha == 1 else out * alpha


def _squash_to(t, shape):
    return _sum_to(t, tuple(shape)) if t._shape != tuple(shape) else t


# --- views --------------------------------------------------------------------------------

def invert_permutation(dims):
    n = len(dims)
    inv = [0] * n
    for i, d in enumerate(dims):
        inv[d % n if n else 0] = i
    return inv


def movedim_backward(grad, source, destination):
    return grad.movedim(destination, source)


def _contig_geometry(shape):
    return (tuple(shape), contiguous_strides(tuple(shape)))


def narrow_backward(grad, shape, dim, start, length):
    base = _contig_geometry(shape)
    d = dim % len(shape)
    st = base[1]
    start = start + shape[d] if start < 0 else start
    vshape = list(shape)
    vshape[d] = length
    return _views.strided_scatter(grad, base, (tuple(vshape), st, start * st[d]))


def select_backward(grad, shape, dim, index):
    base = _contig_geometry(shape)
    d = dim % len(shape)
    st = base[1]
    index = index + shape[d] if index < 0 else index
    vshape = tuple(n for k, n in enumerate(shape) if k != d)
    vstride = tuple(s for k, s in enumerate(st) if k != d)
    return _views.strided_scatter(grad, base, (vshape, vstride, index * st[d]))


def split_backward(grads, shape, dim):
    """split / chunk / tensor_split / unbind-like outputs, consecutive along dim, back into
    one gradient (outputs that got none count as zeros)."""
    d = dim % len(shape) if shape else 0
    out = None
    start = 0
    base = _contig_geometry(shape)
    for g in grads:
        n = g._shape[d]
        if g is not None and n:
            part = _views.strided_scatter(g, base, (tuple(g._shape), base[1], start * base[1][d]))
            out = part if out is None else out + part
        start += n
    return out if out is not None else zeros_of(shape, grads[0])


def unbind_backward(grads, shape, dim):
    d = dim % len(shape)
    if hasattr(_F, "stack"):
        return _F.stack(list(grads), d)
    return split_backward([g.unsqueeze(d) for g in grads], shape, d)


def diagonal_backward(grad, shape, offset, dim1, dim2):
    nd = len(shape)
    a, b = dim1 % nd, dim2 % nd
    base = _contig_geometry(shape)
    st = base[1]
    n = grad._shape[-1]
    start = 0
    if n:
        start = offset * st[b] if offset >= 0 else -offset * st[a]
    vstride = tuple(s for k, s in enumerate(st) if k not in (a, b)) + (st[a] + st[b],)
    return _views.strided_scatter(grad, base, (tuple(grad._shape), vstride, start))


def _positions(vshape, vstride, voff):
    """The (relative) storage position of every element of a strided view, as int64."""
    pos = np.full(tuple(vshape), voff, dtype=np.int64)
    for k, (n, s) in enumerate(zip(vshape, vstride)):
        shp = [1] * len(vshape)
        shp[k] = n
        pos = pos + (np.arange(n, dtype=np.int64) * s).reshape(shp)
    return pos


def _scatter_positions(grad, shape, pos):
    """Zeros of `shape` (contiguous), grad added at flat positions pos (repeats add up)."""
    from pytorchlite._creation import tensor
    n = 1
    for s in shape:
        n *= s
    idx = tensor(np.ascontiguousarray(pos), device=grad._device)
    flat = _views.index_scatter_add(grad, (n,), [idx])
    return flat.reshape(tuple(shape))


def as_strided_backward(grad, shape, stride, offset, size, vstride, storage_offset):
    """The gradient of as_strided: scattered into the input's elements; where the view's
    elements overlap (stride 0, overlapping windows) the contributions add up."""
    shape, stride = tuple(shape), tuple(stride)
    voff = (offset if storage_offset is None else storage_offset) - offset
    if not all(n for n in shape):
        return zeros_of(shape, grad)
    # storage position (relative to the input's first element) -> the input's flat index
    in_pos = _positions(shape, stride, 0).reshape(-1)
    lookup = {}
    for i, p in enumerate(in_pos.tolist()):
        lookup.setdefault(p, i)
    if len(lookup) != len(in_pos):
        raise NotImplementedError("as_strided backward: the input itself has overlapping elements")
    vpos = _positions(size, vstride, voff)
    try:
        flat = np.vectorize(lookup.__getitem__, otypes=[np.int64])(vpos) if vpos.size else vpos
    except KeyError:
        raise NotImplementedError("as_strided backward: the view reaches storage outside its input's "
                                  "elements") from None
    return _scatter_positions(grad, shape, flat)


def unfold_backward(grad, shape, dimension, size, step):
    shape = tuple(shape)
    nd = len(shape)
    if nd == 0:
        return grad.reshape(())
    d = dimension % nd
    st = contiguous_strides(shape)
    vshape = list(shape)
    vshape[d] = (shape[d] - size) // step + 1
    vstride = list(st)
    vstride[d] = step * st[d]
    vshape.append(size)
    vstride.append(st[d])
    return _scatter_positions(grad, shape, _positions(vshape, vstride, 0))


# --- indexing -------------------------------------------------------------------------------

def index_select_backward(grad, shape, dim, index):
    nd = len(shape)
    if nd == 0:
        return grad.reshape(())
    d = dim % nd
    idx = index.reshape(-1)
    entries = [None] * d + [idx]
    return _views.index_scatter_add(grad, tuple(shape), entries)


def masked_select_backward(grad, self_shape, mask):
    shape = broadcast_shapes("masked_select", [tuple(self_shape), tuple(mask.shape)])
    m = mask.expand(shape) if tuple(mask.shape) != shape else mask
    if not shape:
        return _views.index_scatter_add(grad, (1,), [m.reshape(1)]).reshape(())
    return _views.index_scatter_add(grad, shape, [m])


def index_put_self_backward(grad, indices, accumulate):
    if accumulate:
        return grad
    return _views.index_fill_zero(grad, list(indices))


def index_put_values_backward(grad, indices, values_shape):
    return _views.index_gather(grad, list(indices))


def masked_fill_value_backward(grad, mask):
    """The gradient of the fill value: the sum of grad where the mask is set."""
    return grad.sum().add(grad.masked_fill(mask, 0).sum(), alpha=-1)


# --- pointwise ------------------------------------------------------------------------------

def pow_self_backward(grad, self, exponent):
    """d self**e / d self = e * self**(e - 1), and 0 where e == 0 (not 0 * inf at self == 0)."""
    if not isinstance(exponent, Tensor):
        if exponent == 0:
            return zeros_of(grad.shape, grad)
        return grad * (self.pow(exponent - 1) * exponent)
    out = grad * (self.pow(exponent - 1) * exponent)
    return out.masked_fill(exponent == 0, 0)


def pow_exponent_backward(grad, self, exponent, result):
    """d self**e / d e = self**e * log(self), and 0 where self == 0 and e >= 0 (PyTorch's choice
    at the boundary, where log(0) would give nan)."""
    if not isinstance(self, Tensor):
        if self > 0:
            return grad * result * math.log(self)
        out = grad * result * float("nan")       # log of a non-positive base
        return out.masked_fill(exponent >= 0, 0) if self == 0 else out
    out = grad * result * self.log()
    if isinstance(exponent, Tensor):
        return _F.where((self == 0).logical_and(exponent >= 0), zeros_of(out.shape, out), out)
    return out.masked_fill(self == 0, 0) if exponent >= 0 else out


def gelu_tanh_backward(grad, self):
    k, c = 0.7978845608028654, 0.044715
    x2 = self * self
    t = ((x2 * c + 1) * self * k).tanh()
    return grad * ((t + 1) * 0.5 + self * 0.5 * (1 - t * t) * k * (x2 * (3 * c) + 1))


def mish_backward(grad, self):
    sp = self.exp().log1p()
    t = sp.tanh()
    return grad * (t + self * self.sigmoid() * (1 - t * t))


def softplus_backward(grad, self, beta, threshold):
    z = (self * beta).sigmoid()
    return _F.where(self * beta > threshold, grad, grad * z)


def hardswish_backward(grad, self):
    # PyTorch takes the outer pieces at the kinks themselves: 0 at x = -3 and grad at x = 3
    mid = grad * (self * 2 + 3) * (1 / 6)
    out = _F.where(self <= -3, zeros_of(grad.shape, grad), mid)
    return _F.where(self >= 3, grad, out)


def copysign_backward(grad, self, result):
    """d copysign(x, y) / dx = sign(x) * sign(y) = result / x away from 0, and 0 at 0."""
    ratio = _F.where(self == 0, zeros_of(result.shape, result), result / self.masked_fill(self == 0, 1))
    return grad * ratio


def xlogy_self_backward(grad, self, other):
    out = grad * (other.log() if isinstance(other, Tensor) else math.log(other) if other > 0 else float("nan"))
    if isinstance(self, Tensor):
        zero = (self == 0).logical_and(other <= 0) if isinstance(other, Tensor) else (
            (self == 0) if other <= 0 else None)
        if zero is not None:
            out = out.masked_fill(zero, 0)
    return out


def xlogy_other_backward(grad, self, other):
    return grad * self / other


# --- data movement ----------------------------------------------------------------------------

def cat_backward(grad, shapes, dim):
    """The slice of grad each piece of cat filled; zeros for skipped 1-d empty pieces."""
    nd = grad.dim()
    d = dim % nd
    out, start = [], 0
    for s in shapes:
        if len(s) != nd:      # a 1-d empty piece that cat skipped
            out.append(zeros_of(s, grad))
            continue
        out.append(grad.narrow(d, start, s[d]))
        start += s[d]
    return out


def gather_backward(grad, shape, dim, index):
    return zeros_of(shape, grad).scatter_add(dim, index, grad)


def scatter_self_backward(grad, dim, index, reduce):
    if reduce is None:
        return grad.scatter(dim, index, 0)
    if reduce == "add":
        return grad
    raise NotImplementedError("scatter(): the derivative for reduce='multiply' is not implemented")


def scatter_src_backward(grad, dim, index, reduce):
    if reduce in (None, "add"):
        return grad.gather(dim, index)
    raise NotImplementedError("scatter(): the derivative for reduce='multiply' is not implemented")


def scatter_reduce_backward(grad, self, dim, index, src, reduce, include_self, result, for_self):
    """scatter_reduce's gradient for self (for_self) or src. amax/amin split the gradient
    evenly among the entries equal to the result, as PyTorch does; prod divides the
    result by the input, so it needs nonzero inputs."""
    untouched = grad.scatter(dim, index, 0)    # grad where nothing was scattered
    if reduce == "sum":
        if for_self:
            return grad if include_self else untouched
        return grad.gather(dim, index)
    if reduce == "mean":
        ones = _F.ones_like(src)
        count = _F.ones_like(grad) if include_self else _F.zeros_like(grad)
        count = count.scatter_add(dim, index, ones)
        count = count.masked_fill(count == 0, 1)
        g = grad / count
        if for_self:
            return g if include_self else untouched
        return g.gather(dim, index)
    if reduce in ("amax", "amin"):
        self_hit = (self == result).to(grad.dtype)
        if not include_self:
            self_hit = self_hit.scatter(dim, index, 0)
        src_hit = (src == result.gather(dim, index)).to(grad.dtype)
        count = self_hit.scatter_add(dim, index, src_hit)
        g = grad / count.masked_fill(count == 0, 1)
        if for_self:
            return g * self_hit
        return g.gather(dim, index) * src_hit
    if reduce == "prod":
        if for_self:
            return grad * result / self if include_self else untouched
        return (grad * result).gather(dim, index) / src
    raise RuntimeError(f"scatter_reduce(): unknown reduce {reduce}")


def index_source_backward(grad, dim, index, source_shape, alpha):
    """index_add / index_copy: the source's gradient is grad at the indexed slices."""
    g = grad.index_select(dim, index)
    if alpha != 1:
        g = g * alpha
    return g.reshape(source_shape)


def masked_scatter_source_backward(grad, mask, source_shape):
    """The first count(mask) source entries got grad's masked entries; the rest none."""
    vals = grad.masked_select(mask)
    n = 1
    for s in source_shape:
        n *= s
    rest = n - vals.numel()
    if rest:
        vals = _F.cat([vals, zeros_of((rest,), grad)])
    return vals.reshape(source_shape)


def diag_backward(grad, shape, diagonal):
    if len(shape) == 1:
        return grad.diagonal(diagonal)
    return diagonal_backward(grad, shape, diagonal, 0, 1)


def pad_backward(grad, shape, pad, mode):
    """constant: the inner part (negative pads become zero padding); other modes: each
    padded dim's gradient summed back to the position it was read from (index_add)."""
    pad = list(pad)
    if mode == "constant":
        return _F.pad(grad, [-p for p in pad])
    from pytorchlite import _dtype
    from pytorchlite._creation import tensor
    from pytorchlite._kernels.movement import pad_indices
    nd = len(shape)
    g = grad
    pairs = [(nd - 1 - k, pad[2 * k], pad[2 * k + 1]) for k in range(len(pad) // 2)]
    for d, a, b in reversed(pairs):
        idx = tensor(pad_indices(shape[d], a, b, mode), dtype=_dtype.int64, device=grad.device)
        gshape = list(g.shape)
        gshape[d] = shape[d]
        g = zeros_of(gshape, g).index_add(d, idx, g)
    return g


__all__ += ["cat_backward", "gather_backward", "scatter_self_backward", "scatter_src_backward",
            "scatter_reduce_backward", "index_source_backward", "masked_scatter_source_backward", "diag_backward",
            "pad_backward"]


# @@ section: data-movement (add helpers above this line) @@


# --- sorting, selection and scans ------------------------------------------------------------

def _scatter_along(grad, shape, d, indices):
    """Zeros of `shape` with grad added at `indices` along dim d (scatter_add), differentiable."""
    if len(shape) > _MAX_DIMS:
        # one index tensor per dim is more than the index kernel takes: scatter_add along
        # d adds at the same positions
        return _F.zeros(tuple(shape), dtype=grad.dtype, device=grad.device).scatter_add(d, indices, grad)
    return _views.index_scatter_add(grad, shape, _along_dim_entries(shape, d, indices))


def sort_backward(grad, shape, dim, indices):
    """sort / topk: each output's gradient goes back to the position it came from."""
    if not shape:
        return grad
    return _scatter_along(grad, shape, dim % len(shape), indices)


def value_select_backward(grad, shape, dim, keepdim, indices):
    """kthvalue / mode / median(dim): the gradient goes to the selected element."""
    if not shape:
        return grad
    d = dim % len(shape)
    if not keepdim:
        grad, indices = grad.unsqueeze(d), indices.unsqueeze(d)
    return _scatter_along(grad, shape, d, indices)


def median_backward(grad, self, dim, keepdim, values, indices):
    """median / nanmedian: with dim, to the selected element; over everything, shared
    evenly among the elements equal to the result (the NaNs when it is NaN), as PyTorch's
    evenly_distribute_backward."""
    if dim is not None:
        return value_select_backward(grad, self.shape, dim, keepdim, indices)
    if bool(values.isnan()):
        mask = self.isnan()
    else:
        mask = self == values
    mask = mask.to(grad.dtype)
    return grad * mask / mask.sum()


def _reverse(t, d):
    n = t.shape[d]
    return t.index_select(d, _F.arange(n - 1, -1, -1, device=t.device))


def _reverse_cumsum(t, d):
    return _reverse(_reverse(t, d).cumsum(d), d)


def cumsum_backward(grad, dim):
    if not grad.shape or grad.numel() == 0:
        return grad
    return _reverse_cumsum(grad, dim % len(grad.shape))


def cumprod_backward(grad, self, dim, result):
    """d out_j / d x_k = prod_{i <= j, i != k} x_i for j >= k. Without zeros that is
    out_j / x_k, so the gradient is a reversed cumsum divided by x. With a zero the
    division is undefined: the products that leave x_k out are formed explicitly, an
    (n x n) matrix per slice (PyTorch does the same when it must stay differentiable)."""
    shape = self.shape
    if not shape or self.numel() == 0:
        return grad * _F.ones_like(self) if not shape else grad
    d = dim % len(shape)
    if not bool((self == 0).any()):
        return _reverse_cumsum(grad * result, d) / self
    n = shape[d]
    x = self.movedim(d, -1)
    g = grad.movedim(d, -1)
    lead = tuple(x.shape[:-1])
    eye = _F.eye(n, dtype=_bool_dtype(), device=self.device)
    others = x.unsqueeze(-2).expand(lead + (n, n)).masked_fill(eye, 1)   # [..., k, i]: x_i, 1 at i == k
    prods = others.cumprod(-1)                                           # [..., k, j]: prod_{i<=j, i!=k} x_i
    r = _F.arange(n, device=self.device)
    upper = (r.unsqueeze(-1) <= r).to(self.dtype)                        # [k, j]: j >= k
    out = (prods * g.unsqueeze(-2) * upper).sum(-1)
    return out.movedim(-1, d)


def cummaxmin_backward(grad, self, dim, indices):
    """cummax / cummin: each output's gradient goes to the element it copies."""
    shape = self.shape
    if not shape:
        return grad
    if self.numel() == 0:
        return grad
    return _scatter_along(grad, shape, dim % len(shape), indices)


def logcumsumexp_backward(grad, self, dim, result):
    """d out_j / d x_k = exp(x_k - out_j) for j >= k: a reversed cumsum of grad * exp(-out),
    times exp(x), both shifted by the last output (the largest), so nothing overflows
    unless the outputs of a slice span more than ~700."""
    shape = self.shape
    if not shape:
        return grad
    if self.numel() == 0:
        return grad
    d = dim % len(shape)
    n = shape[d]
    m = result.narrow(d, n - 1, 1)
    m = m.masked_fill(m.isinf(), 0)
    return _reverse_cumsum(grad * (m - result).exp(), d) * (self - m).exp()


__all__ += ["sort_backward", "value_select_backward", "median_backward", "cumsum_backward", "cumprod_backward",
            "cummaxmin_backward", "logcumsumexp_backward"]


# @@ section: sorting-scans (add helpers above this line) @@


# linear algebra (inv, det, solve, cholesky, qr, svd, eigh, lstsq): their own module
from pytorchlite.autograd import _linalg_formulas  # noqa: E402
from pytorchlite.autograd._linalg_formulas import *  # noqa: E402,F401,F403
__all__ += _linalg_formulas.__all__


# @@ section: linalg (add helpers above this line) @@


# --- neural-network kernels ------------------------------------------------------------------

def softmax_double_backward(grad, grad_output, output, dim):
    """d/d output of <grad, y * (grad_output - sum(grad_output * y))> along dim."""
    return grad * (grad_output - (grad_output * output).sum(dim, True)) - grad_output * (grad * output).sum(dim, True)


def convolution_double_backward(grads, grad_output, input, weight, stride, padding, dilation, transposed,
                                output_padding, groups, output_mask, mask):
    """Gradients of convolution_backward (gI, gW, gb) for (grad_output, input, weight).

    gI and gW are linear in grad_output and are the adjoints of the convolution in its
    input and weight slots, so: d/d grad_output = conv(ggI, W) + conv(x, ggW) + ggb;
    d/d input (from gW = corr(x, gO)) = the input gradient of conv(x, ggW) at gO; d/d
    weight (from gI) = the weight gradient of conv(ggI, W) at gO."""
    # outputs left out of output_mask are constant zeros: their incoming gradients drop out
    ggI, ggW, ggb = (g if m else None for g, m in zip(grads, output_mask))
    args = (stride, padding, dilation, transposed, output_padding, groups)
    g_out = g_in = g_w = None
    if mask[0]:
        g_out = _F.zeros_like(grad_output)
        if ggI is not None:
            g_out = g_out + _F.convolution(ggI, weight, None, *args)
        if ggW is not None:
            g_out = g_out + _F.convolution(input, ggW, None, *args)
        if ggb is not None:
            g_out = g_out + ggb.reshape((1, ggb.shape[0]) + (1,) * (grad_output.dim() - 2))
    if mask[1] and ggW is not None:
        g_in = _F.convolution_backward(grad_output, input, ggW, None, *args, (True, False, False))[0]
    if mask[2] and ggI is not None:
        g_w = _F.convolution_backward(grad_output, ggI, weight, None, *args, (False, True, False))[1]
    return g_out, g_in, g_w


def max_pool_double_backward(grad, indices):
    """The adjoint of max_pool2d's backward: grad read back at each output's argmax."""
    hw = grad.shape[-2] * grad.shape[-1]
    planes = grad.numel() // hw if hw else 0
    offsets = _F.arange(planes, dtype=indices.dtype).reshape((planes, 1)) * hw
    flat = (indices.reshape((planes, -1)) + offsets).reshape(-1)
    return grad.reshape(-1).index_select(0, flat).reshape(indices.shape)


def layer_norm_backward(grad, input, normalized_shape, weight, eps, mask):
    """Gradients of native_layer_norm for (input, weight, bias). The statistics are
    recomputed here with differentiable ops (not taken from the forward's outputs), so the
    formula is itself differentiable in input: double backward sees mean and rstd move."""
    n = len(normalized_shape)
    nd = input.dim()
    dims = tuple(range(nd - n, nd))
    batch = tuple(range(nd - n))
    mean = input.mean(dims, keepdim=True)
    rstd = (input.var(dims, keepdim=True, correction=0) + eps).rsqrt()
    xhat = (input - mean) * rstd
    g_in = g_w = g_b = None
    if mask[0]:
        g = grad * weight if weight is not None else grad
        g_in = rstd * (g - g.mean(dims, keepdim=True) - xhat * (g * xhat).mean(dims, keepdim=True))
    if mask[1]:
        g_w = (grad * xhat).sum(batch) if batch else grad * xhat
    if mask[2]:
        g_b = grad.sum(batch) if batch else grad
    return g_in, g_w, g_b


__all__ += ["softmax_double_backward", "convolution_double_backward", "max_pool_double_backward",
            "layer_norm_backward"]


# @@ section: nn (add helpers above this line) @@

from pytorchlite.autograd import _jvp_formulas  # noqa: E402
from pytorchlite.autograd._jvp_formulas import *  # noqa: E402,F401,F403
__all__ += _jvp_formulas.__all__
