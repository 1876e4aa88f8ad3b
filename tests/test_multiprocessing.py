"""pytorchlite.multiprocessing: tensors crossing process boundaries share memory (both ways,
under 'spawn' and 'fork'), views keep their geometry, share_memory_ works in place, spawn()
reports a child's failure, and shared segments leave nothing behind.

Functions run in child processes live at module level so that 'spawn' can pickle them
(and each spawned child imports this module: keep its imports light).
"""

import glob
import os
import pickle
import sys
import tempfile
import time
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

import pytorchlite as P
import pytorchlite.multiprocessing as mp
from pytorchlite.multiprocessing import _segment

METHODS = [m for m in ("spawn", "fork") if m in mp.get_all_start_methods()]
TIMEOUT = 60
needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs Linux /proc")


def _segment_files():
    return set(glob.glob(os.path.join(_segment.shm_dir(), "ptl_mp_*")))


@pytest.fixture(autouse=True)
def no_segment_files_left():
    """Every test: shared segments never leave a file in /dev/shm."""
    before = _segment_files()
    yield
    assert _segment_files() <= before


def _segment_link(t):
    """What /proc shows for the segment behind t ("/dev/shm/ptl_mp_... (deleted)")."""
    return os.readlink(f"/proc/self/fd/{t.untyped_storage()._owner.fd}")


def _holds(link):
    """(mapped, descriptors open) in this process for the segment file `link`."""
    path = link[:-len(" (deleted)")] if link.endswith(" (deleted)") else link
    with open("/proc/self/maps") as f:
        mapped = path in f.read()
    fds = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds += os.readlink(f"/proc/self/fd/{fd}") == link
        except OSError:
            pass
    return mapped, fds


# ---------------------------------------------------------------------------------------
# share_memory_ / is_shared, in one process


def test_share_memory_moves_storage_in_place_and_keeps_views():
    t = P.arange(12.).reshape(3, 4)
    v = t[1:, ::2]
    old_ptr = t.data_ptr()
    assert not t.is_shared() and not v.is_shared()
    assert t.share_memory_() is t
    assert t.is_shared() and v.is_shared()
    assert t.data_ptr() != old_ptr                      # the memory moved ...
    assert t.untyped_storage() is v.untyped_storage()   # ... under the same storage
    assert t.tolist() == np.arange(12.).reshape(3, 4).tolist()
    assert v.tolist() == [[4., 6.], [8., 10.]] and v.stride() == (4, 2) and v.storage_offset() == 4
    v.fill_(-1)
    assert t[1].tolist() == [-1., 5., -1., 7.]
    ptr = t.data_ptr()
    t.share_memory_()                                   # already shared: nothing happens
    v.share_memory_()
    assert t.data_ptr() == ptr
    assert (t * 2).sum().item() == 2 * sum(t.flatten().tolist())   # ops run on shared memory
    assert not t.clone().is_shared()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "bool", "float16", "bfloat16"])
def test_share_memory_keeps_every_dtype(dtype):
    t = (P.arange(-3, 4) % 3).to(getattr(P, dtype))
    want = t.clone()
    t.share_memory_()
    assert t.is_shared() and t.dtype == want.dtype and t.tolist() == want.tolist()


def test_share_memory_of_empty_and_from_numpy_tensors():
    e = P.empty(0, 3).share_memory_()
    assert e.is_shared() and tuple(e.shape) == (0, 3)
    a = np.arange(5, dtype=np.float32)
    t = P.from_numpy(a)
    t.share_memory_()
    # as in PyTorch, the storage leaves the array's memory: they no longer alias
    a[0] = 99
    assert t.is_shared() and t.tolist() == [0., 1., 2., 3., 4.]


def test_matches_pytorch_semantics():
    # imported here, not at the top: 'spawn' children import this module, and PyTorch
    # would add seconds to each of them
    torch = pytest.importorskip("torch")
    for lib in (P, torch):
        t = lib.arange(6.).reshape(2, 3)
        v = t.t()
        assert not t.is_shared()
        assert t.share_memory_() is t and t.is_shared() and v.is_shared()
        v[0, 1] = 42.
        assert t[1, 0].item() == 42.
        ptr = t.data_ptr()
        t.share_memory_()
        assert t.data_ptr() == ptr


def test_shared_storage_refuses_to_grow():
    # (PyTorch 2.13 itself crashes here; older versions raise this error)
    t = P.zeros(4).share_memory_()
    t.resize_(2)            # shrinking needs no new memory
    with pytest.raises(RuntimeError, match="Trying to resize storage that is not resizable"):
        t.resize_(10)


def test_module_share_memory_shares_parameters_buffers_and_grads():
    P.manual_seed(0)
    m = P.nn.Sequential(P.nn.Linear(3, 4), P.nn.BatchNorm1d(4))
    m(P.randn(5, 3)).sum().backward()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    params = list(m.parameters())
    assert m.share_memory() is m
    assert all(p.is_shared() and p.grad.is_shared() for p in params)
    assert all(b.is_shared() for b in m.buffers())
    assert [id(p) for p in m.parameters()] == [id(p) for p in params]   # the same Parameters
    after = m.state_dict()
    assert all(before[k].tolist() == after[k].tolist() for k in before)


def test_cuda_tensors_count_as_shared_and_cannot_be_sent():
    if not P.cuda.is_available():
        pytest.skip("no CUDA device")
    t = P.zeros(3, device="cuda")
    assert t.is_shared() and t.share_memory_() is t
    with pytest.raises(RuntimeError, match="CUDA"):
        ForkingPickler.dumps(t)


# ---------------------------------------------------------------------------------------
# the pickling protocol, in one process


def test_forking_pickler_sends_a_reference_not_the_bytes():
    t = P.arange(100000.)
    v = t[10::7]
    data = bytes(ForkingPickler.dumps((t, v)))
    assert len(data) < 2000 and t.is_shared()
    t2, v2 = ForkingPickler.loads(data)
    # this process already maps that segment: the same storage comes back
    assert t2.untyped_storage() is t.untyped_storage() and v2.untyped_storage() is t.untyped_storage()
    assert v2.shape == v.shape and v2.stride() == (7,) and v2.storage_offset() == 10
    assert v2.data_ptr() == v.data_ptr()


def test_parameters_and_grad_flags_survive():
    p = P.nn.Parameter(P.randn(2, 3))
    leaf = P.ones(2, requires_grad=True)
    p2, leaf2, plain2 = ForkingPickler.loads(ForkingPickler.dumps((p, leaf, P.ones(1))))
    assert type(p2) is P.nn.Parameter and p2.requires_grad and p2.is_leaf
    assert leaf2.requires_grad and leaf2.is_leaf and not plain2.requires_grad
    assert p2.data_ptr() == p.data_ptr() and p.is_shared()


def test_non_leaf_requiring_grad_is_refused():
    x = P.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        ForkingPickler.dumps(x * 2)
    ForkingPickler.dumps((x * 2).detach())


def test_plain_pickle_still_copies():
    t = P.arange(4.)
    t2 = pickle.loads(pickle.dumps(t))
    assert not t.is_shared() and not t2.is_shared()
    t2.add_(1)
    assert t.tolist() == [0., 1., 2., 3.]


def test_module_reexports_the_standard_api_and_strategies():
    import multiprocessing
    for name in multiprocessing.__all__:
        assert getattr(mp, name) is getattr(multiprocessing, name), name
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert mp.get_all_sharing_strategies() == {"file_descriptor"}
    mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(ValueError, match="file_system"):
        mp.set_sharing_strategy("file_system")


# ---------------------------------------------------------------------------------------
# across processes


def _child_modifies_what_it_receives(inq, outq, done, received):
    t = inq.get()
    v = inq.get()           # a view of t, in its own message
    outq.put((tuple(v.shape), v.stride(), v.storage_offset(), v.untyped_storage() is t.untyped_storage(),
              t.is_shared()))
    t.mul_(2)
    v.fill_(-1)
    mine = P.arange(4.)
    outq.put(mine)          # and back the other way: a tensor the child made
    done.wait(TIMEOUT)
    outq.put(mine.tolist())  # what the child sees after the parent's write
    outq.put(t)             # the parent's own tensor, returned
    received.wait(TIMEOUT)  # a sender stays alive until its tensors are taken (descriptor passing)


@pytest.mark.parametrize("method", METHODS)
def test_queue_shares_both_ways(method):
    ctx = mp.get_context(method)
    inq, outq, done, received = ctx.Queue(), ctx.Queue(), ctx.Event(), ctx.Event()
    p = ctx.Process(target=_child_modifies_what_it_receives, args=(inq, outq, done, received))
    p.start()
    try:
        t = P.arange(12.).reshape(3, 4)
        inq.put(t)
        inq.put(t[1:, ::2])
        assert outq.get(timeout=TIMEOUT) == ((2, 2), (4, 2), 4, True, True)
        mine = outq.get(timeout=TIMEOUT)
        assert mine.is_shared() and mine.tolist() == [0., 1., 2., 3.]
        # the child's writes are in the parent's tensor
        want = np.arange(12.).reshape(3, 4) * 2
        want[1:, ::2] = -1
        assert t.tolist() == want.tolist()
        # the parent's write is in the child's tensor
        mine.add_(100)
        done.set()
        assert outq.get(timeout=TIMEOUT) == [100., 101., 102., 103.]
        back = outq.get(timeout=TIMEOUT)
        received.set()
        assert back.untyped_storage() is t.untyped_storage() and back.data_ptr() == t.data_ptr()
    finally:
        done.set()
        received.set()
        p.join(TIMEOUT)
        if p.is_alive():
            p.kill()
    assert p.exitcode == 0


def _child_adds_one(t, view):
    t.add_(1)
    view.mul_(10)


@pytest.mark.parametrize("method", METHODS)
def test_process_arguments_share(method):
    ctx = mp.get_context(method)
    t = P.zeros(2, 3)
    if method == "fork":
        t.share_memory_()   # a forked child inherits its arguments: only shared memory is common
    p = ctx.Process(target=_child_adds_one, args=(t, t[:, 1]))
    p.start()
    p.join(TIMEOUT)
    assert p.exitcode == 0
    assert t.is_shared() and t.tolist() == [[1., 10., 1.], [1., 10., 1.]]


def _child_pipe(conn):
    t = conn.recv()
    t[0] = 7
    conn.send("done")
    conn.close()


def test_pipe_shares():
    ctx = mp.get_context("fork" if "fork" in METHODS else "spawn")
    a, b = ctx.Pipe()
    p = ctx.Process(target=_child_pipe, args=(b,))
    p.start()
    t = P.zeros(3, dtype=P.int64)
    a.send(t)
    assert a.recv() == "done"
    p.join(TIMEOUT)
    assert t.tolist() == [7, 0, 0]


def _pool_square_into(args):
    out, i = args
    out[i] = i * i
    return out.is_shared()


def test_pool_tasks_share():
    ctx = mp.get_context("fork" if "fork" in METHODS else "spawn")
    out = P.zeros(6)
    with ctx.Pool(2) as pool:
        assert all(pool.map(_pool_square_into, [(out, i) for i in range(6)]))
    assert out.tolist() == [0., 1., 4., 9., 16., 25.]


def _child_holds_then_drops(q, out, go):
    t = q.get()
    link = _segment_link(t)
    out.put(_holds(link))
    del t                   # the last reference in this process: no gc needed
    out.put(_holds(link))
    go.wait(TIMEOUT)


@needs_proc
@pytest.mark.parametrize("method", METHODS)
def test_segment_freed_when_last_reference_goes_everywhere(method):
    ctx = mp.get_context(method)
    q, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    p = ctx.Process(target=_child_holds_then_drops, args=(q, out, go))
    p.start()
    try:
        t = P.ones(1000)
        v = t[10:20]
        q.put(v)
        assert out.get(timeout=TIMEOUT)[0] is True          # mapped in the child
        assert out.get(timeout=TIMEOUT) == (False, 0)       # unmapped and closed in the child
        link = _segment_link(t)
        # the duplicate descriptor made for sending is closed by multiprocessing's resource
        # sharer thread just after it has passed it on: allow that thread a moment
        deadline = time.monotonic() + 10
        while _holds(link) != (True, 1) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _holds(link) == (True, 1)
        del t
        assert _holds(link) == (True, 1)                    # the view still holds it
        del v
        assert _holds(link) == (False, 0)
    finally:
        go.set()
        p.join(TIMEOUT)
    assert p.exitcode == 0


# ---------------------------------------------------------------------------------------
# spawn


def _fill_slot(i, t):
    t[i] = i + 1


def _fail_in_one(i, bad):
    if i == bad:
        raise ValueError(f"boom from process {i}")


def _exit_with(i, code):
    if i == 0:
        os._exit(code)


def _spawn_error_files():
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "ptl_spawn_err_*")))


def test_spawn_runs_every_process_on_shared_memory():
    t = P.zeros(3)
    assert mp.spawn(_fill_slot, args=(t,), nprocs=2) is None
    assert t.tolist() == [1., 2., 0.]


def test_spawn_raises_with_the_child_traceback():
    before = _spawn_error_files()
    with pytest.raises(mp.ProcessRaisedException) as info:
        mp.spawn(_fail_in_one, args=(1,), nprocs=2)
    msg = str(info.value)
    assert "-- Process 1 terminated with the following error:" in msg
    assert "Traceback (most recent call last)" in msg and "ValueError: boom from process 1" in msg
    assert "_fail_in_one" in msg
    assert info.value.error_index == 1 and info.value.error_pid > 0
    assert _spawn_error_files() <= before


@pytest.mark.parametrize("method", METHODS)
def test_start_processes_reports_exit_codes(method):
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3") as info:
        mp.start_processes(_exit_with, args=(3,), nprocs=2, start_method=method)
    assert info.value.exit_code == 3 and info.value.error_index == 0


def test_start_processes_without_join_returns_a_context():
    method = "fork" if "fork" in METHODS else "spawn"
    t = P.zeros(2).share_memory_()
    ctx = mp.start_processes(_fill_slot, args=(t,), nprocs=2, join=False, start_method=method)
    assert isinstance(ctx, mp.ProcessContext) and len(ctx.pids()) == 2
    while not ctx.join(timeout=TIMEOUT):
        pass
    assert ctx.join() is True and t.tolist() == [1., 2.]


def test_process_exceptions_pickle():
    e = mp.ProcessExitedException("process 2 terminated with signal SIGKILL", 2, 123, -9, "SIGKILL")
    e2 = pickle.loads(pickle.dumps(e))
    assert (e2.msg, e2.error_index, e2.error_pid, e2.exit_code, e2.signal_name) == \
        (e.msg, 2, 123, -9, "SIGKILL")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
