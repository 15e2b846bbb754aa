"""PairwiseDistance and CosineSimilarity (torch.nn.modules.distance); both have no parameters and an empty repr.

>>> import lantern
>>> a, b = lantern.tensor([[3., 0.]]), lantern.tensor([[0., 4.]])
>>> lantern.nn.PairwiseDistance(eps=0.0)(a, b).tolist(), lantern.nn.CosineSimilarity()(a, b).tolist()
([5.0], [0.0])
"""
from .. import functional as F
from .module import Module

__all__ = ["PairwiseDistance", "CosineSimilarity"]


class PairwiseDistance(Module):
    """The p-norm of x1 - x2 + eps over the last dim."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """x1·x2 / max(‖x1‖·‖x2‖, eps) along dim."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
