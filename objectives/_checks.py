"""Shared helpers for the catalogue: label-domain checks and hyperparameter checks."""

from __future__ import annotations

import dataclasses
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
            f"the first at row {i}: {y[i]}"
        )


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


@dataclasses.dataclass(frozen=True)
class Interval:
    """A picklable domain test for a real hyperparameter: ``lo < x < hi``, with ``<=``
    at an end marked closed (a lambda would make every objective that holds it
    impossible to pickle, and with it every Booster and estimator).

    >>> Interval(lo=0.0)(2.0), Interval(1.0, 2.0)(2.0), Interval(lo=0.0, lo_closed=True)(0.0)
    (True, False, True)
    """

    lo: float = -math.inf
    hi: float = math.inf
    lo_closed: bool = False
    hi_closed: bool = False

    def __call__(self, x) -> bool:
        above = x >= self.lo if self.lo_closed else x > self.lo
        below = x <= self.hi if self.hi_closed else x < self.hi
        return bool(above and below)


@dataclasses.dataclass(frozen=True)
class RealHyper:
    """``real_hyper``'s check: a module-level callable (picklable, compared by value)."""

    name: str
    key: str
    ok: Interval
    domain: str

    def __call__(self, **params):
        if self.key not in params:
            return
        value = params[self.key]
        try:
            x = _concrete_real(value)
        except TypeError as e:
            raise TypeError(
                f"objectives.{self.name} needs {self.key} to be a real number "
                f"{self.domain}, got {e} {value!r}"
            ) from None
        if x is not None and not (math.isfinite(x) and self.ok(x)):
            raise ValueError(
                f"objectives.{self.name} needs {self.key} {self.domain} (a "
                f"finite number), got {value!r}"
            )


def real_hyper(name: str, key: str, ok: Interval, domain: str) -> RealHyper:
    """A ``check_params`` for an entry with one real hyperparameter ``key``: the value
    must be a finite real number (``TypeError`` otherwise: a string, a bool, None) with
    ``ok(value)`` true (``ValueError`` otherwise; ``ok`` an ``Interval``). Entries run it
    when a variant is made (``objectives.huber(delta=-1.0)``) and when a model file is
    loaded, so a bad value never reaches training or prediction.

    >>> real_hyper("huber", "delta", Interval(lo=0.0), "> 0")(delta=2.0)
    >>> real_hyper("huber", "delta", Interval(lo=0.0), "> 0")(delta=-1)
    Traceback (most recent call last):
      ...
    ValueError: objectives.huber needs delta > 0 (a finite number), got -1
    """
    return RealHyper(name, key, ok, domain)


@dataclasses.dataclass(frozen=True)
class LabelsIn:
    """A picklable label check: ``raise_bad_labels(name, domain, ~ok(y), y)`` with
    ``ok`` one of ``LABEL_DOMAINS``' keys (``"unit"``: 0 <= y <= 1, ``"finite"``)."""

    name: str
    kind: str

    def __call__(self, y, **_):
        y = np.asarray(y)
        if self.kind == "unit":
            bad = (y < 0) | (y > 1)
            if np.any(bad):
                i = int(np.flatnonzero(np.ravel(bad))[0])
                raise ValueError(
                    f"{self.name} needs labels y in [0, 1] (probabilities or 0/1 classes); "
                    f"{int(bad.sum())} label(s) are outside, the first at row {i}: "
                    f"{np.ravel(y)[i].item()!r}"
                )
        elif self.kind == "finite":
            raise_bad_labels(self.name, "finite (graded relevance)", ~np.isfinite(y), y)
        else:
            raise ValueError(f"unknown label domain {self.kind!r}")


def is_number(value) -> bool:
    """True for a concrete Python / NumPy real number (not a traced JAX value).

    >>> is_number(2.0), is_number("a")
    (True, False)
    """
    return isinstance(value, numbers.Real)
