"""lantern.version: build information, as torch.version gives it for a CPU-only build.

>>> import lantern
>>> lantern.version.cuda, lantern.version.hip, lantern.version.debug
(None, None, False)
>>> lantern.version.__version__
'2.13.0+lantern.0.1.0'
"""
__all__ = ["__version__", "debug", "cuda", "git_version", "hip", "rocm", "xpu"]

# The PyTorch release whose behaviour lantern implements (its oracle), then lantern's own version as the local
# label: programs compare torch.__version__ against the PyTorch features they need (>= "2.0" for torch.compile).
__version__ = "2.13.0+lantern.0.1.0"
debug = False
cuda = None  # no CUDA toolkit was built in (CuPy, when installed, is found at run time: lantern.cuda)
hip = None
rocm = None
xpu = None
git_version = "unknown"  # lantern is not built from a tagged commit
