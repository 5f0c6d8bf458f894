"""Shared helpers for the catalogue: label-domain checks and hyperparameter checks."""

from __future__ import annotations

import math
import numbers

import numpy as np


def raise_bad_labels(name: str, domain: str, bad: np.ndarray, y: np.ndarray) -> None:
    """Raise ``ValueError`` when any of ``bad`` is set, naming the loss, domain and row.

    >>> raise_bad_labels("poisson", "y >= 0", np.array([False]), np.array([1.0]))
    """
    bad = np.asarray(bad).ravel()
    if np.any(bad):
        y = np.asarray(y).ravel()
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} needs labels {domain}; {int(bad.sum())} label(s) are outside, "
            f"the first at row {i}: {y[i]}")


def check_hyper(name: str, key: str, value, ok, domain: str) -> None:
    """Raise ``ValueError`` for a hyperparameter outside its domain.

    ``ok`` is a predicate on the value. Only concrete Python / NumPy numbers are checked
    (a traced value is left alone), so calling it inside a loss costs nothing at run time.

    >>> check_hyper("huber", "delta", 1.0, lambda d: d > 0, "> 0")
    """
    if isinstance(value, numbers.Real) and not ok(value):
        raise ValueError(f"objectives.{name} needs {key} {domain}, got {value!r}")


def _concrete_real(value):
    """``value`` as a float when it is a concrete real number (a Python or NumPy scalar,
    or a 0-d array), ``None`` for a traced JAX value, else ``TypeError``."""
    import jax

    if isinstance(value, jax.core.Tracer):
        return None
    if isinstance(value, (bool, np.bool_)):
        raise TypeError("a bool")
    if isinstance(value, numbers.Real):
        return float(value)
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape == () and dtype is not None and np.dtype(dtype).kind in "iuf":
        return float(value)
    raise TypeError(type(value).__name__)


def real_hyper(name: str, key: str, ok, domain: str):
    """A ``check_params`` for an entry with one real hyperparameter ``key``: the value
    must be a finite real number (``TypeError`` otherwise: a string, a bool, None) with
    ``ok(value)`` true (``ValueError`` otherwise). Entries run it when a variant is
    made (``objectives.huber(delta=-1.0)``) and when a model file is loaded, so a bad
    value never reaches training or prediction.

    >>> real_hyper("huber", "delta", lambda d: d > 0, "> 0")(delta=2.0)
    >>> real_hyper("huber", "delta", lambda d: d > 0, "> 0")(delta=-1)
    Traceback (most recent call last):
      ...
    ValueError: objectives.huber needs delta > 0 (a finite number), got -1
    """
    def check(**params):
        if key not in params:
            return
        value = params[key]
        try:
            x = _concrete_real(value)
        except TypeError as e:
            raise TypeError(f"objectives.{name} needs {key} to be a real number "
                            f"{domain}, got {e} {value!r}") from None
        if x is not None and not (math.isfinite(x) and ok(x)):
            raise ValueError(f"objectives.{name} needs {key} {domain} (a finite "
                             f"number), got {value!r}")
    return check


def is_number(value) -> bool:
    """True for a concrete Python / NumPy real number (not a traced JAX value).

    >>> is_number(2.0), is_number("a")
    (True, False)
    """
    return isinstance(value, numbers.Real)
