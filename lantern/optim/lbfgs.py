"""LBFGS: limited-memory BFGS over all parameters flattened into one vector, optionally with a strong-Wolfe line
search (torch.optim.LBFGS). `step` needs a closure that recomputes the loss and its gradients.

>>> import lantern
>>> x = lantern.tensor([-1.5, 2.0], requires_grad=True)
>>> opt = lantern.optim.LBFGS([x], line_search_fn="strong_wolfe")
>>> def closure():
...     opt.zero_grad()
...     loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
...     loss.backward()
...     return loss
>>> for _ in range(3):
...     _ = opt.step(closure)
>>> [round(v, 4) for v in x.tolist()]
[1.0, 1.0]
"""
import lantern
from .optimizer import Optimizer
from ._common import _to_scalar, _validate, _value

__all__ = ["LBFGS"]


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to `bounds` (default: [x1, x2]);
    the midpoint when the cubic has no real minimiser."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2.0
    d2 = d2_square.sqrt()
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, lo), hi)


class _Bracket:
    """The interval of step sizes known to contain an acceptable step: steps t, losses f, gradients g, g·d."""

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def _kept_copy(flat_grad, kept):
    """flat_grad copied into `kept` (the previous iteration's gradient), made on the first iteration."""
    if kept is None:
        return flat_grad.clone(memory_format=lantern.contiguous_format)
    return kept.copy_(flat_grad)


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Find a step t along d meeting the strong Wolfe conditions: returns (loss, flat grad, t, evaluations)."""
    d_norm = d.abs().max()
    g = g.clone()
    f_new, g_new = obj_func(x, t, d)
    evals = 1
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    bracket = None
    # Phase 1: grow the step until an interval brackets a good point (or the step is already good).
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket = _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new])
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket = _Bracket([t], [f_new], [g_new], None)
            done = True
            break
        if gtd_new >= 0:
            bracket = _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new])
            break
        t_next = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                                    bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new.clone(), gtd_new
        t = t_next
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket = _Bracket([0, t], [f, f_new], [g, g_new], None)
    # Phase 2 ("zoom"): shrink the bracket by cubic interpolation until the conditions hold.
    b = bracket
    low, high = (0, 1) if b.f[0] <= b.f[-1] else (1, 0)
    insufficient_progress = False
    while not done and ls_iter < max_ls:
        if abs(b.t[1] - b.t[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(b.t[0], b.f[0], b.gtd[0], b.t[1], b.f[1], b.gtd[1])
        # keep t away from the ends of the bracket so that it keeps shrinking
        t_max, t_min = max(b.t), min(b.t)
        eps = 0.1 * (t_max - t_min)
        if min(t_max - t, t - t_min) < eps:
            if insufficient_progress or t >= t_max or t <= t_min:
                t = t_max - eps if abs(t - t_max) < abs(t - t_min) else t_min + eps
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= b.f[low]:
            b.t[high], b.f[high], b.g[high], b.gtd[high] = t, f_new, g_new.clone(), gtd_new
            low, high = (0, 1) if b.f[0] <= b.f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (b.t[high] - b.t[low]) >= 0:
                b.t[high], b.f[high], b.g[high], b.gtd[high] = b.t[low], b.f[low], b.g[low], b.gtd[low]
            b.t[low], b.f[low], b.g[low], b.gtd[low] = t, f_new, g_new.clone(), gtd_new
    return b.f[low], b.g[low], b.t[low], evals


class LBFGS(Optimizer):
    """L-BFGS over a single param group. Each `step(closure)` runs up to max_iter iterations (max_eval closure
    calls), keeping the last history_size curvature pairs; stops early on tolerance_grad / tolerance_change.
    State (on the first parameter): func_evals, n_iter, d, t, old_dirs, old_stps, ro, H_diag, prev_flat_grad,
    prev_loss and, after the second iteration, al."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        _validate(lr=lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _gather_flat_grad(self):
        """All grads as one flat vector (zeros for a param without grad)."""
        views = []
        for p in self._params:
            if p.grad is None:
                views.append(lantern.zeros(p.numel(), dtype=p.dtype, device=p.device))
            else:
                views.append(p.grad.view(-1))
        return lantern.cat(views, 0)

    def _add_grad(self, step_size, update):
        """p += step_size · (p's slice of the flat vector `update`), for every parameter."""
        step_size = _value(step_size)
        offset = 0
        for p in self._params:
            numel = p.numel()
            p.add_(update[offset:offset + numel].view_as(p), alpha=step_size)
            offset += numel

    def _clone_param(self):
        return [p.clone(memory_format=lantern.contiguous_format) for p in self._params]

    def _set_param(self, params_data):
        for p, data in zip(self._params, params_data):
            p.copy_(data)

    def _directional_evaluate(self, closure, x, t, d):
        """Loss and flat gradient at x + t·d; the parameters are put back to x afterwards."""
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def _direction(self, state, history, flat_grad, d, t, prev_flat_grad):
        """The quasi-Newton direction from the two-loop recursion, after adding the newest curvature pair to
        `history` = [old_dirs, old_stps, ro, H_diag] (updated in place)."""
        old_dirs, old_stps, ro, _ = history
        history_size = self.param_groups[0]["history_size"]
        y = flat_grad.sub(prev_flat_grad)
        s = d.mul(t)
        ys = y.dot(s)
        if ys > 1e-10:
            if len(old_dirs) == history_size:
                old_dirs.pop(0)
                old_stps.pop(0)
                ro.pop(0)
            old_dirs.append(y)
            old_stps.append(s)
            ro.append(1.0 / ys)
            history[3] = ys / y.dot(y)
        if "al" not in state:
            state["al"] = [None] * history_size
        al = state["al"]
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q.add_(old_dirs[i], alpha=-_value(al[i]))
        r = lantern.mul(q, history[3])
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r.add_(old_stps[i], alpha=_value(al[i] - be_i))
        return r

    def step(self, closure):
        """Run up to max_iter L-BFGS iterations; `closure()` must zero the grads, compute the loss, call backward
        and return the loss. Returns the loss from the first closure call."""
        with lantern.no_grad():
            return self._run(closure)

    def _step_along(self, closure, line_search_fn, d, t, loss, flat_grad, gtd, max_ls, last_iteration):
        """Move the parameters along direction d: by a strong-Wolfe line search, or by the fixed step t (then the
        loss and gradient are evaluated again unless this is the last iteration). (loss, flat_grad, t, evals)."""
        if line_search_fn is None:
            self._add_grad(t, d)
            if last_iteration:
                return loss, flat_grad, t, 0
            loss = float(closure())
            return loss, self._gather_flat_grad(), t, 1
        if line_search_fn != "strong_wolfe":
            raise RuntimeError("only 'strong_wolfe' is supported")
        x_init = self._clone_param()

        def obj_func(x, t, d):
            return self._directional_evaluate(closure, x, t, d)

        loss, flat_grad, t, evals = _strong_wolfe(obj_func, x_init, t, d, loss, flat_grad, gtd, max_ls=max_ls)
        self._add_grad(t, d)
        return loss, flat_grad, t, evals

    def _run(self, user_closure):
        def closure():
            with lantern.enable_grad():
                return user_closure()

        group = self.param_groups[0]
        lr = _to_scalar(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn = group["line_search_fn"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max() <= tolerance_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        history = [state.get("old_dirs"), state.get("old_stps"), state.get("ro"), state.get("H_diag")]
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d, history = flat_grad.neg(), [[], [], [], 1]
            else:
                d = self._direction(state, history, flat_grad, d, t, prev_flat_grad)
            prev_flat_grad = _kept_copy(flat_grad, prev_flat_grad)
            prev_loss = loss
            # the first step is scaled down so that it moves at most lr in the L1 sense
            t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:  # not a descent direction
                break
            loss, flat_grad, t, evals = self._step_along(closure, line_search_fn, d, t, loss, flat_grad, gtd,
                                                         max_eval - current_evals, n_iter == max_iter)
            opt_cond = evals > 0 and flat_grad.abs().max() <= tolerance_grad  # no evaluation: nothing new to test
            current_evals += evals
            state["func_evals"] += evals
            if (n_iter == max_iter or current_evals >= max_eval or opt_cond
                    or d.mul(t).abs().max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change):
                break

        state["d"], state["t"] = d, t  # in torch's order: state_dict() lists the keys as they were made
        state["old_dirs"], state["old_stps"], state["ro"], state["H_diag"] = history
        state["prev_flat_grad"], state["prev_loss"] = prev_flat_grad, prev_loss
        return orig_loss
