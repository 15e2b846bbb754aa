"""torch.amp on the CPU: autocast's per-op policy, its regions and cache, and GradScaler, each against torch."""
import pickle
import sys
import threading
import warnings

import numpy as np
import pytest
import torch

import autocast_cases
import lantern
from deliberate_differences import DIFFERENCES
from oracle import as_numpy

REGIONS = [(torch.bfloat16, lantern.bfloat16), (torch.float16, lantern.float16)]


# ---- every op's output dtype under autocast ---------------------------------------------------------------------

EXPECTATIONS = autocast_cases.expectations()
# ops whose lower-precision values torch computes differently on purpose (tests/deliberate_differences.py)
DTYPES_ONLY = {"matrix_exp"} if DIFFERENCES["matrix_exp in half precision"] else set()


# Calls torch makes on half-precision inputs and lantern refuses even without autocast, so expectations() leaves
# their cases out: each is a kernel or dtype lantern lacks, named here so that the list cannot grow (or shrink)
# silently.
KNOWN_HALF_PRECISION_GAPS = [
    ("linalg.det", "bfloat16"), ("linalg.det", "float16"),     # LAPACK has no half-precision LU
    ("linalg.svd", "bfloat16"), ("linalg.svd", "float16"), ("svd", "bfloat16"), ("svd", "float16"),
]


def test_half_precision_gaps_are_the_known_ones():
    assert sorted(set(autocast_cases.low_precision_gaps())) == sorted(KNOWN_HALF_PRECISION_GAPS)


@pytest.mark.parametrize("key", sorted(EXPECTATIONS), ids=" ".join)
def test_autocast_output_dtype_matches_torch(key):
    """The op's outputs under autocast have torch's dtypes and values close to torch's."""
    expected = EXPECTATIONS[key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = expected.run_lantern()
    assert autocast_cases.dtype_names(got) == autocast_cases.dtype_names(expected.result)
    if expected.case.values_comparable and key[0] not in DTYPES_ONLY:
        for g, e in zip(autocast_cases.tensors_of(got), autocast_cases.tensors_of(expected.result)):
            if e.is_floating_point():   # (indices of ties, as argsort's, may differ between sorts)
                assert autocast_cases.close(as_numpy(g), as_numpy(e), key[1]), f"{key}: values differ"


# ---- regions: state, nesting, spellings, warnings, errors -----------------------------------------------------

def _in_both(fn):
    """fn(lib) for torch and lantern, each returning plain values (dtype names as text); returns both."""
    return fn(torch), fn(lantern)


def _dtype(lib_dtype):
    return str(lib_dtype).split(".")[-1]


def _state(lib, device="cpu"):
    return lib.is_autocast_enabled(device), _dtype(lib.get_autocast_dtype(device)), lib.is_autocast_cache_enabled()


def _mm_dtype(lib):
    return _dtype(lib.mm(lib.ones(2, 2), lib.ones(2, 2)).dtype)


def test_nested_regions_set_and_restore_the_state_as_torch():
    def walk(lib):
        seen = [_state(lib), lib.is_autocast_enabled(), _mm_dtype(lib)]
        with lib.autocast("cpu"):
            seen += [_state(lib), lib.is_autocast_enabled(), _mm_dtype(lib)]
            with lib.autocast("cpu", enabled=False):
                seen += [_state(lib), _mm_dtype(lib)]
                with lib.autocast("cpu", dtype=lib.float16, cache_enabled=False):
                    seen += [_state(lib), _mm_dtype(lib)]
                seen += [_state(lib), _mm_dtype(lib)]
            seen += [_state(lib), _mm_dtype(lib)]
        return seen + [_state(lib), _mm_dtype(lib)]
    expected, got = _in_both(walk)
    assert got == expected


def test_every_spelling_of_a_cpu_region_as_torch():
    def regions(lib):
        out = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for make in (lambda: lib.autocast("cpu"), lambda: lib.autocast(device_type="cpu", dtype=lib.float16),
                         lambda: lib.amp.autocast("cpu"), lambda: lib.cpu.amp.autocast(),
                         lambda: lib.cpu.amp.autocast(dtype=lib.float16)):
                with make() as region:
                    out.append((type(region).__name__, _mm_dtype(lib), _state(lib)))

            @lib.autocast("cpu")
            def decorated(a):
                return _dtype((a @ a).dtype), lib.is_autocast_enabled("cpu")
            out.append(decorated(lib.ones(2, 2)))
        out.append([(w.category.__name__, str(w.message)) for w in caught])
        return out
    expected, got = _in_both(regions)
    assert got == expected


def _warned(lib, fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(lib)
    return result, [(w.category.__name__, _torch_spelling(str(w.message).split(" (Triggered internally")[0]))
                    for w in caught]


def _torch_spelling(text):
    """A message as torch would print it: lantern's dtypes and device class under torch's names."""
    return text.replace("lantern.core.device.device", "torch.device").replace("lantern.", "torch.")


@pytest.mark.parametrize("make", [
    lambda lib: lib.autocast("cuda"),
    lambda lib: lib.autocast("cuda", dtype=lib.bfloat16),
    lambda lib: lib.cuda.amp.autocast(),
    lambda lib: lib.autocast("cpu", dtype=lib.float32),
    lambda lib: lib.autocast("cpu", dtype=lib.float64),
    lambda lib: lib.autocast("cpu", enabled=False),
    lambda lib: lib.autocast("mps"),
    lambda lib: lib.autocast("xpu", dtype=lib.bfloat16),
], ids=["cuda", "cuda-bfloat16", "cuda.amp", "cpu-float32", "cpu-float64", "cpu-disabled", "mps", "xpu"])
def test_regions_a_cpu_build_disables_warn_as_torch(make):
    def enter(lib):
        region = make(lib)
        with region:
            return region._enabled, _mm_dtype(lib), lib.is_autocast_enabled(region.device)
    expected, got = _in_both(lambda lib: _warned(lib, enter))
    assert got == expected


@pytest.mark.parametrize("call", [
    lambda lib: lib.autocast(lib.device("cpu")),
    lambda lib: lib.autocast("meta"),
    lambda lib: lib.autocast("lazy"),
    lambda lib: lib.autocast("nonsense"),
    lambda lib: lib.autocast("cpu")(3),
    lambda lib: lib.is_autocast_enabled("meta"),
    lambda lib: lib.get_autocast_dtype("meta"),
    lambda lib: lib.set_autocast_dtype("cpu", "bfloat16"),
], ids=["device-object", "meta", "lazy", "nonsense", "decorate-non-callable", "enabled-meta", "dtype-meta",
        "dtype-text"])
def test_region_errors_as_torch(call):
    def outcome(lib):
        try:
            call(lib)
        except Exception as error:
            return type(error).__name__, _torch_spelling(str(error).split("\n")[0])
        return None
    expected, got = _in_both(outcome)
    assert expected is not None and got == expected


def test_autocast_availability_and_default_dtypes_as_torch():
    devices = ["cpu", "cuda", "mps", "xpu", "hpu", "xla", "mtia", "ipu", "maia", "privateuseone", "meta", "lazy"]
    expected, got = _in_both(lambda lib: [lib.amp.is_autocast_available(d) for d in devices])
    assert got == expected
    available = [d for d in devices if torch.amp.is_autocast_available(d)]
    expected, got = _in_both(lambda lib: [_dtype(lib.get_autocast_dtype(d)) for d in available])
    assert got == expected


LEGACY = sorted(name for name in dir(torch) if "autocast" in name and name.startswith(("is_", "get_", "set_"))
                and any(dev in name for dev in ("_cpu_", "_gpu_", "_ipu_", "_xla_")))


@pytest.mark.parametrize("name", LEGACY)
def test_older_autocast_spellings_warn_and_work_as_torch(name):
    def use(lib):
        fn = getattr(lib, name)
        if name.startswith(("is_", "get_")):
            value = fn()
            return _dtype(value) if not isinstance(value, bool) else value
        previous = getattr(lib, name.replace("set_", "is_" if "enabled" in name else "get_"))()
        fn(True if "enabled" in name else lib.float16)
        try:
            return _mm_dtype(lib)
        finally:
            fn(previous)
    expected, got = _in_both(lambda lib: _warned(lib, use))
    assert got == expected


def test_set_autocast_enabled_and_dtype_outside_a_region_as_torch():
    def use(lib):
        seen = []
        lib.set_autocast_enabled("cpu", True)
        try:
            seen.append(_mm_dtype(lib))
            lib.set_autocast_dtype("cpu", lib.float16)
            seen.append(_mm_dtype(lib))
        finally:
            lib.set_autocast_dtype("cpu", lib.bfloat16)
            lib.set_autocast_enabled("cpu", False)
        seen.append(_mm_dtype(lib))
        lib.set_autocast_enabled(True)      # one argument: CUDA's
        seen.append((lib.is_autocast_enabled(), lib.is_autocast_enabled("cpu"), _mm_dtype(lib)))
        lib.set_autocast_enabled(False)
        seen.append(lib.autocast_increment_nesting())
        seen.append(lib.autocast_decrement_nesting())
        return seen
    expected, got = _in_both(use)
    assert got == expected


def test_autocast_is_per_thread_as_torch():
    def use(lib):
        seen = []
        with lib.autocast("cpu"):
            worker = threading.Thread(target=lambda: seen.append((_mm_dtype(lib), lib.is_autocast_enabled("cpu"))))
            worker.start()
            worker.join()
            seen.append(_mm_dtype(lib))
        return seen
    expected, got = _in_both(use)
    assert got == expected


# ---- the cast policy's special cases ------------------------------------------------------------------------------

DTYPES = ["float32", "bfloat16", "float16", "float64", "int64"]


@pytest.mark.parametrize("region", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", ["cat", "stack", "mm", "mse_loss", "index_copy"])
def test_mixed_input_dtypes_as_torch(op, region):
    """Every pair of input dtypes: promote ops take the widest (mixing bfloat16 and float16 is an error), doubles
    are never cast, integers are left alone."""
    def run(lib, a, b):
        x, y = lib.ones(2, 2, dtype=getattr(lib, a)), lib.ones(2, 2, dtype=getattr(lib, b))
        calls = {"cat": lambda: lib.cat([x, y]), "stack": lambda: lib.stack([x, y]), "mm": lambda: lib.mm(x, y),
                 "mse_loss": lambda: lib.nn.functional.mse_loss(x, y),
                 "index_copy": lambda: x.index_copy(0, lib.tensor([1]), y[:1])}
        try:
            with lib.autocast("cpu", dtype=getattr(lib, region)):
                return _dtype(calls[op]().dtype)
        except Exception as error:
            return type(error).__name__, str(error)[:40]
    for a in DTYPES:
        for b in DTYPES:
            assert run(lantern, a, b) == run(torch, a, b), (a, b)


def _cast_nodes(lib, make_weight, cache_enabled=True, regions=1):
    """For two mm calls on one weight (in one region, or in two): whether they share the cast's autograd node."""
    x = lib.ones(2, 3)
    weight = make_weight(lib)
    outs = []
    for _ in range(regions):
        with lib.autocast("cpu", cache_enabled=cache_enabled):
            outs += [lib.mm(x, weight) for _ in range(2 // regions)]
    nodes = [out.grad_fn.next_functions[1][0] if out.grad_fn is not None else None for out in outs]
    return nodes[0] is not None and nodes[0] is nodes[1]


@pytest.mark.parametrize("make_weight, cache_enabled, regions", [
    (lambda lib: lib.ones(3, 3, requires_grad=True), True, 1),
    (lambda lib: lib.ones(3, 3, requires_grad=True), False, 1),
    (lambda lib: lib.ones(3, 3, requires_grad=True), True, 2),
    (lambda lib: lib.ones(3, 3, requires_grad=True) * 1, True, 1),
    (lambda lib: lib.ones(3, 6, requires_grad=True)[:, :3], True, 1),
    (lambda lib: lib.ones(3, 3), True, 1),
], ids=["leaf", "cache-off", "two-regions", "non-leaf", "view", "no-grad"])
def test_a_weight_is_cast_once_per_region_as_torch(make_weight, cache_enabled, regions):
    expected, got = _in_both(lambda lib: _cast_nodes(lib, make_weight, cache_enabled, regions))
    assert got == expected


def test_outermost_region_end_empties_the_cast_cache():
    from lantern.ops.autocast import state
    w = lantern.ones(3, 3, requires_grad=True)
    with lantern.autocast("cpu"):
        with lantern.autocast("cpu"):
            lantern.mm(lantern.ones(2, 3), w)
        assert len(state.cache) == 1
    assert state.cache == {}


def test_gradients_reach_float32_leaves_in_float32_as_torch():
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(s).astype(np.float32) for s in [(4, 3), (4,), (2, 2, 5, 5), (2, 3, 3, 3), (5, 3)]]

    def train(lib):
        w, b, cw, x, img = (lib.tensor(v.copy(), requires_grad=i < 3) for i, v in enumerate(
            [values[0], values[1], values[3], values[4], values[2]]))
        with lib.autocast("cpu"):
            hidden = lib.nn.functional.linear(x, w, b)
            conv = lib.nn.functional.conv2d(img[:, :, :3, :3].repeat(1, 1, 2, 2), cw[:, :2])
            loss = lib.nn.functional.mse_loss(hidden, lib.zeros(5, 4)) + conv.float().pow(2).mean()
        loss.backward()
        return loss, [(t.grad.dtype, t.grad) for t in (w, b, cw)]
    expected = train(torch)
    got = train(lantern)
    assert _dtype(got[0].dtype) == _dtype(expected[0].dtype) == "float32"
    assert autocast_cases.close(as_numpy(got[0]), as_numpy(expected[0]), "bfloat16")
    for (gd, g), (ed, e) in zip(got[1], expected[1]):
        assert _dtype(gd) == _dtype(ed) == "float32"
        assert autocast_cases.close(as_numpy(g), as_numpy(e), "bfloat16")


@pytest.mark.parametrize("make", [
    lambda lib: lib.nn.Linear(4, 3), lambda lib: lib.nn.Conv2d(2, 3, 3), lambda lib: lib.nn.LayerNorm(4),
    lambda lib: lib.nn.LSTM(4, 3, batch_first=True), lambda lib: lib.nn.GRU(4, 3, batch_first=True),
    lambda lib: lib.nn.RNN(4, 3, batch_first=True), lambda lib: lib.nn.TransformerEncoderLayer(4, 2, 8, 0.0),
    lambda lib: lib.nn.Embedding(10, 4), lambda lib: lib.nn.BatchNorm1d(4), lambda lib: lib.nn.MultiheadAttention(4, 2),
], ids=["Linear", "Conv2d", "LayerNorm", "LSTM", "GRU", "RNN", "TransformerEncoderLayer", "Embedding", "BatchNorm1d",
        "MHA"])
def test_modules_under_autocast_give_torch_dtypes(make):
    inputs = {"Conv2d": (2, 2, 5, 5), "Embedding": None, "LSTM": (2, 3, 4), "GRU": (2, 3, 4), "RNN": (2, 3, 4),
              "TransformerEncoderLayer": (2, 3, 4), "MHA": (3, 2, 4)}

    def run(lib):
        lib.manual_seed(0)
        module = make(lib)
        name = type(module).__name__.replace("MultiheadAttention", "MHA")
        shape = inputs.get(name, (2, 4))
        x = lib.tensor([[1, 2], [3, 4]]) if shape is None else lib.ones(*shape)
        with lib.autocast("cpu"):
            out = module(x, x, x) if name == "MHA" else module(x)
        return [_dtype(t.dtype) for t in autocast_cases.tensors_of(out)]
    expected, got = _in_both(run)
    assert got == expected


def test_dispatch_trace_shows_the_autocast_step():
    x, w = lantern.ones(2, 3), lantern.ones(3, 3, requires_grad=True)
    with lantern.autocast("cpu"):
        with lantern.debug.trace_dispatch(stream=None) as log:
            lantern.mm(x, w)
    assert log.lines[0].startswith("mm  keys=[Autocast: autocast(cpu, bfloat16) is on: mm runs in bfloat16, "
                                   "Autograd: ")
    casts = [line for line in log.lines if line.strip().startswith("_to_copy")]
    assert len(casts) == 2 and all(line.startswith("  ") and "-> bfloat16" in line for line in casts)


def test_autocast_off_leaves_the_hot_path_one_flag():
    from lantern.core.state import tls
    from lantern.ops import registry
    assert tls.autocast is None and not tls.observed and not registry.watched
    with lantern.autocast("cpu"):
        assert tls.autocast is lantern.bfloat16 and tls.observed and registry.watched
    assert tls.autocast is None and not tls.observed and not registry.watched


def test_custom_fwd_and_bwd_as_torch():
    def run(lib):
        class Square(lib.autograd.Function):
            @staticmethod
            @lib.amp.custom_fwd(device_type="cpu", cast_inputs=lib.float32)
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return _dtype(lib.mm(a, b).dtype), lib.mm(a, b)

            @staticmethod
            @lib.amp.custom_bwd(device_type="cpu")
            def backward(ctx, _, grad):
                a, b = ctx.saved_tensors
                return grad @ b.t(), a.t() @ grad
        a = lib.ones(2, 2, requires_grad=True)
        with lib.autocast("cpu"):
            inner, out = Square.apply(a.bfloat16(), lib.ones(2, 2))
        out.sum().backward()
        return inner, _dtype(out.dtype), _dtype(a.grad.dtype)
    expected, got = _in_both(run)
    assert got == expected


# ---- GradScaler ---------------------------------------------------------------------------------------------------

def _model_and_optimizer(lib, optimizer="SGD"):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
    with lib.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(lib.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (i + 1))
    opt = lib.optim.SGD(model.parameters(), lr=0.1) if optimizer == "SGD" else lib.optim.Adam(model.parameters())
    return model, opt


def _scaler_steps(lib, inf_at, unscale_at=(), **scaler_kwargs):
    """A training loop with a GradScaler; after backward, iterations in inf_at get an inf (or NaN) gradient.
    Per step: the scale, the growth tracker, whether the step happened (the first weight moved), the weights."""
    model, opt = _model_and_optimizer(lib)
    scaler = lib.amp.GradScaler("cpu", **scaler_kwargs)
    x = lib.linspace(-1, 1, 15).reshape(5, 3)
    seen = []
    for step in range(8):
        opt.zero_grad()
        with lib.autocast("cpu"):
            loss = model(x).float().pow(2).mean()
        scaler.scale(loss).backward()
        if step in inf_at:
            model[0].weight.grad[0, 0] = float("inf") if step % 2 else float("nan")
        if step in unscale_at:
            scaler.unscale_(opt)
            lib.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        before = model[0].weight.detach().clone()
        scaler.step(opt)
        scaler.update()
        stepped = not bool((model[0].weight.detach() == before).all())
        seen.append((scaler.get_scale(), scaler._get_growth_tracker(), stepped,
                     [p.detach().numpy().round(3).tolist() for p in model.parameters()]))
    return seen


@pytest.mark.parametrize("inf_at, unscale_at, kwargs", [
    ((2, 3, 6), (), {"init_scale": 1024.0, "growth_interval": 2}),
    ((1,), (0, 1, 4), {"init_scale": 8.0, "growth_factor": 4.0, "backoff_factor": 0.25, "growth_interval": 3}),
    ((), (), {}),
    ((0, 1, 2, 3, 4, 5, 6, 7), (), {"init_scale": 2.0 ** 127, "growth_interval": 1}),
    ((), (), {"init_scale": 2.0 ** 127, "growth_interval": 1}),   # growth past float32's range is refused
], ids=["injected-infs", "unscale-and-clip", "clean", "all-inf", "overflowing-growth"])
def test_grad_scaler_step_by_step_as_torch(inf_at, unscale_at, kwargs):
    expected = _scaler_steps(torch, inf_at, unscale_at, **kwargs)
    got = _scaler_steps(lantern, inf_at, unscale_at, **kwargs)
    for step, (g, e) in enumerate(zip(got, expected)):
        assert g[:3] == e[:3], f"step {step}: (scale, growth tracker, stepped) {g[:3]} != {e[:3]}"
        for gp, ep in zip(g[3], e[3]):
            np.testing.assert_allclose(gp, ep, atol=1e-2, err_msg=f"step {step}")  # bfloat16 forward


def test_grad_scaler_state_dict_and_pickle_as_torch():
    def use(lib):
        seen = []
        scaler = lib.amp.GradScaler("cpu", init_scale=16.0, growth_interval=3)
        seen.append(scaler.state_dict())
        model, opt = _model_and_optimizer(lib)
        scaler.scale(model(lib.ones(1, 3)).sum()).backward()
        scaler.step(opt)
        scaler.update()
        state = scaler.state_dict()
        seen.append(state)
        other = lib.amp.GradScaler("cpu")
        other.load_state_dict(state)
        seen.append((other.get_scale(), other._get_growth_tracker(), other.get_growth_interval()))
        other.scale(lib.ones(1))
        other.load_state_dict(dict(state, scale=4.0, _growth_tracker=2))
        seen.append((other.get_scale(), other._get_growth_tracker()))
        restored = pickle.loads(pickle.dumps(scaler))
        seen.append(restored.state_dict())
        other.update(2.0)
        seen.append(other.get_scale())
        other.update(lib.tensor(32.0))
        seen.append(other.get_scale())
        for setter, value in (("growth_factor", 3.0), ("backoff_factor", 0.1), ("growth_interval", 7)):
            getattr(other, f"set_{setter}")(value)
            seen.append(getattr(other, f"get_{setter}")())
        return seen
    expected, got = _in_both(use)
    assert got == expected


def test_grad_scaler_scales_lists_and_tuples_as_torch():
    def use(lib):
        scaler = lib.amp.GradScaler("cpu", init_scale=4.0)
        out = scaler.scale([lib.ones(2), (lib.ones(1) * 2, lib.ones(1) * 3)])
        return [type(out).__name__, out[0].tolist(), type(out[1]).__name__, [t.tolist() for t in out[1]]]
    expected, got = _in_both(use)
    assert got == expected


@pytest.mark.parametrize("misuse", [
    lambda lib, scaler, opt: (scaler.unscale_(opt), scaler.unscale_(opt)),
    lambda lib, scaler, opt: (scaler.step(opt), scaler.unscale_(opt)),
    lambda lib, scaler, opt: (scaler.step(opt), scaler.step(opt)),
    lambda lib, scaler, opt: scaler.step(opt, closure=lambda: 0),
    lambda lib, scaler, opt: lib.amp.GradScaler("cpu").step(opt),
    lambda lib, scaler, opt: lib.amp.GradScaler("cpu").update(),
    lambda lib, scaler, opt: scaler.update(),
    lambda lib, scaler, opt: scaler.load_state_dict({}),
    lambda lib, scaler, opt: lib.amp.GradScaler("cpu", growth_factor=1.0),
    lambda lib, scaler, opt: lib.amp.GradScaler("cpu", backoff_factor=1.0),
    lambda lib, scaler, opt: (scaler.step(opt), pickle.dumps(scaler)),
], ids=["unscale-twice", "unscale-after-step", "step-twice", "closure", "step-before-scale", "update-before-scale",
        "update-before-step", "empty-state", "growth-1", "backoff-1", "pickle-mid-iteration"])
def test_grad_scaler_misuse_raises_as_torch(misuse):
    def outcome(lib):
        model, opt = _model_and_optimizer(lib)
        scaler = lib.amp.GradScaler("cpu")
        scaler.scale(model(lib.ones(1, 3)).sum()).backward()
        try:
            misuse(lib, scaler, opt)
        except Exception as error:
            return type(error).__name__, str(error)
        return None
    expected, got = _in_both(outcome)
    assert expected is not None and got == expected


@pytest.mark.parametrize("make", [
    lambda lib: lib.cuda.amp.GradScaler(),
    lambda lib: lib.cuda.amp.GradScaler(enabled=False),
    lambda lib: lib.amp.GradScaler("cuda"),
    lambda lib: lib.amp.GradScaler(),
    lambda lib: lib.amp.GradScaler("cpu", enabled=False),
    lambda lib: lib.cpu.amp.GradScaler(),
    lambda lib: lib.GradScaler("cpu", init_scale=8.0),
], ids=["cuda.amp", "cuda.amp-disabled", "amp-cuda", "amp-default-device", "cpu-disabled", "cpu.amp", "torch-level"])
def test_grad_scaler_on_a_cpu_build_as_torch(make):
    """A CUDA scaler disables itself with a warning (quietly when enabled=False); a disabled scaler passes the loss
    through and steps the optimizer as it is."""
    def use(lib):
        scaler = make(lib)
        model, opt = _model_and_optimizer(lib)
        loss = model(lib.ones(1, 3)).sum()
        scaled = scaler.scale(loss)
        scaled.backward()
        scaler.unscale_(opt)
        returned = scaler.step(opt)
        scaler.update()
        return (scaler.is_enabled(), scaled is loss, scaler.get_scale(), scaler.state_dict(), returned,
                model[0].weight.detach().numpy().round(4).tolist())
    expected, got = _in_both(lambda lib: _warned(lib, use))
    assert got == expected


def test_amp_training_loop_follows_torch_losses():
    """A small classifier trained with autocast and a GradScaler: lantern's losses stay near torch's."""
    rng = np.random.default_rng(0)
    data = rng.standard_normal((64, 8)).astype(np.float32)
    labels = (data[:, :3].sum(1) > 0).astype(np.int64)

    def train(lib):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(8, 16), lib.nn.GELU(), lib.nn.Linear(16, 2))
        with lib.no_grad():
            for i, p in enumerate(model.parameters()):
                p.copy_(lib.tensor(np.random.default_rng(i).standard_normal(tuple(p.shape)).astype(np.float32) * 0.3))
        opt = lib.optim.AdamW(model.parameters(), lr=1e-2)
        scaler = lib.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=5)
        x, y = lib.tensor(data), lib.tensor(labels)
        losses = []
        for _ in range(30):
            opt.zero_grad()
            with lib.autocast("cpu", dtype=lib.bfloat16):
                loss = lib.nn.functional.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            losses.append(loss.item())
        return losses, scaler.get_scale()
    (expected, expected_scale), (got, got_scale) = train(torch), train(lantern)
    assert got_scale == expected_scale
    np.testing.assert_allclose(got, expected, rtol=0.05, atol=0.01)
    assert got[-1] < 0.5 * got[0]


def test_a_trace_under_autocast_records_the_casts_as_torch():
    """The Autocast key sits above the tracer: the trace holds the casts, so the traced function computes in
    bfloat16 even when called outside the region."""
    def traced(lib):
        with lib.autocast("cpu"):
            fn = lib.jit.trace(lambda x, w: lib.mm(x, w).sum(), (lib.ones(2, 3), lib.ones(3, 3)))
        return _dtype(fn(lib.ones(2, 3), lib.ones(3, 3)).dtype), str(fn.graph).count("bfloat16") > 0 or \
            str(fn.graph).count("BFloat16") > 0
    expected, got = _in_both(traced)
    assert got == expected
