"""Named tuples returned by operators with several results, like `torch.return_types`.

    >>> import pytorchlite
    >>> r = pytorchlite.tensor([[1., 5.], [4., 2.]]).max(dim=1)
    >>> r.values, r.indices
    (tensor([5., 4.]), tensor([1, 0]))
"""

from collections import namedtuple


def _structseq(name, fields):
    """A tuple subclass with named fields, printed as PyTorch prints its return types."""
    base = namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"pytorchlite.return_types.{name}(\n{body})"

    cls = type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__module__": __name__})
    return cls


max = _structseq("max", ("values", "indices"))
min = _structseq("min", ("values", "indices"))
aminmax = _structseq("aminmax", ("min", "max"))
# sorting-scans
sort = _structseq("sort", ("values", "indices"))
topk = _structseq("topk", ("values", "indices"))
kthvalue = _structseq("kthvalue", ("values", "indices"))
median = _structseq("median", ("values", "indices"))
nanmedian = _structseq("nanmedian", ("values", "indices"))
mode = _structseq("mode", ("values", "indices"))
cummax = _structseq("cummax", ("values", "indices"))
cummin = _structseq("cummin", ("values", "indices"))
_SORTING = ["sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin"]
# linalg
slogdet = _structseq("slogdet", ("sign", "logabsdet"))
linalg_slogdet = _structseq("linalg_slogdet", ("sign", "logabsdet"))
linalg_qr = _structseq("linalg_qr", ("Q", "R"))
_linalg_svd = _structseq("_linalg_svd", ("U", "S", "Vh"))
linalg_svd = _structseq("linalg_svd", ("U", "S", "Vh"))
_linalg_eigh = _structseq("_linalg_eigh", ("eigenvalues", "eigenvectors"))
linalg_eigh = _structseq("linalg_eigh", ("eigenvalues", "eigenvectors"))
linalg_lstsq = _structseq("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
linalg_inv_ex = _structseq("linalg_inv_ex", ("inverse", "info"))
linalg_cholesky_ex = _structseq("linalg_cholesky_ex", ("L", "info"))
_LINALG = ["slogdet", "linalg_slogdet", "linalg_qr", "_linalg_svd", "linalg_svd", "_linalg_eigh", "linalg_eigh",
           "linalg_lstsq", "linalg_inv_ex", "linalg_cholesky_ex"]

__all__ = ["max", "min", "aminmax"] + _SORTING
