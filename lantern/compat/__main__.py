"""`python -m lantern.compat script.py [args]`: run a PyTorch program on lantern."""
import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
