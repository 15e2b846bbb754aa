"""lantern.distributed's collectives across 2 and 4 MPI ranks: each check of tests/distributed_scripts/collectives.py
(every collective against its definition) passes on every rank; and the single-process rules (a world of one
without a launcher, torch's errors) in this process, against torch."""
import pytest

from distributed_harness import SCRIPTS, check_names, run_script

SCRIPT = SCRIPTS / "collectives.py"


@pytest.fixture(scope="module", params=[2, 4], ids=["2 ranks", "4 ranks"])
def ranks(request):
    run = run_script(SCRIPT, nproc=request.param, timeout=120)
    run.assert_succeeded()
    return run


@pytest.mark.parametrize("name", check_names(SCRIPT))
def test_collective(ranks, name):
    ranks.assert_passed(name)


TIMEOUTS = SCRIPTS / "timeouts.py"


@pytest.fixture(scope="module")
def timeouts():
    run = run_script(TIMEOUTS, nproc=2, timeout=120)
    run.assert_succeeded()
    return run


@pytest.mark.parametrize("name", check_names(TIMEOUTS))
def test_a_collective_a_peer_never_joins_raises_after_the_timeout(timeouts, name):
    timeouts.assert_passed(name)


def test_a_killed_rank_ends_the_job_with_an_error():
    """MPICH's launcher kills the other ranks at once when one dies (its default)."""
    run = run_script(SCRIPTS / "killed_rank.py", nproc=2, timeout=120)
    assert not run.timed_out and run.returncode != 0, run.describe()
    assert "Killed (signal 9)" in run.stdout + run.stderr, run.describe()

