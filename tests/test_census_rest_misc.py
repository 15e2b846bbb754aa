"""torch.autograd's engine settings (set_multithreading_enabled, enforce_grad_layout_policy) and
torch.testing.FileCheck against torch."""
import threading

import pytest
import torch

import lantern

LIBS = (torch, lantern)


# ---- autograd engine settings ---------------------------------------------------------------------------------------
def _layout_run(lib, enable, use):
    """A permuted leaf whose incoming gradient is contiguous: its .grad's strides under the policy."""
    lib.manual_seed(0)
    p = lib.randn(2, 3, 4).permute(2, 0, 1).detach().requires_grad_()
    w = lib.randn(4, 2, 3)
    if use == "context":
        with lib.autograd.enforce_grad_layout_policy(enable):
            (p.contiguous() * w).sum().backward()
    elif use == "decorator":
        lib.autograd.enforce_grad_layout_policy(enable)(lambda: (p.contiguous() * w).sum().backward())()
    else:
        previous = lib.autograd.enforce_grad_layout_policy(enable)
        (p.contiguous() * w).sum().backward()
        lib.autograd.enforce_grad_layout_policy(previous.prev)
    second = p.grad
    (p.contiguous() * w).sum().backward()  # later gradients are added into .grad, which keeps its layout
    return p.grad.stride(), second.stride(), bool(lib.equal(p.grad, 2 * w))


@pytest.mark.parametrize("enable", [True, False])
@pytest.mark.parametrize("use", ["context", "decorator", "function"])
def test_enforce_grad_layout_policy_like_torch(enable, use):
    assert _layout_run(lantern, enable, use) == _layout_run(torch, enable, use)


def test_engine_settings_restore_like_torch():
    for lib in LIBS:
        with lib.autograd.enforce_grad_layout_policy(False):
            with lib.autograd.enforce_grad_layout_policy(True):
                pass
            p = lib.randn(3, 2).t().detach().requires_grad_()
            (p.contiguous() * 2).sum().backward()
            assert p.grad.stride() == (3, 1)
        q = lib.randn(3, 2).t().detach().requires_grad_()
        (q.contiguous() * 2).sum().backward()
        assert q.grad.stride() == q.stride()


@pytest.mark.parametrize("mode", [True, False])
def test_backward_runs_on_the_calling_thread_in_either_multithreading_mode(mode):
    for lib in LIBS:
        seen = []
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: seen.append(threading.current_thread().name))
        with lib.autograd.set_multithreading_enabled(mode):
            y.sum().backward()
        assert seen == [threading.current_thread().name]
        assert lib.autograd.set_multithreading_enabled(True).clone().mode is True


# ---- FileCheck ------------------------------------------------------------------------------------------------------
TEXT = "a = add(x)\nb = mul(a)\nc = add(b)\nreturn c"
HIGHLIGHTED = "x = foo(y)\n    ~~~ <--- HERE\n"

BUILT = [
    lambda f: f.check("add").check("mul"),
    lambda f: f.check("mul").check("sub"),
    lambda f: f.check("add").check_not("sub").check("return"),
    lambda f: f.check("add").check_not("mul").check("return"),
    lambda f: f.check("add").check_next("mul"),
    lambda f: f.check("add").check_next("return"),
    lambda f: f.check_next("a ="),
    lambda f: f.check("add(x)").check_next("mul").check_next("add"),
    lambda f: f.check("mul").check_same("(a)"),
    lambda f: f.check("mul").check_same("(b)"),
    lambda f: f.check_same("a ="),
    lambda f: f.check_count("add", 2),
    lambda f: f.check_count("add", 3),
    lambda f: f.check_count("add", 1, exactly=True),
    lambda f: f.check_count("add", 2, exactly=True),
    lambda f: f.check_count("add", 0, exactly=True),
    lambda f: f.check_dag("mul").check_dag("add").check("return"),
    lambda f: f.check_dag("add").check_dag("add").check_dag("add"),
    lambda f: f.check("mul").check_dag("add").check_not("return"),
    lambda f: f.check_not("sub").check_not("div").check("mul"),
    lambda f: f.check_regex(r"m[u]l").check_regex(r"ad+\(b"),
    lambda f: f.check_regex("z+"),
    lambda f: f.check_not("add"),
]


def _outcome(run):
    try:
        run()
    except RuntimeError as exc:
        lines = str(exc).rstrip("\n").split("\n")
        return "error", lines[0], lines[-1]
    return "ok"


@pytest.mark.parametrize("build", BUILT)
def test_file_check_built_checks_like_torch(build):
    outcomes = [_outcome(lambda: build(lib.testing.FileCheck()).run(TEXT)) for lib in LIBS]
    assert outcomes[1] == outcomes[0]


@pytest.mark.parametrize("checks", [
    "# CHECK: add\n# CHECK-NEXT: mul\n# CHECK-NOT: sub\n# CHECK-COUNT-2: add",
    "# CHECK-COUNT-EXACTLY-2: add\n#CHECK: return",
    "   # CHECK-DAG: mul\n# CHECK-SAME: (a)",
    "some text\n# CHECK-REGEX: re.u\n  # CHECK-NOT: mul",
    "nothing here",
])
def test_file_check_check_strings_like_torch(checks):
    outcomes = [_outcome(lambda: lib.testing.FileCheck().run(checks, TEXT)) for lib in LIBS]
    assert outcomes[1] == outcomes[0]


@pytest.mark.parametrize("build", [lambda f: f.check_source_highlighted("foo"),
                                   lambda f: f.check_source_highlighted("x =")])
def test_file_check_source_highlight_like_torch(build):
    outcomes = [_outcome(lambda: build(lib.testing.FileCheck()).run(HIGHLIGHTED)) for lib in LIBS]
    assert outcomes[1][0] == outcomes[0][0]


def test_file_check_runs_on_graphs_and_refuses_bad_input_like_torch():
    lantern.testing.FileCheck().check("aten::linear").check_not("aten::mul").run(
        lantern.jit.script(lantern.nn.Linear(2, 2)).graph)
    for lib in LIBS:
        with pytest.raises(RuntimeError, match="Could not parse check at"):
            lib.testing.FileCheck().run("# CHECK-NOT:", TEXT)
        with pytest.raises(RuntimeError, match="No checks have been added"):
            lib.testing.FileCheck().run(TEXT)
        with pytest.raises(RuntimeError, match="Count == 0 && !exactly doesn't do anything"):
            lib.testing.FileCheck().check_count("add", 0)
    assert lantern.FileCheck is lantern.testing.FileCheck
