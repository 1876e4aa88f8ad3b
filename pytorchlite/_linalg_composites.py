"""Bodies of the composite linear-algebra operators of ops.yaml: einsum, tensordot, kron,
trace and the matrix / vector norms. They are written in other operators (permute,
reshape, diagonal, expand, bmm, sum, ...), so autograd differentiates through them.

einsum works as PyTorch's does: repeated subscripts in one operand become a diagonal,
subscripts seen in one operand only and absent from the output are summed at once, and
the operands are then contracted left to right, each pair as one batched GEMM (`bmm`) over
the shared (batch), left-only, right-only and contracted subscripts.
"""

import math

import pytorchlite.generated.functions as _F



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


def einsum(equation, operands):
    if len(operands) == 0:
        raise RuntimeError("einsum(): must provide at least one operand")
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) > len(operands):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    ops, pos = [], 0
    ell_n = 0
    for k, (term, t) in enumerate(zip(terms, operands)):
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

def tensordot(a, b, dims_a, dims_b):
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    na, nb = len(a.shape), len(b.shape)
    da = [d % na if na else d for d in dims_a]
    db = [d % nb if nb else d for d in dims_b]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[x]} in dim {x} "
                               f"and second has size {b.shape[y]} in dim {y}")
    fa = [d for d in range(na) if d not in da]
    fb = [d for d in range(nb) if d not in db]
    ka = math.prod(a.shape[d] for d in da)
    a2 = a.permute(fa + da).reshape(math.prod(a.shape[d] for d in fa), ka)
    b2 = b.permute(db + fb).reshape(ka, math.prod(b.shape[d] for d in fb))
    r = _F.mm(a2, b2) if a2.dtype == b2.dtype else _F.mm(*_promote(a2, b2))
    return r.reshape([a.shape[d] for d in fa] + [b.shape[d] for d in fb])


def _promote(a, b):
    from pytorchlite._promotion import result_type_of
    dt = result_type_of(a, b)
    return a.to(dt), b.to(dt)


def kron(a, b):
    nd = max(len(a.shape), len(b.shape))
    sa = [1] * (nd - len(a.shape)) + list(a.shape)
    sb = [1] * (nd - len(b.shape)) + list(b.shape)
    a2 = a.reshape([x for n in sa for x in (n, 1)])
    b2 = b.reshape([x for n in sb for x in (1, n)])
    return (a2 * b2).reshape([x * y for x, y in zip(sa, sb)])


def trace(t):
    if t.dtype.name == "bool":
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    if len(t.shape) != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {len(t.shape)}")
    return t.diagonal().sum()


# --- norms --------------------------------------------------------------------------------

def _check_floating(op, t, dtype=None):
    if not t.dtype.is_floating_point:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {t.dtype._torch_name}")
    if dtype is not None:
        if not dtype.is_floating_point:
            raise RuntimeError(f"{op}: dtype should be floating point or complex, but got {dtype._torch_name}")
        from pytorchlite._dtype import promote_types
        if promote_types(t.dtype, dtype) is not dtype:
            raise RuntimeError(f"{op}: the dtype of the input ({t.dtype._torch_name}) should be convertible without "
                               f"narrowing to the specified dtype ({dtype._torch_name})")


def vector_norm(x, ord=2, dim=None, keepdim=False, dtype=None):
    _check_floating("linalg.vector_norm", x, dtype)
    if dtype is not None and dtype is not x.dtype:
        x = x.to(dtype)
    if isinstance(dim, int):
        dim = [dim]
    if dim is not None and len(dim) == 0:
        dim = None
    if x.numel() == 0 and (ord < 0 or ord == math.inf):
        nd = len(x.shape)
        if dim is None or any(x.shape[d % nd] == 0 for d in dim):
            raise RuntimeError(f"linalg.vector_norm cannot compute the {_fmt_ord(ord)} norm on an empty tensor because "
                               "the operation does not have an identity")
    if dim is None and not keepdim:
        x = x.reshape(-1)
        dim = [0]
    elif dim is None:
        dim = list(range(len(x.shape)))
    if ord == 0:
        return (x != 0).to(x.dtype).sum(dim, keepdim)
    return _F.norm(x, ord, dim, keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):
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
    if isinstance(ord, str):
        if ord == "fro":
            return vector_norm(A, 2, [d0, d1], keepdim)
        if ord != "nuc":
            raise RuntimeError(f"{op}: Order {ord} not supported.")
        return _svd_norm(A, d0, d1, keepdim, "sum")
    if ord in (2, -2):
        return _svd_norm(A, d0, d1, keepdim, "amax" if ord == 2 else "amin")
    if ord in (1, -1, math.inf, -math.inf):
        # 1: max column sum (sum over rows d0, then max over d1); inf: max row sum
        s, m = (d0, d1) if abs(ord) == 1 else (d1, d0)
        r = A.abs().sum(s, keepdim=True)
        r = r.amax(m, keepdim=True) if ord > 0 else r.amin(m, keepdim=True)
        return r if keepdim else r.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    raise RuntimeError(f"{op}: Order {_fmt_ord(ord)} not supported.")


def _fmt_ord(o):
    return str(int(o)) if isinstance(o, float) and o.is_integer() else str(o)


def _svd_norm(A, d0, d1, keepdim, how):
    At = A.movedim((d0, d1), (-2, -1))
    s = _F.linalg_svdvals(At)
    r = getattr(s, how)(-1)
    if keepdim:
        r = r.unsqueeze(-1).unsqueeze(-1).movedim((-2, -1), (d0, d1))
    return r


def norm(A, ord=None, dim=None, keepdim=False, dtype=None):
    if dim is not None:
        dim = [dim] if isinstance(dim, int) else list(dim)
        if len(dim) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {dim}")
    if ord is None:
        if dim is None:
            _check_floating("linalg.vector_norm", A, dtype)
            x = A if dtype is None else A.to(dtype)
            r = vector_norm(x.reshape(-1), 2, [0], False)
            if keepdim:
                r = r.reshape([1] * len(A.shape))
            return r
        if len(dim) == 2:
            return matrix_norm(A, "fro", dim, keepdim, dtype)
        return vector_norm(A, 2, dim, keepdim, dtype)
    if dim is None:
        if len(A.shape) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                               f"Got {len(A.shape)}D.")
        dim = list(range(len(A.shape)))
    if isinstance(ord, str) or len(dim) == 2:
        return matrix_norm(A, ord, dim, keepdim, dtype)
    return vector_norm(A, ord, dim, keepdim, dtype)


# --- cross products and distances ------------------------------------------------------------

def linalg_cross(a, b, dim=-1):
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {a.dtype._torch_name} but found {b.dtype._torch_name}")
    if len(a.shape) != len(b.shape):
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    nd = len(a.shape)
    if not -nd <= dim < nd or nd == 0:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(nd, 1)}, {max(nd, 1) - 1}], "
                         f"but got {dim})")
    if a.shape[dim] != 3 or b.shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {a.shape[dim]} and "
                           f"{b.shape[dim]}")
    # c_i = a_{i+1} b_{i+2} - a_{i+2} b_{i+1} (indices mod 3), all three at once
    i1, i2 = _index([1, 2, 0], a), _index([2, 0, 1], a)
    return a.index_select(dim, i1) * b.index_select(dim, i2) - a.index_select(dim, i2) * b.index_select(dim, i1)


def _index(vals, like):
    import pytorchlite
    return pytorchlite.tensor(vals, dtype=pytorchlite.int64, device=like.device)


def cross(a, b, dim=None):
    if dim is None:
        import warnings
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=3)
        shape = _broadcast_shape(a.shape, b.shape)
        dim = next((i for i, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return linalg_cross(a, b, dim)


def _broadcast_shape(x, y):
    n = max(len(x), len(y))
    x, y = (1,) * (n - len(x)) + tuple(x), (1,) * (n - len(y)) + tuple(y)
    return [b if a == 1 else a for a, b in zip(x, y)]


def dist(a, b, p=2):
    d = a - b
    if not d.dtype.is_floating_point:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{d.dtype._torch_name} instead.")
    return vector_norm(d, p)


def cdist(x1, x2, p=2.0, compute_mode=None):
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


__all__ = ["einsum", "tensordot", "kron", "trace", "vector_norm", "matrix_norm", "norm", "linalg_cross", "cross",
           "dist", "cdist"]

