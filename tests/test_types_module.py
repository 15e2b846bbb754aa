"""torch.types against torch: the same public names and private aliases typed libraries import, each the same
kind of typing object over lantern's classes."""
import typing

import pytest
import torch
import torch.types

import lantern
import lantern.types

# torch.types names that typed code imports; lantern's SymInt-free aliases are the plain types.
NAMES = ["Number", "Device", "FileLike", "Storage", "IntLikeType", "FloatLikeType", "BoolLikeType", "py_sym_types",
         "_Number", "_TensorOrTensors", "_TensorOrOptionalTensors", "_size", "_symsize", "_int", "_float", "_bool",
         "_complex", "_str", "_bytes"]


def _spelled(alias):
    """An alias's members as names, torch's and lantern's classes alike ('Tensor', 'int', 'IO[bytes]')."""
    return sorted(getattr(arg, "__name__", None) or str(arg).replace("typing.", "")
                  for arg in typing.get_args(alias) or (alias,))


def test_public_names_match_torch():
    assert lantern.types.__all__ == torch.types.__all__


@pytest.mark.parametrize("name", NAMES)
def test_names_exist(name):
    assert hasattr(torch.types, name) and hasattr(lantern.types, name)


@pytest.mark.parametrize("name", ["Number", "Device", "FileLike", "_size", "_TensorOrTensors"])
def test_aliases_name_the_same_types(name):
    assert _spelled(getattr(lantern.types, name)) == _spelled(getattr(torch.types, name))


def test_number_tuple_and_symbolic_scalars():
    assert lantern.types._Number == torch.types._Number
    assert isinstance(3, lantern.types.IntLikeType) and not isinstance(3.0, lantern.types.IntLikeType)
    assert lantern.types.py_sym_types == ()


def test_annotations_resolve():
    def f(x: lantern.types.Number, d: lantern.types.Device = None) -> lantern.Tensor:
        return lantern.tensor(x, device=d)
    assert typing.get_type_hints(f)["d"] == lantern.types.Device
    assert f(2).item() == 2
