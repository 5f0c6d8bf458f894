r"""Ranking metrics over groups (queries): NDCG@k and MAP@k, in JAX.

Rows with the same group id form a query; within each query the rows are ranked by
``pred`` (descending; ties keep row order) and the metric of the ranking is averaged
over queries (optionally weighted per query).

* **NDCG@k**: :math:`\mathrm{DCG@k} / \mathrm{IDCG@k}` with
  :math:`\mathrm{DCG@k} = \sum_{i \le k} G(r_i) / \log_2(i + 1)`, gain
  :math:`G(r) = 2^r - 1` (``gain="exponential"``, XGBoost's ``ndcg``) or :math:`G(r) = r`
  (``"linear"``, scikit-learn's ``ndcg_score``); IDCG ranks by the labels themselves. A
  query with no relevant row (IDCG = 0) scores 1, as in XGBoost.
* **MAP@k**: the mean over queries of average precision at k,
  :math:`\frac{1}{\min(k, R)} \sum_{i \le k} P@i \cdot [r_i > 0]` with ``R`` the
  number of relevant rows (label > 0) of the query; a query with none scores 1.

``k=None`` means the whole query. The functions take ``group_index`` output (``(Q, S)``
row numbers padded with an out-of-range index), so one index serves every round.

``get_metric("ndcg@10")`` (or ``"map"``, ``"map@5"``, ...) makes a grouped ``Metric`` of
them on margins (``ranking_metric``, ``grouped=True``): training passes it the
evaluation set's ``(Q, S)`` query index where other metrics get row weights. This module
is also the public ``jaxboost.ranking``.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from ..engine.groups import group_index
from ._base import Metric

__all__ = ["ndcg", "mean_average_precision", "group_index"]


def _ranked(y, pred, idx, k=None):
    """``(labels in predicted order, their mask, labels in ideal order)`` per query,
    each ``(Q, L)`` with the padding last (label 0): ``L = S``, or ``L = k`` when a
    cut-off ``k < S`` leaves only the top k positions to rank (``lax.top_k``, ties to
    the earlier row as the stable sort; XLA's CPU sort of many short float rows is
    the slow part of a ranking metric)."""
    N = y.shape[0]
    mask = idx < N
    safe = jnp.where(mask, idx, 0)
    p = jnp.where(mask, pred[safe], -jnp.inf)
    r = jnp.where(mask, y[safe], 0.0)
    if k is not None and k < idx.shape[1]:
        _, order = jax.lax.top_k(jnp.where(p == 0, 0.0, p), k)  # -0.0 ties with 0.0
        q = jnp.arange(idx.shape[0])[:, None]  # (indexing: r is not batched where p is)
        return r[q, order], mask[q, order], jax.lax.top_k(r, k)[0]
    order = jnp.argsort(-p, axis=1, stable=True)
    return (
        jnp.take_along_axis(r, order, axis=1),
        jnp.take_along_axis(mask, order, axis=1),
        -jnp.sort(-r, axis=1),
    )


def _per_query(fn, y, pred, idx, query_weight):
    """``fn(y, pred, idx) -> (Q,)`` over one query index, or over the buckets of
    ``groups.group_buckets`` (a tuple; training's evaluation sets), concatenated."""
    if isinstance(idx, (tuple, list)):
        if query_weight is not None:
            raise TypeError("query_weight needs one (Q, S) query index, not size buckets")
        return jnp.concatenate([fn(y, pred, b) for b in idx])
    return fn(y, pred, idx)


def _query_mean(v, query_weight):
    if query_weight is None:
        return jnp.mean(v)
    return jnp.sum(v * query_weight) / jnp.sum(query_weight)


# Both compile as one program per query shapes and k: op by op, the first call on 30
# queries of 1-40 rows (four size buckets) took 3.5 s, compiled about 0.3 s.
@functools.partial(jax.jit, static_argnames=("k", "gain"))
def ndcg(y, pred, idx, k=None, *, gain: str = "exponential", query_weight=None):
    """Mean NDCG@k over queries (see the module docs).

    Args:
      y: ``(N,)`` graded relevance labels (>= 0).
      pred: ``(N,)`` scores (margins).
      idx: ``(Q, S)`` from ``group_index`` (or a tuple of such buckets,
        ``groups.group_buckets``, without ``query_weight``).
      k: cut-off (``None``: the whole query).
      gain: ``"exponential"`` (2**r - 1) or ``"linear"`` (r).
      query_weight: optional ``(Q,)`` weights of the queries.

    Returns:
      float32 scalar in [0, 1].

    Example:
      >>> import numpy as np
      >>> idx = group_index(np.array([0, 0, 0]), 3)
      >>> # ranked labels 0, 1, 3: (0 + 1/log2(3) + 7/2) / (7 + 1/log2(3) + 0)
      >>> round(float(ndcg(jnp.array([3., 0, 1]), jnp.array([0.1, 0.9, 0.5]), idx)), 4)
      0.5413
    """
    if gain not in ("exponential", "linear"):
        raise ValueError(f"gain must be 'exponential' or 'linear', got {gain!r}")

    def per_query(y, pred, idx):
        r, mask, ideal = _ranked(y, pred, idx, k)
        L = r.shape[1]
        cut = L if k is None else min(int(k), L)
        G = (lambda v: jnp.exp2(v) - 1.0) if gain == "exponential" else (lambda v: v)
        disc = jnp.where(jnp.arange(L) < cut, 1.0 / jnp.log2(jnp.arange(L) + 2.0), 0.0)
        dcg = jnp.sum(jnp.where(mask, G(r), 0.0) * disc, axis=1)
        idcg = jnp.sum(G(ideal) * disc, axis=1)
        return jnp.where(idcg > 0, dcg / jnp.where(idcg > 0, idcg, 1.0), 1.0)

    values = _per_query(per_query, y, pred, idx, query_weight)
    return _query_mean(values, query_weight).astype(jnp.float32)


@functools.partial(jax.jit, static_argnames=("k",))
def mean_average_precision(y, pred, idx, k=None, *, query_weight=None):
    """Mean average precision at k over queries; a row is relevant when its label > 0.

    Example:
      >>> import numpy as np
      >>> idx = group_index(np.array([0, 0, 0, 0]), 4)
      >>> # ranked: rel, not, rel, not -> (1/1 + 2/3) / 2
      >>> round(float(mean_average_precision(jnp.array([1., 0, 1, 0]),
      ...                                    jnp.array([4., 3, 2, 1]), idx)), 4)
      0.8333
    """

    def per_query(y, pred, idx):
        S = idx.shape[1]
        cut = S if k is None else min(int(k), S)
        r, mask, _ = _ranked(y, pred, idx, k)
        L = r.shape[1]
        rel = ((r > 0) & mask).astype(jnp.float32)
        top = (jnp.arange(L) < cut).astype(jnp.float32)
        hits = jnp.cumsum(rel, axis=1)
        prec = hits / (jnp.arange(L) + 1.0)
        # relevant rows of the whole query (the ranking may hold its top k only)
        R = jnp.sum((idx < y.shape[0]) & (y[jnp.where(idx < y.shape[0], idx, 0)] > 0), axis=1)
        R = R.astype(jnp.float32)
        ap = jnp.sum(prec * rel * top, axis=1) / jnp.maximum(jnp.minimum(R, cut), 1.0)
        return jnp.where(R > 0, ap, 1.0)

    values = _per_query(per_query, y, pred, idx, query_weight)
    return _query_mean(values, query_weight).astype(jnp.float32)


def ranking_metric(kind: str, k) -> Metric:
    """``ndcg``/``map`` (optionally at ``k``) as a grouped ``Metric`` on margins."""
    name = kind if k is None else f"{kind}@{k}"
    return Metric(name, _Ranked(kind, k), maximize=True, on="margin", grouped=True)


@dataclasses.dataclass(frozen=True)
class _Ranked:
    """``fn(y, pred, idx)`` of a ranking metric (hashable by value: equal metrics share
    compiled training programs)."""

    kind: str
    k: int | None

    def __call__(self, y, pred, idx):
        fn = ndcg if self.kind == "ndcg" else mean_average_precision
        return fn(y, pred, idx, self.k)
