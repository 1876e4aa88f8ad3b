"""pytorchlite.special: PyTorch's special functions, declared in ops.yaml with
`python_module: special` (`special_erfcx` becomes `pytorchlite.special.erfcx`). Those
that are also in `pytorchlite` (`i0`, `digamma`, `xlogy`, ...) are aliases of them; the
bodies that need a loop are in kernels/ptl_special.h.

    >>> import pytorchlite
    >>> pytorchlite.special.expit(pytorchlite.tensor([0.]))
    tensor([0.5000])
"""
from pytorchlite.generated.functions import EXPORTS as _E

globals().update(_E.get("special", {}))
