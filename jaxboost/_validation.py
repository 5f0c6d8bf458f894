"""Input checks at the public boundary: say what was wrong and what was expected."""

from __future__ import annotations

import numpy as np

from .errors import DataError


def _describe_bad(mask):
    idx = np.flatnonzero(mask)
    return f"{idx.size} value(s), the first at index {int(idx[0])}"


def as_features(X, *, name="X", allow_inf=False) -> np.ndarray:
    """``X`` as a C-contiguous ``(N, F)`` float32 array, NaN = missing."""
    if X is None:
        raise DataError(f"{name} is None; expected a 2-D array of shape (n_rows, n_features)")
    try:
        arr = np.asarray(X)
    except Exception as e:  # ragged lists and the like
        raise DataError(f"{name} could not be read as a 2-D numeric array: {e}") from e
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise DataError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise DataError(f"{name} must be 2-D (n_rows, n_features), got shape {arr.shape}"
                        + ("; use X.reshape(-1, 1) for a single feature" if arr.ndim == 1 else ""))
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise DataError(f"{name} is empty: shape {arr.shape}; expected at least one row "
                        f"and one feature")
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.ascontiguousarray(arr, dtype=np.float32)
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
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise DataError(f"y must be 1-D with one label per row, got shape {arr.shape}")
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise DataError(f"y must be numeric, got dtype {arr.dtype}")
    if arr.shape[0] != n_rows:
        raise DataError(f"X and y have different lengths: X has {n_rows} rows, y has "
                        f"{arr.shape[0]} labels")
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.ascontiguousarray(arr, dtype=np.float32)
    bad = ~np.isfinite(out)
    if bad.any():
        raise DataError(f"y has NaN or infinite labels: {_describe_bad(bad)}; labels must "
                        f"be finite (drop those rows, or give them sample_weight 0 after "
                        f"filling them)")
    return out


def as_weights(w, n_rows: int):
    """``sample_weight`` as ``(N,)`` float32, finite, non-negative, not all zero."""
    if w is None:
        return None
    arr = np.asarray(w)
    if arr.ndim != 1 or arr.shape[0] != n_rows:
        raise DataError(f"sample_weight must be 1-D with one weight per row ({n_rows}), got "
                        f"shape {arr.shape}")
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise DataError(f"sample_weight must be numeric, got dtype {arr.dtype}")
    out = np.ascontiguousarray(arr, dtype=np.float32)
    bad = ~np.isfinite(out)
    if bad.any():
        raise DataError(f"sample_weight has NaN or infinite values: {_describe_bad(bad)}")
    neg = out < 0
    if neg.any():
        raise DataError(f"sample_weight must be >= 0, got negative weights: "
                        f"{_describe_bad(neg)} (value {float(out[neg][0])})")
    if not (out > 0).any():
        raise DataError("sample_weight is zero for every row; at least one row needs a "
                        "positive weight")
    return out
