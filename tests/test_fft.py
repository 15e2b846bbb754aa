"""torch.fft against torch: every function on real, complex, integer and bool inputs (non-contiguous by default),
the n/s, dim and norm arguments, result layouts, out=, the errors, and float64 gradients (real and complex inputs)
by gradcheck, gradgradcheck and against torch's."""
import importlib.util
import warnings

import numpy as np
import pytest
import torch

import lantern
from lantern.compat.aliases import TorchAliasFinder
from deliberate_differences import DIFFERENCES
from oracle import as_numpy, assert_same, check, matches_torch, noncontig, raises_like, to_lib

TRANSFORMS = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
              "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"]
ONE_D = [name for name in TRANSFORMS if not name.endswith(("2", "n"))]
REAL_INPUT_ONLY = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}
rng = np.random.default_rng(0)


def real(*shape, dtype=np.float32):
    return noncontig(rng.standard_normal(shape).astype(dtype))


def cplx(*shape, dtype=np.complex64):
    return noncontig((rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype))


def INPUTS():
    return {"float32": real(3, 4, 6), "float64": real(3, 4, 6, dtype=np.float64), "complex64": cplx(3, 4, 6),
            "complex128": cplx(3, 4, 6, dtype=np.complex128),
            "int64": noncontig(rng.integers(-5, 5, (3, 4, 6))), "bool": noncontig(rng.random((3, 4, 6)) > 0.5)}


def test_namespace_matches_torch():
    assert lantern.fft.__all__ == torch.fft.__all__
    public = {n for n in dir(torch.fft) if not n.startswith("_") and callable(getattr(torch.fft, n))}
    assert {n for n in public if not hasattr(lantern.fft, n)} == set()


@pytest.mark.parametrize("dtype", list(INPUTS()))
@pytest.mark.parametrize("name", TRANSFORMS)
def test_transform_dtypes_values_layout(name, dtype):
    """Default arguments; torch's result dtype (float32 -> complex64, integers promoted) or its error."""
    matches_torch(lambda m, x: getattr(m.fft, name)(x), INPUTS()[dtype])


@pytest.mark.parametrize("name", TRANSFORMS)
def test_norm_modes(name):
    x = real(4, 6) if name in REAL_INPUT_ONLY else cplx(4, 6, dtype=np.complex128)
    check(lambda m, x: [getattr(m.fft, name)(x, norm=norm) for norm in ("backward", "forward", "ortho")], x)


# (function, input, keyword arguments): sizes cropped and padded, dims reordered and negative, layouts permuted
ARGUMENTS = {
    "fft n padded": ("fft", cplx(3, 5), {"n": 8}),
    "fft n cropped dim0": ("fft", real(5, 3), {"n": 3, "dim": 0}),
    "ifft real n": ("ifft", real(3, 5), {"n": 7, "dim": -1}),
    "rfft odd n": ("rfft", real(2, 6), {"n": 5}),
    "irfft n odd": ("irfft", cplx(2, 4), {"n": 7}),
    "irfft n=1": ("irfft", cplx(2, 4), {"n": 1}),
    "hfft n": ("hfft", cplx(2, 4), {"n": 5, "dim": 0}),
    "ihfft dim0": ("ihfft", real(5, 3), {"dim": 0}),
    "fftn s": ("fftn", cplx(3, 4, 5), {"s": (2, 7)}),
    "fftn s -1": ("fftn", real(3, 4, 5), {"s": (-1, 2)}),
    "fftn s int": ("fftn", real(3, 4, 5), {"s": 3}),
    "fftn dim int": ("fftn", cplx(3, 4, 5), {"dim": 1}),
    "fftn dims reordered": ("fftn", cplx(3, 4, 5), {"dim": (2, 0)}),
    "fftn empty dim": ("fftn", real(3, 4), {"dim": ()}),
    "ifftn s and dim": ("ifftn", cplx(3, 4, 5), {"s": (6, 2), "dim": (0, -1)}),
    "rfftn dims reordered": ("rfftn", real(3, 4, 5), {"dim": (2, 0)}),
    "rfftn s": ("rfftn", real(3, 4, 5), {"s": (3, 9)}),
    "irfftn dims reordered": ("irfftn", cplx(3, 4, 5), {"dim": (2, 0)}),
    "irfftn s": ("irfftn", cplx(3, 4, 5), {"s": (3, 9)}),
    "irfftn s last -1": ("irfftn", cplx(3, 4, 5), {"s": (2, -1)}),
    "hfftn s": ("hfftn", cplx(3, 4, 5), {"s": (5, 6), "dim": (1, 0)}),
    "ihfftn s": ("ihfftn", real(3, 4, 5), {"s": (5, 3)}),
    "fft2 dims": ("fft2", cplx(3, 4, 5), {"dim": (0, 2)}),
    "rfft2 s": ("rfft2", real(3, 4, 5), {"s": (6, 6)}),
    "irfft2 s": ("irfft2", cplx(3, 4, 5), {"s": (4, 9)}),
    "hfft2 dims": ("hfft2", cplx(3, 4, 5), {"dim": (2, 1)}),
    "ihfft2 dims": ("ihfft2", real(3, 4, 5), {"dim": (0, 1)}),
    "fftn 0-d": ("fftn", np.array(2.5), {}),
    "fft size 1": ("fft", cplx(3, 1), {}),
    "fft4d": ("fftn", cplx(2, 3, 2, 3), {"dim": (3, 1)}),
}


@pytest.mark.parametrize("name", ARGUMENTS)
def test_arguments(name):
    fn, x, kwargs = ARGUMENTS[name]
    check(lambda m, x: getattr(m.fft, fn)(x, **kwargs), x)


PERMUTATIONS = [(2, 0, 1), pytest.param((1, 2, 0), marks=pytest.mark.slow), pytest.param((0, 2, 1),
                                                                                      marks=pytest.mark.slow)]


@pytest.mark.parametrize("name", TRANSFORMS)
@pytest.mark.parametrize("perm", PERMUTATIONS)
def test_layout_of_permuted_inputs(name, perm):
    """The result's strides follow torch's CPU kernel: batch dims in the input's memory order, outermost."""
    x = real(3, 4, 5) if name in REAL_INPUT_ONLY else cplx(3, 4, 5)
    check(lambda m, x: getattr(m.fft, name)(x.permute(perm)), x)


ERRORS = {
    "n=0": (lambda m, x: m.fft.fft(x, n=0), real(4)),
    "n negative": (lambda m, x: m.fft.rfft(x, n=-1), real(4)),
    "irfft of a single point": (lambda m, x: m.fft.irfft(x), cplx(1)),
    "dim out of range": (lambda m, x: m.fft.fft(x, dim=2), real(3, 4)),
    "0-d input": (lambda m, x: m.fft.fft(x), np.array(1.0)),
    "0-d fft2": (lambda m, x: m.fft.fft2(x), np.array(1.0)),
    "fft2 of 1-d": (lambda m, x: m.fft.fft2(x), real(4)),
    "bad norm": (lambda m, x: m.fft.fft(x, norm="bad"), real(4)),
    "bad norm n-d": (lambda m, x: m.fft.irfftn(x, norm="sideways"), cplx(4, 3)),
    "duplicate dims": (lambda m, x: m.fft.fftn(x, dim=(0, 0)), real(3, 4)),
    "duplicate dims negative": (lambda m, x: m.fft.fftn(x, dim=(1, -1)), real(3, 4)),
    "s and dim lengths": (lambda m, x: m.fft.fftn(x, s=(2,), dim=(0, 1)), real(3, 4)),
    "s longer than dims": (lambda m, x: m.fft.fftn(x, s=(2, 2, 2)), real(3, 4)),
    "s zero": (lambda m, x: m.fft.rfftn(x, s=(0, 2)), real(3, 4)),
    "rfft of complex": (lambda m, x: m.fft.rfft(x), cplx(4)),
    "ihfft of complex": (lambda m, x: m.fft.ihfft(x), cplx(4)),
    "rfftn of complex": (lambda m, x: m.fft.rfftn(x), cplx(3, 4)),
    "ihfftn of complex": (lambda m, x: m.fft.ihfftn(x), cplx(3, 4)),
    "rfftn no axes": (lambda m, x: m.fft.rfftn(x, dim=()), real(3, 4)),
    "irfftn no axes": (lambda m, x: m.fft.irfftn(x), np.array(1.0 + 0j)),
    "hfftn no axes": (lambda m, x: m.fft.hfftn(x, dim=[]), cplx(3, 4)),
    "ihfftn no axes": (lambda m, x: m.fft.ihfftn(x, dim=[]), real(3, 4)),
    "float16": (lambda m, x: m.fft.fft(x.half()), real(4)),
    "bfloat16": (lambda m, x: m.fft.rfft2(x.bfloat16()), real(2, 4)),
    "float16 irfft": (lambda m, x: m.fft.irfft(x.half()), real(4)),
    "n not an int": (lambda m, x: m.fft.fft(x, n=2.0), real(4)),
    "dim None": (lambda m, x: m.fft.fft(x, dim=None), real(4)),
    "dim a tuple": (lambda m, x: m.fft.fft(x, dim=(0,)), real(4)),
    "out real for fft": (lambda m, x: m.fft.fft(x, out=m.empty(0)), real(4)),
    "out real for rfft": (lambda m, x: m.fft.rfft(x, out=m.empty(0)), real(4)),
    "out complex for irfft": (lambda m, x: m.fft.irfft(x, out=m.empty(0, dtype=m.complex64)), cplx(4)),
    "out complex for hfftn": (lambda m, x: m.fft.hfftn(x, out=m.empty(0, dtype=m.complex64)), cplx(3, 4)),
    "out real for fft2": (lambda m, x: m.fft.fft2(x, out=m.empty(0)), cplx(3, 4)),
    "out with grad": (lambda m, x: m.fft.fft(x.requires_grad_(), out=m.empty(0, dtype=m.complex64)), real(4)),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors(name):
    fn, x = ERRORS[name]
    raises_like(fn, x)


def test_error_messages():
    assert "Invalid number of data points (0) specified" in raises_like(lambda m, x: m.fft.fft(x, n=0), real(4))[1]
    assert 'Invalid normalization mode: "bad"' in raises_like(lambda m, x: m.fft.fft(x, norm="bad"), real(4))[1]
    assert "FFT dims must be unique" in raises_like(lambda m, x: m.fft.fftn(x, dim=(0, 0)), real(3, 4))[1]
    assert "Unsupported dtype Half" in raises_like(lambda m, x: m.fft.fft(x.half()), real(4))[1]
    assert "rfft expects a real input tensor, but got ComplexFloat" in \
        raises_like(lambda m, x: m.fft.rfft(x), cplx(4))[1]
    assert "irfftn must transform at least one axis" in \
        raises_like(lambda m, x: m.fft.irfftn(x), np.array(1.0 + 0j))[1]


OUTS = {
    "fft into complex128": ("fft", real(3, 4), lambda m: m.empty(0, dtype=m.complex128)),
    "ifft of real": ("ifft", real(3, 4), lambda m: m.empty(0, dtype=m.complex64)),
    "ihfft": ("ihfft", real(3, 4), lambda m: m.empty(0, dtype=m.complex64)),
    "irfft into float64": ("irfft", cplx(3, 4), lambda m: m.empty(0, dtype=m.float64)),
    "hfft": ("hfft", cplx(3, 4), lambda m: m.empty(0)),
    "fft2": ("fft2", cplx(3, 4), lambda m: m.empty(0, dtype=m.complex64)),
    "rfftn": ("rfftn", real(3, 4), lambda m: m.empty(0, dtype=m.complex64)),
    "irfftn": ("irfftn", cplx(3, 4), lambda m: m.empty(0)),
    "hfft2": ("hfft2", cplx(3, 4), lambda m: m.empty(0)),
    "ihfftn": ("ihfftn", real(3, 4), lambda m: m.empty(0, dtype=m.complex64)),
    "ihfft2": ("ihfft2", real(3, 4), lambda m: m.empty(0, dtype=m.complex64)),
}


@pytest.mark.parametrize("case", OUTS)
def test_out(case):
    name, x, make_out = OUTS[case]

    def run(m, x):
        out = make_out(m)
        result = getattr(m.fft, name)(x, out=out)
        return result is out, out
    check(run, x)


def test_out_of_the_wrong_shape_is_resized_with_torch_warning():
    def run(m, x):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = m.fft.rfft(x, out=m.empty(2, dtype=m.complex64))
        return out, [str(w.message)[:40] for w in caught]
    check(run, real(3, 4))


# ---- gradients -------------------------------------------------------------------------------------------------

# (function, input, keyword arguments): each primitive reached with its onesided / normalization variants
GRADIENT_CASES = {
    "fft complex": ("fft", cplx(5, dtype=np.complex128), {}),
    "fft real": ("fft", real(2, 5, dtype=np.float64), {"norm": "ortho"}),
    "ifft real": ("ifft", real(2, 4, dtype=np.float64), {}),
    "ifft complex forward": ("ifft", cplx(4, dtype=np.complex128), {"norm": "forward"}),
    "rfft even": ("rfft", real(2, 6, dtype=np.float64), {}),
    "rfft odd n": ("rfft", real(2, 6, dtype=np.float64), {"n": 5, "norm": "forward"}),
    "irfft": ("irfft", cplx(2, 4, dtype=np.complex128), {}),
    "irfft odd n ortho": ("irfft", cplx(2, 4, dtype=np.complex128), {"n": 7, "norm": "ortho"}),
    "hfft": ("hfft", cplx(4, dtype=np.complex128), {"n": 6}),
    "ihfft": ("ihfft", real(5, dtype=np.float64), {}),
    "fft2 complex": ("fft2", cplx(3, 4, dtype=np.complex128), {"s": (4, 3)}),
    "ifftn real": ("ifftn", real(3, 2, dtype=np.float64), {}),
    "rfftn": ("rfftn", real(3, 4, dtype=np.float64), {"dim": (1, 0)}),
    "irfftn": ("irfftn", cplx(3, 3, dtype=np.complex128), {"s": (3, 4)}),
    "hfft2": ("hfft2", cplx(3, 3, dtype=np.complex128), {"norm": "ortho"}),
    "ihfft2": ("ihfft2", real(3, 4, dtype=np.float64), {"norm": "forward"}),
    "irfftn integer-valued": ("irfftn", real(2, 3, dtype=np.float64), {}),
}


def _gradients(lib, case):
    name, x_np, kwargs = GRADIENT_CASES[case]
    x = to_lib(lib, x_np).requires_grad_()
    out = getattr(lib.fft, name)(x, **kwargs)
    seed_rng = np.random.default_rng(3)
    seed = seed_rng.standard_normal(tuple(out.shape))
    if out.dtype.is_complex:
        seed = seed + 1j * seed_rng.standard_normal(tuple(out.shape))
    (grad,) = lib.autograd.grad(out, x, lib.tensor(seed, dtype=out.dtype))
    return out, type(out.grad_fn).__name__, grad


@pytest.mark.parametrize("case", GRADIENT_CASES)
def test_gradients_match_torch(case):
    got, expected = _gradients(lantern, case), _gradients(torch, case)
    assert got[0].is_conj() == expected[0].is_conj()
    assert_same(got, expected, atol=1e-9, rtol=1e-9)


@pytest.mark.parametrize("case", GRADIENT_CASES)
def test_gradcheck_and_gradgradcheck(case):
    name, x_np, kwargs = GRADIENT_CASES[case]
    x = to_lib(lantern, x_np).requires_grad_()
    fn = lambda x: getattr(lantern.fft, name)(x, **kwargs)  # noqa: E731
    assert lantern.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-5)
    assert lantern.autograd.gradgradcheck(fn, (x,), eps=1e-6, atol=1e-4)


def test_gradient_of_noncontiguous_input():
    x_np = real(3, 8, dtype=np.float64)

    def run(m, x):
        x = x.detach().requires_grad_()
        m.fft.rfft(x.t(), dim=0).abs().sum().backward()
        return x.grad
    check(run, x_np)


# ---- frequencies and shifts ------------------------------------------------------------------------------------

FREQUENCIES = {
    "fftfreq 5": lambda m: m.fft.fftfreq(5),
    "fftfreq 6 d": lambda m: m.fft.fftfreq(6, 0.1),
    "fftfreq 0": lambda m: m.fft.fftfreq(0),
    "fftfreq float64": lambda m: m.fft.fftfreq(7, 2.5, dtype=m.float64),
    "fftfreq d tensor": lambda m: m.fft.fftfreq(4, m.tensor(2.0)),
    "fftfreq requires_grad": lambda m: m.fft.fftfreq(4, requires_grad=True),
    "fftfreq out": lambda m: m.fft.fftfreq(4, out=m.empty(0, dtype=m.float64)),
    "rfftfreq 5": lambda m: m.fft.rfftfreq(5, 0.1),
    "rfftfreq 8": lambda m: m.fft.rfftfreq(8),
    "rfftfreq negative n": lambda m: (m.fft.rfftfreq(-1), m.fft.rfftfreq(-3)),
}


@pytest.mark.parametrize("name", FREQUENCIES)
def test_frequencies(name):
    check(FREQUENCIES[name])


@pytest.mark.parametrize("fn", [lambda m: m.fft.fftfreq(4, dtype=m.int64), lambda m: m.fft.fftfreq(-1),
                                lambda m: m.fft.fftfreq(4, dtype=m.complex64)],
                         ids=["integer dtype", "negative n", "complex dtype"])
def test_frequency_errors(fn):
    raises_like(fn)


SHIFTS = {
    "fftshift all": (lambda m, x: m.fft.fftshift(x), real(3, 4, 5)),
    "fftshift dim": (lambda m, x: m.fft.fftshift(x, dim=1), real(3, 4, 5)),
    "fftshift dims": (lambda m, x: m.fft.fftshift(x.permute(2, 0, 1), dim=(0, -1)), real(3, 4, 5)),
    "ifftshift all": (lambda m, x: m.fft.ifftshift(x), cplx(3, 5)),
    "ifftshift dim": (lambda m, x: m.fft.ifftshift(x, dim=(-1,)), real(5, 3)),
    "round trip": (lambda m, x: m.fft.ifftshift(m.fft.fftshift(x)), real(5, 7)),
    "fftshift of fftfreq": (lambda m: m.fft.fftshift(m.fft.fftfreq(5)),),
}


@pytest.mark.parametrize("name", SHIFTS)
def test_shifts(name):
    fn, *inputs = SHIFTS[name]
    check(fn, *inputs)


# ---- reaching torch.fft as a program does ----------------------------------------------------------------------

def test_torch_fft_and_signal_resolve_under_compat():
    """`import torch.fft` (and torch.signal.windows) under `python -m lantern.compat` find lantern's modules."""
    finder = TorchAliasFinder()
    for name in ("torch.fft", "torch.signal", "torch.signal.windows"):
        module = importlib.util.module_from_spec(finder.find_spec(name))
        assert module.__name__ == name
    fft = importlib.util.module_from_spec(finder.find_spec("torch.fft"))
    assert fft.fft(lantern.arange(4.)).real.tolist() == [6.0, -2.0, -2.0, -2.0]
    assert finder.proxy("torch", lantern).fft.rfft is lantern.fft.rfft


def test_meta_tensors_have_the_cpu_result_geometry():
    x = lantern.empty(3, 4, 5, device="meta").permute(2, 0, 1)
    cpu = lantern.zeros(3, 4, 5).permute(2, 0, 1)
    for name in ("fft", "rfft2", "irfftn", "ihfftn"):
        got, expected = getattr(lantern.fft, name)(x), getattr(lantern.fft, name)(cpu)
        assert (got.device.type, got.shape, got.stride(), got.dtype) == \
            ("meta", expected.shape, expected.stride(), expected.dtype)


def test_round_trips():
    x = lantern.tensor(real(4, 6, dtype=np.float64))
    np.testing.assert_allclose(as_numpy(lantern.fft.irfftn(lantern.fft.rfftn(x), s=x.shape)), as_numpy(x),
                               atol=1e-12)
    np.testing.assert_allclose(as_numpy(lantern.fft.ihfft(lantern.fft.hfft(lantern.fft.ihfft(x)))),
                               as_numpy(lantern.fft.ihfft(x)), atol=1e-12)


def test_empty_batch():
    assert DIFFERENCES["FFT over an empty batch"]
    with pytest.raises(RuntimeError, match="MKL FFT error"):
        torch.fft.fft(torch.ones(0, 4))
    for name, x in (("fft", lantern.ones(0, 4)), ("rfft", lantern.ones(0, 4)),
                    ("irfft", lantern.ones(0, 4, dtype=lantern.complex64))):
        result = getattr(lantern.fft, name)(x)
        assert result.numel() == 0 and result.shape[-1] == {"fft": 4, "rfft": 3, "irfft": 6}[name]
