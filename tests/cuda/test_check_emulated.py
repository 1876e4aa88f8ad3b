"""`python -m pytorchlite.cuda.check` end to end on the CPU emulator (PTL_CUDA_EMULATOR=1):
the check's sections, its report, and families of tests/cuda/test_gpu.py run through the
real launch path with the kernels built for the host. Keeps the GPU check working between
GPU runs; proves nothing about a GPU (see pytorchlite/cuda/_emulator.py)."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from pytorchlite.cuda import _nvrtc

ROOT = _nvrtc.ROOT


def _nvrtc_ok():
    try:
        _nvrtc.nvrtc()
        return True
    except _nvrtc.NvrtcUnavailable:
        return False


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None or not _nvrtc_ok(), reason="needs g++ and NVRTC (the cuda extra)")
def test_check_runs_on_the_emulator(tmp_path):
    out = tmp_path / "report.md"
    env = dict(os.environ, PTL_CUDA_EMULATOR="1")
    r = subprocess.run([sys.executable, os.path.join("pytorchlite", "cuda", "check.py"), "--out", str(out),
                        "--skip-build", "--no-bench", "--no-digits", "--budget", "900", "-k", "TestCopies and not current_device"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    report = json.loads((tmp_path / "report.json").read_text())
    sections = {s["name"]: s for s in report["sections"]}
    assert list(sections) == ["environment", "smoke", "tests", "coverage"], r.stdout[-3000:]
    assert sections["smoke"]["status"] == "pass", sections["smoke"]["error"]
    tests = sections["tests"]
    assert tests["status"] == "pass", tests["error"] + "\n" + json.dumps(tests["data"].get("failures"))[:3000]
    assert tests["data"]["totals"]["passed"] >= 15 and tests["data"]["totals"]["crashed"] == 0
    assert "no CUDA kernel" in sections["coverage"]["data"]
    text = out.read_text()
    assert "# pytorchlite CUDA check: CPU emulator" in text and "| TestCopies |" in text
    assert r.returncode == 0, r.stdout[-3000:]


# the families issue 16 added: the registry hooks, planners, argument packing and cuBLAS's
# column-major arguments of reductions, GEMM and the nn kernels, against the CPU results
NEW_FAMILIES = "TestReductions or TestGemm or TestNN"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None or not _nvrtc_ok(), reason="needs g++ and NVRTC (the cuda extra)")
def test_new_families_pass_on_the_emulator():
    env = dict(os.environ, PTL_CUDA_EMULATOR="1")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", NEW_FAMILIES,
                        os.path.join("tests", "cuda", "test_gpu.py")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    tail = r.stdout[-4000:] + r.stderr[-2000:]
    assert r.returncode == 0, tail
    assert " passed" in r.stdout and " skipped" not in r.stdout.splitlines()[-1], tail
