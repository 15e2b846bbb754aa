"""torch.sparse.check_sparse_tensor_invariants and torch.sparse.as_sparse_gradcheck against torch."""
import pytest
import torch

import lantern

LIBS = (torch, lantern)

BAD = [
    lambda m, **kw: m.sparse_coo_tensor([[0, 5]], [1.0, 2.0], (3,), **kw),
    lambda m, **kw: m.sparse_coo_tensor([[0, -1]], [1.0, 2.0], (3,), **kw),
    lambda m, **kw: m.sparse_coo_tensor([[0, 1], [2, 4]], [1.0, 2.0], (2, 3), **kw),
    lambda m, **kw: m.sparse_csr_tensor([0, 1, 2], [0, 7], [1.0, 2.0], (2, 3), **kw),
    lambda m, **kw: m.sparse_csr_tensor([0, 2, 1], [0, 1], [1.0, 2.0], (2, 3), **kw),
]


def _outcome(make, **kwargs):
    try:
        make(**kwargs)
    except RuntimeError as exc:
        return str(exc)
    return "made"


@pytest.mark.parametrize("bad", BAD)
def test_the_switch_decides_when_the_argument_is_none_like_torch(bad):
    results = []
    for lib in LIBS:
        check = lib.sparse.check_sparse_tensor_invariants
        assert not check.is_enabled()
        unchecked = _outcome(lambda: bad(lib))
        with check():
            assert check.is_enabled()
            checked = _outcome(lambda: bad(lib))
            explicitly_off = _outcome(lambda: bad(lib, check_invariants=False))
        check.enable()
        try:
            enabled = _outcome(lambda: bad(lib))
        finally:
            check.disable()
        decorated = _outcome(check()(lambda: bad(lib)))
        explicitly_on = _outcome(lambda: bad(lib, check_invariants=True))
        results.append((unchecked, checked, explicitly_off, enabled, decorated, explicitly_on, check.is_enabled()))
    assert results[1] == results[0]
    assert results[0][1] != "made"


def test_a_switch_instance_enters_once_like_torch():
    for lib in LIBS:
        switch = lib.sparse.check_sparse_tensor_invariants(False)
        with switch:
            with pytest.raises(RuntimeError, match="This context manager instance is already activated"):
                switch.__enter__()
        assert not lib.sparse.check_sparse_tensor_invariants.is_enabled()


FUNCTIONS = [
    lambda m: lambda x: x.to_dense() * 2,
    lambda m: lambda x: (x * x).to_dense().sum(0),
    lambda m: lambda x: m.sparse.mm(x, m.ones(2, 3, dtype=m.float64)),
    lambda m: lambda x: x * 3,
]


@pytest.mark.parametrize("fn, layout", [(fn, "coo") for fn in FUNCTIONS] + [(FUNCTIONS[0], "csr"),
                                                                           (FUNCTIONS[3], "csr")])
@pytest.mark.parametrize("masked", [False, True])
def test_as_sparse_gradcheck_like_torch(fn, layout, masked):
    outcomes = []
    for lib in LIBS:
        x = lib.tensor([[0.0, 1.5], [-2.0, 0.0]], dtype=lib.float64)
        x = (x.to_sparse() if layout == "coo" else x.to_sparse_csr()).requires_grad_()
        gradcheck = lib.sparse.as_sparse_gradcheck(lib.autograd.gradcheck)
        try:
            outcomes.append(gradcheck(fn(lib), x, masked=masked))
        except Exception as exc:  # both libraries must fail alike
            outcomes.append(type(exc).__name__)
    assert outcomes[1] == outcomes[0]


def test_as_sparse_gradcheck_finds_a_wrong_gradient_like_torch():
    for lib in LIBS:
        class WrongBackward(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 3

        x = lib.tensor([[0.0, 1.0], [2.0, 0.0]], dtype=lib.float64).to_sparse().requires_grad_()
        gradcheck = lib.sparse.as_sparse_gradcheck(lib.autograd.gradcheck)
        with pytest.raises(lib.autograd.gradcheck.__globals__["GradcheckError"]):
            gradcheck(lambda s: WrongBackward.apply(s.to_dense()), x)
        assert gradcheck(lambda s: WrongBackward.apply(s.to_dense()), x, raise_exception=False) is False
