"""User attributes on tensors and Parameters (`t.tag = "x"`, `p.my_flag = True`), as torch
allows them: where they are kept (the object itself, pickle, copy, deepcopy of a tensor,
pytorchlite.save/load, Module.to/double) and where they are not (detach, views, clone, op
results, Parameter(t), deepcopy of a Parameter), each checked against torch when it is
installed."""

import copy
import io
import pickle

import pytest

import pytorchlite as P
import pytorchlite.nn as nn


def _lib(name):
    """pytorchlite, or torch (skipping the test when torch is not installed)."""
    return P if name == "ptl" else pytest.importorskip("torch")


LIBS = ["ptl", "torch"]


@pytest.mark.parametrize("lib", LIBS)
def test_set_get_delete_and_vars(lib):
    L = _lib(lib)
    t = L.ones(3)
    assert t.__dict__ == {} and vars(t) == {}
    t.tag = "x"
    t.weight_decay = 0.0
    assert t.tag == "x" and vars(t) == {"tag": "x", "weight_decay": 0.0}
    t.__dict__["direct"] = 1
    assert t.direct == 1
    del t.tag
    assert "tag" not in t.__dict__
    with pytest.raises(AttributeError, match="'Tensor' object has no attribute 'tag'"):
        t.tag
    with pytest.raises(AttributeError):
        del t.nonexistent
    # the attribute does not change the data or the tensor's behaviour
    assert (t + 1).tolist() == [2.0, 2.0, 2.0]
    t.add_(1)
    assert t.direct == 1 and t.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("lib", LIBS)
def test_builtin_attributes_stay_read_only(lib):
    L = _lib(lib)
    t = L.ones(2)
    with pytest.raises(AttributeError):
        t.shape = (1,)
    with pytest.raises(AttributeError):
        t.dtype = L.float64
    # a user attribute never shadows the real metadata
    t.__dict__["shape"] = "fake"
    assert tuple(t.shape) == (2,)


@pytest.mark.parametrize("lib", LIBS)
def test_attributes_belong_to_the_object_not_to_derived_tensors(lib):
    L = _lib(lib)
    t = L.ones(4, requires_grad=True)
    t.tag = "x"
    derived = [t.detach(), t.clone(), t.view(2, 2), t[1:], t.data, t * 2, t.sum(),
               t.detach().add_(0), nn.Parameter(t.detach()) if lib == "ptl" else L.nn.Parameter(t.detach())]
    for d in derived:
        assert d.__dict__ == {}, type(d)
    assert L.ones(2).__dict__ is not L.ones(2).__dict__


@pytest.mark.parametrize("lib", LIBS)
def test_pickle_copy_and_deepcopy_keep_attributes(lib):
    L = _lib(lib)
    t = L.arange(4.0)
    t.tag = "x"
    t.meta = {"lr": [1, 2]}
    for c in (pickle.loads(pickle.dumps(t)), copy.copy(t), copy.deepcopy(t)):
        assert c is not t and c.tolist() == t.tolist()
        assert c.__dict__ == {"tag": "x", "meta": {"lr": [1, 2]}}
    assert copy.copy(t).meta is t.meta                  # shallow
    d = copy.deepcopy(t)
    assert d.meta is not t.meta and d.meta == t.meta    # deep
    d.tag = "y"
    assert t.tag == "x"


@pytest.mark.parametrize("lib", LIBS)
def test_deepcopy_of_a_leaf_copies_grad_and_requires_grad(lib):
    L = _lib(lib)
    t = L.ones(2, requires_grad=True)
    (t * 3).sum().backward()
    t.grad.gtag = 1
    t.tag = "leaf"
    c = copy.deepcopy(t)
    assert c.requires_grad and c.is_leaf and c.grad_fn is None
    assert c.tag == "leaf"
    assert c.grad.tolist() == [3.0, 3.0] and c.grad.gtag == 1
    assert c.grad.data_ptr() != t.grad.data_ptr() and c.data_ptr() != t.data_ptr()


@pytest.mark.parametrize("lib", LIBS)
def test_deepcopy_of_a_non_leaf_is_an_error(lib):
    L = _lib(lib)
    y = L.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=r"Only Tensors created explicitly by the user \(graph leaves\) support "
                                           r"the deepcopy protocol at the moment"):
        copy.deepcopy(y)


@pytest.mark.parametrize("lib", LIBS)
def test_parameter_attributes(lib):
    L = _lib(lib)
    t = L.ones(2)
    t.tag = "data"
    p = L.nn.Parameter(t)
    assert p.__dict__ == {}                             # Parameter(t) does not take t's attributes
    p.my_flag = True
    assert p.my_flag is True and t.__dict__ == {"tag": "data"}
    r = pickle.loads(pickle.dumps(p))
    assert isinstance(r, L.nn.Parameter) and r.requires_grad and r.__dict__ == {"my_flag": True}
    # torch.nn.Parameter.__deepcopy__ builds a new Parameter from the cloned data only
    d = copy.deepcopy(p)
    assert isinstance(d, L.nn.Parameter) and d.requires_grad and d.__dict__ == {}


@pytest.mark.parametrize("lib", LIBS)
def test_module_conversion_keeps_parameter_attributes(lib):
    L = _lib(lib)
    m = L.nn.Linear(2, 2)
    m.weight.no_decay = True
    m.double()
    assert m.weight.dtype == L.float64 and m.weight.no_decay is True
    assert m.bias.__dict__ == {}


def test_save_and_load_keep_attributes(tmp_path):
    t = P.arange(3.0)
    t.tag = "x"
    t.aux = P.zeros(2)
    t.nested = {"a": [1, 2.5, None]}
    p = nn.Parameter(P.ones(2))
    p.my_flag = True
    plain = P.ones(1)
    for f in (str(tmp_path / "a.safetensors"), io.BytesIO()):
        P.save({"t": t, "p": p, "plain": plain}, f)
        if hasattr(f, "seek"):
            f.seek(0)
        out = P.load(f)
        assert out["t"].tolist() == [0.0, 1.0, 2.0]
        assert out["t"].tag == "x" and out["t"].nested == {"a": [1, 2.5, None]}
        assert out["t"].aux.tolist() == [0.0, 0.0]
        assert isinstance(out["p"], nn.Parameter) and out["p"].requires_grad
        assert out["p"].__dict__ == {"my_flag": True}
        assert out["plain"].__dict__ == {}


def test_save_without_attributes_writes_format_1(tmp_path):
    # files without attributes stay readable by pytorchlite versions that predate them
    import json
    path = tmp_path / "plain.safetensors"
    P.save({"w": P.ones(2)}, str(path))
    raw = path.read_bytes()
    header = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])
    assert json.loads(header["__metadata__"]["pytorchlite"])["version"] == 1
    t = P.ones(2)
    t.tag = 1
    P.save(t, str(path))
    raw = path.read_bytes()
    header = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])
    assert json.loads(header["__metadata__"]["pytorchlite"])["version"] == 2


def test_save_rejects_an_attribute_it_cannot_write():
    t = P.ones(2)
    t.fn = print
    with pytest.raises(TypeError, match=r"cannot save an object of type builtin_function_or_method at "
                                        r"w\.__dict__\.fn"):
        P.save({"w": t}, io.BytesIO())


def test_torch_save_load_keeps_attributes_too():
    # the behaviour pytorchlite.save mirrors
    torch = pytest.importorskip("torch")
    t = torch.ones(2)
    t.tag = "x"
    buf = io.BytesIO()
    torch.save(t, buf)
    buf.seek(0)
    assert torch.load(buf, weights_only=False).__dict__ == {"tag": "x"}



@pytest.mark.parametrize("lib", LIBS)
def test_sharing_with_another_process_drops_attributes(lib):
    # multiprocessing's pickler shares the memory and rebuilds the tensor from its
    # metadata only, in torch (torch.multiprocessing.reductions) as here
    from multiprocessing.reduction import ForkingPickler
    L = _lib(lib)
    if lib == "torch":
        import torch.multiprocessing  # noqa: F401  (registers torch's reducers)
    t = L.ones(2)
    t.tag = "x"
    r = pickle.loads(ForkingPickler.dumps(t))
    assert r.tolist() == [1.0, 1.0] and r.__dict__ == {}


@pytest.mark.parametrize("lib", LIBS)
def test_shallow_copy_shares_memory_and_attributes(lib):
    L = _lib(lib)
    a = L.ones(3, requires_grad=True)
    a.tag = [1]
    (a * 2).sum().backward()
    for src in (a, (a * 2), L.arange(6.0)[1:4]):
        b = copy.copy(src)
        assert type(b) is type(src) and b is not src
        assert b.data_ptr() == src.data_ptr() and b.shape == src.shape and b.stride() == src.stride()
        assert b.requires_grad == src.requires_grad and b.is_leaf and b.grad is None
    b = copy.copy(a)
    assert b.tag is a.tag
    with L.no_grad():
        b.add_(1)
    assert a.tolist() == [2.0, 2.0, 2.0] and a._version == 0    # shared memory, own version counter
    p = L.nn.Parameter(L.zeros(2))
    p.flag = True
    q = copy.copy(p)
    assert isinstance(q, L.nn.Parameter) and q.requires_grad and q.flag is True
    assert q.data_ptr() == p.data_ptr()
