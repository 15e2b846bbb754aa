"""nn.Module and nn.Parameter against torch: registration, iteration, state_dict, conversion, repr, pickling."""
import copy
import functools
import pickle

import numpy as np
import pytest
import torch

import lantern
from nn_oracle import same, same_error
from oracle import as_numpy

LIBS = (torch, lantern)


@functools.lru_cache(maxsize=None)
def classes(lib):
    """Small modules built the same way in both libraries (they do not depend on nn.Linear)."""
    nn = lib.nn

    class Lin(nn.Module):
        def __init__(self, i, o, bias=True):
            super().__init__()
            self.in_features, self.out_features = i, o
            self.weight = nn.Parameter(lib.arange(float(i * o)).reshape(o, i) / 10)
            if bias:
                self.bias = nn.Parameter(lib.arange(float(o)))
            else:
                self.register_parameter("bias", None)

        def forward(self, x):
            y = x @ self.weight.t()
            return y if self.bias is None else y + self.bias

        def extra_repr(self):
            return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("rb", lib.zeros(2))
            self.fc = Lin(2, 3)
            self.scale = nn.Parameter(lib.ones(()))
            self.register_buffer("tmp", lib.ones(1), persistent=False)
            self.head = Lin(3, 1)
            self.steps = nn.Buffer(lib.zeros((), dtype=lib.int64))

        def forward(self, x):
            return self.head(self.fc(x) * self.scale)

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Lin(2, 2)
            self.b = Lin(2, 2)
            self.b.weight = self.a.weight
            self.c = self.a

        def forward(self, x):
            return self.b(self.a(x))

    for cls in (Lin, Net, Tied):  # importable by name, so that pickle can find them
        cls.__qualname__ = f"{cls.__name__}_{lib.__name__}"
        globals()[cls.__qualname__] = cls
    return Lin, Net, Tied


def both(fn):
    """fn(lib) for torch and lantern."""
    return [fn(lib) for lib in LIBS]


# ---- Parameter ------------------------------------------------------------------------------------------------
def test_parameter_basics():
    def run(lib):
        data = lib.tensor([1., 2.])
        p = lib.nn.Parameter(data)
        y = p * 2
        with lib.no_grad():
            data.add_(1)  # shares data's storage
        return (repr(p), type(y).__name__, p.is_leaf, p.requires_grad, p.tolist(), isinstance(p, lib.Tensor),
                lib.nn.Parameter(data, requires_grad=False).requires_grad, lib.nn.Parameter().shape == (0,),
                isinstance(p.detach(), lib.nn.Parameter), p.data_ptr() == data.data_ptr())
    same(run)


def test_integer_parameter():
    same_error(lambda lib: lib.nn.Parameter(lib.ones(2, dtype=lib.int64)))
    same(lambda lib: repr(lib.nn.Parameter(lib.ones(2, dtype=lib.int64), requires_grad=False)))


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_parameter_copy_keeps_class(how):
    def run(lib):
        p = lib.nn.Parameter(lib.tensor([1., 2.]), requires_grad=False)
        q = copy.deepcopy(p) if how == "deepcopy" else pickle.loads(pickle.dumps(p))
        return type(q).__name__, q.requires_grad, q.tolist(), q.data_ptr() != p.data_ptr()
    same(run)


def test_buffer_registration():
    def run(lib):
        m = classes(lib)[1]()
        b = lib.nn.Buffer(lib.ones(2), persistent=False)
        m.extra = b
        return (type(b).__name__ == "Tensor" or type(b).__name__, isinstance(b, lib.nn.Buffer),
                [n for n, _ in m.named_buffers()], list(m.state_dict()), sorted(m._non_persistent_buffers_set))
    same(run)


# ---- registration and iteration ---------------------------------------------------------------------------------
def test_named_members():
    def run(lib):
        m = classes(lib)[1]()
        return ([n for n, _ in m.named_parameters()], [n for n, _ in m.named_buffers()],
                [n for n, _ in m.named_children()], [n for n, _ in m.named_modules()],
                [n for n, _ in m.named_parameters(prefix="net", recurse=False)],
                [n for n, _ in m.named_modules(prefix="root")], len(list(m.parameters())), len(list(m.buffers())),
                [type(c).__name__ for c in m.children()], [type(c).__name__ for c in m.modules()])
    same(run)


def test_shared_parameters_counted_once():
    def run(lib):
        m = classes(lib)[2]()
        return ([n for n, _ in m.named_parameters()], [n for n, _ in m.named_parameters(remove_duplicate=False)],
                [n for n, _ in m.named_modules()], [n for n, _ in m.named_modules(remove_duplicate=False)],
                [n for n, _ in m.named_children()], list(m.state_dict()), len(list(m.parameters())))
    same(run)


def test_setattr_moves_between_registries():
    def run(lib):
        Lin = classes(lib)[0]
        m = Lin(2, 2)
        m.bias = None                      # stays a (None) parameter
        m.extra = lib.ones(1)              # a plain attribute
        m.sub = Lin(1, 1)
        m.sub = None
        m.register_buffer("buf", lib.ones(1))
        m.buf = lib.zeros(1)               # stays a buffer
        m.attr = lib.nn.Parameter(lib.ones(1))
        del m.weight
        return (list(m._parameters), list(m._buffers), list(m._modules), "extra" in m.__dict__,
                [n for n, _ in m.named_parameters()], hasattr(m, "weight"), m.buf.tolist())
    same(run)


SETATTR_ERRORS = {
    "tensor as parameter": lambda lib: setattr(classes(lib)[0](1, 1), "weight", lib.ones(1)),
    "int as child module": lambda lib: _with_child(lib, lambda m: setattr(m, "c", 3)),
    "string as buffer": lambda lib: _with_buffer(lib, lambda m: setattr(m, "b", "x")),
    "buffer name with dot": lambda lib: lib.nn.Module().register_buffer("a.b", lib.ones(1)),
    "empty parameter name": lambda lib: lib.nn.Module().register_parameter("", None),
    "parameter name not a string": lambda lib: lib.nn.Module().register_parameter(1, None),
    "existing attribute": lambda lib: classes(lib)[0](1, 1).register_buffer("forward", lib.ones(1)),
    "tensor to register_parameter": lambda lib: lib.nn.Module().register_parameter("w", lib.ones(1)),
    "buffer of wrong type": lambda lib: lib.nn.Module().register_buffer("w", [1]),
    "module name with dot": lambda lib: lib.nn.Module().add_module("a.b", lib.nn.Module()),
    "add_module of non-module": lambda lib: lib.nn.Module().add_module("a", 3),
    "before __init__": lambda lib: _before_init(lib),
    "module before __init__": lambda lib: _before_init(lib, module=True),
    "unknown attribute": lambda lib: lib.nn.Module().missing,
    "init kwargs": lambda lib: lib.nn.Module(foo=1),
    "init args": lambda lib: lib.nn.Module(1, 2),
}


def _with_child(lib, fn):
    m = lib.nn.Module()
    m.c = lib.nn.Module()
    fn(m)


def _with_buffer(lib, fn):
    m = lib.nn.Module()
    m.register_buffer("b", lib.ones(1))
    fn(m)


def _before_init(lib, module=False):
    class Early(lib.nn.Module):
        def __init__(self):
            if module:
                self.m = lib.nn.Module()
            self.w = lib.nn.Parameter(lib.ones(1))
    Early()


@pytest.mark.parametrize("name", SETATTR_ERRORS)
def test_registration_errors(name):
    same_error(SETATTR_ERRORS[name])


def test_missing_forward():
    same_error(lambda lib: lib.nn.Module()(lib.ones(1)))


# ---- state_dict -----------------------------------------------------------------------------------------------
def test_state_dict_order_metadata_and_detach():
    def run(lib):
        m = classes(lib)[1]()
        sd = m.state_dict()
        kv = m.state_dict(keep_vars=True)
        return (list(sd), dict(sd._metadata), type(sd).__name__, sd["fc.weight"].requires_grad,
                kv["fc.weight"] is m.fc.weight, type(kv["fc.weight"]).__name__,
                sd["fc.weight"].data_ptr() == m.fc.weight.data_ptr(), list(m.fc.state_dict(prefix="p.")))
    same(run)


def test_state_dict_destination_and_positional_warning():
    def run(lib):
        m = classes(lib)[0](2, 1)
        dest = {}
        with pytest.warns(FutureWarning):
            out = m.state_dict(dest, "x.")
        return out is dest, list(dest)
    same(run)


def _load(lib, mutate, strict=True, assign=False):
    m = classes(lib)[1]()
    sd = m.state_dict()
    mutate(lib, sd)
    return m.load_state_dict(sd, strict=strict, assign=assign)


LOAD_CASES = {
    "missing": lambda lib, sd: (sd.pop("fc.bias"), sd.pop("rb")),
    "unexpected": lambda lib, sd: sd.update({"fc.extra": lib.ones(1), "other.w": lib.ones(1), "zz": lib.ones(1)}),
    "size mismatch": lambda lib, sd: sd.update({"fc.weight": lib.ones(2, 2), "head.bias": lib.ones(3)}),
    "not a tensor": lambda lib, sd: sd.update({"fc.bias": [1., 2., 3.]}),
    "all at once": lambda lib, sd: (sd.pop("scale"), sd.update({"fc.weight": lib.ones(1), "q": lib.ones(1)})),
}


@pytest.mark.parametrize("name", LOAD_CASES)
def test_load_state_dict_errors(name):
    same_error(lambda lib: _load(lib, LOAD_CASES[name]))


@pytest.mark.parametrize("name", ["missing", "unexpected"])
def test_load_state_dict_not_strict(name):
    result = same(lambda lib: tuple(_load(lib, LOAD_CASES[name], strict=False)))
    assert result


def test_incompatible_keys_repr():
    same(lambda lib: (repr(_load(lib, lambda lib, sd: None)), str(_load(lib, LOAD_CASES["missing"], strict=False))))


def test_load_state_dict_copies_values():
    def run(lib):
        m = classes(lib)[1]()
        w = m.fc.weight
        sd = {k: v * 0 + 3 for k, v in m.state_dict().items()}
        sd["scale"] = lib.ones(1) * 5   # shape [1] loads into a 0-d parameter
        m.load_state_dict(sd)
        return m.fc.weight is w, m.fc.weight.tolist(), m.scale.item(), m.steps.item(), m.fc.weight.requires_grad
    same(run)


def test_load_state_dict_assign():
    def run(lib):
        m = classes(lib)[1]()
        m.head.weight.requires_grad_(False)
        sd = {k: v.clone().double() for k, v in m.state_dict().items()}
        m.load_state_dict(sd, assign=True)
        return (type(m.fc.weight).__name__, m.fc.weight.dtype == lib.float64, m.fc.weight.requires_grad,
                m.head.weight.requires_grad, m.rb.dtype == lib.float64, m.rb is sd["rb"])
    same(run)


def test_load_state_dict_type_error():
    same_error(lambda lib: classes(lib)[0](1, 1).load_state_dict([("weight", lib.ones(1, 1))]))


def test_state_dict_hooks():
    def run(lib):
        log = []
        m = classes(lib)[1]()
        m.fc.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: log.append(("pre", prefix, keep_vars)))
        m.fc.register_state_dict_post_hook(lambda mod, sd, prefix, meta: log.append(("post", prefix, list(sd),
                                                                                      dict(meta))))
        m._register_state_dict_hook(lambda mod, sd, prefix, meta: {"replaced": 1})
        out = m.state_dict()
        return log, dict(out)
    same(run)


def test_state_dict_post_hook_must_return_none():
    def run(lib):
        m = classes(lib)[0](1, 1)
        m.register_state_dict_post_hook(lambda *a: {})
        m.state_dict()
    same_error(run)


def test_state_dict_post_hook_not_also_private():
    def run(lib):
        m = classes(lib)[0](1, 1)

        def hook(*a):
            return None
        m.register_state_dict_post_hook(hook)
        m._register_state_dict_hook(hook)
    same_error(run)


def test_load_state_dict_hooks():
    def run(lib):
        log = []
        m = classes(lib)[1]()

        def pre(mod, sd, prefix, meta, strict, missing, unexpected, errors):
            log.append(("pre", type(mod).__name__, prefix, sorted(sd), dict(meta), strict))
            sd.pop(prefix + "bias", None)

        def post(mod, keys):
            log.append(("post", type(mod).__name__, list(keys.missing_keys), list(keys.unexpected_keys)))
            keys.missing_keys.clear()

        m.fc.register_load_state_dict_pre_hook(pre)
        m.register_load_state_dict_post_hook(post)
        result = m.load_state_dict(m.state_dict())
        return log, tuple(result)
    same(run)


def test_load_state_dict_post_hook_must_return_none():
    def run(lib):
        m = classes(lib)[0](1, 1)
        m.register_load_state_dict_post_hook(lambda mod, keys: 1)
        m.load_state_dict(m.state_dict())
    same_error(run)


def test_version_and_load_from_state_dict_override():
    def run(lib):
        Lin = classes(lib)[0]
        seen = []

        class Versioned(Lin):
            _version = 3

            def _load_from_state_dict(self, sd, prefix, meta, strict, missing, unexpected, errors):
                seen.append((prefix, meta.get("version"), sorted(sd)))
                if meta.get("version") == 3 and prefix + "old_name" in sd:
                    sd[prefix + "bias"] = sd.pop(prefix + "old_name")
                super()._load_from_state_dict(sd, prefix, meta, strict, missing, unexpected, errors)

        outer = lib.nn.Module()
        outer.v = Versioned(1, 1)
        sd = outer.state_dict()
        sd["v.old_name"] = sd.pop("v.bias") + 7
        outer.load_state_dict(sd)
        return seen, sd._metadata["v"], outer.v.bias.tolist()
    same(run)


def test_save_to_state_dict_override_and_extra_state():
    def run(lib):
        Lin = classes(lib)[0]

        class Extra(Lin):
            def get_extra_state(self):
                return {"n": 5}

            def set_extra_state(self, state):
                self.loaded = state

        m = Extra(1, 1)
        sd = m.state_dict()
        m.load_state_dict(sd)
        missing = m.load_state_dict({k: v for k, v in sd.items() if k != "_extra_state"}, strict=False)
        plain = Lin(1, 1).load_state_dict(sd, strict=False)
        return list(sd), sd["_extra_state"], m.loaded, tuple(missing), tuple(plain)
    same(run)


# ---- modes, grads, conversion ----------------------------------------------------------------------------------
def test_train_eval_requires_grad_zero_grad():
    def run(lib):
        m = classes(lib)[1]()
        m.eval()
        modes = [mod.training for mod in m.modules()]
        m.train()
        m.fc.train(False)
        modes2 = [mod.training for mod in m.modules()]
        m.requires_grad_(False)
        rg = [p.requires_grad for p in m.parameters()]
        m.requires_grad_()
        m(lib.ones(4, 2)).sum().backward()
        m.zero_grad(set_to_none=False)
        zeros = [p.grad.abs().sum().item() for p in m.parameters()]
        m.zero_grad()
        return modes, modes2, rg, zeros, [p.grad for p in m.parameters()]
    same(run)


def test_train_mode_must_be_bool():
    same_error(lambda lib: lib.nn.Module().train("yes"))


def test_apply_order():
    def run(lib):
        seen = []
        m = classes(lib)[1]()
        out = m.apply(lambda mod: seen.append(type(mod).__name__))
        return seen, out is m
    same(run)


@pytest.mark.parametrize("convert", ["double", "half", "float", "bfloat16", "to_double", "to_tensor", "type"])
def test_conversion_keeps_parameter_identity(convert):
    def run(lib):
        m = classes(lib)[1]()
        m(lib.ones(3, 2)).sum().backward()
        w = m.fc.weight
        calls = {"double": lambda: m.double(), "half": lambda: m.half(), "float": lambda: m.double().float(),
                 "bfloat16": lambda: m.bfloat16(), "to_double": lambda: m.to(lib.float64),
                 "to_tensor": lambda: m.to(lib.ones(1, dtype=lib.float16)),
                 "type": lambda: m.type(lib.float64)}
        out = calls[convert]()
        return (out is m, m.fc.weight is w, type(w).__name__, str(w.dtype).split(".")[1],
                str(w.grad.dtype).split(".")[1], str(m.steps.dtype).split(".")[1], str(m.rb.dtype).split(".")[1],
                w.requires_grad, w.is_leaf)
    same(run)


def test_to_device_and_cpu():
    def run(lib):
        m = classes(lib)[1]()
        w = m.fc.weight
        m.to("cpu", non_blocking=True)
        m.cpu()
        m.to(device=lib.device("cpu"), dtype=lib.float64)
        return m.fc.weight is w, str(w.device), str(w.dtype).split(".")[1]
    same(run)


@pytest.mark.parametrize("args", [("int32",), ("copy",)])
def test_to_rejects(args):
    def run(lib):
        m = classes(lib)[0](1, 1)
        m.to(lib.int32) if args == ("int32",) else m.to(lib.float64, copy=True)
    same_error(run)


def test_to_complex_warns():
    def run(lib):
        m = classes(lib)[0](1, 1)
        with pytest.warns(UserWarning, match="Complex modules are a new feature"):
            m.to(lib.complex64)
        return str(m.weight.dtype).split(".")[1]
    same(run)


def test_cuda_moves_or_explains():
    m = classes(lantern)[0](1, 1)
    w = m.weight
    if lantern.cuda.is_available():
        assert m.cuda() is m and m.weight is w and w.is_cuda
    else:
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            m.cuda()


# ---- lookup, repr, dir -----------------------------------------------------------------------------------------
def test_get_submodule_parameter_buffer():
    def run(lib):
        m = lib.nn.Module()
        m.net = classes(lib)[1]()
        return (type(m.get_submodule("net.fc")).__name__, m.get_submodule("") is m,
                m.get_parameter("net.fc.weight") is m.net.fc.weight, m.get_buffer("net.rb") is m.net.rb,
                m.get_parameter("net.scale").shape == ())
    same(run)


LOOKUP_ERRORS = {
    "no submodule": lambda m: m.get_submodule("net.nope"),
    "not a module": lambda m: m.get_submodule("net.scale.x"),
    "no parameter": lambda m: m.get_parameter("net.fc.nope"),
    "not a parameter": lambda m: m.get_parameter("net.rb"),
    "no buffer": lambda m: m.get_buffer("net.nope"),
    "not a buffer": lambda m: m.get_buffer("net.scale"),
    "set empty target": lambda m: m.set_submodule("", m),
    "set strict missing": lambda m: m.set_submodule("net.zz", m.net.fc, strict=True),
}


@pytest.mark.parametrize("name", LOOKUP_ERRORS)
def test_lookup_errors(name):
    def run(lib):
        m = lib.nn.Module()
        m.net = classes(lib)[1]()
        LOOKUP_ERRORS[name](m)
    same_error(run)


def test_set_submodule():
    def run(lib):
        m = lib.nn.Module()
        m.net = classes(lib)[1]()
        m.set_submodule("net.fc", classes(lib)[0](2, 3, bias=False))
        m.set_submodule("net.new", classes(lib)[0](1, 1))
        return repr(m)
    same(run)


def test_nested_repr():
    def run(lib):
        Lin = classes(lib)[0]

        class Multi(lib.nn.Module):
            def extra_repr(self):
                return "a=1\nb=2"

        m = classes(lib)[1]()
        m.multi = Multi()
        m.multi.inner = Lin(1, 2, bias=False)
        m.empty = lib.nn.Module()
        m.none = None
        return repr(m), str(Lin(2, 3)), repr(lib.nn.Module())
    same(run)


def test_dir_lists_members():
    def run(lib):
        names = dir(classes(lib)[1]())
        return [n for n in ("fc", "rb", "scale", "steps", "forward", "training", "state_dict") if n in names]
    same(run)


# ---- copying ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_copy_model_keeps_sharing(how):
    def run(lib):
        m = classes(lib)[2]()
        m.register_forward_hook(_pickleable_hook)
        m2 = copy.deepcopy(m) if how == "deepcopy" else pickle.loads(pickle.dumps(m))
        x = lib.ones(1, 2)
        return (m2.b.weight is m2.a.weight, m2.c is m2.a, m2.a.weight is not m.a.weight,
                type(m2.a.weight).__name__, m2.a.weight.requires_grad, list(m2.state_dict()),
                m2(x).tolist() == m(x).tolist(), len(m2._forward_hooks))
    same(run)


def _pickleable_hook(module, args, output):
    return None


# ---- with the real layers --------------------------------------------------------------------------------------
def test_with_nn_linear():
    def run(lib):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.Linear(3, 1, bias=False))
        m.double()
        return (repr(m), list(m.state_dict()), [tuple(p.shape) for p in m.parameters()],
                m[0].weight.dtype.is_floating_point)
    same(run)


def test_linear_state_dict_error_names_class():
    same_error(lambda lib: lib.nn.Linear(2, 3).load_state_dict({"weight": lib.ones(3, 3)}))


def test_load_torch_weights_into_lantern():
    tm = torch.nn.Linear(2, 3)
    lm = lantern.nn.Linear(2, 3)
    lm.load_state_dict({k: lantern.tensor(as_numpy(v)) for k, v in tm.state_dict().items()})
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    np.testing.assert_allclose(as_numpy(lm(lantern.tensor(x))), as_numpy(tm(torch.tensor(x))), rtol=1e-6)


def test_tensor_to_positional_bools_are_non_blocking_then_copy():
    same(lambda lib: [lib.ones(2).to("cpu", None, True).data_ptr() != 0,
                      *(t.to(*args) is t for t in [lib.ones(2)] for args in
                        [("cpu", None, True), ("cpu", None, False, True), (lib.float32, False, True)])])


def test_to_meta_makes_new_parameters_and_back_needs_to_empty():
    def run(lib):
        m = classes(lib)[1]()
        w = m.fc.weight
        m(lib.ones(1, 2)).sum().backward()
        m.to("meta")
        out = [m.fc.weight is w, type(m.fc.weight).__name__, str(m.fc.weight.device), m.fc.weight.grad.is_meta,
               m.fc.weight.requires_grad]
        m.fc.weight.requires_grad_(False)
        try:
            m.to("cpu")
        except NotImplementedError as e:
            out.append(str(e).replace("lantern", "torch"))
        meta_w = m.fc.weight
        m.to_empty(device="cpu")
        out += [m.fc.weight is meta_w, str(m.fc.weight.device), m.fc.weight.requires_grad]
        return out
    same(run)


def test_deepcopy_rebinds_load_pre_hook_module():
    def run(lib):
        seen = []
        m = classes(lib)[0](1, 1)
        m.register_load_state_dict_pre_hook(lambda mod, *rest: seen.append(mod))
        m2 = copy.deepcopy(m)
        m2.load_state_dict(m2.state_dict())
        return seen[0] is m2, seen[0] is m
    same(run)


def test_uninitialized_parameter_materializes():
    def run(lib):
        p = lib.nn.UninitializedParameter()
        out = [type(p).__name__, repr(p), lib.nn.parameter.is_lazy(p), p.requires_grad]
        try:
            p.shape
        except RuntimeError as e:
            out.append(str(e))
        p.materialize((2, 3), dtype=lib.float64)
        out += [type(p).__name__, tuple(p.shape), str(p.dtype).split(".")[1], lib.nn.parameter.is_lazy(p)]
        b = lib.nn.UninitializedBuffer()
        b.materialize((2,))
        return out + [type(b).__name__, isinstance(b, lib.nn.Buffer)]
    same(run)


def test_none_parameter_is_skipped_and_unexpected_on_load():
    def run(lib):
        m = classes(lib)[0](2, 1, bias=False)
        out = [list(m.state_dict()), [n for n, _ in m.named_parameters()], m.bias, "bias" in m._parameters]
        result = m.load_state_dict({"weight": lib.ones(1, 2), "bias": lib.ones(1)}, strict=False)
        return out + [tuple(result)]
    same(run)
