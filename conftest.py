"""pytest set-up for the whole repo: doctests see `lantern`; tests compare against torch (the oracle only)."""
import os

import pytest

import lantern
import second_order  # tests/second_order.py: tests/ is on sys.path (pyproject's pythonpath)

# every gradgradcheck of the session records the derivatives it differentiated, for the second-order guard
lantern.autograd.gradgradcheck = second_order.recording(lantern.autograd.gradgradcheck)


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace):
    doctest_namespace["lantern"] = lantern


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
    Tests marked slow (the mutation check) run only when asked for: `-m slow` or LANTERN_SLOW=1."""
    guards = [item for item in items if item.name == second_order.GUARD]
    items[:] = [item for item in items if item.name != second_order.GUARD] + guards
    if not (config.option.markexpr or os.environ.get("LANTERN_SLOW")):
        slow = [item for item in items if item.get_closest_marker("slow")]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [item for item in items if not item.get_closest_marker("slow")]


def pytest_collection_finish(session):
    second_order.note_session(session)


def pytest_sessionfinish():
    second_order.write_log()


# tests/programs holds public PyTorch programs run as subprocesses by test_real_programs.py: never import them.
collect_ignore = ["tests/oracle.py", "tests/programs"]
