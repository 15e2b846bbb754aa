"""lantern.version: build information, as torch.version gives it for a CPU-only build.

>>> import lantern
>>> lantern.version.cuda, lantern.version.hip, lantern.version.debug
(None, None, False)
"""
__all__ = ["__version__", "debug", "cuda", "git_version", "hip", "rocm", "xpu"]

__version__ = "0.1.0"
debug = False
cuda = None  # no CUDA toolkit was built in (CuPy, when installed, is found at run time: lantern.cuda)
hip = None
rocm = None
xpu = None
git_version = "unknown"  # lantern is not built from a tagged commit
