"""HalfNormal(scale) and HalfCauchy(scale): |X| for X centred at 0."""

import math

import pytorchlite as torch
from pytorchlite.distributions import constraints
from pytorchlite.distributions.cauchy import Cauchy
from pytorchlite.distributions.normal import Normal
from pytorchlite.distributions.transformed_distribution import TransformedDistribution
from pytorchlite.distributions.transforms import AbsTransform

__all__ = ["HalfCauchy", "HalfNormal"]


class _Half(TransformedDistribution):
    """|X| for a distribution symmetric about 0: twice its density on [0, inf)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _base = None

    def __init__(self, scale, validate_args=None):
        base_dist = self._base(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(type(self), _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return torch.zeros_like(self.scale)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return torch.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Half):
    """|X| for X ~ Normal(0, scale).

        >>> import pytorchlite
        >>> pytorchlite.distributions.HalfNormal(1.0).mean
        tensor(0.7979)
    """

    _base = Normal

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Half):
    """|X| for X ~ Cauchy(0, scale).

        >>> import pytorchlite
        >>> pytorchlite.distributions.HalfCauchy(1.0).log_prob(pytorchlite.tensor(0.0))
        tensor(-0.4516)
    """

    _base = Cauchy

    @property
    def mean(self):
        return torch.full(self._extended_shape(), math.inf, dtype=self.scale.dtype, device=self.scale.device)

    @property
    def variance(self):
        return self.base_dist.variance
