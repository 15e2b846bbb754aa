"""cuda-as-cpu mode (lantern.core.cuda_as_cpu): a program written for a GPU runs on the CPU.

Off, lantern answers every CUDA request as PyTorch's CPU build does (compared with torch here). On, the CUDA devices a
program names are the CPU, torch.cuda's device selection accepts them, pinned memory is ordinary memory, and what
is keyed by a device type string (autocast, GradScaler) still behaves as on the CPU build. The end-to-end test runs
a GPU-written training loop (nanoGPT's pattern) under the mode and compares it with torch running the loop on 'cpu'.
"""
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import lantern
from lantern.core import cuda_as_cpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CUDA_SPELLINGS = [("cuda",), ("cuda:0",), ("cuda:3",), ("cuda", 2)]
OTHER_SPELLINGS = [("cpu",), ("meta",), ("xpu:1",), ("mps",)]


@pytest.fixture
def mode():
    with cuda_as_cpu.switched_on():
        yield


def _outcome(fn):
    """What a call gives: ('ok', value) or ('raises', exception class name, message)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ("ok", fn())
        except Exception as e:  # the class and message are what is compared
            return ("raises", type(e).__name__, str(e).split(" (")[0])


# ---- off: PyTorch's CPU build ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda t: t.cuda.set_device("cuda:1"), lambda t: t.cuda.set_device(1), lambda t: t.cuda.set_device(-2),
    lambda t: t.cuda.set_device("cpu"), lambda t: t.cuda.set_device(None), lambda t: t.cuda.set_device("cuda"),
    lambda t: t.cuda.set_device(t.device("cuda")), lambda t: t.cuda.set_device(1.5),
    lambda t: t.cuda.current_device(), lambda t: t.cuda.synchronize(), lambda t: t.cuda.device(1).__enter__(),
    lambda t: t.cuda.device(-1).__enter__(), lambda t: t.cuda.device("cpu"),
    lambda t: t.ones(2).pin_memory(), lambda t: t.empty(2, pin_memory=True), lambda t: t.ones(2).cuda(),
    lambda t: str(t.device("cuda:1")), lambda t: t.cuda.is_available(),
], ids=lambda call: None)
def test_off_answers_as_pytorchs_cpu_build(call):
    assert not cuda_as_cpu.enabled()
    assert _outcome(lambda: call(lantern)) == _outcome(lambda: call(torch))


# ---- on: CUDA devices are the CPU ------------------------------------------------------------------------------------

@pytest.mark.parametrize("spelling", CUDA_SPELLINGS, ids=str)
def test_cuda_device_names_are_the_cpu(mode, spelling):
    assert lantern.device(*spelling) == lantern.device("cpu")
    assert lantern.device(type=spelling[0]) == lantern.device("cpu")


@pytest.mark.parametrize("spelling", OTHER_SPELLINGS, ids=str)
def test_other_device_names_are_unchanged(mode, spelling):
    assert str(lantern.device(*spelling)) == str(torch.device(*spelling))


@pytest.mark.parametrize("place", [
    lambda t, x, cuda: x.to(cuda(1), non_blocking=True), lambda t, x, cuda: x.to(t.device(cuda(0))),
    lambda t, x, cuda: t.ones(3, device=cuda(None)) * x, lambda t, x, cuda: t.arange(3.0, device=cuda(0)) + x,
    lambda t, x, cuda: t.zeros_like(x, device=cuda(2)), lambda t, x, cuda: t.full_like(x, 2, device=cuda(0)) - x,
], ids=lambda f: None)
def test_tensors_placed_on_cuda_are_on_the_cpu_with_cpu_values(mode, place):
    """The placement with CUDA names on lantern gives what torch gives with 'cpu' in their place."""
    data = np.array([1.5, -2.0, 4.0], dtype=np.float32)
    got = place(lantern, lantern.tensor(data), lambda index: "cuda" if index is None else f"cuda:{index}")
    expected = place(torch, torch.tensor(data), lambda index: "cpu")
    assert got.device == lantern.device("cpu") and not got.is_cuda
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    assert str(got.dtype) == str(expected.dtype).replace("torch", "lantern")


@pytest.mark.parametrize("index", [None, 0, 1, "cuda:1"])
def test_tensor_cuda_is_a_cpu_tensor(mode, index):
    x = lantern.arange(4.0)
    moved = x.cuda() if index is None else x.cuda(index)
    assert moved is x  # already where it is asked to go, as torch's x.cpu() on a CPU tensor


def test_module_cuda_and_to_cuda_keep_parameters_on_the_cpu(mode):
    model = lantern.nn.Linear(3, 2)
    before = [p.detach().clone() for p in model.parameters()]
    assert model.cuda() is model and model.to("cuda:1") is model
    for p, old in zip(model.parameters(), before):
        assert p.device == lantern.device("cpu")
        assert lantern.equal(p, old)


def test_set_device_current_device_and_synchronize(mode):
    assert lantern.cuda.current_device() == 0
    lantern.cuda.set_device("cuda:3")
    assert lantern.cuda.current_device() == 3
    lantern.cuda.set_device(lantern.device("cuda:1"))  # made in the mode: the CPU, so the selection stays
    assert lantern.cuda.current_device() == 3
    lantern.cuda.set_device(1)
    lantern.cuda.set_device(-1)  # a negative index selects nothing, as in torch
    assert lantern.cuda.current_device() == 1
    assert lantern.cuda.synchronize() is None and lantern.cuda.synchronize("cuda:1") is None
    with lantern.cuda.device(2), lantern.cuda.device("cuda:0"), lantern.cuda.device("cuda"):
        assert lantern.cuda.current_device() == 1
    with pytest.raises(ValueError, match="Expected a cuda device, but got: cpu"):
        lantern.cuda.set_device("cpu")
    with pytest.raises(ValueError, match="specified index or an integer"):
        lantern.cuda.set_device(None)


def test_the_mode_does_not_claim_a_gpu(mode):
    assert (lantern.cuda.is_available(), lantern.cuda.device_count(), lantern.cuda.is_bf16_supported()) == \
        (torch.cuda.is_available(), torch.cuda.device_count(), False)


def test_pin_memory_is_an_ordinary_copy(mode):
    x = lantern.arange(6.0).reshape(2, 3).t()
    pinned = x.pin_memory()
    assert lantern.equal(pinned, x) and pinned.stride() == x.stride()
    assert pinned.data_ptr() != x.data_ptr() and not pinned.is_pinned()
    assert lantern.empty(2, 3, pin_memory=True).shape == (2, 3)
    assert lantern.zeros(2, pin_memory=True).tolist() == [0.0, 0.0]


def test_autocast_on_cuda_is_disabled_with_torchs_warning(mode):
    def run(t):
        x = t.ones(2, 2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with t.amp.autocast(device_type="cuda", dtype=t.float16):
                dtype = str((x @ x).dtype).split(".")[-1]
            with t.autocast("cuda"):
                dtype2 = str((x @ x).dtype).split(".")[-1]
        return dtype, dtype2, [(w.category, str(w.message)) for w in caught]
    assert run(lantern) == run(torch)


@pytest.mark.parametrize("make", [
    lambda t: t.cuda.amp.GradScaler(enabled=True), lambda t: t.amp.GradScaler("cuda"),
    lambda t: t.amp.GradScaler(), lambda t: t.amp.GradScaler("cpu"),
], ids=["torch.cuda.amp", "amp-cuda", "amp-default", "amp-cpu"])
def test_grad_scaler_is_what_the_cpu_build_makes(mode, make):
    def run(t):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scaler = make(t)
        return scaler.is_enabled(), [(w.category, str(w.message)) for w in caught]
    assert run(lantern) == run(torch)


def test_load_with_a_cuda_map_location(mode, tmp_path):
    path = tmp_path / "ckpt.pt"
    lantern.save({"w": lantern.arange(3.0)}, path)
    loaded = lantern.load(path, map_location="cuda:1")
    assert loaded["w"].device == lantern.device("cpu") and loaded["w"].tolist() == [0.0, 1.0, 2.0]


def test_switching_off_restores_cuda_devices_and_the_environment():
    outer = os.environ.get(cuda_as_cpu.ENVIRONMENT_VARIABLE)
    with cuda_as_cpu.switched_on():
        assert os.environ[cuda_as_cpu.ENVIRONMENT_VARIABLE] == "1"
        lantern.cuda.set_device(2)
    assert os.environ.get(cuda_as_cpu.ENVIRONMENT_VARIABLE) == outer
    assert lantern.device("cuda:1").type == "cuda"
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        lantern.cuda.current_device()


# ---- switching it on for a program -----------------------------------------------------------------------------------

CHILD_PROBE = """
import multiprocessing as mp, sys, torch

def child(queue):
    queue.put(str(torch.ones(1, device='cuda:1').device))

if __name__ == '__main__':
    ctx = mp.get_context('spawn')
    queue = ctx.Queue()
    worker = ctx.Process(target=child, args=(queue,))
    worker.start()
    print(torch.zeros(1, device='cuda').device, queue.get(timeout=60), sys.argv[1:])
    worker.join(60)
"""


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra)
    env.pop(cuda_as_cpu.ENVIRONMENT_VARIABLE, None)
    env.update(extra)
    return env


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_a_program_and_the_processes_it_spawns_run_in_the_mode(tmp_path, how):
    script = tmp_path / "probe.py"
    script.write_text(CHILD_PROBE)
    flag = ["--cuda-as-cpu"] if how == "flag" else []
    extra = {} if how == "flag" else {cuda_as_cpu.ENVIRONMENT_VARIABLE: "1"}
    done = subprocess.run([sys.executable, "-m", "lantern.compat", *flag, str(script), "--x", "1"],
                          env=_env(**extra), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "cpu cpu ['--x', '1']\n"


def test_without_the_mode_the_program_fails_as_on_pytorchs_cpu_build(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text("import torch\ntorch.cuda.set_device('cuda:0')\n")
    done = subprocess.run([sys.executable, "-m", "lantern.compat", str(script)], env=_env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1 and "AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'" in \
        done.stderr


# ---- a GPU-written training loop, end to end -------------------------------------------------------------------------

GPU_PROGRAM = """
import sys
from contextlib import nullcontext
import torch

device = sys.argv[1]                      # 'cuda:0' as a GPU program hard-codes it, or 'cpu'
if device.startswith('cuda'):
    torch.cuda.set_device(device)
device_type = 'cuda' if 'cuda' in device else 'cpu'
dtype = 'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16'
ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type, dtype=torch.float16)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, fused=device_type == 'cuda')
scaler = torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))
for step in range(5):
    x, y = torch.randn(32, 8), torch.randint(0, 4, (32,))
    if device_type == 'cuda':
        x, y = x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
    else:
        x, y = x.to(device), y.to(device)
    with ctx:
        loss = torch.nn.functional.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    if device_type == 'cuda':
        torch.cuda.synchronize()
    print(f"{loss.item():.6f}")
"""


def test_gpu_written_training_loop_matches_torch_on_the_cpu(tmp_path):
    """nanoGPT's pattern (set_device, autocast('cuda'), GradScaler, fused AdamW, pin_memory + non_blocking) run on
    lantern with 'cuda:0' under the mode gives the losses torch prints running the same loop with 'cpu'."""
    script = tmp_path / "gpu_program.py"
    script.write_text(GPU_PROGRAM)
    lantern_run = subprocess.run([sys.executable, "-m", "lantern.compat", "--cuda-as-cpu", str(script), "cuda:0"],
                                 env=_env(PYTHONWARNINGS="ignore"), capture_output=True, text=True, timeout=120)
    torch_run = subprocess.run([sys.executable, str(script), "cpu"], env=_env(PYTHONWARNINGS="ignore"),
                               capture_output=True, text=True, timeout=120)
    assert lantern_run.returncode == 0, lantern_run.stderr
    assert torch_run.returncode == 0, torch_run.stderr
    np.testing.assert_allclose([float(v) for v in lantern_run.stdout.split()],
                               [float(v) for v in torch_run.stdout.split()], rtol=1e-5)


# ---- DistributedDataParallel(device_ids=[local_rank]), as nanoGPT builds it ------------------------------------------

@pytest.fixture
def world_of_one():
    import lantern.distributed as dist
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29500", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


@pytest.mark.parametrize("device_ids", [[0], ["cuda:0"]], ids=str)
def test_ddp_device_ids_name_the_cpu_in_the_mode(world_of_one, device_ids):
    with cuda_as_cpu.switched_on():
        model = lantern.nn.parallel.DistributedDataParallel(lantern.nn.Linear(2, 1).to("cuda:0"),
                                                            device_ids=device_ids)
        assert model.device_ids is None and model.output_device is None
        model(lantern.ones(3, 2).to("cuda:0")).sum().backward()
        assert model.module.weight.grad.tolist() == [[3.0, 3.0]]


def test_ddp_device_ids_with_a_cpu_module_off_the_mode_raise_torchs_error(world_of_one):
    with pytest.raises(ValueError, match="device_ids and output_device arguments only work with single-device/"
                                         r"multiple-device GPU modules or CPU modules, but got device_ids \[0\]"):
        lantern.nn.parallel.DistributedDataParallel(lantern.nn.Linear(2, 1), device_ids=[0])


RANK_PROBE = """
import os, torch
local_rank = int(os.environ['LOCAL_RANK'])
torch.cuda.set_device(f'cuda:{local_rank}')
x = torch.ones(2).pin_memory().to(f'cuda:{local_rank}', non_blocking=True)
print(f"rank {os.environ['RANK']}: {x.device} {torch.cuda.current_device()}", flush=True)
"""


def test_the_launchers_flag_puts_every_rank_in_the_mode(tmp_path):
    script = tmp_path / "rank.py"
    script.write_text(RANK_PROBE)
    done = subprocess.run([sys.executable, "-m", "lantern.distributed.run", "--nproc-per-node", "2", "--cuda-as-cpu",
                           str(script)], env=_env(OMP_NUM_THREADS="1"), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # the launcher forwards both ranks' output into one stream, where one rank's line can land inside the other's
    assert sorted(re.findall(r"rank \d: \w+ \d", done.stdout)) == ["rank 0: cpu 0", "rank 1: cpu 1"]
