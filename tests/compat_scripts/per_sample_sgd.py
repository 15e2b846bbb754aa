"""Per-sample-gradient SGD (DP-SGD's clipping, without noise) with torch.func: each step takes every example's own
gradient with vmap(grad(loss)) over functional_call, clips each to norm 1, averages and steps. A small CNN on a
deterministic two-class image task; the weights come from torch.manual_seed(0). The last line is `FINAL <loss>`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 2))

# images of a bright bar, horizontal (class 0) or vertical (class 1), at a place that moves with the index
n = 32
images = torch.zeros(n, 1, 8, 8)
labels = torch.arange(n) % 2
for i in range(n):
    where = (i // 2) % 8
    if labels[i] == 0:
        images[i, 0, where, :] = 1.0
    else:
        images[i, 0, :, where] = 1.0
images = images + 0.1 * torch.sin(torch.arange(n * 64, dtype=torch.float32)).reshape(n, 1, 8, 8)


def loss_of(params, image, label):
    out = functional_call(model, params, (image.unsqueeze(0),))
    return F.cross_entropy(out, label.unsqueeze(0))


per_sample_grads = vmap(grad(loss_of), in_dims=(None, 0, 0))
params = {name: p.detach() for name, p in model.named_parameters()}
for step in range(40):
    grads = per_sample_grads(params, images, labels)
    norms = torch.sqrt(sum(g.flatten(1).pow(2).sum(1) for g in grads.values()))
    scale = (1.0 / norms).clamp(max=1.0)
    params = {name: p - 0.5 * (grads[name] * scale.view(-1, *[1] * p.dim())).mean(0) for name, p in params.items()}
    if step % 10 == 0:
        with torch.no_grad():
            loss = F.cross_entropy(functional_call(model, params, (images,)), labels)
        print(f"step {step} loss {loss.item():.4f}")
with torch.no_grad():
    logits = functional_call(model, params, (images,))
    loss = F.cross_entropy(logits, labels)
print(f"accuracy {(logits.argmax(1) == labels).float().mean().item():.3f}")
print(f"FINAL {loss.item():.6f}")
