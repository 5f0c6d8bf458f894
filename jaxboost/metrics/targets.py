"""What part of the targets a metric receives when ``y`` carries side data.

Training targets may carry several values per row for a loss of your own (see
``jaxboost.train``): an ``(N, L)`` array, or a dict of ``(N,)`` arrays. Metrics then get:

* built-in metrics (``get_metric`` names: ``rmse``, ``logloss``, ``auc``, ``ndcg``, ...):
  the label, ``y["label"]`` of a dict ``y``; the means over values (``PER_VALUE``) an
  ``(N, T)`` array whole, the targets of a multi-target model. Otherwise an ``(N, L)``
  array, or a dict without a ``"label"`` entry, does not say which part is the label,
  so they are refused with a ``ValueError`` before training;
* every other metric (``"objective"``, the mean loss; a callable ``metric(y, pred)``; a
  ``Metric`` you built): ``y`` whole, as the loss gets it, with all ``N`` rows.

Example:
  >>> import numpy as np
  >>> from jaxboost.metrics import get_metric
  >>> y = {"label": np.array([1.0, 0.0]), "exposure": np.array([2.0, 1.0])}
  >>> metric_targets(get_metric("rmse"), y)
  array([1., 0.])
  >>> sorted(metric_targets(get_metric(lambda y, p: 0.0), y))
  ['exposure', 'label']
"""

from __future__ import annotations

from ..inputs.arrays import LABEL_KEY, is_side_data
from ._base import PER_VALUE


def reads_label(metric) -> bool:
    """Whether ``metric`` is a built-in (it scores one label per row)."""
    from .ranking import _Ranked
    from .registry import BUILTIN

    fn = metric.fn
    return isinstance(fn, _Ranked) or any(fn is m.fn for m in BUILTIN.values())


def metric_targets(metric, y):
    """The part of targets ``y`` that ``metric`` receives (see the module docstring);
    an ``(N, T)`` array whole for a metric that is a mean over values (``rmse``,
    ``logloss``, ...: several targets, ``objectives.multi_target``).

    Raises:
      ValueError: a built-in metric and side data that names no label.
    """
    if not is_side_data(y) or not reads_label(metric):
        return y
    if not isinstance(y, dict) and metric.name in PER_VALUE:
        return y  # (N, T) targets, or side data the metric refuses against (N,) pred
    if isinstance(y, dict) and LABEL_KEY in y:
        return y[LABEL_KEY]
    what = (
        "an (N, L) array"
        if not isinstance(y, dict)
        else f"a dict without a {LABEL_KEY!r} entry (entries {sorted(y)})"
    )
    raise ValueError(
        f"metric {metric.name!r} scores one label per row, but y is {what}, "
        f"which does not say which part is the label: pass y as a dict with "
        f"the label under {LABEL_KEY!r} (e.g. y={{{LABEL_KEY!r}: counts, "
        f"'exposure': years}}), or use a metric that reads y whole "
        f"('objective', the mean loss, or a callable metric(y, pred))"
    )
