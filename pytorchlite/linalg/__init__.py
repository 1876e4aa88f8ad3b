"""pytorchlite.linalg: linear algebra functions declared in ops.yaml with python_module: linalg.

`matrix_norm`, `norm` and `cond` take the order as a number or a string ('fro', 'nuc'):
two overloads each in ops.yaml, picked by the generated parser. `pinv` and `matrix_rank`
also take PyTorch's deprecated positional tolerance (`pinv(A, rcond)`: atol=0, rtol=rcond;
`matrix_rank(A, tol)`: atol=tol, rtol=0), another overload there.
"""
from pytorchlite.generated.functions import EXPORTS as _E
from pytorchlite._kernels.lapack import LinAlgError  # noqa: F401

globals().update(_E.get("linalg", {}))

_pinv = _E["linalg"]["pinv"]
_matrix_rank = _E["linalg"]["matrix_rank"]


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
