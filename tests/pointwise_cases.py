"""How the pointwise operators of ops.yaml are exercised: the scalar-argument values to try,
the input domains, and calling an operator with tensors and scalars in schema order.

Shared by the PyTorch parity tests (tests/test_pointwise.py) and the CUDA-against-CPU
tests (tests/cuda/test_gpu.py), so both walk the same cases.
"""

import math

from parity import INT_DTYPES, special_values

# Scalar arguments: values to use besides the schema default (ops without a default need one)
SCALAR_VALUES = {
    "threshold_backward": [{"threshold": 0}, {"threshold": 0.5}, {"threshold": -1}],
    "_round_decimals": [{"decimals": 1}, {"decimals": -1}, {"decimals": 3}],
    "_nan_to_num": [{"nan": 1.5, "posinf": 100.0, "neginf": -100.0}],
    "add": [{}, {"alpha": 2}, {"alpha": 0.5}, {"alpha": True}],
    "sub": [{}, {"alpha": -3}, {"alpha": 0.25}],
    "rsub": [{}, {"alpha": 2}],
    "softplus": [{}, {"beta": 2, "threshold": 1}],
    "_elu": [{}, {"alpha": 0.5}],
    "_leaky_relu": [{}, {"negative_slope": 0.2}],
    "_hardtanh": [{}, {"min_val": -0.5, "max_val": 2}, {"min_val": 0, "max_val": 6}],
    "addcmul": [{}, {"value": 2}, {"value": 0.5}],
    "addcdiv": [{}, {"value": -2}],
}

# Input domains that keep an operator meaningful (divisors, bounded exponents)
def _without_tiny(dtype):
    # PyTorch's vectorised float fmod gives nan once the quotient overflows (1e30 / 1e-30)
    # where the exact answer (ours, and PyTorch's own scalar loop) is finite
    return [v for v in special_values(dtype) if not (isinstance(v, float) and 0 < abs(v) < 1e-3)]


def _finite_specials(dtype):
    # PyTorch's AVX-512 gelu gives nan at +-inf (its AVX2 and scalar loops, and ours, give
    # the limits inf and -0): the answer depends on the CPU, so infinities are left out
    return [v for v in special_values(dtype) if not (isinstance(v, float) and math.isinf(v))]


INPUT_OPTIONS = {
    "pow": {"low": 0, "high": 4},
    "_gelu_erf": {"specials": _finite_specials},
    "_gelu_tanh": {"specials": _finite_specials},
    "remainder": {"specials": _without_tiny},
    "fmod": {"specials": _without_tiny},
}


def scalar_kwargs(op):
    """Each set of Scalar-argument values to try, as keyword arguments."""
    scalars = [a for a in op.schema.arguments if a.type.base == "Scalar"]
    sets = SCALAR_VALUES.get(op.name, [{}])
    for s in sets:
        missing = [a.name for a in scalars if a.default is None and a.name not in s]
        assert not missing, f"{op.name}: give SCALAR_VALUES for {missing}"
    return sets


def call(fn, op, tensors, scalars, **extra):
    """Call fn with the tensors positionally and the scalars in schema order: positional
    Scalars positionally (defaults filled in), keyword-only ones by name."""
    args = list(tensors)
    kwargs = dict(extra)
    for a in op.schema.arguments:
        if a.type.base != "Scalar":
            continue
        if a in op.schema.kwonly:
            if a.name in scalars:
                kwargs[a.python_name] = scalars[a.name]
        else:
            args.append(scalars.get(a.name, a.default_value()))
    return fn(*args, **kwargs)


def edge_options(op, dtype):
    opts = dict(INPUT_OPTIONS.get(op.name, {}))
    if op.name in ("floor_divide", "remainder", "fmod", "_div_trunc", "_div_floor") and dtype in INT_DTYPES:
        opts["nonzero_last"] = True     # integer division by zero raises (tested separately)
    return opts
