"""What C (CPU and CUDA) and Python must agree on, declared once: the dtype codes, the
status codes kernels return and the exception each becomes, the dimension limit of a
descriptor, and the descriptor structs. Codegen writes generated/ptl_abi.h (included by
kernels/ptl_common.h, so the C kernels, NVRTC's CUDA kernels and cffi's declarations
see it) and generated/abi.py (read by pytorchlite/_dtype.py, pytorchlite/_C.py, the CUDA
launcher and codegen/build.py). Nothing else spells these numbers.
"""

# the descriptor's dimension limit (ptl_tensor.sizes / strides)
MAX_DIMS = 64

# (name, C enum constant, itemsize, C storage type, kernel suffix), in code order: the
# code of a dtype is its position
DTYPES = (
    ("bool", "PTL_BOOL", 1, "uint8_t", "b8"),
    ("uint8", "PTL_U8", 1, "uint8_t", "u8"),
    ("int8", "PTL_I8", 1, "int8_t", "i8"),
    ("int16", "PTL_I16", 2, "int16_t", "i16"),
    ("int32", "PTL_I32", 4, "int32_t", "i32"),
    ("int64", "PTL_I64", 8, "int64_t", "i64"),
    ("float16", "PTL_F16", 2, "uint16_t", "f16"),
    ("bfloat16", "PTL_BF16", 2, "uint16_t", "bf16"),
    ("float32", "PTL_F32", 4, "float", "f32"),
    ("float64", "PTL_F64", 8, "double", "f64"),
)

# (C enum constant, Python exception, message), in code order; code 0 is success. The
# message follows "<op>(): " in the error (pytorchlite/_C.py: check).
STATUS = (
    ("PTL_OK", None, None),
    ("PTL_ERR_DTYPE", "RuntimeError", "dtype not supported by the kernel"),
    ("PTL_ERR_NDIM", "RuntimeError", "too many dimensions"),
    ("PTL_ERR_ZERO_DIV", "ZeroDivisionError", "ZeroDivisionError"),
    ("PTL_ERR_ALLOC", "MemoryError", "out of memory"),
    ("PTL_ERR_INDEX", "IndexError", "index out of range"),
    ("PTL_ERR_ARG", "RuntimeError", "invalid argument"),
)

# the structs every kernel and cffi see, field by field (C type, name)
STRUCTS = (
    ("ptl_scalar", "A Python scalar as a kernel argument: both views, so integer kernels never go\n"
                   " * through double (int64 values above 2^53 stay exact).",
     (("double", "d"), ("int64_t", "i"))),
    ("ptl_tensor", "What a kernel sees of a tensor: the address of its first element (storage\n"
                   " * offset applied), dtype code, ndim, and sizes and strides in elements.",
     (("void *", "data"), ("int32_t", "dtype"), ("int32_t", "ndim"),
      ("int64_t", "sizes[PTL_MAX_DIMS]"), ("int64_t", "strides[PTL_MAX_DIMS]"))),
)


def cffi_types():
    """The structs as cffi's cdef reads them (no macros there: the limit is spelled out)."""
    out = []
    for name, _doc, fields in STRUCTS:
        body = "".join(f"    {t} {f.replace('PTL_MAX_DIMS', str(MAX_DIMS))};\n" for t, f in fields)
        out.append(f"typedef struct {{\n{body}}} {name};\n")
    return "".join(out)
