"""CUDA against the CPU on a real device: skipped where CUDA is unavailable.

`python -m pytorchlite.cuda.check` runs this file on a GPU machine and reports it per
family (one test class per operator family). Under the CPU emulator
(`PTL_CUDA_EMULATOR=1`, pytorchlite/cuda/_emulator.py) it runs without a GPU, which
checks the host side and these tests themselves, not the GPU.

How a comparison goes (`check_cuda`): the same function runs on CPU tensors and on CUDA
copies of them with the same strides and storage offsets (a transposed CPU input becomes a
transposed CUDA input); both must raise the same exception type, or give results of the
same shape and dtype, on CUDA, with integers and bool equal bit for bit and floats within
PyTorch's tolerances (tests/parity.py TOLERANCES). Inputs written in place are compared
too.

Adding an operator family: a new `class Test<Family>` whose tests call `needs_cuda(op)`
for each operator (an operator with no CUDA kernel in the dispatch table is skipped with
the reason "no CUDA kernel", which the check lists as coverage, not as a failure) and
`check_cuda(...)` for each case.
"""

import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite._tensor import make
from pytorchlite.cuda import _coverage, _emulator, _launch
from pytorchlite.generated import functions as G
from codegen.model import load_ops
from parity import (ALL_DTYPES, TOLERANCES, _compare_values, dtype_name, edge_cases,
                    from_values, random_values)
from pointwise_cases import call, edge_options, scalar_kwargs

pytestmark = pytest.mark.skipif(not ptl.cuda.is_available(),
                                reason=f"no GPU: {ptl.cuda._unavailable_reason()}")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPS = load_ops(os.path.join(ROOT, "ops.yaml"))
POINTWISE = [op for op in OPS if op.kind == "pointwise"]
EMULATED = _emulator.enabled()
CUDA = "cuda"

# Operators whose CUDA results may differ from the CPU's beyond PyTorch's default
# tolerances (name -> {dtype: (rtol, atol)}), each with the reason. Empty until a GPU run
# shows a difference that is a property of the device's math library, not a bug.
CUDA_TOLERANCES = {}


# ---- moving test inputs to the device ----------------------------------------------------------

def to_cuda(v):
    """The CUDA twin of a CPU test value: tensors keep their strides and storage offset
    (their whole storage is copied, then viewed the same way); containers recursively."""
    if isinstance(v, ptl.Tensor):
        if v.device.type == CUDA:
            return v
        if v.is_contiguous() and v.storage_offset() == 0:
            return v.to(CUDA)
        n = v._storage.nbytes // v.dtype.itemsize
        flat = make(v._storage, (n,), (1,), 0, v.dtype).to(CUDA)
        out = flat.as_strided(tuple(v.shape), tuple(v.stride()), v.storage_offset())
        assert out.stride() == v.stride() and out.storage_offset() == v.storage_offset()
        return out
    if isinstance(v, (list, tuple)):
        return type(v)(to_cuda(x) for x in v)
    if isinstance(v, dict):
        return {k: to_cuda(x) for k, x in v.items()}
    return v


def assert_same(got, want, where, rtol=None, atol=None):
    """got (from CUDA) equals want (from the CPU): type, shape, dtype, device, values."""
    if isinstance(want, ptl.Tensor):
        assert isinstance(got, ptl.Tensor), f"{where}: expected a Tensor, got {type(got).__name__}"
        assert got.device.type == CUDA, f"{where}: result is on {got.device}, expected cuda"
        assert tuple(got.shape) == tuple(want.shape), f"{where}: shape {list(got.shape)} != {list(want.shape)}"
        assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} != {want.dtype}"
        g, w = _host_array(got.cpu()), _host_array(want)
        _compare_values(g, w, dtype_name(want.dtype), where, rtol, atol, True)
    elif isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), f"{where}: {got!r} vs {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{where}[{i}]", rtol, atol)
    elif isinstance(want, float) and isinstance(got, float):
        assert got == want or (math.isnan(got) and math.isnan(want)) or \
            math.isclose(got, want, rel_tol=rtol or 1e-6, abs_tol=atol or 0.0), f"{where}: {got!r} != {want!r}"
    else:
        assert got == want and type(got) is type(want), f"{where}: {got!r} != {want!r}"


def _host_array(t):
    if t.dtype == ptl.bfloat16:
        t = t.float()
    return np.array(t.numpy(), copy=True)


def _describe(args, kwargs):
    def one(v):
        if isinstance(v, ptl.Tensor):
            layout = "" if v.is_contiguous() else f", strides {tuple(v.stride())}"
            return f"Tensor({list(v.shape)}, {dtype_name(v.dtype)}{layout})"
        return repr(v)
    return "(" + ", ".join([one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()]) + ")"


def check_cuda(fn, *args, label="", rtol=None, atol=None, **kwargs):
    """fn on the CPU inputs and on their CUDA twins must agree (see the module docstring).
    Returns the CUDA result (None when both raised)."""
    where = f"{getattr(fn, '__name__', 'fn')}{_describe(args, kwargs)}" + (f" [{label}]" if label else "")
    dargs, dkwargs = to_cuda(args), to_cuda(kwargs)
    try:
        want, want_exc = fn(*args, **kwargs), None
    except Exception as e:  # the CPU's verdict: CUDA must agree
        want, want_exc = None, e
    try:
        got, got_exc = fn(*dargs, **dkwargs), None
    except Exception as e:
        got, got_exc = None, e
    if want_exc is not None:
        if got_exc is None:
            raise AssertionError(f"{where}: the CPU raised {type(want_exc).__name__}({want_exc}), CUDA returned")
        if not isinstance(got_exc, type(want_exc)):
            raise AssertionError(f"{where}: the CPU raised {type(want_exc).__name__}({want_exc}), CUDA raised "
                                 f"{type(got_exc).__name__}({got_exc})") from got_exc
        return None
    if got_exc is not None:
        raise AssertionError(f"{where}: CUDA raised {type(got_exc).__name__}: {got_exc}") from got_exc
    assert_same(got, want, where, rtol, atol)
    # inputs written in place (self of an in-place op, out=) must match as well
    for k, (a, d) in enumerate(zip(list(args) + list(kwargs.values()), list(dargs) + list(dkwargs.values()))):
        if isinstance(a, ptl.Tensor):
            assert_same(d, a, f"{where}: argument {k} after the call", rtol, atol)
    return got


def needs_cuda(name):
    """Skip (reason 'no CUDA kernel: <op>') when operator `name` has no CUDA path in the
    dispatch table."""
    status = _coverage.cuda_status(name)
    if status == _coverage.MISSING:
        pytest.skip(f"{_coverage.MISSING}: {name}")
    return status


def _tolerance(name, dtype):
    return dict(zip(("rtol", "atol"), CUDA_TOLERANCES.get(name, {}).get(dtype, (None, None))))


def _cuda_tensor(values, dtype):
    return from_values(values, dtype).to(CUDA)


# ---- the device ------------------------------------------------------------------------------

class TestDevice:
    def test_properties(self):
        assert ptl.cuda.is_available() and ptl.cuda.device_count() >= 1
        assert ptl.cuda.current_device() == 0
        p = ptl.cuda.get_device_properties(0)
        assert p.name and p.total_memory > 0 and p.multi_processor_count > 0
        assert ptl.cuda.get_device_capability() >= (5, 0)
        free, total = ptl.cuda.mem_get_info()
        assert 0 < free <= total
        assert "cuda" in repr(ptl.device("cuda:0"))

    def test_kernels_load_for_this_device(self):
        k = _launch.kernels_for(0)
        for source, kernel in (("fill_copy", "ptl_cu_fill_f32_c32"), ("pointwise", "ptl_cu_add_f32_c32")):
            assert k.function(source, kernel) is not None


# ---- factories ---------------------------------------------------------------------------------

FACTORY_CASES = {
    # name -> [(args, kwargs)]; each runs with device='cuda' and is compared with the CPU
    "zeros": [((2, 3), {}), ((0,), {"dtype": ptl.int64}), (((),), {"dtype": ptl.bool})],
    "ones": [((4,), {"dtype": ptl.float16}), ((2, 2), {"dtype": ptl.int8})],
    "full": [(((3,),), {"fill_value": 2.5}), (((2, 2),), {"fill_value": 7, "dtype": ptl.int32}),
             (((2,),), {"fill_value": True})],
    "arange": [((10,), {}), ((1.0, 2.0, 0.25), {}), ((0, 10, 3), {"dtype": ptl.int16})],
    "linspace": [((0.0, 1.0, 5), {}), ((-2, 2, 4), {"dtype": ptl.float64})],
    "eye": [((3,), {}), ((2, 4), {"dtype": ptl.int64})],
}
LIKE_CASES = {
    "zeros_like": [{}, {"dtype": ptl.int32}], "ones_like": [{}, {"dtype": ptl.bfloat16}],
    "full_like": [{"fill_value": -3}, {"fill_value": 0.5, "dtype": ptl.float64}],
}


class TestFactories:
    @pytest.mark.parametrize("name", sorted(FACTORY_CASES))
    def test_factory(self, name):
        needs_cuda(name)
        fn = getattr(ptl, name)
        for args, kwargs in FACTORY_CASES[name]:
            want = fn(*args, **kwargs)
            got = fn(*args, **kwargs, device=CUDA)
            assert_same(got, want, f"{name}{args} {kwargs}")

    def test_empty(self):
        needs_cuda("empty")
        t = ptl.empty(2, 3, device=CUDA)
        assert t.device.type == CUDA and tuple(t.shape) == (2, 3) and t.dtype == ptl.float32

    @pytest.mark.parametrize("name", sorted(LIKE_CASES))
    def test_like(self, name):
        needs_cuda(name)
        fn = getattr(ptl, name)
        for kwargs in LIKE_CASES[name]:
            for dtype in ("float32", "int64", "bool"):
                src = from_values(random_values((2, 3), dtype, np.random.default_rng(0)), dtype)
                check_cuda(lambda x, **kw: fn(x, **kw), src, label=f"{name} {dtype}", **kwargs)
                check_cuda(lambda x, **kw: fn(x, **kw), src.t(), label=f"{name} {dtype} transposed", **kwargs)

    def test_empty_like_keeps_layout(self):
        needs_cuda("empty_like")
        x = ptl.ones(3, 4).to(CUDA).t()
        e = ptl.empty_like(x)
        assert e.device.type == CUDA and e.stride() == x.stride() and e.dtype == x.dtype

    def test_tensor_constructor_on_cuda(self):
        for data, dtype in (([1.5, -2.0], None), ([[1, 2], [3, 4]], ptl.int16), ([True, False], None), (3.25, None)):
            got = ptl.tensor(data, dtype=dtype, device=CUDA)
            assert_same(got, ptl.tensor(data, dtype=dtype), f"tensor({data!r}, dtype={dtype})")


# ---- copies ------------------------------------------------------------------------------------

def _sample(dtype, shape=(3, 4), seed=0):
    return from_values(random_values(shape, dtype, np.random.default_rng(seed)), dtype)


LAYOUTS = {
    "contiguous": lambda t: t,
    "transposed": lambda t: t.t(),
    "step-sliced": lambda t: t[::2],
    "offset": lambda t: t[1:, 1:],
    "expanded": lambda t: t[:1].expand(5, t.shape[1]),
}


class TestCopies:
    @pytest.mark.parametrize("src_dtype", ALL_DTYPES)
    def test_host_to_device_and_back_every_dtype_pair(self, src_dtype):
        src = _sample(src_dtype)
        for dst_dtype in ALL_DTYPES:
            dt = getattr(ptl, dst_dtype)
            d = src.to(CUDA, dt)
            assert d.device.type == CUDA and d.dtype == dt
            assert_same(d, src.to(dt), f"{src_dtype} -> cuda {dst_dtype}")
            back = d.to("cpu", getattr(ptl, src_dtype))
            assert back.device.type == "cpu"
            want = src.to(dt).to(getattr(ptl, src_dtype))
            _compare_values(_host_array(back), _host_array(want), src_dtype, f"cuda {dst_dtype} -> {src_dtype}",
                            None, None, True)

    @pytest.mark.parametrize("layout", sorted(LAYOUTS))
    def test_non_contiguous_sources_both_ways(self, layout):
        for dtype in ("float32", "int64", "bool", "bfloat16", "float16", "uint8"):
            host = LAYOUTS[layout](_sample(dtype, (4, 6)))
            d = host.to(CUDA)
            assert_same(d, host.contiguous(), f"{layout} {dtype} host -> device")
            dview = LAYOUTS[layout](_sample(dtype, (4, 6)).to(CUDA))
            assert_same(dview.to(CUDA, ptl.float64), host.to(ptl.float64), f"{layout} {dtype} device -> device f64")
            back = dview.cpu()
            _compare_values(_host_array(back), _host_array(host), dtype, f"{layout} {dtype} device -> host",
                            None, None, True)

    def test_device_to_device_dtype_conversion(self):
        for sd in ALL_DTYPES:
            x = _sample(sd).to(CUDA)
            for dd in ALL_DTYPES:
                check_cuda(lambda t, d=dd: t.to(getattr(ptl, d)), _sample(sd), label=f"{sd} -> {dd}")
            assert x.clone().data_ptr() != x.data_ptr()

    def test_copy_into_views_with_broadcast(self):
        for dtype in ("float32", "int32", "float16"):
            def into_view(dst, src):
                dst[:, 1:3].copy_(src)
                return dst
            check_cuda(into_view, _sample(dtype, (4, 5)), _sample(dtype, (3,), seed=1)[:2], label=dtype)
            check_cuda(lambda dst, src: dst.t().copy_(src), _sample(dtype, (3, 4)), _sample("int64", (3,), 2),
                       label=f"{dtype} transposed from int64 broadcast")
            check_cuda(lambda dst: dst.copy_(ptl.tensor(2.5)), _sample(dtype, (2, 3)), label=f"{dtype} from 0-d")

    def test_cross_device_copy_directions(self):
        host = _sample("float32", (3, 4))
        dev = ptl.zeros(3, 4).to(CUDA)
        dev.copy_(host)                          # host -> device into an existing tensor
        assert_same(dev, host, "copy_ host -> device")
        host2 = ptl.zeros(3, 4, dtype=ptl.float64)
        host2.copy_(dev)                         # device -> host with conversion
        _compare_values(_host_array(host2), _host_array(host.double()), "float64", "copy_ device -> host",
                        None, None, True)
        host3 = ptl.zeros(4, 3)
        host3.t().copy_(dev)                     # into a non-contiguous host view
        _compare_values(_host_array(host3.t()), _host_array(host), "float32", "device -> host view",
                        None, None, True)

    def test_to_the_current_device_returns_self(self):
        # PyTorch: 'cuda' means the current device, so a tensor already there is returned
        d = _sample("float32").cuda()
        assert d.cuda() is d and d.to(CUDA) is d

    def test_empty_zero_d_and_large(self):
        for shape in ((0,), (2, 0), ()):
            check_cuda(lambda t: t.clone(), _sample("float32", shape), label=f"clone {shape}")
        big = ptl.arange(3 << 20, dtype=ptl.int32)
        d = big.to(CUDA)
        assert_same(d[::1024], big[::1024], "12 MiB round trip (sampled)")
        assert bool((d.cpu() == big).all())

    def test_non_blocking_and_module_style_calls(self):
        x = _sample("float32")
        assert_same(x.cuda(non_blocking=True), x, "cuda(non_blocking=True)")
        assert_same(x.to(device="cuda:0", non_blocking=True), x, "to(non_blocking=True)")
        d = x.cuda()
        assert d.is_cuda and d.to("cuda:0") is d and d.cuda(0) is d
        assert_same(d.contiguous(), x, "contiguous()")
        assert_same(d.t().contiguous(), x.t().contiguous(), "t().contiguous()")


# ---- pointwise operators --------------------------------------------------------------------------

def _variant_cases(op, dtype, rng):
    """(tensors, label) for the in-place / out= checks: self (2, 3) of `dtype`, the other
    operands (3,) of several dtypes."""
    n = len(op.tensor_args)
    opts = edge_options(op, dtype)
    for other in (dtype, "float64", "int32"):
        ts = [from_values(random_values((2, 3), dtype, rng, low=opts.get("low"), high=opts.get("high")), dtype)]
        for _ in range(1, n):
            ts.append(from_values(random_values((3,), other, rng, nonzero=True, low=opts.get("low"),
                                                high=opts.get("high")), other))
        yield ts, f"{dtype} with {other}"


class TestPointwise:
    @pytest.mark.parametrize("op", POINTWISE, ids=[op.name for op in POINTWISE])
    def test_every_dtype_and_edge_input(self, op):
        needs_cuda(op.name)
        fn = getattr(G, op.name)
        n = len(op.tensor_args)
        for scalars in scalar_kwargs(op):
            for dtype in ALL_DTYPES:
                tol = _tolerance(op.name, dtype)
                for label, tensors in edge_cases(n, dtype, **edge_options(op, dtype)):
                    check_cuda(lambda *t: call(fn, op, t, scalars), *tensors,
                               label=f"{op.name} {dtype} {label} {scalars}", **tol)

    @pytest.mark.parametrize("op", POINTWISE, ids=[op.name for op in POINTWISE])
    def test_inplace_and_out(self, op):
        needs_cuda(op.name)
        rng = np.random.default_rng(2)
        scalars = scalar_kwargs(op)[0]
        for dtype in ("float32", "int64", "bool", "float16"):
            tol = _tolerance(op.name, dtype) if dtype in TOLERANCES else {}
            for tensors, label in _variant_cases(op, dtype, rng):
                if op.has_inplace:
                    check_cuda(lambda *t: call(getattr(t[0], op.name + "_"), op, t[1:], scalars), *tensors,
                               label=f"in-place {label}", **tol)
                if op.has_out and op.has_function:
                    for out_dtype in (dtype, "float64", "bool"):
                        out = ptl.empty((2, 3), dtype=getattr(ptl, out_dtype))
                        check_cuda(lambda *t, out: call(getattr(G, op.name), op, t, scalars, out=out), *tensors,
                                   out=out, label=f"out={out_dtype} {label}", **tol)

    def test_python_operators(self):
        for dtype in ("float32", "int32", "float16", "bool", "int64", "bfloat16"):
            a, b = _sample(dtype, (3, 4), 1), _sample(dtype, (4,), 2)
            for name, f in {
                "+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y, "/": lambda x, y: x / y,
                "scalar+": lambda x, y: x + 2, "rsub": lambda x, y: 3 - x, "scalar*": lambda x, y: x * 0.5,
                "neg": lambda x, y: -x, "<": lambda x, y: x < y, "==": lambda x, y: x == y,
                "&": lambda x, y: x & y, "|": lambda x, y: x | y, "**": lambda x, y: x ** 2,
                "abs": lambda x, y: abs(x), "~": lambda x, y: ~x,
            }.items():
                check_cuda(f, a, b, label=f"{name} {dtype}")

    def test_inplace_operators_bump_version_and_keep_identity(self):
        for dtype in ("float32", "int64"):
            x = _sample(dtype).to(CUDA)
            ptr, v = x.data_ptr(), x._version
            x += 1
            x *= 2
            assert x.data_ptr() == ptr and x._version == v + 2
            h = _sample(dtype)
            h += 1
            h *= 2
            assert_same(x, h, f"+= and *= {dtype}")

    def test_host_zero_d_tensor_joins_as_a_scalar(self):
        x = _sample("float32")
        assert_same(x.to(CUDA) * ptl.tensor(3.0), x * 3.0, "cuda * cpu 0-d")
        assert_same(ptl.tensor(2, dtype=ptl.int64) + x.to(CUDA), 2 + x, "cpu 0-d + cuda")
        with pytest.raises(RuntimeError, match="same device"):
            x.to(CUDA) + ptl.ones(3, 4)
        with pytest.raises(RuntimeError):
            ptl.add(x.to(CUDA), x.to(CUDA), out=ptl.empty(3, 4))

    def test_large_and_strided_problems(self):
        # enough elements for a full grid; a transposed operand takes the strided kernels
        a = _sample("float32", (1024, 1536), 3)
        b = _sample("float32", (1536, 1024), 4).t()
        check_cuda(lambda x, y: x * y + x, a, b, label="1.5M elements, one operand transposed")
        check_cuda(lambda x: x.sin(), _sample("float64", (4097,)), label="odd size float64")


# ---- reductions (ops.yaml `- reduction:` declarations, generated/reduce.cu) ---------------------------

# (operator, call) over a 3-d input: full, one dim, several dims, keepdim, negative dims
REDUCTION_CASES = [
    ("sum", lambda x: x.sum()), ("sum", lambda x: x.sum(1)), ("sum", lambda x: x.sum((0, 2), keepdim=True)),
    ("sum", lambda x: x.sum(-1, dtype=ptl.float64)),
    ("prod", lambda x: x.prod(1)), ("mean", lambda x: x.mean((0, 1))), ("nansum", lambda x: x.nansum(0)),
    ("nanmean", lambda x: x.nanmean(2)),
    ("amax", lambda x: x.amax(1)), ("amin", lambda x: x.amin((0, 2), keepdim=True)),
    ("max", lambda x: x.max()), ("max", lambda x: x.max(1)), ("min", lambda x: x.min(-1, keepdim=True)),
    ("argmax", lambda x: x.argmax()), ("argmax", lambda x: x.argmax(2)), ("argmin", lambda x: x.argmin(0)),
    ("aminmax", lambda x: ptl.aminmax(x, dim=1)),
    ("var", lambda x: x.var(1)), ("std", lambda x: x.std((0, 2), correction=0)),
    ("var_mean", lambda x: ptl.var_mean(x, 2)), ("std_mean", lambda x: ptl.std_mean(x, 0, keepdim=True)),
    ("all", lambda x: x.all(1)), ("any", lambda x: x.any()), ("count_nonzero", lambda x: ptl.count_nonzero(x, 0)),
    ("logsumexp", lambda x: x.logsumexp(1)), ("norm", lambda x: x.norm()), ("norm", lambda x: x.norm(1, dim=2)),
    ("norm", lambda x: x.norm(float("inf"), dim=0)),
]


def _reduction_layouts(dtype):
    """The same values contiguous, transposed, sliced with steps, and as a 0-size tensor."""
    x = _sample(dtype, (4, 6, 5), 11)
    return [("contiguous", x), ("transposed", x.transpose(0, 2)), ("stepped", x[:, ::2, 1:]),
            ("empty", x[:, :0])]


class TestReductions:
    @pytest.mark.parametrize("case", range(len(REDUCTION_CASES)))
    @pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "bool"])
    def test_against_the_cpu(self, case, dtype):
        name, fn = REDUCTION_CASES[case]
        needs_cuda(name)
        for label, x in _reduction_layouts(dtype):
            check_cuda(fn, x, label=f"{name} #{case}, {label}", **_tolerance(name, dtype))

    def test_large_rows_and_columns(self):
        # many reduced elements per output (row kernels on a GPU) and many outputs
        needs_cuda("sum")
        x = _sample("float32", (300, 700), 5)
        check_cuda(lambda t: t.sum(1), x, label="rows", rtol=1e-4, atol=1e-3)
        check_cuda(lambda t: t.sum(0), x, label="columns", rtol=1e-4, atol=1e-3)
        check_cuda(lambda t: t.argmax(1), x, label="argmax rows")
        check_cuda(lambda t: t.max(0), x, label="max columns")

    def test_errors_match_the_cpu(self):
        e = ptl.empty(0, 3)
        check_cuda(lambda t: t.amax(0), e, label="no identity")
        check_cuda(lambda t: t.max(), e, label="full max of empty")
        check_cuda(lambda t: t.mean(), ptl.ones(3, dtype=ptl.int64), label="mean of integers")

    def test_backward_through_reductions(self):
        x0 = _sample("float64", (3, 4), 2)
        for name, f in (("sum", lambda t: t.sum(1)), ("mean", lambda t: t.mean()),
                        ("amax", lambda t: t.amax(0)), ("logsumexp", lambda t: t.logsumexp(1))):
            needs_cuda(name)

            def run(device):
                x = x0.to(device).detach().requires_grad_(True)
                f(x).sum().backward()
                return x.grad
            assert_same(run(CUDA), run("cpu"), f"gradient of {name}")


# ---- GEMM through cuBLAS (pytorchlite/cuda/_gemm.py) ------------------------------------------------

GEMM_DTYPES = {"float32": (1e-4, 1e-4), "float64": (1e-10, 1e-10), "float16": (1e-2, 1e-2),
               "bfloat16": (3e-2, 3e-2)}


class TestGemm:
    @pytest.mark.parametrize("dtype", list(GEMM_DTYPES))
    def test_mm_every_layout(self, dtype):
        needs_cuda("mm")
        rtol, atol = GEMM_DTYPES[dtype]
        a, b = _sample(dtype, (6, 9), 1), _sample(dtype, (9, 5), 2)
        at, bt = _sample(dtype, (9, 6), 3).t(), _sample(dtype, (5, 9), 4).t()
        for label, x, y in (("row-major", a, b), ("a transposed", at, b), ("b transposed", a, bt),
                            ("both transposed", at, bt), ("stepped", a[:, ::3], b[::3]), ("offset", a[1:], b),
                            ("empty k", a[:, :0], b[:0]), ("empty m", a[:0], b)):
            check_cuda(ptl.mm, x, y, label=label, rtol=rtol, atol=atol)

    @pytest.mark.parametrize("dtype", ["float32", "float16"])
    def test_bmm_matmul_addmm_baddbmm(self, dtype):
        for name in ("bmm", "matmul", "addmm", "baddbmm"):
            needs_cuda(name)
        rtol, atol = GEMM_DTYPES[dtype]
        tol = dict(rtol=rtol, atol=atol)
        s = lambda shape, seed: _sample(dtype, shape, seed)       # noqa: E731
        check_cuda(ptl.bmm, s((3, 4, 5), 1), s((3, 5, 2), 2), **tol)
        check_cuda(ptl.bmm, s((3, 5, 4), 1).transpose(1, 2), s((3, 5, 2), 2), label="transposed batch", **tol)
        for x, y in (((2, 3, 4, 5), (3, 5, 6)), ((5,), (5,)), ((4, 5), (5,)), ((5,), (5, 4)), ((2, 4, 5), (5, 3)),
                     ((4, 5), (3, 5, 2))):
            check_cuda(ptl.matmul, s(x, 1), s(y, 2), label=f"{x} @ {y}", **tol)
        check_cuda(lambda c, a, b: ptl.addmm(c, a, b, beta=0.5, alpha=2), s((4, 3), 3), s((4, 5), 4), s((5, 3), 5),
                   **tol)
        check_cuda(lambda c, a, b: ptl.addmm(c, a, b), s((3,), 3), s((4, 5), 4), s((5, 3), 5), label="broadcast",
                   **tol)
        check_cuda(lambda c, a, b: ptl.baddbmm(c, a, b, alpha=0.5), s((4, 3), 3), s((2, 4, 5), 4), s((2, 5, 3), 5),
                   **tol)

    def test_errors_match_the_cpu_and_integers_are_refused(self):
        check_cuda(ptl.mm, ptl.ones(2, 3), ptl.ones(2, 3), label="shapes")
        check_cuda(ptl.mm, ptl.ones(2, 3), ptl.ones(3, 2, dtype=ptl.float64), label="dtypes")
        with pytest.raises(RuntimeError, match="not implemented for 'Int'"):
            ptl.mm(ptl.ones(2, 2, dtype=ptl.int32).to(CUDA), ptl.ones(2, 2, dtype=ptl.int32).to(CUDA))

    def test_linear_forward_and_backward(self):
        needs_cuda("addmm")
        lin = ptl.nn.Linear(7, 3)
        x0 = _sample("float32", (5, 7), 6)

        def run(device):
            m = ptl.nn.Linear(7, 3)
            m.load_state_dict(lin.state_dict())
            m = m.to(device)
            x = x0.to(device).requires_grad_(True)
            y = m(x)
            (y * y).sum().backward()
            return y.detach(), x.grad, m.weight.grad, m.bias.grad
        for g, c, what in zip(run(CUDA), run("cpu"), ("output", "input grad", "weight grad", "bias grad")):
            assert_same(g, c, f"linear {what}", rtol=1e-4, atol=1e-4)


# ---- nn kernels (kernels/cuda/nn.cu: softmax, nll_loss, max_pool2d, convolution) ------------------

def _forward_backward(fn, *inputs):
    """fn on the inputs (float tensors require grad), and the gradients of a weighted sum
    of its result (the weights make every output's gradient different)."""
    def run(device):
        args = [x.to(device).detach().requires_grad_(x.dtype.is_floating_point) if isinstance(x, ptl.Tensor)
                else x for x in inputs]
        y = fn(*args)
        w = ptl.arange(y.numel(), dtype=y.dtype).reshape(y.shape).sin().to(device)
        (y * w).sum().backward()
        return [y.detach()] + [a.grad for a in args if isinstance(a, ptl.Tensor) and a.requires_grad]
    return run(CUDA), run("cpu")


def check_forward_backward(label, fn, *inputs, rtol=1e-4, atol=1e-5):
    got, want = _forward_backward(fn, *inputs)
    names = ["output"] + [f"gradient {k}" for k in range(len(want) - 1)]
    for g, w, what in zip(got, want, names):
        assert_same(g, w, f"{label}: {what}", rtol, atol)


NNF = ptl.nn.functional


class TestNN:
    @pytest.mark.parametrize("dtype", ["float32", "float64"])
    def test_softmax_rows(self, dtype):
        for name in ("_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data"):
            needs_cuda(name)
        x = _sample(dtype, (4, 5, 3), 1)
        for dim in (0, 1, -1):
            check_forward_backward(f"softmax dim {dim}", lambda t: NNF.softmax(t, dim), x)
            check_forward_backward(f"log_softmax dim {dim}", lambda t: NNF.log_softmax(t, dim), x)
        check_forward_backward("softmax of a transposed input", lambda t: NNF.softmax(t.t(), 1), x[:, :, 0])
        check_forward_backward("empty rows", lambda t: NNF.softmax(t, 1), x[:0])

    def test_softmax_half_precision(self):
        x = _sample("float16", (3, 7), 2)
        check_cuda(lambda t: NNF.softmax(t, 1), x, rtol=1e-3, atol=1e-3)
        check_cuda(lambda t: NNF.log_softmax(t, 0), x, rtol=1e-3, atol=1e-3)

    def test_nll_loss_and_cross_entropy(self):
        for name in ("nll_loss_forward", "nll_loss_backward", "nll_loss2d_forward", "nll_loss2d_backward"):
            needs_cuda(name)
        x = _sample("float32", (6, 5), 3)
        t = ptl.tensor([1, 0, 4, 2, 2, 3])
        w = _sample("float32", (5,), 4).abs()
        for reduction in ("mean", "sum", "none"):
            check_forward_backward(f"nll {reduction}", lambda a, b: NNF.nll_loss(a, b, reduction=reduction), x, t)
            # (a weight that requires grad takes nn.functional's composite path: boolean masks)
            check_forward_backward(f"weighted nll {reduction}",
                                   lambda a, b: NNF.nll_loss(a, b, weight=w.to(a.device), reduction=reduction), x, t)
            check_forward_backward(f"nll ignore {reduction}",
                                   lambda a, b: NNF.nll_loss(a, b, ignore_index=2, reduction=reduction), x, t)
        check_forward_backward("cross_entropy", lambda a, b: NNF.cross_entropy(a, b), x, t)
        check_forward_backward("cross_entropy smoothing", lambda a, b: NNF.cross_entropy(a, b, label_smoothing=0.1),
                               x, t)
        t2 = ptl.tensor([[[0, 1], [2, 1]], [[1, 1], [0, 2]]])
        check_forward_backward("nll2d", lambda a, b: NNF.nll_loss(a, b), _sample("float64", (2, 3, 2, 2), 5), t2)
        check_cuda(lambda a, b: NNF.nll_loss(a, b), x, ptl.tensor([1, 0, 7, 2, 2, 3]), label="target out of range")
        check_cuda(lambda a, b: NNF.nll_loss(a, b), x, t[:3], label="size mismatch")

    def test_max_pool2d(self):
        for name in ("max_pool2d_with_indices", "max_pool2d_with_indices_backward"):
            needs_cuda(name)
        x = _sample("float32", (2, 3, 7, 6), 6)
        for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                   dict(kernel_size=2, stride=1, dilation=2, ceil_mode=True), dict(kernel_size=(3, 2), stride=(1, 2))):
            check_forward_backward(f"max_pool2d {kw}", lambda t: NNF.max_pool2d(t, **kw), x)
            check_cuda(lambda t: NNF.max_pool2d(t, return_indices=True, **kw)[1], x, label=f"indices {kw}")
        check_forward_backward("3-d input", lambda t: NNF.max_pool2d(t, 2), x[0])
        check_cuda(lambda t: NNF.max_pool2d(t, 2), _sample("float16", (1, 2, 4, 4), 7), label="float16")
        check_cuda(lambda t: NNF.max_pool2d(t, 9), x, label="output too small")

    def test_convolution(self):
        needs_cuda("convolution")
        needs_cuda("convolution_backward")
        x, w, b = _sample("float32", (2, 4, 7, 6), 8), _sample("float32", (6, 4, 3, 3), 9), _sample("float32", (6,), 10)
        tol = dict(rtol=1e-4, atol=1e-4)
        check_forward_backward("conv2d", lambda a, c, d: NNF.conv2d(a, c, d, padding=1), x, w, b, **tol)
        check_forward_backward("strided dilated", lambda a, c: NNF.conv2d(a, c, stride=2, dilation=2, padding=2),
                               x, w, **tol)
        check_forward_backward("groups", lambda a, c, d: NNF.conv2d(a, c, d, groups=2), x,
                               _sample("float32", (6, 2, 3, 2), 11), b, **tol)
        check_forward_backward("conv1d", lambda a, c, d: NNF.conv1d(a, c, d, padding=1),
                               _sample("float32", (2, 3, 9), 12), _sample("float32", (4, 3, 3), 13),
                               _sample("float32", (4,), 14), **tol)
        check_forward_backward("conv_transpose2d", lambda a, c, d: NNF.conv_transpose2d(a, c, d, stride=2, padding=1),
                               _sample("float32", (2, 3, 4, 4), 15), _sample("float32", (3, 5, 3, 3), 16),
                               _sample("float32", (5,), 17), **tol)
        check_forward_backward("float64", lambda a, c: NNF.conv2d(a, c), x.double(), w.double(), rtol=1e-10,
                               atol=1e-10)
        check_cuda(lambda a, c: NNF.conv2d(a, c), x, _sample("float32", (6, 3, 3, 3), 9), label="channel mismatch")

    def test_digits_cnn_steps_match_the_cpu(self):
        """Three Adam steps of examples/train_digits.py's CNN on CUDA and on the CPU from the
        same weights and batches: the losses and the final weights agree."""
        sys.path.insert(0, os.path.join(ROOT, "examples"))
        try:
            from train_digits import CNN
        finally:
            sys.path.pop(0)
        ptl.manual_seed(0)
        ref = CNN()
        xs = [_sample("float32", (16, 1, 8, 8), 20 + i) for i in range(3)]
        ys = [ptl.tensor(np.random.default_rng(30 + i).integers(0, 10, 16)) for i in range(3)]

        def train(device):
            m = CNN()
            m.load_state_dict(ref.state_dict())
            m = m.to(device)
            opt = ptl.optim.Adam(m.parameters(), lr=2e-3)
            losses = []
            for x, y in zip(xs, ys):
                loss = NNF.nll_loss(m(x.to(device)), y.to(device))
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
            return losses, {k: v.detach().cpu() for k, v in m.state_dict().items()}
        (lg, wg), (lc, wc) = train(CUDA), train("cpu")
        np.testing.assert_allclose(lg, lc, rtol=1e-4, atol=1e-5)
        for k in wc:
            np.testing.assert_allclose(wg[k].numpy(), wc[k].numpy(), rtol=1e-3, atol=1e-4, err_msg=k)


# ---- autograd through CUDA pointwise operators -----------------------------------------------------

class TestAutograd:
    def test_backward_of_pointwise_chain(self):
        for dtype in (ptl.float32, ptl.float64):
            x0 = _sample(dtype_name(dtype), (5,))

            def run(device):
                x = x0.to(device).detach().requires_grad_(True)
                y = (x * x + 3 * x).sin()
                y.backward(ptl.ones(5, dtype=dtype).to(device))
                return y.detach(), x.grad
            (y_c, g_c), (y_g, g_g) = run("cpu"), run(CUDA)
            assert_same(y_g, y_c, f"forward {dtype}")
            assert_same(g_g, g_c, f"gradient {dtype}")
            assert g_g.device.type == CUDA


# ---- the caching allocator against the driver ------------------------------------------------------

class TestAllocator:
    def test_rounding_reuse_and_empty_cache(self):
        ptl.cuda.synchronize()
        ptl.cuda.empty_cache()
        base = ptl.cuda.memory_allocated()
        x = ptl.ones(1).to(CUDA)
        assert ptl.cuda.memory_allocated() - base == 512
        assert ptl.cuda.memory_reserved() >= ptl.cuda.memory_allocated()
        ptr = x.data_ptr()
        del x
        assert ptl.cuda.memory_allocated() == base
        y = ptl.ones(1).to(CUDA)
        assert y.data_ptr() == ptr, "a freed block is reused on the same stream"
        del y
        before = ptl.cuda.memory_reserved()
        ptl.cuda.empty_cache()
        assert ptl.cuda.memory_reserved() <= before
        assert ptl.cuda.max_memory_allocated() >= 512
        stats = ptl.cuda.memory_stats()
        assert stats["allocated_bytes.all.current"] == ptl.cuda.memory_allocated()
        assert "Allocated memory" in ptl.cuda.memory_summary() or "allocated" in ptl.cuda.memory_summary().lower()

    def test_large_blocks_and_peak(self):
        ptl.cuda.reset_peak_memory_stats()
        base = ptl.cuda.memory_allocated()
        x = ptl.zeros(1 << 22).to(CUDA)          # 16 MiB: the large pool
        assert ptl.cuda.memory_allocated() - base == 16 << 20
        assert ptl.cuda.max_memory_allocated() >= base + (16 << 20)
        del x
        assert ptl.cuda.memory_allocated() == base

    def test_out_of_memory_says_how_much(self):
        total = ptl.cuda.get_device_properties(0).total_memory
        with pytest.raises(ptl.cuda.OutOfMemoryError) as e:
            ptl.cuda.caching_allocator_alloc(total * 4)
        msg = str(e.value)
        assert "out of memory" in msg.lower() and "Tried to allocate" in msg
        assert isinstance(e.value, RuntimeError)
        x = ptl.ones(3).to(CUDA)                 # still usable after the error
        assert_same(x + 1, ptl.ones(3) + 1, "after OOM")

    def test_raw_alloc_and_delete(self):
        base = ptl.cuda.memory_allocated()
        p = ptl.cuda.caching_allocator_alloc(1000)
        assert p != 0 and ptl.cuda.memory_allocated() - base == 1024
        ptl.cuda.caching_allocator_delete(p)
        assert ptl.cuda.memory_allocated() == base

    def test_record_stream_delays_reuse_until_the_stream_is_done(self):
        s = ptl.cuda.Stream()
        x = ptl.ones(1000).to(CUDA)
        ptr = x.data_ptr()
        with ptl.cuda.stream(s):
            y = x * 2                             # work on s reads x
        x.record_stream(s)
        del x
        s.synchronize()
        ptl.cuda.synchronize()
        z = ptl.ones(1000).to(CUDA)               # s is idle: the block is free again
        assert z.data_ptr() == ptr
        assert_same(y, ptl.ones(1000) * 2, "work on the side stream")


# ---- streams and events ------------------------------------------------------------------------------

class TestStreamsEvents:
    def test_event_timing_and_sync(self):
        a = ptl.ones(1 << 20).to(CUDA)
        start, end = ptl.cuda.Event(enable_timing=True), ptl.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(10):
            a = a * 1.0001
        end.record()
        end.synchronize()
        assert end.query() and start.elapsed_time(end) >= 0
        with pytest.raises(RuntimeError):
            ptl.cuda.Event().elapsed_time(ptl.cuda.Event())

    def test_side_stream_wait_and_results(self):
        s = ptl.cuda.Stream()
        assert s != ptl.cuda.current_stream() and ptl.cuda.current_stream() == ptl.cuda.default_stream()
        x = _sample("float32", (256, 256)).to(CUDA)
        s.wait_stream(ptl.cuda.current_stream())
        with ptl.cuda.stream(s):
            assert ptl.cuda.current_stream() == s
            y = (x * 3).exp()
        ptl.cuda.current_stream().wait_stream(s)
        z = y + 1
        assert_same(z, (_sample("float32", (256, 256)) * 3).exp() + 1, "work across two streams")
        s.synchronize()
        assert s.query()
        ev = s.record_event()
        ev.wait(ptl.cuda.current_stream())
        ev.synchronize()
        assert ev.query()

    def test_synchronize_and_priority_streams(self):
        hi = ptl.cuda.Stream(priority=-1)
        with ptl.cuda.stream(hi):
            y = ptl.ones(10).to(CUDA) + 1
        ptl.cuda.synchronize()
        assert_same(y, ptl.ones(10) + 1, "high-priority stream")


# ---- reading CUDA tensors from the host ---------------------------------------------------------------

class TestHostReads:
    @pytest.mark.parametrize("dtype", ALL_DTYPES)
    def test_item_tolist_and_printing(self, dtype):
        x = _sample(dtype, (2, 3))
        d = x.to(CUDA)
        assert d[1, 2].item() == x[1, 2].item() and type(d[0, 0].item()) is type(x[0, 0].item())
        assert d.tolist() == x.tolist()
        assert "device='cuda:0'" in repr(d)
        assert str(d).replace(", device='cuda:0'", "") == str(x)
        if dtype != "bfloat16":
            np.testing.assert_array_equal(d.cpu().numpy(), x.numpy())
        with pytest.raises(TypeError, match="cuda"):
            d.numpy()

    def test_scalars_and_summaries(self):
        d = ptl.tensor([2.5]).to(CUDA)
        assert float(d) == 2.5 and int(d) == 2 and bool(d) is True
        big = ptl.arange(5000, dtype=ptl.float32)
        assert str(big.to(CUDA)).replace(", device='cuda:0'", "") == str(big)


# ---- DLPack with PyTorch's CUDA tensors (PyTorch as an oracle) -------------------------------------------

def _torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA here (a CPU build, or the emulator)")
    return torch


class TestDLPack:
    def test_export_to_torch_shares_memory(self):
        torch = _torch_cuda()
        for dtype in ("float32", "int64", "bool", "bfloat16", "float16", "uint8"):
            x = _sample(dtype, (3, 4)).to(CUDA)
            t = torch.from_dlpack(x)
            assert t.is_cuda and t.data_ptr() == x.data_ptr() and str(t.dtype) == f"torch.{dtype}"
            assert t.float().cpu().tolist() == x.float().cpu().tolist()
        y = ptl.ones(4, 3).to(CUDA)
        ty = torch.from_dlpack(y.t())
        assert tuple(ty.stride()) == y.t().stride()
        ty.add_(5)
        torch.cuda.synchronize()
        assert y.t().cpu().tolist() == ty.cpu().tolist()   # ty views y transposed

    def test_import_from_torch_shares_memory(self):
        torch = _torch_cuda()
        t = torch.arange(12, device="cuda", dtype=torch.float32).reshape(3, 4)
        x = ptl.from_dlpack(t)
        assert x.device.type == CUDA and x.data_ptr() == t.data_ptr()
        assert x.cpu().tolist() == t.cpu().tolist()
        xt = ptl.from_dlpack(t.t())
        assert xt.stride() == tuple(t.t().stride())
        x.mul_(2)
        ptl.cuda.synchronize()
        assert t.cpu().tolist() == x.cpu().tolist()

    def test_pointwise_against_torch_cuda(self):
        """PyTorch's own CUDA kernels as the oracle, float32 and int64, random inputs."""
        torch = _torch_cuda()
        rng = np.random.default_rng(5)
        bad = []
        for op in POINTWISE:
            if op.name.startswith("_") or not hasattr(torch, op.name):
                continue
            fn, tfn = getattr(G, op.name), getattr(torch, op.name)
            scalars = scalar_kwargs(op)[0]
            for dtype in ("float32", "int64"):
                opts = edge_options(op, dtype)
                ts = [from_values(random_values((64, 33), dtype, rng, nonzero=True, low=opts.get("low"),
                                                high=opts.get("high")), dtype)
                      for _ in op.tensor_args]
                try:
                    want = call(tfn, op, [torch.from_dlpack(t.to(CUDA)) for t in ts], scalars)
                except Exception:
                    continue                      # PyTorch has no such CUDA kernel for this dtype
                try:
                    got = call(fn, op, [t.to(CUDA) for t in ts], scalars)
                    g = torch.from_dlpack(got).cpu()
                    assert g.dtype == want.dtype, f"dtype {g.dtype} != {want.dtype}"
                    tol = TOLERANCES.get(dtype_name(want.dtype), (0, 0))
                    torch.testing.assert_close(g, want.cpu(), rtol=tol[0], atol=tol[1], equal_nan=True)
                except Exception as e:
                    bad.append(f"{op.name} {dtype}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
        assert not bad, f"{len(bad)} differences from PyTorch CUDA:\n" + "\n".join(bad)


# ---- the debug mode ---------------------------------------------------------------------------------------

def _run_python(code, **env):
    e = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=e,
                          cwd=ROOT, timeout=300)


class TestDebugMode:
    def test_launch_blocking_runs_and_checks_every_launch(self):
        r = _run_python("""
            import pytorchlite as ptl
            from pytorchlite.cuda import _launch
            assert _launch.launch_blocking()
            x = ptl.arange(10, dtype=ptl.float32).to("cuda")
            print(((x * 2 + 1).cpu() == ptl.arange(10, dtype=ptl.float32) * 2 + 1).all().item())
            """, PTL_CUDA_LAUNCH_BLOCKING="1")
        assert r.returncode == 0, r.stderr[-3000:]
        assert r.stdout.strip().endswith("True")

    @pytest.mark.skipif(EMULATED, reason="the emulator runs kernels in this process: a wild pointer kills it")
    def test_a_faulting_kernel_is_named(self):
        # a kernel writing through a wild pointer: with the debug mode the error names the
        # operator and the kernel at the launch that caused it
        r = _run_python("""
            import pytorchlite as ptl
            from pytorchlite.cuda import _launch
            ptl.ones(1).to("cuda")
            k = _launch.kernels_for(0)
            try:
                k.run_elementwise("fill_", "fill_copy", "ptl_cu_fill_f32", (1 << 20,), [(4, [1])], [0x10],
                                  (lambda a: a.blob(_launch.pack_scalars([(1.0, 1)])[:16]),))
                print("NO ERROR")
            except RuntimeError as e:
                print("ERROR", e)
            """, PTL_CUDA_LAUNCH_BLOCKING="1")
        out = r.stdout + r.stderr
        assert "ERROR" in r.stdout and "NO ERROR" not in r.stdout, out[-3000:]
        assert "fill_" in r.stdout and "ptl_cu_fill_f32_c32" in r.stdout and "PTL_CUDA_LAUNCH_BLOCKING" in r.stdout


# ---- coverage: what has no CUDA kernel (listed by the check, never a failure) ----------------------------------

class TestCoverage:
    def test_every_pointwise_op_has_a_loadable_kernel_per_dtype(self):
        k = _launch.kernels_for(0)
        missing = []
        for op in POINTWISE:
            for code in sorted(op_dtypes(op)):
                name = f"ptl_cu_{op.name}_{_launch.SUFFIX[code]}_c32"
                try:
                    k.function("pointwise", name)
                except RuntimeError as e:
                    missing.append(f"{name}: {e}")
        assert not missing, "\n".join(missing[:20])


def op_dtypes(op):
    from pytorchlite.generated import dispatch
    return getattr(dispatch, f"OP_{op.ident}").dtypes      # (an overload: OP_<name>_<overload>)
