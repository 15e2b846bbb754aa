"""DistributedSampler against torch's: every rank's indices and length, for generated cases of dataset size,
replica count, shuffle, seed, epoch and drop_last (padding included); its errors; and, under the launcher, the
replica count and rank it reads from the default process group."""
import itertools
import json
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.utils.data.distributed as torch_distributed

import lantern
import lantern.utils.data.distributed as lantern_distributed

SIZES = [0, 1, 2, 3, 5, 7, 10, 16, 33, 100]
REPLICAS = [1, 2, 3, 4, 7]


def shares(module, n, replicas, **options):
    """Each rank's (indices, len) of a sampler over range(n), for epochs 0, 1 and 5."""
    result = []
    for rank in range(replicas):
        sampler = module.DistributedSampler(range(n), num_replicas=replicas, rank=rank, **options)
        for epoch in (0, 1, 5):
            sampler.set_epoch(epoch)
            result.append((rank, epoch, list(sampler), len(sampler), sampler.total_size))
    return result


@pytest.mark.parametrize("n,replicas,shuffle,drop_last",
                         list(itertools.product(SIZES, REPLICAS, [False, True], [False, True])))
def test_indices_match_torch(n, replicas, shuffle, drop_last):
    for seed in (0, 1234):
        options = dict(shuffle=shuffle, seed=seed, drop_last=drop_last)
        assert shares(lantern_distributed, n, replicas, **options) == shares(torch_distributed, n, replicas, **options)


def test_shares_cover_the_dataset_once_without_padding():
    taken = sorted(i for rank in range(4) for i in lantern_distributed.DistributedSampler(range(12), 4, rank))
    assert taken == list(range(12))


@pytest.mark.parametrize("replicas,rank", [(2, 2), (2, -1), (0, 0), (3, 7)])
def test_invalid_rank_raises_as_torch(replicas, rank):
    with pytest.raises(ValueError) as expected:
        torch_distributed.DistributedSampler(range(4), num_replicas=replicas, rank=rank)
    with pytest.raises(ValueError) as got:
        lantern_distributed.DistributedSampler(range(4), num_replicas=replicas, rank=rank)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("given", [{}, {"num_replicas": 2}, {"rank": 0}])
def test_without_a_process_group_raises_as_torch(given):
    assert not lantern.distributed.is_initialized() and not torch.distributed.is_initialized()
    with pytest.raises(ValueError) as expected:
        torch_distributed.DistributedSampler(range(4), **given)
    with pytest.raises(ValueError) as got:
        lantern_distributed.DistributedSampler(range(4), **given)
    assert str(got.value) == str(expected.value)


def test_data_loader_batches_match_torch():
    def batches(module):
        sampler = module.utils.data.DistributedSampler(range(23), num_replicas=3, rank=1, seed=5)
        loader = module.utils.data.DataLoader(module.arange(23.0) * 2, batch_size=4, sampler=sampler)
        epochs = []
        for epoch in range(3):
            sampler.set_epoch(epoch)
            epochs.append([batch.tolist() for batch in loader])
        return epochs
    assert batches(lantern) == batches(torch)


RANK_PROGRAM = textwrap.dedent("""
    import json, os, sys
    import torch
    import torch.distributed as dist
    from torch.utils.data.distributed import DistributedSampler
    dist.init_process_group("gloo")
    sampler = DistributedSampler(range(11), shuffle=True, seed=3)
    sampler.set_epoch(2)
    with open(os.path.join(sys.argv[1], f"rank{dist.get_rank()}.json"), "w") as file:
        json.dump([sampler.num_replicas, sampler.rank, list(sampler)], file)
    dist.destroy_process_group()
""")


@pytest.mark.parametrize("nproc", [2, 4])
def test_sampler_reads_the_process_group_under_the_launcher(tmp_path, nproc):
    program = tmp_path / "sample.py"
    program.write_text(RANK_PROGRAM)
    done = subprocess.run([sys.executable, "-m", "lantern.distributed.run", "--nproc-per-node", str(nproc),
                           str(program), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for rank in range(nproc):
        reference = torch_distributed.DistributedSampler(range(11), num_replicas=nproc, rank=rank, seed=3)
        reference.set_epoch(2)
        assert json.loads((tmp_path / f"rank{rank}.json").read_text()) == [nproc, rank, list(reference)]
