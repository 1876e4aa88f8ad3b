"""RelaxedBernoulli(temperature, probs | logits): the binary Concrete distribution."""

import pytorchlite as torch
from pytorchlite.distributions import constraints
from pytorchlite.distributions.bernoulli import Bernoulli
from pytorchlite.distributions.distribution import Distribution
from pytorchlite.distributions.transformed_distribution import TransformedDistribution
from pytorchlite.distributions.transforms import SigmoidTransform
from pytorchlite.distributions.utils import (
    broadcast_all,
    clamp_probs,
    set_probs_or_logits,
)

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(Distribution):
    """The logit of a RelaxedBernoulli draw: (logit(u) + logits) / temperature, u uniform."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        batch_shape = set_probs_or_logits(self, probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(LogitRelaxedBernoulli, batch_shape, _instance, "probs", "logits")
        new.temperature = self.temperature
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        return new

    # the same parameters as Bernoulli's
    logits = Bernoulli.logits
    probs = Bernoulli.probs
    param_shape = Bernoulli.param_shape

    def rsample(self, sample_shape=torch.Size()):
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        uniforms = clamp_probs(torch.rand(shape, dtype=probs.dtype, device=probs.device))
        return (uniforms.log() - (-uniforms).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """A continuous relaxation of Bernoulli on (0, 1), reparameterizable, sharper as
    `temperature` goes to 0.

        >>> import pytorchlite
        >>> d = pytorchlite.distributions.RelaxedBernoulli(pytorchlite.tensor(0.5), probs=pytorchlite.tensor(0.3))
        >>> d.log_prob(pytorchlite.tensor(0.5))
        tensor(-0.8675)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs
