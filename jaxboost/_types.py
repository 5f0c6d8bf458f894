"""Dtypes and the shape glossary, in one place.

Shape names used in docstrings across the package:

* ``N`` rows, ``F`` features, ``B`` bins per feature (``max_bin``; the last one,
  ``B - 1``, is reserved for missing values), ``D`` ``max_depth``,
  ``M = 2 ** (D + 1) - 1`` nodes of one tree in heap layout (node ``i`` has children
  ``2 i + 1`` and ``2 i + 2``), ``T`` trees in an ensemble.

Storage and arithmetic (the engine's modules spell array dtypes with these names;
scalar constants such as ``jnp.float32(0.5)`` keep their literal type):

* ``BIN_DTYPE``: bins are ``uint8`` (so ``max_bin <= MAX_BIN_LIMIT = 256``), stored
  feature-major ``(F, N)``;
* ``FLOAT_DTYPE``: gradients, Hessians, margins and leaf values are ``float32``;
* ``INDEX_DTYPE``: node, feature, bin and row indices (and other integers computed in
  compiled code) are ``int32``;
* ``ACC_DTYPE``: histogram sums and the other sums over rows accumulate in ``float64``
  (a scoped x64 trace, never the global flag), because float32 accumulation of
  millions of rows in one bin drifts by percents;
* split scores and gains are rounded to ``float32`` before they are compared, as
  XGBoost does, so exact ties break the same way.
"""

import numpy as np

BIN_DTYPE = np.uint8
MAX_BIN_LIMIT = 256
FLOAT_DTYPE = np.float32
INDEX_DTYPE = np.int32
ACC_DTYPE = np.float64
# XGBoost's kRtEps: a split is made only when its gain exceeds this.
MIN_SPLIT_GAIN = 1e-6


def bucket_rows(n: int, minimum: int = 64) -> int:
    """Rows padded to a size bucket: at most 12.5-25 % more, at least ``minimum``.

    Prediction and evaluation pad their rows to these sizes, so data sets of similar
    sizes (cross-validation folds, a growing validation set, predict calls on batches)
    share one compiled program instead of compiling one per row count.

    >>> [bucket_rows(n) for n in (1, 100, 101, 150, 1000, 1234)]
    [64, 112, 112, 160, 1024, 1280]
    """
    n = max(int(n), minimum)
    step = max(8, 1 << max(n.bit_length() - 3, 0))
    return -(-n // step) * step


def pad_rows(X: np.ndarray) -> np.ndarray:
    """``X`` with rows appended (copies of row 0, or zeros) up to ``bucket_rows``."""
    n = X.shape[0]
    out = np.zeros((bucket_rows(n),) + X.shape[1:], X.dtype)
    out[:n] = X
    if n:
        out[n:] = X[0]
    return out
