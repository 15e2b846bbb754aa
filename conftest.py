"""pytest set-up for the whole repo: doctests see `lantern`; tests compare against torch (the oracle only)."""
import pytest

import lantern


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace):
    doctest_namespace["lantern"] = lantern


collect_ignore = ["tests/oracle.py"]
