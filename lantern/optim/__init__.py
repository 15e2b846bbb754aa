"""lantern.optim: Optimizer, the optimizers, lr_scheduler and swa_utils (torch.optim)."""
from . import lr_scheduler, swa_utils  # noqa: F401
from . import (optimizer, sgd, adam, adamw, rmsprop, adagrad, adadelta, adamax, nadam, radam, lbfgs, sparse_adam,
               asgd, rprop, _adafactor, _muon, _stateless)

__all__ = ["lr_scheduler", "swa_utils"]
for _family in (optimizer, sgd, adam, adamw, rmsprop, adagrad, adadelta, adamax, nadam, radam, lbfgs, sparse_adam,
                asgd, rprop, _adafactor, _muon, _stateless):
    # the functional forms (sgd.sgd, adam.adam, _adafactor.adafactor, ...) stay in their modules, whose names they
    # share, as in torch
    _names = [name for name in _family.__all__ if name != _family.__name__.rpartition(".")[2].lstrip("_")]
    globals().update({name: getattr(_family, name) for name in _names})
    __all__ += _names
