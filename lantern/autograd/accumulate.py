"""Adding a gradient into a leaf's `.grad`, as PyTorch's AccumulateGrad does.

The first gradient is stored as is when the engine owns it (no one else can see it), else copied; later ones are
added in place, or out of place when building a graph (create_graph) so the sum stays differentiable.

>>> x = lantern.ones(2, requires_grad=True)
>>> (x * 2).sum().backward(); (x * 3).sum().backward()
>>> x.grad.tolist()
[5.0, 5.0]
"""
from ..core.state import tls


def accumulate_grad(variable, grad, owned):
    meta = variable._autograd
    if meta is not None and meta.hooks:
        for hook in list(meta.hooks.values()):
            new = hook(grad)
            if new is not None:
                grad, owned = new, False
    old = variable._grad
    if old is None:
        if not tls.grad_enabled:
            if not owned:
                grad = grad.detach().clone()
            elif grad._requires_grad:
                grad = grad.detach()
        variable._grad = grad
    elif tls.grad_enabled:
        variable._grad = old + grad
    else:
        old.add_(grad)
    if meta is not None and meta.post_accumulate_hooks:
        for hook in list(meta.post_accumulate_hooks.values()):
            hook(variable)
