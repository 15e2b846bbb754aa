"""FisherSnedecor (torch.distributions.fishersnedecor): the F distribution, a ratio of scaled chi-squares.

>>> import lantern
>>> from lantern.distributions import FisherSnedecor
>>> d = FisherSnedecor(lantern.tensor(4.0), lantern.tensor(6.0))
>>> round(d.log_prob(lantern.tensor(1.0)).item(), 4), d.mean.item()
(-0.8802, 1.5)
"""
import lantern
from lantern.core.size import Size

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(self.df1.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_parameters(FisherSnedecor, batch_shape, _instance, ("df1", "df2"))
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        return new

    @property
    def mean(self):
        df2 = self.df2.masked_fill(self.df2 <= 2, float("nan"))
        return df2 / (df2 - 2)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return mode.masked_fill(self.df1 <= 2, float("nan"))

    @property
    def variance(self):
        df2 = self.df2.masked_fill(self.df2 <= 4, float("nan"))
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape=Size(())):
        shape = self._extended_shape(sample_shape)
        x1 = self._gamma1.rsample(sample_shape).view(shape)
        x2 = self._gamma2.rsample(sample_shape).view(shape)
        tiny = lantern.finfo(x2.dtype).tiny
        y = x1 / x2.clamp(min=tiny)
        return y.clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1, ct2 = self.df1 * 0.5, self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * lantern.log(value)
        t3 = (ct1 + ct2) * lantern.log1p(ct3 * value)
        return t1 + t2 - t3
