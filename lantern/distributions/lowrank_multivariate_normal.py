"""LowRankMultivariateNormal (torch.distributions.lowrank_multivariate_normal): a Gaussian whose covariance is
W Wᵀ + diag(D), a rank-m factor W (n x m) plus a positive diagonal.

log_prob and entropy never form the n x n covariance: the Woodbury identity and the matrix determinant lemma reduce
them to the m x m "capacitance" matrix C = I + Wᵀ D⁻¹ W.

>>> import lantern
>>> from lantern.distributions import LowRankMultivariateNormal
>>> d = LowRankMultivariateNormal(lantern.zeros(3), lantern.ones(3, 1), lantern.ones(3))
>>> d.covariance_matrix.tolist()[0], round(d.log_prob(lantern.zeros(3)).item(), 4)
([2.0, 1.0, 1.0], -3.45)
"""
import math

import lantern
from lantern.core.size import Size

from . import constraints
from .distribution import Distribution
from .multivariate_normal import _batch_mahalanobis, _batch_mv
from .utils import _standard_normal, lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _batch_capacitance_tril(W, D):
    """The Cholesky factor of C = I + Wᵀ D⁻¹ W."""
    m = W.size(-1)
    wt_dinv = W.mT / D.unsqueeze(-2)
    capacitance = lantern.matmul(wt_dinv, W) + lantern.eye(m, dtype=W.dtype, device=W.device)
    return lantern.linalg.cholesky(capacitance)


def _batch_lowrank_logdet(W, D, capacitance_tril):
    """log det(W Wᵀ + D) = log det C + log det D (the matrix determinant lemma)."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def _batch_lowrank_mahalanobis(W, D, x, capacitance_tril):
    """xᵀ (W Wᵀ + D)⁻¹ x = xᵀ D⁻¹ x - |L_C⁻¹ Wᵀ D⁻¹ x|² (the Woodbury identity)."""
    wt_dinv = W.mT / D.unsqueeze(-2)
    wt_dinv_x = _batch_mv(wt_dinv, x)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, wt_dinv_x)


class LowRankMultivariateNormal(Distribution):
    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if cov_factor.shape[-2:-1] != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if cov_diag.shape[-1:] != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, cov_diag_ = lantern.broadcast_tensors(loc.unsqueeze(-1), cov_factor,
                                                                         cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, cov_diag "
                             f"{cov_diag.shape}") from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_parameters(LowRankMultivariateNormal, batch_shape, _instance,
                                      ("loc", "cov_diag", "cov_factor"))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        return new

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag).expand(
            self._batch_shape + self._event_shape)

    @lazy_property
    def scale_tril(self):
        """D^½ cholesky(I + D^-½ W Wᵀ D^-½), the Cholesky factor of the covariance."""
        n = self._event_shape[0]
        diag_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        dinvsqrt_w = self._unbroadcasted_cov_factor / diag_sqrt
        k = lantern.matmul(dinvsqrt_w, dinvsqrt_w.mT) + lantern.eye(n, dtype=diag_sqrt.dtype, device=diag_sqrt.device)
        scale_tril = diag_sqrt * lantern.linalg.cholesky(k)
        return scale_tril.expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        w = self._unbroadcasted_cov_factor
        covariance = lantern.matmul(w, w.mT) + lantern.diag_embed(self._unbroadcasted_cov_diag)
        return covariance.expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        """D⁻¹ - D⁻¹ W C⁻¹ Wᵀ D⁻¹ (the Woodbury identity)."""
        wt_dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        a = lantern.linalg.solve_triangular(self._capacitance_tril, wt_dinv, upper=False)
        precision = lantern.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - a.mT @ a
        return precision.expand(self._batch_shape + self._event_shape + self._event_shape)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        w_shape = shape[:-1] + self.cov_factor.shape[-1:]
        eps_w = _standard_normal(w_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_d = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_w)
                + self._unbroadcasted_cov_diag.sqrt() * eps_d)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        mahalanobis = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                                 value - self.loc, self._capacitance_tril)
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                        self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det + mahalanobis)

    def entropy(self):
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                        self._capacitance_tril)
        entropy = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        return entropy if len(self._batch_shape) == 0 else entropy.expand(self._batch_shape)
