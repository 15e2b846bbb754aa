"""The standard DDP communication hooks (torch.distributed.algorithms.ddp_comm_hooks.default_hooks).

A hook gets `(state, bucket)` (here the state is the process group, None for the default one) and returns a Future
of the bucket's averaged gradients. `allreduce_hook` does what DDP does without a hook; `fp16_compress_hook` sends
the bucket as float16, halving the bytes on the wire at the cost of float16's precision.

>>> import lantern, lantern.nn as nn, lantern.distributed as dist
>>> dist.init_process_group("gloo", rank=0, world_size=1)
>>> model = nn.parallel.DistributedDataParallel(nn.Linear(2, 1))
>>> model.register_comm_hook(None, fp16_compress_hook)
>>> model(lantern.ones(3, 2)).sum().backward()
>>> model.module.weight.grad
tensor([[3., 3.]])
>>> dist.destroy_process_group()
"""
from ....core.dtype import bfloat16, float16
from ... import all_reduce, group

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook", "fp16_compress_wrapper",
           "bf16_compress_wrapper"]


def allreduce_hook(process_group, bucket):
    """Average the bucket over the group: divide by its size, then a summing all_reduce."""
    group_to_use = process_group if process_group is not None else group.WORLD
    tensor = bucket.buffer()
    tensor.div_(group_to_use.size())
    return all_reduce(tensor, group=group_to_use, async_op=True).get_future().then(lambda fut: fut.value()[0])


def _compress_hook(dtype, process_group, bucket):
    """All-reduce the bucket cast to `dtype` and divided by the group's size; cast back into the bucket."""
    group_to_use = process_group if process_group is not None else group.WORLD
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(group_to_use.size())

    def decompress(fut):
        buffer.copy_(fut.value()[0])
        return buffer
    return all_reduce(compressed, group=group_to_use, async_op=True).get_future().then(decompress)


def fp16_compress_hook(process_group, bucket):
    """allreduce_hook over float16: half the bytes on the wire, float16's precision."""
    return _compress_hook(float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """allreduce_hook over bfloat16. torch's DistributedDataParallel takes it only on CUDA with NCCL 2.10+ (or XPU),
    so registering it raises TypeError on the CPU, as in torch; called directly it works."""
    return _compress_hook(bfloat16, process_group, bucket)


def _compress_wrapper(dtype, hook, name):
    """`hook` run on the bucket cast to `dtype`; its result is copied back into that cast buffer, which DDP then
    copies (casting back) into the bucket."""
    def compress_wrapper_hook(hook_state, bucket):
        bucket.set_buffer(bucket.buffer().to(dtype))
        future = hook(hook_state, bucket)

        def decompress(fut):
            decompressed = bucket.buffer()
            decompressed.copy_(fut.value())
            return decompressed
        return future.then(decompress)
    compress_wrapper_hook.__name__ = compress_wrapper_hook.__qualname__ = name
    return compress_wrapper_hook


def fp16_compress_wrapper(hook):
    """`hook` over the bucket cast to float16 (fp16_compress_hook is fp16_compress_wrapper(allreduce_hook))."""
    return _compress_wrapper(float16, hook, "fp16_compress_wrapper_hook")


def bf16_compress_wrapper(hook):
    """`hook` over the bucket cast to bfloat16; like bf16_compress_hook, DDP refuses it on the CPU, as torch does."""
    return _compress_wrapper(bfloat16, hook, "bf16_compress_wrapper_hook")
