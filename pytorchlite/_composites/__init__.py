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
        # not one of ours: an AttributeError, as for any module (pickle's whichmodule, which
        # torch.compile's cache keys use, asks every loaded module for names and expects it)
        if e.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
