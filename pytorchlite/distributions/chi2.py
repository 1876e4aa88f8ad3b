"""Chi2(df): Gamma(df / 2, 1 / 2)."""

from numbers import Number

import pytorchlite as torch
from pytorchlite.distributions import constraints
from pytorchlite.distributions.gamma import Gamma

__all__ = ["Chi2"]


class Chi2(Gamma):
    """The chi-squared distribution with `df` degrees of freedom.

        >>> import pytorchlite
        >>> pytorchlite.distributions.Chi2(4.0).variance
        tensor(8.)
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        if isinstance(df, Number):
            df = torch.tensor(float(df))
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self):
        return self.concentration * 2
