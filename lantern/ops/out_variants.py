"""out= forms of ops declared with a custom kernel (whose records have no structured out variant): masked_select,
bernoulli, histc, conj_physical and the factories arange, eye, full, linspace, logspace and randperm.

Each `<op>.out` record computes the op's result and writes it into `out` (resized to fit, as ATen's out variants
do), and becomes its functional op's `out`, so that `lantern.<op>(..., out=t)` exists as in PyTorch. Like every
out= variant, autograd refuses it when an input requires grad. A factory's out= decides the result dtype when no
dtype= is given; the other ops want out's dtype to be the result's (bernoulli casts into any dtype).

>>> t = lantern.empty(0, dtype=lantern.int64)
>>> lantern.arange(3.0, out=t) is t, t.tolist()
(True, [0, 1, 2])
"""
from .dispatcher import call
from .linalg_common import _into
from .out_overlap import refuse_overlap
from .registry import custom, get

_FACTORY = "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, " \
           "bool requires_grad=False"

# op name, its out schema's arguments, the kind of dtype rule: "same" (out must have the result's dtype),
# "cast" (any out dtype), "factory" (out gives the dtype)
_OUT_FORMS = [
    ("masked_select", "Tensor self, Tensor mask", "same"),
    ("histc", "Tensor self, int bins=100, Scalar min=0, Scalar max=0", "same"),
    ("conj_physical", "Tensor self", "same"),
    ("bernoulli", "Tensor self, float? p=None, *, Generator? generator=None", "cast"),
    ("arange", f"Scalar start, Scalar? end=None, Scalar step=1, *, {_FACTORY}", "factory"),
    ("eye", f"int n, int? m=None, *, {_FACTORY}", "factory"),
    ("full", f"int[] size, Scalar fill_value, *, {_FACTORY}", "factory"),
    ("linspace", f"Scalar start, Scalar end, int steps, *, {_FACTORY}", "factory"),
    ("logspace", f"Scalar start, Scalar end, int steps, float base=10.0, *, {_FACTORY}", "factory"),
    ("randperm", f"int n, *, Generator? generator=None, {_FACTORY}", "factory"),
]


# ATen's masked_select.out asserts that out shares no memory with its inputs; the others compute first, then write
# (torch.bernoulli(x, out=x) is fine)
_REFUSES_OVERLAP = {"masked_select"}


def _dtype_from_out(name, args, out):
    """The factory's arguments with dtype= filled from out (or checked against it)."""
    position = [a.name for a in get(name).schema.args].index("dtype")
    dtype = args[position]
    if dtype is not None and dtype is not out.dtype:
        raise RuntimeError(f"dtype {dtype.legacy} does not match dtype of out parameter ({out.dtype.legacy})")
    return args[:position] + (out.dtype,) + args[position + 1:]




def _out_kernel(name, rule):
    names = [a.name for a in get(name).schema.args]

    def kernel(backend, *args):
        *args, out = args
        args = tuple(args)
        if name in _REFUSES_OVERLAP:
            for argument, value in zip(names, args):
                refuse_overlap(name, out, argument, value)
        if rule == "factory":
            args = _dtype_from_out(name, args, out)
        result = call(get(name), args)
        return _into(out, result.to(out.dtype) if rule == "cast" else result, name)
    kernel.__name__ = f"_{name}_out"
    return kernel


for _name, _arguments, _rule in _OUT_FORMS:
    _separator = ", " if "*" in _arguments else ", *, "
    _kernel = _out_kernel(_name, _rule)
    _op = custom(f"{_name}.out({_arguments}{_separator}Tensor(a!) out) -> Tensor(a!)", _kernel, _kernel,
                 method=False)
    _op.functional = get(_name)
    get(_name).out = _op
