"""pytorchlite: a PyTorch-style deep-learning framework whose operators are declared in
ops.yaml and code-generated (see README.md and docs/architecture.md).

    >>> import pytorchlite as torch
    >>> torch.tensor([1., 2.]) + 1
    tensor([2., 3.])
"""

import importlib.util as _util
import os as _os
import sys as _sys

__version__ = "0.1.0"


def _locate_generated():
    """`pytorchlite.generated` is installed as a subpackage. Running from a source tree
    (PYTHONPATH=checkout, or an editable install), it is the checkout's top-level
    generated/ folder, registered under that name. The checkout beside this file wins over
    whatever an import finder would resolve: an editable install's finder maps the name to
    the tree it was installed from, which is wrong for a copy of that tree."""
    name = __name__ + ".generated"
    if name in _sys.modules:
        return
    here = _os.path.dirname(_os.path.abspath(__file__))
    tree = _os.path.dirname(here)
    src = _os.path.join(tree, "generated")
    init = _os.path.join(src, "__init__.py")
    in_checkout = _os.path.exists(_os.path.join(tree, "ops.yaml"))
    if not in_checkout and _util.find_spec(name) is not None:
        return
    if not _os.path.exists(init):
        raise ImportError("pytorchlite.generated is missing: run `python -m codegen` (or `pip install -e .`) "
                          "in the source tree")
    spec = _util.spec_from_file_location(name, init, submodule_search_locations=[src])
    mod = _util.module_from_spec(spec)
    _sys.modules[name] = mod
    spec.loader.exec_module(mod)
    globals()["generated"] = mod


_locate_generated()

from pytorchlite import _dtype  # noqa: E402
from pytorchlite._dtype import (  # noqa: E402,F401
    dtype, bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
    half, float, double, short, int, long, get_default_dtype, set_default_dtype,
    promote_types, can_cast, finfo, iinfo,
)
from pytorchlite._device import device  # noqa: E402,F401
from pytorchlite._memory_format import memory_format, contiguous_format, preserve_format  # noqa: E402,F401
from pytorchlite._tensor import Tensor, Size  # noqa: E402,F401
from pytorchlite.generated import functions as _functions  # noqa: E402

for _name, _fn in _functions.EXPORTS.get("", {}).items():
    globals()[_name] = _fn
del _name, _fn

from pytorchlite._functional import einsum, tensordot  # noqa: E402,F401  (torch.functional's forms)

from pytorchlite._promotion import result_type  # noqa: E402,F401
from pytorchlite._creation import tensor, as_tensor, from_numpy, scalar_tensor  # noqa: E402,F401
from pytorchlite._interop import from_dlpack  # noqa: E402,F401
from pytorchlite._threads import get_num_threads, set_num_threads  # noqa: E402,F401
from pytorchlite.random import (  # noqa: E402,F401
    Generator, default_generator, manual_seed, seed, initial_seed, get_rng_state, set_rng_state)
from pytorchlite._tensor_str import set_printoptions, get_printoptions  # noqa: E402,F401
from pytorchlite import autograd  # noqa: E402,F401
from pytorchlite.autograd.grad_mode import (  # noqa: E402,F401
    no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled, is_inference_mode_enabled,
)
from pytorchlite import linalg  # noqa: E402,F401
from pytorchlite import nn  # noqa: E402,F401
from pytorchlite import profiler  # noqa: E402,F401
from pytorchlite import optim  # noqa: E402,F401
from pytorchlite import return_types  # noqa: E402,F401
from pytorchlite import memory  # noqa: E402,F401
from pytorchlite import cuda  # noqa: E402,F401
from pytorchlite import backends  # noqa: E402,F401
from pytorchlite.serialization import save, load  # noqa: E402,F401
from pytorchlite import utils  # noqa: E402,F401
from pytorchlite import jit  # noqa: E402,F401
from pytorchlite.jit import compile  # noqa: E402,F401  (torch.compile's place)
from pytorchlite import onnx  # noqa: E402,F401
from pytorchlite import multiprocessing  # noqa: E402,F401  (registers the tensor reducers)
from pytorchlite import distributed  # noqa: E402,F401
from pytorchlite._core import broadcast_shapes as _bs


def is_tensor(obj):
    """Whether obj is a pytorchlite Tensor."""
    return isinstance(obj, Tensor)


def numel(input):
    """The number of elements of a tensor."""
    return input.numel()


def is_floating_point(input):
    return input.is_floating_point()


def broadcast_shapes(*shapes):
    """The shape that broadcasting the given shapes produces (PyTorch's error on mismatch)."""
    return Size(_bs("broadcast_shapes", [tuple(s) if not isinstance(s, type(1)) else (s,) for s in shapes]))
