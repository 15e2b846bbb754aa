"""Point-to-point messages: send/recv (blocking), isend/irecv (a Work), batch_isend_irecv, over MPI's Isend and
Irecv on the group's communicator with the caller's tag. recv from any source (src=None) returns the sender's
rank.

>>> import lantern.distributed as dist
>>> dist.init_process_group("gloo", rank=0, world_size=1)
>>> dist.send(lantern.ones(1), dst=0)
Traceback (most recent call last):
ValueError: Invalid destination rank: destination rank should not be the same as the rank of the current process.
>>> dist.destroy_process_group()
"""
from . import observe
from .collectives import group_or_warn
from .mpi import MPI, as_bytes
from .tensors import buffer_of, check_tensor, read_only_array
from .work import Work


def _peer(made, rank, group_rank, role):
    """The group rank of the peer (None: any, for a receive), checked as torch checks it."""
    if rank is not None and group_rank is not None:
        raise ValueError("Can't specify both group_rank and global_rank")
    if group_rank is None:
        if rank is None:
            if role == "dst":
                raise ValueError("Must specify global_rank or group_rank")
            return None
        group_rank = made.group_rank(rank)
    if group_rank == made.rank():
        kind = "destination" if role == "dst" else "source"
        raise ValueError(f"Invalid {kind} rank: {kind} rank should not be the same as the rank of the current "
                         "process.")
    return group_rank


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Start sending `tensor` to rank `dst`; returns a Work."""
    check_tensor(tensor)
    made = group_or_warn(group, "isend")
    if made is None:
        return None
    peer = _peer(made, dst, group_dst, "dst")
    array = read_only_array(tensor, "isend")
    with observe.collective("send", made) as follow:
        work = Work(made, "send", [made.communicator.Isend([as_bytes(array), MPI().BYTE], peer, tag)],
                    result=[tensor])
        follow(work)
    work.keep_moving()
    return work


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Start receiving into `tensor` from rank `src` (None: any rank); returns a Work (source_rank() tells who)."""
    check_tensor(tensor)
    made = group_or_warn(group, "irecv")
    if made is None:
        return None
    peer = _peer(made, src, group_src, "src")
    array, write_back = buffer_of(tensor, "irecv")
    status = MPI().Status()
    source = MPI().ANY_SOURCE if peer is None else peer
    with observe.collective("recv" if peer is not None else "recv_any_source", made) as follow:
        request = made.communicator.Irecv([as_bytes(array), MPI().BYTE], source, tag)

        def sender():
            return made.global_ranks[status.Get_source() if peer is None else peer]
        work = Work(made, "recv", [request], write_back, [tensor], statuses=[status], source=sender)
        follow(work)
    work.keep_moving()
    return work


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send `tensor` to rank `dst` and wait until it is sent."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into `tensor` from rank `src` (None: any rank); returns the sender's rank (-1 outside the group)."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work.source_rank()


class P2POp:
    """One isend or irecv for batch_isend_irecv: P2POp(dist.isend, tensor, peer)."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                             "``torch.distributed.irecv``.")
        check_tensor(tensor)
        self.op, self.tensor, self.peer, self.group, self.tag, self.group_peer = op, tensor, peer, group, tag, group_peer


def batch_isend_irecv(p2p_op_list):
    """Start every P2POp of the list; returns their Works."""
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    return [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]
