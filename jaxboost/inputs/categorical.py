"""Categorical columns at the boundary: which columns are categorical, their codes checked.

A column is categorical when it is a pandas ``category`` column, a polars
``Categorical`` or ``Enum`` column (a ``Categorical``'s categories are its distinct
values, sorted), or named by ``categorical_features=`` (indices, or
names of a DataFrame's columns / ``feature_names``). Its values are category codes:
DataFrame categories become their codes (``0 .. n_categories - 1``, missing -> NaN) and
their labels are kept (``frame_categories``) so that prediction re-codes a DataFrame
whose categories are ordered differently; an array column holds the codes itself.

``check_codes`` checks training codes (``DataError`` naming the column): integers,
``>= 0``, and below ``max_bin - 1`` (``MAX_CATEGORIES`` for the default ``max_bin=256``),
since code ``c`` is bin ``c`` and the last bin holds missing values.

>>> import numpy as np
>>> X = np.array([[0.0, 1.5], [2.0, 0.5]], np.float32)
>>> resolve_categorical([0], X, 2, None, {})
(0,)
>>> check_codes(np.array([[0.5, 1.0]], np.float32), (0,), 256, None)  # doctest: +ELLIPSIS
Traceback (most recent call last):
  ...
jaxboost.errors.DataError: categorical feature 0 ('f0') must hold category codes ...
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import DataError
from .frames import frame_kind, is_category_dtype, polars_labels
from .numbers import is_int

MAX_CATEGORIES = 255
"""Most categories per feature: codes ``0 .. 254`` at ``max_bin >= 256`` (a split's
category set holds 256 bits, ``engine.categorical.N_WORDS``), ``max_bin - 1`` categories,
codes ``0 .. max_bin - 2``, below."""


def _label(v):
    """A category label as the model keeps it: a str, int or float."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    return str(v)


def frame_categories(X) -> dict:
    """``{column index: [labels]}`` of a DataFrame's categorical columns (code ``c``
    stands for ``labels[c]``); ``{}`` for anything else."""
    kind = frame_kind(X)
    if kind is None:
        return {}
    out = {}
    if kind == "pandas":
        for i, (c, dt) in enumerate(X.dtypes.items()):
            if is_category_dtype(kind, dt):
                out[i] = _finite_labels([_label(v) for v in dt.categories.tolist()], i, c)
    else:
        for i, (c, dt) in enumerate(zip(X.columns, X.dtypes)):
            if is_category_dtype(kind, dt):
                out[i] = _finite_labels([_label(v) for v in polars_labels(X[c])], i, c)
    return out


def _finite_labels(labels: list, i: int, name) -> list:
    """``labels``, refused (``DataError``) when one is an infinite or NaN float: a model
    keeps its category labels in its JSON file, which has no such numbers."""
    for v in labels:
        if isinstance(v, float) and not math.isfinite(v):
            raise DataError(
                f"X column {i} ({name!r}) is categorical with the category label {v!r}; "
                f"labels must be strings or finite numbers (a model file keeps them as "
                f"JSON). Rename that category, e.g. with "
                f"X[{name!r}].cat.rename_categories({{{v!r}: 'inf'}})"
            )
    return labels


def recode(Xf: np.ndarray, frame_labels: dict, model_labels: dict) -> np.ndarray:
    """``Xf`` with the codes of DataFrame categorical columns translated to the
    model's: a category's code is its position among the labels the model was trained
    with; a label the model never saw becomes NaN (it goes the default way)."""
    for f, labels in frame_labels.items():
        want = model_labels.get(f)
        if want is None or list(labels) == list(want):
            continue
        pos = {lab: k for k, lab in enumerate(want)}
        table = np.array([pos.get(lab, np.nan) for lab in labels] + [np.nan], np.float32)
        col = Xf[:, f]
        idx = np.where(np.isnan(col), len(labels), col).astype(np.int64)
        Xf[:, f] = table[idx]
    return Xf


def resolve_categorical(given, X, n_features: int, names, frame_labels: dict) -> tuple:
    """The sorted indices of the categorical features: the DataFrame's categorical
    columns and those ``given`` (``categorical_features``: indices, or names of
    ``names``, the feature names). ``TypeError`` for a wrong kind of value,
    ``DataError`` for an index or name that is not a column."""
    out = set(frame_labels)
    if given is None:
        return tuple(sorted(out))
    if isinstance(given, (str, bytes)) or not hasattr(given, "__iter__"):
        raise TypeError(
            f"categorical_features must be a list of column indices or names, "
            f"got {type(given).__name__} {given!r}"
        )
    given = list(given)
    if given and all(isinstance(v, (bool, np.bool_)) for v in given):
        raise TypeError(
            "categorical_features must be a list of column indices or names, "
            "not a boolean mask; e.g. categorical_features=[0, 3]"
        )
    for v in given:
        if isinstance(v, str):
            if names is None:
                raise DataError(
                    f"categorical_features names the column {v!r}, but X has "
                    f"no column names (pass a DataFrame, feature_names=, or "
                    f"column indices)"
                )
            if v not in names:
                raise DataError(
                    f"categorical_features names the column {v!r}, which X "
                    f"does not have; its columns are {list(names)[:10]}"
                )
            i = list(names).index(v)
        elif is_int(v):
            i = int(v)
            if not 0 <= i < n_features:
                raise DataError(
                    f"categorical_features holds the index {i}, but X has "
                    f"{n_features} feature(s) (indices 0 to {n_features - 1})"
                )
        else:
            raise TypeError(
                f"categorical_features must hold column indices (int) or names "
                f"(str), got {type(v).__name__} {v!r}"
            )
        if i in out and i not in frame_labels:
            raise DataError(f"categorical_features names column {i} twice")
        out.add(i)
    return tuple(sorted(out))


def column_name(f: int, names) -> str:
    return repr(names[f]) if names is not None else repr(f"f{f}")


def check_codes(Xf, categorical: tuple, max_bin: int, names) -> None:
    """``DataError`` unless every present value of the categorical columns of ``Xf`` (an
    array, or a ``_sparse.ColumnView`` of a sparse matrix) is an integer code in
    ``[0, min(max_bin, 256) - 2]`` (the message names the column)."""
    limit = min(max_bin - 1, MAX_CATEGORIES)
    for f in categorical:
        col = Xf[:, f]
        present = ~np.isnan(col)
        bad = present & ((col < 0) | (col != np.floor(col)))
        what = f"categorical feature {f} ({column_name(f, names)})"
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"{what} must hold category codes (integers >= 0, NaN for "
                f"missing); row {i} holds {float(col[i]):g}"
            )
        if present.any():
            top = float(col[present].max())
            if top >= limit:
                raise DataError(
                    f"{what} has a category code {top:g}, but at most {limit} categories "
                    f"(codes 0 to {limit - 1}, max_bin - 1 with max_bin={max_bin}, and at "
                    f"most {MAX_CATEGORIES}) fit in the bins; merge rare categories, drop "
                    f"unused ones (pandas: .cat.remove_unused_categories())"
                    + (" or raise max_bin (256 holds the most)" if limit < MAX_CATEGORIES else "")
                )


def check_predict_codes(Xf, categorical, names) -> None:
    """``DataError`` for a negative or fractional value in a categorical column of data
    to predict, ``Xf`` (an array, or a ``_sparse.ColumnView`` of a sparse matrix); a code
    the model never saw is fine: it goes the default way."""
    for f in categorical:
        col = Xf[:, f]
        with np.errstate(invalid="ignore"):
            bad = (col < 0) | (col != np.floor(col))
        bad &= ~np.isnan(col)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"categorical feature {f} ({column_name(f, names)}) must hold "
                f"category codes (integers >= 0, NaN for missing); row {i} "
                f"holds {float(col[i]):g}"
            )
