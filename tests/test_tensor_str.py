"""pytorchlite._tensor_str against PyTorch's own repr(tensor).

Every case builds a real torch tensor, hands its values to ``format_tensor`` and
expects PyTorch's text with ``torch.`` spelled ``pytorchlite.``.
"""

import ast
import math
import pathlib

import numpy as np
import pytest

from parity import HAVE_TORCH, torch_or_missing  # noqa: E402

torch = torch_or_missing()      # without PyTorch, a test that calls it is skipped

from pytorchlite import _tensor_str  # noqa: E402
from pytorchlite._tensor_str import format_tensor, get_printoptions, set_printoptions  # noqa: E402

NAN, INF = math.nan, math.inf
ALL_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64",
              "float16", "bfloat16", "float32", "float64"]
FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64"]
INT_DTYPES = ["uint8", "int8", "int16", "int32", "int64"]


@pytest.fixture(autouse=True)
def _restore_print_state():
    """Every test starts and ends with default print options and default dtype."""
    set_printoptions(profile="default")
    if HAVE_TORCH:
        torch.set_printoptions(profile="default")
    yield
    set_printoptions(profile="default")
    if HAVE_TORCH:
        torch.set_printoptions(profile="default")
        torch.set_default_dtype(torch.float32)


def set_both(**options):
    """Apply the same print options to PyTorch and to pytorchlite."""
    torch.set_printoptions(**options)
    set_printoptions(**options)


def dtype_name(t):
    return str(t.dtype).removeprefix("torch.")


def ours(t, default_float_name="float32", **extra):
    """pytorchlite's text for the torch tensor ``t``."""
    values = t.detach()
    if values.dtype == torch.bfloat16:
        values = values.float()
    grad_fn_name = type(t.grad_fn).__name__ if t.grad_fn is not None else None
    return format_tensor(values.numpy(), dtype_name=dtype_name(t),
                         default_float_name=default_float_name,
                         requires_grad=t.requires_grad, grad_fn_name=grad_fn_name, **extra)


def expected(t):
    return repr(t).replace("torch.", "pytorchlite.")


def assert_matches(t, default_float_name="float32"):
    assert ours(t, default_float_name) == expected(t)


def make(values, dtype):
    return torch.tensor(np.asarray(values), dtype=getattr(torch, dtype))


# --- fixed edge cases -------------------------------------------------------------------

EDGE_CASES = [
    # 0-d
    (0.0, "float32"), (-0.0, "float32"), (1.5, "float32"), (NAN, "float32"), (-INF, "float64"),
    (1e-10, "float32"), (1e10, "float64"), (123456789.0, "float32"), (0.1, "float16"),
    (3.14159, "bfloat16"), (5, "int64"), (-7, "int8"), (200, "uint8"), (True, "bool"),
    (False, "bool"), (2.0, "float64"), (-2.0, "float16"),
    # integral floats ("int mode")
    ([1.0, 2.0], "float32"), ([0.0, 0.0], "float32"), ([-0.0, 0.0], "float32"),
    ([1.0, -1.0, 0.0], "float64"), ([100.0, -3.0], "float16"), ([1e5, 2.0], "float32"),
    ([1.0, NAN], "float32"), ([1.0, INF, -INF], "float32"), ([123.0, -0.0, NAN], "bfloat16"),
    # only non-finite values
    ([NAN], "float32"), ([NAN, INF, -INF], "float64"), ([INF, 0.0], "float32"),
    # fixed notation
    ([0.1, 0.2, 0.3], "float32"), ([1.5, NAN, -INF], "float32"), ([0.1234567], "float64"),
    ([-0.0, 0.5], "float32"), ([1e-4, 0.1], "float32"), ([1.0, 1000.0, 0.5], "float32"),
    ([123456.7, 500.5], "float32"), ([0.00015, 0.1], "float64"), ([99999.99995], "float64"),
    ([0.1, 0.2, 0.3], "float16"), ([0.1, 0.2, 0.3], "bfloat16"), ([2.71828, -1.41421], "bfloat16"),
    # scientific notation
    ([1e-5, 1.0], "float32"), ([1.0, 1001.0], "float32"), ([1.5, 1000.5], "float32"),
    ([1e8 + 8, 1.0], "float64"), ([1e9], "float32"), ([-1e-10, 1e10], "float64"),
    ([1e10, NAN], "float32"), ([1e-10, INF, -0.0], "float32"), ([1e10, 2e10], "float32"),
    ([65504.0, -65504.0, 6e-8], "float16"), ([1e38, 1e-38], "bfloat16"), ([1e-300, 1e300], "float64"),
    ([1e-45, 3e38], "float32"), ([1.0, 2.0, 3e9], "float32"),
    # integers and booleans
    ([-128, 0, 127], "int8"), ([0, 255], "uint8"), ([-32768, 32767], "int16"),
    ([2**31 - 1, -(2**31)], "int32"), ([2**63 - 1, -(2**63)], "int64"), ([0], "int64"),
    ([True], "bool"), ([False, True], "bool"), ([[True, False], [False, False]], "bool"),
    ([[1, -1], [10, 100]], "int32"),
    # line wrapping
    (np.arange(100.0), "float32"), (np.linspace(-1, 1, 50), "float64"),
    (np.arange(30) * 1e-7, "float32"), (np.arange(200), "int64"), (np.arange(60) % 2 == 0, "bool"),
    (np.arange(40.0).reshape(2, 20) / 3, "float32"), (np.arange(300).reshape(3, 100), "int16"),
    (np.arange(24.0).reshape(2, 3, 4) * 1e6 + 0.5, "float64"),
    # nesting
    (np.arange(24).reshape(2, 3, 4), "int64"), (np.arange(16.0).reshape(2, 2, 2, 2), "float32"),
    (np.arange(6.0).reshape(1, 1, 1, 6) / 7, "float32"), (np.ones((1, 1, 1, 1, 1)), "float32"),
    (np.arange(4.0).reshape(4, 1), "float16"), (np.zeros((2, 1, 3), dtype=bool), "bool"),
    # summarization (threshold 1000)
    (np.arange(1000), "int64"), (np.arange(1001), "int64"), (np.arange(2000.0) / 3, "float32"),
    (np.arange(1600.0).reshape(40, 40), "float32"), (np.arange(1200.0).reshape(3, 400), "float32"),
    (np.arange(1331).reshape(11, 11, 11), "int32"), (np.arange(1200.0).reshape(2, 3, 4, 50), "float64"),
    (np.arange(2000.0).reshape(1000, 2), "float32"), (np.arange(5000.0).reshape(5, 10, 10, 10), "bfloat16"),
    # the summarized-away values do not affect the format
    (np.concatenate([[1.0, 2.0, 3.0], np.full(2000, 0.5), [4.0, 5.0, 6.0]]), "float32"),
    (np.concatenate([[1.0], np.full(2000, 1e10), [2.0]]), "float32"),
    # empty tensors
    ([], "float32"), ([], "float64"), ([], "int64"), ([], "bool"), ([], "bfloat16"),
    (np.zeros((0, 3)), "float32"), (np.zeros((2, 0, 4)), "int32"), (np.zeros((0,)), "float16"),
    (np.zeros((3, 0)), "bool"), (np.zeros((0, 0)), "float64"),
]


@pytest.mark.parametrize("values, dtype", EDGE_CASES, ids=range(len(EDGE_CASES)))
def test_edge_cases(values, dtype):
    assert_matches(make(values, dtype))


# --- random cases -----------------------------------------------------------------------

SCALES = [1e-10, 1e-6, 1e-4, 1e-2, 1.0, 10.0, 1e3, 1e5, 1e8, 1e10, 1e12]
INT_RANGES = {"uint8": (0, 256), "int8": (-128, 128), "int16": (-32768, 32768),
              "int32": (-(2**31), 2**31), "int64": (-(2**63), 2**63)}


LARGE_SHAPES = [(2000,), (1001,), (50, 50), (3, 500), (12, 10, 10), (2, 3, 13, 14),
                (600, 2), (1, 1, 1100)]


def random_shape(rng):
    if rng.random() < 0.15:  # large enough to be summarized
        return LARGE_SHAPES[int(rng.integers(len(LARGE_SHAPES)))]
    ndim = int(rng.integers(0, 5))
    return tuple(int(n) for n in rng.integers(1, 7 if ndim > 2 else 12, size=ndim))


def random_floats(rng, shape):
    kind = rng.choice(["normal", "integral", "mixed", "tiny_and_huge"])
    if kind == "normal":
        values = rng.standard_normal(shape) * rng.choice(SCALES)
    elif kind == "integral":
        values = np.round(rng.standard_normal(shape) * rng.choice([1.0, 10.0, 1e3, 1e6, 1e9]))
    elif kind == "mixed":
        values = rng.choice([-1.0, 1.0], size=shape) * 10.0 ** rng.uniform(-12, 12, size=shape)
    else:
        values = rng.choice([1e-10, 1e10, -3.5, 0.25], size=shape)
    values = np.asarray(values, dtype=np.float64)
    if rng.random() < 0.4 and values.size:  # sprinkle special values
        flat = values.reshape(-1)
        count = int(rng.integers(1, 4))
        where = rng.integers(0, flat.size, size=count)
        flat[where] = rng.choice([NAN, INF, -INF, 0.0, -0.0], size=count)
    return values


def random_case(seed):
    rng = np.random.default_rng(seed)
    dtype = str(rng.choice(ALL_DTYPES))
    shape = random_shape(rng)
    if dtype == "bool":
        values = rng.random(shape) < 0.5
    elif dtype in INT_RANGES:
        low, high = INT_RANGES[dtype]
        if rng.random() < 0.5:
            low, high = max(low, -100), min(high, 100)
        values = rng.integers(low, high, size=shape, dtype=np.int64 if dtype != "uint8" else np.uint8)
    else:
        values = random_floats(rng, shape)
    return make(values, dtype)


@pytest.mark.parametrize("seed", range(400))
def test_random(seed):
    assert_matches(random_case(seed))


# --- print options ----------------------------------------------------------------------

OPTION_SETS = [
    dict(precision=2), dict(precision=0), dict(precision=8), dict(sci_mode=True),
    dict(sci_mode=False), dict(precision=3, sci_mode=True), dict(linewidth=40),
    dict(linewidth=120), dict(linewidth=5), dict(threshold=10), dict(threshold=0),
    dict(edgeitems=1, threshold=5), dict(edgeitems=0), dict(edgeitems=0, threshold=5),
    dict(profile="short"), dict(profile="full"), dict(profile="default"),
    dict(profile="short", precision=6), dict(profile="full", linewidth=60),
]

OPTION_TENSORS = [
    (0.5, "float32"), (7, "int64"), ([1.0, 2.0], "float32"), ([0.1, 2.5, -3.75], "float64"),
    ([1e-5, 1.0], "float32"), ([1e10, -2.0], "float32"), ([1.0, 1e5, NAN], "float32"),
    ([0.0, -0.0], "float32"), ([NAN, INF], "float16"), ([0.333, 12.5], "bfloat16"),
    (np.arange(30) - 15, "int32"), (np.arange(20.0) / 7, "float32"), ([True, False] * 6, "bool"),
    (np.arange(24.0).reshape(2, 3, 4) / 9, "float32"), (np.arange(2000.0) / 3, "float32"),
    (np.arange(1500).reshape(30, 50), "int64"), (np.arange(64.0).reshape(4, 4, 2, 2), "float64"),
    ([], "float32"), (np.zeros((0, 2)), "int64"),
]


@pytest.mark.parametrize("options", OPTION_SETS, ids=str)
@pytest.mark.parametrize("values, dtype", OPTION_TENSORS, ids=range(len(OPTION_TENSORS)))
def test_print_options(options, values, dtype):
    set_both(**options)
    assert_matches(make(values, dtype))


@pytest.mark.parametrize("options", OPTION_SETS, ids=str)
def test_get_printoptions(options):
    set_both(**options)
    assert get_printoptions() == torch._tensor_str.get_printoptions()


def test_get_printoptions_round_trip():
    set_printoptions(precision=6, threshold=50, edgeitems=2, linewidth=70, sci_mode=True)
    saved = get_printoptions()
    set_printoptions(profile="default")
    assert get_printoptions()["precision"] == 4 and get_printoptions()["sci_mode"] is None
    set_printoptions(**saved)
    assert get_printoptions() == saved


def test_set_printoptions_resets_sci_mode():
    set_both(sci_mode=True)
    set_both(precision=5)  # like PyTorch, sci_mode goes back to automatic
    assert get_printoptions()["sci_mode"] is None
    assert_matches(make([0.5, 1.25], "float32"))


@pytest.mark.parametrize("seed", range(60))
def test_random_with_options(seed):
    rng = np.random.default_rng(10_000 + seed)
    options = dict(precision=int(rng.integers(0, 9)), linewidth=int(rng.integers(20, 150)),
                   edgeitems=int(rng.integers(0, 5)), threshold=int(rng.choice([5, 50, 1000])),
                   sci_mode=[None, True, False][int(rng.integers(0, 3))])
    set_both(**options)
    assert_matches(random_case(seed))


# --- autograd suffixes ------------------------------------------------------------------

def leaf(values, dtype="float32"):
    return make(values, dtype).requires_grad_()


GRAD_CASES = [
    lambda: leaf([1.0, 2.0]),
    lambda: leaf(0.5),
    lambda: leaf([1.5, 2.5], "float64"),
    lambda: leaf([1.5, 2.5], "bfloat16") * 2,
    lambda: leaf([1.0, 2.0]) + 1,
    lambda: leaf([1.0, 2.0]) * 2,
    lambda: leaf([[1.0, 2.0], [3.0, 4.0]]).sum(),
    lambda: leaf(np.arange(6.0)).view(2, 3),
    lambda: leaf(np.arange(6.0).reshape(2, 3))[0],
    lambda: leaf(np.arange(6.0).reshape(2, 3), "float16").t(),
    lambda: leaf(np.arange(100.0) / 3),
    lambda: leaf(np.arange(100.0) / 3, "float64").exp(),
    lambda: leaf(np.arange(2000.0)).sin(),
    lambda: leaf(np.arange(24.0).reshape(2, 3, 4)).mean(dim=0),
    lambda: leaf([]),
    lambda: leaf(np.zeros((0, 4)), "float64") * 2,
    lambda: leaf([1e-8, 1.0]).matmul(leaf([2.0, 3.0])),
]


@pytest.mark.parametrize("build", GRAD_CASES, ids=range(len(GRAD_CASES)))
def test_autograd_suffixes(build):
    assert_matches(build())


@pytest.mark.parametrize("n", range(1, 30))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_suffix_wrapping(n, dtype):
    """Lengths around the point where a suffix moves to its own line."""
    assert_matches(leaf(np.arange(n) * 1.25, dtype) * 3)
    assert_matches(leaf(np.arange(n) * 1.25, dtype))


def test_line_breaks_use_pytorch_spelling_of_dtype():
    """'dtype=pytorchlite.float64' is 6 characters longer than PyTorch's suffix; the
    line is still broken (or not) exactly where PyTorch breaks it."""
    text = format_tensor(np.arange(6) * 1.25, dtype_name="float64", default_float_name="float32")
    assert text == ("tensor([0.0000, 1.2500, 2.5000, 3.7500, 5.0000, 6.2500], "
                    "dtype=pytorchlite.float64)")


# --- default dtype float64 --------------------------------------------------------------

DOUBLE_DEFAULT_CASES = [
    ([1.0, 2.0], "float64"), ([1.0, 2.0], "float32"), ([0.5], "float16"), ([0.5], "bfloat16"),
    (3.25, "float64"), (3.25, "float32"), ([1, 2], "int64"), ([1, 2], "int16"), ([True], "bool"),
    ([], "float64"), ([], "float32"), ([], "int64"), (np.zeros((0, 2)), "float64"),
    (np.arange(2000.0) / 7, "float32"), (np.arange(2000.0) / 7, "float64"),
]


@pytest.mark.parametrize("values, dtype", DOUBLE_DEFAULT_CASES, ids=range(len(DOUBLE_DEFAULT_CASES)))
def test_default_float64(values, dtype):
    torch.set_default_dtype(torch.float64)
    assert_matches(make(values, dtype), default_float_name="float64")


def test_default_float64_with_grad():
    torch.set_default_dtype(torch.float64)
    assert_matches(leaf([1.0, 2.0], "float32") * 2, default_float_name="float64")
    assert_matches(leaf([1.0, 2.0], "float64") * 2, default_float_name="float64")


# --- device suffix (CPU-only torch: hand-written or built from torch's own helpers) -------

def test_device_suffix_simple():
    cuda = dict(default_float_name="float32", device="cuda:0")
    assert format_tensor(np.array([1.0, 2.0], np.float32), dtype_name="float32", **cuda) == \
        "tensor([1., 2.], device='cuda:0')"
    assert format_tensor(np.array([1, 2], np.int32), dtype_name="int32", **cuda) == \
        "tensor([1, 2], device='cuda:0', dtype=pytorchlite.int32)"
    assert format_tensor(np.zeros((0, 3), np.float32), dtype_name="float32", **cuda) == \
        "tensor([], device='cuda:0', size=(0, 3))"
    assert format_tensor(np.array(2.5, np.float32), dtype_name="float32", requires_grad=True,
                         **cuda) == "tensor(2.5000, device='cuda:0', requires_grad=True)"
    assert format_tensor(np.array([1.0]), dtype_name="float64", grad_fn_name="AddBackward0",
                         **cuda) == \
        "tensor([1.], device='cuda:0', dtype=pytorchlite.float64, grad_fn=<AddBackward0>)"
    assert format_tensor(np.array([1.0], np.float32), dtype_name="float32",
                         default_float_name="float32", device="cpu") == "tensor([1.])"


@pytest.mark.parametrize("n", [1, 8, 11, 12, 13, 14, 40])
def test_device_suffix_wrapping(n):
    """Compare with PyTorch's own suffix layout for a (pretend) CUDA tensor."""
    t = make(np.arange(n) * 1.25, "float64")
    body = "tensor(" + torch._tensor_str._tensor_str(t, len("tensor("))
    suffixes = ["device='cuda:0'", "dtype=torch.float64", "grad_fn=<MulBackward0>"]
    reference = torch._tensor_str._add_suffixes(body, suffixes, len("tensor("), False)
    assert format_tensor(t.numpy(), dtype_name="float64", default_float_name="float32",
                         device="cuda:0", grad_fn_name="MulBackward0") == \
        reference.replace("torch.", "pytorchlite.")


# --- interface details ------------------------------------------------------------------

def test_shape_argument_and_array_like_input():
    t = make(np.arange(6.0).reshape(2, 3) / 4, "float32")
    assert format_tensor([0.0, 0.25, 0.5, 0.75, 1.0, 1.25], dtype_name="float32",
                         default_float_name="float32", shape=(2, 3)) == expected(t)
    assert format_tensor(np.zeros(0), dtype_name="int64", default_float_name="float32",
                         shape=(0, 5)) == "tensor([], size=(0, 5), dtype=pytorchlite.int64)"


def test_values_are_cast_to_the_named_dtype():
    t = make([0.1, 1 / 3], "float32")
    assert format_tensor(np.array([0.1, 1 / 3]), dtype_name="float32",
                         default_float_name="float32") == expected(t)


def test_unknown_dtype_rejected():
    with pytest.raises(ValueError):
        format_tensor(np.zeros(2), dtype_name="complex64", default_float_name="float32")


def test_module_is_standalone():
    tree = ast.parse(pathlib.Path(_tensor_str.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add("." if node.level else node.module.split(".")[0])
    assert imported <= {"dataclasses", "math", "numpy"}
