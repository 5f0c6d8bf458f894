"""The ``Metric`` record and what the built-in metrics share.

``Metric`` is what every metric is, built-in or not: a function ``fn(y, pred, w) ->
scalar`` with its name, direction and input (see ``jaxboost.metrics``). The family
modules (``regression``, ``classification``, ``survival``, ``ranking``) define the
built-ins with ``builtin``, on the helpers here: ``wmean`` (the weighted mean every
built-in is), and ``scalar_pred`` / ``vector_pred`` (the shape checks that make a
metric given the wrong kind of prediction fail while tracing).
"""

from __future__ import annotations

import dataclasses
import math
import weakref
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

#: Probabilities are clipped to ``[EPS, 1 - EPS]`` before a logarithm (``logloss``,
#: ``mlogloss``), and means to ``>= EPS`` (``poisson_nll``, ``gamma_deviance``), so a
#: confident wrong prediction costs about ``-log(EPS) = 16.1`` per row instead of
#: infinity, and a regression model read as a probability (``squared``) still scores.
EPS = 1e-7

_ONS = ("response", "margin")

#: What a metric may need its ``pred`` to be (``Metric.needs``), and the link that
#: turns margins into it.
NEEDS = {"probability": "sigmoid", "class probabilities": "softmax", "mean": "exp"}


_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Metric function -> its ``jax.jit``, or None for one that cannot be traced."""

_UNTRACEABLE = (
    jax.errors.TracerArrayConversionError,
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerBoolConversionError,
    jax.errors.TracerIntegerConversionError,
)


def _run(fn, y, pred, w):
    """``fn(y, pred, w)`` as one compiled program per shape: a metric called outside
    training (``metrics.auc(y, p)``, an estimator's ``score``) compiled each of its
    operations op by op (a C-index: 85 programs, 2.0 s a new size; now 0.8 s). A
    function that needs concrete values (NumPy inside, e.g. a scikit-learn metric) runs
    as it is."""
    try:
        jitted = _COMPILED.get(fn, False)
    except TypeError:  # not weakly referable
        return fn(y, pred, w)
    if jitted is None:
        return fn(y, pred, w)
    if jitted is False:
        jitted = jax.jit(fn)
    try:
        out = jitted(y, pred, w)
    except _UNTRACEABLE:  # raised while tracing, before anything ran
        _COMPILED[fn] = None
        return fn(y, pred, w)
    _COMPILED[fn] = jitted
    return out


@dataclasses.dataclass(frozen=True)
class Metric:
    """An evaluation metric: ``metric(y, pred, w=None) -> scalar``.

    Attributes:
      name: short name, used as the column / curve key.
      fn: ``fn(y, pred, w) -> scalar``, written in ``jax.numpy`` so it can be jitted
        and vmapped (a NumPy-only ``fn`` still works in ``evaluate_stages``, slower).
        ``y`` ``(N,)``; ``pred`` ``(N,)`` or ``(N, K)``; ``w`` ``(N,)`` non-negative.
      maximize: True when larger values are better (``auc``, ``r2``, ``accuracy``). It
        is part of the metric's definition: ``best`` and ``better`` read it.
      on: ``"response"`` (``pred`` is the objective's inverse link applied to the
        margins, e.g. a probability) or ``"margin"`` (raw margins).
      needs: what the metric reads ``pred`` as, when only a response gives it:
        ``"probability"`` (``logloss``, ``error``, ``accuracy``, ``brier``),
        ``"class probabilities"`` (``mlogloss``) or ``"mean"`` (``poisson_nll``,
        ``gamma_deviance``); None when margins serve as well (``auc`` and ``merror``
        depend only on the order of ``pred``; regression metrics read the response
        as is). Training refuses such a metric, before any round, for a plain
        callable loss that has no link (``train(..., link=...)`` gives it one), whose
        margins it would otherwise score as if they were probabilities.
      grouped: a ranking metric over queries (``ndcg``, ``map``): ``fn(y, pred, idx)``
        receives the evaluation set's ``(Q, S)`` query index
        (``jaxboost.ranking.group_index``) where other metrics get ``w``; training
        then needs the set's query ids (``eval_group``).
      strata: ``fn(y, pred, w, idx=None)`` also sums within groups: when an evaluation
        set has query ids (``eval_group``), training passes its ``(Q, S)`` query index
        buckets as ``idx`` beside the weights (Cox's strata: ``cox-nloglik`` and
        ``cindex`` compare rows within a stratum, as the stratified loss does).
      host: ``fn`` is NumPy (or any Python) code run on the host, not traced: it gets
        NumPy arrays and returns a number (``jaxboost.metrics.host`` makes such a
        metric from a scikit-learn function). Training copies each evaluation set's
        predictions of a chunk of rounds to the host once and calls ``fn`` per round;
        device metrics keep their compiled program.

    Example:
      >>> import jax, numpy as np
      >>> from jaxboost.metrics import Metric
      >>> def max_abs(y, pred, w):
      ...     return jax.numpy.max(jax.numpy.where(w > 0, abs(y - pred), 0.0))
      >>> m = Metric("max_abs", max_abs)
      >>> float(jax.jit(m)(np.array([1.0, 2.0]), np.array([1.5, 0.0])))
      2.0
    """

    name: str
    fn: Callable
    maximize: bool = False
    on: str = "response"
    grouped: bool = False
    needs: str | None = None
    host: bool = False
    strata: bool = False

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"Metric name must be a non-empty str, got {self.name!r}")
        if not callable(self.fn):
            raise TypeError(
                f"Metric fn must be callable fn(y, pred, w), got {type(self.fn).__name__}"
            )
        if self.on not in _ONS:
            raise ValueError(f"Metric on= must be one of {_ONS}, got {self.on!r}")
        if self.needs is not None and self.needs not in NEEDS:
            raise ValueError(
                f"Metric needs= must be one of {tuple(NEEDS)} or None, got {self.needs!r}"
            )
        object.__setattr__(self, "maximize", bool(self.maximize))
        object.__setattr__(self, "host", bool(self.host))
        if self.host and self.grouped:
            raise ValueError(
                f"Metric {self.name!r}: a host metric cannot be grouped (ranking "
                f"metrics over queries run on the device)"
            )

    def __call__(self, y, pred, w=None):
        if self.host:
            y, pred = np.asarray(y), np.asarray(pred)
            w = np.ones(y.shape[:1], np.float32) if w is None else np.asarray(w)
            return self.fn(y, pred, w)
        # side data: a dict of (N,) arrays as well (a list is one array of labels)
        y = {k: jnp.asarray(v) for k, v in y.items()} if isinstance(y, dict) else jnp.asarray(y)
        pred = jnp.asarray(pred)
        w = jnp.ones(pred.shape[:1], jnp.result_type(float)) if w is None else jnp.asarray(w)
        return _run(self.fn, y, pred, w)

    def best(self, values) -> tuple[float, int | None]:
        """``(best value, its index)`` over a 1-D sequence, NaNs skipped.

        Ties go to the first index (the fewest rounds). ``(nan, None)`` when every
        value is NaN or the sequence is empty.

        >>> from jaxboost.metrics import get_metric
        >>> get_metric("auc").best([0.7, 0.9, 0.9, 0.8])
        (0.9, 1)
        >>> get_metric("rmse").best([float("nan"), 2.0, 1.0])
        (1.0, 2)
        """
        v = np.asarray(values, np.float64).reshape(-1)
        if v.size == 0 or np.isnan(v).all():
            return math.nan, None
        i = int(np.nanargmax(v) if self.maximize else np.nanargmin(v))
        return float(v[i]), i

    def better(self, new, old, min_delta: float = 0.0) -> bool:
        """Whether ``new`` improves on ``old`` by more than ``min_delta``.

        A finite value is better than NaN; NaN is never better.

        >>> from jaxboost.metrics import get_metric
        >>> m = get_metric("logloss")
        >>> m.better(0.30, 0.31), m.better(0.305, 0.31, min_delta=0.01)
        (True, False)
        >>> get_metric("auc").better(0.9, float("nan"))
        True
        """
        new, old = float(new), float(old)
        if math.isnan(new):
            return False
        if math.isnan(old):
            return True
        return new - old > min_delta if self.maximize else old - new > min_delta


def builtin(name, fn, *, maximize=False, on="response", needs=None, strata=False) -> Metric:
    """A built-in ``Metric`` of ``fn``, documented by ``fn``'s docstring."""
    m = Metric(name, fn, maximize=maximize, on=on, needs=needs, strata=strata)
    object.__setattr__(m, "__doc__", fn.__doc__)
    return m


def wmean(v, w):
    r"""The weighted mean :math:`\sum_i w_i v_i / \sum_i w_i`; for ``(N, T)`` values
    (several targets) the mean over every value, row ``i``'s weighing ``w_i``:
    :math:`\sum_{i,t} w_i v_{it} / (T \sum_i w_i)` (XGBoost's multi-target metrics)."""
    if v.ndim == 2:
        return jnp.sum(w[:, None] * v) / (jnp.sum(w) * v.shape[1])
    return jnp.sum(w * v) / jnp.sum(w)


#: The built-ins that are means over values: they score ``(N, T)`` predictions of
#: several targets against ``(N, T)`` labels value by value (``wmean``), and receive an
#: ``(N, L)`` array ``y`` whole (``metrics.targets.metric_targets``).
PER_VALUE = frozenset(
    ("rmse", "mae", "logloss", "error", "accuracy", "brier", "poisson_nll", "gamma_deviance")
)


def scalar_pred(name, y, pred):
    """``ValueError`` unless ``pred`` is ``(N,)`` like ``y``; for a metric of
    ``PER_VALUE`` also ``(N, T)`` like ``y``, several targets."""
    targets = name in PER_VALUE
    if targets and pred.ndim == 2 and y.shape == pred.shape:
        return
    if targets and pred.ndim == 1 and y.ndim == 2:
        raise ValueError(
            f"metric {name!r} scores one label per row, but y is an (N, L) array "
            f"{y.shape}, which does not say which part is the label: pass y as a dict "
            f"with the label under 'label' (e.g. y={{'label': counts, 'exposure': "
            f"years}}), or use a metric that reads y whole ('objective', the mean loss, "
            f"or a callable metric(y, pred))"
        )
    if pred.ndim != 1:
        raise ValueError(
            f"metric {name!r} needs one prediction per row, shape (N,); got "
            f"shape {pred.shape} (for (N, K) outputs use mlogloss or merror)"
        )
    if y.shape != pred.shape:
        raise ValueError(f"metric {name!r}: y has shape {y.shape}, pred {pred.shape}")


def vector_pred(name, y, pred):
    """``ValueError`` unless ``pred`` is ``(N, K)`` for ``y`` ``(N,)``."""
    if pred.ndim != 2:
        raise ValueError(
            f"metric {name!r} needs (N, K) class probabilities; got shape "
            f"{pred.shape} (a scalar-output model)"
        )
    if y.shape != pred.shape[:1]:
        raise ValueError(f"metric {name!r}: y has shape {y.shape}, pred {pred.shape}")
