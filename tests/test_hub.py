"""torch.hub and torch.utils.model_zoo against torch on the same programs, offline: file:// URLs for downloads,
local hubconf.py folders, and GitHub repositories already in the cache (what list/help/load do after the download).
Each program runs once per library in a folder of its own; results, cache layout and errors must agree."""
import hashlib
import io
import os
import pathlib
import re
import zipfile

import pytest
import torch
import torch.hub
import torch.utils.model_zoo

import lantern
import lantern.hub
import lantern.utils.model_zoo
from nn_oracle import same_error

HUBCONF = '''
dependencies = ["numpy"]


def double(x, times=2):
    """Multiplies x by `times`."""
    return x * times


def _private():
    return 0


not_callable = 3
'''


@pytest.fixture(autouse=True)
def fresh_hub_dir(monkeypatch):
    """Each test starts without set_dir's folder, with the environment variables of get_dir unset."""
    for name in ("TORCH_HOME", "XDG_CACHE_HOME", "TORCH_HUB", "TORCH_MODEL_ZOO"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(torch.hub, "_hub_dir", None)
    monkeypatch.setattr(lantern.hub, "_hub_dir", None)


def _both(program, tmp_path):
    """program(lib, folder) for torch and lantern, each in a fresh folder; folder names read as '<tmp>'."""
    results = []
    for lib in (torch, lantern):
        folder = tmp_path / lib.__name__
        folder.mkdir()
        results.append(_relative(program(lib, folder), str(folder)))
    assert results[1] == results[0]
    return results[1]


def _relative(value, folder):
    if isinstance(value, str):
        return value.replace(folder, "<tmp>")
    if isinstance(value, (list, tuple)):
        return [_relative(v, folder) for v in value]
    return value


def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in pathlib.Path(folder).rglob("*"))


def _torch_checkpoint():
    """The bytes of a state dict torch saved (so both libraries read the same file, with the same hash)."""
    buffer = io.BytesIO()
    torch.save({"w": torch.arange(4.0), "step": 3}, buffer)
    return buffer.getvalue()


CHECKPOINT = _torch_checkpoint()
CHECKPOINT_NAME = f"weights-{hashlib.sha256(CHECKPOINT).hexdigest()[:6]}.pt"


def _checkpoint(lib, folder, name=CHECKPOINT_NAME):
    """The checkpoint in folder/src/name, and its file:// URL."""
    (folder / "src").mkdir(exist_ok=True)
    (folder / "src" / name).write_bytes(CHECKPOINT)
    return (folder / "src" / name).as_uri()


def test_get_dir_follows_the_environment(monkeypatch, tmp_path):
    def program(lib, folder):
        dirs = [lib.hub.get_dir()]
        monkeypatch.setenv("XDG_CACHE_HOME", str(folder / "xdg"))
        dirs.append(lib.hub.get_dir())
        monkeypatch.setenv("TORCH_HOME", str(folder / "home"))
        dirs.append(lib.hub.get_dir())
        lib.hub.set_dir("~/elsewhere")
        dirs.append(lib.hub.get_dir())
        monkeypatch.delenv("XDG_CACHE_HOME")
        monkeypatch.delenv("TORCH_HOME")
        return dirs
    dirs = _both(program, tmp_path)
    assert dirs[0] == os.path.expanduser("~/.cache/torch/hub")


def test_load_state_dict_from_url_caches_under_checkpoints(monkeypatch, tmp_path, capsys):
    def program(lib, folder):
        monkeypatch.setenv("TORCH_HOME", str(folder / "home"))
        url = _checkpoint(lib, folder)
        state = lib.hub.load_state_dict_from_url(url, progress=False, check_hash=True)
        os.remove(folder / "src" / CHECKPOINT_NAME)   # the second call reads the cache
        again = lib.utils.model_zoo.load_url(url, map_location="cpu", weights_only=True)
        named = lib.hub.load_state_dict_from_url(_checkpoint(lib, folder), model_dir=str(folder / "models"),
                                                 file_name="renamed.pth", progress=False)
        printed = capsys.readouterr().out
        return [state["w"].tolist(), state["step"], again["w"].tolist(), named["step"], _files(folder), printed]
    _both(program, tmp_path)


def test_download_url_to_file_and_hash_check(tmp_path, capsys):
    def program(lib, folder):
        source = folder / "data.bin"
        source.write_bytes(bytes(range(256)) * 1000)
        lib.hub.download_url_to_file(source.as_uri(), str(folder / "copy.bin"), hash_prefix="b57b64", progress=True)
        progress = capsys.readouterr().err
        try:
            lib.hub.download_url_to_file(source.as_uri(), str(folder / "bad.bin"), hash_prefix="0123", progress=False)
        except RuntimeError as error:
            message = str(error)
        return [(folder / "copy.bin").read_bytes() == source.read_bytes(), "100%" in progress, message,
                _files(folder)]
    assert _both(program, tmp_path)[0]


def test_check_hash_refuses_a_wrong_file(tmp_path, capsys):
    def program(lib, folder):
        url = _checkpoint(lib, folder, "weights-ffff.pt")
        with pytest.raises(RuntimeError, match="invalid hash value") as error:
            lib.hub.load_state_dict_from_url(url, model_dir=str(folder / "c"), check_hash=True, progress=False)
        return [re.sub("got \"[0-9a-f]+\"", "got <digest>", str(error.value)), _files(folder)]
    _both(program, tmp_path)


def test_legacy_zip_checkpoint(tmp_path, capsys):
    def program(lib, folder):
        lib.save({"w": lib.ones(2)}, folder / "inner.pt")
        with zipfile.ZipFile(folder / "old.zip", "w") as archive:
            archive.write(folder / "inner.pt", "inner.pt")
        with pytest.warns(FutureWarning, match="old format"):
            state = lib.hub.load_state_dict_from_url((folder / "old.zip").as_uri(), model_dir=str(folder / "c"))
        return [state["w"].tolist(), _files(folder / "c")]
    _both(program, tmp_path)


def _repo(folder, name="repo"):
    (folder / name).mkdir(parents=True)
    (folder / name / "hubconf.py").write_text(HUBCONF)
    return str(folder / name)


def test_load_from_a_local_folder(tmp_path):
    def program(lib, folder):
        repo = _repo(folder)
        return [lib.hub.load(repo, "double", 21, source="local"), lib.hub.load(repo, "double", 2, times=5,
                                                                               source="LOCAL")]
    assert _both(program, tmp_path) == [42, 10]


def test_github_repository_in_the_cache(tmp_path, capsys):
    """A repository already downloaded (owner_name_ref under get_dir()) is used without the network."""
    def program(lib, folder):
        lib.hub.set_dir(str(folder / "hub"))
        _repo(folder / "hub", "someone_models_main")
        _repo(folder / "hub", "pytorch_vision_v1")
        result = [lib.hub.list("someone/models:main", trust_repo=True),
                  lib.hub.help("someone/models:main", "double", trust_repo=True),
                  lib.hub.load("someone/models:main", "double", 4, trust_repo="check", verbose=False),
                  lib.hub.load("pytorch/vision:v1", "double", 1, times=3),
                  (folder / "hub" / "trusted_list").read_text()]
        return result + [capsys.readouterr().err]
    _both(program, tmp_path)


ERRORS = {
    "unknown source": lambda lib, folder: lib.hub.load(_repo(folder), "double", source="pypi"),
    "model not a string": lambda lib, folder: lib.hub.load(_repo(folder), 3, source="local"),
    "no such entry point": lambda lib, folder: lib.hub.load(_repo(folder), "triple", source="local"),
    "not callable": lambda lib, folder: lib.hub.load(_repo(folder), "not_callable", source="local"),
    "missing dependency": lambda lib, folder: (
        pathlib.Path(_repo(folder), "hubconf.py").write_text("dependencies = ['no_such_package_x']\n"),
        lib.hub.load(str(folder / "repo"), "f", source="local")),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name, tmp_path):
    folders = iter([tmp_path / "torch", tmp_path / "lantern"])
    same_error(lambda lib: ERRORS[name](lib, next(folders)))


def test_untrusted_repository_is_refused_on_no(tmp_path, monkeypatch):
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    folders = iter([tmp_path / "torch", tmp_path / "lantern"])

    def program(lib):
        folder = next(folders)
        lib.hub.set_dir(str(folder))
        _repo(folder, "stranger_code_main")
        lib.hub.load("stranger/code:main", "double", 1, trust_repo=False)
    same_error(program)


def test_model_zoo_names():
    assert lantern.utils.model_zoo.tqdm is torch.utils.model_zoo.tqdm
    assert lantern.utils.model_zoo.load_url is lantern.hub.load_state_dict_from_url
    assert lantern.hub.__all__ == torch.hub.__all__
