"""pytorchlite.utils.data: datasets, samplers, collation and the DataLoader (single- and
multi-process), compared with torch.utils.data where installed."""

import collections
import glob
import os
import time

import numpy as np
import pytest

import pytorchlite as P
from pytorchlite.utils.data import (
    BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset, IterableDataset, RandomSampler,
    SequentialSampler, Subset, SubsetRandomSampler, TensorDataset, WeightedRandomSampler, default_collate,
    default_convert, get_worker_info, random_split)
from pytorchlite.utils.data import _shm


def _gen(seed):
    return P.Generator().manual_seed(seed)


def _tolist(x):
    if isinstance(x, P.Tensor):
        return ("T", x.dtype.name, x.tolist())
    if type(x).__module__ == "torch" and type(x).__name__ in ("Tensor", "Parameter"):
        return ("T", str(x.dtype).replace("torch.", ""), x.tolist())
    if isinstance(x, dict):
        return {k: _tolist(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__,) + tuple(_tolist(v) for v in x)
    if isinstance(x, (list, tuple)):
        return type(x)(_tolist(v) for v in x)
    return x


# ---------------------------------------------------------------------------------------
# datasets


def test_tensor_dataset_subset_concat_chain():
    ds = TensorDataset(P.arange(6.).reshape(3, 2), P.tensor([7, 8, 9]))
    assert len(ds) == 3
    x, y = ds[1]
    assert x.tolist() == [2.0, 3.0] and y.item() == 8
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(P.zeros(2), P.zeros(3))
    sub = Subset(ds, [2, 0])
    assert len(sub) == 2 and sub[0][1].item() == 9
    c = ConcatDataset([list("ab"), list("cde")])
    assert len(c) == 5 and [c[i] for i in range(5)] == list("abcde") and c[-1] == "e" and c[-5] == "a"
    assert c.cumulative_sizes == [2, 5]
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        c[-6]
    with pytest.raises(IndexError):
        c[5]
    with pytest.raises(AssertionError, match="should not be an empty iterable"):
        ConcatDataset([])

    class Sq(Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return i * i
    both = Sq() + Sq()
    assert isinstance(both, ConcatDataset) and [both[i] for i in range(6)] == [0, 1, 4, 0, 1, 4]

    class R(IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

        def __len__(self):
            return self.n
    chained = R(2) + R(3)
    assert isinstance(chained, ChainDataset) and list(chained) == [0, 1, 0, 1, 2] and len(chained) == 5
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(ChainDataset([R(1), [5]]))
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([R(1)])
    with pytest.raises(NotImplementedError):
        Dataset()[0]


def test_random_split_lengths_and_fractions():
    a, b = random_split(range(10), [3, 7], generator=_gen(0))
    assert len(a) == 3 and len(b) == 7 and sorted(list(a) + list(b)) == list(range(10))
    a2, b2 = random_split(range(10), [3, 7], generator=_gen(0))
    assert list(a) == list(a2) and list(b) == list(b2)
    parts = random_split(range(11), [0.3, 0.3, 0.4], generator=_gen(1))
    # floor(3.3), floor(3.3), floor(4.4) = 3, 3, 4; the remainder 1 goes to the first split
    assert [len(p) for p in parts] == [4, 3, 4]
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(3), [0.9, 0.1], generator=_gen(0))
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(range(10), [1.5, -0.5])


def test_random_split_sizes_match_pytorch():
    torch = pytest.importorskip("torch")
    for n, fr in ((10, [0.33, 0.33, 0.34]), (7, [0.5, 0.5]), (101, [0.1] * 10), (5, [0.2, 0.8])):
        ours = [len(s) for s in random_split(range(n), fr, generator=_gen(0))]
        theirs = [len(s) for s in torch.utils.data.random_split(range(n), fr,
                                                                generator=torch.Generator().manual_seed(0))]
        assert ours == theirs, (n, fr)


# ---------------------------------------------------------------------------------------
# samplers


def test_sequential_and_random_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3] and len(SequentialSampler(range(4))) == 4
    perm = list(RandomSampler(range(20), generator=_gen(3)))
    assert sorted(perm) == list(range(20)) and perm != list(range(20))
    assert perm == list(RandomSampler(range(20), generator=_gen(3)))
    more = list(RandomSampler(range(5), num_samples=12, generator=_gen(0)))
    assert len(more) == 12 and sorted(more[:5]) == list(range(5)) and sorted(more[5:10]) == list(range(5))
    repl = list(RandomSampler(range(3), replacement=True, num_samples=100, generator=_gen(0)))
    assert len(repl) == 100 and set(repl) == {0, 1, 2}
    assert len(RandomSampler(range(3), replacement=True, num_samples=100)) == 100
    P.manual_seed(5)
    first = list(RandomSampler(range(10)))
    P.manual_seed(5)
    assert list(RandomSampler(range(10))) == first      # the global seed makes it reproducible
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="num_samples=0"):
        RandomSampler([])
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got replacement=1"):
        RandomSampler(range(3), replacement=1)


def test_subset_weighted_and_batch_samplers():
    s = list(SubsetRandomSampler([10, 20, 30, 40], generator=_gen(2)))
    assert sorted(s) == [10, 20, 30, 40]
    w = list(WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 200, generator=_gen(0)))
    assert len(w) == 200 and set(w) == {1, 3} and w.count(3) > w.count(1)
    nr = list(WeightedRandomSampler([1.0, 1.0, 1.0, 1.0], 4, replacement=False, generator=_gen(0)))
    assert sorted(nr) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match="replacement should be a boolean value"):
        WeightedRandomSampler([1.0], 1, replacement=None)
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights have shape \(1, 2\)"):
        WeightedRandomSampler([[1.0, 2.0]], 1)
    bs = BatchSampler(SequentialSampler(range(7)), 3, drop_last=False)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6]] and len(bs) == 3
    bs = BatchSampler(range(7), 3, drop_last=True)
    assert list(bs) == [[0, 1, 2], [3, 4, 5]] and len(bs) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got drop_last=1"):
        BatchSampler(range(3), 1, 1)


# ---------------------------------------------------------------------------------------
# collation

Point = collections.namedtuple("Point", "x y")

COLLATE_CASES = {
    "tensors": lambda m, np_: [m.tensor([1.0, 2.0]), m.tensor([3.0, 4.0])],
    "int-tensors-0d": lambda m, np_: [m.tensor(1), m.tensor(2), m.tensor(3)],
    "floats": lambda m, np_: [1.5, 2.0],
    "ints": lambda m, np_: [1, 2, 3],
    "bools": lambda m, np_: [True, False],
    "strings": lambda m, np_: ["a", "b"],
    "numpy-arrays": lambda m, np_: [np_.arange(3, dtype=np_.float32), np_.ones(3, dtype=np_.float32)],
    "numpy-scalars": lambda m, np_: [np_.float64(1.5), np_.float64(2.5)],
    "numpy-int32-scalars": lambda m, np_: [np_.int32(1), np_.int32(2)],
    "dicts": lambda m, np_: [{"x": m.tensor([1]), "y": 0.5, "name": "a"}, {"x": m.tensor([2]), "y": 1.5,
                                                                          "name": "b"}],
    "tuples": lambda m, np_: [(m.tensor([1.0]), 1), (m.tensor([2.0]), 2)],
    "lists": lambda m, np_: [[1, 2.5], [3, 4.5]],
    "namedtuples": lambda m, np_: [Point(m.tensor(1.0), 2), Point(m.tensor(3.0), 4)],
    "nested": lambda m, np_: [{"a": [(1, m.tensor([[1]]))]}, {"a": [(2, m.tensor([[2]]))]}],
}


@pytest.mark.parametrize("case", list(COLLATE_CASES))
def test_default_collate_matches_pytorch(case):
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate
    ours = default_collate(COLLATE_CASES[case](P, np))
    theirs = torch_collate(COLLATE_CASES[case](torch, np))
    assert _tolist(ours) == _tolist(theirs)


def test_default_collate_without_torch():
    out = default_collate([(P.tensor([1.0, 2.0]), 1, "a"), (P.tensor([3.0, 4.0]), 2, "b")])
    assert isinstance(out, list)
    assert out[0].tolist() == [[1.0, 2.0], [3.0, 4.0]] and out[1].dtype == P.int64 and out[2] == ("a", "b")
    assert default_collate([1.0, 2.0]).dtype == P.float64
    p = default_collate([Point(1, 2), Point(3, 4)])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3]
    od = default_collate([collections.OrderedDict(b=1, a=2)] * 2)
    assert isinstance(od, collections.OrderedDict) and list(od) == ["b", "a"]
    bf = default_collate([P.ones(2, dtype=P.bfloat16), P.zeros(2, dtype=P.bfloat16)])
    assert bf.dtype == P.bfloat16 and bf.shape == (2, 2)
    nc = default_collate([P.arange(6.).reshape(2, 3).t(), P.zeros(3, 2)])
    assert nc[0].tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([P.zeros(2), P.zeros(3)])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                                        "or lists; found <class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_default_convert():
    out = default_convert({"a": np.arange(3), "b": (np.float32(2.0), "s"), "c": [np.ones(2)], "d": P.ones(1)})
    assert out["a"].tolist() == [0, 1, 2] and isinstance(out["a"], P.Tensor)
    assert isinstance(out["b"], list) and out["b"][0].dtype == P.float32 and out["b"][1] == "s"
    assert isinstance(out["c"][0], P.Tensor)
    strs = np.array(["x"])
    assert default_convert(strs) is strs
    assert default_convert(3) == 3


# ---------------------------------------------------------------------------------------
# DataLoader, main process


def _ds(n=10):
    return TensorDataset(P.arange(float(2 * n)).reshape(n, 2), P.arange(n))


def test_dataloader_batches_and_len():
    dl = DataLoader(_ds(), batch_size=4)
    batches = list(dl)
    assert len(dl) == 3 and len(batches) == 3
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][0].shape == (4, 2)
    dl = DataLoader(_ds(), batch_size=4, drop_last=True)
    assert len(dl) == 2 and [b[1].tolist() for b in dl] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    single = list(DataLoader(_ds(3), batch_size=None))
    assert len(single) == 3 and single[1][1].shape == () and single[1][1].item() == 1
    dl = DataLoader(_ds(), batch_sampler=[[9, 0], [5]])
    assert [b[1].tolist() for b in dl] == [[9, 0], [5]] and len(dl) == 2
    dl = DataLoader(_ds(), sampler=[3, 1, 2], batch_size=2)
    assert [b[1].tolist() for b in dl] == [[3, 1], [2]]
    dl = DataLoader(_ds(), batch_size=3, collate_fn=lambda items: [int(y) for _, y in items])
    assert list(dl) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    dl = DataLoader(list(range(5)), batch_size=2)
    assert [b.tolist() for b in dl] == [[0, 1], [2, 3], [4]]


def test_dataloader_shuffle_with_generator():
    def order(seed):
        return [y for _, ys in DataLoader(_ds(), batch_size=3, shuffle=True, generator=_gen(seed)) for y in ys.tolist()]
    a, b, c = order(0), order(0), order(1)
    assert sorted(a) == list(range(10)) and a == b and a != c
    dl = DataLoader(_ds(), batch_size=10, shuffle=True, generator=_gen(7))
    assert next(iter(dl))[1].tolist() != next(iter(dl))[1].tolist()   # each epoch gets a new order


def test_dataloader_argument_errors():
    ds = _ds()
    cases = [
        (dict(num_workers=-1), "num_workers option should be non-negative; use num_workers=0 to disable "
                               "multiprocessing."),
        (dict(timeout=-1), "timeout option should be non-negative"),
        (dict(prefetch_factor=2), "prefetch_factor option could only be specified in multiprocessing"),
        (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
        (dict(sampler=[0], shuffle=True), "sampler option is mutually exclusive with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive with batch_size, "
                                                  "shuffle, sampler, and drop_last"),
        (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching and is mutually "
                                                "exclusive with drop_last"),
    ]
    for kw, msg in cases:
        with pytest.raises(ValueError) as e:
            DataLoader(ds, **kw)
        assert str(e.value).startswith(msg)


def test_dataloader_errors_match_pytorch():
    torch = pytest.importorskip("torch")
    for kw in (dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2), dict(persistent_workers=True),
               dict(sampler=[0], shuffle=True), dict(batch_sampler=[[0]], drop_last=True),
               dict(batch_size=None, drop_last=True)):
        with pytest.raises(ValueError) as ours:
            DataLoader(list(range(3)), **kw)
        with pytest.raises(ValueError) as theirs:
            torch.utils.data.DataLoader(list(range(3)), **kw)
        assert str(ours.value) == str(theirs.value)


class Stream(IterableDataset):
    """0..n-1, sharded across workers by get_worker_info()."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        return self.n


def test_iterable_dataset_in_main_process():
    dl = DataLoader(Stream(7), batch_size=3)
    assert [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5], [6]] and len(dl) == 3
    dl = DataLoader(Stream(7), batch_size=3, drop_last=True)
    assert [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5]] and len(dl) == 2
    assert [int(x) for x in DataLoader(Stream(3), batch_size=None)] == [0, 1, 2]
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Stream(3), sampler=[0])


def test_pin_memory_is_accepted():
    if P.cuda.is_available():
        pytest.skip("with an accelerator pin_memory is not a no-op")
    with pytest.warns(UserWarning, match="no accelerator is found"):
        dl = DataLoader(_ds(), batch_size=5, pin_memory=True)
    assert [b[1].tolist() for b in dl] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]


# ---------------------------------------------------------------------------------------
# DataLoader, worker processes


def _no_leftover_files():
    return not glob.glob(os.path.join(_shm.shm_dir(), f"ptl_dl_{os.getpid()}_*"))


class Mixed(Dataset):
    """Samples of several kinds, to check what comes back through shared memory."""

    def __len__(self):
        return 9

    def __getitem__(self, i):
        return {"x": P.arange(6.).reshape(2, 3).t() * i, "bf": P.full((2,), i, dtype=P.bfloat16),
                "empty": P.zeros(0, 4), "b": P.tensor([i % 2 == 0]), "label": f"item{i}", "i": i,
                "np": np.full(2, i, dtype=np.int16)}


def test_workers_give_the_same_batches_in_order():
    expected = [_tolist(b) for b in DataLoader(Mixed(), batch_size=2)]
    got = list(DataLoader(Mixed(), batch_size=2, num_workers=2))
    assert [_tolist(b) for b in got] == expected
    assert got[0]["bf"].dtype == P.bfloat16 and got[0]["empty"].shape == (2, 0, 4)
    got[0]["x"][0, 0, 0] = 42.0                 # a batch from shared memory is an ordinary, writable tensor
    assert got[0]["x"][0, 0, 0].item() == 42.0
    assert _no_leftover_files()


def test_worker_shuffled_epochs_and_prefetch():
    dl = DataLoader(_ds(20), batch_size=3, shuffle=True, num_workers=2, prefetch_factor=1, generator=_gen(4))
    ref = DataLoader(_ds(20), batch_size=3, shuffle=True, generator=_gen(4))
    assert [_tolist(b) for b in dl] == [_tolist(b) for b in ref]


class WhoAmI(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return P.tensor([i, info.id, info.num_workers, os.getpid(), _INIT.get("worker", -1), float(P.rand(()))],
                        dtype=P.float64)


_INIT = {}


def _record_init(worker_id):
    _INIT["worker"] = worker_id


def test_worker_info_init_fn_and_seeds():
    dl = DataLoader(WhoAmI(), batch_size=2, num_workers=2, worker_init_fn=_record_init, generator=_gen(11))
    rows = [r for b in dl for r in b.tolist()]
    assert [int(r[0]) for r in rows] == list(range(8))
    # batches go round-robin to the workers
    assert [int(r[1]) for r in rows] == [0, 0, 1, 1, 0, 0, 1, 1]
    assert all(int(r[2]) == 2 for r in rows) and all(int(r[1]) == int(r[4]) for r in rows)
    assert len({int(r[3]) for r in rows}) == 2 and os.getpid() not in {int(r[3]) for r in rows}
    rows2 = [r for b in DataLoader(WhoAmI(), batch_size=2, num_workers=2, generator=_gen(11)) for r in b.tolist()]
    assert [r[5] for r in rows] == [r[5] for r in rows2]      # seeded from the loader's generator
    assert rows[0][5] != rows[2][5]                            # different workers draw different numbers
    assert get_worker_info() is None


def test_iterable_dataset_with_workers_is_sharded():
    got = sorted(x for b in DataLoader(Stream(11), batch_size=2, num_workers=3) for x in b.tolist())
    assert got == list(range(11))
    got = [int(x) for x in DataLoader(Stream(5), batch_size=None, num_workers=2)]
    assert sorted(got) == list(range(5))


def test_persistent_workers_keep_their_processes():
    dl = DataLoader(WhoAmI(), batch_size=4, num_workers=2, persistent_workers=True)
    pids = []
    for _ in range(3):
        pids.append({int(r[3]) for b in dl for r in b.tolist()})
    assert pids[0] == pids[1] == pids[2] and len(pids[0]) == 2
    it = iter(dl)
    next(it)                                   # abandon an epoch half-way: the next starts clean
    assert [int(r[0]) for b in dl for r in b.tolist()] == list(range(8))
    assert {int(r[3]) for b in dl for r in b.tolist()} == pids[0]
    dl2 = DataLoader(Stream(6), batch_size=2, num_workers=2, persistent_workers=True)
    for _ in range(2):
        assert sorted(x for b in dl2 for x in b.tolist()) == list(range(6))


class Faulty(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 3:
            raise ValueError(f"cannot read item {i}")
        if i == 4:
            raise KeyError("missing")
        return i


def test_worker_exception_is_reraised_with_its_worker():
    it = iter(DataLoader(Faulty(), batch_size=1, num_workers=2))
    assert [next(it).item() for _ in range(3)] == [0, 1, 2]
    with pytest.raises(ValueError, match=r"Caught ValueError in DataLoader worker process 1\.(.|\n)*cannot read "
                                         r"item 3"):
        next(it)
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 0"):
        next(it)
    assert next(it).item() == 5                # the loader goes on after an error, as PyTorch's does


def test_worker_init_fn_error():
    def bad_init(worker_id):
        raise RuntimeError(f"init failed in {worker_id}")
    with pytest.raises(RuntimeError, match="in DataLoader worker process 0(.|\n)*init failed in 0"):
        list(DataLoader(list(range(4)), num_workers=1, worker_init_fn=bad_init))


class Dies(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 1:
            os._exit(7)
        return i


def test_dead_worker_is_named():
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly: worker 1 "
                                           r"\(pid \d+\) exited with code 7"):
        list(DataLoader(Dies(), batch_size=1, num_workers=2))
    assert time.monotonic() - start < 5
    assert _no_leftover_files()


class Slow(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        time.sleep(1.0 if i == 1 else 0)
        return i


def test_timeout():
    it = iter(DataLoader(Slow(), num_workers=1, timeout=0.3))
    assert next(it).item() == 0
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.3 seconds"):
        next(it)
    del it


class Plain(Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return P.full((2,), float(i))


def test_spawn_start_method():
    dl = DataLoader(Plain(), batch_size=2, num_workers=1, multiprocessing_context="spawn")
    assert [b[:, 0].tolist() for b in dl] == [[0.0, 1.0], [2.0, 3.0], [4.0]]
    assert _no_leftover_files()


def test_shm_encode_decode_roundtrip(tmp_path):
    obj = {"a": [P.arange(5), P.ones(2, 3).t()], "p": P.nn.Parameter(P.zeros(2)), "g": P.ones(1, requires_grad=True),
           "none": None, "e": P.empty(0)}
    path = str(tmp_path / "payload")
    out = _shm.decode(_shm.encode(obj, path))
    assert not os.path.exists(path)             # unlinked as soon as it is mapped
    assert out["a"][0].tolist() == [0, 1, 2, 3, 4] and out["a"][1].shape == (3, 2)
    assert isinstance(out["p"], P.nn.Parameter) and out["g"].requires_grad and out["none"] is None
    assert _shm.encode({"x": 1}, path)[1] is None   # nothing to share: no file


@pytest.mark.parametrize("module", ["dataset", "sampler", "_collate", "_worker", "dataloader"])
def test_docstring_examples(module):
    import doctest
    import importlib
    mod = importlib.import_module(f"pytorchlite.utils.data.{module}")
    result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_persistent_loader_recovers_after_a_worker_died():
    class DiesOnce(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            if i == 1 and not os.path.exists(marker):
                open(marker, "w").close()
                os._exit(3)
            return i
    import tempfile
    marker = os.path.join(tempfile.mkdtemp(), "died")
    dl = DataLoader(DiesOnce(), num_workers=1, persistent_workers=True)
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(dl)
    assert [int(x) for x in dl] == [0, 1]      # fresh workers for the next epoch


@pytest.mark.parametrize("has_stack", [True, False])
def test_collate_with_and_without_a_stack_operator(has_stack, monkeypatch):
    if not has_stack:
        monkeypatch.delattr(P, "stack", raising=False)
    elif not hasattr(P, "stack"):
        pytest.skip("no stack operator in this build")
    out = default_collate([P.arange(3), P.arange(3, dtype=P.int32) * 2, P.arange(6)[::2]])
    assert out.dtype == P.int64 and out.tolist() == [[0, 1, 2], [0, 2, 4], [0, 2, 4]]
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([P.zeros(2), P.zeros(2, 1)])
