"""Every differentiable operator of ops.yaml, gradient-checked in float64.

The list of operators comes from ops.yaml and derivatives.yaml (through codegen's own
parser), so an operator declared tomorrow is checked at once: pointwise operators get
their inputs from their schema (same shape, broadcast, non-contiguous, 0-d, Python
numbers where the schema allows them); any other differentiable operator needs an entry
in SAMPLES below, and the test says so until it has one. gradgradcheck runs too, except
for the operators in NO_GRADGRAD.

Also here: every operator is either differentiable or says `differentiable: false`,
the formula helpers match codegen's list, and a training loop keeps memory steady.
"""

import gc
import math
import os
import weakref
import zlib

import numpy as np
import pytest

import pytorchlite as P
from pytorchlite.autograd import gradcheck, gradgradcheck
from pytorchlite.generated import functions as F

from codegen.derivatives import HELPERS, load_derivative_entries
from codegen.gen import ROOT
from codegen.model import load_ops

OPS = load_ops(os.path.join(ROOT, "ops.yaml"))
DERIVS = load_derivative_entries(os.path.join(ROOT, "derivatives.yaml"), OPS)
BY_NAME = {op.full_name: op for op in OPS}     # (overloads by their full name: max.dim)
DIFFERENTIABLE = sorted(DERIVS)
# composites differentiate through their parts, aliases as their target; checked too (those
# with non-floating outputs, like not_equal, are skipped when their output turns out not to
# need a gradient)
COMPOSITES = sorted(op.full_name for op in OPS if op.kind in ("composite", "alias")
                    and any(a.type.base == "Tensor" for a in op.schema.arguments))

_rng = np.random.default_rng(1234)


@pytest.fixture(autouse=True)
def _inputs_of_this_test(request):
    """Each test draws its inputs from its own seed (its id), so that they do not depend on
    which tests ran before it (--ptl-order): a shared stream once gave _div_trunc, in another
    order, a quotient within eps of an integer, where finite differences cross the jump."""
    global _rng
    _rng = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


# --- inputs ---------------------------------------------------------------------------------

def T(*shape, low=0.3, high=0.9, signed=True, layout="contiguous", grad=True):
    """A float64 leaf of `shape`: values with |x| in [low, high] (random signs when
    `signed`), laid out contiguously, transposed ("t": the last two dims swapped in
    memory) or step-sliced ("s": every other element of a wider buffer)."""
    vals = _rng.uniform(low, high, size=shape)
    if signed:
        vals = vals * _rng.choice([-1.0, 1.0], size=shape)
    if layout == "t" and len(shape) >= 2:
        base = P.tensor(np.ascontiguousarray(np.swapaxes(vals, -1, -2)), dtype=P.float64)
        t = base.transpose(-1, -2).detach()
    elif layout == "s" and len(shape) >= 1:
        wide = np.zeros(shape[:-1] + (shape[-1] * 2,))
        wide[..., ::2] = vals
        t = P.tensor(wide, dtype=P.float64)[..., ::2].detach()
    else:
        t = P.tensor(vals, dtype=P.float64)
    if layout in ("t", "s") and len(shape) >= 1 and shape[-1] > 1:
        assert not t.is_contiguous()
    return t.requires_grad_(grad)


def I(values):
    return P.tensor(values, dtype=P.int64)


def B(values):
    return P.tensor(values, dtype=P.bool)


# pointwise operators whose inputs must stay in a domain (low, high, signed)
DOMAINS = {
    "log": (0.3, 2.0, False), "log2": (0.3, 2.0, False), "log10": (0.3, 2.0, False),
    "log1p": (0.1, 2.0, False), "sqrt": (0.3, 2.0, False), "rsqrt": (0.3, 2.0, False),
    "lgamma": (0.3, 2.0, False), "digamma": (0.3, 2.0, False), "reciprocal": (0.3, 0.9, True),
    "acosh": (1.2, 3.0, False), "pow": (0.3, 2.0, False), "float_power": (0.3, 2.0, False),
    "xlogy": (0.3, 2.0, False), "polygamma": (0.3, 2.0, False), "mvlgamma": (2.0, 3.0, False),
    "logit": (0.2, 0.8, False), "erfinv": (0.1, 0.8, True),
}
# Scalar arguments without a default, and overrides that keep the function smooth
SCALARS = {"clamp": {"min": -0.5, "max": 0.6}, "clip": {"min": -0.5, "max": 0.6}, "hardtanh": {},
           "threshold": {"threshold": 0.1, "value": 2.0}, "threshold_backward": {"threshold": 0.1}}
# gradients undefined (random) or backward formulas that are not differentiable again
NORMAL = {"normal.Tensor_Tensor", "normal.Tensor_float", "normal.float_Tensor"}
NO_GRADGRAD = set(NORMAL)
# float_power_'s composite computes float_power(self, ...) and writes it back into self;
# pow saved self, so backward rightly reports self as modified in place (the composite
# would need to compute from self.clone(), as the generated in-place variants do)
KNOWN_BROKEN = {"float_power_"}


def _pointwise_samples(op):
    """Inputs for a pointwise operator from its schema."""
    tensors = [a for a in op.schema.arguments if a.type.is_tensor]
    low, high, signed = DOMAINS.get(op.name, (0.3, 0.9, True))
    kw = {}
    for a in op.schema.arguments:
        if a.type.base == "Scalar":
            if a.name in SCALARS.get(op.name, {}):
                kw[a.name] = SCALARS[op.name][a.name]
            elif a.default is None:
                kw[a.name] = 0.7
    where = op.impl.pointwise is not None and op.impl.pointwise.promotion == "where"

    def make(shapes, layout="contiguous"):
        args = []
        for k, (a, shape) in enumerate(zip(tensors, shapes)):
            if where and k == 0:
                args.append(P.tensor(_rng.random(shape) > 0.5, dtype=P.bool))
            else:
                args.append(T(*shape, low=low, high=high, signed=signed, layout=layout))
        return args

    n = len(tensors)
    samples = [(make([(3, 4)] * n), kw), (make([(3, 4)] * n, "t"), kw), (make([(2, 3)] * n, "s"), kw),
               (make([()] * n), kw)]
    if n >= 2:
        samples.append((make([(3, 1), (4,), (1, 4)][:n]), kw))
        samples.append((make([(4,), (2, 3, 4), (3, 1)][:n]), kw))
        # Python numbers where the schema allows them (x + 2, clamp(x, -0.4, 0.6), x ** 1.7)
        ts = set(op.tensor_scalars)
        numbers = iter([1.7] if op.name == "pow" else [-0.4, 0.6, 0.5])
        args = make([(3, 4)] * n)
        replaced = False
        for k, a in enumerate(tensors):
            if k > 0 and a.name in ts and not where:
                args[k] = next(numbers)
                replaced = True
        if replaced:
            samples.append((args, kw))
    return samples


def _m(name):
    """The method form (op is method-only)."""
    return getattr(F, BY_NAME[name].method_pyname)


def _fn(name):
    """The operator's own binding (an overload's, not the parser of its name)."""
    op = BY_NAME[name]
    return getattr(F, op.function_pyname) if op.has_function else _m(name)


def _mutating(name):
    """For ops that write into self (copy_, fill_, squeeze_, ...): run on a copy of self,
    so the leaf stays a leaf and the gradient flows through the in-place history."""
    f = _m(name)

    def run(s, *a, **kw):
        return f(s * 1, *a, **kw)
    return run


def _inf():
    return float("inf")


# op name -> () -> list of (function or None for the op's own, args, kwargs)
SAMPLES = {
    "copy_": lambda: [(_mutating("copy_"), [T(3, 4), T(4)], {}),
                      (_mutating("copy_"), [T(3, 4, layout="t"), T(3, 4)], {})],
    "_to_copy": lambda: [(None, [T(3, 4, layout="t")], {"dtype": P.float64})],
    "clone": lambda: [(None, [T(3, 4, layout="s")], {})],
    "contiguous": lambda: [(None, [T(3, 4, layout="t")], {}), (None, [T(3, 4)], {})],
    "fill_": lambda: [(_mutating("fill_"), [T(3, 4)], {"value": 2.0})],
    "view": lambda: [(None, [T(3, 4), (4, 3)], {}), (None, [T(3, 4), (-1,)], {})],
    "view_as": lambda: [(None, [T(3, 4), P.zeros(2, 6)], {})],
    "reshape": lambda: [(None, [T(3, 4, layout="t"), (12,)], {}), (None, [T(3, 4), (2, 6)], {})],
    "reshape_as": lambda: [(None, [T(3, 4, layout="t"), P.zeros(6, 2)], {})],
    "transpose": lambda: [(None, [T(2, 3, 4), 0, 2], {})],
    "swapaxes": lambda: [(None, [T(2, 3, 4), 1, -1], {})],
    "swapdims": lambda: [(None, [T(2, 3, 4), 0, 1], {})],
    "t": lambda: [(None, [T(3, 4, layout="s")], {}), (None, [T(3)], {})],
    "permute": lambda: [(None, [T(2, 3, 4), (2, 0, -2)], {})],
    "expand": lambda: [(None, [T(3, 1), (3, 4)], {}), (None, [T(3, 1), (2, 3, 4)], {})],
    "expand_as": lambda: [(None, [T(4), P.zeros(3, 4)], {})],
    "squeeze": lambda: [(None, [T(3, 1, 4)], {}), (None, [T(3, 1, 4), 1], {})],
    "unsqueeze": lambda: [(None, [T(3, 4, layout="t"), 1], {}), (None, [T(3, 4), -1], {})],
    "flatten": lambda: [(None, [T(2, 3, 4), 0, 1], {})],
    "unflatten": lambda: [(None, [T(3, 4), 1, (2, 2)], {})],
    "narrow": lambda: [(None, [T(3, 4, layout="t"), 1, 1, 2], {}), (None, [T(3, 4), 0, -2, 2], {})],
    "select": lambda: [(None, [T(3, 4, layout="s"), 1, -1], {}), (None, [T(3, 4), 0, 1], {})],
    "unbind": lambda: [(lambda x: F.unbind(x, 1)[1] * 2 + F.unbind(x, 1)[3], [T(3, 4)], {}),
                       (None, [T(2, 3)], {})],
    "split.Tensor": lambda: [(None, [T(3, 5), 2, 1], {}), (lambda x: F.split(x, 2, 0)[0], [T(3, 4)], {})],
    "split.sizes": lambda: [(None, [T(3, 4), (1, 3), 1], {})],
    "split_with_sizes": lambda: [(None, [T(3, 4), (1, 3), 1], {})],
    "chunk": lambda: [(None, [T(3, 4, layout="t"), 3, 1], {})],
    "tensor_split.sections": lambda: [(None, [T(3, 5), 3, 1], {})],
    "tensor_split.indices": lambda: [(None, [T(3, 5), (1, 3), 1], {})],
    "tensor_split.tensor_indices_or_sections": lambda: [(None, [T(3, 5), I([1, 3]), 1], {}),
                                                        (None, [T(3, 5), I(2), 1], {})],
    "as_strided": lambda: [(None, [T(3, 4), (2, 2), (1, 4), 1], {}),
                           (None, [T(6), (3, 3), (1, 1)], {})],     # overlapping windows add up
    "diagonal": lambda: [(None, [T(3, 4)], {}), (None, [T(3, 4), 1], {}), (None, [T(2, 3, 4), -1, 1, 2], {})],
    "movedim": lambda: [(None, [T(2, 3, 4), 0, 2], {})],
    "moveaxis": lambda: [(None, [T(2, 3, 4), (0, 1), (2, 0)], {})],
    "ravel": lambda: [(None, [T(3, 4, layout="t")], {})],
    "unfold": lambda: [(None, [T(3, 5), 1, 2, 1], {}), (None, [T(6), 0, 2, 2], {})],
    "squeeze_": lambda: [(_mutating("squeeze_"), [T(3, 1, 4)], {})],
    "unsqueeze_": lambda: [(_mutating("unsqueeze_"), [T(3, 4)], {"dim": 1})],
    "t_": lambda: [(_mutating("t_"), [T(3, 4)], {})],
    "transpose_": lambda: [(_mutating("transpose_"), [T(2, 3, 4), 0, 2], {})],
    "index_select": lambda: [(None, [T(3, 4, layout="t"), 1, I([0, 2, 2])], {}), (None, [T(5), 0, I([4, 0])], {})],
    "masked_fill": lambda: [(None, [T(3, 4), B(_rng.random((3, 4)) > 0.5), T()], {}),
                            (None, [T(3, 4, layout="t"), B(_rng.random(4) > 0.5), 2.0], {})],
    "masked_fill_": lambda: [(_mutating("masked_fill_"), [T(3, 4), B(_rng.random((3, 4)) > 0.5), T()], {})],
    "masked_select": lambda: [(None, [T(3, 4), B(_rng.random((3, 4)) > 0.5)], {}),
                              (None, [T(4), B(_rng.random((3, 4)) > 0.5)], {})],
    "index_put_": lambda: [(_mutating("index_put_"), [T(5), [I([0, 3])], T(2)], {}),
                           (_mutating("index_put_"), [T(5), [I([0, 3, 3])], T(3)], {"accumulate": True})],
    "index_put": lambda: [(None, [T(4, 3), [I([0, 3])], T(3)], {}),
                          (None, [T(5), [I([1, 1])], T(2)], {"accumulate": True})],
    "sum": lambda: [(None, [T(3, 4)], {}), (None, [T(3, 4, layout="t"), 1], {}), (None, [T(2, 3, 4), (0, 2), True], {}),
                    (None, [T()], {})],
    "nansum": lambda: [(None, [T(3, 4)], {}), (None, [T(3, 4), 0], {})],
    "prod": lambda: [(None, [T(3, 4)], {}), (None, [T(3, 4, layout="s"), 1], {}),
                     (None, [P.tensor([[1.5, 0.0, 2.0], [0.0, 0.0, 3.0], [1.2, 0.7, 0.5]], dtype=P.float64,
                                      requires_grad=True), 1, True], {}),
                     (None, [P.tensor([0.5, 0.0, 2.0], dtype=P.float64, requires_grad=True)], {})],
    "mean": lambda: [(None, [T(3, 4)], {}), (None, [T(3, 4, layout="t"), (0,), True], {})],
    "nanmean": lambda: [(None, [T(3, 4)], {}), (None, [T(3, 4), 1], {})],
    "amax": lambda: [(None, [T(3, 4), 1], {}), (None, [T(2, 3, 4, layout="t"), (0, 2), True], {}),
                     (None, [T(3, 4)], {})],
    "amin": lambda: [(None, [T(3, 4), 1], {}), (None, [T(3, 4)], {})],
    "max": lambda: [(None, [T(3, 4)], {})],
    "max.dim": lambda: [(lambda x: F.max(x, 1).values, [T(3, 4, layout="t")], {}),
                        (lambda x: F.max(x, 1, True)[0], [T(3, 4)], {})],
    "max.other": lambda: [(None, [T(3, 4), T(4)], {})],
    "min": lambda: [(None, [T(3, 4)], {})],
    "min.dim": lambda: [(lambda x: F.min(x, 0)[0], [T(3, 4)], {})],
    "min.other": lambda: [(None, [T(3, 4), T(3, 4)], {})],
    "aminmax": lambda: [(lambda x: sum(F.aminmax(x)), [T(3, 4)], {}),
                        (lambda x: F.aminmax(x, dim=1)[1], [T(3, 4)], {})],
    "var": lambda: [(None, [T(3, 4)], {}), (None, [T(3, 4, layout="t"), 1], {}),
                    (None, [T(3, 4), (0,)], {"keepdim": True, "correction": 0}), (None, [T(5), None, False], {})],
    "std": lambda: [(None, [T(3, 4)], {}), (None, [T(3, 4), 1], {"correction": 2})],
    "var_mean": lambda: [(lambda x: F.var_mean(x, 1)[0] + F.var_mean(x, 1)[1] * 2, [T(3, 4)], {}),
                         (lambda x: F.var_mean(x)[1], [T(3, 4)], {})],
    "std_mean": lambda: [(lambda x: F.std_mean(x, 1)[0] + F.std_mean(x, 1)[1] * 2, [T(3, 4)], {})],
    "logsumexp": lambda: [(None, [T(3, 4), 1], {}), (None, [T(3, 4, layout="s"), (0, 1), True], {})],
    "norm": lambda: [(None, [T(3, 4)], {}), (None, [T(3, 4), 1, 1], {}), (None, [T(3, 4), 3, (0,)], {}),
                     (None, [T(3, 4), _inf(), 1], {})],
    "norm.str": lambda: [(None, [T(3, 4), "fro"], {}), (None, [T(3, 4), "nuc"], {}),
                         (None, [T(2, 3, 4), "fro", (1, 2)], {})],
    "mm": lambda: [(None, [T(3, 4), T(4, 2, layout="t")], {})],
    "bmm": lambda: [(None, [T(2, 3, 4), T(2, 4, 2)], {})],
    "matmul": lambda: [(None, [T(3), T(3)], {}), (None, [T(2, 3), T(3)], {}), (None, [T(3), T(3, 2)], {}),
                       (None, [T(2, 3, 4), T(4, 2, layout="t")], {}), (None, [T(3, 4), T(2, 4, 2)], {}),
                       (None, [T(4), T(2, 4, 3)], {}), (None, [T(2, 2, 3), T(3)], {})],
    "addmm": lambda: [(None, [T(2), T(3, 4), T(4, 2)], {}), (None, [T(3, 2), T(3, 4, layout="t"), T(4, 2)],
                                                             {"beta": 0.5, "alpha": 2.0})],
    "baddbmm": lambda: [(None, [T(3, 2), T(2, 3, 4), T(2, 4, 2)], {"beta": 2.0, "alpha": 0.5})],
    "addbmm": lambda: [(None, [T(3, 2), T(2, 3, 4), T(2, 4, 2)], {}), (None, [T(2), T(2, 3, 4), T(2, 4, 2)],
                                                                        {"alpha": 0.5})],
    "mv": lambda: [(None, [T(3, 4, layout="t"), T(4)], {})],
    "addmv": lambda: [(None, [T(3), T(3, 4), T(4)], {"beta": 0.5, "alpha": 2.0}), (None, [T(1), T(3, 4), T(4)], {})],
    "dot": lambda: [(None, [T(4), T(4, layout="s")], {})],
    "vdot": lambda: [(None, [T(4), T(4)], {})],
    "outer": lambda: [(None, [T(3), T(4)], {})],
    "addr": lambda: [(None, [T(3, 4), T(3), T(4)], {"beta": 2.0, "alpha": 0.5}), (None, [T(4), T(3), T(4)], {})],
    # composites whose inputs the schema alone cannot give
    "clamp": lambda: [(None, [T(3, 4), -0.5, 0.6], {})],
    "clamp.Tensor": lambda: [(None, [T(3, 4, layout="t"), T(4), T(3, 1)], {}), (None, [T(3, 4)], {"max": T(4)})],
    "clip": lambda: [(None, [T(3, 4), -0.5], {})],
    "clip.Tensor": lambda: [(None, [T(3, 4)], {"max": T(4)})],
    "linalg_matmul": lambda: [(None, [T(2, 3, 4), T(4, 2)], {})],
    "ger": lambda: [(None, [T(3), T(4, layout="s")], {})],
    "cat": lambda: [(None, [[T(2, 3), T(1, 3, layout="s"), T(0, 3)], 0], {}), (None, [[T(2, 3), T(2, 1)], -1], {}),
                    (None, [[T(2, 2), T(0)], 1], {})],
    "concat": lambda: [(None, [[T(2, 3), T(2, 2, layout="t")], 1], {})],
    "concatenate": lambda: [(None, [[T(3), T(2)]], {})],
    "stack": lambda: [(None, [[T(2, 3), T(2, 3, layout="t")], 1], {}), (None, [[T(), T()]], {})],
    "hstack": lambda: [(None, [[T(2, 3), T(2, 1)]], {}), (None, [[T(), T(2)]], {})],
    "vstack": lambda: [(None, [[T(3), T(2, 3)]], {})],
    "dstack": lambda: [(None, [[T(2, 3), T(2, 3, 2)]], {})],
    "gather": lambda: [(None, [T(3, 4, layout="t"), 1, I([[0, 3, 3], [1, 0, 2]])], {}),
                       (None, [T(4), 0, I([3, 3, 0])], {})],
    "scatter": lambda: [(None, [T(3, 4), 1, I([[0, 3], [2, 1]]), T(2, 2)], {}),
                        (None, [T(3, 4, layout="t"), 0, I([[2, 0, 1, 1]]), 1.5], {}),
                        (None, [T(3, 4), 0, I([[2, 0], [2, 1]]), T(2, 2)], {"reduce": "add"})],
    "scatter_add": lambda: [(None, [T(3, 4), 1, I([[0, 3, 3], [2, 1, 2]]), T(2, 3, layout="s")], {})],
    "scatter_reduce": lambda: [
        (None, [T(3, 4), 0, I([[2, 0, 1, 1], [2, 2, 1, 0]]), T(2, 4), r], {"include_self": inc})
        for r in ("sum", "mean", "prod") for inc in (True, False)] + [
        (None, [P.tensor([[0.5, 0.9], [0.7, 0.1]], dtype=P.float64, requires_grad=True), 1, I([[0, 0], [1, 1]]),
                P.tensor([[0.2, 0.8], [0.3, 0.6]], dtype=P.float64, requires_grad=True), r], {"include_self": inc})
        for r in ("amax", "amin") for inc in (True, False)],
    "index_add": lambda: [(None, [T(4, 3), 0, I([0, 3, 3]), T(3, 3)], {}),
                          (None, [T(3, 4, layout="t"), 1, I([1, 0]), T(3, 2)], {"alpha": 2.0})],
    "index_copy": lambda: [(None, [T(4, 3), 0, I([3, 0]), T(2, 3)], {}), (None, [T(3, 4), 1, I([2]), T(3, 1)], {})],
    "index_fill": lambda: [(None, [T(4, 3), 0, I([3, 0]), 2.0], {}), (None, [T(3, 4), 1, I([2, -1]), T()], {})],
    "take": lambda: [(None, [T(3, 4, layout="t"), I([[0, 11], [5, -1], [5, 5]])], {})],
    "take_along_dim": lambda: [(None, [T(3, 4), I([[0], [3], [1]]), 1], {}), (None, [T(3, 4), I([0, 7, 7])], {})],
    "put": lambda: [(None, [T(3, 4), I([0, 11, 5]), T(3)], {}),
                    (None, [T(3, 4), I([0, 0, -1]), T(3)], {"accumulate": True})],
    "masked_scatter": lambda: [(None, [T(3, 4), B(_rng.random((3, 4)) > 0.5), T(12)], {}),
                               (None, [T(4), B(_rng.random((2, 4)) > 0.5), T(3, 4)], {})],
    "repeat": lambda: [(None, [T(2, 3), (2, 1, 2)], {})],
    "tile": lambda: [(None, [T(2, 3, layout="t"), (2,)], {})],
    "repeat_interleave.self_int": lambda: [(None, [T(2, 3), 2, 1], {}), (None, [T(2, 3), 2], {})],
    "repeat_interleave.self_Tensor": lambda: [(None, [T(2, 3), I([1, 2]), 0], {})],
    "repeat_interleave.Tensor": lambda: [(None, [I([1, 2])], {})],
    "flip": lambda: [(None, [T(2, 3, 4, layout="s"), (0, 2)], {})],
    "fliplr": lambda: [(None, [T(2, 3)], {})],
    "flipud": lambda: [(None, [T(2, 3, layout="t")], {})],
    "roll": lambda: [(None, [T(3, 4), 1], {}), (None, [T(3, 4, layout="t"), (1, -2), (0, 1)], {})],
    "rot90": lambda: [(None, [T(2, 3), k], {}) for k in (1, 2, 3)] + [(None, [T(2, 3, 4), 1, (2, 0)], {})],
    "tril": lambda: [(None, [T(3, 4)], {}), (None, [T(2, 3, 4, layout="t"), -1], {})],
    "triu": lambda: [(None, [T(3, 4)], {}), (None, [T(3, 4), 2], {})],
    "diag": lambda: [(None, [T(3), 1], {}), (None, [T(3, 4, layout="t"), -1], {})],
    "diag_embed": lambda: [(None, [T(2, 3)], {}), (None, [T(2, 3), 1, 0, 2], {})],
    "pad": lambda: [(None, [T(2, 3), (1, 2)], {}), (None, [T(2, 3, 4), (-1, 1, 2, 0)], {"value": 0.5}),
                    (None, [T(2, 3, 4, layout="t"), (2, 1, 1, 2)], {"mode": "reflect"}),
                    (None, [T(2, 3), (2, 1)], {"mode": "replicate"}),
                    (None, [T(1, 2, 3), (3, -1)], {"mode": "circular"})],
    # @@ section: data-movement @@
    # random values in +-[0.3, 0.9]: no ties, so sort / topk / selections are smooth
    "sort": lambda: [(None, [T(3, 5)], {}), (None, [T(4, 3, layout="t"), 0], {"descending": True}),
                     (None, [T(6, layout="s")], {"stable": True}), (None, [T()], {})],
    "msort": lambda: [(None, [T(4, 3, layout="t")], {})],
    "topk": lambda: [(None, [T(3, 6), 2], {}), (None, [T(5, 4, layout="t"), 3, 0], {"largest": False}),
                     (None, [T(40), 3], {})],
    "kthvalue": lambda: [(None, [T(3, 5), 2], {}), (None, [T(4, 3, layout="t"), 4, 0], {"keepdim": True})],
    "median": lambda: [(None, [T(3, 5)], {}), (None, [T(3, 5), 1], {}), (None, [T(4, 3, layout="t"), 0, True], {})],
    "nanmedian": lambda: [(None, [T(4, 3)], {}), (None, [T(3, 4, layout="s"), 1], {})],
    "mode": lambda: [(None, [T(3, 5)], {}), (None, [T(4, 3, layout="t"), 0], {"keepdim": True})],
    "cumsum": lambda: [(None, [T(3, 4), 1], {}), (None, [T(3, 4, layout="t"), 0], {}), (None, [T(), 0], {}),
                       (None, [T(5), 0], {"dtype": P.float64})],
    "cumprod": lambda: [(None, [T(3, 4), 1], {}), (None, [T(4, 3, layout="t"), 0], {}),
                        # zeros (one and two in a row): the exact, division-free gradient
                        (None, [P.tensor([[0.5, 0.0, 0.7, -0.8], [0.0, 0.6, 0.0, 0.4]], dtype=P.float64)
                                .requires_grad_(), 1], {})],
    "cummax": lambda: [(None, [T(3, 5), 1], {}), (None, [T(4, 3, layout="t"), 0], {})],
    "cummin": lambda: [(None, [T(3, 5), 1], {}), (None, [T(5, layout="s"), 0], {})],
    "logcumsumexp": lambda: [(None, [T(3, 4), 1], {}), (None, [T(4, 3, layout="t"), 0], {}), (None, [T(), 0], {})],
    # @@ section: sorting-scans @@
    # linalg: inputs shifted by a multiple of I (well conditioned), symmetrised (x + x^T, x x^T + I)
    # where the op reads one triangle; svd/eigh through gauge-invariant functions of the vectors
    # ((U * w) U^T with distinct weights w is unchanged by flipping the sign of any column)
    "linalg_inv": lambda: [(lambda x: F.linalg_inv(x + P.eye(3, dtype=P.float64) * 3), [T(3, 3)], {}),
                           (lambda x: F.linalg_inv(x + P.eye(3, dtype=P.float64) * 3), [T(2, 3, 3, layout="t")], {})],
    "inverse": lambda: [(lambda x: F.inverse(x + P.eye(2, dtype=P.float64) * 3), [T(2, 2)], {})],
    "linalg_det": lambda: [(lambda x: F.linalg_det(x + P.eye(3, dtype=P.float64) * 2), [T(3, 3)], {}),
                           (lambda x: F.linalg_det(x + P.eye(3, dtype=P.float64) * 2), [T(2, 3, 3, layout="t")], {})],
    "det": lambda: [(lambda x: F.det(x + P.eye(2, dtype=P.float64) * 2), [T(2, 2)], {})],
    "linalg_slogdet": lambda: [(lambda x: F.linalg_slogdet(x - P.eye(3, dtype=P.float64) * 2)[1],
                                [T(2, 3, 3)], {})],
    "slogdet": lambda: [(lambda x: F.slogdet(x + P.eye(2, dtype=P.float64) * 2)[1], [T(2, 2)], {})],
    "logdet": lambda: [(lambda x: F.logdet(x + P.eye(2, dtype=P.float64) * 2), [T(2, 2)], {})],
    "linalg_solve": lambda: [
        (lambda a, b: F.linalg_solve(a + P.eye(3, dtype=P.float64) * 3, b), [T(3, 3), T(3, 2)], {}),
        (lambda a, b: F.linalg_solve(a + P.eye(3, dtype=P.float64) * 3, b), [T(2, 3, 3), T(3)], {}),
        (lambda a, b: F.linalg_solve(a + P.eye(3, dtype=P.float64) * 3, b, left=False),
         [T(3, 3, layout="t"), T(2, 2, 3)], {})],
    "linalg_cholesky": lambda: [
        (lambda x: F.linalg_cholesky(x.matmul(x.mT) + P.eye(3, dtype=P.float64)), [T(3, 3)], {}),
        (lambda x: F.linalg_cholesky(x.matmul(x.mT) + P.eye(3, dtype=P.float64), upper=True), [T(2, 3, 3)], {})],
    "linalg_qr": lambda: [(lambda x: F.linalg_qr(x)[0], [T(4, 3)], {}), (lambda x: F.linalg_qr(x)[1], [T(4, 3)], {}),
                          (lambda x: F.linalg_qr(x, "complete")[1], [T(2, 3, layout="t")], {}),
                          (lambda x: F.linalg_qr(x)[0], [T(2, 3, 5)], {}),
                          (lambda x: F.linalg_qr(x)[1], [T(3, 5)], {})],
    "_linalg_svd": lambda: [(lambda x: (lambda r: (r.S, (r.U * P.arange(1, 4, dtype=P.float64)).matmul(r.U.mT),
                                                   (r.Vh.mT * P.arange(1, 4, dtype=P.float64)).matmul(r.Vh)))(
                                 F._linalg_svd(x)), [T(4, 3)], {}),
                            (lambda x: (lambda r: (r.U * r.S.unsqueeze(-2)).matmul(r.Vh))(F._linalg_svd(x)),
                             [T(2, 3, 4)], {})],
    "linalg_svd": lambda: [(lambda x: (lambda r: (r.S, (r.U * P.arange(1, 4, dtype=P.float64)).matmul(r.U.mT)))(
        F.linalg_svd(x)), [T(3, 3)], {})],
    "linalg_svdvals": lambda: [(None, [T(3, 4)], {}), (None, [T(2, 4, 3, layout="t")], {})],
    "_linalg_eigh": lambda: [(lambda x: (lambda r: (r.eigenvalues, (r.eigenvectors * P.arange(1, 4, dtype=P.float64))
                                                    .matmul(r.eigenvectors.mT)))(F._linalg_eigh(x + x.mT)),
                              [T(3, 3)], {}),
                             (lambda x: F._linalg_eigh(x + x.mT, "U")[0], [T(2, 3, 3)], {})],
    "linalg_eigh": lambda: [(lambda x: F.linalg_eigh(x + x.mT).eigenvalues, [T(3, 3)], {})],
    "linalg_eigvalsh": lambda: [(lambda x: F.linalg_eigvalsh(x + x.mT), [T(2, 3, 3)], {})],
    "linalg_lstsq": lambda: [(lambda a, b: F.linalg_lstsq(a, b).solution, [T(4, 3), T(4, 2)], {}),
                             (lambda a, b: F.linalg_lstsq(a, b, driver="gelsd").solution, [T(2, 4, 3), T(2, 4)], {}),
                             (lambda a, b: F.linalg_lstsq(a, b).solution, [T(2, 4), T(2, 3)], {})],
    "einsum": lambda: [(lambda a, b: F.einsum("bij,bjk->bik", [a, b]), [T(2, 3, 4), T(2, 4, 2, layout="t")], {}),
                       (lambda a: F.einsum("ii->i", [a]), [T(3, 3)], {}),
                       (lambda a, b: F.einsum("...ij,jk", [a, b]), [T(2, 3, 4), T(4, 2)], {}),
                       (lambda a, b, c: F.einsum("ab,bc,cd->ad", [a, b, c]), [T(2, 3), T(3, 4), T(4, 2)], {})],
    "tensordot": lambda: [(None, [T(2, 3, 4), T(3, 4, 2), [1, 2], [0, 1]], {})],
    "kron": lambda: [(None, [T(2, 3), T(2, 2)], {}), (None, [T(2), T(3, 2)], {})],
    "trace": lambda: [(None, [T(3, 3)], {}), (None, [T(3, 4, layout="t")], {})],
    "linalg_vector_norm": lambda: [(None, [T(3, 4)], {}), (None, [T(3, 4), 1, [1]], {}),
                                   (None, [T(3, 4), 3, [0, 1], True], {})],
    "linalg_matrix_norm": lambda: [(None, [T(3, 4), 1], {}), (None, [T(2, 3, 4), -1], {}), (None, [T(3, 4), 2], {}),
                                   (None, [T(3, 4), _inf()], {}), (None, [T(2, 3, 3), -2], {"keepdim": True})],
    "linalg_matrix_norm.str_ord": lambda: [(None, [T(3, 4)], {}), (None, [T(2, 3, 4), "nuc"], {})],
    "linalg_norm": lambda: [(None, [T(3, 4)], {}), (None, [T(3, 4), 2], {}), (None, [T(2, 3, 4), 1, 2], {})],
    "linalg_norm.ord_str": lambda: [(None, [T(3, 4), "nuc"], {})],
    "linalg_cross": lambda: [(None, [T(4, 3), T(1, 3)], {}), (None, [T(3, 2, layout="t"), T(3, 2)], {"dim": 0})],
    "cross": lambda: [(None, [T(2, 3), T(2, 3), 1], {})],
    "dist": lambda: [(None, [T(3, 4), T(4)], {}), (None, [T(3), T(3)], {"p": 1})],
    "cdist": lambda: [(None, [T(2, 4, 3), T(5, 3)], {}), (None, [T(4, 3), T(2, 3)], {"p": 1.0})],
    "linalg_pinv.rcond": lambda: [(None, [T(3, 4), 1e-3], {}), (None, [T(3, 3)], {"rcond": 1e-3, "hermitian": False})],
    "linalg_pinv.rcond_tensor": lambda: [(None, [T(3, 4), P.tensor(1e-3, dtype=P.float64)], {})],
    "linalg_matrix_rank.tol": lambda: [(None, [T(3, 4), 0.1], {})],
    "linalg_matrix_rank.tol_tensor": lambda: [(None, [T(3, 4), P.tensor(0.1, dtype=P.float64)], {})],
    "linalg_pinv": lambda: [(None, [T(3, 4)], {}), (None, [T(2, 4, 3, layout="t")], {}),
                            (lambda x: F.linalg_pinv(x + x.mT, hermitian=True), [T(3, 3)], {}),
                            (lambda x: F.linalg_pinv(x + P.eye(3, dtype=P.float64) * 3, atol=0.1, rtol=1e-3),
                             [T(3, 3)], {}),
                            # rank 1 (two zero singular values): pinv_backward, unlike the SVD's, holds
                            (lambda u, v: F.linalg_pinv(u.unsqueeze(-1) * v.unsqueeze(-2)), [T(3), T(4)], {})],
    "pinverse": lambda: [(None, [T(4, 3)], {}), (None, [T(2, 3, 3, layout="s"), 1e-10], {})],
    "linalg_matrix_rank": lambda: [(None, [T(3, 4)], {}), (None, [T(2, 3, 3)], {"hermitian": True})],
    "linalg_multi_dot": lambda: [(lambda *ts: F.linalg_multi_dot(list(ts)), [T(3, 4), T(4, 2)], {}),
                                 (lambda *ts: F.linalg_multi_dot(list(ts)), [T(4), T(4, 2), T(2, 5, layout="t")], {}),
                                 (lambda *ts: F.linalg_multi_dot(list(ts)),
                                  [T(2, 5), T(5, 1), T(1, 3), T(3, 4), T(4)], {})],
    "linalg_matrix_power": lambda: [(None, [T(3, 3), 0], {}), (None, [T(3, 3), 1], {}),
                                    (None, [T(2, 3, 3, layout="t"), 5], {}),
                                    (lambda x: F.linalg_matrix_power(x + P.eye(3, dtype=P.float64) * 3, -2),
                                     [T(3, 3)], {})],
    "matrix_power": lambda: [(None, [T(3, 3), 3], {}),
                             (lambda x: F.matrix_power(x + P.eye(3, dtype=P.float64) * 3, -1), [T(3, 3)], {})],
    "linalg_solve_triangular": lambda: [
        (lambda a, b: F.linalg_solve_triangular(a + P.eye(3, dtype=P.float64) * 3, b, upper=True), [T(3, 3), T(3, 2)],
         {}),
        (lambda a, b: F.linalg_solve_triangular(a + P.eye(3, dtype=P.float64) * 3, b, upper=False, left=False),
         [T(2, 3, 3, layout="t"), T(4, 3)], {}),
        (lambda a, b: F.linalg_solve_triangular(a, b, upper=True, unitriangular=True),
         [T(3, 3), T(2, 3, 2, layout="s")], {}),
        (lambda a, b: F.linalg_solve_triangular(a + P.eye(3, dtype=P.float64) * 3, b, upper=False,
                                                unitriangular=False), [T(3, 3), T(3, 1)], {})],
    "linalg_inv_ex": lambda: [(lambda x: F.linalg_inv_ex(x + P.eye(3, dtype=P.float64) * 3).inverse, [T(3, 3)], {}),
                              (lambda x: F.linalg_inv_ex(x + P.eye(3, dtype=P.float64) * 3)[0],
                               [T(2, 3, 3, layout="t")], {})],
    "linalg_cholesky_ex": lambda: [
        (lambda x: F.linalg_cholesky_ex(x.matmul(x.mT) + P.eye(3, dtype=P.float64)).L, [T(3, 3)], {}),
        (lambda x: F.linalg_cholesky_ex(x.matmul(x.mT) + P.eye(3, dtype=P.float64), upper=True)[0], [T(2, 3, 3)], {})],
    "linalg_vecdot": lambda: [(None, [T(3, 4), T(4)], {}), (None, [T(3, 2, layout="t"), T(3, 2)], {"dim": 0})],
    "linalg_cond": lambda: [(None, [T(3, 4)], {}), (None, [T(2, 3, 3), -2], {}),
                            (lambda x: F.linalg_cond(x + P.eye(3, dtype=P.float64) * 2, 1), [T(3, 3)], {}),
                            (lambda x: F.linalg_cond(x + P.eye(3, dtype=P.float64) * 2, -math.inf), [T(3, 3)], {})],
    "linalg_cond.p_str": lambda: [(lambda x: F.linalg_cond(x + P.eye(3, dtype=P.float64) * 2, "fro"),
                                   [T(3, 3)], {}),
                                  (lambda x: F.linalg_cond(x + P.eye(3, dtype=P.float64) * 2, "nuc"),
                                   [T(2, 3, 3)], {})],
    "linalg_matrix_exp": lambda: [(None, [T(3, 3)], {}), (None, [T(2, 3, 3, layout="t")], {}),
                                  # norms above the Pade range: scaled and squared, one matrix more than the other
                                  (lambda x: F.linalg_matrix_exp(x * P.tensor([[[[8.]]], [[[1.]]]], dtype=P.float64)),
                                   [T(2, 1, 3, 3)], {}),
                                  (None, [T(1, 1)], {})],
    "matrix_exp": lambda: [(None, [T(2, 2)], {})],
    # @@ section: linalg @@
    "_softmax": lambda: [(None, [T(3, 4), 1, False], {}), (None, [T(2, 3, 4, layout="t"), 1, False], {}),
                         (None, [T(), 0, False], {})],
    "_log_softmax": lambda: [(None, [T(3, 4), 1, False], {}), (None, [T(3, 4, layout="s"), 0, False], {})],
    "_softmax_backward_data": lambda: [(None, [T(3, 4), T(3, 4, low=0.1, high=0.5, signed=False), 1, P.float64],
                                        {}),
                                       (None, [T(2, 3, layout="t"), T(2, 3), 0, P.float64], {})],
    "_log_softmax_backward_data": lambda: [(None, [T(3, 4), T(3, 4, layout="t"), 1, P.float64], {})],
    "softmax": lambda: [(None, [T(3, 4), 1], {}), (None, [T(2, 3, 4, layout="t"), 0], {})],
    "log_softmax": lambda: [(None, [T(3, 4), 1], {}), (None, [T(3, 4, layout="s"), 0], {})],
    "convolution": lambda: [
        (None, [T(2, 2, 5, 4), T(3, 2, 3, 2), T(3), [1], [1], [1], False, [0], 1], {}),
        (None, [T(1, 4, 5, 5, layout="t"), T(4, 2, 2, 3), None, [2, 1], [0, 1], [1, 2], False, [0], 2], {}),
        (None, [T(2, 2, 6), T(3, 2, 3), T(3), [2], [1], [1], False, [0], 1], {}),
        (None, [T(1, 4, 3, 3), T(4, 1, 3, 2), T(2), [2], [1], [1], True, [1, 0], 2], {})],
    "convolution_backward": lambda: [
        (None, [T(2, 3, 5, 5), T(2, 2, 5, 4), T(3, 2, 3, 2), None, [1], [1], [1], False, [0], 1,
                [True, True, True]], {}),
        (None, [T(1, 4, 3, 3), T(1, 4, 5, 5), T(4, 2, 3, 3), None, [2], [1], [1], False, [0], 2,
                [True, True, False]], {}),
        (None, [T(1, 2, 6, 4), T(1, 4, 3, 3), T(4, 1, 3, 2), None, [2], [1], [1], True, [1, 0], 2,
                [True, True, True]], {})],
    "nll_loss_forward": lambda: [
        (lambda *a: P.nll_loss_forward(*a)[0], [T(4, 5), I([1, 0, 4, 2]), None, 1, -100], {}),
        (lambda *a: P.nll_loss_forward(*a)[0], [T(4, 5, layout="t"), I([1, 0, 4, 0]), T(5, grad=False), 0, 0], {}),
        (lambda *a: P.nll_loss_forward(*a)[0], [T(5), I(3), T(5, grad=False), 2, -100], {})],
    "nll_loss2d_forward": lambda: [
        (lambda *a: P.nll_loss2d_forward(*a)[0], [T(2, 3, 2, 2), I([[[0, 1], [2, 1]], [[1, 1], [0, 2]]]),
                                                  T(3, grad=False), 1, 2], {}),
        (lambda *a: P.nll_loss2d_forward(*a)[0], [T(1, 3, 2, 2, layout="t"), I([[[0, 1], [2, 1]]]), None, 0,
                                                  -100], {})],
    "nll_loss_backward": lambda: [
        (None, [T(), T(4, 5), I([1, 0, 4, 2]), None, 1, -100, P.tensor(4.0, dtype=P.float64)], {}),
        (None, [T(4), T(4, 5), I([1, 0, 4, 0]), T(5, grad=False), 0, 0, P.tensor(0.0, dtype=P.float64)], {})],
    "nll_loss2d_backward": lambda: [
        (None, [T(), T(1, 3, 2, 2), I([[[0, 1], [2, 1]]]), T(3, grad=False), 2, 2, P.tensor(1.0, dtype=P.float64)],
         {})],
    "max_pool2d_with_indices": lambda: [(lambda x: F.max_pool2d_with_indices(x, 2)[0], [T(2, 2, 4, 5)], {}),
                                        (lambda x: F.max_pool2d_with_indices(x, 3, 2, 1, 1, True)[0],
                                         [T(1, 2, 6, 5, layout="t")], {})],
    "max_pool2d_with_indices_backward": lambda: [
        (lambda g, x: F.max_pool2d_with_indices_backward(g, x, [2], [2], [0], [1], False,
                                                         F.max_pool2d_with_indices(x.detach(), 2)[1]),
         [T(2, 2, 2, 2), T(2, 2, 4, 5)], {})],
    "avg_pool2d": lambda: [(None, [T(2, 2, 4, 5), 2], {}),
                           (None, [T(1, 2, 6, 5, layout="t"), 3, 2, 1, True, False], {}),
                           (None, [T(2, 4, 4), [2, 3], [1, 2], [1, 1], False, True, 4], {})],
    "avg_pool2d_backward": lambda: [(None, [T(2, 2, 3, 3), T(2, 2, 6, 6), [3], [2], [1], False, True, None], {}),
                                    (None, [T(1, 2, 3), T(1, 4, 5), [2], [], [0], True, False, None], {})],
    "_adaptive_avg_pool2d": lambda: [(None, [T(2, 2, 5, 7), [3, 4]], {}), (None, [T(2, 3, 3, layout="t"), [4, 1]], {})],
    "_adaptive_avg_pool2d_backward": lambda: [(None, [T(2, 2, 3, 4), T(2, 2, 5, 7)], {})],
    "native_layer_norm": lambda: [(lambda x, w, b: F.native_layer_norm(x, [4], w, b, 1e-5)[0],
                                   [T(3, 4), T(4), T(4)], {}),
                                  (lambda x: F.native_layer_norm(x, [3, 4], None, None, 1e-5)[0],
                                   [T(2, 3, 4, layout="t")], {}),
                                  (lambda x, w: F.native_layer_norm(x, [5], w, None, 1e-5)[0], [T(5), T(5)], {})],
    "layer_norm": lambda: [(None, [T(3, 4), [4], T(4), T(4)], {}), (None, [T(2, 3, 4, layout="t"), [3, 4]], {})],
    "group_norm": lambda: [(None, [T(2, 4, 3), 2, T(4), T(4)], {}), (None, [T(3, 6), 3], {})],
    "batch_norm": lambda: [(None, [T(4, 3), T(3), T(3), None, None, True, 0.1, 1e-5, False], {}),
                           (None, [T(2, 3, 4, layout="t"), None, T(3),
                                   P.zeros(3, dtype=P.float64), P.ones(3, dtype=P.float64), False, 0.1, 1e-5,
                                   False], {})],
    "embedding": lambda: [(None, [T(5, 3), I([[0, 2], [2, 4]])], {}), (None, [T(4, 2), I([1, 1, 3]), 0], {})],  # padding row unused
    # @@ section: nn @@
}


def _schema_is_simple(op):
    """Tensors, Scalars and arguments with defaults only: inputs can come from the schema."""
    return all(a.type.is_tensor and not a.type.optional or a.type.base == "Scalar" or a.default is not None
               for a in op.schema.arguments if a not in op.schema.out_arguments)


def _samples(name):
    op = BY_NAME[name]
    if name in SAMPLES:
        return [(f or _fn(name), args, kw) for f, args, kw in SAMPLES[name]()]
    if op.impl.kind == "pointwise" or (op.impl.kind == "composite" and _schema_is_simple(op)):
        mutates = op.schema.arguments[0].type.is_mutable
        fn = _mutating(name) if mutates else _fn(name)
        out = [(fn, args, kw) for args, kw in _pointwise_samples(op)]
        if op.has_inplace:
            inplace = getattr(F, op.inplace_pyname)

            def run_inplace(s, *a, **kw):
                return inplace(s * 1, *a, **kw)
            # in place: the first operand keeps its shape, so only same-shape inputs
            out += [(run_inplace, args, kw) for args, kw in _pointwise_samples(op)[:2]]
        return out
    return None


# --- the checks -----------------------------------------------------------------------------

def test_every_operator_is_classified():
    """An operator with Tensor inputs is differentiable (derivatives.yaml) or says
    `differentiable: false` in ops.yaml; composites differentiate through their parts."""
    missing = []
    for op in OPS:
        if op.kind in ("composite", "alias") or op.differentiable is False or op.full_name in DERIVS:
            continue
        if any(a.type.base == "Tensor" for a in op.schema.arguments if a not in op.schema.out_arguments):
            missing.append(f"{op.file}:{op.line}: {op.name}")
    assert not missing, ("operators with neither a derivatives.yaml entry nor 'differentiable: false':\n  "
                         + "\n  ".join(missing))


def test_formula_helpers_match_codegen():
    from pytorchlite.autograd import _formulas
    assert sorted(_formulas.__all__) == sorted(HELPERS)
    for name in HELPERS:
        assert callable(getattr(_formulas, name)), name


def test_every_differentiable_operator_has_samples():
    missing = [n for n in DIFFERENTIABLE + COMPOSITES if n not in NO_GRADGRAD and _samples(n) is None]
    assert not missing, ("add gradcheck inputs to SAMPLES in tests/autograd/test_gradcheck_ops.py for: "
                         + ", ".join(missing))


def _run_check(check, name, limit=None):
    samples = _samples(name)
    if samples is None:
        pytest.skip("no samples (see test_every_differentiable_operator_has_samples)")
    for k, (f, args, kw) in enumerate(samples[:limit]):
        if not any(isinstance(a, P.Tensor) and a.requires_grad for a in args):
            continue

        def func(*a, _f=f, _kw=kw):
            return _f(*a, **_kw)
        out = func(*args)
        if not any(isinstance(o, P.Tensor) and o.requires_grad for o in (out if isinstance(out, tuple) else (out,))):
            continue      # a non-differentiable output (comparisons among the composites)
        try:
            assert check(func, tuple(args))
        except Exception as e:
            shapes = [tuple(a.shape) if isinstance(a, P.Tensor) else a for a in args]
            raise AssertionError(f"{name} sample {k} (args {shapes}, kwargs {kw}): {type(e).__name__}: {e}") from e


@pytest.mark.parametrize("name", [n for n in DIFFERENTIABLE + COMPOSITES if n not in NORMAL | KNOWN_BROKEN])
def test_gradcheck(name):
    _run_check(lambda f, a: gradcheck(f, a, eps=1e-6, atol=1e-6, rtol=1e-4), name)


@pytest.mark.parametrize("name", [n for n in DIFFERENTIABLE + COMPOSITES if n not in NO_GRADGRAD | KNOWN_BROKEN])
def test_gradgradcheck(name):
    # for pointwise ops the first samples (same shape, transposed) are enough to check the
    # backward's backward; hand-written samples each cover a different case
    _run_check(lambda f, a: gradgradcheck(f, a, eps=1e-6, atol=1e-5, rtol=1e-3), name,
               limit=None if name in SAMPLES else 2)


# operators with a forward-mode formula (`result:` in derivatives.yaml)
FORWARD = sorted(n for n, d in DERIVS.items() if d.jvp is not None)
# the ones the forward-mode promise covers: every pointwise operator, the matrix products
# and the LAPACK-backed linalg functions
FORWARD_REQUIRED = sorted({n for n, d in DERIVS.items() if d.op.kind == "pointwise"} | {
    "mm", "bmm", "matmul", "addmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "vdot", "outer", "addr",
    "linalg_inv", "linalg_det", "linalg_slogdet", "linalg_solve", "linalg_cholesky", "_linalg_svd",
    "_linalg_eigh", "linalg_solve_triangular", "linalg_inv_ex", "linalg_cholesky_ex", "linalg_pinv", "linalg_qr",
    "linalg_lstsq"})


def test_pointwise_and_linear_algebra_have_forward_formulas():
    missing = [n for n in FORWARD_REQUIRED if n not in FORWARD]
    assert not missing, f"give these a `result:` (forward-mode) formula in derivatives.yaml: {missing}"


@pytest.mark.parametrize("name", FORWARD)
def test_forward_ad(name):
    """The tangent forward AD gives every output matches finite differences along a random
    input direction, for each differentiable input of every sample."""
    _run_check(lambda f, a: gradcheck(f, a, eps=1e-6, atol=1e-6, rtol=1e-4, check_forward_ad=True,
                                      check_backward_ad=False), name)


def test_normal_gradients_are_zero():
    if "normal.Tensor_Tensor" not in DERIVS:
        pytest.skip("normal is not differentiable here")
    mean = T(3)
    std = T(3, low=0.5, high=1.0, signed=False)
    P.normal(mean, std).sum().backward()
    assert not mean.grad.numpy().any() and not std.grad.numpy().any()


# --- memory -----------------------------------------------------------------------------------

def _allocated_bytes():
    """Bytes held by live CPU tensors, from the C allocator's own counters."""
    from pytorchlite.generated._C import ffi, lib
    buf = ffi.new("int64_t[6]")
    lib.ptl_allocator_stats(buf)
    return int(buf[0])      # allocated_bytes comes first (see pytorchlite/memory.py)


def test_training_loop_memory_is_steady():
    """10,000 steps of a small regression: the graph of each step is freed when its last
    reference goes (no cyclic garbage), so allocated memory does not grow."""
    rng = np.random.default_rng(0)
    x = P.tensor(rng.standard_normal((8, 4)), dtype=P.float32)
    y = P.tensor(rng.standard_normal((8, 1)), dtype=P.float32)
    w = P.tensor(rng.standard_normal((4, 1)) * 0.1, dtype=P.float32, requires_grad=True)
    b = P.zeros(1, requires_grad=True)
    gc.collect()
    gc.disable()
    try:
        def step():
            pred = x.mm(w) + b
            err = pred + y * -1
            loss = (err * err).mean()
            loss.backward()
            with P.no_grad():
                w.add_(w.grad, alpha=-0.01)
                b.add_(b.grad, alpha=-0.01)
            w.grad = None
            b.grad = None
            return weakref.ref(loss.grad_fn), loss.item()

        for _ in range(100):
            step()
        start = _allocated_bytes()
        first_loss = None
        for i in range(10_000):
            ref, loss = step()
            if first_loss is None:
                first_loss = loss
            assert ref() is None       # the step's graph is already gone
            if i % 1000 == 0:
                assert _allocated_bytes() <= start + 4096
        assert _allocated_bytes() <= start + 4096
        assert loss < first_loss
    finally:
        gc.enable()


def test_graph_memory_released_immediately():
    x = P.ones(1 << 16, requires_grad=True)
    (x * 2).exp() * 3                      # warm-up: first calls may cache small things
    before = _allocated_bytes()
    y = (x * 2).exp() * 3
    during = _allocated_bytes()
    assert during > before
    ref = weakref.ref(y.grad_fn)
    del y
    assert ref() is None
    assert _allocated_bytes() == before
