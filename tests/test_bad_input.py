"""Bad input gets torch's exception class (not NumPy's), empty tensors work where torch's do, and what torch
refuses lantern refuses too: issue 13's items 5-7, each case run on both libraries.
"""
import gc
import sys
import warnings

import numpy as np
import pytest

import lantern
from oracle import check, raises_like


def _refused(fn, *inputs, match=None):
    """Both libraries raise the same exception class; lantern's message names the op or the fix (`match`)."""
    _, mine = raises_like(fn, *inputs)
    if match is not None:
        assert match in mine, mine
    return mine


# ---- allocation failures: RuntimeError from the allocator, TypeError for sizes past int64 -----------------------

@pytest.mark.parametrize("make", [
    lambda m: m.empty(10 ** 13),
    lambda m: m.zeros(10 ** 13),
    lambda m: m.randn(10 ** 13),
    lambda m: m.full((10 ** 13,), 1.0),
    lambda m: m.ones(2 ** 40, 2 ** 40),
    lambda m: m.empty(2 ** 62),
], ids=["empty", "zeros", "randn", "full", "ones_overflow", "empty_overflow"])
def test_allocation_failure_is_runtime_error(make):
    _refused(make)


def test_allocation_failure_names_the_bytes():
    message = _refused(lambda m: m.empty(10 ** 13))
    assert "DefaultCPUAllocator" in message and "40000000000000 bytes" in message


def test_size_past_int64_is_type_error():
    _refused(lambda m: m.empty(2 ** 63))


def test_failed_allocation_prints_nothing_and_keeps_the_statistics(monkeypatch):
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    stats = lantern.core.allocator.cpu_allocator.stats
    gc.collect()  # earlier tests' garbage freed now, not during the comparison
    before = stats.as_dict()
    for size in ((10 ** 13,), (100, 10 ** 6, 10 ** 6), (2 ** 40, 2 ** 40)):
        with pytest.raises(RuntimeError):
            lantern.empty(size)
    with pytest.raises(RuntimeError):
        lantern.UntypedStorage(10 ** 15)
    gc.collect()
    assert unraisable == []
    assert stats.as_dict() == before


# ---- torch's exception classes, not NumPy's, and torch's order of checks ----------------------------------------

def _f(m):
    return m.nn.functional


ERRORS = {
    # expand: -2 is no size (NumPy's ValueError leaked before); a new leading dim may not be -1
    "expand -2": (lambda m, x: x.expand(-2, 4), np.ones((3, 1), np.float32)),
    "expand -2 on a size-1 dim": (lambda m, x: x.expand(-2), np.ones(1, np.float32)),
    "expand -1 leading": (lambda m, x: x.expand(-1, 3, 1), np.ones((3, 1), np.float32)),
    "expand no sizes": (lambda m, x: x.expand(), np.ones(1, np.float32)),
    "repeat no sizes": (lambda m, x: x.repeat(), np.ones(1, np.float32)),
    "view no sizes": (lambda m, x: x.view(), np.ones(1, np.float32)),
    # index_select: IndexError, or RuntimeError where torch's kernel raises one (dim 1, empty inputs, 0-d self)
    "index_select negative": (lambda m, x, i: m.index_select(x, 0, i), np.ones((3, 4), np.float32), np.array([-1])),
    "index_select past the end": (lambda m, x, i: m.index_select(x, 0, i), np.ones(3, np.float32), np.array([3])),
    "index_select dim 1": (lambda m, x, i: m.index_select(x, 1, i), np.ones((3, 4), np.float32), np.array([4])),
    "index_select empty self": (lambda m, x, i: m.index_select(x, 0, i), np.ones((2, 0), np.float32), np.array([3])),
    "index_select empty dim": (lambda m, x, i: m.index_select(x, 0, i), np.ones((0, 2), np.float32), np.array([0])),
    "index_select 0-d, two indices": (lambda m, i: m.index_select(m.tensor(1.0), 0, i), np.array([0, 0])),
    "index_select float index": (lambda m, x, i: m.index_select(x, 0, i), np.ones(3, np.float32),
                                 np.array([1.0], np.float32)),
    # embedding: float indices are torch's RuntimeError; out of range IndexError, RuntimeError for an empty weight
    "embedding float indices": (lambda m, i, w: _f(m).embedding(i, w), np.array([0.0, 1.0], np.float32),
                                np.ones((3, 4), np.float32)),
    "embedding past the end": (lambda m, i, w: _f(m).embedding(i, w), np.array([3]), np.ones((3, 4), np.float32)),
    "embedding padding_idx out of range": (lambda m, i, w: _f(m).embedding(i, w, padding_idx=3), np.array([0]),
                                           np.ones((3, 4), np.float32)),
    "embedding empty weight": (lambda m, i, w: _f(m).embedding(i, w), np.array([3]), np.ones((3, 0), np.float32)),
    # stack: the dim is checked before the sizes
    "stack bad dim and sizes": (lambda m, a, b: m.stack([a, b], dim=5), np.ones((2, 3), np.float32),
                                np.ones((3, 2), np.float32)),
    # cross_entropy / nll_loss: rank, batch size, target shape, then target dtype
    "cross_entropy batch and dtype": (lambda m, x, t: _f(m).cross_entropy(x, t), np.ones((3, 4), np.float32),
                                      np.array([0.5, 1, 2, 4], np.float32)),
    "cross_entropy batch and int32": (lambda m, x, t: _f(m).cross_entropy(x, t), np.ones((2, 3), np.float32),
                                      np.zeros(3, np.int32)),
    "cross_entropy 0-d input": (lambda m, t: _f(m).cross_entropy(m.tensor(1.0), t), np.zeros(2, np.int64)),
    "cross_entropy spatial target shape": (lambda m, x, t: _f(m).cross_entropy(x, t), np.ones((2, 3, 4), np.float32),
                                           np.zeros((2, 5), np.int64)),
    "nll_loss 1-D input, two targets": (lambda m, x, t: _f(m).nll_loss(x, t), np.ones(3, np.float32),
                                        np.zeros(2, np.int64)),
    "nll_loss 2-D target": (lambda m, x, t: _f(m).nll_loss(x, t), np.ones((2, 3), np.float32),
                            np.zeros((2, 1), np.int64)),
    # lantern used to accept these
    "layer_norm float64 weight": (lambda m, x, w: _f(m).layer_norm(x, (3,), w), np.ones((2, 3), np.float32),
                                  np.ones(3, np.float64)),
    "layer_norm float32 weight, float64 input": (lambda m, x, w: _f(m).layer_norm(x, (3,), w),
                                                 np.ones((2, 3), np.float64), np.ones(3, np.float32)),
    "layer_norm float64 bias": (lambda m, x, b: _f(m).layer_norm(x, (3,), None, b), np.ones((2, 3), np.float32),
                                np.ones(3, np.float64)),
    "layer_norm int input, float weight": (lambda m, x, w: _f(m).layer_norm(x, (3,), w), np.ones((2, 3), np.int64),
                                           np.ones(3, np.float32)),
    "linear float64 weight": (lambda m, x, w: _f(m).linear(x, w), np.ones((2, 3), np.float32),
                              np.ones((4, 3), np.float64)),
    "linear float64 bias": (lambda m, x, w, b: _f(m).linear(x, w, b), np.ones((2, 3), np.float32),
                            np.ones((4, 3), np.float32), np.ones(4, np.float64)),
    "linear float64 bias on a 3-D input": (lambda m, x, w, b: _f(m).linear(x, w, b), np.ones((2, 2, 3), np.float32),
                                           np.ones((4, 3), np.float32), np.ones(4, np.float64)),
    "linear float64 bias on a 1-D input": (lambda m, x, w, b: _f(m).linear(x, w, b), np.ones(3, np.float32),
                                           np.ones((4, 3), np.float32), np.ones(1, np.float64)),
    "max_pool2d padding over half the kernel": (lambda m, x: _f(m).max_pool2d(x, 2, padding=2),
                                                np.ones((1, 1, 4, 4), np.float32)),
    "max_pool2d bool, output too small": (lambda m, x: _f(m).max_pool2d(x, 3), np.ones((1, 1, 2, 2), bool)),
    "avg_pool2d int32": (lambda m, x: _f(m).avg_pool2d(x, 2), np.ones((1, 1, 4, 4), np.int32)),
    "avg_pool2d int32, padding over half": (lambda m, x: _f(m).avg_pool2d(x, 1, padding=1),
                                            np.ones((1, 1, 4, 4), np.int32)),
    "topk bool": (lambda m, x: m.topk(x, 2), np.ones(4, bool)),
    "topk bool k=0": (lambda m, x: m.topk(x, 0), np.ones(4, bool)),
    "conv2d bool input, int64 weight": (lambda m, x, w: _f(m).conv2d(x, w), np.ones((1, 3, 4, 4), bool),
                                        np.ones((2, 3, 1, 1), np.int64)),
    "mean int64 with a bad dim": (lambda m, x: m.mean(x, 5), np.ones((2, 3), np.int64)),
    "narrow negative length and bad start": (lambda m, x: m.narrow(x, 0, 5, -1), np.ones((3, 4), np.float32)),
    "flatten 0-d with dim 1": (lambda m, x: m.flatten(x, 0, 1), np.array(1.0, np.float32)),
    "conv2d bool input, kernel larger than the input": (lambda m, x, w: _f(m).conv2d(x, w),
                                                        np.ones((1, 2, 2, 2), bool), np.ones((2, 2, 3, 3), np.float32)),
    "mm bool": (lambda m, a, b: m.mm(a, b), np.ones((2, 2), bool), np.ones((2, 2), bool)),
    "bmm bool self, float mat2": (lambda m, a, b: m.bmm(a, b), np.ones((1, 1, 2), bool),
                                  np.ones((1, 2, 1), np.float32)),
    "matmul 1-D by an empty 3-D of another dtype": (lambda m, a, b: a @ b, np.ones(1), np.ones((2, 1, 0), np.float32)),
    "narrow negative length, bad dim": (lambda m, x: m.narrow(x, 5, 0, -1), np.ones((3, 4), np.float32)),
    "split a 0-d tensor": (lambda m, x: x.split(1), np.array(1.0, np.float32)),
    "chunk a 0-d tensor": (lambda m, x: x.chunk(0), np.array(1.0, np.float32)),
    "index_add past the end, 1-D": (lambda m, x, i, s: x.index_add(0, i, s), np.ones(3, np.float32), np.array([3]),
                                    np.ones(1, np.float32)),
    "index_add past the end, middle dim": (lambda m, x, i, s: x.index_add(1, i, s), np.ones((3, 3, 3), np.float32),
                                           np.array([-2]), np.ones((3, 1, 3), np.float32)),
    "index_add past the end, last dim": (lambda m, x, i, s: x.index_add(1, i, s), np.ones((3, 3), np.float32),
                                         np.array([3]), np.ones((3, 1), np.float32)),
    "repeat to a negative size": (lambda m, x: x.repeat(2, -1), np.ones((1, 3), np.float32)),
    "roll a 0-d tensor along dim 0": (lambda m, x: m.roll(x, 5, 0), np.array(1, np.int64)),
    "max of a complex 0-d tensor, bad dim": (lambda m, x: m.max(x, 1), np.array(1j, np.complex64)),
    "batch_norm of a 1-D input": (lambda m, x, mean, var: _f(m).batch_norm(x, mean, var),
                                  np.ones(3, np.float32), np.zeros(5, np.float32), np.ones(5, np.float32)),
    "group_norm of one value per group": (lambda m, x: _f(m).group_norm(x, 2), np.ones((2, 1), np.float32)),
    "interpolate: size for another rank": (lambda m, x: _f(m).interpolate(x, size=(1, 1), mode="bilinear"),
                                           np.ones((1, 2, 4), np.int64)),
    "interpolate int32 to size 0": (lambda m, x: _f(m).interpolate(x, size=(0,)), np.ones((1, 1, 2), np.int32)),
    "interpolate no channels": (lambda m, x: _f(m).interpolate(x, size=(3, 3)), np.ones((1, 0, 2, 2), np.float32)),
    "pad longer than twice the rank": (lambda m, x: _f(m).pad(x, (1, 0, 0, 1, -1, -1), mode="replicate"),
                                       np.ones((1, 4), np.float32)),
    "binary_cross_entropy target of another dtype": (lambda m, x, t: _f(m).binary_cross_entropy(x, t),
                                                     np.full(2, 0.5, np.float64), np.full(2, 0.5, np.float32)),
    "logsumexp dim=None": (lambda m, x: m.logsumexp(x, None), np.ones((2, 3), np.float32)),
    "batch_norm float64 running stats": (lambda m, x, mean, var: _f(m).batch_norm(x, mean, var),
                                         np.ones((4, 1, 3), np.float32), np.zeros(1), np.ones(1)),
    "roll of an empty tensor, shifts and dims misaligned": (lambda m, x: m.roll(x, 1, (0, 1)),
                                                             np.ones((0, 3), np.float32)),
    "batch_norm int64 input, float32 running stats": (lambda m, x, mean, var: _f(m).batch_norm(x, mean, var),
                                                      np.ones((3, 3, 1), np.int64), np.zeros(3, np.float32),
                                                      np.ones(3, np.float32)),
    "cat with a 0-d tensor after the first, bad dim": (lambda m, a, b: m.cat([a, b], 1), np.ones(2, np.float32),
                                                        np.array(1.0, np.float32)),
    "repeat_interleave of a 0-d tensor with a dim": (lambda m, x: x.repeat_interleave(2, 0), np.array(1)),
    "where int64 condition": (lambda m, c, x: m.where(c, x, x), np.ones(2, np.int64), np.ones(2, np.float32)),
}

FORWARD = {
    # empty tensors: torch returns empty (or zero) results where lantern raised
    "matmul empty inner dim": (lambda m, a, b: a @ b, np.ones((2, 3, 0), np.float32), np.ones((0, 4), np.float32)),
    "matmul batched empty inner dim": (lambda m, a, b: a @ b, np.ones((4, 0, 3), np.float32),
                                       np.ones((4, 3, 3), np.float32)),
    "linear empty features": (lambda m, x, w: _f(m).linear(x, w), np.ones((1, 1, 0), np.float32),
                              np.ones((0, 0), np.float32)),
    "gather empty 1-D index of a 2-D input": (lambda m, x, i: m.gather(x, 1, i), np.ones((3, 4), np.float32),
                                              np.zeros(0, np.int64)),
    "gather empty float index": (lambda m, x, i: m.gather(x, 0, i), np.ones((3, 3), np.float32),
                                 np.zeros((0, 3), np.float32)),
    "gather empty index larger than self": (lambda m, x, i: m.gather(x, 1, i), np.ones((3, 3), np.float32),
                                            np.zeros((5, 0), np.int64)),
    "floor_divide int by 0, empty": (lambda m, a: m.floor_divide(a, 0), np.ones(0, np.int64)),
    "// int by a 0 tensor, empty": (lambda m, a, b: a // b, np.ones((0, 3), np.int64), np.zeros(3, np.int64)),
    "remainder int by 0, empty": (lambda m, a: m.remainder(a, 0), np.ones(0, np.int32)),
    "div floor int by 0, empty": (lambda m, a: m.div(a, 0, rounding_mode="floor"), np.ones(0, np.int64)),
    "softmax empty int64": (lambda m, x: m.softmax(x, 0), np.ones(0, np.int64)),
    "softmax empty bool": (lambda m, x: _f(m).softmax(x, 0), np.ones((0, 3), bool)),
    "log_softmax empty int32": (lambda m, x: m.log_softmax(x, 1), np.ones((2, 0), np.int32)),
    "index_select empty index, empty dim": (lambda m, x, i: m.index_select(x, 0, i), np.ones((0, 2), np.float32),
                                            np.zeros(0, np.int64)),
    # what torch accepts
    "linear float64 bias on a strided 3-D input": (lambda m, x, w, b: _f(m).linear(x.transpose(1, 2), w, b),
                                                   np.ones((2, 3, 2), np.float32), np.ones((4, 3), np.float32),
                                                   np.ones(4, np.float64)),
    "layer_norm float16 input, float32 weight": (lambda m, x, w: _f(m).layer_norm(x, (3,), w),
                                                 np.ones((2, 3), np.float16), np.ones(3, np.float32)),
    "avg_pool2d int64": (lambda m, x: _f(m).avg_pool2d(x, 2), np.arange(16).reshape(1, 1, 4, 4)),
    "nll_loss 1-D input, target of one": (lambda m, x, t: _f(m).nll_loss(x, t, reduction="none"),
                                          np.array([0.5, -1.0, 2.0], np.float32), np.array([2])),
    "where uint8 condition": (lambda m, c, x: m.where(c, x, 0.0), np.array([2, 0], np.uint8),
                              np.ones(2, np.float32)),
    "mm bool, nothing to sum": (lambda m, a, b: m.mm(a, b), np.ones((2, 0), bool), np.ones((0, 2), bool)),
    "matmul bool, empty rows": (lambda m, a, b: a @ b, np.ones((0, 2), bool), np.ones((2, 2), bool)),
    "expand: new size-1 dims stride over the next": (lambda m, x: x.expand(1, 1, 1, -1, -1),
                                                     np.ones((1, 4, 8), np.float32)[:, :, ::2]),
    "expand a 0-d tensor": (lambda m: m.tensor(1.0).expand(1, 2, 1),),
    "movedim of a 0-d tensor": (lambda m, x: m.movedim(x, 0, -1), np.array(1.0, np.float32)),
    "index_add into an empty tensor": (lambda m, x, i, s: x.index_add(0, i, s), np.ones((0, 3), np.float32),
                                       np.array([0, 1, 2, 3]), np.ones((4, 3), np.float32)),
    "scatter with an empty float index": (lambda m, x, i, s: m.scatter(x, 1, i, s), np.ones((2, 3), np.float32),
                                          np.ones((0, 3), np.float32), np.ones((0, 3), np.float32)),
    "repeat an empty dim by -1": (lambda m, x: x.repeat(2, -1), np.ones((1, 0), np.float32)),
    "roll an empty tensor along a dim it lacks": (lambda m, x: m.roll(x, 2, -3), np.ones((0, 3), np.float32)),
    "batch_norm of an empty input": (lambda m, x, mean, var: _f(m).batch_norm(x, mean, var),
                                     np.ones((2, 0, 3), np.float32), np.zeros(3, np.float32), np.ones(3, np.float32)),
    "adaptive_avg_pool2d bool to an empty size": (lambda m, x: _f(m).adaptive_avg_pool2d(x, (0, 2)),
                                                  np.ones((2, 2, 4, 4), bool)),
    "adaptive_avg_pool2d with no channels": (lambda m, x: _f(m).adaptive_avg_pool2d(x, (3, 2)),
                                             np.ones((2, 0, 2, 4), np.float32)),
    "bmm of an empty batch, mixed dtypes": (lambda m, a, b: m.bmm(a, b), np.ones((2, 2, 0), np.int64),
                                            np.ones((2, 0, 2), np.float32)),
    "matmul of an empty batch, mixed dtypes": (lambda m, a, b: a @ b, np.ones((4, 3), np.float32),
                                              np.ones((0, 3, 1), np.int64)),
    "mse_loss of a 0-d float64 target": (lambda m, x, t: _f(m).mse_loss(x, t), np.ones(1, np.float32),
                                         np.array(2.0)),
    "l1_loss of a 0-d float64 target": (lambda m, x, t: _f(m).l1_loss(x, t), np.ones(1, np.float32),
                                        np.array(2.0)),
    "logsumexp float16 rounds each step": (lambda m, x: m.logsumexp(x.half(), 2),
                                           np.random.default_rng(0).standard_normal((4, 1, 3, 4)).astype(np.float32)),
    "roll of an empty 1-D tensor without dims": (lambda m, x: m.roll(x, 1), np.zeros(0, np.float32)),
    "flip 0-d": (lambda m, x: m.flip(x, (0,)), np.array(3.0, np.float32)),
    "flip keeps an empty tensor's strides": (lambda m, x: m.flip(x, (0,)), np.zeros((2, 0), np.float32)),
    "sort keeps an empty tensor's strides": (lambda m, x: m.sort(x, dim=0)[0], np.zeros((0, 2, 3), np.float32)),
    "roll keeps an empty tensor's strides": (lambda m, x: m.roll(x, 1, 0), np.zeros((0, 3), np.float32)),
}


@pytest.mark.parametrize("name", ERRORS)
def test_bad_input_raises_torch_class(name):
    fn, *inputs = ERRORS[name]
    _refused(fn, *inputs)


@pytest.mark.parametrize("name", FORWARD)
def test_empty_and_accepted_inputs_match_torch(name):
    fn, *inputs = FORWARD[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # where's deprecated uint8 condition warns in both
        check(fn, *inputs)


def test_messages_name_the_op_and_the_fix():
    assert "nll_loss of input shape [3, 4], target shape [4]" in _refused(*ERRORS["cross_entropy batch and dtype"])
    assert "cast the parameters with .to(lantern.float32)" in _refused(*ERRORS["layer_norm float64 weight"])
    assert "topk" in _refused(*ERRORS["topk bool"])
    assert 'missing 1 required positional arguments: "size"' in _refused(*ERRORS["expand no sizes"])


def test_where_uint8_condition_warns_as_torch_does():
    with pytest.warns(UserWarning, match="uint8 condition tensor"):
        lantern.where(lantern.tensor([1, 0], dtype=lantern.uint8), lantern.ones(2), lantern.zeros(2))


# ---- tensor.data = ... and optimizer steps with a gradient of the wrong shape ------------------------------------

@pytest.mark.parametrize("value", ["int64", "bool", "list"])
def test_data_assignment_refused_like_torch(value):
    def assign(m):
        w = m.ones(3, requires_grad=True)
        w.data = [1.0] if value == "list" else m.ones(3, dtype=getattr(m, value))
    _refused(assign)


def test_data_assignment_of_another_float_dtype_is_allowed():
    def assign(m):
        w = m.ones(3, requires_grad=True)
        w.data = m.ones(2, dtype=m.float64)
        return w.dtype, w.shape, w.requires_grad
    check(assign)


OPTIMIZERS = [("SGD", {}), ("SGD", {"momentum": 0.9}), ("Adam", {}), ("AdamW", {}), ("RMSprop", {}),
              ("Adagrad", {})]


@pytest.mark.parametrize("grad_shape", [(4,), (1, 3)], ids=["longer", "more dims"])
@pytest.mark.parametrize("name, options", OPTIMIZERS, ids=[f"{n}{'+momentum' * bool(o)}" for n, o in OPTIMIZERS])
def test_optimizer_step_with_a_grad_of_the_wrong_shape(name, options, grad_shape):
    def steps(m):
        w = m.nn.Parameter(m.ones(3))
        opt = getattr(m.optim, name)([w], lr=0.1, **options)
        w.grad = m.ones(3)
        opt.step()  # the first step makes the state; the second takes the fast path when there is one
        w.grad.data = m.ones(grad_shape)
        opt.step()
    _refused(steps)


def test_optimizer_step_with_a_broadcastable_grad_runs_as_in_torch():
    def steps(m):
        w = m.nn.Parameter(m.ones(3))
        opt = m.optim.SGD([w], lr=0.1, momentum=0.9)
        for shape in ((3,), (1,)):
            w.grad = m.ones(3)
            w.grad.data = m.full(shape, 2.0)
            opt.step()
        return w.detach()
    check(steps)
