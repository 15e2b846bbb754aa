"""Stochastic weight averaging and exponential moving averages of a model's weights (torch.optim.swa_utils).

`AveragedModel(model)` keeps a copy of the model whose parameters are the running average of the model's
parameters at each `update_parameters(model)` call (equal weights by default, or an EMA through `avg_fn` /
`multi_avg_fn`); `SWALR` anneals each group's lr to a fixed `swa_lr`; `update_bn` recomputes BatchNorm running
statistics for the averaged weights with one pass over the data.

>>> import lantern
>>> from lantern.optim.swa_utils import AveragedModel
>>> model = lantern.nn.Linear(1, 1, bias=False)
>>> swa = AveragedModel(model)
>>> for value in (1., 2., 6.):
...     with lantern.no_grad():
...         _ = model.weight.fill_(value)
...     swa.update_parameters(model)
>>> swa.module.weight, swa.n_averaged
(Parameter containing:
tensor([[3.]], requires_grad=True), tensor(3))
"""
import itertools
import math
from copy import deepcopy

import lantern
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler, _per_group

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """An in-place EMA over lists of tensors: ema ← decay·ema + (1 − decay)·current."""
    _check_decay(decay)

    @lantern.no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        if ema_param_list[0].is_floating_point() or ema_param_list[0].is_complex():
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.lerp_(p_model, 1 - decay)
        else:
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """An in-place equal-weight average over lists of tensors: avg ← avg + (current − avg) / (n + 1)."""

    @lantern.no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        if averaged_param_list[0].is_floating_point() or averaged_param_list[0].is_complex():
            weight = 1 / (num_averaged + 1)
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                p_avg.lerp_(p_model, weight)
        else:
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                diff = p_model - p_avg
                if isinstance(num_averaged, lantern.Tensor):
                    p_avg.addcdiv_(diff, num_averaged + 1)
                else:
                    p_avg.add_(diff, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """An EMA of one tensor: returns decay·ema + (1 − decay)·current."""
    _check_decay(decay)

    @lantern.no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """An equal-weight average of one tensor: returns avg + (current − avg) / (n + 1)."""

    @lantern.no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _by_device_and_dtype(averaged, current):
    """{(device, dtype): (averaged tensors, current tensors)}, pairs kept in order."""
    groups = {}
    for p_avg, p_model in zip(averaged, current):
        lists = groups.setdefault((p_avg.device, p_avg.dtype), ([], []))
        lists[0].append(p_avg)
        lists[1].append(p_model)
    return groups


class AveragedModel(Module):
    """A deep copy of `model` (moved to `device` if given) whose parameters, and with `use_buffers` also buffers,
    are averaged by `update_parameters`; `n_averaged` counts the calls. The first call copies the model's values;
    later ones apply `avg_fn(averaged, current, n_averaged)` per tensor or `multi_avg_fn` per list of tensors of
    one device and dtype (default: the equal-weight average). Without `use_buffers` the buffers are copied."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", lantern.tensor(0, dtype=lantern.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        """The averaged copy's forward."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Fold `model`'s current parameters (and buffers, with `use_buffers`) into the average."""
        if self.use_buffers:
            averaged = itertools.chain(self.module.parameters(), self.module.buffers())
            current = itertools.chain(model.parameters(), model.buffers())
        else:
            averaged, current = self.parameters(), model.parameters()
        averaged_detached, current_detached = [], []
        first = bool(self.n_averaged == 0)
        for p_avg, p_model in zip(averaged, current):
            p_model = p_model.detach().to(p_avg.device)
            averaged_detached.append(p_avg.detach())
            current_detached.append(p_model)
            if first:
                p_avg.detach().copy_(p_model)
        if self.n_averaged > 0:
            self._average(averaged_detached, current_detached)
        if not self.use_buffers:
            for b_swa, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1

    def _average(self, averaged, current):
        if self.avg_fn is not None:
            for p_avg, p_model in zip(averaged, current, strict=True):
                p_avg.detach().copy_(self.avg_fn(p_avg.detach(), p_model, self.n_averaged.to(p_avg.device)))
            return
        # torch's default on a device without foreach kernels (the CPU): get_swa_avg_fn tensor by tensor
        for (device, _), (averaged_group, current_group) in _by_device_and_dtype(averaged, current).items():
            n_averaged = self.n_averaged.to(device)
            if self.multi_avg_fn is not None:
                self.multi_avg_fn(averaged_group, current_group, n_averaged)
            else:
                average = get_swa_avg_fn()
                for p_avg, p_model in zip(averaged_group, current_group):
                    p_avg.copy_(average(p_avg, p_model, n_averaged))


@lantern.no_grad()
def update_bn(loader, model, device=None):
    """Recompute the running mean and variance of every BatchNorm layer of `model` as the plain average over one
    pass of `loader` (each batch a tensor, or a list/tuple whose first item is the input)."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr from its value to `swa_lr` (one number, or one per group) over `anneal_epochs`
    steps, by a cosine ("cos") or a linear ("linear") curve, then keep it at swa_lr."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        for lr, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups, strict=True):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        """The lr the annealing started from, recovered from the current lr at progress alpha."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        """Each group's lr at this step: the start lr recovered from the previous step, moved towards swa_lr."""
        self._warn_if_outside_step()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs, strict=True)]

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self):
        """Every attribute except the optimizer and the annealing function (restored from its name)."""
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
