"""pytorchlite.optim: optimizers written on the public API."""

from pytorchlite.optim.optimizer import Optimizer  # noqa: F401
from pytorchlite.optim.sgd_adam import SGD, Adam, AdamW  # noqa: F401
