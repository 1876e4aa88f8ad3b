"""Property test: every pointwise operator of ops.yaml against PyTorch on random inputs.

Hypothesis draws shapes (sizes 0 and 1 included), broadcasting partners (and some that
do not broadcast), layouts (contiguous, transposed, step-sliced, expanded), dtypes (mixed
ones too), Python numbers in place of tensors where the schema takes them, Scalar
arguments, and now and then an argument of a wrong type. Each call must match PyTorch,
or raise an exception of the type PyTorch raises; it must never crash the process.

The run is derandomised with a few examples per operator, to stay fast and repeatable;
to hunt for new failures: PTL_FUZZ_RANDOM=1 PTL_FUZZ_EXAMPLES=500 python -m pytest <this file>
"""

import math
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

import pytorchlite  # noqa: E402
from pytorchlite.generated import functions as G  # noqa: E402
from codegen.model import load_ops  # noqa: E402
from parity import ALL_DTYPES, INT_DTYPES, check_parity, from_values  # noqa: E402
from test_pointwise import oracle_for  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POINTWISE = [op for op in load_ops(os.path.join(ROOT, "ops.yaml")) if op.kind == "pointwise"]

# integer division: PyTorch's own kernels trap (SIGFPE) on INT_MIN / -1, so these
# operators get no integer extremes (division by zero is drawn: it raises in both)
NO_INT_EXTREMES = {"floor_divide", "remainder", "fmod", "_div_trunc", "_div_floor"}

# random calls trip PyTorch's (and our) deprecation warnings, e.g. for uint8 conditions of where
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SPECIAL_FLOATS = [math.inf, -math.inf, math.nan, 0.0, -0.0]
# PyTorch's AVX-512 gelu gives nan at +-inf where its AVX2 loop (and ours) give the limits:
# the oracle depends on the CPU, so these operators get finite specials only
FINITE_SPECIALS_ONLY = {"_gelu_erf", "_gelu_tanh"}
WRONG = ["a", None, [1, 2], object()]


@st.composite
def shapes(draw, ndim=None):
    n = draw(st.integers(0, 3)) if ndim is None else ndim
    return tuple(draw(st.sampled_from([0, 1, 1, 2, 3, 4])) for _ in range(n))


@st.composite
def partner_shape(draw, shape):
    """A shape that broadcasts with `shape` (mostly), or one that does not."""
    kind = draw(st.sampled_from(["same", "same", "suffix", "ones", "wider", "any"]))
    if kind == "same":
        return shape
    if kind == "suffix":
        return shape[draw(st.integers(0, len(shape))):]
    if kind == "ones":
        return tuple(1 if draw(st.booleans()) else n for n in shape)
    if kind == "wider":
        return (draw(st.sampled_from([1, 2])),) + shape
    return draw(shapes())


@st.composite
def values(draw, shape, dtype, op_name):
    seed = draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape)) if shape else 1
    if dtype == "bool":
        v = rng.integers(0, 2, size=size).astype(bool)
    elif dtype in INT_DTYPES:
        lo = 0 if dtype == "uint8" else -9
        v = rng.integers(lo, 10, size=size)
        if op_name not in NO_INT_EXTREMES and size and draw(st.booleans()):
            info = np.iinfo(dtype)
            v[rng.integers(0, size)] = draw(st.sampled_from([int(info.min), int(info.max)]))
    else:
        v = np.round(rng.uniform(-4, 4, size=size) * 16) / 16      # exact in every float dtype
        if size and draw(st.booleans()):
            specials = [f for f in SPECIAL_FLOATS if not (op_name in FINITE_SPECIALS_ONLY and math.isinf(f))]
            v[rng.integers(0, size)] = draw(st.sampled_from(specials))
    return v.reshape(shape)


@st.composite
def tensors(draw, shape, dtype, op_name):
    """A pytorchlite tensor of `shape` and `dtype`, in a random layout."""
    layout = draw(st.sampled_from(["contiguous", "contiguous", "transposed", "sliced", "expanded"]))
    vals = draw(values(shape, dtype, op_name))
    if layout == "transposed" and len(shape) >= 2 and hasattr(pytorchlite.Tensor, "transpose"):
        return from_values(np.ascontiguousarray(np.swapaxes(vals, 0, 1)), dtype).transpose(0, 1)
    if layout == "sliced" and len(shape) >= 1:
        big = np.zeros((shape[0] * 2,) + shape[1:], dtype=vals.dtype)
        big[::2] = vals
        return from_values(big, dtype)[::2]
    if layout == "expanded" and len(shape) >= 1 and hasattr(pytorchlite.Tensor, "expand"):
        return from_values(vals[:1], dtype).expand(*shape)
    return from_values(vals, dtype)


@st.composite
def numbers(draw):
    return draw(st.one_of(st.integers(-5, 5), st.sampled_from([True, False]),
                          st.floats(-4, 4, allow_nan=False).map(lambda f: round(f * 8) / 8),
                          st.sampled_from(SPECIAL_FLOATS)))


@st.composite
def calls(draw, op):
    """(args, kwargs) for op's generated function, in pytorchlite values."""
    tensor_args = [a for a in op.schema.arguments if a.type.is_tensor]
    base_dtype = draw(st.sampled_from(ALL_DTYPES))
    base_shape = draw(shapes())
    args, kwargs = [], {}
    for k, a in enumerate(tensor_args):
        if op.pointwise.promotion == "where" and k == 0:
            dtype = draw(st.sampled_from(["bool"] * 6 + ["uint8", "int64", "float32"]))
        elif draw(st.integers(0, 3)) == 0:
            dtype = draw(st.sampled_from(ALL_DTYPES))    # a second dtype: promotion
        else:
            dtype = base_dtype
        shape = base_shape if k == 0 else draw(partner_shape(base_shape))
        if draw(st.integers(0, 4)) == 0:
            shape = ()                                    # 0-d: a "dimensionless" operand
        if a.name in op.tensor_scalars and draw(st.integers(0, 3)) == 0:
            args.append(draw(numbers()))
        else:
            args.append(draw(tensors(shape, dtype, op.name)))
    positional_done = False      # positional Scalars are given as a prefix
    for a in op.schema.arguments:
        if a.type.base != "Scalar":
            continue
        keyword = a in op.schema.kwonly
        if a.default is not None and (draw(st.booleans()) or (positional_done and not keyword)):
            positional_done = positional_done or not keyword
            continue
        v = draw(numbers()) if op.name != "_round_decimals" else draw(st.integers(-3, 3))
        if keyword:
            kwargs[a.python_name] = v
        else:
            args.append(v)
    # now and then a wrong-typed argument
    if draw(st.integers(0, 9)) == 0:
        slots = list(range(len(args))) + list(kwargs)
        slot = draw(st.sampled_from(slots))
        bad = draw(st.sampled_from(WRONG))
        if isinstance(slot, int):
            args[slot] = bad
        else:
            kwargs[slot] = bad
    return args, kwargs


@pytest.mark.parametrize("op", POINTWISE, ids=[op.name for op in POINTWISE])
def test_pointwise_fuzz(op):
    ours = getattr(G, op.name)
    oracle = oracle_for(op.name)

    @settings(max_examples=int(os.environ.get("PTL_FUZZ_EXAMPLES", 25)), deadline=None, database=None,
              derandomize=not os.environ.get("PTL_FUZZ_RANDOM"),
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(calls(op))
    def run(call):
        args, kwargs = call
        check_parity(ours, oracle, *args, label=op.name, **kwargs)

    run()
