"""Forward AD's kernel, part of the Autograd dispatch key: while a dual level is on, every op call passes here.

A call whose inputs carry no tangent computes as usual. Otherwise the op computes its value below (with forward AD
suspended, so a composite kernel's inner ops compute no tangents of their own), then its output's tangent comes
from the op's forward derivative (lantern/ops/forward_derivative.py): a formula over the primals and the tangents,
the op applied to the tangents (linear ops and views), or the double vjp through the backward formulas. The tangent
is computed with grad mode as it is, so a tangent is differentiable where its primals are (forward-over-reverse).
An in-place op writes the new tangent into self's tangent (a view's tangent is a view of its base's tangent).
Levels nest (torch.func): the kernel serves the level in effect, and computes the value and the tangent with that
level suspended and the one below in effect, so they pass through this kernel again for the level below.

>>> import lantern.autograd.forward_ad as fwAD
>>> with fwAD.dual_level():
...     x = fwAD.make_dual(lantern.tensor([0.]), lantern.tensor([2.]))
...     fwAD.unpack_dual(x.sin()).tangent
tensor([2.])
"""
from ..core.dispatch_keys import DispatchKey
from ..core.state import tls
from ..core.tensor_impl import TensorImpl, make_tensor
from ..ops import dispatcher
from ..ops.derivative_helpers import zeros_like
from ..ops.op_kinds import AliasKind
from .forward_ad import set_tangent, suspended, tangent_at, tangents_below
from .grad_mode import enable_grad, is_grad_enabled

_INPLACE = AliasKind.INPLACE


def forward_ad_kernel(op, args):
    """Compute `op` below, then give its outputs their tangents when an input carries one."""
    if not _carries_tangent(op, args):
        with suspended():
            return dispatcher.redispatch(op, args, DispatchKey.Tracer)
    d = op.derivative
    if d is not None and d.nondifferentiable:
        with suspended():
            return dispatcher.redispatch(op, args, DispatchKey.Tracer)
    rule = d.forward if d is not None else None
    if rule is None or rule.kind == "unsupported":
        raise NotImplementedError(
            f"Trying to use forward AD with {op.schema.name} that does not support it because it has not been "
            "implemented yet.\nlantern has no forward derivative for it (see lantern/ops/forward_formulas.py).")
    inplace = op.schema.alias is _INPLACE
    level = tls.forward_level
    with suspended():
        self_before = _clone_with_tangent(args[0], level) if inplace else None
        result = dispatcher.redispatch(op, args, DispatchKey.Tracer)
        primal_args = (self_before, *args[1:]) if inplace else args
        tangents = _RULES[rule.kind](op, d, rule, primal_args, result, level)
    _attach(op, args, result, tangents, inplace)
    return result


def _clone_with_tangent(t, level):
    """self as it was before an in-place op, with its tangent at `level` (the formulas read both)."""
    before = t.clone()
    tangent = tangent_at(t, level)
    if tangent is not None:
        set_tangent(before, tangent.clone(), level)
    return before


def _carries_tangent(op, args):
    for i in op.tensor_positions:
        a = args[i]
        if isinstance(a, TensorImpl) and a._fw_grad is not None:
            return True
    for i in op.list_positions:
        for a in args[i]:
            if isinstance(a, TensorImpl) and a._fw_grad is not None:
                return True
    return False


def tangent_or_zeros(a, level):
    """An argument's tangent at `level` as a formula reads it: its own, zeros for a tensor without one, 0 for a
    number."""
    if isinstance(a, TensorImpl):
        tangent = tangent_at(a, level)
        return tangent if tangent is not None else zeros_like(a)
    if isinstance(a, (list, tuple)):
        return [tangent_or_zeros(t, level) for t in a]
    return 0 if a is not None else None


def _primal(a, level):
    """A dual argument as a formula reads it: a view without the tangent at `level` (torch's `self_p`), so that
    what autograd saves of the formula's ops carries no tangent into a backward pass inside the level. Made while
    the level below is in effect, so a view keeps the tangents of the levels below."""
    if isinstance(a, TensorImpl):
        if tangent_at(a, level) is None:
            return a
        if a._requires_grad or a._backend.key is DispatchKey.Python or tangents_below(a, level):
            return a.view(a.shape)  # a view op: the formula's ops stay in the primal's graph
        return make_tensor(a._storage, a._size, a._stride, a._offset, a.dtype, a._backend, a._nd, a._vc, a._base)
    if isinstance(a, (list, tuple)):
        return type(a)(_primal(t, level) for t in a)
    return a


# ---- the kinds of forward derivative ----
def _formula(op, d, rule, args, result, level):
    """Evaluate the `result:` formula over the primals, the tangents (`<arg>_t`) and the output."""
    names = {**d.namespace, **rule.helpers}
    for a, value in zip(op.schema.args, args):
        names[a.name] = _primal(value, level)
        if a.name + "_t" in rule.names:
            names[a.name + "_t"] = tangent_or_zeros(value, level)
    names["result"] = result
    returns = op.schema.returns
    if len(returns) > 1:
        for k, r in enumerate(returns):
            names[r.name if r.name not in ("_", "") else f"result{k}"] = result[k]
    return eval(rule.code, names)


def _linear(op, d, rule, args, result, level):
    """A linear op applied to its inputs' tangents (views: the same view of the tangent). An in-place op into a
    self without a tangent writes into zeros made by another tangent's new_zeros: under vmap they are batched as
    that tangent is, so its examples fit (index_put_ in cumprod's backward under jacfwd of jacfwd)."""
    tangent_args = list(args)
    for index in d.arg_indices:
        tangent_args[index] = tangent_or_zeros(args[index], level)
    if op.schema.alias is _INPLACE and tangent_at(args[0], level) is None:
        others = [tangent_at(args[i], level) for i in d.arg_indices if i != 0 and isinstance(args[i], TensorImpl)]
        other = next((t for t in others if t is not None), None)
        if other is not None:
            tangent_args[0] = other.new_zeros(args[0].shape, dtype=args[0].dtype)
    return dispatcher.call(op.functional, tuple(tangent_args))


def _derived(op, d, rule, args, result, level):
    """The double vjp: with u the output's gradient, backward gives g(u) = Jᵀu (linear in u), and J t is the
    gradient of <g(u), t> with respect to u, the same at every u. The backward formulas are lantern ops, so autograd
    differentiates them, and where the primals or tangents require grad the result keeps its graph
    (reverse-over-forward: jacrev of jacfwd)."""
    from . import grad as autograd_grad  # cycle: autograd imports autograd.forward_kernel
    grad_mode = is_grad_enabled()
    call_args, leaves, tangents, differentiated = list(args), [], [], []

    def leaf(t):
        """t as the first gradient's input: in t's graph when the tangent must keep it, else a new leaf."""
        in_graph = grad_mode and t.requires_grad
        made = t.view(t.shape) if in_graph else _detached(t, level).requires_grad_()
        tangent = tangent_at(t, level)
        leaves.append(made)
        tangents.append(tangent)
        differentiated.append(in_graph or (grad_mode and tangent.requires_grad))
        return made
    for index in d.arg_indices:
        a = args[index]
        if _is_dual(a, level):
            call_args[index] = leaf(a)
        elif isinstance(a, (list, tuple)):
            call_args[index] = [leaf(t) if _is_dual(t, level) else t for t in a]
    keep_graph = any(differentiated)
    with enable_grad():
        outputs = dispatcher.call(op.functional, tuple(call_args))
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        differentiable = [o for o in outs if isinstance(o, TensorImpl) and o.requires_grad]
        us = [zeros_like(o).requires_grad_() for o in differentiable]
        gs = autograd_grad(differentiable, leaves, grad_outputs=us, create_graph=True, allow_unused=True)
        pairs = [(g, t) for g, t in zip(gs, tangents) if g is not None and g.requires_grad]
        jvps = autograd_grad([g for g, _ in pairs], us, grad_outputs=[t.to(g.dtype) for g, t in pairs],
                             create_graph=keep_graph, allow_unused=True) if pairs else [None] * len(us)
    by_output = {id(o): _kept_or_detached(j if j is not None else zeros_like(o), keep_graph, level)
                 for o, j in zip(differentiable, jvps)}
    tangents = tuple(by_output.get(id(o)) for o in outs)
    return tangents if isinstance(outputs, tuple) else tangents[0]


def _is_dual(a, level):
    return isinstance(a, TensorImpl) and tangent_at(a, level) is not None


def _kept_or_detached(t, keep_graph, level):
    return t if keep_graph else _detached(t, level)


def _detached(t, level):
    """t.detach() keeping t's tangents at the levels below `level` (nested levels, jacfwd of jacfwd: the levels
    below differentiate through this one's computation)."""
    made = t.detach()
    for lower, tangent in tangents_below(t, level):
        set_tangent(made, tangent, lower)
    return made


_RULES = {"formula": _formula, "linear": _linear, "derived": _derived}


# ---- attach ----
def _attach(op, args, result, tangents, inplace):
    if inplace:
        _update_inplace(args[0], tangents[0] if isinstance(tangents, tuple) else tangents)
    elif isinstance(result, tuple):
        for o, t in zip(result, tangents):
            _give(o, t)
    else:
        _give(result, tangents)


def _give(output, tangent):
    """Set a new output's tangent (floating and complex outputs only), shaped and typed as the output."""
    if tangent is None or not isinstance(output, TensorImpl):
        return
    if not (output.dtype.is_floating_point or output.dtype.is_complex):
        return
    with suspended():
        tangent = _fitted(output, tangent)
    set_tangent(output, tangent)
    _share_with_saved_output(output, tangent)


def _fitted(output, tangent):
    if not isinstance(tangent, TensorImpl):
        tangent = zeros_like(output) + tangent
    if tangent._size != output._size:
        tangent = tangent.expand(output.shape)
    if tangent.dtype is not output.dtype and not (tangent.dtype.is_complex and not output.dtype.is_complex):
        tangent = tangent.to(output.dtype)
    elif tangent.dtype.is_complex and not output.dtype.is_complex:
        tangent = tangent.real
    return tangent


def _share_with_saved_output(output, tangent):
    """An op that saved its own output for backward keeps a detached alias of it: the alias gets the tangent too,
    so a backward run inside the level (forward-over-reverse) sees it."""
    node = output._grad_fn
    saved = getattr(node, "saved", None)
    if not saved:
        return
    for value in saved.values():
        kept = getattr(value, "tensor", None)
        if (getattr(value, "is_output", False) and value.output_nr == output._output_nr
                and isinstance(kept, TensorImpl) and kept._storage is output._storage):
            set_tangent(kept, tangent)


def _update_inplace(self_, new):
    """An in-place op's new tangent goes into self's tangent, in place, so that views of it follow; a view
    without one gets a view of its base's tangent (zeros made for the base first)."""
    if new is None:
        return
    level = tls.forward_level
    with suspended():
        new = _fitted(self_, new)
        existing = tangent_at(self_, level)
        base = self_._base
        if existing is None and base is not None:
            base_tangent = tangent_at(base, level)
            if base_tangent is None:
                base_tangent = zeros_like(base)
                set_tangent(base, base_tangent, level)
            existing = base_tangent.as_strided(self_.shape, self_.stride(),
                                               self_._offset - base._offset + base_tangent._offset)
        if existing is None:
            set_tangent(self_, new, level)
            return
        if existing is not new:
            existing.copy_(new)
        set_tangent(self_, existing, level)
