"""Dtypes, the promotion lattice, and the default dtype.

The numeric codes and item sizes are the kernels' (codegen/abi.py declares them once;
generated/abi.py and generated/ptl_abi.h carry them to Python and C).
"""

import threading

import numpy as np

from pytorchlite.generated import abi as _abi

__all__ = [
    "dtype", "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
    "float32", "float64", "half", "float", "double", "short", "int", "long",
    "get_default_dtype", "set_default_dtype", "promote_types", "can_cast", "finfo", "iinfo",
]

_builtin_bool = bool
_builtin_float = float
_builtin_int = int


class dtype:
    """A tensor element type; compare with `is` or `==`."""

    __slots__ = ("name", "code", "itemsize", "is_floating_point", "is_signed", "np_dtype",
                 "_category", "_rank", "_torch_name")

    def __init__(self, name, code, itemsize, category, rank, np_dtype, torch_name):
        self.name = name
        self.code = code
        self.itemsize = itemsize
        self._category = category          # 0 bool, 1 integer, 2 floating
        self._rank = rank                  # order inside a category (see _promote)
        self.is_floating_point = category == 2
        self.is_signed = name not in ("bool", "uint8")
        self.np_dtype = np_dtype           # None for bfloat16: NumPy has no such type
        self._torch_name = torch_name      # PyTorch's ScalarType spelling, used in messages

    @property
    def is_complex(self):
        return False

    @property
    def itemsize_bits(self):
        return self.itemsize * 8

    def to_real(self):
        return self

    def __repr__(self):
        return "pytorchlite." + self.name

    def __reduce__(self):
        return (_by_name, (self.name,))


def _by_name(name):
    return _BY_NAME[name]


def _declared(name, category, rank, np_dtype, torch_name):
    """A dtype with the code and itemsize the kernels use (codegen/abi.py, generated/abi.py)."""
    code, itemsize, _suffix = _abi.DTYPES[name]
    return dtype(name, code, itemsize, category, rank, np_dtype, torch_name)


bool = _declared("bool", 0, 0, np.dtype(np.bool_), "Bool")
uint8 = _declared("uint8", 1, 0, np.dtype(np.uint8), "Byte")
int8 = _declared("int8", 1, 1, np.dtype(np.int8), "Char")
int16 = _declared("int16", 1, 2, np.dtype(np.int16), "Short")
int32 = _declared("int32", 1, 3, np.dtype(np.int32), "Int")
int64 = _declared("int64", 1, 4, np.dtype(np.int64), "Long")
float16 = _declared("float16", 2, 0, np.dtype(np.float16), "Half")
bfloat16 = _declared("bfloat16", 2, 0, None, "BFloat16")
float32 = _declared("float32", 2, 1, np.dtype(np.float32), "Float")
float64 = _declared("float64", 2, 2, np.dtype(np.float64), "Double")

half, float, double = float16, float32, float64
short, int, long = int16, int32, int64

ALL_DTYPES = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
BY_CODE = tuple(sorted(ALL_DTYPES, key=lambda d: d.code))   # BY_CODE[code] is that dtype
_BY_NAME = {d.name: d for d in ALL_DTYPES}
FLOATING = (float16, bfloat16, float32, float64)
INTEGRAL = (uint8, int8, int16, int32, int64)

_FROM_NUMPY = {d.np_dtype: d for d in ALL_DTYPES if d.np_dtype is not None}


def from_numpy_dtype(npdt):
    """The pytorchlite dtype of a NumPy dtype, or None when there is none."""
    return _FROM_NUMPY.get(np.dtype(npdt))


def _promote(a, b):
    if a is b:
        return a
    if a._category != b._category:
        return a if a._category > b._category else b
    if a._category == 1:
        # uint8 with a signed type: the smallest signed type holding both ranges.
        if a is uint8 or b is uint8:
            other = b if a is uint8 else a
            return int16 if other is int8 else other
        return a if a._rank > b._rank else b
    # floating: float16 and bfloat16 meet in float32.
    if a._rank == b._rank:
        return float32
    return a if a._rank > b._rank else b


_PROMOTE_TABLE = {(a, b): _promote(a, b) for a in ALL_DTYPES for b in ALL_DTYPES}


def promote_types(type1, type2):
    """The smallest dtype to which both dtypes can be cast without losing category.

    >>> import pytorchlite
    >>> pytorchlite.promote_types(pytorchlite.uint8, pytorchlite.int8)
    pytorchlite.int16
    """
    _check_dtype("promote_types", "type1", type1)
    _check_dtype("promote_types", "type2", type2)
    return _PROMOTE_TABLE[(type1, type2)]


def can_cast(from_, to):
    """Whether a cast from `from_` to `to` is allowed by PyTorch's casting rules.

    A cast may not move to a lower category (float to int, int to bool).

    >>> import pytorchlite
    >>> pytorchlite.can_cast(pytorchlite.float32, pytorchlite.int32)
    False
    """
    _check_dtype("can_cast", "from_", from_)
    _check_dtype("can_cast", "to", to)
    return from_._category <= to._category


def _check_dtype(op, arg, value):
    if not isinstance(value, dtype):
        raise TypeError(f"{op}(): argument '{arg}' must be pytorchlite.dtype, "
                        f"not {type(value).__name__}")


# --- default dtype (process-wide, as in PyTorch) -------------------------------------

_default = [float32]
_default_lock = threading.Lock()


def get_default_dtype():
    """The dtype that float factories and Python floats default to (float32 at start)."""
    return _default[0]


def set_default_dtype(d):
    """Set the default floating point dtype; only float32 and float64 (and the 16-bit
    floats) are accepted, as in PyTorch."""
    if not isinstance(d, dtype):
        raise TypeError("invalid dtype object: only floating-point types are supported as the default type")
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    with _default_lock:
        _default[0] = d


# --- finfo / iinfo --------------------------------------------------------------------

class finfo:
    """Machine limits of a floating point dtype (PyTorch's fields and values)."""

    _DATA = {
        "float16": (16, 0.0009765625, 65504.0, 6.103515625e-05, 5.960464477539063e-08, 0.001),
        "bfloat16": (16, 0.0078125, 3.3895313892515355e+38, 1.1754943508222875e-38,
                     9.183549615799121e-41, 0.01),
        "float32": (32, _builtin_float(np.finfo(np.float32).eps), _builtin_float(np.finfo(np.float32).max),
                    _builtin_float(np.finfo(np.float32).tiny),
                    _builtin_float(np.finfo(np.float32).smallest_subnormal), 1e-06),
        "float64": (64, _builtin_float(np.finfo(np.float64).eps), _builtin_float(np.finfo(np.float64).max),
                    _builtin_float(np.finfo(np.float64).tiny),
                    _builtin_float(np.finfo(np.float64).smallest_subnormal), 1e-15),
    }

    def __init__(self, type=None):
        if type is None:
            type = get_default_dtype()
        if not isinstance(type, dtype) or not type.is_floating_point:
            raise TypeError(f"finfo(): argument 'type' must be a floating point dtype, got {type}")
        bits, eps, mx, tiny, sub, res = self._DATA[type.name]
        self.dtype = type.name
        self.bits = bits
        self.eps = eps
        self.max = mx
        self.min = -mx
        self.tiny = tiny
        self.smallest_normal = tiny
        self.smallest_subnormal = sub
        self.resolution = res

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """Limits of an integer (or bool) dtype."""

    def __init__(self, type):
        if not isinstance(type, dtype) or type.is_floating_point:
            raise TypeError(f"iinfo(): argument 'type' must be an integer dtype, got {type}")
        if type is bool:
            self.bits, self.min, self.max = 8, 0, 1
        else:
            info = np.iinfo(type.np_dtype)
            self.bits, self.min, self.max = info.bits, _builtin_int(info.min), _builtin_int(info.max)
        self.dtype = type.name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
