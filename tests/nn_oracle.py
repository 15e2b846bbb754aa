"""The torch oracle for Modules: build the same layer in both libraries, give them the same weights, compare.

    from nn_oracle import check_module
    check_module(lambda nn: nn.Linear(3, 2), np.random.rand(4, 3))

`check_module` builds `make(torch.nn)` and `make(lantern.nn)`, copies torch's state_dict into the lantern module
(through load_state_dict, so that is tested too), runs both on the same non-contiguous inputs, then backpropagates
the same random weighting of every output; it compares outputs, input gradients and every parameter's gradient.
"""
import numpy as np
import torch

import lantern
from oracle import as_numpy, assert_same, noncontig, raises_like, to_lib


def same(fn):
    """fn(torch) == fn(lantern) (plain values: names, reprs, shapes...); returns lantern's."""
    t, l = fn(torch), fn(lantern)
    assert t == l, (t, l)
    return l


def same_error(fn):
    """Both libraries raise the same class with the same message, lantern's module names read as torch's."""
    t, l = raises_like(fn)
    assert l.replace("lantern.", "torch.") == t, (t, l)


def same_weights(torch_module, lantern_module):
    """Load torch_module's state_dict into lantern_module (strict), so both compute the same function."""
    state = {k: lantern.tensor(as_numpy(v)) for k, v in torch_module.state_dict().items()}
    lantern_module.load_state_dict(state)


def _inputs(lib, inputs, grad):
    out = []
    for x in inputs:
        t = to_lib(lib, noncontig(x) if isinstance(x, np.ndarray) and x.ndim else x)
        if grad and isinstance(t, (torch.Tensor, lantern.Tensor)) and t.dtype.is_floating_point:
            t.requires_grad_(True)
        out.append(t)
    return out


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out] if isinstance(out, (torch.Tensor, lantern.Tensor)) else []


def check_module(make, *inputs, train=True, grad=True, atol=None, rtol=None, seed=0, call=None, strides=True):
    """Same outputs and gradients (inputs and parameters) from make(torch.nn) and make(lantern.nn).

    `call(module, *inputs)` replaces `module(*inputs)` when the layer needs keyword arguments. strides=False only
    for an entry of tests/deliberate_differences.py. Returns both modules.
    """
    torch.manual_seed(seed)
    tm, lm = make(torch.nn), make(lantern.nn)
    same_weights(tm, lm)
    tm.train(train)
    lm.train(train)
    call = call or (lambda m, *xs: m(*xs))
    results = []
    for lib, m in ((torch, tm), (lantern, lm)):
        xs = _inputs(lib, inputs, grad)
        out = call(m, *xs)
        results.append((xs, out))
    (txs, tout), (lxs, lout) = results
    assert_same(lout, tout, atol=atol, rtol=rtol, strides=strides)
    if not grad:
        return tm, lm
    touts, louts = _flat(tout), _flat(lout)
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(tuple(t.shape)).astype(as_numpy(t).dtype) for t in touts]
    differentiable = [i for i, t in enumerate(touts) if t.requires_grad]
    torch.autograd.backward([touts[i] for i in differentiable], [torch.tensor(weights[i]) for i in differentiable])
    lantern.autograd.backward([louts[i] for i in differentiable], [lantern.tensor(weights[i]) for i in differentiable])
    for i, (tx, lx) in enumerate(zip(txs, lxs)):
        if isinstance(tx, torch.Tensor) and tx.requires_grad and tx.grad is not None:
            assert_same(lx.grad, tx.grad, atol=atol, rtol=rtol, path=f"input {i} grad")
    lparams = dict(lm.named_parameters())
    for name, p in tm.named_parameters():
        if p.grad is None:
            assert lparams[name].grad is None, f"{name}.grad should be None"
        else:
            assert_same(lparams[name].grad, p.grad, atol=atol, rtol=rtol, path=f"{name}.grad")
    return tm, lm
