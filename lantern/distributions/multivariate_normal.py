"""MultivariateNormal (torch.distributions.multivariate_normal): the Gaussian on vectors, given by exactly one of
covariance_matrix, precision_matrix or scale_tril (its lower Cholesky factor L, with Σ = L Lᵀ).

Everything is computed from L: a draw is loc + L ε, the log density needs the Mahalanobis term |L⁻¹(x - loc)|²
(a triangular solve) and log det Σ = 2 Σ log diag(L).

>>> import lantern
>>> from lantern.distributions import MultivariateNormal
>>> d = MultivariateNormal(lantern.zeros(2), covariance_matrix=lantern.eye(2))
>>> round(d.log_prob(lantern.zeros(2)).item(), 4), d.event_shape
(-1.8379, lantern.Size([2]))
"""
import math

import lantern
from lantern.core.size import Size

from . import constraints
from .distribution import Distribution
from .utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat, bvec):
    """Matrix-vector products over broadcast batch dims."""
    return lantern.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """|L⁻¹ x|² for lower-triangular L (batch of n x n) and x (batch of n), the batch dims broadcast."""
    batch = lantern.broadcast_shapes(bL.shape[:-2], bx.shape[:-1])
    n = bx.size(-1)
    solved = lantern.linalg.solve_triangular(bL.expand(batch + (n, n)), bx.expand(batch + (n,)).unsqueeze(-1),
                                             upper=False)
    return solved.squeeze(-1).pow(2).sum(-1)


def _precision_to_scale_tril(precision):
    """The lower Cholesky factor of P⁻¹ without inverting P: flip P, factor it, flip back and invert a triangle."""
    flipped_factor = lantern.linalg.cholesky(lantern.flip(precision, (-2, -1)))
    inverse_factor = lantern.transpose(lantern.flip(flipped_factor, (-2, -1)), -2, -1)
    identity = lantern.eye(precision.shape[-1], dtype=precision.dtype, device=precision.device)
    return lantern.linalg.solve_triangular(inverse_factor, identity, upper=False)


class MultivariateNormal(Distribution):
    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        given_name, given = next((name, m) for name, m in (("scale_tril", scale_tril),
                                                           ("covariance_matrix", covariance_matrix),
                                                           ("precision_matrix", precision_matrix)) if m is not None)
        if given.dim() < 2:
            what = "scale_tril matrix" if given_name == "scale_tril" else given_name
            raise ValueError(f"{what} must be at least two-dimensional, with optional leading batch dimensions")
        batch_shape = lantern.broadcast_shapes(given.shape[:-2], loc.shape[:-1])
        setattr(self, given_name, given.expand(batch_shape + (-1, -1)))
        self.loc = loc.expand(batch_shape + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = lantern.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_parameters(MultivariateNormal, batch_shape, _instance,
                                      ("loc", "covariance_matrix", "scale_tril", "precision_matrix"))
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        factor = self._unbroadcasted_scale_tril
        return lantern.matmul(factor, factor.mT).expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        factor = self._unbroadcasted_scale_tril
        identity = lantern.eye(factor.shape[-1], dtype=factor.dtype, device=factor.device)
        inverse_factor = lantern.linalg.solve_triangular(factor, identity, upper=False)
        precision = lantern.matmul(inverse_factor.mT, inverse_factor)
        return precision.expand(self._batch_shape + self._event_shape + self._event_shape)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        mahalanobis = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + mahalanobis) - half_log_det

    def entropy(self):
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        entropy = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        return entropy if len(self._batch_shape) == 0 else entropy.expand(self._batch_shape)
