"""PyTorch's error contract at the edges: sizes that overflow, DLPack capsules, byte order,
self-referential lists, and linear algebra on NaN / inf / singular input.

Each case names what PyTorch 2.13 (CPU) raises: the type and the key part of the message.
With torch installed the same call runs in torch too and must raise the same way (or, for
linalg, return the same NaN/inf pattern and values); without it the literal expectation
is the oracle. No case allocates more than a few bytes: the sizes are far beyond any
address space, so they fail in the size arithmetic (or in malloc, for the allocation
failures).
"""

import numpy as np
import pytest

import pytorchlite as ptl


def _torch():
    return pytest.importorskip("torch")


def _raises(fn, lib, exc, key):
    with pytest.raises(exc) as info:
        fn(lib)
    assert key in str(info.value), f"{key!r} not in {str(info.value)!r}"
    return info.value


# --- 1. sizes whose element or byte count overflows ---------------------------------------------

_STORAGE = "Storage size calculation overflowed with sizes="
_NUMEL = "numel: integer multiplication overflow"
_UNPACK = "failed to unpack the object at pos {} with error \"Overflow when unpacking long long"
_ALLOC = "can't allocate memory: you tried to allocate {} bytes"

SIZE_CASES = [
    ("empty_2_62", lambda T: T.empty(2 ** 62), RuntimeError, _STORAGE + "[4611686018427387904]"),
    ("empty_2_61_f32", lambda T: T.empty(2 ** 61), RuntimeError, _STORAGE + "[2305843009213693952]"),
    ("empty_f64", lambda T: T.empty(2 ** 62, dtype=T.float64), RuntimeError, _STORAGE),
    ("zeros", lambda T: T.zeros(2 ** 40, 2 ** 40), RuntimeError, _STORAGE + "[1099511627776, 1099511627776]"),
    ("ones", lambda T: T.ones(2 ** 31, 2 ** 31, 2 ** 31), RuntimeError, _STORAGE),
    ("full", lambda T: T.full((2 ** 40, 2 ** 40), 1.0), RuntimeError, _STORAGE),
    ("zeros_bool", lambda T: T.zeros((2 ** 40, 2 ** 40), dtype=T.bool), RuntimeError, _STORAGE),
    ("rand", lambda T: T.rand(2 ** 40, 2 ** 40), RuntimeError, _STORAGE),
    ("randn", lambda T: T.randn(2 ** 40, 2 ** 40), RuntimeError, _STORAGE),
    ("randint", lambda T: T.randint(0, 5, (2 ** 40, 2 ** 40)), RuntimeError, _STORAGE),
    ("randperm", lambda T: T.randperm(2 ** 62), RuntimeError, _STORAGE),
    ("empty_strided", lambda T: T.empty_strided((2 ** 62,), (1,)), RuntimeError,
     _STORAGE + "[4611686018427387904] and strides=[1]"),
    ("empty_strided_neg_stride", lambda T: T.empty_strided((2,), (-1,)), RuntimeError,
     _STORAGE + "[2] and strides=[-1]"),
    ("empty_strided_numel", lambda T: T.empty_strided((2 ** 62, 2), (0, 1)), RuntimeError, _NUMEL),
    ("empty_strided_dims", lambda T: T.empty_strided((2, 3), (1,)), RuntimeError,
     "dimensionality of sizes (2) must match dimensionality of strides (1)"),
    ("zero_dim_hides_overflow", lambda T: T.empty(2 ** 62, 4, 0), RuntimeError, _STORAGE),
    ("stride_overflow", lambda T: T.empty(0, 2 ** 62, 2 ** 62), RuntimeError, "Stride calculation overflowed"),
    ("new_empty", lambda T: T.tensor(1.).new_empty(2 ** 62), RuntimeError, _STORAGE),
    ("new_zeros", lambda T: T.tensor(1.).new_zeros((2 ** 40, 2 ** 40)), RuntimeError, _STORAGE),
    ("empty_like_expanded", lambda T: T.empty_like(T.zeros(1).expand(2 ** 62)), RuntimeError,
     _STORAGE + "[4611686018427387904] and strides=[1]"),
    ("clone_expanded", lambda T: T.zeros(1).expand(2 ** 62).clone(), RuntimeError,
     _STORAGE + "[4611686018427387904] and strides=[1]"),
    ("contiguous_expanded", lambda T: T.zeros(1).expand(2 ** 62).contiguous(), RuntimeError,
     _STORAGE + "[4611686018427387904]"),
    ("add_expanded", lambda T: T.zeros(1).expand(2 ** 62) + 1, RuntimeError, _STORAGE),
    ("repeat", lambda T: T.zeros(1, 2).repeat(2 ** 40, 2 ** 40), RuntimeError,
     _STORAGE + "[1099511627776, 2199023255552]"),
    ("resize_", lambda T: T.zeros(2).resize_(2 ** 62), RuntimeError, _STORAGE),
    ("resize_numel", lambda T: T.zeros(2).resize_(2 ** 40, 2 ** 40), RuntimeError, _NUMEL),
    ("resize_negative", lambda T: T.zeros(2).resize_(-1), RuntimeError, _NUMEL),
    ("expand", lambda T: T.zeros(1).expand(2 ** 40, 2 ** 40), RuntimeError, _NUMEL),
    ("expand_negative", lambda T: T.zeros(1, 1).expand(2, -2), RuntimeError, _NUMEL),
    ("view_zero_dim", lambda T: T.zeros(0).view(2 ** 62, 4, 0), RuntimeError, _NUMEL),
    ("unflatten", lambda T: T.zeros(0).unflatten(0, (2 ** 62, 2 ** 62, 0)), RuntimeError, _NUMEL),
    ("as_strided_numel", lambda T: T.zeros(1).as_strided((2 ** 40, 2 ** 40), (0, 0)), RuntimeError, _NUMEL),
    ("as_strided_storage", lambda T: T.zeros(1).as_strided((2 ** 62,), (1,)), RuntimeError,
     _STORAGE + "[4611686018427387904] and strides=[1]"),
    ("view", lambda T: T.zeros(3).view(2 ** 62), RuntimeError, "shape '[4611686018427387904]' is invalid for input of size 3"),
    ("reshape", lambda T: T.zeros(3).reshape(-1, 2 ** 62), RuntimeError, "is invalid for input of size 3"),
    ("eye", lambda T: T.eye(2 ** 40), RuntimeError, _NUMEL),
    ("eye_storage", lambda T: T.eye(2 ** 62, 1), RuntimeError, _STORAGE),
    ("arange", lambda T: T.arange(0, 2 ** 62), RuntimeError, _STORAGE + "[4611686018427387904]"),
    ("arange_f32", lambda T: T.arange(0, 2 ** 62, dtype=T.float32), RuntimeError, _STORAGE),
    ("arange_tiny_step", lambda T: T.arange(0, 1, 1e-20), RuntimeError, "invalid size, possible overflow?"),
    ("arange_huge_float", lambda T: T.arange(0., 1e30, 1e-30), RuntimeError, "invalid size, possible overflow?"),
    ("arange_int64_wraps", lambda T: T.arange(-2 ** 63, 2 ** 63 - 1), RuntimeError, "invalid size, possible overflow?"),
    ("arange_end_beyond_int64", lambda T: T.arange(0, 2 ** 63), RuntimeError,
     "value cannot be converted to type int64_t without overflow"),
    ("arange_nan_step", lambda T: T.arange(0, 1, float("nan")), RuntimeError, "step must be nonzero"),
    ("linspace", lambda T: T.linspace(0, 1, 2 ** 62), RuntimeError, _STORAGE + "[4611686018427387904]"),
    ("linspace_steps_beyond_int64", lambda T: T.linspace(0, 1, 2 ** 63), ValueError, "Overflow when unpacking long long"),
    ("empty_2_63", lambda T: T.empty(2 ** 63), TypeError, "empty(): argument 'size' " + _UNPACK.format(1)),
    ("empty_second_dim", lambda T: T.empty(3, 2 ** 63), TypeError, "empty(): argument 'size' " + _UNPACK.format(2)),
    ("empty_tuple", lambda T: T.empty((3, 10 ** 30)), TypeError, _UNPACK.format(2)),
    ("view_2_63", lambda T: T.zeros(1).view(1, 2 ** 63), TypeError, "view(): argument 'size' " + _UNPACK.format(2)),
    ("expand_2_63", lambda T: T.zeros(1).expand(2 ** 63), TypeError, "expand(): argument 'size' " + _UNPACK.format(1)),
    ("alloc_failure", lambda T: T.empty(2 ** 60), RuntimeError, _ALLOC.format(2 ** 62)),
    ("alloc_failure_u8", lambda T: T.empty(2 ** 62, dtype=T.uint8), RuntimeError, _ALLOC.format(2 ** 62)),
    # negative sizes
    ("empty_negative", lambda T: T.empty(-1), RuntimeError, "Trying to create tensor with negative dimension -1: [-1]"),
    ("ones_negative", lambda T: T.ones(2, -3), RuntimeError, "Trying to create tensor with negative dimension -3: [2, -3]"),
    ("zeros_negative", lambda T: T.zeros(2, -3), RuntimeError, "zeros: Dimension size must be non-negative."),
    ("rand_negative", lambda T: T.rand(-2), RuntimeError, "Trying to create tensor with negative dimension -2: [-2]"),
    ("randint_negative", lambda T: T.randint(0, 5, (-1,)), RuntimeError, "negative dimension -1: [-1]"),
    ("empty_strided_negative", lambda T: T.empty_strided((-1,), (1,)), RuntimeError, "negative dimension -1: [-1]"),
    ("eye_negative_m", lambda T: T.eye(3, -1), RuntimeError, "m must be greater or equal to 0, got -1"),
    ("linspace_negative", lambda T: T.linspace(0, 1, -1), RuntimeError, "number of steps must be non-negative"),
]


@pytest.mark.parametrize("fn,exc,key", [c[1:] for c in SIZE_CASES], ids=[c[0] for c in SIZE_CASES])
def test_size_errors(fn, exc, key):
    _raises(fn, ptl, exc, key)


@pytest.mark.parametrize("fn,exc,key", [c[1:] for c in SIZE_CASES], ids=[c[0] for c in SIZE_CASES])
def test_size_errors_match_torch(fn, exc, key):
    torch = _torch()
    _raises(fn, torch, exc, key)


SIZE_OK = [
    ("empty_huge_zero_dim", lambda T: T.empty(2 ** 62, 2, 0), (2 ** 62, 2, 0)),
    ("view_leading_zero", lambda T: T.zeros(0).view(0, 2 ** 62, 2 ** 62), (0, 2 ** 62, 2 ** 62)),
    ("expand_2_62", lambda T: T.zeros(1).expand(2 ** 62), (2 ** 62,)),
    ("empty_strided_stride_0", lambda T: T.empty_strided((2 ** 62,), (0,)), (2 ** 62,)),
    ("eye_empty", lambda T: T.eye(0, 2 ** 62), (0, 2 ** 62)),
    ("reshape_empty", lambda T: T.zeros(0).reshape(-1, 2 ** 62), (0, 2 ** 62)),
]


@pytest.mark.parametrize("fn,shape", [c[1:] for c in SIZE_OK], ids=[c[0] for c in SIZE_OK])
def test_huge_shapes_that_hold_nothing_or_share_memory(fn, shape):
    assert tuple(fn(ptl).shape) == shape


def test_empty_strided_values_and_layout():
    t = ptl.empty_strided((2, 3), (1, 2))
    assert t.stride() == (1, 2) and not t.is_contiguous()
    t.copy_(ptl.arange(6.).reshape(2, 3))
    np.testing.assert_array_equal(np.array(t.tolist()), np.arange(6.).reshape(2, 3))


# --- 2. DLPack, byte order, self-referential lists ----------------------------------------------

_INVALID_CAPSULE = ("from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed only "
                    "once, so you might have already constructed a tensor from it once.")
_BYTE_ORDER = ("given numpy array has byte order different from the native byte order. Conversion between byte "
               "orders is currently not supported.")
_SELF_REF = "new(): self-referential lists are incompatible"


def _consume_twice(T, make_capsule):
    cap = make_capsule(T)
    T.from_dlpack(cap)
    return T.from_dlpack(cap)


def _self_ref(T, build, fn="tensor"):
    return getattr(T, fn)(build())


def _direct():
    lst = [1]
    lst.append(lst)
    return lst


def _in_row():
    lst = [[1, 2], [3, 4]]
    lst[1] = lst
    return lst


def _first_element():
    lst = []
    lst.append(lst)
    return lst


def _deep(n):
    lst = 1
    for _ in range(n):
        lst = [lst]
    return lst


INTEROP_CASES = [
    ("capsule_twice", lambda T: _consume_twice(T, lambda T: T.arange(3.).__dlpack__()), RuntimeError, _INVALID_CAPSULE),
    ("numpy_capsule_twice", lambda T: _consume_twice(T, lambda T: np.arange(3.).__dlpack__()), RuntimeError,
     _INVALID_CAPSULE),
    ("utils_capsule_twice", lambda T: _consume_twice(
        T, lambda T: __import__(T.__name__ + ".utils.dlpack", fromlist=["x"]).to_dlpack(T.arange(3.))),
     RuntimeError, _INVALID_CAPSULE),
    ("not_a_capsule", lambda T: T.from_dlpack(5), RuntimeError, _INVALID_CAPSULE),
    ("list_not_a_capsule", lambda T: T.from_dlpack([1, 2, 3]), RuntimeError, _INVALID_CAPSULE),
    ("tensor_big_endian", lambda T: T.tensor(np.arange(3, dtype=">f4")), ValueError, _BYTE_ORDER),
    ("tensor_big_endian_int", lambda T: T.tensor(np.arange(3, dtype=">i8")), ValueError, _BYTE_ORDER),
    ("tensor_big_endian_0d", lambda T: T.tensor(np.array(1.5, dtype=">f4")), ValueError, _BYTE_ORDER),
    ("tensor_big_endian_empty", lambda T: T.tensor(np.zeros(0, dtype=">f4")), ValueError, _BYTE_ORDER),
    ("tensor_big_endian_dtype", lambda T: T.tensor(np.arange(3, dtype=">f4"), dtype=T.float64), ValueError, _BYTE_ORDER),
    ("from_numpy_big_endian", lambda T: T.from_numpy(np.arange(3, dtype=">i2")), ValueError, _BYTE_ORDER),
    ("as_tensor_big_endian", lambda T: T.as_tensor(np.arange(3, dtype=">f4")), ValueError, _BYTE_ORDER),
    ("as_tensor_big_endian_dtype", lambda T: T.as_tensor(np.arange(3, dtype=">f4"), dtype=T.float64), ValueError,
     _BYTE_ORDER),
    ("from_dlpack_big_endian", lambda T: T.from_dlpack(np.arange(3, dtype=">f4")), BufferError,
     "DLPack only supports native byte order."),
    ("self_ref", lambda T: _self_ref(T, _direct), TypeError, _SELF_REF),
    ("self_ref_row", lambda T: _self_ref(T, _in_row), TypeError, _SELF_REF),
    ("self_ref_as_tensor", lambda T: _self_ref(T, _direct, "as_tensor"), TypeError, _SELF_REF),
    ("self_ref_nested", lambda T: T.tensor([_direct()]), TypeError, _SELF_REF),
    ("self_ref_first", lambda T: _self_ref(T, _first_element), ValueError, "too many dimensions 'list'"),
    ("too_deep", lambda T: T.tensor(_deep(129)), ValueError, "too many dimensions 'list'"),
    ("much_too_deep", lambda T: T.tensor(_deep(5000)), ValueError, "too many dimensions 'list'"),
]


@pytest.mark.parametrize("fn,exc,key", [c[1:] for c in INTEROP_CASES], ids=[c[0] for c in INTEROP_CASES])
def test_interop_errors(fn, exc, key):
    _raises(fn, ptl, exc, key)


@pytest.mark.parametrize("fn,exc,key", [c[1:] for c in INTEROP_CASES], ids=[c[0] for c in INTEROP_CASES])
def test_interop_errors_match_torch(fn, exc, key):
    torch = _torch()
    _raises(fn, torch, exc, key)


def test_cycle_deeper_than_one_level_is_caught():
    # PyTorch crashes here (it only compares an item with its own list); we raise its TypeError
    lst = [[1, 2], [3, 4]]
    lst[1][1] = lst
    with pytest.raises(TypeError, match="self-referential lists are incompatible"):
        ptl.tensor(lst)


def test_non_native_arrays_inside_lists_and_shared_sublists_are_read():
    t = ptl.tensor([np.arange(3, dtype=">f4")])
    assert t.dtype is ptl.float32 and t.tolist() == [[0.0, 1.0, 2.0]]
    row = [1, 2]
    assert ptl.tensor([row, row]).tolist() == [[1, 2], [1, 2]]    # shared, not cyclic
    assert ptl.tensor(_deep(64)).dim() == 64     # (PyTorch takes 128; NumPy, which we fill through, 64)
    assert ptl.from_numpy(np.arange(3, dtype=">u1")).tolist() == [0, 1, 2]   # one byte: no order


def test_utils_dlpack_round_trip():
    from pytorchlite.utils.dlpack import from_dlpack, to_dlpack
    t = ptl.arange(4.)
    u = from_dlpack(to_dlpack(t))
    assert u.data_ptr() == t.data_ptr() and u.tolist() == [0.0, 1.0, 2.0, 3.0]


# --- 3. linalg on NaN / inf / singular input ----------------------------------------------------

def _spd():
    m = np.array([[2., 1., 0.5], [0.3, 1.5, 0.2], [0.1, 0.4, 1.8]])
    return m @ m.T + np.eye(3)


def _with(a, idx, v):
    a = a.copy()
    a[idx] = v
    return a


INPUTS = {
    "nan_upper": _with(_spd(), (0, 1), np.nan),
    "nan_diag": _with(_spd(), (1, 1), np.nan),
    "all_nan": np.full((3, 3), np.nan),
    "inf_diag": _with(_spd(), (0, 0), np.inf),
    "inf_upper": _with(_spd(), (0, 1), np.inf),
    "ninf_diag": _with(_spd(), (1, 1), -np.inf),
    "zeros": np.zeros((3, 3)),
    "singular": np.array([[1., 2., 3.], [2., 4., 6.], [1., 0., 1.]]),
    "psd_singular": np.outer([1., 2., 3.], [1., 2., 3.]),
    "batch_nan": np.stack([_spd(), _with(_spd(), (2, 2), np.nan)]),
    "batch_singular": np.stack([_spd(), np.zeros((3, 3))]),
}


def _rhs(T, a, k=1):
    return T.ones(*a.shape[:-1], k, dtype=a.dtype)


FUNCS = {
    "linalg.inv": lambda T, a: T.linalg.inv(a),
    "linalg.inv_ex": lambda T, a: T.linalg.inv_ex(a),
    "linalg.det": lambda T, a: T.linalg.det(a),
    "linalg.slogdet": lambda T, a: T.linalg.slogdet(a),
    "linalg.cholesky": lambda T, a: T.linalg.cholesky(a),
    "linalg.cholesky_upper": lambda T, a: T.linalg.cholesky(a, upper=True),
    "linalg.cholesky_ex": lambda T, a: T.linalg.cholesky_ex(a),
    "linalg.qr": lambda T, a: T.linalg.qr(a),
    "linalg.svd": lambda T, a: T.linalg.svd(a),
    "linalg.svdvals": lambda T, a: T.linalg.svdvals(a),
    "linalg.eigh": lambda T, a: T.linalg.eigh(a),
    "linalg.eigvalsh": lambda T, a: T.linalg.eigvalsh(a),
    "linalg.solve": lambda T, a: T.linalg.solve(a, _rhs(T, a)),
    "linalg.solve_triangular": lambda T, a: T.linalg.solve_triangular(a, _rhs(T, a, 2), upper=True),
    # (linalg.lstsq left out: on NaN/inf input OpenBLAS's gelsd gives results that vary
    # from run to run; not investigated yet)
    "linalg.pinv": lambda T, a: T.linalg.pinv(a),
    "linalg.pinv_hermitian": lambda T, a: T.linalg.pinv(a, hermitian=True),
    "linalg.matrix_rank": lambda T, a: T.linalg.matrix_rank(a),
    "linalg.cond": lambda T, a: T.linalg.cond(a),
    "linalg.cond_fro": lambda T, a: T.linalg.cond(a, "fro"),
    "linalg.cond_1": lambda T, a: T.linalg.cond(a, 1),
    "linalg.cond_-2": lambda T, a: T.linalg.cond(a, -2),
    "linalg.matrix_norm_2": lambda T, a: T.linalg.matrix_norm(a, 2),
    "linalg.matrix_norm_nuc": lambda T, a: T.linalg.matrix_norm(a, "nuc"),
    "linalg.norm": lambda T, a: T.linalg.norm(a),
    "linalg.matrix_power_-1": lambda T, a: T.linalg.matrix_power(a, -1),
    "linalg.matrix_power_3": lambda T, a: T.linalg.matrix_power(a, 3),
    "linalg.matrix_exp": lambda T, a: T.linalg.matrix_exp(a),
    "inverse": lambda T, a: T.inverse(a),
    "det": lambda T, a: T.det(a),
    "logdet": lambda T, a: T.logdet(a),
    "slogdet": lambda T, a: T.slogdet(a),
    "pinverse": lambda T, a: T.pinverse(a),
    "Tensor.inverse": lambda T, a: a.inverse(),
    "Tensor.det": lambda T, a: a.det(),
}

# Where the LAPACK libraries differ on non-finite input (PyTorch's MKL, our OpenBLAS),
# the entries that are garbage either way come out differently: strict xfails, so a
# change that makes them agree is noticed.
_LAPACK_DIFFERS = {
    ("linalg.det", "inf_upper"), ("linalg.slogdet", "inf_upper"), ("det", "inf_upper"),
    ("slogdet", "inf_upper"), ("Tensor.det", "inf_upper"),
    ("linalg.qr", "inf_diag"), ("linalg.qr", "inf_upper"),
    # an infinity makes OpenBLAS's gesdd never return: we give NaN factors (PyTorch: NaN
    # singular values, other U/Vh) and what is built on them follows
    ("linalg.svd", "inf_diag"), ("linalg.svd", "inf_upper"), ("linalg.svd", "ninf_diag"),
    ("linalg.pinv", "inf_diag"), ("linalg.pinv", "ninf_diag"),
    ("pinverse", "inf_diag"), ("pinverse", "ninf_diag"), ("linalg.eigvalsh", "ninf_diag"),
    # NaN patterns that differ and are not investigated yet (issue 18 follow-up)
    ("linalg.eigvalsh", "nan_diag"), ("linalg.eigvalsh", "all_nan"), ("linalg.eigvalsh", "batch_nan"),
    ("linalg.cond", "psd_singular"),
}


def _outcome(T, name, a):
    try:
        r = FUNCS[name](T, T.tensor(a))
    except Exception as e:      # noqa: BLE001 - the exception is what is compared
        return e
    rs = r if isinstance(r, tuple) else (r,)
    return [np.array(x.tolist(), dtype=float).reshape(tuple(x.shape)) for x in rs]


def _same_values(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_array_equal(np.isposinf(g), np.isposinf(w))
        np.testing.assert_array_equal(np.isneginf(g), np.isneginf(w))
        # only where NaN and inf appear is compared: the finite entries of a factorization of
        # a degenerate matrix (singular vectors' signs, slogdet's sign beside a NaN) differ
        # between LAPACK libraries and are checked by the operator tests on regular input


_CASES = [pytest.param(f, i, marks=[pytest.mark.xfail(strict=True, reason="MKL and OpenBLAS differ")]
                       if (f, i) in _LAPACK_DIFFERS else [], id=f"{f}-{i}")
          for f in FUNCS for i in INPUTS]


@pytest.mark.parametrize("name,inp", _CASES)
def test_linalg_nonfinite_matches_torch(name, inp):
    torch = _torch()
    want = _outcome(torch, name, INPUTS[inp])
    got = _outcome(ptl, name, INPUTS[inp])
    if isinstance(want, Exception):
        assert isinstance(got, Exception), f"torch raised {want!r}, we returned {got}"
        assert isinstance(got, ptl.linalg.LinAlgError) == isinstance(want, torch.linalg.LinAlgError)
        assert type(got).__name__.lstrip("_") == type(want).__name__.lstrip("_")
        assert str(got).split("\n")[0] == str(want).split("\n")[0]
    else:
        assert not isinstance(got, Exception), f"torch returned, we raised {got!r}"
        _same_values(got, want)


_PD = ("The factorization could not be completed because the input is not positive-definite (the leading minor "
       "of order {} is not positive-definite).")
_SVD = "The algorithm failed to converge because the input matrix contained non-finite values."
_SINGULAR = ("The diagonal element {} is zero, the inversion could not be completed because the input matrix is "
             "singular.")

LITERAL = [
    ("linalg.cholesky", "nan_diag", "linalg.cholesky: " + _PD.format(2)),
    ("linalg.cholesky", "all_nan", "linalg.cholesky: " + _PD.format(1)),
    ("linalg.cholesky", "batch_nan", "linalg.cholesky: (Batch element 1): " + _PD.format(3)),
    ("linalg.cholesky_upper", "nan_upper", "linalg.cholesky: " + _PD.format(2)),
    ("linalg.cholesky", "ninf_diag", "linalg.cholesky: " + _PD.format(2)),
    ("linalg.cholesky", "psd_singular", "linalg.cholesky: " + _PD.format(2)),
    ("linalg.svd", "nan_upper", "linalg.svd: " + _SVD),
    ("linalg.eigh", "nan_diag", "linalg.eigh: The algorithm failed to converge because the input matrix is "
                                "ill-conditioned or has too many repeated eigenvalues (error code: 2)."),
    ("linalg.pinv", "all_nan", "linalg.svd: " + _SVD),
    ("linalg.inv", "singular", "linalg.inv: " + _SINGULAR.format(3)),
    ("linalg.inv", "batch_singular", "linalg.inv: (Batch element 1): " + _SINGULAR.format(1)),
    ("inverse", "zeros", "linalg.inv: " + _SINGULAR.format(1)),
    ("linalg.solve", "zeros", "torch.linalg.solve: The solver failed because the input matrix is singular."),
]


@pytest.mark.parametrize("name,inp,msg", LITERAL, ids=[f"{n}-{i}" for n, i, _ in LITERAL])
def test_linalg_raises_linalg_error(name, inp, msg):
    err = _outcome(ptl, name, INPUTS[inp])
    assert isinstance(err, ptl.linalg.LinAlgError) and isinstance(err, RuntimeError), err
    assert str(err) == msg


def test_linalg_nan_results_where_torch_does_not_raise():
    nan = INPUTS["nan_diag"]
    assert np.isnan(ptl.linalg.det(ptl.tensor(nan)).item())
    assert np.isnan(ptl.linalg.inv(ptl.tensor(nan)).numpy()).all()
    L, info = ptl.linalg.cholesky_ex(ptl.tensor(nan))
    # LAPACK's potf2: stops at the NaN pivot, which keeps its value; later columns untouched
    assert info.item() == 2 and np.isnan(L[1, 1].item())
    np.testing.assert_allclose(L[2].tolist(), [_spd()[2, 0] / np.sqrt(_spd()[0, 0]), _spd()[2, 1], _spd()[2, 2]])
    assert ptl.linalg.det(ptl.tensor(INPUTS["singular"])).item() == 0.0
    sign, logabs = ptl.linalg.slogdet(ptl.tensor(INPUTS["zeros"]))
    assert sign.item() == 0.0 and logabs.item() == -np.inf
