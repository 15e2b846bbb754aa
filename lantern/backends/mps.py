"""torch.backends.mps: Apple's Metal backend, which lantern does not have.

>>> import lantern.backends.mps as mps
>>> mps.is_available(), mps.is_built()
(False, False)
"""


def is_available():
    return False


def is_built():
    return False
