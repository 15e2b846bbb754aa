"""The differentiation transforms of torch.func: grad, grad_and_value, vjp, jacrev, and over forward-mode AD jvp,
jacfwd, linearize and hessian.

Reverse mode runs on lantern's autograd. A transform makes fresh leaves of the inputs it differentiates, calls the
function, and asks lantern.autograd.grad for the gradients. Under vmap an input is a BatchedTensor; the transform
differentiates its physical tensor, which holds every example (an input not batched at some vmap level is first
expanded over that level, so that each example has its own copy): the examples of a batch never mix, so the
gradient of the sum of the examples' outputs is each example's own gradient. An outer transform (grad of grad)
sees the inner one's gradients as functions of its inputs: the inner one then builds its graph (create_graph).

>>> import lantern
>>> from lantern.func import grad, vmap
>>> grad(lambda x: (x ** 3).sum())(lantern.tensor([1., 2.]))
tensor([ 3., 12.])
>>> vmap(grad(lambda w, x: (w * x).sum() ** 2), in_dims=(None, 0))(lantern.ones(2), lantern.tensor([[1., 2.], [0., 1.]]))
tensor([[ 6., 12.],
        [ 0.,  2.]])
"""
import functools
import threading

from ..autograd import forward_ad
from ..core.tensor_impl import TensorImpl
from ..utils._pytree import tree_flatten, tree_map, tree_unflatten
from .batched_tensor import BatchedTensor, active_levels, add_batch_dim, unwrap
from .vmap import vmap
import lantern


class _Depth(threading.local):
    grad = 0   # reverse-mode transforms in progress on this thread


_depth = _Depth()


# ---- physical tensors --------------------------------------------------------------------------------------------
def to_physical(x, levels):
    """x (a tensor seen under the vmap `levels`) as one tensor with every level's batch dimension in front,
    outermost first; x not batched at a level is expanded over it."""
    for level in reversed(levels):
        value, bdim = unwrap(x, level.number)
        if bdim is None:
            x = x.expand(level.batch_size, *x.shape)
        else:
            x = value.movedim(bdim, 0)
    return x


def from_physical(x, levels):
    """The inverse of to_physical: x's leading dims as the batch dimensions of `levels`."""
    for level in levels:
        x = add_batch_dim(x, 0, level.number)
    return x


def _map_tensors(fn, tree):
    return tree_map(lambda x: fn(x) if isinstance(x, TensorImpl) else x, tree)


# ---- argnums -----------------------------------------------------------------------------------------------------
def _check_argnums(argnums, count):
    for n in (argnums if isinstance(argnums, tuple) else (argnums,)):
        if not isinstance(n, int):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        if not -count <= n < count:
            raise RuntimeError(f"Got argnum={n}, but only {count} positional inputs")
    if isinstance(argnums, tuple) and len(set(n % count for n in argnums)) != len(argnums):
        raise RuntimeError(f"argnums must be unique, got {argnums}")


def _selected(args, argnums):
    return tuple(args[n] for n in argnums) if isinstance(argnums, tuple) else args[argnums]


def _replaced(args, argnums, new):
    args = list(args)
    if isinstance(argnums, tuple):
        for n, value in zip(argnums, new):
            args[n] = value
    else:
        args[argnums] = new
    return tuple(args)


# ---- the reverse-mode core ---------------------------------------------------------------------------------------
class _Differentiated:
    """One call of func with fresh differentiable leaves for `primals` (a pytree): the logical output, and what
    a vector-Jacobian product needs (the physical leaves, the levels, whether to build a graph)."""

    def __init__(self, func, primals, call):
        self.levels = active_levels()
        leaves, self.spec = tree_flatten(primals)
        self.create_graph = _depth.grad > 0 or any(isinstance(x, TensorImpl) and x.requires_grad for x in leaves)
        self.physical = []
        inputs = []
        for x in leaves:
            if not isinstance(x, TensorImpl):
                raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")
            p = to_physical(x, self.levels)
            leaf = p.view_as(p) if p.requires_grad else p.detach().contiguous().requires_grad_(True)
            self.physical.append(leaf)
            leaf_or_dual = leaf
            for level, tangent in _tangents(x):  # jvps of this transform (hessian): x's tangents, made physical
                if not p.requires_grad:  # (the view of an outer transform's leaf keeps its tangents)
                    leaf_or_dual = _dual(leaf_or_dual, to_physical(tangent, self.levels), level)
            inputs.append(from_physical(leaf_or_dual, self.levels))
        _depth.grad += 1
        try:
            with lantern.enable_grad():
                self.output = call(tree_unflatten(inputs, self.spec))
        finally:
            _depth.grad -= 1

    def vjp(self, outputs, cotangents):
        """The gradients (a pytree like the primals) of sum(outputs * cotangents)."""
        outs = [to_physical(o, self.levels) for o in outputs]
        cts = [to_physical(c, self.levels) for c in cotangents]
        wanted = [(o, c) for o, c in zip(outs, cts) if o.requires_grad]
        grads = [None] * len(self.physical)
        if wanted:
            grads = lantern.autograd.grad([o for o, _ in wanted], self.physical, [c for _, c in wanted],
                                          create_graph=self.create_graph, retain_graph=True, allow_unused=True)
        grads = [lantern.zeros_like(p) if g is None else g for g, p in zip(grads, self.physical)]
        return tree_unflatten([self.from_physical(g) for g in grads], self.spec)

    def result(self, x):
        """x as the transform returns it: without history unless an outer transform differentiates it."""
        if not isinstance(x, TensorImpl):
            return x
        return self.from_physical(to_physical(x, self.levels))

    def from_physical(self, p):
        return from_physical(p if self.create_graph else _detached(p), self.levels)


def _tangents(x):
    """[(level, x's tangent at it)] over the forward-mode levels (jvps) in which x has one, outermost first."""
    found = [(level, forward_ad.unpack_dual(x, level=level).tangent) for level in forward_ad.levels()]
    return [(level, tangent) for level, tangent in found if tangent is not None]


def _dual(leaf, tangent, level):
    """leaf carrying `tangent` at `level` (given in the leaf's layout, so that make_dual does not copy it)."""
    if tangent.stride() != leaf.stride() and leaf.is_contiguous():
        tangent = tangent.contiguous()
    return forward_ad.make_dual(leaf, tangent, level=level)


def _keeping_tangent(source, detached):
    """`detached` carrying source's tangents, at every level it has one."""
    for level, tangent in _tangents(source):
        detached = _dual(detached, tangent, level)
    return detached


def _detached(x):
    """x without autograd history, keeping its tangent, through the BatchedTensors of vmaps inside the transform
    (jacrev's)."""
    if isinstance(x, BatchedTensor):
        return add_batch_dim(_detached(x._value), x._bdim, x._level)
    return _keeping_tangent(x, x.detach())


def grad_and_value(func, argnums=0, has_aux=False):
    """torch.func.grad_and_value: (gradient of func's scalar output w.r.t. args[argnums], the output)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        _check_argnums(argnums, len(args))
        run = _Differentiated(func, _selected(args, argnums),
                              lambda inputs: func(*_replaced(args, argnums, inputs), **kwargs))
        output, aux = _split_aux(run.output, has_aux, "grad_and_value(f)(*args)")
        if not isinstance(output, TensorImpl):
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(output)}")
        if output.dim() != 0:
            raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                               f"with {output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        gradients = run.vjp([output], [lantern.ones_like(output)])
        value = run.result(output)
        if has_aux:
            return gradients, (value, _map_tensors(run.result, aux))
        return gradients, value

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """torch.func.grad: the gradient of func's scalar output w.r.t. args[argnums] (with aux: (gradient, aux))."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        gradients, value = grad_and_value(func, argnums, has_aux)(*args, **kwargs)
        return (gradients, value[1]) if has_aux else gradients

    return wrapper


def _split_aux(output, has_aux, what):
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{what}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return output


def vjp(func, *primals, has_aux=False):
    """torch.func.vjp: (func(*primals), vjp_fn[, aux]); vjp_fn(cotangents) gives one gradient per primal."""
    run = _Differentiated(func, primals, lambda inputs: func(*inputs))
    output, aux = _split_aux(run.output, has_aux, "vjp(f, *primals)")
    out_leaves, out_spec = tree_flatten(output)
    for leaf in out_leaves:
        if not isinstance(leaf, TensorImpl):
            raise RuntimeError(f"vjp(f, *primals): Expected f to be a function that has non-empty output (and whose "
                               f"outputs are Tensors), got a {type(leaf)}")

    def vjp_fn(cotangents):
        ct_leaves, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of outputs "
                               f"to the function. cotangents: {ct_spec}, primal output: {out_spec}")
        for i, (o, c) in enumerate(zip(out_leaves, ct_leaves)):
            if tuple(o.shape) != tuple(c.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {c.shape} and output[{i}] has "
                                   f"a shape of {o.shape}.")
        return run.vjp(out_leaves, ct_leaves)

    result = _map_tensors(run.result, output)
    if has_aux:
        return result, vjp_fn, _map_tensors(run.result, aux)
    return result, vjp_fn


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """torch.func.jacrev: the Jacobian of func w.r.t. args[argnums] by reverse mode: vjp_fn vmapped over the rows
    of the identity (chunk_size of them at a time)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        _check_argnums(argnums, len(args))
        selected = _selected(args, argnums)
        output, vjp_fn, *aux = vjp(lambda *inputs: func(*_replaced(args, argnums, _unpack(inputs, argnums)),
                                                        **kwargs), *_pack(selected, argnums), has_aux=has_aux)
        out_leaves, out_spec = tree_flatten(output)
        basis = _identity_rows(out_leaves)
        rows = vmap(lambda *cts: vjp_fn(tree_unflatten(list(cts), out_spec)), chunk_size=chunk_size)(*basis)
        jacobian = _jacobian_tree(rows, out_leaves, out_spec, argnums)
        return (jacobian, aux[0]) if has_aux else jacobian

    return wrapper


def _pack(selected, argnums):
    return selected if isinstance(argnums, tuple) else (selected,)


def _unpack(inputs, argnums):
    return tuple(inputs) if isinstance(argnums, tuple) else inputs[0]


def _identity_rows(out_leaves):
    """For each output, its cotangents for the rows of the Jacobian: one-hot over all the outputs' elements."""
    sizes = [o.numel() for o in out_leaves]
    total = sum(sizes)
    eye = lantern.eye(total, dtype=out_leaves[0].dtype, device=out_leaves[0].device)
    parts = lantern.split(eye, sizes, dim=1)
    return [part.reshape(total, *o.shape) for part, o in zip(parts, out_leaves)]


def _jacobian_tree(rows, out_leaves, out_spec, argnums):
    """rows (one per primal, each of the outputs' total number of elements): cut into a Jacobian per output,
    shaped output shape + input shape, in the outputs' structure, each holding the argnums structure."""
    row_leaves, row_spec = tree_flatten(rows)
    per_output = []
    start = 0
    for o in out_leaves:
        n = o.numel()
        parts = [r.narrow(0, start, n).reshape(*o.shape, *r.shape[1:]) for r in row_leaves]
        start += n
        per_input = tree_unflatten(parts, row_spec)
        per_output.append(per_input if isinstance(argnums, tuple) else per_input[0])
    return tree_unflatten(per_output, out_spec)


# ---- forward mode --------------------------------------------------------------------------------------------------
def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """torch.func.jvp: (func(*primals), the Jacobian of func at primals times tangents), by dual tensors."""
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    p_leaves, p_spec = tree_flatten(primals)
    t_leaves, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, tangents also must be. Got "
                           f"primals with structure {p_spec} and tangents with structure {t_spec}")
    with forward_ad.nested_level():  # its own level, so that jvps nest (jacfwd of jacfwd)
        duals = [forward_ad.make_dual(p, t) for p, t in zip(p_leaves, t_leaves)]
        output = func(*tree_unflatten(duals, p_spec))
        output, aux = _split_aux(output, has_aux, "jvp(f, primals, tangents)")
        out_leaves, out_spec = tree_flatten(output)
        unpacked = [forward_ad.unpack_dual(o) for o in out_leaves]
        if strict and any(u.tangent is None for u in unpacked):
            raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of the "
                               "inputs. This is not allowed with strict=True.")
        primal_out = tree_unflatten([u.primal for u in unpacked], out_spec)
        tangent_out = tree_unflatten([lantern.zeros_like(u.primal) if u.tangent is None else u.tangent
                                      for u in unpacked], out_spec)
    if has_aux:
        return primal_out, tangent_out, aux
    return primal_out, tangent_out


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """torch.func.jacfwd: the Jacobian of func w.r.t. args[argnums] by forward mode: jvp vmapped over the columns
    of the identity."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        _check_argnums(argnums, len(args))
        primals = _pack(_selected(args, argnums), argnums)
        p_leaves, p_spec = tree_flatten(primals)
        sizes = [p.numel() for p in p_leaves]
        eye = lantern.eye(sum(sizes), dtype=p_leaves[0].dtype, device=p_leaves[0].device)
        basis = [part.reshape(sum(sizes), *p.shape) for part, p in zip(lantern.split(eye, sizes, dim=1), p_leaves)]

        def push_forward(*tangent_leaves):
            inner = lambda *ps: func(*_replaced(args, argnums, _unpack(ps, argnums)), **kwargs)  # noqa: E731
            result = jvp(inner, primals, tree_unflatten(list(tangent_leaves), p_spec), has_aux=has_aux)
            return (result[1], result[2]) if has_aux else result[1]

        # aux is the same for every column: the first one's is kept (a value computed beside batched tangents may
        # come out batched, so it cannot be returned with out_dims None)
        mapped = vmap(push_forward, out_dims=(-1, 0) if has_aux else -1, randomness=randomness)(*basis)
        columns, aux = mapped if has_aux else (mapped, None)
        jacobian = _forward_jacobian_tree(columns, p_leaves, p_spec, sizes, argnums)
        return (jacobian, _map_tensors(lambda t: t[0], aux)) if has_aux else jacobian

    return wrapper


def _forward_jacobian_tree(columns, p_leaves, p_spec, sizes, argnums):
    """columns (per output, its elements times all primals' elements): cut per primal, output shape + input shape."""
    def per_output(col):
        parts, start = [], 0
        for p, n in zip(p_leaves, sizes):
            parts.append(col.narrow(-1, start, n).reshape(*col.shape[:-1], *p.shape))
            start += n
        tree = tree_unflatten(parts, p_spec)
        return tree if isinstance(argnums, tuple) else tree[0]
    return tree_map(lambda c: per_output(c) if isinstance(c, TensorImpl) else c, columns)


def hessian(func, argnums=0):
    """torch.func.hessian: jacfwd of jacrev (forward-over-reverse)."""
    return jacfwd(jacrev(func, argnums), argnums)


def linearize(func, *primals):
    """torch.func.linearize: (func(*primals), jvp_fn), jvp_fn(*tangents) the Jacobian at primals times tangents."""
    output = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]

    return tree_map(lambda x: x.detach() if isinstance(x, TensorImpl) else x, output), jvp_fn
