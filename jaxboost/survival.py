r"""Survival analysis helpers: Harrell's concordance index.

Labels follow ``objectives.cox`` (XGBoost's ``survival:cox``): ``y > 0`` an event at
time ``y``, ``y < 0`` censored at time ``-y``. Train a Cox model with
``jaxboost.train(objectives.cox, X, y)``; ``predict`` gives hazard ratios
:math:`e^f`, ``predict(..., output_margin=True)`` log hazard ratios. The metrics
``"cox-nloglik"`` and ``"cindex"`` (``jaxboost.metrics``) evaluate during training.
"""

from __future__ import annotations

import jax
import numpy as np

from ._types import bucket_rows
from .errors import DataError
from .metrics.survival import concordance_sums

__all__ = ["concordance_index"]


def concordance_index(y, risk, sample_weight=None) -> float:
    r"""Harrell's C: how often the row that fails first has the higher predicted risk.

    A pair ``(i, j)`` is comparable when :math:`T_i < T_j` and row i is an event
    (:math:`y_i > 0`): row i is known to fail first (a row censored before another's
    event, or tied times, tell nothing about the order). The index is the share of
    comparable pairs with :math:`r_i > r_j`, ties in risk counting one half, each pair
    weighted by :math:`w_i w_j`:

    .. math:: C = \frac{\sum_{i: \delta_i = 1} \sum_{j: T_j > T_i} w_i w_j
              ([r_i > r_j] + \tfrac12 [r_i = r_j])}{\sum_{i: \delta_i = 1}
              \sum_{j: T_j > T_i} w_i w_j}

    0.5 is a random order, 1 a perfect one. ``risk`` is anything increasing in the
    hazard: a Cox model's margins or hazard ratios (``Booster.predict``), or minus a
    predicted survival time. The sums are those of the ``cindex`` metric
    (``jaxboost.metrics.survival.concordance_sums``), here in float64 over the events:
    :math:`O(N^2)` comparisons in blocks of rows (O(N) memory per block), compiled
    once per size bucket of the rows and the events.

    Args:
      y: ``(N,)`` labels, y > 0 event at time y, y < 0 censored at time -y (nonzero).
      risk: ``(N,)`` predicted risks.
      sample_weight: optional ``(N,)`` non-negative row weights.

    Returns:
      float in [0, 1]; NaN when there is no comparable pair.

    Raises:
      DataError: shapes differ, labels zero or not finite, risks not finite, or
        negative weights.

    Example:
      >>> concordance_index([1.0, -2.0, 3.0, 4.0], [3.0, 1.0, 0.0, 2.0])  # 3 of 4 pairs
      0.75
    """
    y = np.asarray(y, np.float64).ravel()
    r = np.asarray(risk, np.float64).ravel()
    if r.shape != y.shape:
        raise DataError(f"y has {y.shape[0]} rows, risk {r.shape[0]}")
    if not np.all(np.isfinite(y) & (y != 0)):
        raise DataError("concordance_index needs nonzero finite labels (y > 0: event at "
                        "time y; y < 0: censored at time -y)")
    if not np.all(np.isfinite(r)):
        raise DataError("concordance_index needs finite risks")
    w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight,
                                                                 np.float64).ravel()
    if w.shape != y.shape or not np.all(np.isfinite(w) & (w >= 0)):
        raise DataError("sample_weight must be one finite non-negative weight per row")
    t = np.abs(y)
    events = np.flatnonzero((y > 0) & (w > 0))
    if events.size == 0:
        return float("nan")
    # Rows padded to size buckets with weight 0 (no pair), so similar sizes share one
    # compiled program.
    i_rows = [_padded(a[events]) for a in (t, r, w)]
    j_rows = [_padded(a) for a in (t, r, w)]
    with jax.enable_x64(True):
        num, den = np.asarray(_sums(*i_rows, *j_rows), np.float64)
    return float(num / den) if den > 0 else float("nan")


def _padded(a: np.ndarray) -> np.ndarray:
    out = np.zeros(bucket_rows(a.shape[0]), np.float64)
    out[: a.shape[0]] = a
    return out


@jax.jit
def _sums(t_i, f_i, w_i, t, f, w):
    return concordance_sums(t_i, f_i, w_i, t, f, w)
