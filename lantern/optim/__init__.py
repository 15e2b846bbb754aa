"""lantern.optim: Optimizer, the optimizers and lr_scheduler (torch.optim)."""
from . import lr_scheduler  # noqa: F401
from . import optimizer, sgd, adam, adamw, rmsprop, adagrad, adadelta, adamax, nadam, radam, lbfgs

__all__ = []
for _family in (optimizer, sgd, adam, adamw, rmsprop, adagrad, adadelta, adamax, nadam, radam, lbfgs):
    globals().update({name: getattr(_family, name) for name in _family.__all__})
    __all__ += _family.__all__
