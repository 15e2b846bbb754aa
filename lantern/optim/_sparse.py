"""The sparse-gradient branches of the optimizers that take them (torch's SGD and Adagrad do; SparseAdam is only that).

SGD needs none of its own: its ops (add_, clone, mul_) run on sparse tensors. Adagrad's update touches only the
rows the gradient names, as torch's `_single_tensor_adagrad` does for a sparse grad.
"""
import lantern


def refuse_sparse_weight_decay(grad, weight_decay):
    if weight_decay != 0 and grad.is_sparse:
        raise RuntimeError("weight_decay option is not compatible with sparse gradients")


def sparse_adagrad_update(param, grad, state_sum, clr, eps):
    """s ← s + g² and p ← p − clr·g/(√s + eps), both at the gradient's positions only."""
    grad = grad.coalesce()
    indices, values = grad._indices(), grad._values()
    state_sum.add_(lantern.sparse_coo_tensor(indices, values.pow(2), grad.shape))
    std = state_sum.sparse_mask(grad)._values().sqrt_().add_(eps)
    param.add_(lantern.sparse_coo_tensor(indices, values / std, grad.shape), alpha=-clr)
