"""Indexing against torch: x[index] (values, shapes, strides, offsets, storage sharing, the ops dispatched),
x[index] = value (values and _version), index_put_/index_put, the error cases, and the meta device.

Inputs are non-contiguous (see oracle.noncontig) unless a case says otherwise.
"""
import io
import warnings

import numpy as np
import pytest
import torch

import lantern
from lantern import _indexing
from lantern.backends.cpu import CPUBackend
from oracle import check, noncontig, raises_like
from device_generic import lantern_device  # noqa: F401  (the fixture: these tests run on cpu and openreg)

pytestmark = pytest.mark.usefixtures("lantern_device")

X = noncontig(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
MASK_2x3 = np.array([[True, False, True], [False, True, True]])

GETITEM = {
    # ints and slices
    "int": lambda m, x: x[1],
    "neg int": lambda m, x: x[-2],
    "two ints": lambda m, x: x[0, 1],
    "three ints": lambda m, x: x[-1, -1, -1],
    "full slice": lambda m, x: x[:],
    "full slices": lambda m, x: x[:, :, :],
    "start": lambda m, x: x[1:],
    "stop": lambda m, x: x[:1],
    "two slices": lambda m, x: x[0:2, 1:3],
    "step 2": lambda m, x: x[:, ::2],
    "steps": lambda m, x: x[:, 1::2, 1:4:2],
    "neg start": lambda m, x: x[:, -2:],
    "neg stop": lambda m, x: x[:, :-1, -3:-1],
    "clamped": lambda m, x: x[:, -10:10],
    "past end": lambda m, x: x[:, 5:],
    "reversed bounds": lambda m, x: x[:, 2:1],
    "huge stop": lambda m, x: x[0:100, 0:100],
    "slice then int": lambda m, x: x[1:, 2],
    "int then slice": lambda m, x: x[1, 1:, ::3],
    "chained": lambda m, x: x[0][1][2],
    "chained views": lambda m, x: x[1, 1:][:, ::3],
    # ellipsis, None, bools
    "ellipsis": lambda m, x: x[...],
    "ellipsis int": lambda m, x: x[..., 0],
    "ellipsis slice": lambda m, x: x[..., 1:3],
    "int ellipsis": lambda m, x: x[0, ...],
    "int ellipsis int": lambda m, x: x[0, ..., 1],
    "two ellipses": lambda m, x: x[..., 0, ...],
    "None": lambda m, x: x[None],
    "slice None": lambda m, x: x[:, None],
    "ellipsis None": lambda m, x: x[..., None],
    "None int None int": lambda m, x: x[None, 0, None, 1],
    "None ellipsis None": lambda m, x: x[None, ..., None],
    "int None slice None": lambda m, x: x[1, None, :, None],
    "True": lambda m, x: x[True],
    "False": lambda m, x: x[False],
    "None True": lambda m, x: x[None, True],
    "int True": lambda m, x: x[0, True],
    # integer scalars of other kinds
    "0-dim tensor": lambda m, x: x[m.tensor(1)],
    "0-dim tensors": lambda m, x: x[m.tensor(1), m.tensor(-1)],
    "numpy int64": lambda m, x: x[np.int64(1)],
    "numpy int32": lambda m, x: x[:, np.int32(2)],
    "0-dim bool True": lambda m, x: x[m.tensor(True)],
    "0-dim bool False": lambda m, x: x[m.tensor(False)],
    "tensor slice bounds": lambda m, x: x[:, m.tensor(1):m.tensor(3)],
    # integer lists and tensors
    "list": lambda m, x: x[[0, 1]],
    "list repeats": lambda m, x: x[[1, 0, 1]],
    "list negative": lambda m, x: x[[-1]],
    "empty list": lambda m, x: x[[]],
    "list of floats": lambda m, x: x[[1.0, 0.0]],
    "numpy array": lambda m, x: x[np.array([1, 0])],
    "slice list": lambda m, x: x[:, [2, 0]],
    "last dim list": lambda m, x: x[:, :, [3, 0, 3]],
    "ellipsis list": lambda m, x: x[..., [1, 2]],
    "two lists": lambda m, x: x[[0, 1], [1, 2]],
    "separated lists go first": lambda m, x: x[[0, 1], :, [1, 2]],
    "list ellipsis list": lambda m, x: x[[0, 1], ..., [1, 2]],
    "int then list (torch, not NumPy)": lambda m, x: x[0, :, [1, 2]],
    "slice int list": lambda m, x: x[:, 0, [1, 2]],
    "list int": lambda m, x: x[[0, 1], 0],
    "broadcast lists": lambda m, x: x[[[0], [1]], [1, 2]],
    "nested list is a tuple": lambda m, x: x[[[0, 1], [1, 0]]],
    "2-D index tensor": lambda m, x: x[m.tensor([[0, 1], [1, 0]])],
    "transposed index tensor": lambda m, x: x[:, m.tensor([[0, 1], [2, 0]]).t()],
    "int32 index": lambda m, x: x[m.tensor([1, 0], dtype=m.int32)],
    "expanded index": lambda m, x: x[m.tensor([0, 1]).expand(2, 2)],
    "expanded int32 index": lambda m, x: x[m.tensor([0, 1], dtype=m.int32)[None].expand(2, 2), m.tensor([0, 1])],
    "index tensors broadcast": lambda m, x: x[:, m.tensor([[2], [0]]), m.tensor([1, 3])],
    "empty index tensor": lambda m, x: x[m.tensor([], dtype=m.int64)],
    "None list": lambda m, x: x[None, [0, 1]],
    "list None": lambda m, x: x[[0, 1], None],
    "slice list slice": lambda m, x: x[1:, [0, 2], ::2],
    "list then int of copy": lambda m, x: x[[0, 1]][:, 0],
    # masks
    "mask all dims": lambda m, x: x[x > 5],
    "mask 2-D": lambda m, x: x[x[:, :, 0] > 5],
    "mask dim 0": lambda m, x: x[m.tensor([True, False])],
    "mask dim 1": lambda m, x: x[:, m.tensor([True, False, True])],
    "list of bools": lambda m, x: x[[True, False]],
    "numpy bool array": lambda m, x: x[np.array([False, True])],
    "mask slice": lambda m, x: x[m.tensor([True, False]), 1:3],
    "mask None": lambda m, x: x[m.tensor([True, True]), None],
    "None mask": lambda m, x: x[None, m.tensor([True, False])],
    "2-D mask list": lambda m, x: x[m.tensor(MASK_2x3.tolist()), m.tensor([0, 1, 2, 3])],
    "2-D mask None": lambda m, x: x[m.tensor(MASK_2x3.tolist()), None],
    "mask list separated": lambda m, x: x[m.tensor([True, True]), :, [0, 3]],
    # self with permuted strides: the copy follows self's memory order, as TensorIterator does
    "transposed self": lambda m, x: x.transpose(0, 2)[:, [0, 1]],
    "permuted self": lambda m, x: x.permute(2, 0, 1)[:, [0, 1]],
    "permuted self last": lambda m, x: x.permute(2, 0, 1)[:, :, [0, 1]],
    "permuted separated": lambda m, x: x.permute(2, 0, 1)[[[0, 1]], :, [[0], [1]]],
    "transposed self 2-D index": lambda m, x: x.transpose(0, 2)[m.tensor([[0, 1], [1, 0]]).t()],
}


def _facts(x, y):
    """What an index result is: the tensor, its storage offset, and whether (and where) it shares x's storage."""
    shares = y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    # an empty tensor is described by its shape and dtype (oracle.as_numpy loses the shape of empty tensors)
    result = y if y.numel() else (y.shape, y.dtype)
    return result, y.storage_offset(), shares, (y.data_ptr() - x.data_ptr()) if shares and y.numel() else None


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")
@pytest.mark.parametrize("name", GETITEM)
def test_getitem(name):
    fn = GETITEM[name]
    check(lambda m, x: _facts(x, fn(m, x)), X)


@pytest.mark.parametrize("index", [np.array([[1, 0], [0, 1]]), np.array([1, 0], dtype=np.int32),
                                   np.array([False, True, True, False])])
def test_getitem_noncontiguous_index_tensor(index):
    check(lambda m, x, i: x[:, :, i], X, noncontig(index))
    check(lambda m, x, i: x.movedim(2, 0)[i], X, noncontig(index))


def test_getitem_0dim():
    for fn in (lambda m, x: x[None], lambda m, x: x[...], lambda m, x: x[True], lambda m, x: x[False]):
        check(lambda m, x: _facts(x, fn(m, x)), np.array(3, np.float32))


def test_getitem_int_and_bool_dtypes():
    check(lambda m, x: x[1:, [0, 2]], noncontig(np.arange(12, dtype=np.int32).reshape(3, 4)))
    check(lambda m, x: x[x], noncontig(np.array([True, False, True])))


_OPS = {"SelectBackward0": "select", "SliceBackward0": "slice", "UnsqueezeBackward0": "unsqueeze",
        "AliasBackward0": "alias", "IndexBackward0": "index.Tensor"}


def _torch_op_chain(y):
    """The view/index ops torch recorded for y, first to last, read off its grad_fn chain."""
    names, node = [], y.grad_fn
    while node is not None and type(node).__name__ in _OPS:
        names.append(_OPS[type(node).__name__])
        node = node.next_functions[0][0]
    return names[::-1]


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")
@pytest.mark.parametrize("name", ["int", "full slice", "full slices", "huge stop", "slice then int", "ellipsis",
                                  "two ellipses", "None ellipsis None", "True", "int True", "0-dim tensors",
                                  "separated lists go first", "mask slice", "chained views"])
def test_getitem_dispatches_the_ops_torch_records(name):
    fn = GETITEM[name]
    tx = torch.arange(24.).view(2, 3, 4).requires_grad_()
    expected = _torch_op_chain(fn(torch, tx))
    lx = lantern.arange(24.).view(2, 3, 4)
    with lantern.debug.trace_dispatch(io.StringIO(), ops=set(_OPS.values())) as log:
        fn(lantern, lx)
    assert [line.split()[0] for line in log.lines] == expected


def test_spec_strided_slice():
    x = lantern.arange(48).view(6, 8)
    y = x[1:5:2, 1:4]
    assert (y.stride(), y.storage_offset(), tuple(y.size()), y.is_contiguous()) == ((16, 1), 9, (2, 3), False)
    assert y.data_ptr() - x.data_ptr() == 9 * 8


def test_spec_row_and_column_views():
    x = lantern.tensor([[1, 2], [3, 4]], dtype=lantern.int32)
    r, c = x[1, :], x[:, 0]
    assert (r.storage_offset(), r.stride(), c.storage_offset(), c.stride()) == (2, (1,), 0, (2,))
    r[0] = 30
    assert x.tolist() == [[1, 2], [30, 4]] and x._version == r._version == 1


def test_spec_copy_view_and_inplace_mask():
    a = lantern.arange(6).view(2, 3)
    assert a[[0, 1]]._base is None and a[[0, 1]].data_ptr() != a.data_ptr()
    assert a[0]._base is a._base and a[0].data_ptr() == a.data_ptr()
    ptr = a.data_ptr()
    a[a > 5] = 0
    assert a.tolist() == [[0, 1, 2], [3, 4, 5]] and a.data_ptr() == ptr and a._version == 1


# ---- setitem ----------------------------------------------------------------------------------------------------

def _assign(index_fn, value_fn):
    def fn(m, x):
        x[index_fn(m, x)] = value_fn(m, x)
        return x, x._version
    return fn


SETITEM = {
    "int = float": (lambda m, x: 0, lambda m, x: 1.5),
    "int = 0-dim tensor": (lambda m, x: 0, lambda m, x: m.tensor(2.)),
    "int = same shape": (lambda m, x: 0, lambda m, x: m.ones(3, 4)),
    "int = broadcast row": (lambda m, x: 0, lambda m, x: m.arange(4.)),
    "int = leading ones": (lambda m, x: 0, lambda m, x: m.arange(4.)[None, None, None]),
    "slice int = column": (lambda m, x: (slice(None), 1), lambda m, x: m.tensor([[1.], [2.]])),
    "slices = scalar": (lambda m, x: (slice(1, None), slice(None, None, 2)), lambda m, x: 7),
    "ellipsis": (lambda m, x: ..., lambda m, x: 0),
    "None": (lambda m, x: None, lambda m, x: 3),
    "True": (lambda m, x: True, lambda m, x: 4),
    "False writes nothing": (lambda m, x: False, lambda m, x: 4),
    "full slice = tensor": (lambda m, x: slice(None), lambda m, x: m.zeros(2, 3, 4)),
    "three ints": (lambda m, x: (0, 1, 2), lambda m, x: 9),
    "float64 value is cast": (lambda m, x: (-1, -1), lambda m, x: m.tensor([1., 2, 3, 4], dtype=m.float64)),
    "int 0-dim into float": (lambda m, x: 0, lambda m, x: m.tensor(5)),
    "bool into float": (lambda m, x: 0, lambda m, x: True),
    "0-dim tensor index": (lambda m, x: m.tensor(1), lambda m, x: 3),
    "0-dim False tensor": (lambda m, x: m.tensor(False), lambda m, x: 3),
    "int False": (lambda m, x: (0, False), lambda m, x: m.arange(4.)),
    "int True": (lambda m, x: (0, True), lambda m, x: m.arange(4.)),
    "list = scalar": (lambda m, x: [0, 1], lambda m, x: 0),
    "duplicate list, last wins": (lambda m, x: [1, 1], lambda m, x: m.arange(12.).view(3, 4)),
    "slice list": (lambda m, x: (slice(None), [0, 2]), lambda m, x: m.ones(2, 2, 4)),
    "separated lists": (lambda m, x: ([0, 1], slice(None), [1, 2]), lambda m, x: m.tensor([[10.], [20.]])),
    "int list": (lambda m, x: (0, [1, 2]), lambda m, x: m.tensor([[1., 2, 3, 4]])),
    "list = all ones value": (lambda m, x: [0], lambda m, x: m.tensor([[[[1.]]]])),
    "mask = scalar": (lambda m, x: x > 10, lambda m, x: 0),
    "mask = int 0-dim (masked_fill)": (lambda m, x: x > 10, lambda m, x: m.tensor(1)),
    "mask = one-element": (lambda m, x: x > 10, lambda m, x: m.tensor([[1.]])),
    "empty mask": (lambda m, x: x > 100, lambda m, x: 1),
    "mask dim 0 = rows": (lambda m, x: m.tensor([True, False]), lambda m, x: m.arange(12.).view(3, 4)),
    "mask dim 1": (lambda m, x: (slice(None), m.tensor([True, False, True])), lambda m, x: m.tensor([1., 2, 3, 4])),
    "list of bools": (lambda m, x: (slice(None), [True, False, True]), lambda m, x: 0.),
    "index tensor with dups": (lambda m, x: (m.tensor([0, 0]), m.tensor([1, 1])), lambda m, x: m.tensor([5.])),
    "index tensor with dups, rows": (lambda m, x: (m.tensor([1, 0, 1]), m.tensor([2, 1, 2])),
                                     lambda m, x: m.tensor([[5.], [6.], [5.]])),
}


@pytest.mark.parametrize("accumulate", [True, False])
def test_index_put_with_duplicate_indices(accumulate):
    """Duplicates accumulate with accumulate=True; without it they carry equal values (torch leaves which of
    several different values wins unspecified)."""
    def fn(m, x):
        index = (m.tensor([0, 1, 0, 0]), m.tensor([2, 1, 2, 2]))
        values = m.tensor([[1., 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [1, 2, 3, 4]])
        return x.index_put_(index, values, accumulate=accumulate), x._version
    check(fn, X)


@pytest.mark.parametrize("name", SETITEM)
def test_setitem(name):
    index_fn, value_fn = SETITEM[name]
    check(_assign(index_fn, value_fn), X)


@pytest.mark.parametrize("dtype, value", [(np.int64, 2.7), (np.int32, -1), (np.bool_, 2), (np.float64, 1e300),
                                          (np.uint8, -1), (np.float16, 0.1), (np.float32, 1 + 0j),
                                          (np.complex64, 1 - 2j), (np.int64, np.int16(-3))])
def test_setitem_casts_scalars(dtype, value):
    x = noncontig(np.zeros((2, 3), dtype=dtype))
    check(_assign(lambda m, x: 0, lambda m, x: value), x)
    check(_assign(lambda m, x: [1], lambda m, x: value), x)


def test_setitem_scalar_overflow_is_found_before_the_index():
    """A number is converted to the tensor's dtype before the index is looked at (a view is filled with it)."""
    raises_like(lambda m, x: x.__setitem__(100, 300), noncontig(np.zeros((2, 3), np.uint8)))
    raises_like(lambda m, x: x.__setitem__(slice(1, None), 1 + 2j), X)


def test_setitem_scalar_gradient():
    def fn(m, x):
        x = x.requires_grad_()
        y = x * 2
        y[1:, 0] = -1.5
        y[0, 1] = 7
        y[..., 2] = m.tensor(3.)
        (y * m.arange(1., 5.)).sum().backward()
        return y, x.grad, type(y.grad_fn).__name__
    check(fn, X)


def test_setitem_through_a_view():
    def fn(m, x):
        r = x[1]
        r[0] = 30
        r[:, [0, 1]] = 40
        return x, x._version, r._version, r._base is x._base
    check(fn, X)


def test_setitem_on_expanded_row():
    def fn(m, x):
        e = x.expand(2, 3)
        e[0] = 5
        return x, e, e._version
    check(fn, np.arange(3.))


def test_index_put():
    i0 = (lambda m: (m.tensor([0, 0]),))
    check(lambda m, x: (x.index_put_(i0(m), m.tensor(1.), accumulate=True), x._version), X)
    check(lambda m, x: (x.index_put_(i0(m), m.tensor([[1.], [2.], [3.]]), accumulate=True), x._version), X)
    check(lambda m, x: (x.index_put_((m.tensor([True, False]),), m.tensor(1.), accumulate=True), x._version), X)
    check(lambda m, x: (m.index_put(x, i0(m), m.tensor(1.)), x, x._version), X)
    check(lambda m, x: (x.index_put(i0(m), m.tensor(1.), True), x), X)


# ---- errors -----------------------------------------------------------------------------------------------------

ERRORS = {
    "negative step": (lambda m, x: x[::-1], "step must be greater than zero"),
    "zero step": (lambda m, x: x[::0], "slice step cannot be zero"),
    "int out of range": (lambda m, x: x[2], "index 2 is out of bounds for dimension 0 with size 2"),
    "second int out of range": (lambda m, x: x[0, 5], "index 5 is out of bounds for dimension 1 with size 3"),
    "after None": (lambda m, x: x[None, 5], "index 5 is out of bounds for dimension 1 with size 2"),
    "negative out of range": (lambda m, x: x[-3], "index -3 is out of bounds for dimension 0 with size 2"),
    "too many": (lambda m, x: x[0, 0, 0, 0], "too many indices for tensor of dimension 3"),
    "too many with mask": (lambda m, x: x[x > 0, 0], "too many indices for tensor of dimension 3"),
    "list out of range": (lambda m, x: x[[5]], "index 5 is out of bounds for dimension 0 with size 2"),
    "second list out of range": (lambda m, x: x[:, [0], [7]], "index 7 is out of bounds for dimension 1 with size 4"),
    "negative list out of range": (lambda m, x: x[[-3]], "index -3 is out of bounds for dimension 0 with size 2"),
    "float index tensor": (lambda m, x: x[m.tensor([0.])],
                           "tensors used as indices must be long, int, byte or bool tensors"),
    "int16 index tensor": (lambda m, x: x[m.tensor([0], dtype=m.int16)],
                           "tensors used as indices must be long, int, byte or bool tensors"),
    "0-dim float index tensor": (lambda m, x: x[m.tensor(0.)],
                                 "tensors used as indices must be long, int, byte or bool tensors"),
    "mask shape": (lambda m, x: x[m.tensor([True, False, True])],
                   "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [2, 3, 4] "
                   "at index 0"),
    "mask shape second dim": (lambda m, x: x[:, m.tensor([True, False])],
                              "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor "
                              "[2, 3, 4] at index 1"),
    "lists do not broadcast": (lambda m, x: x[:, [0, 1], [0, 1, 2]],
                               "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]"),
    "float": (lambda m, x: x[1.5], "only integers, slices"),
    "dict": (lambda m, x: x[{0: 1}], "only integers, slices"),
    "string": (lambda m, x: x["a"], None),
    "float slice bound": (lambda m, x: x[1.5:], None),
    "assign a list": (lambda m, x: x.__setitem__(0, [1, 2]), "can't assign a list to a torch.FloatTensor"),
    "assign None": (lambda m, x: x.__setitem__(False, None), "can't assign a NoneType to a torch.FloatTensor"),
    "assign numpy float32": (lambda m, x: x.__setitem__(0, np.float32(1)),
                             "can't assign a numpy.float32 to a torch.FloatTensor"),
    "assign wrong shape": (lambda m, x: x.__setitem__(0, m.ones(2)), "The expanded size of the tensor (4) must match"),
    "index_put dtype": (lambda m, x: x.__setitem__([0], m.tensor(1., dtype=m.float64)),
                        "Index put requires the source and destination dtypes match, got Float for the destination "
                        "and Double for the source."),
    "index_put shape": (lambda m, x: x.__setitem__([0, 1], m.ones(3)),
                        "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape "
                        "[2, 3, 4]"),
    "index_put out of range": (lambda m, x: x.__setitem__([9], 1.), "index 9 is out of bounds"),
    "index_put too many": (lambda m, x: x.index_put_((m.tensor([0]),) * 4, m.tensor(1.)),
                           "too many indices for tensor of dimension 3 (got 4)"),
    "setitem negative step": (lambda m, x: x.__setitem__(slice(None, None, -1), 1.), "step must be greater than zero"),
    "setitem into expanded": (lambda m, x: x.expand(2, 2, 3, 4)[:, 0].__setitem__((slice(None), 0), 5.),
                              "unsupported operation: more than one element of the written-to tensor"),
}


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")
@pytest.mark.parametrize("name", ERRORS)
def test_errors(name):
    fn, message = ERRORS[name]
    torch_message, lantern_message = raises_like(fn, X)
    if message is not None:
        assert message in torch_message and message in lantern_message, (torch_message, lantern_message)


def test_errors_0dim():
    for fn in (lambda m, x: x[0], lambda m, x: x[1], lambda m, x: x[:], lambda m, x: x[0, ]):
        raises_like(fn, np.array(3, np.float32))


def test_index_put_refuses_values_that_alias_self():
    x = np.arange(12.).reshape(3, 4)
    raises_like(lambda m, x: x.__setitem__([0], x[1]), x)
    check(_assign(lambda m, x: 0, lambda m, x: x[1]), x)


def test_index_put_on_expanded_tensor_warns():
    for lib in (torch, lantern):
        x = lib.tensor([1, 2, 3]).expand(2, 3)
        with pytest.warns(UserWarning, match="index_put_ on expanded tensors is deprecated"):
            x[[0]] = 5
        assert x.tolist() == [[5, 5, 5], [5, 5, 5]]


# ---- meta device ------------------------------------------------------------------------------------------------

META = [lambda m, x: x[:, 1], lambda m, x: x[1:, None, ::2], lambda m, x: x[[0, 1]],
        lambda m, x: x[:, m.tensor([[2], [0]], device="meta")], lambda m, x: x.t()[[0, 1]],
        lambda m, x: x[True], lambda m, x: x[..., [1, 0]]]


@pytest.mark.parametrize("fn", META)
def test_meta(fn):
    got = fn(lantern, lantern.ones(3, 4, device="meta"))
    expected = fn(torch, torch.ones(3, 4, device="meta"))
    assert got.device.type == "meta"
    assert (tuple(got.shape), got.stride(), got.storage_offset()) == \
           (tuple(expected.shape), expected.stride(), expected.storage_offset())


def test_meta_spec_and_assignment():
    x = lantern.ones(3, 4, device="meta")
    assert x[:, 1].shape == (3,)
    x[0] = 1.
    x[[0, 2]] = lantern.ones(4, device="meta")
    assert x._version == 2
    with pytest.raises(NotImplementedError):
        x[lantern.ones(3, dtype=lantern.bool, device="meta")]


def test_no_warning_for_plain_indexing():
    x = lantern.arange(12).view(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x[[0, 1]], x[0, [1, 2]], x[x > 3]


# ---- the specialisation setitem_on_arrays against the readable path -----------------------------------------------

ARRAY_WRITES = {  # (t's dtype, index, value as a function of lantern)
    "int = number": (lantern.float32, 1, lambda m: 2.5),
    "negative int = row": (lantern.float32, -1, lambda m: m.arange(4.).view(1, 4).expand(3, 4).contiguous()),
    "slice = number": (lantern.int64, slice(1, None), lambda m: -1),
    "step slice = tensor": (lantern.float64, slice(None, None, 2),
                            lambda m: m.arange(24., dtype=m.float64).view(2, 4, 3).transpose(1, 2)),
    "clamped slice": (lantern.int64, slice(-100, 100), lambda m: 7),
    "empty slice": (lantern.int64, slice(3, 1), lambda m: m.zeros(0, 3, 4, dtype=m.int64)),
    "uint8 wraps -1": (lantern.uint8, slice(0, 1), lambda m: -1),
    "bool": (lantern.bool, 0, lambda m: 2),
    "float16 rounds": (lantern.float16, 1, lambda m: 0.1),
    "complex": (lantern.complex64, 0, lambda m: 1 - 2j),
}


@pytest.mark.parametrize("name", ARRAY_WRITES)
def test_setitem_on_arrays(name):
    """The fast path writes what the readable one writes, into a view's base too, with the same version bump."""
    dtype, index, value = ARRAY_WRITES[name]
    results = []
    for reference in (False, True):
        base = lantern.arange(48).view(4, 3, 4).to(dtype)
        t = base.transpose(0, 1)[:, 1:]  # (3, 3, 4), not row-major, offset into its base
        with lantern.reference_mode(reference):
            checked = _indexing._checked_value(t, value(lantern))
            numpy_backed = type(t._backend) is CPUBackend  # not openreg, nor the strict tier's array library
            assert _indexing._array_write_applies(t, index, checked) is (not reference and numpy_backed)
            t[index] = value(lantern)
        results.append((base.clone(), base._version, t._version))
    (fast, *fast_versions), (readable, *readable_versions) = results
    assert fast_versions == readable_versions and fast.dtype == readable.dtype
    np.testing.assert_array_equal(fast.cpu().numpy(), readable.cpu().numpy())


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor")
@pytest.mark.parametrize("case", ["requires grad", "view of a graph", "expanded", "value needs grad", "broadcast",
                                  "cast", "aliasing value", "int out of range", "tuple index", "0-dim", "traced",
                                  "quantized"])
def test_setitem_on_arrays_steps_aside(case):
    """Whatever the readable path would do more than copy (autograd, broadcasting, casts, errors, observers)."""
    t, index, value = lantern.zeros(3, 4), 0, lantern.ones(4)
    if case == "requires grad":
        t.requires_grad_()
    elif case == "view of a graph":
        t = lantern.zeros(3, 4, requires_grad=True) * 1
    elif case == "expanded":
        t = lantern.zeros(4).expand(3, 4)
    elif case == "value needs grad":
        value = lantern.ones(4, requires_grad=True)
    elif case == "broadcast":
        value = lantern.ones(1)
    elif case == "cast":
        value = lantern.ones(4, dtype=lantern.float64)
    elif case == "aliasing value":
        value = t[1]
    elif case == "int out of range":
        index = 3
    elif case == "tuple index":
        index = (0, slice(None))
    elif case == "0-dim":
        t, index, value = lantern.tensor(1.), None, 2.
    elif case == "quantized":  # its array holds the quantized integers, not the values
        t = lantern.quantize_per_tensor(lantern.zeros(3, 4, device="cpu"), 0.1, 0, lantern.quint8)
        value = 1.0
    with lantern.reference_mode(False):
        if case == "traced":
            with lantern.debug.trace_dispatch(io.StringIO()):
                assert not _indexing._array_write_applies(t, index, value)
        else:
            assert not _indexing._array_write_applies(t, index, value)
