"""pytorchlite.optim: optimizers and learning-rate schedulers written on the public API."""

from pytorchlite.optim.optimizer import Optimizer  # noqa: F401
from pytorchlite.optim.sgd_adam import SGD, Adam, AdamW  # noqa: F401
from pytorchlite.optim.rmsprop_adagrad import RMSprop, Adagrad  # noqa: F401
from pytorchlite.optim import lr_scheduler  # noqa: F401
