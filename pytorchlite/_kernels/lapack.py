"""The rules of the LAPACK-backed linear algebra of `pytorchlite.linalg`: inv, det,
slogdet, solve, cholesky, qr, svd, eigh, lstsq, solve_triangular (BLAS trsm) and the _ex
forms of inv and cholesky (meta and finish functions of structured kernels, see
codegen/structured.py and docs/architecture.md), and pinv (from other operators, for its
own gradient).

Each meta function checks its input the way PyTorch does, in PyTorch's order and words,
and says what the generated impl (ops.yaml) allocates: the outputs, and the scratch
tensors the kernel works in (a work copy of A, pivots, one `info` per matrix). LAPACK
wants batches of column-major matrices: the outputs and work copies are column-major
(COLUMN_MAJOR specs), so the results have the strides PyTorch's own have, and the inputs
are copied into them (`init:`); an input the kernel only reads (qr, trsm) is handed over
as its transposed view, read in place when it is column-major already. kernels/lapack.c
loops over the batch. The finish functions turn the infos of a factorization that failed
(a singular matrix, a matrix that is not positive-definite) into
`pytorchlite.linalg.LinAlgError`, a RuntimeError, with PyTorch's message, including
"(Batch element i): " for batched input.

Only float32 and float64 are supported, like PyTorch's CPU LAPACK (no complex dtypes here).
"""

from pytorchlite import _dtype as D
from pytorchlite import return_types
from pytorchlite._C import ffi
from pytorchlite._core import TensorBase, addr, empty as _empty, fill, numel
from pytorchlite._kernels.linalg import _expand, _infer_size, _transpose_last
from pytorchlite._ops import ops as F
from pytorchlite._structured import COLUMN_MAJOR, impls, meta_of
from pytorchlite._views import make_view


class LinAlgError(RuntimeError):
    """Raised when a matrix function fails on its input's values (a singular matrix, a
    matrix that is not positive-definite), like `torch.linalg.LinAlgError`."""


LinAlgError.__module__ = "pytorchlite.linalg"


# --- checks and messages ----------------------------------------------------------------------

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


def _raise_first(op, info, batched, message):
    """The first failed matrix's error from the int32 infos (a scratch C array, or the
    info tensor of the _ex forms); `message(info)` says what happened."""
    if isinstance(info, TensorBase):
        raw = ffi.buffer(ffi.cast("int32_t *", addr(info)), 4 * numel(info._shape))[:]
    else:
        raw = ffi.buffer(info)[:]
    if not raw.strip(b"\0"):
        return
    import numpy as np
    infos = np.frombuffer(raw, dtype=np.int32)
    b = int(np.flatnonzero(infos)[0])
    where = f"(Batch element {b}): " if batched else ""
    raise LinAlgError(f"{op}: {where}{message(int(infos[b]))}")


def _singular(info):
    return (f"The diagonal element {info} is zero, the inversion could not be completed because the "
            f"input matrix is singular.")


def _not_pd(i):
    return ("The factorization could not be completed because the input is not positive-definite "
            f"(the leading minor of order {i} is not positive-definite).")


# --- layouts ---------------------------------------------------------------------------------

def _colmajor(batch, rows, cols, dtype):
    """The spec of an output or scratch tensor of column-major rows x cols matrices."""
    return tuple(batch) + (rows, cols), dtype, COLUMN_MAJOR


_IDENTITIES = {}


def _identity(n, dtype):
    """The n x n identity, what inv's right-hand side starts from (and the full factors of an
    SVD without singular values), laid out column-major like the outputs it is copied into
    (a plain copy). Small ones are kept: for a 4x4 inverse, making one costs as much as the
    inverse."""
    eye = _IDENTITIES.get((n, dtype))
    if eye is None:
        eye = _empty((n, n), dtype)
        fill(eye, 0)
        fill(make_view(eye, (n,), (n + 1,), 0), 1)      # the diagonal
        eye = _transpose_last(eye)
        if n <= 64:
            _IDENTITIES[(n, dtype)] = eye
    return eye


def _placeholder(like):
    """PyTorch's empty 1-D stand-in for a result that was not asked for (Q with mode='r',
    U and Vh without compute_uv, eigenvectors without compute_v, rank with 'gels')."""
    return _empty((0,), like._dtype, like._device)


def _square(op, A, lowp_name=None):
    """A batch of square float32/float64 CPU matrices: (batch, number of matrices, n)."""
    _check_matrix(op, A)
    _check_float(op, A, lowp_name)
    _cpu(op, A)
    batch = A._shape[:-2]
    return batch, numel(batch), A._shape[-1]


def _lu_scratch(batch, nb, n, dtype):
    """The factorization's work copy of A, its pivots and infos."""
    return {"a": _colmajor(batch, n, n, dtype), "ipiv": ((nb * n,), D.int32), "info": (tuple(batch), D.int32)}


# --- inverse, determinants, solve ----------------------------------------------------------

def _inv_meta(op, A, check_errors, ex):
    batch, nb, n = _square(op, A)
    scratch = _lu_scratch(batch, nb, n, A._dtype)
    outputs = (_colmajor(batch, n, n, A._dtype),)
    if ex:
        # info is an output of the _ex form
        outputs += (scratch.pop("info"),)
    # X = A^{-1} I: the identity (symmetric: its layout does not matter) is overwritten by X
    return meta_of(outputs, None, {
        "nb": nb, "n": n, "eye": _identity(n, A._dtype), "batched": len(batch) > 0, "check_errors": check_errors,
        **scratch})


def inv_meta(A):
    return _inv_meta("linalg.inv", A, True, False)


def inv_finish(m, result, a, ipiv, info):
    _raise_first("linalg.inv", info, m.values["batched"], _singular)
    return result


def inv_ex_meta(A, check_errors=False):
    return _inv_meta("linalg.inv", A, check_errors, True)


def inv_ex_finish(m, inverse, info, a, ipiv):
    if m.values["check_errors"]:
        _raise_first("linalg.inv_ex", info, m.values["batched"], _singular)
    return return_types.linalg_inv_ex(inverse, info)


def _lu_meta(op, A, outputs):
    batch, nb, n = _square(op, A, "lu_cpu")
    return meta_of(((batch, A._dtype),) * outputs, None, {"nb": nb, "n": n, **_lu_scratch(batch, nb, n, A._dtype)})


def det_meta(A):
    return _lu_meta("linalg.det", A, 1)


def slogdet_meta(A):
    return _lu_meta("linalg.slogdet", A, 2)


def _solve_is_vector(A, B):
    """PyTorch's linalg_solve_is_vector_rhs: B is a (batch of) vector(s)."""
    return len(B._shape) == 1 or (len(B._shape) == len(A._shape) - 1 and B._shape == A._shape[:-1])


def solve_meta(A, B, left=True):
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
    nb = numel(batch)
    # the batch broadcasts as the buffers are filled
    return meta_of((_colmajor(batch, n, k, A._dtype),), {"A": A, "B": Bm}, {
        "nb": nb, "n": n, "k": k, "left": left, "vector": vector, "batched": len(batch) > 0,
        **_lu_scratch(batch, nb, n, A._dtype)})


def solve_finish(m, result, a, ipiv, info):
    v = m.values
    _raise_first("torch.linalg.solve", info, v["batched"],
                 lambda i: "The solver failed because the input matrix is singular.")
    # left=False solved A^T X^T = B^T: X^T is column-major, X row-major, as in PyTorch
    x = result if v["left"] else _transpose_last(result)
    return x.squeeze(-1) if v["vector"] else x


# --- factorizations ------------------------------------------------------------------------

def _cholesky_meta(op, A, check_errors, ex):
    batch, nb, n = _square(op, A, "cholesky_cpu")
    outputs = (_colmajor(batch, n, n, A._dtype),)
    info = (batch, D.int32)
    if ex:
        outputs += (info,)
    values = {"nb": nb, "n": n, "batched": len(batch) > 0, "check_errors": check_errors}
    if not ex:
        values["info"] = info
    return meta_of(outputs, None, values)


def cholesky_meta(self, upper=False):
    return _cholesky_meta("linalg.cholesky", self, True, False)


def cholesky_finish(m, result, info):
    _raise_first("linalg.cholesky", info, m.values["batched"], _not_pd)
    return result


def cholesky_ex_meta(self, upper=False, check_errors=False):
    return _cholesky_meta("linalg.cholesky", self, check_errors, True)


def cholesky_ex_finish(m, L, info):
    if m.values["check_errors"]:
        _raise_first("linalg.cholesky_ex", info, m.values["batched"], _not_pd)
    return return_types.linalg_cholesky_ex(L, info)


def solve_triangular_meta(self, B, upper, left=True, unitriangular=False):
    """BLAS trsm on column-major copies; X comes back column-major, as PyTorch's does."""
    A = self
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
    # trsm reads A, which broadcasts to the batch; B is cast to A's dtype, as in PyTorch
    return meta_of((_colmajor(batch, m, n, A._dtype),), {"self": _expand(_transpose_last(A), batch + (k, k))},
                   {"nb": numel(batch), "m": m, "n": n})


def qr_meta(A, mode="reduced"):
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
    qcols = m if mode == "complete" else (0 if mode == "r" else k)
    rrows = m if mode == "complete" else k
    # PyTorch's Q for mode='r' is an empty 1-D tensor
    q = _colmajor(batch, m, qcols, A._dtype) if mode != "r" else ((0,), A._dtype)
    return meta_of((q, _colmajor(batch, rrows, n, A._dtype)), {"A": _transpose_last(A)}, {
        "nb": numel(batch), "m": m, "n": n, "qcols": qcols, "rrows": rrows, "info": (batch, D.int32)})


def qr_finish(m, Q, R, info):
    return return_types.linalg_qr(Q, R)


def svd_meta(A, full_matrices=False, compute_uv=True, driver=None):
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
    dt = A._dtype
    jobz = "N" if not compute_uv else ("A" if full_matrices else "S")
    u, vh = ((0,), dt), ((0,), dt)        # PyTorch's placeholders without compute_uv
    if compute_uv:
        u = _colmajor(batch, m, m if full_matrices else k, dt)
        vh = _colmajor(batch, n if full_matrices else k, n, dt)
    # without singular values the full factors are the identity (LAPACK leaves them alone)
    empty_sides = k == 0 and compute_uv and full_matrices
    return meta_of((u, (batch + (k,), dt), vh), None, {
        "nb": numel(batch), "m": m, "n": n, "jobz": ord(jobz), "batched": len(batch) > 0,
        "eye_u": _identity(m, dt) if empty_sides else None, "eye_v": _identity(n, dt) if empty_sides else None,
        "a": _colmajor(batch, m, n, dt), "info": (batch, D.int32)})


def svd_finish(m, U, S, Vh, a, info):
    _raise_first("linalg.svd", info, m.values["batched"], lambda i: (
        "The algorithm failed to converge because the input matrix contained non-finite values."))
    return return_types._linalg_svd(U, S, Vh)


def eigh_meta(A, UPLO="L", compute_v=True):
    op = "linalg.eigh"
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    _check_matrix(op, A)
    if A._dtype not in (D.float32, D.float64):
        raise NotImplementedError(f"\"linalg_eigh_cpu\" not implemented for '{A._dtype._torch_name}'")
    _cpu(op, A)
    n = A._shape[-1]
    batch = A._shape[:-2]
    # the eigenvectors overwrite the work copy of A, wanted or not
    return meta_of(((batch + (n,), A._dtype), _colmajor(batch, n, n, A._dtype)), None, {
        "nb": numel(batch), "n": n, "upper": 1 if UPLO in ("U", "u") else 0, "compute_v": compute_v,
        "batched": len(batch) > 0, "info": (batch, D.int32)})


def eigh_finish(m, eigenvalues, eigenvectors, info):
    _raise_first("linalg.eigh", info, m.values["batched"], lambda i: (
        "The algorithm failed to converge because the input matrix is ill-conditioned or has too many "
        f"repeated eigenvalues (error code: {i})."))
    vectors = eigenvectors if m.values["compute_v"] else _placeholder(eigenvectors)
    return return_types._linalg_eigh(eigenvalues, vectors)


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq_meta(self, b, rcond=None, driver=None):
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
    dt = A._dtype
    if rcond is None:
        rcond = -1.0 if driver == "gels" else D.finfo(dt).eps * max(m, n)
    use_gelsd = driver in ("gelsd", "gelss")
    # LAPACK writes X over B, in a buffer of max(m, n) rows: B's columns padded with zeros
    ldb = max(m, n)
    if ldb > m:
        Bm = F.pad(Bm, [0, 0, 0, ldb - m])
    # gelsd rejects an empty right-hand side: empty problems run no matrix (rank 0)
    runs = numel(batch) if m and n and k else 0
    if driver == "gels" and not runs:
        # LAPACK's gels, PyTorch's, zeroes B for an empty problem (gelsy, which serves it here, does not)
        Bm = F.zeros_like(Bm)
    outputs = (_colmajor(batch, ldb, k, dt), ((0,), dt), (batch, D.int64),
               (batch + (min(m, n),) if use_gelsd else (0,), dt))
    return meta_of(outputs, {"b": Bm}, {
        "runs": runs, "gelsd": 1 if use_gelsd else 0, "cutoff": float(rcond), "m": m, "n": n, "k": k,
        "driver": driver, "vector": vector, "batched": len(batch) > 0, "a": _colmajor(batch, m, n, dt),
        "info": (batch, D.int32)})


def lstsq_finish(m, solution, residuals, rank, singular_values, a, info):
    v = m.values
    _raise_first("torch.linalg.lstsq", info, v["batched"], lambda i: (
        "The least squares solution could not be computed because the input matrix does not have full rank "
        f"(error code: {i})."))
    rows, cols, driver = v["m"], v["n"], v["driver"]
    full = solution
    x = full.narrow(-2, 0, cols)
    if rows > cols and driver != "gelsy":
        if driver == "gels" or all(int(r) == cols for r in rank.reshape(-1).tolist()):
            # the vector case keeps its trailing 1, as PyTorch's does
            residuals = (full.narrow(-2, cols, rows - cols) ** 2).sum(-2)
    if driver == "gels":
        rank = _placeholder(rank)
    return return_types.linalg_lstsq(x.squeeze(-1) if v["vector"] else x, residuals, rank, singular_values)


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
    if m == 0 or n == 0 or numel(A._shape) == 0:
        return F.zeros(A._shape[:-2] + (n, m), dtype=A._dtype, device=A._device)
    if not hermitian:
        U, S, Vh = impls._linalg_svd__cpu(A, False, True, None)
        largest = S.narrow(-1, 0, 1)              # singular values come in descending order
        tol = F.maximum(atol.unsqueeze(-1), rtol.unsqueeze(-1) * largest)
        s_inv = F.where(S > tol, S.reciprocal(), 0.0).to(A._dtype)
        return F.matmul(_transpose_last(Vh) * s_inv.unsqueeze(-2), _transpose_last(U))
    L, V = impls._linalg_eigh__cpu(A, "L", True)
    L_abs = L.abs()
    tol = F.maximum(atol.unsqueeze(-1), rtol.unsqueeze(-1) * L_abs.amax(-1, True))
    l_inv = F.where(L_abs > tol, L.reciprocal(), 0.0).to(A._dtype)
    return F.matmul(V * l_inv.unsqueeze(-2), _transpose_last(V))
