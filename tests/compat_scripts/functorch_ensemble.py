"""An ensemble trained the functorch way, from before torch.func: combine_state_for_ensemble stacks three MLPs'
weights, and vmap(grad(...)) over the stacked weights takes every member's gradient in one call; plain SGD on the
stacked weights. The members see the same deterministic regression data; the weights come from
torch.manual_seed(0). The last line is `FINAL <mean loss of the members>`.
"""
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

import functorch

warnings.simplefilter("ignore", FutureWarning)  # functorch's names warn that they moved to torch.func
torch.manual_seed(0)
members = [nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1)) for _ in range(3)]
fmodel, params, buffers = functorch.combine_state_for_ensemble(members)

x = torch.linspace(-1, 1, 64).reshape(-1, 1) * torch.tensor([[1.0, 0.5, -2.0]])
y = (x[:, :1] * 2).sin() + x[:, 1:2] * x[:, 2:3]


def loss_of(member_params, member_buffers):
    return F.mse_loss(fmodel(member_params, member_buffers, x), y)


gradients_of_each = functorch.vmap(functorch.grad(loss_of), in_dims=(0, 0))
for step in range(60):
    grads = gradients_of_each(params, buffers)
    params = tuple(p - 0.2 * g for p, g in zip(params, grads))
    if step % 20 == 0:
        print(f"step {step} losses {functorch.vmap(loss_of)(params, buffers).tolist()}")
print(f"FINAL {functorch.vmap(loss_of)(params, buffers).mean().item():.6f}")
