"""Exceptions raised by jaxboost.

The one module of jaxboost's exceptions and warnings. Every error says what was wrong
and what was expected. Data problems are
``ValueError`` subclasses so code written for scikit-learn or XGBoost catches them.

No work is lost: an exception that ends ``train`` (or ``train_many``) once its rounds
have started, of any type (``LossError``, ``NonFiniteError``, a callback's own
exception, ``KeyboardInterrupt``), carries the model of the rounds completed before it
as ``error.booster`` (``train``; None when no round completed) and
``error.boosters`` (one per configuration; ``train_many``), and a note saying so.
"""


class DataError(ValueError):
    """Input data (X, y, sample_weight, base_margin) has the wrong shape or values."""


class LossError(ValueError):
    """A user's loss misbehaved: non-scalar output per row; non-finite g or h; a
    non-finite loss value (g and h finite: e.g. ``jnp.log`` of a negative number, or
    ``jnp.where(cond, nan, loss)``, whose gradient is 0); or g and h so large (or h so
    close to 0) that the trees' node sums, gains or leaf values overflow float32.

    ``round`` is the boosting round (0-based) at which it was detected, or ``None``
    when it was detected before training from the loss's output shape.
    ``n_rows`` is the number of rows whose g, h or loss value was NaN or infinite (of
    tree nodes, when node sums or leaf values overflowed).
    ``booster`` holds the model trained up to the last good round, when there is one,
    so no work is lost. (Any other exception that ends ``train`` after its rounds
    started carries the rounds completed the same way, as ``error.booster``.)
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


class NonFiniteError(ValueError):
    """Training met NaN or infinite numbers that the loss did not cause.

    ``cause`` names what did: ``"sample_weight"`` (weighted g or h, or the node sums of
    h, beyond float32), ``"learning_rate"`` (leaf values or margins beyond float32
    after the learning rate scaled them), ``"base_margin"`` (margins beyond float32
    from the start margins). ``round``, ``n_rows`` and ``booster`` are as for
    ``LossError``: the round (0-based, of this call) at which it was detected, the
    rows (or tree nodes) affected, and the model trained before that round (None when
    no round completed).
    """

    def __init__(self, message, *, cause=None, round=None, n_rows=None, booster=None):
        super().__init__(message)
        self.cause = cause
        self.round = round
        self.n_rows = n_rows
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


class CheckpointWarning(RuntimeWarning):
    """A ``jaxboost.callbacks.Checkpoint`` could not write its file (full disk, a
    directory removed, no permission): training goes on, and the previous checkpoint
    file, if any, is left as it was."""


class EarlyStoppingWarning(UserWarning):
    """The metric early stopping watches was not a finite number at some round (NaN:
    AUC of a one-class evaluation set; -inf: r2 of constant labels). Such a round is
    never the best one; while no round has had a finite value, training goes on (it is
    never cut to nothing), after one it counts towards the patience. Emitted once per
    training call, naming the metric, the evaluation set, the value and the round."""


class ConfigurationWarning(UserWarning):
    """``train_many``: some configurations failed (a ``LossError`` or
    ``NonFiniteError``: NaN or overflow in their rounds) while the others trained whole.
    Their entries in the returned list hold the model of the rounds before the failure
    (``None`` when none), with the error as ``booster.error``; the warning lists each
    failed configuration with its message."""


class HessianWarning(UserWarning):
    """The Hessian the trees use cannot help on some rows: it is negative (for ``K x K``
    Hessians: not positive semi-definite) or zero where the gradient is not, so Newton
    leaves are wrong or 0. Emitted once per training call with the share of rows and the
    round (the worst seen), and the options that work for the loss's shape
    (``hessian="clip"``, ``"constant"``; for one output also ``refit="exact"``,
    ``"newton"`` or ``"quantile"``); also when a plain loss whose Hessian is 0 on
    every row is switched to ``hessian="constant"`` (see ``jaxboost.train``)."""


class DataWarning(UserWarning):
    """Training data that trains, but probably not as meant: features whose distinct
    float64 values float32 cannot tell apart (jaxboost bins in float32, as XGBoost
    does), sample weights so small that the weighted Hessians fall below
    ``min_child_weight`` and float32's normal range, or a sparse ``X`` that settings
    such as constraints make train on dense bins of a GiB or more. The message names
    the column, the weights or the setting, shows the values and says what to do."""


class MetricWarning(UserWarning):
    """A metric of your own (a plain callable) whose name says larger is better
    (``accuracy``, ``auc``, ``f1``, ...) but that has no ``maximize`` attribute, so it is
    minimised: early stopping and ``best_iteration`` would keep its worst round. Set
    ``fn.maximize = True`` (or ``False`` to say it is meant) to silence it."""


class TuningWarning(UserWarning):
    """``jaxboost.tune``: the hypergradient of every tuned parameter is exactly 0 at the
    start (a piecewise-constant validation loss, or parameters the model does not
    depend on), so the optimiser cannot move and the result is the start point."""


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn``, called in the function that warns, that
    points at the first caller outside the ``jaxboost`` package (the user's line)."""
    import os
    import sys

    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level
