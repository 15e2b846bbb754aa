"""torch-namespace names of the census (tools/census.py): torch's in-place functions, its aliases and the
functions that are one Tensor method, compared with torch (values, dtypes, aliasing, version counters, autograd,
errors). The name lists come from torch itself."""
import numpy as np
import pytest
import torch

import lantern
from deliberate_differences import DIFFERENCES
from oracle import assert_same, check, raises_like, noncontig, to_lib

rng = np.random.default_rng(0)

# Names of torch's in-place function list that other work owns or that lantern cannot have (see docs/functions.md).
NOT_HERE = {"resize_as_": "issue 16's errors+shapes work", "resize_as_sparse_": "sparse tensors cannot be resized"}


def _torch_inplace_functions():
    """torch's public in-place functions that are also Tensor methods (torch.abs_ is Tensor.abs_)."""
    return sorted(n for n in dir(torch) if n.endswith("_") and not n.startswith("_") and callable(getattr(torch, n))
                  and hasattr(torch.Tensor, n))


def _unit(*shape):
    return noncontig(rng.uniform(0.2, 0.8, shape))


# Arguments beyond the tensor written in place (NumPy arrays become tensors of each library); the input defaults to
# _unit(3, 4) of float64.
ARGUMENTS = {
    "addmv_": (_unit(3), (_unit(3, 4), _unit(4)), {"beta": 0.5, "alpha": 2}),
    "as_strided_": (_unit(3, 4), ((2, 2), (1, 2), 1), {}),
    "clamp_": (_unit(3, 4), (0.3, 0.6), {}),
    "clip_": (_unit(3, 4), (0.3,), {"max": 0.6}),
    "clamp_max_": (_unit(3, 4), (np.array(0.5),), {}),
    "clamp_min_": (_unit(3, 4), (np.array(0.5),), {}),
    "gcd_": (noncontig(rng.integers(-20, 20, (3, 4))), (rng.integers(-20, 20, (3, 4)),), {}),
    "lcm_": (noncontig(rng.integers(-20, 20, (3, 4))), (rng.integers(-20, 20, (3, 4)),), {}),
    "xlogy_": (_unit(3, 4), (_unit(4),), {}),
    "round_": (_unit(3, 4) * 10, (), {"decimals": 1}),
    "logit_": (_unit(3, 4), (0.3,), {}),
    "nan_to_num_": (np.array([np.nan, np.inf, -np.inf, 1.5]), (), {"nan": 2.0, "posinf": 9.0}),
    "acosh_": (_unit(3, 4) + 1, (), {}),
    "detach_": (rng.uniform(0.2, 0.8, (3, 4)), (), {}),
    "fill_": (_unit(3, 4), (2.5,), {}),
    "index_put_": (_unit(3, 4), ((np.array([0, 2]), np.array([1, 3])), np.array([5.0, 6.0])), {"accumulate": True}),
    "ldexp_": (_unit(3, 4), (rng.integers(0, 3, (3, 4)),), {}),  # (negative exponents: DIFFERENCES)
    "arccosh_": (_unit(3, 4) + 1, (), {}),
}


# torch 2.13 has no derivative for these in-place forms (it raises NotImplementedError); lantern differentiates them
# as their out-of-place function (tests/deliberate_differences.py).
NO_INPLACE_DERIVATIVE_IN_TORCH = {"acosh_": "acosh", "arccosh_": "acosh", "asinh_": "asinh", "arcsinh_": "asinh",
                                  "atanh_": "atanh", "arctanh_": "atanh"}


def _sample(name):
    return ARGUMENTS.get(name, (_unit(3, 4), (), {}))


def test_every_inplace_function_of_torch_is_here():
    missing = [n for n in _torch_inplace_functions() if not hasattr(lantern, n) and n not in NOT_HERE]
    assert missing == []


@pytest.mark.parametrize("name", [n for n in _torch_inplace_functions() if n not in NOT_HERE])
def test_inplace_function_writes_its_input(name):
    x, args, kwargs = _sample(name)

    def run(lib, x, *args):
        result = getattr(lib, name)(x, *args, **kwargs)
        return result, x, x._version
    check(run, x, *args)


@pytest.mark.parametrize("name", [n for n in _torch_inplace_functions() if n not in NOT_HERE])
def test_inplace_function_under_autograd(name):
    """On a non-leaf: the same gradient reaches the leaf (or the same error); on a leaf: the same refusal."""
    x, args, kwargs = _sample(name)
    if not np.issubdtype(x.dtype, np.floating):
        return

    def through_graph(lib, x, *args):
        leaf = x.clone().requires_grad_()
        y = leaf * 1
        getattr(lib, name)(y, *args, **kwargs)
        y.sum().backward()
        return leaf.grad

    def on_leaf(lib, x, *args):
        getattr(lib, name)(x.requires_grad_(), *args, **kwargs)
    if name == "detach_":
        raises_like(through_graph, x, *args)
    elif name in NO_INPLACE_DERIVATIVE_IN_TORCH:
        assert DIFFERENCES["in-place inverse hyperbolic functions under autograd"]
        with pytest.raises(NotImplementedError):
            through_graph(torch, torch.from_numpy(x))
        expected = torch.from_numpy(x).requires_grad_()
        getattr(torch, NO_INPLACE_DERIVATIVE_IN_TORCH[name])(expected).sum().backward()
        assert_same(through_graph(lantern, to_lib(lantern, x)), expected.grad)
    else:
        check(through_graph, x, *args)
        raises_like(on_leaf, x, *args)


@pytest.mark.parametrize("name", ["abs_", "clamp_", "detach", "is_signed", "get_device", "is_inference"])
def test_function_of_a_non_tensor_is_a_type_error(name):
    raises_like(lambda lib: getattr(lib, name)(3))


@pytest.mark.parametrize("alias,target", [("arccos", "acos"), ("arccosh", "acosh"), ("arcsin", "asin"),
                                          ("arcsinh", "asinh"), ("arctan", "atan"), ("arctanh", "atanh"),
                                          ("fix", "trunc")])
def test_numpy_style_alias(alias, target):
    x = noncontig(rng.uniform(-3, 3, (3, 4)))
    check(lambda lib, x: getattr(lib, alias)(x), x)
    check(lambda lib, x: getattr(lib, alias)(x), x + 4 if alias == "arccosh" else x / 4)
    out = np.zeros((3, 4))
    check(lambda lib, x, out: (getattr(lib, alias)(x / 4, out=out), out), x, out)


def test_method_functions():
    x = noncontig(rng.uniform(-1, 1, (2, 3)))
    check(lambda lib, x: (lib.is_signed(x), lib.is_signed(x.to(lib.uint8)), lib.get_device(x),
                          lib.is_distributed(x), lib.is_inference(x), lib.cudnn_is_acceptable(x)), x)
    check(lambda lib, x: (lib.is_same_size(x, x.t()), lib.is_same_size(x, x + 1)), x)
    check(lambda lib, x: lib.adjoint(x.to(lib.complex128)), x)
    check(lambda lib, x: lib.detach(x.requires_grad_()), x)
    with lantern.inference_mode():
        made = lantern.ones(2)
    assert lantern.is_inference(made) and not lantern.is_inference(lantern.ones(2))


JIT_NAMES = {"Graph": "ir.Graph", "Node": "ir.Node", "Value": "ir.Value", "Block": "ir.Block", "Type": "types.Type",
             "TensorType": "types.TensorType", "IntType": "types.IntType", "FloatType": "types.FloatType",
             "BoolType": "types.BoolType", "NoneType": "types.NoneType", "NumberType": "types.NumberType",
             "AnyType": "types.AnyType", "ListType": "types.ListType", "TupleType": "types.TupleType",
             "OptionalType": "types.OptionalType", "DictType": "types.DictType", "ClassType": "types.ClassType",
             "StringType": "types.StrType", "DeviceObjType": "types.DeviceType",
             "ScriptFunction": "module.ScriptFunction", "ScriptMethod": "module.ScriptMethod", "CompilationUnit": "frontend.CompilationUnit",
             "JITException": "interpreter.Error", "parse_ir": "ir_text.parse_ir"}


def test_top_level_jit_names_are_lanterns_jit():
    assert all(hasattr(torch, name) for name in JIT_NAMES)
    for name, path in JIT_NAMES.items():
        holder = lantern.jit
        for part in path.split("."):
            holder = getattr(holder, part)
        assert getattr(lantern, name) is holder, name


def test_top_level_jit_names_behave_as_torchs():
    def f(x):
        return x * 2 + 1
    for lib in (torch, lantern):
        scripted = lib.jit.script(f)
        assert isinstance(scripted, lib.ScriptFunction) and isinstance(scripted.graph, lib.Graph)
        assert all(isinstance(n, lib.Node) for n in scripted.graph.nodes())
        assert isinstance(lib.parse_ir("graph(%x : Tensor):\n  return (%x)"), lib.Graph)
    for name in ("IntType", "FloatType", "BoolType", "StringType", "DeviceObjType", "TensorType", "NoneType"):
        assert str(getattr(lantern, name).get()) == str(getattr(torch, name).get())
    assert lantern.is_vulkan_available() is torch.is_vulkan_available() is False


def _coo_parts(t):
    """What a COO result is: layout, flags, dims, shape, and its entries (not the strides of the buffers holding
    them, an allocation detail of ATen's)."""
    return (str(t.layout).split(".")[-1], t.is_coalesced(), t.sparse_dim(), t.dense_dim(), tuple(t.shape),
            t._indices().contiguous(), t._values().contiguous())


def _sparse_operands(lib):
    mat1 = lib.sparse_coo_tensor(lib.tensor([[0, 1, 1], [2, 0, 2]]), lib.tensor([3.0, 4.0, 5.0]), (3, 3))
    addend = lib.sparse_coo_tensor(lib.tensor([[2, 0], [1, 1]]), lib.tensor([1.0, 7.0]), (3, 2))
    return mat1, addend


def test_sparse_products():
    def run(lib, dense):
        mat1, addend = _sparse_operands(lib)
        return [_coo_parts(r) for r in (lib.hspmm(mat1, dense), lib.hsmm(mat1, dense), lib.smm(mat1, dense),
                                        mat1.smm(dense), lib.sspaddmm(addend, mat1, dense, beta=2, alpha=3),
                                        lib.saddmm(addend.coalesce(), mat1, dense),
                                        addend.sspaddmm(mat1, dense, alpha=0.5))] + [lib.dsmm(mat1, dense)]
    check(run, rng.standard_normal((3, 2)).astype(np.float32))
    check(lambda lib, a, b: lib.dsmm(a, b), rng.standard_normal((2, 3)), rng.standard_normal((3, 2)))


def test_sparse_product_errors():
    dense = rng.standard_normal((3, 2)).astype(np.float32)
    raises_like(lambda lib, d: lib.hspmm(d, d.t()), dense)
    raises_like(lambda lib, d: lib.smm(d, d.t()), dense)
    raises_like(lambda lib, d: lib.sspaddmm(d.t(), _sparse_operands(lib)[0], d), dense)
    raises_like(lambda lib, d: lib.sspaddmm(_sparse_operands(lib)[1], _sparse_operands(lib)[0], lib.ones(4, 2)), dense)
    raises_like(lambda lib, d: lib.hspmm(_sparse_operands(lib)[0], lib.ones(4, 2)), dense)


def test_slice_inverse():
    def run(lib, base):
        part = base[1:3]
        back = lib.slice_inverse(part, base, 0, 1, 3)
        method = part.slice_inverse(base[:, ::2], 1, 0, None, 2)
        return back, back._base is base, method, method.data_ptr() == base.data_ptr()
    check(run, rng.standard_normal((4, 3)))
    raises_like(lambda lib, x, y: lib.slice_inverse(y, x, 0, 1, 3), rng.standard_normal((4, 3)),
                rng.standard_normal((2, 3)))


def test_native_norm_of_sparse_tensors():
    def run(lib, p):
        s = lib.sparse_coo_tensor(lib.tensor([[0, 0, 1], [1, 1, 2]]), lib.tensor([3.0, 4.0, 5.0]), (2, 3))
        return lib.native_norm(s, p), lib.native_norm(s.coalesce(), p), lib.native_norm(s, p, [0, 1], False, None)
    for p in (2, 1, 0, 3.5, float("inf")):
        check(lambda lib: run(lib, p))
    check(lambda lib: lib.native_norm(lib.sparse_coo_tensor(lib.tensor([[0, 1]]), lib.tensor([3.0, 4.0]), (3,))))


def test_native_norm_errors():
    def sparse(lib):
        return lib.sparse_coo_tensor(lib.tensor([[0, 1], [1, 2]]), lib.tensor([3.0, 4.0]), (2, 3))
    raises_like(lambda lib: lib.native_norm(lib.ones(2, 3)))
    raises_like(lambda lib: lib.native_norm(sparse(lib), 2, [1], False, None))
    raises_like(lambda lib: lib.native_norm(sparse(lib), 2, [0, 1], True, None))
    raises_like(lambda lib: lib.native_norm(sparse(lib), 2, [0, 1], False, lib.float64))
