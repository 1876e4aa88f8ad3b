"""pytorchlite.save / load (safetensors checkpoints) and tensor pickling."""

import collections
import copy
import io
import math
import os
import pickle
import stat

import numpy as np
import pytest

import pytorchlite as P
import pytorchlite.nn as nn

safetensors = pytest.importorskip("safetensors")

DTYPES = [P.bool, P.uint8, P.int8, P.int16, P.int32, P.int64, P.float16, P.bfloat16, P.float32, P.float64]


def _roundtrip(obj, **load_kw):
    buf = io.BytesIO()
    P.save(obj, buf)
    buf.seek(0)
    return P.load(buf, **load_kw)


def _same(a, b):
    assert type(a) is type(b) or (isinstance(a, P.Tensor) and isinstance(b, P.Tensor)), (type(a), type(b))
    if isinstance(a, P.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
        assert a.requires_grad == b.requires_grad
        assert a.detach().float().tolist() == b.detach().float().tolist() or (
            np.array_equal(np.asarray(a.detach().float()), np.asarray(b.detach().float()), equal_nan=True))
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    else:
        assert a == b


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (1,), (3, 4), (2, 0, 3)])
def test_roundtrip_dtypes_and_shapes(dtype, shape):
    x = P.tensor(np.random.default_rng(0).integers(0, 2, size=shape)).to(dtype)
    _same(x, _roundtrip(x))
    _same({"x": x}, _roundtrip({"x": x}))


def test_roundtrip_non_contiguous_views_become_independent():
    base = P.arange(12.).reshape(3, 4)
    obj = {"t": base.t(), "step": base[:, ::2], "row": base[1], "base": base}
    out = _roundtrip(obj)
    _same(obj, out)
    out["base"][1, 0] = 100.0      # the saved views do not share memory after loading
    assert out["row"][0].item() == 4.0


def test_roundtrip_nested_structures_and_plain_values():
    obj = {
        "model": collections.OrderedDict(w=P.ones(2, 3), b=P.zeros(3)),
        "opt": {"state": {0: {"step": P.tensor(3.0), "exp_avg": P.full((2,), 0.5)}},
                "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1], "nesterov": False,
                                  "name": None}]},
        "epoch": 7, "big": 2 ** 70, "loss": 0.123456789012345678, "nan": float("nan"), "inf": -math.inf,
        "tag": "run-1", "raw": b"\x00\xff", "dtype": P.bfloat16, "device": P.device("cpu"),
        "size": P.Size([2, 3]), "empty": [], "t": (), 1.5: "float key", None: "none key", True: 1,
    }
    out = _roundtrip(obj)
    _same(obj, out)
    assert isinstance(out["model"], collections.OrderedDict)
    assert isinstance(out["opt"]["param_groups"][0]["betas"], tuple)
    assert out["dtype"] is P.bfloat16


def test_parameters_and_requires_grad_survive():
    p = nn.Parameter(P.ones(2))
    q = P.ones(3, requires_grad=True)
    out = _roundtrip({"p": p, "q": q, "frozen": nn.Parameter(P.ones(1), requires_grad=False)})
    assert isinstance(out["p"], nn.Parameter) and out["p"].requires_grad
    assert not isinstance(out["q"], nn.Parameter) and out["q"].requires_grad and out["q"].is_leaf
    assert isinstance(out["frozen"], nn.Parameter) and not out["frozen"].requires_grad


def test_module_and_optimizer_state_dict_roundtrip(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    opt = P.optim.Adam(model.parameters(), lr=0.01)
    model(P.randn(5, 3)).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.safetensors"
    P.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
    ck = P.load(path)
    model2 = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    model2.load_state_dict(ck["model"])
    opt2 = P.optim.Adam(model2.parameters(), lr=0.5)
    opt2.load_state_dict(ck["opt"])
    assert opt2.param_groups[0]["lr"] == 0.01
    for a, b in zip(model.parameters(), model2.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    x = P.randn(2, 3)
    for m, o in ((model, opt), (model2, opt2)):
        o.zero_grad()
        m(x).sum().backward()
        o.step()
    for a, b in zip(model.parameters(), model2.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_state_dict_keys_are_the_safetensors_names(tmp_path):
    sn = pytest.importorskip("safetensors.numpy")
    sd = nn.Linear(2, 3).state_dict()
    path = tmp_path / "lin.safetensors"
    P.save(sd, path)
    arrays = sn.load_file(str(path))
    assert sorted(arrays) == sorted(sd)
    for k, v in sd.items():
        np.testing.assert_array_equal(arrays[k], v.detach().numpy())
    nested = tmp_path / "nested.safetensors"
    P.save({"enc": {"layers": [{"w": P.ones(1)}, {"w": P.zeros(1)}]}, "x": P.arange(2)}, nested)
    assert sorted(sn.load_file(str(nested))) == ["enc.layers.0.w", "enc.layers.1.w", "x"]


def test_colliding_dotted_keys_are_both_kept():
    obj = {"a.b": P.ones(1), "a": {"b": P.zeros(1)}}
    _same(obj, _roundtrip(obj))


def test_numpy_reads_ours_and_we_read_numpys(tmp_path):
    sn = pytest.importorskip("safetensors.numpy")
    rng = np.random.default_rng(1)
    ours = {"f32": P.tensor(rng.standard_normal((3, 2)).astype(np.float32)), "i64": P.arange(5),
            "b": P.tensor([True, False]), "f16": P.tensor([1.5, -2.0], dtype=P.float16), "s": P.tensor(2.5)}
    path = tmp_path / "ours.safetensors"
    P.save(ours, path)
    back = sn.load_file(str(path))
    for k, v in ours.items():
        assert back[k].dtype == v.numpy().dtype
        np.testing.assert_array_equal(back[k], v.numpy())
    theirs = {"a": rng.standard_normal((2, 3)), "u8": np.arange(4, dtype=np.uint8), "e": np.zeros((0, 2), np.int32)}
    path2 = tmp_path / "theirs.safetensors"
    sn.save_file(theirs, str(path2))
    got = P.load(path2)
    assert sorted(got) == sorted(theirs)
    for k, v in theirs.items():
        assert got[k].numpy().dtype == v.dtype and got[k].shape == v.shape
        np.testing.assert_array_equal(got[k].numpy(), v)


def test_torch_reads_ours_and_we_read_torchs(tmp_path):
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")
    ours = {"w": P.randn(3, 4, dtype=P.float64), "bf": P.tensor([1.0, 2.5, -3.0], dtype=P.bfloat16),
            "i": P.arange(6, dtype=P.int32).reshape(2, 3), "v": P.arange(6.).reshape(2, 3).t()}
    path = tmp_path / "ours.safetensors"
    P.save(ours, path)
    back = st.load_file(str(path))
    for k, v in ours.items():
        assert str(back[k].dtype) == "torch." + v.dtype.name
        assert back[k].float().tolist() == v.float().tolist()
    theirs = {"w": torch.randn(2, 2, dtype=torch.float64), "bf": torch.tensor([0.5, -1.0], dtype=torch.bfloat16),
              "h": torch.tensor([1.0], dtype=torch.float16), "b": torch.tensor([True]),
              "t": torch.arange(6.).reshape(2, 3).t().contiguous()}
    path2 = tmp_path / "theirs.safetensors"
    st.save_file(theirs, str(path2))
    got = P.load(path2)
    for k, v in theirs.items():
        assert got[k].dtype.name == str(v.dtype).replace("torch.", "")
        assert got[k].float().tolist() == v.float().tolist()


def test_truncated_and_corrupt_files_raise_clearly(tmp_path):
    path = tmp_path / "ok.safetensors"
    P.save({"w": P.randn(10, 10), "meta": {"epoch": 3}}, path)
    data = path.read_bytes()
    cases = {
        "empty": b"",
        "short": data[:5],
        "header cut": data[:40],
        "data cut": data[:-7],
        "garbage header": (8).to_bytes(8, "little") + b"notjson!" + data[16:],
        "huge header length": (10 ** 12).to_bytes(8, "little") + data[8:],
    }
    for name, blob in cases.items():
        bad = tmp_path / f"bad_{name.replace(' ', '_')}.safetensors"
        bad.write_bytes(blob)
        with pytest.raises(RuntimeError, match="not a valid pytorchlite/safetensors checkpoint"):
            P.load(bad)
    with pytest.raises(FileNotFoundError):
        P.load(tmp_path / "missing.safetensors")


def _blob(metadata, tensors):
    """A safetensors file built by hand from the format's description: 8-byte little-endian
    header length, the JSON header, then the data."""
    import json
    header, data = {"__metadata__": metadata}, b""
    for name, arr in tensors.items():
        header[name] = {"dtype": {"float32": "F32", "int64": "I64"}[arr.dtype.name], "shape": list(arr.shape),
                        "data_offsets": [len(data), len(data) + arr.nbytes]}
        data += arr.tobytes()
    h = json.dumps(header).encode()
    return len(h).to_bytes(8, "little") + h + data


def test_hand_built_file_loads():
    blob = _blob({"format": "pt"}, {"w": np.arange(4, dtype=np.float32).reshape(2, 2), "i": np.array([7])})
    out = P.load(io.BytesIO(blob))
    assert out["w"].tolist() == [[0.0, 1.0], [2.0, 3.0]] and out["i"].tolist() == [7] and out["i"].dtype == P.int64


def test_corrupt_pytorchlite_metadata_raises():
    x = {"x": np.ones(2, dtype=np.float32)}
    for meta in ('{"version": 1, "tree": ["tensor", "missing", false, false, "cpu"]}', "{not json",
                 '{"version": 1, "tree": ["what", 1]}', '{"version": 1, "tree": []}', '[1, 2]'):
        with pytest.raises(RuntimeError, match="not a valid pytorchlite/safetensors checkpoint"):
            P.load(io.BytesIO(_blob({"pytorchlite": meta}, x)))
    with pytest.raises(RuntimeError, match="newer pytorchlite"):
        P.load(io.BytesIO(_blob({"pytorchlite": '{"version": 99, "tree": ["none"]}'}, x)))


def test_save_is_atomic_and_leaves_no_temporary_files(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.safetensors"
    P.save({"w": P.ones(3)}, path)
    before = path.read_bytes()

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(safetensors, "serialize_file", boom)
    with pytest.raises(OSError, match="disk full"):
        P.save({"w": P.zeros(3)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before            # the old checkpoint is intact
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]
    P.save({"w": P.zeros(3)}, str(path))
    assert P.load(path)["w"].tolist() == [0.0, 0.0, 0.0]
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]
    mode = stat.S_IMODE(os.stat(path).st_mode)
    assert mode & 0o644 == 0o644                 # not mkstemp's 0600


def test_unsupported_values_raise_type_error():
    class Thing:
        pass
    Point = collections.namedtuple("Point", "x y")
    for obj, what in ((Thing(), "Thing"), ({"a": [1, Thing()]}, "a.1"), ({(1, 2): 3}, "dict keys"),
                      (Point(1, 2), "named tuples")):
        with pytest.raises(TypeError, match=what):
            P.save(obj, io.BytesIO())


def test_map_location_and_weights_only():
    x = P.arange(3.)
    assert _roundtrip(x, map_location="cpu").tolist() == [0.0, 1.0, 2.0]
    assert _roundtrip(x, map_location=P.device("cpu"), weights_only=False).tolist() == [0.0, 1.0, 2.0]
    assert _roundtrip(x, map_location={"cpu": "cpu"}).tolist() == [0.0, 1.0, 2.0]
    seen = []
    out = _roundtrip({"a": x}, map_location=lambda t, loc: seen.append(loc) or t * 2)
    assert seen == ["cpu"] and out["a"].tolist() == [0.0, 2.0, 4.0]
    if not P.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA"):
            _roundtrip(x, map_location="cuda")


def test_single_tensor_and_file_objects(tmp_path):
    x = P.randn(4, dtype=P.float64)
    with open(tmp_path / "t.safetensors", "wb") as fh:
        P.save(x, fh)
    with open(tmp_path / "t.safetensors", "rb") as fh:
        y = P.load(fh)
    np.testing.assert_array_equal(x.numpy(), y.numpy())
    y[0] = 5.0                                   # a loaded tensor is writable
    assert y[0].item() == 5.0


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_pickle_and_deepcopy_tensors(dtype):
    x = P.arange(6).reshape(2, 3).to(dtype)
    for t in (x, x.t(), x[:, ::2], x[0, 0]):
        for y in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
            assert y.dtype == t.dtype and y.shape == t.shape
            assert y.float().tolist() == t.float().tolist()
    p = copy.deepcopy(nn.Parameter(P.ones(2)))
    assert isinstance(p, nn.Parameter) and p.requires_grad
    r = pickle.loads(pickle.dumps(P.ones(2, requires_grad=True)))
    assert r.requires_grad and r.is_leaf


def test_docstring_examples():
    import doctest
    import pytorchlite.serialization as mod
    result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
