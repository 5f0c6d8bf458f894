"""``scipy.sparse`` features: validation, and dense row blocks for prediction.

A sparse ``X`` (a CSR or CSC matrix or array, or any other ``scipy.sparse`` format)
means what it means to XGBoost's ``DMatrix``: an **absent** entry is a **missing**
value, exactly as NaN in a dense array, and goes the way each split's learned default
direction sends missing values; a **stored** entry is a value, explicit zeros included
(a stored NaN is missing too). So a sparse matrix trains the model its dense twin with
NaN in the absent places trains, not the one of ``X.toarray()`` (whose absent entries
are zeros): encode "zero" as a stored 0 when zero is what you mean. (Verified against
XGBoost 3.2: a CSR ``DMatrix`` trains the same model as the NaN-dense array, and a CSR
whose zeros are all stored the same model as the zero-dense array.)

Training never densifies the matrix: the bin edges and the ``uint8`` bins are computed
column by column from a CSC copy (``jaxboost.engine.sparse``), so the largest array is
the binned one, one byte per entry. Prediction, SHAP and staged predictions read the
rows in dense blocks of at most ``BLOCK_VALUES`` entries.

>>> import numpy as np, scipy.sparse as sp
>>> X = sp.csr_matrix(np.array([[0.0, 1.5], [2.0, 0.0]], np.float32))
>>> X.data[0] = 0.0                      # an explicit zero: a value, not missing
>>> dense_rows(as_sparse_features(X, layout="csr"), 0, 2).tolist()
[[nan, 0.0], [2.0, nan]]
"""

from __future__ import annotations

import sys

import numpy as np

from ..errors import DataError

BLOCK_VALUES = 1 << 22
"""Entries (rows x features) of one dense block of a sparse ``X`` at prediction: 16 MB
of float32."""


def is_sparse(X) -> bool:
    """Whether ``X`` is a ``scipy.sparse`` matrix or array (scipy is only consulted when
    the caller has imported it)."""
    sp = sys.modules.get("scipy.sparse")
    return sp is not None and sp.issparse(X)


def _index_array(a, what: str, name: str) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 1 or np.dtype(a.dtype).kind not in "iu":
        raise DataError(
            f"{name}.{what} must be a 1-D integer array, got {a.dtype} of shape {a.shape}"
        )
    return a


def _check_range(idx, bound: int, what: str, name: str) -> None:
    """Every entry of ``idx`` in ``[0, bound)``."""
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= bound):
        bad = int(np.flatnonzero((idx < 0) | (idx >= bound))[0])
        raise DataError(
            f"{name}.{what}[{bad}] = {int(idx[bad])} is out of range: "
            f"expected 0 <= {what} < {bound}"
        )


def check_structure(X, name: str = "X") -> None:
    """Refuse a sparse matrix whose index arrays do not describe its shape
    (``DataError``), before anything reads them: scipy's conversions and the native
    code index memory with them unchecked, so a corrupt ``indices`` or ``indptr`` (a
    crafted ``.npz`` file, an edited matrix) could read or write out of bounds and crash
    the process, or train silently on other cells.

    CSR/CSC: ``indptr`` has ``major + 1`` non-decreasing entries from 0 to ``nnz`` and
    every index lies in ``[0, minor)``; ``indices`` and ``data`` have ``nnz`` entries.
    COO: ``row``/``col`` within the shape and as long as ``data``. BSR: scipy's full
    check. Other formats (LIL, DOK, DIA) hold no raw offsets of this kind. Duplicate
    entries are allowed (they are summed, as ``X.toarray()`` sums them).

    >>> import scipy.sparse as sp
    >>> X = sp.csr_matrix(np.eye(3, dtype=np.float32))
    >>> X.indices[0] = 5
    >>> check_structure(X)
    Traceback (most recent call last):
    ...
    jaxboost.errors.DataError: X.indices[0] = 5 is out of range: expected 0 <= indices < 3
    """
    fmt = getattr(X, "format", None)
    n_rows, n_cols = (int(d) for d in X.shape)
    if fmt in ("csr", "csc"):
        major, minor = (n_rows, n_cols) if fmt == "csr" else (n_cols, n_rows)
        # int64: a difference of int32 offsets may wrap around (-2**31 - 10 > 0)
        indptr = _index_array(X.indptr, "indptr", name).astype(np.int64)
        indices = _index_array(X.indices, "indices", name)
        data = np.asarray(X.data)
        if indptr.shape[0] != major + 1:
            raise DataError(
                f"{name}.indptr has {indptr.shape[0]} entries; a {fmt.upper()} "
                f"matrix of shape {X.shape} needs {major + 1}"
            )
        nnz = int(indptr[-1])
        if int(indptr[0]) != 0 or np.any(np.diff(indptr) < 0):
            raise DataError(
                f"{name}.indptr must start at 0 and never decrease (got "
                f"{int(indptr[0])} first, or a decreasing step)"
            )
        if indices.shape[0] < nnz or data.shape[0] < nnz:
            raise DataError(
                f"{name}.indptr ends at {nnz} but there are "
                f"{indices.shape[0]} indices and {data.shape[0]} values"
            )
        _check_range(indices[:nnz], minor, "indices", name)
    elif fmt == "coo":
        rows, cols = (
            _index_array(getattr(X, a), w, name) for a, w in (("row", "row"), ("col", "col"))
        )
        n = np.asarray(X.data).shape[0]
        if rows.shape[0] != n or cols.shape[0] != n:
            raise DataError(
                f"{name}: a COO matrix needs as many rows and columns as "
                f"values, got {rows.shape[0]}, {cols.shape[0]} and {n}"
            )
        _check_range(rows, n_rows, "row", name)
        _check_range(cols, n_cols, "col", name)
    elif fmt == "bsr":
        try:
            X.check_format(full_check=True)
        except (ValueError, IndexError) as e:
            raise DataError(f"{name} is not a valid BSR matrix: {e}") from None


def as_sparse_features(X, *, name: str = "X", allow_inf: bool = False, layout: str = "csc"):
    """A sparse ``X`` checked and in canonical form: float32 ``layout`` (``"csc"`` or
    ``"csr"``), sorted indices, duplicate entries summed (as ``X.toarray()`` sums
    them). The input is never modified; it is copied only when a conversion is needed.

    Raises ``DataError`` for a matrix that is not 2-D, empty, of complex or non-numeric
    dtype, or (unless ``allow_inf``) with an infinite stored value.
    """
    if X.ndim != 2:
        raise DataError(
            f"{name} must be 2-D (n_rows, n_features), got a sparse array of shape {X.shape}"
        )
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise DataError(
            f"{name} is empty: shape {X.shape}; expected at least one row and one feature"
        )
    kind = np.dtype(X.dtype).kind
    if kind == "c":
        raise DataError(f"{name} must hold real numbers, got complex dtype {X.dtype}")
    if kind not in "biuf":
        raise DataError(f"{name} must be numeric, got a sparse matrix of dtype {X.dtype}")
    check_structure(X, name)
    M = X.tocsc() if layout == "csc" else X.tocsr()
    with np.errstate(over="ignore", invalid="ignore"):
        M = M.astype(np.float32, copy=False)
    if not M.has_canonical_format:
        M = M.copy() if M is X else M
        M.sum_duplicates()
    if not allow_inf:
        inf = np.isinf(M.data)
        if inf.any():
            at = int(np.flatnonzero(inf)[0])
            major = int(np.searchsorted(M.indptr, at, side="right") - 1)
            row = int(M.indices[at]) if layout == "csc" else major
            raise DataError(
                f"{name} has {int(inf.sum())} infinite stored value(s) (or "
                f"values beyond float32 range), the first in row {row}; "
                f"expected finite values (absent entries and NaN are missing)"
            )
    return M


def dense_rows(M, start: int, stop: int) -> np.ndarray:
    """Rows ``start:stop`` of a canonical CSR ``M`` as a dense ``(stop - start, F)``
    float32 array with NaN where an entry is absent."""
    block = M[start:stop]
    out = np.full(block.shape, np.nan, np.float32)
    rows = np.repeat(np.arange(block.shape[0]), np.diff(block.indptr))
    out[rows, block.indices] = block.data
    return out


class ColumnView:
    """Dense columns of a sparse matrix, one at a time: ``view[:, f]`` is column ``f``
    as a float32 ``(N,)`` array with NaN where absent (for checks written for arrays
    that read a few columns, e.g. the codes of categorical features)."""

    def __init__(self, M):
        self.M = M.tocsc()
        self.shape = M.shape

    def __getitem__(self, key):
        rows, f = key
        if rows != slice(None):
            raise IndexError("ColumnView reads whole columns: view[:, f]")
        lo, hi = self.M.indptr[f], self.M.indptr[f + 1]
        out = np.full(self.shape[0], np.nan, np.float32)
        out[self.M.indices[lo:hi]] = self.M.data[lo:hi]
        return out


def block_rows(n_features: int) -> int:
    """Rows of one dense block: ``BLOCK_VALUES // n_features`` rounded down to a power of
    two (so every full block pads to the same size bucket and reuses one program)."""
    rows = max(1, BLOCK_VALUES // max(1, n_features))
    return 1 << (rows.bit_length() - 1)
