"""backends layer of lantern (see README.md for the map): the kernel backends (cpu, meta; cuda later), the
registration of a device from outside (privateuse1: docs/internals/custom-devices.md) and, as torch.backends, the
switches of the libraries PyTorch's backends use (cuda, cudnn, mkldnn, mkl, openmp, mps, opt_einsum, mha), as
PyTorch's CPU build has them."""
from . import cpu, cuda, cudnn, mha, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: F401
