"""lantern.inspect.op_card: one op's story, read from the live registry, every location pointing at its code."""
import os

import pytest

import lantern
from lantern.core import reference
from lantern.inspect import op_card
from lantern.ops import registry

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _fast_paths_on():
    """A card shows the code that runs: these tests read the default mode's (the reference tier runs them too)."""
    with lantern.reference_mode(False):
        yield


def _line(location):
    """The source line a `path:line` location names."""
    path, _, line = location.split()[0].rpartition(":")
    with open(os.path.join(ROOT, path)) as f:
        return f.read().splitlines()[int(line) - 1]


def test_mul_card_tells_the_registry_record():
    card, op = op_card("mul"), registry.get("mul")
    assert (card.schema, card.alias, card.kind) == (op.schema.text, "new", "structured")
    assert card.variants == ["mul_ (in place)", "mul.out (out=)"]
    assert card.formulas == [(arg, text) for _, arg, text in op.derivative.formulas]
    assert card.derivative == "MulBackward0" and card.saves == ["other", "self"]
    cpu = card.kernels["CPU"]
    assert "lantern/_generated/runners.py:" in cpu and f"runs {op.impl.__qualname__}" in cpu
    assert "shapes only" in card.kernels["Meta"]


def test_in_reference_mode_the_card_shows_the_readable_runner():
    with lantern.reference_mode():
        cpu = op_card("mul").kernels["CPU"]
    assert cpu.startswith("Backend.run_structured  lantern/backends/base.py:")


def test_mul_card_points_at_the_generated_lines():
    generated = op_card("mul").generated
    assert _line(generated["binding lantern.mul"]) == "    def mul(input, other, *, out=None):"
    assert _line(generated["method Tensor.mul"]) == "    def mul(self, other):"
    assert _line(generated["dispatch entry"]) == "    def dispatch_t0_t1(args):"
    assert _line(generated["backward"]) == "def backward_of_mul(node, grads):"


def test_every_card_location_is_a_definition():
    checked = 0
    for name in registry.REGISTRY:
        if name.startswith("_test"):  # ops other tests register at run time
            continue
        card = op_card(name)
        described = [card.meta] + [part for text in card.kernels.values() for part in text.split("\n")]
        locations = list(card.generated.values()) + [text.split("  ")[1] for text in described if "  " in text]
        for location in locations:
            if location.startswith("lantern/"):
                line = _line(location).lstrip()
                assert line.startswith(("def ", "class ")) or "lambda" in line, (name, location, line)
                checked += 1
    assert checked > 3 * len(registry.REGISTRY)  # meta, kernels and generated code of each


def test_fast_paths_declared_for_an_op_are_on_its_card():
    @reference.specialisation(replaces="the readable mul formula", when="both operands are float tensors",
                              parity_test="tests/test_op_card.py::test_fast_paths_declared_for_an_op_are_on_its_card",
                              ops=("mul",))
    def probe_mul_fast_path():
        pass
    key = f"{probe_mul_fast_path.__module__}.{probe_mul_fast_path.__qualname__}"
    try:
        card = op_card("mul_")  # the in-place form lists its functional op's fast paths
        assert probe_mul_fast_path.__qualname__ in [s.name for s in card.fast_paths]
        text = str(card)
        assert "fires when both operands are float tensors" in text and "replaces the readable mul formula" in text
    finally:
        del reference.SPECIALISATIONS[key]
    assert probe_mul_fast_path.__qualname__ not in str(op_card("mul_"))


def test_composite_card():
    card = op_card("conv2d")
    assert card.kind == "composite" and card.kernels == {} and card.schema.startswith("conv2d(input, weight")
    assert card.generated["wrapper (watchers)"] == "<lantern composite conv2d>:2"


def test_card_prints_every_section_and_unknown_names_raise():
    text = str(op_card("exp"))
    for title in ("schema", "alias kind", "kind", "variants", "meta", "kernels", "derivative", "saves", "code",
                  "fast paths"):
        assert f"\n  {title}" in text
    assert "self: grad * conj(result)" in text
    with pytest.raises(KeyError, match="no operator named 'no_such_op'"):
        op_card("no_such_op")
    assert lantern.inspect.op_card is op_card


def test_every_card_lists_the_generated_code_among_its_fast_paths():
    names = [s.name for s in op_card("mul").fast_paths]
    assert names[-2:] == ["_generated_entry", "Backend._specialized_structured"]
    assert [s.name for s in op_card("t").fast_paths] == ["_generated_entry"]  # a view: no runner is generated
