"""Gradient tuning (``jaxboost.tune``) against grid, random and TPE search (issues 19, 29).

Two sets of tasks on real data shipped inside a wheel (no download), each split 60 /
20 / 20 into train / validation / test rows (seed 0).

The basic set (``--tasks basic``, the default): 1 + ``reg_lambda`` parameters, on
``statsmodels`` data:

* ``focal``: ``statsmodels.datasets.fair`` (6,366 rows, 8 features), binary target
  ``affairs > 0``; the focal loss's ``gamma`` and ``reg_lambda`` tuned for the
  validation log loss.
* ``huber``: ``statsmodels.datasets.randhie`` (20,190 rows, 9 features), target
  ``mdvis`` (visits to a doctor, a skewed count); the Huber loss's ``delta`` and
  ``reg_lambda`` tuned for the validation mean absolute error.
* ``quantile``: ``randhie`` again; the quantile loss's ``alpha`` and ``reg_lambda``
  tuned so that the model's margins minimise the pinball loss at the *target* level
  0.9 (the trained ``alpha`` that gives the best 0.9-quantile predictions need not be
  0.9: shrinkage, a finite number of rounds and tied counts pull it away). The
  coverage ``mean(y <= prediction)`` of the test rows is printed beside it.

The many-parameter set (``--tasks many``, issue 29): 7 to 21 continuous parameters.
A loss sees one label per row, so where it needs a row's group the label carries it:

* ``digits``: scikit-learn's ``load_digits`` (1,797 images, 64 features), binary
  target ``digit >= 5``; the label is the digit and the loss weighs each row by its
  digit's weight ``w0`` ... ``w9`` (per-class weights of the ten classes under the
  binary target; a 10-output softmax is not replayed by ``hypergrad``), with
  ``reg_lambda``: 11 parameters, for the (unweighted) validation log loss.
* ``randhie_shape``: ``randhie``'s ``mdvis`` again, trained with a two-sided power
  loss (``two_sided_loss``: a scale and a power on each side of the residual and a
  weight of the positive side, 5 shape parameters) with ``reg_lambda`` and
  ``learning_rate``: 7 parameters, for the validation MAE.
* ``fair_groups``: ``fair``'s ``affairs > 0`` with a weight per ``rate_marriage`` x
  ``religious`` group (20 groups; the label passed is ``label + 2 * group``) and
  ``reg_lambda``: 21 parameters, for the (unweighted) validation log loss.

Every method searches the same box (weights in [1/4, 4], ``reg_lambda`` in [0.03, 10],
scales in [0.1, 10], powers in [0.05, 1.95], ``learning_rate`` in [0.03, 0.3]; log
scale for the positive ones in the samplers, ``tune``'s open bounds the same box) from
the same start (weights 1, ``reg_lambda`` 1, scales 1, powers 1, learning rate 0.1:
``tune``'s start, enqueued as the samplers' first trial). ``tune`` runs first (30
steps, a retraining every 3: 11 trainings, Adam 0.3); ``random`` and ``tpe`` then run
until they have made as many trainings *and* spent as many seconds, and are reported
twice: at ``tune``'s number of trainings (``random``, ``tpe``) and at its seconds
(``random@time``, ``tpe@time``). There is no grid in 7 to 21 dimensions.

Every candidate is one full ``jaxboost.train`` (100 rounds, depth 3, learning rate
0.1, ``refit=None``) scored on the validation rows. ``refit=None`` keeps the Newton
leaf values, the models ``tune`` differentiates and returns, so every method searches
the same family of models (the Huber and quantile entries' default ``refit`` re-solves
each leaf on the true loss, which the replay does not follow). Methods of the basic
set:

* ``grid``: a 6 x 6 grid (36 trainings), in the order written;
* ``random``: Optuna's ``RandomSampler``, 36 trials, ranges of the grid;
* ``tpe``: Optuna's ``TPESampler``, 36 trials;
* ``tune``: ``jaxboost.tune`` from a default start (``steps`` hypergradient steps,
  retraining every ``regrow_every``: ``steps / regrow_every + 1`` trainings).

For each method: the best validation loss, the test loss of that model, the wall
seconds until the best was found (``to best``) and of the whole method (``total``).
The tune's values are those of *trained* models (its retrainings), scored with the
same NumPy metric as the searches'.

Two timings:

* ``warm``: one process per task; before any method is timed, one throwaway training
  and a one-step ``tune`` compile every program the methods use, so the figures
  are steady-state seconds (what a long tuning session sees);
* ``cold``: every (task, method) in its own fresh process with the compilation cache
  off, compile time included (what a first call sees); in the many-parameter set
  ``tune`` runs first and its trainings and seconds (compilation included) are the
  samplers' budget.

The machine may be shared: seconds are single runs, CPU seconds are not separated.

Usage::

    python benchmarks/tuning.py                       # the basic tasks, warm and cold
    python benchmarks/tuning.py --tasks many --modes warm
    python benchmarks/tuning.py --tasks all           # both sets
    python benchmarks/tuning.py --tasks focal --modes warm
    python benchmarks/tuning.py --steps 20 --regrow-every 5

Needs ``statsmodels``, ``scikit-learn`` and ``optuna`` (``pip install -e .[bench]``).
Prints the tables and writes ``benchmarks/results/tuning-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TAG = "@@TUNING "
METHODS = ("grid", "random", "tpe", "tune")
TARGET = 0.9  # the quantile task's target level
TRAIN = dict(n_rounds=100, max_depth=3, learning_rate=0.1, refit=None)
BASIC_TUNE = dict(steps=20, regrow_every=5, lr=0.3)  # tune's settings per task set
MANY_TUNE = dict(steps=30, regrow_every=3, lr=0.3)


# --- data ------------------------------------------------------------------------------------
def load(name: str):
    """``(X, y)`` float32 of a statsmodels data set (shipped in its wheel)."""
    import statsmodels.api as sm

    if name == "fair":
        d = sm.datasets.fair.load_pandas().data
        y = (d.pop("affairs").to_numpy() > 0).astype(np.float32)
    elif name == "randhie":
        d = sm.datasets.randhie.load_pandas().data
        y = d.pop("mdvis").to_numpy().astype(np.float32)
    else:
        raise ValueError(name)
    return d.to_numpy(np.float32), y


def split(X, y, seed: int = 0):
    """60 / 20 / 20 train / validation / test rows."""
    idx = np.random.default_rng(seed).permutation(len(y))
    a, b = int(0.6 * len(y)), int(0.8 * len(y))
    return [(X[i], y[i]) for i in (idx[:a], idx[a:b], idx[b:])]


# --- the tasks -------------------------------------------------------------------------------
def logloss(y, f):
    p = 1.0 / (1.0 + np.exp(-np.asarray(f, np.float64)))
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))


def mae(y, f):
    return float(np.mean(np.abs(y - np.asarray(f, np.float64))))


def rmse(y, f):
    return float(np.sqrt(np.mean((y - np.asarray(f, np.float64)) ** 2)))


def pinball(y, f, tau=TARGET):
    r = y - np.asarray(f, np.float64)
    return float(np.mean(np.maximum(tau * r, (tau - 1.0) * r)))


def pinball_jax(y, f):
    """The per-row pinball loss at ``TARGET`` on margins (``val_loss`` of ``tune``)."""
    import jax.numpy as jnp

    r = y - f
    return jnp.maximum(TARGET * r, (TARGET - 1.0) * r)


def lambdas():
    return [0.03, 0.1, 0.3, 1.0, 3.0, 10.0]


TASKS = {
    # data, loss, its parameter, grid of it, random range, tune's start, metric, val_loss
    "focal": dict(
        data="fair",
        loss="focal",
        param="gamma",
        grid=[0.0, 0.25, 0.5, 1.0, 2.0, 4.0],
        range=(0.0, 4.0),
        log=False,
        start=1.0,
        metric=logloss,
        val_loss="logloss",
    ),
    "huber": dict(
        data="randhie",
        loss="huber",
        param="delta",
        grid=[0.1, 0.3, 1.0, 2.0, 4.0, 8.0],
        range=(0.1, 8.0),
        log=True,
        start=1.0,
        metric=mae,
        val_loss="mae",
    ),
    "quantile": dict(
        data="randhie",
        loss="quantile",
        param="alpha",
        grid=[0.8, 0.85, 0.9, 0.93, 0.96, 0.98],
        range=(0.8, 0.98),
        log=False,
        start=TARGET,
        metric=pinball,
        val_loss=pinball_jax,
    ),
}


# --- many-parameter tasks (issue 29) ---------------------------------------------------------
# One label per row reaches the loss, so a task whose loss needs a row's group reads it
# from the label: ``digits`` keeps the digit (0-9) as the label and the loss derives the
# binary target ``digit >= 5`` from it; ``fair_groups`` passes ``label + 2 * group``.
DIGIT_POS = (0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0)  # digit >= 5
N_FAIR_GROUPS = 20  # rate_marriage (5 levels) x religious (4 levels)


def _logistic(label, f):
    import jax.numpy as jnp

    return jnp.logaddexp(0.0, f) - label * f


def digits_loss(y, f, **w):
    """Logistic loss of ``digit >= 5`` weighted by the digit's own weight ``w<digit>``."""
    import jax.numpy as jnp

    k = y.astype(jnp.int32)
    weight = jnp.stack([w[f"w{i}"] for i in range(10)])[k]
    return weight * _logistic(jnp.asarray(DIGIT_POS)[k], f)


def digits_val(y, f):
    import jax.numpy as jnp

    return _logistic(jnp.asarray(DIGIT_POS)[y.astype(jnp.int32)], f)


def digits_metric(y, f):
    label = np.asarray(DIGIT_POS)[np.asarray(y).astype(int)]
    return logloss(label, f)


def fair_loss(y, f, **w):
    """Logistic loss of ``y mod 2`` weighted by the group ``y // 2``'s weight."""
    import jax.numpy as jnp

    g = jnp.floor(y / 2.0)
    weight = jnp.stack([w[f"w{i}"] for i in range(N_FAIR_GROUPS)])[g.astype(jnp.int32)]
    return weight * _logistic(y - 2.0 * g, f)


def fair_val(y, f):
    import jax.numpy as jnp

    return _logistic(y - 2.0 * jnp.floor(y / 2.0), f)


def fair_metric(y, f):
    y = np.asarray(y, np.float64)
    return logloss(y - 2.0 * np.floor(y / 2.0), f)


def two_sided_loss(y, f, *, c_pos, c_neg, p_pos, p_neg, a_pos):
    """A two-sided power loss: ``(c^2 / p) ((1 + (r / c)^2)^(p / 2) - 1)`` of the
    residual ``r = y - f`` with scale ``c`` and power ``p`` (2: squared error, 1:
    pseudo-Huber, towards 0: Cauchy-like) set apart for ``r > 0`` (times ``a_pos``) and
    ``r <= 0``; every member is ``r^2 / 2`` near 0 on the negative side."""
    import jax.numpy as jnp

    r = y - f
    pos = r > 0
    c = jnp.where(pos, c_pos, c_neg)
    p = jnp.where(pos, p_pos, p_neg)
    a = jnp.where(pos, a_pos, 1.0)
    return a * c**2 / p * ((1.0 + (r / c) ** 2) ** (p / 2.0) - 1.0)


def _load_many(name: str):
    """``(X, y)`` float32 of a many-parameter task (data shipped in a wheel)."""
    if name == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        return X.astype(np.float32), y.astype(np.float32)
    if name == "fair_groups":
        import statsmodels.api as sm

        d = sm.datasets.fair.load_pandas().data
        label = (d.pop("affairs").to_numpy() > 0).astype(np.float64)
        group = (d["rate_marriage"].to_numpy() - 1) * 4 + (d["religious"].to_numpy() - 1)
        return d.to_numpy(np.float32), (label + 2.0 * group).astype(np.float32)
    if name == "randhie_shape":
        return load("randhie")
    raise ValueError(name)


def _weights(n):
    """``n`` group weights: start 1, searched log-uniformly in [1/4, 4]."""
    return [(f"w{i}", 1.0, (0.25, 4.0, True)) for i in range(n)]


LAMBDA = ("reg_lambda", 1.0, (0.03, 10.0, True))
MANY = {
    # params: (name, start, range (lo, hi, log)): every method searches the same box
    # (tune's bounds are the range's, open); the booster's own parameters
    # (reg_lambda, learning_rate) are told apart from the loss's keywords by name
    "digits": dict(
        data="digits",
        loss=digits_loss,
        val_loss=digits_val,
        metric=digits_metric,
        params=_weights(10) + [LAMBDA],
        about="digits (sklearn), target digit >= 5: a weight per digit, reg_lambda (logloss)",
    ),
    "randhie_shape": dict(
        data="randhie_shape",
        loss=two_sided_loss,
        val_loss="mae",
        metric=mae,
        params=[
            ("c_pos", 1.0, (0.1, 10.0, True)),
            ("c_neg", 1.0, (0.1, 10.0, True)),
            ("p_pos", 1.0, (0.05, 1.95, False)),
            ("p_neg", 1.0, (0.05, 1.95, False)),
            ("a_pos", 1.0, (0.25, 4.0, True)),
            LAMBDA,
            ("learning_rate", 0.1, (0.03, 0.3, True)),
        ],
        about="randhie (statsmodels), mdvis: a two-sided power loss's 5 shape "
        "parameters, reg_lambda, learning_rate (MAE)",
    ),
    "fair_groups": dict(
        data="fair_groups",
        loss=fair_loss,
        val_loss=fair_val,
        metric=fair_metric,
        params=_weights(N_FAIR_GROUPS) + [LAMBDA],
        about="fair (statsmodels), affairs > 0: a weight per rate_marriage x religious "
        "group (20), reg_lambda (logloss)",
    ),
}
BOOSTER = ("reg_lambda", "learning_rate")


class ManyRunner:
    """A many-parameter task's data and the training of one candidate."""

    def __init__(self, task: str):
        self.name, self.task = task, MANY[task]
        (self.X, self.y), (self.Xv, self.yv), (self.Xt, self.yt) = split(
            *_load_many(self.task["data"])
        )
        self.spec = self.task["params"]

    def start(self) -> dict:
        return {name: start for name, start, _ in self.spec}

    def fit(self, values: dict):
        import jaxboost

        kw = dict(TRAIN)
        kw.update({k: float(v) for k, v in values.items() if k in BOOSTER})
        lp = {k: float(v) for k, v in values.items() if k not in BOOSTER}
        return jaxboost.train(
            self.task["loss"], self.X, self.y, loss_params=lp, verbose=False, **kw
        )

    def score(self, booster, test: bool = False) -> float:
        X, y = (self.Xt, self.yt) if test else (self.Xv, self.yv)
        return self.task["metric"](y, booster.predict(X, output_margin=True))

    def tune(self, steps: int, regrow_every: int, optimizer=None):
        import jaxboost

        start = self.start()
        kw = {k: v for k, v in TRAIN.items() if k not in start}
        return jaxboost.tune(
            self.task["loss"],
            self.X,
            self.y,
            self.Xv,
            self.yv,
            params=start,
            bounds={n: (lo, hi) for n, _, (lo, hi, _) in self.spec},
            val_loss=self.task["val_loss"],
            steps=steps,
            regrow_every=regrow_every,
            optimizer=optimizer,
            **kw,
        )


def run_many(r: ManyRunner, method: str, args, budget: dict) -> list:
    """Rows of one method on a many-parameter task. ``tune`` sets ``budget`` (its
    trainings and seconds); ``random`` and ``tpe`` start at the same point (the start
    values, enqueued as their first trial), run until they have made as many
    trainings and spent as many seconds, and give a row at each."""
    if method == "tune":
        import optax

        t0 = time.perf_counter()
        res = r.tune(args.steps, args.regrow_every, optax.adam(args.lr))
        total = time.perf_counter() - t0
        trained = [(h["seconds"], h["params"]) for h in res.history if h["trained"]]
        at = next((s for s, p in trained if p == res.params), total)
        budget.update(trainings=res.n_trainings, seconds=total)
        start_val = next(h["value"] for h in res.history if h["trained"])
        return [
            dict(
                method="tune",
                best_val=r.score(res.booster),
                best_test=r.score(res.booster, test=True),
                best_params=res.params,
                to_best_s=at,
                total_s=total,
                trainings=res.n_trainings,
                replays=len(res.history),
                start_val=start_val,
            )
        ]
    if method not in ("random", "tpe"):
        raise ValueError(method)
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    n = budget.get("trainings", args.trials)
    seconds = budget.get("seconds", 0.0)
    sampler = (
        optuna.samplers.RandomSampler(seed=0)
        if method == "random"
        else optuna.samplers.TPESampler(seed=0, n_startup_trials=args.tpe_startup)
    )
    study = optuna.create_study(sampler=sampler)
    study.enqueue_trial(r.start())
    trace = []  # (seconds, val, params, booster)
    t0 = time.perf_counter()

    def objective(trial):
        values = {
            name: trial.suggest_float(name, lo, hi, log=log) for name, _, (lo, hi, log) in r.spec
        }
        booster = r.fit(values)
        v = r.score(booster)
        trace.append((time.perf_counter() - t0, v, values, booster))
        return v

    def stop(study, trial):
        if len(trace) >= n and time.perf_counter() - t0 >= seconds:
            study.stop()

    study.optimize(objective, n_trials=max(n, 10_000), callbacks=[stop])
    rows = []
    for label, part in (
        (method, trace[:n]),
        (f"{method}@time", [e for e in trace if e[0] <= seconds] or trace[:1]),
    ):
        best = min(part, key=lambda e: e[1])
        rows.append(
            dict(
                method=label,
                best_val=best[1],
                best_test=r.score(best[3], test=True),
                best_params=best[2],
                to_best_s=best[0],
                total_s=part[-1][0],
                trainings=len(part),
            )
        )
    return rows


class Runner:
    """One task's data and the training of one candidate."""

    def __init__(self, task: str):
        import objectives

        self.task = TASKS[task]
        (self.X, self.y), (self.Xv, self.yv), (self.Xt, self.yt) = split(*load(self.task["data"]))
        self.entry = getattr(objectives, self.task["loss"])

    def fit(self, value: float, reg_lambda: float):
        import jaxboost

        name, kw = self.task["param"], dict(TRAIN, reg_lambda=float(reg_lambda))
        if name in kw:  # a booster parameter (learning_rate)
            kw[name], loss = float(value), self.entry
        else:
            loss = self.entry.with_params(**{name: float(value)})
        return jaxboost.train(loss, self.X, self.y, verbose=False, **kw)

    def score(self, booster, test: bool = False) -> float:
        X, y = (self.Xt, self.yt) if test else (self.Xv, self.yv)
        return self.task["metric"](y, booster.predict(X, output_margin=True))

    def tune(self, steps: int, regrow_every: int, optimizer=None):
        import jaxboost

        t = self.task
        kw = {k: v for k, v in TRAIN.items() if k != t["param"]}
        return jaxboost.tune(
            self.entry,
            self.X,
            self.y,
            self.Xv,
            self.yv,
            params={t["param"]: t["start"], "reg_lambda": 1.0},
            val_loss=t["val_loss"],
            steps=steps,
            regrow_every=regrow_every,
            optimizer=optimizer,
            **kw,
        )


# --- the methods -------------------------------------------------------------------------------
def run_method(
    r: Runner, method: str, steps: int, regrow_every: int, lr: float, trials: int
) -> dict:
    """``{best_val, best_test, best_params, to_best_s, total_s, trainings}``."""
    t = r.task
    if method in ("random", "tpe"):
        import optuna  # imported before the clock starts

        optuna.logging.set_verbosity(optuna.logging.WARNING)
    trace = []  # (seconds, val, params, booster)
    t0 = time.perf_counter()

    def record(value, lam, booster):
        v = r.score(booster)
        trace.append((time.perf_counter() - t0, v, {t["param"]: value, "reg_lambda": lam}, booster))
        return v

    if method == "grid":
        for value in t["grid"]:
            for lam in lambdas():
                record(value, lam, r.fit(value, lam))
    elif method in ("random", "tpe"):
        sampler = (
            optuna.samplers.RandomSampler(seed=0)
            if method == "random"
            else optuna.samplers.TPESampler(seed=0)
        )
        study = optuna.create_study(sampler=sampler)
        lo, hi = t["range"]
        lams = lambdas()

        def objective(trial):
            value = trial.suggest_float(t["param"], lo, hi, log=t["log"])
            lam = trial.suggest_float("reg_lambda", lams[0], lams[-1], log=True)
            return record(value, lam, r.fit(value, lam))

        study.optimize(objective, n_trials=trials)
    elif method == "tune":
        import optax

        res = r.tune(steps, regrow_every, optax.adam(lr))
        total = time.perf_counter() - t0
        trained = [(h["seconds"], h["params"]) for h in res.history if h["trained"]]
        # when the best is the final retraining, it was found at the end of the call
        at = next((s for s, p in trained if p == res.params), total)
        trace.append((at, r.score(res.booster), dict(res.params), res.booster))
        return dict(
            best_val=trace[0][1],
            best_test=r.score(res.booster, test=True),
            best_params=res.params,
            to_best_s=at,
            total_s=total,
            trainings=res.n_trainings,
            replays=len(res.history),
            tune_value=res.value,
        )
    else:
        raise ValueError(method)
    total = time.perf_counter() - t0
    best = min(trace, key=lambda e: e[1])
    return dict(
        best_val=best[1],
        best_test=r.score(best[3], test=True),
        best_params=best[2],
        to_best_s=best[0],
        total_s=total,
        trainings=len(trace),
    )


def warm_up(r) -> float:
    """Compile every program the methods run (one training, a one-step tune)."""
    t0 = time.perf_counter()
    if isinstance(r, ManyRunner):
        r.fit(r.start())
    else:
        r.fit(r.task["start"], 1.0)
    r.tune(steps=1, regrow_every=1)
    return time.perf_counter() - t0


def worker(task: str, methods: list, warm: bool, args) -> None:
    import warnings

    from jaxboost.errors import HessianWarning

    # the two-sided family's members with p < 1 are not convex: their negative h are
    # raised to the floor (hessian="clip_negative", the default), as expected
    warnings.simplefilter("ignore", HessianWarning)
    r = ManyRunner(task) if task in MANY else Runner(task)
    out = dict(
        task=task, warm=warm, rows=[len(r.y), len(r.yv), len(r.yt)], features=int(r.X.shape[1])
    )
    if warm:
        out["warm_up_s"] = warm_up(r)
    if task in MANY:
        out["n_params"] = len(r.spec)
        budget = {}
        if args._budget:
            n, sec = args._budget.split(",")
            budget.update(trainings=int(n), seconds=float(sec))
        for m in sorted(methods, key=lambda m: m != "tune"):  # tune sets the budget
            for res in run_many(r, m, args, budget):
                print(TAG + json.dumps(dict(out, **res)), flush=True)
        return
    for m in methods:
        res = run_method(r, m, args.steps, args.regrow_every, args.lr, args.trials)
        print(TAG + json.dumps(dict(out, method=m, **res)), flush=True)


# --- the parent --------------------------------------------------------------------------------
def launch(task: str, methods: list, warm: bool, args, budget=None) -> list:
    env = dict(os.environ)
    env.setdefault("JAX_PLATFORMS", "cpu")
    if not warm:
        env["JAXBOOST_COMPILATION_CACHE"] = "0"  # a first call: every program compiles
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--_worker",
        task,
        ",".join(methods),
        "warm" if warm else "cold",
        "--steps",
        str(args.steps),
        "--regrow-every",
        str(args.regrow_every),
        "--lr",
        str(args.lr),
        "--trials",
        str(args.trials),
        "--tpe-startup",
        str(args.tpe_startup),
    ]
    if budget:
        cmd += ["--_budget", f"{budget['trainings']},{budget['total_s']}"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    rows = [json.loads(ln[len(TAG) :]) for ln in p.stdout.splitlines() if ln.startswith(TAG)]
    if p.returncode != 0:
        print(p.stderr[-3000:], file=sys.stderr)
    return rows


def run_many_task(task: str, methods: list, modes: list, args) -> list:
    """A many-parameter task: warm, one process (tune first: it sets the budget);
    cold, tune in its own process, then each search in its own with tune's budget."""
    rows = []
    if "warm" in modes:
        rows += launch(task, methods, True, args)
    if "cold" in modes:
        first = launch(task, ["tune"], False, args) if "tune" in methods else []
        rows += first
        budget = first[0] if first else None
        for m in methods:
            if m != "tune":
                rows += launch(task, [m], False, args, budget)
    for r in rows:
        print(
            f"{task} {'warm' if r['warm'] else 'cold'} {r['method']}: val "
            f"{r['best_val']:.4f} test {r['best_test']:.4f} in {r['to_best_s']:.2f} s "
            f"of {r['total_s']:.2f} s ({r['trainings']} fits)",
            flush=True,
        )
    return rows


def fmt_params(p: dict) -> str:
    return ", ".join(f"{k}={v:.3g}" for k, v in p.items())


def table(rows: list) -> str:
    head = (
        f"{'task':13s} {'timing':6s} {'method':11s} {'fits':>4s} {'val':>8s} "
        f"{'test':>8s} {'to best s':>9s} {'total s':>8s}  best parameters"
    )
    out = [head, "-" * len(head)]
    for r in rows:
        out.append(
            f"{r['task']:13s} {'warm' if r['warm'] else 'cold':6s} "
            f"{r['method']:11s} {r['trainings']:4d} {r['best_val']:8.4f} "
            f"{r['best_test']:8.4f} {r['to_best_s']:9.2f} {r['total_s']:8.2f}  "
            f"{fmt_params(r['best_params'])}"
        )
    return "\n".join(out)


def verdict(rows: list) -> str:
    """Per task and timing: does tune reach a better validation loss than the grid
    (basic tasks) or than random and TPE at equal trainings and at equal seconds (the
    many-parameter tasks), in less time?"""
    out = []
    for task, warm in sorted({(r["task"], r["warm"]) for r in rows}):
        by = {r["method"]: r for r in rows if r["task"] == task and r["warm"] == warm}
        if "tune" not in by:
            continue
        t = by["tune"]
        timing = "warm" if warm else "cold"
        if "grid" in by:
            g = by["grid"]
            ok = t["best_val"] <= g["best_val"] and t["total_s"] < g["total_s"]
            out.append(
                f"{task:13s} {timing}: tune val {t['best_val']:.4f} vs grid "
                f"{g['best_val']:.4f}; tune {t['total_s']:.2f} s vs grid "
                f"{g['total_s']:.2f} s (to its best {g['to_best_s']:.2f} s): "
                f"{'tune wins' if ok else 'tune does not win'}"
            )
            continue
        for m in ("random", "tpe", "random@time", "tpe@time"):
            if m not in by:
                continue
            o = by[m]
            val, test = t["best_val"] < o["best_val"], t["best_test"] < o["best_test"]
            word = (
                "tune better on val and test"
                if val and test
                else "tune better on val only"
                if val
                else "tune better on test only"
                if test
                else "tune not better"
            )
            out.append(
                f"{task:13s} {timing} vs {m:11s} ({o['trainings']:3d} fits): val "
                f"{t['best_val']:.4f} vs {o['best_val']:.4f}, test "
                f"{t['best_test']:.4f} vs {o['best_test']:.4f}: {word}"
            )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--tasks",
        default="basic",
        help="task names, or 'basic' (the 1-2 parameter tasks), 'many' (the "
        "many-parameter tasks), 'all'",
    )
    ap.add_argument(
        "--methods", default=",".join(METHODS), help="grid runs on the basic tasks only"
    )
    ap.add_argument("--modes", default="warm,cold", help="warm, cold or both")
    ap.add_argument(
        "--steps",
        type=int,
        default=None,
        help="tune's hypergradient steps (default: 20 basic, %d many)" % MANY_TUNE["steps"],
    )
    ap.add_argument(
        "--regrow-every",
        type=int,
        default=None,
        help="default: 5 basic, %d many" % MANY_TUNE["regrow_every"],
    )
    ap.add_argument(
        "--lr",
        type=float,
        default=None,
        help="tune's Adam step size (default: 0.3 basic, %g many)" % MANY_TUNE["lr"],
    )
    ap.add_argument("--trials", type=int, default=36, help="random / TPE trials")
    ap.add_argument(
        "--tpe-startup",
        type=int,
        default=10,
        help="TPE's random trials before it models (Optuna's default 10); "
        "many-parameter tasks only",
    )
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--_worker", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--_budget", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._worker:
        task, methods, mode = args._worker
        worker(task, methods.split(","), mode == "warm", args)
        return
    sets = dict(basic=list(TASKS), many=list(MANY), all=list(TASKS) + list(MANY))
    tasks = [n for t in args.tasks.split(",") if t for n in sets.get(t, [t])]
    methods = [m for m in args.methods.split(",") if m]
    modes = [m for m in args.modes.split(",") if m]
    bad = (
        sorted(set(tasks) - set(TASKS) - set(MANY))
        + sorted(set(methods) - set(METHODS))
        + sorted(set(modes) - {"warm", "cold"})
    )
    if bad:
        raise SystemExit(
            f"unknown {bad}; tasks {list(TASKS) + list(MANY)} (or basic, "
            f"many, all), methods {list(METHODS)}, modes warm, cold"
        )
    given = dict(steps=args.steps, regrow_every=args.regrow_every, lr=args.lr)
    rows = []
    for task in tasks:
        for k, v in given.items():  # the task set's defaults where not given
            setattr(args, k, v if v is not None else (MANY_TUNE if task in MANY else BASIC_TUNE)[k])
        if task in MANY:
            rows += run_many_task(task, [m for m in methods if m != "grid"], modes, args)
            continue
        if "warm" in modes:
            got = launch(task, methods, True, args)
            rows += got
            for r in got:
                print(
                    f"{task} warm {r['method']}: val {r['best_val']:.4f} in "
                    f"{r['to_best_s']:.2f} s of {r['total_s']:.2f} s",
                    flush=True,
                )
        if "cold" in modes:
            for m in methods:
                got = launch(task, [m], False, args)
                rows += got
                for r in got:
                    print(
                        f"{task} cold {m}: val {r['best_val']:.4f} in "
                        f"{r['to_best_s']:.2f} s of {r['total_s']:.2f} s",
                        flush=True,
                    )
    text = table(rows)
    print()
    print(text)
    print()
    print(verdict(rows))
    print(
        "fits: full trainings (tune: its retrainings, plus one replay per step); val / "
        "test: the metric of the method's best model (logloss, MAE, pinball at "
        f"{TARGET}); to best: seconds until that model was trained; total: the method's "
        "seconds; warm: programs compiled beforehand, cold: a fresh process, compile "
        "included. Many-parameter tasks: random / tpe stop at tune's number of "
        "trainings, random@time / tpe@time at tune's seconds; both start with tune's "
        "start point as their first trial."
    )
    sys.path.insert(0, str(HERE))
    from run import machine_info

    path = (
        Path(args.out)
        if args.out
        else HERE / "results" / f"tuning-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    args_out = dict(vars(args), **given)  # the defaults resolved per task set
    args_out.update(basic_tune=BASIC_TUNE, many_tune=MANY_TUNE)
    path.write_text(
        json.dumps(
            dict(machine=machine_info(), args=args_out, train=TRAIN, rows=rows, table=text),
            indent=1,
            default=str,
        )
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
