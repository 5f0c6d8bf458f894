r"""Metrics made from callables: the objective's own loss and a user's function.

``objective_metric(objective)`` (``get_metric("objective", objective=...)``) is the
weighted mean of a per-row loss at the margins; ``user_metric(func)`` adapts any
``func(y, pred)`` (taking row weights as ``sample_weight=`` or ``w=`` when it has such
a parameter). Both wrap the callable in a small frozen record (``_MeanLoss``,
``_UserFn``) that compares by value, so equal metrics share compiled programs; the
training loop's evaluation recognises them by these types.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import warnings
from typing import Callable

import jax

from ..engine.autodiff import map_rows
from ..errors import MetricWarning, user_stacklevel
from ._base import Metric, wmean


@dataclasses.dataclass(frozen=True)
class _MeanLoss:
    """``fn(y, margins, w)``: weighted mean of a per-row loss, vmapped over rows."""

    loss: Callable

    def __call__(self, y, pred, w):
        # y: (N,) labels, or side data ((N, L), a dict of (N,) arrays): rows come first
        n = jax.tree.leaves(y)[0].shape[:1]
        if pred.shape[:1] != n:
            raise ValueError(
                f"metric 'loss': y has {n[0] if n else 0} rows, pred shape {pred.shape}"
            )
        per_row = map_rows(self.loss, y, pred)
        if per_row.shape != n:
            raise ValueError(
                f"metric 'loss': the loss must return a scalar per row, "
                f"got shape {per_row.shape[1:]}"
            )
        return wmean(per_row, w)


def objective_metric(objective) -> Metric:
    r"""The weighted mean of ``objective``'s own per-row loss at the margins.

    :math:`\sum_i w_i \ell(y_i, f_i) / \sum_i w_i`, with ``on="margin"``: ``pred`` is the
    ``(N,)`` or ``(N, K)`` margins, and the loss is vmapped over rows. ``objective`` is
    an ``objectives`` entry (its hyperparameters applied) or any per-row
    ``loss(y, pred)``. Equal objectives give equal metrics (so compiled code is shared).
    ``get_metric("objective", objective=...)`` returns it; its name is ``"loss"``.

    Example:
      >>> import objectives
      >>> m = objective_metric(objectives.squared)
      >>> m.name, m.on, float(m([1.0, 2.0], [2.0, 2.0]))
      ('loss', 'margin', 0.25)
    """
    if isinstance(objective, str):
        import objectives as catalogue

        entry = getattr(catalogue, objective, None)
        if not isinstance(entry, catalogue.Objective):
            raise ValueError(f"unknown objective {objective!r} for the 'objective' metric")
        objective = entry
    if not callable(objective):
        raise TypeError(
            f"objective must be a callable loss(y, pred), got {type(objective).__name__}"
        )
    return Metric("loss", _MeanLoss(objective), maximize=False, on="margin")


# --- user callables ------------------------------------------------------------------------
def call_weighted(func, weight_kw, y, pred, w):
    """``func(y, pred)``, with the row weights ``w`` as keyword ``weight_kw`` when it is
    not None (``_weight_keyword``: ``sample_weight`` or ``w``)."""
    if weight_kw is None:
        return func(y, pred)
    return func(y, pred, **{weight_kw: w})


@dataclasses.dataclass(frozen=True)
class _UserFn:
    """Adapts ``func(y, pred)`` (optionally taking weights) to ``fn(y, pred, w)``."""

    func: Callable
    weight_kw: str | None

    def __call__(self, y, pred, w):
        return call_weighted(self.func, self.weight_kw, y, pred, w)


def _weight_keyword(func):
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return None
    for kw in ("sample_weight", "w"):
        p = params.get(kw)
        if p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            return kw
    return None


def user_metric(func) -> Metric:
    """``func(y, pred) -> scalar`` as a ``Metric``: named by its ``__name__``, ``maximize``
    and ``on`` from its attributes of those names (False and ``"response"`` when absent);
    row weights are passed as ``sample_weight=`` or ``w=`` when it takes one."""
    name = getattr(func, "__name__", None) or type(func).__name__
    library = str(getattr(func, "__module__", "") or "").split(".")[0]
    if (
        not hasattr(func, "maximize")
        and library not in ("sklearn", "numpy", "scipy")  # refused: see registry
        and sounds_larger_is_better(name)
    ):
        warnings.warn(
            f"the metric {name} has no attribute maximize, so it is minimised: early "
            f"stopping and best_iteration take its smallest value. Its name says larger "
            f"is better: set {name}.maximize = True (or metrics.host(fn, maximize=True) "
            f"for a NumPy function); {name}.maximize = False keeps it minimised quietly",
            MetricWarning,
            stacklevel=user_stacklevel(),
        )
    return Metric(
        name,
        _UserFn(func, _weight_keyword(func)),
        maximize=bool(getattr(func, "maximize", False)),
        on=getattr(func, "on", "response"),
    )


_LARGER_BETTER = frozenset(
    "acc accuracy auc aucpr prauc ap ndcg map precision recall f1 fbeta r2 gini "
    "concordance cindex kappa mcc iou dice hit hits".split()
)
_SMALLER_BETTER = frozenset(
    "loss error err errors deviance brier mse mae rmse mape nll logloss regret".split()
)


def sounds_larger_is_better(name: str) -> bool:
    """Whether a metric's name has a word of a larger-is-better score (``my_accuracy``,
    ``aucPR``, ``f1_macro``) and none of an error (``ndcg_loss``, ``error_at_k``).

    >>> sounds_larger_is_better("my_accuracy"), sounds_larger_is_better("top1_error")
    (True, False)
    """
    words = {w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", name)}
    words |= {w.lower() for w in re.findall(r"[A-Za-z0-9]+", name)}
    words.add(re.sub(r"[^a-z0-9]", "", name.lower()))  # c_index -> cindex
    return bool(words & _LARGER_BETTER) and not words & _SMALLER_BETTER
