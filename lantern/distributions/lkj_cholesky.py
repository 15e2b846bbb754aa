"""LKJCholesky (torch.distributions.lkj_cholesky): the LKJ distribution over correlation matrices, by their lower
Cholesky factors, density ∝ det(L Lᵀ)^(concentration - 1) (uniform over correlation matrices at 1).

Sampling is the onion method (Lewandowski, Kurowicka and Joe 2009, section 3.2): row i of L is a uniform direction
on the sphere scaled by the square root of a Beta draw, its diagonal entry making the row unit length.

>>> import lantern
>>> from lantern.distributions import LKJCholesky
>>> d = LKJCholesky(3, lantern.tensor(2.0))
>>> L = d.sample()
>>> L.shape, lantern.allclose((L * L).sum(-1), lantern.ones(3))
(lantern.Size([3, 3]), True)
"""
import math

import lantern
from lantern.core.size import Size

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        # the Beta marginals of the onion method: row i's squared length (without its diagonal) ~ Beta(i/2, ...)
        marginal_concentration = self.concentration + 0.5 * (self.dim - 2)
        offset = lantern.arange(self.dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = lantern.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(offset + 0.5, marginal_concentration.unsqueeze(-1) - 0.5 * offset)
        super().__init__(self.concentration.size(), Size((dim, dim)), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=Size()):
        y = self._beta.sample(sample_shape).unsqueeze(-1)
        u_normal = lantern.randn(self._extended_shape(sample_shape), dtype=y.dtype, device=y.device).tril(-1)
        u_hypersphere = u_normal / u_normal.norm(dim=-1, keepdim=True)
        u_hypersphere[..., 0, :].fill_(0.0)  # the first row is (1, 0, ..., 0)
        w = lantern.sqrt(y) * u_hypersphere
        diag_elems = lantern.clamp(1 - lantern.sum(w ** 2, dim=-1), min=lantern.finfo(w.dtype).tiny).sqrt()
        return w + lantern.diag_embed(diag_elems)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = lantern.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = lantern.sum(order * diag_elems.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalize_term = (0.5 * dm1 * math.log(math.pi) + lantern.mvlgamma(alpha - 0.5, dm1)
                          - lantern.lgamma(alpha) * dm1)
        return unnormalized_log_pdf - normalize_term
