"""Checks of parsed JSON values, each raising ``ModelFormatError`` that names the key.

The vocabulary of both model readers' validation (``format`` and ``xgboost``):
``as_int``, ``as_finite``, ``as_object``, ``check_keys``, ``check_scalar`` check one
value at the key path ``where`` (e.g. ``trees.feature[3][0]``); ``nested`` checks a
nested list of a given shape and entry kind at once and returns it as an array;
``json_scalar`` and ``float_list`` go the other way, from Python and NumPy values to
JSON-ready ones. These check JSON types (``int``, ``float``, ``bool``, ``str``,
``None``, ``list``, ``dict``, as ``json`` parses them), not the Python-side scalars of
``jaxboost.inputs.numbers``.

The limits both readers apply before they allocate anything of the declared size:
``MAX_CLASSES`` outputs (``objectives.MAX_CLASSES``), ``MAX_FEATURES`` features and
``MAX_NODES`` tree nodes (heap layout, ``T * M``) and leaf-value entries
(``T * M * K``). And what both check of the trees once read, in heap layout (node ``i``
has children ``2 i + 1`` and ``2 i + 2``): ``margin_overflow`` (no sum of leaf values
along the trees leaves the float32 range) and ``cover_problem`` (the covers SHAP
values are weighted by add up: a split's children share its cover).

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

from objectives import MAX_CLASSES

from ..errors import ModelFormatError
from ..inputs.numbers import is_int, is_real

MAX_NODES = 10**7
"""Most tree nodes (``T * M`` in heap layout), and most leaf-value entries
(``T * M * K``), a model file may hold: about 30 bytes each once read, 300 MB at most."""
MAX_FEATURES = 100_000
"""Most features (``F``) a model file may declare (its bin edges take ``1 KiB`` each)."""
F32_MAX = float(np.finfo(np.float32).max)
COVER_TOLERANCE = 1e-3
"""Relative tolerance of ``cover_problem``: float32 rounding of the three covers of a
split is about ``1e-7`` of them."""

__all__ = ["MAX_CLASSES", "MAX_NODES", "MAX_FEATURES"]  # the limits; helpers by name


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
        rng = f">= {lo}" if hi is None else f"<= {hi}" if lo is None else f"in [{lo}, {hi}]"
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
        raise ModelFormatError(
            f"{where}: unknown key(s) {unknown}; expected {sorted(set(required) | set(optional))}"
        )


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
    raise ValueError(
        f"cannot store {where}={v!r} in a model file: only None, bools, "
        f"ints, finite floats and strings can be stored"
    )


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
    "threshold": 'numbers, null, "inf" or "-inf"',
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
        fail(
            where + _index(i, shape),
            f"{_EXPECTED[kind]} in range",
            level[i] if i < len(level) else None,
        )
    with np.errstate(over="ignore"):
        out = wide.astype(np.float32).reshape(shape)
    bad = ~np.isfinite(out)
    if kind == "threshold":  # NaN/inf here came from null/"inf"/"-inf", checked later
        bad &= np.isfinite(wide.reshape(shape))
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        fail(where + _index(i, shape), "a number finite in float32", float(wide.ravel()[i]))
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
        fail(where + _index(i, shape), 'a number, null, "inf" or "-inf"', x)
    return x


def float_list(a) -> list:
    """float32 array -> nested lists of Python floats (exact)."""
    return np.asarray(a, np.float32).astype(np.float64).tolist()


# --------------------------------------------------------------------------------------
# What both readers check of the trees
# --------------------------------------------------------------------------------------


def margin_overflow(value, is_leaf, base_margin, value_output=None):
    r"""``None`` when no prediction can overflow float32, else ``(k, bound)``.

    A row's margin for output ``k`` is ``base_k`` plus one leaf value of each tree, so

    .. math:: |f_k(x)| \le |b_k| + \sum_t \max_{i\ \mathrm{leaf}} |v_{t,i,k}|

    and float32 sums whose partial sums all stay below ``F32_MAX`` in magnitude cannot
    round to infinity. ``value``: ``(T, M)`` or ``(T, M, K)``; ``is_leaf``: ``(T, M)``;
    ``base_margin``: a number or ``(K,)``; ``value_output``: None, or ``(T,)`` for class
    trees held one output per tree (``Ensemble``: ``value`` ``(T, M)``, tree ``t`` adding
    to output ``value_output[t]`` only; ``K`` is then ``base_margin``'s size).
    Returns the first output whose bound exceeds ``F32_MAX``, and that bound (float64).

    >>> margin_overflow(np.array([[3e38, 3e38]], np.float32), np.array([[True, True]]), 0.0)
    >>> k, bound = margin_overflow(np.full((2, 1), 3e38, np.float32), np.ones((2, 1), bool), 0)
    >>> k, f"{bound:.3g}"
    (0, '6e+38')
    """
    value = np.asarray(value)
    leaf = np.asarray(is_leaf, bool)
    base = np.abs(np.asarray(base_margin, np.float64)).reshape(-1)
    if value_output is not None:  # each tree's largest leaf, summed per output
        K = base.size
        largest = np.max(np.abs(value), axis=1, where=leaf, initial=0.0).astype(np.float64)
        total = np.bincount(np.asarray(value_output), weights=largest, minlength=K)[:K] + base
    else:
        K = value.shape[2] if value.ndim == 3 else 1
        total = np.zeros(K, np.float64)
        step = max(1, (1 << 20) // max(value[0].size if value.shape[0] else 1, 1))
        for a in range(0, value.shape[0], step):  # blocks of trees: no full-size temporary
            v = np.abs(value[a : a + step]).reshape(-1, value.shape[1], K)
            m = leaf[a : a + step][..., None]
            total += np.max(v, axis=1, where=m, initial=0.0).astype(np.float64).sum(axis=0)
        total = total + base
    bad = np.flatnonzero(~(total <= F32_MAX))
    if bad.size:
        k = int(bad[0])
        return k, float(total[k])
    return None


def cover_problem(cover, left, right):
    r"""Index of the first split whose covers SHAP values cannot use, or ``None``.

    ``cover``, ``left``, ``right``: the covers (sums of Hessians) of split nodes and of
    their two children, 1-D. TreeSHAP weights each branch by ``left / cover`` and
    ``right / cover``; those are fractions only when the children's covers are
    non-negative and add up to the parent's:

    .. math:: c, l, r \ge 0, \qquad |l + r - c| \le 10^{-3} \max(c, l + r)

    (zero covers included). A cover that breaks this (a NaN, a negative one, a
    subnormal parent under normal children) turns SHAP values into inf or NaN.

    >>> cover_problem(np.array([3.0, 0.0]), np.array([1.0, 0.0]), np.array([2.0, 0.0]))
    >>> cover_problem(np.array([1e-45]), np.array([1.0]), np.array([2.0]))
    0
    """
    c, l, r = (np.asarray(a, np.float64) for a in (cover, left, right))
    with np.errstate(invalid="ignore", over="ignore"):
        ok = (
            (c >= 0)
            & (l >= 0)
            & (r >= 0)
            & (np.abs(l + r - c) <= COVER_TOLERANCE * np.maximum(c, l + r))
        )
    bad = np.flatnonzero(~ok)
    return int(bad[0]) if bad.size else None


def heap_split_covers(cover, is_leaf):
    """``(t, i, c, l, r)`` of every split node of heap-layout trees: tree and node
    indices, and the covers of the node and its children (1-D arrays)."""
    cover = np.asarray(cover)
    t, i = np.nonzero(~np.asarray(is_leaf, bool))
    M = cover.shape[1] if cover.ndim == 2 else 0
    keep = 2 * i + 2 < M  # a split in the last level is refused elsewhere
    t, i = t[keep], i[keep]
    return t, i, cover[t, i], cover[t, 2 * i + 1], cover[t, 2 * i + 2]
