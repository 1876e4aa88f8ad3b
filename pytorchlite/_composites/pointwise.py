"""Composite elementwise operators: comparisons with tolerance, division by rounding mode,
clamping, nan_to_num and float_power, written in the pointwise operators of ops.yaml."""

from pytorchlite import _argparse
from pytorchlite._dtype import finfo
from pytorchlite._core import TensorBase as Tensor
from pytorchlite._ops import ops as F


def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    if self.dtype != other.dtype:
        raise RuntimeError(f"{self.dtype._torch_name} did not match {other.dtype._torch_name}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol:g}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol:g}")
    close = F.eq(self, other)
    if self.dtype.name == "bool":
        return close
    if equal_nan and self.dtype.is_floating_point:
        close = F.logical_or(close, F.logical_and(F.isnan(self), F.isnan(other)))
    if rtol == 0 and atol == 0:
        return close
    diff = F.abs(F.sub(self, other))
    allowed = F.add(F.mul(F.abs(other), rtol), atol)
    return F.logical_or(close, F.logical_and(F.isfinite(diff), F.le(diff, allowed)))


def positive(self):
    if self.dtype.name == "bool":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return self


def nan_to_num(self, nan=None, posinf=None, neginf=None):
    if not self.is_floating_point():
        return F._nan_to_num(self, 0, 0, 0)
    big = finfo(self.dtype).max
    return F._nan_to_num(self, 0.0 if nan is None else nan, big if posinf is None else posinf,
                         -big if neginf is None else neginf)


def div(self, other, *, rounding_mode=None):
    if rounding_mode is None:
        return F._div_true(self, other)
    if rounding_mode == "trunc":
        return F._div_trunc(self, other)
    if rounding_mode == "floor":
        return F._div_floor(self, other)
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")


def float_power(self, exponent):
    # (either may be a Python number: tensor_scalars)
    base = self.double() if isinstance(self, Tensor) else float(self)
    return F.pow(base, exponent.double() if isinstance(exponent, Tensor) else float(exponent))


def float_power_(self, exponent):
    if self.dtype.name != "float64":
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype._torch_name} but the "
                           "operation's result requires dtype Double")
    return _argparse.write_inplace("float_power_", float_power(self, exponent), self)


def clamp(self, min=None, max=None):
    # (both overloads, clamp with Numbers and clamp.Tensor)
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if max is None:
        return F.clamp_min(self, min)
    if min is None:
        return F.clamp_max(self, max)
    return F._clamp(self, min, max)
