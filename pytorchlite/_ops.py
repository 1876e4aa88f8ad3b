"""Operator descriptors the generated dispatch table is made of: `(operator, device
type) -> entry`. Entries for device types other than the CPU are resolved through the
device registry (pytorchlite/_backends.py), so nothing here imports a backend."""

from pytorchlite import _backends


def _no_entry(name, device_type, declared):
    return NotImplementedError(
        f"{name}(): no kernel for device '{device_type}'; ops.yaml declares it for "
        f"{', '.join(sorted(declared)) or 'no device'}")


class OpInfo:
    __slots__ = ("name", "schema")
    kind = None

    def __init__(self, name, schema):
        self.name = name
        self.schema = schema

    def __repr__(self):
        return f"<{self.kind} operator {self.schema}>"


class PointwiseOp(OpInfo):
    """A pointwise operator: generated C entry points for the CPU, the names of the
    kernels generated from the same expression for other device types, and what the
    kernels accept."""

    __slots__ = ("cpu", "entries", "dtypes", "promotion", "inputs", "scalars", "integer_division", "check",
                 "kernel_name", "dtype_errors", "out_dtype_error", "all_numbers")
    kind = "pointwise"

    def __init__(self, name, schema, cpu, dtypes, promotion, inputs, scalars, integer_division, entries=None,
                 check=None, kernel_name=None, dtype_errors=None, out_dtype_error=None, all_numbers=False):
        super().__init__(name, schema)
        self.cpu = cpu                       # (strided entry, contiguous entry)
        self.entries = dict(entries or {})   # device type -> the generated kernel's name
        self.dtypes = frozenset(dtypes)      # dtype codes the kernel is generated for
        self.promotion = promotion
        self.inputs = inputs
        self.scalars = scalars
        self.integer_division = integer_division
        # PyTorch's rules around the arithmetic, from ops.yaml (docs/ops_yaml.md)
        self.check = check                   # argument check before the kernel, or None
        self.kernel_name = kernel_name or name + "_cpu"    # named in "not implemented for"
        self.dtype_errors = dict(dtype_errors or {})       # dtype name -> PyTorch's message
        self.out_dtype_error = out_dtype_error             # out= must have the result dtype
        self.all_numbers = all_numbers       # runs on Python numbers alone too

    def entry(self, device_type):
        """The generated kernel of this operator for a device type other than the CPU."""
        e = self.entries.get(device_type)
        if e is None:
            raise _no_entry(self.name, device_type, ["cpu"] + list(self.entries))
        return e


class KernelOp(OpInfo):
    """An operator whose kernel entry is a Python function per device type (or 'any')."""

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
        backend = _backends.get(dt)
        # say why the device is unusable (no driver, no package...) before anything else
        backend.lazy_init()
        target = self.kernels.get(dt) or self.kernels.get("any")
        if target is None:
            raise _no_entry(self.name, dt, self.kernels)
        fn = backend.resolve(target)
        self._resolved[dt] = fn
        return fn


class CompositeOp(OpInfo):
    """Defined in terms of other operators; runs wherever its parts run."""

    __slots__ = ()
    kind = "composite"


class _Operators:
    """`ops.<name>`: the generated binding of an operator, found when first used.

    Backward formulas, forward-mode rules and kernels that call other operators reach
    them through this object instead of importing generated/functions.py: the bindings
    record backward nodes whose formulas call operators again, and late binding by name,
    as PyTorch's dispatcher does for at:: calls, keeps those layers free of import
    cycles. After the first use of a name it is an ordinary attribute (one dictionary
    lookup, as for a module attribute)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        from pytorchlite.generated import functions
        fn = getattr(functions, name)     # AttributeError names the missing operator
        setattr(self, name, fn)
        return fn


ops = _Operators()
