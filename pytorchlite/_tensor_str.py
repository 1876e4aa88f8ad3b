"""Text formatting of tensor values, matching PyTorch's ``repr(tensor)``.

This module is standalone (it depends on NumPy only).  The Tensor class calls
:func:`format_tensor` with its values as a NumPy array plus a few attributes
(dtype name, device, autograd state) and gets back the exact text PyTorch would
print, except that the dtype is spelled ``pytorchlite.<name>`` rather than
``torch.<name>``.

The rules, as PyTorch applies them:

* One formatter is built for the whole tensor (or, above ``threshold``
  elements, for the elements that remain visible after summarization) and
  every element is right-aligned to its width.
* Integers and booleans print with ``str``.
* Floats are looked at through their non-zero finite values:

  - "int mode" when all of them are integral: ``1.``, ``-0.``, ``nan``;
  - scientific notation (``{:.4e}``) when max/min > 1000, max > 1e8 or
    min < 1e-4 (or as forced by ``sci_mode``);
  - fixed notation (``{:.4f}``) otherwise.

  16-bit floats are formatted through their exact value as a Python float.
* Rows wrap to ``linewidth`` and nested dimensions are separated by one blank
  line per dimension beyond the second.
* ``size=``, ``dtype=``, ``device=``, ``grad_fn=`` / ``requires_grad=`` are
  appended as suffixes, each moved to a new line when it would overflow.
  Overflow is judged with the dtype spelled ``torch.<name>``, so the line
  breaks are PyTorch's even though the text says ``pytorchlite.<name>``.
"""

import dataclasses
import math

import numpy as np

__all__ = ["set_printoptions", "get_printoptions", "format_tensor"]

_PREFIX = "tensor("
_DTYPE_PREFIX = "pytorchlite."
_TORCH_DTYPE_PREFIX = "torch."

# NumPy storage type of each tensor dtype (bfloat16 values travel as float32).
_NUMPY_DTYPES = {
    "bool": np.bool_,
    "uint8": np.uint8,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "float16": np.float16,
    "bfloat16": np.float32,
    "float32": np.float32,
    "float64": np.float64,
}
_FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: object = None  # None (automatic), True or False


_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}

_OPTIONS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set the options used to print tensors (same meaning as in PyTorch).

    Args:
        precision: digits after the decimal point for floats (default 4).
        threshold: element count above which the output is summarized with
            ``...`` (default 1000).
        edgeitems: items kept at each end of a summarized dimension (default 3).
        linewidth: characters per line before wrapping (default 80).
        profile: ``'default'``, ``'short'`` or ``'full'``; applied first, so the
            other arguments override it.
        sci_mode: True or False forces scientific notation on or off; None
            (the default) chooses automatically.  As in PyTorch, every call
            sets this option, so omitting it resets it to automatic.
    """
    if profile is not None:
        # PyTorch ignores unknown profile names; so do we.
        for name, value in _PROFILES.get(profile, {}).items():
            setattr(_OPTIONS, name, value)
    if precision is not None:
        _OPTIONS.precision = precision
    if threshold is not None:
        _OPTIONS.threshold = threshold
    if edgeitems is not None:
        _OPTIONS.edgeitems = edgeitems
    if linewidth is not None:
        _OPTIONS.linewidth = linewidth
    _OPTIONS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options as a dict that can be passed back to
    :func:`set_printoptions` as keyword arguments."""
    return dataclasses.asdict(_OPTIONS)


class _Formatter:
    """Chooses one notation and column width for a set of values and formats
    single values with it."""

    def __init__(self, values, is_float, opts):
        self.is_float = is_float
        self.precision = opts.precision
        self.int_mode = True
        self.sci_mode = False
        self.width = 1

        flat = values.reshape(-1)
        if not is_float:
            for value in flat.tolist():
                self.width = max(self.width, len(str(value)))
            return

        flat = flat.astype(np.float64)
        visible = flat[np.isfinite(flat) & (flat != 0)]
        if visible.size == 0:
            return  # only zeros, nan and inf: int mode, width 1

        magnitudes = np.abs(visible)
        smallest, largest = float(magnitudes.min()), float(magnitudes.max())
        self.int_mode = bool(np.all(visible == np.ceil(visible)))
        if opts.sci_mode is None:
            self.sci_mode = largest / smallest > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4
        else:
            self.sci_mode = bool(opts.sci_mode)

        if self.sci_mode:
            spec, extra = f".{self.precision}e", 0
        elif self.int_mode:
            spec, extra = ".0f", 1  # room for the trailing "."
        else:
            spec, extra = f".{self.precision}f", 0
        for value in visible.tolist():
            self.width = max(self.width, len(format(value, spec)) + extra)

    def format(self, value):
        """Text of one Python scalar, right-aligned to the common width."""
        if not self.is_float:
            text = str(value)
        elif self.sci_mode:
            text = format(value, f"{self.width}.{self.precision}e")
        elif self.int_mode:
            text = format(value, ".0f")
            if math.isfinite(value):
                text += "."
        else:
            text = format(value, f".{self.precision}f")
        return text.rjust(self.width)


class DeepValues:
    """The values of a tensor of more dims than NumPy's 64, for the formatter: `arr` holds
    them in row-major order (any shape; kept without the size-1 dims) and `shape` is the
    tensor's.
    Indexing peels one dim, as on an array, and gives a NumPy array once few enough dims
    are left."""

    def __init__(self, arr, shape):
        self.arr, self.shape = arr.reshape([n for n in shape if n != 1]), tuple(shape)
        self.ndim = len(self.shape)
        self.size = arr.size

    def reshape(self, _flat):
        return self.arr.reshape(-1)

    def astype(self, dtype, copy=False):
        return DeepValues(self.arr.astype(dtype, copy=copy), self.shape)

    def __getitem__(self, i):
        if isinstance(i, slice):          # values[:0]: the summary of zero edge items
            return self.arr.reshape(-1)[i] if i.stop == 0 else self.arr.reshape(-1)
        sub = self.shape[1:]
        arr = self.arr if self.shape[0] == 1 else self.arr[i]
        return arr.reshape(sub) if len(sub) <= 64 else DeepValues(arr, sub)


def _kept_indices(length, summarize, edgeitems):
    """Indices of a dimension that remain visible, and whether '...' is shown."""
    if summarize and length > 2 * edgeitems:
        return list(range(edgeitems)) + list(range(length - edgeitems, length)), True
    return list(range(length)), False


def _summarized(values, edgeitems):
    """The values that stay visible after summarization (they decide the format).

    This follows PyTorch, quirks included: with ``edgeitems == 0`` a 1-d tensor
    keeps all its values while a tensor of two or more dimensions keeps none.
    """
    if values.ndim == 0:
        return values
    if values.ndim == 1:
        if values.shape[0] > 2 * edgeitems:
            # values[-0:] is the whole array, exactly like PyTorch's slicing.
            return np.concatenate((values[:edgeitems], values[-edgeitems:]))
        return values
    if not edgeitems:
        return values[:0].reshape(-1)
    kept, _ = _kept_indices(values.shape[0], True, edgeitems)
    return np.concatenate([_summarized(values[i], edgeitems).reshape(-1) for i in kept])


def _format_vector(values, indent, summarize, formatter, opts):
    per_line = max(1, math.floor((opts.linewidth - indent) / (formatter.width + 2)))
    if summarize and not opts.edgeitems:
        items = ["..."]
    else:
        kept, elided = _kept_indices(values.shape[0], summarize, opts.edgeitems)
        items = [formatter.format(v) for v in values[kept].tolist()]
        if elided:
            items.insert(opts.edgeitems, " ...")
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _format_values(values, indent, summarize, formatter, opts):
    """Text of a non-empty array (without the ``tensor(`` prefix)."""
    if values.ndim == 0:
        return formatter.format(values.item())
    if values.ndim == 1:
        return _format_vector(values, indent, summarize, formatter, opts)
    kept, elided = _kept_indices(values.shape[0], summarize, opts.edgeitems)
    blocks = [_format_values(values[i], indent + 1, summarize, formatter, opts) for i in kept]
    if elided:
        blocks.insert(opts.edgeitems, "...")
    separator = "," + "\n" * (values.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(blocks) + "]"


def _torch_len(suffix):
    """Length of a suffix as PyTorch spells it (``torch.`` for ``pytorchlite.``).

    Line breaks are decided on this length so that they fall exactly where
    PyTorch puts them; only the spelling of the dtype differs.
    """
    return len(suffix.replace(_DTYPE_PREFIX, _TORCH_DTYPE_PREFIX))


def _add_suffixes(text, suffixes, indent, linewidth):
    """Append ``, suffix`` items, starting a new line for any that would overflow."""
    parts = [text]
    # PyTorch's measure (it counts two more than the visible characters).
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        suffix_len = _torch_len(suffix)
        if last_line_len + suffix_len + 2 > linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + suffix_len
        else:
            parts.append(", " + suffix)
            last_line_len += suffix_len + 2
    parts.append(")")
    return "".join(parts)


def format_tensor(values, *, dtype_name, default_float_name, default_int_name="int64",
                  device=None, requires_grad=False, grad_fn_name=None, shape=None) -> str:
    """Return the text PyTorch prints for a tensor, e.g. ``'tensor([1., 2.])'``.

    Args:
        values: NumPy array (or array-like) of the tensor's values: bool,
            integer, or float16/32/64.  bfloat16 tensors pass their values as
            float32 (already representable in bfloat16).
        dtype_name: the tensor's dtype: bool, uint8, int8, int16, int32, int64,
            float16, bfloat16, float32 or float64.
        default_float_name: the current default float dtype name.  The
            ``dtype=`` suffix is left out for it, for ``default_int_name`` and
            for bool (for empty tensors it is left out only for the default
            float dtype, as PyTorch does).
        default_int_name: the integer dtype whose name is left out (int64).
        device: None (or ``'cpu'``) for CPU, else a device string such as
            ``'cuda:0'``, printed as ``device='cuda:0'``.
        requires_grad: add ``requires_grad=True`` (when there is no grad_fn).
        grad_fn_name: the grad_fn class name, e.g. ``'AddBackward0'``, printed
            as ``grad_fn=<AddBackward0>``.
        shape: the tensor's shape, if ``values`` is not already in that shape.

    The dtype is spelled ``pytorchlite.<name>``; everything else follows the
    current print options (see :func:`set_printoptions`).
    """
    if dtype_name not in _NUMPY_DTYPES:
        raise ValueError(f"format_tensor(): unsupported dtype {dtype_name!r}")
    if isinstance(values, DeepValues):
        values = values.astype(_NUMPY_DTYPES[dtype_name])
    else:
        values = np.asarray(values).astype(_NUMPY_DTYPES[dtype_name], copy=False)
    if shape is not None:
        values = values.reshape(tuple(shape))
    opts = dataclasses.replace(_OPTIONS)  # one consistent snapshot
    size_suffix = "size=" + str(tuple(int(n) for n in values.shape))
    dtype_suffix = "dtype=" + _DTYPE_PREFIX + dtype_name

    suffixes = []
    if device is not None and str(device) != "cpu":
        suffixes.append(f"device='{device}'")

    if values.size == 0:
        # Nothing shows the dtype, so only the default float dtype goes unnamed.
        body = "[]"
        if values.ndim != 1:
            suffixes.append(size_suffix)
        if dtype_name != default_float_name:
            suffixes.append(dtype_suffix)
    else:
        if not opts.edgeitems:
            suffixes.append(size_suffix)
        if dtype_name not in (default_float_name, default_int_name, "bool"):
            suffixes.append(dtype_suffix)
        summarize = values.size > opts.threshold
        shown = _summarized(values, opts.edgeitems) if summarize else values
        formatter = _Formatter(shown, dtype_name in _FLOAT_DTYPES, opts)
        body = _format_values(values, len(_PREFIX), summarize, formatter, opts)

    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")

    return _add_suffixes(_PREFIX + body, suffixes, len(_PREFIX), opts.linewidth)
