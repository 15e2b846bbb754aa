"""functorch's module API from before torch.func: make_functional, make_functional_with_buffers and
combine_state_for_ensemble turn a module into a function of its parameters (and buffers).

Each makes a deep copy of the module, takes the copy's parameters (and buffers) out and leaves meta tensors in their
place; the returned FunctionalModule puts the given tensors in for one call and the meta tensors back after it.
torch.func.functional_call does the same for a module kept as it is, and is what new code uses.

>>> import lantern
>>> model = lantern.nn.Linear(2, 1)
>>> func, params = make_functional(model)
>>> [p.shape for p in params], func.stateless_model.weight.device
([lantern.Size([1, 2]), lantern.Size([1])], device(type='meta'))
>>> func((lantern.tensor([[1., 2.]]), lantern.tensor([0.5])), lantern.tensor([[2., 1.]]))
tensor([[4.5000]])
"""
import copy

from .. import nn
from ..nn.utils.stateless import _swapped
import lantern


def _names_of_each(named_tensors):
    """{first name: every name} of each distinct tensor (tied parameters share one entry), and the tensors."""
    names, tensors = {}, {}
    for name, tensor in named_tensors:
        first = next((n for n, t in tensors.items() if t is tensor), name)
        names.setdefault(first, []).append(name)
        tensors.setdefault(first, tensor)
    return names, tuple(tensors.values())


def _extract(module, named_tensors, make=lambda t: t):
    """Put a meta tensor (`make` of it: a Parameter for parameters) in place of each of `named_tensors` of `module`;
    returns the tensors taken out and their names map."""
    names_map, tensors = _names_of_each(named_tensors)
    for names, tensor in zip(names_map.values(), tensors):
        meta = make(lantern.empty_like(tensor, device="meta"))
        for name in names:
            owner_path, _, attr = name.rpartition(".")
            owner = module.get_submodule(owner_path)
            registry = owner._parameters if attr in owner._parameters else owner._buffers
            registry[attr] = meta
    return tensors, names_map


def _in_place(module, names_map, tensors):
    """A context in which each of `tensors` stands at every one of its names in `module`."""
    return _swapped(module, {name: t for names, t in zip(names_map.values(), tensors) for name in names})


class FunctionalModule(nn.Module):
    """What make_functional returns: func(params, *args, **kwargs) runs the module with `params`."""

    def __init__(self, stateless_model, param_names, names_map):
        super().__init__()
        self.stateless_model, self.param_names, self.names_map = stateless_model, param_names, names_map

    def forward(self, params, *args, **kwargs):
        with _in_place(self.stateless_model, self.names_map, tuple(params)):
            return self.stateless_model(*args, **kwargs)


class FunctionalModuleWithBuffers(nn.Module):
    """What make_functional_with_buffers returns: func(params, buffers, *args, **kwargs)."""

    def __init__(self, stateless_model, param_names, buffer_names, param_names_map, buffer_names_map):
        super().__init__()
        self.stateless_model, self.param_names, self.buffer_names = stateless_model, param_names, buffer_names
        self.all_names_map = {**param_names_map, **buffer_names_map}

    def forward(self, params, buffers, *args, **kwargs):
        with _in_place(self.stateless_model, self.all_names_map, tuple(params) + tuple(buffers)):
            return self.stateless_model(*args, **kwargs)


def _extract_parameters(model_copy, disable_autograd_tracking):
    params, names_map = _extract(model_copy, model_copy.named_parameters(remove_duplicate=False), nn.Parameter)
    if disable_autograd_tracking:
        for param in params:
            param.requires_grad_(False)
    return params, names_map


def make_functional(model, disable_autograd_tracking=False):
    """(func, params): func(params, *args) is model(*args) run with `params`, a copy's parameters."""
    if any(True for _ in model.buffers()):
        raise RuntimeError("make_functional(model): `model` has buffers. Please use "
                           "make_functional_with_buffers(model) instead.")
    model_copy = copy.deepcopy(model)
    params, names_map = _extract_parameters(model_copy, disable_autograd_tracking)
    return FunctionalModule(model_copy, tuple(names_map), names_map), params


def make_functional_with_buffers(model, disable_autograd_tracking=False):
    """(func, params, buffers): func(params, buffers, *args) is model(*args) run with them."""
    model_copy = copy.deepcopy(model)
    params, param_names_map = _extract_parameters(model_copy, disable_autograd_tracking)
    buffers, buffer_names_map = _extract(model_copy, model_copy.named_buffers(remove_duplicate=False))
    func = FunctionalModuleWithBuffers(model_copy, tuple(param_names_map), tuple(buffer_names_map), param_names_map,
                                       buffer_names_map)
    return func, params, buffers


def combine_state_for_ensemble(models):
    """(func, params, buffers) for vmap over an ensemble: each parameter and buffer of `models` stacked along a new
    first dimension (detached), and func of the first model."""
    if len(models) == 0:
        raise RuntimeError("combine_state_for_ensemble: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("combine_state_for_ensemble: Expected all models to have the same training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("combine_state_for_ensemble: Expected all models to be of the same class.")
    funcs, params, buffers = zip(*[make_functional_with_buffers(model) for model in models])
    return funcs[0], _stack_each(params), _stack_each(buffers)


def _stack_each(per_model):
    return tuple(lantern.stack(shards).detach() for shards in zip(*per_model))
