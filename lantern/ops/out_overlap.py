"""out= forms of cat, gather, index_select and take, which refuse an out tensor sharing memory with an input.

Writing a result into memory the op is still reading gives values that depend on the order of the writes, so
ATen's out variants of these ops refuse it: an out= whose elements share memory (an expanded tensor,
assert_no_internal_overlap) or that shares memory with an input (assert_no_overlap). Each `<op>.out` record here
runs the op's structured kernel into `out`, resized to fit, after those checks, made where ATen makes them: before
resizing out (take, index_select) or after it (cat, gather, whose out= may grow into an input's memory). gather
lets out= be its index exactly (only a partial overlap with the index is refused), as ATen does.

>>> x = lantern.arange(6.)
>>> lantern.take(x[:3], lantern.tensor([2, 1, 0]), out=x[3:]).tolist(), x.tolist()
([2.0, 1.0, 0.0], [0.0, 1.0, 2.0, 2.0, 1.0, 0.0])
>>> lantern.take(x, lantern.tensor([2, 1, 0]), out=x[:3])
Traceback (most recent call last):
    ...
RuntimeError: unsupported operation: some elements of the input tensor and the written-to tensor refer to a single \
memory location. Please clone() the tensor before performing the operation. (take: out= of shape [3] shares memory \
with argument 'self' of shape [6]; give an out tensor of its own, or clone() the input)
"""
from ..backends.base import check_cast, resize_out
from .meta_util import FULL, PARTIAL, overlap_status, shape_str
from .registry import custom, get

# op name, its out schema's arguments, whether ATen checks before resizing out, the arguments out must not overlap
# (with the overlap kinds refused)
_BOTH = (FULL, PARTIAL)
_OUT_FORMS = [
    ("cat", "Tensor[] tensors, int dim=0", False, {"tensors": _BOTH}),
    ("gather", "Tensor self, int dim, Tensor index, *, bool sparse_grad=False", False,
     {"self": _BOTH, "index": (PARTIAL,)}),
    ("index_select", "Tensor self, int dim, Tensor index", True, {"self": _BOTH, "index": _BOTH}),
    ("take", "Tensor self, Tensor index", True, {"self": _BOTH, "index": _BOTH}),
]


def refuse_overlap(name, out, argument, value, refused=_BOTH):
    """Raise PyTorch's error when out= shares memory with the input `value` (an argument named `argument`) in one
    of the `refused` ways (FULL: the same elements, PARTIAL: some bytes)."""
    if overlap_status(out, value) in refused:
        raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor "
                           "refer to a single memory location. Please clone() the tensor before performing the "
                           f"operation. ({name}: out= of shape {shape_str(out._size)} shares memory with argument "
                           f"'{argument}' of shape {shape_str(value._size)}; give an out tensor of its own, or "
                           "clone() the input)")


def _out_kernel(name, check_before_resize, inputs):
    functional = get(name)
    positions = {a.name: i for i, a in enumerate(functional.schema.args)}

    def check(backend, args, out):
        backend.check_internal_overlap(out, name)
        for argument, refused in inputs.items():
            value = args[positions[argument]]
            for tensor in value if isinstance(value, (list, tuple)) else (value,):
                refuse_overlap(name, out, argument, tensor, refused)

    def kernel(backend, *args):
        *args, out = args
        shape, dtype = functional.meta(*args)
        check_cast(functional, dtype, out)
        if check_before_resize:
            check(backend, args, out)
        resize_out(out, shape, name)
        if not check_before_resize:
            check(backend, args, out)
        backend.compute(functional, out, dtype, args)
        out._bump_version()
        return out
    kernel.__name__ = f"_{name}_out"
    return kernel


for _name, _arguments, _before, _inputs in _OUT_FORMS:
    _separator = ", " if "*" in _arguments else ", *, "
    _kernel = _out_kernel(_name, _before, _inputs)
    _op = custom(f"{_name}.out({_arguments}{_separator}Tensor(a!) out) -> Tensor(a!)", _kernel, _kernel,
                 method=False)
    _op.functional = get(_name)
    get(_name).out = _op
