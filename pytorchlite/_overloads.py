"""How a generated argument parser picks an overload, and PyTorch's errors when none fits.

A name with several ops.yaml entries (`max`, `max.dim`, `max.other`) gets a generated
parser (codegen/overloads.py) that tries the overloads in declaration order, as PyTorch's
python_arg_parser does: Python binds positional and keyword arguments (each overload has a
matcher function with that overload's signature), and the predicates below check the
types with PyTorch's rules (`FunctionParameter::check`): a bool is not an int, a 0-d
integer tensor is, a list of ints needs an int first, None only where the schema allows it.

When nothing fits, `no_match` raises what PyTorch raises: the one overload whose argument
count fits, parsed again to name the argument that is wrong, or else `max() received an
invalid combination of arguments - got (Tensor, str), but expected one of: ...`, with
PyTorch's "didn't match because ..." notes (torch/csrc/utils/invalid_arguments.cpp,
quirks included, so that the text is the same).
"""

import numbers
import operator

from pytorchlite import _dtype as D
from pytorchlite._argparse import _type_name
from pytorchlite._device import device as _device
from pytorchlite._core import TensorBase as Tensor

_NUMBER = (bool, int, float)


# --- type predicates (PyTorch's FunctionParameter::check) ---------------------------------

def is_tensor(v):
    return isinstance(v, Tensor)


def is_tensor_or_number(v):
    # `tensor_scalars:` arguments (PyTorch's allow_numbers_as_tensors)
    return isinstance(v, (Tensor, bool, int, float))


def is_scalar(v):
    if isinstance(v, _NUMBER):
        return True
    if isinstance(v, Tensor):
        return not v._requires_grad and not v._shape
    return hasattr(v, "item") and getattr(v, "shape", None) == ()     # NumPy scalars


def _is_long(v):
    # (NumPy's integers too, as PyTorch's THPUtils_checkLong)
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def is_int(v):
    if _is_long(v):
        return True
    if isinstance(v, Tensor):
        return not v._shape and not v._requires_grad and not v._dtype.is_floating_point and v._dtype is not D.bool
    return False


def is_symint(v):
    # PyTorch's THPUtils_checkIndex: anything with __index__ but a bool
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    try:
        operator.index(v)
    except Exception:      # __index__ may raise anything; it just means "not an int"
        return False
    return True


def is_float(v):
    if isinstance(v, (int, float)):
        return True
    if isinstance(v, Tensor):
        return not v._requires_grad and not v._shape
    return False


def is_bool(v):
    return v.__class__ is bool


def is_str(v):
    return isinstance(v, str)


def is_int_list(v, size=0):
    if isinstance(v, (tuple, list)):
        return not v or is_symint(v[0])
    return bool(size) and _is_long(v)


def is_symint_list(v, size=0):
    if isinstance(v, (tuple, list)):
        return not v or is_symint(v[0])
    return bool(size) and is_symint(v)


def is_float_list(v, size=0):
    if isinstance(v, (tuple, list)):
        return not v or isinstance(v[0], (int, float))
    return False


def is_tensor_list(v, size=0):
    return isinstance(v, (tuple, list)) and all(isinstance(t, Tensor) for t in v)


def is_dtype(v):
    return isinstance(v, D.dtype)


def is_device(v):
    return isinstance(v, (str, _device)) or _is_long(v)


def is_generator(v):
    from pytorchlite import _random
    return isinstance(v, _random.Generator)


def is_any(v):
    return True


def is_varargs(args, kw, size=0):
    """An int list given as `view(2, 3)`, `view((2, 3))` or `view(size=(2, 3))` (as
    PyTorch, the first element decides)."""
    if kw is not None:
        return not args and is_symint_list(kw, size)
    if not args:
        return False
    a = args[0]
    if a.__class__ is int:
        return True
    if isinstance(a, (tuple, list)):
        return len(args) == 1 and (not a or is_symint(a[0]))
    return is_symint(a)


CHECKS = {
    "tensor": is_tensor, "tensor_or_number": is_tensor_or_number, "scalar": is_scalar, "int": is_int,
    "symint": is_symint, "float": is_float, "bool": is_bool, "str": is_str, "int_list": is_int_list,
    "symint_list": is_symint_list, "float_list": is_float_list, "tensor_list": is_tensor_list,
    "dtype": is_dtype, "device": is_device, "generator": is_generator, "any": is_any,
}
_LISTS = ("int_list", "symint_list", "float_list", "tensor_list")


# --- the signatures, for errors -------------------------------------------------------------

class Param:
    __slots__ = ("name", "type_name", "key", "check", "is_list", "size", "optional", "allow_none", "kwonly")

    def __init__(self, name, type_name, key, size, optional, allow_none, kwonly):
        self.name = name
        self.type_name = type_name
        self.key = key
        self.check = CHECKS[key]
        self.is_list = key in _LISTS
        self.size = size
        self.optional = optional          # has a default: may be left out
        self.allow_none = allow_none      # None is accepted
        self.kwonly = kwonly

    def accepts(self, v):
        return self.check(v, self.size) if self.is_list else self.check(v)


class Signature:
    """One overload as PyTorch prints and parses it: `(Tensor input, int dim, ...)`."""

    __slots__ = ("text", "params", "min_args", "max_args", "max_pos", "varargs")

    def __init__(self, text, params):
        self.text = text
        self.params = tuple(Param(*p) for p in params)
        self.min_args = sum(1 for p in self.params if not p.optional)
        self.max_args = len(self.params)
        self.max_pos = sum(1 for p in self.params if not p.kwonly)
        self.varargs = self.max_pos == 1 and self.params[0].is_list and self.params[0].type_name == "tuple of ints"


class Overloads:
    """The signatures of one public name (function or method), in the order they are tried."""

    __slots__ = ("name", "signatures")

    def __init__(self, name, signatures):
        self.name = name
        self.signatures = tuple(Signature(*s) for s in signatures)


# --- errors (PyTorch's PythonArgParser::print_error) -------------------------------------------

def no_match(overloads, args, kwargs):
    """The TypeError for a call no overload accepts."""
    n = len(args) + len(kwargs)
    plausible = [s for s in overloads.signatures if s.min_args <= n <= s.max_args]
    if len(plausible) == 1:
        err = _parse_error(overloads.name, plausible[0], args, kwargs)
        if err is not None:
            return err
    return TypeError(format_invalid_args(overloads.name, args, kwargs, [s.text for s in overloads.signatures]))


def _extra_args(name, sig, nargs):
    if sig.min_args != sig.max_pos:
        return TypeError(f"{name}() takes from {sig.min_args} to {sig.max_pos} positional arguments but {nargs} "
                         "were given")
    return TypeError(f"{name}() takes {sig.max_pos} positional argument{'' if sig.max_pos == 1 else 's'} but "
                     f"{nargs} {'was' if nargs == 1 else 'were'} given")


def _missing_args(name, sig, i):
    missing = [p.name for p in sig.params[i:] if not p.optional]
    # (PyTorch's message says "arguments" for one missing argument)
    return TypeError(f"{name}() missing {len(missing)} required positional argument{'s' if len(missing) == 1 else ''}"
                     f": " + ", ".join(f'"{m}"' for m in missing))


def _parse_error(name, sig, args, kwargs):
    """FunctionSignature::parse with raise_exception: the error naming what is wrong, or
    None when the arguments do fit this signature."""
    nargs = len(args)
    remaining = len(kwargs)
    varargs = sig.varargs
    if nargs > sig.max_pos and not varargs:
        return _extra_args(name, sig, nargs)
    pos = 0
    for i, p in enumerate(sig.params):
        is_kwd = False
        present = False
        obj = None
        if pos < nargs:
            if p.kwonly:
                return _extra_args(name, sig, nargs)
            obj, present = args[pos], True
        elif kwargs:
            present = p.name in kwargs
            obj = kwargs.get(p.name)
            is_kwd = True
        varargs_here = varargs and pos == 0 and not is_kwd
        if (not present and p.optional) or (present and obj is None and p.allow_none):
            pass
        elif not present:
            return _missing_args(name, sig, i)
        elif p.accepts(obj):
            pass
        elif varargs_here and is_symint_list(args, p.size):
            pos = nargs
            continue
        elif is_kwd:
            return TypeError(f"{name}(): argument '{p.name}' must be {p.type_name}, not {_type_name(obj)}")
        else:
            bad = _bad_element(p, obj if isinstance(obj, (tuple, list)) else (args if varargs_here else None))
            if bad is not None:
                return TypeError(f"{name}(): argument '{p.name}' (position {pos + 1}) must be {p.type_name}, but "
                                 f"found element of type {_type_name(bad[1])} at pos {bad[0]}")
            return TypeError(f"{name}(): argument '{p.name}' (position {pos + 1}) must be {p.type_name}, not "
                             f"{_type_name(obj)}")
        if not is_kwd:
            pos += 1
        elif present:
            remaining -= 1
    if remaining > 0:
        names = [p.name for p in sig.params]
        for key in kwargs:
            if key not in names:
                return TypeError(f"{name}() got an unexpected keyword argument '{key}'")
            if names.index(key) < nargs:
                return TypeError(f"{name}() got multiple values for argument '{key}'")
        return TypeError("invalid keyword arguments")
    return None


def _bad_element(p, seq):
    """(index, value) of the element PyTorch names when a SymInt[] argument fails (it
    checks the first element); None for the other list types, named as a whole."""
    if seq is None or p.key != "symint_list" or not seq or is_symint(seq[0]):
        return None
    return 0, seq[0]


# --- the message (torch/csrc/utils/invalid_arguments.cpp) ---------------------------------------
#
# PyTorch formats the message from the printed signatures, parsing them back: an argument
# is "type name", split at the last space, so `bool keepdim = False` reads as type
# "bool keepdim =" named "False", and `*` as an argument of its own. The notes under each
# signature follow from that reading; it is reproduced as is, so the text is the same.

class _Option:
    __slots__ = ("names", "types", "variadic")

    def __init__(self, text):
        inner = text[1:-1]
        self.names, self.types = [], []
        for arg in inner.split(", "):
            cut = arg.rfind(" ")
            self.types.append(arg[:cut] if cut >= 0 else arg)
            self.names.append(arg[cut + 1:])
        self.variadic = "..." in inner


_MATCHING = {"float": ("float", "int"), "int": ("int",)}


def _matches(type_text, value):
    got = _type_name(value)
    return got in _MATCHING.get(type_text, (type_text,))


def _type_desc(value):
    if isinstance(value, (tuple, list)):
        items = ", ".join(_type_name(x) for x in value)
        if isinstance(value, tuple):
            return f"tuple of ({items}{',' if len(value) == 1 else ''})"
        return f"list of [{items}]"
    return _type_name(value)


def _kw_order(kwargs):
    # PyTorch walks an unordered_map: libstdc++ gives the keys in reverse insertion order
    return list(reversed(list(kwargs)))


def _arg_desc(args, kwargs):
    parts = [_type_name(a) for a in args] + [f"{k}={_type_name(kwargs[k])}" for k in _kw_order(kwargs)]
    text = "".join(p + ", " for p in parts)
    if args:
        text = text[:-2]
    return f"({text})"


def _count_match(option, args, kwargs):
    got = len(args) + len(kwargs)
    return got == len(option.names) or (option.variadic and got > len(option.names))


def _unmatched_kwargs(option, kwargs):
    start = max(len(option.names) - len(kwargs), 0)
    tail = option.names[start:]
    return [k for k in _kw_order(kwargs) if k not in tail]


def _formatted_desc(option, args, kwargs):
    parts = []
    n = len(args) + len(kwargs)
    for i in range(n):
        is_kw = i >= len(args)
        value = kwargs[option.names[i]] if is_kw else args[i]
        if i < len(option.types):
            ok = _matches(option.types[i], value)
        else:
            ok = option.variadic and _matches(option.types[-1], value)
        text = (option.names[i] + "=" if is_kw else "") + _type_desc(value)
        parts.append(text if ok else f"!{text}!")
    text = "".join(p + ", " for p in parts)
    if args:
        text = text[:-2]
    return f"({text})"


def format_invalid_args(name, args, kwargs, options):
    msg = f"{name}() received an invalid combination of arguments - "
    if len(options) == 1:
        option = _Option(options[0])
        unmatched = _unmatched_kwargs(option, kwargs) if kwargs else []
        if unmatched:
            return msg + "got unrecognized keyword arguments: " + ", ".join(unmatched)
        got = _formatted_desc(option, args, kwargs) if _count_match(option, args, kwargs) else _arg_desc(args, kwargs)
        return msg + f"got {got}, but expected {options[0]}"
    msg += f"got {_arg_desc(args, kwargs)}, but expected one of:\n"
    for text in options:
        option = _Option(text)
        msg += f" * {text}\n"
        if _count_match(option, args, kwargs):
            unmatched = _unmatched_kwargs(option, kwargs) if kwargs else []
            if unmatched:
                msg += "      didn't match because some of the keywords were incorrect: " + ", ".join(unmatched) + "\n"
            else:
                msg += ("      didn't match because some of the arguments have invalid types: "
                        + _formatted_desc(option, args, kwargs) + "\n")
    return msg
