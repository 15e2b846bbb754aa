"""Rank script: DistributedDataParallel across ranks against one process training on the concatenated batch.

Every rank builds the same data (seeded alike) and a plain copy of the model, the reference, which it trains on the
whole global batch; the DDP replica trains on the rank's slice of that batch. Averaged gradients make the two agree
to float tolerance after every step. Run by tests/test_ddp_multiprocess.py under mpiexec with 2 and 4 ranks."""
import copy

import numpy as np

import lantern
import lantern.nn as nn
from distributed_harness import Checks
from lantern.distributed.algorithms.ddp_comm_hooks import default_hooks

checks = Checks()
GLOBAL_BATCH = 8


def mlp():
    return nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 3))


class TinyTransformer(nn.Module):
    """Embedding, one encoder layer, a head: a small transformer language model."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(11, 16)
        self.encoder = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.head = nn.Linear(16, 11)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)))


class Branches(nn.Module):
    """`a` and the head always take part; `b` only when asked; `never` is never used."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.never, self.head = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 2)

    def forward(self, x, use_b):
        return self.head(self.a(x) + self.b(x) if use_b else self.a(x))


def mlp_batch(step):
    rng = np.random.default_rng(step)
    return lantern.tensor(rng.standard_normal((GLOBAL_BATCH, 6)).astype(np.float32)), \
        lantern.tensor(rng.standard_normal((GLOBAL_BATCH, 3)).astype(np.float32))


def mlp_loss(model, batch):
    x, y = batch
    return nn.functional.mse_loss(model(x), y)


def token_batch(step):
    rng = np.random.default_rng(100 + step)
    tokens = lantern.tensor(rng.integers(0, 11, size=(GLOBAL_BATCH, 6)))
    return tokens, tokens.roll(-1, dims=1)


def token_loss(model, batch):
    tokens, targets = batch
    return nn.functional.cross_entropy(model(tokens).reshape(-1, 11), targets.reshape(-1))


def local(batch, rank, size):
    """This rank's rows of the global batch."""
    n = GLOBAL_BATCH // size
    return tuple(t[rank * n:(rank + 1) * n] for t in batch)


def assert_same_parameters(model, reference, atol=2e-6):
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=atol, err_msg=name)


def train_against_reference(dist, rank, size, build, make_batch, loss_fn, optimizer, steps=4, **ddp_kwargs):
    """`steps` steps of DDP on local slices and of the reference on the global batch; parameters compared each
    step."""
    lantern.manual_seed(rank)     # different on every rank: DDP's construction broadcast must align them
    model = build()
    ddp = nn.parallel.DistributedDataParallel(model, **ddp_kwargs)
    reference = copy.deepcopy(model)
    opt, ref_opt = optimizer(ddp.parameters()), optimizer(reference.parameters())
    for step in range(steps):
        batch = make_batch(step)
        opt.zero_grad()
        ref_opt.zero_grad()
        loss_fn(ddp, local(batch, rank, size)).backward()
        loss_fn(reference, batch).backward()
        opt.step()
        ref_opt.step()
        assert_same_parameters(model, reference)
    return ddp


def sgd(params):
    return lantern.optim.SGD(params, lr=0.1, momentum=0.9)


def adam(params):
    return lantern.optim.Adam(params, lr=0.01)


@checks.check
def construction_broadcasts_rank_0s_parameters_and_buffers(dist, rank, size):
    lantern.manual_seed(rank)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    model[1].running_mean.fill_(float(rank))
    nn.parallel.DistributedDataParallel(model)
    state = lantern.cat([t.detach().reshape(-1).float() for t in model.state_dict().values()])
    everyone = [lantern.empty_like(state) for _ in range(size)]
    dist.all_gather(everyone, state)
    for other in everyone[1:]:
        assert lantern.equal(other, everyone[0])
    assert model[1].running_mean.tolist() == [0.0] * 4


@checks.check
def mlp_trains_as_one_process_on_the_whole_batch(dist, rank, size):
    train_against_reference(dist, rank, size, mlp, mlp_batch, mlp_loss, sgd)


@checks.check
def mlp_with_many_buckets_trains_as_one_process(dist, rank, size):
    ddp = train_against_reference(dist, rank, size, mlp, mlp_batch, mlp_loss, adam, bucket_cap_mb=0.0004)
    assert len(ddp.reducer.buckets) > 2 and ddp.reducer.has_rebuilt_buckets


@checks.check
def transformer_trains_as_one_process_on_the_whole_batch(dist, rank, size):
    ddp = train_against_reference(dist, rank, size, TinyTransformer, token_batch, token_loss, sgd,
                                  bucket_cap_mb=0.002)
    assert len(ddp.reducer.buckets) > 2


@checks.check
def gradient_as_bucket_view_trains_as_one_process(dist, rank, size):
    train_against_reference(dist, rank, size, mlp, mlp_batch, mlp_loss, sgd, gradient_as_bucket_view=True,
                            bucket_cap_mb=0.0004)


@checks.check
def static_graph_trains_as_one_process(dist, rank, size):
    train_against_reference(dist, rank, size, mlp, mlp_batch, mlp_loss, sgd, static_graph=True,
                            bucket_cap_mb=0.0004)


@checks.check
def communication_hooks_average_as_ddp_does(dist, rank, size):
    for hook, atol in [(default_hooks.allreduce_hook, 2e-6), (default_hooks.fp16_compress_hook, 2e-3)]:
        lantern.manual_seed(rank)
        model = mlp()
        ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.0004)
        ddp.register_comm_hook(None, hook)
        reference = copy.deepcopy(model)
        for step in range(2):
            ddp.zero_grad()
            reference.zero_grad()
            mlp_loss(ddp, local(mlp_batch(step), rank, size)).backward()
            mlp_loss(reference, mlp_batch(step)).backward()
            for p, q in zip(model.parameters(), reference.parameters()):
                np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-3, atol=atol)


@checks.check
def no_sync_accumulates_then_one_backward_averages_the_sum(dist, rank, size):
    lantern.manual_seed(0)
    model = mlp()
    reference = copy.deepcopy(model)
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.0004)
    micro_batches = [mlp_batch(step) for step in range(3)]
    with ddp.no_sync():
        for batch in micro_batches[:2]:
            mlp_loss(ddp, local(batch, rank, size)).backward()
    local_grads = [p.grad.clone() for p in model.parameters()]
    mlp_loss(ddp, local(micro_batches[2], rank, size)).backward()
    for batch in micro_batches:
        mlp_loss(reference, batch).backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=2e-6)
    if size > 1:   # inside no_sync the gradients were this rank's own
        assert any(not lantern.allclose(g, p.grad) for g, p in zip(local_grads, model.parameters()))


@checks.check
def find_unused_parameters_with_a_branch_only_rank_0_uses(dist, rank, size):
    lantern.manual_seed(0)
    model = Branches()
    ddp = nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
    x = lantern.ones(2, 4) * (rank + 1)
    ddp(x, use_b=rank == 0).sum().backward()
    assert model.never.weight.grad is None and model.never.bias.grad is None
    assert model.b.weight.grad is not None   # used on rank 0 only, averaged everywhere
    expected_b = lantern.ones(2, 4).t() @ lantern.ones(2, 2) @ model.head.weight
    np.testing.assert_allclose(model.b.weight.grad.numpy(), (expected_b.t() / size).detach().numpy(), rtol=1e-5)
    everyone = [lantern.empty_like(model.a.weight.grad) for _ in range(size)]
    dist.all_gather(everyone, model.a.weight.grad)
    assert all(lantern.equal(g, everyone[0]) for g in everyone)


class TwoOutputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        return self.a(x), self.b(x)


@checks.check
def an_output_only_rank_0_uses_gets_its_gradient_averaged(dist, rank, size):
    model = TwoOutputs()
    ddp = nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
    first, second = ddp(lantern.ones(2, 4))
    (first.sum() + (second.sum() if rank == 0 else 0)).backward()   # b's graph is reached, but only rank 0 uses it
    np.testing.assert_allclose(model.b.bias.grad.numpy(), [2.0 / size] * 4, rtol=1e-6)
    np.testing.assert_allclose(model.a.bias.grad.numpy(), [2.0] * 4, rtol=1e-6)


@checks.check
def buffers_follow_rank_0_before_each_forward(dist, rank, size):
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    ddp = nn.parallel.DistributedDataParallel(model)
    ddp.eval()
    model[1].running_mean.fill_(float(rank + 1))
    ddp(lantern.ones(2, 3))
    assert model[1].running_mean.tolist() == [1.0] * 4


@checks.check
def a_different_parameter_count_fails_at_construction_on_every_rank(dist, rank, size):
    model = nn.Sequential(*[nn.Linear(3, 3) for _ in range(1 + (rank == 1))])
    try:
        nn.parallel.DistributedDataParallel(model)
    except RuntimeError as error:
        assert str(error).startswith(f"DDP expects same model across all ranks, but Rank {rank} has "), error
    else:
        raise AssertionError("DDP accepted models with different parameter counts")


@checks.check
def a_different_shape_fails_at_construction_on_every_rank(dist, rank, size):
    model = nn.Linear(3, 4 + (rank == 1))
    try:
        nn.parallel.DistributedDataParallel(model)
    except RuntimeError as error:
        where = "this process with sizes [5, 3]" if rank == 1 else "process 1 with sizes [5, 3]"
        assert str(error) == (f"[{rank}]: params[0] in {where} appears not to match sizes of the same param in "
                              "process 0."), error
    else:
        raise AssertionError("DDP accepted models of different shapes")


@checks.check
def ddp_over_a_subgroup_averages_within_it(dist, rank, size):
    pairs = [dist.new_group([r, r + 1]) for r in range(0, size, 2)]
    group = pairs[rank // 2]
    lantern.manual_seed(rank)
    model = mlp()
    ddp = nn.parallel.DistributedDataParallel(model, process_group=group, bucket_cap_mb=0.0004)
    reference = copy.deepcopy(model)
    pair_batch = tuple(t + rank // 2 for t in mlp_batch(0))   # each pair trains on data of its own
    mlp_loss(ddp, local(pair_batch, rank % 2, 2)).backward()
    mlp_loss(reference, pair_batch).backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=2e-6)
    for pair in pairs:
        dist.destroy_process_group(pair)


@checks.check
def buckets_start_their_all_reduce_during_backward(dist, rank, size):
    model = mlp()
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.0004)
    mlp_loss(ddp, local(mlp_batch(0), rank, size)).backward()   # the buckets are rebuilt at the next forward
    with lantern.profiler.profile() as prof:
        mlp_loss(ddp, local(mlp_batch(1), rank, size)).backward()
    events = sorted(prof.events(), key=lambda e: e.time_range.start)
    launches = [e for e in events if e.name.startswith("reducer::mark_bucket_ready")]
    finalize = next(e for e in events if e.name == "reducer::finalize_backward")
    last_accumulate = max(e.time_range.end for e in events if e.name == "torch::autograd::AccumulateGrad")
    assert len(launches) == len(ddp.reducer.buckets) > 2
    assert launches[0].time_range.end < last_accumulate < finalize.time_range.start


if __name__ == "__main__":
    checks.run()
