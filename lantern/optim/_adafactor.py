"""Adafactor: Adam-like steps whose second moment of a matrix is kept as a row and a column factor
(torch.optim.Adafactor, from torch.optim._adafactor).

For a parameter of two or more dimensions, the running mean of g² is stored as its row means R and its column
means C (sublinear memory), and estimated as R·C / mean(R). The relative step size rho = min(lr, 1/√t) is scaled by
the parameter's root mean square, the update is clipped to an RMS of at most d, and weight decay is decoupled
(p ← p·(1 − lr·weight_decay)).

>>> import lantern
>>> w = lantern.tensor([[1., -2.], [0.5, 3.]], requires_grad=True)
>>> opt = lantern.optim.Adafactor([w], lr=0.01)
>>> w.grad = lantern.tensor([[0.1, -0.2], [0.3, 0.4]]); opt.step()
>>> sorted(opt.state[w]), opt.state[w]['row_var'].shape, opt.state[w]['col_var'].shape
(['col_var', 'row_var', 'step'], lantern.Size([2, 1]), lantern.Size([1, 2]))
>>> w
tensor([[ 0.9854, -1.9793],
        [ 0.4804,  2.9815]], requires_grad=True)
"""
import lantern
from .optimizer import Optimizer
from ._common import _closure_loss, _init_group, _new_scalar, _to_scalar, _value

__all__ = ["Adafactor", "adafactor"]


class Adafactor(Optimizer):
    """State: `step`, and `row_var` / `col_var` (the factored second moment) for a parameter of two or more
    dimensions, `variance` for a vector or a scalar. `eps` is (eps1, eps2): eps1 (None: the dtype's machine epsilon)
    keeps the variance estimate and its square root away from 0, eps2 is the smallest parameter RMS the step
    scales with."""

    _group_flag_defaults = {"foreach": None}
    _scalar_state_keys = ("step",)

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if isinstance(lr, lantern.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        for ok, message in ((0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}"),
                            (0.0 >= beta2_decay, f"beta2_decay should be <= 0 but is: {beta2_decay}"),
                            (eps[0] is None or 0.0 <= eps[0], f"epsilon1 should be >= 0 but is: {eps[0]}"),
                            (0.0 <= eps[1], f"epsilon2 should be >= 0 but is: {eps[1]}"),
                            (1.0 <= d, f"Clipping threshold d should be >= 1 but is: {d}"),
                            (0.0 <= weight_decay, f"weight_decay should be >= 0 but is: {weight_decay}")):
            if not ok:
                raise ValueError(message)
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    def _new_state(self, p, group):
        grad = p.grad
        state = {"step": _new_scalar()}
        if grad.dim() > 1:
            state["row_var"] = grad.new_zeros((*grad.shape[:-1], 1))
            state["col_var"] = grad.new_zeros((*grad.shape[:-2], 1, grad.shape[-1]))
        else:
            state["variance"] = lantern.zeros_like(grad)
        return state

    @lantern.no_grad()
    def step(self, closure=None):
        """One Adafactor update of every parameter that has a grad; returns the closure's loss if one is given."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, states = _init_group(self, group, "Adafactor", complex_is_error=True)
            eps1, eps2 = group["eps"]
            adafactor(params, grads, [s.get("row_var") for s in states], [s.get("col_var") for s in states],
                      [s.get("variance") for s in states], [s["step"] for s in states], foreach=group["foreach"],
                      grad_scale=getattr(self, "grad_scale", None), found_inf=getattr(self, "found_inf", None),
                      d=group["d"], lr=group["lr"], beta2_decay=group["beta2_decay"],
                      weight_decay=group["weight_decay"], eps1=eps1, eps2=eps2, maximize=group["maximize"])
        return loss


def adafactor(params, grads, row_vars, col_vars, variances, state_steps, foreach=None, grad_scale=None,
              found_inf=None, has_complex=False, *, d, lr, beta2_decay, weight_decay, eps1, eps2, maximize):
    """Functional Adafactor (torch.optim._adafactor.adafactor). lantern has no multi-tensor Adafactor: every
    `foreach` runs `_single_tensor_adafactor`."""
    if not all(isinstance(t, lantern.Tensor) for t in state_steps):
        raise RuntimeError("`state_steps` argument must contain a list of singleton tensors")
    if grad_scale is not None or found_inf is not None:
        raise AssertionError("Grad scaling should occur outside of optimizer.step()")
    _single_tensor_adafactor(params, grads, row_vars, col_vars, variances, state_steps, d=d, lr=lr,
                             beta2_decay=beta2_decay, weight_decay=weight_decay, eps1=eps1, eps2=eps2,
                             maximize=maximize)


def _single_tensor_adafactor(params, grads, row_vars, col_vars, variances, state_steps, *, d, lr, beta2_decay,
                             weight_decay, eps1, eps2, maximize):
    """The readable Adafactor update, one parameter at a time (torch's `_single_tensor_adafactor`). As there, an
    eps1 of None becomes the machine epsilon of the first parameter's dtype, for the whole group. A tensor lr
    stays one, so rho, alpha and the decay factor are float32 tensors then, as in torch."""
    lr = _to_scalar(lr)
    for param, grad, row_var, col_var, variance, step_t in zip(params, grads, row_vars, col_vars, variances,
                                                                 state_steps):
        if maximize:
            grad = -grad
        if eps1 is None:
            eps1 = lantern.finfo(param.dtype).eps
        step_t.add_(1)
        step = step_t.item()
        one_minus_beta2 = step ** beta2_decay
        rho = min(lr, 1 / step ** 0.5)
        param_rms = param.norm(2).item() / param.numel() ** 0.5
        alpha = max(eps2, param_rms) * rho
        if weight_decay != 0:
            param.mul_(1 - lr * weight_decay)
        if grad.dim() > 1:
            row_var.lerp_(_mean_square(grad, -1), one_minus_beta2)
            col_var.lerp_(_mean_square(grad, -2), one_minus_beta2)
            var_estimate = row_var @ col_var
            var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
        else:
            variance.lerp_(grad * grad, one_minus_beta2)
            var_estimate = variance.clone()
        update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_().mul_(grad)
        clip = max(1.0, update.norm(2).item() / (update.numel() ** 0.5 * d))  # RMS(update) / d, at least 1
        param.add_(update, alpha=_value(-alpha / clip))


def _mean_square(grad, dim):
    """The mean of grad² along `dim`, kept as a dimension of size 1 (as the squared norm over the size)."""
    return lantern.norm(grad, dim=dim, keepdim=True).square_().div_(grad.size(dim))
