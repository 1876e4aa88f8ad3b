"""pytorchlite.distributions against torch.distributions: log_prob, entropy, moments,
cdf/icdf, shapes and expand on the same parameters (float64); sample moments with fixed
seeds (loosely); reparameterized gradients; kl_divergence; transforms; and PyTorch's
validation errors, message for message."""

import math

import numpy as np
import pytest

import pytorchlite as P
from pytorchlite import distributions as D

torch = pytest.importorskip("torch")
TD = torch.distributions


def _pair(values):
    """The same float64 data as a pytorchlite and a torch tensor."""
    a = np.asarray(values, dtype=np.float64)
    return P.tensor(a, dtype=P.float64), torch.tensor(a, dtype=torch.float64)


def _close(ours, theirs, rtol=1e-10, atol=1e-12, what=""):
    assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: shape {tuple(ours.shape)} vs {tuple(theirs.shape)}"
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol,
                               equal_nan=True, err_msg=what)


# name -> (constructor args as lists, values to score, the methods beyond log_prob/entropy/mean/variance)
CASES = {
    "Normal": (lambda m: (m([0.0, 1.0, -2.0]), m([1.0, 0.5, 3.0])), [[0.3, -1.0, 4.0]], ("cdf", "icdf", "mode")),
    "Uniform": (lambda m: (m([0.0, -1.0]), m([1.0, 3.0])), [[0.5, 2.5]], ("cdf", "icdf")),
    "Exponential": (lambda m: (m([0.5, 2.0]),), [[0.3, 1.7]], ("cdf", "icdf", "mode")),
    "Laplace": (lambda m: (m([0.0, 1.0]), m([1.0, 2.0])), [[0.3, -1.7]], ("cdf", "icdf", "mode")),
    "Gamma": (lambda m: (m([0.5, 2.0, 7.0]), m([1.0, 3.0, 0.5])), [[0.3, 1.7, 12.0]], ("cdf", "mode")),
    "Beta": (lambda m: (m([0.5, 2.0]), m([3.0, 2.0])), [[0.3, 0.9]], ("mode",)),
    "LogNormal": (lambda m: (m([0.0, 1.0]), m([1.0, 0.5])), [[0.3, 4.0]], ("cdf", "icdf", "mode")),
    "Poisson": (lambda m: (m([0.5, 4.0]),), [[0.0, 3.0]], ("mode",)),
    "Bernoulli": (lambda m: (m([0.2, 0.9]),), [[0.0, 1.0]], ("mode", "enumerate_support")),
    "Categorical": (lambda m: (m([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]]),), [[2.0, 0.0]], ("mode", "enumerate_support")),
    "OneHotCategorical": (lambda m: (m([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]]),), [[[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]],
                          ("mode", "enumerate_support")),
    "Dirichlet": (lambda m: (m([[0.5, 2.0, 3.0], [1.0, 1.0, 4.0]]),), [[[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]]], ("mode",)),
    "Cauchy": (lambda m: (m([0.0, 1.0]), m([1.0, 2.0])), [[0.3, -1.7]], ("cdf", "icdf", "mode")),
    "HalfNormal": (lambda m: (m([1.0, 2.0]),), [[0.3, 1.7]], ("cdf", "icdf", "mode")),
    "HalfCauchy": (lambda m: (m([1.0, 2.0]),), [[0.3, 1.7]], ("cdf", "icdf", "mode")),
    "Chi2": (lambda m: (m([1.0, 4.0]),), [[0.3, 1.7]], ("cdf", "mode")),
    "Geometric": (lambda m: (m([0.2, 0.9]),), [[0.0, 3.0]], ("mode",)),
    "Gumbel": (lambda m: (m([0.0, 1.0]), m([1.0, 2.0])), [[0.3, -1.7]], ("cdf", "icdf", "mode")),
    "Pareto": (lambda m: (m([1.0, 2.0]), m([0.5, 3.0])), [[1.3, 2.7]], ("cdf", "icdf", "mode")),
    "Weibull": (lambda m: (m([1.0, 2.0]), m([0.5, 3.0])), [[1.3, 2.7]], ("cdf", "icdf", "mode")),
    "StudentT": (lambda m: (m([0.5, 1.5, 5.0]), m([0.0, 1.0, -1.0]), m([1.0, 2.0, 0.5])), [[0.3, -1.7, 2.0]],
                 ("mode",)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_torch(name):
    make, values, extra = CASES[name]
    ours = getattr(D, name)(*make(lambda v: _pair(v)[0]))
    theirs = getattr(TD, name)(*make(lambda v: _pair(v)[1]))
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    for v in values:
        a, b = _pair(v)
        _close(ours.log_prob(a), theirs.log_prob(b), what=f"{name}.log_prob")
        if "cdf" in extra:
            _close(ours.cdf(a), theirs.cdf(b), what=f"{name}.cdf")
    if "icdf" in extra:
        a, b = _pair(np.linspace(0.1, 0.8, ours.batch_shape[0]))
        _close(ours.icdf(a), theirs.icdf(b), what=f"{name}.icdf")
    if name != "Poisson":
        _close(ours.entropy(), theirs.entropy(), what=f"{name}.entropy")
    for prop in ("mean", "variance", "stddev") + tuple(e for e in extra if e == "mode"):
        _close(getattr(ours, prop), getattr(theirs, prop), what=f"{name}.{prop}")
    if "enumerate_support" in extra:
        _close(ours.enumerate_support(), theirs.enumerate_support(), what=f"{name}.enumerate_support")
    # expand keeps the values, broadcast over the new leading dim
    big = ours.expand((4,) + tuple(ours.batch_shape))
    assert tuple(big.batch_shape) == (4,) + tuple(ours.batch_shape)
    _close(big.mean[0], theirs.mean, what=f"{name}.expand")
    assert tuple(ours.sample((5,)).shape) == (5,) + tuple(ours.batch_shape) + tuple(ours.event_shape)


def test_more_distributions_match_torch():
    loc, tloc = _pair([[0.0, 1.0], [2.0, -1.0]])
    cov, tcov = _pair([[2.0, 0.3], [0.3, 1.0]])
    v, tv = _pair([[0.5, 0.5], [1.0, 0.0]])
    for kw in ("covariance_matrix", "precision_matrix", "scale_tril"):
        c, tc = (cov, tcov) if kw != "scale_tril" else (P.linalg.cholesky(cov), torch.linalg.cholesky(tcov))
        ours, theirs = D.MultivariateNormal(loc, **{kw: c}), TD.MultivariateNormal(tloc, **{kw: tc})
        _close(ours.log_prob(v), theirs.log_prob(tv), what=f"MVN({kw}).log_prob")
        _close(ours.entropy(), theirs.entropy(), what="MVN.entropy")
        _close(ours.variance, theirs.variance, what="MVN.variance")
        _close(ours.covariance_matrix, theirs.covariance_matrix, what="MVN.covariance_matrix")
        _close(ours.precision_matrix, theirs.precision_matrix, what="MVN.precision_matrix")
    counts, tcounts = _pair([[1.0, 0.0, 3.0], [2.0, 2.0, 0.0]])
    p, tp = _pair([0.2, 0.3, 0.5])
    _close(D.Multinomial(4, p).log_prob(counts), TD.Multinomial(4, tp).log_prob(tcounts), what="Multinomial")
    _close(D.Multinomial(4, logits=p).mean, TD.Multinomial(4, logits=tp).mean, what="Multinomial.mean")
    temp, ttemp = _pair(0.7)
    probs, tprobs = _pair([0.2, 0.6])
    x, tx = _pair([0.3, 0.9])
    _close(D.RelaxedBernoulli(temp, probs=probs).log_prob(x), TD.RelaxedBernoulli(ttemp, probs=tprobs).log_prob(tx),
           what="RelaxedBernoulli")
    base, tbase = D.Normal(loc, P.ones_like(loc)), TD.Normal(tloc, torch.ones_like(tloc))
    ind, tind = D.Independent(base, 1), TD.Independent(tbase, 1)
    assert tuple(ind.batch_shape) == (2,) and tuple(ind.event_shape) == (2,)
    _close(ind.log_prob(v), tind.log_prob(tv), what="Independent.log_prob")
    _close(ind.entropy(), tind.entropy(), what="Independent.entropy")
    lp, tlp = _pair([0.4, 2.0])
    td = D.TransformedDistribution(D.Normal(P.zeros(2, dtype=P.float64), P.ones(2, dtype=P.float64)),
                                   [D.AffineTransform(1.0, 2.0), D.ExpTransform()])
    ttd = TD.TransformedDistribution(TD.Normal(torch.zeros(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64)),
                                     [TD.AffineTransform(1.0, 2.0), TD.ExpTransform()])
    _close(td.log_prob(lp), ttd.log_prob(tlp), what="TransformedDistribution.log_prob")
    _close(td.cdf(lp), ttd.cdf(tlp), what="TransformedDistribution.cdf")


def test_transforms_match_torch():
    x, tx = _pair([-1.5, 0.2, 2.0])
    for name, args in [("ExpTransform", ()), ("SigmoidTransform", ()), ("TanhTransform", ()),
                       ("AffineTransform", (0.5, -2.0)), ("AbsTransform", ())]:
        t, tt = getattr(D, name)(*args), getattr(TD, name)(*args)
        y, ty = t(x), tt(tx)
        _close(y, ty, what=name)
        _close(t.inv(y), tt.inv(ty), rtol=1e-9, what=name + ".inv")
        if name != "AbsTransform":
            _close(t.log_abs_det_jacobian(x, y), tt.log_abs_det_jacobian(tx, ty), what=name + ".log_abs_det_jacobian")
            assert t.sign == tt.sign and t.bijective == tt.bijective
    pos, tpos = _pair([0.5, 2.0])
    t, tt = D.PowerTransform(2.0), TD.PowerTransform(torch.tensor(2.0))
    _close(t.log_abs_det_jacobian(pos, t(pos)), tt.log_abs_det_jacobian(tpos, tt(tpos)), what="PowerTransform")
    c = D.ComposeTransform([D.AffineTransform(1.0, 3.0), D.ExpTransform()])
    tc = TD.ComposeTransform([TD.AffineTransform(1.0, 3.0), TD.ExpTransform()])
    _close(c(x), tc(tx), what="Compose")
    _close(c.inv(c(x)), x, what="Compose.inv")
    _close(c.log_abs_det_jacobian(x, c(x)), tc.log_abs_det_jacobian(tx, tc(tx)), what="Compose.log_abs_det_jacobian")
    assert repr(D.constraints.positive) == repr(TD.constraints.positive)
    assert repr(D.constraints.real_vector) == repr(TD.constraints.real_vector)
    assert repr(D.constraints.integer_interval(0, 3)) == repr(TD.constraints.integer_interval(0, 3))


KL_PAIRS = [
    ("Normal", ([0.0, 1.0], [1.0, 2.0]), ([0.5, -1.0], [2.0, 0.5])),
    ("Exponential", ([0.5, 2.0],), ([1.0, 1.5],)),
    ("Laplace", ([0.0, 1.0], [1.0, 2.0]), ([0.5, 0.0], [2.0, 1.0])),
    ("Gamma", ([0.5, 2.0], [1.0, 3.0]), ([1.5, 1.0], [2.0, 1.0])),
    ("Beta", ([0.5, 2.0], [1.0, 3.0]), ([1.5, 1.0], [2.0, 1.0])),
    ("Poisson", ([0.5, 2.0],), ([1.5, 1.0],)),
    ("Bernoulli", ([0.2, 0.9],), ([0.5, 0.3],)),
    ("Categorical", ([[0.2, 0.8], [0.5, 0.5]],), ([[0.6, 0.4], [0.1, 0.9]],)),
    ("Dirichlet", ([[0.5, 2.0], [1.0, 3.0]],), ([[1.5, 1.0], [2.0, 2.0]],)),
    ("Uniform", ([0.0, 0.0], [1.0, 1.0]), ([-1.0, 0.5], [2.0, 3.0])),
]


@pytest.mark.parametrize("name, p, q", KL_PAIRS, ids=[k[0] for k in KL_PAIRS])
def test_kl_divergence_matches_torch(name, p, q):
    ours = D.kl_divergence(getattr(D, name)(*[_pair(a)[0] for a in p]), getattr(D, name)(*[_pair(a)[0] for a in q]))
    theirs = TD.kl_divergence(getattr(TD, name)(*[_pair(a)[1] for a in p]),
                              getattr(TD, name)(*[_pair(a)[1] for a in q]))
    _close(ours, theirs, what=f"KL {name}")


def test_kl_multivariate_normal_and_register_kl():
    a, ta = _pair([[2.0, 0.3], [0.3, 1.0]])
    b, tb = _pair([[1.0, -0.2], [-0.2, 3.0]])
    m, tm = _pair([0.5, -1.0])
    ours = D.kl_divergence(D.MultivariateNormal(m, a), D.MultivariateNormal(m * 0, b))
    theirs = TD.kl_divergence(TD.MultivariateNormal(tm, ta), TD.MultivariateNormal(tm * 0, tb))
    _close(ours, theirs, what="KL MVN")
    with pytest.raises(NotImplementedError, match="No KL"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Gamma(1.0, 1.0))

    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return P.tensor(42.0)

    assert D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 42.0   # the most specific pair
    assert D.kl_divergence(D.Normal(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 0.0


def test_sample_moments():
    P.manual_seed(1234)
    n = 20000
    checks = [
        (D.Normal(P.tensor([1.0]), P.tensor([2.0])), 1.0, 4.0),
        (D.Gamma(P.tensor([0.5, 3.0]), P.tensor([1.0, 2.0])), [0.5, 1.5], [0.5, 0.75]),
        (D.Beta(P.tensor([2.0]), P.tensor([5.0])), 2 / 7, 10 / (49 * 8)),
        (D.Exponential(P.tensor([2.0])), 0.5, 0.25),
        (D.Laplace(P.tensor([0.0]), P.tensor([1.0])), 0.0, 2.0),
        (D.Poisson(P.tensor([3.0])), 3.0, 3.0),
        (D.Bernoulli(P.tensor([0.3])), 0.3, 0.21),
        (D.Uniform(P.tensor([-1.0]), P.tensor([3.0])), 1.0, 16 / 12),
        (D.LogNormal(P.tensor([0.0]), P.tensor([0.5])), math.exp(0.125), (math.exp(0.25) - 1) * math.exp(0.25)),
        (D.Chi2(P.tensor([3.0])), 3.0, 6.0),
        (D.HalfNormal(P.tensor([1.0])), math.sqrt(2 / math.pi), 1 - 2 / math.pi),
        (D.Geometric(P.tensor([0.4])), 1.5, 3.75),
        (D.Gumbel(P.tensor([1.0]), P.tensor([0.5])), 1.0 + 0.5 * 0.5772156649, (math.pi * 0.5) ** 2 / 6),
        (D.Weibull(P.tensor([1.0]), P.tensor([2.0])), math.gamma(1.5), math.gamma(2.0) - math.gamma(1.5) ** 2),
        (D.StudentT(P.tensor([6.0])), 0.0, 1.5),
    ]
    for d, mean, var in checks:
        s = d.sample((n,))
        np.testing.assert_allclose(s.mean(0).numpy(), mean, atol=0.05, rtol=0.05, err_msg=repr(d))
        np.testing.assert_allclose(s.var(0).numpy(), var, atol=0.05, rtol=0.08, err_msg=repr(d))
    c = D.Categorical(P.tensor([0.1, 0.6, 0.3])).sample((n,))
    freq = np.bincount(c.numpy(), minlength=3) / n
    np.testing.assert_allclose(freq, [0.1, 0.6, 0.3], atol=0.02)
    m = D.Multinomial(10, P.tensor([0.2, 0.8])).sample((2000,))
    assert (m.sum(-1) == 10).all().item()
    np.testing.assert_allclose(m.mean(0).numpy(), [2.0, 8.0], atol=0.15)
    dr = D.Dirichlet(P.tensor([1.0, 2.0, 3.0])).sample((n,))
    np.testing.assert_allclose(dr.mean(0).numpy(), [1 / 6, 2 / 6, 3 / 6], atol=0.01)
    np.testing.assert_allclose(dr.sum(-1).numpy(), 1.0, rtol=1e-5)
    mvn = D.MultivariateNormal(P.tensor([1.0, -1.0]), P.tensor([[2.0, 0.5], [0.5, 1.0]])).sample((n,))
    centered = mvn - mvn.mean(0)
    np.testing.assert_allclose((centered.T @ centered / n).numpy(), [[2.0, 0.5], [0.5, 1.0]], atol=0.08)


def test_rsample_gradients():
    P.manual_seed(0)
    loc = P.tensor([0.5, -1.0], requires_grad=True)
    scale = P.tensor([2.0, 0.5], requires_grad=True)
    x = D.Normal(loc, scale).rsample((50,))
    x.sum().backward()
    eps = (x.detach() - loc.detach()) / scale.detach()
    np.testing.assert_allclose(loc.grad.numpy(), [50.0, 50.0])
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0).numpy(), rtol=1e-5)
    # Gamma's implicit reparameterization gradient, against PyTorch's on the same draws
    alpha = P.tensor([0.3, 1.0, 2.5, 9.0], dtype=P.float64, requires_grad=True)
    s = D.Gamma(alpha, P.ones(4, dtype=P.float64)).rsample()
    s.sum().backward()
    expected = torch._standard_gamma_grad(torch.tensor(alpha.detach().numpy()), torch.tensor(s.detach().numpy()))
    np.testing.assert_allclose(alpha.grad.numpy(), expected.numpy(), rtol=1e-4)
    # through a transformed distribution, LogNormal: d exp(loc + scale * eps) / d loc = sample
    loc = P.tensor([0.3], requires_grad=True)
    y = D.LogNormal(loc, P.tensor([0.5])).rsample()
    y.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), y.detach().numpy(), rtol=1e-6)
    # RelaxedBernoulli and Dirichlet carry gradients too
    logits = P.tensor([0.2, -0.4], requires_grad=True)
    D.RelaxedBernoulli(P.tensor(0.5), logits=logits).rsample().sum().backward()
    assert logits.grad is not None and P.isfinite(logits.grad).all().item()
    conc = P.tensor([1.0, 2.0], requires_grad=True)
    (D.Dirichlet(conc).rsample()[0]).backward()
    assert conc.grad is not None and P.isfinite(conc.grad).all().item()


def test_log_prob_gradients_match_torch():
    loc, tloc = _pair([0.5, -1.0])
    scale, tscale = _pair([2.0, 0.5])
    v, tv = _pair([0.3, 0.0])
    for a in (loc, scale, tloc, tscale):
        a.requires_grad_()
    D.Normal(loc, scale).log_prob(v).sum().backward()
    TD.Normal(tloc, tscale).log_prob(tv).sum().backward()
    _close(loc.grad, tloc.grad)
    _close(scale.grad, tscale.grad)
    c, tc = _pair([0.5, 2.0])
    c.requires_grad_()
    tc.requires_grad_()
    D.Gamma(c, c * 2).entropy().sum().backward()
    TD.Gamma(tc, tc * 2).entropy().sum().backward()
    _close(c.grad, tc.grad, rtol=1e-8)    # (PyTorch's trigamma is good to ~5e-10)


def _message(fn):
    """The ValueError's message, with torch's module prefix for ours (pytorchlite.Size is torch.Size)."""
    with pytest.raises(ValueError) as e:
        fn()
    return str(e.value).replace("pytorchlite.", "torch.")


def test_validation_errors_are_pytorchs():
    assert _message(lambda: D.Normal(0.0, -1.0)) == _message(lambda: TD.Normal(0.0, -1.0))
    assert _message(lambda: D.Normal(P.tensor([0.0, 1.0]), P.tensor([1.0, -2.0]))) == \
        _message(lambda: TD.Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, -2.0])))
    assert _message(lambda: D.Bernoulli(probs=P.tensor([1.5]))) == \
        _message(lambda: TD.Bernoulli(probs=torch.tensor([1.5])))
    assert _message(lambda: D.Bernoulli()) == _message(lambda: TD.Bernoulli())
    assert _message(lambda: D.Exponential(1.0).log_prob(P.tensor(-1.0))) == \
        _message(lambda: TD.Exponential(1.0).log_prob(torch.tensor(-1.0)))
    assert _message(lambda: D.Normal(P.zeros(3), 1.0).log_prob(P.zeros(2))) == \
        _message(lambda: TD.Normal(torch.zeros(3), 1.0).log_prob(torch.zeros(2)))
    assert _message(lambda: D.Dirichlet(P.ones(3)).log_prob(P.zeros(2))).startswith(
        "The right-most size of value must match event_shape")
    assert _message(lambda: D.Normal(0.0, 1.0).log_prob(0.5)) == "The value argument to log_prob must be a Tensor"
    assert _message(lambda: D.Uniform(1.0, 0.0)) == _message(lambda: TD.Uniform(1.0, 0.0))
    # validate_args=False skips the checks
    assert math.isnan(D.Normal(0.0, -1.0, validate_args=False).log_prob(P.tensor(0.0)).item())
    with pytest.warns(UserWarning, match="sample_n will be deprecated"):
        assert tuple(D.Normal(0.0, 1.0).sample_n(3).shape) == (3,)


def test_docstring_examples():
    """The `>>>` examples of pytorchlite.distributions and pytorchlite.special run as written."""
    import doctest
    import importlib
    import pkgutil
    names = ["pytorchlite.special", "pytorchlite.distributions"] + [
        "pytorchlite.distributions." + m.name for m in pkgutil.iter_modules(D.__path__)]
    for name in names:
        result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0, name
