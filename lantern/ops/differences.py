"""Finite differences, integrals of samples and sample statistics, written with other ops (their gradients come
from those ops): diff, gradient, trapezoid/trapz, cumulative_trapezoid, cov and corrcoef.

>>> lantern.diff(lantern.tensor([1, 4, 9])).tolist(), lantern.trapezoid(lantern.tensor([1.0, 2.0, 3.0])).item()
([3, 5], 4.0)
>>> [g.tolist() for g in lantern.gradient(lantern.tensor([1.0, 4.0, 9.0, 16.0]))]
[[3.0, 4.0, 6.0, 7.0]]
"""
import numbers

from ..core import dtype as dt
from ..core.size import wrap_dim
from ..core.tensor_impl import TensorImpl
from .linalg_common import _into
from .meta_util import wrap_dims
from .dispatcher import call
from .registry import COMPOSITES, composite, get
from ..core import user_warnings


def _floating(t):
    """t in a floating or complex dtype (integers and bools in the default float dtype)."""
    return t if t.dtype.category >= dt.FLOATING else t.to(dt.get_default_dtype())


def _along(values, dim, ndim):
    """A 1-d tensor viewed so that it runs along `dim` of an ndim-dimensional tensor (broadcasting elsewhere)."""
    return values.reshape(tuple(-1 if i == dim else 1 for i in range(ndim)))


# ---- diff -----------------------------------------------------------------------------------------------------

def _diff_operands(input, dim, prepend, append):
    parts = []
    for extra in (prepend, append):
        if extra is not None and extra.dim() != input.dim():
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    if prepend is not None:
        parts.append(prepend)
    parts.append(input)
    if append is not None:
        parts.append(append)
    return parts[0] if len(parts) == 1 else call(get("cat"), (parts, dim))


def diff(input, n=1, dim=-1, prepend=None, append=None, *, out=None):
    """The n-th forward difference along dim (input[i + 1] - input[i]; != for bools), after prepending and
    appending the given tensors.

    >>> lantern.diff(lantern.tensor([1, 3, 6, 10]), n=2).tolist()
    [1, 1]
    """
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if n == 0:  # prepend and append are left out too
        return _into(out, input.clone(), "diff")
    d = wrap_dim(dim, input.dim())
    x = _diff_operands(input, d, prepend, append)
    for _ in range(n):
        length = x._size[d]
        if length == 0:
            break
        later, earlier = x.narrow(d, 1, length - 1), x.narrow(d, 0, length - 1)
        x = later != earlier if x.dtype is dt.bool else later - earlier
    return _into(out, x, "diff")


composite("diff", diff)


# ---- gradient -------------------------------------------------------------------------------------------------

def _gradient_spacings(input, spacing, dims):
    """One spacing per dim: a number (uniform steps) or a 1-d tensor of coordinates."""
    if spacing is None:
        spacing = 1
    if isinstance(spacing, (numbers.Number, TensorImpl)) and not (isinstance(spacing, TensorImpl) and spacing.dim()):
        value = spacing.item() if isinstance(spacing, TensorImpl) else spacing
        return [value] * len(dims)
    spacing = list(spacing)
    if len(spacing) != len(dims):
        raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                           f"arguments to have the same length, but got a spacing argument of length {len(spacing)} "
                           f"and a dim argument of length {len(dims)}.")
    for s, d in zip(spacing, dims):
        if isinstance(s, TensorImpl) and s.dim() == 1 and s._size[0] != input._size[d]:
            raise RuntimeError(f"torch.gradient expected each tensor to be on the same device and to have the same "
                               f"size as input along dim {d}, but got size {s._size[0]}")
    return [s.item() if isinstance(s, TensorImpl) and s.dim() == 0 else s for s in spacing]


def _steps(spacing, dim, ndim):
    """(left, right) step sizes at each interior point: numbers for uniform spacing, tensors for coordinates."""
    if not isinstance(spacing, TensorImpl):
        return spacing, spacing
    h = _floating(spacing).diff()
    return _along(h[:-1], dim, ndim), _along(h[1:], dim, ndim)


def _edge(f, spacing, dim, edge_order, first):
    """The one-sided derivative at the first (or last) sample, to first or second order."""
    n = f._size[dim]
    x = (lambda i: f.narrow(dim, i % n, 1))
    if isinstance(spacing, TensorImpl):
        c = _floating(spacing)
        h1, h2 = ((c[1] - c[0]), (c[2] - c[1]) if n > 2 else None) if first else \
            ((c[-2] - c[-3]) if n > 2 else None, (c[-1] - c[-2]))
    else:
        h1 = h2 = spacing
    if edge_order == 1:
        return (x(1) - x(0)) / h1 if first else (x(-1) - x(-2)) / h2
    if first:
        return (-(2 * h1 + h2) / (h1 * (h1 + h2)) * x(0) + (h1 + h2) / (h1 * h2) * x(1)
                - h1 / (h2 * (h1 + h2)) * x(2))
    return (h2 / (h1 * (h1 + h2)) * x(-3) - (h1 + h2) / (h1 * h2) * x(-2)
            + (2 * h2 + h1) / (h2 * (h1 + h2)) * x(-1))


def _gradient_along(f, spacing, dim, edge_order):
    n = f._size[dim]
    left, right = _steps(spacing, dim, f.dim())
    before, at, after = f.narrow(dim, 0, n - 2), f.narrow(dim, 1, n - 2), f.narrow(dim, 2, n - 2)
    interior = (left * left * after - right * right * before + (right * right - left * left) * at) / (
        left * right * (left + right))
    parts = [_edge(f, spacing, dim, edge_order, True), interior, _edge(f, spacing, dim, edge_order, False)]
    return call(get("cat"), (parts, dim))


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The derivative of sampled values along each dim (or the given ones): central differences inside, one-sided
    differences of order edge_order (1 or 2) at the ends. Returns one tensor per dim.

    >>> lantern.gradient(lantern.tensor([1.0, 4.0, 9.0]), spacing=2.0)[0].tolist()
    [1.5, 2.0, 2.5]
    """
    if edge_order not in (1, 2):
        raise RuntimeError(f"torch.gradient only supports edge_order=1 and edge_order=2. but got {edge_order}")
    dims = list(range(input.dim())) if dim is None else list(wrap_dims(dim, input.dim()))
    if any(input._size[d] < edge_order + 1 for d in dims):
        raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    f = _floating(input)
    return tuple(_gradient_along(f, s, d, edge_order) for s, d in zip(_gradient_spacings(input, spacing, dims), dims))


composite("gradient", gradient, method=False)


# ---- trapezoid, cumulative_trapezoid --------------------------------------------------------------------------

def _widths(y, x, dx, d):
    """The trapezoids' widths along d: x's differences (broadcast along d) or the constant dx."""
    if x is None:
        return 1 if dx is None else dx
    if x.dim() == 1:
        if x._size[0] != y._size[d]:
            raise RuntimeError(f"trapezoid: There must be one `x` value for each sample point, but got "
                               f"{x._size[0]} x values and {y._size[d]} sample points")
        return _along(x.diff(), d, y.dim())
    return x.diff(dim=d - y.dim() if x.dim() != y.dim() else d)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The integral of samples y along dim by the trapezoidal rule, at points x or spaced dx (default 1).

    >>> lantern.trapezoid(lantern.tensor([1.0, 2.0, 3.0]), lantern.tensor([0.0, 1.0, 3.0])).item()
    6.5
    """
    d = wrap_dim(dim, y.dim())
    if y._size[d] == 0:
        return _floating(y).sum(d) * 0
    width = _widths(y, x if isinstance(x, TensorImpl) else None, dx if x is None else x, d)
    if isinstance(width, TensorImpl) and width.dim():
        n = y._size[d]
        return ((y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)) * width).sum(d) / 2
    ends = y.select(d, 0) + y.select(d, -1)
    return (y.sum(d) - ends * 0.5) * width


def trapz(y, x=None, *, dx=None, dim=-1):
    """trapezoid's older name."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral of y along dim (one fewer element than y there).

    >>> lantern.cumulative_trapezoid(lantern.tensor([1.0, 2.0, 3.0])).tolist()
    [1.5, 4.0]
    """
    d = wrap_dim(dim, y.dim())
    n = y._size[d]
    width = _widths(y, x if isinstance(x, TensorImpl) else None, dx if x is None else x, d)
    if n == 0:
        return _floating(y).narrow(d, 0, 0)
    return ((y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)) * width / 2).cumsum(d)


composite("trapezoid", trapezoid, method=False)
composite("trapz", trapz, method=False)
composite("cumulative_trapezoid", cumulative_trapezoid, method=False)


# ---- cov, corrcoef --------------------------------------------------------------------------------------------

def _weights(fweights, aweights, observations):
    for name, w in (("fweights", fweights), ("aweights", aweights)):
        if w is None:
            continue
        if w.dim() > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {w.dim()} dimensions")
        if w.numel() != observations:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                               f"input but got {w.numel()} != {observations}")
    if fweights is not None:
        if fweights.dtype.category >= dt.FLOATING:
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got {fweights.dtype.legacy}")
        if bool((fweights < 0).any()):
            raise RuntimeError("cov(): fweights cannot be negative")
    if aweights is not None:
        if aweights.dtype.category < dt.FLOATING:
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got "
                               f"{aweights.dtype.legacy}")
        if bool((aweights < 0).any()):
            raise RuntimeError("cov(): aweights cannot be negative")
    if fweights is None:
        return aweights
    return fweights if aweights is None else fweights * aweights


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in input's rows (observations in its columns); a 1-d input is one
    variable (a 0-d result). fweights count observations, aweights weigh them.

    >>> lantern.cov(lantern.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 7.0]])).tolist()[0]
    [1.0, 2.5]
    """
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    x = _floating(input if input.dim() == 2 else input.reshape(1, -1))
    observations = x._size[1]
    w = _weights(fweights, aweights, observations)
    if w is None:
        average = x.mean(1)
        factor = observations - correction
    else:
        total = w.sum()
        average = (x * w).sum(1) / total
        factor = total if correction == 0 else (total - correction if aweights is None else
                                                 total - correction * (w * aweights).sum() / total)
    if bool(factor <= 0):
        user_warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.")
        factor = factor * 0 if isinstance(factor, TensorImpl) else 0
    centred = x - average.unsqueeze(1)
    weighted = centred if w is None else centred * w
    return (centred.mm(weighted.t().conj()) / factor).squeeze()  # one variable: a 0-d result


def corrcoef(input):
    """Pearson's correlation coefficients of the variables in input's rows (cov scaled to ones on the diagonal,
    clipped to [-1, 1]).

    >>> round(lantern.corrcoef(lantern.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 7.0]]))[0, 1].item(), 4)
    0.9934
    """
    c = cov(input)
    if c.dim() == 0:
        return c / c
    std = c.diagonal().real.sqrt()
    c = c / std.unsqueeze(1) / std.unsqueeze(0)
    if c.dtype.is_complex:
        return COMPOSITES["complex"](c.real.clamp(-1, 1), c.imag.clamp(-1, 1))
    return c.clamp(-1, 1)


composite("cov", cov)
composite("corrcoef", corrcoef)
