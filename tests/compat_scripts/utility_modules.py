"""An unmodified torch program over torch.types, nn.utils.prune, quasirandom, hub, utils.model_zoo, utils.dlpack
and utils.collect_env; every line it prints must be the same under torch and under `python -m lantern.compat`."""
import os
import pathlib
import sys
import tempfile

import numpy as np
import torch
import torch.nn.utils.prune as prune
from torch.quasirandom import SobolEngine
from torch.types import Device, Number
from torch.utils import collect_env, model_zoo
from torch.utils.dlpack import from_dlpack, to_dlpack


def pruned_net(device: Device = "cpu", scale: Number = 1.0):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(16, 3))
    prune.l1_unstructured(net[0], "weight", amount=0.3)
    prune.ln_structured(net[0], "weight", amount=1, n=2, dim=0)
    prune.random_unstructured(net[3], "weight", amount=10)
    prune.global_unstructured([(net[0], "bias"), (net[3], "bias")], prune.L1Unstructured, amount=2)
    out = net(torch.ones(1, 2, 4, 4, device=device) * scale)
    prune.remove(net[3], "weight")
    return net, out


net, out = pruned_net()
print("state", sorted(net.state_dict()), prune.is_pruned(net))
print("masks", net[0].weight_mask.sum().item(), (net[3].weight == 0).sum().item(), out.detach().numpy().round(4))
print("sobol", SobolEngine(3, scramble=True, seed=1).draw(4, dtype=torch.float64).numpy().tolist())

folder = tempfile.mkdtemp()
torch.save(net.state_dict(), os.path.join(folder, "net-0000.pt"))
torch.hub.set_dir(os.path.join(folder, "hub"))
sys.stdout.write("hub " + os.path.relpath(torch.hub.get_dir(), folder) + "\n")
state = model_zoo.load_url(pathlib.Path(folder, "net-0000.pt").as_uri(), progress=False, file_name="net.pt")
print("loaded", sorted(state), os.listdir(os.path.join(folder, "hub", "checkpoints")))
pathlib.Path(folder, "hubconf.py").write_text("import torch\ndef linear(n):\n    return torch.nn.Linear(n, 1)\n")
print("local", torch.hub.load(folder, "linear", 3, source="local"))

array = np.arange(6.0)
shared = from_dlpack(array)
shared[0] = 42
print("dlpack", array[0], from_dlpack(to_dlpack(shared))[0].item(), np.from_dlpack(shared)[0])
print("env", collect_env.get_env_info()._fields[:3])
