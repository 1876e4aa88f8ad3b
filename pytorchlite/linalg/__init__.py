"""pytorchlite.linalg: linear algebra functions declared in ops.yaml with python_module: linalg.

Where PyTorch takes several forms (`matrix_norm`, `norm` and `cond` with the order as a
number or a string, `pinv(A, rcond)` and `matrix_rank(A, tol)` with the deprecated
positional tolerance), ops.yaml declares each as an overload; the generated parser picks.
"""
from pytorchlite.generated.functions import EXPORTS as _E
from pytorchlite._kernels.lapack import LinAlgError  # noqa: F401

globals().update(_E.get("linalg", {}))
