"""Random number generation: the Philox stream, generators and their state, determinism
across thread counts, distributions (loose statistical checks with fixed seeds), dtypes,
shapes, in-place fills of non-contiguous views, and PyTorch's errors.

The numbers are not PyTorch's (another generator); the API, dtypes, shapes, errors and
distributions are, and torch (when installed) is the oracle for the error messages.
"""

import math
import pickle
import warnings

import numpy as np
import pytest

import pytorchlite as P
from pytorchlite._C import ffi, lib

FLOATS = [P.float16, P.bfloat16, P.float32, P.float64]
INTS = [P.uint8, P.int8, P.int16, P.int32, P.int64]


def np_of(t):
    """float64 NumPy copy of a tensor (bfloat16 included)."""
    if t.dtype is P.bfloat16:
        t = t.float()
    return np.array(t.numpy(), dtype=np.float64)


def gen(seed=0):
    return P.Generator().manual_seed(seed)


@pytest.fixture
def threads():
    """Restore the thread count after a test that changes it."""
    n = P.get_num_threads()
    yield
    P.set_num_threads(n)


# ---- the Philox4x32-10 stream ---------------------------------------------------------------

@pytest.mark.parametrize("ctr, key, expected", [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
])
def test_philox_known_answers(ctr, key, expected):
    # Random123's kat_vectors: a CUDA implementation of the same function matches these
    out = ffi.new("uint32_t[4]")
    lib.ptl_philox4x32_10(ffi.new("uint32_t[4]", ctr), ffi.new("uint32_t[2]", key), out)
    assert tuple(out) == expected


def test_uniform_is_the_documented_function_of_the_stream():
    # element i of a float32 rand is word i of the stream: lane i % 4 of counter
    # (offset + i // 4), as a 24-bit fraction; key = seed
    seed = 0x0123456789ABCDEF
    g = P.Generator().manual_seed(seed).set_offset(5)
    got = P.rand(9, generator=g).numpy()
    out = ffi.new("uint32_t[4]")
    key = ffi.new("uint32_t[2]", (seed & 0xFFFFFFFF, seed >> 32))
    expected = []
    for i in range(9):
        c = 5 + i // 4
        lib.ptl_philox4x32_10(ffi.new("uint32_t[4]", (c, 0, 0, 0)), key, out)
        expected.append((out[i % 4] >> 8) / 2.0 ** 24)
    np.testing.assert_array_equal(got, np.array(expected, dtype=np.float32))
    assert g.get_offset() == 5 + 3


# ---- generators and state ---------------------------------------------------------------------

def test_generator_api():
    g = P.Generator()
    assert g.device == P.device("cpu")
    assert g.manual_seed(123) is g
    assert g.initial_seed() == 123
    assert g.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    assert g.manual_seed(2 ** 64 - 1).initial_seed() == 2 ** 64 - 1
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s and g.get_offset() == 0
    state = g.get_state()
    assert state.dtype is P.uint8 and state.shape == (16,)
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got float"):
        g.manual_seed(1.5)
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got bool"):
        g.manual_seed(True)
    with pytest.raises(ValueError, match="Overflow"):
        g.manual_seed(2 ** 64)
    with pytest.raises(RuntimeError, match="not supported"):
        P.Generator("cuda")


def test_global_seeding_functions():
    assert P.manual_seed(7) is P.default_generator
    assert P.initial_seed() == 7
    assert P.manual_seed(2.9).initial_seed() == 2     # int(seed), as torch.manual_seed does
    assert P.random.initial_seed() == 2
    assert P.random.manual_seed is P.manual_seed
    s = P.seed()
    assert P.initial_seed() == s


def test_same_seed_same_numbers_and_fresh_numbers_after():
    a = P.rand(100, generator=gen(3)).numpy()
    b = P.rand(100, generator=gen(3)).numpy()
    np.testing.assert_array_equal(a, b)
    g = gen(3)
    first, second = P.rand(100, generator=g).numpy(), P.rand(100, generator=g).numpy()
    np.testing.assert_array_equal(first, a)
    assert not np.array_equal(first, second)
    assert not np.array_equal(P.rand(100, generator=gen(4)).numpy(), a)


def test_default_generator_manual_seed_reproduces():
    P.manual_seed(11)
    a = [P.rand(5).numpy(), P.randn(5).numpy(), P.randint(0, 100, (5,)).numpy(), P.randperm(7).numpy()]
    P.manual_seed(11)
    b = [P.rand(5).numpy(), P.randn(5).numpy(), P.randint(0, 100, (5,)).numpy(), P.randperm(7).numpy()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_state_save_and_restore():
    g = gen(5)
    P.randn(37, generator=g)
    state = g.get_state()
    a = P.rand(50, generator=g).numpy()
    b = P.randint(0, 10, (50,), generator=g).numpy()
    g.set_state(state)
    np.testing.assert_array_equal(P.rand(50, generator=g).numpy(), a)
    np.testing.assert_array_equal(P.randint(0, 10, (50,), generator=g).numpy(), b)
    # the state is a copy: drawing does not change it; another generator can take it
    h = P.Generator().set_state(state)
    np.testing.assert_array_equal(P.rand(50, generator=h).numpy(), a)
    # global state
    P.manual_seed(9)
    st = P.get_rng_state()
    x = P.randn(10).numpy()
    P.set_rng_state(st)
    np.testing.assert_array_equal(P.randn(10).numpy(), x)


def test_set_state_errors():
    g = P.Generator()
    with pytest.raises(TypeError, match="expected a torch.ByteTensor, but got list"):
        g.set_state([1, 2])
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        g.set_state(P.zeros(16))
    with pytest.raises(RuntimeError, match="size 16 but found the input RNG state size to be 3"):
        g.set_state(P.zeros(3, dtype=P.uint8))
    with pytest.raises(RuntimeError, match="RNG state must be contiguous"):
        g.set_state(P.zeros(32, dtype=P.uint8)[::2])


def test_clone_state_pickle_and_offset():
    g = gen(8)
    P.rand(3, generator=g)
    h = g.clone_state()
    k = pickle.loads(pickle.dumps(g))
    a = P.rand(20, generator=g).numpy()
    np.testing.assert_array_equal(P.rand(20, generator=h).numpy(), a)
    np.testing.assert_array_equal(P.rand(20, generator=k).numpy(), a)
    g.set_offset(0)
    np.testing.assert_array_equal(P.rand(3, generator=g).numpy(), P.rand(3, generator=gen(8)).numpy())


def test_fork_rng_restores_the_default_state():
    P.manual_seed(1)
    with P.random.fork_rng():
        P.rand(10)
    a = P.rand(4).numpy()
    P.manual_seed(1)
    np.testing.assert_array_equal(P.rand(4).numpy(), a)


def test_generators_are_independent():
    g1, g2 = gen(1), gen(1)
    a = P.rand(10, generator=g1).numpy()
    P.rand(1000, generator=P.Generator().manual_seed(1))   # another generator, same seed
    P.manual_seed(1)
    P.randn(100)                                           # the default generator
    np.testing.assert_array_equal(P.rand(10, generator=g2).numpy(), a)
    np.testing.assert_array_equal(P.rand(10, generator=g1).numpy(), P.rand(10, generator=g2).numpy())


@pytest.mark.parametrize("make, counters", [
    (lambda g: P.rand(10, generator=g), 3),                              # 1 word each
    (lambda g: P.rand(10, dtype=P.float64, generator=g), 5),             # 2 words each
    (lambda g: P.randn(10, generator=g), 3),                             # 5 pairs x 2 words
    (lambda g: P.randn(11, dtype=P.float64, generator=g), 6),            # 6 pairs x 4 words
    (lambda g: P.randint(0, 10, (10,), generator=g), 5),                 # 2 words each
    (lambda g: P.randint(0, 2 ** 40, (10,), generator=g), 10),           # 4 words each
    (lambda g: P.empty(10).bernoulli_(0.5, generator=g), 3),
    (lambda g: P.randperm(5, generator=g), 2),                           # 4 steps x 2 words
    (lambda g: P.rand(0, 3, generator=g), 0),
])
def test_offset_advances_by_counters_used(make, counters):
    g = gen(0)
    make(g)
    assert g.get_offset() == counters


def test_consecutive_requests_tile_the_stream():
    # multiples of 4 outputs: rand(8) twice is rand(16)
    g = gen(2)
    two = np.concatenate([P.rand(8, generator=g).numpy(), P.rand(8, generator=g).numpy()])
    np.testing.assert_array_equal(two, P.rand(16, generator=gen(2)).numpy())


# ---- determinism across thread counts and layouts -----------------------------------------------

_N = 100_003   # above PTL_GRAIN (32768): the kernels split the work across threads

_THREAD_CASES = {
    "rand": lambda g: P.rand(_N, generator=g),
    "rand_f64": lambda g: P.rand(_N, dtype=P.float64, generator=g),
    "rand_f16": lambda g: P.rand(_N, dtype=P.float16, generator=g),
    "randn": lambda g: P.randn(_N, generator=g),
    "randn_f64": lambda g: P.randn(_N, dtype=P.float64, generator=g),
    "randn_strided": lambda g: P.zeros(400, 300).t().normal_(1.0, 2.0, generator=g),
    "randint": lambda g: P.randint(-5, 1000, (_N,), generator=g),
    "randint_wide": lambda g: P.randint(-2 ** 62, 2 ** 62, (_N,), generator=g),
    "exponential": lambda g: P.empty(_N).exponential_(2.0, generator=g),
    "bernoulli": lambda g: P.bernoulli(P.full((_N,), 0.3), generator=g),
    "normal_tensor": lambda g: P.normal(P.zeros(_N), P.ones(1), generator=g),
    "poisson": lambda g: P.poisson(P.full((_N,), 12.5), generator=g),
    "multinomial": lambda g: P.multinomial(P.ones(2000, 50), 5, generator=g),
    "multinomial_repl": lambda g: P.multinomial(P.ones(2000, 50), 30, True, generator=g),
}


@pytest.mark.parametrize("name", sorted(_THREAD_CASES))
def test_same_numbers_on_any_thread_count(name, threads):
    make = _THREAD_CASES[name]
    results = []
    for n in (1, 2, 3):
        P.set_num_threads(n)
        results.append(np_of(make(gen(42))))
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])


def test_values_follow_logical_order_not_memory_layout():
    # element i of the view's row-major order gets the value element i of a contiguous tensor would
    a = P.empty(5, 4).uniform_(generator=gen(6)).numpy()
    base = P.zeros(4, 5)
    base.t().uniform_(generator=gen(6))
    np.testing.assert_array_equal(base.t().contiguous().numpy(), a)


# ---- non-contiguous in-place fills ------------------------------------------------------------------

@pytest.mark.parametrize("fill", [
    lambda v: v.uniform_(2.0, 3.0),
    lambda v: v.normal_(5.0, 0.1),
    lambda v: v.exponential_(),
    lambda v: v.random_(1, 10),
    lambda v: v.bernoulli_(1.0),
])
@pytest.mark.parametrize("view", ["step", "transposed"])
def test_in_place_fill_writes_only_the_view(fill, view):
    base = P.zeros(6, 8)
    v = base[::2, 1::3] if view == "step" else base.t()[1::2]
    out = fill(v)
    assert out is v
    b = base.numpy()
    mask = np.zeros((6, 8), dtype=bool)
    if view == "step":
        mask[::2, 1::3] = True
    else:
        mask.T[1::2] = True
    assert (b[~mask] == 0).all()
    assert (b[mask] != 0).all()


def test_in_place_fill_bumps_the_version():
    x = P.zeros(3)
    v = x._version
    x.uniform_()
    x.normal_()
    assert x._version == v + 2


def test_in_place_fill_of_expanded_tensor_is_refused():
    x = P.zeros(1).expand(3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x.uniform_()


# ---- distributions --------------------------------------------------------------------------------

def _ks_stat(sample, cdf):
    x = np.sort(sample)
    n = len(x)
    c = cdf(x)
    return max(np.max(np.arange(1, n + 1) / n - c), np.max(c - np.arange(n) / n))


@pytest.mark.parametrize("dtype", [P.float32, P.float64])
def test_uniform_distribution(dtype):
    x = np_of(P.empty(200_000, dtype=dtype).uniform_(-2.0, 3.0, generator=gen(1)))
    assert x.min() >= -2.0 and x.max() < 3.0
    assert abs(x.mean() - 0.5) < 0.02
    assert abs(x.var() - 25 / 12) < 0.03
    assert _ks_stat(x, lambda v: (v + 2) / 5) < 0.005


@pytest.mark.parametrize("dtype", FLOATS)
def test_rand_never_returns_to(dtype):
    # 24-bit uniforms round up to 1.0 in float16/bfloat16 unless the kernel steps below `to`
    x = np_of(P.rand(300_000, dtype=dtype, generator=gen(2)))
    assert x.min() >= 0 and x.max() < 1
    y = np_of(P.empty(100_000, dtype=dtype).uniform_(0.0, 0.1, generator=gen(3)))
    assert y.max() < 0.1


def test_uniform_from_equal_to_fills_from():
    np.testing.assert_array_equal(P.empty(4).uniform_(1.5, 1.5).numpy(), np.full(4, 1.5, np.float32))


@pytest.mark.parametrize("dtype", [P.float32, P.float64])
def test_normal_distribution(dtype):
    x = np_of(P.randn(200_000, dtype=dtype, generator=gen(4)))
    assert abs(x.mean()) < 0.01
    assert abs(x.std() - 1) < 0.01
    assert abs(np.mean(x ** 3)) < 0.03          # symmetric
    assert abs(np.mean(x ** 4) - 3) < 0.1       # normal kurtosis
    erf = np.vectorize(math.erf)
    assert _ks_stat(x[:50_000], lambda v: 0.5 * (1 + erf(v / math.sqrt(2)))) < 0.01
    y = np_of(P.empty(100_000, dtype=dtype).normal_(3.0, 0.5, generator=gen(5)))
    assert abs(y.mean() - 3) < 0.01 and abs(y.std() - 0.5) < 0.01


def test_normal_tensor_forms_broadcast():
    mean = P.tensor([0.0, 10.0, -5.0])
    std = P.tensor([[1.0], [0.1]])
    out = P.normal(mean, std.expand(2, 3).contiguous().t().t(), generator=gen(6))
    assert out.shape == (2, 3) and out.dtype is P.float32
    big = np_of(P.normal(P.tensor([0.0, 10.0]).expand(50_000, 2), P.tensor([1.0, 3.0]), generator=gen(7)))
    assert abs(big[:, 0].mean()) < 0.03 and abs(big[:, 1].mean() - 10) < 0.06
    assert abs(big[:, 0].std() - 1) < 0.02 and abs(big[:, 1].std() - 3) < 0.06
    # a number and a tensor; the result takes the tensor's dtype
    assert P.normal(0.0, P.ones(3, dtype=P.float64)).dtype is P.float64
    assert P.normal(P.zeros(2, 2), 2.0).shape == (2, 2)
    assert P.normal(1.0, 2.0, (4, 5), dtype=P.float64).dtype is P.float64
    np.testing.assert_array_equal(P.normal(P.full((3,), 2.0), 0.0).numpy(), np.full(3, 2, np.float32))


@pytest.mark.parametrize("dtype", [P.float32, P.float64])
def test_exponential_distribution(dtype):
    x = np_of(P.empty(200_000, dtype=dtype).exponential_(2.0, generator=gen(8)))
    assert x.min() > 0
    assert abs(x.mean() - 0.5) < 0.01
    assert abs(x.var() - 0.25) < 0.01
    assert _ks_stat(x, lambda v: 1 - np.exp(-2 * v)) < 0.005


@pytest.mark.parametrize("low, high", [(0, 10), (-7, 13), (0, 2 ** 33 + 17), (-2 ** 62, 2 ** 62)])
def test_randint_uniformity(low, high):
    x = P.randint(low, high, (200_000,), generator=gen(9)).numpy()
    assert x.dtype == np.int64 and x.min() >= low and x.max() < high
    # chi-square over equal bins of the range (20, or one per value), so large ranges are checked too
    nb = min(20, high - low)
    bins = ((x.astype(object) - low) * nb // (high - low)).astype(np.int64)
    counts = np.bincount(bins, minlength=nb)
    expected = len(x) / nb
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 50      # at most 19 degrees of freedom: p < 1e-4


def test_randint_all_values_equally_likely():
    x = P.randint(3, 9, (120_000,), generator=gen(10)).numpy()
    counts = np.bincount(x - 3, minlength=6)
    assert counts.min() > 0 and ((counts - 20_000) ** 2 / 20_000).sum() < 30


@pytest.mark.parametrize("p", [0.0, 0.2, 0.5, 0.9, 1.0])
def test_bernoulli_rate(p):
    x = np_of(P.empty(100_000).bernoulli_(p, generator=gen(11)))
    assert set(np.unique(x)) <= {0.0, 1.0}
    assert abs(x.mean() - p) < 0.01
    if p in (0.0, 1.0):
        assert (x == p).all()


def test_bernoulli_tensor_probabilities():
    probs = P.tensor([0.0, 0.25, 0.75, 1.0]).expand(40_000, 4)
    x = np_of(P.bernoulli(probs.contiguous(), generator=gen(12)))
    np.testing.assert_allclose(x.mean(axis=0), [0, 0.25, 0.75, 1], atol=0.015)
    # bernoulli_ with a tensor p broadcast to self, and with p as a 0-d tensor
    y = np_of(P.empty(40_000, 4, dtype=P.int64).bernoulli_(P.tensor([0.0, 0.25, 0.75, 1.0]), generator=gen(13)))
    np.testing.assert_allclose(y.mean(axis=0), [0, 0.25, 0.75, 1], atol=0.015)
    assert np_of(P.zeros(5).bernoulli_(P.tensor(1.0))).tolist() == [1.0] * 5
    assert P.bernoulli(P.zeros(3), 0.5).dtype is P.float32
    assert P.bernoulli(P.zeros(3, dtype=P.float16)).dtype is P.float16
    # method forms
    assert P.full((3,), 1.0).bernoulli().tolist() == [1.0, 1.0, 1.0]


def test_poisson_distribution():
    for lam in (0.5, 4.0, 30.0, 500.0):
        x = np_of(P.poisson(P.full((50_000,), lam), generator=gen(14)))
        assert (x == np.round(x)).all() and x.min() >= 0
        assert abs(x.mean() - lam) < 0.05 * math.sqrt(lam) + 0.01
        assert abs(x.var() / lam - 1) < 0.05
    np.testing.assert_array_equal(np_of(P.poisson(P.zeros(4))), np.zeros(4))


def test_randperm_is_a_permutation():
    for n in (0, 1, 2, 10, 1000):
        p = P.randperm(n, generator=gen(n)).numpy()
        assert p.dtype == np.int64
        np.testing.assert_array_equal(np.sort(p), np.arange(n))
    # every position is uniform: mean of the first element over many permutations
    g = gen(15)
    firsts = np.array([P.randperm(5, generator=g).numpy()[0] for _ in range(3000)])
    counts = np.bincount(firsts, minlength=5)
    assert ((counts - 600) ** 2 / 600).sum() < 25


@pytest.mark.parametrize("dtype", [P.int32, P.int16, P.uint8, P.float32, P.float16, P.bfloat16, P.float64])
def test_randperm_dtypes(dtype):
    p = P.randperm(100, dtype=dtype, generator=gen(16))
    assert p.dtype is dtype
    np.testing.assert_array_equal(np.sort(np_of(p)), np.arange(100))


def test_multinomial_with_replacement_frequencies():
    probs = P.tensor([1.0, 0.0, 2.0, 7.0])
    x = P.multinomial(probs, 100_000, True, generator=gen(17)).numpy()
    assert x.dtype == np.int64 and x.shape == (100_000,)
    counts = np.bincount(x, minlength=4)
    assert counts[1] == 0
    np.testing.assert_allclose(counts / len(x), [0.1, 0, 0.2, 0.7], atol=0.01)


def test_multinomial_without_replacement():
    rows = P.tensor([[1.0, 2.0, 3.0, 4.0, 0.0], [0.0, 0.0, 5.0, 1.0, 1.0]])
    x = P.multinomial(rows, 3, generator=gen(18)).numpy()
    assert x.shape == (2, 3)
    for r in x:
        assert len(set(r.tolist())) == 3
    # zero-probability categories come only after every positive one
    assert set(x[1].tolist()) == {2, 3, 4}
    # first-draw frequencies follow the weights
    g = gen(19)
    big = P.tensor([1.0, 2.0, 3.0, 4.0]).expand(20_000, 4).contiguous()
    first = P.multinomial(big, 2, generator=g).numpy()
    assert (first[:, 0] != first[:, 1]).all()
    np.testing.assert_allclose(np.bincount(first[:, 0], minlength=4) / 20_000, [0.1, 0.2, 0.3, 0.4], atol=0.015)
    # all categories without replacement is a permutation of the row's support
    perm = P.multinomial(P.ones(6), 6, generator=g).numpy()
    np.testing.assert_array_equal(np.sort(perm), np.arange(6))
    # single sample, and method / dtype forms
    assert P.tensor([0.0, 1.0], dtype=P.float16).multinomial(1).tolist() == [1]
    assert P.multinomial(P.tensor([[0.0, 1.0]], dtype=P.float64), 4, replacement=True).tolist() == [[1, 1, 1, 1]]


def test_multinomial_non_contiguous_rows():
    probs = P.tensor([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]).t()   # rows [0,1,0], [1,0,1]
    x = P.multinomial(probs, 2, generator=gen(20)).numpy()
    assert x[0][0] == 1 and x[0][1] in (0, 2)     # then a zero-probability category
    assert set(x[1].tolist()) == {0, 2}


def test_multinomial_empty_rows():
    assert P.multinomial(P.ones(0, 3), 1).shape == (0, 1)


# ---- dtypes and integer fills ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
def test_float_dtypes(dtype):
    for make in (P.rand, P.randn):
        x = make(2, 3, dtype=dtype, generator=gen(21))
        assert x.dtype is dtype and x.shape == (2, 3)
    assert P.rand_like(P.zeros(4, dtype=dtype)).dtype is dtype
    assert P.randn_like(P.zeros(4, dtype=dtype)).dtype is dtype
    assert P.empty(3, dtype=dtype).exponential_().dtype is dtype
    # float16 / bfloat16 are computed in float and rounded: the statistics hold
    x = np_of(P.randn(50_000, dtype=dtype, generator=gen(22)))
    assert abs(x.mean()) < 0.02 and abs(x.std() - 1) < 0.02


def test_default_dtype_is_used():
    P.set_default_dtype(P.float64)
    try:
        assert P.rand(2).dtype is P.float64 and P.randn(2).dtype is P.float64
        assert P.normal(0.0, 1.0, (2,)).dtype is P.float64
    finally:
        P.set_default_dtype(P.float32)


@pytest.mark.parametrize("dtype", INTS + FLOATS)
def test_randint_dtypes(dtype):
    x = P.randint(2, 9, (1000,), dtype=dtype, generator=gen(23))
    assert x.dtype is dtype
    v = np_of(x)
    assert set(np.unique(v)) == set(range(2, 9))
    y = P.randint_like(P.zeros(1000, dtype=dtype), 4, generator=gen(24))
    assert y.dtype is dtype and set(np.unique(np_of(y))) == set(range(4))


@pytest.mark.parametrize("dtype, hi", [
    (P.bool, 1), (P.uint8, 255), (P.int8, 127), (P.int16, 2 ** 15 - 1), (P.int32, 2 ** 31 - 1),
    (P.int64, 2 ** 63 - 1), (P.float16, 2 ** 11), (P.bfloat16, 2 ** 8), (P.float32, 2 ** 24),
    (P.float64, 2 ** 53),
])
def test_random_default_range(dtype, hi):
    x = P.empty(20_000, dtype=dtype).random_(generator=gen(25))
    v = x.tolist()
    assert min(v) >= 0 and max(v) <= hi
    assert all(float(a).is_integer() for a in v[:100])
    if hi <= 256:   # small ranges: every value shows up, including the top one
        assert len(set(v)) == hi + 1
    else:
        assert max(v) > hi / 2


def test_random_forms():
    x = P.empty(5000, dtype=P.int8).random_(10, generator=gen(26)).numpy()      # random_(to)
    assert x.min() == 0 and x.max() == 9
    y = P.empty(5000, dtype=P.int8).random_(-128, 128, generator=gen(27)).numpy()
    assert y.min() == -128 and y.max() == 127
    z = P.empty(5000, dtype=P.int64).random_(-2 ** 63, 2 ** 63 - 1, generator=gen(28)).numpy()
    assert z.min() < -2 ** 61 and z.max() > 2 ** 61
    w = P.empty(5000).random_(3, 7, generator=gen(29)).numpy()                   # floats too
    assert set(np.unique(w)) == {3.0, 4.0, 5.0, 6.0}


# ---- shapes ---------------------------------------------------------------------------------------

def test_zero_dim_and_empty_shapes():
    assert P.rand(()).shape == () and P.randn([]).shape == ()
    assert P.rand((2, 3)).shape == (2, 3) and P.randn([4]).shape == (4,)
    assert P.rand(0, 3).shape == (0, 3)
    assert P.randint(10, (0,)).shape == (0,)
    assert P.randint(10, ()).shape == ()
    assert P.randperm(0).shape == (0,)
    assert P.normal(0.0, 1.0, ()).shape == ()
    assert P.bernoulli(P.tensor(0.5)).shape == ()
    assert P.poisson(P.zeros(0)).shape == (0,)
    z = P.tensor(0.0)
    assert z.uniform_(5, 6).shape == () and 5 <= z.item() < 6
    g = gen(30)
    P.empty(0, 5).normal_(generator=g)
    assert g.get_offset() == 0


def test_randint_overload_forms():
    assert P.randint(5, (3,)).shape == (3,)
    assert P.randint(5, size=(3,)).shape == (3,)
    assert P.randint(2, 5, (3,)).shape == (3,)
    assert P.randint(low=2, high=5, size=(2, 2)).shape == (2, 2)
    assert P.randint(high=5, size=(3,)).shape == (3,)
    assert P.randint_like(P.zeros(2, 2), 3, 5).shape == (2, 2)
    with pytest.raises(TypeError, match="size"):
        P.randint(5)


def test_out_and_requires_grad():
    out = P.empty(3, dtype=P.float64)
    r = P.rand(3, out=out, generator=gen(31))
    assert r is out and 0 <= float(out.numpy().max()) < 1
    o2 = P.empty(4, dtype=P.int64)
    assert P.randperm(4, out=o2) is o2 and sorted(o2.tolist()) == [0, 1, 2, 3]
    assert P.rand(2, requires_grad=True).requires_grad
    assert P.randn(2, requires_grad=True).requires_grad


def test_generator_argument_is_checked():
    with pytest.raises(TypeError, match=r"rand\(\): argument 'generator' must be pytorchlite.Generator, not int"):
        P.rand(2, generator=3)
    with pytest.raises(TypeError, match="generator"):
        P.zeros(2).uniform_(generator="x")


# ---- errors, as PyTorch raises them ------------------------------------------------------------------

def _checks(m):
    """(name, thunk) pairs, run with m = torch and m = pytorchlite."""
    f16, i8, u8, i64 = m.float16, m.int8, m.uint8, m.int64
    return [
        ("uniform_from_gt_to", lambda: m.empty(3).uniform_(1, 0)),
        ("uniform_to_inf", lambda: m.empty(3).uniform_(0, float("inf"))),
        ("uniform_to_nan", lambda: m.empty(3).uniform_(0, float("nan"))),
        ("uniform_half_bounds", lambda: m.empty(3, dtype=f16).uniform_(0, 70000)),
        ("uniform_half_range", lambda: m.empty(3, dtype=f16).uniform_(-65504, 65504)),
        ("uniform_float_range", lambda: m.empty(3).uniform_(-3e38, 3e38)),
        ("uniform_int", lambda: m.empty(3, dtype=i64).uniform_()),
        ("rand_int", lambda: m.rand(2, dtype=i64)),
        ("rand_bool", lambda: m.rand(2, dtype=m.bool)),
        ("rand_negative", lambda: m.rand(-1)),
        ("randn_int", lambda: m.randn(2, dtype=i64)),
        ("normal_std", lambda: m.empty(3).normal_(0, -1)),
        ("normal_int", lambda: m.empty(3, dtype=m.int32).normal_()),
        ("normal_tensor_std", lambda: m.normal(0.0, m.tensor([-1.0, 1.0]))),
        ("normal_tensor_std_nan", lambda: m.normal(m.zeros(2), m.tensor([1.0, float("nan")]))),
        ("normal_scalar_std", lambda: m.normal(m.zeros(2), -1.0)),
        ("normal_float_std", lambda: m.normal(0.0, -1.0, (2,))),
        ("normal_int_mean", lambda: m.normal(m.tensor([1, 1]), m.tensor([1.0, 1.0]))),
        ("normal_broadcast", lambda: m.normal(m.zeros(2), m.ones(3))),
        ("normal_two_numbers", lambda: m.normal(0.0, 1.0)),
        ("exponential_lambda", lambda: m.empty(3).exponential_(-1)),
        ("exponential_zero", lambda: m.empty(3).exponential_(0)),
        ("exponential_int", lambda: m.empty(3, dtype=i64).exponential_()),
        ("exponential_bool", lambda: m.empty(3, dtype=m.bool).exponential_()),
        ("random_from_ge_to", lambda: m.empty(3).random_(5, 3)),
        ("random_equal", lambda: m.empty(3).random_(3, 3)),
        ("random_to_negative", lambda: m.empty(3).random_(-5)),
        ("random_int8_to", lambda: m.empty(3, dtype=i8).random_(0, 1000)),
        ("random_uint8_from", lambda: m.empty(3, dtype=u8).random_(-1, 10)),
        ("random_half_to", lambda: m.empty(3, dtype=f16).random_(0, 70000)),
        ("random_int16", lambda: m.empty(3, dtype=m.int16).random_(0, 2 ** 20)),
        ("random_int32_from", lambda: m.empty(3, dtype=m.int32).random_(-2 ** 40, 5)),
        ("randint_low_ge_high", lambda: m.randint(5, 3, (2,))),
        ("randint_negative_high", lambda: m.randint(-1, (2,))),
        ("randint_uint8", lambda: m.randint(0, 300, (2,), dtype=u8)),
        ("randint_bool", lambda: m.randint(10, (3,), dtype=m.bool)),
        ("randint_like_int8", lambda: m.randint_like(m.zeros(2, dtype=i8), 200)),
        ("bernoulli_p_high", lambda: m.empty(3).bernoulli_(1.5)),
        ("bernoulli_p_low", lambda: m.empty(3).bernoulli_(-0.1)),
        ("bernoulli_p_nan", lambda: m.bernoulli(m.zeros(2), float("nan"))),
        ("bernoulli_tensor_p", lambda: m.bernoulli(m.tensor([0.5, 2.0, 0.1]))),
        ("bernoulli_tensor_nan", lambda: m.bernoulli(m.tensor([0.5, float("nan")]))),
        ("bernoulli_int_probs", lambda: m.bernoulli(m.tensor([1, 0]))),
        ("bernoulli_inplace_int_p", lambda: m.zeros(3).bernoulli_(m.tensor([1, 0, 1]))),
        ("bernoulli_inplace_shape", lambda: m.empty(3).bernoulli_(m.tensor([0.5, 0.1]))),
        ("randperm_negative", lambda: m.randperm(-1)),
        ("randperm_half", lambda: m.randperm(3000, dtype=f16)),
        ("randperm_float", lambda: m.randperm(2 ** 24 + 2, dtype=m.float32)),
        ("randperm_int8", lambda: m.randperm(129, dtype=i8)),
        ("randperm_uint8", lambda: m.randperm(257, dtype=u8)),
        ("randperm_bool", lambda: m.randperm(5, dtype=m.bool)),
        ("multinomial_too_many", lambda: m.multinomial(m.tensor([1.0, 2.0]), 3)),
        ("multinomial_zero", lambda: m.multinomial(m.tensor([1.0, 2.0]), 0)),
        ("multinomial_negative_n", lambda: m.multinomial(m.ones(2, 3), -1, True)),
        ("multinomial_negative", lambda: m.multinomial(m.tensor([1.0, -2.0]), 1)),
        ("multinomial_nan", lambda: m.multinomial(m.tensor([1.0, float("nan")]), 1)),
        ("multinomial_inf", lambda: m.multinomial(m.tensor([1.0, float("inf")]), 1)),
        ("multinomial_zero_sum", lambda: m.multinomial(m.tensor([0.0, 0.0]), 1)),
        ("multinomial_repl_negative", lambda: m.multinomial(m.tensor([1.0, -2.0]), 2, True)),
        ("multinomial_repl_nan", lambda: m.multinomial(m.tensor([1.0, float("nan")]), 2, True)),
        ("multinomial_repl_inf", lambda: m.multinomial(m.tensor([1.0, float("inf")]), 2, True)),
        ("multinomial_repl_zero_sum", lambda: m.multinomial(m.tensor([0.0, 0.0]), 2, True)),
        ("multinomial_int", lambda: m.multinomial(m.tensor([1, 2]), 1)),
        ("multinomial_3d", lambda: m.multinomial(m.ones(2, 2, 2), 1)),
        ("multinomial_0d", lambda: m.multinomial(m.tensor(1.0), 1)),
        ("multinomial_no_categories", lambda: m.multinomial(m.ones(2, 0), 1)),
        ("poisson_negative", lambda: m.poisson(m.tensor([1.0, -1.0]))),
        ("poisson_nan", lambda: m.poisson(m.tensor([float("nan")]))),
        ("poisson_int", lambda: m.poisson(m.tensor([1, 1]))),
    ]


def _outcome(thunk):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            thunk()
        except Exception as e:     # noqa: BLE001 - the error is what is compared
            return type(e), str(e)
    return None, None


def _normalise(msg):
    # our op-prefixed creation message contains PyTorch's; our own module name for torch's
    msg = msg.replace("rand(): ", "").replace("randperm(): ", "")
    return msg.split("\n")[0]


@pytest.mark.parametrize("name", [n for n, _ in _checks(P)])
def test_errors_match_pytorch(name):
    torch = pytest.importorskip("torch")
    ours = dict(_checks(P))[name]
    theirs = dict(_checks(torch))[name]
    t_type, t_msg = _outcome(theirs)
    p_type, p_msg = _outcome(ours)
    assert t_type is not None, f"torch accepted {name}"
    assert p_type is not None, f"pytorchlite accepted {name}; torch raised {t_type.__name__}: {t_msg}"
    assert issubclass(p_type, t_type) or p_type.__name__ == t_type.__name__, (name, p_type, t_type, p_msg)
    assert _normalise(p_msg) == _normalise(t_msg), name


def test_core_error_messages_without_torch():
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range, but found from=1 > to=0"):
        P.empty(3).uniform_(1, 0)
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=5 >= to=3"):
        P.randint(5, 3, (2,))
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        P.rand(-1)
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        P.multinomial(P.tensor([1.0, 2.0]), 3)
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5"):
        P.empty(2).bernoulli_(1.5)


def test_random_float_precision_warning():
    with pytest.warns(UserWarning, match=r"to - 1 is out of bounds \[-\(2\^24\), 2\^24\]"):
        P.empty(3).random_(0, 2 ** 25 + 2)


def test_failed_multinomial_leaves_the_generator_alone():
    g = gen(32)
    with pytest.raises(RuntimeError):
        P.multinomial(P.tensor([0.0, 0.0]), 1, generator=g)
    assert g.get_offset() == 0


# ---- autograd ---------------------------------------------------------------------------------------

def test_in_place_fill_of_a_tensor_requiring_grad():
    w = P.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        w.uniform_()
    with pytest.raises(RuntimeError, match="a view of a leaf Variable"):
        w[:2].normal_()
    with pytest.raises(RuntimeError, match="not recorded by autograd"):
        (w * 2).bernoulli_(0.5)
    with P.no_grad():            # how nn.init fills parameters
        w.uniform_(-1, 1, generator=gen(33))
        w.normal_()
        w.exponential_()
    assert w.requires_grad and w.is_leaf


def test_random_outputs_do_not_require_grad():
    assert not P.rand(3).requires_grad
    assert not P.bernoulli(P.full((3,), 0.5, requires_grad=True)).requires_grad
