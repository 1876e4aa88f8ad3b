"""The user-facing Tensor.

A tensor's data and metadata are TensorBase's (pytorchlite/_core.py, the bottom layer).
Operators are not written here: every operator method, in-place form and Python operator
(`+`, `@`, `+=`, ...) is generated from ops.yaml into TensorMethods
(generated/functions.py), which this class inherits. What lives here is what PyTorch's
Python layer adds: the protocols (__len__, __iter__, __bool__, indexing, __array__,
__dlpack__), conversions, printing and the autograd API. The class registers itself with
the bottom layer once, so every tensor the kernels make is one of these.
"""

import copy
import warnings
import weakref

import numpy as np

from pytorchlite import _backends, _core, _creation, _indexing, _interop, _serialization, _tensor_str
from pytorchlite import _intercept as _ix
from pytorchlite._argparse import wrap_dim
from pytorchlite.autograd import _views, engine, graph
from pytorchlite import _dtype as D
from pytorchlite._core import Size, TensorBase, make, empty  # noqa: F401  (Size/empty: pytorchlite.Size, kernels)
from pytorchlite._device import CPU, device as _device_cls
from pytorchlite.generated import functions as _F
from pytorchlite.generated.functions import TensorMethods


def _nest(values, shape):
    """Nested lists of `shape` holding the next values of the iterator `values`."""
    if not shape:
        return next(values)
    return [_nest(values, shape[1:]) for _ in range(shape[0])]


class Tensor(TensorBase, TensorMethods):
    """A tensor: TensorBase's metadata (pytorchlite/_core.py), the Python API below, and
    every method and Python operator generated from ops.yaml (TensorMethods)."""

    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        if cls is Tensor and not args and not kwargs:
            return empty((0,), D.get_default_dtype())
        raise TypeError("use pytorchlite.tensor(data) or a factory (zeros, empty, ...) to create tensors")

    # --- metadata ---------------------------------------------------------------------

    @property
    def shape(self):
        if _ix.on:
            _ix.read("shape", self)
        return Size(self._shape)

    def size(self, dim=None):
        if _ix.on:
            _ix.read("shape", self)
        if dim is None:
            return Size(self._shape)
        return self._shape[_wrap_dim("size", dim, len(self._shape))]

    def stride(self, dim=None):
        if dim is None:
            return self._stride
        return self._stride[_wrap_dim("stride", dim, len(self._shape))]

    def share_memory_(self):
        """Move this tensor's storage to shared memory, in place, so that processes it is
        sent to (pytorchlite.multiprocessing) see and make the same changes. The data and
        every view over the storage are kept; a no-op when already shared, and on CUDA.

        >>> t = pytorchlite.arange(4.)
        >>> v = t[1:]
        >>> t.share_memory_().is_shared(), v.is_shared(), v.tolist()
        (True, True, [1.0, 2.0, 3.0])
        """
        self._storage.share_memory_()
        return self

    def is_shared(self):
        """Whether this tensor's storage is in shared memory (CUDA tensors always are)."""
        return self._storage.is_shared()

    @property
    def is_floating_point_(self):
        return self._dtype.is_floating_point

    @property
    def data(self):
        """This tensor's memory outside autograd: changes through it are not tracked
        (it has its own version counter, as in PyTorch)."""
        return make(self._storage, self._shape, self._stride, self._offset, self._dtype, None, self._contig)

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, not {type(value).__name__}")
        self._storage, self._shape, self._stride = value._storage, value._shape, value._stride
        self._offset, self._dtype, self._device = value._offset, value._dtype, value._device
        self._contig = value._contig

    # --- conversions --------------------------------------------------------------------

    def _numpy_view(self):
        """A NumPy array over this tensor's memory (no copy); bfloat16 has no NumPy type."""
        if self._device.type != "cpu":
            raise TypeError(f"can't convert {self._device.type} device type tensor to numpy. "
                            "Use Tensor.cpu() to copy the tensor to host memory first.")
        npdt = self._dtype.np_dtype
        if npdt is None:
            raise TypeError(f"Got unsupported ScalarType {self._dtype._torch_name}")
        return np.asarray(_ArrayView(self, npdt))

    def numpy(self, *, force=False):
        if _ix.on:
            _ix.read("numpy", self)
        if force:
            return self.detach().cpu().resolve_conj()._numpy_view().copy()
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        return self._numpy_view()

    def __array__(self, dtype=None, copy=None):
        a = self.numpy() if self._dtype.np_dtype is not None else self.float().numpy()
        if dtype is not None:
            a = a.astype(dtype, copy=False)
        return a.copy() if copy else a

    def resolve_conj(self):
        return self

    def resolve_neg(self):
        return self

    def _values_f64(self):
        """The values as a NumPy array that can represent them (bfloat16 -> float32)."""
        if self._dtype is D.bfloat16:
            return self.to(D.float32).cpu()._numpy_view()
        return self.cpu()._numpy_view() if self._device.type != "cpu" else self._numpy_view()

    def tolist(self):
        if _ix.on:
            _ix.read("tolist", self)
        if len(self._shape) > 64:
            # NumPy stops at 64 dims, PyTorch does not: the values in order, then nested
            return _nest(iter(self.reshape(-1).tolist()), self._shape)
        a = self._values_f64()
        if self._dtype is D.bfloat16 or self._dtype is D.float16:
            a = a.astype(np.float64)
        return a.tolist()

    def item(self):
        if _ix.on:
            _ix.read("item", self)
        n = self.numel()
        if n != 1:
            raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
        v = self._values_f64().reshape(()).item()
        return float(v) if self._dtype.is_floating_point else v

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self._dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __bool__(self):
        if _ix.on:
            _ix.read("bool", self)
        n = self.numel()
        if n == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        if n > 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __len__(self):
        if _ix.on:
            _ix.read("shape", self)
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(_F.unbind(self, 0))

    def __hash__(self):
        return id(self)

    def __contains__(self, element):
        if isinstance(element, (Tensor, bool, int, float)):
            return bool((self == element).any().item())
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a {type(element)}.")

    def __repr__(self, *, tensor_contents=None):
        if len(self._shape) > 64:     # more dims than NumPy takes: its values without the size-1 dims
            vals = _tensor_str.DeepValues(self.detach().reshape(-1)._values_f64(), self._shape)
        else:
            vals = self.detach()._values_f64()
        dev = None if self._device.type == "cpu" else str(self._device)
        gf = self._grad_fn
        return _tensor_str.format_tensor(
            vals, dtype_name=self._dtype.name, default_float_name=D.get_default_dtype().name,
            device=dev, requires_grad=self._requires_grad and gf is None,
            grad_fn_name=gf.name() if gf is not None else None)

    __str__ = __repr__

    def __format__(self, spec):
        if not self._shape:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __reduce_ex__(self, proto):
        return _serialization.reduce_tensor(self)

    def __copy__(self):
        # copy.copy(t) in torch rebuilds from the same storage: the copy shares the memory
        # (own version counter), keeps requires_grad as a new leaf without .grad, and
        # shares the attribute values
        new = make(self._storage, self._shape, self._stride, self._offset, self._dtype, None, self._contig)
        if self._requires_grad:
            new.requires_grad_(True)
        if self.__dict__:
            new.__dict__.update(self.__dict__)
        return new

    def __deepcopy__(self, memo):
        # torch.Tensor.__deepcopy__: leaves only; the copy gets its own memory, the same
        # requires_grad, a deep copy of .grad and of the user attributes in __dict__
        if self._grad_fn is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol "
                "at the moment.  If you were attempting to deepcopy a module, this may be because of a "
                "torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001")
        if id(self) in memo:
            return memo[id(self)]
        new = self.detach().clone()
        memo[id(self)] = new
        if self._requires_grad:
            new.requires_grad_(True)
        if self._grad is not None:
            new._grad = copy.deepcopy(self._grad, memo)
        if self.__dict__:
            new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    # --- DLPack -------------------------------------------------------------------------

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return _interop.to_dlpack(self, stream=stream, max_version=max_version,
                                  dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        return _interop.dlpack_device(self)

    # --- dtype / device conversions -----------------------------------------------------

    def to(self, *args, **kwargs):
        """to(dtype) / to(device) / to(device, dtype) / to(other); copies only when needed."""
        dtype, dev, copy, non_blocking = _parse_to(self, args, kwargs)
        if dtype is None:
            dtype = self._dtype
        if dev is None:
            dev = self._device
        elif dev.index is None and dev.type == self._device.type:
            dev = _backends.get(dev.type).current_device()   # "cuda" means the current one
        if dtype is self._dtype and dev == self._device and not copy:
            return self
        return _F._to_copy(self, dtype=dtype, device=dev, non_blocking=non_blocking)

    def type(self, dtype=None):
        if dtype is None:
            return "pytorchlite." + {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
                                     "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor",
                                     "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor",
                                     "bool": "BoolTensor"}[self._dtype.name]
        return self.to(dtype)

    def type_as(self, other):
        return self.to(other._dtype)

    def cpu(self):
        return self.to(CPU)

    def record_stream(self, stream):
        """Mark this CUDA tensor's memory as in use on `stream`, so the caching allocator
        does not hand it out again until the work queued there is done."""
        _backends.get(self._device.type).record_stream(self, stream)

    def cuda(self, device=None, non_blocking=False):
        return self.to(_device_cls("cuda", device) if isinstance(device, int) or device is None
                       else _device_cls(device), non_blocking=non_blocking)

    def float(self):
        return self.to(D.float32)

    def double(self):
        return self.to(D.float64)

    def half(self):
        return self.to(D.float16)

    def bfloat16(self):
        return self.to(D.bfloat16)

    def long(self):
        return self.to(D.int64)

    def int(self):
        return self.to(D.int32)

    def short(self):
        return self.to(D.int16)

    def char(self):
        return self.to(D.int8)

    def byte(self):
        return self.to(D.uint8)

    def bool(self):
        return self.to(D.bool)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        return _creation.tensor(data, dtype=dtype or self._dtype, device=device or self._device,
                                requires_grad=requires_grad)

    def _new_factory(name):
        def f(self, *size, dtype=None, device=None, requires_grad=False, **kw):
            if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
                size = tuple(size[0])
            fn = getattr(_F, name)
            return fn(size, **({"fill_value": kw.pop("fill_value")} if "fill_value" in kw else {}),
                      dtype=dtype or self._dtype, device=device or self._device, requires_grad=requires_grad)
        f.__name__ = "new_" + name
        return f

    new_zeros = _new_factory("zeros")
    new_ones = _new_factory("ones")
    new_empty = _new_factory("empty")

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
        return _F.full(tuple(size), fill_value, dtype=dtype or self._dtype, device=device or self._device,
                       requires_grad=requires_grad)

    del _new_factory

    # --- indexing -----------------------------------------------------------------------

    # hand-written, so they hand themselves to the interception handlers as the generated
    # bindings do (the JIT tracer records them as nodes)
    def __getitem__(self, index):
        if _ix.on and _ix.claim():
            return _ix.call(_IX_getitem, (self, index))
        return _indexing.getitem(self, index)

    def __setitem__(self, index, value):
        if _ix.on and _ix.claim():
            _ix.call(_IX_setitem, (self, index, value))
            return
        _indexing.setitem(self, index, value)

    # --- autograd (the engine is pytorchlite/autograd/) ---------------------------------

    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        """Make autograd record operations on this (leaf) tensor, or stop it."""
        if requires_grad and not self._dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if not requires_grad and self._grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use "
                               "a computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad(self):
        """The gradient accumulated by backward() (None until then; leaves only, unless
        retain_grad() was called)."""
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            if value._dtype is not self._dtype:
                raise RuntimeError("assigned grad has data of a different type")
            if value._device != self._device:
                raise RuntimeError("assigned grad has data located on a different device")
            if value._shape != self._shape:
                raise RuntimeError("assigned grad has data of a different size")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def grad_fn(self):
        """The node that created this tensor (None for leaves)."""
        if self._base is not None and self._requires_grad:
            return _views.current_grad_fn(self)
        return self._grad_fn

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def output_nr(self):
        return self._output_nr

    @property
    def _is_view(self):
        return self._base is not None

    def is_inference(self):
        return False

    def detach(self):
        """A tensor sharing this one's memory and version counter, outside the graph."""
        if _ix.on and _ix.claim():
            return _ix.call(_IX_detach, (self,))
        return make(self._storage, self._shape, self._stride, self._offset, self._dtype, self._vc, self._contig)

    def detach_(self):
        """Detach this tensor from the graph in place (it becomes a leaf)."""
        if self._base is not None and self._grad_fn is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel "
                               "(DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP "
                               "buckets, and hence detach_() cannot be called on these gradients. To fix this error, "
                               "please refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the "
                               "solution.")
        self._grad_fn = None
        self._requires_grad = False
        self._output_nr = 0
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf), weighted by `gradient`, into every leaf's .grad.

        >>> x = pytorchlite.tensor([1., 2.], requires_grad=True)
        >>> (x * x).sum().backward()
        >>> x.grad
        tensor([2., 4.])
        """
        engine.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook):
        """hook(grad) runs when the gradient for this tensor is computed; a non-None
        return value replaces it. Returns a handle with .remove()."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        fn = self.grad_fn
        if fn is None:
            m = graph.meta(self)
            if m.hooks is None:
                m.hooks = {}
            return graph._add_hook(m.hooks, hook)
        return fn._register_tensor_hook(self._output_nr, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """hook(tensor) runs after backward has accumulated into this leaf's .grad."""
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        m = graph.meta(self)
        if m.post_acc_hooks is None:
            m.post_acc_hooks = {}
        return graph._add_hook(m.post_acc_hooks, hook)

    def retain_grad(self):
        """Fill .grad for this non-leaf tensor during backward (leaves always get it)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        fn = self.grad_fn
        if fn is None:
            return
        if fn._retain is None:
            fn._retain = {}
        fn._retain[self._output_nr] = weakref.ref(self)
        graph.meta(self).retains_grad = True

    @property
    def retains_grad(self):
        m = self._ag
        return bool(m is not None and m.retains_grad and self.grad_fn is not None)

    @property
    def T(self):
        n = len(self._shape)
        if n != 2 and n != 0:
            warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
                          "deprecated and it will throw an error in a future release.", UserWarning, stacklevel=2)
        return _F.permute(self, tuple(range(n - 1, -1, -1)))

    @property
    def mT(self):
        if len(self._shape) < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                               f"Got {len(self._shape)}-D tensor.")
        return _F.transpose(self, -2, -1)

    @property
    def H(self):
        return self.T

    @property
    def mH(self):
        return self.mT


_IX_getitem = _ix.Site("__getitem__", "", "method", ("self", "index"), Tensor.__getitem__)
_IX_setitem = _ix.Site("__setitem__", "", "method", ("self", "index", "value"), Tensor.__setitem__)
_IX_detach = _ix.Site("detach", "", "method", ("self",), Tensor.detach)


def _wrap_dim(op, dim, ndim):
    if ndim == 0 and op in ("size", "stride"):
        # size()/stride() of a 0-d tensor reject every dim (other ops accept 0 and -1)
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return wrap_dim(op, dim, ndim)


class _ArrayView:
    """Exposes a tensor's memory through __array_interface__ while keeping its storage alive
    (NumPy holds this object as the array's base)."""

    __slots__ = ("__array_interface__", "_storage")

    def __init__(self, t, npdt):
        item = npdt.itemsize
        self._storage = t._storage
        self.__array_interface__ = {
            "shape": t._shape,
            "typestr": npdt.str,
            "data": (t._storage.ptr + t._offset * item, False),
            "strides": tuple(s * item for s in t._stride),
            "version": 3,
        }


def _parse_to(t, args, kwargs):
    dtype = kwargs.pop("dtype", None)
    dev = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    non_blocking = kwargs.pop("non_blocking", False)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, D.dtype):
            dtype = a
        elif isinstance(a, (str, _device_cls)) or (isinstance(a, int) and not isinstance(a, bool)):
            dev = _device_cls(a) if not isinstance(a, int) else _device_cls("cuda", a)
        elif isinstance(a, Tensor):
            dtype, dev = a._dtype, a._device
        elif isinstance(a, bool):
            non_blocking = a
        else:
            raise TypeError(f"to() received an invalid combination of arguments: got {type(a).__name__}")
    if dev is not None and not isinstance(dev, _device_cls):
        dev = _device_cls(dev)
    return dtype, dev, copy, non_blocking


_core.set_tensor_class(Tensor)
