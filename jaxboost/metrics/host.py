r"""Host metrics: NumPy or scikit-learn functions that score training on the host.

``host(fn)`` marks a plain Python callable ``fn(y, pred) -> float`` (e.g.
``sklearn.metrics.average_precision_score``) as a ``Metric`` with ``host=True``.
Training never traces it: after each chunk of rounds it copies every evaluation set's
predictions of that chunk to the host, once, and calls ``fn`` on NumPy arrays for each
round. Its values go where a device metric's go: ``Booster.history``, callbacks, early
stopping, ``compare``, ``train_many`` and the scikit-learn estimators' ``eval_metric``.

Cost, per evaluation set of ``n`` rows and per chunk of ``R`` rounds
(``training.loop.ROUNDS_PER_DISPATCH``, 10): one device-to-host copy of ``R x n``
float32 predictions (``R x n x K`` for ``K`` outputs; twice that when host metrics read
both margins and responses; rows padded to ``bucket_rows(n)``), then ``R`` calls of
``fn`` on the host. The copy and the calls happen one chunk behind, while the device
runs the next chunk, so they cost nothing as long as they take less time than a chunk
of rounds; beyond that, ``fn``'s own time (``average_precision_score`` sorts the ``n``
rows, ``O(n log n)`` per round) bounds the training speed. Device metrics are
unaffected: their compiled program is the same with or without host metrics.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np

from ._base import Metric
from .custom import _weight_keyword, call_weighted


@dataclasses.dataclass(frozen=True)
class _HostFn:
    """Adapts ``func(y, pred)`` (taking weights as ``sample_weight=`` or ``w=`` when it
    has such a parameter) to ``fn(y, pred, w)``, on NumPy arrays."""

    func: Callable
    weight_kw: str | None

    def __call__(self, y, pred, w):
        return call_weighted(self.func, self.weight_kw, y, pred, w)


def _name_of(fn) -> str:
    inner = getattr(fn, "func", None)  # functools.partial
    return getattr(fn, "__name__", None) or getattr(inner, "__name__", None) or type(fn).__name__


def host(fn, *, maximize=None, on: str = "response", needs=None, name=None) -> Metric:
    r"""A NumPy / scikit-learn callable ``fn(y, pred) -> float`` as a host ``Metric``.

    ``fn`` is called on NumPy arrays, on the host, never traced by JAX: ``y`` ``(n,)``
    float32 labels of an evaluation set (without the padding rows training adds),
    ``pred`` ``(n,)`` float32 predictions of one round (``(n, K)`` for ``K`` outputs)
    and, when ``fn`` has a parameter ``sample_weight`` (scikit-learn's convention) or
    ``w``, the set's ``(n,)`` row weights there (ones when the set has none). It must
    return one finite number; training raises ``jaxboost.errors.MetricError`` naming the
    metric, the evaluation set and the round otherwise.

    Cost (see ``jaxboost.metrics.host`` module): one device-to-host copy per chunk of
    ``R = 10`` rounds and evaluation set of ``R x n`` floats (``x K``), then ``R``
    calls of ``fn``; they overlap the device's next chunk, so ``fn``'s own time is the
    price once it exceeds a chunk's.

    Args:
      fn: ``fn(y, pred[, sample_weight=w]) -> float``.
      maximize: whether larger is better (early stopping's direction); default ``fn``'s
        attribute ``maximize``, else False.
      on: ``"response"`` (the model's inverse link applied to the margins: a
        probability for ``logistic``) or ``"margin"`` (raw margins).
      needs: ``"probability"``, ``"class probabilities"``, ``"mean"`` or None, as for
        ``Metric``: a response metric that needs one is refused for a plain loss
        without a link.
      name: the history key; default ``fn.__name__``.

    Example:
      >>> import numpy as np
      >>> from sklearn.metrics import average_precision_score
      >>> from jaxboost import metrics
      >>> ap = metrics.host(average_precision_score, maximize=True)
      >>> ap.name, ap.host, ap.maximize
      ('average_precision_score', True, True)
      >>> float(ap(np.array([0.0, 1.0, 1.0]), np.array([0.2, 0.9, 0.1])))
      0.8333333333333333
    """
    if not callable(fn):
        raise TypeError(f"host() takes a callable fn(y, pred) -> float, got {type(fn).__name__}")
    if isinstance(fn, Metric):
        raise TypeError(
            f"host() takes a plain callable; {fn.name!r} is already a Metric "
            f"(use dataclasses.replace(metric, host=True) for a Metric whose fn "
            f"is NumPy code)"
        )
    if maximize is None:
        maximize = bool(getattr(fn, "maximize", False))
    return Metric(
        name if name is not None else _name_of(fn),
        _HostFn(fn, _weight_keyword(fn)),
        maximize=maximize,
        on=on,
        needs=needs,
        host=True,
    )


class BadValue(ValueError):
    """What ``host_value`` raises for a value that is not one (finite) number."""


def host_value(metric: Metric, y, pred, w, *, finite: bool = True) -> float:
    """``metric.fn(y, pred, w)`` as a Python float; ``ValueError`` saying what came back
    unless it is one real number (and finite, when ``finite``)."""
    out = metric.fn(y, pred, w)
    try:
        a = np.asarray(out)
    except Exception:  # any object NumPy cannot read is "not a number"
        a = None
    if a is None or a.ndim != 0 or a.dtype.kind not in "biuf":
        what = (
            type(out).__name__
            if a is None or a.dtype.kind not in "biuf"
            else f"an array of shape {a.shape}"
        )
        raise BadValue(f"returned {what}; a host metric must return one number")
    v = float(a)
    if finite and not math.isfinite(v):
        raise BadValue(f"returned {v}; a host metric must return a finite number")
    return v
