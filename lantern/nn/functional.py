"""lantern.nn.functional: the functional forms of layers, activations and losses (torch.nn.functional).

Each function is declared in lantern/ops/nn_conv.py or lantern/ops/nn_ops.py (op records with derivatives) and
exported here by name.
"""
from ..ops import nn_conv as _nn_conv, nn_ops as _nn_ops

for _module in (_nn_conv, _nn_ops):
    globals().update({name: getattr(_module, name) for name in getattr(_module, "__all__", ())})
