"""torch.amp.GradScaler: loss scaling, so that small gradients of low-precision ops do not flush to zero.

`scale(loss)` multiplies the loss by the scale (65536 at first); `step(optimizer)` unscales the gradients (or
uses the unscale_ already done), and skips the optimizer's step when any of them is inf or NaN; `update()` halves
the scale after such a step (backoff) and doubles it after `growth_interval` clean steps in a row (growth).

>>> model = lantern.nn.Linear(2, 1)
>>> opt = lantern.optim.SGD(model.parameters(), lr=0.1)
>>> scaler = GradScaler("cpu", init_scale=4.0, growth_interval=1)
>>> scaler.scale(model(lantern.ones(1, 2)).sum()).backward()
>>> scaler.step(opt); scaler.update(); scaler.get_scale()
8.0
>>> model.weight.grad.fill_(float("inf")) is not None
True
>>> scaler.step(opt); scaler.update(); scaler.get_scale()  # the inf gradient skips the step and backs off
4.0
"""
from collections import defaultdict
from enum import Enum

from .. import _functions as _F
from ..autograd import no_grad
from ..core import dtype as _dtypes
from ..core.tensor_impl import TensorImpl
from ..core import user_warnings

__all__ = ["OptState", "GradScaler"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale):
    """Multiply each gradient by inv_scale in place; set found_inf to 1 if any of them holds an inf or NaN."""
    for grad in grads:
        if not bool(_F.isfinite(grad).all()):
            found_inf.fill_(1.0)
        if inv_scale.item() != 1.0:
            grad.mul_(inv_scale)


def _amp_update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    """After a step with an inf/NaN gradient: scale *= backoff_factor and the count of clean steps restarts.
    After a clean one: count it, and at growth_interval clean steps scale *= growth_factor (if that stays finite)."""
    if found_inf.item():
        scale.mul_(backoff_factor)
        growth_tracker.fill_(0)
        return scale
    clean_steps = growth_tracker.item() + 1
    if clean_steps == growth_interval:
        grown = scale * growth_factor
        if _F.isfinite(grown).item():
            scale.copy_(grown)
        clean_steps = 0
    growth_tracker.fill_(clean_steps)
    return scale


class GradScaler:
    """GradScaler(device='cuda', init_scale=2.**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
    enabled=True). On a machine without CUDA a 'cuda' scaler disables itself with a warning, as PyTorch's CPU
    build does; a disabled scaler passes everything through (scale returns its input, step just steps)."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled:
            user_warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None             # a float32 0-dim tensor, made at the first scale()
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None    # an int32 0-dim tensor: clean steps since the scale last changed
            self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev):
        self._scale = _F.full((), self._init_scale, dtype=_dtypes.float32, device=dev)
        self._growth_tracker = _F.full((), self._init_growth_tracker, dtype=_dtypes.int32, device=dev)

    def scale(self, outputs):
        """outputs (a tensor, or nested lists/tuples of them) multiplied by the scale."""
        if not self._enabled:
            return outputs

        def apply_scale(value):
            if isinstance(value, TensorImpl):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(value.device)
                return value * self._scale.to(device=value.device)
            if isinstance(value, (list, tuple)):
                return type(value)(apply_scale(v) for v in value)
            if hasattr(value, "__iter__"):
                return map(apply_scale, value)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        """Unscale every gradient of optimizer's parameters in place; {device: found_inf} for the devices seen."""
        per_device_and_dtype = defaultdict(lambda: defaultdict(list))
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad.dtype is _dtypes.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    per_device_and_dtype[param.grad.device][param.grad.dtype].append(param.grad)
            found = {}
            for device, per_dtype in per_device_and_dtype.items():
                found[device] = found_inf.to(device=device, copy=True)
                for grads in per_dtype.values():
                    _amp_foreach_non_finite_check_and_unscale_(grads, found[device], inv_scale.to(device=device))
        return found

    def unscale_(self, optimizer):
        """Divide optimizer's gradients by the scale now (to clip them, say); step() then does not again."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = _F.full((), 0.0, dtype=_dtypes.float32, device=self._scale.device)
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        optimizer_state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless unscale_ did), then optimizer.step(*args, **kwargs) unless a gradient is inf or NaN;
        returns what optimizer.step returned (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(optimizer_state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        result = None
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            result = optimizer.step(*args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return result

    def update(self, new_scale=None):
        """Back off or grow the scale from this iteration's inf checks, or set it to new_scale (a float or a
        one-element tensor); then start a new iteration."""
        if not self._enabled:
            return
        scale, growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor "
                          "with requires_grad=False.")
                if new_scale.device.type != self._device or new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError(reason)
                scale.copy_(new_scale)
        else:
            found_infs = [found_inf.to(device=scale.device) for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            combined = found_infs[0]
            for found_inf in found_infs[1:]:
                combined += found_inf
            _amp_update_scale_(scale, growth_tracker, combined, self._growth_factor, self._backoff_factor,
                               self._growth_interval)
        self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    def get_scale(self):
        """The scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker.item()

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """scale, growth_factor, backoff_factor, growth_interval and _growth_tracker ({} when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                     "or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def _check_inf_per_device(self, optimizer):
        scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        dummy_inv_scale = _F.full((), 1.0, dtype=_dtypes.float32, device=scale.device)
        found_inf = _F.full((), 0.0, dtype=_dtypes.float32, device=scale.device)
        self._per_optimizer_states[id(optimizer)]["found_inf_per_device"] = \
            self._unscale_grads_(optimizer, dummy_inv_scale, found_inf, True)
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer):
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
