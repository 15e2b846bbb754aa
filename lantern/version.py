"""lantern.version: build information, as torch.version gives it for a CPU-only build.

>>> import lantern
>>> lantern.version.cuda, lantern.version.hip, lantern.version.debug
(None, None, False)
>>> lantern.version.__version__
'2.13.0+lantern.0.1.0'
"""
__all__ = ["__version__", "debug", "cuda", "git_version", "hip", "rocm", "xpu"]

follows = "2.13.0"   # the PyTorch release whose behaviour lantern implements (its test oracle)
release = "0.1.0"    # lantern's own version (the package's)
# Programs compare torch.__version__ with the PyTorch features they need (>= "2.0" for torch.compile), so it names
# the release lantern follows, with lantern's own version as the PEP 440 local label.
__version__ = f"{follows}+lantern.{release}"
debug = False
cuda = None  # no CUDA toolkit was built in (CuPy, when installed, is found at run time: lantern.cuda)
hip = None
rocm = None
xpu = None
git_version = "unknown"  # lantern is not built from a tagged commit
