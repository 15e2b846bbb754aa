"""The backend seam: kernels in lantern/ops reach the array library only through their backend's `xp`.

Two checks hold the rule. The first reads lantern/ops/*.py with `ast` and fails on every `np.` use that is not a
host-side dtype fact (ALLOWED below), naming file:line. The second is an array library that refuses NumPy's own
functions (lantern.backends.strict_numpy): its unit tests are here, and `make test` runs the STRICT_TIER files of
conftest.py with LANTERN_ARRAY_LIBRARY=strict, so a kernel that bypasses `xp` at run time fails there too.
See docs/internals/backends.md.
"""
import ast
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import lantern
from lantern.backends import strict_numpy
from lantern.backends.cpu import StrictCPUBackend, chosen_backend
from lantern.backends.strict_numpy import ArraySeamError, StrictArray
from lantern.ops import registry

OPS = pathlib.Path(lantern.__file__).parent / "ops"

# What an op file may still read from `np`: NumPy's scalar types (np.float64, np.int64, np.floating, ... which are
# dtypes, as CuPy uses them too) and the host-side facts about dtypes and errors below.
SCALAR_TYPES = {name for name in dir(np) if isinstance(getattr(np, name), type) and issubclass(getattr(np, name),
                                                                                                np.generic)}
DTYPE_FACTS = {"dtype", "finfo", "iinfo", "issubdtype", "promote_types", "result_type", "can_cast",
               "ufunc",                 # isinstance(f, np.ufunc): which kind of kernel a table entry is
               "linalg.LinAlgError"}    # the error NumPy's and CuPy's solvers raise
ALLOWED = SCALAR_TYPES | DTYPE_FACTS
# Files whose arrays are host arrays by design, with the reason.
HOST_SIDE = {"random_draws.py": "the generator's Mersenne Twister words become values on the host, as ATen's CPU "
                                "kernels make them, so a seed gives torch's numbers; random.py copies them into the "
                                "output (backend.from_host on a device)",
             "linalg_lapack.py": "SciPy's LAPACK and BLAS wrappers (LU, triangular and Cholesky solves, Householder QR, "
                                 "LDL: routines NumPy lacks) take host NumPy arrays; the linalg kernels hand "
                                 "them backend.host_array(t) and bring results back with backend.from_host",
             "nn_rnn_numba.py": "numba kernels, which compile for NumPy arrays only (nn_rnn's compiled specialisations "
                                "run where xp is np); np.dot there is numba's call into BLAS, for the row-block "
                                "kernels that run a whole sequence without the GIL",
             **dict.fromkeys(("quantized.py", "quantized_fake.py", "quantized_kernels.py", "quantized_nn.py"),
                             "the QuantizedCPU key's kernels: quantized tensors are CPU-only (as in torch's CPU "
                             "build), and these compute on their host integer arrays with torch's rounding")}


def dotted_name(node):
    """'np.linalg.solve' for the attribute chain np.linalg.solve; None where the chain does not start at a name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def seam_violations(source, filename):
    """Every use of numpy in `source` that is not an ALLOWED `np.` name, as 'file:line: what'."""
    tree = ast.parse(source, filename)
    found, allowed_attribute_chains = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "numpy":
            found.append((node.lineno, f"from {node.module} import ...: use xp (the backend's array library)"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "numpy" and (alias.name, alias.asname) != ("numpy", "np"):
                    found.append((node.lineno, f"import {alias.name}: only `import numpy as np`, for dtypes"))
        elif isinstance(node, ast.Attribute) and dotted_name(node) and dotted_name(node).startswith("np."):
            name = dotted_name(node)[3:]
            matches = [a for a in ALLOWED if name == a or name.startswith(a + ".")]
            if id(node) not in allowed_attribute_chains:
                if matches:
                    allowed_attribute_chains.update(id(n) for n in ast.walk(node))
                elif not any(a.startswith(name + ".") for a in ALLOWED):
                    found.append((node.lineno, f"np.{name}: use xp.{name}"))
                    allowed_attribute_chains.update(id(n) for n in ast.walk(node))
    attribute_bases = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    # `xp is np` picks a fast path that needs NumPy arrays themselves (a numba kernel); the other branch uses xp
    identity_tests = {id(operand) for n in ast.walk(tree) if isinstance(n, ast.Compare)
                      and all(isinstance(op, (ast.Is, ast.IsNot)) for op in n.ops)
                      for operand in (n.left, *n.comparators)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "np" and id(node) not in attribute_bases | identity_tests:
            found.append((node.lineno, "np used as a value: pass or compare the backend's xp instead"))
    return [f"{filename}:{line}: {what}" for line, what in sorted(found)]


def test_ops_reach_the_array_library_only_through_xp():
    problems = []
    for path in sorted(OPS.glob("*.py")):
        if path.name not in HOST_SIDE:
            problems += seam_violations(path.read_text(), f"lantern/ops/{path.name}")
    assert not problems, ("kernels must reach the array library through xp (docs/internals/backends.md); np. is "
                          "for dtypes and dtype facts only:\n" + "\n".join(problems))


@pytest.mark.parametrize("source, expected", [
    ("import numpy as np\nx = np.float32\ny = np.finfo(np.float64).eps\nz = np.linalg.LinAlgError", []),
    ("import numpy as np\ny = np.exp(x)", ["f.py:2: np.exp: use xp.exp"]),
    ("import numpy as np\ny = np.linalg.solve(a, b)", ["f.py:2: np.linalg.solve: use xp.linalg.solve"]),
    ("import numpy as np\nnp.add.at(a, i, v)", ["f.py:2: np.add.at: use xp.add.at"]),
    ("from numpy import exp", ["f.py:1: from numpy import ...: use xp (the backend's array library)"]),
    ("import numpy\nimport numpy.linalg as la", ["f.py:1: import numpy: only `import numpy as np`, for dtypes",
                                                 "f.py:2: import numpy.linalg: only `import numpy as np`, for dtypes"]),
    ("import numpy as np\nf(np)", ["f.py:2: np used as a value: pass or compare the backend's xp instead"]),
    ("import numpy as np\nfast = xp is np and a.dtype == np.float32", []),
    ("import numpy as np\nlib = xp if xp is not np else np", ["f.py:2: np used as a value: pass or compare the "
                                                                "backend's xp instead"]),
])
def test_the_seam_check_names_each_use_outside_the_allow_list(source, expected):
    assert seam_violations(source, "f.py") == expected


# ---- the strict array library ---------------------------------------------------------------------------------

def test_numpy_functions_refuse_strict_arrays_and_name_the_function():
    a = strict_numpy.asarray([1.0, 2.0])
    with pytest.raises(ArraySeamError, match=r"numpy\.exp was called on a strict array.*xp\.exp"):
        np.exp(a)
    with pytest.raises(ArraySeamError, match=r"numpy\.sum was called"):
        np.sum(a)
    with pytest.raises(ArraySeamError, match=r"numpy\.add\.at was called"):
        np.add.at(a, [0], 1.0)


def test_the_namespace_operators_and_methods_compute_and_stay_strict():
    a = strict_numpy.asarray([[1.0, 2.0], [3.0, 4.0]])
    results = [strict_numpy.exp(a), a + 1, 2 * a, np.float32(2) * a, a.sum(axis=0), a.T, a[0], a.astype(np.int64),
               strict_numpy.linalg.inv(a), strict_numpy.special.erf(a), strict_numpy.add.reduce(a, axis=1)]
    assert all(type(r) is StrictArray for r in results)
    np.testing.assert_allclose(strict_numpy.plain(results[0]), np.exp([[1.0, 2.0], [3.0, 4.0]]))
    assert strict_numpy.linalg.eigh(a).eigenvalues.__class__ is StrictArray
    assert strict_numpy.float64 is np.float64 and strict_numpy.iinfo is np.iinfo


def test_a_numpy_array_made_outside_the_namespace_is_not_mixed_in():
    a = strict_numpy.asarray([1.0, 2.0])
    with pytest.raises(ArraySeamError, match=r"xp\.add was given a NumPy array made outside xp \(shape \(2,\)\)"):
        strict_numpy.add(a, np.ones(2))
    with pytest.raises(ArraySeamError, match=r"xp\.__mul__ was given a NumPy array made outside xp"):
        a * np.ones(2)
    assert strict_numpy.asarray(np.ones(2)).__class__ is StrictArray   # asarray is how host arrays come in


def test_the_strict_backend_gives_kernels_strict_arrays_and_users_plain_ones():
    backend = StrictCPUBackend()
    t = lantern.tensor([[1.0, -2.0], [3.0, 4.0]]).t()
    assert type(backend.array(t)) is StrictArray and type(backend.host_array(t)) is np.ndarray
    assert np.shares_memory(strict_numpy.plain(backend.array(t)), t.numpy())
    out = backend.run_structured(registry.get("abs"), (t,))
    assert type(out.numpy()) is np.ndarray and out.tolist() == [[1.0, 3.0], [2.0, 4.0]]


def test_a_kernel_that_bypasses_xp_fails_on_the_strict_backend():
    backend = StrictCPUBackend()

    def bypassing_impl(xp, out, dtype, a):
        out[...] = np.exp(a)

    op = registry.get("exp")
    with pytest.raises(ArraySeamError, match=r"numpy\.exp was called"):
        bypassing_impl(backend.xp, backend.array(backend.empty((2,), lantern.float32)), np.float32,
                       backend.array(lantern.ones(2)))
    assert backend.run_structured(op, (lantern.zeros(2),)).tolist() == [1.0, 1.0]


def test_lantern_array_library_selects_the_cpu_backend():
    assert type(chosen_backend("numpy")).__name__ == "CPUBackend"
    with pytest.raises(ValueError, match="LANTERN_ARRAY_LIBRARY='cupy' names no array library lantern has: use one "
                                         "of numpy, strict"):
        chosen_backend("cupy")
    script = ("import lantern, numpy; from lantern.backends.cpu import cpu; t = lantern.ones(2).exp(); "
              "print(cpu.xp.__name__, type(t.numpy()).__name__, t)")
    env = dict(os.environ, LANTERN_ARRAY_LIBRARY="strict")
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert result.stdout.split("\n")[0] == "lantern.backends.strict_numpy ndarray tensor([2.7183, 2.7183])"
