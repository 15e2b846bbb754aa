"""torch.masked.maskedtensor: the MaskedTensor class (core), its constructors (creation) and the rules that run
ops on it (unary, binary, reductions, passthrough), each registered as the op's kernel under the Masked key.

>>> import lantern
>>> from lantern.masked.maskedtensor import core
>>> core.is_masked_tensor(lantern.masked.as_masked_tensor(lantern.ones(1), lantern.ones(1).bool()))
True
"""
from . import binary, core, creation, passthrough, reductions, unary  # noqa: F401  (importing registers the rules)

core.refuse_unsupported_ops()
