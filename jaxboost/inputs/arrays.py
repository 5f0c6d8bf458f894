"""Arrays at the public boundary: say what was wrong and what was expected.

``X``, ``y``, weights, side data and offsets: ``as_features``, ``as_labels``,
``as_weights``, ``as_targets``, ``as_offsets``, raising ``DataError``. Numbers are
checked by ``inputs.numbers``, DataFrames read by ``inputs.frames``, ``scipy.sparse``
matrices by ``inputs.sparse``.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from ..errors import DataError, DataWarning
from .frames import _SHOW_NAMES, _frame_array, _series_array, frame_kind
from .sparse import as_sparse_features, is_sparse


def _describe_bad(mask):
    idx = np.flatnonzero(mask)
    return f"{idx.size} value(s), the first at index {int(idx[0])}"


def _float32_finite(
    arr, name: str, problem: str, advice: str = "", *, nan_only: bool = False
) -> np.ndarray:
    """``arr`` as float32; ``DataError`` "``name`` has ``problem``: <count and first
    row>``advice``" when an entry is NaN (or, unless ``nan_only``, infinite). For 2-D
    arrays the rows with such an entry are counted."""
    out = _float32(arr)
    bad = np.isnan(out) if nan_only else ~np.isfinite(out)
    if bad.any():
        rows = bad.reshape(bad.shape[0], -1).any(1) if bad.ndim > 1 else bad
        raise DataError(f"{name} has {problem}: {_describe_bad(rows)}{advice}")
    return out


def _check_numeric(arr: np.ndarray, name: str) -> None:
    """``DataError`` unless ``arr`` holds real numbers or bools (complex numbers would
    lose their imaginary part)."""
    _check_not_complex(arr.dtype, name)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise DataError(f"{name} must be numeric, got dtype {arr.dtype}")


def _check_not_complex(dtype, name: str) -> None:
    if np.dtype(dtype).kind == "c":
        raise DataError(
            f"{name} must hold real numbers, got complex dtype {dtype}: its "
            f"imaginary part would be dropped; pass the real part (e.g. "
            f"{name}.real) or split it into two real columns"
        )


def _float32(arr: np.ndarray) -> np.ndarray:
    """``arr`` as C-contiguous float32; values beyond float32 range become +-inf
    (reported by the caller's finiteness check, not as a NumPy warning)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.ascontiguousarray(arr, dtype=np.float32)


PRECISION_SAMPLE = 10_000
"""Rows sampled by ``_warn_float32_collapse`` (the check costs a sort of each column's
sample, not of the whole column)."""

MERGE_SHARE = 0.01
"""The share of a column's sampled distinct values that must merge in float32 for
``_warn_float32_collapse`` to warn."""


def _warn_float32_collapse(arr, name):
    """Warn (``DataWarning``) when some column of 64-bit ``arr`` has distinct values that
    float32 merges (e.g. ``2**40 + i``: float32 keeps 24 bits), looked
    for in a sample of ``PRECISION_SAMPLE`` rows: trees would treat them as one value.

    Only a column where more than ``MERGE_SHARE`` of the sampled distinct values merge
    is reported: a few chance neighbours within float32's spacing (thousands of rows of
    random float64 normals have some) change no cut and no split."""
    n = arr.shape[0]
    rows = (
        slice(None)
        if n <= PRECISION_SAMPLE
        else np.linspace(0, n - 1, PRECISION_SAMPLE).astype(np.int64)
    )
    a = np.sort(arr[rows], axis=0)  # NaN last; every column at once
    if a.shape[0] < 2:
        return
    with np.errstate(over="ignore", invalid="ignore"):
        a32 = a.astype(np.float32)
    # adjacent distinct sampled values (in each column's sorted order) that float32 makes
    # equal; pairs with a NaN compare unequal in float32 and are never counted
    distinct = a[1:] != a[:-1]
    merged = distinct & (a32[1:] == a32[:-1])
    n_merged = np.count_nonzero(merged, axis=0)
    n_distinct = np.count_nonzero(distinct, axis=0) + 1
    cols = np.flatnonzero(n_merged > MERGE_SHARE * n_distinct)
    if cols.size:
        j = int(cols[0])
        i = int(np.flatnonzero(merged[:, j])[0])
        warnings.warn(
            f"{name} column {j}: distinct values {a[i, j].item()!r} and {a[i + 1, j].item()!r} "
            f"both become "
            f"{float(a32[i, j])!r} in float32, which jaxboost bins in (as XGBoost does); "
            f"{int(n_merged[j])} of the column's {int(n_distinct[j])} distinct sampled "
            f"values merge so. Subtract the column's minimum (or another offset) or rescale it "
            f"before training to keep them apart",
            DataWarning,
            stacklevel=4,
        )


def as_features(X, *, name="X", allow_inf=False, sparse=None, warn_precision=False) -> np.ndarray:
    """``X`` as a C-contiguous ``(N, F)`` float32 array, NaN = missing.

    pandas and polars DataFrames are accepted when every column is numeric or bool
    (nullable values become NaN); their column names are read by
    ``frame_feature_names``, not here. A ``scipy.sparse`` ``X`` (absent entries are
    missing, see ``jaxboost.inputs.sparse``) is returned as a checked canonical float32
    matrix in the layout ``sparse`` names (``"csc"`` or ``"csr"``); without
    ``sparse`` it is refused (``DataError``). ``warn_precision`` (training): a
    ``DataWarning`` when 64-bit values that differ become equal in float32
    (``_warn_float32_collapse``).
    """
    if X is None:
        raise DataError(f"{name} is None; expected a 2-D array of shape (n_rows, n_features)")
    if is_sparse(X):
        if sparse is None:
            raise DataError(
                f"{name} is a scipy.sparse matrix, which this function does "
                f"not take; pass a dense array (NaN = missing)"
            )
        return as_sparse_features(X, name=name, allow_inf=allow_inf, layout=sparse)
    pl = sys.modules.get("polars")
    if pl is not None and isinstance(X, getattr(pl, "LazyFrame", ())):
        raise DataError(
            f"{name} is a polars LazyFrame, a query not yet run; pass "
            f"{name}.collect() (a DataFrame)"
        )
    kind = frame_kind(X)
    if kind is not None:
        X = _frame_array(X, kind, name)
    try:
        arr = np.asarray(X)
    except Exception as e:  # ragged lists and the like
        raise DataError(f"{name} could not be read as a 2-D numeric array: {e}") from e
    _check_numeric(arr, name)
    if arr.ndim != 2:
        raise DataError(
            f"{name} must be 2-D (n_rows, n_features), got shape {arr.shape}"
            + (
                "; use X.reshape(-1, 1) for a single feature, or X.reshape(1, -1) for a single row"
                if arr.ndim == 1
                else ""
            )
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise DataError(
            f"{name} is empty: shape {arr.shape}; expected at least one row and one feature"
        )
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
                f"for missing"
            )
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
        raise DataError(
            f"X and y have different lengths: X has {n_rows} rows, y has {arr.shape[0]} labels"
        )
    return _float32_finite(
        arr,
        "y",
        "NaN or infinite labels",
        "; labels must be finite (drop those rows, or give them "
        "sample_weight 0 after filling them)",
    )


def as_weights(w, n_rows: int):
    """``sample_weight`` as ``(N,)`` float32, finite, non-negative, not all zero."""
    if w is None:
        return None
    arr = np.asarray(_series_array(w))
    if arr.ndim != 1 or arr.shape[0] != n_rows:
        raise DataError(
            f"sample_weight must be 1-D with one weight per row ({n_rows}), got shape {arr.shape}"
        )
    _check_numeric(arr, "sample_weight")
    out = _float32_finite(arr, "sample_weight", "NaN or infinite values")
    neg = out < 0
    if neg.any():
        raise DataError(
            f"sample_weight must be >= 0, got negative weights: "
            f"{_describe_bad(neg)} (value {float(out[neg][0])})"
        )
    if not (out > 0).any():
        raise DataError(
            "sample_weight is zero for every row; at least one row needs a positive weight"
        )
    top = float(out.max())
    if top < TINY_WEIGHT:
        warnings.warn(
            f"sample_weight's largest value is {top:g}: the weighted Hessians (h x w) are "
            f"then below min_child_weight and float32's normal range, so the trees may not "
            f"split at all. XGBoost's rules take weights as absolute amounts "
            f"(min_child_weight, reg_lambda); rescale them, e.g. w / w.max()",
            DataWarning,
            stacklevel=3,
        )
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
        raise DataError(
            f"{name} must hold one value (or one row of values) per row of X, "
            f"shape ({n_rows},) or ({n_rows}, d); got shape {arr.shape}"
        )
    return _float32_finite(
        arr,
        name,
        "NaN values",
        " (rows); side data may hold +-inf (an open bound) but not NaN",
        nan_only=True,
    )


def frame_targets(y_given, yf):
    """The ``(N, T)`` float32 array of a DataFrame's columns, in their order, when
    ``y_given`` is a DataFrame of several columns (which ``as_targets`` made a dict by
    column name, ``yf``): the targets of a multi-target model. ``yf`` otherwise.

    >>> import pandas as pd
    >>> frame = pd.DataFrame({"b": [1.0, 2.0], "a": [3.0, 4.0]})
    >>> frame_targets(frame, as_targets(frame, 2)).tolist()
    [[1.0, 3.0], [2.0, 4.0]]
    """
    if frame_kind(y_given) is None or not isinstance(yf, dict):
        return yf
    return np.stack([np.asarray(v, np.float32) for v in yf.values()], axis=1)


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
            raise DataError(
                f"{name} is a DataFrame of {len(cols)} columns: its columns "
                f"become the entries of a dict, so they need unique string "
                f"names; got {cols[:_SHOW_NAMES]}"
            )
        y = {c: y[c] for c in cols}
    if isinstance(y, dict):
        if not y:
            raise DataError(
                f"{name} is an empty dict; expected arrays with one value per "
                f"row, e.g. {{'label': counts, 'exposure': years}}"
            )
        out = {}
        for k, v in y.items():
            if not isinstance(k, str):
                raise TypeError(f"the keys of a dict {name} must be strings, got {k!r}")
            out[k] = _side_array(v, n_rows, f"{name}[{k!r}]")
        label = out.get(LABEL_KEY)
        if label is not None and not np.isfinite(label).all():
            raise DataError(
                f"{name}[{LABEL_KEY!r}] has infinite values: "
                f"{_describe_bad(~np.isfinite(label).reshape(n_rows, -1).any(1))}"
                f" (rows); the label that metrics score must be finite"
            )
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
        return (
            "("
            + ", ".join(["N"] + [str(d) for d in np.shape(a)[1:]])
            + ("," if np.ndim(a) == 1 else "")
            + ")"
        )

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


def as_offsets(
    base_margin, n_rows: int, n_outputs: int, *, name: str = "base_margin", hint: str = ""
):
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
    if arr.ndim != (1 if K == 1 else 2) or arr.shape[0] != n_rows or (K > 1 and arr.shape[1] != K):
        what = (
            f"{arr.shape[1]} columns, but the model has {K} outputs"
            if K > 1 and arr.ndim == 2 and arr.shape[0] == n_rows
            else f"{arr.shape[0] if arr.ndim else 'no'} rows, X has {n_rows}"
            if arr.ndim == (1 if K == 1 else 2)
            else f"shape {arr.shape}"
        )
        raise DataError(
            f"{name} per row must have shape {want} (one margin per row and "
            f"output); got {what}{hint}"
        )
    return _float32_finite(arr, name, "NaN or infinite values", " (rows); offsets must be finite")
