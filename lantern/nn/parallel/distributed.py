"""DistributedDataParallel (torch.nn.parallel.distributed): one model replica per process, gradients averaged.

Each process runs the whole module on its own share of the batch; after backward every replica holds the same
averaged gradients, so the same optimizer step keeps the replicas identical. What it does, in order:

- construction: rank 0's parameters and buffers are broadcast (`init_sync`), the parameters are bucketed in reverse
  order of registration (`bucketing`) and a `Reducer` hooks every parameter's gradient accumulator;
- forward ("DistributedDataParallel.forward" in the profiler): after the first iteration the buckets are rebuilt
  in the order gradients arrived; rank 0's buffers are broadcast (`broadcast_buffers` / `forward_sync_buffers`);
  the module runs; the reducer is armed for backward (with `find_unused_parameters`, the parameters the outputs do
  not reach are found now);
- backward: buckets all-reduce asynchronously as they fill, and the end of backward waits for them (see `reducer`).

`no_sync()` leaves the reducer unarmed, so gradients just accumulate locally until the next synchronised backward.
The wrapped module is `.module`, so state_dict keys carry the "module." prefix, as in torch.

With one process the averages are the gradients themselves:

>>> import lantern, lantern.nn as nn, lantern.distributed as dist
>>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29500", rank=0, world_size=1)
>>> model = nn.parallel.DistributedDataParallel(nn.Linear(2, 1))
>>> model(lantern.ones(3, 2)).sum().backward()
>>> model.module.weight.grad.tolist(), list(model.state_dict())
([[3.0, 3.0]], ['module.weight', 'module.bias'])
>>> dist.destroy_process_group()
"""
import inspect
import typing
import warnings
from contextlib import contextmanager

import lantern
from ... import distributed as dist
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...core import cuda_as_cpu
from ...futures import Future
from ...profiler import record_function
from ...utils._pytree import tree_map
from ..modules.batchnorm import SyncBatchNorm
from ..modules.module import Module
from ..modules.sparse import Embedding, EmbeddingBag
from ..parameter import UninitializedParameter
from .bucketing import compute_bucket_assignment_by_size
from .reducer import DEFAULT_FIRST_BUCKET_BYTES, Reducer

__all__ = ["DistributedDataParallel"]

_DEFAULT_BUCKET_CAP_MB = 25
_MB_TO_BYTES = 1024 * 1024
_BROADCAST_BUCKET_SIZE = 250 * 1024 * 1024


def _default_group():
    if not dist.is_initialized():
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return dist.group.WORLD


def broadcast_coalesced(tensors, group, src_group_rank=0):
    """Broadcast `tensors` from the group's rank `src_group_rank`, one flat tensor per dtype (torch's
    `_broadcast_coalesced`; torch also splits at 250 MiB, lantern sends each dtype's tensors in one piece)."""
    by_dtype = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype, []).append(t)
    src = dist.get_global_rank(group, src_group_rank)
    with no_grad():
        for same_dtype in by_dtype.values():
            flat = lantern.cat([t.reshape(-1) for t in same_dtype])
            dist.broadcast(flat, src=src, group=group)
            start = 0
            for t in same_dtype:
                t.copy_(flat[start:start + t.numel()].view(t.shape))
                start += t.numel()


class DistributedDataParallel(Module):
    """Data-parallel training across the processes of a process group (see the module docstring)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=None, init_sync=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None,
                 skip_all_reduce_unused_params=False, bucket_cap_mb_list=None, batched_grad_copy=False,
                 forward_sync_buffers=None):
        super().__init__()
        _reject_unsupported(delay_all_reduce_named_params, param_to_hook_all_reduce, mixed_precision, device_mesh,
                            bucket_cap_mb_list, skip_all_reduce_unused_params)
        self.process_group = _default_group() if process_group is None else process_group
        self.parameters_to_ignore = set(getattr(module, "_ddp_params_and_buffers_to_ignore", ()))
        self._module_parameters = [p for n, p in module.named_parameters() if n not in self.parameters_to_ignore]
        self._check_parameters()
        _reject_sparse_gradients(module)
        self._set_devices(device_ids, output_device)
        self.static_graph = False
        self.dim = dim
        self.module = module
        self.device = self._module_parameters[0].device
        init_sync_buffers = self._set_buffer_sync(broadcast_buffers, forward_sync_buffers)
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.batched_grad_copy = batched_grad_copy
        self.mixed_precision = None
        if check_reduction:
            warnings.warn("The `check_reduction` argument in `DistributedDataParallel` module is deprecated. Please "
                          "avoid using it.", FutureWarning, stacklevel=2)
        self.broadcast_bucket_size = _BROADCAST_BUCKET_SIZE
        self.bucket_bytes_cap_default = bucket_cap_mb is None
        self.bucket_bytes_cap = int((_DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb)
                                    * _MB_TO_BYTES)
        parameters = self._build_params_for_reducer()
        if init_sync:
            _verify_param_shape_across_processes(self.process_group, parameters)
            self._sync_module_states(init_sync_buffers)
        self._ddp_init_helper(parameters, static_graph)

    # ---- construction ----

    def _check_parameters(self):
        if not any(p.requires_grad for p in self._module_parameters):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter that "
                               "requires a gradient.")
        for p in self._module_parameters:
            if isinstance(p, UninitializedParameter):
                raise RuntimeError("Modules with uninitialized parameters can't be used with "
                                   "`DistributedDataParallel`. Run a dummy forward pass to correctly initialize the "
                                   "modules")
            if p.layout is not lantern.strided:
                raise NotImplementedError("DistributedDataParallel: lantern reduces dense (strided) parameters "
                                          f"only, not {p.layout}")

    def _set_devices(self, device_ids, output_device):
        """device_ids / output_device as torch checks them: they name one accelerator of a single-device module."""
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        self.is_multi_device_module = len({p.device for p in self._module_parameters}) > 1
        device_types = {p.device.type for p in self._module_parameters}
        if len(device_types) != 1:
            raise ValueError("DistributedDataParallel's input module must be on the same type of devices, but input "
                             f"module parameters locate in {device_types}.")
        self.device_type = next(iter(device_types))
        if not device_ids or self.device_type == "cpu" or self.is_multi_device_module:
            # in cuda-as-cpu mode the GPU that device_ids names is the CPU this module is on
            if (device_ids or output_device) and not cuda_as_cpu.enabled():
                devices = {p.device for p in self._module_parameters}
                raise ValueError("DistributedDataParallel device_ids and output_device arguments only work with "
                                 "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                                 f"{device_ids}, output_device {output_device}, and module parameters {devices}.")
            self.device_ids = self.output_device = None
        else:
            self.device_ids = [_device_index(d) for d in device_ids]
            self.output_device = self.device_ids[0] if output_device is None else _device_index(output_device)

    def _set_buffer_sync(self, broadcast_buffers, forward_sync_buffers):
        """forward_sync_buffers (broadcast_buffers, deprecated in torch 2.13) and whether construction syncs
        buffers."""
        if broadcast_buffers is not None:
            if forward_sync_buffers is not None:
                warnings.warn("Both `broadcast_buffers` and `forward_sync_buffers` were specified. "
                              "`broadcast_buffers` is deprecated and its value is ignored when "
                              "`forward_sync_buffers` is provided.", FutureWarning, stacklevel=3)
            else:
                warnings.warn("`broadcast_buffers` is deprecated. Use `forward_sync_buffers` instead. IMPORTANT: "
                              "unlike `broadcast_buffers=False`, `forward_sync_buffers=False` still syncs buffers at "
                              "init. If you rely on buffers NOT being synced at init (e.g. rank-local buffers), keep "
                              "using `broadcast_buffers=False` until `init_sync_buffers` is available.",
                              FutureWarning, stacklevel=3)
        if forward_sync_buffers is not None:
            self.forward_sync_buffers = forward_sync_buffers
            return True
        self.forward_sync_buffers = True if broadcast_buffers is None else broadcast_buffers
        return self.forward_sync_buffers

    @property
    def broadcast_buffers(self):
        return self.forward_sync_buffers

    @broadcast_buffers.setter
    def broadcast_buffers(self, value):
        self.forward_sync_buffers = value

    def _build_params_for_reducer(self):
        """The parameters the reducer all-reduces: each once, in registration order, those that require grad."""
        self.modules_buffers = [b for name, b in self.module.named_buffers() if name not in self.parameters_to_ignore]
        return [p for name, p in self.module.named_parameters()
                if p.requires_grad and name not in self.parameters_to_ignore]

    def _sync_module_states(self, sync_buffers):
        """Every replica starts from rank 0's parameters (and buffers)."""
        ignored = self.parameters_to_ignore
        states = [p.detach() for name, p in self.module.named_parameters() if name not in ignored]
        if sync_buffers:
            states += [b.detach() for name, b in self.module.named_buffers() if name not in ignored]
        if states:
            broadcast_coalesced(states, self.process_group)

    def _ddp_init_helper(self, parameters, static_graph):
        """Bucket the parameters (one bucket until the first backward shows the order, unless unused parameters are
        searched for) and build the Reducer."""
        first_cap = DEFAULT_FIRST_BUCKET_BYTES if self.bucket_bytes_cap_default else self.bucket_bytes_cap
        if static_graph or not self.find_unused_parameters:
            limits = [2 ** 63 - 1]
        elif first_cap < self.bucket_bytes_cap:
            limits = [first_cap, self.bucket_bytes_cap]
        else:
            limits = [self.bucket_bytes_cap]
        bucket_indices, per_bucket_limits = compute_bucket_assignment_by_size(parameters, limits)
        names = {id(p): name for name, p in self.module.named_parameters()}
        self.reducer = Reducer(parameters, [names[id(p)] for p in parameters], list(reversed(bucket_indices)), list(reversed(per_bucket_limits)),
                               self.process_group, self.bucket_bytes_cap, self.find_unused_parameters,
                               self.gradient_as_bucket_view, first_cap)
        self._logging_data = self._construction_logging_data()
        self._comm_hooks = []
        if static_graph:
            self._set_static_graph()
        if self.device_type == "cpu" and any(isinstance(m, SyncBatchNorm) for m in self.module.modules()):
            raise ValueError("SyncBatchNorm layers only work with GPU modules")

    def _set_static_graph(self):
        if self.static_graph:
            warnings.warn("You've set static_graph to be True, no need to set it again.")
            return
        self.static_graph = True
        self.reducer.set_static_graph()
        if self.find_unused_parameters:
            warnings.warn("You passed find_unused_parameters=true to DistributedDataParallel, `_set_static_graph` "
                          "will detect unused parameters automatically, so you do not need to set "
                          "find_unused_parameters=true, just be sure these unused parameters will not change during "
                          "training loop while calling `_set_static_graph`.")

    # ---- pickling and copying ----

    def __getstate__(self):
        """The wrapper without its process group and reducer (an MPI communicator does not pickle); only a DDP on
        the default group can be pickled or deep-copied, as in torch."""
        if self.process_group is not dist.group.WORLD:
            raise RuntimeError("DDP Pickling/Unpickling are only supported when using DDP with the default process "
                               "group. That is, when you have called init_process_group and have not passed "
                               "process_group argument to DDP constructor")
        state = super().__getstate__()
        del state["process_group"], state["reducer"]
        return state

    def __setstate__(self, state):
        """Back on the default group, with a fresh reducer (no broadcast: the state is already the replica's)."""
        self.process_group = _default_group()
        super().__setstate__(state)
        static_graph, self.static_graph = self.static_graph, False
        self._ddp_init_helper(self._build_params_for_reducer(), static_graph)

    @staticmethod
    def _set_params_and_buffers_to_ignore_for_model(module, params_and_buffers_to_ignore):
        """Names (as in named_parameters / named_buffers) that DDP neither broadcasts nor all-reduces."""
        module._ddp_params_and_buffers_to_ignore = params_and_buffers_to_ignore

    # ---- one iteration ----

    def forward(self, *inputs, **kwargs):
        with record_function("DistributedDataParallel.forward"):
            inputs, kwargs = self._pre_forward(*inputs, **kwargs)
            output = self.module(*inputs, **kwargs)
            return self._post_forward(output)

    def _pre_forward(self, *inputs, **kwargs):
        if is_grad_enabled() and self.require_backward_grad_sync:
            self._log_runtime_stats()
            self.reducer.prepare_for_forward()
        if is_grad_enabled():
            self.reducer.rebuild_buckets()
        if self.will_sync_module_buffers():
            self._sync_buffers()
        if self.device_ids:
            device = lantern.device(self.device_type, self.device_ids[0])
            move = lambda x: x.to(device) if isinstance(x, lantern.Tensor) else x  # noqa: E731
            return tree_map(move, inputs), tree_map(move, kwargs)
        return inputs, kwargs

    def _post_forward(self, output):
        if is_grad_enabled() and self.require_backward_grad_sync:
            self.require_forward_param_sync = True
            self.reducer.prepare_for_backward(output if self.find_unused_parameters and not self.static_graph else [])
        else:
            self.require_forward_param_sync = False
        return output

    def will_sync_module_buffers(self):
        return self.require_forward_param_sync and self.forward_sync_buffers and len(self.modules_buffers) > 0

    def _sync_buffers(self):
        """Rank 0's buffers (running statistics, say) overwrite every other replica's before the forward."""
        with no_grad():
            broadcast_coalesced(self.modules_buffers, self.process_group)

    @contextmanager
    def no_sync(self):
        """Inside, forward and backward accumulate gradients locally; the first synchronised backward after it
        all-reduces the accumulated sum.

        >>> # with ddp.no_sync():
        >>> #     ddp(a).sum().backward()   # local only
        >>> # ddp(b).sum().backward()       # all-reduces grad(a) + grad(b)
        """
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    # ---- introspection and the parts lantern lacks ----

    def _get_ddp_logging_data(self):
        """Part of torch's DDP logging dict: the configuration, the buckets (sizes in bytes, as strings) and, as
        torch samples them at the start of a synchronised forward, the rebuilt buckets."""
        return dict(self._logging_data)

    def _construction_logging_data(self):
        reducer = self.reducer
        return {
            "module_name": type(self.module).__name__, "world_size": reducer.world_size, "rank": reducer.rank,
            "device_ids": "" if self.device_ids is None else " ".join(map(str, self.device_ids)),
            "output_device": -1 if self.output_device is None else self.output_device,
            "broadcast_buffers": int(self.forward_sync_buffers), "bucket_cap_bytes": self.bucket_bytes_cap,
            "find_unused_parameters": int(self.find_unused_parameters),
            "gradient_as_bucket_view": int(self.gradient_as_bucket_view),
            "is_multi_device_module": int(self.is_multi_device_module), "iteration": 0,
            "num_parameter_tensors": len(reducer.params),
            "total_parameter_size_bytes": sum(p.numel() * p.element_size() for p in reducer.params),
            "bucket_sizes": ", ".join(str(bucket.nbytes) for bucket in reducer.buckets),
        }

    def _log_runtime_stats(self):
        """Sample the reducer's state as torch's Logger does: iterations 1 to 10, then every 100th."""
        reducer, data = self.reducer, self._logging_data
        if reducer.num_iterations == 0 or (reducer.num_iterations > 10 and reducer.num_iterations % 100):
            return
        data["iteration"] = reducer.num_iterations
        data["has_rebuilt_buckets"] = int(reducer.has_rebuilt_buckets)
        if reducer.has_rebuilt_buckets:
            data["rebuilt_bucket_sizes"] = ", ".join(str(b.nbytes) for b in reducer.buckets)
            data["rebuilt_per_bucket_param_indices"] = ", ".join(
                " ".join(map(str, b.variable_indices)) for b in reducer.buckets)

    def join(self, *args, **kwargs):
        raise NotImplementedError("DistributedDataParallel.join (uneven inputs): lantern does not implement the "
                                  "Join context; give every rank the same number of batches (DistributedSampler "
                                  "with drop_last=True)")

    def register_comm_hook(self, state, hook):
        """Reduce each bucket with `hook(state, bucket: dist.GradBucket) -> Future` instead of DDP's all_reduce of
        grad / world_size (see lantern.distributed.algorithms.ddp_comm_hooks); once, before the first backward."""
        _check_comm_hook(hook)
        self._comm_hooks.append((hook, state))
        self.reducer.register_comm_hook(state, hook)

    def _register_builtin_comm_hook(self, comm_hook_type):
        raise NotImplementedError("DistributedDataParallel._register_builtin_comm_hook: lantern has no C++ built-in "
                                  "hooks; register the Python ones of torch.distributed.algorithms.ddp_comm_hooks "
                                  "with register_comm_hook")


def _check_comm_hook(hook):
    """torch's checks of a communication hook: callable, `bucket` annotated as GradBucket (if at all), a Future
    returned, and no bfloat16 compression without CUDA and NCCL."""
    if not callable(hook):
        raise TypeError("Communication hook must be callable.")
    sig = inspect.signature(hook)
    if sig.parameters["bucket"].annotation not in (inspect.Parameter.empty, dist.GradBucket):
        raise ValueError("Communication hook: bucket annotation should be dist.GradBucket.")
    returned = sig.return_annotation
    if returned is not inspect.Signature.empty and (typing.get_origin(returned) or returned) is not Future:
        raise ValueError("Communication hook: return annotation should be torch.futures.Future[torch.Tensor].")
    if hook.__name__ in ("bf16_compress_hook", "bf16_compress_wrapper_hook"):
        raise TypeError("BF16 all reduce communication hook required CUDA 11+ and NCCL 2.10+ or XPU and XCCL")


def _device_index(device):
    """An accelerator's index from an int, a string or a lantern.device."""
    return device if isinstance(device, int) else lantern.device(device).index


def _reject_unsupported(delay_all_reduce_named_params, param_to_hook_all_reduce, mixed_precision, device_mesh,
                        bucket_cap_mb_list, skip_all_reduce_unused_params):
    """DistributedDataParallel options lantern does not implement: a clear error naming each."""
    if (delay_all_reduce_named_params is not None) != (param_to_hook_all_reduce is not None):
        raise ValueError("delay_all_reduce_named_params and param_to_hook_all_reduce need to be set at the same time.")
    given = {"delay_all_reduce_named_params": delay_all_reduce_named_params is not None,
             "mixed_precision": mixed_precision is not None, "device_mesh": device_mesh is not None,
             "bucket_cap_mb_list": bool(bucket_cap_mb_list),
             "skip_all_reduce_unused_params": skip_all_reduce_unused_params}
    for name, was_given in given.items():
        if was_given:
            raise NotImplementedError(f"DistributedDataParallel({name}=...): lantern does not implement this option")


def _reject_sparse_gradients(module):
    """An nn.Embedding / nn.EmbeddingBag with sparse=True makes sparse gradients, which torch all-gathers instead of
    bucketing; lantern's reducer does not."""
    for name, submodule in module.named_modules():
        if isinstance(submodule, (Embedding, EmbeddingBag)) and submodule.sparse:
            raise NotImplementedError(f"DistributedDataParallel: {name or 'the module'} ({type(submodule).__name__}"
                                      " with sparse=True) makes sparse gradients, which lantern's reducer does not "
                                      "all-reduce; use sparse=False")


def _verify_param_shape_across_processes(process_group, parameters):
    """Every rank must hold the same parameters (count, sizes, strides), or the buckets would not line up. torch's
    errors; a rank whose parameters match names the rank that differs, where torch's would go on and hang."""
    rank = dist.get_rank(process_group)
    mine = [(list(p.shape), list(p.stride())) for p in parameters]
    everyone = [None] * dist.get_world_size(process_group)
    dist.all_gather_object(everyone, mine, group=process_group)
    for other, theirs in enumerate(everyone):
        if len(theirs) != len(mine):
            raise RuntimeError(f"DDP expects same model across all ranks, but Rank {rank} has {len(mine)} params, "
                               f"while rank {other} has inconsistent {len(theirs)} params.")
    for other in [rank] + [r for r in range(len(everyone)) if r != rank]:
        where = "this process" if other == rank else f"process {other}"
        for index, ((sizes, strides), (sizes0, strides0)) in enumerate(zip(everyone[other], everyone[0])):
            if sizes != sizes0:
                raise RuntimeError(f"[{rank}]: params[{index}] in {where} with sizes {sizes} appears not to match "
                                   "sizes of the same param in process 0.")
            if strides != strides0:
                raise RuntimeError(f"params[{index}] in {where} with sizes {sizes} appears not to match strides of "
                                   "the same param in process 0.")
