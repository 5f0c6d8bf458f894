"""Ranking metrics over queries: NDCG@k and MAP@k as grouped ``Metric`` records.

``get_metric("ndcg@10")`` (or ``"map"``, ``"map@5"``, ...) makes one on margins, with
``grouped=True``: training passes it the evaluation set's ``(Q, S)`` query index
(``jaxboost.ranking.group_index``) where other metrics get row weights. The arithmetic
is ``jaxboost.ranking``'s.
"""

from __future__ import annotations

import dataclasses

from ._base import Metric


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
        from .. import ranking

        fn = ranking.ndcg if self.kind == "ndcg" else ranking.mean_average_precision
        return fn(y, pred, idx, self.k)

