"""Which operators reach CUDA, read from the dispatch table (generated/dispatch.py).

The one place that answers "does op X run on CUDA, and how": the GPU tests skip an
operator with no CUDA kernel (with the reason "no CUDA kernel"), and
`python -m pytorchlite.cuda.check` lists every such operator in its report instead of
counting it as a failure.

    >>> from pytorchlite.cuda import _coverage
    >>> _coverage.cuda_status("add")
    'generated'
"""

GENERATED = "generated"        # a pointwise expression: generated/pointwise.cu has its kernels
KERNEL = "cuda kernel"         # a kernel entry declared for `cuda`
GENERIC = "device-generic"     # a kernel entry for `any` device (views, copies, *_like)
COMPOSITE = "composite"        # runs on CUDA where every operator it calls does
MISSING = "no CUDA kernel"


def _ops():
    from pytorchlite._ops import OpInfo
    from pytorchlite.generated import dispatch
    return {op.name: op for op in vars(dispatch).values() if isinstance(op, OpInfo)}


def _status(op):
    if op.kind == "pointwise":
        return GENERATED
    if op.kind == "composite":
        return COMPOSITE
    kernels = getattr(op, "kernels", {})
    if "cuda" in kernels:
        return KERNEL
    if "any" in kernels:
        return GENERIC
    return MISSING


def cuda_status(name):
    """How operator `name` runs on CUDA: one of GENERATED, KERNEL, GENERIC, COMPOSITE,
    MISSING; KeyError for an unknown operator."""
    return _status(_ops()[name])


def table():
    """{status: sorted operator names} over the whole dispatch table."""
    out = {}
    for name, op in _ops().items():
        out.setdefault(_status(op), []).append(name)
    return {k: sorted(v) for k, v in sorted(out.items())}
