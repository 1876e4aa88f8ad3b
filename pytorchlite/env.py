"""`python -m pytorchlite.env`: what this pytorchlite install is made of and can use.

Prints versions (pytorchlite, Python, NumPy, cffi, OpenBLAS, PyTorch if installed), the
BLAS that runs GEMM (MKL or OpenBLAS, and why not MKL), the
platform and CPU, the C compiler (the configured one and the one that built the
kernels), the kernel build flags, OpenMP and the thread counts, OpenBLAS's own build
configuration, the CPU allocator's counters, and whether CUDA is usable, and if it is
not, exactly why. Paste its output into bug reports.

Every probe is independent and catches everything: a broken part of the install shows
up as one line saying what failed, never as a traceback.

    >>> from pytorchlite import env
    >>> info = env.get_env_info()
    >>> info["pytorchlite"].startswith("0.")
    True
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import re
import shlex
import subprocess
import sys
import sysconfig

__all__ = ["get_env_info", "pretty_str", "main"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def _probe(fn):
    """fn() or a one-line description of why it failed."""
    try:
        return fn()
    except BaseException as e:  # noqa: B902 - an env report must outlive any broken part
        if isinstance(e, KeyboardInterrupt):
            raise
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return f"unavailable ({type(e).__name__}{': ' + msg if msg else ''})"


# --- versions ---------------------------------------------------------------------------

def _pytorchlite_version():
    import pytorchlite
    return f"{pytorchlite.__version__} ({os.path.dirname(os.path.abspath(pytorchlite.__file__))})"


def _dist_version(name):
    """An installed distribution's version without importing it (importing torch takes
    seconds and is not needed to name its version)."""
    from importlib import metadata
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _module_version(name):
    mod = __import__(name)
    return getattr(mod, "__version__", "unknown version")


def _cpu():
    model = platform.processor() or platform.machine()
    flags = set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name") and ":" in line:
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and ":" in line:
                    flags = set(line.split(":", 1)[1].split())
                if flags and model:
                    break
    except OSError:
        pass
    simd = [f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f") if f in flags]
    cores = os.cpu_count()
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = cores
    out = f"{model}; {cores} logical cores ({usable} usable by this process)"
    if simd:
        out += "; " + " ".join(simd)
    return out


# --- compiler and build ----------------------------------------------------------------

def _configured_cc():
    """The compiler Python's build configuration names (what cffi uses) and its version."""
    cc = sysconfig.get_config_var("CC") or os.environ.get("CC") or ""
    if not cc:
        return "unknown (sysconfig has no CC)"
    exe = shlex.split(cc)[0]
    try:
        r = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=15)
    except FileNotFoundError:
        return f"{cc} (not found on PATH: the kernels cannot be rebuilt here)"
    except subprocess.TimeoutExpired:
        return f"{cc} (--version timed out)"
    first = (r.stdout or r.stderr).strip().splitlines()
    return f"{cc}: {first[0] if first else 'no version output'}"


def _extension_path():
    from pytorchlite.generated import _C
    return _C.__file__


def _extension_compiler():
    """The compiler that built the kernel extension, read from the ELF .comment strings
    GCC and Clang leave in every object (works for installed wheels too)."""
    with open(_extension_path(), "rb") as f:
        data = f.read()
    found = []
    for m in re.finditer(rb"(GCC: \([^)\x00]*\) [0-9][^\x00]*|clang version [^\x00]*)", data):
        s = m.group(1).decode("ascii", "replace").strip()
        if s not in found:
            found.append(s)
    return "; ".join(found) if found else "unknown (no compiler note in the extension)"


def _load_codegen_build():
    """codegen/build.py of the checkout this pytorchlite runs from, or None (an installed
    package has no codegen/). The package is loaded by path under a private name: codegen
    never imports pytorchlite, and build.py only needs the standard library at import time."""
    import importlib
    import importlib.util
    import sys
    path = os.path.join(os.path.dirname(_HERE), "codegen")
    if not os.path.exists(os.path.join(path, "build.py")):
        return None
    name = "_pytorchlite_env_codegen"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(path, "__init__.py"),
                                                      submodule_search_locations=[path])
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return importlib.import_module(name + ".build")


def _build_flags():
    build = _load_codegen_build()
    if build is None:
        return "unknown (installed package: codegen/build.py is not shipped)"
    flags = f"CFLAGS {' '.join(build.CFLAGS)}; LDFLAGS {' '.join(build.LDFLAGS)}"
    return flags


def _extension_state():
    """Whether the compiled kernels match the sources (source checkouts only)."""
    path = _extension_path()
    build = _load_codegen_build()
    if build is None:
        return path
    root = os.path.dirname(_HERE)
    if os.path.abspath(os.path.dirname(path)) != os.path.join(root, "generated"):
        return path
    try:
        stale = build.stale(root)
    except (OSError, RuntimeError) as e:
        return f"{path} (cannot tell whether it matches the sources: {e})"
    state = "up to date with the sources" if not stale else \
        f"STALE: not built from the current sources: {', '.join(m.rsplit('.', 1)[1] for m in stale)}; run `python -m codegen`"
    return f"{path} ({state})"


# --- threads and BLAS --------------------------------------------------------------------

def _openmp():
    from pytorchlite._C import lib
    return "on" if lib.ptl_has_openmp() else "off (kernels run on one thread)"


def _threads():
    import pytorchlite
    n = pytorchlite.get_num_threads()
    env = [f"{k}={os.environ[k]}" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                            "GOMP_SPINCOUNT", "OPENBLAS_THREAD_TIMEOUT", "PTL_BLAS")
           if k in os.environ]
    return f"{n}" + (f" ({', '.join(env)})" if env else "")


def _openblas_lib():
    from pytorchlite import _C
    path = getattr(_C, "_openblas_path", None)
    if not path:
        err = getattr(_C, "_openblas_error", None)
        return None, f"not loaded ({err})" if err else "not loaded"
    return ctypes.CDLL(path), path


def _openblas():
    lib, path = _openblas_lib()
    if lib is None:
        return path
    out = [f"{path}", f"scipy-openblas32 {_dist_version('scipy-openblas32')}"]
    for prefix in ("scipy_openblas_", "openblas_"):
        fn = getattr(lib, prefix + "get_config", None)
        if fn is None:
            continue
        fn.restype = ctypes.c_char_p
        fn.argtypes = []
        out.append(f"config: {fn().decode('ascii', 'replace').strip()}")
        core = getattr(lib, prefix + "get_corename", None)
        if core is not None:
            core.restype = ctypes.c_char_p
            core.argtypes = []
            out.append(f"core: {core().decode('ascii', 'replace').strip()}")
        nt = getattr(lib, prefix + "get_num_threads", None)
        if nt is not None:
            nt.restype = ctypes.c_int
            nt.argtypes = []
            out.append(f"threads: {nt()}")
        break
    else:
        out.append("config: unknown (no *_get_config symbol)")
    return "; ".join(out)


def _gemm():
    from pytorchlite import _blas
    if _blas.NAME == "MKL":
        return f"MKL ({_blas.VERSION}; GNU OpenMP threading)"
    return f"OpenBLAS ({_blas.REASON})" if _blas.REASON else "OpenBLAS"


# --- memory ------------------------------------------------------------------------------

def _allocator():
    from pytorchlite import memory
    s = memory.memory_stats()
    return (f"allocated {_mib(s['allocated_bytes'])}, peak {_mib(s['peak_allocated_bytes'])}, "
            f"cached {_mib(s['cached_bytes'])} (limit {_mib(s['cache_limit_bytes'])}), "
            f"cache hits {s['cache_hits']}, misses {s['cache_misses']}")


def _mib(n):
    return f"{n / (1 << 20):.1f} MiB"


# --- CUDA --------------------------------------------------------------------------------

_CU_ERRORS = {
    3: "CUDA_ERROR_NOT_INITIALIZED",
    34: "CUDA_ERROR_STUB_LIBRARY (the CUDA stub library was loaded instead of the real driver)",
    35: "CUDA_ERROR_INSUFFICIENT_DRIVER (the NVIDIA driver is older than this CUDA runtime)",
    100: "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)",
    101: "CUDA_ERROR_INVALID_DEVICE",
    304: "CUDA_ERROR_OPERATING_SYSTEM",
    999: "CUDA_ERROR_UNKNOWN",
}


def _driver_library():
    """Where the NVIDIA driver library would be loaded from, or None."""
    found = ctypes.util.find_library("cuda")
    if found:
        return found
    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            ctypes.CDLL(name)
            return name
        except OSError:
            continue
    return None


def _cuda():
    """(usable, description). Probes cuda-python's driver bindings the way the CUDA
    runtime of pytorchlite would use them, and names the first step that fails."""
    try:
        from cuda.bindings import driver
    except ImportError:
        try:
            from cuda import cuda as driver  # cuda-python < 12.6 spelled it this way
        except ImportError:
            has_driver = _driver_library()
            why = "cuda-python is not installed (pip install cuda-python)"
            if has_driver is None:
                why += "; no NVIDIA driver found either (libcuda.so is not on the library path)"
            else:
                why += f"; the NVIDIA driver library is present ({has_driver})"
            return False, why
    try:
        (err,) = driver.cuInit(0)
    except Exception as e:  # the bindings raise when libcuda.so cannot be loaded at all
        lib = _driver_library()
        if lib is None:
            return False, f"no NVIDIA driver found: libcuda.so could not be loaded ({type(e).__name__}: {e})"
        return False, f"cuInit failed to run ({type(e).__name__}: {e})"
    code = int(err)
    if code != 0:
        return False, f"cuInit(0) returned {code} {_CU_ERRORS.get(code, '')}".rstrip()
    err, count = driver.cuDeviceGetCount()
    if int(err) != 0:
        return False, f"cuDeviceGetCount returned {int(err)} {_CU_ERRORS.get(int(err), '')}".rstrip()
    if count == 0:
        return False, "no device: the driver works but reports 0 CUDA devices"
    names = []
    for i in range(count):
        try:
            err, dev = driver.cuDeviceGet(i)
            err, raw = driver.cuDeviceGetName(256, dev)
            name = bytes(raw).split(b"\0", 1)[0].decode("ascii", "replace")
            names.append(f"{i}: {name}")
        except Exception as e:  # a name is a nicety; the count already says CUDA works
            names.append(f"{i}: (name unavailable: {type(e).__name__})")
    err, version = driver.cuDriverGetVersion()
    drv = f"driver API {version // 1000}.{version % 1000 // 10}" if int(err) == 0 else "driver version unknown"
    usable = True
    note = ""
    try:
        import importlib.util
        if importlib.util.find_spec("pytorchlite.cuda") is None:
            usable, note = False, "; but this pytorchlite has no CUDA runtime (pytorchlite.cuda is missing)"
    except Exception:  # a broken package layout is reported elsewhere
        pass
    return usable, f"{count} device(s) [{', '.join(names)}], {drv}{note}"


def _cuda_line():
    from pytorchlite.cuda import _emulator
    if _emulator.enabled():
        return f"emulated: {_emulator.ENV}=1 runs the CUDA backend on the CPU emulator (not a GPU)"
    usable, why = _cuda()
    return ("yes: " if usable else "no: ") + why


def _cuda_bindings():
    """The driver bindings' distribution and version (either CUDA major version works)."""
    for dist in ("cuda-bindings", "cuda-python"):
        v = _dist_version(dist)
        if v != "not installed":
            return f"{dist} {v}"
    return "not installed (pip install -e '.[cuda]')"


def _nvrtc():
    """NVRTC's version, through the bindings (it compiles the CUDA kernels; no GPU needed)."""
    from pytorchlite.cuda import _nvrtc as nv
    major, minor = nv.version()
    archs = nv.supported_archs()
    return f"{major}.{minor} (compiles for {archs[0]} to {archs[-1]})" if archs else f"{major}.{minor}"


# --- report ------------------------------------------------------------------------------

_PROBES = (
    ("pytorchlite", _pytorchlite_version),
    ("Python", lambda: f"{platform.python_version()} ({platform.python_implementation()}, {sys.executable})"),
    ("platform", lambda: f"{platform.platform()} ({platform.machine()})"),
    ("CPU", _cpu),
    ("NumPy", lambda: _module_version("numpy")),
    ("cffi", lambda: _module_version("cffi")),
    ("PyTorch (for comparison)", lambda: _dist_version("torch")),
    ("C compiler (sysconfig CC)", _configured_cc),
    ("kernel extension", _extension_state),
    ("kernels built by", _extension_compiler),
    ("kernel build flags", _build_flags),
    ("OpenMP", _openmp),
    ("threads", _threads),
    ("GEMM", _gemm),
    ("OpenBLAS", _openblas),
    ("CPU allocator", _allocator),
    ("CUDA available", _cuda_line),
    ("CUDA bindings", _cuda_bindings),
    ("NVRTC", _nvrtc),
)


def get_env_info():
    """The report as an ordered dict of name -> one-line string."""
    return {name: str(_probe(fn)) for name, fn in _PROBES}


def pretty_str(info=None):
    info = get_env_info() if info is None else info
    width = max(len(k) for k in info)
    return "\n".join(f"{k + ':':<{width + 1}} {v}" for k, v in info.items())


def main():
    print(pretty_str())


if __name__ == "__main__":
    main()
