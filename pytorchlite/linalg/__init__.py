"""pytorchlite.linalg: linear algebra functions declared in ops.yaml with python_module: linalg.

`matrix_norm` and `norm` take the order as a number or a string ('fro', 'nuc'), which
PyTorch declares as two overloads; the routers below pick the generated binding for the
kind given (`linalg_matrix_norm` / `_linalg_matrix_norm_str`, `linalg_norm` /
`_linalg_norm_str`).
"""
from pytorchlite.generated import functions as _F
from pytorchlite.generated.functions import EXPORTS as _E
from pytorchlite._kernels.lapack import LinAlgError  # noqa: F401

globals().update(_E.get("linalg", {}))

_matrix_norm_num = _E["linalg"]["matrix_norm"]
_norm_num = _E["linalg"]["norm"]


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
