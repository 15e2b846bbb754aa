"""Fixtures shared by the intra-op thread tests: `from intra_op_fixtures import fast_paths, threads`."""
import pytest

import lantern


@pytest.fixture(autouse=True)
def fast_paths():
    """These tests hold fast paths to the readable code, so they run with fast paths on (also in the reference
    tier) and switch reference mode on where they want the readable code."""
    with lantern.reference_mode(False):
        yield


@pytest.fixture
def threads():
    """lantern.set_num_threads for the test; the previous count comes back afterwards."""
    before = lantern.get_num_threads()
    yield lantern.set_num_threads
    lantern.set_num_threads(before)
