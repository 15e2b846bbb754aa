"""lantern.func (torch.func): function transforms. vmap maps a per-example function over a batch through batching
rules (lantern/_functorch/vmap.py, batching_rules.py); grad, grad_and_value, vjp, jacrev, and over forward-mode AD
jvp, jacfwd, linearize and hessian differentiate functions (lantern/_functorch/eager_transforms.py); they nest in
any order. functional_call runs a module with given parameters; stack_module_state stacks several modules' states
for vmap. See docs/internals/vmap.md.

>>> import lantern
>>> from lantern.func import functional_call, grad, vmap
>>> model = lantern.nn.Linear(2, 1)
>>> params = {"weight": lantern.tensor([[1., 2.]]), "bias": lantern.tensor([0.5])}
>>> functional_call(model, params, lantern.tensor([[2.0, 1.0]]))
tensor([[4.5000]])
>>> def loss(params, x):
...     return functional_call(model, params, x).square().sum()
>>> per_sample = vmap(grad(loss), in_dims=(None, 0))(params, lantern.tensor([[1., 0.], [0., 1.]]))
>>> per_sample["weight"]
tensor([[[3., 0.]],
<BLANKLINE>
        [[0., 5.]]])
"""
from ._functorch.batched_tensor import BatchedTensor, unwrap
from ._functorch.eager_transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from ._functorch.module_state import functionalize, replace_all_batch_norm_modules_, stack_module_state
from ._functorch.rearrange import rearrange
from ._functorch.vmap import vmap
from .autograd import install_vmap
from .nn.utils.stateless import _functional_call

install_vmap(vmap)  # autograd.grad(is_grads_batched=True) maps its backward pass with it (vmap sits above autograd)

__all__ = ["grad", "grad_and_value", "vmap", "replace_all_batch_norm_modules_", "functionalize", "hessian", "jacfwd",
           "jacrev", "jvp", "linearize", "rearrange", "vjp", "functional_call", "stack_module_state",
           "debug_unwrap"]


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """module(*args, **kwargs) with the given tensors (a dict, or a sequence of dicts) as its parameters/buffers."""
    return _functional_call(module, parameter_and_buffer_dicts, args, kwargs, tie_weights=tie_weights, strict=strict)


def debug_unwrap(tensor, *, recurse=True):
    """The tensor a BatchedTensor wraps (every level of it with recurse=True); anything else as it is."""
    while isinstance(tensor, BatchedTensor):
        tensor = unwrap(tensor, tensor._level)[0]
        if not recurse:
            break
    return tensor
