"""backends layer of lantern (see README.md for the map): the kernel backends (cpu, meta; cuda later) and, as
torch.backends, the switches of the libraries PyTorch's backends use (cuda, cudnn, mkldnn, mkl, openmp, mps,
opt_einsum, mha), as PyTorch's CPU build has them."""
from . import cpu, cuda, cudnn, mha, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: F401
