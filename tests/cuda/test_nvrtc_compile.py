"""Every CUDA kernel compiles with NVRTC for sm_80 and sm_90, without a GPU.

NVRTC needs no driver, so this runs in CI (which has no GPU) whenever the `cuda` extra
is installed; without cuda-python or the NVRTC library the module is skipped with the
reason. A compile fails on any error *or warning*. Nothing here launches a kernel.
"""

import os
import re
import subprocess
import sys
import textwrap

import pytest

from pytorchlite.cuda import _nvrtc

try:
    _nvrtc.nvrtc()
except _nvrtc.NvrtcUnavailable as e:
    pytest.skip(f"NVRTC is not available: {e}", allow_module_level=True)

ROOT = _nvrtc.ROOT
sys.path.insert(0, ROOT)
from codegen import cexpr  # noqa: E402
from codegen.gen import KernelVariant, render_all  # noqa: E402
from codegen.model import DTYPE_CLASS, load_ops  # noqa: E402
sys.path.remove(ROOT)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A fresh, private kernel cache: every image in this module is really compiled once."""
    d = str(tmp_path_factory.mktemp("ptl_cuda_cache"))
    old = os.environ.get("PTL_CUDA_CACHE")
    os.environ["PTL_CUDA_CACHE"] = d
    _nvrtc._memory.clear()
    yield d
    _nvrtc._memory.clear()
    if old is None:
        os.environ.pop("PTL_CUDA_CACHE", None)
    else:
        os.environ["PTL_CUDA_CACHE"] = old


@pytest.mark.parametrize("name", ["pointwise.cu", "reduce.cu"])
def test_generated_source_is_current(name):
    """generated/pointwise.cu and reduce.cu are what codegen makes of ops.yaml now (as
    --check requires)."""
    files = render_all(ROOT)
    with open(os.path.join(ROOT, "generated", name), encoding="utf-8") as f:
        assert f.read() == files["generated/" + name], "run `python -m codegen`"
    assert render_all(ROOT)["generated/" + name] == files["generated/" + name]   # deterministic


@pytest.mark.parametrize("arch", _nvrtc.CHECK_ARCHS)
@pytest.mark.parametrize("name", sorted(_nvrtc.SOURCES))
def test_source_compiles(cache, name, arch):
    image = _nvrtc.compile_source(name, arch)
    assert image[:4] == b"\x7fELF", f"{name} for {arch} is not a cubin"
    assert _nvrtc.is_cached(name, arch)


def _expected_kernels():
    """Every kernel name the host launch code may ask the modules for."""
    names = {"pointwise": [], "fill_copy": [], "reduce": [], "philox": [], "nn": []}
    for op in load_ops(os.path.join(ROOT, "ops.yaml")):
        if op.kind != "pointwise":
            continue
        for d in op.pointwise.dtypes:
            sfx = KernelVariant(d, d, "").sfx
            names["pointwise"] += [f"ptl_cu_{op.name}_{sfx}_{v}" for v in ("c32", "s32", "s64")]
    sfxs = ("b8", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64")
    for d in sfxs:
        names["fill_copy"] += [f"ptl_cu_fill_{d}_{v}" for v in ("c32", "s32", "s64")]
        names["fill_copy"] += [f"ptl_cu_copy_{d}_{s}_{v}" for s in sfxs for v in ("c32", "s32", "s64")]
        names["philox"] += [f"ptl_cu_{k}_{d}" for k in ("uniform", "normal", "exponential", "bernoulli", "integers")]
    for k in ("softmax_fwd", "softmax_bwd", "nll_fwd_none", "nll_fwd_reduce", "nll_bwd", "maxpool2d_fwd",
              "maxpool2d_bwd", "im2col", "col2im", "channel_bias"):
        names["nn"] += [f"ptl_cu_{k}_{d}" for d in ("f32", "f64")]       # pytorchlite/cuda/_nn.py, _conv.py
    from pytorchlite.cuda._launch import SUFFIX
    from pytorchlite.generated.reductions import REDUCTIONS
    for name, dtypes, *_ in REDUCTIONS:
        names["reduce"] += [f"ptl_cu_red_{name}_{SUFFIX[c]}_{v}" for c in dtypes
                            for v in ("row32", "row64", "col32", "col64")]
    return names


@pytest.mark.parametrize("name", sorted(_nvrtc.SOURCES))
def test_every_kernel_is_in_the_image(cache, name):
    """Each operator and dtype has its kernels, under the names the launcher uses (extern
    "C": unmangled symbols in the cubin's ELF string table)."""
    image = _nvrtc.compile_source(name, "sm_90")
    symbols = set(re.findall(rb"ptl_cu_\w+", image))
    expected = _expected_kernels()[name]
    assert expected
    missing = [k for k in expected if k.encode() not in symbols]
    assert not missing, f"{name}: no kernel {missing[:5]} ({len(missing)} missing)"


def test_second_process_compiles_nothing(cache):
    """With the cache warm, a new process gets every image from disk: compile_text is made
    to fail there, and the images must still come back, identical."""
    for name in _nvrtc.SOURCES:
        for arch in _nvrtc.CHECK_ARCHS:
            _nvrtc.compile_source(name, arch)
    code = textwrap.dedent(f"""
        import hashlib, importlib.util
        spec = importlib.util.spec_from_file_location("_nvrtc", {os.path.join(ROOT, "pytorchlite", "cuda", "_nvrtc.py")!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        def boom(*a, **k):
            raise AssertionError("compiled in the second process")
        m.compile_text = boom
        for name in sorted(m.SOURCES):
            for arch in m.CHECK_ARCHS:
                print(name, arch, hashlib.sha256(m.compile_source(name, arch)).hexdigest())
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PTL_CUDA_CACHE": cache})
    assert r.returncode == 0, r.stderr
    import hashlib
    want = "".join(f"{n} {a} {hashlib.sha256(_nvrtc.compile_source(n, a)).hexdigest()}\n"
                   for n in sorted(_nvrtc.SOURCES) for a in _nvrtc.CHECK_ARCHS)
    assert r.stdout == want


def test_cache_key_follows_source_header_and_arch(cache):
    k80, k90 = _nvrtc.cache_key("reduce", "sm_80"), _nvrtc.cache_key("reduce", "sm_90")
    assert k80 != k90 and k80 == _nvrtc.cache_key("reduce", "sm_80")
    assert _nvrtc.cache_key("fill_copy", "sm_80") != k80


def test_warnings_fail_the_compile():
    src = 'extern "C" __global__ void k(unsigned n, int *x) { if (n < 0) x[0] = 1; }'
    with pytest.raises(_nvrtc.NvrtcError, match="warning"):
        _nvrtc.compile_text(src, "compute_80", "warn.cu")


def test_errors_fail_the_compile():
    with pytest.raises(_nvrtc.NvrtcError, match="does not compile"):
        _nvrtc.compile_text('extern "C" __global__ void k(int *x) { x[0] = undefined_name; }',
                            "compute_80", "bad.cu")


def test_bad_arch_and_unknown_source():
    with pytest.raises(ValueError, match="sm_XX"):
        _nvrtc.compile_text("", "80", "x.cu")
    with pytest.raises(KeyError, match="unknown CUDA source"):
        _nvrtc.compile_source("nope", "sm_80")


def test_every_body_function_exists_on_the_device():
    """Each function pointwise bodies may call (codegen/cexpr.py FUNCTIONS) has a device
    version in kernels/cuda/ptl_cuda.cuh for every dtype class it declares, so a new
    function added for the CPU only is named here rather than failing a later compile."""
    sfx = {"f": ("f32", "f64"), "i": ("i8", "i16", "i32", "i64", "u8"), "b": ("b8",)}
    ctype = {"f32": "float", "f64": "double", "i8": "int8_t", "i16": "int16_t", "i32": "int32_t",
             "i64": "int64_t", "u8": "uint8_t", "b8": "bool"}
    lines = ['#include "ptl_cuda.cuh"', 'extern "C" __global__ void probe(double *out) {', "    double acc = 0;"]
    for fn, (arity, classes) in sorted(cexpr.FUNCTIONS.items()):
        for c in classes:
            for s in sfx[c]:
                args = ", ".join(f"({ctype[s]})1" for _ in range(arity))
                lines.append(f"    acc += (double)ptl_{fn}_{s}({args});")
    lines += ["    out[0] = acc;", "}"]
    _nvrtc.compile_text("\n".join(lines), "compute_80", "probe.cu")


def test_dtype_classes_cover_every_pointwise_dtype():
    """The generator's per-dtype variants are exactly ops.yaml's dtypes (all ten known)."""
    for op in load_ops(os.path.join(ROOT, "ops.yaml")):
        if op.kind == "pointwise":
            for d in op.pointwise.dtypes:
                assert d in DTYPE_CLASS
