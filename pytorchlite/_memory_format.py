"""Memory formats: the layouts `clone`, `contiguous` and the `*_like` factories can be asked
for. pytorchlite has dense strided tensors only, so preserve_format and
contiguous_format are the two it honours; channels_last layouts are not supported yet."""


class memory_format:
    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "pytorchlite." + self._name

    def __reduce__(self):
        return self._name   # module-level singletons pickle by name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")

_SUPPORTED = (contiguous_format, preserve_format)


def check_memory_format(fmt, default):
    """`fmt`, or `default` when it is None; anything else is a TypeError naming what is accepted."""
    if fmt is None:
        return default
    if fmt not in _SUPPORTED:
        raise TypeError(f"memory_format must be pytorchlite.contiguous_format or pytorchlite.preserve_format, "
                        f"got {fmt!r}")
    return fmt
