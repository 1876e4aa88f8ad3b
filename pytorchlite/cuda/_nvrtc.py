"""Compiling pytorchlite's CUDA sources with NVRTC, cached on disk.

NVRTC needs no driver and no GPU, so everything here runs on any machine with
cuda-python and the NVRTC library (`pip install -e '.[cuda]'`); CI compiles every kernel
for sm_80 and sm_90 this way (tests/cuda/test_nvrtc_compile.py).

    >>> from pytorchlite.cuda import _nvrtc
    >>> image = _nvrtc.compile_source("fill_copy", "sm_90")   # doctest: +SKIP

A compile fails (NvrtcError, with NVRTC's log) on any error *or warning*. Results are
cached under `cache_dir()` keyed by a hash of the source, every header it may include, the
options, the architecture and the NVRTC version, so a second process start compiles
nothing: the hit is a file read.
"""

import hashlib
import os
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNEL_DIR = os.path.join(ROOT, "kernels", "cuda")
# the headers the C kernels share with the CUDA ones (kernels/ptl_common.h, ptl_philox.h)
SHARED_DIR = os.path.join(ROOT, "kernels")
# generated/ holds ptl_abi.h (codegen/abi.py: codes, limits and structs shared with Python)
GENERATED_DIR = os.path.join(ROOT, "generated")
INCLUDE_DIRS = (KERNEL_DIR, SHARED_DIR, GENERATED_DIR)

# name -> (path, extra NVRTC options). philox.cu reproduces the CPU's float arithmetic bit
# for bit, so it must not contract a * b + c into fused multiply-adds.
SOURCES = {
    "pointwise": (os.path.join(GENERATED_DIR, "pointwise.cu"), ()),
    "fill_copy": (os.path.join(KERNEL_DIR, "fill_copy.cu"), ()),
    "reduce": (os.path.join(GENERATED_DIR, "reduce.cu"), ()),
    "philox": (os.path.join(KERNEL_DIR, "philox.cu"), ("--fmad=false",)),
    "nn": (os.path.join(KERNEL_DIR, "nn.cu"), ()),
}

# the architectures CI checks; at run time the device's own is used
CHECK_ARCHS = ("sm_80", "sm_90")

BASE_OPTIONS = ("--std=c++17", "-DPTL_CUDA=1")

INSTALL_HINT = "pip install -e '.[cuda]'"


class NvrtcError(RuntimeError):
    """A CUDA source did not compile cleanly: the message carries NVRTC's log."""


class NvrtcUnavailable(RuntimeError):
    """cuda-python's NVRTC bindings or the NVRTC library cannot be loaded."""


_lock = threading.Lock()
_nvrtc_mod = None
_memory = {}        # (name, arch, cache key) -> image bytes, for this process


def nvrtc():
    """cuda-python's nvrtc module, checked to load the library; NvrtcUnavailable if not."""
    global _nvrtc_mod
    if _nvrtc_mod is not None:
        return _nvrtc_mod
    try:
        from cuda.bindings import nvrtc as mod
    except ImportError:
        try:
            from cuda import nvrtc as mod   # cuda-python < 12.6
        except ImportError:
            raise NvrtcUnavailable(f"cuda-python is not installed ({INSTALL_HINT})") from None
    try:
        err, major, minor = mod.nvrtcVersion()
    except Exception as e:  # the bindings load libnvrtc lazily: a missing library shows here
        raise NvrtcUnavailable(f"the NVRTC library could not be loaded ({type(e).__name__}: {e}); "
                               f"{INSTALL_HINT} installs it") from None
    if int(err) != 0:
        raise NvrtcUnavailable(f"nvrtcVersion() failed with {err}")
    _nvrtc_mod = mod
    return mod


def version():
    """(major, minor) of the NVRTC library."""
    _err, major, minor = nvrtc().nvrtcVersion()
    return major, minor


def supported_archs():
    """The sm_XX values this NVRTC can compile real (cubin) code for."""
    mod = nvrtc()
    err, n = mod.nvrtcGetNumSupportedArchs()
    if int(err) != 0:
        return ()
    err, archs = mod.nvrtcGetSupportedArchs()
    return tuple(f"sm_{a}" for a in archs) if int(err) == 0 else ()


def cache_dir():
    """Where compiled images live: $PTL_CUDA_CACHE, else $XDG_CACHE_HOME/pytorchlite/cuda,
    else ~/.cache/pytorchlite/cuda."""
    d = os.environ.get("PTL_CUDA_CACHE")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "pytorchlite", "cuda")
    return d


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _headers():
    """(name, content) of every header a source may include (any header in an include
    directory), in a fixed order."""
    out = []
    for d in INCLUDE_DIRS:
        for fn in sorted(os.listdir(d)):
            if fn.endswith((".cuh", ".h")):
                path = os.path.join(d, fn)
                out.append((os.path.relpath(path, SHARED_DIR).replace(os.sep, "/"), _read(path)))
    return out


def _options(arch, extra):
    if not (isinstance(arch, str) and (arch.startswith("sm_") or arch.startswith("compute_"))):
        raise ValueError(f"arch must be 'sm_XX' (cubin) or 'compute_XX' (PTX), got {arch!r}")
    return (f"--gpu-architecture={arch}", *BASE_OPTIONS, *(f"--include-path={d}" for d in INCLUDE_DIRS), *extra)


def cache_key(name, arch):
    """The hash a compiled image is filed under (source, headers, options, arch, NVRTC)."""
    path, extra = SOURCES[name]
    h = hashlib.sha256()
    h.update(_read(path))
    for fn, content in _headers():
        h.update(fn.encode() + b"\0" + content + b"\0")
    # the include path is machine-specific and says nothing about the content: leave it out
    opts = [o for o in _options(arch, extra) if not o.startswith("--include-path=")]
    h.update("\0".join(opts).encode())
    h.update(repr(version()).encode())
    return h.hexdigest()


def _cache_path(name, arch, key):
    ext = "ptx" if arch.startswith("compute_") else "cubin"
    return os.path.join(cache_dir(), f"{name}-{arch}-{key[:40]}.{ext}")


def _check(err, what):
    if int(err) != 0:
        raise NvrtcError(f"{what} failed: {err}")


def compile_text(src, arch, name="kernel.cu", extra=()):
    """Compile CUDA C++ text with NVRTC; returns (image bytes, log). Raises NvrtcError on an
    error or any warning, with the log."""
    mod = nvrtc()
    opts = [o.encode() for o in _options(arch, extra)]
    err, prog = mod.nvrtcCreateProgram(src if isinstance(src, bytes) else src.encode(), name.encode(), 0, [], [])
    _check(err, "nvrtcCreateProgram")
    try:
        (cerr,) = mod.nvrtcCompileProgram(prog, len(opts), opts)
        err, size = mod.nvrtcGetProgramLogSize(prog)
        _check(err, "nvrtcGetProgramLogSize")
        # NVRTC writes into these buffers: fresh bytearrays, never `b" " * size`, which for
        # size 1 (an empty log) is CPython's shared one-byte b" " object: writing its NUL
        # there changed every b" " (and str " " derived from it) in the process
        buf = bytearray(size)
        (err,) = mod.nvrtcGetProgramLog(prog, buf)
        log = bytes(buf).rstrip(b"\0").decode(errors="replace").strip()
        if int(cerr) != 0:
            raise NvrtcError(f"{name} ({arch}) does not compile:\n{log}")
        if log:
            raise NvrtcError(f"{name} ({arch}) compiles with warnings (treated as errors):\n{log}")
        if arch.startswith("compute_"):
            err, size = mod.nvrtcGetPTXSize(prog)
            _check(err, "nvrtcGetPTXSize")
            out = bytearray(size)
            (err,) = mod.nvrtcGetPTX(prog, out)
            _check(err, "nvrtcGetPTX")
        else:
            err, size = mod.nvrtcGetCUBINSize(prog)
            _check(err, "nvrtcGetCUBINSize")
            out = bytearray(size)
            (err,) = mod.nvrtcGetCUBIN(prog, out)
            _check(err, "nvrtcGetCUBIN")
        return bytes(out), log
    finally:
        mod.nvrtcDestroyProgram(prog)


def compile_source(name, arch, use_cache=True):
    """The compiled image (cubin for sm_XX, PTX for compute_XX) of SOURCES[name], from
    this process's memory, the disk cache, or NVRTC (then written to the cache)."""
    if name not in SOURCES:
        raise KeyError(f"unknown CUDA source {name!r} (known: {', '.join(sorted(SOURCES))})")
    with _lock:
        path, extra = SOURCES[name]
        key = cache_key(name, arch)      # always: an edited source never gets a stale image
        image = _memory.get((name, arch, key)) if use_cache else None
        if image is not None:
            return image
        cpath = _cache_path(name, arch, key)
        if use_cache:
            try:
                image = _read(cpath)
            except OSError:
                image = None
            if image:
                _memory[(name, arch, key)] = image
                return image
        image, _log = compile_text(_read(path), arch, os.path.basename(path), extra)
        _write_atomic(cpath, image)
        _memory[(name, arch, key)] = image
        return image


def is_cached(name, arch):
    """Whether the disk cache already holds SOURCES[name] for arch at its current hash."""
    return os.path.exists(_cache_path(name, arch, cache_key(name, arch)))


def _write_atomic(path, data):
    """Write to a temporary file and rename it, so a concurrent reader never sees half an
    image; a cache that cannot be written only costs a recompile next time."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        pass


def arch_for_capability(major, minor):
    """What to compile for a device of compute capability (major, minor): its own sm_XX
    when this NVRTC knows it, else PTX for the newest architecture it knows below it (the
    driver compiles that PTX for the device)."""
    want = major * 10 + minor
    known = sorted(int(a[3:]) for a in supported_archs())
    if want in known:
        return f"sm_{want}"
    below = [a for a in known if a <= want]
    if not below:
        raise NvrtcError(f"NVRTC {version()} cannot compile for compute capability {major}.{minor}")
    return f"compute_{below[-1]}"
