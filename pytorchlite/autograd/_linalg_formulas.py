"""Backward formulas of the LAPACK-backed linear algebra (inv, det, slogdet, solve, cholesky,
qr, svd, eigh, lstsq), re-exported by _formulas.py for derivatives.yaml.

Real matrices only (pytorchlite has no complex dtypes), so every ^H of PyTorch's
FunctionsManual.cpp formulas is a transpose here. Each helper is written in differentiable
pytorchlite operators, so gradgradcheck works through them. Like PyTorch's, the formulas
for svd and eigh hold when the singular values / eigenvalues are distinct, and the ones
for det, slogdet, solve and lstsq when the matrix has full rank.
"""

from pytorchlite._ops import ops as _F

__all__ = [
    "linalg_det_backward", "linalg_slogdet_backward", "linalg_solve_backward", "cholesky_backward",
    "linalg_qr_backward", "svd_backward", "eigh_backward", "linalg_lstsq_backward",
]


def _mT(x):
    return x.transpose(-2, -1)


def _mm(a, b):
    return _F.matmul(a, b)


def _eye(n, like):
    return _F.eye(n, dtype=like.dtype, device=like.device)


def _diag_embed(v):
    """(..., n) -> (..., n, n) with v on the diagonal (differentiable: a product with I)."""
    n = v.shape[-1]
    return v.unsqueeze(-1) * _eye(n, v)


def _tril(x, diag_scale=1.0):
    """The lower triangle of x's matrices (upper part zero), its diagonal times diag_scale."""
    import numpy as np
    n, m = x.shape[-2], x.shape[-1]
    mask = np.tril(np.ones((n, m)))
    np.fill_diagonal(mask, diag_scale)
    return x * _mask_tensor(mask, x)


def _mask_tensor(mask, like):
    import pytorchlite
    return pytorchlite.tensor(mask, dtype=like.dtype, device=like.device)


def _inv(a):
    return _F.linalg_inv(a)


def linalg_det_backward(grad, A, det):
    """d det(A) = tr(adj(A) dA): gA = grad * adj(A)^T, which is grad * det * A^{-T} for an
    invertible A. A singular A (in the batch) takes the SVD form of the adjugate, which
    holds for every A: with A = U diag(s) V^T, adj(A)^T = det(U) det(V) U diag(prod_{j!=i} s_j) V^T.
    (PyTorch 2.13 returns zeros for a singular A; this is the true gradient.)"""
    from pytorchlite._kernels.lapack import LinAlgError
    try:
        return (grad * det).unsqueeze(-1).unsqueeze(-1) * _mT(_inv(A))
    except LinAlgError:
        pass
    U, S, Vh = _F._linalg_svd(A)
    n = S.shape[-1]
    eye = _F.eye(n, dtype=_bool(), device=S.device)
    others = _F.where(eye, 1.0, S.unsqueeze(-2).expand(S.shape[:-1] + (n, n))).prod(-1)
    sign = _F.linalg_det(U) * _F.linalg_det(Vh)
    return (grad * sign).unsqueeze(-1).unsqueeze(-1) * _mm(U * others.unsqueeze(-2), Vh)


def _bool():
    import pytorchlite
    return pytorchlite.bool


def linalg_slogdet_backward(grads, A):
    """Only logabsdet is differentiable (the sign is piecewise constant): gA = g * A^{-T}."""
    g = grads[1]
    if g is None:
        return None
    return g.unsqueeze(-1).unsqueeze(-1) * _mT(_inv(A))


def linalg_solve_backward(grad, A, B, X, left, mask):
    """AX = B: gB = A^{-T} gX, gA = -gB X^T (left=False: XA = B, the transposed problem)."""
    from pytorchlite._kernels.lapack import _solve_is_vector
    vector = _solve_is_vector(A, B)
    g = grad.unsqueeze(-1) if vector else grad
    x = X.unsqueeze(-1) if vector else X
    if left:
        gB = _F.linalg_solve(_mT(A), g)
        gA = -_mm(gB, _mT(x)) if mask[0] else None
    else:
        gB = _mT(_F.linalg_solve(A, _mT(g)))
        gA = -_mm(_mT(x), gB) if mask[0] else None
    if not mask[1]:
        gB = None
    elif vector:
        gB = gB.squeeze(-1)
    return gA, gB


def cholesky_backward(grad, upper, L):
    """A = L L^T: gA = sym(L^{-T} Phi(L^T gL) L^{-1}), Phi = lower triangle with half diagonal."""
    if upper:
        L, grad = _mT(L), _mT(grad)
    Linv = _inv(L)
    phi = _tril(_mm(_mT(L), grad), 0.5)
    gA = _mm(_mm(_mT(Linv), phi), Linv)
    return (gA + _mT(gA)) * 0.5


def _qr_backward_tall(gQ, gR, Q, R):
    """A = QR with m >= n (Q: m x n): gA = [gQ + Q copyltu(M)] R^{-T}, M = R gR^T - gQ^T Q."""
    M = None
    if gR is not None:
        M = _mm(R, _mT(gR))
    if gQ is not None:
        t = _mm(_mT(gQ), Q)
        M = -t if M is None else M - t
    low = _tril(M)
    sym = low + _mT(_tril(M, 0.0))
    b = _mm(Q, sym)
    if gQ is not None:
        b = b + gQ
    return _mT(_F.linalg_solve(R, _mT(b)))


def linalg_qr_backward(grads, mode, Q, R):
    gQ, gR = grads[0], grads[1]
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                           "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
                           "linalg.qr.")
    m, n = Q.shape[-2], R.shape[-1]
    if mode == "complete" and m > n:
        raise NotImplementedError("The QR decomposition is not differentiable when mode='complete' and "
                                  "nrows > ncols.")
    if m >= n:
        return _qr_backward_tall(gQ, gR, Q, R)
    # wide: A = Q [X | Y], X square upper triangular; Y = Q^T A[:, m:] moves Q's gradient
    X, Y = R.narrow(-1, 0, m), R.narrow(-1, m, n - m)
    gX = gR.narrow(-1, 0, m) if gR is not None else None
    gY = gR.narrow(-1, m, n - m) if gR is not None else None
    V = _mm(Q, Y)
    gQ2 = gQ
    if gY is not None:
        t = _mm(V, _mT(gY))
        gQ2 = t if gQ2 is None else gQ2 + t
    gU = _qr_backward_tall(gQ2, gX, Q, X)
    gV = _mm(Q, gY) if gY is not None else _F.zeros_like(V)
    return _concat_last(gU, gV)


def _concat_last(a, b):
    """[a | b] along the last dim, through differentiable pads (no cat needed)."""
    import numpy as np
    n1, n2 = a.shape[-1], b.shape[-1]
    return _mm(a, _mask_tensor(np.eye(n1, n1 + n2), a)) + _mm(b, _mask_tensor(np.eye(n2, n1 + n2, n1), b))


def svd_backward(grads, full_matrices, U, S, Vh):
    """A = U diag(S) V^T (Townsend's formula, as PyTorch's svd_backward): with E_ij = s_j^2 - s_i^2,
    gA = U [skew(U^T gU)/E S + S skew(V^T gV)/E + diag(gS)] V^T
         + (I - UU^T) gU S^{-1} V^T + U S^{-1} gV^T (I - VV^T)."""
    gU, gS, gVh = grads[0], grads[1], grads[2]
    m, n = U.shape[-2], Vh.shape[-1]
    k = S.shape[-1]
    if full_matrices:
        # only the first k singular vectors are determined by A
        U = U.narrow(-1, 0, k)
        Vh = Vh.narrow(-2, 0, k)
        gU = gU.narrow(-1, 0, k) if gU is not None else None
        gVh = gVh.narrow(-2, 0, k) if gVh is not None else None
    if gU is None and gVh is None:
        return _mm(U * gS.unsqueeze(-2), Vh)
    V = _mT(Vh)
    gV = _mT(gVh) if gVh is not None else None
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + _eye(k, S)
    inner = None
    if gU is not None:
        UtgU = _mm(_mT(U), gU)
        inner = (UtgU - _mT(UtgU)) / E * S.unsqueeze(-2)
    if gV is not None:
        VtgV = _mm(_mT(V), gV)
        t = S.unsqueeze(-1) * ((VtgV - _mT(VtgV)) / E)
        inner = t if inner is None else inner + t
    if gS is not None:
        inner = inner + _diag_embed(gS)
    gA = _mm(_mm(U, inner), Vh)
    if m > k and gU is not None:
        gUS = gU / S.unsqueeze(-2)
        gA = gA + _mm(gUS - _mm(U, _mm(_mT(U), gUS)), Vh)
    if n > k and gV is not None:
        gVS = gV / S.unsqueeze(-2)
        gA = gA + _mm(U, _mT(gVS - _mm(V, _mm(Vh, gVS))))
    return gA


def eigh_backward(grads, L, V):
    """A = V diag(L) V^T: gA = V (diag(gL) + skew(V^T gV)/2 / E) V^T, E_ij = L_j - L_i."""
    gL, gV = grads[0], grads[1]
    if gV is None:
        return _mm(V * gL.unsqueeze(-2), _mT(V))
    n = L.shape[-1]
    VtgV = _mm(_mT(V), gV)
    E = L.unsqueeze(-2) - L.unsqueeze(-1) + _eye(n, L)
    inner = (VtgV - _mT(VtgV)) * 0.5 / E
    if gL is not None:
        inner = inner + _diag_embed(gL)
    return _mm(_mm(V, inner), _mT(V))


def linalg_lstsq_backward(grad, A, B, X, mask):
    """X = argmin ||AX - B|| (min-norm when m < n), A of full rank:
    m >= n: Y = (A^T A)^{-1} gX, gA = (B - AX) Y^T - A Y X^T, gB = A Y;
    m < n:  Z = (A A^T)^{-1} B, W = (A A^T)^{-1} A gX, gA = Z gX^T - (W Z^T + Z W^T) A, gB = W."""
    if grad is None:
        return None, None
    vector = len(B.shape) == len(A.shape) - 1
    g = grad.unsqueeze(-1) if vector else grad
    x = X.unsqueeze(-1) if vector else X
    b = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2], A.shape[-1]
    At = _mT(A)
    if m >= n:
        Y = _F.linalg_solve(_mm(At, A), g)
        gA = _mm(b - _mm(A, x), _mT(Y)) - _mm(_mm(A, Y), _mT(x)) if mask[0] else None
        gB = _mm(A, Y) if mask[1] else None
    else:
        G = _mm(A, At)
        Z = _F.linalg_solve(G, b)
        W = _F.linalg_solve(G, _mm(A, g))
        gA = _mm(Z, _mT(g)) - _mm(_mm(W, _mT(Z)) + _mm(Z, _mT(W)), A) if mask[0] else None
        gB = W if mask[1] else None
    if vector and gB is not None:
        gB = gB.squeeze(-1)
    return gA, gB
