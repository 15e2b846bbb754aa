"""The linear-algebra functions torch removed in 1.9 but still names (torch.eig, symeig, lstsq, solve,
matrix_rank and the Tensor methods): calling one raises torch's RuntimeError, which says what replaces it.

>>> lantern.solve(lantern.eye(2), lantern.eye(2))
Traceback (most recent call last):
...
RuntimeError: This function was deprecated since version 1.9 and is now removed. `torch.solve` is deprecated in favor of `torch.linalg.solve`. ...
"""
from .registry import composite

_REMOVED = "This function was deprecated since version 1.9 and is now removed."
_REPLACEMENTS = {
    "eig": "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real tensors "
           "mimicking complex tensors. L, _ = torch.eig(A) should be replaced with L_complex = "
           "torch.linalg.eigvals(A), and L, V = torch.eig(A, eigenvectors=True) with L_complex, V_complex = "
           "torch.linalg.eig(A)",
    "symeig": "The default behavior has changed from using the upper triangular portion of the matrix by default to "
              "using the lower triangular portion. L, _ = torch.symeig(A, upper=upper) should be replaced with "
              "L = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L'), and L, V = torch.symeig(A, "
              "eigenvectors=True) with L, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')",
    "lstsq": "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`. `torch.linalg.lstsq` has reversed "
             "arguments and does not return the QR decomposition in the returned tuple: X, _ = torch.lstsq(B, A)"
             ".solution[:A.size(1)] should be replaced with X = torch.linalg.lstsq(A, B).solution",
    "solve": "`torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has its arguments "
             "reversed and does not return the LU factorization. X = torch.solve(B, A).solution should be replaced "
             "with X = torch.linalg.solve(A, B)",
    "matrix_rank": "Please use the `torch.linalg.matrix_rank` function instead. The parameter 'symmetric' was renamed "
                   "in `torch.linalg.matrix_rank()` to 'hermitian'.",
}


def _removed(name):
    def removed(*args, **kwargs):
        raise RuntimeError(f"{_REMOVED} {_REPLACEMENTS[name]}")
    removed.__name__ = name
    removed.__doc__ = f"torch.{name}: removed in PyTorch 1.9; raises the RuntimeError that names its replacement."
    return removed


for _name in _REPLACEMENTS:
    composite(_name, _removed(_name), method=_name != "matrix_rank")
