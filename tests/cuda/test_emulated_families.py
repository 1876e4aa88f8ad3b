"""The operator families of tests/cuda/test_gpu.py that this session's work added
(reductions, cuBLAS GEMM, the nn kernels and the digits CNN), run on the CPU emulator (PTL_CUDA_EMULATOR=1)
in a subprocess: the host side of each CUDA path (the registry hooks, planners, argument
packing, cuBLAS's column-major arguments) against the CPU results. Proves nothing about a
GPU (pytorchlite/cuda/_emulator.py says what it does and does not check)."""

import os
import shutil
import subprocess
import sys

import pytest

from pytorchlite.cuda import _nvrtc

ROOT = _nvrtc.ROOT
FAMILIES = "TestReductions or TestGemm or TestNN"


def _nvrtc_ok():
    try:
        _nvrtc.nvrtc()
        return True
    except _nvrtc.NvrtcUnavailable:
        return False


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None or not _nvrtc_ok(), reason="needs g++ and NVRTC (the cuda extra)")
def test_new_families_pass_on_the_emulator():
    env = dict(os.environ, PTL_CUDA_EMULATOR="1")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", FAMILIES,
                        os.path.join("tests", "cuda", "test_gpu.py")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    tail = r.stdout[-4000:] + r.stderr[-2000:]
    assert r.returncode == 0, tail
    assert " passed" in r.stdout and " skipped" not in r.stdout.splitlines()[-1], tail
