"""Chi2 (torch.distributions.chi2): the sum of df squared standard normals, Gamma(df / 2, 1 / 2).

>>> import lantern
>>> from lantern.distributions import Chi2
>>> d = Chi2(lantern.tensor(4.0))
>>> d.mean.item(), d.variance.item(), d.df.item()
(4.0, 8.0, 4.0)
"""
from . import constraints
from .gamma import Gamma

__all__ = ["Chi2"]


class Chi2(Gamma):
    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, self._get_checked_instance(Chi2, _instance))

    @property
    def df(self):
        return self.concentration * 2
