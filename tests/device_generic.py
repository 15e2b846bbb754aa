"""Device-generic tests: the `lantern_device` fixture runs a test module's oracle tests once on the CPU and once on
the openreg device (lantern.testing._openreg, a device from outside on the PrivateUse1 path). On openreg, lantern's
inputs are made there (it is the default device while the test runs), and every tensor lantern returns must be
there too (oracle.ON_DEVICE): proof that nothing between the frontend and the backends assumes the CPU.

    from device_generic import lantern_device  # noqa: F401  (the fixture)
    pytestmark = pytest.mark.usefixtures("lantern_device")
"""
import pytest

import lantern
import oracle
from lantern.testing import _openreg

DEVICES = ["cpu", _openreg.NAME]


@pytest.fixture(params=DEVICES)
def lantern_device(request):
    """The device lantern's side of the test runs on."""
    if request.param == "cpu":
        yield request.param
        return
    _openreg.setup()
    lantern.set_default_device(request.param)
    oracle.ON_DEVICE[0] = request.param
    try:
        yield request.param
    finally:
        oracle.ON_DEVICE[0] = None
        lantern.set_default_device(None)
