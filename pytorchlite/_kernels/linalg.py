"""The rules of the matrix products: mm, bmm, matmul, addmm, addbmm, baddbmm, mv, addmv,
dot, vdot (meta functions of structured kernels, see codegen/structured.py and
docs/architecture.md), and outer and addr (computed pointwise, from other operators).

Each meta function checks ranks, shapes and dtypes in the order PyTorch does, so a bad
call meets PyTorch's first error word for word, and says the result's shape and dtype (as
a bare `(shape, dtype)` where that is all: the cheapest answer, for small products); the
generated impl (ops.yaml) allocates the result and calls kernels/matmul.c: `ptl_gemm2d` (plain
arguments) for the 2-D products, `ptl_gemm` (descriptors) for batched ones. Both read
transposed, sliced and expanded operands in place. Matrix products do not promote: both
operands must have one dtype (outer and addr, which PyTorch computes pointwise, promote).

matmul follows PyTorch's `_matmul_impl` case by case (dot, mv, mm, "fold the batch into
the rows", broadcast bmm) because which case runs decides which error a bad call gets. The
broadcast case needs no copy here: the kernel takes stride-0 batch dimensions directly.
"""

from pytorchlite import _dtype as D
from pytorchlite._C import MAX_DIMS
from pytorchlite._core import numel, contiguous_strides, to_dtype
from pytorchlite._promotion import result_type_of
from pytorchlite._structured import Done, impls, meta_of
from pytorchlite._views import make_view
from pytorchlite._ops import ops as F

# caffe2 TypeMeta spellings, which some of PyTorch's messages use instead of ScalarType's
_CPP_NAME = {
    D.bool: "bool", D.uint8: "unsigned char", D.int8: "signed char", D.int16: "short int",
    D.int32: "int", D.int64: "long int", D.float16: "c10::Half", D.bfloat16: "c10::BFloat16",
    D.float32: "float", D.float64: "double",
}

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


# --- small helpers ------------------------------------------------------------------------

def _size(t, d):
    """t.size(d) with PyTorch's IndexError when t has too few dimensions."""
    n = len(t._shape)
    if n == 0:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return t._shape[d]


def _not_implemented(name, dtype):
    return NotImplementedError(f"\"{name}\" not implemented for '{dtype._torch_name}'")


def _view(t, shape, stride):
    return make_view(t, tuple(shape), tuple(stride), t._offset)


def _transpose_last(t):
    """t.mT: the last two dimensions swapped (a view)."""
    s, st = t._shape, t._stride
    v = make_view(t, s[:-2] + (s[-1], s[-2]), st[:-2] + (st[-1], st[-2]), t._offset)
    if t._contig and s[-1] > 1 and s[-2] > 1 and 0 not in s:
        # known without looking at the strides: LAPACK's inputs are such views, made contiguous
        v._contig = False
    return v


def _contiguous_view(t, shape):
    """A view of the contiguous tensor t with another shape of the same numel."""
    return _view(t, shape, contiguous_strides(tuple(shape)))


def _expand_strides(op_shape, op_stride, target):
    """Strides of a tensor viewed at the broadcast shape `target` (0 where broadcast);
    the caller has checked that it broadcasts."""
    off = len(target) - len(op_shape)
    st = [0] * len(target)
    for i, (n, s) in enumerate(zip(op_shape, op_stride)):
        st[off + i] = 0 if (n == 1 and target[off + i] != 1) else s
    return st


def _expand(t, target):
    """t.expand(target) with PyTorch's messages (expand_size in the add* ops)."""
    shape = t._shape
    if shape == tuple(target):
        return t
    target = list(target)
    if len(shape) > len(target):
        raise RuntimeError(
            f"expand({t.type()}{{{list(shape)}}}, size={target}): the number of sizes provided ({len(target)}) "
            f"must be greater or equal to the number of dimensions in the tensor ({len(shape)})")
    off = len(target) - len(shape)
    for i in range(len(target) - 1, -1, -1):
        size = shape[i - off] if i >= off else 1
        if size != target[i] and size != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({target[i]}) must match the existing size ({size}) at "
                f"non-singleton dimension {i}.  Target sizes: {target}.  Tensor sizes: {list(shape)}")
    return _view(t, target, _expand_strides(shape, t._stride, target))


def _infer_size(a, b):
    """Broadcast of two batch shapes, with at::infer_size's message."""
    n = max(len(a), len(b))
    out = [0] * n
    for i in range(n - 1, -1, -1):
        off = n - 1 - i
        da, db = len(a) - 1 - off, len(b) - 1 - off
        sa = a[da] if da >= 0 else 1
        sb = b[db] if db >= 0 else 1
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) at "
                               f"non-singleton dimension {i}")
        out[i] = sb if sa == 1 else sa
    return out


def _coef(v, dtype):
    """A Python scalar as the kernel's (double, int64) pair. Integer results take the scalar
    truncated toward zero, as PyTorch's Scalar.to<int64_t>() does."""
    if dtype.is_floating_point:
        return float(v), 0
    try:
        i = int(v)
    except (OverflowError, ValueError):
        raise RuntimeError("value cannot be converted to type int64_t without overflow") from None
    if not _INT64_MIN <= i <= _INT64_MAX:
        raise RuntimeError("value cannot be converted to type int64_t without overflow")
    return float(i), i


def _add_product(shape, dtype, self, alpha, beta):
    """The meta result of the add* products: the output, then `seed`, what it holds before
    the product is added (ops.yaml `init:`): self when it contributes; with beta == 0
    PyTorch ignores self entirely, so NaN in it does not propagate. Then alpha and beta as
    the kernel's (double, int64) pairs."""
    ad, ai = _coef(alpha, dtype)
    bd, bi = _coef(beta, dtype)
    return meta_of(((shape, dtype),), None,
                   {"seed": self if beta != 0 else None, "alpha_d": ad, "alpha_i": ai, "beta_d": bd, "beta_i": bi})


# --- mm / addmm ----------------------------------------------------------------------------

def _check_mm_shapes(m1, m2):
    if m1._shape[1] != m2._shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({m1._shape[0]}x{m1._shape[1]} and "
                           f"{m2._shape[0]}x{m2._shape[1]})")


def mm_meta(self, mat2):
    if len(self._shape) != 2:
        raise RuntimeError("self must be a matrix")
    if len(mat2._shape) != 2:
        raise RuntimeError("mat2 must be a matrix")
    _check_mm_shapes(self, mat2)
    if self._dtype is not mat2._dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_CPP_NAME[self._dtype]} != "
                           f"{_CPP_NAME[mat2._dtype]}")
    if self._dtype is D.bool:
        raise _not_implemented("addmm_impl_cpu_", self._dtype)
    return (self._shape[0], mat2._shape[1]), self._dtype


def _check_addmm(self, mat1, mat2):
    if self._dtype is not mat2._dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {self._dtype._torch_name} and "
                           f"{mat2._dtype._torch_name}")
    if mat1._dtype is not mat2._dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {mat1._dtype._torch_name} and "
                           f"{mat2._dtype._torch_name}")


def addmm_meta(self, mat1, mat2, beta=1, alpha=1):
    _check_addmm(self, mat1, mat2)
    if mat1.dim() != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {mat1.dim()}-D tensor")
    if mat2.dim() != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {mat2.dim()}-D tensor")
    _check_mm_shapes(mat1, mat2)
    shape = (mat1._shape[0], mat2._shape[1])
    self_ = _expand(self, shape)
    if mat1._dtype is D.bool:
        raise _not_implemented("addmm_impl_cpu_", mat1._dtype)
    return _add_product(shape, mat1._dtype, self_, alpha, beta)


# --- bmm / baddbmm / addbmm ------------------------------------------------------------------

def _check_bmm(batch1, batch2):
    if batch1.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    bs, k = batch1._shape[0], batch1._shape[2]
    if batch2._shape[0] != bs or batch2._shape[1] != k:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{bs}, {k}] but got: "
                           f"[{batch2._shape[0]}, {batch2._shape[1]}].")


def _check_same_scalar_type(a, b):
    if a._dtype is not b._dtype:
        raise RuntimeError(f"expected scalar type {a._dtype._torch_name} but found {b._dtype._torch_name}")


def bmm_meta(self, mat2):
    _check_bmm(self, mat2)
    _check_same_scalar_type(self, mat2)
    if self._dtype is D.bool:
        raise _not_implemented("bmm", self._dtype)
    return (self._shape[0], self._shape[1], mat2._shape[2]), self._dtype


def baddbmm_meta(self, batch1, batch2, beta=1, alpha=1):
    shape = (_size(batch1, 0), _size(batch1, 1), _size(batch2, 2))
    self_ = _expand(self, shape)
    if self._dtype is not batch1._dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {_CPP_NAME[self._dtype]}, batch1: "
                           f"{_CPP_NAME[batch1._dtype]}, batch2: {_CPP_NAME[batch2._dtype]}")
    _check_bmm(batch1, batch2)
    _check_same_scalar_type(batch1, batch2)
    if batch1._dtype is D.bool:
        raise _not_implemented("baddbmm", batch1._dtype)
    return _add_product(shape, batch1._dtype, self_, alpha, beta)


def addbmm_meta(self, batch1, batch2, beta=1, alpha=1):
    shape = (_size(batch1, 1), _size(batch2, 2))
    self_ = _expand(self, shape)
    if batch1.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if batch1._shape[0] != batch2._shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {batch1._shape[0]} and "
                           f"{batch2._shape[0]}")
    if batch1._shape[2] != batch2._shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({batch1._shape[1]}x{batch1._shape[2]} and "
                           f"{batch2._shape[1]}x{batch2._shape[2]})")
    # PyTorch runs addmm_ once per batch: its dtype checks (and only those) apply, and
    # with no batches at all there is nothing to check.
    if batch1._shape[0] > 0:
        _check_addmm(self, batch1, batch2)
    if self._dtype is D.bool:
        raise _not_implemented("addmm_impl_cpu_", self._dtype)
    return _add_product(shape, self._dtype, self_, alpha, beta)


# --- mv / addmv / dot / vdot -------------------------------------------------------------

def _check_addmv(self_dim, self_numel, self_size0, mat, vec):
    if not (mat.dim() == 2 and vec.dim() == 1 and self_dim <= 1):
        raise RuntimeError(f"vector + matrix @ vector expected, got {self_dim}, {mat.dim()}, {vec.dim()}")
    if not (mat._shape[1] == vec._shape[0] and (mat._shape[0] == self_numel or self_numel == 1)):
        raise RuntimeError(f"size mismatch, got input ({self_size0()}), mat ({mat._shape[0]}x{mat._shape[1]}), "
                           f"vec ({vec._shape[0]})")


def mv_meta(self, vec):
    n0 = _size(self, 0)
    _check_addmv(1, n0, lambda: n0, self, vec)
    if not (vec._dtype is self._dtype):
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {vec._dtype._torch_name}, "
                           f"{self._dtype._torch_name}, and {vec._dtype._torch_name}")
    if self._dtype is D.bool:
        raise _not_implemented("addmv_impl_cpu", self._dtype)
    return (n0,), vec._dtype


def addmv_meta(self, mat, vec, beta=1, alpha=1):
    _check_addmv(self.dim(), self.numel(), lambda: _size(self, 0), mat, vec)
    if not (self._dtype is mat._dtype is vec._dtype):
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {self._dtype._torch_name}, "
                           f"{mat._dtype._torch_name}, and {vec._dtype._torch_name}")
    if mat._dtype is D.bool:
        raise _not_implemented("addmv_impl_cpu", mat._dtype)
    return _add_product((mat._shape[0],), vec._dtype, self, alpha, beta)


def _check_dot(self, other):
    if self.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {self.dim()}D and {other.dim()}D tensors")
    if self._dtype is not other._dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {self._dtype._torch_name} "
                           f"and {other._dtype._torch_name}")
    n, m = self._shape[0], other._shape[0]
    if n != m:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same number "
                           f"of elements, but got {n} and {m} elements respectively")
    if self._dtype is D.bool:
        raise _not_implemented("dot", self._dtype)


def dot_meta(self, tensor):
    _check_dot(self, tensor)
    return (), self._dtype


def vdot_meta(self, other):
    # real dtypes only: conjugating self changes nothing
    _check_dot(self, other)
    return (), self._dtype


# --- outer / addr: pointwise in PyTorch, so they promote -----------------------------------

def _column(op, name, v):
    if v.dim() != 1:
        raise RuntimeError(f"{op}: Expected 1-D argument {name}, but got {v.dim()}-D")
    return _view(v, (v._shape[0], 1), (v._stride[0], 1))


def outer(self, vec2):
    col = _column("outer", "self", self)
    if vec2.dim() != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {vec2.dim()}-D")
    return F.mul(col, vec2)


def _check_addr_scalar(dtype, v, name):
    if isinstance(v, bool) and dtype is not D.bool:
        raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
    if not dtype.is_floating_point and isinstance(v, float):
        raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point number.")


def addr(self, vec1, vec2, beta=1, alpha=1):
    col = _column("addr", "vec1", vec1)
    if vec2.dim() != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec2, but got {vec2.dim()}-D")
    self_ = _expand(self, (vec1._shape[0], vec2._shape[0]))
    dtype = result_type_of([self_, vec1, vec2])   # self as expanded: 0-d self counts as dimensioned
    _check_addr_scalar(dtype, beta, "beta")
    _check_addr_scalar(dtype, alpha, "alpha")
    col, row = to_dtype(col, dtype), to_dtype(vec2, dtype)
    if dtype is D.bool:
        # (beta && self) || (alpha && vec1 && vec2)
        prod = F.mul(col, row) if alpha else F.mul(F.mul(col, row), False)
        return F.add(to_dtype(self_, dtype), prod) if beta else prod
    # beta * self + alpha * vec1 * vec2, computed in the common dtype
    prod = F.mul(col, row) if alpha == 1 else F.mul(F.mul(col, alpha), row)
    if beta == 0:
        # self is ignored, NaN included; the result still has the full shape
        return prod
    base = to_dtype(self_, dtype)
    return F.add(base if beta == 1 else F.mul(base, beta), prod)


# --- matmul ----------------------------------------------------------------------------

def _should_fold(t1, t2):
    """at::native's should_fold: N-D @ 1-D/2-D (or the mirror) becomes one mm/mv when
    the larger operand's batch folds into its rows without a copy."""
    t1_larger = t1.dim() >= t2.dim()
    a = t1 if t1_larger else _transpose_last(t2)
    dim_a = a.dim()
    dim_b = t2.dim() if t1_larger else t1.dim()
    if not (dim_a >= 3 and dim_b <= 2):
        return False
    # folding keeps the backward of the smaller operand from materialising the broadcast
    if (t2 if t1_larger else t1).requires_grad:
        return True
    if t1.dim() == 2:
        return False
    if a.numel() == 0:
        return True
    shape, stride = a._shape, a._stride
    for i in range(dim_a - 2):
        if stride[i] != stride[i + 1] * shape[i + 1]:
            return False
    return True


def _fold_rows(t):
    """t (..., r, c) as a (prod(...) * r, c) matrix: a view when the leading dims are
    contiguous among themselves, else a contiguous copy first."""
    rows = numel(t._shape[:-1])
    cols = t._shape[-1]
    shape, stride = t._shape, t._stride
    if t.numel() != 0 and all(stride[i] == stride[i + 1] * shape[i + 1] for i in range(len(shape) - 2)):
        return _view(t, (rows, cols), (stride[-2], stride[-1]))
    from pytorchlite._kernels.copy import clone
    return _contiguous_view(clone(t), (rows, cols))


def _mm(a, b):
    """mm's impl for a's device (matmul runs below autograd and dispatch)."""
    return getattr(impls, "mm__" + a._device.type)(a, b)


def _mv(a, v):
    """mv's impl; a device without one (CUDA: cuBLAS GEMM only) takes v as a column."""
    if a._device.type == "cpu":
        return impls.mv__cpu(a, v)
    mv_meta(a, v)                                   # PyTorch's checks and messages
    r = _mm(a, _view(v, (v._shape[0], 1), (v._stride[0], 0)))
    return _contiguous_view(r, (r._shape[0],))


def _dot(a, b):
    """dot's impl; a device without one computes a 1 x k times k x 1 product."""
    if a._device.type == "cpu":
        return impls.dot__cpu(a, b)
    dot_meta(a, b)                                  # PyTorch's checks and messages
    k = a._shape[0]
    r = _mm(_view(a, (1, k), (0, a._stride[0])), _view(b, (k, 1), (b._stride[0], 0)))
    return _contiguous_view(r, ())


def matmul_meta(self, other):
    """PyTorch's _matmul_impl: every case but the broadcast batched product is another
    operator's impl (run here, below autograd and dispatch, as PyTorch's at:: calls are);
    the broadcast case is this operator's own kernel call. The impls are those of the
    operands' device (`_mm`, `_mv`, `_dot`)."""
    d1, d2 = len(self._shape), len(other._shape)
    if d1 == 2 and d2 == 2:
        return Done(_mm(self, other))
    if d1 == 0 or d2 == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {d1}D and {d2}D")
    if d1 == 1 and d2 == 1:
        return Done(_dot(self, other))
    if d1 == 2 and d2 == 1:
        return Done(_mv(self, other))
    if d1 == 1 and d2 == 2:
        r = _mm(_view(self, (1, self._shape[0]), (0, self._stride[0])), other)
        return Done(_contiguous_view(r, (r._shape[1],)))
    if _should_fold(self, other):
        transpose = d2 > d1
        t1 = _transpose_last(other) if transpose else self
        t2 = ((_transpose_last(self) if d1 == 2 else self) if transpose else other)
        out_shape = list(t1._shape[:-1])
        folded = _fold_rows(t1)
        if t2.dim() == 2:
            out_shape.append(t2._shape[1])
            r = _contiguous_view(_mm(folded, t2), out_shape)
            if transpose:
                from pytorchlite._kernels.copy import clone
                r = clone(_transpose_last(r))
            return Done(r)
        return Done(_contiguous_view(_mv(folded, t2), out_shape))
    # broadcast batched product; 1-D operands become a row (left) or a column (right)
    n = self._shape[-2] if d1 > 1 else 1
    m1 = self._shape[-1]
    m2 = other._shape[-2] if d2 > 1 else other._shape[0]
    p = other._shape[-1] if d2 > 1 else 1
    batch = _infer_size(self._shape[:max(d1 - 2, 0)], other._shape[:max(d2 - 2, 0)])
    nbatch = numel(batch)
    if m1 != m2:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{nbatch}, {m1}] but got: "
                           f"[{nbatch}, {m2}].")
    _check_same_scalar_type(self, other)
    if self._dtype is D.bool:
        raise _not_implemented("bmm", self._dtype)
    a = self if d1 > 1 else _view(self, (1, m1), (0, self._stride[0]))
    b = other if d2 > 1 else _view(other, (m2, 1), (other._stride[0], 0))
    a_st = _expand_strides(a._shape, a._stride, batch + [n, m1])
    b_st = _expand_strides(b._shape, b._stride, batch + [m2, p])
    kbatch = batch
    if len(batch) + 2 > MAX_DIMS:
        # more batch dims than a descriptor holds: the size-1 ones select nothing, so the
        # kernel runs without them (at most 62 batch dims are larger than 1)
        keep = [k for k, s in enumerate(batch) if s != 1] if nbatch else []
        kbatch = [batch[k] for k in keep] if nbatch else [0]
        a_st = [a_st[k] for k in keep] + list(a_st[-2:]) if nbatch else [0] + list(a_st[-2:])
        b_st = [b_st[k] for k in keep] + list(b_st[-2:]) if nbatch else [0] + list(b_st[-2:])
    a = _view(a, kbatch + [n, m1], a_st)
    b = _view(b, kbatch + [m2, p], b_st)
    # the kernel writes (*batch, n, p); a 1-D operand's dimension is then dropped
    kernel_shape = tuple(kbatch + [n, p])
    shape = tuple(batch + ([n] if d1 > 1 else []) + ([p] if d2 > 1 else []))
    spec = (shape, self._dtype) if shape == kernel_shape else (shape, self._dtype, kernel_shape)
    return meta_of((spec,), {"self": a, "other": b}, None)
