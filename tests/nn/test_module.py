"""nn.Module mechanics, layers and optimizers, checked against PyTorch where installed."""

import numpy as np
import pytest

import pytorchlite as P
import pytorchlite.nn as nn
import pytorchlite.optim as optim


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(3, 2, bias=False)
        self.register_buffer("steps", P.zeros(1))
        self.register_buffer("scratch", P.zeros(1), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_registration_and_traversal():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["fc1.weight", "fc1.bias", "fc2.weight"]
    assert [n for n, _ in net.named_buffers()] == ["steps", "scratch"]
    assert [n for n, _ in net.named_children()] == ["fc1", "act", "fc2"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "act", "fc2"]
    assert list(net.state_dict()) == ["steps", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert all(p.requires_grad and p.is_leaf for p in net.parameters())


def test_assigning_a_non_parameter_to_a_parameter_slot_raises():
    net = Net()
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'bias'"):
        net.fc1.bias = P.zeros(3)
    net.fc1.bias = None
    assert net.fc1.bias is None


def test_train_eval_propagate():
    net = Net()
    net.eval()
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())


def test_load_state_dict_strict_reports():
    a, b = Net(), Net()
    b.load_state_dict(a.state_dict())
    for (_, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(pa.detach().numpy(), pb.detach().numpy())
    sd = a.state_dict()
    sd["extra"] = P.zeros(1)
    del sd["fc1.bias"]
    with pytest.raises(RuntimeError) as e:
        b.load_state_dict(sd)
    msg = str(e.value)
    assert 'Missing key(s) in state_dict: "fc1.bias"' in msg and 'Unexpected key(s) in state_dict: "extra"' in msg
    result = b.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["fc1.bias"] and result.unexpected_keys == ["extra"]


def test_repr_matches_pytorch():
    torch = pytest.importorskip("torch")
    ours = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2, bias=False), nn.Softmax(dim=1))
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2, bias=False),
                                 torch.nn.Softmax(dim=1))
    assert repr(ours) == repr(theirs)


def test_linear_default_init_bounds():
    lin = nn.Linear(100, 50)
    w = lin.weight.detach().numpy()
    bound = 1 / np.sqrt(100)
    assert w.shape == (50, 100) and np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert np.abs(lin.bias.detach().numpy()).max() <= bound


def _copy_to_torch(ours, theirs):
    import torch
    with torch.no_grad():
        for (_, po), (_, pt) in zip(ours.named_parameters(), theirs.named_parameters()):
            pt.copy_(torch.from_numpy(po.detach().numpy().copy()))


@pytest.mark.parametrize("make_opt", [
    lambda m, mod: mod.SGD(m.parameters(), lr=0.1),
    lambda m, mod: mod.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-2),
    lambda m, mod: mod.SGD(m.parameters(), lr=0.1, momentum=0.9, nesterov=True),
    lambda m, mod: mod.SGD(m.parameters(), lr=0.1, momentum=0.5, dampening=0.1, maximize=True),
    lambda m, mod: mod.Adam(m.parameters(), lr=0.01),
    lambda m, mod: mod.Adam(m.parameters(), lr=0.01, weight_decay=0.1, amsgrad=True),
    lambda m, mod: mod.AdamW(m.parameters(), lr=0.01),
], ids=["sgd", "sgd-momentum-wd", "sgd-nesterov", "sgd-dampening-maximize", "adam", "adam-wd-amsgrad", "adamw"])
def test_five_optimizer_steps_match_pytorch_float64(make_opt):
    torch = pytest.importorskip("torch")
    ours = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3)).double()
    theirs = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3)).double()
    _copy_to_torch(ours, theirs)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 5))
    y = rng.integers(0, 3, 8)
    opt_o, opt_t = make_opt(ours, optim), make_opt(theirs, torch.optim)
    for _ in range(5):
        opt_o.zero_grad()
        nn.functional.cross_entropy(ours(P.tensor(x)), P.tensor(y)).backward()
        opt_o.step()
        opt_t.zero_grad()
        torch.nn.functional.cross_entropy(theirs(torch.tensor(x)), torch.tensor(y)).backward()
        opt_t.step()
    for (n, po), (_, pt) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(po.detach().numpy(), pt.detach().numpy(), atol=1e-6, err_msg=n)


def test_cross_entropy_matches_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 5))
    y = np.array([0, 4, 2, 2, -100, 1])
    w = rng.random(5)
    for kw in ({}, {"reduction": "sum"}, {"reduction": "none"}, {"label_smoothing": 0.1}):
        for weight in (None, w):
            xo = P.tensor(x, requires_grad=True)
            xt = torch.tensor(x, requires_grad=True)
            lo = nn.functional.cross_entropy(xo, P.tensor(y), weight=None if weight is None else P.tensor(weight), **kw)
            lt = torch.nn.functional.cross_entropy(xt, torch.tensor(y),
                                                   weight=None if weight is None else torch.tensor(weight), **kw)
            np.testing.assert_allclose(lo.detach().numpy(), lt.detach().numpy(), rtol=1e-10, atol=1e-12)
            lo.sum().backward()
            lt.sum().backward()
            np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name, exc, match", [
    (1, TypeError, "module name should be a string. Got int"),
    ("a.b", KeyError, "contain .*got: a.b"),
    ("", KeyError, "be empty string"),
    ("train", KeyError, "attribute 'train' already exists"),
])
def test_add_module_rejects_bad_names_as_pytorch(name, exc, match):
    m = nn.Module()
    with pytest.raises(exc, match=match):
        m.add_module(name, nn.Identity())
    with pytest.raises(exc, match=match):
        nn.ModuleDict()[name] = nn.Identity()
    torch = pytest.importorskip("torch")
    with pytest.raises(exc, match=match):
        torch.nn.Module().add_module(name, torch.nn.Identity())


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 2, 3), (4, 4)])
def test_init_orthogonal_rows_or_columns_are_orthonormal(shape):
    w = P.empty(*shape, dtype=P.float64)
    assert nn.init.orthogonal_(w, gain=2.0) is w
    m = w.reshape(shape[0], -1).numpy() / 2.0
    gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(gram, np.eye(min(m.shape)), atol=1e-12)
    g1, g2 = P.Generator().manual_seed(3), P.Generator().manual_seed(3)
    a = nn.init.orthogonal_(P.empty(*shape), generator=g1)
    b = nn.init.orthogonal_(P.empty(*shape), generator=g2)
    assert (a == b).all().item()
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        nn.init.orthogonal_(P.empty(3))
