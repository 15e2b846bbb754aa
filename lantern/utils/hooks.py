"""RemovableHandle, under the name PyTorch users import it from (torch.utils.hooks)."""
from ..autograd.graph import RemovableHandle  # noqa: F401
