"""Module hooks against torch: forward pre-hooks and hooks (module and global), full backward hooks, registration
hooks, handles, and their error messages."""
import warnings

import pytest
import torch

import lantern
from nn_oracle import same, same_error

LIBS = (torch, lantern)


def mod(lib):
    return lib.nn.modules.module


def scaled(lib):
    class M(lib.nn.Module):
        def forward(self, x, scale=1.0):
            self.log.append(("forward", x.tolist(), scale))
            return x * scale

    m = M()
    m.log = []
    return m


def fmt(grads):
    return tuple(None if g is None else (tuple(g.shape), g.tolist()) for g in grads)


# ---- forward hooks ----------------------------------------------------------------------------------------------
def test_hook_order_case_16():
    def run(lib):
        m = scaled(lib)
        log = m.log
        handles = [
            mod(lib).register_module_forward_pre_hook(lambda mm, args: log.append("gpre")),
            m.register_forward_pre_hook(lambda mm, args: (log.append("pre1"), (args[0] + 1,))[1]),
            m.register_forward_pre_hook(lambda mm, args: log.append("pre_prepend"), prepend=True),
            m.register_forward_pre_hook(lambda mm, args, kw: (log.append(("pre_kw", kw)), (args, {"scale": 10.}))[1],
                                        with_kwargs=True),
            m.register_forward_hook(lambda mm, args, out: (log.append(("fwd", out.tolist())), out * 2)[1]),
            mod(lib).register_module_forward_hook(lambda mm, args, out: log.append(("gfwd", out.tolist()))),
        ]
        y = m(lib.tensor([1.]), scale=3.)
        for h in handles:
            h.remove()
        z = m(lib.tensor([1.]))
        return log, y.tolist(), z.tolist()
    assert same(run)[1] == [40.]


def test_pre_hook_non_tuple_is_wrapped_and_kwargs_hidden():
    def run(lib):
        m = scaled(lib)
        seen = []
        m.register_forward_pre_hook(lambda mm, args: (seen.append(len(args)), args[0] * 5)[1])
        out = m(lib.tensor([2.]), scale=2.)
        return seen, out.tolist(), m.log
    same(run)


def test_bad_kwargs_pre_hook_return_case_17():
    def run(lib):
        m = scaled(lib)
        m.register_forward_pre_hook(lambda mm, args, kw: 5, with_kwargs=True)
        m(lib.ones(1))
    same_error(run)


def test_forward_hook_with_kwargs_and_prepend():
    def run(lib):
        m = scaled(lib)
        log = m.log
        m.register_forward_hook(lambda mm, args, kw, out: log.append(("kw", kw, out.tolist())), with_kwargs=True)
        m.register_forward_hook(lambda mm, args, out: log.append(("first", len(args))), prepend=True)
        mod_h = mod(lib).register_module_forward_hook(lambda mm, args, kw, out: log.append(("gkw", kw)),
                                                       with_kwargs=True)
        try:
            m(lib.ones(1), scale=4.)
        finally:
            mod_h.remove()
        return log
    same(run)


def test_always_call_hooks_run_when_forward_raises():
    def run(lib):
        class Bad(lib.nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        m = Bad()
        log = []
        m.register_forward_hook(lambda mm, args, out: log.append(("always", out)), always_call=True)
        m.register_forward_hook(lambda mm, args, out: log.append("never"))
        m.register_forward_hook(lambda mm, args, out: 1 / 0, always_call=True)
        h = mod(lib).register_module_forward_hook(lambda mm, args, out: log.append("global always"),
                                                  always_call=True)
        try:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                with pytest.raises(ValueError, match="boom"):
                    m(lib.ones(1))
        finally:
            h.remove()
        return log, [str(x.message) for x in w]
    same(run)


def test_handles_clean_their_flag_dicts():
    def run(lib):
        m = scaled(lib)
        h1 = m.register_forward_hook(lambda *a: None, with_kwargs=True, always_call=True)
        h2 = m.register_forward_pre_hook(lambda *a: None, with_kwargs=True)
        sizes = [len(d) for d in (m._forward_hooks, m._forward_hooks_with_kwargs, m._forward_hooks_always_called,
                                  m._forward_pre_hooks, m._forward_pre_hooks_with_kwargs)]
        with h1:
            pass
        h2.remove()
        h2.remove()
        return sizes, [len(d) for d in (m._forward_hooks, m._forward_hooks_with_kwargs,
                                        m._forward_hooks_always_called, m._forward_pre_hooks,
                                        m._forward_pre_hooks_with_kwargs)], type(h1).__name__
    same(run)


def test_no_hooks_fast_path_leaves_no_wrapper():
    def run(lib):
        m = scaled(lib)
        x = lib.ones(2, requires_grad=True)
        plain = m(x).grad_fn.name()
        h = m.register_full_backward_hook(lambda *a: None)
        hooked = m(x).grad_fn.name()
        h.remove()
        return plain, hooked, m(x).grad_fn.name()
    assert same(run)[1] == "BackwardHookFunctionBackward"


def test_hooks_on_children_of_a_model():
    def run(lib):
        class Two(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = scaled(lib)
                self.b = scaled(lib)

            def forward(self, x):
                return self.b(self.a(x, 2.), 3.)

        log = []
        net = Two()
        for name, sub in net.named_modules():
            sub.register_forward_hook(lambda mm, args, out, name=name: log.append((name, out.tolist())))
        h = mod(lib).register_module_forward_pre_hook(lambda mm, args: log.append(type(mm).__name__))
        try:
            net(lib.ones(1))
        finally:
            h.remove()
        return log
    same(run)


# ---- backward hooks ---------------------------------------------------------------------------------------------
def lin(lib):
    class Lin(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = lib.nn.Parameter(lib.tensor([[1., 2.]]))
            self.bias = lib.nn.Parameter(lib.tensor([0.5]))

        def forward(self, x):
            return x @ self.weight.t() + self.bias

    return Lin()


def test_full_backward_hooks_case_18():
    def run(lib):
        m = lin(lib)
        log = []
        m.register_full_backward_pre_hook(lambda mm, go: log.append(("bpre", fmt(go))))
        m.register_full_backward_hook(lambda mm, gi, go: log.append(("bwd", fmt(gi), fmt(go))))
        x = lib.ones(3, 2, requires_grad=True)
        m(x).sum().backward()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m(lib.ones(3, 2)).sum().backward()
        return log, [x.category.__name__ for x in w], [str(x.message) for x in w]
    same(run)


def test_backward_hook_order_global_before_module():
    def run(lib):
        m = lin(lib)
        log = []
        handles = [mod(lib).register_module_full_backward_hook(lambda mm, gi, go: log.append("gbwd")),
                   mod(lib).register_module_full_backward_pre_hook(lambda mm, go: log.append("gpre")),
                   m.register_full_backward_hook(lambda mm, gi, go: log.append("bwd")),
                   m.register_full_backward_hook(lambda mm, gi, go: log.append("bwd_first"), prepend=True),
                   m.register_full_backward_pre_hook(lambda mm, go: log.append("pre")),
                   m.register_full_backward_pre_hook(lambda mm, go: log.append("pre_first"), prepend=True)]
        try:
            m(lib.ones(1, 2, requires_grad=True)).sum().backward()
        finally:
            for h in handles:
                h.remove()
        return log
    same(run)


def test_backward_hooks_replace_gradients():
    def run(lib):
        m = lin(lib)
        m.register_full_backward_pre_hook(lambda mm, go: (go[0] * 10,))
        m.register_full_backward_hook(lambda mm, gi, go: (gi[0] + 1,))
        x = lib.ones(2, 2, requires_grad=True)
        m(x).sum().backward()
        return x.grad.tolist(), m.weight.grad.tolist(), m.bias.grad.tolist()
    same(run)


def test_backward_hook_inputs_with_non_tensors():
    def run(lib):
        class Mixed(lib.nn.Module):
            def forward(self, a, k, b, c):
                return a * b * k + c.sum(), a.sum()

        m = Mixed()
        log = []
        m.register_full_backward_hook(lambda mm, gi, go: log.append((fmt(gi), fmt(go))))
        a = lib.tensor([1., 2.], requires_grad=True)
        b = lib.tensor([3., 4.])
        c = lib.tensor([1, 2])
        out, s = m(a, 2., b, c)
        out.sum().backward()
        return log
    same(run)


def test_backward_hook_wrong_count():
    def run(lib):
        m = lin(lib)
        m.register_full_backward_hook(lambda mm, gi, go: (gi[0], gi[0]))
        m(lib.ones(1, 2, requires_grad=True)).sum().backward()
    same_error(run)


def test_backward_pre_hook_wrong_count():
    def run(lib):
        m = lin(lib)
        m.register_full_backward_pre_hook(lambda mm, go: (go[0], go[0]))
        m(lib.ones(1, 2, requires_grad=True)).sum().backward()
    same_error(run)


def test_no_input_grad_hook_must_return_none():
    def run(lib):
        m = lin(lib)
        m.register_full_backward_hook(lambda mm, gi, go: (lib.ones(1, 2),))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m(lib.ones(1, 2)).sum().backward()
    same_error(run)


@pytest.mark.parametrize("outputs", [1, 2])
def test_inplace_on_hooked_output_errors(outputs):
    def run(lib):
        class Out(lib.nn.Module):
            def forward(self, x):
                return (x * 2, x * 3) if outputs == 2 else x * 2

        m = Out()
        m.register_full_backward_hook(lambda *a: None)
        out = m(lib.ones(2, requires_grad=True))
        (out[0] if outputs == 2 else out).add_(1)
    same_error(run)


@pytest.mark.parametrize("order", ["legacy first", "full first"])
def test_mixing_legacy_and_full_backward_hooks(order):
    def run(lib):
        m = lin(lib)
        if order == "legacy first":
            m.register_backward_hook(lambda *a: None)
            m.register_full_backward_hook(lambda *a: None)
        else:
            m.register_full_backward_hook(lambda *a: None)
            m.register_backward_hook(lambda *a: None)
    same_error(run)


def test_mixing_global_backward_hooks():
    def run(lib):
        h = mod(lib).register_module_full_backward_hook(lambda *a: None)
        try:
            mod(lib).register_module_backward_hook(lambda *a: None)
        finally:
            h.remove()
            mod(lib)._global_is_full_backward_hook = None
    same_error(run)


def test_legacy_backward_hook_sees_output_node():
    def run(lib):
        m = lin(lib)
        log = []
        m.register_backward_hook(lambda mm, gi, go: log.append((len(gi), fmt(go))))
        with pytest.warns(FutureWarning) as w:
            m(lib.ones(1, 2, requires_grad=True)).sum().backward()
        return log, [str(x.message) for x in w]
    same(run)


# ---- registration hooks ----------------------------------------------------------------------------------------
def test_registration_hooks():
    def run(lib):
        log = []
        handles = [
            mod(lib).register_module_parameter_registration_hook(
                lambda m, name, p: (log.append(("param", name)), lib.nn.Parameter(p * 0))[1]),
            mod(lib).register_module_buffer_registration_hook(lambda m, name, b: log.append(("buffer", name))),
            mod(lib).register_module_module_registration_hook(lambda m, name, s: log.append(("module", name))),
        ]
        try:
            m = lib.nn.Module()
            m.w = lib.nn.Parameter(lib.ones(2))
            m.register_buffer("b", lib.ones(1))
            m.sub = lib.nn.Module()
            m.add_module("sub2", None)
        finally:
            for h in handles:
                h.remove()
        m.v = lib.nn.Parameter(lib.ones(1))
        return log, m.w.tolist()
    same(run)
