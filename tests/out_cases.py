"""Calls of the operators of ops.yaml that have an `out=` or in-place form, built from their
schemas, for the out=/overlap tests (tests/test_out_overlap.py).

`sample_calls(op)` yields candidate argument lists for one operator as *recipes*: each
argument is a plain value or a `Data` (a tensor by shape, dtype and kind of values) that
`build(recipe, lib)` turns into a tensor of pytorchlite or of torch with the very same
values. The test keeps the first recipe PyTorch accepts, so a new operator is covered as
soon as one of the generic shapes fits its schema; one that needs special arguments gets
them from the argument names here (`index`, `mask`, ...), not from a table of operators.
"""

from __future__ import annotations

import os

import numpy as np

import pytorchlite
from codegen.model import load_ops

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPS = load_ops(os.path.join(ROOT, "ops.yaml"))

# schema arguments that are not data: the default is always used
SKIP_TYPES = {"Generator", "Layout", "Device", "MemoryFormat", "Dimname", "Stream", "ScalarType"}
INDEX_NAMES = {"index", "indices"}
SORTED_NAMES = {"sorted_sequence", "boundaries"}


class Data:
    """A tensor recipe: `shape`, `dtype` (a name) and `kind` of values ("float": small
    distinct values on a well-conditioned diagonal, "index": valid indices, "mask",
    "prob": probabilities, "sorted")."""

    def __init__(self, shape, dtype="float32", kind="float", bound=1):
        self.shape, self.dtype, self.kind, self.bound = tuple(shape), dtype, kind, bound

    def values(self):
        n = int(np.prod(self.shape)) if self.shape else 1
        if self.kind == "index":
            v = np.arange(n) % max(self.bound, 1)
        elif self.kind == "mask":
            v = np.arange(n) % 2 == 0
        elif self.kind == "sorted":
            v = np.arange(n, dtype=np.float64)
        else:
            v = (np.arange(n, dtype=np.float64) % 7 + 1) / 8      # exact in every float dtype
        v = v.reshape(self.shape)
        if self.kind == "float" and len(self.shape) >= 2 and self.shape[-1] == self.shape[-2]:
            v = v + 4 * np.eye(self.shape[-1])     # invertible, and positive definite from its lower half
        return v.astype(self.dtype)

    def __repr__(self):
        return f"Data({list(self.shape)}, {self.dtype}, {self.kind})"


def lib_dtype(lib, name):
    return getattr(lib, name)


def tensor(lib, values, dtype):
    """A tensor of `lib` with the NumPy `values`."""
    return lib.tensor(values.tolist(), dtype=lib_dtype(lib, dtype)).reshape(values.shape)


def build(v, lib):
    if isinstance(v, Data):
        return tensor(lib, v.values(), v.dtype)
    if isinstance(v, list):
        return [build(x, lib) for x in v]
    return v


def public(op, lib):
    """The function `op` is called as in `lib` (pytorchlite or torch), or None."""
    name = op.name
    module = lib
    if op.python_module == "linalg":
        module, name = lib.linalg, name[len("linalg_"):]
    elif op.python_module == "nn.functional":
        module = lib.nn.functional
    elif op.python_module == "special":
        module = lib.special
    return getattr(module, name, None)


STRS = {"reduce": "sum", "ord": "fro", "p": "fro"}


def _arg_value(a, shape, first, dtype, index_1d):
    t = a.type
    if t.base == "Tensor":
        bound = shape[0] if shape else 1
        if t.is_list:
            return [Data(shape, dtype), Data(shape, dtype)]
        if a.name in ("vec", "vec1", "vec2"):
            return Data(shape[-1:], dtype)
        if a.name == "value":
            return Data((), dtype)
        if a.name == "mat":
            return Data(shape[-1:] * 2, dtype)
        if a.name in ("batch1", "batch2"):
            return Data((2,) + shape[-2:], dtype)
        if a.name in INDEX_NAMES:
            return Data(shape if first is not None and not index_1d else (bound,), "int64", "index", bound)
        if a.name in ("mask", "condition"):
            return Data(shape, "bool", "mask")
        if a.name in SORTED_NAMES:
            return Data((shape[-1] if shape else 4,), dtype, "sorted")
        return Data(shape, dtype)
    if t.base in ("int", "SymInt"):
        if t.is_list:
            return list(shape) if a.name == "size" else [0] * (t.size or 1)
        return 0 if a.name in ("dim", "dim0", "dim1", "offset", "diagonal") else 2
    if t.base in ("float", "Scalar"):
        return 2
    if t.base == "bool":
        return False
    if t.base == "str" and a.name in STRS:
        return STRS[a.name]
    raise LookupError(t.base)


SHAPES = ((4, 4), (4,), (2, 4, 4))


def sample_calls(op):
    """Candidate (args, kwargs) recipes for `op`'s public function, without `out=`: float
    then integer tensors of a few shapes, with the required arguments only, then with the
    first optional one too (clamp needs `min` or `max`)."""
    for optional in (0, 1):
        for dtype in ("float32", "int64"):
            for index_1d in (False, True):
                for shape in SHAPES:
                    yield from _calls(op, shape, dtype, optional, index_1d)


def _calls(op, shape, dtype, optional, index_1d):
    outs = op.schema.out_arguments
    if True:
        args, kwargs, first = [], {}, None
        ok = True
        for a in op.schema.arguments:
            if a in outs or a.type.base in SKIP_TYPES:
                continue
            if a.default is not None:
                if not optional or a.default != "None":
                    continue
                optional -= 1
                a_kw = True
            else:
                a_kw = a in op.schema.kwonly
            try:
                v = _arg_value(a, shape, first, dtype, index_1d)
            except LookupError:
                ok = False
                break
            if isinstance(v, Data) and first is None:
                first = v
            if a_kw:
                kwargs[a.python_name] = v
            else:
                args.append(v)
        if ok:
            yield args, kwargs


def out_ops():
    """The operators with an out= form and a public function."""
    return [op for op in OPS if op.has_out and op.has_function]


def inplace_ops():
    return [op for op in OPS if op.has_inplace]


def tensors_of(args, kwargs):
    """The Data recipes among the arguments, in order."""
    found = []
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, Data):
            found.append(v)
        elif isinstance(v, list):
            found.extend(x for x in v if isinstance(x, Data))
    return found


def is_pytorchlite(lib):
    return lib is pytorchlite
