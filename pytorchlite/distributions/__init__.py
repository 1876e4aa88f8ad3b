"""pytorchlite.distributions: probability distributions with PyTorch's API
(torch.distributions), built on pytorchlite's public operators, so rsample() and
log_prob() carry gradients to the parameters.

    >>> import pytorchlite
    >>> from pytorchlite.distributions import Normal
    >>> Normal(pytorchlite.tensor([0.0]), pytorchlite.tensor([2.0])).entropy()
    tensor([2.1121])
"""

from pytorchlite.distributions import constraints, transforms
from pytorchlite.distributions.bernoulli import Bernoulli
from pytorchlite.distributions.beta import Beta
from pytorchlite.distributions.categorical import Categorical
from pytorchlite.distributions.cauchy import Cauchy
from pytorchlite.distributions.chi2 import Chi2
from pytorchlite.distributions.dirichlet import Dirichlet
from pytorchlite.distributions.distribution import Distribution
from pytorchlite.distributions.exp_family import ExponentialFamily
from pytorchlite.distributions.exponential import Exponential
from pytorchlite.distributions.gamma import Gamma
from pytorchlite.distributions.geometric import Geometric
from pytorchlite.distributions.gumbel import Gumbel
from pytorchlite.distributions.half_normal import HalfCauchy, HalfNormal
from pytorchlite.distributions.independent import Independent
from pytorchlite.distributions.kl import kl_divergence, register_kl
from pytorchlite.distributions.laplace import Laplace
from pytorchlite.distributions.log_normal import LogNormal
from pytorchlite.distributions.multinomial import Multinomial
from pytorchlite.distributions.multivariate_normal import MultivariateNormal
from pytorchlite.distributions.normal import Normal
from pytorchlite.distributions.one_hot_categorical import OneHotCategorical
from pytorchlite.distributions.pareto import Pareto, Weibull
from pytorchlite.distributions.poisson import Poisson
from pytorchlite.distributions.relaxed_bernoulli import RelaxedBernoulli
from pytorchlite.distributions.studentT import StudentT
from pytorchlite.distributions.transformed_distribution import TransformedDistribution
from pytorchlite.distributions.transforms import (
                                                  AbsTransform,
                                                  AffineTransform,
                                                  ComposeTransform,
                                                  ExpTransform,
                                                  IndependentTransform,
                                                  PowerTransform,
                                                  SigmoidTransform,
                                                  TanhTransform,
                                                  Transform,
                                                  identity_transform,
)
from pytorchlite.distributions.uniform import Uniform

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Categorical", "Cauchy", "Chi2", "ComposeTransform",
    "Dirichlet", "Distribution", "ExpTransform", "Exponential", "ExponentialFamily", "Gamma", "Geometric",
    "Gumbel", "HalfCauchy", "HalfNormal", "Independent", "IndependentTransform", "Laplace", "LogNormal",
    "Multinomial", "MultivariateNormal", "Normal", "OneHotCategorical", "Pareto", "Poisson", "PowerTransform",
    "RelaxedBernoulli", "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform", "StudentT", "TanhTransform",
    "Transform", "TransformedDistribution", "Uniform", "Weibull", "constraints", "identity_transform",
    "kl_divergence", "register_kl", "transforms",
]
