"""Defects that the OpInfos' reference_inputs found (the full sweep runs them since tools/opinfo_sweep.py took them
in): each compared with torch on the call that exposed it."""
import pytest
import torch

import lantern
from oracle import assert_same


@pytest.mark.parametrize("args", [(2.0, "t"), (2, 3), (2.0, 3.0), (True, False), (3, "ti")])
def test_mul_takes_numbers_for_its_tensors(args):
    """torch's argument parser takes a number for mul's `self` (and for both operands), as for add and div."""
    def call(lib):
        values = {"t": lib.tensor([1.0, -2.0]), "ti": lib.tensor([1, 2])}
        return lib.mul(*(values.get(a, a) if isinstance(a, str) else a for a in args))
    assert_same(call(lantern), call(torch))


def test_mul_with_a_number_first_differentiates_the_tensor():
    x = lantern.tensor([1.0, 2.0], requires_grad=True)
    lantern.mul(3.0, x).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


@pytest.mark.parametrize("name", ["eq", "fmod", "atan2", "maximum"])
def test_ops_without_a_number_overload_still_refuse_one(name):
    with pytest.raises(TypeError):
        getattr(torch, name)(2.0, torch.ones(2))
    with pytest.raises(TypeError):
        getattr(lantern, name)(2.0, lantern.ones(2))


def test_complex_to_bool_is_nonzero_of_either_part():
    """Found by bool's reference inputs: a complex value with only an imaginary part is True."""
    values = [0 - 0.001j, 0j, 1 + 0j, complex("nan")]
    assert_same(lantern.tensor(values).bool(), torch.tensor(values).bool())
    assert_same(lantern.empty(4, dtype=lantern.bool).copy_(lantern.tensor(values)),
                torch.empty(4, dtype=torch.bool).copy_(torch.tensor(values)))


def test_ldexp_refuses_a_number_input():
    with pytest.raises(TypeError):
        torch.ldexp(2, torch.tensor([1, 2]))
    with pytest.raises(TypeError, match="ldexp"):
        lantern.ldexp(2, lantern.tensor([1, 2]))
