"""torch.backends.mha: whether nn.MultiheadAttention and TransformerEncoder may take PyTorch's fused inference
path. lantern always runs the composite path; the switch is kept and read back.

>>> import lantern.backends.mha as mha
>>> mha.get_fastpath_enabled()
True
"""
_FASTPATH = [True]


def get_fastpath_enabled():
    return _FASTPATH[0]


def set_fastpath_enabled(value):
    _FASTPATH[0] = value
