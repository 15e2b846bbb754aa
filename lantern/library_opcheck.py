"""lantern.library.opcheck: the checks PyTorch runs on a custom operator, each on clones of the sample arguments.

- test_schema: arguments the schema does not declare mutable (Tensor(a!)) are left as they were;
- test_autograd_registration: when an input requires grad, the op has a way to differentiate (an Autograd kernel,
  as register_autograd or custom_op installs, or a derivative), not only backend kernels;
- test_faketensor: on the meta device (the fake function) the outputs have the shapes, dtypes and strides the
  real kernel gives;
- test_aot_dispatch_dynamic: PyTorch compiles the op with AOTAutograd; lantern traces it with lantern.jit.trace and
  requires the traced run, and its gradients, to equal eager ones.

>>> @lantern.library.custom_op("mylib_opcheck::double", mutates_args=())
... def double(x: lantern.Tensor) -> lantern.Tensor:
...     return x * 2
>>> double.register_fake(lambda x: lantern.empty_like(x))
<function <lambda> at ...>
>>> lantern.library.opcheck(double, (lantern.ones(3),))
{'test_schema': 'SUCCESS', 'test_autograd_registration': 'SUCCESS', 'test_faketensor': 'SUCCESS', 'test_aot_dispatch_dynamic': 'SUCCESS'}
"""
from .core.dispatch_keys import DispatchKey
from .core.tensor_impl import TensorImpl
from .jit import trace
from .testing import assert_close

ALL_TESTS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


class OpCheckError(Exception):
    """A check of opcheck failed (raise_exception=True)."""


def opcheck(op, args, kwargs=None, *, test_utils=ALL_TESTS, raise_exception=True, atol=None, rtol=None):
    """Run the checks named in test_utils on op(*args, **kwargs); {name: 'SUCCESS' or the exception}."""
    kwargs = kwargs or {}
    overload = getattr(op, "_opoverload", op)
    overload = getattr(overload, "default", overload)
    names = (test_utils,) if isinstance(test_utils, str) else tuple(test_utils)
    unknown = [n for n in names if n not in ALL_TESTS]
    if unknown:
        raise ValueError(f"opcheck: unknown test_utils {unknown}; expected some of {list(ALL_TESTS)}")
    results = {}
    for name in names:
        try:
            _CHECKS[name](overload, args, kwargs, atol, rtol)
            results[name] = "SUCCESS"
        except Exception as e:  # noqa: BLE001 - every failure is reported, as PyTorch's opcheck does
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {e}") from e
            results[name] = e
    return results


def _clone(value, device=None):
    if isinstance(value, TensorImpl):
        c = value.detach().clone() if device is None else value.detach().to(device)
        return c.requires_grad_(value.requires_grad) if c.dtype.is_floating_point or c.dtype.is_complex else c
    if isinstance(value, (list, tuple)):
        return type(value)(_clone(v, device) for v in value)
    return value


def _check_schema(overload, args, kwargs, atol, rtol):
    clones = _clone(args)
    before = _clone(clones)
    overload(*clones, **_clone(kwargs))
    for arg, was, now in zip(overload._op.schema.args, before, clones):
        if isinstance(now, TensorImpl) and not (arg.alias or "").endswith("!"):
            try:
                assert_close(now.detach(), was.detach(), equal_nan=True, atol=0, rtol=0)
            except AssertionError:
                raise RuntimeError(f"Argument {arg.name} is not defined as mutable but was mutated") from None


def _check_autograd_registration(overload, args, kwargs, atol, rtol):
    op = overload._op
    if not any(isinstance(a, TensorImpl) and a.requires_grad for a in args):
        return
    if op.derivative is None and DispatchKey.Autograd not in op.kernels:
        raise RuntimeError(f"{op.name}: an input requires grad and the operator has backend kernels but no "
                           "autograd registration (register_autograd, or Library.impl(..., 'Autograd'))")


def _check_faketensor(overload, args, kwargs, atol, rtol):
    real = _as_tuple(overload(*_clone(args), **_clone(kwargs)))
    fake = _as_tuple(overload(*_clone(args, "meta"), **_clone(kwargs, "meta")))
    for r, f in zip(real, fake):
        if isinstance(r, TensorImpl):
            for what, a, b in (("Shapes", r.shape, f.shape), ("Dtypes", r.dtype, f.dtype),
                               ("Strides", r.stride(), f.stride())):
                if a != b:
                    raise RuntimeError(f"When comparing the output of {overload} on the meta device and concrete "
                                       f"Tensors, found mismatched tensor metadata: {what} {a} and {b} are not equal!")


def _check_traced(overload, args, kwargs, atol, rtol):
    eager_args, traced_args = _clone(args), _clone(args)
    expected = _as_tuple(overload(*eager_args, **kwargs))
    traced = trace(lambda *a: overload(*a, **kwargs), tuple(_clone(args)), check_trace=False)
    got = _as_tuple(traced(*traced_args))
    for e, g in zip(expected, got):
        assert_close(g, e, atol=atol, rtol=rtol, equal_nan=True)
    outputs = [(e, g) for e, g in zip(expected, got) if isinstance(e, TensorImpl) and e.requires_grad]
    if outputs:
        sum(e.sum() for e, _ in outputs).backward()
        sum(g.sum() for _, g in outputs).backward()
        for e, g in zip(eager_args, traced_args):
            if isinstance(e, TensorImpl) and e.grad is not None:
                assert_close(g.grad, e.grad, atol=atol, rtol=rtol, equal_nan=True)


def _as_tuple(result):
    return result if isinstance(result, (tuple, list)) else (result,)


_CHECKS = {"test_schema": _check_schema, "test_autograd_registration": _check_autograd_registration,
           "test_faketensor": _check_faketensor, "test_aot_dispatch_dynamic": _check_traced}
