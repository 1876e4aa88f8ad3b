"""Forward-mode (jvp) helpers for derivatives.yaml `result:` formulas that take more than
one line: given the primal inputs and result and the input tangents, the result's tangent.
They are written in pytorchlite operators, like the backward helpers."""

__all__ = ["linalg_solve_jvp", "cholesky_jvp", "trace_of_solve", "pad_jvp"]


def pad_jvp(self_t, pad, mode):
    """pad is linear in its input, but a constant fill is not: the tangent pads with zeros."""
    from pytorchlite.generated import functions as F
    return F.pad(self_t, pad, mode, None)


def trace_of_solve(A, A_t):
    """trace(A^-1 A_t) over the batch: the derivative of log|det A| along A_t."""
    from pytorchlite.generated import functions as F
    return F.linalg_solve(A, A_t).diagonal(0, -2, -1).sum(-1)


def linalg_solve_jvp(A, result, A_t, B_t, left):
    """X = A^-1 B (left) or B A^-1: X_t = A^-1 (B_t - A_t X), or (B_t - X A_t) A^-1. A B that
    solve() treats as a (batch of) vector(s) gives a result one dimension short of A."""
    from pytorchlite.generated import functions as F
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
    from pytorchlite.generated import functions as F
    L = result.mT if upper else result
    Y = F.linalg_solve(L, A_t)                    # L^-1 A_t
    X = F.linalg_solve(L, Y.mT).mT                # L^-1 A_t L^-T
    phi = X.tril() - 0.5 * F.diag_embed(X.diagonal(0, -2, -1))
    L_t = L.matmul(phi)
    return L_t.mT if upper else L_t
