"""The host side of CUDA kernel launches, without a GPU: which kernel, 32- or 64-bit
indices, chunking, the packed descriptors, the grid, module caching, and the
PTL_CUDA_LAUNCH_BLOCKING debug mode, against a fake driver that records what it is
asked. (The struct layouts are checked against the CUDA header with NVRTC when it is
installed.) Nothing here runs a kernel: see the report in pytorchlite/cuda/_launch.py.
"""

import ctypes
import os
import re
import struct
import sys

import pytest

from pytorchlite.cuda import _launch, _nvrtc

ROOT = _nvrtc.ROOT


# --- planning ---------------------------------------------------------------------------------

def test_coalesce_merges_contiguous_dims_and_drops_ones():
    sizes, strides = _launch.coalesce((2, 1, 3, 4), [[12, 12, 4, 1], [12, 12, 4, 1]])
    assert sizes == [24] and strides == [[1, 1]]
    # a transposed input cannot merge with the contiguous output
    sizes, strides = _launch.coalesce((3, 4), [[4, 1], [1, 3]])
    assert sizes == [4, 3] and strides == [[1, 3], [4, 1]]
    assert _launch.coalesce((), [[], []]) == ([1], [[1, 1]])


def test_plan_contiguous_is_one_c32_launch():
    p = _launch.plan_elementwise((1000,), [(4, [1]), (4, [1]), (4, [1])])
    assert p.variant == "c32" and p.launches == [(1000, [0, 0, 0], None)]


def test_plan_empty_launches_nothing():
    for shape in ((0,), (3, 0, 2)):
        p = _launch.plan_elementwise(shape, [(4, [0] * len(shape))])
        assert p.variant is None and p.launches == []


def test_plan_huge_contiguous_is_split_in_32bit_chunks():
    n = 2 ** 31 + 5
    p = _launch.plan_elementwise((n,), [(2, [1]), (8, [1])])
    assert p.variant == "c32"
    assert [x[0] for x in p.launches] == [2 ** 31 - 1, 6]
    assert p.launches[1][1] == [(2 ** 31 - 1) * 2, (2 ** 31 - 1) * 8]    # byte offsets per operand


def test_plan_strided_and_broadcast_use_s32():
    p = _launch.plan_elementwise((3, 4), [(4, [4, 1]), (4, [1, 3]), (4, [0, 1])])
    assert p.variant == "s32" and len(p.launches) == 1
    n, offs, it = p.launches[0]
    assert n == 12 and len(it) == _launch.iter_size(3, False)
    nd, *rest = struct.unpack(f"<i{_launch.MAX_DIMS}I{_launch.MAX_DIMS * 3}i", it)
    assert nd == 2 and rest[:2] == [4, 3]
    strides = rest[_launch.MAX_DIMS:]
    assert strides[:6] == [1, 3, 1, 4, 1, 0]          # dim 0 (innermost): out, a, b; then dim 1


def test_plan_large_offsets_use_s64():
    # 2 x 3 elements, but the input's row stride is beyond int32
    p = _launch.plan_elementwise((2, 3), [(4, [3, 1]), (4, [2 ** 31, 1])])
    assert p.variant == "s64"
    assert len(p.launches[0][2]) == _launch.iter_size(2, True)
    # a negative stride as large also needs 64 bits
    assert not _launch.fits_32bit([2, 3], [[1, 2 ** 31], [1, 0]])
    assert not _launch.fits_32bit([2, 3], [[1, -(2 ** 31)], [1, 0]])
    assert _launch.fits_32bit([2, 3], [[1, -(2 ** 20)], [1, 0]])


def test_grid_never_empty_and_capped():
    assert _launch.grid_for(1, 132) == 1
    assert _launch.grid_for(256 * 10 + 1, 132) == 11
    assert _launch.grid_for(10 ** 9, 132) == 132 * _launch.BLOCKS_PER_SM
    with pytest.raises(AssertionError):
        _launch.grid_for(0, 132)


def test_pack_scalars():
    blob = _launch.pack_scalars([(1.5, 1), (-2.0, -2)])
    assert len(blob) == 64 and struct.unpack("<dqdqdqdq", blob)[:4] == (1.5, 1, -2.0, -2)
    with pytest.raises(RuntimeError, match="at most 4"):
        _launch.pack_scalars([(0.0, 0)] * 5)


def test_widest_descriptors_fit_the_kernel_parameter_space():
    """CUDA kernel parameters are limited to 4 KiB. At MAX_DIMS (64) the widest launches
    still fit: a reduction (64-bit ptl_iter<3> and ptl_iter<1>, three pointers, two counts,
    a double) and a pointwise kernel with three inputs (ptl_iter<4>, four pointers, a count,
    four scalars)."""
    n = _launch.MAX_DIMS
    assert len(_launch.pack_iter([2] * n, [[1] * 4] * n, True)) == _launch.iter_size(4, True)
    assert _launch.iter_size(3, True) + _launch.iter_size(1, True) + 6 * 8 <= 4096
    assert _launch.iter_size(4, True) + 5 * 8 + len(_launch.pack_scalars([])) <= 4096


def test_too_many_dims():
    n = _launch.MAX_DIMS + 1
    with pytest.raises(RuntimeError, match=f"more than {_launch.MAX_DIMS} dimensions"):
        _launch.pack_iter([2] * n, [[1]] * n, False)


# --- the names the launcher forms exist in the generated source -----------------------------------

def test_every_pointwise_launch_name_is_generated():
    sys.path.insert(0, ROOT)
    try:
        from codegen.gen import KernelVariant
        from codegen.model import load_ops
    finally:
        sys.path.remove(ROOT)
    with open(os.path.join(ROOT, "generated", "pointwise.cu"), encoding="utf-8") as f:
        defined = set(re.findall(r'extern "C" __global__ void __launch_bounds__\(PTL_BLOCK\) (ptl_cu_\w+)\(', f.read()))
    codes = {d: i for i, d in enumerate(("bool", "uint8", "int8", "int16", "int32", "int64", "float16",
                                         "bfloat16", "float32", "float64"))}
    wanted = set()
    for op in load_ops(os.path.join(ROOT, "ops.yaml")):
        if op.kind == "pointwise":
            for d in op.pointwise.dtypes:
                assert _launch.SUFFIX[codes[d]] == KernelVariant(d, d, "").sfx
                wanted |= {f"ptl_cu_{op.name}_{_launch.SUFFIX[codes[d]]}_{v}" for v in ("c32", "s32", "s64")}
    assert wanted and wanted == defined


# --- launching against a fake driver ----------------------------------------------------------------

class FakeDriver:
    """Records module loads, lookups and launches; decodes each launch's parameters."""

    def __init__(self, launch_err=0, sync_err=0):
        self.loads, self.lookups, self.launches, self.syncs = [], [], [], []
        self.launch_err, self.sync_err = launch_err, sync_err

    def CUstream(self, h):
        return ("stream", h)

    def cuModuleLoadData(self, image):
        self.loads.append(image)
        return (0, f"module{len(self.loads)}")

    def cuModuleGetFunction(self, mod, name):
        self.lookups.append((mod, name))
        return (0, (mod, name.decode()))

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shmem, stream, params, extra):
        self.launches.append({"fn": fn, "grid": (gx, gy, gz), "block": (bx, by, bz), "stream": stream,
                              "params": params})
        # (the launcher keeps only the last launch's arguments alive: decode before the next)
        return (self.launch_err,)

    def cuStreamSynchronize(self, stream):
        self.syncs.append(stream)
        return (self.sync_err,)


def _param(ptr_array, i, ctype):
    arr = ctypes.cast(ptr_array, ctypes.POINTER(ctypes.c_void_p))
    return ctypes.cast(arr[i], ctypes.POINTER(ctype))[0]


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(_nvrtc, "arch_for_capability", lambda major, minor: f"sm_{major}{minor}")
    compiled = []
    monkeypatch.setattr(_nvrtc, "compile_source", lambda name, arch: compiled.append((name, arch)) or b"IMAGE:" + name.encode())
    monkeypatch.delenv(_launch.DEBUG_ENV, raising=False)
    drv = FakeDriver()
    current = []
    k = _launch.DeviceKernels(drv, lambda: current.append(1), (9, 0), 132, index=0)
    return k, drv, compiled


def test_launch_contiguous(fake):
    k, drv, compiled = fake
    checks = []

    def record_args(a):
        checks.append(a)
        a.blob(_launch.pack_scalars([(2.0, 2)]))
    n = k.run_elementwise("add", "pointwise", "ptl_cu_add_f32", (10, 100), [(4, [100, 1])] * 3,
                          [0x1000, 0x2000, 0x3000], (record_args,), stream=77)
    assert n == 1 and compiled == [("pointwise", "sm_90")] and drv.loads == [b"IMAGE:pointwise"]
    (launch,) = drv.launches
    assert launch["fn"] == ("module1", "ptl_cu_add_f32_c32")
    assert launch["grid"] == (4, 1, 1) and launch["block"] == (256, 1, 1) and launch["stream"] == ("stream", 77)
    # decoded parameters: n, out, in0, in1, the scalar pack
    assert _param(launch["params"], 0, ctypes.c_uint32) == 1000
    assert [_param(launch["params"], i, ctypes.c_uint64) for i in (1, 2, 3)] == [0x1000, 0x2000, 0x3000]
    assert _param(launch["params"], 4, ctypes.c_double) == 2.0
    assert k.last_args.values()[0] == ("c_uint", 1000)
    # a second launch reuses the module and the function
    k.run_elementwise("add", "pointwise", "ptl_cu_add_f32", (5,), [(4, [1])] * 3, [1, 2, 3], (record_args,), 0)
    assert len(drv.loads) == 1 and len(drv.lookups) == 1 and len(drv.launches) == 2
    assert drv.syncs == []                      # asynchronous unless debugging


def test_launch_strided_passes_the_descriptor(fake):
    k, drv, _ = fake
    k.run_elementwise("neg", "pointwise", "ptl_cu_neg_f64", (3, 4), [(8, [4, 1]), (8, [1, 3])], [64, 128], (), 5)
    (launch,) = drv.launches
    assert launch["fn"][1] == "ptl_cu_neg_f64_s32"
    assert _param(launch["params"], 0, ctypes.c_uint32) == 12
    blob = bytes(_param(launch["params"], 3, ctypes.c_char * _launch.iter_size(2, False)))
    assert blob == _launch.pack_iter([4, 3], [[1, 3], [4, 1]], False)


def test_empty_launches_nothing(fake):
    k, drv, compiled = fake
    assert k.run_elementwise("add", "pointwise", "ptl_cu_add_f32", (0, 5), [(4, [5, 1])] * 3, [0, 0, 0], (), 0) == 0
    assert drv.launches == [] and compiled == []


def test_launch_error_names_the_operator(fake):
    k, drv, _ = fake
    drv.launch_err = 700
    with pytest.raises(RuntimeError, match=r"launching mul\(\) \(kernel ptl_cu_mul_f32_c32"):
        k.run_elementwise("mul", "pointwise", "ptl_cu_mul_f32", (4,), [(4, [1])] * 3, [1, 2, 3], (), 0)


def test_debug_mode_synchronises_and_names_the_failing_operator(fake, monkeypatch):
    k, drv, _ = fake
    monkeypatch.setenv(_launch.DEBUG_ENV, "1")
    k.run_elementwise("exp", "pointwise", "ptl_cu_exp_f32", (4,), [(4, [1])] * 2, [1, 2], (), 9)
    assert drv.syncs == [("stream", 9)]
    drv.sync_err = 700       # CUDA_ERROR_ILLEGAL_ADDRESS, seen only by the synchronisation
    with pytest.raises(RuntimeError, match=r"in exp\(\) \(kernel ptl_cu_exp_f32_c32\).*PTL_CUDA_LAUNCH_BLOCKING=1"):
        k.run_elementwise("exp", "pointwise", "ptl_cu_exp_f32", (4,), [(4, [1])] * 2, [1, 2], (), 9)


# --- the struct layouts the host packs, as NVRTC lays them out -----------------------------------

def test_struct_layouts_match_the_cuda_header():
    try:
        _nvrtc.nvrtc()
    except _nvrtc.NvrtcUnavailable as e:
        pytest.skip(f"NVRTC is not available: {e}")
    from pytorchlite.cuda import _philox
    checks = []
    for nt in (1, 2, 3, 4):
        checks.append(f"static_assert(sizeof(ptl_iter32<{nt}>) == {_launch.iter_size(nt, False)}, \"iter32<{nt}>\");")
        checks.append(f"static_assert(sizeof(ptl_iter64<{nt}>) == {_launch.iter_size(nt, True)}, \"iter64<{nt}>\");")
    checks.append(f"static_assert(sizeof(ptl_scalar_pack) == {len(_launch.pack_scalars([]))}, \"scalars\");")
    checks.append(f"static_assert(sizeof(ptl_upper_bound) == {struct.calcsize(_philox.UBOUND_FORMAT)}, \"ubound\");")
    src = '#include "philox.cu"\n' + "\n".join(checks) + "\n"
    _nvrtc.compile_text(src, "compute_80", "layout.cu", ("--fmad=false",))


def test_random_launch_arguments(fake):
    from pytorchlite.cuda import _philox
    k, drv, _ = fake
    ub = _philox.pack_upper_bound(_philox.upper_bound(8, 1.0))
    _launch.launch_random(k, "uniform", 8, 0x40, (3, 4), (4, 1), 42, 2 ** 64 + 5, (0.0, 1.0, ub))
    assert drv.launches[-1]["fn"][1] == "ptl_cu_uniform_f32"
    vals = [v for _, v in k.last_args.values()]
    assert vals[0] == 12 and vals[1] == 0x40 and vals[3:6] == [1, 42, 5] and vals[6:8] == [0.0, 1.0]
    assert vals[8] == ub
    _launch.launch_random(k, "integers", 5, 0x40, (3, 4), (1, 3), 1, 0, (-(2 ** 63), 0))   # transposed
    vals = [v for _, v in k.last_args.values()]
    assert drv.launches[-1]["fn"][1] == "ptl_cu_integers_i64" and vals[3] == 0 and vals[6:] == [-(2 ** 63), 0]
    nd, _pad, *rest = struct.unpack(f"<ii{_launch.MAX_DIMS}q{_launch.MAX_DIMS}q", vals[2])
    assert nd == 2 and rest[:2] == [4, 3] and rest[_launch.MAX_DIMS:_launch.MAX_DIMS + 2] == [3, 1]
    assert _launch.launch_random(k, "normal", 8, 0, (0, 3), (3, 1), 1, 0, (0.0, 1.0)) is None
