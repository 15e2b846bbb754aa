"""lantern.optim: Optimizer, the optimizers and lr_scheduler (torch.optim)."""
from . import lr_scheduler  # noqa: F401
from . import optimizer, sgd, adam, adamw, rmsprop, adagrad, adadelta, adamax, nadam, radam, lbfgs, sparse_adam

__all__ = []
for _family in (optimizer, sgd, adam, adamw, rmsprop, adagrad, adadelta, adamax, nadam, radam, lbfgs, sparse_adam):
    # the functional forms (sgd.sgd, adam.adam, ...) stay in their modules, whose names they share, as in torch
    _names = [name for name in _family.__all__ if name != _family.__name__.rpartition(".")[2]]
    globals().update({name: getattr(_family, name) for name in _names})
    __all__ += _names
