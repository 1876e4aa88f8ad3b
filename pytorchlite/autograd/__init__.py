"""pytorchlite.autograd: reverse-mode automatic differentiation, as in PyTorch.

Operators record a graph of backward nodes (generated from derivatives.yaml) when grad
mode is on and an input requires grad; `backward()` / `grad()` run it (engine.py).

    >>> x = pytorchlite.tensor([2.], requires_grad=True)
    >>> (x ** 3).backward()                                # doctest: +SKIP
    >>> x.grad                                             # doctest: +SKIP
    tensor([12.])

Forward mode: `forward_ad` (dual_level, make_dual, unpack_dual), with the jvp formulas
of derivatives.yaml.

Modules: grad_mode (no_grad, enable_grad, set_grad_enabled, inference_mode), graph
(Node, AccumulateGrad, SavedVariable), engine (backward, grad), function
(autograd.Function), gradcheck, anomaly_mode.
"""

from pytorchlite.autograd import grad_mode, graph  # noqa: F401
from pytorchlite.autograd.grad_mode import (  # noqa: F401
    no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled, is_inference_mode_enabled,
)
from pytorchlite.autograd.engine import backward, grad  # noqa: F401
from pytorchlite.autograd.function import Function, FunctionCtx, once_differentiable  # noqa: F401
from pytorchlite.autograd.gradcheck import gradcheck, gradgradcheck, GradcheckError  # noqa: F401
from pytorchlite.autograd.anomaly_mode import (  # noqa: F401
    detect_anomaly, set_detect_anomaly, is_anomaly_enabled, is_anomaly_check_nan_enabled,
)
from pytorchlite.autograd import function  # noqa: F401
from pytorchlite.autograd import forward_ad  # noqa: F401

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "Function", "gradcheck", "gradgradcheck", "detect_anomaly", "set_detect_anomaly"]
