"""AutogradMeta: the per-tensor autograd state beyond requires_grad/grad_fn (PyTorch's AutogradMeta).

Created on first need, so tensors outside autograd carry nothing.

>>> x = lantern.ones(2, requires_grad=True)
>>> h = x.register_hook(lambda g: g * 2)
>>> len(x._autograd.hooks)
1
"""


class Hooks(dict):
    """Registered hooks by handle id, in registration order (a dict a RemovableHandle can refer to weakly)."""


class AutogradMeta:
    __slots__ = ("grad_accumulator", "hooks", "retains_grad", "post_accumulate_hooks",
                 "attr_version")

    def __init__(self):
        self.grad_accumulator = None   # the leaf's AccumulateGrad node (it refers back to the leaf weakly)
        self.hooks = Hooks()           # tensor hooks: fn(grad) -> new grad or None
        self.retains_grad = False
        self.post_accumulate_hooks = Hooks()
        self.attr_version = None       # views: the version their grad_fn was made at (stale once it changes)


def autograd_meta(t):
    meta = t._autograd
    if meta is None:
        meta = t._autograd = AutogradMeta()
    return meta


def current_grad_fn(t):
    """t's grad_fn; a view whose memory was changed in place since its grad_fn was made gets a fresh one that
    reads its gradient out of its base's (PyTorch regenerates it the same way)."""
    fn = t._grad_fn
    meta = t._autograd
    if meta is not None and meta.attr_version is not None and meta.attr_version != t._vc[0] and t._base is not None:
        from .views import regenerate_view_grad_fn  # cycle: autograd.views imports meta (via graph)
        fn = regenerate_view_grad_fn(t)
    return fn
