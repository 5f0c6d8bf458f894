"""JAX's persistent compilation cache, on by default for jaxboost.

Compiling a training program takes seconds; with the cache a second process (a new
notebook kernel, a script run again) loads the compiled program from disk instead.
``import jaxboost`` turns the cache on when, and only when:

* the environment variable ``JAXBOOST_COMPILATION_CACHE`` is not ``0`` (set it to ``0``
  to opt out);
* the user has not chosen a cache directory (``jax_compilation_cache_dir``) already.

The directory is ``$JAXBOOST_CACHE_DIR/xla`` when that variable is set, else
``~/.cache/jaxboost/xla``. Programs that take at least 0.2 s to compile are cached (JAX's
default is 1 s, which skips most of jaxboost's programs). As the cache is a JAX setting,
the user's own JAX programs in the same process that meet that bar are cached there too.
"""

from __future__ import annotations

import os

import jax

ENV_SWITCH = "JAXBOOST_COMPILATION_CACHE"
ENV_DIR = "JAXBOOST_CACHE_DIR"
MIN_COMPILE_SECONDS = 0.2


def cache_root() -> str:
    """jaxboost's cache directory (also used for the native kernel build)."""
    root = os.environ.get(ENV_DIR)
    if root:
        return root
    return os.path.join(os.path.expanduser("~"), ".cache", "jaxboost")


def configure_compilation_cache() -> str:
    """Enable JAX's persistent compilation cache as described in the module docs.

    Returns a short sentence saying what was done, for diagnostics.
    """
    if os.environ.get(ENV_SWITCH, "1").strip().lower() in ("0", "false", "off", "no"):
        return f"off ({ENV_SWITCH}=0)"
    if jax.config.jax_compilation_cache_dir:
        return f"kept the user's cache at {jax.config.jax_compilation_cache_dir}"
    path = os.path.join(cache_root(), "xla")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:  # read-only home and the like: run without the cache
        return f"off (cannot create {path}: {e})"
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    return f"on at {path}"
