"""Operator descriptors the generated dispatch table is made of."""

import importlib


class OpInfo:
    __slots__ = ("name", "schema")
    kind = None

    def __init__(self, name, schema):
        self.name = name
        self.schema = schema

    def __repr__(self):
        return f"<{self.kind} operator {self.schema}>"


class PointwiseOp(OpInfo):
    """A pointwise operator: generated C entry points per device and what they accept."""

    __slots__ = ("cpu", "dtypes", "promotion", "inputs", "scalars", "integer_division")
    kind = "pointwise"

    def __init__(self, name, schema, cpu, dtypes, promotion, inputs, scalars, integer_division):
        super().__init__(name, schema)
        self.cpu = cpu                       # (strided entry, contiguous entry)
        self.dtypes = frozenset(dtypes)      # dtype codes the kernel is generated for
        self.promotion = promotion
        self.inputs = inputs
        self.scalars = scalars
        self.integer_division = integer_division


class KernelOp(OpInfo):
    """An operator whose kernel entry is a Python function per device (or 'any')."""

    __slots__ = ("kernels", "_resolved")
    kind = "kernel"

    def __init__(self, name, schema, kernels):
        super().__init__(name, schema)
        self.kernels = kernels
        self._resolved = {}

    def kernel(self, device):
        dt = device.type
        fn = self._resolved.get(dt)
        if fn is not None:
            return fn
        if dt == "cuda":
            # say why CUDA is unusable (no driver, no package...) before anything else
            from pytorchlite import cuda
            cuda._lazy_init()
        target = self.kernels.get(dt) or self.kernels.get("any")
        if target is None:
            raise NotImplementedError(
                f"{self.name}(): no kernel for device '{dt}'; ops.yaml declares it for "
                f"{', '.join(sorted(self.kernels))}")
        module, _, attr = target.rpartition(".")
        fn = getattr(importlib.import_module(module), attr)
        self._resolved[dt] = fn
        return fn


class CompositeOp(OpInfo):
    """Defined in terms of other operators; runs wherever its parts run."""

    __slots__ = ()
    kind = "composite"
