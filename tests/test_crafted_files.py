"""Crafted and damaged files against lantern.load and lantern.jit.load (issue 13): code-execution payloads, payloads
that would change library globals, damaged records, legacy checkpoints and hostile TorchScript archives.

Every input is also given to torch.load (torch 2.13) in the same test, and lantern must raise the same exception
class; after each one, a snapshot of lantern's globals (dtype objects, storage types, Size/Tensor/storage classes,
the allow-list) must be unchanged, no payload may have run, and an honest checkpoint must still load right."""
import collections
import io
import json
import pickle
import struct
import warnings
import zipfile
import zlib

import numpy as np
import pytest
import torch

import lantern
from lantern import serialization as ser
from lantern.core import dtype as dt
from lantern.core.storage import UntypedStorage

RAN = []  # what a payload appends to if it ever runs (it must not)
_THIS = __name__
_HONEST = [1.5, 2.5, -3.0]


# ---- building files -------------------------------------------------------------------------------------------------

def torch_bytes(obj, **kwargs):
    buf = io.BytesIO()
    torch.save(obj, buf, **kwargs)
    return buf.getvalue()


def rewrite(data, fn):
    """The zip `data` with each record replaced by fn(name, bytes) (None drops the record)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            new = fn(info.filename.split("/", 1)[1], src.read(info))
            if new is not None:
                dst.writestr(info.filename, new)
    return out.getvalue()


def checkpoint(pkl, records=()):
    """A zip checkpoint with data.pkl = `pkl` and the given (name, bytes) records."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("archive/data.pkl", pkl)
        for name, payload in records:
            zf.writestr("archive/" + name, payload)
        zf.writestr("archive/byteorder", "little")
        zf.writestr("archive/version", "3\n")
    return out.getvalue()


def s(text):
    """BINUNICODE of text."""
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def g(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


P = b"\x80\x02"
_RECORD = ("data/0", np.array(_HONEST, dtype=np.float32).tobytes())
_FLOAT_PID = b"(" + s("storage") + g("torch", "FloatStorage") + s("0") + s("cpu") + b"K\x03tQ"
_UNTYPED_PID = b"(" + s("storage") + g("torch.storage", "UntypedStorage") + s("0") + s("cpu") + b"K\x0ctQ"
_CODE = s(f"__import__({_THIS!r}).RAN.append('ran')")


# ---- what must not change -------------------------------------------------------------------------------------------

def snapshot():
    """lantern's process-wide objects that a checkpoint could try to change, as comparable values."""
    ser._names()  # fills the allow-list tables, which are made on first use
    dtypes = {d.name: tuple(getattr(d, k) for k in type(d).__slots__ if k != "__weakref__") for d in dt.ALL}
    storage_types = {id(t): (t.dtype, ser._SPELLING.get(id(t))) for t in (*ser._STORAGE_TYPES.values(),
                                                                         ser._UNTYPED_STORAGE)}
    classes = {cls.__name__: dict(vars(cls)) for cls in (lantern.Size, lantern.Tensor, UntypedStorage, dt.dtype,
                                                          lantern.device, lantern.nn.Parameter)}
    return {"dtypes": dtypes, "storage_types": storage_types, "classes": classes,
            "names": {k: id(v) for k, v in ser._names().items()}, "builtins": dict(ser._SAFE_BUILTINS),
            "safe_globals": list(ser.get_safe_globals()), "float32": lantern.float32, "np_float32": lantern.float32.np}


def honest_checkpoint_loads():
    data = torch_bytes({"x": torch.tensor(_HONEST)})
    x = lantern.load(io.BytesIO(data))["x"]
    assert x.dtype is lantern.float32 and x.tolist() == _HONEST
    assert (x * 2).tolist() == [3.0, 5.0, -6.0] and lantern.Size([2, 3]).numel() == 6


def error_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return e
    return None


def assert_like_torch(data, weights_only=True, match=None):
    """lantern.load and torch.load raise the same class on `data`; nothing ran, nothing changed."""
    before = snapshot()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = error_of(lambda: torch.load(io.BytesIO(data), weights_only=weights_only))
    got = error_of(lambda: lantern.load(io.BytesIO(data), weights_only=weights_only))
    assert expected is not None, "torch loads this file"
    assert type(got) is type(expected), (got, expected)
    if match:
        assert match in str(got) and match in str(expected), (str(got)[-300:], str(expected)[-300:])
    assert RAN == []
    assert snapshot() == before
    honest_checkpoint_loads()
    return got


# ---- 1. payloads that would run code --------------------------------------------------------------------------------

CODE_PAYLOADS = {
    "os.system via REDUCE": P + g("os", "system") + b"(" + s("true") + b"tR.",
    "posix.system via REDUCE": P + g("posix", "system") + b"(" + s("true") + b"tR.",
    "GLOBAL builtins.eval": P + g("__builtin__", "eval") + b"(" + _CODE + b"tR.",
    "GLOBAL builtins.exec (protocol 4 STACK_GLOBAL)": b"\x80\x04" + b"\x8c\x08builtins\x8c\x04exec\x93(" + _CODE
                                                      + b"tR.",
    "INST opcode": P + b"(" + _CODE + b"i__builtin__\nexec\n.",
    "OBJ opcode on an allowed class": P + b"(" + g("collections", "OrderedDict") + b"o.",
    "EXT1 opcode": P + b"\x82\x01.",
    "PERSID (text persistent id)": P + b"P0\n.",
    "pickle.loads of a nested pickle": P + g("pickle", "loads") + b"(C\x05cos\nsystem\ntR.",
    "nested pickle through _codecs.encode": P + g("_codecs", "encode") + b"(" + s("cos\nsystem\n(S'true'\ntR.")
                                            + s("latin1") + b"tRq\x00" + g("pickle", "loads") + b"(h\x00tR.",
    "REDUCE of something that is not an allowed global": P + b"K\x05)R.",
    "persistent id that is not a storage": P + b"(" + s("module") + g("collections", "OrderedDict") + b"tQ.",
}


@pytest.mark.parametrize("name", CODE_PAYLOADS)
def test_code_execution_payloads_are_refused_like_torch(name):
    err = assert_like_torch(checkpoint(CODE_PAYLOADS[name], [_RECORD]))
    assert isinstance(err, pickle.UnpicklingError) and str(err).startswith("Weights only load failed")


def test_code_payload_in_a_storage_record_is_only_bytes():
    """A pickle hidden in a storage record is data: it loads as the tensor's bytes and never runs."""
    hidden = P + g("os", "system") + b"(" + s("true") + b"tR."
    hidden += b"\0" * (-len(hidden) % 4)
    pkl = P + g("torch._utils", "_rebuild_tensor_v2") + b"(" + _FLOAT_PID.replace(b"K\x03", bytes([75, len(hidden) // 4])) \
        + b"K\x00" + bytes([75, len(hidden) // 4]) + b"\x85K\x01\x85\x89" + g("collections", "OrderedDict") \
        + b")RtR."
    data = checkpoint(pkl, [("data/0", hidden)])
    before = snapshot()
    for lib in (torch, lantern):
        t = lib.load(io.BytesIO(data))
        assert np.asarray(t.numpy()).tobytes() == hidden
    assert RAN == [] and snapshot() == before


# ---- 2. payloads that would change library globals ------------------------------------------------------------------

GLOBAL_PAYLOADS = {
    # BUILD on the allow-list's shared objects: the storage type (then an honest file loads as int32 garbage) ...
    "set FloatStorage's dtype": P + g("torch", "FloatStorage") + b"}" + s("dtype") + g("torch", "int32") + b"sb.",
    "set FloatStorage's dtype through slots": P + g("torch", "FloatStorage") + b"N}" + s("dtype")
                                              + g("torch", "int32") + b"s\x86b.",
    # ... the dtype object (every float op would break) ...
    "replace float32's NumPy dtype": P + g("torch", "float32") + b"N}" + s("np") + s("int8") + b"s\x86b.",
    "replace float32's itemsize": P + g("torch", "float32") + b"N}" + s("itemsize") + b"K\x01s\x86b.",
    # ... a class's methods ...
    "patch Size.numel": P + g("torch", "Size") + b"N}" + s("numel") + g("builtins", "set") + b"s\x86b.",
    "patch Tensor.__add__": P + g("torch", "Tensor") + b"}" + s("__add__") + g("builtins", "set") + b"sb.",
    # ... a loaded storage's byte count (typed and untyped) ...
    # ... and containers the load did not make
    "SETITEM on a global": P + g("torch", "float32") + s("k") + b"K\x01s.",
    "APPEND on a global": P + g("torch", "Size") + b"K\x01a.",
}


@pytest.mark.parametrize("name", GLOBAL_PAYLOADS)
def test_payloads_cannot_change_library_globals(name):
    err = assert_like_torch(checkpoint(GLOBAL_PAYLOADS[name], [_RECORD]))
    assert isinstance(err, pickle.UnpicklingError) and "Weights only load failed" in str(err)


_NBYTES = b"N}" + s("_nbytes") + b"J\x40\x42\x0f\x00s\x86"


def test_bytearray_cannot_be_asked_for_by_size():
    """builtins.bytearray is on torch's allow-list; from a count, 16 bytes of file could ask for any amount of memory
    (torch raises MemoryError for 10**18; a smaller count is allocated). lantern builds it from bytes only."""
    data = checkpoint(P + g("builtins", "bytearray") + b"(\x8a\x08" + (10 ** 18).to_bytes(8, "little") + b"tR.")
    with pytest.raises(MemoryError):
        torch.load(io.BytesIO(data))
    with pytest.raises(pickle.UnpicklingError, match="bytearray in a checkpoint must be built from bytes"):
        lantern.load(io.BytesIO(data))


@pytest.mark.parametrize("payload", [_FLOAT_PID + b"}" + s("dtype") + g("torch", "int32") + b"s",
                                     _FLOAT_PID + _NBYTES, _UNTYPED_PID + _NBYTES],
                         ids=["a typed storage's dtype", "a typed storage's byte count",
                              "an untyped storage's byte count"])
def test_build_on_a_loaded_storage_is_refused_where_torch_allows_it(payload):
    """torch applies BUILD to the storage it just loaded (its dtype or byte count changes under the tensors that
    use it); lantern refuses BUILD on anything but tensors, OrderedDicts and the user's allowed classes."""
    data = checkpoint(P + payload + b"b.", [_RECORD])
    assert error_of(lambda: torch.load(io.BytesIO(data))) is None
    before = snapshot()
    with pytest.raises(pickle.UnpicklingError, match="did not create"):
        lantern.load(io.BytesIO(data))
    assert snapshot() == before
    honest_checkpoint_loads()


def test_allowed_shapes_still_load():
    """What torch writes and the rules must keep: state_dict metadata (BUILD on a new OrderedDict), tensor
    attributes (BUILD through __setstate__), sets, bytes, bytearray, complex, protocol 4 and user classes."""
    sd = torch.nn.Linear(2, 2).state_dict()
    tagged = torch.ones(2)
    tagged.note = "kept"
    obj = {"sd": sd, "tagged": tagged, "set": {1, 2}, "bytes": b"\x00\x01", "ba": bytearray(b"ab"), "c": 1 + 2j,
           "counter": collections.Counter("aab"), "size": torch.Size([2, 3]), "dev": torch.device("cpu")}
    for protocol in (2, 4, 5):
        got = lantern.load(io.BytesIO(torch_bytes(obj, pickle_protocol=protocol)))
        assert got["sd"]._metadata == sd._metadata and got["tagged"].note == "kept"
        assert (got["set"], got["bytes"], got["ba"], got["c"]) == ({1, 2}, b"\x00\x01", bytearray(b"ab"), 1 + 2j)
        assert got["counter"] == collections.Counter("aab") and tuple(got["size"]) == (2, 3)
        assert got["dev"] == lantern.device("cpu")


class Point:
    def __init__(self, x):
        self.x = x


def test_user_allowed_class_is_built_only_when_allowed():
    data = torch_bytes([Point(3)])
    for lib in (torch, lantern):
        with pytest.raises(pickle.UnpicklingError, match=f"GLOBAL {__name__}.Point was not an allowed global"):
            lib.load(io.BytesIO(data))
        with lib.serialization.safe_globals([Point]):
            assert lib.load(io.BytesIO(data))[0].x == 3


def test_lantern_classes_are_allowed_under_torchs_module_path():
    data = torch_bytes(torch.nn.ReLU())
    with lantern.serialization.safe_globals([lantern.nn.ReLU]):
        assert type(lantern.load(io.BytesIO(data))) is lantern.nn.ReLU
    with pytest.raises(pickle.UnpicklingError, match="torch.nn.modules.activation.ReLU"):
        lantern.load(io.BytesIO(data))


def test_storage_types_and_returned_objects_are_immutable():
    with pytest.raises(AttributeError):
        ser._STORAGE_TYPES[lantern.float32].dtype = lantern.int32
    for attribute, value in (("itemsize", 3), ("is_floating_point", False)):
        messages = []
        for lib in (torch, lantern):
            with pytest.raises(AttributeError) as err:
                setattr(lib.float32, attribute, value)
            messages.append(str(err.value).replace("torch.", "lantern."))
        assert messages[0] == messages[1]
    got = lantern.load(io.BytesIO(checkpoint(P + g("torch", "FloatStorage") + b".")))
    with pytest.raises(AttributeError):
        got.dtype = lantern.int32
    assert got.dtype is lantern.float32


# ---- 3. damaged checkpoints -----------------------------------------------------------------------------------------

def _good():
    return torch_bytes({"x": torch.tensor(_HONEST)})


def _empty_central_directory(data):
    end = data.rfind(b"PK\x05\x06")
    start = struct.unpack("<I", data[end + 16:end + 20])[0]
    return data[:start] + b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, 0, 0, 0, start, 0)


def _empty_zip():
    out = io.BytesIO()
    zipfile.ZipFile(out, "w").close()
    return out.getvalue()


def _numel(data, numel):
    """The checkpoint with its storage's persistent id claiming `numel` elements (BININT)."""
    return rewrite(data, lambda n, b: b.replace(b"K\x03tq", b"J" + struct.pack("<i", numel) + b"tq")
                   if n == "data.pkl" else b)


DAMAGED = {
    "short storage record": (lambda: rewrite(_good(), lambda n, b: b[:5] if n == "data/0" else b), RuntimeError),
    "empty storage record": (lambda: rewrite(_good(), lambda n, b: b"" if n == "data/0" else b), RuntimeError),
    "long storage record": (lambda: rewrite(_good(), lambda n, b: b + b"1234" if n == "data/0" else b),
                            RuntimeError),
    "missing storage record": (lambda: rewrite(_good(), lambda n, b: None if n == "data/0" else b), RuntimeError),
    "missing data.pkl": (lambda: rewrite(_good(), lambda n, b: None if n == "data.pkl" else b), RuntimeError),
    "unknown byteorder": (lambda: rewrite(_good(), lambda n, b: b"middle" if n == "byteorder" else b), ValueError),
    "persistent id with a huge element count": (lambda: _numel(_good(), 2 ** 31 - 1), RuntimeError),
    "zip with an empty central directory": (lambda: _empty_central_directory(_good()), RuntimeError),
    "zip with no records at all": (_empty_zip, pickle.UnpicklingError),
    "truncated file (half)": (lambda: _good()[:len(_good()) // 2], RuntimeError),
    "truncated file (tail)": (lambda: _good()[:-10], RuntimeError),
    "empty file": (lambda: b"", EOFError),
    "not a zip (text)": (lambda: b"not a checkpoint", pickle.UnpicklingError),
    "not a zip (a pickled int)": (lambda: pickle.dumps(5, protocol=2), RuntimeError),
    "zip header only": (lambda: b"PK\x03\x04", RuntimeError),
    "legacy file cut before its data ends": (lambda: _legacy()[:-5], RuntimeError),
}


def _legacy(obj=None, **kwargs):
    return torch_bytes({"x": torch.tensor(_HONEST)} if obj is None else obj, _use_new_zipfile_serialization=False,
                       **kwargs)


@pytest.mark.parametrize("name", DAMAGED)
def test_damaged_checkpoints_raise_torchs_error(name):
    make, expected = DAMAGED[name]
    err = assert_like_torch(make())
    assert type(err) is expected
    assert not isinstance(err, (zipfile.BadZipFile, KeyError, StopIteration, MemoryError))


def test_damaged_records_give_torchs_message_gist():
    err = assert_like_torch(rewrite(_good(), lambda n, b: b[:5] if n == "data/0" else b))
    assert "record size (5 bytes) does not match expected size (12 bytes" in str(err)
    err = assert_like_torch(rewrite(_good(), lambda n, b: b"middle" if n == "byteorder" else b))
    assert str(err) == "Unknown endianness type: middle"


def _no_allocation(nbytes):
    raise AssertionError(f"{nbytes} bytes were allocated before the sizes were checked")


def test_huge_element_count_fails_before_allocating(monkeypatch):
    monkeypatch.setattr(ser, "_allocate", _no_allocation)
    with pytest.raises(RuntimeError, match="record size"):
        lantern.load(io.BytesIO(_numel(_good(), 2 ** 31 - 1)))


def _zip(records, deflate=()):
    """A zip of (name, payload, claimed uncompressed size) records, stored or (names in `deflate`) deflated: the
    sizes in the headers may be lies."""
    body, central = bytearray(), bytearray()
    for name, payload, claimed in records:
        crc = zipfile.crc32(payload)
        method = 8 if name in deflate else 0
        if method:
            packer = zlib.compressobj(wbits=-15)
            payload = packer.compress(payload) + packer.flush()
        size = len(payload) if method else claimed
        fields = struct.pack("<HHHHHIIIHH", 20, 0, method, 0, 0x21, crc, size, claimed, len(name), 0)
        central += b"PK\x01\x02" + struct.pack("<H", 20) + fields + struct.pack("<HHHII", 0, 0, 0, 0, len(body))
        central += name.encode()
        body += b"PK\x03\x04" + fields + name.encode() + payload
    end = struct.pack("<HHHHIIH", 0, 0, len(records), len(records), len(central), len(body), 0)
    return bytes(body + central + b"PK\x05\x06" + end)


@pytest.mark.parametrize("mmap", [False, True])
def test_record_that_the_file_does_not_hold_is_never_handed_out(tmp_path, mmap):
    """The zip promises 12 bytes of data/0 but holds 4: no tensor over memory the file did not fill (in one probe,
    a short record gave 3,934 of 4,096 elements from a tensor freed just before). torch raises nothing here: it
    reads on into the central directory; lantern refuses."""
    with zipfile.ZipFile(io.BytesIO(_good())) as zf:
        records = [(i.filename, zf.read(i), i.file_size) for i in zf.infolist() if not i.filename.endswith("/0")]
        data = zf.read("archive/data/0")
    whole = _zip(records + [("archive/data/0", data, 12)])
    assert torch.load(io.BytesIO(whole))["x"].tolist() == _HONEST  # the writer itself is sound
    path = tmp_path / "cut.pt"
    path.write_bytes(_zip(records + [("archive/data/0", data[:4], 12)]))
    if not mmap:  # torch fills the missing 8 bytes from the central directory that follows (no error)
        assert torch.load(path)["x"].tolist()[1:] != _HONEST[1:]
    with pytest.raises(RuntimeError, match="reaches past the end of the data"):
        lantern.load(path, mmap=mmap)


def test_invalid_tensor_fields_are_refused():
    """Fields torch would coerce or crash on: a bool size, a float offset, a dtype in the storage's place."""
    rebuild = g("torch._utils", "_rebuild_tensor_v2")
    tail = b"\x89" + g("collections", "OrderedDict") + b")RtR."
    for body in (_FLOAT_PID + b"K\x00\x88\x85K\x01\x85",             # size (True,)
                 _FLOAT_PID + b"G?\xf0\x00\x00\x00\x00\x00\x00K\x03\x85K\x01\x85",  # offset 1.0
                 g("torch", "float32") + b"K\x00K\x03\x85K\x01\x85"):  # a dtype where the storage goes
        data = checkpoint(P + rebuild + b"(" + body + tail, [_RECORD])
        before = snapshot()
        with pytest.raises(RuntimeError, match="invalid tensor"):
            lantern.load(io.BytesIO(data))
        assert snapshot() == before


# ---- 4. legacy (non-zip) checkpoints --------------------------------------------------------------------------------

def test_legacy_checkpoints_load_like_torch():
    torch.manual_seed(0)
    obj = {"x": torch.tensor(_HONEST), "sd": torch.nn.Linear(3, 2).state_dict(), "view": torch.arange(6.)[1::2],
           "i": torch.arange(4, dtype=torch.int16), "meta": [torch.float64, torch.Size([2]), 7, "s"]}
    for protocol, weights_only in ((2, True), (2, False), (4, True), (4, False)):
        data = _legacy(obj, pickle_protocol=protocol)
        got = lantern.load(io.BytesIO(data), weights_only=weights_only)
        # torch's weights-only unpickler lacks protocol 4's FRAME opcode: its reference is the full unpickler there
        expected = torch.load(io.BytesIO(data), weights_only=protocol == 2 and weights_only)
        assert got["x"].tolist() == expected["x"].tolist() and got["x"].dtype is lantern.float32
        assert got["view"].tolist() == [1.0, 3.0, 5.0] and got["view"].stride() == (2,)
        assert got["i"].dtype is lantern.int16 and got["i"].tolist() == [0, 1, 2, 3]
        for key in expected["sd"]:
            np.testing.assert_array_equal(got["sd"][key].numpy(), expected["sd"][key].numpy())
        assert got["sd"]._metadata == expected["sd"]._metadata
        assert got["meta"][0] is lantern.float64 and tuple(got["meta"][1]) == (2,) and got["meta"][2:] == [7, "s"]
    meta = lantern.load(io.BytesIO(_legacy()), map_location="meta")["x"]
    assert meta.is_meta and tuple(meta.shape) == (3,)


def test_lantern_writes_legacy_checkpoints_torch_reads():
    base = lantern.arange(6.)
    obj = {"x": base, "view": base[1::2], "p": lantern.nn.Parameter(lantern.ones(2)),
           "i": lantern.arange(3, dtype=lantern.int16), "meta": lantern.ones(2, device="meta")}
    buf = io.BytesIO()
    lantern.save(obj, buf, _use_new_zipfile_serialization=False)
    data = buf.getvalue()
    assert data[:2] == _legacy()[:2] and not data.startswith(b"PK")
    for weights_only in (True, False):
        for lib in (torch, lantern):
            got = lib.load(io.BytesIO(data), weights_only=weights_only)
            assert got["x"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and got["view"].tolist() == [1.0, 3.0, 5.0]
            assert got["view"].untyped_storage().data_ptr() == got["x"].untyped_storage().data_ptr()
            assert isinstance(got["p"], lib.nn.Parameter) and got["p"].requires_grad
            assert got["i"].dtype == lib.int16 and got["meta"].is_meta


def test_legacy_code_is_refused_with_weights_only_and_runs_without():
    data = _legacy(torch.nn.Linear(2, 2))
    err = assert_like_torch(data)
    assert isinstance(err, pickle.UnpicklingError) and "torch.nn.modules.linear.Linear" in str(err)
    module = lantern.load(io.BytesIO(data), weights_only=False)
    assert type(module) is lantern.nn.Linear and tuple(module.weight.shape) == (2, 2)


def _legacy_with_main_pickle(main):
    """A legacy file whose object pickle is `main` (its storage list empty)."""
    buf = io.BytesIO()
    for part in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}):
        pickle.dump(part, buf, protocol=2)
    buf.write(main)
    pickle.dump([], buf, protocol=2)
    return buf.getvalue()


@pytest.mark.parametrize("name", ["os.system via REDUCE", "GLOBAL builtins.eval", "INST opcode",
                                  "set FloatStorage's dtype", "patch Size.numel"])
def test_legacy_payloads_are_refused_like_torch(name):
    payloads = {**CODE_PAYLOADS, **GLOBAL_PAYLOADS}
    err = assert_like_torch(_legacy_with_main_pickle(payloads[name]))
    assert isinstance(err, pickle.UnpicklingError)


@pytest.mark.parametrize("name,edit,expected", [
    ("bad magic number", lambda d: pickle.dumps(7, protocol=2) + d[len(pickle.dumps(0x1950A86A20F9469CFC6C, 2)):],
     RuntimeError),
    ("storage size that does not match its record", lambda d: d.replace(b"K\x03Ntq", b"K\x04Ntq"),
     RuntimeError),
])
def test_damaged_legacy_checkpoints_raise_torchs_error(name, edit, expected):
    data = edit(_legacy())
    assert data != _legacy()
    assert type(assert_like_torch(data)) is expected


def test_legacy_storage_larger_than_the_file_fails_before_allocating(monkeypatch):
    data = _legacy().replace(b"K\x03Ntq", b"J\xff\xff\xff\x3fNtq")
    assert data != _legacy()
    monkeypatch.setattr(ser, "_allocate", _no_allocation)
    with pytest.raises(RuntimeError, match="more than the file holds"):
        lantern.load(io.BytesIO(data))


# ---- 5. TorchScript archives ----------------------------------------------------------------------------------------

class _Scaled(lantern.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = lantern.nn.Linear(3, 2)
        self.k = 2

    def forward(self, x):
        return lantern.nn.functional.relu(self.lin(x)) * self.k


def _archive():
    buf = io.BytesIO()
    lantern.jit.save(lantern.jit.script(_Scaled()), buf)
    return buf.getvalue()


def _edit_ir(data, fn):
    """The archive with code/__torch__.ir's JSON passed through fn(ir) (which edits it in place)."""
    def edit(name, payload):
        if name == "code/__torch__.ir":
            ir = json.loads(payload)
            fn(ir)
            return json.dumps(ir).encode()
        return payload
    return rewrite(data, edit)


def _forward(ir):
    return _root(ir)["methods"]["forward"]


def _prepend(ir, lines, refs=()):
    """Insert IR lines right after the graph header of the root's forward (node indices of later refs shift)."""
    record = _forward(ir)
    head, _, body = record["ir"].partition("):\n")
    record["ir"] = head + "):\n" + "".join(f"  {line}\n" for line in lines) + body
    for ref in record["refs"]:
        ref["node"] += len(lines)  # one node per line
    record["refs"] = list(refs) + record["refs"]


def _call_python(qualname, attr=False):
    def fn(ir):
        _prepend(ir, ['%c0 : str = prim::Constant[value="__import__(\'os\').system(\'true\')"]()',
                      f'%c1 : Tensor = prim::CallFunction[fn="{qualname}"](%c0)'],
                 [{"node": 1, "attribute": "fn", "python": qualname, "kwnames": [], "attr": attr}])
    return fn


def _lines(*lines):
    return lambda ir: _prepend(ir, list(lines))


def _state_attribute(name):
    def edit(entry, payload):
        if entry == "data.pkl":
            return payload.replace(s("k"), s(name), 1)
        return payload
    return edit


HOSTILE_ARCHIVES = {
    "CallFunction of lantern.jit.CompilationUnit with code in a string": _call_python("lantern.jit.CompilationUnit"),
    "attribute path into a module's import": _call_python("lantern.serialization.os.system"),
    "nested module path": _call_python("lantern.jit.frontend_emit.importlib.import_module"),
    "lantern function that writes files": _call_python("lantern.serialization.save"),
    "lantern function that changes process state": _call_python("lantern.core.dtype.set_default_dtype"),
    "builtins through a python reference": _call_python("builtins.eval"),
    "dunder Tensor attribute": _call_python("Tensor.__class__", attr=True),
    "attribute read that is not a Tensor property": _call_python("lantern.nn.functional.relu", attr=True),
    "aten fallback to lantern.save": _lines('%c0 : str = prim::Constant[value="/tmp/x"]()',
                                            "%c1 : NoneType = aten::save(%c0, %c0)"),
    "aten fallback with a dunder name": _lines('%c0 : str = prim::Constant[value="os"]()',
                                               "%c1 : Tensor = aten::__import__(%c0)"),
    "dunder GetAttr on self": _lines("%c0 : Tensor = prim::GetAttr[name=\"__class__\"](%self)"),
    "GetAttr of an undeclared member": _lines("%c0 : Tensor = prim::GetAttr[name=\"_parameters\"](%self)"),
    "SetAttr on a global reached from a tensor": _lines(
        '%c0 : Tensor = prim::GetAttr[name="k"](%self)', "%c1 : int = prim::dtype(%c0)",
        '%c2 : int = prim::Constant[value=1]()', '= prim::SetAttr[name="itemsize"](%c1, %c2)'),
    "CallMethod on a value that is not a module": _lines(
        '%c0 : __torch__.X = prim::Constant[value="x"]()', '%c1 : Tensor = prim::CallMethod[name="forward"](%c0)'),
    "function constant that is a string": _lines(
        '%c0 : Function = prim::Constant[value="eval"]()', '%c1 : str = prim::Constant[value="1+1"]()',
        "%c2 : Tensor = prim::CallFunction(%c0, %c1)"),
    "str.format reaching attributes": _lines('%c0 : str = prim::Constant[value="{0.__class__.__init__.__globals__}"]()',
                                             "%c1 : str = aten::format(%c0, %self)"),
    "str.format with a computed format string": _lines('%c0 : str = prim::Constant[value="{"]()',
                                                       "%c1 : str = aten::add(%c0, %c0)",
                                                       "%c2 : str = aten::format(%c1, %self)"),
    "unknown node kind": _lines("%c0 : Tensor = foo::bar()"),
    "fusion group with a subgraph": _lines("%c0 : Tensor = prim::FusionGroup()"),
}


@pytest.mark.parametrize("name", HOSTILE_ARCHIVES)
def test_hostile_archives_are_refused_at_load(name):
    data = _edit_ir(_archive(), HOSTILE_ARCHIVES[name])
    before = snapshot()
    with pytest.raises(RuntimeError, match="lantern.jit.load"):
        lantern.jit.load(io.BytesIO(data))
    assert RAN == [] and snapshot() == before
    torch.jit.load(io.BytesIO(data))  # torch compiles the archive's TorchScript source and never reads lantern's IR


def _add_method(name):
    return lambda ir: _root(ir)["methods"].update({name: _forward(ir)})


def _add_parameter(name):
    return lambda ir: _root(ir)["parameters"].append(name)


def _root(ir):
    return ir["classes"][next(k for k in ir["classes"] if k.endswith("_Scaled"))]


def _ref_past_the_graph(ir):
    _forward(ir)["refs"].append({"node": 10 ** 6, "attribute": "op", "absent": True})


@pytest.mark.parametrize("edit", [_add_method("__reduce_ex__"), _add_method("__init__"), _add_parameter("__dict__"),
                                  _add_parameter("_modules"), _ref_past_the_graph],
                         ids=["dunder method", "dunder init", "dunder parameter", "machinery parameter",
                              "reference past the graph"])
def test_hostile_class_tables_are_refused(edit):
    data = _edit_ir(_archive(), edit)
    before = snapshot()
    with pytest.raises(RuntimeError, match="lantern.jit.load"):
        lantern.jit.load(io.BytesIO(data))
    assert snapshot() == before and RAN == []


@pytest.mark.parametrize("attribute", ["_parameters", "__class__", "forward", "training", "a.b", ""])
def test_module_state_cannot_replace_module_machinery(attribute):
    data = rewrite(_archive(), _state_attribute(attribute))
    with pytest.raises(RuntimeError, match="lantern.jit.load"):
        lantern.jit.load(io.BytesIO(data))


def test_honest_archive_still_loads_and_runs():
    m = lantern.jit.script(_Scaled())
    buf = io.BytesIO()
    lantern.jit.save(m, buf)
    buf.seek(0)
    loaded = lantern.jit.load(buf)
    x = lantern.randn(4, 3)
    assert lantern.equal(loaded(x), m(x))


def test_archive_data_pkl_goes_through_the_weights_only_rules():
    def edit(name, payload):
        return P + g("os", "system") + b"(" + s("true") + b"tR." if name == "constants.pkl" else payload
    with pytest.raises(pickle.UnpicklingError, match="os is blocked"):
        lantern.jit.load(io.BytesIO(rewrite(_archive(), edit)))
    assert RAN == []


class _NoReadinto:
    """A file object with read/seek/tell only (some wrappers lack readinto)."""

    def __init__(self, data):
        self._buf = io.BytesIO(data)
        self.read, self.seek, self.tell, self.seekable = (self._buf.read, self._buf.seek, self._buf.tell,
                                                          self._buf.seekable)


def test_compressed_records_and_plain_file_objects_load():
    deflated = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(_good())) as src, zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    for data in (deflated.getvalue(), _good()):
        assert torch.load(io.BytesIO(data))["x"].tolist() == _HONEST
        assert lantern.load(io.BytesIO(data))["x"].tolist() == _HONEST
        assert lantern.load(_NoReadinto(data))["x"].tolist() == _HONEST


def test_compressed_record_claiming_an_impossible_size_is_refused(monkeypatch):
    """A deflated record cannot expand more than ~1032x: a 2 GB claim for 20 compressed bytes is refused before
    anything is allocated (torch is not run on it: it would allocate the 2 GB first)."""
    numel = 500_000_000
    pkl = zipfile.ZipFile(io.BytesIO(_numel(_good(), numel))).read("archive/data.pkl")
    data = _zip([("archive/data.pkl", pkl, len(pkl)), ("archive/byteorder", b"little", 6),
                 ("archive/data/0", b"\0" * 12, numel * 4)], deflate={"archive/data/0"})
    monkeypatch.setattr(ser, "_allocate", _no_allocation)
    with pytest.raises(RuntimeError, match="cannot come from"):
        lantern.load(io.BytesIO(data))
