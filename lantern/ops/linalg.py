"""Linear algebra, by family: matrix products (linalg_products.py), solvers, inverse and determinants
(linalg_solvers.py), norms (linalg_norms.py), decompositions and the composites over them
(linalg_decompositions.py), and what they share (linalg_common.py). This module gathers the `lantern.linalg`
namespace (`LINALG_ALL`) and registers the torch-level aliases (lantern.det, lantern.inverse, ...).

>>> lantern.linalg.inv(lantern.tensor([[2., 0.], [0., 4.]])).tolist()
[[0.5, 0.0], [0.0, 0.25]]
"""
from .dispatcher import call
from .linalg_common import LinAlgError  # noqa: F401  (the names of LINALG_ALL, read by lantern.linalg)
from .linalg_decompositions import (  # noqa: F401
    cross, eigh, eigvalsh, lstsq, matrix_power, matrix_rank, pinv, qr, svd, svdvals, torch_svd,
)
from .linalg_norms import matrix_norm, norm, vector_norm  # noqa: F401
from .linalg_solvers import cholesky, cholesky_ex, det, inv, inv_ex, logdet, slogdet, solve  # noqa: F401
from .linalg_triangular import solve_triangular  # noqa: F401
from . import linalg_cholesky  # noqa: F401  (torch.cholesky_solve, cholesky_inverse, cholesky)
from .linalg_lu import lu, lu_factor, lu_factor_ex, lu_solve, solve_ex  # noqa: F401
from .linalg_eig import eig, eigvals  # noqa: F401
from .linalg_householder import householder_product  # noqa: F401
from .linalg_ldl import ldl_factor, ldl_factor_ex, ldl_solve  # noqa: F401
from . import linalg_lowrank  # noqa: F401  (torch.svd_lowrank, torch.pca_lowrank)
from . import linalg_removed  # noqa: F401  (torch.eig, symeig, lstsq, solve, matrix_rank: removed, raising)
from .linalg_matrix_exp import matrix_exp  # noqa: F401
from .linalg_composites import (  # noqa: F401
    cond, diagonal, matmul, multi_dot, tensorinv, tensorsolve, vander, vecdot,
)
from .linalg_common import into_outs
from .linalg_decompositions import eigh_rt, lstsq_rt, qr_rt, svd_rt, torch_svd_rt
from .linalg_solvers import cholesky_ex_rt, inv_ex_rt, slogdet_rt
from .reduction import out_return_type, return_type
from .registry import composite, get

for _rt in (cholesky_ex_rt, eigh_rt, inv_ex_rt, lstsq_rt, qr_rt, slogdet_rt, svd_rt, torch_svd_rt):
    out_return_type(_rt)  # torch.return_types lists each out= twin beside its type

composite("det", det)
composite("inverse", lambda input, *, out=None: inv(input, out=out))
torch_slogdet_rt = return_type("slogdet", ["sign", "logabsdet"])
out_return_type(torch_slogdet_rt)


def torch_slogdet(input, *, out=None):
    """torch.slogdet: linalg.slogdet's (sign, logabsdet) as torch.return_types.slogdet."""
    return into_outs(out, torch_slogdet_rt(*call(get("linalg_slogdet"), (input,))), "slogdet")


composite("slogdet", torch_slogdet)
composite("logdet", logdet)
composite("svd", torch_svd)
composite("matrix_power", lambda input, n, *, out=None: matrix_power(input, n, out=out))

LINALG_ALL = ("LinAlgError", "inv", "inv_ex", "det", "slogdet", "solve", "cholesky", "cholesky_ex", "vector_norm",
              "matrix_norm", "norm", "svd", "svdvals", "eigh", "eigvalsh", "qr", "pinv", "matrix_rank", "matrix_power",
              "lstsq", "cross", "solve_triangular", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "solve_ex",
              "eig", "eigvals", "matrix_exp", "cond", "diagonal", "matmul", "multi_dot", "tensorinv", "tensorsolve",
              "vander", "vecdot", "householder_product", "ldl_factor", "ldl_factor_ex", "ldl_solve")
