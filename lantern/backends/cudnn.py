"""torch.backends.cudnn's switches, so that PyTorch programs which set them run unchanged.

lantern has no cuDNN: the flags are kept (a program may read back what it set) and change nothing.

>>> import lantern.backends.cudnn as cudnn
>>> cudnn.benchmark = True
>>> cudnn.is_available()
False
"""
enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available():
    """False: lantern's CUDA backend (CuPy) does not use cuDNN."""
    return False


def version():
    return None
