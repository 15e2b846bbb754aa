"""torch.masked's reductions and normalisations: each op sees only the elements its boolean `mask` keeps.

The recipe is the same for every op: the masked-out elements are replaced by the op's identity (0 for sum, 1 for
prod, -inf for amax, ...), then the ordinary lantern op runs. Ops without an identity (mean, var, std) count the kept
elements instead; median fills with nan and runs nanmedian. A mask may be smaller than the input (it broadcasts) but
never has more dims. Where every element of a reduced slice is masked out the result is the identity (or nan);
`_output_mask` says which output elements had at least one element kept.

>>> import lantern
>>> x = lantern.tensor([[1., 2., 3.], [4., 5., 6.]])
>>> keep = lantern.tensor([[True, False, True], [False, False, False]])
>>> lantern.masked.sum(x, 1, mask=keep)
tensor([4., 0.])
>>> lantern.masked.amax(x, 1, mask=keep)
tensor([3., -inf])
>>> lantern.masked._output_mask(lantern.masked.amax, x, 1, mask=keep)
tensor([ True, False])
"""
import builtins

import lantern
from .maskedtensor.core import is_masked_tensor

SMALL_INTEGER_TYPES = {lantern.uint8, lantern.bool, lantern.int8, lantern.int16, lantern.int32}
REDUCTIONS = {"sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "median", "norm", "var", "std", "logsumexp"}
NORMALIZATIONS = {"softmax", "log_softmax", "softmin", "normalize", "cumsum", "cumprod"}


# ---- masks and identities -------------------------------------------------------------------------------------------

def _canonical_dim(dim, ndim):
    """`dim` as a sorted tuple of non-negative dims; None and () mean every dim.

    >>> _canonical_dim(-1, 3), _canonical_dim(None, 2), _canonical_dim((2, 0), 3)
    ((2,), (0, 1), (0, 2))
    """
    if dim is None or dim == ():
        return tuple(range(ndim))
    ndim = builtins.max(ndim, 1)
    dims = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {d})")
        dims.append(d)
    return tuple(sorted(d % ndim for d in dims))


def _input_mask(input, *args, **kwargs):
    """The keyword `mask` as a bool tensor of input's shape (broadcast to it).

    >>> _input_mask(lantern.zeros(2, 3), mask=lantern.tensor([1, 0, 1]))
    tensor([[ True, False,  True],
            [ True, False,  True]])
    """
    _require_strided(input, "_input_mask")
    mask = kwargs.get("mask")
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    if mask.shape != input.shape:
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality higher than of the "
                             "input)")
        mask = lantern.broadcast_to(mask.clone(), input.shape)
    if mask.layout != lantern.strided:
        mask = mask.to_dense()
    return mask.to(dtype=lantern.bool)


def _output_mask(op, input, *args, **kwargs):
    """Which elements of `op(input, *args, **kwargs)` saw at least one kept element: for a reduction, the input
    mask any-reduced over the reduced dims; for a normalisation, the input mask itself."""
    if not callable(op):
        raise ValueError(f"_output_mask expected masked operation (got {type(op).__name__} object)")
    if op.__name__ in REDUCTIONS:
        if op.__name__ == "norm" and args:
            args = args[1:]  # norm's first positional argument is ord, not dim
        dim = args[0] if args else kwargs.get("dim")
        mask = _input_mask(input, *args, **kwargs)
        result = mask
        for d in reversed(_canonical_dim(dim, input.ndim)):
            result = result.any(dim=d, keepdim=bool(kwargs.get("keepdim", False)))
        return result
    if op.__name__ in NORMALIZATIONS:
        return _input_mask(input, *args, **kwargs)
    raise ValueError(f"_output_mask expected masked operation (got callable {op.__module__}.{op.__name__})")


def _reduction_identity(op_name, input, *args):
    """The value that leaves `op_name`'s result unchanged, as a 0-dim tensor of input's dtype, or None where it
    has none (mean, var, std: they count the kept elements instead).

    >>> _reduction_identity("amin", lantern.zeros(2, dtype=lantern.int8))
    tensor(127, dtype=lantern.int8)
    """
    dtype, device = input.dtype, input.device
    op_name = op_name.rsplit(".", 1)[-1]

    def constant(value, dtype=dtype):
        return lantern.tensor(value, dtype=dtype, device=device)

    integral = (dtype.is_signed or dtype == lantern.uint8) and not dtype.is_complex
    if op_name in {"sum", "cumsum", "prod", "cumprod"}:
        return constant(0 if op_name in {"sum", "cumsum"} else 1)
    if op_name in {"amax", "argmax", "logaddexp", "logsumexp"}:
        if dtype.is_floating_point or (dtype.is_complex and op_name == "logsumexp"):
            return constant(-float("inf"))
        if integral:
            return constant(lantern.iinfo(dtype).min)
    elif op_name in {"amin", "argmin"}:
        if dtype.is_floating_point:
            return constant(float("inf"))
        if integral:
            return constant(lantern.iinfo(dtype).max)
    elif op_name in {"mean", "var", "std"}:
        return None
    elif op_name == "norm":
        if (args[0] if args else 2) == -float("inf"):
            if not dtype.is_floating_point:
                raise AssertionError(f"input must be floating point, got {dtype}")
            return constant(float("inf"))
        return constant(0)
    elif op_name == "median":
        return constant(float("nan"), dtype if dtype.is_floating_point else lantern.float32)
    raise NotImplementedError(f"identity of {op_name} on {dtype} input")


def _combine_input_and_mask(op, input, mask, *args):
    """`input` with its masked-out elements replaced by `op`'s identity. A MaskedTensor brings its own mask (and
    `mask` is not read); gradients flow to its data."""
    if is_masked_tensor(input):
        input, mask = input.get_data(), input.get_mask()
    if mask is None:
        return input
    return lantern.where(_input_mask(input, mask=mask), input, _reduction_identity(op.__name__, input, *args))


def _require_strided(input, name):
    if input.layout != lantern.strided:
        raise ValueError(f"masked {name} expects a strided tensor (got {input.layout} tensor): lantern's torch.masked "
                         "does not take sparse inputs")


def _promoted_sum_dtype(input, dtype):
    """sum and prod accumulate small integer types (and bool) in int64 unless `dtype` says otherwise."""
    if dtype is not None:
        return dtype
    return lantern.int64 if input.dtype in SMALL_INTEGER_TYPES else input.dtype


# ---- reductions -----------------------------------------------------------------------------------------------------

def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Sum of the kept elements over `dim` (all dims when None); fully masked-out slices give 0.

    >>> lantern.masked.sum(lantern.tensor([1, 2, 3]), mask=lantern.tensor([True, False, True]))
    tensor(4)
    """
    _require_strided(input, "sum")
    dtype = _promoted_sum_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    return lantern.sum(_combine_input_and_mask(sum, input, mask), dims, bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Product of the kept elements over `dim`; fully masked-out slices give 1.

    >>> lantern.masked.prod(lantern.tensor([2., 0., 3.]), mask=lantern.tensor([True, False, True]))
    tensor(6.)
    """
    _require_strided(input, "prod")
    dtype = _promoted_sum_dtype(input, dtype)
    result = _combine_input_and_mask(prod, input, mask).to(dtype=dtype)
    for d in reversed(_canonical_dim(dim, input.ndim)):
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Largest kept element over `dim`; fully masked-out slices give -inf (the dtype's minimum for integers).

    >>> lantern.masked.amax(lantern.tensor([1., 9., 3.]), mask=lantern.tensor([True, False, True]))
    tensor(3.)
    """
    _require_strided(input, "amax")
    dtype = input.dtype if dtype is None else dtype
    filled = _combine_input_and_mask(amax, input, mask)
    return lantern.amax(filled, _canonical_dim(dim, filled.ndim), bool(keepdim)).to(dtype=dtype)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Smallest kept element over `dim`; fully masked-out slices give inf (the dtype's maximum for integers).

    >>> lantern.masked.amin(lantern.tensor([1., -9., 3.]), mask=lantern.tensor([True, False, True]))
    tensor(1.)
    """
    _require_strided(input, "amin")
    dtype = input.dtype if dtype is None else dtype
    filled = _combine_input_and_mask(amin, input, mask)
    return lantern.amin(filled, _canonical_dim(dim, filled.ndim), bool(keepdim)).to(dtype=dtype)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Index of the largest kept element along `dim` (of the flattened input when None), in input's dtype as torch
    returns it.

    >>> lantern.masked.argmax(lantern.tensor([1., 9., 3.]), mask=lantern.tensor([True, False, True]))
    tensor(2.)
    """
    _require_strided(input, "argmax")
    dtype = input.dtype if dtype is None else dtype
    return lantern.argmax(_combine_input_and_mask(argmax, input, mask), dim, bool(keepdim)).to(dtype=dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Index of the smallest kept element along `dim`, in input's dtype.

    >>> lantern.masked.argmin(lantern.tensor([1., -9., 3.]), mask=lantern.tensor([True, False, True]))
    tensor(0.)
    """
    _require_strided(input, "argmin")
    dtype = input.dtype if dtype is None else dtype
    return lantern.argmin(_combine_input_and_mask(argmin, input, mask), dim, bool(keepdim)).to(dtype=dtype)


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Mean of the kept elements: their sum over their count; fully masked-out slices give nan.

    >>> lantern.masked.mean(lantern.tensor([1., 9., 3.]), mask=lantern.tensor([True, False, True]))
    tensor(2.)
    """
    _require_strided(input, "mean")
    dtype_source = "Optional" if dtype is not None else "Input"
    dtype = input.dtype if dtype is None else dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {dtype_source} dtype must be either a floating point "
                         f"or complex dtype. Got: {dtype}")
    total, count = _total_and_count(input, dim, keepdim, dtype, mask)
    return total / count


def _total_and_count(input, dim, keepdim, dtype, mask):
    """The masked sum of input over `dim` and how many elements it added. Where mask is None that is every
    element, a MaskedTensor's masked-out ones included, as torch counts (MaskedTensor.mean passes its mask)."""
    if mask is None:
        count = sum(lantern.ones(input.shape, dtype=lantern.int64, device=input.device), dim, keepdim=keepdim)
        return sum(input, dim, keepdim=keepdim, dtype=dtype), count
    kept = _input_mask(input, mask=mask)
    return sum(input, dim, keepdim=keepdim, dtype=dtype, mask=kept), kept.sum(dim=dim, keepdim=bool(keepdim))


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    """Median of the kept elements along one `dim` (nanmedian after filling with nan); fully masked-out slices
    give nan, which integer inputs refuse.

    >>> lantern.masked.median(lantern.tensor([1., 9., 3., 4.]), 0, mask=lantern.tensor([True, False, True, True]))
    tensor(3.)
    """
    _require_strided(input, "median")
    dtype = input.dtype if dtype is None else dtype
    dim = _canonical_dim(dim, input.ndim)[0]
    is_float = input.dtype.is_floating_point
    if not is_float:
        input = input.to(dtype=lantern.float32)
    output = lantern.nanmedian(_combine_input_and_mask(median, input, mask), dim, keepdim).values
    if is_float:
        return output
    if lantern.isnan(output).any():
        raise ValueError("masked median expects no fully masked out rows if dtype is not floating point")
    return output.to(dtype=dtype)


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """log(sum(exp)) of the kept elements over `dim`; fully masked-out slices give -inf.

    >>> lantern.masked.logsumexp(lantern.tensor([0., 5., 0.]), mask=lantern.tensor([True, False, True]))
    tensor(0.6931)
    """
    _require_strided(input, "logsumexp")
    dtype = input.dtype if dtype is None else dtype
    dims = _canonical_dim(dim, input.ndim)
    return lantern.logsumexp(_combine_input_and_mask(logsumexp, input, mask), dims, keepdim=keepdim).to(dtype=dtype)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Vector `ord`-norm of the kept elements over `dim` (masked-out elements count as 0, or inf for ord=-inf).

    >>> lantern.masked.norm(lantern.tensor([3., 9., 4.]), 2.0, mask=lantern.tensor([True, False, True]))
    tensor(5.)
    """
    _require_strided(input, "norm")
    dtype = input.dtype if dtype is None else dtype
    filled = _combine_input_and_mask(norm, input, mask, ord)
    return lantern.linalg.vector_norm(filled, ord, _canonical_dim(dim, input.ndim), bool(keepdim), dtype=dtype)


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """Variance of the kept elements over `dim`, divided by (count - correction) clamped at 0 (correction 1 by
    default; `unbiased=False` means 0); fully masked-out slices give nan.

    >>> lantern.masked.var(lantern.tensor([1., 9., 3.]), mask=lantern.tensor([True, False, True]))
    tensor(2.)
    """
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=False)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """Standard deviation of the kept elements over `dim`: the square root of masked var.

    >>> lantern.masked.std(lantern.tensor([1., 9., 3.]), mask=lantern.tensor([True, False, True]))
    tensor(1.4142)
    """
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=True)


def _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt):
    _require_strided(input, "std/var")
    if unbiased is not None and correction is not None:
        raise AssertionError("Only one of unbiased and correction may be given")
    if correction is None:
        correction = 1.0 if unbiased is None or unbiased else 0.0
    if dtype is None:
        dtype = input.dtype if input.dtype.is_floating_point or input.dtype.is_complex else lantern.float32
    compute_dtype = dtype if dtype.is_floating_point or dtype.is_complex else lantern.float32
    total, count = _total_and_count(input, dim, True, dtype, mask)
    deviation = input - total / count
    kept = None if mask is None else _input_mask(input, mask=mask)
    squares = sum(deviation * deviation.conj(), dim, keepdim=keepdim, dtype=compute_dtype, mask=kept)
    if not keepdim:
        count = count.reshape(squares.shape)
    if correction != 0:
        real_dtype = compute_dtype.to_real() if compute_dtype.is_complex else compute_dtype
        count = count.to(real_dtype) - correction
        count = lantern.maximum(count, count.new_zeros([]))
    output = (squares / count).to(dtype=dtype)
    return lantern.sqrt(output) if take_sqrt else output


# ---- normalisations and the pointwise op ----------------------------------------------------------------------------

def cumsum(input, dim, *, dtype=None, mask=None):
    """Running sum along `dim` where masked-out elements count as 0.

    >>> lantern.masked.cumsum(lantern.tensor([1., 9., 3.]), 0, mask=lantern.tensor([True, False, True]))
    tensor([1., 1., 4.])
    """
    _require_strided(input, "cumsum")
    dtype = input.dtype if dtype is None else dtype
    dim = _canonical_dim(dim, input.ndim)[0]
    return lantern.cumsum(_combine_input_and_mask(sum, input, mask), dim, dtype=dtype).to(dtype=dtype)


def cumprod(input, dim, *, dtype=None, mask=None):
    """Running product along `dim` where masked-out elements count as 1.

    >>> lantern.masked.cumprod(lantern.tensor([2., 9., 3.]), 0, mask=lantern.tensor([True, False, True]))
    tensor([2., 2., 6.])
    """
    _require_strided(input, "cumprod")
    dtype = input.dtype if dtype is None else dtype
    dim = _canonical_dim(dim, input.ndim)[0]
    return lantern.cumprod(_combine_input_and_mask(prod, input, mask), dim, dtype=dtype).to(dtype=dtype)


def softmax(input, dim, *, dtype=None, mask=None):
    """softmax along `dim` over the kept elements (masked-out ones get 0; a fully masked-out slice gives nan).

    >>> lantern.masked.softmax(lantern.tensor([0., 5., 0.]), 0, mask=lantern.tensor([True, False, True]))
    tensor([0.5000, 0.0000, 0.5000])
    """
    return _normalized("softmax", lantern.nn.functional.softmax, amax, input, dim, dtype, mask)


def log_softmax(input, dim, *, dtype=None, mask=None):
    """log_softmax along `dim` over the kept elements (masked-out ones get -inf).

    >>> lantern.masked.log_softmax(lantern.tensor([0., 5., 0.]), 0, mask=lantern.tensor([True, False, True]))
    tensor([-0.6931,    -inf, -0.6931])
    """
    return _normalized("log_softmax", lantern.nn.functional.log_softmax, amax, input, dim, dtype, mask)


def softmin(input, dim, *, dtype=None, mask=None):
    """softmin along `dim` over the kept elements (masked-out ones get 0).

    >>> lantern.masked.softmin(lantern.tensor([0., -5., 0.]), 0, mask=lantern.tensor([True, False, True]))
    tensor([0.5000, 0.0000, 0.5000])
    """
    return _normalized("softmin", lantern.nn.functional.softmin, amin, input, dim, dtype, mask)


def _normalized(name, function, fill_like, input, dim, dtype, mask):
    """function(input, dim, dtype) with masked-out elements first set to the identity of `fill_like` (amax's -inf
    makes them vanish from a softmax, amin's inf from a softmin)."""
    _require_strided(input, name)
    dtype = input.dtype if dtype is None else dtype
    dim = _canonical_dim(dim, input.ndim)[0]
    return function(_combine_input_and_mask(fill_like, input, mask), dim, dtype=dtype)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    """input divided by the masked `ord`-norm along `dim` (at least `eps`); masked-out elements become 0.

    >>> lantern.masked.normalize(lantern.tensor([3., 9., 4.]), 2.0, 0, mask=lantern.tensor([True, False, True]))
    tensor([0.6000, 0.0000, 0.8000])
    """
    _require_strided(input, "normalize")
    dtype = input.dtype if dtype is None else dtype
    filled = _combine_input_and_mask(sum, input, mask)
    norms = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return lantern.divide(filled, lantern.maximum(norms, norms.new_full([], eps)))


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """log(exp(input) + exp(other)), each side's masked-out elements counting as -inf.

    >>> keep = lantern.tensor([True, False, True])
    >>> lantern.masked.logaddexp(lantern.tensor([-100., -200., -300.]), lantern.tensor([-1., -2., -3.]),
    ...                          input_mask=keep, other_mask=keep)
    tensor([-1., -inf, -3.])
    """
    if input.layout != lantern.strided or other.layout != lantern.strided:
        raise ValueError(f"masked logaddexp expects strided tensors (got {input.layout} tensor for input, "
                         f"{other.layout} for other)")
    dtype = input.dtype if dtype is None else dtype
    filled_input = _combine_input_and_mask(logaddexp, input, input_mask)
    filled_other = _combine_input_and_mask(logaddexp, other, other_mask)
    return lantern.logaddexp(filled_input, filled_other).to(dtype=dtype)
