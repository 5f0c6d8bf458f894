"""Shared helpers for the catalogue: label-domain checks and hyperparameter checks."""

from __future__ import annotations

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


def is_number(value) -> bool:
    """True for a concrete Python / NumPy real number (not a traced JAX value).

    >>> is_number(2.0), is_number("a")
    (True, False)
    """
    return isinstance(value, numbers.Real)
