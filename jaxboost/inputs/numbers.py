"""Numbers at the public boundary: hyperparameters, counts and seeds.

``is_int`` / ``is_real`` (Python or NumPy numbers, never a bool), and ``check_int`` /
``check_real``, which raise ``TypeError`` for a value of the wrong type and
``ValueError`` for one out of range or not finite, with messages of one shape:
``"max_depth must be >= 1, got 0"``.

>>> check_int("n_rounds", 10, low=0)
10
>>> check_real("subsample", 1.5, low=0, low_open=True, high=1)
Traceback (most recent call last):
  ...
ValueError: subsample must be in (0, 1], got 1.5
>>> check_real("gamma", True)
Traceback (most recent call last):
  ...
TypeError: gamma must be a number, got bool True
"""

from __future__ import annotations

import math
import numbers


def is_int(v) -> bool:
    """A Python or NumPy integer, not a bool."""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def is_real(v) -> bool:
    """A Python or NumPy real number (integers included), not a bool."""
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _check_range(name, value, low, low_open, high):
    below = low is not None and (value <= low if low_open else value < low)
    above = high is not None and value > high
    if not (below or above):
        return
    if low is not None and high is not None:
        rng = f"in {'(' if low_open else '['}{low}, {high}]"
    elif low is not None:
        rng = f"{'>' if low_open else '>='} {low}"
    else:
        rng = f"<= {high}"
    raise ValueError(f"{name} must be {rng}, got {value!r}")


def check_int(name: str, value, *, low=None, high=None) -> int:
    """``value`` as an ``int`` in ``[low, high]`` (each bound optional).

    Raises ``TypeError`` unless ``is_int(value)``, ``ValueError`` when out of range.
    """
    if not is_int(value):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    _check_range(name, value, low, False, high)
    return int(value)


def check_real(name: str, value, *, low=None, low_open=False, high=None, what="a number") -> float:
    """``value`` as a finite ``float`` in ``[low, high]`` (``(low, high]`` when
    ``low_open``; each bound optional).

    Raises ``TypeError`` unless ``is_real(value)`` (the message says it must be
    ``what``), ``ValueError`` when not finite or out of range.
    """
    if not is_real(value):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__} {value!r}")
    try:
        x = float(value)
    except OverflowError:  # an int beyond float range
        x = math.inf
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {value!r}")
    _check_range(name, value, low, low_open, high)
    return x
