"""Autograd tools against torch: gradcheck / gradgradcheck, autograd.functional, anomaly mode,
saved_tensors_hooks, and the grad modes (context managers, decorators, functions, thread-locality).
"""
import importlib
import threading
import warnings

import numpy as np
import pytest
import torch

import lantern
from lantern.core import state
from test_autograd_function import both, errors, square_function

F64 = dict(dtype=np.float64)


def t64(lib, values, requires_grad=True):
    return lib.tensor(values, dtype=lib.float64, requires_grad=requires_grad)


# ---- gradcheck / gradgradcheck ----------------------------------------------------------------------------------
def test_gradcheck_passes_and_returns_true():
    def run(lib):
        x = t64(lib, [[0.3, -1.2], [0.7, 2.0]])
        w = t64(lib, [[1.5, 0.5], [-0.5, 1.0]])
        f = lambda a, b: (a.mm(b).tanh() * a).sum(0)  # noqa: E731
        return lib.autograd.gradcheck(f, (x, w)), lib.autograd.gradgradcheck(f, (x, w))
    assert both(run) == (True, True)


def _wrong_backward(lib):
    class Wrong(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3
    return Wrong


def test_gradcheck_failure_raises_gradcheck_error():
    for lib in (torch, lantern):
        error_class = importlib.import_module(f"{lib.__name__}.autograd.gradcheck").GradcheckError
        with pytest.raises(error_class) as info:
            lib.autograd.gradcheck(_wrong_backward(lib).apply, (t64(lib, [1.0, 2.0]),))
        assert str(info.value).startswith("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:")
    assert issubclass(lantern.autograd.GradcheckError, RuntimeError)


def test_gradcheck_failure_without_raising_returns_false():
    def run(lib):
        return lib.autograd.gradcheck(_wrong_backward(lib).apply, (t64(lib, [1.0, 2.0]),), raise_exception=False)
    assert both(run) is False


def test_gradcheck_warns_on_single_precision():
    def run(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.autograd.gradcheck(lambda x: x * 2, (lib.tensor([1.0, 2.0], requires_grad=True),), eps=1e-2,
                                   atol=1e-2)
        return [str(w.message)[:60] for w in caught if issubclass(w.category, UserWarning)]
    assert both(run)[0].startswith("Input #0 requires gradient and is not a double precision")


def test_gradcheck_needs_an_input_requiring_grad():
    t, l = errors(lambda lib: lib.autograd.gradcheck(lambda x: x * 2, (t64(lib, [1.0], requires_grad=False),)))
    assert l == t


def test_gradcheck_with_several_outputs_and_inputs_not_requiring_grad():
    def run(lib):
        x = t64(lib, [0.5, 1.5, -0.5])
        k = t64(lib, [2.0, 3.0, 4.0], requires_grad=False)
        return lib.autograd.gradcheck(lambda a, b: (a * b, a.exp(), b), (x, k))
    assert both(run) is True


def test_gradgradcheck_catches_wrong_second_derivative():
    class DetachedSquare(lantern.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * g * x.detach()
    x = t64(lantern, [0.5, 1.5])
    assert lantern.autograd.gradcheck(DetachedSquare.apply, (x,))
    assert lantern.autograd.gradgradcheck(DetachedSquare.apply, (x,), raise_exception=False) is False


# ---- autograd.functional --------------------------------------------------------------------------------------------
def cube(x):
    return x ** 3


def mixed(x, y):
    return (x * y.sin()).sum(), x.exp() * y


@pytest.mark.parametrize("what", ["jacobian_single", "jacobian_tuple_in", "jacobian_tuple_out", "hessian",
                                  "hessian_tuple", "vjp", "jvp", "hvp", "vhp", "jacobian_create_graph"])
def test_functional_matches_torch(what):
    def run(lib):
        F = lib.autograd.functional
        x = t64(lib, [0.5, -1.0, 2.0], requires_grad=False)
        y = t64(lib, [1.5, 0.25, -0.5], requires_grad=False)
        v = t64(lib, [1.0, -2.0, 0.5], requires_grad=False)
        if what == "jacobian_single":
            return F.jacobian(cube, x)
        if what == "jacobian_tuple_in":
            return F.jacobian(lambda a, b: a * b, (x, y))
        if what == "jacobian_tuple_out":
            return F.jacobian(mixed, (x, y))
        if what == "hessian":
            return F.hessian(lambda a: (a ** 3).sum() + a.prod(), x)
        if what == "hessian_tuple":
            return F.hessian(lambda a, b: (a * b * b).sum(), (x, y))
        if what == "vjp":
            return F.vjp(cube, x, v)
        if what == "jvp":
            return F.jvp(cube, x, v)
        if what == "hvp":
            return F.hvp(lambda a: (a ** 3).sum(), x, v)
        if what == "vhp":
            return F.vhp(lambda a: (a.sin() * a).sum(), x, v)
        xr = x.clone().requires_grad_()
        jac = F.jacobian(cube, xr, create_graph=True)
        return jac, lib.autograd.grad(jac.sum(), xr)
    both(run)


def test_functional_strict_mode_raises():
    t, l = errors(lambda lib: lib.autograd.functional.jacobian(lambda a, b: a * 2, (t64(lib, [1.]), t64(lib, [2.])),
                                                               strict=True))
    assert l == t


def test_functional_vjp_needs_v_for_non_scalar_output():
    t, l = errors(lambda lib: lib.autograd.functional.vjp(cube, t64(lib, [1., 2.], requires_grad=False)))
    assert l == t


# ---- anomaly mode ------------------------------------------------------------------------------------------------
def test_anomaly_mode_nan_raises_naming_node_with_forward_traceback():
    def run(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with lib.autograd.detect_anomaly():
                x = lib.tensor([0.0], requires_grad=True)
                y = x.sqrt() * 0  # the line the traceback must show
                try:
                    y.sum().backward()
                except RuntimeError as e:
                    err = str(e)
        texts = [str(w.message) for w in caught]
        return err, texts[0], texts[1].split(".")[0], "y = x.sqrt() * 0" in texts[1]
    got = both(run)
    assert got[0] == "Function 'SqrtBackward0' returned nan values in its 0th output."
    assert got[3] is True


def anomaly_state(lib):
    # lantern.is_anomaly_enabled is not exported at the top level yet (lantern/__init__.py): read autograd's
    owner = torch if lib is torch else lantern.autograd
    return owner.is_anomaly_enabled(), owner.is_anomaly_check_nan_enabled()


def test_anomaly_mode_without_nan_check_and_state_functions():
    def run(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly(check_nan=False):
                x = lib.tensor([0.0], requires_grad=True)
                (x.sqrt() * 0).sum().backward()
                inside = anomaly_state(lib)
            lib.autograd.set_detect_anomaly(True)
            on = anomaly_state(lib)
            lib.autograd.set_detect_anomaly(False)
        return x.grad, inside, on, anomaly_state(lib)
    both(run)


def test_anomaly_mode_reports_error_in_backward():
    def run(lib):
        class Boom(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 1

            @staticmethod
            def backward(ctx, g):
                raise ValueError("boom")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with lib.autograd.detect_anomaly():
                y = Boom.apply(lib.ones(1, requires_grad=True))
                with pytest.raises(ValueError):
                    y.backward()
        return [str(w.message).split(".")[0] for w in caught]
    both(run)


# ---- saved_tensors_hooks -------------------------------------------------------------------------------------------
def test_saved_tensors_hooks_pack_and_unpack():
    def run(lib):
        log = []
        x = lib.tensor([1., 2.], requires_grad=True)

        def pack(t):
            log.append(("pack", tuple(t.shape), t is x, t.requires_grad))
            return t

        def unpack(t):
            log.append(("unpack", tuple(t.shape)))
            return t
        with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = x.exp()
            z = y * x
        z.sum().backward()
        return log, x.grad
    both(run)


def test_saved_tensors_hooks_can_replace_storage():
    def run(lib):
        store = {}

        def pack(t):
            store[len(store)] = t.detach().clone()
            return len(store) - 1

        x = lib.tensor([1., 2.], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(pack, lambda k: store[k]):
            y = x.pow(3)
        facts = (y.grad_fn._saved_self is x, y.grad_fn._saved_self.tolist())
        y.sum().backward()
        return facts, x.grad, len(store)
    both(run)


def test_saved_tensors_hooks_skip_version_check():
    def run(lib):
        w = lib.tensor([1., 2.], requires_grad=True) * 1
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = w * w
        w.add_(1)
        y.sum().backward()
        return "no error"
    both(run)


def test_saved_tensors_hooks_nest_and_apply_to_functions():
    def run(lib):
        log = []

        Square = square_function(lib)
        x = lib.tensor([3.], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: log.append("outer") or t, lambda t: t):
            with lib.autograd.graph.saved_tensors_hooks(lambda t: log.append("inner") or t, lambda t: t):
                y = Square.apply(x)
            z = y.exp()
        z.backward()
        return log, x.grad
    both(run)


# ---- grad modes ----------------------------------------------------------------------------------------------------
def test_no_grad_context_decorator_and_generators():
    def run(lib):
        x = lib.ones(2, requires_grad=True)

        @lib.no_grad()
        def f(a):
            return a * 2, lib.is_grad_enabled()

        @lib.no_grad()
        def gen(a):
            yield a * 2, lib.is_grad_enabled()
            yield a * 3, lib.is_grad_enabled()
        with lib.no_grad():
            inner = (x * 2).requires_grad, lib.is_grad_enabled()
        out = f(x)
        steps = [(y.requires_grad, e) for y, e in gen(x)]
        return inner, (out[0].requires_grad, out[1]), steps, lib.is_grad_enabled()
    assert both(run) == ((False, False), (False, False), [(False, False), (False, False)], True)


def test_enable_grad_inside_no_grad():
    def run(lib):
        x = lib.ones(2, requires_grad=True)

        @lib.enable_grad()
        def f(a):
            return a * 2
        with lib.no_grad():
            with lib.enable_grad():
                a = x * 2
            b = f(x)
            c = x * 2
        return a.requires_grad, b.requires_grad, c.requires_grad
    assert both(run) == (True, True, False)


def test_set_grad_enabled_as_function_context_and_decorator():
    def run(lib):
        x = lib.ones(2, requires_grad=True)
        lib.set_grad_enabled(False)
        a = (x * 2).requires_grad
        lib.set_grad_enabled(True)
        with lib.set_grad_enabled(False):
            b = (x * 2).requires_grad
        after = lib.is_grad_enabled()

        @lib.set_grad_enabled(False)
        def f(a):
            return (a * 2).requires_grad
        return a, b, after, f(x), lib.is_grad_enabled()
    assert both(run) == (False, False, True, False, True)


def test_inference_mode():
    def run(lib):
        x = lib.ones(2, requires_grad=True)
        with lib.inference_mode():
            y = x * 2
            inside = lib.is_inference_mode_enabled(), lib.is_grad_enabled()
        with lib.inference_mode(False):
            z = x * 2

        @lib.inference_mode()
        def f(a):
            return (a * 2).requires_grad
        return y.requires_grad, y.grad_fn is None, inside, z.requires_grad, f(x), lib.is_inference_mode_enabled()
    assert both(run) == (False, True, (True, False), True, False, False)


def test_inference_tensors_are_marked_and_kept_out_of_autograd():
    def run(lib):
        seen = []
        with lib.inference_mode():
            a = lib.ones(2) * 2
            a.add_(1)  # writing inside the mode is fine
        seen.append((a.is_inference(), lib.ones(2).is_inference()))
        for attempt in (lambda: a.requires_grad_(), lambda: a.add_(1),
                        lambda: (a * lib.ones(2, requires_grad=True)).sum()):
            try:
                attempt()
                seen.append("no error")
            except RuntimeError as e:
                seen.append(str(e).split(" ")[0])
        return seen
    assert run(lantern) == run(torch)


def test_grad_mode_is_thread_local():
    def run(lib):
        seen = {}

        def worker():
            seen["worker_starts"] = lib.is_grad_enabled()
            with lib.no_grad():
                seen["worker_inside"] = lib.is_grad_enabled()
                started.set()
                resume.wait()
        started, resume = threading.Event(), threading.Event()
        thread = threading.Thread(target=worker)
        with lib.no_grad():
            thread.start()
            started.wait()
            seen["main_in_no_grad"] = lib.is_grad_enabled()
        seen["main_while_worker_in_no_grad"] = lib.is_grad_enabled()
        resume.set()
        thread.join()
        return sorted(seen.items())
    assert dict(both(run)) == {"worker_starts": True, "worker_inside": False, "main_in_no_grad": False,
                               "main_while_worker_in_no_grad": True}


def test_hooks_and_modes_on_another_thread_leave_this_one_alone():
    """saved_tensors_hooks and dispatch modes are per thread; the hot paths' process-wide sets of threads
    (lantern.core.state) only say that some thread has one on, and are empty again once it is off."""
    def run(lib):
        packed, seen = [], []

        class Watch(importlib.import_module(f"{lib.__name__}.utils._python_dispatch").TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                seen.append("op")
                return func(*args, **(kwargs or {}))

        def worker():
            with lib.autograd.graph.saved_tensors_hooks(lambda t: packed.append("pack") or t, lambda t: t), Watch():
                (x * x).sum().backward()
                started.set()
                resume.wait()
        x = lib.tensor([1., 2.], requires_grad=True)
        started, resume = threading.Event(), threading.Event()
        thread = threading.Thread(target=worker)
        thread.start()
        started.wait()
        counts = len(packed), len(seen)
        y = (x * x.exp()).sum()
        y.backward()
        after = len(packed), len(seen)
        resume.set()
        thread.join()
        return counts == after, after[0], x.grad  # how many ops a mode sees in backward differs from torch
    both(run)
    assert not state.observing_threads and not state.unplain_threads


def test_backward_in_a_thread():
    def run(lib):
        x = lib.tensor([1., 2.], requires_grad=True)
        out = {}

        def worker():
            y = (x * x).sum()
            y.backward()
            out["grad"] = x.grad.clone()
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        return out["grad"]
    both(run)
