"""Forward-mode AD (pytorchlite.autograd.forward_ad): the dual-tensor API with PyTorch's
semantics and errors, tangents through views, indexing, in-place ops and Python
operators, and agreement with PyTorch's forward AD. Every operator's jvp formula is checked
against finite differences in test_gradcheck_ops.py::test_forward_ad."""

import numpy as np
import pytest

import pytorchlite as P
import pytorchlite.autograd.forward_ad as fwAD


def _t(values, dtype=P.float64):
    return P.tensor(values, dtype=dtype)


def test_make_unpack_and_exit_deletes_tangents():
    x, v = _t([1.0, 2.0]), _t([0.5, -1.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        primal, tangent = fwAD.unpack_dual(d)
        assert tangent is v and np.array_equal(primal.numpy(), x.numpy())
        assert primal._base is x or primal.data_ptr() == x.data_ptr()     # a view, no copy
        assert fwAD.unpack_dual(primal).tangent is None
        assert fwAD.unpack_dual(x).tangent is None        # the input itself stays plain
        y = d.sin()
        assert fwAD.unpack_dual(y).tangent is not None
    assert fwAD.unpack_dual(y).tangent is None and fwAD.unpack_dual(d).tangent is None
    assert isinstance(fwAD.unpack_dual(y), fwAD.UnpackedDualTensor)


def test_errors_match_pytorch():
    x = _t([1.0, 2.0])
    with pytest.raises(RuntimeError, match="no level exists, make sure to enter_dual_level"):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            fwAD.enter_dual_level()
        with pytest.raises(RuntimeError, match=r"different size.*Tensor is of size \[2\] while the given forward "
                                               r"gradient is of size \[3\]"):
            fwAD.make_dual(x, _t([1.0, 2.0, 3.0]))
        with pytest.raises(ValueError, match="Expected primal to be floating point"):
            fwAD.make_dual(P.tensor([1, 2]), x)
        with pytest.raises(TypeError):
            fwAD.make_dual(x, [1.0, 2.0])
    with pytest.raises(RuntimeError):
        fwAD.exit_dual_level()


def test_operator_without_forward_formula_refuses_loudly():
    with fwAD.dual_level():
        d = fwAD.make_dual(_t([1.0, 2.0]), _t([1.0, 1.0]))
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with scatter_reduce that does not "
                                                      "support it because it has not been implemented yet"):
            P.zeros(2).scatter_reduce(0, P.tensor([0, 1]), d, "prod")


def test_decorator_form():
    @fwAD.dual_level()
    def jvp_of_square(x, v):
        return fwAD.unpack_dual(fwAD.make_dual(x, v) ** 2).tangent

    np.testing.assert_allclose(jvp_of_square(_t([3.0]), _t([1.0])).numpy(), [6.0])
    assert fwAD._state.level is None


def test_views_indexing_and_python_operators():
    x, v = _t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), _t([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        cases = {
            "getitem": (d[1, ::2], v.numpy()[1, ::2]),
            "advanced": (d[P.tensor([1, 0]), 2], v.numpy()[[1, 0], 2]),
            "transpose": (d.t().reshape(-1), v.numpy().T.reshape(-1)),
            "reflected div": (2 / d, -2 * v.numpy() / x.numpy() ** 2),
            "reflected pow": (2 ** d, np.log(2) * 2 ** x.numpy() * v.numpy()),
            "matmul": (d @ d.t(), v.numpy() @ x.numpy().T + x.numpy() @ v.numpy().T),
            "sum": (d.sum(1), v.numpy().sum(1)),
            "number first": (P.add(1.0, d, alpha=3), 3 * v.numpy()),
        }
        for name, (got, want) in cases.items():
            np.testing.assert_allclose(fwAD.unpack_dual(got).tangent.numpy(), want, rtol=1e-12, err_msg=name)


def test_in_place_updates_the_tangent():
    x, v = _t([1.0, 2.0, 3.0]), _t([1.0, 1.0, 1.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(x.clone(), v.clone())
        d.mul_(d)                                      # x^2: tangent 2 x v
        np.testing.assert_allclose(fwAD.unpack_dual(d).tangent.numpy(), [2.0, 4.0, 6.0])
        plain = P.zeros(3, dtype=P.float64)
        plain.add_(fwAD.make_dual(x, v), alpha=2)      # a plain tensor becomes dual
        np.testing.assert_allclose(fwAD.unpack_dual(plain).tangent.numpy(), [2.0, 2.0, 2.0])
        w = P.zeros(3, dtype=P.float64)
        w[1:] = fwAD.make_dual(x, v)[:2] * 5           # setitem writes the value's tangent
        np.testing.assert_allclose(fwAD.unpack_dual(w).tangent.numpy(), [0.0, 5.0, 5.0])
        w.fill_(1.0)                                    # constant: zero tangent
        np.testing.assert_allclose(fwAD.unpack_dual(w).tangent.numpy(), [0.0, 0.0, 0.0])


def test_linear_algebra_tangents():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    spd = a @ a.T
    at = rng.standard_normal((3, 3))
    at_sym = at + at.T
    with fwAD.dual_level():
        A = fwAD.make_dual(_t(a), _t(at))
        S = fwAD.make_dual(_t(spd), _t(at_sym))
        inv_t = fwAD.unpack_dual(P.linalg.inv(A)).tangent.numpy()
        det_t = fwAD.unpack_dual(P.linalg.det(A)).tangent.item()
        chol_t = fwAD.unpack_dual(P.linalg.cholesky(S)).tangent.numpy()
    ainv = np.linalg.inv(a)
    np.testing.assert_allclose(inv_t, -ainv @ at @ ainv, rtol=1e-10)
    np.testing.assert_allclose(det_t, np.linalg.det(a) * np.trace(ainv @ at), rtol=1e-10)
    eps = 1e-6
    fd = (np.linalg.cholesky(spd + eps * at_sym) - np.linalg.cholesky(spd - eps * at_sym)) / (2 * eps)
    np.testing.assert_allclose(chol_t, fd, rtol=1e-5, atol=1e-8)


def test_reverse_mode_still_works_alongside():
    x = _t([1.0, 2.0]).requires_grad_()
    with fwAD.dual_level():
        d = fwAD.make_dual(x, _t([1.0, 0.0]))
        y = (d * d).sum()
        y.backward()
        assert fwAD.unpack_dual(y).tangent.item() == 2.0
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def test_matches_pytorch_on_a_small_network():
    torch = pytest.importorskip("torch")
    import torch.autograd.forward_ad as tfw
    rng = np.random.default_rng(3)
    x, v = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    w1, b1, w2 = rng.standard_normal((5, 6)), rng.standard_normal(6), rng.standard_normal((6, 3))

    def net(lib, fw, inp, tan):
        with fw.dual_level():
            d = fw.make_dual(inp, tan)
            h = lib.tanh(d @ lib.tensor(w1) + lib.tensor(b1))
            out = lib.log_softmax(h @ lib.tensor(w2), dim=1)
            return fw.unpack_dual(out).tangent.numpy()
    ours = net(P, fwAD, P.tensor(x), P.tensor(v))
    theirs = net(torch, tfw, torch.tensor(x), torch.tensor(v))
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_layer_norm_and_in_place_view_ops_match_pytorch():
    """layer_norm's tangent (input, weight and bias all dual) and the tangent of a tensor
    reshaped in place by squeeze_ / t_ / unsqueeze_ / transpose_, against torch's."""
    torch = pytest.importorskip("torch")
    tfw = torch.autograd.forward_ad
    rng = np.random.default_rng(3)
    x, tx = rng.standard_normal((3, 4, 5)), rng.standard_normal((3, 4, 5))
    w, tw, b, tb = (rng.standard_normal(5) for _ in range(4))
    y, ty = rng.standard_normal((2, 1, 3)), rng.standard_normal((2, 1, 3))
    out = []
    for m, f in ((P, fwAD), (torch, tfw)):
        with f.dual_level():
            d = m.nn.functional.layer_norm(f.make_dual(m.tensor(x), m.tensor(tx)), [5],
                                           f.make_dual(m.tensor(w), m.tensor(tw)),
                                           f.make_dual(m.tensor(b), m.tensor(tb)))
            v = f.make_dual(m.tensor(y), m.tensor(ty)) * 1
            v.squeeze_(1)
            v.t_()
            v.unsqueeze_(0)
            v.transpose_(0, 2)
            out.append((f.unpack_dual(d).tangent.numpy(), f.unpack_dual(v).tangent.numpy()))
    for ours, theirs in zip(*out):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_cumprod_tangent_is_exact_through_zeros():
    """cumprod's tangent where the input has one zero, two zeros or none in a row, against
    torch's (a dx / x formula would give nan or drop the term of the zero)."""
    torch = pytest.importorskip("torch")
    tfw = torch.autograd.forward_ad
    rng = np.random.default_rng(11)
    x = rng.standard_normal((4, 6))
    x[1, 2] = 0
    x[2, 0] = x[2, 4] = 0
    x[3, 5] = 0
    t = rng.standard_normal((4, 6))
    out = []
    for m, f in ((P, fwAD), (torch, tfw)):
        for dim in (1, 0):
            with f.dual_level():
                out.append(f.unpack_dual(f.make_dual(m.tensor(x), m.tensor(t)).cumprod(dim)).tangent.numpy())
    for ours, theirs in zip(out[:2], out[2:]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)
