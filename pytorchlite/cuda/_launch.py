"""Launching pytorchlite's CUDA kernels: modules, argument packing, index width, debug mode.

NOT YET RUN ON A GPU. The planning and packing below (which kernel, 32- or 64-bit
indices, the descriptor bytes, the grid) are tested on the CPU (tests/cuda/
test_launch_nogpu.py, with a fake driver and NVRTC-checked struct layouts), and the whole
path runs on the CPU emulator (PTL_CUDA_EMULATOR=1: the kernels built for the host, the
packed parameters read back through cuLaunchKernel's void **); the driver calls
themselves have not been executed against a real device (`python -m
pytorchlite.cuda.check` does that).

How a launch goes:
* the module's image comes from _nvrtc.compile_source (disk cache, else NVRTC) for the
  device's architecture, is loaded once per device with cuModuleLoadData, and each
  function is looked up once with cuModuleGetFunction;
* the kernel runs on the current stream (cuLaunchKernel), so Python runs ahead of the GPU;
* an empty problem launches nothing (no zero-sized grid is ever requested);
* with PTL_CUDA_LAUNCH_BLOCKING=1 in the environment every launch is followed by a stream
  synchronisation, and a failure (at launch or while running) raises a RuntimeError naming
  the operator and the kernel, instead of surfacing in a later unrelated call.
"""

import ctypes
import os
import struct
import threading

from pytorchlite.cuda import _nvrtc
from pytorchlite.generated import abi as _abi

MAX_DIMS = _abi.MAX_DIMS
BLOCK = 256                     # PTL_BLOCK in the .cu sources
INT32_MAX = 2 ** 31 - 1
BLOCKS_PER_SM = 32              # grid-stride loops: more blocks than this buys nothing

DEBUG_ENV = "PTL_CUDA_LAUNCH_BLOCKING"

# The profiler's hook: an object with kernel_begin(launcher, kernel, stream) -> token and
# kernel_end(launcher, kernel, stream, token) around every launch (it records CUDA events
# on the stream); None costs one test per launch. Set by pytorchlite.profiler.
observer = None
# host <-> device copies as PyTorch's profiler (Kineto) names them (pageable host memory)
MEMCPY_NAMES = {"HtoD": "Memcpy HtoD (Pageable -> Device)", "DtoH": "Memcpy DtoH (Device -> Pageable)"}

# dtype code -> kernel-name suffix and itemsize (codegen/abi.py)
SUFFIX = _abi.SUFFIX
ITEMSIZE = tuple(size for _code, size, _sfx in _abi.DTYPES.values())


def launch_blocking():
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


# --- planning: coalesced dims, index width -----------------------------------------------------

def coalesce(shape, strides_per_operand):
    """Drop size-1 dims and merge neighbours that are contiguous for every operand.
    Returns (sizes, strides) innermost first: sizes[d], strides[d][k] for operand k
    (strides in elements). A 0-d or all-ones shape becomes one dim of size 1."""
    nt = len(strides_per_operand)
    dims = [d for d in range(len(shape)) if shape[d] != 1]
    sizes, strides = [], []
    for d in reversed(dims):                      # innermost first
        st = [strides_per_operand[k][d] for k in range(nt)]
        if sizes and all(st[k] == strides[-1][k] * sizes[-1] for k in range(nt)):
            sizes[-1] *= shape[d]
            continue
        sizes.append(shape[d])
        strides.append(st)
    if not sizes:
        sizes, strides = [1], [[1] * nt]
    return sizes, strides


def fits_32bit(sizes, strides):
    """Whether the element count and every operand's extreme offsets fit in int32."""
    n = 1
    for s in sizes:
        n *= s
    if n > INT32_MAX:
        return False
    nt = len(strides[0]) if strides else 0
    for k in range(nt):
        hi = sum((s - 1) * st[k] for s, st in zip(sizes, strides) if st[k] > 0)
        lo = sum((s - 1) * st[k] for s, st in zip(sizes, strides) if st[k] < 0)
        if hi > INT32_MAX or lo < -INT32_MAX:
            return False
    return True


def pack_iter(sizes, strides, wide):
    """The bytes of ptl_iter32<NT> / ptl_iter64<NT> (kernels/cuda/ptl_cuda.cuh)."""
    nd, nt = len(sizes), len(strides[0])
    if nd > MAX_DIMS:
        raise RuntimeError(f"tensors with more than {MAX_DIMS} dimensions are not supported (got {nd})")
    pad = MAX_DIMS - nd
    flat = [v for st in strides for v in st] + [0] * (pad * nt)
    if wide:
        return struct.pack(f"<ii{MAX_DIMS}q{MAX_DIMS * nt}q", nd, 0, *sizes, *([1] * pad), *flat)
    return struct.pack(f"<i{MAX_DIMS}I{MAX_DIMS * nt}i", nd, *sizes, *([1] * pad), *flat)


def iter_size(nt, wide):
    return (8 + 8 * MAX_DIMS + 8 * MAX_DIMS * nt) if wide else (4 + 4 * MAX_DIMS + 4 * MAX_DIMS * nt)


def pack_scalars(pairs):
    """ptl_scalar_pack: four (double, int64) pairs."""
    if len(pairs) > 4:
        raise RuntimeError("a CUDA pointwise kernel takes at most 4 scalars")
    pairs = list(pairs) + [(0.0, 0)] * (4 - len(pairs))
    return struct.pack("<" + "dq" * 4, *[v for p in pairs for v in p])


def grid_for(n, sm_count):
    """Blocks for a grid-stride loop over n elements (n >= 1)."""
    if n <= 0:
        raise AssertionError("an empty problem must not be launched")
    return max(1, min((n + BLOCK - 1) // BLOCK, sm_count * BLOCKS_PER_SM))


class Plan:
    """One or more launches of one kernel family over n elements."""

    def __init__(self, variant, launches):
        self.variant = variant          # "c32", "s32", "s64", or None (nothing to do)
        self.launches = launches        # [(n, byte offsets per operand, iter bytes or None)]


def plan_elementwise(shape, operands):
    """operands: [(itemsize, strides in elements)] with the output first, every operand
    viewed at `shape`. Contiguous operands get c32 in chunks of at most INT32_MAX
    elements; otherwise s32 when offsets fit in int32, s64 when not."""
    n = 1
    for s in shape:
        n *= s
    if n == 0:
        return Plan(None, [])
    sizes, strides = coalesce(shape, [st for _, st in operands])
    if len(sizes) == 1 and all(st == 1 for st in strides[0]):
        launches = []
        start = 0
        while start < n:
            m = min(INT32_MAX, n - start)
            launches.append((m, [start * item for item, _ in operands], None))
            start += m
        return Plan("c32", launches)
    wide = not fits_32bit(sizes, strides)
    return Plan("s64" if wide else "s32", [(n, [0] * len(operands), pack_iter(sizes, strides, wide))])


# --- argument marshalling ---------------------------------------------------------------------

class Args:
    """Kernel arguments in declaration order, kept alive until the launch returns; `.ptr`
    is the void** array cuLaunchKernel takes."""

    def __init__(self):
        self._objs = []

    def _add(self, obj):
        self._objs.append(obj)
        return self

    def u32(self, v):
        return self._add(ctypes.c_uint32(v))

    def i32(self, v):
        return self._add(ctypes.c_int32(v))

    def i64(self, v):
        return self._add(ctypes.c_int64(v))

    def u64(self, v):
        return self._add(ctypes.c_uint64(v))

    def f64(self, v):
        return self._add(ctypes.c_double(v))

    def ptr(self, v):
        return self._add(ctypes.c_uint64(v))

    def blob(self, data):
        return self._add(ctypes.create_string_buffer(bytes(data), len(data)))

    @property
    def ptr_array(self):
        arr = (ctypes.c_void_p * max(1, len(self._objs)))(*[ctypes.addressof(o) for o in self._objs])
        self._arr = arr
        return ctypes.addressof(arr)

    def values(self):
        """(type name, value) per argument: for tests and error messages."""
        out = []
        for o in self._objs:
            out.append((type(o).__name__, o.raw if hasattr(o, "raw") else o.value))
        return out


# --- modules and launches, per device ----------------------------------------------------------

class DeviceKernels:
    """The loaded CUDA modules of one device and the launch call. `driver` is cuda-python's
    driver module (or a fake with the same calls); `make_current` makes the device's
    context current; `capability` is (major, minor); `sm_count` the number of SMs."""

    def __init__(self, driver, make_current, capability, sm_count, index=0):
        self.d = driver
        self.make_current = make_current
        self.arch = _nvrtc.arch_for_capability(*capability)
        self.sm_count = sm_count
        self.index = index
        self._modules = {}
        self._functions = {}
        self._lock = threading.Lock()

    def _ok(self, result, what):
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            name = getattr(err, "name", None)
            raise RuntimeError(f"CUDA error: {what} failed with CUresult {int(err)}"
                               + (f" ({name})" if name else "") + f" (device cuda:{self.index})")
        return rest[0] if len(rest) == 1 else None

    def function(self, source, name):
        key = (source, name)
        fn = self._functions.get(key)
        if fn is not None:
            return fn
        with self._lock:
            mod = self._modules.get(source)
            if mod is None:
                image = _nvrtc.compile_source(source, self.arch)
                self.make_current()
                mod = self._ok(self.d.cuModuleLoadData(image), f"cuModuleLoadData({source})")
                self._modules[source] = mod
            fn = self._ok(self.d.cuModuleGetFunction(mod, name.encode()), f"cuModuleGetFunction({name})")
            self._functions[key] = fn
        return fn

    def launch(self, op_name, source, kernel, n, args, stream):
        """Run `kernel` over n elements (grid-stride) on `stream` (a handle); n == 0 is a
        caller bug (empty problems are dropped before this)."""
        fn = self.function(source, kernel)
        grid = grid_for(n, self.sm_count)
        self.last_args = args     # cuLaunchKernel copies them; kept only for inspection
        self.make_current()
        hstream = self.d.CUstream(stream)
        obs = observer
        if obs is not None:
            tok = obs.kernel_begin(self, kernel, stream)
        res = self.d.cuLaunchKernel(fn, grid, 1, 1, BLOCK, 1, 1, 0, hstream, args.ptr_array, 0)
        if obs is not None:
            obs.kernel_end(self, kernel, stream, tok)
        err = res[0] if isinstance(res, tuple) else res
        if int(err) != 0:
            raise RuntimeError(f"CUDA error launching {op_name}() (kernel {kernel}, grid {grid}x{BLOCK}) on "
                               f"cuda:{self.index}: CUresult {int(err)} {getattr(err, 'name', '')}".rstrip())
        if launch_blocking():
            res = self.d.cuStreamSynchronize(hstream)
            err = res[0] if isinstance(res, tuple) else res
            if int(err) != 0:
                raise RuntimeError(f"CUDA error in {op_name}() (kernel {kernel}) on cuda:{self.index}, reported by "
                                   f"{DEBUG_ENV}=1: CUresult {int(err)} {getattr(err, 'name', '')}".rstrip())
        return grid

    def memcpy(self, kind, dst, src, nbytes, stream):
        """cuMemcpy{kind}Async (kind "HtoD" or "DtoH") of nbytes on `stream` (a handle),
        shown to a profiler as Kineto names the copy; the caller synchronises."""
        self.make_current()
        hstream = self.d.CUstream(stream)
        name = MEMCPY_NAMES[kind]
        obs = observer
        if obs is not None:
            tok = obs.kernel_begin(self, name, stream)
        fn = self.d.cuMemcpyHtoDAsync if kind == "HtoD" else self.d.cuMemcpyDtoHAsync
        self._ok(fn(dst, src, nbytes, hstream), f"cuMemcpy{kind}Async")
        if obs is not None:
            obs.kernel_end(self, name, stream, tok)

    def run_elementwise(self, op_name, source, base, shape, operands, ptrs, extra=(), stream=0):
        """Plan and launch `base`_c32/_s32/_s64 over `shape`. operands: [(itemsize,
        strides)] output first; ptrs: their data addresses; extra: callables adding the
        trailing arguments (scalars) to an Args. Returns the number of launches."""
        plan = plan_elementwise(shape, operands)
        if plan.variant is None:
            return 0
        kernel = f"{base}_{plan.variant}"
        for n, offsets, it in plan.launches:
            a = Args()
            if plan.variant == "s64":
                a.i64(n)
            else:
                a.u32(n)
            for p, off in zip(ptrs, offsets):
                a.ptr(p + off)
            if it is not None:
                a.blob(it)
            for add in extra:
                add(a)
            self.launch(op_name, source, kernel, n, a, stream)
        return len(plan.launches)


def _runtime_no_launcher(index, backend):
    return NotImplementedError(f"cuda:{index} has no kernel launcher: its backend ({type(backend).__name__}) is not "
                               "cuda-python's driver (a fake device for the allocator tests?)")


_per_device = {}
_per_device_lock = threading.Lock()


def kernels_for(index):
    """The DeviceKernels of CUDA device `index` (created on first use)."""
    k = _per_device.get(index)
    if k is not None:
        return k
    from pytorchlite.cuda import _runtime
    with _per_device_lock:
        k = _per_device.get(index)
        if k is None:
            st = _runtime._state(index)
            be = st.backend
            if not isinstance(be, _runtime._DriverBackend):
                raise _runtime_no_launcher(index, be)
            props = be.properties()
            k = DeviceKernels(be.d, be._current, (props["major"], props["minor"]),
                              props["multi_processor_count"], index)
            _per_device[index] = k
    return k


# --- random fills (kernels/cuda/philox.cu) -----------------------------------------------------
# A host helper with the kernels' argument list; no operator dispatches to it yet.
# (Reductions: pytorchlite/cuda/_reduce.py.)

RANDOM_KINDS = ("uniform", "normal", "exponential", "bernoulli", "integers")


def launch_random(k, kind, dtype_code, out_ptr, shape, strides, seed, offset, params, stream=0):
    """Fill out (viewed with shape / strides in elements) with the CPU's stream for
    (seed, offset): element i in row-major order gets the value random.c gives it.
    params: uniform (from, range, ubound bytes), normal (mean, std), exponential (lambd,),
    bernoulli (p,), integers (from, range)."""
    if kind not in RANDOM_KINDS:
        raise ValueError(f"unknown random fill {kind!r}")
    n = 1
    for s in shape:
        n *= s
    if n == 0:
        return None
    contig = 1
    expected = 1
    for size, st in zip(reversed(shape), reversed(strides)):
        if size != 1 and st != expected:
            contig = 0
        expected *= size
    # the descriptor walks the *uncoalesced* row-major order, innermost first
    dims = [(s, st) for s, st in zip(shape, strides)][::-1] or [(1, 1)]
    it = pack_iter([d[0] for d in dims], [[d[1]] for d in dims], True)
    a = Args().i64(n).ptr(out_ptr).blob(it).i32(contig).u64(seed % 2 ** 64).u64(offset % 2 ** 64)
    if kind == "uniform":
        frm, rng, ub = params
        a.f64(frm).f64(rng).blob(ub)
    elif kind == "normal":
        a.f64(params[0]).f64(params[1])
    elif kind == "integers":
        a.i64(params[0]).u64(params[1] % 2 ** 64)
    else:
        a.f64(params[0])
    return k.launch(kind, "philox", f"ptl_cu_{kind}_{SUFFIX[dtype_code]}", n, a, stream)
