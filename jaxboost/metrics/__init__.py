r"""Evaluation metrics: weighted, pure ``jax.numpy`` and jittable.

Where the journey is measured: training evaluates them on the evaluation sets after
every round (``jaxboost.training.evaluation``), ``compare`` and the plots on staged
predictions. As ``objectives/`` holds the losses, this package holds the metrics, one
module per family: ``regression``, ``classification``, ``survival`` and ``ranking``
(with their NumPy-facing functions, public as ``jaxboost.survival`` and
``jaxboost.ranking``);
``_base`` the ``Metric`` record, ``custom`` metrics made from callables (the
objective's own loss, a user's function), ``registry`` the built-ins by name and
``get_metric``, ``stages`` learning curves (``evaluate_stages``), ``host`` NumPy or
scikit-learn functions marked to run on the host (``host(fn)``).

A ``Metric`` wraps a function ``fn(y, pred, w) -> scalar`` with what a training or
comparison loop needs beside it: its ``name``, whether larger is better (``maximize``)
and whether ``pred`` is the objective's response (``on="response"``: the inverse link
applied to the margins, e.g. a probability) or the raw margin (``on="margin"``).

Shapes: ``y`` is ``(N,)``; ``pred`` is ``(N,)``, or ``(N, K)`` for vector-output models
(``mlogloss``, ``merror``); ``w`` is ``(N,)`` of non-negative row weights. Every
built-in is a weighted mean or ratio, so weights that are all equal give the
unweighted value. A metric that gets the wrong ``pred`` shape (e.g. ``mlogloss`` on a
scalar model) raises ``ValueError`` while tracing.

Built-ins (``get_metric(name)``):

=================  ========  =============================================================
name               maximize  value
=================  ========  =============================================================
``rmse``           no        root of the weighted mean squared error
``mae``            no        weighted mean absolute error
``r2``             yes       coefficient of determination
``logloss``        no        binary cross-entropy of a probability (clipped, see ``EPS``)
``error``          no        binary error rate at threshold 0.5
``accuracy``       yes       1 - ``error``
``auc``            yes       area under the ROC curve (exact, ties count one half)
``brier``          no        mean squared error of a probability clipped to [0, 1]
``mlogloss``       no        multi-class cross-entropy of ``(N, K)`` probabilities
``merror``         no        multi-class error rate of the argmax
``poisson_nll``    no        Poisson negative log-likelihood of a mean ``mu``
``gamma_deviance`` no        gamma deviance of a mean ``mu``
``cox-nloglik``    no        Cox negative log partial likelihood per event (margins)
``cindex``         yes       Harrell's concordance index of survival times (margins)
``objective``      no        the model's own training loss at the margins (as ``loss``)
=================  ========  =============================================================

A NumPy or scikit-learn function cannot be traced: mark it ``host(fn, maximize=...)``
and training calls it on the host, on NumPy predictions copied once per chunk of rounds
(the cost is in ``host``'s docstring); it drives early stopping like any metric.

Example:
  >>> import numpy as np
  >>> from jaxboost import metrics
  >>> y = np.array([0.0, 1.0, 1.0, 0.0]); p = np.array([0.1, 0.8, 0.25, 0.3])
  >>> round(float(metrics.get_metric("auc")(y, p)), 4)
  0.75
  >>> round(float(metrics.auc(y, p, w=np.array([1.0, 1.0, 0.0, 1.0]))), 4)
  1.0
"""

from ._base import EPS, NEEDS, Metric
from .classification import accuracy, auc, brier, error, logloss, merror, mlogloss
from .custom import objective_metric
from .host import host
from .registry import get_metric, names
from .regression import gamma_deviance, mae, poisson_nll, r2, rmse
from .stages import evaluate_stages
from .survival import cindex, cox_nloglik

__all__ = [
    "EPS",
    "NEEDS",
    "Metric",
    "get_metric",
    "objective_metric",
    "evaluate_stages",
    "names",
    "host",
    "rmse",
    "mae",
    "r2",
    "logloss",
    "error",
    "accuracy",
    "auc",
    "brier",
    "mlogloss",
    "merror",
    "poisson_nll",
    "gamma_deviance",
    "cox_nloglik",
    "cindex",
]
