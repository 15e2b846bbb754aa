"""SparseAdam: Adam's update restricted to the rows a sparse gradient names (torch.optim.SparseAdam).

For parameters whose gradients are sparse COO tensors, as nn.Embedding(sparse=True) makes them: the moments and
the parameter change only at the gradient's positions; elsewhere they keep their values (plain Adam would decay the
moments everywhere).

>>> import lantern
>>> emb = lantern.nn.Embedding(4, 2, sparse=True)
>>> opt = lantern.optim.SparseAdam(emb.parameters(), lr=0.1)
>>> before = emb.weight.detach().clone()
>>> emb(lantern.tensor([1])).sum().backward(); opt.step()
>>> (emb.weight != before).any(dim=1).tolist()
[False, True, False, False]
"""
import math

import lantern
from .optimizer import Optimizer
from ._common import _closure_loss, _to_scalar

__all__ = ["SparseAdam", "sparse_adam"]


class SparseAdam(Optimizer):
    """State per parameter: `step` (a Python int), `exp_avg` and `exp_avg_sq` (dense, like the parameter)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if isinstance(lr, lantern.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i in (0, 1):
            if not 0.0 <= betas[i] < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        self._refuse_params("is_sparse", "SparseAdam requires dense parameter tensors", "Sparse")
        self._refuse_params("is_complex", "SparseAdam does not support complex parameters", "Complex")

    def _refuse_params(self, test, why, kind):
        where = [[g, i] for g, group in enumerate(self.param_groups) for i, p in enumerate(group["params"])
                 if (p.is_sparse if test == "is_sparse" else p.is_complex())]
        if where:
            raise ValueError(f"{kind} params at indices {where}: {why}")

    @lantern.no_grad()
    def step(self, closure=None):
        """One update of every parameter that has a (sparse) grad; returns the closure's loss if one is given."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, exp_avgs, exp_avg_sqs, steps = [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if not p.grad.is_sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
                state = self.state[p]
                if len(state) == 0:
                    state.update(step=0, exp_avg=lantern.zeros_like(p), exp_avg_sq=lantern.zeros_like(p))
                state["step"] += 1
                params.append(p), grads.append(p.grad), steps.append(state["step"])
                exp_avgs.append(state["exp_avg"]), exp_avg_sqs.append(state["exp_avg_sq"])
            beta1, beta2 = group["betas"]
            sparse_adam(params, grads, exp_avgs, exp_avg_sqs, steps, eps=group["eps"], beta1=beta1, beta2=beta2,
                        lr=_to_scalar(group["lr"]), maximize=group.get("maximize", False))
        return loss


def sparse_adam(params, grads, exp_avgs, exp_avg_sqs, state_steps, *, eps, beta1, beta2, lr, maximize):
    """Functional SparseAdam (torch.optim._functional.sparse_adam): each moment moves toward the gradient only at
    the gradient's positions (old += (1 - beta)·(new - old) there), and so does the parameter."""
    for param, grad, exp_avg, exp_avg_sq, step in zip(params, grads, exp_avgs, exp_avg_sqs, state_steps):
        grad = (-grad if maximize else grad).coalesce()
        indices, values = grad._indices(), grad._values()
        if values.numel() == 0:
            continue

        def at_grad(v):
            return lantern.sparse_coo_tensor(indices, v, grad.shape)

        old_avg = exp_avg.sparse_mask(grad)._values()
        avg_update = values.sub(old_avg).mul_(1 - beta1)
        exp_avg.add_(at_grad(avg_update))
        old_avg_sq = exp_avg_sq.sparse_mask(grad)._values()
        avg_sq_update = values.pow(2).sub_(old_avg_sq).mul_(1 - beta2)
        exp_avg_sq.add_(at_grad(avg_sq_update))
        numer = avg_update.add_(old_avg)                  # the new exp_avg at the positions, without another mask
        denom = avg_sq_update.add_(old_avg_sq).sqrt_().add_(eps)
        step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
        param.add_(at_grad(-step_size * numer.div_(denom)))
