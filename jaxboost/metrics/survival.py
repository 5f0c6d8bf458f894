r"""Survival metrics on margins (log hazard ratios), labels as ``objectives.cox``:
``y > 0`` an event at time ``y``, ``y < 0`` censored at time ``-y``.

``cox_nloglik`` is the Cox partial likelihood per event; ``cindex`` Harrell's
concordance index, and ``concordance_index`` its NumPy-facing twin (float64 sums over the
events, any number of rows). Train a Cox model with ``jaxboost.train(objectives.cox, X,
y)``; ``predict`` gives hazard ratios :math:`e^f`, ``predict(..., output_margin=True)``
log hazard ratios. This module is also the public ``jaxboost.survival``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._types import bucket_rows
from ..errors import DataError
from ._base import builtin, scalar_pred

__all__ = ["concordance_index", "cox_nloglik", "cindex", "concordance_sums"]


def _cox_nloglik(y, pred, w):
    r"""Cox negative log partial likelihood per event, on margins (log hazard ratios).

    :math:`\sum_{i:\delta_i=1} w_i (\log S_i - f_i) / \sum_{i:\delta_i=1} w_i` with
    :math:`S_i = \sum_{j: T_j \ge T_i, w_j > 0} e^{f_j}` (Breslow ties), :math:`T = |y|`,
    :math:`\delta = [y > 0]`; XGBoost's ``cox-nloglik`` for unit weights (the mean over
    events of ``objectives.cox``). Rows of weight 0 are left out of the risk sets.

    >>> round(float(cox_nloglik([1.0, -2.0, 3.0], [0.0, 0.0, 0.0])), 4)  # (log 3 + 0) / 2
    0.5493
    """
    from objectives.survival import event_nll

    scalar_pred("cox-nloglik", y, pred)
    w = jnp.asarray(w, jnp.float32)
    nll, event = event_nll(jnp.asarray(y, jnp.float32), jnp.asarray(pred, jnp.float32), w > 0)
    we = jnp.where(event, w, 0.0)
    return jnp.sum(we * nll) / jnp.sum(we)


_CINDEX_BLOCK = 128


def concordance_sums(t_i, f_i, w_i, t, f, w):
    r"""Harrell's C as two sums: ``[concordant weight, comparable weight]``, shape (2,).

    Over pairs of a row ``i`` of ``(t_i, f_i, w_i)`` and a row ``j`` of ``(t, f, w)``
    with :math:`t_j > t_i` and :math:`w_j > 0`: the sum of :math:`w_i w_j ([f_i > f_j] +
    \tfrac12 [f_i = f_j])` and of :math:`w_i w_j`. Rows ``i`` that are not events carry
    :math:`w_i = 0`. One ``lax.map`` over the ``i`` rows in blocks of ``_CINDEX_BLOCK``
    (``O(N)`` memory per row of a block), in the inputs' float type: the one
    implementation behind the ``cindex`` metric (float32, traced in training) and
    ``jaxboost.survival.concordance_index`` (float64, events only).
    """

    def one(args):
        ti, fi, wgt = args
        comp = (t > ti) & (w > 0)
        conc = jnp.where(fi > f, 1.0, jnp.where(fi == f, 0.5, 0.0))
        return wgt * jnp.stack(
            [jnp.sum(jnp.where(comp, w * conc, 0.0)), jnp.sum(jnp.where(comp, w, 0.0))]
        )

    return jnp.sum(jax.lax.map(one, (t_i, f_i, w_i), batch_size=_CINDEX_BLOCK), axis=0)


def _cindex(y, pred, w):
    r"""Harrell's concordance index on margins (higher margin = higher hazard).

    Over the comparable pairs, :math:`T_i < T_j` with row i an event
    (:math:`y_i > 0`), the weighted (:math:`w_i w_j`) share where :math:`f_i > f_j`,
    ties in ``f`` counting one half; 0.5 = random order, 1 = perfect (and 0.5 when no
    pair is comparable). Labels as ``objectives.cox``. :math:`O(N^2)` comparisons in
    blocks of rows (``concordance_sums``); ``jaxboost.survival.concordance_index`` is
    the same sums in float64 for NumPy arrays.

    >>> float(cindex([1.0, -2.0, 3.0], [2.0, 1.0, 0.0]))
    1.0
    """
    scalar_pred("cindex", y, pred)
    y = jnp.asarray(y, jnp.float32)
    f = jnp.asarray(pred, jnp.float32)
    w = jnp.asarray(w, jnp.float32)
    t = jnp.abs(y)
    wi = jnp.where(y > 0, w, 0.0)
    sums = concordance_sums(t, f, wi, t, f, w)
    return jnp.where(sums[1] > 0, sums[0] / jnp.where(sums[1] > 0, sums[1], 1.0), 0.5)


cox_nloglik = builtin("cox-nloglik", _cox_nloglik, on="margin")
cindex = builtin("cindex", _cindex, maximize=True, on="margin")


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
        raise DataError(
            "concordance_index needs nonzero finite labels (y > 0: event at "
            "time y; y < 0: censored at time -y)"
        )
    if not np.all(np.isfinite(r)):
        raise DataError("concordance_index needs finite risks")
    w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, np.float64).ravel()
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
