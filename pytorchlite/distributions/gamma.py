"""Gamma(concentration, rate), and the standard-gamma sampler with its reparameterized
gradient that Beta and Dirichlet use too."""

from numbers import Number

import pytorchlite as torch
from pytorchlite.distributions import constraints
from pytorchlite.distributions.exp_family import ExponentialFamily
from pytorchlite.distributions.utils import broadcast_all

__all__ = ["Gamma"]


def _sample_standard_gamma(alpha):
    """Gamma(alpha, 1) draws of alpha's shape: Marsaglia and Tsang's squeeze-rejection
    method, run on all elements at once until every one is accepted (about 1 in 20 is
    redrawn per round); alpha < 1 draws for alpha + 1 and scales by u ** (1 / alpha)."""
    boost = alpha < 1
    a = torch.where(boost, alpha + 1, alpha)
    d = a - 1.0 / 3
    c = (9 * d).rsqrt()
    out = torch.zeros_like(alpha)
    pending = torch.ones_like(alpha, dtype=torch.bool)
    while pending.any().item():
        x = torch.randn_like(alpha)
        v = (1 + c * x) ** 3
        u = torch.rand_like(alpha)
        ok = (v > 0) & (torch.log(u) < 0.5 * x * x + d - d * v + d * torch.log(v.clamp(min=1e-30)))
        take = ok & pending
        out = torch.where(take, d * v, out)
        pending = pending & ~ok
    u = torch.rand_like(alpha)
    out = torch.where(boost, out * u ** (1 / alpha), out)
    # the smallest positive value rather than 0 (tiny alpha underflows), as PyTorch
    return out.clamp(min=torch.finfo(alpha.dtype).tiny)


class _StandardGamma(torch.autograd.Function):
    """A Gamma(alpha, 1) draw whose gradient with respect to alpha is the implicit
    reparameterization one, dx/dalpha = -(dF/dalpha) / (dF/dx) with F the CDF
    (igamma(alpha, x)) held fixed: dF/dx is the density, dF/dalpha a central difference
    of igamma in float64."""

    @staticmethod
    def forward(ctx, alpha):
        x = _sample_standard_gamma(alpha)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        a, xx = alpha.double(), x.double()
        h = 1e-5 * a.clamp(min=1.0)
        dcdf_da = (torch.igamma(a + h, xx) - torch.igamma(a - h, xx)) / (2 * h)
        log_pdf = (a - 1) * torch.log(xx) - xx - torch.lgamma(a)
        dx_da = -dcdf_da / torch.exp(log_pdf)
        return grad * dx_da.to(alpha.dtype)


def _standard_gamma(alpha):
    return _StandardGamma.apply(alpha)


class Gamma(ExponentialFamily):
    """The gamma distribution with shape `concentration` and rate `rate`.

        >>> import pytorchlite
        >>> pytorchlite.distributions.Gamma(2.0, 4.0).mean
        tensor(0.5000)
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, Number) and isinstance(rate, Number):
            batch_shape = torch.Size()
        else:
            batch_shape = self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Gamma, batch_shape, _instance, "concentration", "rate")

    def rsample(self, sample_shape=torch.Size()):
        shape = self._extended_shape(sample_shape)
        value = _standard_gamma(self.concentration.expand(shape).contiguous()) / self.rate.expand(shape)
        return value.clamp(min=torch.finfo(value.dtype).tiny)

    def log_prob(self, value):
        value = torch.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (torch.xlogy(self.concentration, self.rate) + torch.xlogy(self.concentration - 1, value)
                - self.rate * value - torch.lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - torch.log(self.rate) + torch.lgamma(self.concentration)
                + (1.0 - self.concentration) * torch.digamma(self.concentration))

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return torch.lgamma(x + 1) + (x + 1) * torch.log(-y.reciprocal())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return torch.special.gammainc(self.concentration, self.rate * value)
