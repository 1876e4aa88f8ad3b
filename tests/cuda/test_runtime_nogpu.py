"""pytorchlite.cuda on a machine without a usable GPU: importing works, is_available() is
False with a precise reason, and every call that needs a device raises a RuntimeError with
that reason. Then the runtime itself (devices, streams, events, the memory API, storages)
over FakeBackend devices."""

import gc
import subprocess
import sys

import pytest

import pytorchlite
from pytorchlite import cuda
from pytorchlite.cuda import _runtime
from pytorchlite.cuda._allocator import FakeBackend

needs_no_gpu = pytest.mark.skipif(cuda.is_available(), reason="this machine has a usable CUDA device")
MiB = 1 << 20


@pytest.fixture
def reprobe(monkeypatch):
    """Run the probe again with a stand-in for cuda-python's driver module."""
    def use(driver, version="13.0.0"):
        monkeypatch.setattr(_runtime, "_probed", None)
        monkeypatch.setattr(_runtime, "_import_driver", lambda: driver)
        monkeypatch.setattr(_runtime, "_bindings_version", lambda: tuple(int(x) for x in version.split(".")[:2]))
        return _runtime._unavailable_reason()
    yield use
    _runtime._probed = None


class _FakeDriver:
    """The few driver-API calls the probe makes, with chosen results."""

    def __init__(self, init=0, count=1, version=13000, raises=None):
        self._init, self._count, self._version, self._raises = init, count, version, raises

    def cuInit(self, flags):
        if self._raises:
            raise self._raises
        return (self._init,)

    def cuDeviceGetCount(self):
        return (0, self._count)

    def cuDriverGetVersion(self):
        return (0, self._version)


def test_import_without_cuda_python_never_fails():
    code = ("import sys; sys.modules['cuda'] = None; sys.modules['cuda.bindings'] = None\n"
            "import pytorchlite, pytorchlite.cuda as c\n"
            "assert c.is_available() is False and c.device_count() == 0\n"
            "print(c._unavailable_reason())\n"
            "try:\n    c.current_device()\nexcept RuntimeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=_root(), timeout=120)
    assert out.returncode == 0, out.stderr
    reason, err = out.stdout.splitlines()
    assert reason == "cuda-python is not installed (pip install -e '.[cuda]')"
    assert err == f"CUDA unavailable: {reason}"


def _root():
    import os
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_reasons_name_the_failing_step(reprobe):
    assert reprobe(None) == "cuda-python is not installed (pip install -e '.[cuda]')"
    r = reprobe(_FakeDriver(raises=RuntimeError('"cuda" is an NVIDIA driver library')))
    assert r.startswith("no NVIDIA driver found") and "NVIDIA driver library" in r
    assert reprobe(_FakeDriver(raises=OSError("libcuda.so.1: cannot open"))).startswith("no NVIDIA driver found")
    assert reprobe(_FakeDriver(init=100)).startswith("no CUDA device")
    assert reprobe(_FakeDriver(count=0)) == "no CUDA device (the NVIDIA driver reports 0 devices)"
    r = reprobe(_FakeDriver(init=35, version=12040), version="13.1.0")
    assert r.startswith("version mismatch: cuda-python 13.1 needs an NVIDIA driver for CUDA 13.0 or newer, "
                        "but the installed driver supports CUDA 12.4"), r
    assert reprobe(_FakeDriver(init=0, version=12040), version="13.1.0").startswith("version mismatch")
    assert reprobe(_FakeDriver(init=999)) == "cuInit(0) failed with CUresult 999"
    assert reprobe(_FakeDriver(init=0, count=2, version=13000)) is None


def test_probe_errors_never_escape_is_available(reprobe):
    class Broken:
        def cuInit(self, flags):
            return (0,)

        def cuDriverGetVersion(self):
            return (0, 13000)

        def cuDeviceGetCount(self):
            raise ValueError("boom")
    assert reprobe(Broken()).startswith("probing CUDA failed (ValueError: boom)")
    assert cuda.is_available() is False


@needs_no_gpu
def test_is_available_false_with_reason():
    assert cuda.is_available() is False
    reason = cuda._unavailable_reason()
    assert reason.startswith(("cuda-python is not installed", "no NVIDIA driver found", "no CUDA device",
                              "version mismatch"))
    assert not cuda.is_initialized()


def _entry_points():
    from pytorchlite._storage import Storage
    dev = pytorchlite.device("cuda")
    x = pytorchlite.tensor([1.0, 2.0])
    return {
        "init": cuda.init, "_lazy_init": cuda._lazy_init, "current_device": cuda.current_device,
        "set_device": lambda: cuda.set_device(0), "device ctx": lambda: cuda.device(0).__enter__(),
        "get_device_name": cuda.get_device_name, "get_device_properties": lambda: cuda.get_device_properties(0),
        "get_device_capability": cuda.get_device_capability, "synchronize": cuda.synchronize,
        "mem_get_info": cuda.mem_get_info, "initial_seed": cuda.initial_seed,
        "Stream": cuda.Stream, "Event": cuda.Event, "current_stream": cuda.current_stream,
        "default_stream": cuda.default_stream, "caching_allocator_alloc": lambda: cuda.caching_allocator_alloc(8),
        "caching_allocator_delete": lambda: cuda.caching_allocator_delete(1),
        "_allocate_storage": lambda: cuda._allocate_storage(8, dev), "_copy": lambda: cuda._copy(x, x),
        "_run_pointwise": lambda: cuda._run_pointwise(None, [x], [], None, False, None, None, dev),
        "_dlpack_sync": lambda: cuda._dlpack_sync(x, None), "_record_stream": lambda: cuda._record_stream(x, 0),
        "Storage.allocate": lambda: Storage.allocate(8, dev), "Tensor.cuda": lambda: x.cuda(),
        "Tensor.to": lambda: x.to("cuda:0"),
    }


@needs_no_gpu
@pytest.mark.parametrize("name", sorted(_entry_points()))
def test_every_entry_point_raises_the_reason(name):
    with pytest.raises(RuntimeError) as info:
        _entry_points()[name]()
    assert str(info.value) == f"CUDA unavailable: {cuda._unavailable_reason()}"


@needs_no_gpu
def test_queries_that_pytorch_answers_without_cuda():
    # torch.cuda returns 0 / {} / nothing for these on a machine without CUDA; so do we
    assert cuda.device_count() == 0
    assert cuda.memory_allocated() == cuda.max_memory_allocated() == cuda.memory_reserved() == 0
    assert cuda.max_memory_reserved(0) == 0 and cuda.memory_stats() == {} and cuda.memory_snapshot() == []
    cuda.empty_cache()
    cuda.reset_peak_memory_stats()
    cuda.manual_seed(1)
    cuda.manual_seed_all(2)
    assert "memory summary" in cuda.memory_summary()
    with cuda.device(None):     # no device selected: nothing to initialise
        pass
    with cuda.stream(None):
        pass
    assert not cuda.is_initialized()


@needs_no_gpu
def test_factory_on_cuda_raises_the_reason():
    with pytest.raises(RuntimeError, match="^CUDA unavailable: "):
        pytorchlite.zeros(2, device="cuda")


# --- the runtime over FakeBackend devices -------------------------------------------------------

@pytest.fixture
def fake2():
    backends = [FakeBackend(256 * MiB, 0, "FakeGPU-0"), FakeBackend(64 * MiB, 1, "FakeGPU-1")]
    with _runtime._install_backends(backends):
        yield backends


def test_devices_and_properties(fake2):
    assert cuda.is_available() and cuda.is_initialized() and cuda.device_count() == 2
    assert cuda.current_device() == 0
    assert cuda.get_device_name(1) == "FakeGPU-1" and cuda.get_device_capability() == (9, 0)
    assert cuda.get_device_properties("cuda:1").total_memory == 64 * MiB
    assert "FakeGPU-0" in repr(cuda.get_device_properties())
    with cuda.device(1):
        assert cuda.current_device() == 1
        with cuda.device("cuda:0"):
            assert cuda.current_device() == 0
        assert cuda.current_device() == 1
    assert cuda.current_device() == 0
    with pytest.raises(RuntimeError, match="invalid device ordinal 5"):
        cuda.set_device(5)
    with pytest.raises(ValueError, match="Expected a cuda device"):
        cuda.memory_allocated("cpu")
    assert cuda.mem_get_info(1) == (64 * MiB, 64 * MiB)
    cuda.manual_seed(7)
    assert cuda.initial_seed() == 7


def test_storage_comes_from_the_caching_allocator(fake2):
    from pytorchlite._storage import Storage
    s = Storage.allocate(1, pytorchlite.device("cuda"))
    assert s.device == pytorchlite.device("cuda", 0) and s.nbytes == 1
    assert cuda.memory_allocated() == 512 and cuda.memory_reserved() == 2 * MiB
    assert cuda.memory_allocated(1) == 0
    del s
    gc.collect()
    assert cuda.memory_allocated() == 0 and cuda.max_memory_allocated() == 512
    assert cuda.memory_reserved() == 2 * MiB
    cuda.empty_cache()
    assert cuda.memory_reserved() == 0 and fake2[0].live == {}
    assert Storage.allocate(0, pytorchlite.device("cuda", 1)).ptr == 0 and cuda.memory_reserved(1) == 0
    cuda.reset_peak_memory_stats()
    assert cuda.max_memory_allocated() == 0
    assert cuda.memory_stats()["segment.all.allocated"] == 1
    assert "Allocated memory" in cuda.memory_summary(abbreviated=True)


def test_streams_events_and_per_stream_memory(fake2):
    be = fake2[0]
    s = cuda.Stream()
    assert s != cuda.current_stream() and cuda.current_stream() == cuda.default_stream()
    assert cuda.current_stream().cuda_stream == 0 and s.device == pytorchlite.device("cuda", 0)
    with cuda.stream(s):
        assert cuda.current_stream() == s
        p1 = cuda._allocate_storage(1000, "cuda")       # allocated on stream s
    assert cuda.current_stream().cuda_stream == 0
    ptr = p1.ptr
    del p1
    p2 = cuda._allocate_storage(1000, "cuda")            # default stream: not s's free block
    assert p2.ptr != ptr and cuda.memory_reserved() == 4 * MiB

    e = cuda.Event()
    assert e.query()                                     # never recorded
    e.record(s)
    assert not e.query()
    s.wait_event(e)
    assert be.waits == [(s.cuda_stream, e.cuda_event)]
    be.complete_stream(s.cuda_stream)
    assert e.query() and s.query()
    with pytest.raises(RuntimeError, match="enable_timing"):
        e.elapsed_time(e)
    # the stream pool hands out 32 streams per priority, round robin
    assert len({cuda.Stream().cuda_stream for _ in range(40)}) == 32
    s2 = cuda.Stream(device=1)
    with cuda.stream(s2):
        assert cuda.current_device() == 1 and cuda.current_stream() == s2
    assert cuda.current_device() == 0


def test_record_stream_through_a_tensor(fake2):
    from pytorchlite._tensor import make
    be = fake2[0]
    side = cuda.Stream()
    st = cuda._allocate_storage(4096, "cuda")
    t = make(st, (1024,), (1,), 0, pytorchlite.float32)
    assert t.is_cuda
    cuda._record_stream(t, side)
    ptr = st.ptr
    del t, st
    assert be.pending_events() == 1 and cuda.memory_allocated() == 0
    assert cuda._allocate_storage(4096, "cuda").ptr != ptr      # side stream may still use it
    be.complete_stream(side.cuda_stream)
    assert cuda._allocate_storage(4096, "cuda").ptr == ptr


def test_dlpack_sync_makes_the_consumer_wait(fake2):
    from pytorchlite._tensor import make
    be = fake2[0]
    t = make(cuda._allocate_storage(8, "cuda"), (2,), (1,), 0, pytorchlite.float32)
    cuda._dlpack_sync(t, None)
    cuda._dlpack_sync(t, -1)
    cuda._dlpack_sync(t, 1)              # the legacy default stream is our current stream
    assert be.waits == []
    s = cuda.Stream()
    cuda._dlpack_sync(t, s.cuda_stream)
    assert [w[0] for w in be.waits] == [s.cuda_stream]
    with pytest.raises(TypeError, match="stream must be"):
        cuda._dlpack_sync(t, "0")
    with pytest.raises(NotImplementedError, match="no kernel launcher"):   # fake devices run no kernels
        cuda._copy(t, t)


def test_raw_allocator_api_and_oom(fake2):
    p = cuda.caching_allocator_alloc(3 * MiB, device=1)
    assert cuda.memory_allocated(1) == 3 * MiB
    cuda.caching_allocator_delete(p)
    assert cuda.memory_allocated(1) == 0
    with pytest.raises(cuda.OutOfMemoryError, match=r"^CUDA out of memory\. Tried to allocate 100\.00 MiB\. GPU 1 "):
        cuda.caching_allocator_alloc(100 * MiB, device=1)
    assert cuda.memory_stats(1)["num_ooms"] == 1
    with pytest.raises(RuntimeError, match="not allocated by the caching allocator"):
        cuda.caching_allocator_delete(12345)


def test_state_is_restored_after_fake_devices():
    assert cuda.is_initialized() == (cuda.is_available() and _runtime._devices is not None)
    if not cuda.is_available():
        assert cuda.memory_stats() == {}
