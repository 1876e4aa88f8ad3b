"""out= and in-place writes: PyTorch's dtype, shape and memory-overlap rules, for every
operator of ops.yaml with an out= or in-place form (the list comes from the declarations,
tests/out_cases.py builds the calls from the schemas).

The parametrised tests compare with PyTorch and skip without it; the literal-message
tests at the end run without it.
"""

import warnings

import numpy as np
import pytest

import pytorchlite
from out_cases import Data, build, inplace_ops, out_ops, public, sample_calls, tensor, tensors_of

PARTIAL = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
           "memory location. Please clone() the tensor before performing the operation.")
INTERNAL = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation.")

# Where pytorchlite still differs from PyTorch (each a strict xfail: it fails once fixed, so
# the entry goes): operator -> why. Not out=/overlap policy, but what the calls run into.
KNOWN_DTYPE = {
    "sum": "sum(x, out=) without dim: PyTorch has no such overload, pytorchlite accepts it",
    "prod": "prod(x, out=) without dim: PyTorch has no such overload, pytorchlite accepts it",
    "nansum": "PyTorch's nansum has no integer kernel (NotImplementedError); pytorchlite refuses the cast",
    "nanmean": "PyTorch's nansum has no integer kernel (NotImplementedError); pytorchlite refuses the cast",
    "addbmm": "PyTorch checks out= dtype against the inputs with its own message",
    "mv": "PyTorch checks out= dtype against the inputs (addmv's message)",
    "normal.Tensor_Tensor": "random ops: PyTorch fills the out= dtype itself",
    "normal.Tensor_float": "random ops: PyTorch fills the out= dtype itself",
    "normal.float_Tensor": "random ops: PyTorch fills the out= dtype itself",
    "bernoulli": "random ops: PyTorch fills the out= dtype itself (an integer out= is allowed)",
    "searchsorted": "PyTorch's out= dtype message depends on out_int32",
    "bucketize": "PyTorch's out= dtype message depends on out_int32",
    "cumsum": "PyTorch computes a scan in the out= dtype (a float input into an integer out= is allowed)",
    "cumprod": "PyTorch computes a scan in the out= dtype (a float input into an integer out= is allowed)",
    "linalg_matrix_rank.tol_tensor": "composite: the out= dtype rule differs",
    "randint": "randint's schema (SymInt[]? high) is not one tests/out_cases.py can build a call for",
}
KNOWN_RESIZE = {
    "sum": KNOWN_DTYPE["sum"], "prod": KNOWN_DTYPE["prod"], "randint": KNOWN_DTYPE["randint"],
    "addbmm": "the resize warning is not given", "kthvalue": "the resize warning is not given (tuple out=)",
    "mode": "the resize warning is not given (tuple out=)", "multinomial": "the resize warning is not given",
    "bernoulli": "the resize warning is not given",
    "normal.Tensor_float": "PyTorch broadcasts mean with the wrong-shaped out=",
    "linalg_matrix_rank.tol_tensor": "composite: the resize warning differs",
}
KNOWN_OVERLAP = {"randint": KNOWN_DTYPE["randint"]}


def _params(ops, known):
    return [pytest.param(op, marks=pytest.mark.xfail(reason=known[op.full_name], strict=True))
            if op.full_name in known else op for op in ops]


OUT_OPS = out_ops()
INPLACE_OPS = inplace_ops()
OUT_DTYPES = ("float64", "float32", "float16", "int64", "int32", "bool")


def _random(op):
    """Operators whose values cannot be compared with PyTorch's: random ones, and empty
    (uninitialised memory)."""
    return op.name == "empty" or any("._kernels.random" in fn for _, fn in op.impl.kernels)


def _outcome(fn, *args, **kwargs):
    """(result, exception, resize warnings) of one call."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r, exc = fn(*args, **kwargs), None
        except Exception as e:     # noqa: BLE001 - compared with PyTorch's below
            r, exc = None, e
    # (PyTorch adds where in its C++ sources it warned)
    resized = [str(w.message).split(" (Triggered internally")[0] for w in caught if "was resized" in str(w.message)]
    return r, exc, resized


def _np(t):
    t = t.detach() if hasattr(t, "detach") else t
    if "bfloat16" in str(t.dtype):
        t = t.float()
    return np.asarray(t.cpu().numpy() if hasattr(t, "cpu") else t.numpy())


def _same(what, theirs, ours, values=True):
    """The two outcomes agree: both raise (the same type, and the same message for a
    RuntimeError), or both return equal tensors (`values` compares the given tensors'
    values) with the same resize warnings."""
    (tr, texc, twarn), (orr, oexc, owarn) = theirs, ours
    if texc is not None:
        assert oexc is not None, f"{what}: PyTorch raises {type(texc).__name__}: {texc}; pytorchlite does not"
        assert type(oexc).__name__ == type(texc).__name__, \
            f"{what}: PyTorch raises {type(texc).__name__}: {texc}; pytorchlite {type(oexc).__name__}: {oexc}"
        if isinstance(texc, RuntimeError):
            assert str(oexc) == str(texc), f"{what}: message\n  PyTorch:     {texc}\n  pytorchlite: {oexc}"
        return False
    assert oexc is None, f"{what}: PyTorch returns; pytorchlite raises {type(oexc).__name__}: {oexc}"
    assert owarn == twarn, f"{what}: resize warnings differ\n  PyTorch:     {twarn}\n  pytorchlite: {owarn}"
    return True


def _compare_tensors(what, theirs, ours):
    for k, (t, o) in enumerate(zip(theirs, ours)):
        assert tuple(o.shape) == tuple(t.shape), f"{what}: output {k} shape {tuple(o.shape)} != {tuple(t.shape)}"
        assert str(o.dtype).rsplit(".")[-1] == str(t.dtype).rsplit(".")[-1], \
            f"{what}: output {k} dtype {o.dtype} != {t.dtype}"
        np.testing.assert_allclose(_np(o).astype(np.float64), _np(t).astype(np.float64), rtol=1e-3, atol=1e-3,
                                   err_msg=f"{what}: output {k}")


def _sample(op, torch, inplace=False):
    """The first schema-built call PyTorch accepts (recipes), with PyTorch's result."""
    fn = public(op, torch)
    if fn is None and not inplace:
        pytest.skip(f"torch has no {op.name}")
    for args, kwargs in sample_calls(op):
        targs, tkw = build(args, torch), {k: build(v, torch) for k, v in kwargs.items()}
        try:
            if inplace:
                r = getattr(targs[0], op.name + "_")(*targs[1:], **tkw)
            else:
                r = fn(*targs, **tkw)
        except Exception:      # noqa: BLE001 - try the next shape
            continue
        return args, kwargs, r
    pytest.fail(f"{op.where}: no call built from the schema is accepted by PyTorch; "
                "teach tests/out_cases.py the argument")


def _results(r):
    return tuple(r) if isinstance(r, (tuple, list)) else (r,)


def _call(op, lib, args, kwargs, out):
    """Call `op` in `lib` with fresh arguments from the recipes and `out`."""
    return _outcome(public(op, lib), *build(args, lib), out=out, **{k: build(v, lib) for k, v in kwargs.items()})


def _outs(lib, results, first_dtype=None, first_shape=None):
    outs = []
    for k, r in enumerate(results):
        dt = str(r.dtype).rsplit(".")[-1]
        shape = tuple(r.shape)
        if k == 0:
            dt = first_dtype or dt
            shape = shape if first_shape is None else first_shape
        outs.append(lib.zeros(shape, dtype=getattr(lib, dt)))
    return outs


def _pack(outs, results_was_tuple):
    return tuple(outs) if results_was_tuple else outs[0]


@pytest.mark.parametrize("op", _params(OUT_OPS, KNOWN_DTYPE), ids=lambda op: op.full_name)
def test_out_dtype(op):
    """out= of each dtype: accepted, cast or refused as PyTorch does it, with its message."""
    torch = pytest.importorskip("torch")
    args, kwargs, r = _sample(op, torch)
    res = _results(r)
    multi = isinstance(r, (tuple, list))
    for dt in OUT_DTYPES:
        what = f"{op.name}(out= {dt})"
        t_outs, o_outs = _outs(torch, res, dt), _outs(pytorchlite, res, dt)
        theirs = _call(op, torch, args, kwargs, _pack(t_outs, multi))
        ours = _call(op, pytorchlite, args, kwargs, _pack(o_outs, multi))
        if _same(what, theirs, ours) and not _random(op):
            _compare_tensors(what, t_outs, o_outs)


@pytest.mark.parametrize("op", _params(OUT_OPS, KNOWN_RESIZE), ids=lambda op: op.full_name)
def test_out_resize(op):
    """A wrong-shaped out= is resized, with PyTorch's warning when it held elements."""
    torch = pytest.importorskip("torch")
    args, kwargs, r = _sample(op, torch)
    res = _results(r)
    multi = isinstance(r, (tuple, list))
    for shape in ((3,), (0,)):
        if tuple(res[0].shape) == shape:
            continue
        what = f"{op.name}(out= shape {list(shape)})"
        t_outs, o_outs = _outs(torch, res, None, shape), _outs(pytorchlite, res, None, shape)
        theirs = _call(op, torch, args, kwargs, _pack(t_outs, multi))
        ours = _call(op, pytorchlite, args, kwargs, _pack(o_outs, multi))
        if _same(what, theirs, ours):
            if _random(op):
                assert tuple(o_outs[0].shape) == tuple(t_outs[0].shape)
            else:
                _compare_tensors(what, t_outs, o_outs)


def _in_base(lib, base_values, dtype, start, shape):
    """A view of `shape` at element `start` of a 1-d tensor holding `base_values`."""
    base = tensor(lib, base_values, dtype)
    n = int(np.prod(shape)) if shape else 1
    return base, base[start:start + n].view(shape)


def _overlap_cases(op, torch):
    """(label, args recipe, kwargs recipe, result) for the out= overlap checks."""
    args, kwargs, r = _sample(op, torch)
    return args, kwargs, _results(r), isinstance(r, (tuple, list))


@pytest.mark.parametrize("case", ["partial", "full", "internal"])
@pytest.mark.parametrize("op", _params(OUT_OPS, KNOWN_OVERLAP), ids=lambda op: op.full_name)
def test_out_overlap(op, case):
    """out= sharing memory with an input (partly or exactly), or with itself (expanded):
    refused as PyTorch refuses it, with its message; otherwise the same values."""
    torch = pytest.importorskip("torch")
    args, kwargs, res, multi = _overlap_cases(op, torch)
    data = tensors_of(args, kwargs)
    shape0, dt0 = tuple(res[0].shape), str(res[0].dtype).rsplit(".")[-1]
    n_out = int(np.prod(shape0)) if shape0 else 1
    if case == "internal":
        if n_out < 2:
            pytest.skip("a 0-d or one-element output cannot overlap itself")
        mk = (lambda lib: lib.zeros((1,) * len(shape0), dtype=getattr(lib, dt0)).expand(shape0))
    else:
        if not data:
            pytest.skip("no tensor input")
        x = data[0]
        if case == "full" and (x.shape != shape0 or x.dtype != dt0):
            pytest.skip("the first input is not of the output's shape and dtype")
        if case == "partial" and n_out < 2:
            pytest.skip("a one-element output")
    outcomes = []
    for lib in (torch, pytorchlite):
        built_args, built_kwargs = build(args, lib), {k: build(v, lib) for k, v in kwargs.items()}
        outs = _outs(lib, res)
        if case == "internal":
            outs[0] = mk(lib)
        else:
            x = data[0]
            nx = int(np.prod(x.shape)) if x.shape else 1
            vals = np.concatenate([x.values().reshape(-1), np.zeros(n_out + 2, dtype=x.values().dtype)])
            base, xv = _in_base(lib, vals, x.dtype, 0, x.shape)
            start = 0 if case == "full" else max(1, nx // 2)
            if x.dtype == dt0:
                outs[0] = base[start:start + n_out].view(shape0)
            else:
                pytest.skip("the first input's dtype differs from the output's")
            # the first Data argument is the tensor in the base
            built_args, built_kwargs = _replace_first(args, kwargs, built_args, built_kwargs, x, xv)
        outcomes.append((_outcome(public(op, lib), *built_args, out=_pack(outs, multi), **built_kwargs), outs))
    (theirs, t_outs), (ours, o_outs) = outcomes
    what = f"{op.name}(out= {case} overlap)"
    if _unchecked(op, False, case, theirs, ours):
        return
    if _same(what, theirs, ours) and not _random(op) and op.impl.out_overlap[0] != "none":
        _compare_tensors(what, t_outs, o_outs)


def _unchecked(op, inplace, case, theirs, ours):
    """Where PyTorch does not check (ops.yaml `out_overlap: none`) and writes into an
    expanded tensor as it happens to, pytorchlite refuses (its copy into the output does):
    the one difference the tests allow. Values are not compared there either, since
    PyTorch's are undefined when it writes over what it reads."""
    if op.impl.out_overlap[1 if inplace else 0] != "none" or case != "internal":
        return False
    return theirs[1] is None and isinstance(ours[1], RuntimeError) and str(ours[1]) == INTERNAL


def _replace_first(args, kwargs, built_args, built_kwargs, x, xv):
    for k, v in enumerate(args):
        if v is x:
            built_args[k] = xv
            return built_args, built_kwargs
        if isinstance(v, list) and x in v:
            built_args[k][v.index(x)] = xv
            return built_args, built_kwargs
    for k, v in kwargs.items():
        if v is x:
            built_kwargs[k] = xv
            return built_args, built_kwargs
    raise AssertionError("the first tensor argument was not found")


@pytest.mark.parametrize("case", ["partial", "full", "internal"])
@pytest.mark.parametrize("op", INPLACE_OPS, ids=lambda op: op.full_name)
def test_inplace_overlap(op, case):
    """x.op_(y) with y sharing x's memory (partly, or exactly), or x expanded: PyTorch's
    errors, otherwise PyTorch's values."""
    torch = pytest.importorskip("torch")
    if not hasattr(torch.Tensor, op.name + "_"):
        pytest.skip(f"torch has no Tensor.{op.name}_")
    args, kwargs, r = _sample(op, torch, inplace=True)
    x = args[0]
    others = [d for d in tensors_of(args[1:], kwargs) if d.dtype == x.dtype and d.shape == x.shape]
    if case != "internal" and not others:
        pytest.skip("no second input of self's shape and dtype")
    n = int(np.prod(x.shape))
    outcomes = []
    for lib in (torch, pytorchlite):
        built_args, built_kwargs = build(args, lib), {k: build(v, lib) for k, v in kwargs.items()}
        if case == "internal":
            self_t = tensor(lib, x.values().reshape(-1)[:1], x.dtype).view((1,) * len(x.shape)).expand(x.shape)
        else:
            vals = np.concatenate([x.values().reshape(-1), x.values().reshape(-1)])
            base, self_t = _in_base(lib, vals, x.dtype, 0, x.shape)
            start = 0 if case == "full" else max(1, n // 2)
            other = base[start:start + n].view(x.shape)
            rest = list(built_args[1:])
            _replace_first(args[1:], kwargs, rest, built_kwargs, others[0], other)
            built_args = [built_args[0]] + rest
        built_args[0] = self_t
        outcomes.append((_outcome(getattr(self_t, op.name + "_"), *built_args[1:], **built_kwargs), self_t))
    (theirs, t_self), (ours, o_self) = outcomes
    what = f"{op.name}_({case} overlap)"
    if _unchecked(op, True, case, theirs, ours):
        return
    if _same(what, theirs, ours) and not _random(op) and op.impl.out_overlap[1] != "none":
        _compare_tensors(what, (t_self,), (o_self,))


# --- the messages, without PyTorch --------------------------------------------------------------

def test_messages_without_torch():
    x = pytorchlite.arange(8.0)
    with pytest.raises(RuntimeError) as e:
        pytorchlite.add(x[:4], 1, out=x[2:6])
    assert str(e.value) == PARTIAL
    with pytest.raises(RuntimeError) as e:
        x[2:6].add_(x[:4])
    assert str(e.value) == PARTIAL
    with pytest.raises(RuntimeError) as e:
        pytorchlite.zeros(3).expand(2, 3).add_(1)
    assert str(e.value) == INTERNAL
    g = pytorchlite.arange(8.0, requires_grad=True).clone()    # the in-place form without a derivative
    with pytest.raises(RuntimeError) as e:
        g[2:6].gt_(g[:4])
    assert str(e.value) == PARTIAL
    a = pytorchlite.arange(6.0)
    assert a.add_(a).tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]      # exactly the same memory: allowed
    b = pytorchlite.ones(6)
    assert pytorchlite.add(a, b, out=a) is a and a.tolist() == [1.0, 3.0, 5.0, 7.0, 9.0, 11.0]


def test_rules_by_declaration_without_torch():
    """The ops.yaml rules reach the generated bindings: `out_overlap: none` (mm), `any`
    (gather), the default `partial` (cumsum), and `out_dtype_error:` (mm) against the cast
    rule (sum)."""
    m = pytorchlite.arange(32.0).reshape(8, 4)
    a, b = m[:4], m[2:6]                                   # partly the same memory
    expected = (a @ pytorchlite.eye(4)).tolist()
    assert pytorchlite.mm(a, pytorchlite.eye(4), out=b) is b and b.tolist() == expected   # PyTorch does not check
    x = pytorchlite.arange(8.0)
    with pytest.raises(RuntimeError) as e:
        pytorchlite.cumsum(x[:4], 0, out=x[2:6])
    assert str(e.value) == PARTIAL
    idx = pytorchlite.tensor([0, 1, 2, 3])
    g = pytorchlite.arange(4.0)
    with pytest.raises(RuntimeError) as e:
        pytorchlite.gather(g, 0, idx, out=g)               # even the very same memory
    assert str(e.value) == PARTIAL
    with pytest.raises(RuntimeError) as e:
        pytorchlite.mm(a, a, out=pytorchlite.empty(4, 4, dtype=pytorchlite.float64))
    assert str(e.value) == "Expected out tensor to have dtype float, but got double instead"
    c = pytorchlite.arange(16.0).reshape(4, 4)
    with pytest.raises(RuntimeError) as e:
        pytorchlite.sum(c, 0, out=pytorchlite.empty(4, dtype=pytorchlite.int64))
    assert str(e.value) == "result type Float can't be cast to the desired output type Long"
    wide = pytorchlite.empty(4, dtype=pytorchlite.float64)
    assert pytorchlite.sum(c, 0, out=wide).tolist() == [24.0, 28.0, 32.0, 36.0]
    with pytest.raises(TypeError) as e:       # out_cast_error: PyTorch's own type and message
        pytorchlite.cat([c, c], out=pytorchlite.empty(8, 4, dtype=pytorchlite.int64))
    assert str(e.value) == "torch.cat(): input types can't be cast to the desired output type Long"
    with pytest.raises(RuntimeError) as e:
        pytorchlite.zeros(1).expand(4).cumsum_(0)
    assert str(e.value) == INTERNAL


def test_a_wrong_shaped_out_is_resized_with_a_warning():
    a = pytorchlite.ones(2, 3)
    out = pytorchlite.zeros(5)
    with pytest.warns(UserWarning, match=r"had shape \[5\], which does not match the required output shape \[3\]"):
        pytorchlite.sum(a, 0, out=out)
    assert out.shape == (3,) and out.tolist() == [2.0, 2.0, 2.0]
    empty = pytorchlite.zeros(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pytorchlite.mm(a, a.t(), out=empty)                # an empty out= is resized silently
    assert empty.shape == (2, 2)


def test_overlap_status_is_pytorchs():
    from pytorchlite._core import overlap_status
    x = pytorchlite.arange(12.0)
    m = x.view(3, 4)
    assert overlap_status(x, x) == 2 and overlap_status(x[:4], x[:4]) == 2
    assert overlap_status(x[:4], x[2:6]) == 1 and overlap_status(x[:4], x[4:8]) == 0
    sq = x[:9].view(3, 3)
    assert overlap_status(sq, sq.t()) == 1                 # the same bytes in another order
    assert overlap_status(x[::2], x[1::2]) == 0            # not dense: PyTorch does not judge
    assert overlap_status(m[:, :2], x) == 0                # (nor here)
    assert overlap_status(x, pytorchlite.arange(12.0)) == 0
    assert overlap_status(x[:0], x) == 0
