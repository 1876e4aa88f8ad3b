"""nn.utils: gradient clipping and parameter vectors, against PyTorch where installed."""

import math

import numpy as np
import pytest

import pytorchlite as P
import pytorchlite.nn as nn
from pytorchlite.nn.utils import clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters

GRADS = [np.array([1.0, -2.0, 3.0]), np.array([[4.0, 0.5], [-0.25, 0.0]]), np.array(-7.0)]


def _ours(grads, dtype=P.float64):
    ps = []
    for g in grads:
        p = nn.Parameter(P.zeros(g.shape, dtype=dtype))
        p.grad = P.tensor(g, dtype=dtype)
        ps.append(p)
    return ps


def _theirs(torch, grads):
    ps = []
    for g in grads:
        p = torch.nn.Parameter(torch.zeros(g.shape, dtype=torch.float64))
        p.grad = torch.tensor(g, dtype=torch.float64)
        ps.append(p)
    return ps


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, 0.5, math.inf, "inf", 0])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_pytorch(norm_type, max_norm):
    torch = pytest.importorskip("torch")
    nt = float(norm_type)
    ours, theirs = _ours(GRADS), _theirs(torch, GRADS)
    no = clip_grad_norm_(ours, max_norm, norm_type=nt)
    nt_ = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=nt)
    assert no.dtype == P.float64 and no.shape == ()
    np.testing.assert_allclose(no.item(), nt_.item(), rtol=1e-12)
    for po, pt in zip(ours, theirs):
        np.testing.assert_allclose(po.grad.numpy(), pt.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_clip_grad_norm_values_without_torch():
    ps = _ours([np.array([3.0, 4.0])])
    total = clip_grad_norm_(ps, 1.0)
    assert total.item() == 5.0
    np.testing.assert_allclose(ps[0].grad.numpy(), [3 / (5 + 1e-6), 4 / (5 + 1e-6)])
    ps = _ours([np.array([3.0, 4.0])])
    clip_grad_norm_(ps[0], 10.0)              # a single tensor; below the limit: unchanged
    assert ps[0].grad.tolist() == [3.0, 4.0]
    assert clip_grad_norm_([nn.Parameter(P.zeros(2))], 1.0).item() == 0.0   # no grads at all
    ps = _ours([np.array([1.0, -5.0])], dtype=P.float32)
    assert clip_grad_norm_(ps, 1.0, norm_type="inf").dtype == P.float32


def test_clip_grad_norm_nonfinite():
    ps = _ours([np.array([1.0, np.inf]), np.array([2.0])])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is non-finite"):
        clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    assert ps[1].grad.tolist() == [2.0]       # nothing was scaled
    ps = _ours([np.array([1.0, np.nan])])
    total = clip_grad_norm_(ps, 1.0)
    assert math.isnan(total.item()) and np.isnan(ps[0].grad.numpy()).all()


def test_clip_grad_value_():
    ps = _ours([np.array([-3.0, 0.2, 5.0]), np.array([[0.9, -0.95]])])
    assert clip_grad_value_(ps, 0.5) is None
    assert ps[0].grad.tolist() == [-0.5, 0.2, 0.5]
    assert ps[1].grad.tolist() == [[0.5, -0.5]]
    p = nn.Parameter(P.zeros(2))
    clip_grad_value_(p, 1)                     # no grad: nothing to do
    assert p.grad is None


def test_parameters_to_vector_and_back():
    m = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    vec = parameters_to_vector(m.parameters())
    expected = np.concatenate([p.detach().numpy().reshape(-1) for p in m.parameters()])
    np.testing.assert_array_equal(vec.detach().numpy(), expected)
    assert vec.shape == (11,)
    new = P.arange(11.)
    vector_to_parameters(new, m.parameters())
    params = list(m.parameters())
    assert params[0].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert params[3].tolist() == [10.0]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in params)
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        vector_to_parameters([1.0], m.parameters())


def test_parameters_to_vector_matches_pytorch():
    torch = pytest.importorskip("torch")
    arrays = [np.arange(6.0).reshape(2, 3), np.array(7.0), np.arange(3.0)[::-1].copy()]
    ours = parameters_to_vector([P.tensor(a) for a in arrays])
    theirs = torch.nn.utils.parameters_to_vector([torch.tensor(a) for a in arrays])
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("module", ["pytorchlite.nn.utils.clip_grad", "pytorchlite.nn.utils.convert_parameters"])
def test_docstring_examples(module):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(module),
                             optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("has_cat", [True, False])
def test_parameters_to_vector_with_and_without_cat(has_cat, monkeypatch):
    if not has_cat:
        monkeypatch.delattr(P, "cat", raising=False)
    elif not hasattr(P, "cat"):
        pytest.skip("no cat operator in this build")
    vec = parameters_to_vector([P.ones(2, 2), P.zeros(()), P.arange(3.)[::2]])
    assert vec.tolist() == [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 2.0]
