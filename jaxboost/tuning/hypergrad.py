r"""``hypergrad``: the gradient of a validation loss with respect to the loss's and the
booster's continuous hyperparameters, through a boosting run whose tree structures are
held fixed.

A grid search asks "which focal ``gamma``, Huber ``delta`` or ``reg_lambda`` gives the
best validation loss?" with one full training run per grid point. Given the splits of
one run, the leaf values are closed-form Newton steps of sums of g and h, smooth in
every loss hyperparameter, in ``reg_lambda``, ``reg_alpha``, the learning rate and the
Hessian floor; so the validation loss of the run is a smooth function of them and JAX
differentiates it (``jaxboost.engine.replay`` has the math).

What "structures held fixed" means: the derivative is that of the run with the same
split features, thresholds and default directions, i.e. of a grid search in which no
split changes. It is exact for small steps while no split would change, and it cannot
see a split that a new value would choose (a piecewise-constant effect): near a value
where a structure changes, the true validation loss may jump, and only retraining
shows by how much. ``jaxboost.tuning.tune`` retrains every few steps for that reason.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import objectives as catalogue
from objectives import Objective
from objectives._base import Hyperparameters

from .._types import float32_programs
from ..engine import replay as R
from ..engine.autodiff import loss_name, split_loss, takes_keyword
from ..errors import DataError, NonFiniteError
from ..inputs.numbers import is_real
from ..training.options import defaults, names

BOOSTER_PARAMS = R.REPLAY_FIELDS
"""The booster's hyperparameters ``hypergrad`` differentiates (beside the loss's own)."""

STRUCTURAL = names(hypergrad="structural")
"""Settings that choose the trees' structure (or their number): no gradient."""

NOT_REPLAYED = names(hypergrad="not_replayed")
"""``train`` options a replay does not follow (or that ``hypergrad`` sets itself)."""

SMOOTH_METRICS = ("rmse", "mae", "r2", "logloss", "brier", "poisson_nll", "gamma_deviance")
"""Built-in metrics with a gradient in the margins (``error``, ``accuracy``, ``auc``
and the ranking metrics are piecewise constant: their gradient is 0 almost
everywhere, so they are refused)."""

MISMATCH_TOL = 1e-3
"""Largest difference allowed between the replayed validation margins at the initial
parameters and the trained model's, relative to ``1 + max |margin|``; beyond it the
replay does not describe the model and ``hypergrad`` raises."""


@dataclasses.dataclass(frozen=True)
class HypergradResult:
    """What ``hypergrad`` returns.

    Attributes:
      value: the validation loss of the run at ``params`` (as the replay computes it:
        the trained model's validation loss, to float rounding).
      grads: ``{name: d value / d param}`` for each name of ``params``.
      params: the parameters, as numbers.
      booster: the ``Booster`` whose structures were replayed.
      maximize: True when ``value`` is a metric to maximise (``"r2"``).
      max_margin_diff: the largest difference between the replayed and the model's
        validation margins (a check that the replay describes the model).
    """

    value: float
    grads: dict
    params: dict
    booster: Any
    maximize: bool = False
    max_margin_diff: float = 0.0
    replay: Any = dataclasses.field(default=None, repr=False, compare=False)

    def at(self, params: dict) -> tuple:
        """``(value, grads)`` of the same run (same structures) at other ``params``
        values (a dict over the same names; names left out keep their values): what
        the fixed-structure model gives there, e.g. for a finite-difference check.

        Example:
          >>> # value, grads = result.at({"delta": 1.1})
        """
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            raise TypeError(
                f"at(): {unknown} not among the differentiated parameters {sorted(self.params)}"
            )
        values = dict(self.params)
        values.update({k: float(v) for k, v in params.items()})
        value, grads, _ = self.replay.value_and_grad(values)
        return value, grads


# --- the validation loss -------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _RowMean:
    """``(y, margin, w) -> weighted mean of loss(y, margin)`` (hashable: a static arg)."""

    loss: Any

    def __call__(self, y, f, w):
        try:
            per_row = jax.vmap(self.loss)(y, f)
        except (
            jax.errors.TracerArrayConversionError,
            jax.errors.ConcretizationTypeError,
            jax.errors.TracerBoolConversionError,
            jax.errors.TracerIntegerConversionError,
        ) as e:
            name = loss_name(self.loss)
            raise TypeError(
                f"val_loss {name!r} is not a JAX function: tune and hypergrad call it per "
                f"row, inside jax.grad, as loss(y, margin) on JAX tracers, and it turned "
                f"them into NumPy values or Python numbers ({type(e).__name__}). A NumPy or "
                f"scikit-learn metric cannot be differentiated; pass a built-in metric name "
                f"(e.g. val_loss='rmse' or 'logloss') or write the per-row loss with "
                f"jax.numpy, e.g. lambda y, f: (y - f) ** 2"
            ) from None
        per_row = per_row.astype(f.dtype)
        return jnp.sum(w * per_row) / jnp.sum(w)


@dataclasses.dataclass(frozen=True)
class _OnResponse:
    """A ``Metric``'s ``fn(y, pred, w)`` read through the objective's inverse link."""

    fn: Any
    link: Any

    def __call__(self, y, f, w):
        return self.fn(y, f if self.link is None else self.link(f), w)


def validation_loss(val_loss, objective, tuned_loss_params):
    """``(fn, maximize, name)``: ``fn(y, margin, w) -> scalar`` of ``val_loss``.

    ``val_loss`` may be a built-in metric's name or a ``Metric`` (read through the
    objective's link when it scores responses), an ``objectives`` entry or any per-row
    ``loss(y, margin)`` (weighted mean over rows), or None: the objective's own loss,
    allowed only when no loss hyperparameter is tuned (tuning ``gamma`` of the focal
    loss against the focal loss itself rewards ``gamma`` for shrinking the loss, not
    for predicting better).
    """
    from .. import metrics as M

    if val_loss is None:
        if tuned_loss_params:
            raise TypeError(
                f"hypergrad tunes the loss hyperparameter(s) {sorted(tuned_loss_params)} of "
                f"{loss_name(objective)}; scoring them with that same loss would reward "
                f"changing the loss's scale rather than the predictions. Pass val_loss=, "
                f"e.g. 'logloss' or 'rmse' (a metric name), objectives.logistic, or any "
                f"loss(y, margin)"
            )
        return _RowMean(objective), False, "loss"
    if isinstance(val_loss, (str, M.Metric)):
        m = M.get_metric(val_loss, objective=objective)
        key = val_loss.strip().lower() if isinstance(val_loss, str) else m.name
        if key == "objective":
            return validation_loss(None, objective, tuned_loss_params)
        if (
            m.host
            or m.grouped
            or (key not in SMOOTH_METRICS and not isinstance(val_loss, M.Metric))
        ):
            raise ValueError(
                f"val_loss {key!r} has no useful gradient (piecewise constant, on the "
                f"host, or over groups); use one of {SMOOTH_METRICS}, a Metric written in "
                f"JAX, or a per-row loss(y, margin)"
            )
        link = None
        if m.on == "response":
            from ..training.evaluation import check_metric_links, link_of

            check_metric_links(m, objective)
            link = link_of(objective)
        return _OnResponse(m.fn, link), m.maximize, m.name
    if callable(val_loss):
        return _RowMean(val_loss), False, loss_name(val_loss)
    raise TypeError(
        f"val_loss must be a metric name, a Metric, a per-row "
        f"loss(y, margin) or None, got {type(val_loss).__name__}"
    )


# --- parameters ----------------------------------------------------------------------------
LOSS_KEY = "loss"
"""The key of ``params`` (and ``bounds``) whose dict holds the loss's own keywords:
``params={"loss": {"gamma": 2.0}, "reg_lambda": 1.0}``."""


def flat_params(params, bounds=None):
    """``(flat_params, flat_bounds, loss_keys)``: ``params`` with its ``"loss"`` dict
    (the loss's keywords, a namespace of their own) merged in by bare name, the same
    for ``bounds``, and the names that came from the ``"loss"`` dict.

    A loss keyword may then share a name with a tree parameter that is not tuned (the
    trees' ``gamma`` is structural); one named like a differentiable booster parameter
    (``reg_lambda``, ...) or given twice is refused (``TypeError``): the results are
    keyed by bare names.

    Example:
      >>> flat_params({"loss": {"gamma": 2.0}, "reg_lambda": 1.0})
      ({'reg_lambda': 1.0, 'gamma': 2.0}, None, frozenset({'gamma'}))
    """

    def split(d, what):
        if not isinstance(d, dict) or not isinstance(d.get(LOSS_KEY), dict):
            return d, {}
        rest = {k: v for k, v in d.items() if k != LOSS_KEY}
        inner = d[LOSS_KEY]
        for k in inner:
            if not isinstance(k, str):
                raise TypeError(f"{what}['loss'] keys must be the loss's keyword names, got {k!r}")
            if k in rest:
                raise TypeError(
                    f"{k!r} is given both in {what}['loss'] and at the top "
                    f"level of {what}; give it once"
                )
            if k in BOOSTER_PARAMS:
                raise TypeError(
                    f"the loss keyword {k!r} has the name of a booster "
                    f"parameter ({', '.join(BOOSTER_PARAMS)}): results are "
                    f"keyed by name, so rename the loss's keyword"
                )
        return rest, inner

    rest, inner = split(params, "params")
    out_bounds = bounds
    if bounds is not None:
        b_rest, b_inner = split(bounds, "bounds")
        out_bounds = {**b_rest, **b_inner}
    if not inner:
        return params, out_bounds, frozenset()
    return {**rest, **inner}, out_bounds, frozenset(inner)


def split_params(objective, params, train_kwargs, loss_keys=frozenset()):
    """``(loss_values, booster_values)``: flat ``params`` split into the loss's traced
    hyperparameters and ``BOOSTER_PARAMS`` (``TypeError`` / ``ValueError`` for a name
    that is neither, or that chooses structures); ``loss_keys``, the names that came
    from the loss's own namespace (``flat_params``), are the loss's whatever they are
    called."""
    if not isinstance(params, dict) or not params:
        raise TypeError(
            f"params must be a non-empty dict {{name: number}} of the "
            f"hyperparameters to differentiate, got {params!r}"
        )
    if isinstance(objective, Hyperparameters):
        _, loss_vals = objective.traced_split()
        loss_names = set(loss_vals)
    else:
        loss_names = None  # a plain callable: its keywords are what it accepts
    loss_values, booster_values = {}, {}
    for name, v in params.items():
        if not isinstance(name, str):
            raise TypeError(f"params keys must be names, got {name!r}")
        if not is_real(v) or not math.isfinite(float(v)):
            raise ValueError(f"params[{name!r}] must be a finite number, got {v!r}")
        if name in train_kwargs and name not in loss_keys:
            raise TypeError(
                f"{name!r} is given both in params and as a keyword argument; "
                f"give it once, in params"
            )
        if name in loss_keys:
            if loss_names is not None and name not in loss_names:
                raise TypeError(
                    f"params['loss'] has {name!r}, not a differentiable "
                    f"hyperparameter of {loss_name(objective)}: "
                    f"{sorted(loss_names)}"
                )
            loss_values[name] = float(v)
        elif loss_names is not None and name in loss_names:
            loss_values[name] = float(v)
        elif name in BOOSTER_PARAMS:
            booster_values[name] = float(v)
        elif name in STRUCTURAL:
            clash = loss_names is None and takes_keyword(objective, name)
            raise ValueError(
                f"{name!r} chooses the trees' structure, which has no gradient (a split is "
                f"made or not); differentiable parameters: {_allowed(objective)}"
                + (
                    f". Your loss also takes a keyword {name!r}: tune that one in the "
                    f"loss's own namespace, params={{'loss': {{{name!r}: {float(v)!r}}}}}"
                    if clash
                    else ""
                )
            )
        elif loss_names is None:
            loss_values[name] = float(v)  # a keyword of the user's loss
        else:
            raise TypeError(
                f"unknown parameter {name!r}; differentiable parameters of "
                f"{loss_name(objective)}: {_allowed(objective)}"
            )
    return loss_values, booster_values


def _allowed(objective) -> list:
    out = list(BOOSTER_PARAMS)
    if isinstance(objective, Hyperparameters):
        out = sorted(objective.traced_split()[1]) + out
    else:
        out = ["<keywords of your loss>"] + out
    return out


def _check_train_kwargs(train_kwargs):
    for k in NOT_REPLAYED:
        if k in train_kwargs:
            raise ValueError(
                f"hypergrad does not support {k}=: the replay recomputes the leaf values "
                f"of one single-output run from its first round (put loss hyperparameters "
                f"in params)"
            )
    lr = train_kwargs.get("learning_rate")
    if lr is not None and callable(lr):
        raise TypeError(
            "hypergrad needs a number for learning_rate (a schedule is not "
            "differentiated); put it in params to tune it"
        )


def dense_features(booster, X) -> np.ndarray:
    """``X`` as the model reads it, dense float32 (a sparse matrix densified block by
    block, NaN where absent: the replay routes every row through every tree)."""
    return booster._by_blocks(lambda Xd, _: np.asarray(Xd, np.float32), booster._features(X))


def _put(x, dtype):
    """``x`` on the device as ``dtype`` (converted on the host: no program compiled)."""
    return jax.device_put(np.asarray(x, dtype))


# --- the program -----------------------------------------------------------------------------
@functools.partial(jax.jit, static_argnums=(0,))
def _value_and_grad(spec, data, theta):
    return jax.value_and_grad(R.replay_loss, argnums=2, has_aux=True)(spec, data, theta)


@dataclasses.dataclass
class Replay:
    """A trained run ready to be replayed at other parameters (``tune`` reuses one
    between retrainings). Build with ``Replay.of``; call ``value_and_grad(values)``."""

    spec: Any
    data: Any
    theta0: Any
    booster: Any
    dtype: Any
    names: tuple

    @staticmethod
    def of(
        booster,
        settings,
        X,
        y,
        sample_weight,
        X_val,
        y_val,
        val_weight,
        val_fn,
        *,
        float64=False,
        segment=None,
    ):
        dtype = jnp.float64 if float64 else jnp.float32
        with jax.enable_x64(float64):
            Xf, Xv = (dense_features(booster, A) for A in (X, X_val))
            n_rounds = booster.n_rounds
            P = booster.num_parallel_tree
            S, L = R.layout(n_rounds, segment)
            trees, active, rounds = R.stack_rounds(booster.ensemble, n_rounds, P, L)
            put = functools.partial(_put, dtype=np.float64 if float64 else np.float32)
            w = np.ones(len(Xf)) if sample_weight is None else sample_weight
            wv = np.ones(len(Xv)) if val_weight is None else val_weight
            family, values = settings["family"], settings["loss_values"]
            c0 = put(booster.base_margin)
            yd = put(np.asarray(y, np.float64))
            wd = put(np.asarray(w, np.float64))
            G0, H0 = R.intercept_sums(family, {k: put(v) for k, v in values.items()}, yd, wd, c0)
            data = R.ReplayData(
                jax.device_put(Xf),
                yd,
                wd,
                jax.device_put(Xv),
                put(np.asarray(y_val, np.float64)),
                put(np.asarray(wv, np.float64)),
                jax.tree.map(jax.device_put, trees),
                jax.device_put(active),
                jax.device_put(rounds),
                jax.device_put(np.int32(settings["seed"])),
                put(settings["subsample"]),
                c0,
                G0,
                H0,
            )
            spec = R.ReplaySpec(
                family,
                val_fn,
                booster.params.max_depth,
                settings["hessian"],
                P,
                settings["subsample"] < 1 and not settings["bootstrap"],
                settings["bootstrap"],
                L,
                settings["fit_intercept"],
                settings["refit"],
            )
            b = settings["booster_values"]
            theta0 = R.Theta(
                *(put(b[k]) for k in BOOSTER_PARAMS),
                put(booster.params.min_child_weight),
                {k: put(v) for k, v in values.items()},
            )
        return Replay(spec, data, theta0, booster, dtype, tuple(BOOSTER_PARAMS))

    def theta(self, values: dict):
        """``Theta`` at the initial parameters with ``values`` replaced."""
        put = functools.partial(_put, dtype=np.float64 if self.dtype == jnp.float64 else np.float32)
        t = self.theta0
        loss = dict(t.loss_params)
        fields = {}
        for k, v in values.items():
            if k in loss:
                loss[k] = put(v)
            else:
                fields[k] = put(v)
        return t._replace(loss_params=loss, **fields)

    def value_and_grad(self, values: dict):
        """``(value, grads, f_val)`` at ``values`` (a dict of every tuned parameter)."""
        # x64 on for the whole trace, float32 or not: the refit and split code open
        # scoped float64 regions, and the reverse pass must see the same setting.
        with jax.enable_x64(True):
            (value, f_val), g = _value_and_grad(self.spec, self.data, self.theta(values))
            grads = {
                k: float(g.loss_params[k]) if k in g.loss_params else float(getattr(g, k))
                for k in values
            }
            return float(value), grads, np.asarray(f_val)


# --- the public call ----------------------------------------------------------------------------
def check_validation_set(X, X_val, y_val, val_weight, y=None) -> None:
    """``DataError`` (before any training) when the validation set does not fit: its
    features' count differs from ``X``'s, its labels or weights are not one finite
    number per row; ``ValueError`` for side data in ``y`` (not replayed)."""
    from ..inputs.arrays import as_features, as_labels, as_weights, is_side_data

    if y is not None and is_side_data(y):
        raise ValueError(
            "hypergrad and tune take one label per row, y of shape (N,); "
            "side data (a dict or an (N, L) array) and several targets are not replayed"
        )

    try:
        Xv = as_features(X_val, name="X_val", allow_inf=True, sparse="csr")
        as_labels(y_val, Xv.shape[0])
        as_weights(val_weight, Xv.shape[0])
    except DataError as e:
        raise DataError(f"validation set (X_val, y_val, val_weight): {e}") from None
    n_features = X.shape[1] if len(getattr(X, "shape", np.shape(X))) == 2 else None
    if n_features is not None and Xv.shape[1] != n_features:
        raise DataError(f"X_val has {Xv.shape[1]} features, X has {n_features}")


def prepare(objective, params, val_loss, train_kwargs, loss_keys=frozenset()):
    """Validated ``(objective, loss_values, booster_values, val_fn, maximize)`` of flat
    ``params`` (``flat_params``; ``loss_keys`` the names from the loss's namespace)."""
    objective = catalogue.resolve(objective)
    if isinstance(objective, Hyperparameters) and not isinstance(objective, Objective):
        raise ValueError(
            f"hypergrad replays per-row losses; {loss_name(objective)} is a group loss"
        )
    if isinstance(objective, Objective) and objective.outputs != 1:
        raise ValueError(
            f"hypergrad replays single-output losses; {loss_name(objective)} "
            f"has {objective.outputs or 'one per class'} outputs per row"
        )
    _check_train_kwargs(train_kwargs)
    loss_values, booster_values = split_params(objective, params, train_kwargs, loss_keys)
    # A response metric reads the margins through the model's link: train's link= for
    # a loss of your own, as the trained model will have it.
    scored = objective
    if train_kwargs.get("link") is not None:
        from objectives import attach_link, resolve_link

        from ..training.config import check_link

        check_link(resolve_link(train_kwargs["link"]), 1)
        scored = attach_link(objective, train_kwargs["link"], 1)
    val_fn, maximize, _ = validation_loss(val_loss, scored, loss_values)
    return objective, loss_values, booster_values, val_fn, maximize


def objective_at(objective, loss_values):
    """``(loss to train, loss_params)`` with the loss hyperparameters ``loss_values``."""
    if isinstance(objective, Hyperparameters):
        return (objective.with_params(**loss_values) if loss_values else objective), None
    return objective, (dict(loss_values) if loss_values else None)


def settings_of(objective, loss_values, booster_values, train_kwargs):
    """What the replay needs to know of a run (beside its Booster)."""
    from ..training.config import resolve_policies

    loss, loss_params = objective_at(objective, loss_values)
    family, values = split_loss(loss, loss_params)
    b = defaults(BOOSTER_PARAMS)
    b.update({k: train_kwargs[k] for k in b if k in train_kwargs})
    b.update(booster_values)
    hessian, refit = resolve_policies(
        loss, train_kwargs.get("hessian", "auto"), train_kwargs.get("refit", "auto"), 1, None
    )
    if refit == "quantile":
        raise ValueError(
            f"{loss_name(loss)} refits its leaves to exact quantiles of the residuals "
            f"(refit='quantile'), which do not change with the hyperparameters (their "
            f"gradient is 0): pass refit=None (Newton leaves) or refit='newton' to tune "
            f"it by gradients, and train the final model the same way"
        )
    if refit == "exact":
        raise ValueError(
            "refit='exact' finds each leaf by bisection, which the replay cannot "
            "differentiate: pass refit='newton' (damped Newton steps on the same loss, "
            "replayed with their gradients) or refit=None, and train the final model "
            "the same way"
        )
    return dict(
        family=family,
        loss_values=values,
        booster_values=b,
        hessian=hessian,
        seed=int(train_kwargs.get("seed") or 0),
        subsample=float(train_kwargs.get("subsample", 1.0)),
        bootstrap=bool(train_kwargs.get("bootstrap", False)),
        fit_intercept=True,
        loss=loss,
        loss_params=loss_params,
        refit=refit,
    )


def train_run(settings, X, y, n_rounds, sample_weight, train_kwargs):
    """The Booster of a run at ``settings`` (its structures are what is replayed)."""
    from ..training.train import train

    kw = dict(train_kwargs)
    kw.pop("refit", None)  # resolved in settings_of
    kw.update(settings["booster_values"])
    kw.setdefault("verbose", False)
    return train(
        settings["loss"],
        X,
        y,
        n_rounds=n_rounds,
        refit=settings["refit"],
        loss_params=settings["loss_params"],
        sample_weight=sample_weight,
        **kw,
    )


@float32_programs
def hypergrad(
    objective,
    X,
    y,
    X_val,
    y_val,
    *,
    params: dict,
    val_loss=None,
    n_rounds: int = 100,
    sample_weight=None,
    val_weight=None,
    float64: bool = False,
    segment=None,
    **train_kwargs,
) -> HypergradResult:
    r"""Validation loss and its gradient in continuous hyperparameters, through one
    boosting run with its tree structures held fixed.

    Trains ``train(objective, X, y, n_rounds=n_rounds, **params, **train_kwargs)``
    (loss hyperparameters set on the objective), then replays the run with every leaf
    value recomputed as a function of the parameters (``jaxboost.engine.replay``): per
    round :math:`v_l = \eta\,\mathrm{clip}(-T_\alpha(G_l) / (H_l + \lambda))` of the
    sums of g and h of the rows in leaf ``l``, whose margins come from the replayed
    earlier rounds, then, for objectives that refit their leaves by Newton steps on the
    true loss (``huber``, ``pseudo_huber``, ``log_cosh``; ``refit="newton"``), those
    steps replayed (the step sizes they chose are held like the splits); a fitted
    intercept moves as its implicit-function derivative says. The exact-quantile refit
    (``absolute``, ``quantile``) is refused: its leaves do not move with the
    parameters; train those with ``refit=None`` (Newton leaves) to tune them.
    ``value`` is the validation loss of the model (to float rounding) and ``grads`` its
    exact derivatives with the structures held fixed: they predict what retraining
    gives as long as no split changes, and see nothing of a split that a new value
    would choose (``jaxboost.tuning`` explains).

    Memory: the rounds are checkpointed in ``segment``-round pieces (default about
    ``sqrt(n_rounds)``), so the reverse pass stores about ``2 sqrt(n_rounds)`` copies of
    the margins of the training and validation rows, not ``n_rounds``.

    Args:
      objective: as in ``train``: a per-row loss, an ``objectives`` entry or its name.
        A plain callable takes its traced hyperparameters as keywords,
        ``loss(y, pred, *, delta)``, named in ``params``.
      X, y: ``(N, F)`` training features and ``(N,)`` labels.
      X_val, y_val: ``(V, F)`` validation features and ``(V,)`` labels.
      params: ``{name: value}``, the parameters to differentiate and their values: the
        objective's continuous hyperparameters (``"delta"``, ``"gamma"``, ``"alpha"``,
        ``"power"``, a plain loss's keywords) and any of ``learning_rate``,
        ``reg_lambda``, ``reg_alpha``, ``max_delta_step``, ``hessian_floor``.
        Structural settings (``max_depth``, ``gamma`` of the trees, ``min_child_weight``,
        sampling ratios) have no gradient and are refused here; pass them as keywords.
      val_loss: what is minimised: a built-in metric name (``SMOOTH_METRICS``; a
        response metric is read through the objective's link), a ``Metric``, an
        ``objectives`` entry or any per-row ``loss(y, margin)`` on margins (the weighted
        mean over rows). None: the objective itself, only when no loss hyperparameter
        is tuned.
      n_rounds: boosting rounds.
      sample_weight, val_weight: optional ``(N,)`` and ``(V,)`` row weights.
      float64: replay in float64 (the training run is float32 either way).
      segment: rounds per checkpointed segment (default ``ceil(sqrt(n_rounds))``).
      **train_kwargs: other ``train`` options (``max_depth``, ``min_child_weight``,
        ``subsample``, ``seed``, ``hessian``, ``refit`` None or ``"newton"``, ...).
        Refused (``NOT_REPLAYED``): ``init_model``, group losses, vector outputs,
        monotone constraints, early stopping, per-row ``base_margin``,
        ``refit="quantile"``.

    Returns:
      ``HypergradResult`` (``value``, ``grads``, ``params``, ``booster``, ...).

    Raises:
      TypeError: an unknown parameter, or tuning the loss against itself.
      ValueError: a structural parameter, an unsupported option, a non-smooth metric.
      NonFiniteError: the value or a gradient is not finite.

    Example:
      >>> import numpy as np, jaxboost
      >>> rng = np.random.default_rng(0)
      >>> X = rng.normal(size=(300, 3)).astype(np.float32); y = X[:, 0] + rng.normal(size=300)
      >>> r = jaxboost.hypergrad("pseudo_huber", X[:200], y[:200], X[200:], y[200:],
      ...                        params={"delta": 1.0, "reg_lambda": 1.0},
      ...                        val_loss="rmse", n_rounds=10, max_depth=2)
      >>> sorted(r.grads), r.value > 0
      (['delta', 'reg_lambda'], True)
    """
    train_kwargs = dict(train_kwargs)
    params, _, loss_keys = flat_params(params)
    objective, loss_values, booster_values, val_fn, maximize = prepare(
        objective, params, val_loss, train_kwargs, loss_keys
    )
    check_validation_set(X, X_val, y_val, val_weight, y)
    settings = settings_of(objective, loss_values, booster_values, train_kwargs)
    booster = train_run(settings, X, y, n_rounds, sample_weight, train_kwargs)
    replay = Replay.of(
        booster,
        settings,
        X,
        y,
        sample_weight,
        X_val,
        y_val,
        val_weight,
        val_fn,
        float64=float64,
        segment=segment,
    )
    value, grads, f_val = replay.value_and_grad(dict(params))
    diff = check_replay(booster, X_val, f_val)
    check_finite(value, grads)
    return HypergradResult(
        value, grads, {k: float(v) for k, v in params.items()}, booster, maximize, diff, replay
    )


def check_replay(booster, X_val, f_val) -> float:
    """The largest difference between the replayed validation margins ``f_val`` and the
    model's; ``RuntimeError`` when over ``MISMATCH_TOL`` (relative), which would make
    every hypergradient describe another model."""
    m = np.asarray(booster.predict(X_val, output_margin=True), np.float64)
    diff = float(np.max(np.abs(m - f_val))) if m.size else 0.0
    scale = 1.0 + float(np.max(np.abs(m))) if m.size else 1.0
    if not diff <= MISMATCH_TOL * scale:
        raise RuntimeError(
            f"the replay of the run does not reproduce the trained model (validation "
            f"margins differ by up to {diff:.3g}); its hypergradients would describe "
            f"another model. Please report this with the settings used"
        )
    return diff


def check_finite(value, grads) -> None:
    bad = [k for k, v in grads.items() if not math.isfinite(v)]
    if not math.isfinite(value) or bad:
        raise NonFiniteError(
            f"hypergrad: the validation loss ({value}) or the gradient in {bad} is not "
            f"finite; check the loss's derivatives at these parameters (and that "
            f"val_loss is finite on the validation labels)"
        )


__all__ = ["hypergrad", "HypergradResult", "BOOSTER_PARAMS", "SMOOTH_METRICS"]
