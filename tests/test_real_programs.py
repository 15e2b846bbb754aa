"""Public PyTorch programs, unmodified, run through `python -m lantern.compat` beside the same run on torch.

tests/programs/ holds the programs exactly as their authors published them (see tests/programs/README.md for the
sources and licences). Each run below copies one into a temporary folder, writes the data it would download
(a small synthetic stand-in in the program's own file format), runs it with small settings under torch and under
lantern, and compares the loss it reports last. lantern draws torch's random numbers for the same seed, so both
runs start from the same weights and see the same batches and dropout masks: their losses agree to the digits the
program prints, up to float rounding that grows over the steps (kernels sum in different orders).

The torch runs of programs that import torchvision go through tests/torchvision_oracle.py (PyPI's torchvision is
built for CUDA torch; that runner lets its pure-Python parts import beside the CPU build).
"""
import concurrent.futures
import os
import pickle
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = os.path.join(ROOT, "tests", "programs")
TORCHVISION_ORACLE = os.path.join(ROOT, "tests", "torchvision_oracle.py")
TEXT = os.path.join(ROOT, "tests", "compat_scripts", "lighthouse.txt")


# ---- the data the programs would download, in their formats ---------------------------------------------------------

def _text():
    with open(TEXT, encoding="utf-8") as f:
        return f.read()


def shakespeare_char(folder):
    """nanoGPT's data/shakespeare_char: train.bin/val.bin of uint16 character ids and meta.pkl, as prepare.py writes."""
    text = _text()
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    ids = np.array([stoi[c] for c in text], dtype=np.uint16)
    out = os.path.join(folder, "data", "shakespeare_char")
    os.makedirs(out, exist_ok=True)
    split = int(len(ids) * 0.9)
    ids[:split].tofile(os.path.join(out, "train.bin"))
    ids[split:].tofile(os.path.join(out, "val.bin"))
    with open(os.path.join(out, "meta.pkl"), "wb") as f:
        pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": stoi}, f)


def char_input(folder):
    """minGPT chargpt's input.txt (with the line its sampler starts from, whose characters it looks up)."""
    with open(os.path.join(folder, "input.txt"), "w", encoding="utf-8") as f:
        f.write(_text() + "O God, O God!\n")


def wikitext(folder):
    """word_language_model's data/wikitext-2/{train,valid,test}.txt: the text's lines, the last ones held out."""
    lines = _text().splitlines(keepends=True)
    out = os.path.join(folder, "data", "wikitext-2")
    os.makedirs(out, exist_ok=True)
    for name, part in (("train", lines), ("valid", lines[-4:]), ("test", lines[-3:])):
        with open(os.path.join(out, f"{name}.txt"), "w", encoding="utf-8") as f:
            f.writelines(part)


def cora(folder, nodes=1650, features=48, classes=4, edges=3300):
    """gcn's and gat's Cora download, cora.tgz holding cora/cora.content (id, 0/1 word features, class name per line)
    and cora/cora.cites (pairs of ids), over nodes whose words and links follow their class; beside it a stand-in
    `requests` module (the script's folder comes first on sys.path) whose get() streams that file, since gcn
    downloads without looking for a local copy. gat finds cora/ extracted and loads it directly."""
    import io
    import tarfile
    rng = np.random.default_rng(0)
    labels = rng.integers(0, classes, nodes)
    ids = rng.choice(np.arange(10, 30 * nodes), nodes, replace=False)
    words = rng.random((nodes, features)) < 0.08
    block = features // classes
    for k in range(classes):
        words[labels == k, k * block:(k + 1) * block] |= rng.random(((labels == k).sum(), block)) < 0.3
    source = rng.integers(0, nodes, edges)
    same_class = [rng.choice(np.flatnonzero(labels == labels[x])) for x in source]
    target = np.where(rng.random(edges) < 0.8, same_class, rng.integers(0, nodes, edges))
    files = {"cora/cora.content": "".join(f"{i}\t" + "\t".join(map(str, row.astype(int))) + f"\tclass_{c}\n"
                                          for i, row, c in zip(ids, words, labels)),
             "cora/cora.cites": "".join(f"{ids[x]}\t{ids[y]}\n" for x, y in zip(source, target))}
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        for name, text in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    with open(os.path.join(folder, "cora.tgz"), "wb") as f:
        f.write(archive.getvalue())
    archive.seek(0)
    with tarfile.open(fileobj=archive, mode="r:gz") as tar:
        tar.extractall(folder, filter="data")
    with open(os.path.join(folder, "requests.py"), "w", encoding="utf-8") as f:
        f.write(OFFLINE_REQUESTS)


OFFLINE_REQUESTS = '''"""Offline stand-in for requests: get(url) streams the file named by the url's last part from this folder."""
import os


class _Response:
    def __init__(self, path):
        self.raw = open(path, "rb")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.raw.close()


def get(url, stream=False, **kwargs):
    return _Response(os.path.join(os.path.dirname(os.path.abspath(__file__)), url.rsplit("/", 1)[-1]))
'''


def mnist(folder, train=512, test=256, root=".."):
    """torchvision's MNIST raw files (IDX format) under root/data/MNIST/raw (pytorch/examples read ../data): each
    digit a bright bar at its own place over noise, so the classes can be learned in a few batches."""
    rng = np.random.default_rng(0)
    raw = os.path.join(folder, root, "data", "MNIST", "raw")
    os.makedirs(raw, exist_ok=True)
    for prefix, n in (("train", train), ("t10k", test)):
        labels = rng.integers(0, 10, n).astype(np.uint8)
        images = rng.integers(0, 60, (n, 28, 28)).astype(np.uint8)
        for image, label in zip(images, labels):
            row, col = 3 + (label // 5) * 12, 2 + (label % 5) * 5
            image[row:row + 8, col:col + 4] = 255
        with open(os.path.join(raw, f"{prefix}-images-idx3-ubyte"), "wb") as f:
            f.write(np.array([0x803, n, 28, 28], dtype=">i4").tobytes() + images.tobytes())
        with open(os.path.join(raw, f"{prefix}-labels-idx1-ubyte"), "wb") as f:
            f.write(np.array([0x801, n], dtype=">i4").tobytes() + labels.tobytes())


# ---- the runs --------------------------------------------------------------------------------------------------------

@dataclass
class Run:
    """One program run: where it lives, its data, its arguments, and the last loss it prints."""
    folder: str                 # under tests/programs
    script: str                 # relative to the folder
    args: list
    loss: str                   # regex whose last match's group 1 is the loss to compare
    rel: float = 1e-3           # allowed |lantern - torch| is rel * |torch| + half a unit of the last printed digit
    data: object = None         # callable(copy_folder) writing the data
    torchvision: bool = False   # imports torchvision: its torch run goes through tests/torchvision_oracle.py
    before: list = field(default_factory=list)  # scripts run first in the same folder: [(script, args)]
    then: list = field(default_factory=list)    # scripts run after it: [(script, args)]
    cwd: str = ""               # run from this sub-folder of the copy (the scripts' own folder for pytorch/examples)


NANOGPT_SMALL = ["--device=cpu", "--eval_iters=2", "--log_interval=5", "--block_size=32", "--batch_size=8",
                 "--n_layer=2", "--n_head=2", "--n_embd=64", "--dropout=0.0"]

RUNS = {
    "nanogpt": Run("nanogpt", "train.py",
                   ["config/train_shakespeare_char.py", *NANOGPT_SMALL, "--compile=False", "--max_iters=40",
                    "--eval_interval=20", "--lr_decay_iters=40", "--warmup_iters=5", "--always_save_checkpoint=True"],
                   r"step \d+: train loss [\d.]+, val loss ([\d.]+)", data=shakespeare_char,
                   then=[("sample.py", ["--out_dir=out-shakespeare-char", "--device=cpu", "--compile=False",
                                        "--num_samples=1", "--max_new_tokens=40", "--dtype=float32"])]),
    **{f"makemore-{kind}": Run("makemore", "makemore.py",
                               ["-i", "names.txt", "-o", "out", "--type", kind, "--max-steps", "60", "-n", "0"],
                               r"step \d+ \| loss ([\d.]+)")
       for kind in ("bigram", "mlp", "rnn", "gru", "bow", "transformer")},
    "mingpt-adder": Run("mingpt", "projects/adder/adder.py",
                        ["--trainer.max_iters=60", "--trainer.num_workers=0"], r"iter \d+: train loss ([\d.]+)"),
    "mingpt-chargpt": Run("mingpt", "projects/chargpt/chargpt.py",
                          ["--trainer.max_iters=30", "--trainer.num_workers=0", "--trainer.batch_size=16",
                           "--data.block_size=32", "--model.model_type=gpt-nano"],
                          r"iter \d+: train loss ([\d.]+)", data=char_input),
    "examples-mnist": Run("examples", "mnist/main.py", ["--epochs", "1", "--log-interval", "4"],
                          r"Train Epoch: .*Loss: ([\d.]+)", data=mnist, cwd="mnist",
                          torchvision=True),
    "examples-vae": Run("examples", "vae/main.py", ["--epochs", "1", "--log-interval", "4"],
                        r"====> Test set loss: ([\d.]+)", data=mnist, cwd="vae", torchvision=True),
    "examples-dcgan": Run("examples", "dcgan/main.py",
                          ["--dataset", "fake", "--workers", "0", "--batchSize", "16", "--ngf", "8", "--ndf", "8",
                           "--niter", "1", "--dry-run", "--manualSeed", "1", "--outf", "out"],
                          r"Loss_D: ([\d.]+)", cwd="dcgan", torchvision=True),
    # graph networks on a Cora-shaped graph: gcn multiplies by its sparse adjacency matrix, gat builds it with
    # sparse_coo_tensor and masks dense attention with it
    "examples-gcn": Run("examples", "gcn/main.py", ["--epochs", "20", "--val-every", "5"],
                        r"Test set results: loss ([\d.]+)", data=cora, cwd="gcn"),
    "examples-gat": Run("examples", "gat/main.py",
                        ["--epochs", "4", "--val-every", "2", "--hidden-dim", "8", "--num-heads", "2"],
                        r"Test set results: loss ([\d.]+)", data=cora, cwd="gat"),
    "examples-mnist_rnn": Run("examples", "mnist_rnn/main.py", ["--epochs", "1", "--log-interval", "2"],
                              r"Train Epoch: .*Loss: ([\d.]+)", data=mnist, cwd="mnist_rnn", torchvision=True),
    # its pairs come from Python's unseeded `random`, so each run (torch's too) sees its own pairs: the test set's
    # average loss, not one batch's, is compared
    "examples-siamese_network": Run("examples", "siamese_network/main.py", ["--epochs", "1", "--log-interval", "2"],
                                    r"Test set: Average loss: ([\d.]+)", rel=0.5, data=mnist,
                                    cwd="siamese_network", torchvision=True),
    # 20 epochs of full-batch steps amplify rounding: torch's own runs differ by ~4e-4 from one to the next
    "examples-mnist_forward_forward": Run(
        "examples", "mnist_forward_forward/main.py", ["--epochs", "20", "--train_size", "512", "--test_size", "256"],
        r"Loss:\s+([\d.]+)", rel=1e-2, data=lambda work: mnist(work, root="."), cwd="mnist_forward_forward", torchvision=True),
    # unseeded: each run (torch's too) fits a polynomial of its own until the loss falls under 1e-3
    "examples-regression": Run("examples", "regression/main.py", [], r"Loss: ([\d.]+) after", rel=0.9,
                               cwd="regression"),
    "examples-word_language_model": Run(
        "examples", "word_language_model/main.py",
        ["--model", "Transformer", "--epochs", "2", "--emsize", "32", "--nhid", "32", "--nlayers", "1", "--bptt", "16",
         "--batch_size", "8", "--lr", "5", "--log-interval", "20"],
        r"End of training \| test loss\s+([\d.]+)", data=wikitext, cwd="word_language_model",
        then=[("word_language_model/generate.py", ["--words", "30"])]),
}


def _env():
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", PYTHONHASHSEED="0")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _run(lib, run, base):
    """Run the program (and the scripts that follow it) under one library; returns [(what, returncode, stdout,
    stderr)], stopping at the first failure."""
    copy = os.path.join(base, lib, run.folder)
    shutil.copytree(os.path.join(PROGRAMS, run.folder), copy)
    work = os.path.join(copy, run.cwd)
    if run.data:
        run.data(work)
    env = _env()
    env["PYTHONPATH"] = copy + os.pathsep + env["PYTHONPATH"]   # minGPT imports its package from the repo root
    results = []
    for script, args in [*run.before, (run.script, run.args), *run.then]:
        prefix = ["-m", "lantern.compat"] if lib == "lantern" else [TORCHVISION_ORACLE] if run.torchvision else []
        done = subprocess.run([sys.executable, *prefix, os.path.join(copy, script), *args], cwd=work, env=env,
                              capture_output=True, text=True, timeout=900)
        results.append((f"{script} on {lib}", done.returncode, done.stdout, done.stderr))
        if done.returncode:
            break
    return results


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """Every run under both libraries, a few at a time (each is its own process)."""
    base = str(tmp_path_factory.mktemp("programs"))
    jobs = [(name, lib) for name in RUNS for lib in ("torch", "lantern")]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        futures = {job: pool.submit(_run, job[1], RUNS[job[0]], os.path.join(base, job[0])) for job in jobs}
        return {job: future.result() for job, future in futures.items()}


def _last_loss(out, pattern, what):
    """The last loss printed, and half a unit of its last digit (how far printing may have rounded it)."""
    found = re.findall(pattern, out)
    assert found, f"{what} printed no line matching {pattern!r}:\n{out[-3000:]}"
    decimals = len(found[-1].partition(".")[2])
    return float(found[-1]), 0.5 * 10.0 ** -decimals


@pytest.mark.parametrize("name", sorted(RUNS))
def test_program_trains_like_torch(name, finished):
    run = RUNS[name]
    losses = {}
    for lib in ("torch", "lantern"):
        for what, code, out, err in finished[name, lib]:
            assert code == 0, f"{what} exited {code}\n--- stdout\n{out[-3000:]}\n--- stderr\n{err[-6000:]}"
        main_output = finished[name, lib][len(run.before)][2]
        losses[lib], rounding = _last_loss(main_output, run.loss, f"{name} on {lib}")
    assert abs(losses["lantern"] - losses["torch"]) <= run.rel * losses["torch"] + 2 * rounding, losses
