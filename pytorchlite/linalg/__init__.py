"""pytorchlite.linalg: linear algebra functions declared in ops.yaml with python_module: linalg.

`matrix_norm`, `norm` and `cond` take the order as a number or a string ('fro', 'nuc'),
which PyTorch declares as two overloads; the routers below pick the generated binding for
the kind given (`linalg_matrix_norm` / `_linalg_matrix_norm_str`, `linalg_norm` /
`_linalg_norm_str`, `linalg_cond` / `_linalg_cond_str`). `pinv` and `matrix_rank` also
take PyTorch's deprecated positional tolerance (`pinv(A, rcond)`: atol=0, rtol=rcond;
`matrix_rank(A, tol)`: atol=tol, rtol=0), another overload there.
"""
from pytorchlite.generated import functions as _F
from pytorchlite.generated.functions import EXPORTS as _E
from pytorchlite._kernels.lapack import LinAlgError  # noqa: F401

globals().update(_E.get("linalg", {}))

_matrix_norm_num = _E["linalg"]["matrix_norm"]
_norm_num = _E["linalg"]["norm"]
_cond_num = _E["linalg"]["cond"]
_pinv = _E["linalg"]["pinv"]
_matrix_rank = _E["linalg"]["matrix_rank"]


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The matrix norm of A over `dim`: ord 'fro' (default), 'nuc', 2, -2, 1, -1, inf, -inf.

    >>> pytorchlite.linalg.matrix_norm(pytorchlite.tensor([[3., 0.], [0., 4.]]), 'nuc')
    tensor(7.)
    """
    if isinstance(ord, str):
        return _F._linalg_matrix_norm_str(A, ord, dim, keepdim, dtype=dtype)
    return _matrix_norm_num(A, ord, dim, keepdim, dtype=dtype)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector or matrix norm, chosen from `ord` and `dim` as torch.linalg.norm chooses.

    >>> pytorchlite.linalg.norm(pytorchlite.tensor([[3., 0.], [0., 4.]]), 'nuc')
    tensor(7.)
    """
    if isinstance(ord, str):
        return _F._linalg_norm_str(A, ord, dim, keepdim, dtype=dtype)
    return _norm_num(A, ord, dim, keepdim, dtype=dtype)


def cond(A, p=None, *, out=None):
    """The condition number of A in the p-norm: None, 2, -2, 1, -1, inf, -inf, 'fro' or 'nuc'.

    >>> pytorchlite.linalg.cond(pytorchlite.tensor([[4., 0.], [0., 2.]]), 'fro')
    tensor(2.5000)
    """
    if isinstance(p, str):
        return _F._linalg_cond_str(A, p, out=out)
    return _cond_num(A, p, out=out)


def _tolerance_overload(op, tol, atol, rtol):
    if atol is not None or rtol is not None:
        raise TypeError(f"{op}() received an invalid combination of arguments: the positional tolerance cannot be "
                        "combined with atol= or rtol=")


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """The pseudo-inverse of A (atol / rtol: tolerances on its singular values; the
    deprecated rcond means atol=0, rtol=rcond).

    >>> pytorchlite.linalg.pinv(pytorchlite.tensor([[1., 0.], [0., 1e-20]]))
    tensor([[1., 0.],
            [0., 0.]])
    """
    if rcond is not None:
        _tolerance_overload("linalg_pinv", rcond, atol, rtol)
        return _pinv(A, atol=0.0, rtol=rcond, hermitian=hermitian, out=out)
    return _pinv(A, atol=atol, rtol=rtol, hermitian=hermitian, out=out)


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """The numerical rank of A (atol / rtol: tolerances on its singular values; the
    deprecated tol means atol=tol, rtol=0).

    >>> pytorchlite.linalg.matrix_rank(pytorchlite.eye(3))
    tensor(3)
    """
    if tol is not None:
        _tolerance_overload("linalg_matrix_rank", tol, atol, rtol)
        return _matrix_rank(A, atol=tol, rtol=0.0, hermitian=hermitian, out=out)
    return _matrix_rank(A, atol=atol, rtol=rtol, hermitian=hermitian, out=out)
