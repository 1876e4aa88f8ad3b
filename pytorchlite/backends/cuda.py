"""`pytorchlite.backends.cuda`: how CUDA matrix products compute.

`matmul.allow_tf32` (False by default, as in PyTorch since 1.12): float32 GEMM on CUDA
may use TF32 tensor cores (10-bit mantissa products, float32 accumulation) when True;
pytorchlite/cuda/_cublas.py reads it at every call.
"""


class _MatmulSettings:
    __slots__ = ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction")

    def __init__(self):
        self.allow_tf32 = False
        # accepted for PyTorch's code; cuBLAS is always asked for float32 accumulation here
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    def __setattr__(self, name, value):
        if name not in self.__slots__:
            raise AttributeError(f"Unknown attribute {name}")
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
        object.__setattr__(self, name, value)

    def __repr__(self):
        return f"<pytorchlite.backends.cuda.matmul allow_tf32={self.allow_tf32}>"


matmul = _MatmulSettings()


def is_built():
    """Whether pytorchlite has its CUDA backend (the NVRTC-compiled kernels): always True;
    `pytorchlite.cuda.is_available()` says whether a device can run them."""
    return True
