"""functional_call (torch.nn.utils.stateless, and torch.func): call a module with other tensors as its parameters.

The given tensors stand in for the module's parameters and buffers, by dotted name, for one call; the module's own
are put back afterwards, so gradients flow to the tensors passed in (what meta-learning and per-sample tricks need).

>>> import lantern
>>> from lantern.func import functional_call
>>> layer = lantern.nn.Linear(2, 1)
>>> weight = lantern.ones(1, 2, requires_grad=True)
>>> functional_call(layer, {"weight": weight, "bias": lantern.zeros(1)}, (lantern.tensor([[1.0, 2.0]]),))
tensor([[3.]], grad_fn=<AddmmBackward0>)
>>> layer.weight is not weight
True
"""
import contextlib
from ...core import user_warnings

__all__ = ["functional_call"]

_ABSENT = object()


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """The deprecated spelling of torch.func.functional_call; warns as torch does."""
    user_warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed "
                  "in a future version of PyTorch. Please use `torch.func.functional_call` instead which is a "
                  "drop-in replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    replacements = _merged(parameters_and_buffers)
    if tie_weights:
        replacements = _with_tied_names(module, replacements)
    if strict:
        _check_keys(module, replacements)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, replacements):
        return module(*args, **(kwargs or {}))


def _merged(parameters_and_buffers):
    """One dict from a dict or a sequence of dicts (torch.func accepts both; a key in two of them is an error)."""
    if isinstance(parameters_and_buffers, dict):
        return dict(parameters_and_buffers)
    merged, repeated = {}, []
    for part in parameters_and_buffers:
        for key, value in part.items():
            if key in merged:
                repeated.append(key)
            merged[key] = value
    if repeated:
        raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
    return merged


def _members(module):
    return [*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False)]


def _with_tied_names(module, replacements):
    """Names sharing one tensor in the module (tied weights) all take the replacement given for any of them."""
    names_of = {}
    for name, tensor in _members(module):
        names_of.setdefault(id(tensor), []).append(name)
    result = dict(replacements)
    for names in names_of.values():
        given = [n for n in names if n in replacements]
        if len({id(replacements[n]) for n in given}) > 1:
            raise ValueError(f"functional_call got multiple values for keys {given}, which are tied. Consider using "
                             "tie_weights=False")
        for name in names if given else ():
            result.setdefault(name, replacements[given[0]])
    return result


def _check_keys(module, replacements):
    names = {name for name, _ in _members(module)}
    unexpected = sorted(set(replacements) - names)
    missing = sorted(names - set(replacements))
    if unexpected or missing:
        lines = [f"Error(s) in reparametrizing for {type(module).__name__}:"]
        if unexpected:
            lines.append("\tUnexpected key(s): " + ", ".join(repr(k) for k in unexpected) + ".")
        if missing:
            lines.append("\tMissing key(s): " + ", ".join(repr(k) for k in missing) + ".")
        raise RuntimeError("\n".join(lines))


@contextlib.contextmanager
def _swapped(module, replacements):
    """Put each replacement where its name points (parameter, buffer or plain attribute); restore on exit."""
    restore = []
    try:
        for dotted, tensor in replacements.items():
            owner_path, _, name = dotted.rpartition(".")
            owner = module.get_submodule(owner_path) if owner_path else module
            for registry in (owner._parameters, owner._buffers):
                if name in registry:
                    restore.append((registry, name, registry[name]))
                    registry[name] = tensor
                    break
            else:
                restore.append((owner, name, owner.__dict__.get(name, _ABSENT)))
                owner.__dict__[name] = tensor
        yield
    finally:
        for place, name, original in reversed(restore):
            if isinstance(place, dict):
                place[name] = original
            elif original is _ABSENT:
                del place.__dict__[name]
            else:
                place.__dict__[name] = original
