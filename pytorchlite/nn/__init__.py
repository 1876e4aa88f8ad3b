"""pytorchlite.nn: modules, parameters, initialisers and the functional API, built on the
public pytorchlite operators as user code would be."""

from pytorchlite.nn import functional, init  # noqa: F401
from pytorchlite.nn.layers import (  # noqa: F401
    CrossEntropyLoss, Dropout, Flatten, GELU, Identity, L1Loss, Linear, LogSoftmax, ModuleList,
    MSELoss, NLLLoss, ReLU, Sequential, Sigmoid, SiLU, Softmax, Tanh,
)
from pytorchlite.nn.module import Module  # noqa: F401
from pytorchlite.nn.parameter import Parameter  # noqa: F401
