"""Kernel entries for random operators: the in-place fills (uniform_, normal_,
exponential_, random_, bernoulli_), the factories built on them (rand, randn, randint,
*_like, normal, bernoulli, poisson), randperm and multinomial.

Each entry checks its arguments as PyTorch does (same error types and messages), reserves
the Philox counters the request needs from the generator (pytorchlite/_random.py) and
hands descriptors to kernels/random.c. Element i of a request reads fixed words of the
stream, so the numbers do not depend on the thread count.
"""

import math
import warnings

from pytorchlite import _dtype as D
from pytorchlite._C import check, ffi, lib
from pytorchlite._core import descriptors as _descs, empty as _empty, broadcast_shapes
from pytorchlite._kernels.factories import _check_pin_memory
from pytorchlite._random import get_generator
from pytorchlite._core import to_dtype

# distribution kinds, as kernels/random.c numbers them (for ptl_random_counters)
_UNIFORM, _NORMAL, _EXPONENTIAL, _INTEGER, _BERNOULLI, _POISSON, _RANDPERM, _MULTINOMIAL = range(8)

_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1

# C++ type names PyTorch prints in range errors ("to - 1 is out of bounds for signed char")
_CXX_NAMES = {
    "bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int", "int32": "int",
    "int64": "long int", "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
    "float64": "double",
}
# mantissa digits of each floating dtype (std::numeric_limits<T>::digits)
_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def _g(x):
    """A double as C++ streams print it (6 significant digits, %g), for messages."""
    return "%g" % x


def _generator(op, generator, t_device=None):
    gen = get_generator(generator)
    dev = t_device.type if t_device is not None else "cpu"
    if gen.device.type != dev:
        raise RuntimeError(f"Expected a '{dev}' device type for generator but found '{gen.device.type}'")
    return gen


def _reserve(gen, kind, dtype, n, rng=0):
    """(seed, offset) for a request of n elements; advances the generator past it."""
    counters = lib.ptl_random_counters(kind, dtype.code, n, rng)
    return gen._reserve(counters)


def _check_autograd(op, self):
    """In-place fills are not recorded by autograd (ops.yaml marks them `differentiable:
    false`; PyTorch records a zero gradient for them). A tensor that requires grad in grad
    mode is refused, so its history is never silently left stale: PyTorch's errors for a
    leaf (or a view of one), a plain one otherwise."""
    if not self._requires_grad:
        return
    from pytorchlite.autograd.grad_mode import is_grad_enabled
    if not is_grad_enabled():
        return
    from pytorchlite.autograd._record import check_inplace
    check_inplace(self)
    raise RuntimeError(f"{op}(): filling a tensor that requires grad in place is not recorded by autograd; "
                       "fill it under `pytorchlite.no_grad()` or fill a detached tensor")


def _check_writable(op, self):
    for n, s in zip(self._shape, self._stride):
        if s == 0 and n > 1:
            raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                               "single memory location. Please clone() the tensor before performing the operation.")


def _desc(t, shape=None):
    return _descs((t,), t._shape if shape is None else shape)


def _not_floating(kernel_name, dtype):
    return NotImplementedError(f"\"{kernel_name}\" not implemented for '{dtype._torch_name}'")


def _check_size(op, size):
    for s in size:
        if s < 0:
            raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension {s}: {list(size)}")


def _new(op, size, dtype, device):
    from pytorchlite._argparse import factory_device
    _check_size(op, size)
    return _empty(tuple(size), dtype, factory_device(device))


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _all_in_range(t, lo, hi):
    ok = ffi.new("int *")
    check(lib.ptl_random_all_in_range(_desc(t), lo, hi, ok), "random")
    return bool(ok[0])


# ---- in-place fills ---------------------------------------------------------------------

def _uniform_into(op, self, from_, to, generator):
    dt = self._dtype
    if not dt.is_floating_point:
        raise _not_floating("check_uniform_bounds", dt)
    info = D.finfo(dt)
    for name, v in (("from", from_), ("to", to)):
        if not (info.min <= v <= info.max):
            raise RuntimeError(f"{name} is out of bounds for {_CXX_NAMES[dt.name]}")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_g(from_)} > to={_g(to)}")
    if not (to - from_ <= info.max):
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<{dt._torch_name}>::max(), but found "
                           f"to={_g(to)} and from={_g(from_)} which result in to-from to exceed the limit")
    _check_writable(op, self)
    n = self.numel()
    if n:
        seed, off = _reserve(_generator(op, generator, self._device), _UNIFORM, dt, n)
        check(lib.ptl_random_uniform(_desc(self), seed, off, from_, to), op)
    return self


def uniform_(self, from_=0.0, to=1.0, generator=None):
    _check_autograd("uniform_", self)
    _uniform_into("uniform_", self, from_, to, generator)
    self._vc[0] += 1
    return self


def _normal_into(op, self, mean, std, generator, mean_t=None, std_t=None):
    dt = self._dtype
    if not dt.is_floating_point:
        raise _not_floating("normal_kernel_cpu", dt)
    _check_writable(op, self)
    n = self.numel()
    if n:
        seed, off = _reserve(_generator(op, generator, self._device), _NORMAL, dt, n)
        md = _desc(mean_t, self._shape) if mean_t is not None else ffi.NULL
        sd = _desc(std_t, self._shape) if std_t is not None else ffi.NULL
        check(lib.ptl_random_normal(_desc(self), md, sd, seed, off, mean, std), op)
    return self


def _check_std(std):
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(std)}")


def normal_(self, mean=0.0, std=1.0, generator=None):
    _check_autograd("normal_", self)
    _check_std(std)
    if self.numel() == 0:     # PyTorch returns before its dtype dispatch
        return self
    _normal_into("normal_", self, mean, std, generator)
    self._vc[0] += 1
    return self


def exponential_(self, lambd=1.0, generator=None):
    _check_autograd("exponential_", self)
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_g(lambd)}")
    dt = self._dtype
    if not dt.is_floating_point:
        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {dt._torch_name}")
    _check_writable("exponential_", self)
    n = self.numel()
    if n:
        seed, off = _reserve(_generator("exponential_", generator, self._device), _EXPONENTIAL, dt, n)
        check(lib.ptl_random_exponential(_desc(self), seed, off, lambd), "exponential_")
    self._vc[0] += 1
    return self


# --- random_: integers in [from, to), PyTorch's bounds logic (DistributionTemplates.h) ---

def _update_from(dt, frm):
    """For a float dtype, move `from` up to a value the dtype holds (PyTorch's update_from)."""
    plus1 = _as_dtype_int(dt, frm + 1)
    if plus1 < frm:
        x, n = abs(frm + 1), 0
        while x >> 1:
            x >>= 1
            n += 1
        frm = plus1 + (1 << (n - _DIGITS[dt.name] + 1))
    return frm


def _update_to(dt, to):
    minus1 = _as_dtype_int(dt, to - 1)
    if minus1 >= to:
        x, n = abs(to - 1), 0
        while x >> 1:
            x >>= 1
            n += 1
        to = minus1 - (1 << (n - _DIGITS[dt.name] + 1))
    return to


def _as_dtype_int(dt, v):
    """int64 -> dtype -> int64, as static_cast does it (rounding to the dtype's grid)."""
    import numpy as np
    if dt is D.bfloat16:
        f = np.float32(v)
        bits = int(f.view(np.uint32))
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        f = float(np.uint32(bits).view(np.float32))
    else:
        f = float(dt.np_dtype.type(v))
    return max(min(int(f), _I64_MAX), _I64_MIN) if math.isfinite(f) else (_I64_MAX if f > 0 else _I64_MIN)


def _check_from_to_in_range(dt, frm, to_inc):
    name = _CXX_NAMES[dt.name]
    if dt.is_floating_point:
        info = D.finfo(dt)
        lo, hi = info.min, info.max
        for var, v in (("from", frm), ("to - 1", to_inc)):
            if not lo <= v <= hi:
                raise RuntimeError(f"{var} is out of bounds for {name}")
        digits = _DIGITS[dt.name]
        for var, v in (("from", frm), ("to - 1", to_inc)):
            if v < -(1 << digits) or v > (1 << digits):
                warnings.warn(f"{var} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations "
                              f"{name} can support discrete uniform distribution only within this range. This warning "
                              "will become an error in version 1.7 release, please fix the code in advance",
                              UserWarning, stacklevel=4)
    else:
        lo, hi = (0, 1) if dt is D.bool else (D.iinfo(dt).min, D.iinfo(dt).max)
        for var, v in (("from", frm), ("to - 1", to_inc)):
            if not lo <= v <= hi:
                raise RuntimeError(f"{var} is out of bounds for {name}")


def _random_into(op, self, frm, to, generator):
    """[frm, to) when to is given, else [frm, the dtype's largest integer] (PyTorch's random_.from)."""
    dt = self._dtype
    for v in (frm, to):
        if v is not None and not _I64_MIN <= v <= _I64_MAX:
            raise RuntimeError("Overflow when unpacking long")
    if to is not None:
        if not frm < to:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={frm} >= to={to}")
        if dt.is_floating_point:
            frm, to = _update_from(dt, frm), _update_to(dt, to)
            if not frm < to:
                raise RuntimeError("random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but "
                                   f"got from={frm} >= to={to}")
        _check_from_to_in_range(dt, frm, to - 1)
        rng = (to - frm) % (1 << 64)
    elif frm != _I64_MIN:
        if dt.is_floating_point:
            to_inc = min(1 << _DIGITS[dt.name], _I64_MAX)
            frm = _update_from(dt, frm)
            if not frm < to_inc:
                raise RuntimeError("random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted "
                                   f"to dtype, but got from={frm} > to_inc={to_inc}")
        else:
            to_inc = 1 if dt is D.bool else D.iinfo(dt).max
        _check_from_to_in_range(dt, frm, to_inc)
        rng = (to_inc - frm + 1) % (1 << 64)
    else:
        rng = 0     # the whole int64 line, 2^64 values
    _check_writable(op, self)
    n = self.numel()
    if n:
        seed, off = _reserve(_generator(op, generator, self._device), _INTEGER, dt, n, rng)
        check(lib.ptl_random_integers(_desc(self), seed, off, frm, rng), op)
    return self


def random_(self, from_=None, to=None, generator=None):
    _check_autograd("random_", self)
    # one schema for PyTorch's three overloads: random_() is [0, max], random_(to) is
    # [0, to) (a lone positional is `to`, as in random_.to), random_(from, to) is [from, to)
    if from_ is None:
        frm, to = 0, to
    elif to is None:
        frm, to = 0, from_
    else:
        frm = from_
    _random_into("random_", self, frm, to, generator)
    self._vc[0] += 1
    return self


def _bernoulli_scalar_into(op, self, p, generator):
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_g(p)}")
    _check_writable(op, self)
    n = self.numel()
    if n:
        seed, off = _reserve(_generator(op, generator, self._device), _BERNOULLI, self._dtype, n)
        check(lib.ptl_random_bernoulli(_desc(self), ffi.NULL, seed, off, float(p)), op)
    return self


_P_RANGE = ("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be improved?  "
            "If so, please report an enhancement request to PyTorch.)")


def _check_p_tensor(p):
    if not p._dtype.is_floating_point:
        raise _not_floating("bernoulli_tensor_cpu_p_", p._dtype)
    if p.numel() and not _all_in_range(p, 0.0, 1.0):
        raise RuntimeError(_P_RANGE)


def _bernoulli_tensor_into(op, self, p, generator):
    _check_p_tensor(p)
    if p._shape != self._shape:
        p = p.expand(self._shape)     # PyTorch's expand errors for a p that does not fit
    _check_writable(op, self)
    n = self.numel()
    if n:
        seed, off = _reserve(_generator(op, generator, self._device), _BERNOULLI, self._dtype, n)
        check(lib.ptl_random_bernoulli(_desc(self), _desc(p), seed, off, 0.0), op)
    return self


def bernoulli__tensor(self, p, generator=None):
    _check_autograd("bernoulli_", self)
    _bernoulli_tensor_into("bernoulli_", self, p, generator)
    self._vc[0] += 1
    return self


def bernoulli__float(self, p=0.5, generator=None):
    _check_autograd("bernoulli_", self)
    _bernoulli_scalar_into("bernoulli_", self, p, generator)
    self._vc[0] += 1
    return self


# ---- factories ------------------------------------------------------------------------------

def _float_dtype(dtype):
    return dtype or D.get_default_dtype()


def rand(size, generator=None, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    _check_pin_memory(pin_memory)
    t = _new("rand", size, _float_dtype(dtype), device)
    return _finish(_uniform_into("rand", t, 0.0, 1.0, generator), requires_grad)


def randn(size, generator=None, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    _check_pin_memory(pin_memory)
    t = _new("randn", size, _float_dtype(dtype), device)
    return _finish(_normal_into("randn", t, 0.0, 1.0, generator), requires_grad)


def _randint_bounds(op, low, high, size):
    """randint's overloads, randint(high, size) and randint(low, high, size), from one schema:
    `high` arrives as an int list (an int becomes a 1-tuple)."""
    if size is None:
        if high is None:
            raise TypeError(f"{op}() missing 1 required positional argument: 'size'")
        low, high, size = 0, (low,), high
    if high is None:
        low, high = 0, (low,)
    if len(high) != 1:
        raise TypeError(f"{op}(): argument 'high' (position 2) must be int, not tuple")
    return low, high[0], size


def randint(low=0, high=None, size=None, generator=None, dtype=None, layout=None, device=None, pin_memory=None,
            requires_grad=False):
    _check_pin_memory(pin_memory)
    low, high, size = _randint_bounds("randint", low, high, size)
    t = _new("randint", size, dtype or D.int64, device)
    return _finish(_random_into("randint", t, low, high, generator), requires_grad)


def _like(op, self, dtype, device):
    from pytorchlite._argparse import factory_device
    return _empty(tuple(self._shape), dtype or self._dtype, factory_device(device) if device is not None
                  else self._device)


def rand_like(self, generator=None, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False,
              memory_format=None):
    _check_pin_memory(pin_memory)
    t = _like("rand_like", self, dtype, device)
    return _finish(_uniform_into("rand_like", t, 0.0, 1.0, generator), requires_grad)


def randn_like(self, generator=None, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False,
               memory_format=None):
    _check_pin_memory(pin_memory)
    t = _like("randn_like", self, dtype, device)
    if not t._dtype.is_floating_point:
        raise _not_floating("normal_kernel_cpu", t._dtype)
    return _finish(_normal_into("randn_like", t, 0.0, 1.0, generator), requires_grad)


def randint_like(self, low, high=None, generator=None, dtype=None, layout=None, device=None, pin_memory=None,
                 requires_grad=False, memory_format=None):
    _check_pin_memory(pin_memory)
    if high is None:
        low, high = 0, low
    t = _like("randint_like", self, dtype, device)
    return _finish(_random_into("randint_like", t, low, high, generator), requires_grad)


def normal_float_float(mean, std, size, generator=None, dtype=None, layout=None, device=None, pin_memory=None,
                       requires_grad=False):
    _check_pin_memory(pin_memory)
    _check_std(std)
    t = _new("normal", size, _float_dtype(dtype), device)
    return _finish(_normal_into("normal", t, mean, std, generator), requires_grad)


def normal_tensor_tensor(mean, std, generator=None):
    _check_std_tensor(std)
    # the result has mean's dtype (PyTorch allocates it like `mean`)
    out = _empty(tuple(broadcast_shapes("normal", [mean._shape, std._shape])), mean._dtype, mean._device)
    return _normal_into("normal", out, 0.0, 1.0, generator, mean, std)


def normal_tensor_float(mean, std=1.0, generator=None):
    _check_std(std)
    out = _empty(tuple(mean._shape), mean._dtype, mean._device)
    return _normal_into("normal", out, 0.0, std, generator, mean, None)


def normal_float_tensor(mean, std, generator=None):
    _check_std_tensor(std)
    out = _empty(tuple(std._shape), std._dtype, std._device)
    return _normal_into("normal", out, mean, 1.0, generator, None, std)


def _check_std_tensor(std):
    if std.numel() and not _all_in_range(std, 0.0, math.inf):
        raise RuntimeError("normal expects all elements of std >= 0.0")


def bernoulli(self, p=None, generator=None):
    out = _empty(tuple(self._shape), self._dtype, self._device)
    if p is None:
        return _bernoulli_tensor_into("bernoulli", out, self, generator)
    return _bernoulli_scalar_into("bernoulli", out, p, generator)


def poisson(self, generator=None):
    if not self._dtype.is_floating_point:
        raise _not_floating("poisson_cpu", self._dtype)
    if self.numel() and not _all_in_range(self, 0.0, math.inf):
        # nan fails too, with this message (PyTorch's)
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    out = _empty(tuple(self._shape), self._dtype, self._device)
    n = out.numel()
    if n:
        seed, off = _reserve(_generator("poisson", generator, self._device), _POISSON, out._dtype, n)
        check(lib.ptl_random_poisson(_desc(out), _desc(self), seed, off), "poisson")
    return out


# ---- randperm and multinomial -------------------------------------------------------------------

_PRECISION_LIMITS = {"float16": ((1 << 11) + 1, "n cannot be greater than 2049 for Half type."),
                     "float32": ((1 << 24) + 1, "n cannot be greater than 2^24+1 for Float type."),
                     "float64": ((1 << 53) + 1, "n cannot be greater than 2^53+1 for Double type.")}
_C_INT_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t"}


def randperm(n, generator=None, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    _check_pin_memory(pin_memory)
    dt = dtype or D.int64
    _check_size("randperm", (n,))
    if dt is D.bool:
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    if dt.is_floating_point:
        limit = _PRECISION_LIMITS.get(dt.name)
        if limit and n > limit[0]:
            raise RuntimeError(limit[1])
    elif n - 1 > D.iinfo(dt).max:
        raise RuntimeError(f"value cannot be converted to type {_C_INT_NAMES[dt.name]} without overflow")
    perm = _new("randperm", (n,), D.int64, device)
    if n:
        seed, off = _reserve(_generator("randperm", generator, perm._device), _RANDPERM, D.int64, n)
        check(lib.ptl_randperm(ffi.cast("int64_t *", perm._storage.ptr), n, seed, off), "randperm")
    if dt is not D.int64:
        perm = to_dtype(perm, dt)
    return _finish(perm, requires_grad)


_MULTINOMIAL_ERRORS = {
    1: "probability tensor contains either `inf`, `nan` or element < 0",
    2: "invalid multinomial distribution (sum of probabilities <= 0)",
    3: "invalid multinomial distribution (encountering probability entry < 0)",
    4: "invalid multinomial distribution (encountering probability entry = infinity or NaN)",
}


def multinomial(self, num_samples, replacement=False, generator=None):
    if self.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not self._dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {self._dtype._torch_name}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    ncat = self._shape[-1]
    if not replacement and num_samples > ncat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if ncat > (1 << 24):
        raise RuntimeError("number of categories cannot exceed 2^24")
    rows = self._shape[0] if self.dim() == 2 else 1
    out = _empty((num_samples,) if self.dim() == 1 else (rows, num_samples), D.int64, self._device)
    if out.numel() == 0:
        return out
    # a 1-D distribution is one row: the descriptor views it as (1, ncat)
    prob = _descs((self,), self._shape if self.dim() == 2 else (1, ncat))
    fast = not replacement or num_samples == 1
    draws = rows * (ncat if fast else num_samples)
    gen = _generator("multinomial", generator, self._device)
    err = ffi.new("int *")
    seed, off = _reserve(gen, _MULTINOMIAL, D.int64, draws)
    status = lib.ptl_multinomial(prob, num_samples, int(replacement), seed, off,
                                 ffi.cast("int64_t *", out._storage.ptr), err)
    if err[0]:
        gen._offset = off   # rejected before drawing anything: the stream has not moved
        raise RuntimeError(_MULTINOMIAL_ERRORS[err[0]])
    check(status, "multinomial")
    return out
