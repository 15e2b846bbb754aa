"""lantern.utils.model_zoo: the older name of hub's weight download, as torch.utils.model_zoo.

>>> from lantern.utils import model_zoo
>>> model_zoo.load_url is lantern.hub.load_state_dict_from_url
True
"""
from ..hub import load_state_dict_from_url as load_url, tqdm  # noqa: F401
