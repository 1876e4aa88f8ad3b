"""The CUDA backend in the device registry (pytorchlite/_backends.py).

Core modules never import pytorchlite.cuda: when this package is imported (the package
facade does so), it registers the object below, and core code reaches the caching
allocator, copies, the generated pointwise kernels and stream bookkeeping through it.
Every hook initialises CUDA lazily, so the first one used where CUDA cannot run raises
the RuntimeError that says why.
"""

from pytorchlite import _backends


class CudaBackend(_backends.Backend):
    type = "cuda"

    def lazy_init(self):
        from pytorchlite.cuda import _runtime
        _runtime._lazy_init()

    def is_available(self):
        from pytorchlite.cuda import _runtime
        return _runtime.is_available()

    def current_device(self):
        from pytorchlite._device import device
        from pytorchlite.cuda import _runtime
        return device("cuda", _runtime.current_device())

    def allocate(self, nbytes, device):
        from pytorchlite import cuda
        return cuda._allocate_storage(nbytes, device)

    def copy(self, dst, src, non_blocking=False):
        from pytorchlite import cuda
        return cuda._copy(dst, src, non_blocking)

    def fill(self, t, value):
        self.lazy_init()
        from pytorchlite.cuda import _pointwise
        return _pointwise.fill(t, value)

    def pointwise(self, op, entry, operands, scalars, out, inplace, common, out_dt, device):
        # `entry` is ops.yaml's generated kernel for CUDA, ptl_cu_<op> (suffixed per dtype
        # and index width by the launcher)
        from pytorchlite import cuda
        return cuda._run_pointwise(op, operands, scalars, out, inplace, common, out_dt, device)

    def reduce(self, code, op, x, dims, keepdim, out_dtype, arg=0.0, aux_dtype=None, aux_in=None):
        # ops.yaml's `- reduction:` declarations, as CUDA kernels (generated/reduce.cu)
        self.lazy_init()
        from pytorchlite.cuda import _reduce
        return _reduce.run(code, x, dims, keepdim, out_dtype, arg, aux_dtype, aux_in, op=op)

    def convolution(self, which, geometry, a, b, bias, out):
        # im2col / col2im around cuBLAS GEMMs
        self.lazy_init()
        from pytorchlite.cuda import _conv
        _conv.core(which, geometry, a, b, bias, out)

    def record_stream(self, tensor, stream):
        from pytorchlite import cuda
        cuda._record_stream(tensor, stream)

    def dlpack_sync(self, tensor, stream):
        from pytorchlite import cuda
        cuda._dlpack_sync(tensor, stream)

    def dlpack_device_type(self):
        return 2   # kDLCUDA

    def dlpack_consumer_stream(self, index):
        # DLPack: 1 is the legacy default stream (0 is ambiguous and not allowed)
        from pytorchlite.cuda import _runtime
        self.lazy_init()
        handle = int(_runtime.current_stream_handle(index))
        return 1 if handle == 0 else handle

    def pinned_memory_available(self):
        return self.is_available()


_backends.register(CudaBackend())
