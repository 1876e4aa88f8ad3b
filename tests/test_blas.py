"""The GEMM backend choice (pytorchlite/_blas.py): MKL when installed, OpenBLAS otherwise,
PTL_BLAS to force one. Each backend runs the same products (plain, transposed, batched
through the strided-batch call, empty and degenerate sizes, convolution and linear with
their gradients) against NumPy in float64; the backend this process did not pick runs in a
subprocess, so CI covers both whichever is installed."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import pytorchlite as P
from pytorchlite import _blas

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Runs in this process and in subprocesses: prints {"blas": name, "errors": {case: max rel err}}.
CHECK = r"""
import json
import numpy as np
import pytorchlite as P
from pytorchlite import _blas

rng = np.random.default_rng(0)
errors = {}

def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return float("inf")
    if a.size == 0:
        return 0.0
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))

def arr(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)

for dt, name in ((np.float32, "f32"), (np.float64, "f64")):
    for m, k, n in ((64, 784, 256), (3, 5, 7), (1, 9, 1), (0, 4, 3), (4, 0, 3), (4, 3, 0), (129, 65, 33)):
        a, b = arr(m, k, dtype=dt), arr(k, n, dtype=dt)
        errors[f"mm {m}x{k}x{n} {name}"] = rel((P.tensor(a) @ P.tensor(b)).numpy(), a.astype(np.float64) @ b)
        errors[f"mm^T {m}x{k}x{n} {name}"] = rel((P.tensor(a.T.copy()).t() @ P.tensor(b.T.copy()).t()).numpy(),
                                                 a.astype(np.float64) @ b)
    a, b = arr(6, 40, 50, dtype=dt), arr(6, 50, 60, dtype=dt)   # the strided-batch path
    errors[f"bmm {name}"] = rel(P.bmm(P.tensor(a), P.tensor(b)).numpy(), a.astype(np.float64) @ b)
    c = arr(40, 60, dtype=dt)
    errors[f"addmm {name}"] = rel(P.addmm(P.tensor(c), P.tensor(a[0]), P.tensor(b[0]), beta=0.5, alpha=2).numpy(),
                                  0.5 * c.astype(np.float64) + 2 * (a[0].astype(np.float64) @ b[0]))

# linear and convolution, forward and gradients, float64 against NumPy
x = P.tensor(arr(8, 20, dtype=np.float64), requires_grad=True)
w = P.tensor(arr(30, 20, dtype=np.float64), requires_grad=True)
bias = P.tensor(arr(30, dtype=np.float64), requires_grad=True)
y = P.nn.functional.linear(x, w, bias)
g = arr(8, 30, dtype=np.float64)
y.backward(P.tensor(g))
xn, wn = x.detach().numpy(), w.detach().numpy()
errors["linear"] = rel(y.detach().numpy(), xn @ wn.T + bias.detach().numpy())
errors["linear dx"] = rel(x.grad.numpy(), g @ wn)
errors["linear dw"] = rel(w.grad.numpy(), g.T @ xn)
errors["linear db"] = rel(bias.grad.numpy(), g.sum(0))

xi = arr(2, 3, 6, 6, dtype=np.float64)
wi = arr(4, 3, 3, 3, dtype=np.float64)
out = P.nn.functional.conv2d(P.tensor(xi), P.tensor(wi), padding=1).numpy()
pad = np.pad(xi, ((0, 0), (0, 0), (1, 1), (1, 1)))
ref = np.zeros((2, 4, 6, 6))
for i in range(3):
    for j in range(3):
        ref += np.einsum("nchw,oc->nohw", pad[:, :, i:i + 6, j:j + 6], wi[:, :, i, j])
errors["conv2d"] = rel(out, ref)
print(json.dumps({"blas": _blas.NAME, "errors": errors}))
"""


def _run(env_blas):
    env = dict(os.environ, PTL_BLAS=env_blas)
    r = subprocess.run([sys.executable, "-c", CHECK], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _assert_close(report):
    bad = {k: v for k, v in report["errors"].items() if v > (1e-4 if "f32" in k else 1e-10)}
    assert not bad, f"{report['blas']}: {bad}"


def _mkl_installed():
    return _blas.mkl_path()[0] is not None


def test_default_choice():
    forced = os.environ.get("PTL_BLAS", "auto")
    if forced == "openblas":
        assert _blas.NAME == "OpenBLAS"
    else:
        assert _blas.NAME == ("MKL" if _mkl_installed() else "OpenBLAS")
    if _blas.NAME == "OpenBLAS":
        assert _blas.REASON     # says why not MKL


def test_openblas_products():
    report = _run("openblas")
    assert report["blas"] == "OpenBLAS"
    _assert_close(report)


@pytest.mark.skipif(not _mkl_installed(), reason="the mkl package is not installed")
def test_mkl_products():
    report = _run("mkl")
    assert report["blas"] == "MKL"
    _assert_close(report)


def test_forcing_a_missing_or_unknown_blas_is_an_import_error():
    env = dict(os.environ, PTL_BLAS="atlas")
    r = subprocess.run([sys.executable, "-c", "import pytorchlite"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode != 0 and "PTL_BLAS must be 'auto', 'mkl' or 'openblas', not 'atlas'" in r.stderr
    if not _mkl_installed():
        env["PTL_BLAS"] = "mkl"
        r = subprocess.run([sys.executable, "-c", "import pytorchlite"], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode != 0 and "PTL_BLAS=mkl, but the mkl package is not installed" in r.stderr


@pytest.mark.skipif(_blas.NAME != "MKL", reason="MKL is not the GEMM backend here")
def test_set_num_threads_reaches_mkl():
    n = P.get_num_threads()
    try:
        P.set_num_threads(1)
        assert _blas._mkl.MKL_Get_Max_Threads() == 1
        a = P.randn(300, 300)
        np.testing.assert_allclose((a @ a).numpy(), a.numpy().astype(np.float64) @ a.numpy(), rtol=1e-4, atol=1e-3)
    finally:
        P.set_num_threads(n)
    assert _blas._mkl.MKL_Get_Max_Threads() == n
