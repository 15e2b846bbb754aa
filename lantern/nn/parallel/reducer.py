"""DistributedDataParallel's Reducer: averages the gradients across processes while backward still runs.

The parameters' gradients live in buckets, each a flat tensor with one view per parameter (see `bucketing`). A hook
on every parameter's gradient accumulator (`register_post_accumulate_grad_hook`) marks the parameter ready as soon
as its `.grad` is final: its gradient, divided by the world size, is copied into its view. When the last parameter
of a bucket is ready the bucket is ready, and its `all_reduce` (a sum) starts at once, asynchronously, so the
communication runs while autograd computes the gradients of earlier layers. Buckets are launched strictly in order
(a ready bucket waits for the ones before it), so every process issues the same collectives in the same order. When
the last bucket has started, a callback queued on the autograd engine waits for every bucket at the end of
backward and copies the averaged gradients back into `.grad`.

The first iteration records the order in which gradients became ready; the next forward rebuilds the buckets in that
order (rank 0's order, broadcast, so that every process agrees), with a 1 MiB first bucket then `bucket_cap_mb`.

Parameters that take no part in the loss never fire their hook; with `find_unused_parameters=True` the reducer finds
them before backward by walking the autograd graph from the outputs, marks them ready with zeros at the first hook,
and all-reduces a map of which parameters each process used, so that a parameter nobody used keeps its `.grad`.
With `static_graph=True` the first iteration all-reduces everything at the end of backward and remembers which
parameters went unused and how many times each hook fires; later iterations rely on that.

Each phase is a profiler range (lantern.profiler, `record_function`): "reducer::prepare_for_backward",
"reducer::mark_bucket_ready[<i>]" around a bucket's launch, "reducer::finalize_backward" with "reducer::wait[<i>]"
inside it.
"""
import os
import weakref
from itertools import accumulate

import lantern
from ... import distributed as dist
from ...autograd.engine import queue_callback
from ...autograd.grad_mode import no_grad
from ...autograd.graph import AccumulateGrad, gradient_edge
from ...profiler import record_function
from ...utils._pytree import tree_leaves
from .bucketing import compute_bucket_assignment_by_size

__all__ = ["Reducer", "DEFAULT_FIRST_BUCKET_BYTES"]

DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024   # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES


class Bucket:
    """A flat gradient buffer for some parameters, one view per parameter, all-reduced as one tensor."""

    def __init__(self, params, variable_indices, size_limit):
        self.variable_indices = list(variable_indices)
        self.size_limit = size_limit
        members = [params[i] for i in self.variable_indices]
        numels = [p.numel() for p in members]
        self.gradients = lantern.zeros(sum(numels), dtype=members[0].dtype, device=members[0].device)
        starts = [0, *accumulate(numels)]
        self.views = [self.gradients[start:start + n].view(p.shape) for p, start, n in zip(members, starts, numels)]
        self.pending = len(members)
        self.work = None

    @property
    def nbytes(self):
        return self.gradients.numel() * self.gradients.element_size()


def is_bucket_view(grad, view):
    """Whether `grad` is `view` itself: the same memory, the same shape (gradient_as_bucket_view's gradients)."""
    return (grad.untyped_storage().data_ptr() == view.untyped_storage().data_ptr()
            and grad.storage_offset() == view.storage_offset() and grad.shape == view.shape)


def parameters_reached(outputs):
    """ids of the leaves whose AccumulateGrad the autograd graph of `outputs` reaches."""
    seen_nodes, reached = set(), set()
    stack = [gradient_edge(t)[0] for t in tree_leaves(outputs) if isinstance(t, lantern.Tensor)]
    while stack:
        node = stack.pop()
        if node is None or node in seen_nodes:
            continue
        seen_nodes.add(node)
        if isinstance(node, AccumulateGrad) and node.variable is not None:
            reached.add(id(node.variable))
        stack.extend(next_node for next_node, _ in node.next_functions)
    return reached


def _hook_for(reducer, index):
    """Parameter `index`'s post-accumulate-grad hook; it holds the reducer weakly, so the parameters do not keep a
    DistributedDataParallel alive."""
    reducer_ref = weakref.ref(reducer)

    def reducer_autograd_hook(param):
        live = reducer_ref()
        if live is not None:
            live.autograd_hook(index)
    return reducer_autograd_hook


class Reducer:
    """Buckets, hooks and the all-reduce schedule of one DistributedDataParallel (see the module docstring)."""

    def __init__(self, params, param_names, bucket_indices, per_bucket_size_limits, process_group, bucket_bytes_cap,
                 find_unused_parameters, gradient_as_bucket_view, first_bucket_bytes_cap):
        self.params = params
        self.param_names = param_names
        self.process_group = process_group
        self.world_size = dist.get_world_size(process_group)
        self.rank = dist.get_rank(process_group)
        self.bucket_bytes_cap = bucket_bytes_cap
        self.first_bucket_bytes_cap = first_bucket_bytes_cap
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = False
        self.num_iterations = 0
        self.expect_autograd_hooks = False
        self.require_finalize = False
        self.ready = set()
        self.unused_parameters = []
        self.has_marked_unused_parameters = True
        self.locally_used = [False] * len(params)
        self.used_map_work = None
        self.globally_used = None
        self.rebuilt_param_indices = []
        self.has_rebuilt_buckets = False
        self.static_hook_counts = None   # static_graph: how many times each hook fired in the first iteration
        self.static_graph_recorded = False
        self.delay_all_reduce_queued = False
        self.hooks_left = []
        self.comm_hook = None   # (hook, state) from DistributedDataParallel.register_comm_hook
        self.initialize_buckets(bucket_indices, per_bucket_size_limits)
        handles = [p.register_post_accumulate_grad_hook(_hook_for(self, i)) for i, p in enumerate(params)]
        weakref.finalize(self, _remove_handles, handles)

    # ---- buckets ----

    def initialize_buckets(self, bucket_indices, per_bucket_size_limits):
        """Make the buckets; with gradient_as_bucket_view, existing gradients move into their views."""
        self.buckets = [Bucket(self.params, indices, limit)
                        for indices, limit in zip(bucket_indices, per_bucket_size_limits)]
        self.locations = {}
        for b, bucket in enumerate(self.buckets):
            for slot, index in enumerate(bucket.variable_indices):
                self.locations[index] = (b, slot)
        if self.gradient_as_bucket_view:
            with no_grad():
                for bucket in self.buckets:
                    for index, view in zip(bucket.variable_indices, bucket.views):
                        grad = self.params[index].grad
                        if grad is not None and not is_bucket_view(grad, view):
                            view.copy_(grad)
                            self.params[index].grad = view
        self.next_bucket = 0

    def should_rebuild_buckets(self):
        return (self.static_graph or not self.find_unused_parameters) and not self.has_rebuilt_buckets

    def rebuild_buckets(self):
        """Called by each forward: after the first backward, bucket the parameters in the order their gradients
        became ready (rank 0's order). True when it rebuilt."""
        self.ensure_prior_reduction_finished()
        if not self.should_rebuild_buckets() or not self.rebuilt_param_indices:
            return False
        pushed = set(self.rebuilt_param_indices)   # static_graph's unused parameters never fired: they go last
        local_order = self.rebuilt_param_indices + [i for i in range(len(self.params)) if i not in pushed]
        order = lantern.tensor(local_order, dtype=lantern.int64)
        dist.broadcast(order, src=dist.get_global_rank(self.process_group, 0), group=self.process_group)
        indices = order.tolist()
        limits = [self.first_bucket_bytes_cap, self.bucket_bytes_cap]
        bucket_indices, per_bucket_limits = compute_bucket_assignment_by_size(
            [self.params[i] for i in indices], limits, tensor_indices=indices)
        self.initialize_buckets(bucket_indices, per_bucket_limits)
        self.rebuilt_param_indices = []
        self.has_rebuilt_buckets = True
        return True

    # ---- one iteration ----

    def prepare_for_forward(self):
        self.num_iterations += 1

    def prepare_for_backward(self, outputs):
        """Arm the hooks for the coming backward; with find_unused_parameters, find the parameters that the graph of
        `outputs` does not reach."""
        with record_function("reducer::prepare_for_backward"):
            self.ensure_prior_reduction_finished()
            self.expect_autograd_hooks = True
            self.require_finalize = True
            self.ready = set()
            self.next_bucket = 0
            for bucket in self.buckets:
                bucket.pending = len(bucket.variable_indices)
                bucket.work = None
            self.has_marked_unused_parameters = False
            self.delay_all_reduce_queued = False
            if self.static_graph_after_first_iteration():
                self.hooks_left = list(self.static_hook_counts)
            elif self.find_unused_parameters and not self.static_graph:
                reached = parameters_reached(outputs)
                self.unused_parameters = [i for i, p in enumerate(self.params) if id(p) not in reached]

    def set_static_graph(self):
        """The graph is the same every iteration: learn it in the first (DDP's static_graph=True)."""
        self.static_graph = True
        self.static_hook_counts = [0] * len(self.params)

    def static_graph_first_iteration(self):
        return self.static_graph and not self.static_graph_recorded

    def static_graph_after_first_iteration(self):
        return self.static_graph and self.static_graph_recorded

    def tracks_used_parameters(self):
        return (self.find_unused_parameters and not self.static_graph) or self.static_graph_first_iteration()

    def autograd_hook(self, index):
        """Parameter `index`'s gradient is accumulated: mark it ready (the bucket may start its all_reduce)."""
        if self.tracks_used_parameters() and self.params[index].grad is not None:
            self.locally_used[index] = True
        if not self.expect_autograd_hooks:
            return
        if self.static_graph_first_iteration():
            self.count_static_hook(index)
            return
        if not self.has_marked_unused_parameters:
            self.has_marked_unused_parameters = True
            if self.find_unused_parameters and not self.static_graph:
                queue_callback(self.mark_the_rest_ready)
            for unused in self.unused_parameters:
                self.mark_variable_ready(unused)
        if self.should_rebuild_buckets():
            self.rebuilt_param_indices.append(index)
        if self.static_graph_after_first_iteration():
            self.hooks_left[index] -= 1
            if self.hooks_left[index] > 0:
                return
        self.mark_variable_ready(index)

    def count_static_hook(self, index):
        """static_graph's first backward only counts the hooks; the all-reduce waits for its end."""
        if not self.delay_all_reduce_queued:
            self.delay_all_reduce_queued = True
            queue_callback(self.delay_all_reduce)
        self.static_hook_counts[index] += 1

    def mark_the_rest_ready(self):
        """find_unused_parameters, at the end of backward: a parameter the outputs reach but backward never gave a
        gradient (it feeds an output the loss does not use) is unused too. (torch routes every output through its
        _DDPSink node, so that such parameters' hooks fire without a gradient.)"""
        rest = [index for index in range(len(self.params)) if index not in self.ready]
        for index in rest:
            self.mark_variable_ready(index, finalize_later=False)
        if rest:
            self.finalize_backward()

    def mark_variable_ready(self, index, finalize_later=True):
        if index in self.ready:
            raise RuntimeError(
                f"Expected to mark a variable ready only once. This error is caused by one of the following "
                f"reasons: 1) Use of a module parameter outside the `forward` function; 2) Reused parameters in "
                f"multiple reentrant backward passes; 3) Incorrect unused parameter detection. Parameter at index "
                f"{index} has been marked as ready twice.")
        self.ready.add(index)
        b, slot = self.locations[index]
        self.copy_grad_into_bucket(index, self.buckets[b].views[slot])
        self.buckets[b].pending -= 1
        if self.buckets[b].pending == 0:
            self.launch_ready_buckets()
        if self.next_bucket == len(self.buckets) and finalize_later:
            queue_callback(self.finalize_backward)

    def copy_grad_into_bucket(self, index, view):
        """The bucket's view gets grad / world_size (zeros for a parameter without a gradient); with a
        communication hook, grad itself: the hook averages."""
        param = self.params[index]
        grad = param.grad
        with no_grad(), record_function("reducer::copy_grad_to_bucket"):
            if grad is None:
                view.zero_()
            elif is_bucket_view(grad, view):
                if self.comm_hook is None:
                    view.div_(self.world_size)
            else:
                if self.comm_hook is None:
                    lantern.mul(grad, 1.0 / self.world_size, out=view)
                else:
                    view.copy_(grad)
                if self.gradient_as_bucket_view:
                    param.grad = view

    def launch_ready_buckets(self):
        """Start the all_reduce of every bucket whose turn has come and whose gradients are all in."""
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            bucket = self.buckets[self.next_bucket]
            with record_function(f"reducer::mark_bucket_ready[{self.next_bucket}]"):
                bucket.work = self.run_comm_hook(bucket) if self.comm_hook else dist.all_reduce(
                    bucket.gradients, group=self.process_group, async_op=True)
            self.next_bucket += 1
        if self.next_bucket == len(self.buckets) and self.tracks_used_parameters():
            self.launch_used_map_reduction()

    def register_comm_hook(self, state, hook):
        if self.comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        self.comm_hook = (hook, state)

    def run_comm_hook(self, bucket):
        """The registered hook's Future for `bucket` (it stands where the all_reduce's Work would)."""
        hook, state = self.comm_hook
        index = self.next_bucket
        grad_bucket = dist.GradBucket(index, index == len(self.buckets) - 1, bucket.gradients, bucket.views,
                                      [self.params[i] for i in bucket.variable_indices])
        return hook(state, grad_bucket)

    def take_hook_result(self, bucket, value):
        """A hook's Future gives the reduced bucket as a tensor: copy it into the bucket unless it is the bucket."""
        if not isinstance(value, lantern.Tensor):
            raise RuntimeError(f"Unable to cast {value!r} to Tensor")
        if not is_bucket_view(value, bucket.gradients):
            with no_grad():
                bucket.gradients.copy_(value.reshape(-1))

    def launch_used_map_reduction(self):
        self.used_map = lantern.tensor(self.locally_used, dtype=lantern.int32)
        self.used_map_work = dist.all_reduce(self.used_map, group=self.process_group, async_op=True)

    def delay_all_reduce(self):
        """static_graph's first backward has ended: every parameter whose hook never fired is unused for good; mark
        every parameter ready, then finish."""
        self.unused_parameters = [i for i, count in enumerate(self.static_hook_counts) if count == 0]
        for index in range(len(self.params)):
            self.mark_variable_ready(index, finalize_later=False)
        self.static_graph_recorded = True
        self.finalize_backward()

    def finalize_backward(self):
        """End of backward: wait for each bucket's all_reduce and put the averaged gradients into .grad."""
        with record_function("reducer::finalize_backward"):
            self.expect_autograd_hooks = False
            self.require_finalize = False
            globally_used = self.wait_for_used_map()
            for b, bucket in enumerate(self.buckets):
                with record_function(f"reducer::wait[{b}]"):
                    outcome = bucket.work.wait()
                if self.comm_hook is not None:
                    self.take_hook_result(bucket, outcome)
                for index, view in zip(bucket.variable_indices, bucket.views):
                    if globally_used is None or globally_used[index]:
                        self.copy_bucket_to_grad(self.params[index], view)

    def wait_for_used_map(self):
        """Per parameter, whether any process used it: this iteration's map with find_unused_parameters, the first
        iteration's with static_graph, None when neither tracks unused parameters."""
        if self.used_map_work is not None:
            self.used_map_work.wait()
            self.used_map_work = None
            self.globally_used = [count > 0 for count in self.used_map.tolist()]
            self.locally_used = [False] * len(self.params)
        return self.globally_used if self.find_unused_parameters or self.static_graph else None

    def copy_bucket_to_grad(self, param, view):
        with no_grad():
            if self.gradient_as_bucket_view:
                if param.grad is None:
                    param.grad = view
            elif param.grad is None:
                param.grad = view.clone()
            else:
                param.grad.copy_(view)

    def ensure_prior_reduction_finished(self):
        """A backward that left parameters without gradients never finished its reduction: torch's error."""
        if not self.require_finalize:
            return
        missing = [i for i in range(len(self.params)) if i not in self.ready]
        message = (
            "Expected to have finished reduction in the prior iteration before starting a new one. This error "
            "indicates that your module has parameters that were not used in producing loss. You can enable unused "
            "parameter detection by passing the keyword argument `find_unused_parameters=True` to "
            "`torch.nn.parallel.DistributedDataParallel`, and by \nmaking sure all `forward` function outputs "
            "participate in calculating loss. \nIf you already have done the above, then the distributed data "
            "parallel module wasn't able to locate the output tensors in the return value of your module's "
            "`forward` function. Please include the loss function and the structure of the return value of "
            "`forward` of your module when reporting this issue (e.g. list, dict, iterable).")
        debug = os.environ.get("TORCH_DISTRIBUTED_DEBUG", "OFF").upper() in ("INFO", "DETAIL")
        if debug:
            names = ", ".join(sorted(self.param_names[i] for i in missing))
            message += f"\nParameters which did not receive grad for rank {self.rank}: {names}"
        message += (f"\nParameter indices which did not receive grad for rank {self.rank}: "
                    f"{' '.join(map(str, missing))}")
        if not debug:
            message += ("\n In addition, you can set the environment variable TORCH_DISTRIBUTED_DEBUG to either INFO "
                        "or DETAIL to print out information about which particular parameters did not receive "
                        "gradient on this rank as part of this error")
        raise RuntimeError(message)


def _remove_handles(handles):
    for handle in handles:
        handle.remove()
