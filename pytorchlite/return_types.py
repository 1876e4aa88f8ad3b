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

__all__ = ["max", "min", "aminmax"]
