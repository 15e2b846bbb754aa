"""Collectives of picklable Python objects, built as PyTorch builds them: each object is pickled into a uint8
tensor, the sizes travel first (an int64 tensor), then the bytes, through the tensor collectives.

>>> import lantern.distributed as dist
>>> dist.init_process_group("gloo", rank=0, world_size=1)
>>> objects = [None]
>>> dist.all_gather_object(objects, {"step": 3}); objects
[{'step': 3}]
>>> dist.destroy_process_group()
"""
import io
import pickle

import numpy as np

from .._construct import from_numpy
from .collectives import all_gather, broadcast, gather, group_or_warn, group_peer, scatter
from .point_to_point import recv, send


def _to_bytes(obj):
    buffer = io.BytesIO()
    pickle.Pickler(buffer).dump(obj)
    return from_numpy(np.frombuffer(buffer.getvalue(), np.uint8).copy())


def _from_bytes(tensor, size):
    return pickle.loads(tensor.numpy()[:size].tobytes())


def _sizes(values):
    return from_numpy(np.asarray(values, np.int64))


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Rank `src`'s object_list into every rank's object_list (same length everywhere), in place."""
    made = group_or_warn(group, "broadcast_object_list")
    if made is None:
        return
    root = group_peer(made, src, group_src, "broadcast", default=0)
    root_is_me = root == made.rank()
    pickled = [_to_bytes(obj) for obj in object_list] if root_is_me else []
    sizes = _sizes([p.numel() for p in pickled] if root_is_me else [0] * len(object_list))
    broadcast(sizes, group=group, group_src=root)
    payload = from_numpy(np.concatenate([p.numpy() for p in pickled])) if root_is_me else \
        from_numpy(np.empty(int(sizes.sum()), np.uint8))
    broadcast(payload, group=group, group_src=root)
    if not root_is_me:
        offset = 0
        for index, size in enumerate(sizes.tolist()):
            object_list[index] = _from_bytes(payload[offset:offset + size], size)
            offset += size


def _padded_with_sizes(obj, made, group):
    """Pickle `obj`, learn every rank's size (an all_gather), and pad the bytes to the longest, as PyTorch does."""
    mine = _to_bytes(obj)
    sizes = [_sizes([0]) for _ in range(made.size())]
    all_gather(sizes, _sizes([mine.numel()]), group)
    padded = from_numpy(np.zeros(max(int(s.item()) for s in sizes), np.uint8))
    padded.numpy()[:mine.numel()] = mine.numpy()
    return sizes, padded


def all_gather_object(object_list, obj, group=None):
    """Every rank's `obj` into every rank's object_list (length: the group's size), in group rank order."""
    made = group_or_warn(group, "all_gather_object")
    if made is None:
        return
    sizes, padded = _padded_with_sizes(obj, made, group)
    received = [from_numpy(np.zeros(padded.numel(), np.uint8)) for _ in range(made.size())]
    all_gather(received, padded, group)
    for index, (size, data) in enumerate(zip(sizes, received)):
        object_list[index] = _from_bytes(data, int(size.item()))


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """Every rank's `obj` into rank `dst`'s object_gather_list."""
    made = group_or_warn(group, "gather_object")
    if made is None:
        return
    root = group_peer(made, dst, group_dst, "gather", default=0)
    at_root = root == made.rank()
    if at_root and object_gather_list is None:
        raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
    sizes, padded = _padded_with_sizes(obj, made, group)
    received = [from_numpy(np.zeros(padded.numel(), np.uint8)) for _ in range(made.size())] if at_root else None
    gather(padded, received, group=group, group_dst=root)
    if at_root:
        for index, (size, data) in enumerate(zip(sizes, received)):
            object_gather_list[index] = _from_bytes(data, int(size.item()))


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None,
                        group_src=None):
    """Rank `src`'s scatter_object_input_list[i] into rank i's scatter_object_output_list[0]."""
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    made = group_or_warn(group, "scatter_object_list")
    if made is None:
        return
    root = group_peer(made, src, group_src, "scatter", default=0)
    at_root = root == made.rank()
    pickled = [_to_bytes(obj) for obj in scatter_object_input_list] if at_root else []
    longest = _sizes([max((p.numel() for p in pickled), default=0)])
    broadcast(longest, group=group, group_src=root)
    padded = []
    for p in pickled:
        padded.append(from_numpy(np.zeros(int(longest.item()), np.uint8)))
        padded[-1].numpy()[:p.numel()] = p.numpy()
    mine = from_numpy(np.zeros(int(longest.item()), np.uint8))
    scatter(mine, padded or None, group=group, group_src=root)
    size = _sizes([0])
    scatter(size, [_sizes([p.numel()]) for p in pickled] or None, group=group, group_src=root)
    scatter_object_output_list[0] = _from_bytes(mine, int(size.item()))


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None):
    """Send the objects of object_list to rank `dst` (which calls recv_object_list with a list as long)."""
    pickled = [_to_bytes(obj) for obj in object_list]
    send(_sizes([p.numel() for p in pickled]), dst, group, group_dst=group_dst)
    send(from_numpy(np.concatenate([p.numpy() for p in pickled])), dst, group, group_dst=group_dst)


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Receive objects from rank `src` into object_list, in place; returns the sender's rank."""
    sizes = _sizes([0] * len(object_list))
    sender = recv(sizes, src, group, group_src=group_src)
    payload = from_numpy(np.empty(int(sizes.sum()), np.uint8))
    recv(payload, sender, group)
    offset = 0
    for index, size in enumerate(sizes.tolist()):
        object_list[index] = _from_bytes(payload[offset:offset + size], size)
        offset += size
    return sender
