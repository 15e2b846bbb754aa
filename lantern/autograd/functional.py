"""autograd.functional: jacobian, hessian, vjp, jvp, hvp, vhp built on the engine (torch.autograd.functional).

Forward-mode products (jvp, hvp) use the double-backward trick: J v = d/du (uᵀ J) v, since uᵀ J is linear in u.

>>> f = lambda x: x ** 3
>>> lantern.autograd.functional.jacobian(f, lantern.tensor([1., 2.])).tolist()
[[3.0, 0.0], [0.0, 12.0]]
"""
from ..core.tensor_impl import TensorImpl
from ..ops.derivative_helpers import zeros_like
from ..ops.dispatcher import call
from ..ops.registry import get
from . import forward_ad
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled


def _as_tuple(x, arg_name, fn_name):
    """(was it a tuple, the tuple), checking that every element is a tensor."""
    is_tuple = isinstance(x, tuple)
    items = x if is_tuple else (x,)
    for i, t in enumerate(items):
        if not isinstance(t, TensorImpl):
            where = f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors"
            raise TypeError(f"{where} but the value at index {i} has type {type(t)}." if is_tuple else
                            f"{where} but the given {arg_name} has type {type(t)}.")
    return is_tuple, items


def _untuple(res, is_tuple):
    return res if is_tuple else res[0]


def _preprocess(inputs, create_graph, need_graph):
    """Inputs as the function sees them: linked to the caller's graph only when building a graph on top."""
    return tuple(x.view_as(x) if create_graph and x.requires_grad else x.detach().requires_grad_(need_graph)
                 for x in inputs)


def _postprocess(xs, create_graph):
    return xs if create_graph else tuple(x.detach() for x in xs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
                           if is_other_tuple else "The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, other)):
        if a.shape != b.shape:
            prefix = f"Entry {i} in " if is_other_tuple else ""
            raise RuntimeError(f"{prefix}v has invalid size: should be {b.shape} but got {a.shape}.")


_NOT_DIFFERENTIABLE = {
    "outputs": "Output {i} of the user-provided function does not require gradients. The outputs must be computed "
               "in a differentiable manner from the input when running in strict mode.",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the user-provided "
                   "function. This is not allowed in strict mode.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided function with respect "
                "to input {i} is independent of the input. This is not allowed in strict mode. You should ensure "
                "that your function is twice differentiable and that the jacobian depends on the inputs (this "
                "would be violated by a linear function for example).",
    "hessian": "The hessian of the user-provided function with respect to input {i} is independent of the input. "
               "This is not allowed in strict mode. You should ensure that your function is thrice differentiable "
               "and that the hessian depends on the inputs.",
}


def _check_requires_grad(tensors, kind, strict):
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(_NOT_DIFFERENTIABLE[kind].format(i=i))


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict "
            "mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
                  "using the double backward trick to compute forward mode gradients. This is not allowed in strict "
                  "mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
                   "strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the double "
                         "backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    """None gradients become zeros shaped like `refs`, or, in strict mode, an error saying what was independent."""
    out = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode when create_graph=True.")
        out.append(g)
    return tuple(out)


def _grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None, is_grads_batched=False):
    """autograd.grad over the outputs that require grad (None for every input when none does)."""
    from . import grad  # cycle: lantern.autograd (the package, where grad is) imports this module
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return grad([o for o, _ in pairs], inputs, [g for _, g in pairs], retain_graph=retain_graph,
                create_graph=create_graph, allow_unused=True, is_grads_batched=is_grads_batched)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), vᵀ J)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _preprocess(inputs, create_graph, True)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        if v is not None:
            v = _preprocess(_as_tuple(v, "v", "vjp")[1], create_graph, False)
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function returns a single Tensor "
                               "with a single element.")
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grads = _fill_in_zeros(_grad(outputs, inputs, v, create_graph), inputs, strict, create_graph, "back")
    return (_untuple(_postprocess(outputs, create_graph), is_outputs_tuple),
            _untuple(_postprocess(grads, create_graph), is_inputs_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v), by the double-backward trick."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _preprocess(inputs, create_graph, True)
        if v is not None:
            v = _preprocess(_as_tuple(v, "v", "jvp")[1], create_graph, False)
            _validate_v(v, inputs, is_inputs_tuple)
        elif len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                               "single Tensor with a single element.")
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        us = tuple(zeros_like(o).requires_grad_(True) for o in outputs)
        grad_inputs = _grad(outputs, inputs, us, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        jv = _fill_in_zeros(_grad(grad_inputs, us, v, create_graph), outputs, strict, create_graph, "back_trick")
    return (_untuple(_postprocess(outputs, create_graph), is_outputs_tuple),
            _untuple(_postprocess(jv, create_graph), is_outputs_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian d func / d inputs: for output i and input j, a tensor of shape output_i.shape + input_j.shape.
    vectorize=True computes all rows (reverse mode) or all columns (strategy="forward-mode", dual tensors) in one
    pass under vmap; vectorize=False asks for the rows one at a time."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if strict:
            raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` '
                               'are not supported together (yet). Please either set `strict=False` or '
                               '`strategy="reverse-mode"`.')
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and '
                                      '`strategy="forward-mode"` are not supported together (yet). Please either '
                                      'set `create_graph=False` or `strategy="reverse-mode"`.')
        return _forward_mode_jacobian(func, inputs, vectorize)
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _preprocess(inputs, create_graph, True)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        if vectorize:
            if strict:
                raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                                   "supported together. Please either set `strict=False` or `vectorize=False`.")
            table = _vectorized_jacobian(outputs, inputs, create_graph)
        else:
            table = tuple(_jacobian_of_output(i, out, inputs, create_graph, strict) for i, out in enumerate(outputs))
    table = tuple(_postprocess(row, create_graph) for row in table)
    if not is_outputs_tuple:
        return _untuple(table[0], is_inputs_tuple)
    return tuple(_untuple(row, is_inputs_tuple) for row in table)


def _forward_mode_jacobian(func, inputs, vectorize):
    """The Jacobian by forward mode, as torch builds it: the unit tangents of every input element (the standard
    basis) pushed through func at once, a jvp under vmap, so each output's tangent holds all its Jacobian's columns.
    The primals require grad, so that a reverse-mode jacobian inside func keeps their tangents (forward-over-reverse
    hessian)."""
    from . import _vmap  # cycle: lantern.autograd (where vmap is installed) imports this module
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                                  "only implemented for `vectorize=True`.")
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    primals = tuple(x.detach().requires_grad_(x.is_floating_point() or x.is_complex()) for x in inputs)
    numels = tuple(p.numel() for p in primals)
    seen = []  # (is the output a tuple, the outputs' shapes), from the call under vmap

    def push_forward(*tangents):
        with forward_ad.dual_level(), enable_grad():
            duals = tuple(forward_ad.make_dual(p, t.view_as(p)) for p, t in zip(primals, tangents))
            is_tuple, outputs = _as_tuple(func(*duals), "outputs of the user-provided function", "jacobian")
            seen[:] = [is_tuple, [o.shape for o in outputs]]
            return tuple(_tangent_or_zeros(forward_ad.unpack_dual(o).tangent, o) for o in outputs)
    columns = _vmap[0](push_forward)(*_standard_basis(primals, numels))
    is_outputs_tuple, shapes = seen
    table = [[jac.detach().movedim(0, -1).reshape(tuple(shape) + tuple(x.shape))
              for jac, x in zip(col.split(numels, 0), primals)]
             for col, shape in zip(columns, shapes)]  # lists, not tuples: torch's forward-mode jacobian returns lists
    if not is_outputs_tuple:
        return _untuple(table[0], is_inputs_tuple)
    return [_untuple(row, is_inputs_tuple) for row in table]


def _standard_basis(tensors, numels):
    """For each tensor, its part of the identity of size sum(numels): rows of zeros but for a one at the element's
    column, so that row k is the unit vector of the k-th element over all the tensors."""
    total, start, parts = sum(numels), 0, []
    for t, n in zip(tensors, numels):
        part = t.new_zeros(total, n)
        part.diagonal(-start).fill_(1)
        parts.append(part)
        start += n
    return parts


def _tangent_or_zeros(tangent, out):
    return zeros_like(out) if tangent is None else tangent


def _vectorized_jacobian(outputs, inputs, create_graph):
    """Every row of the Jacobian from one backward pass, as torch's vectorize=True: the outputs' standard basis as a
    batch of grad_outputs (autograd.grad's is_grads_batched, a vmap over the backward). Rows per output, then per
    input, as the loop gives them."""
    numels = tuple(o.numel() for o in outputs)
    flat = tuple(o.reshape(-1) for o in outputs)
    grads = _grad(flat, inputs, _standard_basis(outputs, numels), create_graph, is_grads_batched=True)
    grads = [zeros_like(x).expand(sum(numels), *x.shape) if g is None else g for g, x in zip(grads, inputs)]
    return tuple(tuple(g.narrow(0, sum(numels[:i]), n).reshape(tuple(out.shape) + tuple(x.shape))
                       for g, x in zip(grads, inputs))
                 for i, (out, n) in enumerate(zip(outputs, numels)))


def _jacobian_of_output(i, out, inputs, create_graph, strict):
    rows = [[] for _ in inputs]
    flat = out.reshape(-1)
    for k in range(out.numel()):
        for j, (g, x) in enumerate(zip(_grad((flat[k],), inputs, None, create_graph, True), inputs)):
            if g is None:
                if strict:
                    raise RuntimeError(f"Output {i} of the user-provided function is independent of input {j}. This "
                                       "is not allowed in strict mode.")
                g = zeros_like(x)
            elif strict and create_graph and not g.requires_grad:
                raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. This "
                                   "is not allowed in strict mode when create_graph=True.")
            rows[j].append(g)
    return tuple(_stacked_rows(r, x).view(out.shape + x.shape) for r, x in zip(rows, inputs))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a function returning a single-element tensor."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def single_output(*xs):
        out = func(*xs)
        is_out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outs, "outputs", strict)
        if is_out_tuple:
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single "
                               "element")
        return out.squeeze()

    def jac_func(*xs):
        jac = jacobian(single_output, xs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return res if is_inputs_tuple else res[0][0]


def _hessian_product_setup(func, inputs, v, create_graph, strict, name):
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", name)
    inputs = _preprocess(inputs, create_graph, True)
    if v is not None:
        v = _preprocess(_as_tuple(v, "v", name)[1], create_graph, False)
        _validate_v(v, inputs, is_inputs_tuple)
    elif len(inputs) != 1 or inputs[0].numel() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided function is a single "
                           "Tensor with a single element.")
    is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", name)
    _check_requires_grad(outputs, "outputs", strict)
    if is_outputs_tuple:
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {name} should contain a single element")
    jac = _grad(outputs, inputs, None, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict)
    return is_inputs_tuple, inputs, v, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), vᵀ H)."""
    with enable_grad():
        is_inputs_tuple, inputs, v, outputs, jac = _hessian_product_setup(func, inputs, v, create_graph, strict,
                                                                          "vhp")
    with set_grad_enabled(create_graph or is_grad_enabled()):
        res = _fill_in_zeros(_grad(jac, inputs, v, create_graph), inputs, strict, create_graph, "double_back")
    return _postprocess(outputs, create_graph)[0], _untuple(_postprocess(res, create_graph), is_inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v), by the double-backward trick."""
    with enable_grad():
        is_inputs_tuple, inputs, v, outputs, jac = _hessian_product_setup(func, inputs, v, create_graph, strict,
                                                                          "hvp")
        grad_jac = tuple(zeros_like(x).requires_grad_(True) for x in inputs)
        double_back = _grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        res = _fill_in_zeros(_grad(double_back, grad_jac, v, create_graph), inputs, strict, create_graph,
                             "double_back_trick")
    return _postprocess(outputs, create_graph)[0], _untuple(_postprocess(res, create_graph), is_inputs_tuple)


def _stacked_rows(rows, x):
    """One Jacobian block: the per-output-element gradients stacked (an empty block for an empty output)."""
    return call(get("stack"), (rows, 0)) if rows else zeros_like(x).reshape((0,) + tuple(x.shape))
