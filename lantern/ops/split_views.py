"""split, split_with_sizes and unbind: ops returning several views of their input, recorded as one autograd node;
and unsafe_split, unsafe_split_with_sizes, whose pieces autograd does not treat as views; chunk and unsafe_chunk.

Each output is a narrow (a select for unbind) of the input, sharing its memory; the node (SplitBackward0,
SplitWithSizesBackward0, UnbindBackward0, as in PyTorch) gives the input's gradient from all outputs' gradients at
once, one cat (stack for unbind) with zeros where an output got none. Such views may not be modified in place
while autograd records (lantern/autograd/kernel.py), as in PyTorch.

>>> x = lantern.arange(6.).requires_grad_()
>>> a, b = x.split(3)
>>> a.grad_fn is b.grad_fn, a.grad_fn.name(), b._base is x
(True, 'SplitBackward0', True)
>>> (a * 2).sum().backward(); x.grad.tolist()
[2.0, 2.0, 2.0, 0.0, 0.0, 0.0]
"""
from ..core.dispatch_keys import DispatchKey
from ..core.reference import specialisation
from ..core.tensor_impl import make_tensor
from .derivative import derivative
from .derivative_specialisation import on_float_arrays, specialise_derivative
from .dispatcher import call
from .forward_derivative import linear
from .math_bits import view_keeping_bits
from .meta_util import wrap_dim
from .registry import composite, custom, get


def split_sizes(n, split_size):
    """The sizes split(split_size) cuts a dim of size n into: equal parts, the last one smaller if needed."""
    if split_size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={split_size}")
    if split_size == 0 and n:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    return [min(split_size, n - i) for i in range(0, n, split_size or 1)] or [0]


def _split_dim(self, dim):
    if self.dim() == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    return wrap_dim(dim, self.dim())


def _narrowed(make_view, self, d, sizes):
    """The views of self along dim d, one per size, each starting where the one before ends."""
    narrow, out, start = get("narrow"), [], 0
    for s in sizes:
        out.append(make_view(narrow, (self, d, start, s)))
        start += s
    return tuple(out)


def _split(make_view, self, split_size, dim=0):
    d = _split_dim(self, dim)
    return _narrowed(make_view, self, d, split_sizes(self._size[d], split_size))


def _split_with_sizes(make_view, self, split_sizes, dim=0):
    d = _split_dim(self, dim)
    sizes = list(split_sizes)
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                           f"split_sizes={sizes}")
    if sum(sizes) != self._size[d]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {self._size[d]} (input tensor's "
                           f"size at dimension {d}), but got split_sizes={sizes}")
    return _narrowed(make_view, self, d, sizes)


def _unbind(make_view, self, dim=0):
    if self.dim() == 0 and dim in (0, -1):
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")  # -1 wraps to 0 there, as in torch
    d = wrap_dim(dim, self.dim())
    select = get("select")
    return tuple(make_view(select, (self, d, i)) for i in range(self._size[d]))


def chunked(input, chunks, dim=0, unsafe=False):
    """chunk (unsafe_chunk): split (unsafe_split) into pieces of ceil(n / chunks); an empty dim gives `chunks`
    empty pieces by split_with_sizes, as in PyTorch."""
    if input.dim() == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    split, with_sizes = ("unsafe_split", "unsafe_split_with_sizes") if unsafe else ("split.Tensor", "split_with_sizes")
    n = input._size[wrap_dim(dim, input.dim())]
    if n == 0:
        return call(get(with_sizes), (input, [0] * chunks, dim))
    return call(get(split), (input, -(-n // chunks), dim))


def _on_device(views):
    """The device kernel(backend, *args): each view made by the backend."""
    return lambda backend, *args: views(backend.run_view, *args)


def _keeping_bits(views):
    """The Conjugate and Negative keys' kernel: views of a conjugate or negative view keep its bits (as narrow's
    do), where the math-bits fallback would split a resolved copy."""
    return lambda op, args: views(view_keeping_bits, *args)


def _unsafe(views):
    """The device kernel of unsafe_split and unsafe_split_with_sizes: the pieces share the input's memory but are
    no views to autograd (no _base, a version counter each), as in PyTorch; a conjugate input is resolved first
    (the math-bits fallback, since they are no view ops)."""
    def piece(op, args):
        size, stride, offset = op.meta(*args)
        self = args[0]
        return make_tensor(self._storage, size, stride, offset, self.dtype, self._backend)
    return lambda backend, *args: views(piece, *args)


# op -> its views(make_view, *args), where make_view(op, args) makes one view of a view op (a backend's run_view);
# the other backends (quantized) make theirs with their own
SEVERAL_VIEWS = {"split.Tensor": _split, "split_with_sizes": _split_with_sizes, "unbind.int": _unbind}
for _name, _args in (("split.Tensor", "int split_size, int dim=0"),
                     ("split_with_sizes", "int[] split_sizes, int dim=0"), ("unbind.int", "int dim=0")):
    _views = SEVERAL_VIEWS[_name]
    _op = custom(f"{_name}(Tensor(a) self, {_args}) -> Tensor(a)[]", _on_device(_views), _on_device(_views))
    _op.kernels[DispatchKey.Conjugate] = _op.kernels[DispatchKey.Negative] = _keeping_bits(_views)
for _text, _views in (("unsafe_split(Tensor self, int split_size, int dim=0) -> Tensor[]", _split),
                      ("unsafe_split_with_sizes(Tensor self, int[] split_sizes, int dim=0) -> Tensor[]",
                       _split_with_sizes)):
    custom(_text, _unsafe(_views), meta_kernel=_unsafe(_views))


def unsafe_chunk(input, chunks, dim=0):
    """chunk by unsafe_split: pieces sharing input's memory that autograd does not treat as views."""
    return chunked(input, chunks, dim, unsafe=True)


composite("unsafe_chunk", unsafe_chunk)


# ---- derivatives: one cat (stack) of the outputs' gradients, zeros standing in for the missing ones ----
def _filled(grads, shapes):
    """grads with zeros shaped `shapes[k]` where output k got no gradient."""
    like = next(g for g in grads if g is not None)
    return [g if g is not None else like.new_zeros(shape) for g, shape in zip(grads, shapes)]


def split_with_sizes_backward(grads, split_sizes, dim, meta):
    """The input's gradient: the outputs' gradients concatenated along dim."""
    d = wrap_dim(dim, len(meta.size))
    shapes = [meta.size[:d] + (s,) + meta.size[d + 1:] for s in split_sizes]
    return call(get("cat"), (_filled(grads, shapes), d))


def split_backward(grads, split_size, dim, meta):
    d = wrap_dim(dim, len(meta.size))
    return split_with_sizes_backward(grads, split_sizes(meta.size[d], split_size), d, meta)


def unbind_backward(grads, dim, meta):
    """The input's gradient: the outputs' gradients stacked along dim."""
    d = wrap_dim(dim, len(meta.size))
    shape = meta.size[:d] + meta.size[d + 1:]
    return call(get("stack"), (_filled(grads, [shape] * len(grads)), d))


@specialisation(replaces="split_with_sizes_backward (a zero tensor per output without a gradient, then cat)",
                when="backward without create_graph, fast paths on; on_float_grads(grads)",
                parity_test="tests/test_split_ops.py::test_split_backward_on_arrays_matches_the_readable_formula",
                ops=("split.Tensor", "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes"))
def split_with_sizes_backward_on_arrays(grads, split_sizes, dim, meta):
    """Each output's gradient written into its part of one new row-major tensor; zeros where an output got none."""
    like = next(g for g in grads if g is not None)
    backend = like._backend
    out = backend.empty(meta.size, like.dtype)
    whole = backend.array(out)
    where, d, start = [slice(None)] * len(meta.size), wrap_dim(dim, len(meta.size)), 0
    for g, size in zip(grads, split_sizes):
        where[d] = slice(start, start + size)
        whole[tuple(where)] = 0 if g is None else backend.array(g)
        start += size
    return out


def split_backward_on_arrays(grads, split_size, dim, meta):
    """split_backward through split_with_sizes_backward_on_arrays."""
    d = wrap_dim(dim, len(meta.size))
    return split_with_sizes_backward_on_arrays(grads, split_sizes(meta.size[d], split_size), d, meta)


def on_float_grads(grads):
    """on_float_arrays for the gradients the outputs got."""
    return on_float_arrays(*(g for g in grads if g is not None))


_HELPERS = {"split_backward": split_backward, "split_with_sizes_backward": split_with_sizes_backward,
            "unbind_backward": unbind_backward}
derivative("split.Tensor", self="split_backward(grads, split_size, dim, self_meta)", helpers=_HELPERS)
derivative("split_with_sizes", self="split_with_sizes_backward(grads, split_sizes, dim, self_meta)",
           helpers=_HELPERS)
derivative("unbind.int", self="unbind_backward(grads, dim, self_meta)", helpers=_HELPERS)
derivative("unsafe_split", self="split_backward(grads, split_size, dim, self_meta)", helpers=_HELPERS)
derivative("unsafe_split_with_sizes", self="split_with_sizes_backward(grads, split_sizes, dim, self_meta)",
           helpers=_HELPERS)
# forward AD: the tangent split the same way (split and unbind, as views, get theirs in ops/forward_formulas.py)
linear("unsafe_split", "unsafe_split_with_sizes")
_FAST = {**_HELPERS, "split_backward_on_arrays": split_backward_on_arrays, "on_float_grads": on_float_grads,
         "split_with_sizes_backward_on_arrays": split_with_sizes_backward_on_arrays}
for _name in ("split.Tensor", "unsafe_split"):
    specialise_derivative(_name, {"split_backward(grads, split_size, dim, self_meta)": (
        "split_backward_on_arrays(grads, split_size, dim, self_meta)", "on_float_grads(grads)")}, helpers=_FAST)
for _name in ("split_with_sizes", "unsafe_split_with_sizes"):
    specialise_derivative(_name, {"split_with_sizes_backward(grads, split_sizes, dim, self_meta)": (
        "split_with_sizes_backward_on_arrays(grads, split_sizes, dim, self_meta)", "on_float_grads(grads)")},
        helpers=_FAST)
