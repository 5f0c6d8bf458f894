"""Checks of parsed JSON values, each raising ``ModelFormatError`` that names the key.

The vocabulary of ``format``'s validation: ``as_int``, ``as_finite``, ``as_object``,
``check_keys``, ``check_scalar`` check one value at the key path ``where`` (e.g.
``trees.feature[3][0]``); ``nested`` checks a nested list of a given shape and entry
kind at once and returns it as an array; ``json_scalar`` and ``float_list`` go the
other way, from Python and NumPy values to JSON-ready ones. These check JSON types
(``int``, ``float``, ``bool``, ``str``, ``None``, ``list``, ``dict``, as ``json``
parses them), not the Python-side scalars of ``jaxboost._validation``.

>>> as_int(3, "n_features", lo=1)
3
>>> as_int(True, "n_features")
Traceback (most recent call last):
  ...
jaxboost.errors.ModelFormatError: n_features: expected an integer, got bool True
>>> nested([[1, 2], [3, 4]], "trees.feature", (2, 2), "int").tolist()
[[1, 2], [3, 4]]
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .._validation import is_int, is_real
from ..errors import ModelFormatError


def describe(v) -> str:
    """``v`` in a few words for an error message: its type, and its repr cut to 60
    characters (a list or object: its length)."""
    if isinstance(v, (list, dict)):
        return f"{type(v).__name__} of length {len(v)}"
    text = repr(v)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(v).__name__} {text}"


def fail(where: str, expected: str, got=None, *, show_got: bool = True):
    """Raise ``ModelFormatError``: ``"{where}: expected {expected}, got {got}"``."""
    msg = f"{where}: expected {expected}"
    if show_got:
        msg += f", got {describe(got)}"
    raise ModelFormatError(msg)


def is_json_int(v) -> bool:
    """A JSON integer: ``int``, not ``bool`` (``true`` is not an integer)."""
    return isinstance(v, int) and not isinstance(v, bool)


def is_json_number(v) -> bool:
    """A JSON number: ``int`` or ``float``, not ``bool``."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def as_int(v, where, lo=None, hi=None) -> int:
    """A JSON integer (not a bool) in ``[lo, hi]``."""
    if not is_json_int(v):
        fail(where, "an integer", v)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        rng = (f">= {lo}" if hi is None else f"<= {hi}" if lo is None
               else f"in [{lo}, {hi}]")
        fail(where, f"an integer {rng}", v)
    return int(v)


def as_finite(v, where, *, float32=False) -> float:
    """A finite JSON number (finite in float32 when ``float32``)."""
    if not is_json_number(v):
        fail(where, "a number", v)
    try:
        x = float(v)
    except OverflowError:
        fail(where, "a finite number", v)
    if float32:
        with np.errstate(over="ignore"):
            ok = bool(np.isfinite(np.float32(x)))
    else:
        ok = math.isfinite(x)
    if not ok:
        fail(where, "a finite number" + (" (in float32)" if float32 else ""), v)
    return x


def as_object(v, where) -> dict:
    """``v``, checked to be a JSON object (a dict with string keys)."""
    if not isinstance(v, dict):
        fail(where, "an object", v)
    for k in v:
        if not isinstance(k, str):
            fail(where, "an object with string keys", k)
    return v


def check_keys(d, where, required, optional=()):
    """Every ``required`` key is in ``d``, and no key but those and ``optional``."""
    missing = [k for k in required if k not in d]
    if missing:
        raise ModelFormatError(f"{where}: missing key(s) {missing}")
    unknown = sorted(set(d) - set(required) - set(optional))
    if unknown:
        raise ModelFormatError(f"{where}: unknown key(s) {unknown}; expected "
                               f"{sorted(set(required) | set(optional))}")


def json_scalar(v, where):
    """A hyperparameter-like value as a JSON scalar (for writing)."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, np.bool_):
        return bool(v)
    if is_int(v):
        return int(v)
    if is_real(v) and math.isfinite(float(v)):
        return float(v)
    raise ValueError(f"cannot store {where}={v!r} in a model file: only None, bools, "
                     f"ints, finite floats and strings can be stored")


def check_scalar(v, where):
    """A JSON scalar read from a file (finite when a number)."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if is_json_number(v):
        as_finite(v, where)
        return v
    fail(where, "null, a bool, a finite number or a string", v)


def _index(flat_i, shape):
    return "".join(f"[{int(j)}]" for j in np.unravel_index(flat_i, shape))


# --------------------------------------------------------------------------------------
# Nested lists <-> arrays
# --------------------------------------------------------------------------------------

_ALLOWED = {
    "int": (int,),
    "bool": (bool,),
    "float": (int, float),
    "threshold": (int, float, type(None), str),
}
_EXPECTED = {
    "int": "integers",
    "bool": "bools (true/false)",
    "float": "finite numbers",
    "threshold": "numbers, null, \"inf\" or \"-inf\"",
}


def nested(v, where, shape, kind) -> np.ndarray:
    """Check that ``v`` is a nested list of ``shape`` holding ``kind`` entries; as an array.

    ``kind``: ``"int"`` (int64), ``"bool"``, ``"float"`` (float32, finite) or
    ``"threshold"`` (float32; null -> NaN, "inf"/"-inf" -> +-inf, numbers finite).
    """
    if not isinstance(v, list):
        fail(where, f"a list of length {shape[0]}", v)
    if len(v) != shape[0]:
        fail(where, f"a list of length {shape[0]}", v)
    level = v
    for depth in range(1, len(shape)):
        n = shape[depth]
        if not all(type(r) is list and len(r) == n for r in level):
            i = next(i for i, r in enumerate(level) if type(r) is not list or len(r) != n)
            fail(where + _index(i, shape[:depth]), f"a list of length {n}", level[i])
        level = list(itertools.chain.from_iterable(level))
    allowed = _ALLOWED[kind]
    if not set(map(type, level)) <= set(allowed):
        i = next(i for i, x in enumerate(level) if type(x) not in allowed)
        fail(where + _index(i, shape), _EXPECTED[kind], level[i])
    try:
        if kind == "int":
            return np.array(level, dtype=np.int64).reshape(shape)
        if kind == "bool":
            return np.array(level, dtype=bool).reshape(shape)
        if kind == "threshold":
            level = [_threshold_entry(x, where, i, shape) for i, x in enumerate(level)]
        wide = np.array(level, dtype=np.float64)
    except OverflowError:  # an integer literal too large for int64 / float64
        i = next((i for i, x in enumerate(level) if _overflows(x, kind)), 0)
        fail(where + _index(i, shape), f"{_EXPECTED[kind]} in range",
              level[i] if i < len(level) else None)
    with np.errstate(over="ignore"):
        out = wide.astype(np.float32).reshape(shape)
    bad = ~np.isfinite(out)
    if kind == "threshold":  # NaN/inf here came from null/"inf"/"-inf", checked later
        bad &= np.isfinite(wide.reshape(shape))
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        fail(where + _index(i, shape), "a number finite in float32",
              float(wide.ravel()[i]))
    return out


def _overflows(x, kind) -> bool:
    try:
        np.array([x], dtype=np.int64 if kind == "int" else np.float64)
    except (OverflowError, TypeError, ValueError):
        return True
    return False


def _threshold_entry(x, where, i, shape):
    if x is None:
        return math.nan
    if isinstance(x, str):
        if x == "inf":
            return math.inf
        if x == "-inf":
            return -math.inf
        fail(where + _index(i, shape), "a number, null, \"inf\" or \"-inf\"", x)
    return x


def float_list(a) -> list:
    """float32 array -> nested lists of Python floats (exact)."""
    return np.asarray(a, np.float32).astype(np.float64).tolist()
