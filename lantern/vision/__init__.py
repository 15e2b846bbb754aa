"""lantern.vision: a small torchvision subset for the demo (transforms)."""
from . import transforms  # noqa: F401
