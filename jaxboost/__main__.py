"""``python -m jaxboost``: the command line (see ``jaxboost.cli``)."""

import sys

from .adapters.cli import main

if __name__ == "__main__":
    sys.exit(main())
