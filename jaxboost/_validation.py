"""Input checks at the public boundary: say what was wrong and what was expected.

Two kinds, each written once for the whole package:

* scalars (hyperparameters, counts, seeds): ``is_int`` / ``is_real`` (Python or NumPy
  numbers, never a bool), and ``check_int`` / ``check_real``, which raise ``TypeError``
  for a value of the wrong type and ``ValueError`` for one out of range or not finite,
  with messages of one shape: ``"max_depth must be >= 1, got 0"``;
* arrays (``X``, ``y``, weights, feature names): ``as_features``, ``as_labels``,
  ``as_weights``, ``check_feature_names``, raising ``DataError``.

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
import sys
import warnings

import numpy as np

from ._sparse import as_sparse_features, is_sparse
from .errors import DataError, DataWarning

_SHOW_NAMES = 10  # names listed in a message before "... and n more"


# --- scalars ---------------------------------------------------------------------------
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


def check_real(name: str, value, *, low=None, low_open=False, high=None,
               what="a number") -> float:
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


# --- arrays ----------------------------------------------------------------------------


def _describe_bad(mask):
    idx = np.flatnonzero(mask)
    return f"{idx.size} value(s), the first at index {int(idx[0])}"


def _float32_finite(arr, name: str, problem: str, advice: str = "", *,
                    nan_only: bool = False) -> np.ndarray:
    """``arr`` as float32; ``DataError`` "``name`` has ``problem``: <count and first
    row>``advice``" when an entry is NaN (or, unless ``nan_only``, infinite). For 2-D
    arrays the rows with such an entry are counted."""
    out = _float32(arr)
    bad = np.isnan(out) if nan_only else ~np.isfinite(out)
    if bad.any():
        rows = bad.reshape(bad.shape[0], -1).any(1) if bad.ndim > 1 else bad
        raise DataError(f"{name} has {problem}: {_describe_bad(rows)}{advice}")
    return out


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
    return (pd is not None and isinstance(cols, pd.RangeIndex) and cols.start == 0
            and cols.step == 1)


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
    missing); see ``jaxboost._categorical``."""
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
        s = col.cast(pl.String).replace_strict(labels, list(range(len(labels))),
                                               default=None, return_dtype=pl.Float32)
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

        bad = [c for c, dt in X.dtypes.items()
               if not (is_numeric_dtype(dt) or is_bool_dtype(dt)
                       or is_category_dtype(kind, dt))
               or getattr(dt, "kind", "") == "c"]
        dtypes = dict(X.dtypes.items())
    else:  # polars
        bad = [c for c, dt in zip(X.columns, X.dtypes)
               if not (dt.is_numeric() or str(dt) == "Boolean"
                       or is_category_dtype(kind, dt))]
        dtypes = dict(zip(X.columns, X.dtypes))
    cats = [i for i, dt in enumerate(dtypes.values()) if is_category_dtype(kind, dt)]
    if bad:
        kinds = ", ".join(f"{c!r} ({dtypes[c]})" for c in bad[:_SHOW_NAMES])
        more = f", ... and {len(bad) - _SHOW_NAMES} more" if len(bad) > _SHOW_NAMES else ""
        raise DataError(f"{name} has {len(bad)} non-numeric column(s): {kinds}{more}; "
                        f"expected real numeric, bool or categorical columns (convert "
                        f"strings to a categorical dtype, e.g. pandas' .astype('category'), "
                        f"or encode them as numbers; complex columns lose their "
                        f"imaginary part)")
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
        raise DataError(f"{name} has duplicate column(s) {_names(dup)}; expected the "
                        f"model's features {_names(expected)}")
    want, have = set(expected), set(got)
    missing = [c for c in expected if c not in have]
    extra = [c for c in got if c not in want]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {len(missing)} column(s) the model was trained with: "
                         f"{_names(missing)}")
        if extra:
            parts.append(f"{len(extra)} column(s) the model does not know: {_names(extra)}")
        raise DataError(f"{name}'s columns do not match the model's features: "
                        f"{'; '.join(parts)}. Expected the columns {_names(expected)}")
    if got != expected:
        i = next(i for i, (a, b) in enumerate(zip(got, expected)) if a != b)
        raise DataError(f"{name} has the model's columns in a different order (position "
                        f"{i} is {got[i]!r}, expected {expected[i]!r}); expected the order "
                        f"{_names(expected)}. Select them in that order, e.g. "
                        f"X[booster.feature_names]")


def check_names_list(names, n_features: int) -> list:
    """``feature_names`` as a list of ``n_features`` unique strings."""
    if isinstance(names, str) or not hasattr(names, "__iter__"):
        raise TypeError(f"feature_names must be a list of strings, got "
                        f"{type(names).__name__}")
    names = list(names)
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise TypeError(f"feature_names must be strings, got {bad[0]!r} "
                        f"({type(bad[0]).__name__})")
    if len(names) != n_features:
        raise DataError(f"feature_names has {len(names)} name(s) but X has {n_features} "
                        f"feature(s)")
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
        if all((is_numeric_dtype(d) or is_bool_dtype(d)) and getattr(d, "kind", "") != "c"
               for d in dtypes):
            with np.errstate(over="ignore", invalid="ignore"):
                return v.to_numpy(dtype=np.float32, na_value=np.nan)
        return v.to_numpy()
    pl = sys.modules.get("polars")
    if pl is not None and isinstance(v, (pl.Series, pl.DataFrame)):
        return v.to_numpy()
    return v


def _check_numeric(arr: np.ndarray, name: str) -> None:
    """``DataError`` unless ``arr`` holds real numbers or bools (complex numbers would
    lose their imaginary part)."""
    _check_not_complex(arr.dtype, name)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise DataError(f"{name} must be numeric, got dtype {arr.dtype}")


def _check_not_complex(dtype, name: str) -> None:
    if np.dtype(dtype).kind == "c":
        raise DataError(f"{name} must hold real numbers, got complex dtype {dtype}: its "
                        f"imaginary part would be dropped; pass the real part (e.g. "
                        f"{name}.real) or split it into two real columns")


def _float32(arr: np.ndarray) -> np.ndarray:
    """``arr`` as C-contiguous float32; values beyond float32 range become +-inf
    (reported by the caller's finiteness check, not as a NumPy warning)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.ascontiguousarray(arr, dtype=np.float32)


PRECISION_SAMPLE = 10_000
"""Rows sampled by ``_warn_float32_collapse`` (the check costs a sort of each column's
sample, not of the whole column)."""


def _warn_float32_collapse(arr, name):
    """Warn (``DataWarning``) when some column of 64-bit ``arr`` has distinct values that
    float32 merges (e.g. ``2**40 + i``: float32 keeps 24 bits), looked
    for in a sample of ``PRECISION_SAMPLE`` rows: trees would treat them as one value."""
    n = arr.shape[0]
    rows = slice(None) if n <= PRECISION_SAMPLE else np.linspace(
        0, n - 1, PRECISION_SAMPLE).astype(np.int64)
    a = arr[rows]
    for j in range(arr.shape[1]):
        col = a[:, j]
        col = col[~np.isnan(col)] if col.dtype.kind == "f" else col
        if col.size < 2:
            continue
        u = np.unique(col)
        u32 = u.astype(np.float32)
        same = np.flatnonzero(u32[1:] == u32[:-1])
        if same.size:
            i = int(same[0])
            warnings.warn(
                f"{name} column {j}: distinct values {u[i].item()!r} and {u[i + 1].item()!r} "
                f"both become "
                f"{float(u32[i])!r} in float32, which jaxboost bins in (as XGBoost does); "
                f"{np.count_nonzero(u32[1:] == u32[:-1])} of the column's sampled values "
                f"merge so. Subtract the column's minimum (or another offset) or rescale it "
                f"before training to keep them apart", DataWarning, stacklevel=4)
            return


def as_features(X, *, name="X", allow_inf=False, sparse=None,
                warn_precision=False) -> np.ndarray:
    """``X`` as a C-contiguous ``(N, F)`` float32 array, NaN = missing.

    pandas and polars DataFrames are accepted when every column is numeric or bool
    (nullable values become NaN); their column names are read by
    ``frame_feature_names``, not here. A ``scipy.sparse`` ``X`` (absent entries are
    missing, see ``jaxboost._sparse``) is returned as a checked canonical float32
    matrix in the layout ``sparse`` names (``"csc"`` or ``"csr"``); without
    ``sparse`` it is refused (``DataError``). ``warn_precision`` (training): a
    ``DataWarning`` when 64-bit values that differ become equal in float32
    (``_warn_float32_collapse``).
    """
    if X is None:
        raise DataError(f"{name} is None; expected a 2-D array of shape (n_rows, n_features)")
    if is_sparse(X):
        if sparse is None:
            raise DataError(f"{name} is a scipy.sparse matrix, which this function does "
                            f"not take; pass a dense array (NaN = missing)")
        return as_sparse_features(X, name=name, allow_inf=allow_inf, layout=sparse)
    pl = sys.modules.get("polars")
    if pl is not None and isinstance(X, getattr(pl, "LazyFrame", ())):
        raise DataError(f"{name} is a polars LazyFrame, a query not yet run; pass "
                        f"{name}.collect() (a DataFrame)")
    kind = frame_kind(X)
    if kind is not None:
        X = _frame_array(X, kind, name)
    try:
        arr = np.asarray(X)
    except Exception as e:  # ragged lists and the like
        raise DataError(f"{name} could not be read as a 2-D numeric array: {e}") from e
    _check_numeric(arr, name)
    if arr.ndim != 2:
        raise DataError(f"{name} must be 2-D (n_rows, n_features), got shape {arr.shape}"
                        + ("; use X.reshape(-1, 1) for a single feature" if arr.ndim == 1 else ""))
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise DataError(f"{name} is empty: shape {arr.shape}; expected at least one row "
                        f"and one feature")
    out = _float32(arr)
    if warn_precision and arr.dtype.itemsize > 4 and arr.dtype.kind in "fiu":
        _warn_float32_collapse(arr, name)
    if not allow_inf:
        inf = np.isinf(out)
        if inf.any():
            rows = np.flatnonzero(inf.any(axis=1))
            raise DataError(
                f"{name} has {int(inf.sum())} infinite value(s) (or values beyond float32 "
                f"range), the first in row {int(rows[0])}; expected finite values, with NaN "
                f"for missing")
    return out


def as_labels(y, n_rows: int) -> np.ndarray:
    """``y`` as ``(N,)`` float32, finite."""
    if y is None:
        raise DataError("y is None; expected one label per row of X")
    arr = np.asarray(_series_array(y))
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise DataError(f"y must be 1-D with one label per row, got shape {arr.shape}")
    _check_numeric(arr, "y")
    if arr.shape[0] != n_rows:
        raise DataError(f"X and y have different lengths: X has {n_rows} rows, y has "
                        f"{arr.shape[0]} labels")
    return _float32_finite(arr, "y", "NaN or infinite labels",
                           "; labels must be finite (drop those rows, or give them "
                           "sample_weight 0 after filling them)")


def as_weights(w, n_rows: int):
    """``sample_weight`` as ``(N,)`` float32, finite, non-negative, not all zero."""
    if w is None:
        return None
    arr = np.asarray(_series_array(w))
    if arr.ndim != 1 or arr.shape[0] != n_rows:
        raise DataError(f"sample_weight must be 1-D with one weight per row ({n_rows}), got "
                        f"shape {arr.shape}")
    _check_numeric(arr, "sample_weight")
    out = _float32_finite(arr, "sample_weight", "NaN or infinite values")
    neg = out < 0
    if neg.any():
        raise DataError(f"sample_weight must be >= 0, got negative weights: "
                        f"{_describe_bad(neg)} (value {float(out[neg][0])})")
    if not (out > 0).any():
        raise DataError("sample_weight is zero for every row; at least one row needs a "
                        "positive weight")
    top = float(out.max())
    if top < TINY_WEIGHT:
        warnings.warn(
            f"sample_weight's largest value is {top:g}: the weighted Hessians (h x w) are "
            f"then below min_child_weight and float32's normal range, so the trees may not "
            f"split at all. XGBoost's rules take weights as absolute amounts "
            f"(min_child_weight, reg_lambda); rescale them, e.g. w / w.max()",
            DataWarning, stacklevel=3)
    return out


TINY_WEIGHT = 1e-20
"""``as_weights`` warns when every sample weight is below this."""


# --- side data: several values per row for a loss, offsets per row ----------------------

LABEL_KEY = "label"
"""The entry of a dict ``y`` that built-in metrics read as the label (see ``targets``)."""


def is_side_data(y) -> bool:
    """Whether validated targets ``y`` (``as_targets``) carry side data: a dict, or an
    ``(N, L)`` array."""
    return isinstance(y, dict) or np.ndim(y) == 2


def _side_array(v, n_rows: int, name: str) -> np.ndarray:
    """One entry of side data: ``(N,)`` or ``(N, d)`` float32, no NaN (+-inf allowed:
    e.g. an open upper bound of a censored interval)."""
    try:
        arr = np.asarray(_series_array(v))
    except Exception as e:
        raise DataError(f"{name} could not be read as a numeric array: {e}") from e
    _check_numeric(arr, name)
    if arr.ndim not in (1, 2) or arr.shape[0] != n_rows:
        raise DataError(f"{name} must hold one value (or one row of values) per row of X, "
                        f"shape ({n_rows},) or ({n_rows}, d); got shape {arr.shape}")
    return _float32_finite(arr, name, "NaN values", " (rows); side data may hold +-inf "
                           "(an open bound) but not NaN", nan_only=True)


def as_targets(y, n_rows: int, *, name: str = "y"):
    """``y`` as the loss receives it, validated: labels, or labels with side data.

    * one value per row: ``(N,)`` float32, finite (``as_labels``; an ``(N, 1)`` array or a
      one-column DataFrame counts as one value per row);
    * an ``(N, L)`` array with ``L >= 2`` columns: ``(N, L)`` float32; the loss gets one
      row, an ``(L,)`` vector (``y[1]``);
    * a dict of ``(N,)`` (or ``(N, d)``) arrays, or a DataFrame of several columns (a
      dict by column name): a dict of float32 arrays; the loss gets a dict of one row's
      values (``y["exposure"]``). The entry ``"label"`` (``LABEL_KEY``), when present, is
      what built-in metrics score, and must be finite.

    Side data may hold ``+-inf`` (an open interval bound) but not NaN.

    Raises ``DataError`` for a wrong shape, non-numeric or NaN values; ``TypeError`` for
    dict keys that are not strings.

    Example:
      >>> import numpy as np
      >>> as_targets(np.ones((3, 2)), 3).shape
      (3, 2)
      >>> sorted(as_targets({"count": [1, 0, 2], "exposure": [1.0, 0.5, 2.0]}, 3))
      ['count', 'exposure']
    """
    kind = frame_kind(y)
    if kind is not None and len(y.columns) > 1:
        cols = list(y.columns)
        if not all(isinstance(c, str) for c in cols) or len(set(cols)) != len(cols):
            raise DataError(f"{name} is a DataFrame of {len(cols)} columns: its columns "
                            f"become the entries of a dict, so they need unique string "
                            f"names; got {cols[:_SHOW_NAMES]}")
        y = {c: y[c] for c in cols}
    if isinstance(y, dict):
        if not y:
            raise DataError(f"{name} is an empty dict; expected arrays with one value per "
                            f"row, e.g. {{'label': counts, 'exposure': years}}")
        out = {}
        for k, v in y.items():
            if not isinstance(k, str):
                raise TypeError(f"the keys of a dict {name} must be strings, got {k!r}")
            out[k] = _side_array(v, n_rows, f"{name}[{k!r}]")
        label = out.get(LABEL_KEY)
        if label is not None and not np.isfinite(label).all():
            raise DataError(f"{name}[{LABEL_KEY!r}] has infinite values: "
                            f"{_describe_bad(~np.isfinite(label).reshape(n_rows, -1).any(1))}"
                            f" (rows); the label that metrics score must be finite")
        return out
    if y is not None and not isinstance(y, (str, bytes)):
        try:
            arr = np.asarray(_series_array(y))
        except Exception:
            arr = None
        if arr is not None and arr.ndim == 2 and arr.shape[1] >= 2:
            return _side_array(arr, n_rows, name)
    return as_labels(y, n_rows)


def target_structure(y) -> str:
    """A short text of the structure of validated targets ``y``, for messages and for
    checking that evaluation sets match training: ``"(N,)"``, ``"(N, 3)"``,
    ``"{'count': (N,), 'exposure': (N,)}"``."""
    def one(a):
        return "(" + ", ".join(["N"] + [str(d) for d in np.shape(a)[1:]]) + \
            ("," if np.ndim(a) == 1 else "") + ")"
    if isinstance(y, dict):
        return "{" + ", ".join(f"{k!r}: {one(v)}" for k, v in y.items()) + "}"
    return one(y)


def pad_targets(y, n_pad: int):
    """Targets padded to ``n_pad`` rows with copies of row 0 (zeros when empty), entry
    by entry for a dict."""
    def pad(a):
        a = np.asarray(a, np.float32)
        out = np.zeros((n_pad,) + a.shape[1:], np.float32)
        n = a.shape[0]
        out[:n] = a
        if n:
            out[n:] = a[0]
        return out
    return {k: pad(v) for k, v in y.items()} if isinstance(y, dict) else pad(y)


def as_offsets(base_margin, n_rows: int, n_outputs: int, *, name: str = "base_margin",
               hint: str = ""):
    """Per-row base margins (offsets): ``(N,)`` float32 for one output (an ``(N, 1)``
    array too), ``(N, K)`` for ``K`` outputs, finite. ``DataError`` otherwise (the
    message ends with ``hint``).

    Example:
      >>> as_offsets([0.0, 0.5], 2, 1).tolist()
      [0.0, 0.5]
    """
    K = n_outputs
    want = f"({n_rows},)" if K == 1 else f"({n_rows}, {K})"
    try:
        arr = np.asarray(_series_array(base_margin))
    except Exception as e:
        raise DataError(f"{name} could not be read as a numeric array: {e}") from e
    _check_numeric(arr, name)
    if K == 1 and arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != (1 if K == 1 else 2) or arr.shape[0] != n_rows or \
            (K > 1 and arr.shape[1] != K):
        what = (f"{arr.shape[1]} columns, but the model has {K} outputs"
                if K > 1 and arr.ndim == 2 and arr.shape[0] == n_rows else
                f"{arr.shape[0] if arr.ndim else 'no'} rows, X has {n_rows}"
                if arr.ndim == (1 if K == 1 else 2) else f"shape {arr.shape}")
        raise DataError(f"{name} per row must have shape {want} (one margin per row and "
                        f"output); got {what}{hint}")
    return _float32_finite(arr, name, "NaN or infinite values",
                           " (rows); offsets must be finite")
