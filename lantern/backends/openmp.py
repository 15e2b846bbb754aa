"""torch.backends.openmp: whether the build runs intra-op work on OpenMP threads (PyTorch's CPU build does; lantern
uses threads for the same purpose, see lantern.get_num_threads).

>>> import lantern.backends.openmp as openmp
>>> openmp.is_available()
True
"""


def is_available():
    return True
