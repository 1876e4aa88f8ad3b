"""Compile the C kernels (hand-written kernels/*.c + generated/pointwise.c) into the
cffi extension `pytorchlite.generated._C`, in API mode.

A stamp (hash of sources, declarations and flags) beside the extension means an
unchanged tree compiles nothing, which keeps `python -m codegen` fast.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import sysconfig
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# No -march=native: a shipped build must run on any x86-64 (or aarch64); hot loops use
# function multi-versioning (target_clones) where AVX2 pays.
CFLAGS = ["-O3", "-std=gnu11", "-fopenmp", "-fno-math-errno", "-fno-trapping-math", "-Wall", "-Wno-unused-function",
          "-Wno-unused-variable", "-Wno-unused-but-set-variable"]
LDFLAGS = ["-fopenmp"]


def _openblas():
    import scipy_openblas32
    return scipy_openblas32.get_include_dir(), scipy_openblas32.get_lib_dir(), scipy_openblas32.get_library()


# The descriptor structs as cffi must see them (kernels/ptl.h holds the C definitions).
CFFI_TYPES = """
typedef struct {
    void *data;
    int32_t dtype;
    int32_t ndim;
    int64_t sizes[16];
    int64_t strides[16];
} ptl_tensor;
typedef struct { double d; int64_t i; } ptl_scalar;
"""


def prototypes(root=ROOT):
    parts = []
    with open(os.path.join(root, "kernels", "cdefs.h"), encoding="utf-8") as f:
        parts.append(f.read())
    with open(os.path.join(root, "generated", "cdefs.h"), encoding="utf-8") as f:
        parts.append(f.read())
    return "\n".join(parts)


def cdef_text(root=ROOT):
    return CFFI_TYPES + prototypes(root)


def _sources(root):
    return sorted(glob.glob(os.path.join(root, "kernels", "*.c"))) + [os.path.join(root, "generated", "pointwise.c")]


def _stamp(root):
    h = hashlib.sha256()
    for path in _sources(root) + sorted(glob.glob(os.path.join(root, "kernels", "*.h"))) + [
            os.path.join(root, "generated", "cdefs.h")]:
        h.update(os.path.relpath(path, root).encode())
        with open(path, "rb") as f:
            h.update(f.read())
    h.update(" ".join(CFLAGS + LDFLAGS).encode())
    h.update(sysconfig.get_config_var("EXT_SUFFIX").encode())
    return h.hexdigest()


def extension_path(root=ROOT):
    return os.path.join(root, "generated", "_C" + sysconfig.get_config_var("EXT_SUFFIX"))


def build(root=ROOT, force=False, verbose=False):
    """Compile if anything changed; returns True when a compile ran."""
    import cffi

    target = extension_path(root)
    stamp_file = os.path.join(root, "generated", "_C.stamp")
    stamp = _stamp(root)
    if not force and os.path.exists(target) and os.path.exists(stamp_file):
        with open(stamp_file, encoding="utf-8") as f:
            if f.read().strip() == stamp:
                return False
    inc, libdir, libname = _openblas()
    ffi = cffi.FFI()
    ffi.cdef(cdef_text(root))
    ffi.set_source(
        "pytorchlite.generated._C",
        '#include "ptl.h"\n' + prototypes(root),
        sources=_sources(root),
        include_dirs=[os.path.join(root, "kernels"), inc],
        library_dirs=[libdir],
        libraries=[libname, "m"],
        extra_compile_args=CFLAGS,
        extra_link_args=LDFLAGS,
    )
    cwd = os.getcwd()
    tmp = tempfile.mkdtemp(prefix="ptl-build-")
    try:
        os.chdir(root)   # sources are given relative to the root, so object paths stay short
        built = ffi.compile(tmpdir=tmp, verbose=verbose)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built, target + ".tmp")
        os.replace(target + ".tmp", target)
    finally:
        os.chdir(cwd)
        shutil.rmtree(tmp, ignore_errors=True)
    with open(stamp_file, "w", encoding="utf-8") as f:
        f.write(stamp + "\n")
    return True
