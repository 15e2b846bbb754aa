"""torch.func's helpers around modules: stack_module_state (an ensemble's parameters stacked for vmap),
replace_all_batch_norm_modules_ (batch norm without running statistics, so that vmap can run it), and
functionalize.

>>> import lantern
>>> from lantern.func import stack_module_state
>>> params, buffers = stack_module_state([lantern.nn.Linear(3, 2) for _ in range(4)])
>>> params["weight"].shape, params["weight"].is_leaf, params["weight"].requires_grad
(lantern.Size([4, 2, 3]), True, True)
"""
import functools

from ..nn.modules.batchnorm import _BatchNorm
import lantern


def stack_module_state(models):
    """(params, buffers): each name's tensors of `models` stacked along a new first dim; the stacked parameters are
    new leaves (requiring grad where the models' do), the buffers plain stacks."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if len({type(m) for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    params = {name: lantern.stack([dict(m.named_parameters())[name] for m in models]).detach()
              .requires_grad_(p.requires_grad) for name, p in models[0].named_parameters()}
    buffers = {name: lantern.stack([dict(m.named_buffers())[name] for m in models])
               for name, _ in models[0].named_buffers()}
    return params, buffers


def replace_all_batch_norm_modules_(root):
    """In place: every batch norm module of `root` stops tracking running statistics (they would be written by
    every example of a vmap); returns root."""
    for module in root.modules():
        if isinstance(module, _BatchNorm):
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def functionalize(func, *, remove="mutations"):
    """torch.func.functionalize. torch rewrites the mutations of func's ops into out-of-place ops for graph
    capture (make_fx), then copies the results into mutated inputs: eagerly, values, outputs and the inputs'
    mutations are those of func itself, which is what lantern runs (it has no functionalization pass).

    >>> import lantern
    >>> def double_(x):
    ...     return x.mul_(2)
    >>> x = lantern.ones(2)
    >>> functionalize(double_)(x), x
    (tensor([2., 2.]), tensor([2., 2.]))
    """
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           "Valid options are:\n     remove='mutations': all inplace and out= operators will be "
                           "removed from the program, and replaced with their out-of-place equivalents.\n     "
                           "remove='mutations_and_views': In addition to the above, all aliasing operators {view} "
                           "will be replaced with their non-aliasing counterparts, {view}_copy.\n")
    return functools.wraps(func)(lambda *args, **kwargs: func(*args, **kwargs))
