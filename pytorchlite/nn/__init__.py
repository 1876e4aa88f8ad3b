"""pytorchlite.nn: modules, parameters, initialisers and the functional API, built on the
public pytorchlite operators as user code would be."""

from pytorchlite.nn import functional, init  # noqa: F401
from pytorchlite.nn import utils  # noqa: F401
from pytorchlite.nn.conv import (  # noqa: F401
    AdaptiveAvgPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, Conv1d, Conv2d, ConvTranspose2d, Embedding, GroupNorm,
    LayerNorm, MaxPool2d,
)
from pytorchlite.nn.layers import (  # noqa: F401
    CrossEntropyLoss, Dropout, Flatten, GELU, Identity, L1Loss, Linear, LogSoftmax, ModuleList,
    MSELoss, NLLLoss, ReLU, Sequential, Sigmoid, SiLU, Softmax, Tanh,
)
from pytorchlite.nn.module import Module  # noqa: F401
from pytorchlite.nn.parameter import Parameter  # noqa: F401
