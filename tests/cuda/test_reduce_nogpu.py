"""The host side of CUDA reductions without a GPU: the plan (kept and reduced dims, row or
column geometry, 32- or 64-bit indices, output layout), the kernel names against the
generated source, and the launch arguments against a fake driver. Nothing here runs a
kernel (tests/cuda/test_nvrtc_compile.py compiles them)."""

import ctypes
import os
import re
import struct

import pytest

from pytorchlite.cuda import _launch, _nvrtc, _reduce
from pytorchlite.generated import reductions as R

MAXD = _launch.MAX_DIMS


def _kept(p):
    return p.kept[0], [list(s) for s in p.kept[1]]


def _red(p):
    return p.red[0], [list(s) for s in p.red[1]]


# --- planning ---------------------------------------------------------------------------------

def test_rows_of_a_contiguous_matrix():
    p = _reduce.plan((64, 1000), (1000, 1), (1,))
    assert (p.n_out, p.n_red, p.geometry, p.wide) == (64, 1000, "row", False)
    assert _kept(p) == ([64], [[1, 1000, 1]])         # out, in, aux strides
    assert _red(p) == ([1000], [[1]])
    assert p.suffix == "row32"


def test_columns_of_a_contiguous_matrix():
    p = _reduce.plan((1000, 64), (64, 1), (0,))
    assert (p.n_out, p.n_red, p.geometry) == (64, 1000, "col")
    assert _kept(p) == ([64], [[1, 1, 1]]) and _red(p) == ([1000], [[64]])


def test_short_reduced_runs_take_a_thread_per_output():
    p = _reduce.plan((100000, 8), (8, 1), (1,))
    assert p.geometry == "col" and p.n_red == 8


def test_one_output_is_one_block():
    p = _reduce.plan((3, 4, 5), (20, 5, 1), (0, 1, 2))
    assert (p.n_out, p.n_red, p.geometry) == (1, 60, "row")
    assert _red(p) == ([60], [[1]])                    # contiguous reduced dims merge
    assert _kept(p) == ([1], [[1, 1, 1]])


def test_reduced_dims_keep_row_major_numbering():
    """A transposed input: the reduced dims do not merge, innermost first, so element r of
    an output is the r-th in row-major order of the reduced dims (argmax's index)."""
    # x of shape (2, 3, 4) viewed transposed from a (4, 3, 2) buffer: strides (1, 2, 6)
    p = _reduce.plan((2, 3, 4), (1, 2, 6), (1, 2))
    assert _red(p) == ([4, 3], [[6], [2]])
    assert _kept(p) == ([2], [[1, 1, 1]])
    assert p.geometry == "col"                          # 12 reduced elements: a thread per output


def test_keepdim_layout_and_aux_strides():
    shape = (4, 5, 6)
    out_strides = (5, 1, 1)                            # keepdim shape (4, 5, 1), contiguous
    p = _reduce.plan(shape, (30, 6, 1), (2,), out_strides, out_strides)
    assert _kept(p) == ([20], [[1, 6, 1]])             # kept dims merge for every operand
    # an aux input with its own strides (a broadcast shift) stops the merge
    p = _reduce.plan(shape, (30, 6, 1), (2,), out_strides, (1, 0, 0))
    assert _kept(p) == ([5, 4], [[1, 6, 0], [5, 30, 1]])


def test_empty_problems():
    assert _reduce.plan((0, 5), (5, 1), (1,)) is None                       # no output
    p = _reduce.plan((5, 0), (1, 1), (1,))                                  # empty reductions
    assert p.n_out == 5 and p.n_red == 0 and p.red[0] == [0]


def test_index_width():
    p = _reduce.plan((2, 3), (2 ** 31, 1), (1,))
    assert p.wide and p.suffix.endswith("64")
    big = _reduce.plan((2 ** 31 + 8,), (1,), (0,))
    assert big.wide and big.n_red == 2 ** 31 + 8
    kept, red = big.blobs()
    assert len(kept) == _launch.iter_size(3, True) and len(red) == _launch.iter_size(1, True)
    nd, _pad, *rest = struct.unpack(f"<ii{MAXD}q{MAXD}q", red)
    assert nd == 1 and rest[0] == 2 ** 31 + 8 and rest[MAXD] == 1
    assert not _reduce.plan((64, 1000), (1000, 1), (1,)).wide


def test_too_many_dims():
    n = MAXD + 1
    with pytest.raises(RuntimeError, match=f"only tensors with up to {MAXD} dims are supported"):
        _reduce.plan((2,) * n, (1,) * n, (0,))


def test_resolve_follows_the_declared_special_values():
    inf = float("inf")
    assert _reduce.resolve(R.R_NORM, 2.0) == R.R_NORM_TWO
    assert _reduce.resolve(R.R_NORM, inf) == R.R_NORM_INF and _reduce.resolve(R.R_NORM, -inf) == R.R_NORM_NEGINF
    assert _reduce.resolve(R.R_NORM, 0) == R.R_NORM_ZERO and _reduce.resolve(R.R_NORM, 3.0) == R.R_NORM
    assert _reduce.resolve(R.R_SUM, 2.0) == R.R_SUM
    with pytest.raises(ValueError):
        _reduce.resolve(R.R_NUM_OPS, 0.0)


# --- every name the launcher forms is in the generated source ------------------------------------

def test_every_kernel_name_is_generated():
    with open(os.path.join(_nvrtc.ROOT, "generated", "reduce.cu"), encoding="utf-8") as f:
        defined = set(re.findall(r"__launch_bounds__\(PTL_BLOCK\) (ptl_cu_red_\w+)\(", f.read()))
    wanted = set()
    plans = [_reduce.plan((64, 1000), (1000, 1), (1,)), _reduce.plan((1000, 64), (64, 1), (0,)),
             _reduce.plan((2, 100), (2 ** 31, 1), (1,)), _reduce.plan((2, 3), (2 ** 31, 1), (0,))]
    assert {p.suffix for p in plans} == {"row32", "col32", "row64", "col64"}
    for code, row in enumerate(R.REDUCTIONS):
        for dt in row[_reduce.DTYPES]:
            wanted |= {_reduce.kernel_name(code, dt, p) for p in plans}
    assert wanted == defined


# --- launching against a fake driver --------------------------------------------------------------

class FakeDriver:
    def __init__(self):
        self.launches = []

    def CUstream(self, h):
        return ("stream", h)

    def cuModuleLoadData(self, image):
        return (0, "module")

    def cuModuleGetFunction(self, mod, name):
        return (0, (mod, name.decode()))

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shmem, stream, params, extra):
        arr = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))

        def arg(i, ctype):
            return ctypes.cast(arr[i], ctypes.POINTER(ctype))[0]
        self.launches.append({"fn": fn[1], "grid": gx, "block": bx, "stream": stream, "arg": arg})
        return (0,)


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(_nvrtc, "arch_for_capability", lambda major, minor: f"sm_{major}{minor}")
    monkeypatch.setattr(_nvrtc, "compile_source", lambda name, arch: b"IMAGE")
    monkeypatch.delenv(_launch.DEBUG_ENV, raising=False)
    drv = FakeDriver()
    return _launch.DeviceKernels(drv, lambda: None, (9, 0), 132, index=0), drv


def test_row_launch_arguments(fake):
    k, drv = fake
    p = _reduce.plan((7, 100), (100, 1), (1,))
    _reduce.launch(k, R.R_SUM, 8, p, 0x10, 0, 0x20, 0.0, stream=3)
    (l,) = drv.launches
    assert l["fn"] == "ptl_cu_red_sum_f32_row32" and l["grid"] == 7 and l["block"] == 256
    assert l["stream"] == ("stream", 3)
    a = l["arg"]
    assert (a(0, ctypes.c_uint32), a(1, ctypes.c_uint32)) == (7, 100)
    assert [a(i, ctypes.c_uint64) for i in (2, 3, 4)] == [0x10, 0, 0x20]     # out, aux, in
    kept, red = p.blobs()
    assert bytes(a(5, ctypes.c_char * len(kept))) == kept and bytes(a(6, ctypes.c_char * len(red))) == red
    assert a(7, ctypes.c_double) == 0.0


def test_col_and_wide_launch_arguments(fake):
    k, drv = fake
    p = _reduce.plan((1000, 5000), (5000, 1), (0,))
    _reduce.launch(k, R.R_VAR, 9, p, 0x10, 0x30, 0x20, 1.0)
    l = drv.launches[-1]
    assert l["fn"] == "ptl_cu_red_var_f64_col32" and l["grid"] == 20      # 5000 outputs / 256
    assert l["arg"](3, ctypes.c_uint64) == 0x30 and l["arg"](7, ctypes.c_double) == 1.0
    p = _reduce.plan((2, 100), (2 ** 31, 1), (1,))
    _reduce.launch(k, R.R_ARGMAX, 5, p, 0x10, None, 0x20, 0.0)
    l = drv.launches[-1]
    assert l["fn"] == "ptl_cu_red_argmax_i64_row64" and l["grid"] == 2
    assert (l["arg"](0, ctypes.c_int64), l["arg"](1, ctypes.c_int64)) == (2, 100)


def test_the_grid_is_capped(fake):
    k, drv = fake
    _reduce.launch(k, R.R_AMAX, 8, _reduce.plan((10 ** 6, 64), (64, 1), (1,)), 1, 0, 2, 0.0)
    assert drv.launches[-1]["grid"] == 132 * _launch.BLOCKS_PER_SM


# --- the plan addresses what the reduction means ---------------------------------------------------

def _offsets(sizes, strides, linear):
    """What ptl_offsets computes on the device: offsets per operand of element `linear`
    (dims innermost first)."""
    off = [0] * len(strides[0])
    for size, st in zip(sizes, strides):
        linear, r = divmod(linear, size)
        for k in range(len(off)):
            off[k] += r * st[k]
    return off


@pytest.mark.parametrize("shape, perm, step, dims", [
    ((6, 7), (0, 1), 1, (1,)),
    ((6, 7), (0, 1), 1, (0,)),
    ((3, 4, 5), (2, 1, 0), 1, (0, 2)),        # transposed: reduced dims that do not merge
    ((3, 4, 5), (1, 0, 2), 1, (1,)),
    ((4, 6), (0, 1), 2, (0, 1)),              # every other column of a wider buffer
    ((2, 3, 4, 5), (3, 0, 2, 1), 1, (1, 3)),
    ((5,), (0,), 1, ()),                      # nothing reduced
])
def test_every_output_reads_its_elements_in_row_major_order(shape, perm, step, dims):
    """Walk the plan as the kernels do (kept dims for the output, reduced dims for the
    elements) over a buffer of distinct values: each output must see exactly the elements
    of its slice, numbered in row-major order of the reduced dims, and land at its place
    in the contiguous keepdim output."""
    np = pytest.importorskip("numpy")
    full = tuple(shape[i] for i in perm)
    buf = np.arange(int(np.prod(full)) * step).reshape(full[:-1] + (full[-1] * step,))[..., ::step]
    x = buf.transpose(np.argsort(perm))
    assert x.shape == shape
    flat = buf.base if buf.base is not None else buf
    strides = tuple(s // x.itemsize for s in x.strides)
    p = _reduce.plan(shape, strides, dims)
    kshape = tuple(1 if d in dims else s for d, s in enumerate(shape))
    rdims = [d for d in range(len(shape)) if d in dims]
    seen_out = set()
    for o in range(p.n_out):
        out_off, in_off, aux_off = _offsets(*p.kept, o)
        assert out_off == aux_off
        seen_out.add(out_off)
        index = np.unravel_index(out_off, kshape)
        slc = tuple(slice(None) if d in dims else index[d] for d in range(len(shape)))
        want = x[slc].reshape(-1) if rdims else np.array([x[slc]])
        got = [flat.reshape(-1)[in_off + _offsets(*p.red, r)[0]] for r in range(p.n_red)]
        assert list(want) == got
    assert seen_out == set(range(int(np.prod(kshape))))
