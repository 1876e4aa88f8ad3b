"""cuBLAS planning without a GPU (pytorchlite/cuda/_cublas.py): how a row-major product
becomes a column-major cuBLAS call (operand order, ops, leading dimensions, batch
strides), when an operand must be copied, the compute type and TF32 switch, the library
search, and the arguments `gemm` hands to a fake library."""

import ctypes
import ctypes.util

import numpy as np
import pytest

import pytorchlite
from pytorchlite.cuda import _cublas as C

N, T = C.OP_N, C.OP_T


@pytest.mark.parametrize("rows, cols, rs, cs, want", [
    (3, 4, 4, 1, (N, 4)),          # row-major contiguous
    (3, 4, 6, 1, (N, 6)),          # row-major, a column slice of a wider matrix
    (3, 4, 1, 3, (T, 3)),          # a transposed contiguous matrix
    (3, 4, 1, 5, (T, 5)),          # a transposed slice
    (1, 4, 99, 1, (N, 4)),         # one row: its row stride is free
    (3, 1, 1, 7, (N, 1)),          # one column: its column stride is free
    (0, 4, 4, 1, (N, 4)),          # nothing to read
])
def test_operand_layouts_cublas_reads(rows, cols, rs, cs, want):
    op = C.operand_layout(rows, cols, rs, cs)
    assert (op.op, op.ld) == want


@pytest.mark.parametrize("rows, cols, rs, cs", [
    (3, 4, 8, 2),                  # both strides > 1 (x[::2, ::2])
    (3, 4, 2, 1),                  # overlapping rows: ld < cols
    (3, 4, -4, 1),                 # a negative stride (flip)
    (3, 4, 0, 0),                  # expanded in both dims
])
def test_layouts_that_need_a_copy(rows, cols, rs, cs):
    assert C.operand_layout(rows, cols, rs, cs) is None


def _np_gemm_from_plan(p, a, b):
    """Carry out cuBLAS's column-major call the plan describes on flat NumPy buffers, to
    check that it computes the row-major A @ B."""
    (ta, tb, m, n, k, lda, sa, ldb, sb, ldc, sc, batch) = p.args()

    def colmajor(buf, off, r, c, ld, op):
        rr, cc = (r, c) if op == N else (c, r)
        x = np.array([[buf[off + i + j * ld] for j in range(cc)] for i in range(rr)])
        return x if op == N else x.T
    out = np.zeros(batch * sc + m * ldc if batch > 1 else m * ldc + n)
    for i in range(batch):
        prod = colmajor(b, i * sa, m, k, lda, ta) @ colmajor(a, i * sb, k, n, ldb, tb)
        for r in range(m):
            for c in range(n):
                out[i * sc + r + c * ldc] = prod[r, c]
    return out


@pytest.mark.parametrize("a_layout", ["rowmajor", "transposed"])
@pytest.mark.parametrize("b_layout", ["rowmajor", "transposed"])
def test_plan_computes_the_row_major_product(a_layout, b_layout):
    rng = np.random.default_rng(0)
    m, k, n = 3, 5, 4
    A, B = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    a_mem = A if a_layout == "rowmajor" else np.ascontiguousarray(A.T).T
    b_mem = B if b_layout == "rowmajor" else np.ascontiguousarray(B.T).T
    st = lambda x: (0,) + tuple(s // 8 for s in x.strides)          # noqa: E731
    p, copy = C.plan_gemm(1, m, n, k, st(a_mem), st(b_mem), (0, n, 1))
    assert not copy
    # the buffers as cuBLAS sees them: each operand's memory in storage order
    a_buf = (a_mem if a_layout == "rowmajor" else a_mem.T).ravel()
    b_buf = (b_mem if b_layout == "rowmajor" else b_mem.T).ravel()
    out = _np_gemm_from_plan(p, a_buf, b_buf)
    np.testing.assert_allclose(out[:m * n].reshape(m, n), A @ B)
    assert (p.first.op, p.second.op) == ({"rowmajor": N, "transposed": T}[b_layout],
                                          {"rowmajor": N, "transposed": T}[a_layout])


def test_batched_plan_keeps_batch_strides_and_broadcast():
    # a broadcast over the batch (stride 0) is read as it is
    p, copy = C.plan_gemm(4, 2, 3, 5, (0, 5, 1), (15, 3, 1), (6, 3, 1))
    assert not copy
    assert p.args() == (N, N, 3, 2, 5, 3, 15, 5, 0, 3, 6, 4)


def test_output_and_operand_copies_are_named():
    _, copy = C.plan_gemm(1, 3, 4, 5, (0, 10, 2), (0, 4, 1), (0, 1, 3))
    assert copy == ["a", "c"]          # a strided both ways; c column-major (cuBLAS writes C^T row-major)


def test_compute_types_and_tf32_switch():
    assert C.compute_type("float64") == C.COMPUTE_64F
    assert C.compute_type("float16") == C.COMPUTE_32F and C.compute_type("bfloat16") == C.COMPUTE_32F
    assert pytorchlite.backends.cuda.matmul.allow_tf32 is False
    assert C.compute_type("float32") == C.COMPUTE_32F
    try:
        pytorchlite.backends.cuda.matmul.allow_tf32 = True
        assert C.compute_type("float32") == C.COMPUTE_32F_FAST_TF32
        assert C.compute_type("float64") == C.COMPUTE_64F
    finally:
        pytorchlite.backends.cuda.matmul.allow_tf32 = False
    with pytest.raises(TypeError, match="must be a bool"):
        pytorchlite.backends.cuda.matmul.allow_tf32 = 1


def test_missing_library_says_what_was_tried(tmp_path):
    bad = tmp_path / "libcublas.so.13"
    bad.write_bytes(b"not a library")
    with pytest.raises(C.CublasUnavailable, match="libcublas.so.13"):
        C.load_library([str(bad)])


def test_library_without_the_functions_is_refused():
    libc = ctypes.util.find_library("c")
    with pytest.raises(C.CublasUnavailable, match="lacks cublasCreate_v2"):
        C.load_library([libc])


class _FakeLib:
    def __init__(self, status=0):
        self.status, self.calls = status, []

    def cublasGemmStridedBatchedEx(self, *args):
        self.calls.append(args)
        return self.status


def test_gemm_passes_b_first_and_scalars_by_reference():
    lib = _FakeLib()
    p, _ = C.plan_gemm(1, 2, 3, 4, (0, 4, 1), (0, 3, 1), (0, 3, 1))
    C.gemm(lib, 77, "float16", p, 1000, 2000, 3000, alpha=2.0, beta=0.5)
    (h, ta, tb, m, n, k, alpha, a, at, lda, sa, b, bt, ldb, sb, beta, c, ct, ldc, sc, batch, compute, algo), = lib.calls
    assert (h, ta, tb, m, n, k) == (77, N, N, 3, 2, 4)
    assert (a, b, c) == (2000, 1000, 3000)
    assert at == bt == ct == C.CUDA_R_16F and compute == C.COMPUTE_32F and algo == C.GEMM_DEFAULT
    assert (lda, ldb, ldc, batch) == (3, 4, 3, 1)
    assert alpha._obj.value == 2.0 and beta._obj.value == 0.5
    with pytest.raises(RuntimeError, match=r"cublasGemmStridedBatchedEx.*cublasStatus_t 13"):
        C.gemm(_FakeLib(13), 1, "float32", p, 1, 2, 3)
