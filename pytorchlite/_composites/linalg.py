"""The composite linear-algebra operators of ops.yaml: einsum, tensordot, kron, trace, the
matrix / vector norms, matrix_rank, multi_dot, matrix_power, vecdot, cond, matrix_exp,
slogdet / logdet and the svd / eigh front ends, each with its operator's signature. They
are written in other operators (permute, reshape, diagonal, expand, bmm, sum,
linalg_solve, ...), so autograd differentiates through them.

einsum works as PyTorch's does: repeated subscripts in one operand become a diagonal,
subscripts seen in one operand only and absent from the output are summed at once, and
the operands are then contracted left to right, each pair as one batched GEMM (`bmm`) over
the shared (batch), left-only, right-only and contracted subscripts.
"""

import math

from pytorchlite._ops import ops as _F


# --- einsum -------------------------------------------------------------------------------

def _parse_term(eq, start, term, what):
    """Labels of one term: letters, and '...' as the marker None."""
    labels, i = [], 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if term[i:i + 3] != "..." or None in labels:
                raise RuntimeError(f"einsum(): found '.' for {what} that is not part of any ellipsis")
            labels.append(None)
            i += 3
            continue
        if not (c.isascii() and c.isalpha()):
            raise RuntimeError(f"einsum(): invalid subscript given at index {start + i} in the equation string, "
                               "subscripts must be in [a-zA-Z]")
        labels.append(c)
        i += 1
    return labels


def einsum(equation, tensors, *, path=None):
    if len(tensors) == 0:
        raise RuntimeError("einsum(): must provide at least one operand")
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) > len(tensors):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(tensors):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    ops, pos = [], 0
    ell_n = 0
    for k, (term, t) in enumerate(zip(terms, tensors)):
        labels = _parse_term(eq, pos, term, f"operand {k}")
        pos += len(term) + 1
        nd = len(t.shape)
        if None in labels:
            n_ell = nd - (len(labels) - 1)
            if n_ell < 0:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(labels) - 1}) is more "
                                   f"than the number of dimensions ({nd}) for operand {k}")
            i = labels.index(None)
            # ellipsis dims are right-aligned across operands: label (".", distance from the right)
            labels = labels[:i] + [(".", n_ell - 1 - j) for j in range(n_ell)] + labels[i + 1:]
            ell_n = max(ell_n, n_ell)
        elif len(labels) != nd:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(labels)}) does not match "
                               f"the number of dimensions ({nd}) for operand {k} and no ellipsis was given")
        ops.append([t, labels])

    # sizes, with broadcasting of size-1 dims
    sizes = {}
    for k, (t, labels) in enumerate(ops):
        for lab, n in zip(labels, t.shape):
            old = sizes.get(lab)
            if old is None or old == 1:
                sizes[lab] = n
            elif n != 1 and n != old:
                if isinstance(lab, tuple):
                    raise RuntimeError(f"einsum(): dimension {ell_n - 1 - lab[1]} covered by ellipsis in operand "
                                       f"{k}has size {n} which does not broadcast with previously seen ellipsis "
                                       f"with size {old} for the respective dimension")
                if lab in labels[:labels.index(lab)] or labels.count(lab) > 1:
                    raise RuntimeError(f"einsum(): subscript {lab} is repeated for operand {k} but the sizes don't "
                                       f"match, {n} != {old}")
                raise RuntimeError(f"einsum(): subscript {lab} has size {n} for operand {k} which does not "
                                   f"broadcast with previously seen size {old}")

    ell_out = [(".", j) for j in range(ell_n - 1, -1, -1)]
    if arrow:
        out = []
        for lab in _parse_term(eq, len(lhs) + 2, rhs, "output"):
            if lab is None:
                out.extend(ell_out)
                continue
            if lab in out:
                raise RuntimeError(f"einsum(): output subscript {lab} appears more than once in the output")
            if lab not in sizes:
                raise RuntimeError(f"einsum(): output subscript {lab} does not appear in the equation for any "
                                   "input operand")
            out.append(lab)
    else:
        counts = {}
        for _, labels in ops:
            for lab in labels:
                if not isinstance(lab, tuple):
                    counts[lab] = counts.get(lab, 0) + 1
        out = ell_out + sorted((lab for lab, c in counts.items() if c == 1), key=lambda c: (c.islower(), c))

    # diagonals of repeated subscripts
    for op in ops:
        t, labels = op
        while len(set(labels)) != len(labels):
            lab = next(lb for i, lb in enumerate(labels) if lb in labels[i + 1:])
            p = labels.index(lab)
            q = labels.index(lab, p + 1)
            if t.shape[p] != t.shape[q]:
                raise RuntimeError(f"einsum(): subscript {lab} is repeated for operand {ops.index(op)} but the sizes "
                                   f"don't match, {t.shape[q]} != {t.shape[p]}")
            t = t.diagonal(0, p, q)
            labels = [lb for i, lb in enumerate(labels) if i not in (p, q)] + [lab]
        op[0], op[1] = t, labels

    def needed(rest):
        s = set(out)
        for _, labels in rest:
            s.update(labels)
        return s

    def sum_out(t, labels, keep):
        dims = [i for i, lab in enumerate(labels) if lab not in keep]
        if dims:
            t = t.sum(dims)
            labels = [lab for lab in labels if lab in keep]
        return t, labels

    t, labels = sum_out(ops[0][0], ops[0][1], needed(ops[1:]))
    for k in range(1, len(ops)):
        keep = needed(ops[k + 1:])
        b, lb = sum_out(ops[k][0], ops[k][1], keep | set(labels))
        t, labels = sum_out(t, labels, keep | set(lb))
        t, labels = _contract(t, labels, b, lb, keep, sizes)
    t, labels = sum_out(t, labels, set(out))
    perm = [labels.index(lab) for lab in out]
    if perm != list(range(len(perm))):
        t = t.permute(perm)
    return t


def _contract(a, la, b, lb, keep, sizes):
    """a and b contracted over their shared subscripts not in `keep`, as one bmm."""
    sb = set(lb)
    sa = set(la)
    batch = [lab for lab in la if lab in sb and lab in keep]
    contr = [lab for lab in la if lab in sb and lab not in keep]
    left = [lab for lab in la if lab not in sb]
    right = [lab for lab in lb if lab not in sa]

    def arrange(t, labels, order):
        perm = [labels.index(lab) for lab in order]
        if perm != list(range(len(perm))):
            t = t.permute(perm)
        target = [sizes[lab] if lab in batch or lab in contr else t.shape[i] for i, lab in enumerate(order)]
        if list(t.shape) != target:
            t = t.expand(target)
        return t

    a2 = arrange(a, la, batch + left + contr)
    b2 = arrange(b, lb, batch + contr + right)
    nb = math.prod(sizes[lab] for lab in batch)
    nl = math.prod(a2.shape[len(batch):len(batch) + len(left)])
    nc = math.prod(sizes[lab] for lab in contr)
    nr = math.prod(b2.shape[len(batch) + len(contr):])
    r = _F.bmm(a2.reshape(nb, nl, nc), b2.reshape(nb, nc, nr))
    shape = [sizes[lab] for lab in batch] + list(a2.shape[len(batch):len(batch) + len(left)]) + \
        list(b2.shape[len(batch) + len(contr):])
    return r.reshape(shape), batch + left + right


# --- tensordot, kron, trace ---------------------------------------------------------------

def tensordot(self, other, dims_self, dims_other):
    if len(dims_self) != len(dims_other):
        raise RuntimeError("both dimension lists should have same length")
    na, nb = len(self.shape), len(other.shape)
    da = [d % na if na else d for d in dims_self]
    db = [d % nb if nb else d for d in dims_other]
    for x, y in zip(da, db):
        if self.shape[x] != other.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {self.shape[x]} in dim {x} "
                               f"and second has size {other.shape[y]} in dim {y}")
    fa = [d for d in range(na) if d not in da]
    fb = [d for d in range(nb) if d not in db]
    ka = math.prod(self.shape[d] for d in da)
    a2 = self.permute(fa + da).reshape(math.prod(self.shape[d] for d in fa), ka)
    b2 = other.permute(db + fb).reshape(ka, math.prod(other.shape[d] for d in fb))
    r = _F.mm(a2, b2) if a2.dtype == b2.dtype else _F.mm(*_promote(a2, b2))
    return r.reshape([self.shape[d] for d in fa] + [other.shape[d] for d in fb])


def _promote(a, b):
    from pytorchlite._promotion import result_type_of
    dt = result_type_of(a, b)
    return a.to(dt), b.to(dt)


def kron(self, other):
    nd = max(len(self.shape), len(other.shape))
    sa = [1] * (nd - len(self.shape)) + list(self.shape)
    sb = [1] * (nd - len(other.shape)) + list(other.shape)
    a2 = self.reshape([x for n in sa for x in (n, 1)])
    b2 = other.reshape([x for n in sb for x in (1, n)])
    return (a2 * b2).reshape([x * y for x, y in zip(sa, sb)])


def trace(self):
    if self.dtype.name == "bool":
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    if len(self.shape) != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {len(self.shape)}")
    return self.diagonal().sum()


# --- norms --------------------------------------------------------------------------------

def _check_floating(op, t, dtype=None):
    if not t.dtype.is_floating_point:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {t.dtype._torch_name}")
    _check_norm_dtype(op, t, dtype)


def _check_norm_dtype(op, t, dtype):
    """PyTorch's check_linalg_norm_dtype: a floating dtype the input converts to without narrowing."""
    if dtype is not None:
        if not dtype.is_floating_point:
            raise RuntimeError(f"{op}: dtype should be floating point or complex, but got {dtype._torch_name}")
        from pytorchlite._dtype import promote_types
        if promote_types(t.dtype, dtype) is not dtype:
            raise RuntimeError(f"{op}: the dtype of the input ({t.dtype._torch_name}) should be convertible without "
                               f"narrowing to the specified dtype ({dtype._torch_name})")


def vector_norm(self, ord=2, dim=None, keepdim=False, *, dtype=None):
    # PyTorch's order: the input's dtype, then the empty-tensor checks, then `dtype`
    _check_floating("linalg.vector_norm", self)
    if isinstance(dim, int):
        dim = [dim]
    if dim is not None and len(dim) == 0:
        dim = None
    if self.numel() == 0 and (ord < 0 or ord == math.inf):
        if dim is None:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {_fmt_ord(ord)} norm on an empty tensor because "
                               "the operation does not have an identity")
        nd = len(self.shape)
        for d in dim:
            if not -max(nd, 1) <= d < max(nd, 1):
                raise IndexError(f"Dimension out of range (expected to be in range of [{-max(nd, 1)}, "
                                 f"{max(nd, 1) - 1}], but got {d})")
            if nd and self.shape[d % nd] == 0:
                # (PyTorch's message, without the space before "because")
                raise RuntimeError(f"linalg.vector_norm cannot compute the {_fmt_ord(ord)} norm on the dimension "
                                   f"{d}because this dimension is empty and the operation does not have an identity")
    _check_norm_dtype("linalg.vector_norm", self, dtype)
    if dtype is not None and dtype is not self.dtype:
        self = self.to(dtype)
    if dim is None and not keepdim:
        self = self.reshape(-1)
        dim = [0]
    elif dim is None:
        dim = list(range(len(self.shape)))
    if ord == 0:
        return (self != 0).to(self.dtype).sum(dim, keepdim)
    return _F.norm(self, ord, dim, keepdim)


def matrix_norm_str_ord(self, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    A, d0, d1 = _matrix_norm_input(self, dim, dtype)
    if ord == "fro":
        return vector_norm(A, 2, [d0, d1], keepdim)
    if ord != "nuc":
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    return _svd_norm(A, d0, d1, keepdim, "sum")


def matrix_norm(self, ord, dim=(-2, -1), keepdim=False, *, dtype=None):
    A, d0, d1 = _matrix_norm_input(self, dim, dtype)
    if ord in (2, -2):
        return _svd_norm(A, d0, d1, keepdim, "amax" if ord == 2 else "amin")
    if ord in (1, -1, math.inf, -math.inf):
        # 1: max column sum (sum over rows d0, then max over d1); inf: max row sum
        s, m = (d0, d1) if abs(ord) == 1 else (d1, d0)
        r = A.abs().sum(s, keepdim=True)
        r = r.amax(m, keepdim=True) if ord > 0 else r.amin(m, keepdim=True)
        return r if keepdim else r.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    raise RuntimeError(f"linalg.matrix_norm: Order {_fmt_ord(ord)} not supported.")


def _matrix_norm_input(A, dim, dtype):
    """PyTorch's checks of matrix_norm; the input in `dtype` and the two dims, wrapped."""
    op = "linalg.matrix_norm"
    if len(A.shape) < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    _check_floating(op, A, dtype)
    dim = list(dim)
    if len(dim) != 2:
        raise RuntimeError(f"{op}: dim must be a 2-tuple. Got {' '.join(str(d) for d in dim)}")
    nd = len(A.shape)
    for d in dim:
        if not -nd <= d < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})")
    d0, d1 = dim[0] % nd, dim[1] % nd
    if d0 == d1:
        raise RuntimeError(f"{op}: dims must be different. Got ({dim[0]}, {dim[1]})")
    if dtype is not None and dtype is not A.dtype:
        A = A.to(dtype)
    return A, d0, d1


def _fmt_ord(o):
    return str(int(o)) if isinstance(o, float) and o.is_integer() else str(o)


def _svd_norm(A, d0, d1, keepdim, how):
    At = A.movedim((d0, d1), (-2, -1))
    s = _F.linalg_svdvals(At)
    r = getattr(s, how)(-1)
    if keepdim:
        r = r.unsqueeze(-1).unsqueeze(-1).movedim((-2, -1), (d0, d1))
    return r


def norm_str(self, p="fro", dim=None, keepdim=False, *, dtype=None):
    # torch.norm with a string order, as torch/functional.py's: 'fro' is the 2-norm of the
    # elements over dim (all when None), anything else a matrix norm over two dims
    if p == "fro" and (dim is None or len(dim) <= 2):
        return vector_norm(self, 2, dim, keepdim, dtype=dtype)
    return matrix_norm_str_ord(self, p, list(range(self.dim())) if dim is None else dim, keepdim, dtype=dtype)


def norm_ord_str(self, ord, dim=None, keepdim=False, *, dtype=None):
    return matrix_norm_str_ord(self, ord, _norm_dims(self, dim, True), keepdim, dtype=dtype)


def norm(self, ord=None, dim=None, keepdim=False, *, dtype=None):
    if ord is None:
        dim = _norm_dims(self, dim, False)
        if dim is None:
            _check_floating("linalg.vector_norm", self, dtype)
            x = self if dtype is None else self.to(dtype)
            r = vector_norm(x.reshape(-1), 2, [0], False)
            if keepdim:
                r = r.reshape([1] * len(self.shape))
            return r
        if len(dim) == 2:
            return matrix_norm_str_ord(self, "fro", dim, keepdim, dtype=dtype)
        return vector_norm(self, 2, dim, keepdim, dtype=dtype)
    dim = _norm_dims(self, dim, True)
    if len(dim) == 2:
        return matrix_norm(self, ord, dim, keepdim, dtype=dtype)
    return vector_norm(self, ord, dim, keepdim, dtype=dtype)


def _norm_dims(A, dim, ord_given):
    """linalg.norm's dims: 1 or 2 of them; all of a 1-D or 2-D input when an order is given."""
    if dim is not None:
        dim = [dim] if isinstance(dim, int) else list(dim)
        if len(dim) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {dim}")
    elif ord_given:
        if len(A.shape) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                               f"Got {len(A.shape)}D.")
        dim = list(range(len(A.shape)))
    return dim


# --- cross products and distances ------------------------------------------------------------

def linalg_cross(self, other, *, dim=-1):
    if self.dtype != other.dtype:
        raise RuntimeError(f"expected scalar type {self.dtype._torch_name} but found {other.dtype._torch_name}")
    if len(self.shape) != len(other.shape):
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    nd = len(self.shape)
    if not -nd <= dim < nd or nd == 0:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(nd, 1)}, {max(nd, 1) - 1}], "
                         f"but got {dim})")
    if self.shape[dim] != 3 or other.shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {self.shape[dim]} and "
                           f"{other.shape[dim]}")
    # c_i = a_{i+1} b_{i+2} - a_{i+2} b_{i+1} (indices mod 3), all three at once
    i1, i2 = _index([1, 2, 0], self), _index([2, 0, 1], self)
    return self.index_select(dim, i1) * other.index_select(dim, i2) - self.index_select(dim, i2) * other.index_select(dim, i1)


def _index(vals, like):
    import pytorchlite
    return pytorchlite.tensor(vals, dtype=pytorchlite.int64, device=like.device)


def cross(self, other, dim=None):
    if dim is None:
        import warnings
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=3)
        shape = _broadcast_shape(self.shape, other.shape)
        dim = next((i for i, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return linalg_cross(self, other, dim=dim)


def _broadcast_shape(x, y):
    n = max(len(x), len(y))
    x, y = (1,) * (n - len(x)) + tuple(x), (1,) * (n - len(y)) + tuple(y)
    return [b if a == 1 else a for a, b in zip(x, y)]


def dist(self, other, p=2):
    d = self - other
    if not d.dtype.is_floating_point:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{d.dtype._torch_name} instead.")
    return vector_norm(d, p)


def cdist(x1, x2, p=2, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    if len(x1.shape) < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {len(x1.shape)}D")
    if len(x2.shape) < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {len(x2.shape)}D")
    if not x1.dtype.is_floating_point:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {x1.dtype._torch_name}")
    if not x2.dtype.is_floating_point:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X2 got: {x2.dtype._torch_name}")
    if x1.dtype != x2.dtype:
        raise RuntimeError(f"expected scalar type {x1.dtype._torch_name} but found {x2.dtype._torch_name}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                            "donot_use_mm_for_euclid_dist"):
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    # every pair's difference, then its p-norm (exact also at zero distance, unlike the
    # |x|^2 + |y|^2 - 2xy expansion, and differentiable through the norm's subgradient)
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return vector_norm(diff, p, [-1])


# --- matrix_rank, multi_dot, matrix_power, vecdot, cond, matrix_exp -------------------------

def _check_square(op, A, what="A"):
    """PyTorch's squareCheckInputs."""
    if len(A.shape) < 2:
        raise RuntimeError(f"{op}: The input tensor {what} must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: {what} must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


def matrix_rank(self, *, atol=None, rtol=None, hermitian=False):
    from pytorchlite._kernels.lapack import atol_rtol
    if len(self.shape) < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    if self.dtype.name not in ("float32", "float64"):
        raise RuntimeError("This function doesn't handle types other than float and double")
    atol, rtol = atol_rtol(self, atol, rtol)
    if self.numel() == 0:
        return _F.zeros(self.shape[:-2], dtype=_int64(), device=self.device)
    if hermitian:
        S = _F.linalg_eigvalsh(self).abs()
        largest = S.amax(-1, keepdim=True)
    else:
        S = _F.linalg_svdvals(self)
        largest = S.narrow(-1, 0, 1)            # descending order
    tol = _F.maximum(atol.unsqueeze(-1), rtol.unsqueeze(-1) * largest)
    return (S > tol).sum(-1)


def _int64():
    import pytorchlite
    return pytorchlite.int64


# caffe2's TypeMeta names, which PyTorch's multi_dot prints
_TYPEMETA = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
             "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
             "uint8": "unsigned char", "bool": "bool"}


def multi_dot(tensors):
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    out_shape = []
    first, last = tensors[0], tensors[-1]
    if first.dim() == 1:
        first = first.unsqueeze(0)              # a row vector
    elif first.dim() == 2:
        out_shape.append(first.shape[0])
    else:
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first.dim()}D")
    if last.dim() == 1:
        last = last.unsqueeze(-1)               # a column vector
    elif last.dim() == 2:
        out_shape.append(last.shape[1])
    else:
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last.dim()}D")
    for i in range(1, n - 1):
        if tensors[i].dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {tensors[i].dim()}D")
    mats = [first] + list(tensors[1:-1]) + [last]
    dt = mats[0].dtype
    for i in range(1, n):
        if mats[i].dtype != dt:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{_TYPEMETA.get(dt.name, dt.name)} and tensor {i} "
                               f"{_TYPEMETA.get(mats[i].dtype.name, mats[i].dtype.name)}")
        if mats[i].device != mats[0].device:
            raise RuntimeError(f"multi_dot(): all tensors must be on the same device but tensor 0 is on "
                               f"{mats[0].device} and tensor {i} on {mats[i].device}")
        if mats[i - 1].shape[-1] != mats[i].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i - 1} and {i} with shapes {list(tensors[i - 1].shape)} and "
                               f"{list(tensors[i].shape)} cannot be multiplied")
    if n == 2:
        r = _F.mm(mats[0], mats[1])
    elif n == 3:
        # (a x b)(b x c)(c x d): (AB)C costs a*c*(b + d), A(BC) costs b*d*(a + c)
        a, b, c, d = mats[0].shape[0], mats[1].shape[0], mats[2].shape[0], mats[2].shape[1]
        if a * c * (b + d) > b * d * (a + c):
            r = _F.mm(mats[0], _F.mm(mats[1], mats[2]))
        else:
            r = _F.mm(_F.mm(mats[0], mats[1]), mats[2])
    else:
        split = _chain_order([m.shape[0] for m in mats] + [mats[-1].shape[1]])
        r = _chain_product(mats, split, 0, n - 1)
    return r.reshape(out_shape)


def _chain_order(p):
    """The matrix-chain order (CLRS 15.2) for matrices i of shape p[i] x p[i+1]: split[i][j]
    is where the product of i..j is best cut (the first best cut, as PyTorch takes it)."""
    n = len(p) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or q < cost[i][j]:
                    cost[i][j] = q
                    split[i][j] = k
    return split


def _chain_product(mats, split, i, j):
    if i == j:
        return mats[i]
    k = split[i][j]
    return _F.mm(_chain_product(mats, split, i, k), _chain_product(mats, split, k + 1, j))


def matrix_power(self, n):
    _check_square("linalg.matrix_power", self)
    if n == 0:
        # the identity, through a copy of A so that the result stays in the graph (gradient 0)
        eye = _F.eye(self.shape[-1], dtype=self.dtype, device=self.device)
        return self.clone(memory_format=_contiguous()).copy_(eye)
    if n == 1:
        return self.clone(memory_format=_contiguous())
    if n == -1:
        return _F.linalg_inv(self)
    a = _F.linalg_inv(self) if n < 0 else self
    n = abs(n)
    if n == 2:
        return _F.matmul(a, a)
    if n == 3:
        return _F.matmul(_F.matmul(a, a), a)
    # binary powering, from the least significant bit: z runs through a, a^2, a^4, ...
    z = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        z = a if z is None else _F.matmul(z, z)
        if bit:
            result = z if result is None else _F.matmul(result, z)
    return result


def _contiguous():
    import pytorchlite
    return pytorchlite.contiguous_format


def vecdot(x, y, *, dim=-1):
    if x.dtype != y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{x.dtype._torch_name} and y of type {y.dtype._torch_name} instead")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. Got "
                           f"{x.dtype._torch_name}")
    return (x * y).sum(dim)


def cond_p_str(self, p):
    _check_square(f"linalg.cond(ord={p})", self)
    if p not in ("fro", "nuc"):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if self.numel() == 0:
        return _F.zeros(self.shape[:-2], dtype=self.dtype, device=self.device)
    if p == "nuc":
        # PyTorch's choice: the nuclear norm of the inverse directly (inv raises if singular)
        return matrix_norm_str_ord(self, "nuc") * matrix_norm_str_ord(_F.linalg_inv(self), "nuc")
    return _cond_by_inverse(self, lambda X: matrix_norm_str_ord(X, p))


def cond(self, p=None):
    if len(self.shape) < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    ord = 2 if p is None else p
    if abs(ord) not in (1, 2, math.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {_fmt_ord(float(ord))}")
    # NumPy leaves the condition number of 0 x 0 matrices undefined; PyTorch gives 0
    if self.numel() == 0:
        return _F.zeros(self.shape[:-2], dtype=self.dtype, device=self.device)
    if abs(ord) == 2:
        s = _F.linalg_svdvals(self)
        largest, smallest = s.narrow(-1, 0, 1), s.narrow(-1, s.shape[-1] - 1, 1)
        return (smallest / largest if ord == -2 else largest / smallest).squeeze(-1)
    name = f"{ord:f}" if isinstance(ord, float) else str(int(ord))
    _check_square(f"linalg.cond(ord={name})", self)
    return _cond_by_inverse(self, lambda X: matrix_norm(X, ord))


def _cond_by_inverse(A, norm_of):
    """norm(A) * norm(A^-1); a singular matrix's inverse counts as all inf, so its
    condition number is inf (0 * inf, from a zero norm, too)."""
    inverse, info = _F.linalg_inv_ex(A)
    inverse = inverse.masked_fill((info > 0).unsqueeze(-1).unsqueeze(-1), math.inf)
    r = norm_of(A) * norm_of(inverse)
    return r.nan_to_num(math.inf, math.inf, -math.inf)


# Higham (2005), "The scaling and squaring method for the matrix exponential revisited":
# the [13/13] Pade approximant is accurate to double precision for 1-norms up to THETA_13.
_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800., 129060195264000.,
           10559470521600., 670442572800., 33522128640., 1323241920., 40840800., 960960., 16380., 182., 1.)
_THETA_13 = 5.371920351148152


def matrix_exp(self):
    _check_square("linalg.matrix_exp", self)
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"linalg.matrix_exp: Expected a floating point or complex tensor as input. Got "
                           f"{self.dtype._torch_name}")
    if self.dtype.name not in ("float32", "float64"):
        raise RuntimeError(f"linalg.matrix_exp: Low precision dtypes not supported. Got {self.dtype._torch_name}")
    n = self.shape[-1]
    if self.numel() == 0:
        return self.clone(memory_format=_contiguous())
    if n == 1:
        return self.exp()
    # each matrix is scaled by its own 2^-s (s from its 1-norm), then squared s times
    norms = self.detach().abs().sum(-2).amax(-1).reshape(-1).tolist()
    steps = [max(0, math.ceil(math.log2(v / _THETA_13))) if math.isfinite(v) and v > 0 else 0 for v in norms]
    batch = tuple(self.shape[:-2])
    s_max = max(steps)
    X = self
    if s_max:
        scale = _tensor_like([2.0 ** -s for s in steps], self).reshape(batch + (1, 1))
        X = self * scale
    b = _PADE13
    eye = _F.eye(n, dtype=self.dtype, device=self.device)
    X2 = _F.matmul(X, X)
    X4 = _F.matmul(X2, X2)
    X6 = _F.matmul(X4, X2)
    U = _F.matmul(X, _F.matmul(X6, b[13] * X6 + b[11] * X4 + b[9] * X2) + b[7] * X6 + b[5] * X4 + b[3] * X2
                  + b[1] * eye)
    V = _F.matmul(X6, b[12] * X6 + b[10] * X4 + b[8] * X2) + b[6] * X6 + b[4] * X4 + b[2] * X2 + b[0] * eye
    R = _F.linalg_solve(V - U, V + U)
    if s_max and all(s == s_max for s in steps):
        for _ in range(s_max):
            R = _F.matmul(R, R)
    elif s_max:
        s_t = _tensor_like(steps, self).reshape(batch + (1, 1))
        for i in range(s_max):
            R = _F.where(s_t > i, _F.matmul(R, R), R)
    return R


def _tensor_like(vals, like):
    import pytorchlite
    return pytorchlite.tensor(vals, dtype=like.dtype, device=like.device)


# --- determinants, svd and eigh --------------------------------------------------------------

def slogdet(self):
    from pytorchlite import return_types
    return return_types.slogdet(*_F.linalg_slogdet(self))


def logdet(self):
    sign, logabsdet = _F.linalg_slogdet(self)
    return _F.where(sign < 0, float("nan"), logabsdet)


def svd(A, full_matrices=True, *, driver=None):
    from pytorchlite import return_types
    return return_types.linalg_svd(*_F._linalg_svd(A, full_matrices, True, driver=driver))


def svdvals(A, *, driver=None):
    # the singular vectors are needed for the gradient, as in PyTorch
    from pytorchlite.autograd import grad_mode
    return _F._linalg_svd(A, False, A.requires_grad and grad_mode.is_grad_enabled(), driver=driver)[1]


def eigh(self, UPLO="L"):
    from pytorchlite import return_types
    return return_types.linalg_eigh(*_F._linalg_eigh(self, UPLO, True))


def eigvalsh(self, UPLO="L"):
    from pytorchlite.autograd import grad_mode
    return _F._linalg_eigh(self, UPLO, self.requires_grad and grad_mode.is_grad_enabled())[0]
