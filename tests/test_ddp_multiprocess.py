"""DistributedDataParallel across 2 and 4 MPI ranks: each check of tests/distributed_scripts/ddp.py passes on every
rank (training the MLP and a small transformer equals one process on the concatenated batch, no_sync, unused
parameters, buffers, the overlap of all-reduce with backward)."""
import pytest

from distributed_harness import SCRIPTS, check_names, run_script

SCRIPT = SCRIPTS / "ddp.py"


@pytest.fixture(scope="module", params=[2, 4], ids=["2 ranks", "4 ranks"])
def ranks(request):
    run = run_script(SCRIPT, nproc=request.param, timeout=180)
    run.assert_succeeded()
    return run


@pytest.mark.parametrize("name", check_names(SCRIPT))
def test_ddp_check(ranks, name):
    ranks.assert_passed(name)
