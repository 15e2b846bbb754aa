"""Which of lantern's hand-written public functions (lantern.max, lantern.matmul, nn.functional, linalg, fft,
special) take part in `__torch_function__`: all but those torch.overrides.get_ignored_functions names. Each carries
its own check (lantern.core.overridable, or the generated wrapper of a composite), so the object a namespace holds
never changes:

>>> import lantern
>>> matmul = lantern.matmul
>>> class Tagged(lantern.Tensor):
...     pass
>>> lantern.matmul is matmul
True
"""
import inspect

import lantern

# What torch.overrides.get_ignored_functions names among these namespaces' functions (tests/test_torch_function.py
# checks the lists against torch), and lantern's own settings functions: they never reach __torch_function__.
IGNORED = {
    "lantern": {
        "are_deterministic_algorithms_enabled", "as_tensor", "asarray", "autocast_decrement_nesting",
        "autocast_increment_nesting", "bartlett_window", "blackman_window", "broadcast_shapes", "can_cast",
        "clear_autocast_cache", "compile", "cudnn_is_acceptable", "empty_quantized", "fill", "fork", "from_file",
        "from_numpy", "frombuffer", "get_autocast_cpu_dtype", "get_autocast_dtype", "get_autocast_gpu_dtype",
        "get_autocast_ipu_dtype", "get_autocast_xla_dtype", "get_default_device", "get_default_dtype",
        "get_deterministic_debug_mode", "get_device_module", "get_float32_matmul_precision",
        "get_num_interop_threads", "get_num_threads", "get_rng_state", "hamming_window", "hann_window",
        "init_num_threads", "initial_seed", "is_anomaly_check_nan_enabled", "is_anomaly_enabled",
        "is_autocast_cache_enabled", "is_autocast_cpu_enabled", "is_autocast_enabled", "is_autocast_ipu_enabled",
        "is_autocast_xla_enabled", "is_deterministic_algorithms_warn_only_enabled", "is_grad_enabled",
        "is_inference_mode_enabled", "is_storage", "is_tensor", "is_vulkan_available", "is_warn_always_enabled",
        "kaiser_window", "load", "manual_seed", "normal", "parse_ir", "promote_types", "rand_like", "randint",
        "randint_like", "randn_like", "range", "result_type", "save", "scalar_tensor", "seed",
        "set_anomaly_enabled", "set_autocast_cache_enabled", "set_autocast_cpu_dtype", "set_autocast_cpu_enabled",
        "set_autocast_dtype", "set_autocast_enabled", "set_autocast_gpu_dtype", "set_autocast_ipu_dtype",
        "set_autocast_ipu_enabled", "set_autocast_xla_dtype", "set_autocast_xla_enabled", "set_default_device",
        "set_default_tensor_type", "set_deterministic_debug_mode", "set_float32_matmul_precision",
        "set_flush_denormal", "set_num_interop_threads", "set_num_threads", "set_printoptions", "set_rng_state",
        "set_warn_always", "sparse_coo_tensor", "sparse_csr_tensor", "sym_constrain_range",
        "sym_constrain_range_for_size", "sym_fresh_size", "tensor", "thread_safe_generator", "tril_indices",
        "triu_indices", "typename", "use_deterministic_algorithms", "vander", "vmap", "wait",
        # settings of lantern's (or of torch's Python layer, which does not check them either)
        "add_safe_globals", "clear_safe_globals", "get_safe_globals", "get_printoptions", "set_default_dtype",
        "is_reference_mode", "reference_mode", "set_reference_mode",
        "from_dlpack", "to_dlpack",  # torch.utils.dlpack's: no check in torch either
    },
    "lantern.nn.functional": {"hardsigmoid", "hardswish", "sigmoid", "tanh", "upsample", "upsample_bilinear",
                              "upsample_nearest"},
    "lantern.fft": {"fftfreq", "rfftfreq"},
    "lantern.linalg": set(),
    "lantern.special": set(),
}


def namespaces():
    return [lantern, lantern.nn.functional, lantern.linalg, lantern.fft, lantern.special]


def _is_hand_written(value):
    return (inspect.isfunction(value) and not hasattr(value, "lantern_op")
            and (getattr(value, "__module__", None) or "").startswith("lantern"))


def hand_written_functions(namespace):
    """{name: function} of the namespace's public hand-written functions that take part in the protocol."""
    ignored = IGNORED[namespace.__name__]
    return {name: value for name, value in vars(namespace).items()
            if not name.startswith("_") and name not in ignored and _is_hand_written(value)}
