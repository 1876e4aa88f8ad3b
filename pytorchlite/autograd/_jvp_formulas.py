"""Forward-mode (jvp) helpers for derivatives.yaml `result:` formulas that take more than
one line: given the primal inputs and result and the input tangents, the result's tangent.
They are written in pytorchlite operators, like the backward helpers."""

__all__ = ["linalg_solve_jvp", "cholesky_jvp", "trace_of_solve", "pad_jvp", "eigh_jvp", "svd_jvp",
           "reduction_jvp", "minmax_jvp", "qr_jvp", "lstsq_jvp",
           "logcumsumexp_jvp", "scatter_jvp", "layer_norm_jvp", "cumprod_jvp"]

from pytorchlite._ops import ops as F  # noqa: E402


def pad_jvp(self_t, pad, mode):
    """pad is linear in its input, but a constant fill is not: the tangent pads with zeros."""
    return F.pad(self_t, pad, mode, None)


def trace_of_solve(A, A_t):
    """trace(A^-1 A_t) over the batch: the derivative of log|det A| along A_t."""
    return F.linalg_solve(A, A_t).diagonal(0, -2, -1).sum(-1)


def linalg_solve_jvp(A, result, A_t, B_t, left):
    """X = A^-1 B (left) or B A^-1: X_t = A^-1 (B_t - A_t X), or (B_t - X A_t) A^-1. A B that
    solve() treats as a (batch of) vector(s) gives a result one dimension short of A."""
    vector = left and result.ndim == A.ndim - 1
    X = result.unsqueeze(-1) if vector else result
    Bt = B_t.unsqueeze(-1) if vector else B_t
    if left:
        out = F.linalg_solve(A, Bt - A_t.matmul(X))
    else:
        out = F.linalg_solve(A, Bt - X.matmul(A_t), left=False)
    return out.squeeze(-1) if vector else out


def cholesky_jvp(A_t, result, upper):
    """A = L L^T: L_t = L phi(L^-1 A_t L^-T), phi keeping the lower triangle with the
    diagonal halved (A_t symmetric, as a tangent of a symmetric matrix is)."""
    L = result.mT if upper else result
    Y = F.linalg_solve(L, A_t)                    # L^-1 A_t
    X = F.linalg_solve(L, Y.mT).mT                # L^-1 A_t L^-T
    phi = X.tril() - 0.5 * F.diag_embed(X.diagonal(0, -2, -1))
    L_t = L.matmul(phi)
    return L_t.mT if upper else L_t


def _reciprocal_gaps(values):
    """1 / (v_j - v_i) for i != j and 0 on the diagonal, batched (v: (..., k))."""
    import math
    from pytorchlite import _dtype as D
    gaps = values.unsqueeze(-2) - values.unsqueeze(-1)
    k = values.shape[-1]
    eye = F.eye(k, dtype=D.bool, device=values.device)
    return 1 / gaps.masked_fill(eye, math.inf)


def eigh_jvp(A, A_t, UPLO, compute_v, eigenvalues, eigenvectors):
    """A = V diag(L) V^T, read from one triangle of A: with the tangent of the matrix eigh
    actually sees (that triangle mirrored) and D = V^T A_t V, L_t = diag(D) and
    V_t = V (D / (L_j - L_i)) off the diagonal. Distinct eigenvalues assumed, as in PyTorch."""
    if UPLO.upper() == "U":
        At = A_t.triu() + A_t.triu(1).mT
    else:
        At = A_t.tril() + A_t.tril(-1).mT
    L, V = (eigenvalues, eigenvectors) if compute_v else F._linalg_eigh(A, UPLO, True)
    D = V.mT.matmul(At).matmul(V)
    L_t = D.diagonal(0, -2, -1)
    if not compute_v:
        return (L_t, None)
    return (L_t, V.matmul(D * _reciprocal_gaps(L)))


def svd_jvp(A, A_t, full_matrices, compute_uv, U, S, Vh):
    """A = U diag(S) V^T (reduced, k = min(m, n)): with P = U^T A_t V, S_t = diag(P);
    U^T U_t = F o (P S + S P^T) and V^T V_t = F o (S P + P^T S), F_ij = 1 / (s_j^2 - s_i^2),
    plus the parts outside the span of U (m > k) or V (n > k). Distinct nonzero singular
    values assumed, as in PyTorch."""
    m, n = A.shape[-2], A.shape[-1]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError("forward AD of linalg.svd with full_matrices=True is not supported for "
                                  "non-square matrices; use full_matrices=False")
    if not compute_uv:
        U, S, Vh = F._linalg_svd(A, False, True)
    V = Vh.mT
    P = U.mT.matmul(A_t).matmul(V)
    S_t = P.diagonal(0, -2, -1)
    if not compute_uv:
        return (None, S_t, None)
    k = S.shape[-1]
    gaps = _reciprocal_gaps(S * S)
    si, sj = S.unsqueeze(-1), S.unsqueeze(-2)
    U_t = U.matmul((P * sj + si * P.mT) * gaps)
    V_t = V.matmul((si * P + P.mT * sj) * gaps)
    if m > k:
        U_t = U_t + (A_t.matmul(V) - U.matmul(P)) / sj
    if n > k:
        V_t = V_t + (A_t.mT.matmul(U) - V.matmul(P.mT)) / sj
    return (U_t, S_t, V_t.mT)


def reduction_jvp(partials, self_t, dim, keepdim):
    """The tangent of a reduction whose every input element feeds one output element:
    partials = d out / d x (its backward formula with a gradient of ones, broadcast back
    to the input's shape); the tangent is sum(partials * x_t) over the reduced dims."""
    from pytorchlite.autograd._formulas import reduced_dims
    dims = reduced_dims(self_t.shape, dim)
    prod = partials * self_t
    return prod.sum(dims, keepdim=keepdim) if dims else prod


def minmax_jvp(self, self_t, dim, keepdim, values, indices):
    """max / min over all elements (the tangent shared among ties, as the gradient is) or
    along one dim (the tangent at the returned index, with None for the indices)."""
    from pytorchlite.autograd import _formulas as H
    if dim is None:
        ones = F.ones_like(values)
        return reduction_jvp(H.minmax_backward(ones, self, None, keepdim, values, indices), self_t, None, False)
    if self.ndim == 0:
        return (self_t, None)
    idx = indices if keepdim else indices.unsqueeze(dim)
    v = self_t.gather(dim, idx)
    return (v if keepdim else v.squeeze(dim), None)


def _qr_square_jvp(A_t, Q, R):
    """A = QR with square R: B = Q^T A_t R^-1 splits into the skew Q^T Q_t (from its strict
    lower triangle) and the upper triangular R_t R^-1."""
    X = F.linalg_solve_triangular(R, A_t, upper=True, left=False)        # A_t R^-1
    B = Q.mT.matmul(X)
    L = B.tril(-1)
    omega = L - L.mT
    U = B - omega
    return X - Q.matmul(U), U.matmul(R)


def qr_jvp(A, A_t, mode, Q, R):
    """Tangents of (Q, R) for mode 'reduced' (or 'complete' where it is the same: m <= n).
    Tall A: the formula above with the reduced factors. Wide A = Q [R1 R2]: R1 from the
    square part, R2_t = Q_t^T A2 + Q^T A2_t."""
    m, n = A.shape[-2], A.shape[-1]
    if mode == "r" or (mode == "complete" and m > n):
        raise NotImplementedError(f"forward AD of linalg.qr is not supported with mode='{mode}' for this shape "
                                  "(it needs the reduced Q)")
    if m >= n:
        return _qr_square_jvp(A_t, Q, R)
    A2 = A.narrow(-1, m, n - m)
    Q_t, R1_t = _qr_square_jvp(A_t.narrow(-1, 0, m), Q, R.narrow(-1, 0, m))
    R2_t = Q_t.mT.matmul(A2) + Q.mT.matmul(A_t.narrow(-1, m, n - m))
    return Q_t, F.cat([R1_t, R2_t], -1)


def lstsq_jvp(A, B, A_t, B_t, X):
    """X = argmin ||AX - B|| for A of full rank. m >= n: X = (A^T A)^-1 A^T B, so
    X_t = (A^T A)^-1 (A_t^T (B - AX) + A^T (B_t - A_t X)). m < n (minimum norm):
    X = A^T Y with Y = (A A^T)^-1 B, Y_t = (A A^T)^-1 (B_t - A_t X - A A_t^T Y),
    X_t = A_t^T Y + A^T Y_t. A B one dimension short of A is a (batch of) vector(s)."""
    vector = B.ndim == A.ndim - 1
    b, b_t, x = (B.unsqueeze(-1), B_t.unsqueeze(-1), X.unsqueeze(-1)) if vector else (B, B_t, X)
    m, n = A.shape[-2], A.shape[-1]
    if m >= n:
        rhs = A_t.mT.matmul(b - A.matmul(x)) + A.mT.matmul(b_t - A_t.matmul(x))
        x_t = F.linalg_solve(A.mT.matmul(A), rhs)
    else:
        G = A.matmul(A.mT)
        Y = F.linalg_solve(G, b)
        Y_t = F.linalg_solve(G, b_t - A_t.matmul(x) - A.matmul(A_t.mT.matmul(Y)))
        x_t = A_t.mT.matmul(Y) + A.mT.matmul(Y_t)
    return (x_t.squeeze(-1) if vector else x_t, None, None, None)


def logcumsumexp_jvp(self, self_t, dim, result):
    """y_i = log sum_{j<=i} e^{x_j}: y_t_i = sum_{j<=i} e^{x_j - y_i} x_t_j, computed with the
    slice's max m as exp(m - y_i) * cumsum(exp(x - m) * x_t)."""
    if self.ndim == 0:
        return self_t
    m = self.amax(dim, keepdim=True)
    m = m.masked_fill(m.isinf(), 0)
    return (m - result).exp() * ((self - m).exp() * self_t).cumsum(dim)


def scatter_jvp(self_t, dim, index, src_t, reduce):
    """scatter is linear in (self, src) when it assigns or adds; multiply is not."""
    if reduce is None:
        return F.scatter(self_t, dim, index, src_t)
    if reduce == "add":
        return F.scatter(self_t, dim, index, src_t, reduce="add")
    raise NotImplementedError(f"Trying to use forward AD with scatter(reduce='{reduce}') that does not support it "
                              "because it has not been implemented yet.")


def layer_norm_jvp(input, input_t, weight, weight_t, bias_t, mean, rstd, normalized_shape):
    """Tangent of layer_norm's output from those of input, weight and bias: with x_hat =
    (x - mean) * rstd over the normalised dims, d x_hat = rstd * (dx - mean(dx) - x_hat *
    mean(dx * x_hat)), and out = x_hat * w + b."""
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    x_hat = (input - mean) * rstd
    out = rstd * (input_t - input_t.mean(dims, keepdim=True) - x_hat * (input_t * x_hat).mean(dims, keepdim=True))
    if weight is not None:
        out = out * weight + x_hat * weight_t
    if bias_t is not None:
        out = out + bias_t
    return out


def cumprod_jvp(self, self_t, dim, result):
    """Tangent of y = cumprod(x) along dim, exact where x has zeros: dy_i = sum over k <= i
    of dx_k * prod(x_l, l <= i, l != k). Before the first zero z that is y_i * cumsum(dx /
    x)_i; from z on only k = z survives: dx_z * prod(x_l, l < z) * prod(x_l, z < l <= i)."""
    x = self.to(result.dtype)
    dx = self_t.to(result.dtype)
    if x.dim() == 0:
        return dx
    zero = x == 0
    seen = zero.cumsum(dim)
    before = seen == 0                      # positions before the first zero
    first = zero & (seen == 1)              # the first zero itself
    one = x.new_ones(())
    term1 = result * dx.div(x.where(before, one)).where(before, 0).cumsum(dim)
    head = x.where(before, one).prod(dim, keepdim=True)          # product before the first zero
    tail = x.where(~(before | first), one).cumprod(dim)          # product after it, up to i
    term2 = (dx * first).sum(dim, keepdim=True) * head * tail
    return term1.where(before, term2)
