"""AdaptiveLogSoftmaxWithLoss: an efficient softmax over many classes, most of them rare (torch.nn.modules.adaptive).

Classes are split by `cutoffs` into a head (the frequent classes 0..cutoffs[0]-1, plus one entry per tail cluster)
and tail clusters of rarer classes, each reached through a smaller projection (in_features / div_value**(i+1)
wide). A target in the head costs one log-softmax over the head; a target in a cluster adds the cluster's
log-softmax to the head's log-probability of that cluster.

>>> import lantern
>>> _ = lantern.manual_seed(0)
>>> asm = lantern.nn.AdaptiveLogSoftmaxWithLoss(16, 10, cutoffs=[4, 8])
>>> out = asm(lantern.randn(5, 16), lantern.tensor([0, 3, 5, 9, 7]))
>>> out.output.shape, out.loss.shape
(lantern.Size([5]), lantern.Size([]))
>>> bool(asm.log_prob(lantern.randn(2, 16)).exp().sum(dim=1).allclose(lantern.ones(2)))
True
"""
from collections import namedtuple

import lantern
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """forward(input, target) -> (output, loss): output[i] is the log-probability of target[i], loss the mean of
    -output. `log_prob(input)` gives all n_classes log-probabilities, `predict(input)` the most likely class."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None, dtype=None):
        factory = {"device": device, "dtype": dtype}
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **factory),
                                        Linear(hidden, size, bias=False, **factory)))

    def reset_parameters(self):
        """Re-initialise the head and every cluster projection as __init__ did."""
        self.head.reset_parameters()
        for to_hidden, to_cluster in self.tail:
            to_hidden.reset_parameters()
            to_cluster.reset_parameters()

    def forward(self, input_, target_):
        """The log-probability of each target (a batch of rows, or one row and a 0-d target) and their mean loss."""
        _check_shapes(input_, target_)
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        batch_size = target.size(0)
        output = input.new_zeros(batch_size)
        head_index = target.new_empty(batch_size)  # the head entry each row reads: its class, or its cluster's
        bounds = [0] + self.cutoffs
        covered = 0
        for i, (low, high) in enumerate(zip(bounds, bounds[1:])):
            in_range = (target >= low) & (target < high)
            rows = in_range.nonzero().squeeze()
            if rows.numel() == 0:
                continue
            if i == 0:
                head_index.index_copy_(0, rows, target[in_range])
            else:
                cluster_logprob = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), dim=1)
                within = (target[in_range] - low).unsqueeze(1)
                head_index.index_fill_(0, rows, self.shortlist_size + i - 1)
                output.index_copy_(0, rows, cluster_logprob.gather(1, within).squeeze(1))
            covered += rows.numel()
        if covered != batch_size:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{target.min().item()}, {target.max().item()}] were found. ")
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output += head_logprob.gather(1, head_index.unsqueeze(1)).squeeze()
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _full_log_prob(self, input, head_output):
        """log-probabilities of all classes: the head's for the shortlist, cluster + head entry for the rest."""
        out = input.new_empty((head_output.size(0), self.n_classes))
        head_logprob = F.log_softmax(head_output, dim=1)
        out[:, :self.shortlist_size] = head_logprob[:, :self.shortlist_size]
        for i, (start, stop) in enumerate(zip(self.cutoffs, self.cutoffs[1:])):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            out[:, start:stop] = cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1)
        return out

    def log_prob(self, input):
        """The (N, n_classes) log-probabilities of every class."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most likely class of each row: the head decides unless its best entry is a cluster, for whose rows
        the full distribution is computed."""
        head_output = self.head(input)
        output = lantern.argmax(head_output, dim=1)
        not_in_shortlist = output >= self.shortlist_size
        if not not_in_shortlist.any():
            return output
        if not_in_shortlist.all():
            return lantern.argmax(self._full_log_prob(input, head_output), dim=1)
        log_prob = self._full_log_prob(input[not_in_shortlist], head_output[not_in_shortlist])
        output[not_in_shortlist] = lantern.argmax(log_prob, dim=1)
        return output


def _check_shapes(input, target):
    if target.dim() == 1:
        if input.size(0) != target.size(0):
            raise RuntimeError("Input and target should have the same size in the batch dimension.")
        if input.dim() != 2:
            raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size {input.size()}")
    elif target.dim() == 0:
        if input.dim() != 1:
            raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size {input.size()}")
    else:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
