"""pytorchlite.nn: modules, parameters, initialisers and the functional API, built on the
public pytorchlite operators as user code would be."""

from pytorchlite.nn import functional, init  # noqa: F401
from pytorchlite.nn import utils  # noqa: F401
from pytorchlite.nn.conv import (  # noqa: F401
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d, AvgPool2d, BatchNorm1d,
    BatchNorm2d, Conv1d, Conv2d, ConvTranspose2d, Embedding, GroupNorm, LayerNorm, MaxPool1d, MaxPool2d,
)
from pytorchlite.nn.layers import (  # noqa: F401
    BCELoss, BCEWithLogitsLoss, Bilinear, CosineSimilarity, CrossEntropyLoss, Dropout, Dropout1d, Dropout2d, ELU,
    Flatten, GELU, Hardsigmoid, Hardswish, Hardtanh, HuberLoss, Identity, KLDivLoss, L1Loss, LeakyReLU, Linear,
    LogSoftmax, Mish, ModuleDict, ModuleList, MSELoss, NLLLoss, PairwiseDistance, PReLU, ReLU, ReLU6, Sequential,
    Sigmoid, SiLU, SmoothL1Loss, Softmax, Softplus, Tanh, Unflatten,
)
from pytorchlite.nn.padding import (  # noqa: F401
    ConstantPad1d, ConstantPad2d, ReflectionPad1d, ReflectionPad2d, ReplicationPad1d, ReplicationPad2d, ZeroPad1d,
    ZeroPad2d,
)
from pytorchlite.nn.attention import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer  # noqa: F401
from pytorchlite.nn.module import Module  # noqa: F401
from pytorchlite.nn.parameter import Parameter  # noqa: F401
from pytorchlite.nn.rnn import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase, RNNCell, RNNCellBase  # noqa: F401
from pytorchlite.nn import parallel  # noqa: E402,F401
