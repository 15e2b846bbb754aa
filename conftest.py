"""pytest set-up for the whole repo: doctests see `lantern`; tests compare against torch (the oracle only)."""
import gc
import os

import pytest

import lantern
from lantern.core import torch_function
import second_order  # tests/second_order.py: tests/ is on sys.path (pyproject's pythonpath)

# every gradgradcheck of the session records the derivatives it differentiated, for the second-order guard
lantern.autograd.gradgradcheck = second_order.recording(lantern.autograd.gradgradcheck)


# `make test` runs the suite twice: as written, then `pytest tests --reference-tier`, with every named fast path off
# (lantern.set_reference_mode(True), docs/internals/reference-mode.md), so that the readable code alone is checked
# against torch too. The tier leaves out only these files (they still run in the first pass):
OUT_OF_REFERENCE_TIER = {
    "tests/test_real_programs.py": "whole public programs in subprocesses, ~40% of the suite's time; what they "
                                   "run is checked op by op and mechanism by mechanism by the rest of tests/",
    "tests/test_bench.py": "the benchmark harness's own machinery (timing, memory sampling), not lantern's code",
    "tests/test_bench_and_demo.py": "`make bench --quick` and the demo: speed and a training run, not an oracle",
    "tests/test_compat.py": "the compat runner and its example scripts in subprocesses: torch's names mapped onto "
                            "lantern's, and whole programs, as test_real_programs",
    "tests/test_module_tree.py": "a walk over torch's module tree: which names resolve, the same in both modes",
    "tests/test_reference_mode.py": "the switch itself: its tests set each mode explicitly",
}


def pytest_addoption(parser):
    parser.addoption("--reference-tier", action="store_true",
                     help="run in lantern's reference mode (every named fast path off, subprocesses too) and leave "
                          "out the files conftest.OUT_OF_REFERENCE_TIER lists")


def pytest_configure(config):
    if config.getoption("--reference-tier"):
        os.environ["LANTERN_REFERENCE"] = "1"  # the programs and runners that tests start see it too
        lantern.set_reference_mode(True)


def pytest_report_header(config):
    return f"lantern reference mode: {'on' if lantern.is_reference_mode() else 'off'}"


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace):
    doctest_namespace["lantern"] = lantern


@pytest.fixture(autouse=True)
def _reference_mode_restored():
    """A test (or doctest) that switches reference mode cannot carry its setting into the tests after it."""
    with lantern.reference_mode(lantern.is_reference_mode()):
        yield


@pytest.fixture(autouse=True)
def _tensor_subclasses_collected():
    """A test (or doc page) that defines a Tensor subclass switches the __torch_function__ check on for as long as
    the class lives (lantern.core.torch_function); classes live in reference cycles, so collect them after a test
    that switched it on: the next one starts with the check off, as a program without subclasses runs."""
    was_on = torch_function.ACTIVE[0]
    yield
    if torch_function.ACTIVE[0] and not was_on:
        gc.collect()


@pytest.fixture(scope="module")
def one_torch_thread():
    """torch with one thread for a test module: at tiny sizes its thread pool (RNN and attention kernels above
    all) spends far longer waiting than computing, badly so on a busy machine; restored afterwards."""
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def pytest_collection_modifyitems(config, items):
    """The second-order guard reads what the session's gradgradchecks recorded, so it runs after all of them.
    Tests marked slow (the mutation check) run only when asked for: `-m slow` or LANTERN_SLOW=1. The reference
    tier leaves out the files OUT_OF_REFERENCE_TIER names."""
    if config.getoption("--reference-tier"):
        out = [item for item in items if _repo_path(item) in OUT_OF_REFERENCE_TIER]
        if out:
            config.hook.pytest_deselected(items=out)
            items[:] = [item for item in items if _repo_path(item) not in OUT_OF_REFERENCE_TIER]
    guards = [item for item in items if item.name == second_order.GUARD]
    items[:] = [item for item in items if item.name != second_order.GUARD] + guards
    if not (config.option.markexpr or os.environ.get("LANTERN_SLOW")):
        slow = [item for item in items if item.get_closest_marker("slow")]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [item for item in items if not item.get_closest_marker("slow")]


def _repo_path(item):
    return item.path.relative_to(item.config.rootpath).as_posix()


def pytest_collection_finish(session):
    second_order.note_session(session)


def pytest_sessionfinish():
    second_order.write_log()


# tests/programs holds public PyTorch programs run as subprocesses by test_real_programs.py, and
# tests/distributed_scripts the rank scripts the distributed tests run under mpiexec (killed_rank.py kills its own
# process): never import them (--doctest-modules would).
collect_ignore = ["tests/oracle.py", "tests/programs", "tests/distributed_scripts"]
