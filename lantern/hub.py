"""lantern.hub: models and weights from a URL or a GitHub repository's hubconf.py, as torch.hub.

Files are cached under get_dir() ($TORCH_HOME/hub, by default ~/.cache/torch/hub): weights under checkpoints/, a
repository as <owner>_<name>_<ref>/ (downloaded as GitHub's zip of that ref, then its hubconf.py imported).

>>> import os, tempfile, pathlib
>>> folder = tempfile.mkdtemp()
>>> lantern.save({"w": lantern.ones(2)}, os.path.join(folder, "weights-0123.pt"))
>>> url = pathlib.Path(folder, "weights-0123.pt").as_uri()
>>> state = lantern.hub.load_state_dict_from_url(url, model_dir=os.path.join(folder, "cache"), progress=False)
... # doctest: +ELLIPSIS
Downloading: "file:///.../weights-0123.pt" to /.../cache/weights-0123.pt
>>> state["w"], os.listdir(os.path.join(folder, "cache"))
(tensor([1., 1.]), ['weights-0123.pt'])
"""
import contextlib
import errno
import hashlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import uuid
import warnings
import zipfile
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.parse import urlparse
from urllib.request import Request, urlopen

from tqdm import tqdm

import lantern

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")   # the hash prefix in a file name: resnet18-f37072fd.pth
ENV_GITHUB_TOKEN = "GITHUB_TOKEN"
ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
VAR_DEPENDENCY = "dependencies"   # the hubconf.py variable listing the packages its entry points need
MODULE_HUBCONF = "hubconf.py"
READ_DATA_CHUNK = 128 * 1024
_TRUSTED_REPO_OWNERS = ("facebookresearch", "facebookincubator", "pytorch", "fairinternal")
_hub_dir = None


def get_dir():
    """The hub's cache folder: set_dir's, else $TORCH_HOME/hub, else $XDG_CACHE_HOME/torch/hub or ~/.cache/torch/hub.

    >>> lantern.hub.get_dir().endswith(os.path.join("torch", "hub")) or "TORCH_HOME" in os.environ
    True
    """
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_torch_home(), "hub")


def _torch_home():
    default = os.path.join(os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR), "torch")
    return os.path.expanduser(os.getenv(ENV_TORCH_HOME, default))


def set_dir(d):
    """Use folder `d` (a user's ~ expanded) as the hub's cache from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Download `url` to the file `dst`, through a temporary file beside it; when `hash_prefix` is given, the
    file's SHA-256 must start with it (RuntimeError otherwise, and `dst` is not written)."""
    dst = os.path.expanduser(dst)
    partial = _open_partial_file(dst)
    try:
        with urlopen(Request(url, headers={"User-Agent": "torch.hub"})) as response:
            sha256 = hashlib.sha256() if hash_prefix is not None else None
            _copy_with_progress(response, partial, sha256, progress)
            partial.close()
            if sha256 is not None and not sha256.hexdigest().startswith(hash_prefix):
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{sha256.hexdigest()}")')
        shutil.move(partial.name, dst)
    finally:
        partial.close()
        if os.path.exists(partial.name):
            os.remove(partial.name)


def _open_partial_file(dst):
    for _ in range(tempfile.TMP_MAX):
        try:
            return open(dst + "." + uuid.uuid4().hex + ".partial", "w+b")
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "No usable temporary file name found")


def _copy_with_progress(response, file, sha256, progress):
    """Copy the response to `file` in chunks, feeding `sha256` and a tqdm bar sized by Content-Length."""
    sizes = response.info().get_all("Content-Length")
    total = int(sizes[0]) if sizes else None
    with tqdm(total=total, disable=not progress, unit="B", unit_scale=True, unit_divisor=1024) as bar:
        while chunk := response.read(READ_DATA_CHUNK):
            file.write(chunk)
            if sha256 is not None:
                sha256.update(chunk)
            bar.update(len(chunk))


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False,
                             file_name=None, weights_only=False):
    """lantern.load of the file at `url`, downloaded once into `model_dir` (default get_dir()/checkpoints) as
    `file_name` (default the URL's last part). check_hash checks the hash prefix the file name carries."""
    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    model_dir = os.path.join(get_dir(), "checkpoints") if model_dir is None else model_dir
    os.makedirs(model_dir, exist_ok=True)
    filename = os.path.basename(urlparse(url).path) if file_name is None else file_name
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
        found = HASH_REGEX.search(filename) if check_hash else None
        download_url_to_file(url, cached_file, found.group(1) if found else None, progress=progress)
    if _is_legacy_zip_format(cached_file):
        warnings.warn("Falling back to the old format < 1.6. This support will be deprecated in favor of default "
                      "zipfile format introduced in 1.6. Please redo torch.save() to save it in the new zipfile "
                      "format.", FutureWarning, stacklevel=2)
        cached_file = _extract_single_file(cached_file, model_dir)
    return lantern.load(cached_file, map_location=map_location, weights_only=weights_only)


def _is_legacy_zip_format(filename):
    """A zip holding one file: how checkpoints were shipped before torch 1.6's zip format."""
    if not zipfile.is_zipfile(filename):
        return False
    with zipfile.ZipFile(filename) as archive:
        members = archive.infolist()
    return len(members) == 1 and not members[0].is_dir()


def _extract_single_file(filename, folder):
    with zipfile.ZipFile(filename) as archive:
        _safe_extract_zip(archive, folder)
        return os.path.join(folder, archive.infolist()[0].filename)


def _safe_extract_zip(archive, folder):
    """Extract every member into `folder`, refusing absolute paths and paths that climb out of it."""
    folder = Path(folder).resolve(strict=False)
    for member in archive.infolist():
        name = os.path.normpath(member.filename)
        if name.startswith(("/", "\\")) or (len(name) >= 2 and name[1] == ":" and name[0].isalpha()):
            raise ValueError(f"Archive entry has absolute path: {member.filename}")
        if ".." in re.split(r"[/\\]", name):
            raise ValueError(f"Archive entry contains directory traversal: {member.filename}")
        if not (folder / name).resolve(strict=False).is_relative_to(folder):
            raise ValueError(f"Archive entry escapes target directory: {member.filename}")
        archive.extract(member, folder)


# ---- entry points of a repository's hubconf.py ------------------------------------------------------------------

def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True):
    """The entry points (public callables) of the hubconf.py of `github` ('owner/name[:ref]')."""
    repo_dir = _get_cache_or_reload(github, force_reload, trust_repo, verbose, skip_validation)
    hub_module = _import_hubconf(repo_dir)
    return [name for name in dir(hub_module) if callable(getattr(hub_module, name)) and not name.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check"):
    """The docstring of entry point `model` of `github`'s hubconf.py."""
    repo_dir = _get_cache_or_reload(github, force_reload, trust_repo, True, skip_validation)
    return _entry_point(_import_hubconf(repo_dir), model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    """Call entry point `model` of the hubconf.py of a GitHub repository ('owner/name[:ref]', source='github') or
    of a local folder (source='local') with *args and **kwargs, and return what it returns.

    >>> folder = tempfile.mkdtemp()
    >>> _ = Path(folder, "hubconf.py").write_text("def twice(x):\\n    return 2 * x\\n")
    >>> lantern.hub.load(folder, "twice", 21, source="local")
    42
    """
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        repo_or_dir = _get_cache_or_reload(repo_or_dir, force_reload, trust_repo, verbose, skip_validation)
    with _on_sys_path(repo_or_dir):
        return _entry_point(_import_hubconf(repo_or_dir), model)(*args, **kwargs)


@contextlib.contextmanager
def _on_sys_path(path):
    """The repository's folder first on sys.path, so its hubconf.py can import its own modules."""
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_hubconf(repo_dir):
    with _on_sys_path(repo_dir):
        spec = importlib.util.spec_from_file_location(MODULE_HUBCONF, os.path.join(repo_dir, MODULE_HUBCONF))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def _entry_point(hub_module, model):
    """hubconf's callable `model`, after checking the packages its `dependencies` list are installed."""
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    missing = [name for name in getattr(hub_module, VAR_DEPENDENCY, None) or []
               if importlib.util.find_spec(name) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    entry = getattr(hub_module, model, None) if model in dir(hub_module) else None
    if entry is None or not callable(entry):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return entry


# ---- GitHub repositories: parse, trust, download -----------------------------------------------------------------

def _get_cache_or_reload(github, force_reload, trust_repo, verbose=True, skip_validation=False):
    """The folder holding the repository's files: the cached one, or a fresh download of its zip."""
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    owner, name, ref = _parse_repo_info(github)
    folder_name = "_".join([owner, name, ref.replace("/", "_")])
    repo_dir = os.path.join(hub_dir, folder_name)
    _check_repo_is_trusted(owner, name, folder_name, trust_repo)
    if not force_reload and os.path.exists(repo_dir):
        if verbose:
            sys.stderr.write(f"Using cache found in {repo_dir}\n")
        return repo_dir
    if not skip_validation:
        _validate_not_a_forked_repo(owner, name, ref)
    cached_zip = os.path.join(hub_dir, ref.replace("/", "_") + ".zip")
    _remove_if_exists(cached_zip)
    _download_archive(owner, name, ref, cached_zip)
    with zipfile.ZipFile(cached_zip) as archive:
        extracted = os.path.join(hub_dir, archive.infolist()[0].filename)
        _remove_if_exists(extracted)
        _safe_extract_zip(archive, hub_dir)
    _remove_if_exists(cached_zip)
    _remove_if_exists(repo_dir)
    shutil.move(extracted, repo_dir)
    return repo_dir


def _download_archive(owner, name, ref, dst):
    """GitHub's zip of `ref`; a ref that is both a branch and a tag (HTTP 300) is taken as the branch."""
    url = f"https://github.com/{owner}/{name}/zipball/{ref}"
    sys.stdout.write(f'Downloading: "{url}" to {dst}\n')
    try:
        download_url_to_file(url, dst, progress=False)
    except HTTPError as error:
        if error.code != 300:
            raise
        warnings.warn(f"The ref {ref} is ambiguous. Perhaps it is both a tag and a branch in the repo? Torchhub "
                      "will now assume that it's a branch. You can disambiguate tags and branches by explicitly "
                      "passing refs/heads/branch_name or refs/tags/tag_name as the ref. That might require using "
                      "skip_validation=True.", stacklevel=2)
        download_url_to_file(f"https://github.com/{owner}/{name}/zipball/refs/heads/{ref}", dst, progress=False)


def _remove_if_exists(path):
    if os.path.isfile(path):
        os.remove(path)
    elif os.path.exists(path):
        shutil.rmtree(path)


def _parse_repo_info(github):
    """(owner, name, ref) of 'owner/name[:ref]'; without a ref, 'main' if GitHub has that branch, else 'master'
    (offline: whichever of the two is cached)."""
    repo_info, ref = github.split(":") if ":" in github else (github, None)
    owner, name = repo_info.split("/")
    if ref is not None:
        return owner, name, ref
    try:
        with urlopen(f"https://github.com/{owner}/{name}/tree/main/"):
            return owner, name, "main"
    except HTTPError as error:
        if error.code == 404:
            return owner, name, "master"
        raise
    except URLError as error:
        for ref in ("main", "master"):
            if os.path.exists(f"{get_dir()}/{owner}_{name}_{ref}"):
                return owner, name, ref
        raise RuntimeError("It looks like there is no internet connection and the repo could not be found in the "
                           f"cache ({get_dir()})") from error


def _check_repo_is_trusted(owner, name, folder_name, trust_repo):
    """Ask before running code from a repository not yet trusted (trust_repo='check'), or always (False); a
    repository used once is added to get_dir()/trusted_list."""
    trusted_list = os.path.join(get_dir(), "trusted_list")
    Path(trusted_list).touch()
    with open(trusted_list) as file:
        trusted = tuple(line.strip() for line in file)
    owner_name = f"{owner}_{name}"
    is_trusted = (owner_name in trusted or folder_name in next(os.walk(get_dir()))[1]
                  or owner in _TRUSTED_REPO_OWNERS)
    if trust_repo is False or (trust_repo == "check" and not is_trusted):
        response = input(f"The repository {owner_name} does not belong to the list of trusted repositories and as "
                         "such cannot be downloaded. Do you trust this repository and wish to add it to the trusted "
                         "list of repositories (y/N)?").lower()
        if response in ("y", "yes"):
            if is_trusted:
                print("The repository is already trusted.")
        elif response in ("n", "no", ""):
            raise Exception("Untrusted repository.")
        else:
            raise ValueError(f"Unrecognized response {response}.")
    if not is_trusted:
        with open(trusted_list, "a") as file:
            file.write(owner_name + "\n")


def _validate_not_a_forked_repo(owner, name, ref):
    """Raise ValueError unless `ref` is a branch, tag or commit of owner/name itself (GitHub serves a fork's
    commits under the parent's name too)."""
    headers = {"Accept": "application/vnd.github.v3+json"}
    if os.environ.get(ENV_GITHUB_TOKEN) is not None:
        headers["Authorization"] = f"token {os.environ[ENV_GITHUB_TOKEN]}"
    for kind in ("branches", "tags"):
        page = 0
        while True:
            page += 1
            url = f"https://api.github.com/repos/{owner}/{name}/{kind}?per_page=100&page={page}"
            try:
                found = json.loads(_read_url(Request(url, headers=headers)))
            except HTTPError:   # a bad token: GitHub answers without one
                headers.pop("Authorization", None)
                found = json.loads(_read_url(Request(url, headers=headers)))
            if not found:
                break
            if any(item["name"] == ref or item["commit"]["sha"].startswith(ref) for item in found):
                return
    raise ValueError(f"Cannot find {ref} in https://github.com/{owner}/{name}. If it's a commit from a forked repo, "
                     "please call hub.load() with forked repo directly.")


def _read_url(request):
    with urlopen(request) as response:
        return response.read().decode(response.headers.get_content_charset("utf-8"))
