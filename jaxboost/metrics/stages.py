"""Learning curves: a metric after every boosting round, in one compiled loop.

``evaluate_stages(metric, y, stages)`` scores the ``(R, N)`` (or ``(R, N, K)``)
predictions of ``Booster.staged_predict`` round by round; ``compare`` and the plots
draw their curves with it.
"""

from __future__ import annotations

import functools

import jax
import numpy as np

from .custom import _MeanLoss
from .registry import BUILTIN, get_metric

_STAGE_BLOCK = 1 << 22  # elements of pred evaluated at once (bounds the memory of vmap)


@functools.partial(jax.jit, static_argnames=("fn", "batch_size"))
def _staged(fn, y, stages, w, batch_size):
    return jax.lax.map(lambda p: fn(y, p, w), stages, batch_size=batch_size)


def _is_builtin(fn) -> bool:
    return isinstance(fn, _MeanLoss) or any(fn is m.fn for m in BUILTIN.values())


def evaluate_stages(metric, y, stages, w=None) -> np.ndarray:
    """A metric after every boosting round: ``(R,)`` float64 NumPy array.

    Args:
      metric: a ``Metric`` (or anything ``get_metric`` accepts, except ``"objective"``).
      y: ``(N,)`` labels, or side data (a dict of ``(N,)`` arrays, an ``(N, L)``
        array) for a metric that reads it, such as a loss's own (``"objective"``).
      stages: ``(R, N)`` or ``(R, N, K)`` predictions after each of ``R`` rounds, e.g.
        ``Booster.staged_predict(X)`` (responses) or with ``output_margin=True``
        (margins) as ``metric.on`` says.
      w: optional ``(N,)`` row weights.

    One jit-compiled loop over the stages (blocks of stages vmapped), compiled once per
    metric and shape. A host metric (``metrics.host``), or one whose function cannot be
    traced (NumPy-only code, e.g. a scikit-learn function), is evaluated stage by stage
    on NumPy arrays instead.

    Example:
      >>> import numpy as np
      >>> stages = np.array([[0.4, 0.6], [0.2, 0.9]])
      >>> evaluate_stages("logloss", np.array([0.0, 1.0]), stages).round(4)
      array([0.5108, 0.1643])
    """
    metric = get_metric(metric)
    if metric.grouped:
        raise ValueError(
            f"metric {metric.name!r} ranks rows within queries; evaluate it "
            f"with jaxboost.ranking on each stage and the query index"
        )
    stages = np.asarray(stages)
    if stages.ndim < 2:
        raise ValueError(f"stages must be (R, N) or (R, N, K), got shape {stages.shape}")
    # labels, or side data (a dict of arrays, an (N, L) array) for a loss's own metric
    y = jax.tree.map(lambda a: np.asarray(a, np.float32), y)
    n = jax.tree.leaves(y)[0].shape[0]
    w = np.ones(n, np.float32) if w is None else np.asarray(w, np.float32)
    n_stages = stages.shape[0]
    if n_stages == 0:
        return np.zeros(0, np.float64)
    if metric.host:  # NumPy code (metrics.host): on the host, stage by stage
        from .host import host_value

        return np.array(
            [host_value(metric, y, stages[r], w, finite=False) for r in range(n_stages)], np.float64
        )
    per_stage = max(1, int(np.prod(stages.shape[1:])))
    batch = int(min(n_stages, max(1, _STAGE_BLOCK // per_stage)))
    fn = metric.fn
    try:
        hash(fn)
        cached = True
    except TypeError:
        cached = False
    try:
        if cached:
            out = _staged(fn, y, stages, w, batch)
        else:
            out = jax.jit(lambda y, s, w: jax.lax.map(lambda p: fn(y, p, w), s, batch_size=batch))(
                y, stages, w
            )
        return np.asarray(out, np.float64).reshape(n_stages)
    except Exception:
        if _is_builtin(fn):
            raise
    # Not traceable by JAX: one call per stage on NumPy arrays.
    return np.array([float(np.asarray(fn(y, stages[r], w))) for r in range(n_stages)], np.float64)
