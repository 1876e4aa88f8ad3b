"""The CUDA reductions (generated/reduce.cu) on a GPU, against NumPy.

Skipped without a CUDA device. The kernels are driven at the driver level (memory from
cuMemAlloc, launches through pytorchlite.cuda._reduce.plan / launch on a DeviceKernels),
so that this checks the generated kernels and the planner, not the rest of the CUDA
runtime, and needs neither the CPU kernels nor PyTorch. Every reduction runs for float16,
float32, float64, int32, int64, uint8 and bool where declared, on contiguous, transposed
and strided views, with both index widths (the 64-bit kernels forced on small problems),
and is compared with a NumPy reference of PyTorch's semantics: exactly for integers,
indices and selections (NaN propagates, the first occurrence wins), to rounding for
floating sums (the GPU combines in a tree).
"""

import os
import warnings

import numpy as np
import pytest

drv = pytest.importorskip("cuda.bindings.driver")

from pytorchlite.cuda import _launch, _reduce  # noqa: E402
from pytorchlite.generated import reductions as R  # noqa: E402

NP = {0: np.bool_, 1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float16,
      8: np.float32, 9: np.float64}
DTYPES = (8, 9, 6, 4, 5, 1, 0)
ARGS = {"norm": (0.0, 1.0, 2.0, 3.5, float("inf"), float("-inf")), "var": (1.0, 0.0), "std": (1.0,)}
SELECTIONS = ("amax", "amin", "max", "min", "norm_inf", "norm_neginf", "norm_zero")
# (shape, layout, reduced dims)
CASES = [
    ((1000,), "contiguous", (0,)),
    ((48, 300), "contiguous", (1,)),          # rows: a block per output
    ((300, 48), "contiguous", (0,)),          # columns: a thread per output
    ((4, 5, 6), "transposed", (0, 2)),        # reduced dims that do not merge
    ((40, 70), "sliced", (1,)),
    ((6, 8), "contiguous", (1,)),             # short rows
    ((5, 0), "contiguous", (1,)),             # empty reductions
]


def _ok(res, what):
    err, *rest = res if isinstance(res, tuple) else (res,)
    if int(err) != 0:
        raise RuntimeError(f"{what} failed: {err}")
    return rest[0] if len(rest) == 1 else rest


@pytest.fixture(scope="module")
def gpu():
    try:
        _ok(drv.cuInit(0), "cuInit")
        dev = _ok(drv.cuDeviceGet(0), "cuDeviceGet")
    except RuntimeError as e:
        pytest.skip(f"no CUDA device: {e}")
    ctx = _ok(drv.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    _ok(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    attr = drv.CUdevice_attribute
    major = _ok(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "attr")
    minor = _ok(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "attr")
    sms = _ok(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "attr")
    k = _launch.DeviceKernels(drv, lambda: _ok(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent"), (major, minor), sms)
    allocations = []

    def upload(a):
        a = np.ascontiguousarray(a)
        ptr = int(_ok(drv.cuMemAlloc(max(a.nbytes, 1)), "cuMemAlloc"))
        allocations.append(ptr)
        if a.nbytes:
            _ok(drv.cuMemcpyHtoD(ptr, a.ctypes.data, a.nbytes), "cuMemcpyHtoD")
        return ptr

    def download(ptr, shape, dtype):
        a = np.empty(shape, dtype)
        _ok(drv.cuCtxSynchronize(), "cuCtxSynchronize")
        if a.nbytes:
            _ok(drv.cuMemcpyDtoH(a.ctypes.data, ptr, a.nbytes), "cuMemcpyDtoH")
        return a

    yield k, upload, download
    _ok(drv.cuCtxSynchronize(), "cuCtxSynchronize")
    for p in allocations:
        drv.cuMemFree(p)


# --- the reference: PyTorch's semantics in NumPy --------------------------------------------------

def _rows(x, dims):
    """x with the reduced dims last, flattened in row-major order: (kept..., n_red)."""
    kept = [d for d in range(x.ndim) if d not in dims]
    y = np.transpose(x, kept + list(dims))
    return y.reshape(tuple(x.shape[d] for d in kept) + (-1,))


def _first_extreme(v, largest):
    """argmax / argmin along the last axis: the first NaN, else the first extreme."""
    nan = np.isnan(v) if v.dtype.kind == "f" else np.zeros(v.shape, bool)
    arg = np.argmax(v, -1) if largest else np.argmin(v, -1)   # NumPy also returns the first NaN
    return np.where(nan.any(-1), nan.argmax(-1), arg)


def reference(name, x, dims, arg):
    """(result, aux) in the keepdim shape."""
    v = _rows(x, dims)
    f = v.astype(np.float64)
    n = v.shape[-1]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        isf = x.dtype.kind == "f"
        if name in ("sum", "nansum"):
            r = (np.nansum(f, -1) if name == "nansum" and isf else f.sum(-1)) if isf else v.astype(np.int64).sum(-1)
        elif name == "prod":
            r = f.prod(-1) if isf else v.astype(np.int64).prod(-1)
        elif name == "mean":
            r = f.sum(-1) / n
        elif name == "nanmean":
            r = np.nansum(f, -1) / (~np.isnan(f)).sum(-1)
        elif name in ("count_nonzero", "norm_zero"):
            r = (v != 0).sum(-1)
        elif name == "all":
            r = (v != 0).sum(-1) == n
        elif name == "any":
            r = (v != 0).sum(-1) > 0
        elif name == "norm":
            r = (np.abs(f) ** arg).sum(-1) ** (1 / arg)
        elif name == "norm_one":
            r = np.abs(f).sum(-1)
        elif name == "norm_two":
            r = np.sqrt((f * f).sum(-1))
        elif name in ("norm_inf", "norm_neginf"):
            r = np.max(np.abs(v), -1) if name == "norm_inf" else np.min(np.abs(v), -1)
        elif name == "logsumexp" and n == 0:
            r = np.full(v.shape[:-1], -np.inf)
        elif name == "logsumexp":
            shift = np.max(v, -1, keepdims=True).astype(np.float64)
            shift[np.isinf(shift)] = 0
            r = np.log(np.exp(f - shift).sum(-1)) + shift[..., 0]
        elif name in ("amax", "amin"):
            r = np.max(v, -1) if name == "amax" else np.min(v, -1)
        elif name in ("max", "min", "argmax", "argmin"):
            idx = _first_extreme(v, name in ("max", "argmax"))
            vals = np.take_along_axis(v, idx[..., None], -1)[..., 0]
            r = vals if name in ("max", "min") else idx
        elif name in ("var", "std"):
            mean = f.sum(-1) / n
            m2 = ((f - mean[..., None]) ** 2).sum(-1)
            r = m2 / np.maximum(n - arg, 0) if n else np.full(m2.shape, np.nan)
            if name == "std":
                r = np.sqrt(r)
            aux = mean if n else np.full(m2.shape, np.nan)
            return _keep(r, x, dims), _keep(aux, x, dims)
        else:
            raise AssertionError(name)
    aux = _keep(idx, x, dims) if name in ("max", "min") else None
    return _keep(r, x, dims), aux


def _keep(r, x, dims):
    return np.asarray(r).reshape(tuple(1 if d in dims else s for d, s in enumerate(x.shape)))


# --- the test ------------------------------------------------------------------------------------

def _data(dt, rng, n, name):
    if dt == 0:
        return rng.integers(0, 2, n).astype(np.bool_)
    if dt <= 5:
        return rng.integers(0 if dt == 1 else -3, 4, n).astype(NP[dt])   # ties: the first occurrence wins
    v = rng.standard_normal(n) * 3
    if name == "prod":
        v = 1 + v / 30
    v[rng.random(n) < 0.01] = np.nan
    return v.astype(NP[dt])


def _case(dt, rng, shape, how, name):
    """(the contiguous buffer the device gets, the view of it under test)"""
    if how == "transposed":
        buf = _data(dt, rng, int(np.prod(shape)), name).reshape(shape[::-1])
        return buf, buf.transpose(*range(len(shape) - 1, -1, -1))
    if how == "sliced":
        buf = _data(dt, rng, 2 * int(np.prod(shape)), name).reshape(shape[0], 2 * shape[1])
        return buf, buf[:, ::2]
    buf = _data(dt, rng, int(np.prod(shape)), name).reshape(shape)
    return buf, buf


def _same(what, got, want, floating, dt):
    if not floating:
        want = want.astype(got.dtype)
        assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), \
            f"{what}: got {got.ravel()[:6]}, want {want.ravel()[:6]}"
        return
    tol = {6: 2e-3, 8: 1e-5, 9: 1e-12}.get(dt, 1e-12)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(got.dtype).astype(np.float64), rtol=tol,
                               atol=tol, equal_nan=True, err_msg=what)


@pytest.mark.parametrize("code", range(R.R_NUM_OPS), ids=[r[0] for r in R.REDUCTIONS])
def test_reduction_matches_numpy(gpu, code):
    k, upload, download = gpu
    row = R.REDUCTIONS[code]
    rng = np.random.default_rng(code)
    checked = 0
    for dt in DTYPES:
        if dt not in row[_reduce.DTYPES]:
            continue
        for shape, how, dims in CASES:
            buf, x = _case(dt, rng, shape, how, row[0])
            empty = 0 in shape
            strides = tuple(s // x.itemsize for s in x.strides)
            kshape = tuple(1 if d in dims else s for d, s in enumerate(shape))
            for arg in ARGS.get(row[0], (0.0,)):
                run = _reduce.resolve(code, arg)
                r2 = R.REDUCTIONS[run]
                if r2[_reduce.NO_IDENTITY] and empty:
                    continue
                want, want_aux = reference(r2[0], x, dims, arg)
                out_np = NP[r2[_reduce.OUT][dt]]
                aux_np = np.int64 if r2[_reduce.AUX] == 5 else NP[dt]
                floating = out_np in (np.float16, np.float32, np.float64) and r2[0] not in SELECTIONS
                for wide in (False, True):
                    ptr = upload(buf)
                    out = upload(np.zeros(kshape, out_np))
                    aux_ptr = 0
                    if r2[_reduce.AUX_OUT]:
                        aux_ptr = upload(np.zeros(kshape, aux_np))
                    elif r2[_reduce.AUX_IN] and not empty:
                        aux_ptr = upload(np.max(_rows(x, dims), -1).reshape(kshape))
                    p = _reduce.plan(shape, strides, dims)
                    p.wide = wide
                    _reduce.launch(k, run, dt, p, out, aux_ptr, ptr, arg)
                    what = f"{row[0]}(arg={arg}) {np.dtype(NP[dt]).name}{list(shape)} {how} dims={dims} {p.suffix}"
                    _same(what, download(out, kshape, out_np), want, floating, dt)
                    if r2[_reduce.AUX_OUT]:
                        _same(what + " aux", download(aux_ptr, kshape, aux_np), want_aux, aux_np is not np.int64, dt)
                    checked += 1
    assert checked


# --- the entry the device registry will call, on pytorchlite's CUDA tensors ----------------------

RUN_CASES = [  # (reduction, input dtype, shape, dims, keepdim, argument, output dtype or None: declared)
    ("sum", "float32", (64, 300), (1,), False, 0.0, None),
    ("sum", "int32", (300, 64), (0,), True, 0.0, None),
    ("sum", "float32", (64, 300), (1,), False, 0.0, "float64"),     # another output dtype: a copy
    ("mean", "float16", (5, 6, 7), (0, 2), False, 0.0, None),
    ("argmax", "float32", (64, 300), (1,), False, 0.0, None),
    ("var", "float64", (300, 64), (0,), False, 1.0, None),
    ("norm", "float32", (64, 300), (0, 1), False, 2.0, None),
    ("all", "bool", (64, 30), (1,), False, 0.0, None),
]


def test_run_on_cuda_tensors():
    """_reduce.run on CUDA tensors (allocation, the output view, max's indices, a cast of the
    result) against the CPU kernels on the same values."""
    import pytorchlite
    from pytorchlite import _dtype as D
    from pytorchlite._kernels import reduce as K
    from pytorchlite.cuda import _emulator
    if os.environ.get(_emulator.ENV, "") not in ("", "0"):
        pytest.skip("the CPU emulator runs a block's threads one after another: reductions need them together")
    if not pytorchlite.cuda.is_available():
        pytest.skip("no CUDA device for pytorchlite")
    rng = np.random.default_rng(0)
    for name, dt, shape, dims, keepdim, arg, odt in RUN_CASES:
        code = getattr(R, f"R_{name.upper()}")
        x = pytorchlite.tensor(rng.standard_normal(shape) * 3).to(getattr(D, dt))
        natural = D.BY_CODE[R.REDUCTIONS[_reduce.resolve(code, arg)][_reduce.OUT][x._dtype.code]]
        want = K._launch(code, name, x, dims, keepdim, natural, arg)
        out_dtype = getattr(D, odt) if odt else natural
        got = _reduce.run(code, x.to("cuda"), dims, keepdim, out_dtype, arg)
        assert got.device.type == "cuda" and got.dtype is out_dtype and tuple(got.shape) == tuple(want.shape), name
        g, w = got.cpu().to(D.float64).numpy(), want.to(D.float64).numpy()
        np.testing.assert_allclose(g, w, rtol=2e-3 if dt == "float16" else 1e-5, err_msg=f"{name} {dt} {dims}")
    x = pytorchlite.tensor(rng.integers(-3, 4, (40, 70)).astype(np.float32))
    values, indices = _reduce.run(R.R_MAX, x.to("cuda"), (1,), False, D.float32, aux_dtype=D.int64)
    wv, wi = K._launch(R.R_MAX, "max", x, (1,), False, D.float32, aux_dtype=D.int64)
    assert np.array_equal(values.cpu().numpy(), wv.numpy()) and np.array_equal(indices.cpu().numpy(), wi.numpy())
