"""Which BLAS computes GEMM: Intel MKL when it is installed, else OpenBLAS.

The kernels link OpenBLAS (the scipy-openblas32 wheel) for GEMM and LAPACK. On x86-64,
MKL's GEMM is 1.3 to 1.8x faster on the shapes training runs into (a 64x784 batch times a
784x256 weight, the skinny products of im2col convolution, 512-square matmul): measured
on a 2-core AVX-512 Xeon, it matches PyTorch, which links MKL itself. So when the `mkl`
wheel is installed (`pip install "pytorchlite[mkl]"`), GEMM goes to MKL's CBLAS, which
takes the same arguments as OpenBLAS's; LAPACK stays on OpenBLAS.

MKL runs with its GNU threading layer: its threads come from the same libgomp pool as our
OpenMP kernels, so the two never compete for cores, and set_num_threads sets both.

PTL_BLAS selects: `auto` (the default: MKL if installed, else OpenBLAS), `mkl` (MKL or an
ImportError saying why not), `openblas`. The choice is made once, at import, before any
kernel runs.

    >>> from pytorchlite import _blas
    >>> _blas.NAME in ("MKL", "OpenBLAS")
    True
"""

from __future__ import annotations

import ctypes
import os

from pytorchlite._C import ffi, lib

__all__ = ["NAME", "REASON", "mkl_path", "set_blas_threads"]

# mkl_service.h: MKL_INTERFACE_LP64 = 0; MKL_THREADING_INTEL = 0, SEQUENTIAL = 1, PGI = 2,
# GNU = 3, TBB = 4
_MKL_INTERFACE_LP64 = 0
_MKL_THREADING_GNU = 3


def mkl_path():
    """(path to libmkl_rt, None) when the mkl wheel is installed, else (None, why not)."""
    from importlib import metadata
    try:
        dist = metadata.distribution("mkl")
    except metadata.PackageNotFoundError:
        return None, "the mkl package is not installed (pip install \"pytorchlite[mkl]\")"
    found = sorted(str(f.locate()) for f in (dist.files or ()) if f.name.startswith("libmkl_rt.so"))
    found = [p for p in found if os.path.exists(p)]
    if not found:
        return None, f"mkl {dist.version} is installed but has no libmkl_rt.so"
    return found[-1], None


def _load_mkl(path):
    mkl = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
    # Before any other MKL call: GNU OpenMP threading (the pool our kernels use) and 32-bit
    # integers (the LP64 interface, the ABI of the OpenBLAS build we call otherwise).
    mkl.MKL_Set_Interface_Layer.argtypes = [ctypes.c_int]
    mkl.MKL_Set_Threading_Layer.argtypes = [ctypes.c_int]
    if mkl.MKL_Set_Interface_Layer(_MKL_INTERFACE_LP64) != _MKL_INTERFACE_LP64:
        raise OSError("MKL refused the LP64 interface layer")
    if mkl.MKL_Set_Threading_Layer(_MKL_THREADING_GNU) != _MKL_THREADING_GNU:
        raise OSError("MKL refused the GNU threading layer")
    addrs = []
    for sym in ("cblas_sgemm", "cblas_dgemm", "cblas_sgemm_batch_strided", "cblas_dgemm_batch_strided"):
        addrs.append(ctypes.cast(getattr(mkl, sym), ctypes.c_void_p).value)
    buf = ctypes.create_string_buffer(256)
    mkl.MKL_Get_Version_String(buf, ctypes.c_int(len(buf)))
    return mkl, addrs, buf.value.decode("ascii", "replace").strip()


_mkl = None
NAME = "OpenBLAS"
VERSION = ""
REASON = ""          # why MKL is not in use, when it is not


def _select():
    global _mkl, NAME, VERSION, REASON
    choice = os.environ.get("PTL_BLAS", "auto").strip().lower() or "auto"
    if choice not in ("auto", "mkl", "openblas"):
        raise ImportError(f"PTL_BLAS must be 'auto', 'mkl' or 'openblas', not {choice!r}")
    if choice == "openblas":
        REASON = "PTL_BLAS=openblas"
        return
    path, why = mkl_path()
    if path is not None:
        try:
            mkl, addrs, version = _load_mkl(path)
        except (OSError, AttributeError) as e:
            why = f"MKL at {path} could not be used: {e}"
        else:
            if lib.ptl_set_gemm(*(ffi.cast("intptr_t", a) for a in addrs)) == 0:
                _mkl, NAME, VERSION = mkl, "MKL", version
                return
            why = "ptl_set_gemm refused MKL's entry points"
    if choice == "mkl":
        raise ImportError(f"PTL_BLAS=mkl, but {why}")
    REASON = why


def set_blas_threads(n):
    """Give MKL's GEMM the kernels' thread count (OpenBLAS's is set by _threads)."""
    if _mkl is not None:
        _mkl.MKL_Set_Num_Threads(ctypes.c_int(n))


_select()
