"""Adding a gradient into a leaf's `.grad`, as PyTorch's AccumulateGrad does.

The first gradient is kept as is when the engine owns it (no one else can see it) and it is laid out like the leaf;
otherwise it is copied into a tensor with the leaf's strides (PyTorch's "layout contract"; under
`enforce_grad_layout_policy(False)` an owned gradient is kept whatever its layout). Later ones are added in
place, or out of place when building a graph (create_graph) so that the sum stays differentiable.

>>> x = lantern.ones(2, requires_grad=True)
>>> (x * 2).sum().backward(); (x * 3).sum().backward()
>>> x.grad.tolist()
[5.0, 5.0]
"""
from ..backends.sparse import unmarked_alias
from ..core.layout import contiguous_format, sparse_coo, strided
from ..core.state import tls
from ..core.contiguity import has_cached_contiguous_strides
from ..core.tensor_impl import contiguous_strides
from .grad_mode import is_grad_layout_enforced


def accumulate_grad(variable, grad, owned):
    """Add `grad` into variable.grad (`owned`: no one else holds `grad`), then run post-accumulate hooks."""
    old = variable._grad
    if old is None:
        if grad.layout is sparse_coo:  # a sparse gradient stays sparse: it has no strides to lay out
            variable._grad = unmarked_alias(grad if owned else grad.clone())
        elif owned and not tls.grad_enabled and (
                (has_cached_contiguous_strides(grad) and variable._stride is grad._stride)  # both row-major
                or _obeys_layout_contract(grad, variable) or not is_grad_layout_enforced()):
            variable._grad = grad.detach() if grad._requires_grad else grad
        else:
            variable._grad = _clone_obey_contract(grad, variable)
    elif tls.grad_enabled or old.layout is not strided:  # a sparse .grad grows by entries: out of place
        variable._grad = grad + old if old.layout is not strided and grad.layout is strided else old + grad
    else:
        old.add_(grad)
    meta = variable._autograd
    if meta is not None and meta.post_accumulate_hooks:
        for hook in list(meta.post_accumulate_hooks.values()):
            hook(variable)


def _obeys_layout_contract(grad, variable):
    """A dense leaf's grad has the leaf's strides (size-1 dims aside; no stride-0 ones); otherwise contiguous."""
    if grad._stride == variable._stride == contiguous_strides(variable._size):  # the common case, decided fast
        return True
    if not variable.is_non_overlapping_and_dense():
        return grad.is_contiguous()
    for n, gs, vs in zip(grad._size, grad._stride, variable._stride):
        if (n != 1 and gs != vs) or (n == 1 and gs == 0):
            return False
    return True


def _clone_obey_contract(grad, variable):
    if variable.is_non_overlapping_and_dense():
        return variable.new_empty_strided(variable._size, variable._stride).copy_(grad)
    return grad.clone(memory_format=contiguous_format)
