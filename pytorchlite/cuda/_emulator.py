"""A CPU stand-in for cuda-python's driver module, for running the CUDA backend end to end
on a machine without a GPU (`PTL_CUDA_EMULATOR=1`).

It is a test instrument, not a device: nothing here is fast, and passing under it proves
the host side (argument packing, launch planning, offsets, copies, the allocator and
stream bookkeeping, the tests themselves), never the GPU. What it does:

* device memory is host memory that the host cannot touch: its own pages (mmap), filled
  with 0xA5 (a kernel that reads what nobody wrote gets garbage, as on a GPU) and
  protected (PROT_NONE) except while a kernel or a memcpy of the emulator runs, so host
  code that reads or writes a device pointer (a C kernel of the CPU backend handed a CUDA
  tensor, a NumPy view of one) dies of SIGSEGV here as it would on a real GPU; every
  memcpy is checked to lie inside one allocation, and the device has a fixed capacity so
  out-of-memory is real;
* the kernels are the real sources (generated/pointwise.cu and reduce.cu,
  kernels/cuda/fill_copy.cu and nn.cu) compiled for the host with g++ through a small
  shim (`__global__` is nothing, `threadIdx` / `blockIdx` are thread-local, float16
  converts in software), and a launch runs every (block, thread) of the grid in turn, so
  the grid-stride loops and the packed kernel parameters (cuLaunchKernel's `void **`) are
  exercised as given;
* streams and events complete at once (work runs synchronously); elapsed_time is wall time;
* cuBLAS is `Cublas` below: NumPy products over the emulated memory, with cuBLAS's
  column-major arguments (it checks pytorchlite's planning, not cuBLAS).

Kernels that need threads of a block to cooperate (`__shared__`, `__syncthreads`, warp
shuffles: the `row` reductions of reduce.cu) cannot run this way: reduce.cu is built (the
shim gives those intrinsics host stand-ins only so that it compiles), but its `_row`
kernels are refused with CUDA_ERROR_NOT_FOUND, and the driver says so
(`COOPERATIVE_BLOCKS = False`) so that the reduction planner gives it `col` kernels (a
thread per output) only. The random fills of philox.cu are refused too (no operator
launches them yet; their arithmetic is checked on the host by tests/cuda/test_philox_host.py).
NVRTC still compiles every module for the reported architecture (sm_90), so the real
compile path is exercised as well.

Host libraries are cached next to the NVRTC images ($PTL_CUDA_CACHE/emulator), keyed by
the source, the headers and the shim, so only the first run compiles (about a minute for
pointwise.cu on two cores).
"""

import ctypes
import enum
import hashlib
import os
import re
import shutil
import subprocess
import threading
import time

from pytorchlite.cuda import _nvrtc

ENV = "PTL_CUDA_EMULATOR"
MEMORY_ENV = "PTL_CUDA_EMULATOR_MEMORY"      # bytes of the emulated device (default 4 GiB)
PAGE = 4096
NAME = "pytorchlite CPU emulator (not a GPU)"
CAPABILITY = (9, 0)
SM_COUNT = 4
DRIVER_VERSION = 13000


def enabled(environ=None):
    return (os.environ if environ is None else environ).get(ENV, "").strip() not in ("", "0")


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_INVALID_HANDLE = 400
    CUDA_ERROR_NOT_FOUND = 500
    CUDA_ERROR_NOT_READY = 600
    CUDA_ERROR_ILLEGAL_ADDRESS = 700
    CUDA_ERROR_LAUNCH_FAILED = 719


OK = CUresult.CUDA_SUCCESS


class _Handle:
    """CUstream / CUevent / CUdeviceptr / ...: an integer handle, as cuda-python's types."""

    __slots__ = ("value",)

    def __init__(self, value=0):
        self.value = int(value)

    def __int__(self):
        return self.value

    def __eq__(self, other):
        return type(other) is type(self) and other.value == self.value

    def __hash__(self):
        return hash(self.value)

    def __repr__(self):
        return f"<{type(self).__name__} {self.value:#x}>"


class CUstream(_Handle):
    __slots__ = ()


class CUevent(_Handle):
    __slots__ = ()


class CUdeviceptr(_Handle):
    __slots__ = ()


class CUcontext(_Handle):
    __slots__ = ()


class CUdevice(_Handle):
    __slots__ = ()


class CUmodule(_Handle):
    __slots__ = ()


class CUfunction(_Handle):
    __slots__ = ()


class CUdevice_attribute(enum.IntEnum):
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76


class CUevent_flags(enum.IntEnum):
    CU_EVENT_DEFAULT = 0
    CU_EVENT_BLOCKING_SYNC = 1
    CU_EVENT_DISABLE_TIMING = 2


class CUstream_flags(enum.IntEnum):
    CU_STREAM_DEFAULT = 0
    CU_STREAM_NON_BLOCKING = 1


# --- the kernels, built for the host ------------------------------------------------------------

SHIM = r"""
/* pytorchlite CUDA emulator shim: CUDA C++ kernels compiled by g++ for the host. */
#include <math.h>
#include <string.h>
#include <utility>
#include <type_traits>
#define PTL_CUDA_DEVICE 1
#define PTL_CUDA_EMULATED 1
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
struct ptl_emu_dim3 { unsigned x, y, z; };
extern thread_local ptl_emu_dim3 threadIdx, blockIdx, blockDim, gridDim;
/* only so that reduce.cu's row kernels compile: the emulator never launches them */
#define __shared__ static
static inline void __syncthreads() {}
template <typename T> static inline T __shfl_down_sync(unsigned, T v, int) { return v; }
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, 8); return d; }
static inline long long __double_as_longlong(double d) { long long i; memcpy(&i, &d, 8); return i; }
/* CUDA's erfinv (glibc has none): Giles' single-precision start, then Newton on erf */
static inline double erfinv(double y) {
    if (!(y > -1.0 && y < 1.0)) return y == 1.0 ? INFINITY : (y == -1.0 ? -INFINITY : NAN);
    double w = -log((1.0 - y) * (1.0 + y)), x;
    if (w < 5.0) {
        w -= 2.5;
        x = 2.81022636e-08; x = 3.43273939e-07 + x * w; x = -3.5233877e-06 + x * w;
        x = -4.39150654e-06 + x * w; x = 0.00021858087 + x * w; x = -0.00125372503 + x * w;
        x = -0.00417768164 + x * w; x = 0.246640727 + x * w; x = 1.50140941 + x * w;
    } else {
        w = sqrt(w) - 3.0;
        x = -0.000200214257; x = 0.000100950558 + x * w; x = 0.00134934322 + x * w;
        x = -0.00367342844 + x * w; x = 0.00573950773 + x * w; x = -0.0076224613 + x * w;
        x = 0.00943887047 + x * w; x = 1.00167406 + x * w; x = 2.83297682 + x * w;
    }
    x *= y;
    for (int k = 0; k < 3; k++) x -= (erf(x) - y) / (1.1283791670955126 * exp(-x * x));
    return x;
}
static inline float erfinvf(float y) { return (float)erfinv((double)y); }
/* float16 <-> float, round to nearest even (the PTX cvt instructions of ptl_cuda.cuh) */
static inline float ptl_emu_h2f(unsigned short h) {
    unsigned s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, u;
    if (e == 0x1f) u = s | 0x7f800000u | (m << 13);
    else if (e) u = s | ((e + 112) << 23) | (m << 13);
    else if (!m) u = s;
    else { float f = (float)m * 5.9604644775390625e-8f; memcpy(&u, &f, 4); u |= s; }
    float f; memcpy(&f, &u, 4); return f;
}
static inline unsigned short ptl_emu_f2h(float f) {
    unsigned u; memcpy(&u, &f, 4);
    unsigned short s = (unsigned short)((u >> 16) & 0x8000u);
    u &= 0x7fffffffu;
    if (u > 0x7f800000u) return s | 0x7e00;                       /* nan */
    if (u >= 0x477ff000u) return s | 0x7c00;                      /* rounds to inf */
    if (u < 0x38800000u) {                                        /* subnormal or zero */
        float a; memcpy(&a, &u, 4);
        return s | (unsigned short)nearbyintf(a * 16777216.0f);   /* units of 2^-24, ties to even */
    }
    unsigned r = u - 0x38000000u;                                 /* rebias the exponent */
    r += 0xfffu + ((r >> 13) & 1u);
    return s | (unsigned short)(r >> 13);
}
"""

WRAPPER_HEAD = r"""
thread_local ptl_emu_dim3 threadIdx, blockIdx, blockDim, gridDim;
namespace ptl_emu {
#include "%(source)s"
}
template <typename... A, size_t... I>
static void ptl_emu_call(void (*f)(A...), void **args, std::index_sequence<I...>) {
    f(*static_cast<std::remove_cv_t<std::remove_reference_t<A>> *>(args[I])...);
}
template <typename... A>
static void ptl_emu_launch(void (*f)(A...), void **args, unsigned gx, unsigned bx) {
    gridDim = {gx, 1, 1};
    blockDim = {bx, 1, 1};
    for (unsigned b = 0; b < gx; b++)
        for (unsigned t = 0; t < bx; t++) {
            blockIdx = {b, 0, 0};
            threadIdx = {t, 0, 0};
            ptl_emu_call(f, args, std::index_sequence_for<A...>{});
        }
}
"""

# the sources a launch can name, by kernel-name prefix (reduce.cu needs cooperating threads)
EMULATED_SOURCES = ("fill_copy", "pointwise", "reduce", "nn")
_NN = ("ptl_cu_softmax_", "ptl_cu_nll_", "ptl_cu_maxpool2d_", "ptl_cu_im2col_", "ptl_cu_col2im_",
       "ptl_cu_channel_bias_")
_RANDOM = ("ptl_cu_uniform_", "ptl_cu_normal_", "ptl_cu_exponential_", "ptl_cu_bernoulli_", "ptl_cu_integers_")


def source_for_kernel(name):
    if name.startswith(("ptl_cu_fill_", "ptl_cu_copy_")):
        return "fill_copy"
    if name.startswith("ptl_cu_red_"):
        return "reduce"
    if name.startswith(_RANDOM):
        return "philox"
    if name.startswith(_NN):
        return "nn"
    return "pointwise"


def _needs_cooperation(name):
    """Kernels whose block threads merge through shared memory and warp shuffles."""
    return name.startswith("ptl_cu_red_") and name.rsplit("_", 1)[-1].startswith("row")


def _compiler():
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if not cxx:
        raise RuntimeError("the CUDA emulator needs a C++ compiler (g++) to build the kernels for the host")
    return cxx


def _build_dir():
    return os.path.join(_nvrtc.cache_dir(), "emulator")


def _host_key(name):
    h = hashlib.sha256(SHIM.encode() + WRAPPER_HEAD.encode())
    path, _extra = _nvrtc.SOURCES[name]
    h.update(_nvrtc._read(path))
    for fn, content in _nvrtc._headers():
        h.update(fn.encode() + b"\0" + content + b"\0")
    return h.hexdigest()[:32]


def _flags():
    return ["-std=c++17", "-O1", "-fPIC", "-w", "-ffp-contract=off", "-fno-strict-aliasing",
            *(f"-I{d}" for d in _nvrtc.INCLUDE_DIRS)]


def build_host_library(name):
    """Compile SOURCES[name] for the host with the shim and one `<kernel>__emu(void **args,
    unsigned grid, unsigned block)` entry per kernel; returns the .so path (cached)."""
    if name not in EMULATED_SOURCES:
        raise RuntimeError(f"the CUDA emulator does not build {name}.cu (only {', '.join(EMULATED_SOURCES)})")
    out_dir = _build_dir()
    os.makedirs(out_dir, exist_ok=True)
    so = os.path.join(out_dir, f"{name}-{_host_key(name)}.so")
    if os.path.exists(so):
        return so
    cxx = _compiler()
    path, _extra = _nvrtc.SOURCES[name]
    tag = f"{os.getpid()}-{threading.get_ident()}"
    shim = os.path.join(out_dir, f"shim-{tag}.h")
    with open(shim, "w") as f:
        f.write(SHIM)
    head = WRAPPER_HEAD % {"source": path}
    probe = os.path.join(out_dir, f"{name}-{tag}.probe.cpp")
    with open(probe, "w") as f:
        f.write(head)
    pre = subprocess.run([cxx, *_flags(), "-include", shim, "-E", "-P", probe], capture_output=True, text=True)
    if pre.returncode != 0:
        raise RuntimeError(f"emulator: preprocessing {path} failed:\n{pre.stderr[-4000:]}")
    kernels = sorted(set(re.findall(r'extern\s+"C"\s+void\s+(ptl_cu_\w+)\s*\(', pre.stdout)))
    if not kernels:
        raise RuntimeError(f"emulator: no kernels found in {path}")
    cpp = os.path.join(out_dir, f"{name}-{tag}.cpp")
    with open(cpp, "w") as f:
        f.write(head)
        for k in kernels:
            f.write(f'extern "C" void {k}__emu(void **a, unsigned g, unsigned b) '
                    f'{{ ptl_emu_launch(ptl_emu::{k}, a, g, b); }}\n')
    tmp = f"{so}.{tag}.tmp"
    r = subprocess.run([cxx, *_flags(), "-include", shim, "-shared", cpp, "-o", tmp, "-lm"],
                       capture_output=True, text=True)
    for p in (shim, probe, cpp):
        os.unlink(p)
    if r.returncode != 0:
        raise RuntimeError(f"emulator: compiling {path} for the host failed:\n{r.stderr[-4000:]}")
    os.replace(tmp, so)
    return so


# --- host pages standing in for device memory ----------------------------------------------------

_PROT_NONE, _PROT_RW = 0, 3
_MAP_PRIVATE_ANONYMOUS = 0x02 | 0x20
_libc = None


def _c():
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(None, use_errno=True)
        lib.mmap.restype = ctypes.c_void_p
        lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        _libc = lib
    return _libc


def _map(nbytes):
    addr = _c().mmap(None, nbytes, _PROT_RW, _MAP_PRIVATE_ANONYMOUS, -1, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        return None
    return addr


def _protect(addr, nbytes, prot):
    if _c().mprotect(addr, nbytes, prot) != 0:
        raise OSError(ctypes.get_errno(), f"mprotect({addr:#x}, {nbytes}) failed")


# --- the driver --------------------------------------------------------------------------------

class Driver:
    """The subset of cuda.bindings.driver that pytorchlite.cuda calls, with the same
    argument conventions and `(CUresult, value...)` results."""

    CUresult = CUresult
    CUstream, CUevent, CUdeviceptr, CUcontext, CUdevice = CUstream, CUevent, CUdeviceptr, CUcontext, CUdevice
    CUmodule, CUfunction = CUmodule, CUfunction
    CUdevice_attribute, CUevent_flags, CUstream_flags = CUdevice_attribute, CUevent_flags, CUstream_flags
    emulated = True
    COOPERATIVE_BLOCKS = False      # a block's threads run one after another (see the module doc)

    def __init__(self, capacity=None):
        if capacity is None:
            capacity = int(os.environ.get(MEMORY_ENV, 4 << 30))
        self.capacity = capacity
        self._lock = threading.RLock()
        self._allocs = {}          # device address -> (mapped bytes, size asked for)
        self._open = 0             # > 0 while the emulator itself touches device memory
        self._used = 0
        self._next = 0x1000
        self._events = {}          # handle -> [flags, recorded time or None]
        self._streams = {0}
        self._libs = {}            # source name -> CDLL
        self._functions = {}       # handle -> (name, entry)
        self._modules = set()
        self.launches = 0

    def _handle(self):
        with self._lock:
            self._next += 0x10
            return self._next

    # -- init, devices, contexts
    def cuInit(self, flags):
        return (OK,)

    def cuDriverGetVersion(self):
        return (OK, DRIVER_VERSION)

    def cuDeviceGetCount(self):
        return (OK, 1)

    def cuDeviceGet(self, ordinal):
        return (OK, CUdevice(ordinal)) if ordinal == 0 else (CUresult.CUDA_ERROR_INVALID_VALUE, None)

    def cuDevicePrimaryCtxRetain(self, dev):
        return (OK, CUcontext(0xC0))

    def cuCtxSetCurrent(self, ctx):
        return (OK,)

    def cuCtxSynchronize(self):
        return (OK,)

    def cuDeviceGetName(self, length, dev):
        return (OK, NAME.encode().ljust(length, b"\0")[:length])

    def cuDeviceTotalMem(self, dev):
        return (OK, self.capacity)

    def cuDeviceGetAttribute(self, attr, dev):
        values = {CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: SM_COUNT,
                  CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: CAPABILITY[0],
                  CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: CAPABILITY[1]}
        v = values.get(int(attr))
        return (OK, v) if v is not None else (CUresult.CUDA_ERROR_INVALID_VALUE, None)

    # -- memory
    def cuMemAlloc(self, size):
        size = int(size)
        with self._lock:
            if size <= 0:
                return (CUresult.CUDA_ERROR_INVALID_VALUE, None)
            if self._used + size > self.capacity:
                return (CUresult.CUDA_ERROR_OUT_OF_MEMORY, None)
            mapped = (size + PAGE - 1) // PAGE * PAGE
            addr = _map(mapped)
            if addr is None:
                return (CUresult.CUDA_ERROR_OUT_OF_MEMORY, None)
            ctypes.memset(addr, 0xA5, size)
            if not self._open:
                _protect(addr, mapped, _PROT_NONE)
            self._allocs[addr] = (mapped, size)
            self._used += size
        return (OK, CUdeviceptr(addr))

    def cuMemFree(self, ptr):
        with self._lock:
            entry = self._allocs.pop(int(ptr), None)
            if entry is None:
                return (CUresult.CUDA_ERROR_INVALID_VALUE,)
            _c().munmap(int(ptr), entry[0])
            self._used -= entry[1]
        return (OK,)

    def _unprotect(self):
        """Open every allocation to the host while the emulator works (reentrant)."""
        self._lock.acquire()
        if self._open == 0:
            for addr, (mapped, _size) in self._allocs.items():
                _protect(addr, mapped, _PROT_RW)
        self._open += 1

    def _reprotect(self):
        self._open -= 1
        if self._open == 0:
            for addr, (mapped, _size) in self._allocs.items():
                _protect(addr, mapped, _PROT_NONE)
        self._lock.release()

    def cuMemGetInfo(self):
        return (OK, self.capacity - self._used, self.capacity)

    def _inside(self, addr, nbytes):
        """Whether [addr, addr + nbytes) lies inside one allocation."""
        addr = int(addr)
        for base, (_mapped, size) in self._allocs.items():
            if base <= addr and addr + nbytes <= base + size:
                return True
        return False

    def _memcpy(self, dst, src, nbytes, check_dst, check_src):
        nbytes = int(nbytes)
        if (check_dst and not self._inside(dst, nbytes)) or (check_src and not self._inside(src, nbytes)):
            return (CUresult.CUDA_ERROR_INVALID_VALUE,)
        self._unprotect()
        try:
            ctypes.memmove(int(dst), int(src), nbytes)
        finally:
            self._reprotect()
        return (OK,)

    def cuMemcpyHtoDAsync(self, dst, src, nbytes, stream):
        return self._memcpy(dst, src, nbytes, True, False)

    def cuMemcpyDtoHAsync(self, dst, src, nbytes, stream):
        return self._memcpy(dst, src, nbytes, False, True)

    def cuMemcpyDtoDAsync(self, dst, src, nbytes, stream):
        return self._memcpy(dst, src, nbytes, True, True)

    # -- events and streams (work is synchronous: everything is complete at once)
    def cuEventCreate(self, flags):
        h = self._handle()
        self._events[h] = [int(flags), None]
        return (OK, CUevent(h))

    def cuEventRecord(self, event, stream):
        e = self._events.get(int(event))
        if e is None or int(stream) not in self._streams:
            return (CUresult.CUDA_ERROR_INVALID_HANDLE,)
        e[1] = time.perf_counter()
        return (OK,)

    def cuEventQuery(self, event):
        return (OK,) if int(event) in self._events else (CUresult.CUDA_ERROR_INVALID_HANDLE,)

    def cuEventSynchronize(self, event):
        return self.cuEventQuery(event)

    def cuEventDestroy(self, event):
        return (OK,) if self._events.pop(int(event), None) is not None else (CUresult.CUDA_ERROR_INVALID_HANDLE,)

    def cuEventElapsedTime(self, start, end):
        a, b = self._events.get(int(start)), self._events.get(int(end))
        if a is None or b is None or (a[0] | b[0]) & CUevent_flags.CU_EVENT_DISABLE_TIMING:
            return (CUresult.CUDA_ERROR_INVALID_HANDLE, None)
        if a[1] is None or b[1] is None:
            return (CUresult.CUDA_ERROR_INVALID_HANDLE, None)
        return (OK, (b[1] - a[1]) * 1e3)

    def cuStreamCreateWithPriority(self, flags, priority):
        h = self._handle()
        self._streams.add(h)
        return (OK, CUstream(h))

    def _stream_ok(self, stream):
        return (OK,) if int(stream) in self._streams else (CUresult.CUDA_ERROR_INVALID_HANDLE,)

    def cuStreamQuery(self, stream):
        return self._stream_ok(stream)

    def cuStreamSynchronize(self, stream):
        return self._stream_ok(stream)

    def cuStreamWaitEvent(self, stream, event, flags):
        if int(event) not in self._events:
            return (CUresult.CUDA_ERROR_INVALID_HANDLE,)
        return self._stream_ok(stream)

    # -- modules and launches
    def cuModuleLoadData(self, image):
        if not image:
            return (CUresult.CUDA_ERROR_INVALID_VALUE, None)
        h = self._handle()
        self._modules.add(h)
        return (OK, CUmodule(h))

    def _lib(self, source):
        with self._lock:
            lib = self._libs.get(source)
            if lib is None:
                lib = self._libs[source] = ctypes.CDLL(build_host_library(source))
            return lib

    def cuModuleGetFunction(self, module, name):
        if int(module) not in self._modules:
            return (CUresult.CUDA_ERROR_INVALID_HANDLE, None)
        name = name.decode() if isinstance(name, bytes) else name
        source = source_for_kernel(name)
        if source not in EMULATED_SOURCES or _needs_cooperation(name):
            return (CUresult.CUDA_ERROR_NOT_FOUND, None)
        try:
            entry = getattr(self._lib(source), f"{name}__emu")
        except AttributeError:
            return (CUresult.CUDA_ERROR_NOT_FOUND, None)
        entry.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
        entry.restype = None
        h = self._handle()
        self._functions[h] = (name, entry)
        return (OK, CUfunction(h))

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        fn = self._functions.get(int(f))
        if fn is None or int(stream) not in self._streams:
            return (CUresult.CUDA_ERROR_INVALID_HANDLE,)
        if not isinstance(params, int) or params == 0 or (gy, gz, by, bz) != (1, 1, 1, 1) or gx < 1 or bx < 1:
            return (CUresult.CUDA_ERROR_INVALID_VALUE,)
        self._unprotect()
        try:
            fn[1](params, gx, bx)
        finally:
            self._reprotect()
        self.launches += 1
        return (OK,)


_driver = None
_driver_lock = threading.Lock()


def driver():
    """The process's emulated driver (one device)."""
    global _driver
    with _driver_lock:
        if _driver is None:
            _driver = Driver()
        return _driver


# --- cuBLAS, for the emulator: NumPy over the emulated device memory ---------------------------------

class Cublas:
    """The cuBLAS calls pytorchlite.cuda._cublas makes, with cuBLAS's argument conventions
    (column-major operands, ops, leading dimensions, batch strides, alpha and beta by
    reference), computed with NumPy in the emulated device memory. It checks the host's
    planning and pointers, not cuBLAS."""

    _NP = {0: "float32", 1: "float64", 2: "float16", 14: "bfloat16"}

    def __init__(self, drv):
        self.d = drv
        self.calls = []

    def cublasCreate_v2(self, out):
        out._obj.value = self.d._handle()
        return 0

    def cublasDestroy_v2(self, handle):
        return 0

    def cublasSetStream_v2(self, handle, stream):
        return 0 if stream is None or int(stream) in self.d._streams else 1

    def cublasSetMathMode(self, handle, mode):
        return 0

    def _matrix(self, ptr, dt, rows, cols, ld, op):
        """op(X) of the column-major X (rows x cols of op(X); X itself is cols x rows for op T)."""
        import numpy as np
        r, c = (rows, cols) if op == 0 else (cols, rows)
        if r == 0 or c == 0:
            return np.zeros((rows, cols))
        item = 2 if dt in (2, 14) else (4 if dt == 0 else 8)
        nbytes = ((c - 1) * ld + r) * item
        if not self.d._inside(ptr, nbytes):
            raise RuntimeError(f"emulated cuBLAS: a {r}x{c} operand (ld {ld}) at {ptr:#x} is outside every allocation")
        raw = (ctypes.c_char * nbytes).from_address(ptr)
        base = np.frombuffer(raw, dtype={0: np.float32, 1: np.float64, 2: np.float16, 14: np.uint16}[dt])
        x = np.lib.stride_tricks.as_strided(base, shape=(r, c), strides=(item, ld * item))
        x = (x.astype(np.uint32) << 16).view(np.float32) if dt == 14 else x
        x = x.astype(np.float64)
        return x if op == 0 else x.T

    def _store(self, ptr, dt, rows, cols, ld, values):
        import numpy as np
        item = 2 if dt in (2, 14) else (4 if dt == 0 else 8)
        nbytes = ((cols - 1) * ld + rows) * item
        raw = (ctypes.c_char * nbytes).from_address(ptr)
        base = np.frombuffer(raw, dtype={0: np.float32, 1: np.float64, 2: np.float16, 14: np.uint16}[dt])
        x = np.lib.stride_tricks.as_strided(base, shape=(rows, cols), strides=(item, ld * item), writeable=True)
        if dt == 14:
            f = values.astype(np.float32).view(np.uint32)
            x[...] = ((f + 0x7FFF + ((f >> 16) & 1)) >> 16).astype(np.uint16)    # round to nearest even
        else:
            x[...] = values

    def cublasGemmStridedBatchedEx(self, handle, ta, tb, m, n, k, alpha, a, at, lda, sa, b, bt, ldb, sb, beta,
                                   c, ct, ldc, sc, batch, compute, algo):
        if not (at == bt == ct and at in self._NP) or min(m, n, k, batch) < 0:
            return 7    # CUBLAS_STATUS_INVALID_VALUE
        if lda < max(1, m if ta == 0 else k) or ldb < max(1, k if tb == 0 else n) or ldc < max(1, m):
            return 7
        self.calls.append((ta, tb, m, n, k, lda, sa, ldb, sb, ldc, sc, batch, compute))
        al, be = alpha._obj.value, beta._obj.value
        self.d._unprotect()
        try:
            for i in range(batch if m and n else 0):
                prod = self._matrix(a + i * sa * self._item(at), at, m, k, lda, ta) @ \
                    self._matrix(b + i * sb * self._item(bt), bt, k, n, ldb, tb)
                cp = c + i * sc * self._item(ct)
                out = al * prod
                if be != 0:
                    out = out + be * self._matrix(cp, ct, m, n, ldc, 0)
                self._store(cp, ct, m, n, ldc, out)
        finally:
            self.d._reprotect()
        return 0

    @staticmethod
    def _item(dt):
        return 2 if dt in (2, 14) else (4 if dt == 0 else 8)


_cublas = None


def cublas():
    """The emulated driver's cuBLAS."""
    global _cublas
    drv = driver()
    with _driver_lock:
        if _cublas is None:
            _cublas = Cublas(drv)
        return _cublas
