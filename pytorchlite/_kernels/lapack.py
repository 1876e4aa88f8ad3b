"""Kernel entries for the LAPACK-backed linear algebra of `pytorchlite.linalg`: inv, det,
slogdet, solve, cholesky, qr, svd, eigh, lstsq, solve_triangular (BLAS trsm), the _ex forms
of inv and cholesky, and pinv (see docs/architecture.md).

Each entry checks its input the way PyTorch does, in PyTorch's order and words, then copies
the matrices into one buffer of column-major matrices (LAPACK's layout: the contiguous
transpose of each matrix) and calls kernels/lapack.c, which loops over the batch. Results
are handed back as transposed views of such buffers, so they have the column-major strides
PyTorch's own results have. A factorization that fails (a singular matrix, a matrix that
is not positive-definite) raises `pytorchlite.linalg.LinAlgError`, a RuntimeError, with
PyTorch's message, including "(Batch element i): " for batched input.

Only float32 and float64 are supported, like PyTorch's CPU LAPACK (no complex dtypes here).
"""

from pytorchlite import _dtype as D
from pytorchlite import return_types
from pytorchlite._C import check, ffi, lib
from pytorchlite._kernels.linalg import _infer_size, _transpose_last, _view
from pytorchlite._core import copy_into, descriptors as _descs, empty as _empty
from pytorchlite._ops import ops as F


class LinAlgError(RuntimeError):
    """Raised when a matrix function fails on its input's values (a singular matrix, a
    matrix that is not positive-definite), like `torch.linalg.LinAlgError`."""


LinAlgError.__module__ = "pytorchlite.linalg"


# --- helpers ------------------------------------------------------------------------------

def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


def _ptr(t):
    return t._storage.ptr + t._offset * t._dtype.itemsize


def _fmat(t, shape=None, dtype=None):
    """A contiguous buffer whose every matrix holds t's matrix (of t broadcast to `shape`)
    in column-major order: the buffer is t.mT made contiguous, of shape (..., n, m)."""
    shape = tuple(shape) if shape is not None else t._shape
    if shape != t._shape:
        from pytorchlite._kernels.linalg import _expand
        t = _expand(t, shape)
    out = _empty(shape[:-2] + (shape[-1], shape[-2]), dtype or t._dtype, t._device)
    copy_into(out, _transpose_last(t))
    return out


def _colmajor(batch, rows, cols, dtype, device):
    """A new buffer of column-major rows x cols matrices and its (..., rows, cols) view."""
    buf = _empty(tuple(batch) + (cols, rows), dtype, device)
    return buf, _transpose_last(buf)


def _check_matrix(op, A, square=True):
    if len(A._shape) < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if square and A._shape[-1] != A._shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{A._shape[-2]} by {A._shape[-1]} matrices")


def _check_float(op, A, lowp_name=None):
    """Integer inputs: PyTorch's checkFloatingOrComplex. float16/bfloat16: the error of
    the kernel that PyTorch's dispatch reaches (`lowp_name`), or the low-precision check."""
    dt = A._dtype
    if not dt.is_floating_point:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {dt._torch_name}")
    if dt not in (D.float32, D.float64):
        if lowp_name is None:
            raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {dt._torch_name}")
        raise NotImplementedError(f"\"{lowp_name}\" not implemented for '{dt._torch_name}'")


def _cpu(op, *ts):
    for t in ts:
        if t._device.type != "cpu":
            raise NotImplementedError(f"{op}: only CPU tensors are supported")


def _infos(n):
    return ffi.new("int32_t[]", max(n, 1))


def _raise_first(op, infos, nbatch, batched, message):
    """The first failed matrix's error; `message(info)` says what happened."""
    import numpy as np
    bad = np.flatnonzero(np.frombuffer(ffi.buffer(infos, 4 * nbatch), dtype=np.int32)) if nbatch else ()
    for b in bad[:1]:
        b = int(b)
        if infos[b] != 0:
            where = f"(Batch element {b}): " if batched else ""
            raise LinAlgError(f"{op}: {where}{message(int(infos[b]))}")


def _singular(info):
    return (f"The diagonal element {info} is zero, the inversion could not be completed because the "
            f"input matrix is singular.")


# --- inverse, determinants, solve ----------------------------------------------------------

def _info_tensor(info, nb, batch, device):
    """The LAPACK infos of a batch as an int32 tensor of the batch's shape (the `info` of
    the _ex functions)."""
    import numpy as np
    from pytorchlite import tensor
    vals = np.frombuffer(ffi.buffer(info, 4 * nb), dtype=np.int32) if nb else np.zeros(0, np.int32)
    return tensor(vals.reshape(batch).copy(), dtype=D.int32, device=device)


def _inv(A):
    """(inverse, infos, batch size): the infos are not checked here."""
    op = "linalg.inv"
    _check_matrix(op, A)
    _check_float(op, A)
    _cpu(op, A)
    n = A._shape[-1]
    batch = A._shape[:-2]
    nb = _prod(batch)
    info = _infos(nb)
    if nb == 0 or n == 0:
        return _colmajor(batch, n, n, A._dtype, A._device)[1], info, nb
    a = _fmat(A)
    x, xv = _colmajor(batch, n, n, A._dtype, A._device)
    # X = A^{-1} I: the identity, written through the column-major view (symmetric anyway)
    _fill_all(x, 0.0)
    _fill_all(_diag_view(x), 1.0)
    ipiv = ffi.new("int32_t[]", nb * n)
    check(lib.ptl_lapack_solve(A._dtype.code, nb, n, n, _ptr(a), _ptr(x), ipiv, info), op)
    return xv, info, nb


def linalg_inv(A):
    x, info, nb = _inv(A)
    _raise_first("linalg.inv", info, nb, len(A._shape) > 2, _singular)
    return x


def linalg_inv_ex(A, check_errors=False):
    x, info, nb = _inv(A)
    if check_errors:
        _raise_first("linalg.inv_ex", info, nb, len(A._shape) > 2, _singular)
    return return_types.linalg_inv_ex(x, _info_tensor(info, nb, A._shape[:-2], A._device))


def _fill_desc(t):
    return _descs((t,), t._shape)


def _diag_view(t):
    """The main diagonals of the (..., n, n) contiguous tensor t, as a view."""
    n = t._shape[-1]
    return _view(t, t._shape[:-1], t._stride[:-2] + (n + 1,))


def _lu_det(op, A, want):
    _check_matrix(op, A)
    _check_float(op, A, "lu_cpu")
    _cpu(op, A)
    n = A._shape[-1]
    batch = A._shape[:-2]
    nb = _prod(batch)
    outs = {k: _empty(batch, A._dtype, A._device) for k in want}
    if nb == 0:
        return outs
    if n == 0:
        for k, t in outs.items():
            _fill_all(t, 0.0 if k == "logabs" else 1.0)
        return outs
    a = _fmat(A)
    ipiv = ffi.new("int32_t[]", nb * n)
    info = _infos(nb)
    ptrs = [(_ptr(outs[k]) if k in outs else 0) for k in ("sign", "logabs", "det")]
    check(lib.ptl_lapack_lu(A._dtype.code, nb, n, n, _ptr(a), ipiv, info, *ptrs), op)
    return outs


def _fill_all(t, v):
    check(lib.ptl_fill(_fill_desc(t), float(v), int(v)), "fill_")


def linalg_det(A):
    return _lu_det("linalg.det", A, ("det",))["det"]


def linalg_slogdet(A):
    r = _lu_det("linalg.slogdet", A, ("sign", "logabs"))
    return return_types.linalg_slogdet(r["sign"], r["logabs"])


def _solve_is_vector(A, B):
    """PyTorch's linalg_solve_is_vector_rhs: B is a (batch of) vector(s)."""
    return len(B._shape) == 1 or (len(B._shape) == len(A._shape) - 1 and B._shape == A._shape[:-1])


def linalg_solve(A, B, left=True):
    op = "linalg.solve"
    _check_float(op, A, "lu_cpu")
    if A._dtype is not B._dtype:
        raise RuntimeError(f"{op}: Expected A and B to have the same dtype, but found A of type "
                           f"{A._dtype._torch_name} and B of type {B._dtype._torch_name} instead")
    _check_matrix(op, A)
    _cpu(op, A, B)
    vector = _solve_is_vector(A, B)
    n = A._shape[-1]
    Bm = B.unsqueeze(-1) if vector else B
    if len(Bm._shape) < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    eq = "AX = B" if left else "XA = B"
    rows = Bm._shape[-2] if left else Bm._shape[-1]
    if rows != n or (vector and not left):
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation {eq} "
                           f"({A._shape[-2]}x{A._shape[-1]} and {Bm._shape[-2]}x{Bm._shape[-1]})")
    if not left:
        # X A = B  <=>  A^T X^T = B^T
        A = _transpose_last(A)
        Bm = _transpose_last(Bm)
    batch = tuple(_infer_size(Bm._shape[:-2], A._shape[:-2]))
    k = Bm._shape[-1]
    nb = _prod(batch)
    xbuf, xv = _colmajor(batch, n, k, A._dtype, A._device)
    if nb and n and k:
        a = _fmat(A, batch + (n, n))
        copy_into(xv, Bm)
        ipiv = ffi.new("int32_t[]", nb * n)
        info = _infos(nb)
        check(lib.ptl_lapack_solve(A._dtype.code, nb, n, k, _ptr(a), _ptr(xbuf), ipiv, info), op)
        _raise_first("torch.linalg.solve", info, nb, len(batch) > 0,
                     lambda i: "The solver failed because the input matrix is singular.")
    if not left:
        xv = _transpose_last(xv)
    return xv.squeeze(-1) if vector else xv


# --- factorizations ------------------------------------------------------------------------

def _cholesky(A, upper):
    """(factor, infos, batch size): the infos are not checked here."""
    op = "linalg.cholesky"
    _check_matrix(op, A)
    _check_float(op, A, "cholesky_cpu")
    _cpu(op, A)
    n = A._shape[-1]
    batch = A._shape[:-2]
    nb = _prod(batch)
    info = _infos(nb)
    if nb == 0 or n == 0:
        return _colmajor(batch, n, n, A._dtype, A._device)[1], info, nb
    a = _fmat(A)
    check(lib.ptl_lapack_cholesky(A._dtype.code, nb, n, _ptr(a), 1 if upper else 0, info), op)
    return _transpose_last(a), info, nb


def _not_pd(i):
    return ("The factorization could not be completed because the input is not positive-definite "
            f"(the leading minor of order {i} is not positive-definite).")


def linalg_cholesky(A, upper=False):
    L, info, nb = _cholesky(A, upper)
    _raise_first("linalg.cholesky", info, nb, len(A._shape) > 2, _not_pd)
    return L


def linalg_cholesky_ex(A, upper=False, check_errors=False):
    L, info, nb = _cholesky(A, upper)
    if check_errors:
        _raise_first("linalg.cholesky_ex", info, nb, len(A._shape) > 2, _not_pd)
    return return_types.linalg_cholesky_ex(L, _info_tensor(info, nb, A._shape[:-2], A._device))


def linalg_solve_triangular(A, B, upper, left=True, unitriangular=False):
    """BLAS trsm on column-major copies; X comes back column-major, as PyTorch's does."""
    op = "linalg.solve_triangular"
    _check_matrix(op, A)
    if len(B._shape) < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    if (A._shape[-2] != B._shape[-2]) if left else (A._shape[-1] != B._shape[-1]):
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation {'AX = B' if left else 'XA = B'} "
                           f"({A._shape[-2]}x{A._shape[-1]} and {B._shape[-2]}x{B._shape[-1]})")
    batch = tuple(_infer_size(B._shape[:-2], A._shape[:-2]))
    if A._dtype not in (D.float32, D.float64):
        raise NotImplementedError(f"\"triangular_solve_cpu\" not implemented for '{A._dtype._torch_name}'")
    _cpu(op, A, B)
    m, n = B._shape[-2:]
    k = A._shape[-1]
    nb = _prod(batch)
    xbuf, xv = _colmajor(batch, m, n, A._dtype, A._device)   # B is cast to A's dtype, as in PyTorch
    if nb and m and n:
        a = _fmat(A, batch + (k, k))
        copy_into(xv, B)
        check(lib.ptl_lapack_trsm(A._dtype.code, nb, m, n, _ptr(a), _ptr(xbuf), 1 if left else 0,
                                  1 if upper else 0, 1 if unitriangular else 0), op)
    return xv


# --- pseudo-inverse ----------------------------------------------------------------------

def atol_rtol(A, atol, rtol):
    """PyTorch's get_atol_rtol: float64 tensors (atol, rtol); rtol defaults to
    eps * max(m, n), or to 0 where a positive atol is given."""
    from pytorchlite import Tensor, tensor

    def as_tensor(v):
        if isinstance(v, Tensor):
            return v if v._dtype.is_floating_point else v.to(D.float64)
        return tensor(float(v), dtype=D.float64, device=A._device)
    a = as_tensor(atol) if atol is not None else tensor(0.0, dtype=D.float64, device=A._device)
    if rtol is not None:
        return a, as_tensor(rtol)
    default = D.finfo(A._dtype).eps * max(A._shape[-1], A._shape[-2])
    if atol is None:
        return a, tensor(default, dtype=D.float64, device=A._device)
    return a, F.where(a > 0, 0.0, default)


def linalg_pinv(A, atol=None, rtol=None, hermitian=False):
    """PyTorch's linalg_pinv: V diag(1/s) U^T over the singular values above the tolerance
    (U diag(1/l) U^T over the eigenvalues with hermitian=True)."""
    if len(A._shape) < 2 or A._dtype not in (D.float32, D.float64):
        raise RuntimeError(f"linalg.pinv({A._dtype._torch_name}{{{list(A._shape)}}}): expected a tensor with 2 or more "
                           "dimensions of float, double, cfloat or cdouble types")
    _cpu("linalg.pinv", A)
    atol, rtol = atol_rtol(A, atol, rtol)
    m, n = A._shape[-2:]
    if m == 0 or n == 0 or _prod(A._shape) == 0:
        return F.zeros(A._shape[:-2] + (n, m), dtype=A._dtype, device=A._device)
    if not hermitian:
        U, S, Vh = _linalg_svd(A, False, True)
        largest = S.narrow(-1, 0, 1)              # singular values come in descending order
        tol = F.maximum(atol.unsqueeze(-1), rtol.unsqueeze(-1) * largest)
        s_inv = F.where(S > tol, S.reciprocal(), 0.0).to(A._dtype)
        return F.matmul(_transpose_last(Vh) * s_inv.unsqueeze(-2), _transpose_last(U))
    L, V = _linalg_eigh(A, "L", True)
    L_abs = L.abs()
    tol = F.maximum(atol.unsqueeze(-1), rtol.unsqueeze(-1) * L_abs.amax(-1, True))
    l_inv = F.where(L_abs > tol, L.reciprocal(), 0.0).to(A._dtype)
    return F.matmul(V * l_inv.unsqueeze(-2), _transpose_last(V))


def linalg_qr(A, mode="reduced"):
    op = "linalg.qr"
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
                           f"'r', or 'complete'")
    _check_matrix(op, A, square=False)
    _check_float(op, A, "geqrf_cpu")
    _cpu(op, A)
    m, n = A._shape[-2:]
    k = min(m, n)
    batch = A._shape[:-2]
    nb = _prod(batch)
    qcols = m if mode == "complete" else (0 if mode == "r" else k)
    rrows = m if mode == "complete" else k
    qbuf, q = _colmajor(batch, m, qcols, A._dtype, A._device)
    if mode == "r":
        q = _empty((0,), A._dtype, A._device)   # PyTorch's Q for mode='r': an empty 1-D tensor
    rbuf, r = _colmajor(batch, rrows, n, A._dtype, A._device)
    if nb and m:
        a = _fmat(A)
        info = _infos(nb)
        check(lib.ptl_lapack_qr(A._dtype.code, nb, m, n, _ptr(a), _ptr(qbuf) if qcols else 0, qcols,
                                _ptr(rbuf), rrows, info), op)
    return return_types.linalg_qr(q, r)


def _linalg_svd(A, full_matrices=False, compute_uv=True, driver=None):
    op = "linalg.svd"
    _check_matrix(op, A, square=False)
    _check_float(op, A, "linalg_svd_cpu")
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs "
                           "with cuSOLVER backend.")
    _cpu(op, A)
    m, n = A._shape[-2:]
    k = min(m, n)
    batch = A._shape[:-2]
    nb = _prod(batch)
    jobz = "N" if not compute_uv else ("A" if full_matrices else "S")
    ucols = (m if full_matrices else k) if compute_uv else 0
    vrows = (n if full_matrices else k) if compute_uv else 0
    ubuf, u = _colmajor(batch, m if compute_uv else 0, ucols, A._dtype, A._device)
    vbuf, vh = _colmajor(batch, vrows, n if compute_uv else 0, A._dtype, A._device)
    s = _empty(batch + (k,), A._dtype, A._device)
    if nb and k:
        a = _fmat(A)
        info = _infos(nb)
        check(lib.ptl_lapack_svd(A._dtype.code, nb, m, n, _ptr(a), _ptr(s), _ptr(ubuf) if ucols else 0,
                                 _ptr(vbuf) if vrows else 0, ord(jobz), info), op)
        _raise_first(op, info, nb, len(batch) > 0, lambda i: (
            "The algorithm failed to converge because the input matrix contained non-finite values."))
    elif nb and compute_uv and full_matrices:
        # an empty side: the other factor is the identity (as LAPACK-free PyTorch returns)
        _fill_all(u, 0.0)
        _fill_all(vh, 0.0)
        _fill_all(_diag_view(ubuf), 1.0)
        _fill_all(_diag_view(vbuf), 1.0)
    if not compute_uv:   # PyTorch's placeholders: empty 1-D tensors
        u, vh = _empty((0,), A._dtype, A._device), _empty((0,), A._dtype, A._device)
    return return_types._linalg_svd(u, s, vh)


def _linalg_eigh(A, UPLO="L", compute_v=True):
    op = "linalg.eigh"
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    _check_matrix(op, A)
    if A._dtype not in (D.float32, D.float64):
        raise NotImplementedError(f"\"linalg_eigh_cpu\" not implemented for '{A._dtype._torch_name}'")
    _cpu(op, A)
    n = A._shape[-1]
    batch = A._shape[:-2]
    nb = _prod(batch)
    w = _empty(batch + (n,), A._dtype, A._device)
    if nb == 0 or n == 0:
        v = _colmajor(batch, n, n, A._dtype, A._device)[1] if compute_v else _empty((0,), A._dtype, A._device)
        return return_types._linalg_eigh(w, v)
    a = _fmat(A)
    info = _infos(nb)
    check(lib.ptl_lapack_eigh(A._dtype.code, nb, n, _ptr(a), _ptr(w), 1 if compute_v else 0,
                              1 if UPLO in ("U", "u") else 0, info), op)
    _raise_first(op, info, nb, len(batch) > 0, lambda i: (
        "The algorithm failed to converge because the input matrix is ill-conditioned or has too many "
        f"repeated eigenvalues (error code: {i})."))
    v = _transpose_last(a) if compute_v else _empty((0,), A._dtype, A._device)
    return return_types._linalg_eigh(w, v)


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def linalg_lstsq(self, b, rcond=None, driver=None):
    """min ||A X - B|| with LAPACK's gelsy (the CPU default) or gelsd. 'gels' is served by
    gelsy and 'gelss' by gelsd (same solutions; each reports what PyTorch's driver does)."""
    A, B = self, b
    op = "torch.linalg.lstsq"
    if A._dtype not in (D.float32, D.float64) or B._dtype not in (D.float32, D.float64):
        if A._dtype is B._dtype or not (A._dtype.is_floating_point and B._dtype.is_floating_point):
            raise RuntimeError("This function doesn't handle types other than float and double")
    if A._dtype is not B._dtype:
        raise RuntimeError(f"{op}: Expected input and other to have the same dtype, but got input's dtype "
                           f"{A._dtype._torch_name} and other's dtype {B._dtype._torch_name}")
    if len(A._shape) < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if len(B._shape) < 1:
        raise RuntimeError(f"{op}: other must have at least 1 dimension.")
    if not (len(A._shape) >= len(B._shape) and len(A._shape) - len(B._shape) <= 1):
        raise RuntimeError(f"{op}: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    vector = len(B._shape) == len(A._shape) - 1
    Bm = B.unsqueeze(-1) if vector else B
    if A._shape[-2] != Bm._shape[-2]:
        if vector:
            raise RuntimeError(f"{op}: input.size(-2) should match other.size(-1)")
        raise RuntimeError(f"{op}: input.size(-2) should match other.size(-2)")
    if driver is None:
        driver = "gelsy"
    if driver not in _DRIVERS:
        raise RuntimeError(f"{op}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    _cpu(op, A, B)
    m, n = A._shape[-2:]
    k = Bm._shape[-1]
    batch = tuple(_infer_size(A._shape[:-2], Bm._shape[:-2]))
    nb = _prod(batch)
    dt, dev = A._dtype, A._device
    if rcond is None:
        rcond = -1.0 if driver == "gels" else D.finfo(dt).eps * max(m, n)
    ldb = max(m, n)
    xbuf, xfull = _colmajor(batch, ldb, k, dt, dev)
    use_gelsd = driver in ("gelsd", "gelss")
    svals = _empty(batch + (min(m, n),) if use_gelsd else (0,), dt, dev)
    rank = _empty(batch if driver != "gels" else (0,), D.int64, dev)
    if nb and k and m and n:
        a = _fmat(A, batch + (m, n))
        _fill_all(xfull, 0.0)
        copy_into(xfull.narrow(-2, 0, m), Bm)
        info = _infos(nb)
        rk = ffi.new("int64_t[]", max(nb, 1))
        check(lib.ptl_lapack_lstsq(dt.code, 1 if use_gelsd else 0, nb, m, n, k, _ptr(a), _ptr(xbuf),
                                   _ptr(svals) if use_gelsd else 0, rk, float(rcond), info), op)
        _raise_first("torch.linalg.lstsq", info, nb, len(batch) > 0, lambda i: (
            "The least squares solution could not be computed because the input matrix does not have full rank "
            f"(error code: {i})."))
        if driver != "gels":
            copy_into(rank, _rank_tensor(rk, nb, batch))
    else:
        if nb and k and n:
            _fill_all(xfull, 0.0)
        if driver != "gels":
            _fill_all(rank, 0)
        if use_gelsd:
            _fill_all(svals, 0.0)
    solution = xfull.narrow(-2, 0, n)
    residuals = _empty((0,), dt, dev)
    if m > n and driver != "gelsy":
        full_rank = driver == "gels" or all(int(v) == n for v in rank.reshape(-1).tolist())
        if full_rank:
            # the vector case keeps its trailing 1, as PyTorch's does
            residuals = (xfull.narrow(-2, n, m - n) ** 2).sum(-2)
    if vector:
        solution = solution.squeeze(-1)
    return return_types.linalg_lstsq(solution, residuals, rank, svals)


def _rank_tensor(rk, nb, batch):
    import numpy as np
    from pytorchlite import tensor
    vals = np.frombuffer(ffi.buffer(rk, nb * 8), dtype=np.int64).reshape(batch)
    return tensor(vals.copy())
