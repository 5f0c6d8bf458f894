"""Exceptions raised by jaxboost.

The one module of jaxboost's exceptions and warnings. Every error says what was wrong
and what was expected. Data problems are
``ValueError`` subclasses so code written for scikit-learn or XGBoost catches them.
"""


class DataError(ValueError):
    """Input data (X, y, sample_weight, base_margin) has the wrong shape or values."""


class LossError(ValueError):
    """A user's loss misbehaved: non-scalar output per row, or non-finite g or h.

    ``round`` is the boosting round (0-based) at which it was detected, or ``None``
    when it was detected before training from the loss's output shape.
    ``n_rows`` is the number of rows whose g or h was NaN or infinite.
    ``booster`` holds the model trained up to the last good round, when there is one,
    so no work is lost.
    """

    def __init__(self, message, *, round=None, n_rows=None, booster=None):
        super().__init__(message)
        self.round = round
        self.n_rows = n_rows
        self.booster = booster


class MetricError(ValueError):
    """A host metric (``jaxboost.metrics.host``) raised, or returned something other than
    one finite number.

    ``metric`` and ``data`` name the metric and the evaluation set; ``round`` is the
    boosting round (0-based, of this call) it was scoring, or ``None`` when the check
    before training (on the starting predictions) failed. ``booster`` holds the model of
    the rounds before ``round`` (with their history), when there are any, so no work is
    lost.
    """

    def __init__(self, message, *, metric=None, data=None, round=None, booster=None):
        super().__init__(message)
        self.metric = metric
        self.data = data
        self.round = round
        self.booster = booster


class ModelFormatError(ValueError):
    """A model file (or its parsed dict) is not a valid model: raised by both readers,
    ``jaxboost.load`` / ``loads`` / ``from_dict`` and ``jaxboost.from_xgboost``, for
    every input they refuse (malformed, unsupported, over a size limit, not a regular
    file).

    The message names the offending key, e.g. ``trees.feature[3][0]``, and what was
    expected there.
    """


class NativeKernelWarning(RuntimeWarning):
    """The native kernel could not be used; training falls back to pure JAX."""


class HessianWarning(UserWarning):
    """The Hessian the trees use cannot help on some rows: it is negative (for ``K x K``
    Hessians: not positive semi-definite) or zero where the gradient is not, so Newton
    leaves are wrong or 0. Emitted once per training call with the share of rows and the
    round (the worst seen), and the options (``hessian="clip"``, ``"constant"``,
    ``refit="newton"`` or ``"quantile"``); also when a plain loss whose Hessian is 0 on
    every row is switched to ``hessian="constant"`` (see ``jaxboost.train``)."""
