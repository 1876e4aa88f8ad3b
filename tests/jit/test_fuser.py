"""The JIT's pointwise fuser (pytorchlite/jit/_fuser.py): a group of ops.yaml pointwise
nodes as one generated kernel, checked against running the same nodes eagerly (and
PyTorch where installed): values, dtypes, shapes, broadcasting, strides, 0-d and empty
inputs, errors, the disk cache across processes and the CUDA source under NVRTC."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pytorchlite as P
from pytorchlite._ops import ops
from pytorchlite.generated import fuser_ops
from pytorchlite.jit import _fuser
from pytorchlite.jit._fuser import FusionSpec, can_fuse, compile_group

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
f32, f64, i32, i64, b8 = P.float32, P.float64, P.int32, P.int64, P.bool


@pytest.fixture(scope="module", autouse=True)
def jit_cache(tmp_path_factory):
    """A private disk cache: every kernel of this module is really compiled (once)."""
    d = str(tmp_path_factory.mktemp("ptl_jit_cache"))
    old = os.environ.get(_fuser.CACHE_ENV)
    os.environ[_fuser.CACHE_ENV] = d
    _fuser._KERNELS.clear()
    yield d
    _fuser._KERNELS.clear()
    if old is None:
        os.environ.pop(_fuser.CACHE_ENV, None)
    else:
        os.environ[_fuser.CACHE_ENV] = old


def eager(spec, tensors):
    """The group run node by node through the eager operators."""
    vals = []
    for op, args in spec.nodes:
        _promo, ins, scalars, *_ = fuser_ops.OPS[op]
        pos = []
        for kind, v in args[:len(ins)]:
            pos.append(tensors[v] if kind == "in" else vals[v] if kind == "node" else v)
        kw = {name: ref[1] for name, ref in zip(scalars, args[len(ins):])}
        vals.append(getattr(ops, op)(*pos, **kw))
    return tuple(vals[o] for o in spec.outputs)


def check_equal(spec, tensors, rtol=0.0, atol=1e-30):
    got = compile_group(spec)(*tensors)
    want = eager(spec, tensors)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, f"output {k}: dtype {g.dtype}, eager {w.dtype}"
        assert tuple(g.shape) == tuple(w.shape), f"output {k}: shape {tuple(g.shape)}, eager {tuple(w.shape)}"
        assert g.is_contiguous()
        if g.dtype == P.bfloat16:      # (NumPy has no bfloat16: exactly representable in float32)
            g, w = g.to(f32), w.to(f32)
        if rtol:
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=rtol, atol=atol, err_msg=f"output {k}")
        else:
            np.testing.assert_array_equal(g.numpy(), w.numpy(), err_msg=f"output {k}")
    return got


def IN(i):
    return ("in", i)


def N(j):
    return ("node", j)


def C(v):
    return ("const", v)


CHEAP = FusionSpec(
    inputs=(f32, f32),
    nodes=(("add", (IN(0), IN(1), C(1))), ("mul", (N(0), C(1.5))), ("sub", (N(1), IN(1), C(2))),
           ("add", (N(2), C(0.5), C(1))), ("mul", (N(3), IN(0))), ("neg", (N(4),)), ("abs", (N(5),)),
           ("maximum", (N(6), IN(1))), ("_div_true", (N(7), C(3.0))), ("mul", (N(8), N(8)))),
    outputs=(9, 4))

TRANSCENDENTAL = FusionSpec(
    inputs=(f32, f32),
    nodes=(("mul", (IN(0), IN(1))), ("exp", (N(0),)), ("tanh", (IN(1),)), ("sigmoid", (N(1),)),
           ("add", (N(3), N(2), C(1))), ("log", (N(3),)), ("sin", (N(4),)), ("cos", (IN(0),)),
           ("mul", (N(6), N(7))), ("sub", (N(8), N(5), C(1)))),
    outputs=(9,))


def _randn(*shape, seed=0):
    return P.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def test_can_fuse():
    assert can_fuse("add") and can_fuse("sigmoid") and can_fuse("where") and can_fuse("_clamp")
    assert not can_fuse("sum") and not can_fuse("matmul") and not can_fuse("clamp")   # clamp is a composite
    assert not can_fuse("no_such_op")


def test_cheap_chain_is_bitwise_eager():
    a, b = _randn(1000, seed=1), _randn(1000, seed=2)
    k = compile_group(CHEAP)
    assert compile_group(CHEAP) is k          # the memory cache
    check_equal(CHEAP, (a, b))
    # (the tiled loops: per-node restrict loops over TILE-element tiles)
    assert "restrict" in k.source and f"#define TILE {_fuser.TILE}" in k.source


def test_transcendental_chain_matches_eager():
    a, b = _randn(3000, seed=3), _randn(3000, seed=4)
    # (sin and cos are the vectorised ones of kernels/ptl_jit.h, within a few ulp of libm's;
    # the chain ends in a difference of O(1) values, hence the absolute tolerance)
    check_equal(TRANSCENDENTAL, (a, b), rtol=1e-6, atol=1e-7)


def test_vectorised_sin_cos_within_a_few_ulp():
    spec = FusionSpec((f32,), (("sin", (IN(0),)), ("cos", (IN(0),))), (0, 1))
    k = compile_group(spec)
    assert "ptl_vsin_f32" in k.source and "ptl_vcos_f32" in k.source
    xs = np.concatenate([np.linspace(-9000, 9000, 20001), np.linspace(-4, 4, 4001), [np.pi, -np.pi / 2, 1e5],
                         [1e30, -3e38, np.inf, -np.inf, np.nan, 0.0, -0.0]]).astype(np.float32)
    x = P.tensor(xs)
    got = k(x)
    for g, want, oracle in zip(got, eager(spec, (x,)), (np.sin, np.cos)):
        g, want = g.numpy(), want.numpy()
        exact = oracle(xs.astype(np.float64)[:-7]).astype(np.float32)
        ulps = np.abs(g[:-7] - exact) / np.spacing(np.abs(exact))
        assert ulps.max() <= 4, f"{oracle.__name__}: {ulps.max()} ulp at {xs[np.argmax(ulps)]}"
        # beyond the reduction's range, inf and nan: libm, exactly as eager
        np.testing.assert_array_equal(g[-7:], want[-7:])
        assert np.signbit(g[-1]) == np.signbit(want[-1])


def test_large_inputs_split_over_threads():
    # above PTL_GRAIN the runtime splits the work over OpenMP threads, in tiles
    a, b = _randn(70002, seed=5), _randn(70002, seed=6)
    check_equal(CHEAP, (a, b))
    check_equal(CHEAP, (a[::2], b[1::2]))         # strided, through the descriptor path


def test_matches_torch():
    torch = pytest.importorskip("torch")
    a, b = _randn(517, seed=7), _randn(517, seed=8)
    (got,) = compile_group(TRANSCENDENTAL)(a, b)
    ta, tb = torch.from_numpy(a.numpy()), torch.from_numpy(b.numpy())
    s = torch.sigmoid(torch.exp(ta * tb))
    want = torch.sin(s + torch.tanh(tb)) * torch.cos(ta) - torch.log(s)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=1e-6)


def test_broadcasting_and_noncontiguous():
    a = _randn(5, 1, seed=9)
    b = _randn(3, 4, seed=10).t()                  # (4, 3), transposed
    c = _randn(4, 6, seed=11)[:, ::2]              # (4, 3), stepped
    spec = FusionSpec((f32, f32, f32),
                      (("exp", (IN(0),)), ("add", (IN(1), IN(2), C(1))), ("mul", (N(1), N(0))),
                       ("lt", (N(2), C(0.25)))),
                      outputs=(0, 2, 3))
    got = check_equal(spec, (a[:4], b, c))
    assert tuple(got[0].shape) == (4, 1) and tuple(got[1].shape) == (4, 3) and got[2].dtype == b8
    # an expanded input (stride 0) and a scalar-like broadcast
    check_equal(spec, (_randn(1, 1, seed=12), _randn(3, seed=13).expand(5, 3), _randn(5, 1, seed=14)))


def test_mixed_dtypes_promote_as_eager():
    xi = P.tensor(np.arange(-6, 6, dtype=np.int32).reshape(3, 4))
    yl = P.tensor(np.arange(4, dtype=np.int64) - 1)
    zf = _randn(3, 4, seed=15)
    spec = FusionSpec(
        (i32, i64, f32),
        (("add", (IN(0), IN(1), C(2))),            # int32 + int64 -> int64
         ("mul", (N(0), C(2.5))),                  # int64 * weak float -> float32 (the default)
         ("gt", (IN(0), C(0))),                    # bool
         ("where", (N(2), N(1), IN(2))),           # float32
         ("mul", (IN(0), C(3))),                   # int32 stays int32 (weak int)
         ("logical_and", (N(2), IN(1))),           # bool
         ("sqrt", (IN(0),)),                       # int -> float32, nan for negatives
         ("eq", (N(4), IN(1))),
         ("add", (N(4), C(True), C(1)))),          # int32 + bool
        outputs=(3, 4, 5, 6, 8))
    got = check_equal(spec, (xi, yl, zf))
    assert [g.dtype for g in got] == [f32, i32, b8, f32, i32]
    spec2 = FusionSpec(spec.inputs, spec.nodes, (7, 0))
    assert [g.dtype for g in check_equal(spec2, (xi, yl, zf))] == [b8, i64]


def test_float64_and_default_dtype():
    x = P.tensor(np.linspace(-2, 2, 33))
    spec = FusionSpec((f64,), (("exp", (IN(0),)), ("mul", (N(0), C(0.1))), ("tanh", (N(1),))), (2,))
    check_equal(spec, (x,))
    xi = P.tensor(np.arange(10, dtype=np.int64))
    spec_i = FusionSpec((i64,), (("exp", (IN(0),)),), (0,))
    old = P.get_default_dtype()
    try:
        P.set_default_dtype(P.float64)             # int -> float goes to the default dtype
        (got,) = check_equal(spec_i, (xi,))
        assert got.dtype == f64
    finally:
        P.set_default_dtype(old)
    (got,) = check_equal(spec_i, (xi,), rtol=1e-6)
    assert got.dtype == f32


def test_float16_and_bfloat16_round_like_eager():
    x = _randn(100, seed=16)
    for dt in (P.float16, P.bfloat16):
        spec = FusionSpec((dt, dt), (("mul", (IN(0), IN(1))), ("add", (N(0), C(1.1), C(1))), ("exp", (N(1),))),
                          (2, 0))
        check_equal(spec, (x.to(dt), (x * 0.5).to(dt)))


def test_zero_dim_and_empty_inputs():
    spec = FusionSpec((f32, f64), (("add", (IN(0), IN(1), C(1))), ("sigmoid", (N(0),))), (1, 0))
    x = _randn(7, seed=17)
    s = P.tensor(0.25, dtype=f64)
    got = check_equal(spec, (x, s), rtol=1e-6)    # a 0-d float64 does not promote float32
    assert got[0].dtype == f32
    got = check_equal(spec, (P.tensor(1.5), s))   # both 0-d: float64, 0-d results
    assert got[0].dtype == f64 and tuple(got[0].shape) == ()
    got = check_equal(spec, (P.empty(0, 3), P.empty(3, dtype=f64)))
    assert tuple(got[0].shape) == (0, 3)
    got = check_equal(spec, (P.empty(0), P.empty(0, dtype=f64)))
    assert got[1].numel() == 0


def test_integer_division_by_zero_raises_like_eager():
    spec = FusionSpec((i64, i64), (("add", (IN(1), C(-1), C(1))), ("floor_divide", (IN(0), N(0)))), (1,))
    a = P.tensor([7, -7, 9])
    check_equal(spec, (a, P.tensor([3, 4, 5])))
    with pytest.raises(ZeroDivisionError):
        compile_group(spec)(a, P.tensor([3, 1, 5]))
    with pytest.raises(ZeroDivisionError):
        eager(spec, (a, P.tensor([3, 1, 5])))


@pytest.mark.parametrize("nodes, exc, match", [
    ((("sum", (IN(0),)),), ValueError, r"node 0 \(sum\): not a pointwise operator"),
    ((("exp", (IN(3),)),), ValueError, r"node 0 \(exp\): argument 'self' refers to input 3"),
    ((("exp", (N(0),)),), ValueError, r"node 0 \(exp\): argument 'self' refers to node 0"),
    ((("exp", (IN(0), IN(0))),), ValueError, r"node 0 \(exp\): expected 1 arguments"),
    ((("exp", (IN(0),)), ("bitwise_and", (N(0), IN(0)))), TypeError,
     r"node 1 \(bitwise_and\): dtype pytorchlite.float32 is not accepted"),
    ((("add", (IN(0), IN(0), IN(0))),), ValueError, r"node 0 \(add\): argument 'alpha' is a Scalar"),
    ((("add", (IN(0), C("x"), C(1))),), TypeError, r"node 0 \(add\): constant argument 'other'"),
    ((("where", (IN(0), IN(0), C(1))),), TypeError, r"node 0 \(where\): argument 'condition' must be a bool"),
])
def test_bad_specs(nodes, exc, match):
    with pytest.raises(exc, match=match):
        compile_group(FusionSpec((f32,), nodes, (0,)))


def test_operator_checks_name_the_node():
    spec = FusionSpec((i64,), (("neg", (IN(0),)), ("add", (N(0), IN(0), C(1.5)))), (1,))
    with pytest.raises(TypeError, match=r"node 1 \(add\): For integral input tensors, argument alpha"):
        compile_group(spec)
    with pytest.raises(ValueError, match="outputs"):
        compile_group(FusionSpec((f32,), (("exp", (IN(0),)),), (1,)))


def test_call_errors():
    k = compile_group(FusionSpec((f32,), (("exp", (IN(0),)),), (0,)))
    with pytest.raises(TypeError, match="dtype"):
        k(P.tensor([1, 2]))
    with pytest.raises(TypeError, match="expected 1 tensor inputs"):
        k(P.tensor([1.0]), P.tensor([1.0]))
    with pytest.raises(RuntimeError, match="must match the size"):
        compile_group(CHEAP)(_randn(3), _randn(4))


def test_second_process_compiles_nothing(tmp_path):
    """The disk cache: a fresh process finds the library by the hash of its source."""
    script = textwrap.dedent("""
        import pytorchlite as P
        from pytorchlite.jit._fuser import FusionSpec, compile_group, stats
        spec = FusionSpec((P.float32,), (("exp", (("in", 0),)), ("mul", (("node", 0), ("const", 3.0)))), (1,))
        (y,) = compile_group(spec)(P.tensor([0.0, 1.0]))
        assert abs(y[1].item() - 3 * 2.718281828) < 1e-5, y
        print(stats["compiled"], stats["loaded"])
    """)
    env = dict(os.environ, PYTORCHLITE_JIT_CACHE=str(tmp_path), PYTHONPATH=ROOT)
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert runs[0].stdout.split() == ["1", "0"]
    assert runs[1].stdout.split() == ["0", "1"]
    libs = [f for f in os.listdir(tmp_path) if f.endswith(".so")]
    assert len(libs) == 1 and not [f for f in os.listdir(tmp_path) if ".tmp" in f]


def test_cuda_source_compiles_with_nvrtc():
    from pytorchlite.cuda import _nvrtc
    try:
        _nvrtc.nvrtc()
    except _nvrtc.NvrtcUnavailable as e:
        pytest.skip(f"NVRTC is not available: {e}")
    spec = FusionSpec((f32, P.float16, i32),
                      (("mul", (IN(0), IN(1))), ("sigmoid", (N(0),)), ("gt", (N(1), C(0.5))),
                       ("where", (N(2), IN(2), N(1))), ("floor_divide", (IN(2), C(2)))),
                      outputs=(3, 2, 4))
    src = _fuser.cuda_source(spec)
    image, _log = _nvrtc.compile_text(src, "sm_90", name="fused.cu")
    assert image[:4] == b"\x7fELF"
    src = _fuser.cuda_source(TRANSCENDENTAL)
    assert _nvrtc.compile_text(src, "sm_80", name="fused.cu")[0][:4] == b"\x7fELF"


def test_composites_package_raises_attribute_error():
    """pickle (and torch.compile's cache keys, which pickle) asks every loaded module for
    names: pytorchlite._composites must answer an unknown one with AttributeError."""
    import pickle
    import pytorchlite._composites as cm
    with pytest.raises(AttributeError, match="no attribute 'torch'"):
        cm.torch
    assert cm.pointwise.__name__ == "pytorchlite._composites.pointwise"
    pickle.dumps(test_can_fuse)     # whichmodule walks sys.modules
