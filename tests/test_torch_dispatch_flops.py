"""FlopCounterMode and ModuleTracker (lantern/utils/flop_counter.py, module_tracker.py) against torch's, on the
same models in this process."""
import importlib

import pytest
import torch

import lantern


def _models(lib):
    nn = lib.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 4)

        def forward(self, x):
            return self.fc2(lib.relu(self.fc1(x)))

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.head = nn.Conv2d(3, 8, 3, padding=1), nn.Linear(8 * 8 * 8, 10)

        def forward(self, x):
            return self.head(lib.relu(self.conv(x)).flatten(1))
    return {"mlp": (MLP(), lib.ones(5, 16)), "cnn": (CNN(), lib.ones(2, 3, 8, 8))}


def _counts(lib, name, input_requires_grad):
    counter_module = importlib.import_module(f"{lib.__name__}.utils.flop_counter")
    model, x = _models(lib)[name]
    with counter_module.FlopCounterMode(display=False) as counter:
        model(x.requires_grad_(input_requires_grad)).sum().backward()
    return {module: {str(op): n for op, n in ops.items()} for module, ops in counter.get_flop_counts().items()}


@pytest.mark.parametrize("input_requires_grad", [False, True])
def test_mlp_flops_per_module_and_op_match_torch(input_requires_grad):
    assert _counts(lantern, "mlp", input_requires_grad) == _counts(torch, "mlp", input_requires_grad)


@pytest.mark.parametrize("input_requires_grad", [False, True])
def test_cnn_flops_per_module_match_torch(input_requires_grad):
    """torch counts the convolution's backward as one aten.convolution_backward; lantern's derivative runs it as
    convolutions, which the same formula counts: the totals per module agree."""
    def totals(counts):
        return {module: sum(ops.values()) for module, ops in counts.items()}
    assert totals(_counts(lantern, "cnn", input_requires_grad)) == totals(_counts(torch, "cnn", input_requires_grad))


def test_custom_mapping_and_registration_errors():
    fc = importlib.import_module("lantern.utils.flop_counter")
    with fc.FlopCounterMode(display=False, custom_mapping={lantern.ops.aten.relu: lambda *a, **k: 7}) as counter:
        lantern.relu(lantern.ones(3))
    assert counter.get_total_flops() == 7
    with pytest.raises(RuntimeError, match="duplicate registrations"):
        fc.register_flop_formula(lantern.ops.aten.mm)(lambda *a, **k: 0)
    with pytest.raises(ValueError, match="expected each target to be OpOverloadPacket"):
        fc.register_flop_formula(lantern.ops.aten.mm.default)(lambda *a, **k: 0)


def test_table_lists_modules_to_the_depth_asked():
    fc = importlib.import_module("lantern.utils.flop_counter")
    model, x = _models(lantern)["mlp"]
    with fc.FlopCounterMode(display=False, depth=1) as counter:
        model(x)
    lines = counter.get_table().splitlines()
    assert lines[0].split() == ["Module", "FLOP", "%", "Total"]
    assert lines[2].split() == ["MLP", "6400.000", "100.00%"]  # torch keeps 4 digits unsuffixed
    assert not any("MLP.fc1" in line for line in lines)
    assert "MLP.fc1" in counter.get_table(depth=2)


def test_module_tracker_parents_in_forward_and_backward_match_torch():
    seen = {}
    for lib in (torch, lantern):
        tracker_module = importlib.import_module(f"{lib.__name__}.utils.module_tracker")
        model, x = _models(lib)["mlp"]
        log = []
        with tracker_module.ModuleTracker() as tracker:
            model.fc1.register_forward_hook(lambda m, i, o: log.append(("fw", sorted(tracker.parents))))
            y = model(x.requires_grad_())
            y.register_hook(lambda g: log.append(("bw-start", sorted(tracker.parents), tracker.is_bw)))
            x.register_hook(lambda g: log.append(("bw-end", sorted(tracker.parents), tracker.is_bw)))
            y.sum().backward()
            log.append(("after", sorted(tracker.parents), tracker.is_bw))
        seen[lib.__name__] = log
    assert seen["lantern"] == seen["torch"]
