"""What the model builders share: lantern builds architectures only, it never downloads pretrained weights.

>>> refuse_pretrained_weights("resnet18", None, {})
>>> refuse_pretrained_weights("resnet18", "DEFAULT", {})
Traceback (most recent call last):
RuntimeError: resnet18(weights='DEFAULT'): lantern does not download pretrained weights. Build the model with weights=None and load a state_dict saved from torchvision: model.load_state_dict(torch.load(path))
"""


def refuse_pretrained_weights(name, weights, kwargs):
    """Raise for `weights=...` or the legacy `pretrained=True`; drop a `pretrained=False` from kwargs."""
    if kwargs.pop("pretrained", False):
        weights = "pretrained=True"
    if weights is not None:
        raise RuntimeError(f"{name}(weights={weights!r}): lantern does not download pretrained weights. Build the "
                           "model with weights=None and load a state_dict saved from torchvision: "
                           "model.load_state_dict(torch.load(path))")
