"""torch.utils.checkpoint's non-reentrant machinery against torch: when the function runs again (once per backward
pass, once per GraphExecGroup), early stop and set_checkpoint_early_stop, the determinism checks and their messages,
debug mode, DefaultDeviceType and the device-state helpers."""
import contextlib

import pytest
import torch
import torch.utils.checkpoint  # noqa: F401

import lantern
import lantern.utils.checkpoint  # noqa: F401


LIBS = (torch, lantern)


def _both(run):
    return run(torch), run(lantern)


def _two_outputs(lib, group, early_stop=None, third_backward=False):
    """fn returns sin and cos of its input; backward through each output separately (and optionally through
    both): how often fn ran, and the input's grad."""
    calls = []

    def fn(a):
        calls.append(1)
        return a.sin(), a.cos()

    x = lib.tensor([0.3, 0.7], requires_grad=True)
    stop = lib.utils.checkpoint.set_checkpoint_early_stop(early_stop) if early_stop is not None else \
        contextlib.nullcontext()
    with stop:
        s, c = lib.utils.checkpoint.checkpoint(fn, x, use_reentrant=False)
    with lib.utils.checkpoint.GraphExecGroup() if group else contextlib.nullcontext():
        s.sum().backward(retain_graph=True)
        c.sum().backward(retain_graph=True)
        if third_backward:
            (s * c).sum().backward()
    return len(calls), x.grad.tolist()


@pytest.mark.parametrize("group, early_stop, third_backward", [(False, None, False), (True, None, False),
                                                                (False, False, False), (True, False, False),
                                                                (False, None, True)])
def test_each_backward_pass_recomputes_once_like_torch(group, early_stop, third_backward):
    expected, got = _both(lambda lib: _two_outputs(lib, group, early_stop, third_backward))
    assert got[0] == expected[0]
    assert got[1] == pytest.approx(expected[1], rel=1e-6)


def test_graph_exec_groups_do_not_nest():
    messages = []
    for lib in (torch, lantern):
        with pytest.raises(RuntimeError) as info:
            with lib.utils.checkpoint.GraphExecGroup(), lib.utils.checkpoint.GraphExecGroup():
                pass
        messages.append(str(info.value).split(" group ")[0])
    assert messages[1] == messages[0]
    with lantern.utils.checkpoint.GraphExecGroup():  # the failed one left no group behind
        pass


def _side_effect_after_last_save(lib, **kwargs):
    """What ran after the function's last saving op: early stop skips it in the recomputation."""
    ran = []

    def fn(a):
        y = a.sin()
        ran.append("after sin")
        return y

    x = lib.ones(3, requires_grad=True)
    lib.utils.checkpoint.checkpoint(fn, x, use_reentrant=False, **kwargs).sum().backward()
    return ran


@pytest.mark.parametrize("kwargs, scope", [({}, None), ({"early_stop": False}, None), ({}, False),
                                           ({"early_stop": False}, True)])
def test_early_stop_and_its_override_like_torch(kwargs, scope):
    def run(lib):
        with lib.utils.checkpoint.set_checkpoint_early_stop(scope) if scope is not None else contextlib.nullcontext():
            return _side_effect_after_last_save(lib, **kwargs)
    expected, got = _both(run)
    assert got == expected


def _more(lib, t, calls):
    return t.sin() if len(calls) == 1 else t.sin().cos()


def _fewer(lib, t, calls):
    return t.sin().cos() if len(calls) == 1 else t.sin() * 1


def _other_dtype(lib, t, calls):
    return (t * t).sum() if len(calls) == 1 else (t.double() * t.double()).sum()


def _outcome(lib, body, **kwargs):
    x = lib.ones(2, requires_grad=True)
    calls = []

    def fn(t):
        calls.append(1)
        return body(lib, t, calls)

    try:
        lib.utils.checkpoint.checkpoint(fn, x, use_reentrant=False, **kwargs).sum().backward()
    except lib.utils.checkpoint.CheckpointError as exc:
        return "CheckpointError", str(exc).replace("torch.", "lantern.").replace("‑", "-").split("Tip:")[0]
    return "ok", len(calls), [round(v, 5) for v in x.grad.tolist()]


@pytest.mark.parametrize("body", [_more, _fewer, _other_dtype])
@pytest.mark.parametrize("kwargs", [{}, {"early_stop": False}, {"determinism_check": "none"}])
def test_determinism_checks_like_torch(body, kwargs):
    expected, got = _both(lambda lib: _outcome(lib, body, **kwargs))
    assert got == expected


def test_unknown_determinism_check_like_torch():
    messages = []
    for lib in (torch, lantern):
        with pytest.raises(ValueError) as info:
            lib.utils.checkpoint.checkpoint(lambda t: t.sin(), lib.ones(1, requires_grad=True), use_reentrant=False,
                                            determinism_check="strict")
        messages.append(str(info.value))
    assert messages[1] == messages[0]


@pytest.mark.parametrize("how", ["argument", "context"])
def test_debug_mode_lists_the_operators_of_both_runs(how):
    # torch's own debug mode works once per process (a second debug checkpoint fails inside its logging handler,
    # formatting the log records it captured), so torch is the oracle of the first case only
    for lib in (torch, lantern) if how == "argument" else (lantern,):
        x = lib.ones(2, requires_grad=True)
        calls = []

        def fn(t):
            calls.append(1)
            return _fewer(lib, t, calls)

        with lib.utils.checkpoint.set_checkpoint_debug_enabled(True) if how == "context" else \
                contextlib.nullcontext():
            y = lib.utils.checkpoint.checkpoint(fn, x, use_reentrant=False, debug=how == "argument")
        with pytest.raises(lib.utils.checkpoint.CheckpointError) as info:
            y.sum().backward()
        message = str(info.value)
        forward, recompute = message.split("Operations executed during the original forward:")[1].split(
            "Operations executed during recomputation:")
        assert "cos" in forward and "cos" not in recompute.split("ERROR")[0] and "sin" in recompute
        assert "Detected non-determinism while running activation checkpointing" in message
    with pytest.raises(ValueError, match="debug=True is incompatible with non-default context_fn"):
        lantern.utils.checkpoint.checkpoint(lambda t: t, x, use_reentrant=False, debug=True,
                                            context_fn=lambda: (contextlib.nullcontext(), contextlib.nullcontext()))


def test_debug_disabled_by_context_overrides_the_argument():
    def run(lib):
        calls = []
        x = lib.ones(2, requires_grad=True)

        def fn(t):
            calls.append(1)
            return _fewer(lib, t, calls)

        with lib.utils.checkpoint.set_checkpoint_debug_enabled(False):
            y = lib.utils.checkpoint.checkpoint(fn, x, use_reentrant=False, debug=True)
        with pytest.raises(lib.utils.checkpoint.CheckpointError) as info:
            y.sum().backward()
        return "Operations executed" in str(info.value)
    assert _both(run) == (False, False)


def test_device_type_and_device_states_on_the_cpu_like_torch():
    for lib in (torch, lantern):
        module = lib.utils.checkpoint
        assert module.DefaultDeviceType.get_device_type() == "cpu"
        assert module.get_device_states(lib.ones(2), [lib.zeros(1)], 3) == ([], [])
        module.set_device_states([], [])
        previous = module.DefaultDeviceType.get_device_type()
        module.DefaultDeviceType.set_device_type("meta")
        try:
            assert module.DefaultDeviceType.get_device_type() == "meta"
            module.set_device_states([0], [None])  # meta: nothing to restore
        finally:
            module.DefaultDeviceType.set_device_type(previous)



# ---- selective activation checkpointing ---------------------------------------------------------------------------
def _sac_context(lib, policy, **kwargs):
    import functools
    return functools.partial(lib.utils.checkpoint.create_selective_checkpoint_contexts, policy, **kwargs)


def _sac_gradients(lib, policy_for):
    """torch's documented example, fn(x, y) = sigmoid((x @ y) @ y) * y, under a selective checkpoint."""
    lib.manual_seed(0)
    x = lib.randn(4, 4, dtype=lib.float64, requires_grad=True)
    y = lib.randn(4, 4, dtype=lib.float64, requires_grad=True)
    fn = lambda a, b: lib.sigmoid(lib.matmul(lib.matmul(a, b), b)) * b  # noqa: E731
    out = lib.utils.checkpoint.checkpoint(fn, x, y, use_reentrant=False, context_fn=_sac_context(lib, policy_for(lib)))
    out.sum().backward()
    return out.detach(), x.grad, y.grad


SAC_POLICIES = {
    "op list": lambda lib: [lib.ops.aten.mm.default],
    "function": lambda lib: lambda ctx, op, *args, **kwargs: (
        lib.utils.checkpoint.CheckpointPolicy.MUST_SAVE if op == lib.ops.aten.mm.default
        else lib.utils.checkpoint.CheckpointPolicy.PREFER_RECOMPUTE),
    "save all": lambda lib: lambda ctx, op, *args, **kwargs: lib.utils.checkpoint.CheckpointPolicy.PREFER_SAVE,
    "booleans": lambda lib: lambda ctx, op, *args, **kwargs: "sigmoid" in op.name(),
}


@pytest.mark.parametrize("policy", SAC_POLICIES)
def test_selective_checkpoint_gradients_like_torch(policy):
    expected, got = _both(lambda lib: _sac_gradients(lib, SAC_POLICIES[policy]))
    for g, e in zip(got, expected):
        assert torch.allclose(torch.tensor(g.numpy()), e, rtol=1e-10, atol=1e-12)


def _saved_random_draw(lib, save):
    """y = x * rand_like(x) without restoring the random state: the recomputation draws anew unless the policy
    saves the draw, so x.grad equals the forward's draw exactly when it is saved. (torch's policy sees
    aten::rand_like, lantern's the aten::uniform_ that its composite rand_like runs.)"""
    draws = []

    def policy(ctx, op, *args, **kwargs):
        if "rand" in op.name() or "uniform" in op.name():
            draws.append(ctx.op_output.detach().clone())
            return lib.utils.checkpoint.CheckpointPolicy.MUST_SAVE if save else \
                lib.utils.checkpoint.CheckpointPolicy.MUST_RECOMPUTE
        return lib.utils.checkpoint.CheckpointPolicy.PREFER_RECOMPUTE

    x = lib.ones(5, requires_grad=True)
    out = lib.utils.checkpoint.checkpoint(lambda t: (t * lib.rand_like(t)).exp(), x, use_reentrant=False,
                                          preserve_rng_state=False, context_fn=_sac_context(lib, policy))
    out.sum().backward()
    return len(draws), bool(lib.allclose(x.grad, (draws[0] * draws[0].exp())))


@pytest.mark.parametrize("save", [True, False])
def test_a_saved_op_is_not_run_again_like_torch(save):
    assert _both(lambda lib: _saved_random_draw(lib, save)) == ((1, save), (1, save))


def test_selective_checkpoint_errors_like_torch():
    for lib in LIBS:
        module = lib.utils.checkpoint
        with pytest.raises(ValueError, match="Please update the OpOverloadPacket to a specific OpOverload"):
            module.create_selective_checkpoint_contexts([lib.ops.aten.mm])
        with pytest.raises(TypeError, match="policy_fn_or_list must be either a function or a list of ops."):
            module.create_selective_checkpoint_contexts(3)
        x = lib.randn(3, 3, requires_grad=True)

        def mutates(t):
            product = t.mm(t)
            product.add_(1)
            return product.sin()

        out = module.checkpoint(mutates, x, use_reentrant=False,
                                context_fn=_sac_context(lib, [lib.ops.aten.mm.default]))
        with pytest.raises(RuntimeError, match="Tensor cached during selective activation checkpoint has been mutated"):
            out.sum().backward()
        out = module.checkpoint(mutates, x, use_reentrant=False,
                                context_fn=_sac_context(lib, [lib.ops.aten.mm.default], allow_cache_entry_mutation=True))
        out.sum().backward(retain_graph=True)
        with pytest.raises(RuntimeError, match="Trying to backward an extra time"):
            out.sum().backward()
        policy = module.SelectiveCheckpointContext(is_recompute=False, op_output=1)
        assert (policy.is_recompute, policy.op_output) == (False, 1)
        assert [p.name for p in module.CheckpointPolicy] == ["MUST_SAVE", "PREFER_SAVE", "MUST_RECOMPUTE",
                                                              "PREFER_RECOMPUTE", "MUST_CPU_OFFLOAD",
                                                              "PREFER_CPU_OFFLOAD"]
