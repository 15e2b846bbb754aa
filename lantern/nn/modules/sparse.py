"""Embedding and EmbeddingBag (torch.nn.modules.sparse): lookup tables of num_embeddings rows.

weight (num_embeddings, embedding_dim) is drawn from N(0, 1), with the padding_idx row zeroed (a negative
padding_idx counts from the end and is stored normalised). from_pretrained wraps a given matrix, frozen by default.
With sparse=True the weight's gradient is a sparse COO tensor, one entry per looked-up row (lantern.ops.sparse_coo),
which SGD, Adagrad and SparseAdam take.

>>> import lantern
>>> emb = lantern.nn.Embedding(10, 3, padding_idx=-1)
>>> emb, emb.padding_idx, emb.weight[9].tolist()
(Embedding(10, 3, padding_idx=9), 9, [0.0, 0.0, 0.0])
>>> bag = lantern.nn.EmbeddingBag.from_pretrained(lantern.eye(3), mode="sum")
>>> bag, bag.weight.requires_grad
(EmbeddingBag(3, 3, mode='sum'), False)
>>> bag(lantern.tensor([0, 2, 1]), lantern.tensor([0, 2])).tolist()
[[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
"""
from ... import _functions as _fns
from ...autograd.grad_mode import no_grad
from .. import functional as F, init
from ..parameter import Parameter
from .module import Module

__all__ = ["Embedding", "EmbeddingBag"]


def _padding_index(padding_idx, num_embeddings, word):
    """padding_idx checked against the table, negative values counted from the end."""
    if padding_idx is None:
        return None
    if padding_idx >= num_embeddings or padding_idx < -num_embeddings:
        raise AssertionError(f"{word} must be within num_embeddings")
    return padding_idx + num_embeddings if padding_idx < 0 else padding_idx


def _table(module, weight, num_embeddings, embedding_dim, requires_grad, device, dtype):
    """The weight Parameter: a fresh N(0, 1) table, or the given one after checking its shape."""
    if weight is None:
        module.weight = Parameter(_fns.empty((num_embeddings, embedding_dim), device=device, dtype=dtype),
                                  requires_grad=requires_grad)
        module.reset_parameters()
    else:
        if list(weight.shape) != [num_embeddings, embedding_dim]:
            raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
        module.weight = Parameter(weight, requires_grad=requires_grad)


class _Lookup(Module):
    def reset_parameters(self):
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self):
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def _repr_options(self, fmt):
        s = ""
        if self.max_norm is not None:
            s += f", max_norm={fmt(self.max_norm)}"
        if self.norm_type != 2:
            s += f", norm_type={fmt(self.norm_type)}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={fmt(self.scale_grad_by_freq)}"
        return s


class Embedding(_Lookup):
    """weight[input]: one embedding_dim row per index; padding_idx's row gets no gradient."""

    __constants__ = ["num_embeddings", "embedding_dim", "padding_idx", "max_norm", "norm_type",
                     "scale_grad_by_freq", "sparse"]

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = _padding_index(padding_idx, num_embeddings, "Padding_idx")
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        _table(self, _weight, num_embeddings, embedding_dim, not _freeze, device, dtype)
        self.sparse = sparse

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s + self._repr_options(str)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, sparse=False):
        """An Embedding over the given 2-D matrix (shared, not copied); freeze=True stops its gradient."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, _freeze=freeze,
                   padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


class EmbeddingBag(_Lookup):
    """Sum, mean or max of the embeddings in each bag (a run of indices starting at an offset, or a row of 2-D
    input)."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                 mode="mean", sparse=False, _weight=None, include_last_offset=False, padding_idx=None, device=None,
                 dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self.padding_idx = _padding_index(padding_idx, num_embeddings, "padding_idx")
        _table(self, _weight, num_embeddings, embedding_dim, True, device, dtype)
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights, self.include_last_offset,
                               self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings!r}, {self.embedding_dim!r}" + self._repr_options(repr) + f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx!r}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                        mode="mean", sparse=False, include_last_offset=False, padding_idx=None):
        """An EmbeddingBag over the given 2-D matrix (shared, not copied); freeze=True stops its gradient."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, max_norm=max_norm,
                  norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
                  include_last_offset=include_last_offset, padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag
