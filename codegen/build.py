"""Compile the C kernels (hand-written kernels/*.c + generated/pointwise.c) into the
cffi extension `pytorchlite.generated._C`, in API mode.

A stamp (hash of sources, declarations and flags) beside the extension means an
unchanged tree compiles nothing, which keeps `python -m codegen` fast.
"""

from __future__ import annotations

import concurrent.futures
import glob
import hashlib
import os
import shlex
import shutil
import subprocess
import sysconfig
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# No -march=native: a shipped build must run on any x86-64 (or aarch64); hot loops use
# function multi-versioning (target_clones: AVX-512, AVX2+FMA, baseline; see PTL_HOT in
# kernels/ptl.h) where vector code pays.
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


def _compiler():
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return shlex.split(cc)


def _compile_objects(root, include_dirs, verbose):
    """Compile each source to an object file cached under build/ptl-obj by a hash of the
    source, every header, the flags and the compiler. Editing one kernel (or adding a
    non-pointwise operator, which leaves generated/pointwise.c byte-identical) recompiles
    only what changed, in parallel, instead of every kernel."""
    cc = _compiler()
    headers = hashlib.sha256()
    for path in sorted(glob.glob(os.path.join(root, "kernels", "*.h"))) + [os.path.join(root, "generated", "cdefs.h")]:
        with open(path, "rb") as f:
            headers.update(f.read())
    paths = sysconfig.get_paths()   # dlpack.c uses the capsule API
    py_includes = sorted({paths["include"], paths["platinclude"]})
    flags = CFLAGS + ["-fPIC"] + ["-I" + d for d in list(include_dirs) + py_includes]
    headers.update(" ".join(cc + flags).encode())
    cache = os.path.join(root, "build", "ptl-obj")
    os.makedirs(cache, exist_ok=True)
    jobs = []
    objects = []
    for src in _sources(root):
        with open(src, "rb") as f:
            key = hashlib.sha256(headers.digest() + f.read()).hexdigest()[:20]
        obj = os.path.join(cache, os.path.splitext(os.path.basename(src))[0] + "-" + key + ".o")
        objects.append(obj)
        if not os.path.exists(obj):
            jobs.append((src, obj))

    def run(job):
        src, obj = job
        tmp = obj + ".%d.tmp" % os.getpid()
        cmd = cc + flags + ["-c", src, "-o", tmp]
        if verbose:
            print(" ".join(cmd))
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError("compiling %s failed:\n%s%s" % (os.path.relpath(src, root), proc.stdout, proc.stderr))
        if proc.stderr and verbose:
            print(proc.stderr)
        os.replace(tmp, obj)   # atomic: a concurrent build never links a half-written object

    # largest first, so the long pole starts at once
    jobs.sort(key=lambda j: -os.path.getsize(j[0]))
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        for _ in pool.map(run, jobs):
            pass
    return objects


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
    include_dirs = [os.path.join(root, "kernels"), inc]
    objects = _compile_objects(root, include_dirs, verbose)
    ffi = cffi.FFI()
    ffi.cdef(cdef_text(root))
    ffi.set_source(
        "pytorchlite.generated._C",
        '#include "ptl.h"\n' + prototypes(root),
        extra_objects=objects,
        include_dirs=include_dirs,
        library_dirs=[libdir],
        libraries=[libname, "m"],
        extra_compile_args=CFLAGS,
        extra_link_args=LDFLAGS,
    )
    tmp = tempfile.mkdtemp(prefix="ptl-build-")
    try:
        built = ffi.compile(tmpdir=tmp, verbose=verbose)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built, target + ".tmp")
        os.replace(target + ".tmp", target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(stamp_file, "w", encoding="utf-8") as f:
        f.write(stamp + "\n")
    return True
