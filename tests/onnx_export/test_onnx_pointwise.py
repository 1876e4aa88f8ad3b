"""Every pointwise operator of ops.yaml with an `onnx:` form, exported and run in onnxruntime
at batch sizes 1 and 7 (the list comes from the generated table, so a new form is tested)."""

import zlib

import numpy as np
import pytest

import pytorchlite
import pytorchlite._ops
from pytorchlite.generated import onnx_table

from onnx_util import export_and_compare  # noqa: E402  (skips without onnx/onnxruntime)

POINTWISE = sorted(name for name, e in onnx_table.OPS.items() if e.kind == "pointwise" and e.fn is not None)

# inputs outside the default domain (values of magnitude 0.1 to 0.9, either sign)
POSITIVE = {"log", "log2", "log10", "log1p", "sqrt", "rsqrt", "pow"}
SHIFTED = {"acosh": 1.5, "arccosh": 1.5}
SPECIAL_VALUES = {"isnan", "isinf", "isposinf", "isneginf", "isfinite", "_nan_to_num", "fmax", "fmin", "signbit",
                  "copysign"}
# Scalar arguments without a default
EXTRA = {"threshold_backward": (0.2,), "_round_decimals": (2,), "_nan_to_num": (0.5, 100.0, -100.0)}


def _values(name, b, k, rng):
    mag = rng.uniform(0.1, 0.9, size=(b, 5))
    x = mag if (name in POSITIVE and k == 0) else mag * rng.choice([-1.0, 1.0], size=(b, 5))
    x = x + SHIFTED.get(name, 0.0)
    if name in SPECIAL_VALUES:
        x[:, :4] = [np.nan, np.inf, -np.inf, -0.0]
    return pytorchlite.tensor(x.astype(np.float32))


def test_the_list_covers_the_targets():
    assert len(POINTWISE) >= 70
    assert {"add", "mul", "sub", "relu", "sigmoid", "tanh", "exp", "where.self", "eq"} <= set(POINTWISE)


@pytest.mark.parametrize("name", POINTWISE)
def test_pointwise(name):
    tensor_args = onnx_table.OPS[name].tensors
    base, _, overload = name.partition(".")
    # the public function, else the binding (private operators such as _gelu_erf, nn.functional's)
    op = getattr(pytorchlite, base, None) or getattr(pytorchlite._ops.ops, base)
    n = len(tensor_args)
    extra = EXTRA.get(name, ())
    def make(b):
        r = np.random.default_rng([zlib.crc32(name.encode()), b])     # the same inputs on every call
        xs = [_values(name, b, k, r) for k in range(n)]
        if name == "where.self":
            xs[0] = xs[0] > 0
        return tuple(xs)

    def f(*xs):
        return op(*xs, *extra)

    names = [f"x{i}" for i in range(n)]
    export_and_compare(f, make, names)
