"""Geometric(probs | logits): the number of failures before the first success."""

import pytorchlite as torch
from pytorchlite.distributions import constraints
from pytorchlite.distributions.bernoulli import Bernoulli
from pytorchlite.distributions.distribution import Distribution
from pytorchlite.distributions.utils import broadcast_all, set_probs_or_logits

__all__ = ["Geometric"]


class Geometric(Distribution):
    """Failures before the first success of Bernoulli(`probs`) trials.

        >>> import pytorchlite
        >>> pytorchlite.distributions.Geometric(pytorchlite.tensor(0.25)).mean
        tensor(3.)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        batch_shape = set_probs_or_logits(self, probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            # probs = 0 would never succeed (PyTorch's extra check)
            value = self.probs
            valid = value > 0
            if not valid.all().item():
                invalid_value = value.data[~valid]
                raise ValueError("Expected parameter probs "
                                 f"({type(value).__name__} of shape {tuple(value.shape)}) "
                                 f"of distribution {repr(self)} "
                                 f"to be positive but found invalid values:\n{invalid_value}")

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(Geometric, batch_shape, _instance, "probs", "logits")
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        return new

    # the same parameters as Bernoulli's
    logits = Bernoulli.logits
    probs = Bernoulli.probs

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return torch.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=torch.Size()):
        shape = self._extended_shape(sample_shape)
        tiny = torch.finfo(self.probs.dtype).tiny
        with torch.no_grad():
            u = torch.rand(shape, dtype=self.probs.dtype, device=self.probs.device).clamp(min=tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # 0 * log(0) is 0 at probs = 1, value = 0
        probs = probs.masked_fill((probs == 1) & (value == 0), 0)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return torch.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs,
                                                                   reduction="none") / self.probs
