"""pytest's settings for every path of the repository, read before any test module:
``pytest jaxboost`` or ``pytest objectives`` (the doctests alone) run as the whole suite
does, with jaxboost's persistent compilation cache off, so that no doctest reads a cache
from an earlier run or turns one on in the user's home (``tests/conftest.py`` holds the
suite's own settings and fixtures)."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["JAXBOOST_COMPILATION_CACHE"] = "0"
