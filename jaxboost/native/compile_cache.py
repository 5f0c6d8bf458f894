"""JAX's persistent compilation cache, turned on by jaxboost's first training call.

Compiling a training program takes seconds; with the cache a second process (a new
notebook kernel, a script run again) loads the compiled program from disk instead.
``import jaxboost`` changes no JAX setting. The first :func:`jaxboost.train` or
:func:`jaxboost.train_many` call runs :func:`ensure`, which turns the cache on when, and
only when:

* the environment variable ``JAXBOOST_COMPILATION_CACHE`` is not ``0`` and
  :func:`disable` has not been called (either opts out);
* the user has not chosen a cache directory (``jax_compilation_cache_dir``) already:
  a directory set by the user, before or after importing jaxboost, is never replaced.

The directory is ``$JAXBOOST_CACHE_DIR/xla`` when that variable is set, else
``~/.cache/jaxboost/xla``. Programs that take at least 0.05 s to compile are cached (JAX's
default is 1 s, which skips most of jaxboost's programs: with the native whole-tree
kernel a training program compiles in 0.1-0.7 s). As the cache is a JAX setting,
once it is on, the user's own JAX programs in the same process that meet that bar are
cached there too; call :func:`disable` before training to keep JAX's settings untouched.

>>> from jaxboost import compile_cache
>>> compile_cache.disable()        # before the first train: no persistent cache from jaxboost
>>> compile_cache.ensure()
'off (jaxboost.compile_cache.disable())'
>>> compile_cache.enable()         # back to the default: on at the next train
"""

from __future__ import annotations

import os
import threading

import jax

__all__ = ["ensure", "disable", "enable", "status", "cache_root"]

ENV_SWITCH = "JAXBOOST_COMPILATION_CACHE"
ENV_DIR = "JAXBOOST_CACHE_DIR"
MIN_COMPILE_SECONDS = 0.05

_lock = threading.Lock()
# "status": what ensure() did (None until it has decided); "disabled": disable() called.
_state: dict = {"status": None, "disabled": False}


def cache_root() -> str:
    """jaxboost's cache directory (also used for the native kernel's first-use build)."""
    root = os.environ.get(ENV_DIR)
    if root:
        return root
    return os.path.join(os.path.expanduser("~"), ".cache", "jaxboost")


def disable() -> None:
    """Keep jaxboost from turning on JAX's persistent compilation cache (in this process).

    Has no effect on a cache jaxboost already turned on (then set JAX's
    ``jax_compilation_cache_dir`` yourself, or call this before the first training call).
    """
    with _lock:
        _state["disabled"] = True
        if _state["status"] is None or _state["status"].startswith("off"):
            _state["status"] = None


def enable() -> None:
    """Undo :func:`disable`: the next training call may turn the cache on again."""
    with _lock:
        _state["disabled"] = False
        if _state["status"] is not None and _state["status"].startswith("off"):
            _state["status"] = None


def status() -> str | None:
    """What :func:`ensure` did, as a short sentence; ``None`` before it has run."""
    return _state["status"]


def ensure() -> str:
    """Turn on JAX's persistent compilation cache as described in the module docs.

    Called at the start of every training call; decides once per process (until
    :func:`disable` or :func:`enable`), then costs a dictionary lookup. Returns a short
    sentence saying what was done, for diagnostics.
    """
    done = _state["status"]
    if done is not None:
        return done
    with _lock:
        if _state["status"] is None:
            _state["status"] = _configure()
        return _state["status"]


def _configure() -> str:
    if _state["disabled"]:
        return "off (jaxboost.compile_cache.disable())"
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
