"""Thread count of the CPU kernels (OpenMP) and of the BLAS (OpenBLAS, MKL)."""

import ctypes

from pytorchlite._blas import set_blas_threads
from pytorchlite._C import _openblas_path, lib

_openblas = None
if _openblas_path:
    try:
        _openblas = ctypes.CDLL(_openblas_path)
    except OSError:  # pragma: no cover
        _openblas = None


def set_num_threads(n):
    """Use `n` threads for intra-op parallelism (OpenMP kernels, OpenBLAS and MKL)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {n!r}")
    lib.ptl_set_num_threads(n)
    if _openblas is not None:
        for sym in ("scipy_openblas_set_num_threads", "openblas_set_num_threads"):
            fn = getattr(_openblas, sym, None)
            if fn is not None:
                fn(ctypes.c_int(n))
                break
    set_blas_threads(n)


def get_num_threads():
    """The number of threads the CPU kernels use."""
    return lib.ptl_get_num_threads()


# OpenBLAS keeps its own pool beside OpenMP's: give both the same count up front so they
# do not oversubscribe the cores.
set_num_threads(get_num_threads())
