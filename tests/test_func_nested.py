"""Nested forward-mode transforms of torch.func (jacfwd of jacfwd, jvp of jvp, forward over and under reverse)
against torch.func on the same functions: each jvp has its own forward-AD level (lantern/autograd/forward_ad.py)."""
import warnings

import numpy as np
import pytest

import lantern
from oracle import check, raises_like

rng = np.random.default_rng(20)
X = rng.standard_normal(4)
V = rng.standard_normal(4)
DATA = rng.standard_normal((5, 2))


def sin_x_squared(m, x):
    return x.sin() * x ** 2


def mlp_loss(m, w):
    """A 2-2-1 tanh MLP's mean squared output over DATA, its 4 weights of the first layer in w."""
    hidden = (m.tensor(DATA, dtype=w.dtype) @ w.reshape(2, 2)).tanh()
    return (hidden.sum(1) ** 2).mean()


def cumprod(m, x):
    return x.cumprod(0)


FUNCTIONS = {"sin_x_squared": sin_x_squared, "mlp_loss": mlp_loss, "cumprod": cumprod}


def jvp_of_jvp(m, f, x, v):
    return m.func.jvp(lambda t: m.func.jvp(f, (t,), (v,))[1], (x,), (v * 2,))


TRANSFORMS = {
    "jvp of jvp": jvp_of_jvp,
    "jacfwd of jacfwd": lambda m, f, x, v: m.func.jacfwd(m.func.jacfwd(f))(x),
    "jacfwd of jacrev": lambda m, f, x, v: m.func.jacfwd(m.func.jacrev(f))(x),
    "jacrev of jacfwd": lambda m, f, x, v: m.func.jacrev(m.func.jacfwd(f))(x),
    "jacfwd of jacfwd of jacfwd": lambda m, f, x, v: m.func.jacfwd(m.func.jacfwd(m.func.jacfwd(f)))(x),
    "jacfwd of jacrev of jacrev": lambda m, f, x, v: m.func.jacfwd(m.func.jacrev(m.func.jacrev(f)))(x),
    "jacfwd of hessian": lambda m, f, x, v: m.func.jacfwd(m.func.hessian(lambda t: f(t).sum()))(x),
    "hessian of jacfwd": lambda m, f, x, v: m.func.hessian(m.func.jacfwd(f))(x),
}
# cumprod's derived forward derivative runs its backward, whose index_put writes under two vmaps in jacfwd of jacfwd
CASES = [(t, f) for t in TRANSFORMS for f in FUNCTIONS]


@pytest.mark.parametrize("transform, function", CASES)
def test_nested_transforms_match_torch_func(transform, function):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the per-example fallback's performance warning
        check(lambda m, x, v: TRANSFORMS[transform](m, lambda t: FUNCTIONS[function](m, t), x, v), X, V,
              strides=False, aliasing=False)


def test_jacrev_of_jacfwd_of_cumprod_through_index_put_under_vmap():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(lambda m, x: m.func.jacrev(m.func.jacfwd(lambda t: t.cumprod(0)))(x), X, strides=False, aliasing=False)


def test_gradient_of_indexing_with_a_whole_dim_under_vmap():
    # x[:, index]'s backward writes with index_put, whose indices hold None for the dim taken whole
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(lambda m, v: m.func.vmap(m.func.jacrev(lambda r: r[:, [0, 2]].sin()))(v),
              rng.standard_normal((3, 2, 4)), strides=False, aliasing=False)


def test_public_dual_level_still_refuses_nesting_inside_and_around_func_jvp():
    import lantern.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        lantern.func.jvp(lantern.sin, (lantern.ones(2),), (lantern.ones(2),))
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            fwAD.enter_dual_level()


def test_levels_are_cleared_on_exit():
    import lantern.autograd.forward_ad as fwAD
    x = lantern.ones(2)
    lantern.func.jacfwd(lantern.func.jacfwd(lambda t: t.sin() * t))(x)
    assert fwAD.levels() == () and fwAD.unpack_dual(x).tangent is None
