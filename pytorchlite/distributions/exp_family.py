"""ExponentialFamily: the base class PyTorch gives the exponential-family distributions."""

from pytorchlite.distributions.distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Distributions of the form exp(<t(x), theta> - F(theta) + k(x)) (Normal, Gamma, ...)."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError
