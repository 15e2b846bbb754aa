"""The three FFT primitives every torch.fft function is built from, as ATen has them, with their derivatives:

- `_fft_c2c(self, dim, normalization, forward)`: complex to complex, over the dims in `dim`;
- `_fft_r2c(self, dim, normalization, onesided)`: real to complex; onesided keeps the last dim's n // 2 + 1
  non-redundant outputs (the others are their complex conjugates);
- `_fft_c2r(self, dim, normalization, last_dim_size)`: a onesided Hermitian half-spectrum back to real values.

`normalization` scales the sum: 0 not at all, 1 by 1/sqrt(n), 2 by 1/n (n the product of the transformed sizes).
The kernels are the array library's pocketfft (`xp.fft`), which keeps float32 in single precision.

The result is laid out as PyTorch's CPU (MKL) kernel lays it out: the untransformed dims outermost, in the input's
memory order, then the transformed dims densely packed in the order the kernel runs them (`fft_layout`).

>>> from lantern.ops.call_by_name import call_op
>>> half = call_op("_fft_r2c", lantern.tensor([1., 2., 3., 4.]), [0], 0, True)
>>> half.tolist(), call_op("_fft_c2r", half, [0], 2, 4).tolist()
([(10+0j), (-2+2j), (-2+0j)], [1.0, 2.0, 3.0, 4.0])
"""
from ..core.size import wrap_dim
from .call_by_name import call_op as _op
from .derivative import derivative
from .registry import custom

# normalization -> the `norm` of NumPy's fft functions, for a forward and for an inverse transform
_FORWARD_NORM = {0: "backward", 1: "ortho", 2: "forward"}
_INVERSE_NORM = {0: "forward", 1: "ortho", 2: "backward"}


def fft_layout(in_strides, out_sizes, dims):
    """The result's strides: the dims not in `dims` (the batch) outermost, by decreasing input stride (a stable
    order, as the kernel's small sort is), then `dims` in the order given, all densely packed.

    >>> fft_layout((20, 5, 1), (3, 4, 5), [0])   # a transform over dim 0 makes dim 0 the innermost
    (1, 15, 3)
    """
    batch = sorted((d for d in range(len(out_sizes)) if d not in dims), key=lambda d: -in_strides[d])
    strides = [0] * len(out_sizes)
    step = 1
    for d in reversed(batch + list(dims)):
        strides[d] = step
        step *= max(out_sizes[d], 1)
    return tuple(strides)


def _by_stride(t, dims):
    """`dims` ordered by decreasing stride of t: the order the kernel transforms them in."""
    return sorted(dims, key=lambda d: -t._stride[d])


def _wrapped(dim, ndim):
    return [wrap_dim(d, ndim) for d in dim]


def _fft_c2c(backend, self, dim, normalization, forward):
    if not self.dtype.is_complex:
        raise RuntimeError(f"_fft_c2c expects a complex input tensor, but got {self.dtype.legacy}")
    dims = _by_stride(self, _wrapped(dim, self.dim()))
    if not dims:
        return self.clone()
    out = backend.empty_strided(self._size, fft_layout(self._stride, self._size, dims), self.dtype)
    xp = backend.xp
    if xp is not None:
        transform = xp.fft.fftn if forward else xp.fft.ifftn
        norm = (_FORWARD_NORM if forward else _INVERSE_NORM)[normalization]
        backend.array(out)[...] = transform(backend.array(self), axes=dims, norm=norm)
    return out


def _fft_r2c(backend, self, dim, normalization, onesided):
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"Only supports floating-point dtypes, but found: {self.dtype.legacy}")
    wrapped = _wrapped(dim, self.dim())
    dims = _by_stride(self, wrapped[:-1]) + wrapped[-1:]  # the halved dim stays last
    sizes = list(self._size)
    if onesided:
        sizes[dims[-1]] = sizes[dims[-1]] // 2 + 1
    sizes = tuple(sizes)
    out = backend.empty_strided(sizes, fft_layout(self._stride, sizes, dims), self.dtype.to_complex())
    xp = backend.xp
    if xp is not None:
        transform = xp.fft.rfftn if onesided else xp.fft.fftn
        backend.array(out)[...] = transform(backend.array(self), axes=dims, norm=_FORWARD_NORM[normalization])
    return out


def _fft_c2r(backend, self, dim, normalization, last_dim_size):
    if not self.dtype.is_complex:
        raise RuntimeError(f"Only supports complex dtypes, but found: {self.dtype.legacy}")
    wrapped = _wrapped(dim, self.dim())
    # a complex-to-complex inverse over the other dims first, then the 1-D complex-to-real one: each step lays out
    # its result by its own input's strides
    first = _by_stride(self, wrapped[:-1])
    strides = fft_layout(self._stride, self._size, first) if first else self._stride
    last = wrapped[-1]
    sizes = self._size[:last] + (last_dim_size,) + self._size[last + 1:]
    out = backend.empty_strided(sizes, fft_layout(strides, sizes, [last]), self.dtype.to_real())
    xp = backend.xp
    if xp is not None:
        dims = first + [last]
        backend.array(out)[...] = xp.fft.irfftn(backend.array(self), s=[sizes[d] for d in dims], axes=dims,
                                                norm=_INVERSE_NORM[normalization])
    return out


custom("_fft_c2c(Tensor self, int[] dim, int normalization, bool forward) -> Tensor", _fft_c2c, _fft_c2c,
       method=False)
custom("_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor", _fft_r2c, _fft_r2c,
       method=False)
custom("_fft_c2r(Tensor self, int[] dim, int normalization, int last_dim_size) -> Tensor", _fft_c2r, _fft_c2r,
       method=False)


def fft_c2c_backward(grad, dim, normalization, forward):
    """The adjoint of a complex transform: the transform the other way, unnormalized the same way."""
    return _op("_fft_c2c", grad, dim, normalization, not forward)


def fft_r2c_backward(grad, dim, normalization, onesided, self_meta):
    """The adjoint of a real-to-complex transform: the onesided gradient padded with zeros to the full length,
    transformed back (unnormalized inverse = adjoint of the forward sum), and its real part."""
    if onesided:
        last = wrap_dim(dim[-1], grad.dim())
        missing = self_meta.size[last] - grad.shape[last]
        if missing > 0:
            zeros_shape = grad.shape[:last] + (missing,) + grad.shape[last + 1:]
            grad = _op("cat", [grad, grad.new_zeros(zeros_shape)], last)
    return _op("_fft_c2c", grad, dim, normalization, False).real


def fft_c2r_backward(grad, dim, normalization):
    """The adjoint of a complex-to-real transform: the onesided forward transform of the gradient, with the entries
    that stand for two (a value and its mirrored conjugate) counted twice."""
    half = _op("_fft_r2c", grad, dim, normalization, True)
    last = wrap_dim(dim[-1], grad.dim())
    doubled = grad.shape[last] - half.shape[last]
    if doubled <= 0:
        return half
    rest = half.shape[last] - 1 - doubled
    return _op("cat", [half.narrow(last, 0, 1), half.narrow(last, 1, doubled) * 2,
                       half.narrow(last, 1 + doubled, rest)], last)


_helpers = {f.__name__: f for f in (fft_c2c_backward, fft_r2c_backward, fft_c2r_backward)}
derivative("_fft_c2c", name="FftC2CBackward0", helpers=_helpers,
           self="fft_c2c_backward(grad, dim, normalization, forward)")
derivative("_fft_r2c", name="FftR2CBackward0", helpers=_helpers,
           self="fft_r2c_backward(grad, dim, normalization, onesided, self_meta)")
derivative("_fft_c2r", name="FftC2RBackward0", helpers=_helpers,
           self="fft_c2r_backward(grad, dim, normalization)")
