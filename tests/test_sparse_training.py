"""Sparse gradients in training, against torch: nn.Embedding / EmbeddingBag(sparse=True) make them, SGD, Adagrad
and SparseAdam consume them; sparse tensors save and load in torch's checkpoint format both ways; explain()."""
import io

import numpy as np
import pytest
import torch

import lantern
from test_sparse_coo import raises_same, same


def _embedding_grad(lib, cls, **kwargs):
    lib.manual_seed(0)
    if cls == "Embedding":
        module = lib.nn.Embedding(6, 3, sparse=True, **kwargs)
        out = module(lib.tensor([[1, 2], [1, 0]]))
    else:
        module = lib.nn.EmbeddingBag(6, 3, sparse=True, **kwargs)
        out = module(lib.tensor([1, 2, 1, 4, 0]), lib.tensor([0, 2]))
    (out * lib.linspace(-1, 1, out.numel()).view(out.shape)).sum().backward()
    return module.weight.grad


@pytest.mark.parametrize("cls, kwargs", [
    ("Embedding", {}), ("Embedding", {"padding_idx": 0}), ("EmbeddingBag", {"mode": "sum"}),
    ("EmbeddingBag", {"mode": "mean"}), ("EmbeddingBag", {"mode": "mean", "padding_idx": 1}),
])
def test_sparse_embedding_gradients(cls, kwargs):
    same(lambda m: _embedding_grad(m, cls, **kwargs))


@pytest.mark.parametrize("dense_too", [False, True], ids=["sparse-only", "with-dense-use"])
def test_gradients_of_several_uses_add_up_and_zero_grad_keeps_the_layout(dense_too):
    def run(lib):
        lib.manual_seed(0)
        emb = lib.nn.Embedding(5, 2, sparse=True)
        loss = emb(lib.tensor([1, 3])).sum() + emb(lib.tensor([3])).sum() * 2
        if dense_too:
            loss = loss + (emb.weight ** 2).sum()
        loss.backward()
        summed = emb.weight.grad.clone()
        emb.zero_grad(set_to_none=False)
        return summed.to_dense(), summed.layout is lib.strided, emb.weight.grad
    # the sum's entries are compared as elements: the order PyTorch's engine leaves them in depends on the order
    # the contributions arrive and whether each is coalesced, which lantern does not reproduce
    ours, theirs = run(lantern), run(torch)
    assert ours[0].tolist() == theirs[0].tolist() and ours[1] == theirs[1]
    same(lambda lib: run(lib)[2])


def test_sparse_embedding_refuses_scale_grad_by_freq():
    raises_same(lambda m: _embedding_grad(m, "Embedding", scale_grad_by_freq=True),
                "scale_grad_by_freq not supported with sparse gradients")


def _train(lib, optimizer, steps=3, **kwargs):
    lib.manual_seed(0)
    emb = lib.nn.Embedding(6, 3, sparse=True)
    opt = getattr(lib.optim, optimizer)(emb.parameters(), **kwargs)
    batches = [[[1, 2, 1], [4, 2, 0]], [[3, 3, 5]], [[1, 5, 5]]]
    for batch in batches[:steps]:
        opt.zero_grad()
        (emb(lib.tensor(batch)) ** 2).sum().backward()
        opt.step()
    return emb.weight.detach().numpy().copy(), opt


@pytest.mark.parametrize("optimizer, kwargs", [
    ("SGD", {"lr": 0.1}), ("SGD", {"lr": 0.1, "momentum": 0.9}), ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.1, "maximize": True}), ("Adagrad", {"lr": 0.1}), ("Adagrad", {"lr": 0.1, "lr_decay": 0.1}),
    ("SparseAdam", {"lr": 0.1}), ("SparseAdam", {"lr": 0.1, "betas": (0.8, 0.9), "maximize": True}),
])
def test_optimizers_consume_sparse_gradients(optimizer, kwargs):
    ours, _ = _train(lantern, optimizer, **kwargs)
    theirs, _ = _train(torch, optimizer, **kwargs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_sparse_adam_state_matches_torch():
    _, ours = _train(lantern, "SparseAdam", lr=0.1)
    _, theirs = _train(torch, "SparseAdam", lr=0.1)
    (o_state,), (t_state,) = ours.state.values(), theirs.state.values()
    assert o_state["step"] == t_state["step"] == 3
    for key in ("exp_avg", "exp_avg_sq"):
        np.testing.assert_allclose(o_state[key].numpy(), t_state[key].numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("fn, message", [
    (lambda m: m.optim.SparseAdam([m.ones(2, 2).to_sparse()]), "SparseAdam requires dense parameter tensors"),
    (lambda m: _train(m, "Adagrad", lr=0.1, weight_decay=0.1), "weight_decay option is not compatible with sparse"),
    (lambda m: _train(m, "Adam", lr=0.1), "Adam does not support sparse gradients"),
])
def test_optimizer_errors(fn, message):
    raises_same(fn, message)


def test_sparse_adam_refuses_dense_gradients():
    for lib in (torch, lantern):
        w = lib.ones(2, requires_grad=True)
        w.grad = lib.ones(2)
        with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
            lib.optim.SparseAdam([w]).step()


# ---- checkpoints ----------------------------------------------------------------------------------------------------

def _tensors(lib):
    coo = lib.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))
    return {"coo": coo, "coalesced": coo.coalesce(), "hybrid": lib.sparse_coo_tensor([[0, 2]], lib.ones(2, 2), (4, 2)),
            "csr": lib.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]).to_sparse_csr(), "dense": lib.arange(3.0)}


def _describe_checkpoint(d):
    out = {}
    for name, t in d.items():
        entry = {"layout": str(t.layout).split(".")[-1], "dense": t.to_dense().tolist()}
        if entry["layout"] == "sparse_coo":
            entry.update(indices=t._indices().tolist(), coalesced=t.is_coalesced())
        out[name] = entry
    return out


@pytest.mark.parametrize("writer, reader", [(torch, lantern), (lantern, torch), (lantern, lantern)],
                         ids=["torch-to-lantern", "lantern-to-torch", "lantern-to-lantern"])
@pytest.mark.parametrize("weights_only", [True, False])
def test_sparse_checkpoints(writer, reader, weights_only):
    buffer = io.BytesIO()
    writer.save(_tensors(writer), buffer)
    buffer.seek(0)
    loaded = reader.load(buffer, weights_only=weights_only)
    assert _describe_checkpoint(loaded) == _describe_checkpoint(_tensors(torch))


def test_a_checkpoint_with_an_index_out_of_range_is_refused():
    buffer = io.BytesIO()
    torch.save(torch.sparse_coo_tensor([[0, 5]], [1.0, 2.0], (3,)), buffer)
    buffer.seek(0)
    with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
        lantern.load(buffer)


def test_sparse_tensors_pickle_and_deepcopy():
    import copy
    import pickle
    s = _tensors(lantern)["coo"]
    for other in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s)):
        assert other.layout is lantern.sparse_coo and other._indices().tolist() == s._indices().tolist()
        assert other._values().tolist() == s._values().tolist() and not other.is_coalesced()


# ---- explain --------------------------------------------------------------------------------------------------------

def test_explain_shows_the_parts_and_their_storages():
    s = _tensors(lantern)["coo"]
    e = lantern.inspect.explain(s)
    text = str(e)
    assert text.splitlines()[0] == "sparse_coo tensor float32[2, 3] on cpu: 3 specified elements, not coalesced"
    for name, part in e.parts.items():
        assert f"data_ptr {part.untyped_storage().data_ptr():#x}" in text
        assert part.untyped_storage().data_ptr() == getattr(s._storage, name).untyped_storage().data_ptr()
    csr = lantern.inspect.explain(_tensors(lantern)["csr"])
    assert list(csr.parts) == ["crow_indices", "col_indices", "values"] and "SparseCsrCPU" in str(csr)
