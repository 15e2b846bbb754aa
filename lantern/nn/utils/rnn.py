"""Packed sequences: batches of variable-length sequences for the recurrent layers (torch.nn.utils.rnn).

A PackedSequence stores the time steps of a batch one after another, longest sequences first, with
`batch_sizes[t]` = how many sequences are still running at step t. Everything here is built from lantern ops, so
gradients flow through packing and padding.

>>> import lantern
>>> from lantern.nn.utils.rnn import pack_sequence, pad_packed_sequence
>>> packed = pack_sequence([lantern.tensor([1, 2, 3]), lantern.tensor([4, 5]), lantern.tensor([6])])
>>> packed.data, packed.batch_sizes
(tensor([1, 4, 6, 2, 5, 3]), tensor([3, 2, 1]))
>>> padded, lengths = pad_packed_sequence(packed, batch_first=True)
>>> padded.tolist(), lengths.tolist()
([[1, 2, 3], [4, 5, 0], [6, 0, 0]], [3, 2, 1])
"""
from collections.abc import Iterable
from typing import NamedTuple, Optional

import lantern
from ..._tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


class _PackedSequenceFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Optional[Tensor]
    unsorted_indices: Optional[Tensor]


class PackedSequence(_PackedSequenceFields):
    """The packed steps of a batch of sequences: (data, batch_sizes, sorted_indices, unsorted_indices).

    Made by pack_padded_sequence / pack_sequence rather than by hand. `data` holds the steps of all sequences,
    step by step; `batch_sizes` (int64, on the CPU) how many sequences each step has; `sorted_indices` the batch
    order the packing used (None if the input was already sorted) and `unsorted_indices` its inverse.
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn.")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """`data.to(*args, **kwargs)`, with the index tensors following data's device; self if nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = (lambda t: None if t is None else t.to(data.device))
        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cpu(self):
        return self.to("cpu")

    def cuda(self, *args, **kwargs):
        return self.to(*(args or ("cuda",)), **kwargs)

    def double(self):
        return self.to(dtype=lantern.float64)

    def float(self):
        return self.to(dtype=lantern.float32)

    def half(self):
        return self.to(dtype=lantern.float16)

    def long(self):
        return self.to(dtype=lantern.int64)

    def int(self):
        return self.to(dtype=lantern.int32)

    def short(self):
        return self.to(dtype=lantern.int16)

    def char(self):
        return self.to(dtype=lantern.int8)

    def byte(self):
        return self.to(dtype=lantern.uint8)

    @property
    def is_cuda(self):
        """Whether `data` lives on a CUDA device."""
        return self.data.is_cuda


def invert_permutation(permutation):
    """The inverse of a 1-D permutation tensor (None stays None): out[permutation[i]] = i."""
    if permutation is None:
        return None
    out = lantern.empty_like(permutation)
    return out.scatter_(0, permutation, lantern.arange(permutation.numel(), device=permutation.device))


def _step_mask(lengths, steps):
    """(steps, batch) bool: True where sequence b still runs at step t (lengths sorted, longest first)."""
    return lantern.arange(steps, device=lengths.device).unsqueeze(1) < lengths.unsqueeze(0)


def _check_lengths(lengths, batch_size, numel):
    if numel == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if lengths.dim() != 1 or lengths.dtype is not lantern.int64:
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D cpu "
                           f"{_scalar_type_name(lengths.dtype)} tensor")
    if lengths.size(0) != batch_size:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {lengths.size(0)} "
                           f"(batch_size={batch_size})")
    values = lengths.tolist()
    if values[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if any(a < b for a, b in zip(values, values[1:])):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You "
                           "can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                           "sidestep this requirement if you do not need ONNX exportability.")
    return values


def _scalar_type_name(dtype):
    names = {lantern.int64: "Long", lantern.int32: "Int", lantern.int16: "Short", lantern.int8: "Char",
             lantern.uint8: "Byte", lantern.bool: "Bool", lantern.float32: "Float", lantern.float64: "Double",
             lantern.float16: "Half", lantern.bfloat16: "BFloat16"}
    return names.get(dtype, str(dtype))


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded (T, B, *) batch (B, T, * with batch_first) whose sequence b has lengths[b] valid steps.

    With enforce_sorted=False the batch is sorted by length first and the order is kept in the result."""
    if isinstance(lengths, Tensor):
        lengths = lengths.to(dtype=lantern.int64)
    else:
        lengths = lantern.as_tensor(lengths, dtype=lantern.int64, device="cpu")
    sorted_indices = None
    if not enforce_sorted:
        lengths, sorted_indices = lantern.sort(lengths, descending=True)
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    steps_first = input.transpose(0, 1) if batch_first else input
    batch = steps_first.size(1)
    values = _check_lengths(lengths, batch, steps_first.numel())
    steps = values[0]
    mask = _step_mask(lengths, steps)
    batch_sizes = mask.sum(1)
    # Rows of the (steps * batch) flattening that are real steps, in time-major order: the packed layout.
    rows = mask.flatten().nonzero().squeeze(1).to(input.device)
    flat = steps_first[:steps].reshape((steps * batch,) + tuple(steps_first.shape[2:]))
    return PackedSequence(flat.index_select(0, rows), batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo pack_padded_sequence: (padded (T, B, *) or (B, T, *) tensor, lengths), in the original batch order.

    `total_length` pads the time dimension to that many steps (ValueError if shorter than the longest sequence)."""
    data, batch_sizes = sequence.data, sequence.batch_sizes
    steps = batch_sizes.size(0)
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {steps}")
        steps = total_length
    batch = int(batch_sizes[0])
    lengths = (batch_sizes.unsqueeze(1) > lantern.arange(batch)).sum(0)
    mask = _step_mask(lengths, steps).flatten()
    rest = tuple(data.shape[1:])
    padded = data.new_full((steps * batch,) + rest, padding_value)
    padded = padded.index_put((mask.to(data.device),), data).view((steps, batch) + rest)
    if batch_first:
        padded = padded.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        return (padded.index_select(0 if batch_first else 1, sequence.unsorted_indices),
                lengths[sequence.unsorted_indices.cpu()])
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack variable-length (L_i, *) tensors into one (T, B, *) tensor ((B, T, *) with batch_first), padding
    each to the longest length T with padding_value on `padding_side` ("right" or "left"). Result dtype and
    device are those of the first sequence."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError(f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}")
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    for i, s in enumerate(sequences):
        if not isinstance(s, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(s).__name__}")
        if s.dim() == 0:
            raise RuntimeError("pad_sequence: every sequence needs at least one dimension (its length), but got "
                               f"a 0-D tensor as element {i}")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    first = sequences[0]
    steps = max(s.size(0) for s in sequences)
    shape = (len(sequences), steps) if batch_first else (steps, len(sequences))
    out = first.new_full(shape + tuple(first.shape[1:]), padding_value)
    for i, s in enumerate(sequences):
        length = s.size(0)
        start = steps - length if padding_side == "left" else 0
        slot = out[i] if batch_first else out[:, i]
        slot[start:start + length].copy_(s)
    return out


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Split a padded (T, B, *) tensor ((B, T, *) with batch_first) back into B tensors of lengths[b] steps."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    steps = lantern.arange(padded_sequences.shape[1], device=lengths.device)
    return [seq[steps < length] for seq, length in zip(padded_sequences, lengths, strict=True)]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of (L_i, *) tensors (pad_sequence, then pack_padded_sequence)."""
    lengths = lantern.as_tensor([s.size(0) for s in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of (L_i, *) tensors a PackedSequence holds, in the original batch order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
