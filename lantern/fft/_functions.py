"""torch.fft's functions, composed from the three primitives of lantern/ops/fft.py as ATen composes them.

Each function: promote the input (integers and bool to the default float type; a complex transform wants a complex
input), canonicalise `n`/`s` and `dim`, crop or zero-pad the input to the signal size, map `norm` to the
primitive's normalization, run the primitive(s), and write into `out=` when given.

    fft / ifft          complex input: c2c; real input: a full (two-sided) r2c, conjugated for ifft
    rfft / irfft        r2c onesided / c2r
    hfft / ihfft        c2r of the conjugate / conjugate of r2c (the Hermitian pair, roles reversed)
    fftn, rfftn, ...    the same over several dims; fft2 & co. are the n-d ones with dim=(-2, -1)

>>> x = lantern.tensor([1., 2., 3., 4.])
>>> fft(x).tolist()
[(10+0j), (-2+2j), (-2+0j), (-2-2j)]
>>> irfft(rfft(x), n=4).tolist()
[1.0, 2.0, 3.0, 4.0]
"""
import math

from ..autograd.grad_mode import is_grad_enabled
from ..backends.base import resize_out
from ..core import dtype as dt
from ..core.size import wrap_dim
from ..ops.call_by_name import call_op
from ..ops.registry import observed

_FLOATING = (dt.float32, dt.float64)
# norm -> normalization (0: none, 1: 1/sqrt(n), 2: 1/n) for a forward and for a backward transform
_NORMALIZATION = {"backward": (0, 2), "forward": (2, 0), "ortho": (1, 1)}


def _normalization(norm, forward):
    if norm is None:
        norm = "backward"
    if norm not in _NORMALIZATION:
        raise RuntimeError(f"Invalid normalization mode: \"{norm}\" (use \"backward\", \"forward\" or \"ortho\")")
    return _NORMALIZATION[norm][0 if forward else 1]


def _promote(input, require_complex):
    """input in the dtype the transform runs in: float32/float64 (integers and bool become the default float type),
    or their complex type when `require_complex`; half precision is refused as PyTorch's CPU kernels refuse it."""
    dtype = input.dtype
    if dtype.is_complex:
        return input
    if not dtype.is_floating_point:
        dtype = dt.get_default_dtype()
    if dtype not in _FLOATING:
        raise RuntimeError(f"Unsupported dtype {dtype.legacy} (the CPU FFT computes in float32 or float64)")
    if require_complex:
        dtype = dtype.to_complex()
    return input if dtype is input.dtype else input.to(dtype)


def _int(fname, name, value):
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"fft_{fname}(): argument '{name}' must be int, not {type(value).__name__}")
    return value.__index__()


def _int_list(fname, name, value):
    if value is None:
        return None
    if hasattr(value, "__index__") and not isinstance(value, bool):
        return [value.__index__()]
    if not isinstance(value, (list, tuple)) and type(value).__name__ != "Size":
        raise TypeError(f"fft_{fname}(): argument '{name}' must be tuple of ints, not {type(value).__name__}")
    return [_int(fname, name, v) for v in value]


def _check_size(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _resize(x, dims, sizes):
    """x cropped (a view) or zero-padded (a copy) along each of `dims` to the matching size."""
    pad = [0] * (2 * x.dim())
    for d, n in zip(dims, sizes):
        if n < x.shape[d]:
            x = x.narrow(d, 0, n)
        elif n > x.shape[d]:
            pad[2 * (x.dim() - 1 - d) + 1] = n - x.shape[d]
    if any(pad):
        last = max(i for i, p in enumerate(pad) if p) + 1
        x = call_op("constant_pad_nd", x, pad[:last], 0)
    return x


def _write_out(op_name, result, out, input):
    """result copied into out= (resized to fit), refusing an input that requires grad as ATen's out= kernels do."""
    if out is None:
        return result
    if input.requires_grad and is_grad_enabled():
        raise RuntimeError(f"{op_name}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    resize_out(out, result.shape, op_name)
    return out.copy_(result)


def _check_out(fname, out, complex_out):
    if out is None:
        return
    if complex_out and not out.dtype.is_complex:
        raise RuntimeError(f"{fname} expects a complex output tensor, but got {out.dtype.legacy}")
    if not complex_out and not out.dtype.is_floating_point:
        raise RuntimeError(f"{fname} expects a floating point output tensor, but got {out.dtype.legacy}")


# ---- one dimension ---------------------------------------------------------------------------------------------

def _dim(fname, x, dim):
    """The dim to transform, wrapped (a 0-d input has none)."""
    if not x.dim():
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return wrap_dim(_int(fname, "dim", dim), x.dim())


def _signal(fname, x, n, dim):
    """(x cropped or zero-padded to n points along dim when n is given, the wrapped dim)."""
    d = _dim(fname, x, dim)
    n = x.shape[d] if n is None else _int(fname, "n", n)
    _check_size(n)
    return _resize(x, [d], [n]), d


def _c2c(fname, input, n, dim, norm, forward, out):
    _check_out(fname, out, True)
    x, d = _signal(fname, input, n, dim)
    result = call_op("_fft_c2c", x, [d], _normalization(norm, forward), forward)
    return _write_out("_fft_c2c", result, out, x)


def _r2c(fname, input, n, dim, norm, forward, onesided, out):
    if input.dtype.is_complex:
        raise RuntimeError(f"{fname} expects a real input tensor, but got {input.dtype.legacy}")
    _check_out(fname, out, True)
    x, d = _signal(fname, _promote(input, require_complex=False), n, dim)
    result = call_op("_fft_r2c", x, [d], _normalization(norm, forward), onesided)
    if not forward:  # a backward real-to-complex transform is the conjugate of the forward one
        result = result.conj()
    return _write_out("_fft_r2c", result, out, x)


def _c2r(fname, input, n, dim, norm, forward, out):
    _check_out(fname, out, False)
    x = _promote(input, require_complex=True)
    d = _dim(fname, x, dim)
    n = 2 * (x.shape[d] - 1) if n is None else _int(fname, "n", n)  # the output's length
    _check_size(n)
    x = _resize(x, [d], [n // 2 + 1])
    normalization = _normalization(norm, forward)
    if forward:  # a forward complex-to-real transform is the backward one of the conjugate
        x = x.conj()
    result = call_op("_fft_c2r", x, [d], normalization, n)
    return _write_out("_fft_c2r", result, out, x)


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-D discrete Fourier transform over `dim` (a real input gives the full complex spectrum)."""
    if input.dtype.is_complex:
        return _c2c("fft", input, n, dim, norm, True, out)
    return _r2c("fft", input, n, dim, norm, True, False, out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of fft."""
    if input.dtype.is_complex:
        return _c2c("ifft", input, n, dim, norm, False, out)
    return _r2c("ifft", input, n, dim, norm, False, False, out)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The FFT of a real input: the n // 2 + 1 outputs that the others are complex conjugates of."""
    return _r2c("rfft", input, n, dim, norm, True, True, out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of rfft: n real values (default n = 2 * (input.size(dim) - 1))."""
    return _c2r("irfft", input, n, dim, norm, False, out)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The FFT of a Hermitian-symmetric signal given by its first half: n real values."""
    return _c2r("hfft", input, n, dim, norm, True, out)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of hfft: the onesided inverse FFT of a real input."""
    return _r2c("ihfft", input, n, dim, norm, False, True, out)


# ---- several dimensions ----------------------------------------------------------------------------------------

def _shape_and_dims(fname, input, s, dim):
    """(signal sizes, dims) from s and dim as given: dims default to the last len(s) dims (all dims without s),
    sizes to the input's (an s of -1 too)."""
    s, dim = _int_list(fname, "s", s), _int_list(fname, "dim", dim)
    ndim = input.dim()
    if dim is not None:
        dim = [_dim(fname, input, d) for d in dim]
        if len(set(dim)) != len(dim):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        if dim is not None and len(dim) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {ndim} dimensions.")
        if dim is None:
            dim = list(range(ndim - len(s), ndim))
        shape = [input.shape[d] if n == -1 else n for d, n in zip(dim, s)]
    else:
        dim = list(range(ndim)) if dim is None else dim
        shape = [input.shape[d] for d in dim]
    for n in shape:
        _check_size(n)
    return shape, dim


def _c2r_shape_and_dims(fname, input, s, dim):
    """_shape_and_dims for a complex-to-real transform: (input sizes, dims, the last dim's output size)."""
    shape, dims = _shape_and_dims(fname, input, s, dim)
    if not shape:
        raise RuntimeError(f"{fname} must transform at least one axis")
    given = _int_list(fname, "s", s)
    last_size = 2 * (input.shape[dims[-1]] - 1) if given is None or given[-1] == -1 else shape[-1]
    _check_size(last_size)
    shape[-1] = last_size // 2 + 1
    return shape, dims, last_size


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-dimensional FFT over `dim` (default: the last len(s) dims, or all)."""
    shape, dims = _shape_and_dims("fftn", input, s, dim)
    _check_out("fftn", out, True)
    x = _resize(_promote(input, require_complex=True), dims, shape)
    result = call_op("_fft_c2c", x, dims, _normalization(norm, True), True)
    return _write_out("_fft_c2c", result, out, x)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of fftn."""
    shape, dims = _shape_and_dims("ifftn", input, s, dim)
    _check_out("ifftn", out, True)
    x = _resize(_promote(input, require_complex=True), dims, shape)
    result = call_op("_fft_c2c", x, dims, _normalization(norm, False), False)
    return _write_out("_fft_c2c", result, out, x)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-dimensional FFT of a real input, onesided in the last transformed dim."""
    shape, dims = _shape_and_dims("rfftn", input, s, dim)
    if not shape:
        raise RuntimeError("rfftn must transform at least one axis")
    x = _resize(_promote(input, require_complex=False), dims, shape)
    normalization = _normalization(norm, True)
    if x.dtype.is_complex:
        raise RuntimeError(f"rfftn expects a real-valued input tensor, but got {x.dtype.legacy}")
    _check_out("rfftn", out, True)
    result = call_op("_fft_r2c", x, dims, normalization, True)
    return _write_out("_fft_r2c", result, out, x)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of rfftn: real output, s[-1] (default 2 * (input.size(dim[-1]) - 1)) long in the last dim."""
    shape, dims, last_size = _c2r_shape_and_dims("irfftn", input, s, dim)
    x = _resize(_promote(input, require_complex=True), dims, shape)
    normalization = _normalization(norm, False)
    _check_out("irfftn", out, False)
    result = call_op("_fft_c2r", x, dims, normalization, last_size)
    return _write_out("_fft_c2r", result, out, x)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-dimensional FFT of a Hermitian-symmetric signal given by its half (in the last dim): real output."""
    shape, dims, last_size = _c2r_shape_and_dims("hfftn", input, s, dim)
    x = _resize(_promote(input, require_complex=True), dims, shape)
    normalization = _normalization(norm, True)
    if len(dims) > 1:
        x = call_op("_fft_c2c", x, dims[:-1], normalization, True)
    _check_out("hfftn", out, False)
    result = call_op("_fft_c2r", x.conj(), dims[-1:], normalization, last_size)
    return _write_out("_fft_c2r", result, out, x)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of hfftn: the onesided inverse FFT of a real input."""
    shape, dims = _shape_and_dims("ihfftn", input, s, dim)
    if not shape:
        raise RuntimeError("ihfftn must transform at least one axis")
    x = _resize(_promote(input, require_complex=False), dims, shape)
    normalization = _normalization(norm, False)
    result = call_op("_fft_r2c", x, dims[-1:], normalization, True).conj()
    if len(dims) > 1:
        result = call_op("_fft_c2c", result, dims[:-1], normalization, False)
    _check_out("ihfftn", out, True)
    return _write_out("_fft_c2c" if len(dims) > 1 else "_fft_r2c", result, out, x)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """fftn over two dims (the last two by default)."""
    return fftn(input, s, dim, norm, out=out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """ifftn over two dims (the last two by default)."""
    return ifftn(input, s, dim, norm, out=out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """rfftn over two dims (the last two by default)."""
    return rfftn(input, s, dim, norm, out=out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """irfftn over two dims (the last two by default)."""
    return irfftn(input, s, dim, norm, out=out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """hfftn over two dims (the last two by default)."""
    return hfftn(input, s, dim, norm, out=out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """ihfftn over two dims (the last two by default)."""
    return ihfftn(input, s, dim, norm, out=out)


# ---- frequencies and shifts ------------------------------------------------------------------------------------

def _frequencies(fname, count, n, d, out, dtype, layout, device, requires_grad):
    """k / (n * d) for k = 0, 1, ..., then (fftfreq) the negative frequencies, as a new tensor (or into out=)."""
    if out is not None:
        dtype = out.dtype
    dtype = dtype or dt.get_default_dtype()
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{fname} requires a floating point or complex dtype")
    n = _int(fname, "n", n)
    result = call_op("arange", 0, count(n), 1, dtype, layout, out.device if out is not None else device, None, False)
    if fname == "fftfreq":
        result[(n + 1) // 2:] -= n
    result.mul_(1.0 / (n * float(d)) if n * float(d) != 0 else math.inf)
    if out is not None:
        resize_out(out, result.shape, fname)
        return out.copy_(result)
    return result.requires_grad_(requires_grad)


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of fft's outputs for n samples spaced d apart: [0, 1, ..., -2, -1] / (n * d).

    >>> fftfreq(4).tolist()
    [0.0, 0.25, -0.5, -0.25]
    """
    return _frequencies("fftfreq", lambda n: n, n, d, out, dtype, layout, device, requires_grad)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of rfft's outputs: [0, 1, ..., n // 2] / (n * d).

    >>> rfftfreq(4).tolist()
    [0.0, 0.25, 0.5]
    """
    return _frequencies("rfftfreq", lambda n: int(n / 2) + 1, n, d, out, dtype, layout, device, requires_grad)


def _shift(input, dim, by):
    dims = list(range(input.dim())) if dim is None else _int_list("fftshift", "dim", dim)
    return input.roll([by(input.shape[d]) for d in dims], dims)


def fftshift(input, dim=None):
    """Reorder fft's output so the zero frequency is in the middle (a roll by n // 2 along each dim).

    >>> fftshift(fftfreq(4)).tolist()
    [-0.5, -0.25, 0.0, 0.25]
    """
    return _shift(input, dim, lambda n: n // 2)


def ifftshift(input, dim=None):
    """The inverse of fftshift (a roll by (n + 1) // 2 along each dim)."""
    return _shift(input, dim, lambda n: (n + 1) // 2)


FFT_FUNCTIONS = {f.__name__: observed(f"fft_{f.__name__}", f) for f in (
    fft, ifft, fft2, ifft2, fftn, ifftn, rfft, irfft, rfft2, irfft2, rfftn, irfftn, hfft, ihfft, hfft2, ihfft2,
    hfftn, ihfftn, fftfreq, rfftfreq, fftshift, ifftshift)}
