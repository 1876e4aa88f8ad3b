"""GEMM on CUDA through cuBLAS: finding the library, planning the call, running it.

NOT YET RUN ON A GPU. The planning (`plan_gemm`: which operand goes first, transposes,
leading dimensions, batch strides, when a copy is needed) is tested against fakes in
tests/cuda/test_cublas_nogpu.py, and the whole host path runs on the CPU emulator
(PTL_CUDA_EMULATOR=1), whose stand-in library (`_emulator.Cublas`) multiplies with NumPy
in emulated device memory through the same calls; no cuBLAS call has been made on a
device yet (`python -m pytorchlite.cuda.check` does that).

Row-major meets column-major: a row-major C = A @ B (m x n) is the column-major n x m
matrix C^T = B^T @ A^T, so cuBLAS is asked for that product with B's memory first. A
row-major operand (unit column stride) is, read column-major, its own transpose
(op N); a column-major one (unit row stride: a transposed view) is read with op T. Any
other layout (both strides > 1, a negative stride, a leading dimension smaller than cuBLAS
accepts) is copied to a contiguous tensor first, as PyTorch does.

One call serves every case: cublasGemmStridedBatchedEx (a batch of 1 for mm/addmm), so
float32, float64, float16 and bfloat16 take the same path. Compute types follow PyTorch:
float32 computes in float32 (CUBLAS_COMPUTE_32F) unless
`pytorchlite.backends.cuda.matmul.allow_tf32` is True (then CUBLAS_COMPUTE_32F_FAST_TF32;
False by default, as in PyTorch since 1.12); float16 / bfloat16 accumulate in float32 on
tensor cores; float64 in float64. Integer and bool GEMM is not supported on CUDA (PyTorch
raises "not implemented for" as well).

The library is found at run time, for CUDA 12 or 13 Python packages alike: through
cuda-bindings' `cuda.pathfinder` when it is installed, else the wheels' layouts
(`nvidia/cublas/lib/libcublas.so.12`, `nvidia/cu13/lib/libcublas.so.13`), else the
system's (`ctypes.util.find_library`, `$CUDA_HOME/lib64`).
"""

import ctypes
import ctypes.util
import glob
import os
import sys
import threading

OP_N, OP_T = 0, 1
# cudaDataType_t
CUDA_R_32F, CUDA_R_64F, CUDA_R_16F, CUDA_R_16BF = 0, 1, 2, 14
# cublasComputeType_t
COMPUTE_32F, COMPUTE_32F_FAST_TF32, COMPUTE_64F = 68, 77, 70
GEMM_DEFAULT = -1
INT32_MAX = 2 ** 31 - 1

# pytorchlite dtype name -> (cudaDataType, compute type without TF32, scalar ctype)
DTYPES = {
    "float32": (CUDA_R_32F, COMPUTE_32F, ctypes.c_float),
    "float64": (CUDA_R_64F, COMPUTE_64F, ctypes.c_double),
    "float16": (CUDA_R_16F, COMPUTE_32F, ctypes.c_float),
    "bfloat16": (CUDA_R_16BF, COMPUTE_32F, ctypes.c_float),
}


# --- planning ----------------------------------------------------------------------------------

class Operand:
    """How cuBLAS reads one row-major operand: op, leading dimension, batch stride."""

    __slots__ = ("op", "ld", "batch_stride")

    def __init__(self, op, ld, batch_stride):
        self.op, self.ld, self.batch_stride = op, ld, batch_stride

    def __eq__(self, other):
        return isinstance(other, Operand) and (self.op, self.ld, self.batch_stride) == \
            (other.op, other.ld, other.batch_stride)

    def __repr__(self):
        return f"Operand({'NT'[self.op]}, ld={self.ld}, batch_stride={self.batch_stride})"


def operand_layout(rows, cols, row_stride, col_stride, batch_stride=0):
    """How cuBLAS reads a row-major `rows x cols` matrix with these strides (elements) as
    the column-major `cols x rows` matrix it stands for (its transpose), or None when the
    layout is not one cuBLAS can read (copy it to a contiguous tensor first). A size-1
    dim's stride is free, so it never forces a copy."""
    if batch_stride < 0 or row_stride < 0 or col_stride < 0:
        return None
    if rows == 0 or cols == 0:          # nothing is read: any valid leading dimension
        return Operand(OP_N, max(cols, 1), batch_stride)
    # row-major: unit column stride; the leading dimension is the row stride
    if col_stride == 1 or cols == 1:
        ld = row_stride if rows > 1 else max(cols, 1)
        if ld >= max(cols, 1) and ld <= INT32_MAX:
            return Operand(OP_N, ld, batch_stride)
    # column-major (a transposed view): read with op T; the leading dimension is the column stride
    if row_stride == 1 or rows == 1:
        ld = col_stride if cols > 1 else max(rows, 1)
        if ld >= max(rows, 1) and ld <= INT32_MAX:
            return Operand(OP_T, ld, batch_stride)
    return None


class GemmPlan:
    """One cublasGemmStridedBatchedEx call for row-major C[b] = A[b] @ B[b] (m x k times
    k x n): cuBLAS computes C^T = B^T A^T, so its (m, n, k) are our (n, m, k) and its
    first operand is B."""

    __slots__ = ("m", "n", "k", "batch", "first", "second", "ldc", "c_batch_stride")

    def __init__(self, m, n, k, batch, first, second, ldc, c_batch_stride):
        self.m, self.n, self.k, self.batch = m, n, k, batch
        self.first, self.second = first, second          # Operand of B, Operand of A
        self.ldc, self.c_batch_stride = ldc, c_batch_stride

    def args(self):
        """cuBLAS's (transa, transb, m, n, k, lda, strideA, ldb, strideB, ldc, strideC, batch)."""
        return (self.first.op, self.second.op, self.n, self.m, self.k, self.first.ld, self.first.batch_stride,
                self.second.ld, self.second.batch_stride, self.ldc, self.c_batch_stride, self.batch)

    def __repr__(self):
        return (f"GemmPlan(m={self.m}, n={self.n}, k={self.k}, batch={self.batch}, B={self.first}, A={self.second}, "
                f"ldc={self.ldc}, c_batch_stride={self.c_batch_stride})")


def plan_gemm(batch, m, n, k, a_strides, b_strides, c_strides):
    """Plan C = A @ B over `batch` matrices. Strides are (batch, row, column) in elements.
    Returns (plan, copy) where copy names the operands ("a", "b", "c") whose layout cuBLAS
    cannot read: the caller makes those contiguous and plans again."""
    copy = []
    a = operand_layout(m, k, a_strides[1], a_strides[2], a_strides[0] if batch > 1 else 0)
    b = operand_layout(k, n, b_strides[1], b_strides[2], b_strides[0] if batch > 1 else 0)
    if a is None:
        copy.append("a")
    if b is None:
        copy.append("b")
    # the output is written row-major (C^T column-major, op N): unit column stride
    c = operand_layout(m, n, c_strides[1], c_strides[2], c_strides[0] if batch > 1 else 0)
    if c is None or c.op != OP_N or (batch > 1 and c_strides[0] < m * n and m * n > 0):
        copy.append("c")
    if copy:
        return None, copy
    return GemmPlan(m, n, k, batch, b, a, c.ld, c.batch_stride), []


# --- the library ---------------------------------------------------------------------------------

class CublasUnavailable(RuntimeError):
    pass


def _candidates():
    """Paths of libcublas to try, most specific first (CUDA 13 wheels, CUDA 12 wheels, system)."""
    paths = []
    try:
        from cuda import pathfinder
        loaded = pathfinder.load_nvidia_dynamic_lib("cublas")
        path = getattr(loaded, "abs_path", None)
        if path:
            paths.append(path)
    except Exception:  # no pathfinder, or it found nothing: try the layouts we know
        pass
    for base in sys.path:
        paths += sorted(glob.glob(os.path.join(base, "nvidia", "cu13", "lib", "libcublas.so.13*")))
        paths += sorted(glob.glob(os.path.join(base, "nvidia", "cublas", "lib", "libcublas.so.1*")))
    found = ctypes.util.find_library("cublas")
    if found:
        paths.append(found)
    for env in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(env)
        if home:
            paths += sorted(glob.glob(os.path.join(home, "lib64", "libcublas.so*")))
    paths += sorted(glob.glob("/usr/local/cuda/lib64/libcublas.so*"))
    seen, out = set(), []
    for p in paths:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


_SIGNATURES = {
    "cublasCreate_v2": [ctypes.POINTER(ctypes.c_void_p)],
    "cublasDestroy_v2": [ctypes.c_void_p],
    "cublasSetStream_v2": [ctypes.c_void_p, ctypes.c_void_p],
    "cublasSetMathMode": [ctypes.c_void_p, ctypes.c_int],
    "cublasGemmStridedBatchedEx": [
        ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_longlong,
        ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_longlong,
        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_longlong,
        ctypes.c_int, ctypes.c_int, ctypes.c_int],
}


def load_library(paths=None):
    """The first libcublas that loads and has every function we call, with its prototypes
    set (a ctypes.CDLL); CublasUnavailable says what was tried."""
    tried = []
    for path in (_candidates() if paths is None else paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path}: {e}")
            continue
        missing = [name for name in _SIGNATURES if not hasattr(lib, name)]
        if missing:
            tried.append(f"{path}: lacks {', '.join(missing)}")
            continue
        for name, argtypes in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes = argtypes
            fn.restype = ctypes.c_int
        return lib
    raise CublasUnavailable("cuBLAS was not found (install the cuda extra: nvidia-cublas for CUDA 13 or "
                            "nvidia-cublas-cu12 for CUDA 12)" + ("; tried: " + "; ".join(tried) if tried else ""))


def _check(status, what):
    if status != 0:
        raise RuntimeError(f"CUDA error: {what} failed with cublasStatus_t {status}")


class Handles:
    """One cuBLAS handle per (device, thread), as PyTorch keeps them; the stream is set
    before every call (the current stream may change between calls)."""

    def __init__(self, lib):
        self.lib = lib
        self._local = threading.local()

    def get(self, device, stream):
        handles = getattr(self._local, "handles", None)
        if handles is None:
            handles = self._local.handles = {}
        h = handles.get(device)
        if h is None:
            p = ctypes.c_void_p()
            _check(self.lib.cublasCreate_v2(ctypes.byref(p)), "cublasCreate")
            h = handles[device] = p.value
        _check(self.lib.cublasSetStream_v2(h, stream), "cublasSetStream")
        return h


def allow_tf32():
    """pytorchlite.backends.cuda.matmul.allow_tf32 (False unless a user set it)."""
    mod = sys.modules.get("pytorchlite.backends.cuda")
    return bool(getattr(getattr(mod, "matmul", None), "allow_tf32", False))


def compute_type(dtype_name, tf32=None):
    _dt, compute, _scalar = DTYPES[dtype_name]
    if dtype_name == "float32" and (allow_tf32() if tf32 is None else tf32):
        return COMPUTE_32F_FAST_TF32
    return compute


def gemm(lib, handle, dtype_name, p, a_ptr, b_ptr, c_ptr, alpha=1.0, beta=0.0, itemsize=4):
    """Run plan p (C = alpha * A @ B + beta * C) with cublasGemmStridedBatchedEx; pointers
    are device addresses (an operand's first element)."""
    dt, _compute, scalar = DTYPES[dtype_name]
    al, be = scalar(alpha), scalar(beta)
    (ta, tb, m, n, k, lda, sa, ldb, sb, ldc, sc, batch) = p.args()
    status = lib.cublasGemmStridedBatchedEx(handle, ta, tb, m, n, k, ctypes.byref(al), b_ptr, dt, lda, sa,
                                            a_ptr, dt, ldb, sb, ctypes.byref(be), c_ptr, dt, ldc, sc, batch,
                                            compute_type(dtype_name), GEMM_DEFAULT)
    _check(status, f"cublasGemmStridedBatchedEx({dtype_name}, m={m}, n={n}, k={k}, batch={batch})")
