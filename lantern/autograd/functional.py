"""autograd.functional: jacobian, hessian, vjp, jvp, hvp, vhp built on the engine (torch.autograd.functional).

>>> f = lambda x: x ** 3
>>> lantern.autograd.functional.jacobian(f, lantern.tensor([1., 2.])).tolist()
[[3.0, 0.0], [0.0, 12.0]]
"""
from ..core.tensor_impl import TensorImpl
from ..ops.derivative_helpers import zeros_like
from .grad_mode import enable_grad


def _tuple(x):
    return ((x,), False) if isinstance(x, TensorImpl) else (tuple(x), True)


def _prepare(inputs, create_graph):
    return tuple(x.detach().requires_grad_(True) if not create_graph or not x.requires_grad else x.view_as(x)
                 for x in inputs)


def _grad(outputs, inputs, grad_outputs, create_graph, strict, what):
    from . import grad
    outs = [o for o in outputs if o.requires_grad]
    gos = [g for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not outs:
        grads = (None,) * len(inputs)
    else:
        grads = grad(outs, inputs, gos, create_graph=create_graph, retain_graph=True, allow_unused=True)
    if strict and any(g is None for g in grads):
        raise RuntimeError(f"The output of the user-provided function is independent of input {grads.index(None)}. "
                           f"This is not allowed in strict mode ({what}).")
    return tuple(zeros_like(x) if g is None else g for x, g in zip(inputs, grads))


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J)."""
    with enable_grad():
        inputs, is_tuple = _tuple(inputs)
        inputs = _prepare(inputs, create_graph)
        outputs, out_tuple = _tuple(func(*inputs))
        if v is None:
            if len(outputs) != 1 or outputs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the user-provided function returns a single "
                                   "Tensor with a single element.")
            v = (outputs[0].new_ones(outputs[0]._size),)
        else:
            v, _ = _tuple(v)
        grads = _grad(outputs, inputs, v, create_graph, strict, "vjp")
    out = tuple(o if create_graph else o.detach() for o in outputs)
    return (out if out_tuple else out[0]), (grads if is_tuple else grads[0])


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v), by the double-vjp trick: J v = d/du (u^T J) v."""
    with enable_grad():
        inputs, is_tuple = _tuple(inputs)
        inputs = _prepare(inputs, True)
        outputs, out_tuple = _tuple(func(*inputs))
        if v is None:
            if len(inputs) != 1 or inputs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                                   "single Tensor with a single element.")
            v = (inputs[0].new_ones(inputs[0]._size),)
        else:
            v, _ = _tuple(v)
        us = tuple(zeros_like(o).requires_grad_(True) for o in outputs)
        grads = _grad(outputs, inputs, us, True, strict, "jvp")
        jv = _grad(grads, us, v, create_graph, strict, "jvp")
    out = tuple(o if create_graph else o.detach() for o in outputs)
    jv = tuple(j if create_graph else j.detach() for j in jv)
    return (out if out_tuple else out[0]), (jv if out_tuple else jv[0])


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian d func / d inputs, one row per output element (shape: output.shape + input.shape)."""
    from ..ops.dispatcher import call
    from ..ops.registry import get
    with enable_grad():
        inputs, is_tuple = _tuple(inputs)
        inputs = _prepare(inputs, create_graph)
        outputs, out_tuple = _tuple(func(*inputs))
        table = []
        for o in outputs:
            rows = [[] for _ in inputs]
            for k in range(o.numel()):
                seed = zeros_like(o)
                seed.view(-1)._backend.array(seed.view(-1))[k] = 1
                grads = _grad((o,), inputs, (seed,), create_graph, strict, "jacobian")
                for i, g in enumerate(grads):
                    rows[i].append(g)
            per_input = []
            for x, r in zip(inputs, rows):
                stacked = call(get("stack"), (r, 0)) if r else zeros_like(x).reshape(0, *x._size)
                per_input.append(stacked.reshape(o._size + x._size))
            table.append(tuple(per_input))
    if not create_graph:
        table = [tuple(j.detach() for j in row) for row in table]
    if not out_tuple and not is_tuple:
        return table[0][0]
    if not out_tuple:
        return table[0]
    if not is_tuple:
        return tuple(row[0] for row in table)
    return tuple(table)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function."""
    inputs_t, is_tuple = _tuple(inputs)

    def gradient(*xs):
        out = func(*xs)
        if not isinstance(out, TensorImpl) or out.numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor with a single element")
        return _grad((out,), xs, (out.new_ones(out._size),), True, strict, "hessian")
    h = jacobian(gradient, inputs_t, create_graph=create_graph, strict=strict)
    return h if is_tuple else h[0][0]


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H)."""
    with enable_grad():
        inputs, is_tuple = _tuple(inputs)
        inputs = _prepare(inputs, True)
        out = func(*inputs)
        v, _ = _tuple(v)
        g = _grad((out,), inputs, (out.new_ones(out._size),), True, strict, "vhp")
        res = _grad(g, inputs, v, create_graph, strict, "vhp")
    res = tuple(r if create_graph else r.detach() for r in res)
    return (out if create_graph else out.detach()), (res if is_tuple else res[0])


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v); the Hessian is symmetric, so this equals vhp."""
    return vhp(func, inputs, v, create_graph, strict)
