r"""``tune``: follow hypergradients with an optax optimiser, retraining every few steps.

Each step replays the current run (``hypergrad``'s fixed-structure replay, one compiled
program reused at every step) at the current parameters and takes an optimiser step;
every ``regrow_every`` steps the run is retrained at the current parameters, so the
structures follow the parameters. Parameters with bounds are optimised on an
unconstrained scale ``u``:

=====================  =================================  ===========================
bounds                 parameter                          used for
=====================  =================================  ===========================
``(lo, hi)``           :math:`lo + (hi - lo)\,\sigma(u)`  quantile ``alpha`` in (0, 1),
                                                          tweedie ``power`` in (1, 2)
``(lo, None)``         :math:`lo + e^u`                   ``reg_lambda``, ``delta``,
                                                          focal ``gamma`` (>= 0)
``(None, hi)``         :math:`hi - e^u`
``(None, None)``       :math:`u`                          a plain loss's keywords
``closed(lo, hi)``     :math:`u`, projected into          focal ``gamma`` (>= 0:
                       :math:`[lo, hi]` after each step   ``gamma = 0`` is reachable)
=====================  =================================  ===========================

(``learning_rate`` in (0, 1)). A parameter starts inside its bounds (strictly inside
open ones).
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from typing import Any, Callable, Optional

import numpy as np

from .._types import float32_programs
from ..errors import NonFiniteError, TuningWarning
from .hypergrad import (
    Replay,
    check_finite,
    check_replay,
    check_validation_set,
    flat_params,
    prepare,
    settings_of,
    train_run,
)


@dataclasses.dataclass(frozen=True)
class Transform:
    """One parameter's map from the optimiser's variable ``u`` to its value within
    ``(lo, hi)`` (``None``: open on that side), with its derivative.

    Open bounds (the default) are reparametrised (the module docstring's table);
    ``closed=True`` keeps the parameter's own scale (``u`` is the value) and projects
    each step back into ``[lo, hi]``, so a bound itself can be reached: focal
    ``gamma = 0`` is the logistic loss. ``closed(lo, hi)`` makes one.
    """

    lo: Optional[float]
    hi: Optional[float]
    closed: bool = False

    def value(self, u: float) -> float:
        lo, hi = self.lo, self.hi
        if self.closed:
            return self.project(u)
        if lo is not None and hi is not None:
            return lo + (hi - lo) / (1.0 + math.exp(-u))
        if lo is not None:
            return lo + math.exp(u)
        if hi is not None:
            return hi - math.exp(u)
        return u

    def slope(self, u: float) -> float:
        """d value / d u (1 on a closed bound: the gradient may lead back inside)."""
        lo, hi = self.lo, self.hi
        if self.closed:
            return 1.0
        if lo is not None and hi is not None:
            s = 1.0 / (1.0 + math.exp(-u))
            return (hi - lo) * s * (1.0 - s)
        if lo is not None:
            return math.exp(u)
        if hi is not None:
            return -math.exp(u)
        return 1.0

    def inverse(self, x: float) -> float:
        lo, hi = self.lo, self.hi
        if self.closed:
            return x
        if lo is not None and hi is not None:
            t = (x - lo) / (hi - lo)
            return math.log(t / (1.0 - t))
        if lo is not None:
            return math.log(x - lo)
        if hi is not None:
            return math.log(hi - x)
        return x

    def project(self, u: float) -> float:
        """``u`` after a step: clipped into ``[lo, hi]`` when closed, else as is."""
        if not self.closed:
            return u
        if self.lo is not None:
            u = max(u, self.lo)
        if self.hi is not None:
            u = min(u, self.hi)
        return u


def closed(lo: Optional[float] = None, hi: Optional[float] = None) -> Transform:
    """Closed bounds ``[lo, hi]`` for ``tune(bounds=...)``: steps on the parameter's own
    scale, projected back into the bounds (``Transform``).

    >>> closed(0.0).value(-0.3), closed(0.0, 5.0).value(7.0)
    (0.0, 5.0)
    """
    return Transform(lo, hi, closed=True)


DOMAINS = {
    "learning_rate": (0.0, 1.0),
    "reg_lambda": (0.0, None),
    "reg_alpha": (0.0, None),
    "max_delta_step": (0.0, None),
    "hessian_floor": (0.0, None),
    "focal.gamma": closed(0.0),
    "quantile.alpha": (0.0, 1.0),
    "tweedie.power": (1.0, 2.0),
    "huber.delta": (0.0, None),
    "pseudo_huber.delta": (0.0, None),
    "cauchy.scale": (0.0, None),
}
"""Default bounds: the booster's parameters by name, catalogue hyperparameters as
``"entry.name"``; others are unbounded unless ``bounds=`` says. Focal ``gamma >= 0``
is closed (``gamma = 0``, the logistic loss, is a candidate); the others are open."""


def transforms(objective, params: dict, bounds) -> dict:
    """``{name: Transform}``: ``bounds`` given for a name, else ``DOMAINS``; checks that
    every start value lies inside its bounds (strictly, for open ones)."""
    bounds = dict(bounds or {})
    unknown = sorted(set(bounds) - set(params))
    if unknown:
        raise TypeError(f"bounds names {unknown} that are not in params {sorted(params)}")
    entry = getattr(objective, "name", None)
    out = {}
    for k, v in params.items():
        b = bounds.get(k, DOMAINS.get(k, DOMAINS.get(f"{entry}.{k}", (None, None))))
        if isinstance(b, Transform):
            lo, hi, is_closed = b.lo, b.hi, b.closed
        elif isinstance(b, tuple) and len(b) == 2:
            (lo, hi), is_closed = b, False
        else:
            raise TypeError(
                f"bounds[{k!r}] must be a pair (lo, hi), None for an open side, "
                f"or closed(lo, hi), got {b!r}"
            )
        lo, hi = (None if x is None else float(x) for x in (lo, hi))
        if lo is not None and hi is not None and not lo < hi:
            raise ValueError(f"bounds[{k!r}] = {b!r}: lo must be < hi")
        if is_closed:
            if (lo is not None and v < lo) or (hi is not None and v > hi):
                raise ValueError(f"params[{k!r}] = {v!r} must lie within its bounds [{lo}, {hi}]")
        elif (lo is not None and not v > lo) or (hi is not None and not v < hi):
            raise ValueError(
                f"params[{k!r}] = {v!r} must lie strictly inside its bounds "
                f"({lo}, {hi}) (the optimiser works on a scale where the "
                f"bounds are at infinity); start inside, e.g. "
                f"{_inside(lo, hi)!r}, or give closed bounds, "
                f"bounds={{{k!r}: closed({lo}, {hi})}}"
            )
        out[k] = Transform(lo, hi, is_closed)
    return out


def _inside(lo, hi):
    if lo is not None and hi is not None:
        return (lo + hi) / 2
    if lo is not None:
        return lo + 0.1
    return hi - 0.1


@dataclasses.dataclass(frozen=True)
class TuneResult:
    """What ``tune`` returns.

    Attributes:
      params: the best parameters found among the retrained runs.
      value: their validation loss (of a model trained at ``params``).
      booster: that model.
      history: one dict per step: ``step``, ``params``, ``value`` (the run's
        validation loss at the step's parameters, the structures of the last
        retraining held fixed), ``trained`` (the step retrained, so ``value`` is a
        trained model's), ``seconds`` since the call began.
      n_trainings: training runs made (retrainings and the final one).
      maximize: the validation metric is maximised (``"r2"``).
    """

    params: dict
    value: float
    booster: Any
    history: list
    n_trainings: int
    maximize: bool = False


@float32_programs
def tune(
    objective,
    X,
    y,
    X_val,
    y_val,
    *,
    params: dict,
    bounds=None,
    val_loss=None,
    n_rounds: int = 100,
    steps: int = 30,
    regrow_every: int = 5,
    optimizer=None,
    sample_weight=None,
    val_weight=None,
    callback: Callable | None = None,
    segment=None,
    **train_kwargs,
) -> TuneResult:
    r"""Tune continuous hyperparameters by following hypergradients (``hypergrad``).

    ``steps`` optimiser steps: each replays the current run at the current parameters
    (value and gradient of ``val_loss``, structures held fixed) and updates them with
    ``optimizer`` on the unconstrained scale of ``bounds`` (module docstring); every
    ``regrow_every`` steps (and at the first) the run is retrained at the current
    parameters, and a final training at the last parameters ends the loop. The result
    is the best *trained* run: a fixed-structure value is a prediction, a retrained one
    is what a model at those parameters scores.

    Args:
      objective, X, y, X_val, y_val, params, val_loss, n_rounds: as in ``hypergrad``,
        as are ``sample_weight``, ``val_weight``, ``segment`` and ``**train_kwargs``;
        ``params`` are the start values.
      bounds: ``{name: (lo, hi)}`` (open bounds, ``None`` for an unbounded side) or
        ``{name: closed(lo, hi)}`` (closed, reachable); defaults in ``DOMAINS``
        (focal ``gamma >= 0`` closed, quantile ``0 < alpha < 1``, tweedie
        ``1 < power < 2``, ``reg_lambda > 0``, ``0 < learning_rate < 1``, ...).
      steps: optimiser steps.
      regrow_every: steps between retrainings (1: retrain every step).
      optimizer: an optax ``GradientTransformation`` (default ``optax.adam(0.1)``, on
        the unconstrained scale: about 10 % of a positive parameter per step).
      callback: called with each step's history dict after the step.

    Returns:
      ``TuneResult``.

    Example:
      >>> import numpy as np, jaxboost
      >>> rng = np.random.default_rng(0)
      >>> X = rng.normal(size=(300, 3)).astype(np.float32); y = X[:, 0] + rng.normal(size=300)
      >>> res = jaxboost.tune("pseudo_huber", X[:200], y[:200], X[200:], y[200:],
      ...                     params={"delta": 1.0, "reg_lambda": 1.0}, val_loss="rmse",
      ...                     steps=4, regrow_every=2, n_rounds=10, max_depth=2)
      >>> res.n_trainings, len(res.history), sorted(res.params)
      (3, 4, ['delta', 'reg_lambda'])
    """
    import optax

    steps = _positive_int("steps", steps)
    regrow_every = _positive_int("regrow_every", regrow_every)
    train_kwargs = dict(train_kwargs)
    params, bounds, loss_keys = flat_params(params, bounds)  # the loss's namespace merged
    objective, loss_values, booster_values, val_fn, maximize = prepare(
        objective, params, val_loss, train_kwargs, loss_keys
    )
    tf = transforms(objective, {k: float(v) for k, v in params.items()}, bounds)
    check_validation_set(X, X_val, y_val, val_weight, y)
    names = list(params)
    u = np.array([tf[k].inverse(float(params[k])) for k in names])
    opt = optax.adam(0.1) if optimizer is None else optimizer
    state = opt.init(u)
    sign = -1.0 if maximize else 1.0
    start = time.perf_counter()
    history, trained = [], []
    replay = None
    data = (X, y, sample_weight, X_val, y_val, val_weight)

    def current():
        return {k: tf[k].value(float(ui)) for k, ui in zip(names, u)}

    def retrain(values):
        lv = {k: v for k, v in values.items() if k in loss_values}
        bv = {k: v for k, v in values.items() if k in booster_values}
        s = settings_of(objective, lv, bv, train_kwargs)
        booster = train_run(s, X, y, n_rounds, sample_weight, train_kwargs)
        return Replay.of(booster, s, *data, val_fn, segment=segment)

    for step in range(steps):
        values = current()
        regrow = step % regrow_every == 0
        if regrow:
            replay = retrain(values)
        value, grads, f_val = replay.value_and_grad(values)
        if regrow:
            check_replay(replay.booster, X_val, f_val)
        check_finite(value, grads)
        if step == 0 and steps > 1 and grads and all(g == 0 for g in grads.values()):
            warnings.warn(
                f"tune: the gradient of the validation loss is exactly 0 for every tuned "
                f"parameter ({', '.join(map(repr, names))}) at the start, so no step can "
                f"move them and the result will be the start point. A piecewise-constant "
                f"val_loss (error, accuracy, a rounded metric) has no useful gradient: "
                f"tune a smooth one (e.g. 'logloss', 'rmse')",
                TuningWarning,
                stacklevel=2,
            )
        record = dict(
            step=step,
            params=values,
            value=value,
            trained=regrow,
            seconds=time.perf_counter() - start,
        )
        history.append(record)
        if regrow:
            trained.append((value, values, replay.booster))
        if callback is not None:
            callback(record)
        gu = np.array([sign * grads[k] * tf[k].slope(float(ui)) for k, ui in zip(names, u)])
        updates, state = opt.update(gu, state, u)
        u = np.asarray(optax.apply_updates(u, updates), np.float64)
        u = np.array([tf[k].project(float(ui)) for k, ui in zip(names, u)])
        _check_step(tf, names, u, np.asarray(updates, np.float64), step)
    final = current()
    replay = retrain(final)
    value, _, _ = replay.value_and_grad(final)
    trained.append((value, final, replay.booster))
    key = (lambda t: -t[0]) if maximize else (lambda t: t[0])
    best = min((t for t in trained if math.isfinite(t[0])), key=key, default=trained[-1])
    return TuneResult(dict(best[1]), float(best[0]), best[2], history, len(trained), maximize)


def _check_step(tf, names, u, updates, step):
    """Refuse (``NonFiniteError``, cause ``"optimizer"``) an optimiser step that took a
    parameter out of float range (an ``optax.sgd(1e30)``): name it and the fix."""
    for k, ui, du in zip(names, u, updates):
        try:
            ok = math.isfinite(ui) and math.isfinite(tf[k].value(float(ui)))
        except OverflowError:
            ok = False
        if not ok:
            raise NonFiniteError(
                f"tune: the optimizer's step {step} moved {k!r} by {float(du):g} (on its "
                f"optimisation scale), out of floating-point range; its steps are far too "
                f"large for these gradients. Pass a smaller learning rate, e.g. "
                f"optimizer=optax.adam(0.1) (the default)",
                cause="optimizer",
                round=step,
            )


def _positive_int(name, v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise TypeError(f"{name} must be a positive integer, got {v!r}")
    return int(v)


__all__ = ["tune", "TuneResult", "Transform", "DOMAINS", "closed"]
