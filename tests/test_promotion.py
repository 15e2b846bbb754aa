"""Type promotion against torch: promote_types and can_cast for every dtype pair, result_type across the three
operand tiers (dim>0 tensors, 0-dim tensors, Python numbers) checked through real ops, and casting into out=/in-place.
"""
import itertools

import numpy as np
import pytest
import torch

import lantern
from oracle import DTYPE_PAIRS, check, matches_torch, noncontig, raises_like

NAMES = [str(t).replace("torch.", "") for t, _ in DTYPE_PAIRS]
PAIRS = list(itertools.product(NAMES, NAMES))


def sample(name, shape=(2, 3)):
    """Small positive values of dtype `name` (bfloat16 comes as float32: convert inside the lambda with `as_`)."""
    n = int(np.prod(shape))
    if name == "bool":
        return noncontig((np.arange(n) % 2 == 0).reshape(shape))
    np_name = "float32" if name == "bfloat16" else name
    return noncontig((np.arange(n) % 5 + 1).astype(np_name).reshape(shape))


def scalar(name):
    """A 0-dim array of dtype `name` (bfloat16 as float32)."""
    return sample(name, (1,)).reshape(())


def as_(m, x, name):
    return x.to(getattr(m, name)) if name == "bfloat16" else x


def test_promote_types_and_can_cast_tables():
    for a, b in PAIRS:
        ta, tb, la, lb = getattr(torch, a), getattr(torch, b), getattr(lantern, a), getattr(lantern, b)
        assert lantern.promote_types(la, lb).name == str(torch.promote_types(ta, tb))[6:], (a, b)
        assert lantern.can_cast(la, lb) == torch.can_cast(ta, tb), (a, b)


@pytest.mark.parametrize("a,b", PAIRS)
def test_result_type_tiers(a, b):
    """dim>0 with dim>0, dim>0 with 0-dim (both orders), 0-dim with 0-dim: through mul and torch.result_type."""
    mul = lambda m, x, y: as_(m, x, a) * as_(m, y, b)  # noqa: E731
    check(mul, sample(a), sample(b))
    check(lambda m, x, y: m.result_type(as_(m, x, a), as_(m, y, b)), sample(a), sample(b))
    check(mul, scalar(a), scalar(b))
    check(mul, sample(a), scalar(b))  # float16 with a 0-dim complex: complex32, as in torch
    check(lambda m, x, y: m.result_type(as_(m, x, a), as_(m, y, b)), sample(a), scalar(b))
    check(mul, scalar(a), sample(b))


PY_SCALARS = [True, 3, 2.5, 1 + 2j]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("s", PY_SCALARS, ids=["bool", "int", "float", "complex"])
def test_python_scalar_both_sides(name, s):
    check(lambda m, x: as_(m, x, name) * s, sample(name))
    check(lambda m, x: s * as_(m, x, name), sample(name))
    check(lambda m, x: m.mul(as_(m, x, name), s), sample(name))
    check(lambda m, x: m.result_type(as_(m, x, name), s), sample(name))
    check(lambda m, x: as_(m, x, name) * s, scalar(name))


@pytest.mark.parametrize("name", NAMES)
def test_true_division_and_add_scalars(name):
    check(lambda m, x: as_(m, x, name) / 2, sample(name))
    check(lambda m, x: 2 / as_(m, x, name), sample(name))
    check(lambda m, x: as_(m, x, name) + 5, sample(name))
    check(lambda m, x: as_(m, x, name) + 5.5, sample(name))


def test_spec_row_27_examples():
    i32 = np.array([1, 2], np.int32)
    check(lambda m, x: x + 5, i32)
    check(lambda m, x: x + 5.5, i32)
    check(lambda m, x: x / 5, i32)
    check(lambda m, x, y: x + y, np.ones(2, np.float32), np.array(1.0))
    check(lambda m, x, y: x + y, i32, np.array(1.0))
    check(lambda m, x, y: x + y, np.ones(2, np.uint8), np.ones(2, np.int8))
    check(lambda m, x, y: x + y, np.ones(2, bool), i32)
    check(lambda m, x, y: x + y, np.ones(2, np.int64), np.ones(2, np.float32))
    check(lambda m: m.add(m.tensor(5), 5))


def test_default_dtype_changes_scalar_promotion():
    lantern.set_default_dtype(lantern.float64)
    torch.set_default_dtype(torch.float64)
    try:
        check(lambda m, x: x * 2.5, np.arange(3, dtype=np.int32))
        check(lambda m, x: x * 1j, np.arange(3, dtype=np.int32))
        check(lambda m, x: x * 1j, np.arange(3, dtype=np.float32))
    finally:
        lantern.set_default_dtype(lantern.float32)
        torch.set_default_dtype(torch.float32)


def test_float16_with_complex_gives_complex32():
    check(lambda m, x: (x * 1j, x * m.tensor(1j), m.result_type(x, 1j)), np.ones(2, np.float16))


@pytest.mark.parametrize("a,b", PAIRS)
def test_inplace_and_out_cast_rules(a, b):
    """x.mul_(y) runs in promote(x, y) and casts back into x's dtype; mul(x, x, out=o) casts into o's dtype.
    Refused casts (float->int, complex->real, non-bool->bool) raise RuntimeError."""
    matches_torch(lambda m, x, y: as_(m, x, a).clone().mul_(as_(m, y, b)), sample(a), sample(b))

    def out_form(m, x, y):
        out = m.empty(2, 3, dtype=getattr(m, b))
        r = m.mul(as_(m, x, a), as_(m, x, a), out=out)
        assert r is out and out._version == 1
        return out
    matches_torch(out_form, sample(a), sample(b))


def test_inplace_cast_error_message():
    torch_msg, msg = raises_like(lambda m, x, y: x.__imul__(y), np.ones(3, np.int32), np.ones(3, np.float32))
    assert "result type Float can't be cast to the desired output type Int" in msg
    assert "result type Float can't be cast to the desired output type Int" in torch_msg
    _, msg = raises_like(lambda m, x: x.add_(1.5), np.ones(3, np.int64))
    assert "result type Float can't be cast to the desired output type Long" in msg
    _, msg = raises_like(lambda m, x: x.add_(1j), np.ones(3, np.float32))
    assert "ComplexFloat can't be cast to the desired output type Float" in msg
    _, msg = raises_like(lambda m, x: x.mul_(2), np.ones(3, bool))
    assert "Long can't be cast to the desired output type Bool" in msg


def test_zero_dim_inplace_uses_wrapped_tiers():
    """An int tensor *= a 0-dim float64 still promotes to float64, which can't cast back."""
    raises_like(lambda m, x, y: x.mul_(y), np.ones(3, np.int32), np.array(2.0))
    check(lambda m, x, y: x.clone().mul_(y), np.ones(3, np.float32), np.array(2.0))
    check(lambda m, x, y: x.clone().mul_(y), np.ones(3, np.float16), np.array(2.0))


LIMITED_UNSIGNED = ["uint16", "uint32", "uint64"]


@pytest.mark.parametrize("u", LIMITED_UNSIGNED)
@pytest.mark.parametrize("other", NAMES + LIMITED_UNSIGNED)
def test_limited_unsigned_promote_only_with_themselves_and_floats(u, other):
    """torch's uint16/32/64 promote with their own type and with floating types; any other pair raises."""
    for a, b in ((u, other), (other, u)):
        matches_torch(lambda m: m.promote_types(getattr(m, a), getattr(m, b)))
        matches_torch(lambda m: m.result_type(m.ones(2, dtype=getattr(m, a)), m.ones(2, dtype=getattr(m, b))))
        matches_torch(lambda m: m.cat([m.ones(2, dtype=getattr(m, a)), m.ones(2, dtype=getattr(m, b))]))


@pytest.mark.parametrize("u", LIMITED_UNSIGNED)
def test_limited_unsigned_in_the_weaker_tiers(u):
    """stack and result_type of one limited unsigned type; a 0-dim int64 or a Python number leaves it as it is."""
    x = lambda m: m.arange(4).to(getattr(m, u))[::2]  # noqa: E731
    check(lambda m: m.stack([x(m), x(m)]))
    for other in (True, 3, 2.5, "zero_dim_int64", "zero_dim_float64"):
        def other_of(m):
            return m.tensor(1, dtype=getattr(m, other[9:])) if isinstance(other, str) else other
        matches_torch(lambda m: m.result_type(x(m), other_of(m)))
