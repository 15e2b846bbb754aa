"""torch.func.functional_call / torch.nn.utils.stateless.functional_call against torch."""
import warnings

import numpy as np
import pytest
import torch

import lantern
import lantern.func
import lantern.nn.utils.stateless
from nn_oracle import same_error


def _pair(make):
    theirs, ours = make(torch), make(lantern)
    ours.load_state_dict({k: lantern.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _model(lib):
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Tanh(), lib.nn.Linear(4, 2))


def _run(lib, model, call):
    """functional_call with fresh leaf tensors for every parameter and buffer; the output and their gradients."""
    rng = np.random.default_rng(0)
    replacements = {name: lib.tensor(rng.standard_normal(tuple(t.shape)).astype(np.float32),
                                     requires_grad=t.dtype.is_floating_point and name in dict(model.named_parameters()))
                    for name, t in model.state_dict().items() if "num_batches" not in name}
    x = lib.tensor(rng.standard_normal((5, 3)).astype(np.float32))
    out = call(model, replacements, (x,))
    out.pow(2).sum().backward()
    return [out.detach().numpy()] + [t.grad.numpy() for t in replacements.values() if t.requires_grad] + \
        [t.detach().numpy() for _, t in sorted(model.state_dict().items())]


@pytest.mark.parametrize("spelling", ["func", "stateless"])
def test_outputs_gradients_and_restored_state_match_torch(spelling):
    ours, theirs = _pair(_model)

    def call(lib):
        function = lib.func.functional_call if spelling == "func" else lib.nn.utils.stateless.functional_call
        return lambda model, params, args: function(model, params, args)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for a, b in zip(_run(lantern, ours, call(lantern)), _run(torch, theirs, call(torch))):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert all(isinstance(p, lantern.nn.Parameter) for p in ours.parameters())


def test_tied_weights_follow_the_replacement():
    def tied(lib):
        model = lib.nn.Sequential(lib.nn.Linear(2, 2, bias=False), lib.nn.Linear(2, 2, bias=False))
        model[1].weight = model[0].weight
        return model

    ours, theirs = _pair(tied)
    for lib, model in ((torch, theirs), (lantern, ours)):
        out = lib.func.functional_call(model, {"0.weight": lib.eye(2)}, lib.tensor([[1.0, 2.0]]))
        assert out.tolist() == [[1.0, 2.0]]
        untied = lib.func.functional_call(model, {"0.weight": lib.eye(2)}, lib.tensor([[1.0, 2.0]]), tie_weights=False)
        assert untied.tolist() != [[1.0, 2.0]]


def test_errors_match_torch():
    same_error(lambda lib: lib.func.functional_call(lib.nn.Linear(2, 2), {"nope": lib.ones(1)}, lib.ones(1, 2),
                                                    strict=True))
    def twice(lib):
        return ({"bias": lib.ones(2), "weight": lib.ones(2, 2)},) * 2
    same_error(lambda lib: lib.func.functional_call(lib.nn.Linear(2, 2), twice(lib), lib.ones(1, 2)))


def test_stateless_spelling_warns_as_torch():
    messages = []
    for lib in (torch, lantern):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.nn.utils.stateless.functional_call(lib.nn.Linear(1, 1), {}, lib.ones(1, 1))
        messages.append([(w.category, str(w.message)) for w in caught])
    assert messages[0] == messages[1] and messages[0]
