"""torch.utils.benchmark as the torch.func tutorials use it: per-example gradients of a small model, by a Python
loop and by vmap(grad(...)), timed with Timer(stmt, globals=globals()).timeit(n) and blocked_autorange, printed
as Measurements and as a Compare table. After the line DETERMINISTIC the same calls run on a fake clock, so that
part of the output is the same text under torch and under `python -m lantern.compat`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap
from torch.utils.benchmark import Compare, Timer

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
data, targets = torch.randn(16, 6), torch.randint(3, (16,))
params = {k: v.detach() for k, v in model.named_parameters()}


def loss_of(p, x, y):
    return F.cross_entropy(functional_call(model, p, (x.unsqueeze(0),)), y.unsqueeze(0))


def loop_grads(x, y):
    return [grad(loss_of)(params, x[i], y[i]) for i in range(x.shape[0])]


vmap_grads = vmap(grad(loss_of), in_dims=(None, 0, 0))

without_vmap = Timer(stmt="loop_grads(data, targets)", globals=globals())
with_vmap = Timer(stmt="vmap_grads(params, data, targets)", globals=globals())
no_vmap_timing, with_vmap_timing = without_vmap.timeit(3), with_vmap.timeit(3)
print(f"Per-sample-grads without vmap {no_vmap_timing}")
print(f"Per-sample-grads with vmap {with_vmap_timing}")
print(f"vmap / loop: {with_vmap_timing.times[0] / no_vmap_timing.times[0]:.2f}")

results = [Timer(stmt=stmt, globals=globals(), label="per-sample grads", sub_label=name,
                 description="16 examples").blocked_autorange(min_run_time=0.05)
           for name, stmt in (("loop", "loop_grads(data, targets)"), ("vmap", "vmap_grads(params, data, targets)"))]
Compare(results).print()


class Clock:
    """Each timer call costs 50 ns; each `clock.tick(k)` k microseconds."""

    def __init__(self):
        self.now = 0.0

    def tick(self, k):
        self.now += k * 1e-6

    def __call__(self):
        self.now += 5e-8
        return self.now


print("DETERMINISTIC")
clock = Clock()
fake = []
for threads in (1, 2):
    for name, cost in (("loop", 40), ("vmap", 3)):
        for size in (16, 64):
            timer = Timer(stmt=f"clock.tick({cost * size / 16})", globals={"clock": clock}, timer=clock,
                          label="per-sample grads", sub_label=name, description=f"{size} examples",
                          num_threads=threads)
            fake.append(timer.blocked_autorange(min_run_time=0.01))
print(fake[0])
print(Timer("clock.tick(2.5)", globals={"clock": clock}, timer=clock).timeit(100))
compare = Compare(fake)
compare.trim_significant_figures()
compare.print()
