"""VGG (Simonyan and Zisserman, 2014) with torchvision's layout and parameter names.

`features`: 3x3 convolutions (each with ReLU, and BatchNorm in the *_bn variants) and 2x2 max-pools as the
configuration lists them; `avgpool` to 7x7; `classifier`: 4096-4096-num_classes with dropout.

>>> import lantern
>>> features = make_layers(CONFIGS["A"], batch_norm=True)          # vgg11_bn's convolutional part
>>> features(lantern.randn(1, 3, 32, 32)).shape                    # five 2x2 pools: 32 -> 1
lantern.Size([1, 512, 1, 1])
>>> list(features.state_dict())[:3]
['0.weight', '0.bias', '1.weight']
"""
from ... import flatten, nn
from ._api import refuse_pretrained_weights

__all__ = ["VGG", "make_layers", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn"]

# output channels of each convolution, "M" for a max-pool: configurations A (11 layers), B (13), D (16), E (19)
CONFIGS = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}


class VGG(nn.Module):
    """`features`, then adaptive average pooling to 7x7 and the classifier; weights initialised as torchvision's."""

    def __init__(self, features, num_classes=1000, init_weights=True, dropout=0.5):
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes),
        )
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        return self.classifier(flatten(self.avgpool(self.features(x)), 1))


def make_layers(cfg, batch_norm=False):
    """The `features` Sequential for a configuration list."""
    layers = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            continue
        layers.append(nn.Conv2d(in_channels, v, kernel_size=3, padding=1))
        if batch_norm:
            layers.append(nn.BatchNorm2d(v))
        layers.append(nn.ReLU(inplace=True))
        in_channels = v
    return nn.Sequential(*layers)


def _vgg(name, cfg, batch_norm, weights, progress, **kwargs):
    refuse_pretrained_weights(name, weights, kwargs)
    return VGG(make_layers(CONFIGS[cfg], batch_norm=batch_norm), **kwargs)


def vgg11(*, weights=None, progress=True, **kwargs):
    return _vgg("vgg11", "A", False, weights, progress, **kwargs)


def vgg11_bn(*, weights=None, progress=True, **kwargs):
    return _vgg("vgg11_bn", "A", True, weights, progress, **kwargs)


def vgg13(*, weights=None, progress=True, **kwargs):
    return _vgg("vgg13", "B", False, weights, progress, **kwargs)


def vgg13_bn(*, weights=None, progress=True, **kwargs):
    return _vgg("vgg13_bn", "B", True, weights, progress, **kwargs)


def vgg16(*, weights=None, progress=True, **kwargs):
    return _vgg("vgg16", "D", False, weights, progress, **kwargs)


def vgg16_bn(*, weights=None, progress=True, **kwargs):
    return _vgg("vgg16_bn", "D", True, weights, progress, **kwargs)


def vgg19(*, weights=None, progress=True, **kwargs):
    return _vgg("vgg19", "E", False, weights, progress, **kwargs)


def vgg19_bn(*, weights=None, progress=True, **kwargs):
    return _vgg("vgg19_bn", "E", True, weights, progress, **kwargs)
