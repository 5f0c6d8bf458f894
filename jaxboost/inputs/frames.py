"""DataFrames at the public boundary: pandas and polars frames read as arrays.

Which library a frame comes from (``frame_kind``: only libraries the caller imported are
consulted), its column names as feature names (``column_label``,
``frame_feature_names``) and their check against a model's (``check_feature_names``,
``check_names_list``), categorical columns as codes (``column_codes``,
``polars_labels``), and a frame's or a Series' values as float32 (``_frame_array``,
``_series_array``), raising ``DataError``.
"""

from __future__ import annotations

import re
import sys

import numpy as np

from ..errors import DataError

_SHOW_NAMES = 10  # names listed in a message before "... and n more"


def _names(names) -> str:
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:_SHOW_NAMES])
    more = len(names) - _SHOW_NAMES
    return f"[{shown}{f', ... and {more} more' if more > 0 else ''}]"


def frame_kind(X):
    """``"pandas"`` or ``"polars"`` when ``X`` is such a DataFrame, else None.

    Only libraries the caller has already imported are consulted, so passing arrays
    never imports pandas or polars.
    """
    for kind in ("pandas", "polars"):
        mod = sys.modules.get(kind)
        if mod is not None and isinstance(X, getattr(mod, "DataFrame", ())):
            return kind
    return None


def column_label(c) -> str:
    """A DataFrame column name as a feature name: strings as they are, a MultiIndex
    column's parts joined with ``_``, anything else (integers, floats, timestamps)
    through ``str``.

    >>> column_label("age"), column_label(3), column_label(("price", "mean"))
    ('age', '3', 'price_mean')
    """
    if isinstance(c, str):
        return c
    if isinstance(c, tuple):
        return "_".join(column_label(p) for p in c)
    return str(c)


def _default_columns(X) -> bool:
    """Whether a pandas DataFrame has the columns pandas gives an array without names
    (``RangeIndex(0, F)``)."""
    pd = sys.modules.get("pandas")
    cols = getattr(X, "columns", None)
    return pd is not None and isinstance(cols, pd.RangeIndex) and cols.start == 0 and cols.step == 1


def frame_feature_names(X):
    """The column names of a DataFrame as strings (``column_label``), else None.
    Repeated names (``"a"`` twice, or ``1`` and ``"1"``) are returned as they are: the
    callers refuse them (``check_names_list``, ``check_feature_names``).

    Names that are not strings were dropped before, so a frame of integer columns in
    another order was predicted without a check (issue 28, item 9)."""
    if frame_kind(X) is None:
        return None
    return [column_label(c) for c in X.columns] or None


def is_category_dtype(kind, dtype) -> bool:
    """Whether a DataFrame column dtype is categorical (pandas ``category``; polars
    ``Categorical`` or ``Enum``)."""
    if kind == "pandas":
        return isinstance(dtype, sys.modules["pandas"].CategoricalDtype)
    pl = sys.modules["polars"]
    return isinstance(dtype, (pl.Categorical, pl.Enum)) or dtype in (pl.Categorical, pl.Enum)


def column_codes(X, i, kind) -> np.ndarray:
    """Column ``i`` of a DataFrame, a categorical one, as float32 category codes (NaN for
    missing); see ``jaxboost.inputs.categorical``."""
    if kind == "pandas":
        codes = X.iloc[:, i].cat.codes.to_numpy().astype(np.float32)
        codes[codes < 0] = np.nan
        return codes
    pl = sys.modules["polars"]
    col = X[X.columns[i]]
    if isinstance(col.dtype, pl.Enum):  # codes index the Enum's fixed categories
        s = col.to_physical().cast(pl.Float32)
    else:  # Categorical: codes index its present values in sorted order
        labels = polars_labels(col)
        s = col.cast(pl.String).replace_strict(
            labels, list(range(len(labels))), default=None, return_dtype=pl.Float32
        )
    return s.fill_null(float("nan")).to_numpy().astype(np.float32)


def polars_labels(col) -> list:
    """The category labels of a polars categorical Series: an ``Enum``'s categories; a
    ``Categorical``'s distinct present values, sorted (its physical codes depend on a
    process-wide string pool, so they are not used)."""
    pl = sys.modules["polars"]
    if isinstance(col.dtype, pl.Enum):
        return col.dtype.categories.to_list()
    return sorted(col.drop_nulls().unique().cast(pl.String).to_list())


def _frame_array(X, kind, name) -> np.ndarray:
    """A DataFrame's values as float32, after checking every column is numeric or
    categorical (categorical columns give their category codes)."""
    if kind == "pandas":
        from pandas.api.types import is_bool_dtype, is_numeric_dtype

        bad = [
            c
            for c, dt in X.dtypes.items()
            if not (is_numeric_dtype(dt) or is_bool_dtype(dt) or is_category_dtype(kind, dt))
            or getattr(dt, "kind", "") == "c"
        ]
        dtypes = dict(X.dtypes.items())
    else:  # polars
        bad = [
            c
            for c, dt in zip(X.columns, X.dtypes)
            if not (dt.is_numeric() or str(dt) == "Boolean" or is_category_dtype(kind, dt))
        ]
        dtypes = dict(zip(X.columns, X.dtypes))
    cats = [i for i, dt in enumerate(dtypes.values()) if is_category_dtype(kind, dt)]
    if bad:
        kinds = ", ".join(f"{c!r} ({dtypes[c]})" for c in bad[:_SHOW_NAMES])
        more = f", ... and {len(bad) - _SHOW_NAMES} more" if len(bad) > _SHOW_NAMES else ""
        times = [c for c in bad if re.match(r"(?i)date|time|duration", str(dtypes[c]))]
        advice = (
            f"dates and durations as numbers: e.g. {times[0]!r} as seconds "
            f"(pandas: X[{times[0]!r}].astype('int64') // 10**9 for datetime64[ns]) or "
            f"as parts (.dt.year, .dt.month, .dt.dayofweek); "
            if times
            else ""
        )
        raise DataError(
            f"{name} has {len(bad)} non-numeric column(s): {kinds}{more}; "
            f"expected real numeric, bool or categorical columns ({advice}convert "
            f"strings to a categorical dtype, e.g. pandas' .astype('category'), "
            f"or encode them as numbers; complex columns lose their "
            f"imaginary part)"
        )
    if cats:  # column by column: category codes, numbers as float32
        cols = []
        for i, c in enumerate(X.columns):
            if i in cats:
                cols.append(column_codes(X, i, kind))
            else:
                part = X.iloc[:, [i]] if kind == "pandas" else X.select(c)
                cols.append(_frame_array(part, kind, name)[:, 0])
        return np.stack(cols, axis=1) if cols else np.zeros((len(X), 0), np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        if kind == "pandas":
            # na_value turns pandas' nullable NA into NaN (= missing).
            return X.to_numpy(dtype=np.float32, na_value=np.nan)
        return X.to_numpy().astype(np.float32)


def check_feature_names(expected, X, *, name="X") -> None:
    """Raise ``DataError`` unless DataFrame ``X`` has exactly the columns ``expected``.

    ``expected`` None (a model without names), an ``X`` that is not a DataFrame, or a
    frame with pandas' default columns ``0 .. F - 1`` (``pd.DataFrame(array)``) when
    the model's names are others accepts anything: such input is read by position.
    Columns are never reordered silently: the same names in another order are an
    error too (integer names included: they are names, ``column_label``).
    """
    if expected is None:
        return
    got = frame_feature_names(X)
    if got is None:
        return
    if got != list(expected) and _default_columns(X):
        return  # pd.DataFrame(array): no names given, read by position
    expected = list(expected)
    if len(set(got)) != len(got):
        dup = sorted({c for c in got if got.count(c) > 1})
        raise DataError(
            f"{name} has duplicate column(s) {_names(dup)}; expected the "
            f"model's features {_names(expected)}"
        )
    want, have = set(expected), set(got)
    missing = [c for c in expected if c not in have]
    extra = [c for c in got if c not in want]
    if missing or extra:
        parts = []
        if missing:
            parts.append(
                f"missing {len(missing)} column(s) the model was trained with: {_names(missing)}"
            )
        if extra:
            parts.append(f"{len(extra)} column(s) the model does not know: {_names(extra)}")
        raise DataError(
            f"{name}'s columns do not match the model's features: "
            f"{'; '.join(parts)}. Expected the columns {_names(expected)}"
        )
    if got != expected:
        i = next(i for i, (a, b) in enumerate(zip(got, expected)) if a != b)
        raise DataError(
            f"{name} has the model's columns in a different order (position "
            f"{i} is {got[i]!r}, expected {expected[i]!r}); expected the order "
            f"{_names(expected)}. Select them in that order, e.g. "
            f"X[booster.feature_names]"
        )


def check_names_list(names, n_features: int) -> list:
    """``feature_names`` as a list of ``n_features`` unique strings."""
    if isinstance(names, str) or not hasattr(names, "__iter__"):
        raise TypeError(f"feature_names must be a list of strings, got {type(names).__name__}")
    names = list(names)
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise TypeError(f"feature_names must be strings, got {bad[0]!r} ({type(bad[0]).__name__})")
    if len(names) != n_features:
        raise DataError(f"feature_names has {len(names)} name(s) but X has {n_features} feature(s)")
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise DataError(f"feature_names must be unique; repeated: {_names(dup)}")
    return names


def _series_array(v):
    """A pandas/polars Series (or one-column DataFrame) as a NumPy array; else ``v``."""
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(v, (pd.Series, pd.DataFrame)):
        from pandas.api.types import is_bool_dtype, is_numeric_dtype

        dtypes = [v.dtype] if isinstance(v, pd.Series) else list(v.dtypes)
        if all(
            (is_numeric_dtype(d) or is_bool_dtype(d)) and getattr(d, "kind", "") != "c"
            for d in dtypes
        ):
            with np.errstate(over="ignore", invalid="ignore"):
                return v.to_numpy(dtype=np.float32, na_value=np.nan)
        return v.to_numpy()
    pl = sys.modules.get("polars")
    if pl is not None and isinstance(v, (pl.Series, pl.DataFrame)):
        return v.to_numpy()
    return v
