"""Devices from outside lantern (PyTorch's PrivateUse1 path) and the openreg example device.

The naming API (rename_privateuse1_backend, generate_methods_for_privateuse1_backend, _get_custom_mod_func,
_register_device_module) is compared with torch's with torch's PrivateUse1 device renamed "openreg" too. That
rename is for the life of a process and changes torch beyond names (torch.accelerator then looks for the device's
hooks, and crashes without them), so torch's side runs in a subprocess of its own: each case is an expression over
`lib`, evaluated with lib = torch there and lib = lantern here (torch has no kernels for the device, so names,
methods and errors compare). What runs on the device is compared with lantern on the CPU, which the other test
files compare with torch; tests/device_generic.py runs whole oracle test files on the device besides.
"""
import io
import json
import pathlib
import subprocess
import sys
import types

import numpy as np
import pytest
import torch

import lantern
from lantern.backends import privateuse1
from lantern.core.allocator import cpu_allocator
from lantern.ops import dispatcher, registry
from lantern.testing import _openreg
from lantern.utils import backend_registration

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "bench"))
from workloads import training  # noqa: E402  (the benchmark's MLP and CNN training steps)

NAME = _openreg.NAME
GENERATED = (f"[hasattr(owner, attr) for owner in (lib.Tensor, lib.nn.Module, lib.nn.utils.rnn.PackedSequence, "
             f"lib.UntypedStorage, lib.TypedStorage) for attr in ({NAME!r}, 'is_{NAME}')]")
CASES = [f"lib.device({text!r})" for text in (NAME, f"{NAME}:1", "privateuseone", "privateuseone:0", "bar")] + \
    [f"lib.utils.rename_privateuse1_backend({name!r})" for name in (NAME, "cuda", "other")] + \
    ["lib.utils.backend_registration._get_custom_mod_func('no_such_function')",
     "lib.utils.backend_registration._get_custom_mod_func(3)",
     GENERATED, f"lib.ones(2).is_{NAME}", f"lib.UntypedStorage(4).is_{NAME}",
     f"lib.ones(2).{NAME}('cpu')", f"lib.ones(2).{NAME}('cuda:0')"]
# torch's side: its PrivateUse1 device renamed and given its methods, as _openreg.setup() does lantern's
TORCH_SIDE = f"""
import json, sys, torch
lib = torch
lib.utils.rename_privateuse1_backend({NAME!r})
lib.utils.generate_methods_for_privateuse1_backend(for_storage=True)
def outcome(expression):
    try:
        return "ok", repr(eval(expression)).replace("torch.", "")
    except Exception as e:
        return type(e).__name__, str(e).replace("torch.", "")
print(json.dumps({{case: outcome(case) for case in json.loads(sys.argv[1])}}))
"""


@pytest.fixture(scope="module", autouse=True)
def openreg():
    _openreg.setup()


@pytest.fixture(scope="module")
def torch_outcomes():
    """{case: torch's outcome}, from a process of torch's own."""
    done = subprocess.run([sys.executable, "-c", TORCH_SIDE, json.dumps(CASES)], capture_output=True, text=True,
                          check=True)
    return {case: tuple(result) for case, result in json.loads(done.stdout).items()}


def outcome(fn):
    """(exception class name, message) or ('ok', repr of the result)."""
    try:
        return "ok", repr(fn()).replace("torch.", "").replace("lantern.", "")
    except Exception as e:
        return type(e).__name__, str(e).replace("torch.", "").replace("lantern.", "")


@pytest.mark.parametrize("case", CASES)
def test_naming_api_as_torch(case, torch_outcomes):
    assert outcome(lambda: eval(case, {"lib": lantern})) == torch_outcomes[case]


@pytest.mark.parametrize("device_type", ["cuda", "nonsense"])
def test_register_device_module_refuses_as_torch(device_type):
    module = types.ModuleType("m")
    expected = outcome(lambda: torch._register_device_module(device_type, module))
    got = outcome(lambda: lantern._register_device_module(device_type, module))
    assert got[0] == expected[0] and got[1].split(" with ")[0] == expected[1].split(" with ")[0]


def test_generating_the_methods_again_refuses():
    with pytest.raises(RuntimeError, match=f"has already been registered with is_{NAME}"):
        lantern.utils.generate_methods_for_privateuse1_backend()


def test_the_device_module_is_registered_once_and_importable():
    assert lantern.get_device_module(NAME) is getattr(lantern, NAME)
    with pytest.raises(RuntimeError, match=f"The runtime module of '{NAME}' has already been registered"):
        lantern._register_device_module(NAME, types.ModuleType("again"))
    assert backend_registration._get_custom_mod_func("is_available")() is True


def test_modules_packed_sequences_and_storages_move_with_the_generated_methods():
    model = lantern.nn.Linear(2, 2).openreg()
    assert all(p.is_openreg for p in model.parameters()) and model(lantern.ones(1, 2, device=NAME)).is_openreg
    packed = lantern.nn.utils.rnn.pack_sequence([lantern.ones(3, 2), lantern.ones(2, 2)]).openreg()
    assert packed.is_openreg and packed.data.device == lantern.device(NAME)
    storage = lantern.tensor([1.0, 2.0]).untyped_storage().openreg()
    assert storage.is_openreg and storage.nbytes() == 8 and storage.openreg() is storage


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64",
                                   "complex64"])
def test_tensors_move_to_the_device_and_back_keeping_values_and_strides(dtype):
    x = lantern.arange(24).reshape(4, 6).to(getattr(lantern, dtype)).t()
    on_device = x.openreg()
    assert on_device.device == lantern.device(NAME) and on_device.is_openreg
    assert on_device.stride() == x.to(memory_format=lantern.preserve_format, copy=True).stride()
    back = on_device.cpu()
    assert back.device.type == "cpu" and back.dtype is x.dtype and back.stride() == on_device.stride()
    assert lantern.equal(back, x)
    assert on_device.to(NAME) is on_device


def test_copy_between_devices_writes_through_views():
    x = lantern.zeros(3, 4, device=NAME)
    x[:, 1].copy_(lantern.tensor([1.0, 2.0, 3.0]))
    host = lantern.zeros(3)
    host.copy_(x[:, 1])
    assert host.tolist() == [1.0, 2.0, 3.0] and x.sum().item() == 6.0


def test_device_memory_comes_from_the_device_allocator():
    stats, cpu_allocs = _openreg.backend.allocator.stats, cpu_allocator.stats.num_allocs
    before = stats.allocated_bytes
    x = lantern.empty(1000, dtype=lantern.float64, device=NAME)
    assert stats.allocated_bytes == before + 8000 and x.untyped_storage().nbytes() == 8000
    assert cpu_allocator.stats.num_allocs == cpu_allocs
    assert x.untyped_storage().device == lantern.device(NAME) and x.data_ptr() % 4096 == 0
    assert getattr(lantern, NAME).memory_allocated() == stats.allocated_bytes
    del x
    assert stats.allocated_bytes == before
    storage = lantern.UntypedStorage(16, device=NAME)
    assert storage.is_openreg and storage.nbytes() == 16


def test_device_tensors_save_and_load_onto_the_device_or_a_map_location():
    buffer = io.BytesIO()
    lantern.save({"x": lantern.arange(4.0, device=NAME)}, buffer)
    buffer.seek(0)
    loaded = lantern.load(buffer)["x"]
    assert loaded.device == lantern.device(NAME) and loaded.tolist() == [0.0, 1.0, 2.0, 3.0]
    buffer.seek(0)
    assert lantern.load(buffer, map_location="cpu")["x"].device.type == "cpu"


def test_host_code_sees_copies_only():
    x = lantern.ones(3, device=NAME)
    with pytest.raises(TypeError, match=f"can't convert {NAME} device type tensor to numpy"):
        x.numpy()
    assert x.tolist() == [1.0, 1.0, 1.0] and x.numpy(force=True).tolist() == [1.0, 1.0, 1.0]
    assert "device='openreg'" in repr(x)


def test_ops_dispatch_to_the_private_use_key_and_refuse_mixed_devices():
    x = lantern.ones(2, device=NAME)
    assert dispatcher.dispatch_keys(registry.get("add"), (x, x, 1)) == [lantern.DispatchKey.PrivateUse1]
    assert (x + lantern.tensor(1.0)).device == x.device  # a 0-dim CPU tensor joins any device, as in torch
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found at least two "
                                           f"devices, cpu and {NAME}!"):
        x + lantern.ones(2)


def test_a_registered_kernel_replaces_the_shared_one_on_the_device_only():
    op = registry.get("neg")
    shared = op.kernels[lantern.DispatchKey.PrivateUse1]
    privateuse1.register_kernel("neg", lambda op, args: shared(op, args).mul_(10))
    try:
        with lantern.reference_mode():  # the shared kernels are installed again; the registered one stays
            assert lantern.ones(2, device=NAME).neg().tolist() == [-10.0, -10.0]
        assert lantern.ones(2).neg().tolist() == [-1.0, -1.0]
    finally:
        privateuse1._own_kernels.discard(op)
        op.kernels[lantern.DispatchKey.PrivateUse1] = shared


def test_the_cpu_fallback_runs_cpu_kernels_on_copies_and_writes_back():
    x = lantern.tensor([[1.0, -2.0], [3.0, 4.0]], device=NAME)
    y = privateuse1.cpu_fallback(registry.get("mul"), (x, x))
    assert y.device == x.device and y.tolist() == [[1.0, 4.0], [9.0, 16.0]]
    version = x._version
    same = privateuse1.cpu_fallback(registry.get("abs_"), (x,))
    assert same is x and x.tolist() == [[1.0, 2.0], [3.0, 4.0]] and x._version == version + 1
    out = lantern.empty(0, device=NAME)
    privateuse1.cpu_fallback(registry.get("add.out"), (x, x, 1, out))
    assert out.device == x.device and out.shape == (2, 2) and out.tolist() == [[2.0, 4.0], [6.0, 8.0]]
    values, indices = privateuse1.cpu_fallback(registry.get("max.dim"), (x, 1, False))
    assert values.device == indices.device == x.device and indices.tolist() == [1, 1]


def test_ops_without_a_device_kernel_take_the_fallback():
    x = lantern.tensor([1.0, 2.0], device=NAME)
    assert registry.get("dequantize").kernels[lantern.DispatchKey.PrivateUse1] is privateuse1.cpu_fallback
    assert lantern.dequantize(x).device == x.device


def test_custom_ops_register_kernels_for_the_device():
    @lantern.library.custom_op("privateuse1_test::twice", mutates_args=(), device_types=NAME)
    def twice(x: lantern.Tensor) -> lantern.Tensor:
        return x * 2
    assert twice(lantern.ones(2, device=NAME)).tolist() == [2.0, 2.0]
    with pytest.raises(NotImplementedError, match="from the 'CPU' backend"):
        twice(lantern.ones(2))
    lib = lantern.library.Library("privateuse1_test_lib", "DEF")
    lib.define("thrice(Tensor x) -> Tensor")
    lib.impl("thrice", lambda x: x * 3, "PrivateUse1")
    assert lantern.ops.privateuse1_test_lib.thrice(lantern.ones(1, device=NAME)).tolist() == [3.0]
    twice._destroy()


def _train(device, model_fn, inputs, targets, steps=3):
    lantern.manual_seed(0)
    model = model_fn().to(device)
    optimizer = lantern.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = lantern.tensor(inputs, device=device), lantern.tensor(targets, device=device)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = lantern.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert all(p.device.type == device and p.grad.device.type == device for p in model.parameters())
    return losses, [p.detach().cpu() for p in model.parameters()]


def _mlp():
    nn = lantern.nn
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))


def _cnn():
    nn = lantern.nn
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(4 * 4 * 4, 3))


@pytest.mark.parametrize("model_fn, shape", [(_mlp, (6, 8)), (_cnn, (6, 1, 8, 8))], ids=["mlp", "cnn"])
def test_a_model_trains_on_the_device_as_on_the_cpu(model_fn, shape):
    rng = np.random.default_rng(0)
    inputs, targets = rng.standard_normal(shape).astype(np.float32), rng.integers(0, 3, 6)
    cpu_losses, cpu_params = _train("cpu", model_fn, inputs, targets)
    losses, params = _train(NAME, model_fn, inputs, targets)
    np.testing.assert_allclose(losses, cpu_losses, rtol=1e-6)
    assert losses[-1] < losses[0]
    for p, q in zip(params, cpu_params):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("workload", ["mlp_train_step", "cnn_train_step"])
def test_the_benchmarks_mlp_and_cnn_train_on_the_device_as_on_the_cpu(workload):
    """bench/workloads/training.py's models, built with the device as the default device (parameters, data and
    optimizer state all on it), take two SGD/Adam steps as they do on the CPU."""
    setup = next(w.setup for w in training.WORKLOADS if w.name == workload)

    def steps(device):
        with lantern.device(device):
            env = setup(lantern)
        losses = []
        for _ in range(2):
            env["opt"].zero_grad()
            loss = env["loss_fn"](env["model"](env["x"]), env["y"])
            loss.backward()
            env["opt"].step()
            losses.append(loss.item())
        # Adam's `step` count stays a CPU tensor, as torch's does outside capturable/fused mode
        state = [(k, t.device.type) for s in env["opt"].state.values() for k, t in s.items()]
        assert state and all(kind == ("cpu" if k == "step" else device) for k, kind in state)
        assert all(p.device.type == device for p in env["model"].parameters())
        return losses, [p.detach().cpu() for p in env["model"].parameters()]

    (cpu_losses, cpu_params), (losses, params) = steps("cpu"), steps(NAME)
    np.testing.assert_allclose(losses, cpu_losses, rtol=1e-6)
    for p, q in zip(params, cpu_params):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6)


def test_a_device_registered_before_its_rename_answers_to_the_new_name():
    """PyTorch's order (the extension registers its kernels, then Python renames): in a process of its own, since a
    rename lasts as long as the process."""
    script = """
import lantern
from lantern.backends import privateuse1
from lantern.testing._openreg import OpenRegBackend
backend = OpenRegBackend()
privateuse1.register_privateuse1_backend(backend)
before = lantern.ones(2, device="privateuseone").device
lantern.utils.rename_privateuse1_backend("laterdev")
after = lantern.ones(2, device="laterdev")
print(before, after.device, backend.device, after.untyped_storage().device, (after + 1).tolist())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          cwd=pathlib.Path(lantern.__file__).resolve().parent.parent)
    assert done.stdout.split() == ["privateuseone", "laterdev", "laterdev", "laterdev", "[2.0,", "2.0]"]
