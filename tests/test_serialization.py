"""Checkpoints against torch 2.13 in both directions (lantern.save -> torch.load, torch.save -> lantern.load), plus
plain pickle / deepcopy of tensors."""
import collections
import copy
import io
import pathlib
import pickle
import warnings
import zipfile

import numpy as np
import pytest
import torch

import lantern
from oracle import as_numpy

_RNG = np.random.default_rng(0)
_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
           "complex64", "complex128"]


def _values(name, shape):
    """Random values for a dtype, as an array both libraries can take (bfloat16 goes through float32)."""
    if name == "bool":
        return _RNG.random(shape) > 0.5
    if name.startswith(("int", "uint")):
        return _RNG.integers(0, 100, shape).astype(name)
    if name.startswith("complex"):
        return (_RNG.standard_normal(shape) + 1j * _RNG.standard_normal(shape)).astype(name)
    return _RNG.standard_normal(shape).astype("float32" if name == "bfloat16" else name)


_DATA = {name: _values(name, (3, 4)) for name in _DTYPES}
_BASE = _RNG.standard_normal(24).astype("float32")
_WEIGHT = _RNG.standard_normal((2, 3)).astype("float32")


def make_checkpoint(lib):
    """The same nested checkpoint built with torch or lantern: every dtype, views sharing one storage, a Parameter,
    a tensor requiring grad, dtypes/devices/sizes, nested dict/list/tuple/OrderedDict."""
    typed = {name: lib.tensor(arr).to(getattr(lib, name)) for name, arr in _DATA.items()}
    base = lib.tensor(_BASE)
    tagged = lib.ones(2)
    tagged.note = "kept"  # a user attribute: saved through _rebuild_from_type_v2
    return {
        "tagged": tagged,
        "typed": typed,
        "model": collections.OrderedDict(weight=lib.nn.Parameter(lib.tensor(_WEIGHT)),
                                         frozen=lib.nn.Parameter(lib.tensor(_WEIGHT[0]), requires_grad=False)),
        "views": [base, base[2:20:3], base.view(4, 6).t(), (base.view(2, 3, 4)[1], base[5])],
        "leaf": lib.tensor([1.0, 2.0], requires_grad=True),
        "meta": lib.ones(2, 3, device="meta").t(),
        "misc": (lib.float16, lib.device("cpu"), lib.Size([2, 3]), 3, 2.5, "s", None, True, b"bytes", {1, 2}),
    }


def assert_same_checkpoint(got, expected, lib_got):
    assert type(got["model"]) is collections.OrderedDict
    assert got["tagged"].note == "kept" and type(got["tagged"]) is lib_got.Tensor
    for name in _DTYPES:
        assert_tensor(got["typed"][name], expected["typed"][name])
    for key in ("weight", "frozen"):
        p, q = got["model"][key], expected["model"][key]
        assert isinstance(p, lib_got.nn.Parameter)
        assert p.requires_grad == q.requires_grad
        assert_tensor(p, q)
    views, expected_views = got["views"], expected["views"]
    flat = [views[0], views[1], views[2], *views[3]]
    for a, b in zip(flat, [expected_views[0], expected_views[1], expected_views[2], *expected_views[3]]):
        assert_tensor(a, b)
    ptr = flat[0].untyped_storage().data_ptr()
    assert all(t.untyped_storage().data_ptr() == ptr for t in flat)
    flat[0][5] = 42.0  # the loaded views really alias one buffer
    assert views[3][1].item() == 42.0 and views[1][1].item() == 42.0
    assert got["leaf"].requires_grad and got["leaf"].is_leaf
    assert_tensor(got["leaf"], expected["leaf"])
    meta = got["meta"]
    assert meta.is_meta and tuple(meta.shape) == (3, 2) and meta.stride() == expected["meta"].stride()
    dtype, dev, size, *rest = got["misc"]
    assert dtype is lib_got.float16 and dev == lib_got.device("cpu") and isinstance(size, lib_got.Size)
    assert tuple(size) == (2, 3) and rest == list(expected["misc"][3:])


def assert_tensor(a, b):
    assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1]
    assert tuple(a.shape) == tuple(b.shape)
    assert tuple(a.stride()) == tuple(b.stride())
    assert a.storage_offset() == b.storage_offset()
    np.testing.assert_array_equal(as_numpy(a), as_numpy(b))


@pytest.mark.parametrize("weights_only", [True, False])
def test_lantern_save_torch_load(weights_only):
    buf = io.BytesIO()
    lantern.save(make_checkpoint(lantern), buf)
    buf.seek(0)
    got = torch.load(buf, weights_only=weights_only)
    assert_same_checkpoint(got, make_checkpoint(torch), torch)


@pytest.mark.parametrize("weights_only", [True, False])
def test_torch_save_lantern_load(weights_only):
    buf = io.BytesIO()
    torch.save(make_checkpoint(torch), buf)
    buf.seek(0)
    got = lantern.load(buf, weights_only=weights_only)
    assert_same_checkpoint(got, make_checkpoint(lantern), lantern)


def test_lantern_round_trip_paths_and_mmap(tmp_path):
    ckpt = make_checkpoint(lantern)
    lantern.save(ckpt, str(tmp_path / "a.pt"))
    lantern.save(ckpt, tmp_path / "b.pt")
    for got in (lantern.load(str(tmp_path / "a.pt")), lantern.load(pathlib.Path(tmp_path / "b.pt"), mmap=True)):
        assert_same_checkpoint(got, ckpt, lantern)
    assert_same_checkpoint(torch.load(tmp_path / "b.pt", mmap=True), make_checkpoint(torch), torch)


def test_archive_layout_matches_torch(tmp_path):
    import struct
    lantern.save({"x": lantern.arange(5.)}, tmp_path / "model.pt")
    torch.save({"x": torch.arange(5.)}, tmp_path / "ref.pt")
    ours = zipfile.ZipFile(tmp_path / "model.pt")
    ref = zipfile.ZipFile(tmp_path / "ref.pt")
    assert [n.split("/", 1)[1] for n in ours.namelist()] == [n.split("/", 1)[1] for n in ref.namelist()]
    assert ours.namelist()[0] == "model/data.pkl"
    for name in ("version", ".format_version", ".storage_alignment", "byteorder", "data/0"):
        assert ours.read("model/" + name) == ref.read("ref/" + name)
    raw = (tmp_path / "model.pt").read_bytes()
    for info in ours.infolist():  # every record's payload starts on a 64-byte boundary
        name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
        assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0


@pytest.mark.parametrize("saver", [torch, lantern])
def test_a_saved_version_string_loads_as_torch_loads_it(saver):
    """torch.__version__ in a checkpoint (programs record it) is written as torch.torch_version.TorchVersion by
    both libraries; either loads it with weights_only=False, and both refuse it with weights_only=True unless
    it is allowed."""
    buf = io.BytesIO()
    saver.save({"torch_version": saver.__version__}, buf)
    assert b"ctorch.torch_version\nTorchVersion\n" in zipfile.ZipFile(buf).read(
        next(n for n in zipfile.ZipFile(buf).namelist() if n.endswith("data.pkl")))
    for lib in (torch, lantern):
        got = lib.load(io.BytesIO(buf.getvalue()), weights_only=False)["torch_version"]
        assert type(got) is lib.torch_version.TorchVersion and got == saver.__version__ and got >= "2.0"
        with pytest.raises(pickle.UnpicklingError, match="torch.torch_version.TorchVersion"):
            lib.load(io.BytesIO(buf.getvalue()))
        with lib.serialization.safe_globals([lib.torch_version.TorchVersion]):
            assert lib.load(io.BytesIO(buf.getvalue()))["torch_version"] == saver.__version__


class Custom:
    def __init__(self, value):
        self.value = value


@pytest.mark.parametrize("saver", [torch, lantern])
def test_weights_only_rejects_unknown_globals(saver):
    buf = io.BytesIO()
    saver.save({"c": Custom(3), "t": saver.ones(2)}, buf)
    for lib in (torch, lantern):
        buf.seek(0)
        with pytest.raises(pickle.UnpicklingError) as err:
            lib.load(buf)
        assert "Weights only load failed" in str(err.value)
        assert f"GLOBAL {__name__}.Custom was not an allowed global by default" in str(err.value)
        assert "add_safe_globals" in str(err.value)
        buf.seek(0)
        with lib.serialization.safe_globals([Custom]):
            assert lib.load(buf)["c"].value == 3
        buf.seek(0)
        assert lib.load(buf, weights_only=False)["c"].value == 3


def test_add_safe_globals_and_dangerous_callables():
    buf = io.BytesIO()
    lantern.save([Custom(1)], buf)
    try:
        lantern.serialization.add_safe_globals([Custom])
        assert Custom in lantern.serialization.get_safe_globals()
        buf.seek(0)
        assert lantern.load(buf)[0].value == 1
    finally:
        lantern.serialization.clear_safe_globals()
    assert lantern.serialization.get_safe_globals() == []

    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))
    buf = io.BytesIO()
    pickle.dump(Evil(), buf, protocol=2)  # a bare pickle is not a checkpoint either way
    torch_buf = io.BytesIO()
    torch.save(Evil(), torch_buf)
    torch_buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL print was not an allowed global"):
        lantern.load(torch_buf)


def test_whole_module_weights_only_false():
    model = lantern.nn.Sequential(lantern.nn.Linear(3, 4), lantern.nn.ReLU(), lantern.nn.Linear(4, 2))
    buf = io.BytesIO()
    lantern.save(model, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError):
        lantern.load(buf)
    buf.seek(0)
    loaded = lantern.load(buf, weights_only=False)
    x = lantern.randn(5, 3)
    assert lantern.equal(loaded(x), model(x))
    assert isinstance(loaded[0].weight, lantern.nn.Parameter)
    buf = io.BytesIO()
    lantern.save(model.state_dict(), buf)
    buf.seek(0)
    sd = torch.load(buf)
    ref = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    ref.load_state_dict(sd)
    np.testing.assert_allclose(ref(torch.tensor(x.numpy())).detach().numpy(), model(x).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    buf = io.BytesIO()
    torch.save(ref, buf)  # a whole torch module: its torch.nn classes resolve to lantern.nn's
    buf.seek(0)
    ported = lantern.load(buf, weights_only=False)
    assert type(ported[0]) is lantern.nn.Linear
    np.testing.assert_allclose(ported(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)


def test_map_location():
    buf = io.BytesIO()
    x = torch.arange(4.)
    torch.save({"a": x, "b": x[1:]}, buf)
    for loc in ("meta", lantern.device("meta"), {"cpu": "meta"}):
        buf.seek(0)
        got = lantern.load(buf, map_location=loc)
        assert got["a"].is_meta and got["b"].storage_offset() == 1
    seen = []
    buf.seek(0)
    got = lantern.load(buf, map_location=lambda storage, location: seen.append(location) or storage)
    assert seen == ["cpu"] and got["b"].tolist() == [1.0, 2.0, 3.0]
    for lib in (torch, lantern):
        buf.seek(0)
        with pytest.raises(RuntimeError, match="CUDA"):
            lib.load(buf, map_location="cuda")


def test_explicit_pickle_module_with_weights_only_fails_like_torch():
    buf = io.BytesIO()
    torch.save({"a": torch.ones(2)}, buf)
    for lib in (torch, lantern):
        buf.seek(0)
        with pytest.raises(RuntimeError, match="explicit pickle_module"):
            lib.load(buf, pickle_module=pickle, weights_only=True)
        buf.seek(0)
        assert lib.load(buf, pickle_module=pickle)["a"].tolist() == [1.0, 1.0]  # weights_only then defaults to False


@pytest.mark.parametrize("env", [{"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}, {"TORCH_FORCE_WEIGHTS_ONLY_LOAD": "yes"},
                                 {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "true", "TORCH_FORCE_WEIGHTS_ONLY_LOAD": "1"},
                                 {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "0"}])
@pytest.mark.parametrize("weights_only", [None, True, False])
def test_weights_only_forced_by_environment_like_torch(env, weights_only, monkeypatch):
    """TORCH_FORCE_WEIGHTS_ONLY_LOAD / TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD (what runs a program written before torch 2.6
    made weights_only the default, which torch.load()s a NumPy array): the same outcome and warning as torch."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    buf = io.BytesIO()
    torch.save({"a": np.arange(3.0)}, buf)

    def load(lib):
        buf.seek(0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                outcome = ("loaded", lib.load(buf, weights_only=weights_only)["a"].tolist())
            except Exception as e:
                outcome = (type(e).__name__, str(e).split(".")[0])
        return outcome, [str(w.message) for w in caught if "TORCH_FORCE" in str(w.message)]

    assert load(lantern) == load(torch)


def test_saving_one_storage_as_two_dtypes_fails_like_torch():
    for lib in (torch, lantern):
        x = lib.ones(4)
        with pytest.raises(RuntimeError, match="view the same data as different types"):
            lib.save([x, x.view(lib.int32)], io.BytesIO())


def test_pickle_and_deepcopy_keep_views_shared():
    base = lantern.arange(12.).requires_grad_()
    view = base.detach()[1::3]
    base.tag = "b"
    param = lantern.nn.Parameter(lantern.randn(2, 2))
    for a, b, p in (pickle.loads(pickle.dumps([base, view, param])), copy.deepcopy([base, view, param])):
        assert a.requires_grad and a.tolist() == base.tolist() and a.tag == "b"
        assert b.stride() == (3,) and b.storage_offset() == 1
        assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        assert a.untyped_storage().data_ptr() != base.untyped_storage().data_ptr()
        assert type(p) is lantern.nn.Parameter and p.requires_grad and lantern.equal(p, param)
    meta = pickle.loads(pickle.dumps(lantern.ones(2, 3, device="meta")))
    assert meta.is_meta and tuple(meta.shape) == (2, 3)


def test_deepcopy_of_non_leaf_fails_like_torch():
    for lib in (torch, lantern):
        y = lib.ones(2, requires_grad=True) * 2
        with pytest.raises(RuntimeError, match="graph leaves"):
            copy.deepcopy(y)
        x = lib.ones(2, requires_grad=True)
        (x * 3).sum().backward()
        z = copy.deepcopy(x)
        assert z.grad.tolist() == [3.0, 3.0] and z.grad is not x.grad


@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
def test_raw_storages_both_ways():
    buf = io.BytesIO()
    torch.save([torch.arange(3.).untyped_storage()], buf)
    buf.seek(0)
    storage = lantern.load(buf)[0]
    assert isinstance(storage, lantern.UntypedStorage) and storage.nbytes() == 12
    assert storage.tolist() == list(torch.arange(3.).untyped_storage().tolist())
    buf = io.BytesIO()
    lantern.save([lantern.arange(4, dtype=lantern.uint8).untyped_storage()], buf)
    buf.seek(0)
    assert torch.load(buf)[0].tolist() == [0, 1, 2, 3]


def test_out_of_bounds_tensor_is_refused():
    x = torch.arange(4.)
    bad = torch.as_strided(x, (3,), (1,), 1)  # fine in torch ...
    buf = io.BytesIO()
    torch.save(bad, buf)
    data = buf.getvalue()
    # ... then claim a size that reaches past the 16-byte storage: a hostile file must not read outside it
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        pkl = zf.read("archive/data.pkl")
    assert pkl.count(b"K\x03\x85") == 1
    forged = pkl.replace(b"K\x03\x85", b"K\x09\x85")
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            dst.writestr(info.filename, forged if info.filename.endswith("data.pkl") else src.read(info))
    for lib in (torch, lantern):
        out.seek(0)
        with pytest.raises(RuntimeError):
            lib.load(out)
    out.seek(0)
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 16"):
        lantern.load(out)


def test_pickled_state_cannot_rewrite_tensor_metadata():
    t = lantern.ones(2)
    t.__setstate__({"note": 1})
    assert t.note == 1
    for state in ({"_size": (10 ** 6,)}, ({}, {"_storage": None}), {"_grad_fn": print}, {"__class__": int}):
        with pytest.raises(RuntimeError, match="refusing to set tensor internals"):
            t.__setstate__(state)
    assert tuple(t.shape) == (2,)
