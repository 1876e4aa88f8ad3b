"""`python -m pytorchlite.env`: runs, reports every section, never raises, and says why
CUDA is off (probed with fake cuda-python driver modules where the real one is absent)."""

import os
import subprocess
import sys
import types

import pytest

from pytorchlite import env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_module_runs_and_reports_every_section():
    r = subprocess.run([sys.executable, "-m", "pytorchlite.env"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    for key, _ in env._PROBES:
        assert f"{key}:" in r.stdout
    assert "OpenMP:" in r.stdout and "CFLAGS" in r.stdout


def test_info_values():
    info = env.get_env_info()
    import pytorchlite
    assert info["pytorchlite"].startswith(pytorchlite.__version__)
    assert info["threads"].split()[0] == str(pytorchlite.get_num_threads())
    assert info["OpenMP"] in ("on", "off (kernels run on one thread)")
    assert "allocated" in info["CPU allocator"]
    assert "OpenBLAS" in info["OpenBLAS"] or "not loaded" in info["OpenBLAS"]


def test_a_failing_probe_is_reported_not_raised(monkeypatch):
    def broken():
        raise OSError("disk on fire")
    monkeypatch.setattr(env, "_PROBES", env._PROBES + (("broken", broken),))
    info = env.get_env_info()
    assert info["broken"] == "unavailable (OSError: disk on fire)"
    assert "broken:" in env.pretty_str(info)


def _cuda_python_installed():
    try:
        import cuda.bindings.driver  # noqa: F401
        return True
    except ImportError:
        try:
            from cuda import cuda  # noqa: F401
            return True
        except ImportError:
            return False


@pytest.mark.skipif(_cuda_python_installed(), reason="cuda-python is installed here")
def test_cuda_says_cuda_python_missing():
    usable, why = env._cuda()
    assert not usable and why.startswith("cuda-python is not installed")


@pytest.mark.skipif(not _cuda_python_installed() or env._driver_library() is not None,
                    reason="needs cuda-python installed on a machine without the NVIDIA driver")
def test_cuda_says_driver_missing():
    usable, why = env._cuda()
    assert not usable and why.startswith("no NVIDIA driver found")


def _fake_driver(monkeypatch, init=0, count=1, init_raises=None):
    drv = types.ModuleType("cuda.bindings.driver")

    def cuInit(flags):
        if init_raises:
            raise init_raises
        return (init,)

    drv.cuInit = cuInit
    drv.cuDeviceGetCount = lambda: (0, count)
    drv.cuDeviceGet = lambda i: (0, i)
    drv.cuDeviceGetName = lambda n, d: (0, b"Fake GPU\0\0")
    drv.cuDriverGetVersion = lambda: (0, 12040)
    bindings = types.ModuleType("cuda.bindings")
    bindings.driver = drv
    pkg = types.ModuleType("cuda")
    pkg.bindings = bindings
    pkg.__path__ = []
    bindings.__path__ = []
    monkeypatch.setitem(sys.modules, "cuda", pkg)
    monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", drv)


def test_cuda_no_device(monkeypatch):
    _fake_driver(monkeypatch, init=100)
    usable, why = env._cuda()
    assert not usable and "CUDA_ERROR_NO_DEVICE" in why


def test_cuda_driver_library_missing(monkeypatch):
    _fake_driver(monkeypatch, init_raises=RuntimeError("Failed to dlopen libcuda.so.1"))
    monkeypatch.setattr(env, "_driver_library", lambda: None)
    usable, why = env._cuda()
    assert not usable and why.startswith("no NVIDIA driver found")


def test_cuda_zero_devices(monkeypatch):
    _fake_driver(monkeypatch, count=0)
    usable, why = env._cuda()
    assert not usable and why.startswith("no device")


def test_cuda_device_found(monkeypatch):
    _fake_driver(monkeypatch)
    usable, why = env._cuda()
    assert "1 device(s) [0: Fake GPU]" in why and "driver API 12.4" in why
    import importlib.util
    assert usable == (importlib.util.find_spec("pytorchlite.cuda") is not None)


def test_build_flags_without_codegen(monkeypatch):
    monkeypatch.setattr(env, "_load_codegen_build", lambda: None)
    assert env._build_flags().startswith("unknown")


def test_thread_pools_spin_briefly_unless_the_user_says_otherwise():
    """OpenMP and OpenBLAS get short spin-waits (pytorchlite/_C.py explains why); a value
    already in the environment wins."""
    import subprocess
    import sys
    code = "import os, pytorchlite; print(os.environ['GOMP_SPINCOUNT'], os.environ['OPENBLAS_THREAD_TIMEOUT'])"
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OPENBLAS_THREAD_TIMEOUT")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["10000", "4"]
    env["GOMP_SPINCOUNT"] = "123"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["123", "4"]
