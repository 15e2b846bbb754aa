"""swap_in_optimizer_params_and_state: run an optimizer on other parameter tensors and another state for the
length of a with block (torch.optim.swap_in_optimizer_params_and_state, from torch.optim._stateless).

Unlike `load_state_dict`, which replaces only the state, this also puts the given tensors in the param groups, so
`step()` updates them and the state dict's tensors (in place); on exit the optimizer's own params, state and group
settings come back.

>>> import lantern
>>> w = lantern.tensor([1.], requires_grad=True)
>>> opt = lantern.optim.SGD([w], lr=0.1, momentum=0.9)
>>> w.grad = lantern.tensor([1.]); opt.step()
>>> other = lantern.tensor([5.], requires_grad=True); other.grad = lantern.tensor([1.])
>>> saved = opt.state_dict()
>>> with lantern.optim.swap_in_optimizer_params_and_state(opt, {"w": other}, saved):
...     opt.step()
>>> w, other, saved["state"][0]["momentum_buffer"]
(tensor([0.9000], requires_grad=True), tensor([4.8100], requires_grad=True), tensor([1.9000]))
"""
import contextlib
from collections import defaultdict

from .._tensor import Tensor

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """Within the block, `optimizer` works on `swapin_parameters` (a dict whose values follow the order of the
    optimizer's params) with the state and group settings of `swapin_optim_state` (an `optimizer.state_dict()`);
    in-place updates of that state dict's tensors are the only changes that outlive the block."""
    state, swaps = _prepare_swap_in(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer.state
    original_groups = [dict(group) for group in optimizer.param_groups]
    try:
        swapped_state = defaultdict(dict)
        for live_group, saved_group, params in swaps:
            live_group.update({key: value for key, value in saved_group.items() if key != "params"})
            live_group["params"] = params
            for param, param_id in zip(params, saved_group["params"]):
                # a shallow copy: in-place tensor updates reach the caller's dict, new keys do not
                swapped_state[param] = dict(state.get(param_id, {}))
        optimizer.state = swapped_state
        yield
    finally:
        for group, original in zip(optimizer.param_groups, original_groups):
            group.clear()
            group.update(original)
        optimizer.state = original_state


def _prepare_swap_in(optimizer, swapin_parameters, swapin_optim_state):
    """torch's checks of the arguments; returns the state by packed id and, per group, (live group, saved group,
    the tensors that stand in for its params)."""
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = _checked_state(swapin_optim_state.get("state"))
    saved_groups = swapin_optim_state.get("param_groups")
    if not isinstance(saved_groups, list):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list of param-group dicts, "
                           f"got {type(saved_groups).__name__}.")
    if len(optimizer.param_groups) != len(saved_groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than the live optimizer.")
    tensors = list(swapin_parameters.values())
    offset = 0
    seen_ids = set()
    swaps = []
    for index, (group, saved_group) in enumerate(zip(optimizer.param_groups, saved_groups)):
        ids = _checked_group(index, group, saved_group)
        seen_ids.update(ids)
        if offset + len(ids) > len(tensors):
            raise RuntimeError(f"{_NAME} requires the explicit parameter state to match optimizer.param_groups "
                               "ordering.")
        swaps.append((group, saved_group, tensors[offset:offset + len(ids)]))
        offset += len(ids)
    extra = [key for key in state if key not in seen_ids]
    if extra:
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be keyed only by packed parameter ids "
                           f"from param_groups[*]['params']; got extra keys {extra!r}.")
    return state, swaps


def _checked_state(state):
    if not isinstance(state, dict):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping packed parameter ids "
                           f"to per-param state dicts, got {type(state).__name__}.")
    if any(isinstance(key, Tensor) for key in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by packed parameter ids.")
    if any(isinstance(key, int) and not isinstance(value, dict) for key, value in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be dictionaries.")
    return state


def _checked_group(index, group, saved_group):
    """The packed ids of a saved group, after checking it has the live group's keys and number of params."""
    if not isinstance(saved_group, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    ids = saved_group.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param_groups[*]['params'] entries keyed "
                           "by packed parameter ids.")
    if len(group["params"]) != len(ids):
        raise RuntimeError(f"swapin_optim_state param group {index} has a different number of params than the live "
                           "optimizer param group.")
    saved_only = [key for key in saved_group if key not in group]
    live_only = [key for key in group if key not in saved_group]
    if saved_only or live_only:
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param group keys to exactly match the live "
                           f"optimizer group keys for group {index}. Keys only in swap-in: {saved_only}. Keys only "
                           f"in live: {live_only}.")
    return ids
