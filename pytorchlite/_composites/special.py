"""Composite special functions: polygamma (its order checked, then the pointwise
_polygamma), the multivariate log-gamma and logit, written in the operators of ops.yaml."""

import math

from pytorchlite._dtype import get_default_dtype
from pytorchlite._ops import ops as F


def polygamma(n, self):
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return F._polygamma(self, n)


def mvlgamma(self, p):
    if self.dtype.name == "bool":
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    # lgamma(self - i/2) for i < p, summed over a trailing dim of the p shifts (integer
    # inputs compute in the default float dtype)
    dtype = self.dtype if self.dtype.is_floating_point else get_default_dtype()
    shifts = F.mul(F.arange(p, dtype=dtype, device=self.device), -0.5)
    terms = F.lgamma(F.add(F.unsqueeze(self, -1), shifts))
    return F.add(F.sum(terms, -1), p * (p - 1) / 4 * math.log(math.pi))


def logit(self, eps=None):
    if eps is not None:
        self = F.clamp(self, eps, 1.0 - eps)
    return F.log(F.div(self, F.rsub(self, 1)))
