"""pytest set-up for the whole repo: doctests see `lantern`; tests compare against torch (the oracle only)."""
import pytest

import lantern


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


collect_ignore = ["tests/oracle.py"]
