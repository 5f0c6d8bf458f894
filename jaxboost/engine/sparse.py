"""Quantile binning of a sparse ``X``, column by column, without densifying it.

The twins of ``binning.compute_bin_edges`` and ``binning.apply_bins`` for a canonical
float32 CSC matrix (``jaxboost.inputs.sparse.as_sparse_features``) whose absent entries are
missing values: column ``f``'s present values are its stored entries that are not NaN,
in row order, exactly the values ``X_dense[:, f]`` holds where it is not NaN when the
dense twin has NaN in the absent places. The cuts are computed by the same
``binning._feature_cuts`` from the same values in the same order (the same random
sample for very large columns), so the bin edges, the bins and therefore the model
are the dense twin's, bit for bit. Memory: the ``uint8`` bins plus one column at a time.

``compute_bin_edges`` and ``apply_bins`` here are the entry points training uses for
any ``X``: ``binning``'s functions for a dense array, the sparse twins for a sparse
matrix (``binning`` itself knows nothing of sparse input). ``csc_bins`` gives the bins
of the stored entries alone, column by column, for the native sparse tree kernel
(``training.data.sparse_rows`` decides when training uses it).
"""

from __future__ import annotations

import numpy as np

from .._types import bin_dtype
from ..inputs.sparse import is_sparse
from . import binning
from .binning import BinEdges, EdgeBuilder


def compute_bin_edges(
    X, max_bin: int = 256, sample_weight=None, seed: int = 0, categorical=None
) -> BinEdges:
    """``binning.compute_bin_edges`` of a dense ``X``, ``sparse_bin_edges`` of a
    canonical float32 CSC matrix."""
    if is_sparse(X):
        return sparse_bin_edges(X, max_bin, sample_weight, seed, categorical)
    return binning.compute_bin_edges(X, max_bin, sample_weight, seed=seed, categorical=categorical)


def apply_bins(X, edges: BinEdges, *, out=None, row_major: bool = False):
    """``binning.apply_bins`` of a dense ``X``, ``apply_bins_sparse`` of a canonical
    float32 CSC matrix."""
    if is_sparse(X):
        return apply_bins_sparse(X, edges, out=out, row_major=row_major)
    return binning.apply_bins(X, edges, out=out, row_major=row_major)


def _column(X, f):
    """``(values, rows)`` of column ``f``'s stored entries (float32, row order)."""
    lo, hi = X.indptr[f], X.indptr[f + 1]
    return X.data[lo:hi], X.indices[lo:hi]


def sparse_bin_edges(
    X, max_bin: int = 256, sample_weight=None, seed: int = 0, categorical=None
) -> BinEdges:
    """``binning.compute_bin_edges`` of a canonical float32 CSC ``X`` (absent =
    missing); the same arguments and result.

    Example:
      >>> import numpy as np, scipy.sparse as sp
      >>> X = sp.csc_matrix(np.array([[1.0], [0.0], [2.0], [4.0]], np.float32))
      >>> e = sparse_bin_edges(X)          # the absent 0 is missing: cuts of 1, 2, 4
      >>> e.cuts[0, :e.n_cuts[0]].tolist(), bool(e.has_missing[0])
      ([1.5, 3.0], True)
    """
    N, F = X.shape
    edges = EdgeBuilder(F, max_bin, categorical, seed)
    w = None if sample_weight is None else np.asarray(sample_weight, np.float64)
    keep, n_rows = None, N
    if w is not None and not (w > 0).all():
        # As the dense twin: rows of weight 0 add no cuts and no missing values.
        keep = w > 0
        n_rows = int(keep.sum())
    for f in range(F):
        vals, rows = _column(X, f)
        if keep is not None:
            sel = keep[rows]
            vals, rows = vals[sel], rows[sel]
        present = ~np.isnan(vals)
        if not present.all():
            vals, rows = vals[present], rows[present]
        edges.add(f, vals, None if w is None else w[rows], vals.shape[0] < n_rows)
    return edges.result()


def _value_bins(edges: BinEdges, f: int, vals):
    """The bins of numeric feature ``f``'s values: how many of its cuts are <= each
    (NaN: past every cut; callers send it to the missing bin or drop it)."""
    return np.searchsorted(edges.cuts[f, : edges.n_cuts[f]], vals, side="right")


def apply_bins_sparse(X, edges: BinEdges, *, out=None, row_major: bool = False):
    """``binning.apply_bins`` of a canonical float32 CSC ``X``: absent entries and NaN
    fall in the missing bin ``max_bin - 1``; the same ``out`` and layouts."""
    N, F = X.shape
    if out is None:
        out = np.empty((N, F) if row_major else (F, N), dtype=bin_dtype(edges.n_bins))
    if row_major:
        out[:N] = edges.missing_bin
    else:
        out[:, :N] = edges.missing_bin
    cat = edges.categorical if edges.is_categorical else None
    for f in range(F):
        vals, rows = _column(X, f)
        if vals.shape[0] == 0:
            continue
        b = _value_bins(edges, f, vals)
        b[np.isnan(vals)] = edges.missing_bin
        if cat is not None and cat[f]:
            # as binning's dense path: codes never seen in training go the missing way
            seen = edges.categories
            assert seen is not None  # categorical edges mark the codes seen in training
            with np.errstate(invalid="ignore"):
                code = np.where((vals >= 0) & (vals < edges.max_bin), vals, edges.max_bin - 1)
            code = np.nan_to_num(code, nan=edges.max_bin - 1).astype(np.int64)
            b[~seen[f][code]] = edges.missing_bin
        if row_major:
            out[rows, f] = b
        else:
            out[f, rows] = b
    return out


def csc_bins(X, edges: BinEdges):
    """The bins of a canonical float32 CSC ``X``'s stored, non-missing values, by column,
    for the native sparse tree kernel (``jaxboost.native.grow_tree_sparse``): ``(colptr
    (F + 1,) int32, rows (nnz,) int32, ebin (nnz,) uint8)``, rows ascending within each
    column; ebin is uint16 when ``edges.n_bins`` is above 256. The bins are
    ``apply_bins_sparse``'s (numeric features only); stored NaN entries are left out, as
    absent ones are (both are missing values).

    Memory: 5 bytes per stored entry (6 with uint16 bins), whatever the number of
    columns.

    >>> import numpy as np, scipy.sparse as sp
    >>> X = sp.csc_matrix(np.array([[1.0, 0.0], [0.0, 2.0], [4.0, 3.0]], np.float32))
    >>> colptr, rows, ebin = csc_bins(X, sparse_bin_edges(X))
    >>> colptr.tolist(), rows.tolist(), ebin.tolist()
    ([0, 2, 4], [0, 2, 1, 2], [0, 1, 0, 1])
    """
    N, F = X.shape
    if X.nnz >= 2**31 - 1:
        raise ValueError(f"at most 2**31 - 2 stored entries, got {X.nnz}")
    keep = ~np.isnan(X.data)
    ebin = np.empty(X.nnz, bin_dtype(edges.n_bins))
    for f in range(F):
        lo, hi = X.indptr[f], X.indptr[f + 1]
        if lo < hi:
            ebin[lo:hi] = _value_bins(edges, f, X.data[lo:hi])
    kept = np.zeros(X.nnz + 1, np.int64)  # kept entries before each position
    np.cumsum(keep, out=kept[1:])
    colptr = kept[X.indptr].astype(np.int32)
    return colptr, X.indices[keep].astype(np.int32), ebin[keep]
