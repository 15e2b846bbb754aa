"""Quantized tensors in checkpoints: lantern.save writes what torch.load reads and the other way round
(torch._utils._rebuild_qtensor over a QUInt8Storage & co.), and plain pickling keeps the quantizer."""
import io
import pickle
import warnings

import pytest
import torch

import lantern

X = [[-1.0, 0.5, 2.0], [3.0, 0.1, -0.26]]


def tensors(T):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = T.tensor(X)
        per_tensor = T.quantize_per_tensor(x, 0.1, 10, T.quint8)
        return {"per_tensor": per_tensor, "view": per_tensor.t()[1:],
                "per_channel": T.quantize_per_channel(x, T.tensor([0.1, 0.2]), T.tensor([0, 1]), 0, T.qint8),
                "float zero points": T.quantize_per_channel(x, T.tensor([0.1, 0.2]), T.tensor([0.5, 1.0]), 0, T.quint8),
                "qint32": T.quantize_per_tensor(x, 0.1, 3, T.qint32),
                "quint4x2": T.quantize_per_tensor(T.arange(5.), 1.0, 0, T.quint4x2),
                "quint2x4": T.quantize_per_tensor(T.arange(7.), 1.0, 0, T.quint2x4)}


def printed(d):
    return {k: (repr(v).replace("torch.", "lantern."), v.stride(), v.storage_offset()) for k, v in d.items()}


def test_lantern_save_torch_load():
    buf = io.BytesIO()
    lantern.save(tensors(lantern), buf)
    buf.seek(0)
    assert printed(torch.load(buf)) == printed(tensors(torch))


@pytest.mark.parametrize("weights_only", [True, False])
def test_torch_save_lantern_load(weights_only):
    buf = io.BytesIO()
    torch.save(tensors(torch), buf)
    buf.seek(0)
    loaded = lantern.load(buf, weights_only=weights_only)
    assert printed(loaded) == printed(tensors(torch))
    assert loaded["view"].untyped_storage().data_ptr() == loaded["per_tensor"].untyped_storage().data_ptr()


def test_pickle_keeps_the_quantizer():
    assert printed(pickle.loads(pickle.dumps(tensors(lantern)))) == printed(tensors(torch))


def test_a_checkpoint_cannot_build_an_odd_quantized_tensor():
    from lantern.serialization import _TypedStorage, _rebuild_qtensor
    storage = lantern.quantize_per_tensor(lantern.ones(4), 0.1, 0, lantern.quint8).untyped_storage()
    typed = _TypedStorage(storage, lantern.quint8)
    with pytest.raises(RuntimeError, match="out of bounds"):
        _rebuild_qtensor(typed, 0, (8,), (1,), (lantern.per_tensor_affine, 0.1, 0), False, None)
    with pytest.raises(RuntimeError, match="quantizer"):
        _rebuild_qtensor(typed, 0, (4,), (1,), (lantern.per_tensor_symmetric, 0.1, 0), False, None)
    with pytest.raises(RuntimeError, match="channels along axis"):
        _rebuild_qtensor(typed, 0, (4,), (1,), (lantern.per_channel_affine, lantern.ones(3, dtype=lantern.float64),
                                                 lantern.zeros(3, dtype=lantern.int64), 0), False, None)
    with pytest.raises(RuntimeError, match="storage holds"):
        _rebuild_qtensor(_TypedStorage(storage, lantern.uint8), 0, (4,), (1,), (lantern.per_tensor_affine, 0.1, 0),
                         False, None)
