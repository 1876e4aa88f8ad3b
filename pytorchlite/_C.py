"""Load the compiled kernels (`pytorchlite.generated._C`, built by codegen through cffi).

OpenBLAS comes from the scipy-openblas32 wheel. The extension links against it by name
without an rpath (the build environment's path is temporary), so the library is loaded
here first with RTLD_GLOBAL and the dynamic linker then resolves it by soname.
"""

import ctypes
import os

# Two thread pools share the cores: OpenMP's (our kernels) and OpenBLAS's (GEMM, LAPACK).
# By default each keeps its threads spinning for a long while after its work, and where
# there are few cores a spinning pool takes the cores the other one needs next: a 2-core
# MLP training step (GEMMs between pointwise kernels) ran 13x slower than with one thread.
# Short spins, then sleep, fix it at no cost to back-to-back kernels of either kind. Read
# when each library loads, so set before we load them; a value the user set is kept.
SPIN_DEFAULTS = {"GOMP_SPINCOUNT": "10000",            # iterations (~10 us), default 300000
                 "OPENBLAS_THREAD_TIMEOUT": "4"}        # 2**4 cycles, default 2**28
for _k, _v in SPIN_DEFAULTS.items():
    os.environ.setdefault(_k, _v)

_openblas_path = None
try:
    import scipy_openblas32 as _sob
    _openblas_path = os.path.join(_sob.get_lib_dir(), "lib" + _sob.get_library() + ".so")
    ctypes.CDLL(_openblas_path, mode=ctypes.RTLD_GLOBAL)
except (ImportError, OSError) as e:  # pragma: no cover - reported by the import below
    _openblas_error = e
else:
    _openblas_error = None

try:
    from pytorchlite.generated._C import ffi, lib  # noqa: E402
except ImportError as e:  # pragma: no cover - an install problem, said plainly
    hint = f" (OpenBLAS could not be loaded: {_openblas_error})" if _openblas_error else ""
    raise ImportError(
        "pytorchlite's compiled kernels are missing or stale: run `pip install -e .` or "
        f"`python -m codegen` in the source tree{hint}. Original error: {e}") from e

from pytorchlite.generated import abi as _abi  # noqa: E402

MAX_DIMS = _abi.MAX_DIMS    # the descriptor's dimension limit

# ptl_tensor arrays, uncleared: a descriptor of 64 dims is 1 KiB, and zeroing it on every
# call cost more than the 16-dim one did in all. Every array is filled by ptl_set_desc (or
# field by field) before a kernel sees it, and kernels read sizes and strides below ndim
# only; a refused ptl_set_desc leaves ndim -1, which every kernel rejects.
new_descriptors = ffi.new_allocator(should_clear_after_alloc=False)
STATUS = _abi.STATUS        # kernel status code -> (exception name, message)
_EXCEPTIONS = {"RuntimeError": RuntimeError, "ZeroDivisionError": ZeroDivisionError, "MemoryError": MemoryError,
               "IndexError": IndexError}


def check(status, op):
    """Turn a kernel's status code into the exception PyTorch would raise."""
    if status == 0:
        return
    exc, msg = STATUS.get(status, ("RuntimeError", f"kernel failed with status {status}"))
    if exc == "ZeroDivisionError":
        raise ZeroDivisionError(msg)
    raise _EXCEPTIONS[exc](f"{op}(): {msg}")
