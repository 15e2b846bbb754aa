"""The `functorch` package that torch still ships beside torch.func: the same transforms under their old names, each
warning (FutureWarning, torch's text) that it moved to torch.func, and the module API from before functional_call
(make_functional, make_functional_with_buffers, combine_state_for_ensemble; lantern/_functorch/make_functional.py).
`python -m lantern.compat` serves `import functorch` from here.

>>> import warnings
>>> import lantern
>>> from lantern import functorch
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     functorch.grad(lambda x: (x ** 2).sum())(lantern.tensor([1., 2.]))
tensor([2., 4.])
>>> print(caught[0].message)  # doctest: +ELLIPSIS
We've integrated functorch into PyTorch. As the final step of the integration, `functorch.grad` is deprecated ...
"""
import functools
import warnings

from . import func
from ._functorch import make_functional as _make_functional
from ._functorch.make_functional import FunctionalModule, FunctionalModuleWithBuffers
from .version import __version__

__all__ = ["FunctionalModule", "FunctionalModuleWithBuffers", "combine_state_for_ensemble", "functionalize", "grad",
           "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "make_functional",
           "make_functional_with_buffers", "vjp", "vmap"]


def _deprecated(implementation, new_api=None):
    """implementation, warning on each call that functorch.<name> is deprecated in favour of `new_api`."""
    name = implementation.__name__
    message = (f"We've integrated functorch into PyTorch. As the final step of the integration, `functorch.{name}` is "
               f"deprecated as of PyTorch 2.0 and will be deleted in a future version of PyTorch >= 2.3. Please use "
               f"`{new_api or 'torch.func.' + name}` instead; see the PyTorch 2.0 release notes and/or the "
               f"`torch.func` migration guide for more details https://pytorch.org/docs/main/func.migrating.html")

    @functools.wraps(implementation)
    def warning_first(*args, **kwargs):
        warnings.warn(message, FutureWarning, stacklevel=2)
        return implementation(*args, **kwargs)
    return warning_first


vmap = _deprecated(func.vmap, "torch.vmap")
grad = _deprecated(func.grad)
grad_and_value = _deprecated(func.grad_and_value)
vjp = _deprecated(func.vjp)
jvp = _deprecated(func.jvp)
jacrev = _deprecated(func.jacrev)
jacfwd = _deprecated(func.jacfwd)
hessian = _deprecated(func.hessian)
functionalize = _deprecated(func.functionalize)
make_functional = _deprecated(_make_functional.make_functional, "torch.func.functional_call")
make_functional_with_buffers = _deprecated(_make_functional.make_functional_with_buffers,
                                           "torch.func.functional_call")
combine_state_for_ensemble = _deprecated(_make_functional.combine_state_for_ensemble,
                                         "torch.func.stack_module_state")
