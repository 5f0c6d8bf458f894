"""The built-in metrics by name, and ``get_metric``: a name, ``Metric`` or callable ->
``Metric``.

``BUILTIN`` maps each built-in's name to it (the family modules define them);
``ndcg``/``map`` (optionally ``@k``) are made on demand (``ranking``) and
``"objective"`` from the model's objective (``custom``), as objectives' ``resolve``
turns a name into a catalogue entry.
"""

from __future__ import annotations

import dataclasses
import re

from ._base import Metric
from .classification import accuracy, auc, brier, error, logloss, merror, mlogloss
from .custom import objective_metric, user_metric
from .ranking import ranking_metric
from .regression import gamma_deviance, mae, poisson_nll, r2, rmse
from .survival import cindex, cox_nloglik

BUILTIN = {
    m.name: m
    for m in (
        rmse,
        mae,
        r2,
        logloss,
        error,
        accuracy,
        auc,
        brier,
        mlogloss,
        merror,
        poisson_nll,
        gamma_deviance,
        cox_nloglik,
        cindex,
    )
}


#: XGBoost's and LightGBM's names of metrics that jaxboost names otherwise.
PEER_METRICS = {
    "poisson-nloglik": "XGBoost's name; jaxboost's is 'poisson_nll'",
    "gamma-deviance": "XGBoost's name; jaxboost's is 'gamma_deviance'",
    "aft-nloglik": "XGBoost's name for the AFT loss: an objectives.aft model's "
    "metric 'aft-nloglik' (or 'objective')",
    "binary_logloss": "LightGBM's name; jaxboost's is 'logloss'",
    "binary_error": "LightGBM's name; jaxboost's is 'error'",
    "multi_logloss": "LightGBM's name; jaxboost's is 'mlogloss'",
    "multi_error": "LightGBM's name; jaxboost's is 'merror'",
    "l1": "LightGBM's name; jaxboost's is 'mae'",
    "l2": "LightGBM's name for the mean squared error; jaxboost's 'rmse' is its root",
    "c-index": "jaxboost's name is 'cindex'",
    "c_index": "jaxboost's name is 'cindex'",
    "mse": "jaxboost's 'rmse' is its root",
}


def names() -> list[str]:
    """Names ``get_metric`` accepts (``ndcg`` and ``map`` also as ``ndcg@k``, ``map@k``).

    >>> "auc" in names() and "objective" in names() and "ndcg" in names()
    True
    """
    return sorted(list(BUILTIN) + ["map", "ndcg"]) + ["objective"]


def get_metric(m, objective=None) -> Metric:
    """A ``Metric`` from a name, a ``Metric`` or a callable.

    Args:
      m: a built-in name (see ``names()``); ``"objective"`` (the objective's own loss,
        needs ``objective``; the metric is named ``"loss"``); a ``Metric`` (returned as
        is); or any callable ``metric(y, pred) -> scalar``. A callable is wrapped with
        its ``__name__`` as name, ``maximize`` from its ``maximize`` attribute (False
        when absent) and ``on`` from its ``on`` attribute (``"response"`` when absent).
        Row weights are passed as ``sample_weight=`` (scikit-learn's convention) or
        ``w=`` when it has a parameter of that name; otherwise it is called as
        ``metric(y, pred)`` and weights are not applied.
      objective: the objective, for ``"objective"``.

    Raises:
      ValueError: unknown name (the message lists the known ones), or ``"objective"``
        without an objective.
      TypeError: ``m`` is none of the above.

    Example:
      >>> get_metric("logloss").name, get_metric("auc").maximize
      ('logloss', True)
      >>> def hit_rate(y, pred):
      ...     return ((pred > 0.5) == (y > 0.5)).mean()
      >>> hit_rate.maximize = True
      >>> m = get_metric(hit_rate); m.name, m.maximize
      ('hit_rate', True)
      >>> get_metric("loglos")  # doctest: +ELLIPSIS
      Traceback (most recent call last):
      ...
      ValueError: unknown metric 'loglos'; known metrics: accuracy, auc, brier, cindex, ...
    """
    if isinstance(m, Metric):
        return m
    if isinstance(m, str):
        key = m.strip().lower()
        if key == "objective":
            if objective is None:
                raise ValueError(
                    "the 'objective' metric is the model's own loss: pass the "
                    "objective, get_metric('objective', objective=...)"
                )
            return objective_metric(objective)
        if key in BUILTIN:
            return BUILTIN[key]
        ranked = re.fullmatch(r"(ndcg|map)(?:@(\d+))?", key)
        if ranked:
            k = None if ranked.group(2) is None else int(ranked.group(2))
            if k is not None and k < 1:
                raise ValueError(f"{m!r}: the cut-off k must be >= 1")
            return ranking_metric(ranked.group(1), k)
        if key == "aft-nloglik" and getattr(objective, "name", None) == "aft":
            # XGBoost's name for the AFT loss's mean, which is the objective metric
            return dataclasses.replace(objective_metric(objective), name="aft-nloglik")
        peer = PEER_METRICS.get(key)
        hint = f" ({peer})" if peer else ""
        raise ValueError(
            f"unknown metric {m!r}{hint}; known metrics: {', '.join(names())}; "
            f"or pass a Metric or a callable metric(y, pred) -> scalar"
        )
    if callable(m):
        return user_metric(m)
    raise TypeError(
        f"a metric is a name, a jaxboost.metrics.Metric or a callable "
        f"metric(y, pred) -> scalar; got {type(m).__name__}"
    )
