"""Composite operators too long for one expression in ops.yaml: one function per operator,
with the operator's signature (codegen checks the parameters against the schema), written
in other operators so that autograd differentiates through them.

ops.yaml names each (`composite: pytorchlite._composites.linalg.cross`); the generated
binding checks the arguments and calls it as `_cm.linalg.cross(...)`. A module here is
imported on first use, so the generated bindings do not import these modules (which call
the bindings) while they load.
"""

import importlib


def __getattr__(name):
    # the first `_cm.linalg` imports the module, which then is an attribute of this package
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        # hasattr()/getattr(..., default) probes (torch.compile walks sys.modules this way)
        # expect AttributeError for a name that is not here
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
