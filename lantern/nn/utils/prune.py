"""lantern.nn.utils.prune: masking a module's parameter to zero some of its entries, as torch.nn.utils.prune.

Pruning `weight` reparametrises the module: the parameter moves to `weight_orig`, a buffer `weight_mask` (1 keeps,
0 prunes) joins it, and `weight` becomes a plain attribute, `weight_mask * weight_orig`, recomputed by a forward
pre-hook (the pruning method itself) before each call. Pruning the same tensor again combines the methods in a
PruningContainer, each acting on what the earlier ones kept. `remove` makes the pruning permanent.

>>> import lantern.nn.utils.prune as prune
>>> layer = lantern.nn.Linear(3, 2)
>>> with lantern.no_grad():
...     _ = layer.weight.copy_(lantern.tensor([[0.1, -2.0, 0.3], [4.0, -0.5, 6.0]]))
>>> _ = prune.l1_unstructured(layer, "weight", amount=0.5)
>>> layer.weight_mask
tensor([[0., 1., 0.],
        [1., 0., 1.]])
>>> sorted(layer.state_dict()), prune.is_pruned(layer)
(['bias', 'weight_mask', 'weight_orig'], True)
>>> _ = prune.remove(layer, "weight")
>>> layer.weight
Parameter containing:
tensor([[ 0., -2.,  0.],
        [ 4., -0.,  6.]], requires_grad=True)
"""
import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import lantern

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
           "remove", "is_pruned"]


class BasePruningMethod(ABC):
    """A way of choosing a mask; subclasses define compute_mask(t, default_mask) and PRUNING_TYPE ('unstructured',
    'structured' with a `dim`, or 'global'). An instance is also the forward pre-hook that recomputes the tensor.
    `apply` names the tensor it prunes (`_tensor_name`); until then the method has no such attribute, as in torch."""

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The new mask for `t` (same shape), never unpruning what `default_mask` prunes."""

    def apply_mask(self, module):
        """The pruned tensor: the module's mask times its original parameter."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune `module.<name>` with a new `cls(*args, **kwargs)`, combined with any pruning already there."""
        method = _method_combined_with_earlier(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is None:
            importance_scores = orig
        elif importance_scores.shape != orig.shape:
            raise AssertionError(f"importance_scores should have the same shape as parameter {name} of {module}, "
                                 f"got {importance_scores.shape} vs {orig.shape}")
        first_pruning = not isinstance(method, PruningContainer)
        if first_pruning:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = lantern.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone(memory_format=lantern.contiguous_format)
        try:
            module.register_buffer(name + "_mask", method.compute_mask(importance_scores, default_mask=default_mask))
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first_pruning:  # put the parameter back as it was
                module.register_parameter(name, getattr(module, name + "_orig"))
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """`t` times the mask this method computes for it (from `importance_scores` when given), without a module."""
        if importance_scores is None:
            importance_scores = t
        elif importance_scores.shape != t.shape:
            raise AssertionError(f"importance_scores should have the same shape as tensor t, got "
                                 f"{importance_scores.shape} vs {t.shape}")
        default_mask = lantern.ones_like(t) if default_mask is None else default_mask
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        """Make the pruning permanent: `name` becomes a parameter again holding the pruned values."""
        name = self._tensor_name
        if name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        pruned = self.apply_mask(module)
        if hasattr(module, name):
            delattr(module, name)
        orig = module._parameters.pop(name + "_orig")
        orig.data = pruned.data
        del module._buffers[name + "_mask"]
        setattr(module, name, orig)


def _method_combined_with_earlier(cls, module, name, *args, **kwargs):
    """A new `cls` method for `name`, or a PruningContainer holding the earlier method(s) and it; the earlier
    method's hook is taken off the module (apply registers the returned one)."""
    earlier = [key for key, hook in module._forward_pre_hooks.items()
               if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]
    if len(earlier) > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                             "Use a PruningContainer.")
    old = module._forward_pre_hooks.pop(earlier[0]) if earlier else None
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if old is None:
        return method
    container = old if isinstance(old, PruningContainer) else PruningContainer(old)
    container.add_pruning_method(method)
    return container


class PruningContainer(BasePruningMethod):
    """The pruning methods applied to one tensor, in order; its mask is the last method's, computed on what the
    earlier masks kept."""

    def __init__(self, *methods):
        self._pruning_methods = ()
        if len(methods) == 1:
            self._tensor_name = methods[0]._tensor_name
        for method in methods:
            self.add_pruning_method(method)

    def add_pruning_method(self, method):
        """Append `method`, which must act on this container's tensor."""
        if method is not None and not isinstance(method, BasePruningMethod):
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' "
                             f"to PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """The last method's mask, computed only over the entries (or channels) `default_mask` still keeps."""
        method = self._pruning_methods[-1]
        mask = default_mask.to(dtype=t.dtype)
        kept = _still_kept(method, t, default_mask)
        mask[kept] = method.compute_mask(t[kept], default_mask=default_mask[kept]).to(dtype=mask.dtype)
        return mask


def _still_kept(method, t, mask):
    """The index into `t` of what `method` may still prune: the unpruned entries (unstructured), the channels
    along method.dim with any entry unpruned (structured), or everything (global)."""
    if method.PRUNING_TYPE == "unstructured":
        return mask == 1
    if method.PRUNING_TYPE == "global":
        return (slice(None),) * t.dim()
    if method.PRUNING_TYPE != "structured":
        raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
    if not hasattr(method, "dim"):
        raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the attribute `dim` '
                             "defined.")
    dim = method.dim + t.dim() if method.dim < 0 else method.dim
    if dim < 0:
        raise IndexError(f"Index is out of bounds for tensor with dimensions {t.dim()}")
    channel_kept = mask.sum(dim=[d for d in range(t.dim()) if d != dim]) != 0
    return _along(dim, t.dim(), channel_kept)


def _along(dim, ndim, index):
    """An index tuple selecting `index` along `dim` (negative counts from the end) and all of the other dims."""
    slices = [slice(None)] * ndim
    slices[dim] = index
    return tuple(slices)


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (a way to reparametrise a tensor for later masking)."""
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class _Unstructured(BasePruningMethod):
    """Prunes the `amount` entries (a fraction in [0, 1], or a count) that `_chosen` picks among them."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        count = _count_to_prune(self.amount, t.nelement())
        mask = default_mask.clone(memory_format=lantern.contiguous_format)
        if count != 0:
            mask.view(-1)[self._chosen(t, count)] = 0
        return mask


class RandomUnstructured(_Unstructured):
    """Prunes `amount` entries (a fraction in [0, 1], or a count) chosen at random."""

    def _chosen(self, t, count):
        """The flat indices of the `count` largest of uniform draws, one per entry (torch's choice)."""
        return lantern.topk(lantern.rand_like(t).view(-1), k=count).indices

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Prunes the `amount` entries (a fraction in [0, 1], or a count) of smallest absolute value."""

    def _chosen(self, t, count):
        return lantern.topk(lantern.abs(t).view(-1), k=count, largest=False).indices

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes `amount` whole channels along `dim`, chosen at random."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _check_amount(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        channels = _structured_size(t, self.dim)
        count = _count_to_prune(self.amount, channels)
        if count == 0:
            return default_mask
        draws = lantern.rand(channels)
        keep = draws > lantern.kthvalue(draws, k=count).values
        mask = lantern.zeros_like(t)
        mask[_along(self.dim, t.dim(), keep)] = 1
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the `amount` channels along `dim` of smallest L`n` norm (n as torch.norm's p)."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _check_amount(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        channels = _structured_size(t, self.dim)
        count = _count_to_prune(self.amount, channels)
        dims = list(range(t.dim()))
        dims.remove(dims[self.dim])
        norms = lantern.norm(t, p=self.n, dim=dims)
        largest = lantern.topk(norms, k=channels - count, largest=True).indices
        if count == 0:
            return default_mask
        mask = lantern.zeros_like(t)
        mask[_along(self.dim, t.dim(), largest)] = 1
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where the given `mask` is 0."""
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match self.mask shape "
                                 f"{self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def _check_amount(amount):
    """torch's checks on an amount: a real number, a fraction in [0, 1] or a non-negative count."""
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if isinstance(amount, numbers.Integral):
        valid = amount >= 0
    else:
        valid = 0.0 <= float(amount) <= 1.0
    if not valid:
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _count_to_prune(amount, size):
    """How many of `size` entries (or channels) `amount` prunes: the count itself, or the rounded fraction."""
    if not isinstance(amount, numbers.Integral):
        return round(amount * size)
    if amount > size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")
    return amount


def _structured_size(t, dim):
    """The number of channels of `t` along `dim`, after torch's checks for structured pruning."""
    if t.dim() <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. Found tensor of "
                         f"shape {t.shape} with {t.dim()} dims")
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")
    return t.shape[dim]


def identity(module, name):
    """Reparametrise `module.<name>` with an all-ones mask; returns the module."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune `amount` random entries of `module.<name>`; returns the module."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the `amount` entries of `module.<name>` (or of importance_scores) of smallest magnitude."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune `amount` random channels of `module.<name>` along `dim`; returns the module."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the `amount` channels of `module.<name>` along `dim` of smallest L`n` norm; returns the module."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    """Prune `module.<name>` where `mask` is 0; returns the module."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the (module, name) pairs in `parameters` as one vector with an unstructured `pruning_method`
    (a class, built with **kwargs), so the amount counts across all of them; each gets a CustomFromMask."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = {} if importance_scores is None else importance_scores
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = lantern.nn.utils.parameters_to_vector(
        [importance_scores.get((module, name), getattr(module, name)) for module, name in parameters])
    masks = lantern.nn.utils.parameters_to_vector(
        [getattr(module, name + "_mask", lantern.ones_like(getattr(module, name))) for module, name in parameters])
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container = PruningContainer()
    container._tensor_name = "temp"
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, masks)
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        custom_from_mask(module, name, mask=final_mask[start:start + param.numel()].view_as(param))
        start += param.numel()


def remove(module, name):
    """Make the pruning of `module.<name>` permanent and take its hook off; returns the module."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    """Whether `module` or any of its submodules carries a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for _, submodule in module.named_modules() for hook in submodule._forward_pre_hooks.values())
