"""Gradient tuning (``jaxboost.tune``) against grid, random and TPE search (issue 19).

Three tasks on real data shipped inside the ``statsmodels`` wheel (no download), each
split 60 / 20 / 20 into train / validation / test rows (seed 0):

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

Every candidate is one full ``jaxboost.train`` (100 rounds, depth 3, learning rate
0.1, ``refit=None``) scored on the validation rows. ``refit=None`` keeps the Newton
leaf values, the models ``tune`` differentiates and returns, so every method searches
the same family of models (the Huber and quantile entries' default ``refit`` re-solves
each leaf on the true loss, which the replay does not follow). Methods:

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
  off, compile time included (what a first call sees).

The machine may be shared: seconds are single runs, CPU seconds are not separated.

Usage::

    python benchmarks/tuning.py                       # all tasks, warm and cold
    python benchmarks/tuning.py --tasks focal --modes warm
    python benchmarks/tuning.py --steps 20 --regrow-every 5

Needs ``statsmodels`` and ``optuna`` (``pip install -e .[bench]``). Prints the tables
and writes ``benchmarks/results/tuning-<timestamp>.json``.
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
    "focal": dict(data="fair", loss="focal", param="gamma",
                  grid=[0.0, 0.25, 0.5, 1.0, 2.0, 4.0], range=(0.0, 4.0), log=False,
                  start=1.0, metric=logloss, val_loss="logloss"),
    "huber": dict(data="randhie", loss="huber", param="delta",
                  grid=[0.1, 0.3, 1.0, 2.0, 4.0, 8.0], range=(0.1, 8.0), log=True,
                  start=1.0, metric=mae, val_loss="mae"),
    "quantile": dict(data="randhie", loss="quantile", param="alpha",
                     grid=[0.8, 0.85, 0.9, 0.93, 0.96, 0.98], range=(0.8, 0.98), log=False,
                     start=TARGET, metric=pinball, val_loss=pinball_jax),
}


class Runner:
    """One task's data and the training of one candidate."""

    def __init__(self, task: str):
        import objectives

        self.task = TASKS[task]
        (self.X, self.y), (self.Xv, self.yv), (self.Xt, self.yt) = split(
            *load(self.task["data"]))
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
        return jaxboost.tune(self.entry, self.X, self.y, self.Xv, self.yv,
                             params={t["param"]: t["start"], "reg_lambda": 1.0},
                             val_loss=t["val_loss"], steps=steps, regrow_every=regrow_every,
                             optimizer=optimizer, **kw)


# --- the methods -------------------------------------------------------------------------------
def run_method(r: Runner, method: str, steps: int, regrow_every: int, lr: float,
               trials: int) -> dict:
    """``{best_val, best_test, best_params, to_best_s, total_s, trainings}``."""
    t = r.task
    if method in ("random", "tpe"):
        import optuna  # imported before the clock starts

        optuna.logging.set_verbosity(optuna.logging.WARNING)
    trace = []  # (seconds, val, params, booster)
    t0 = time.perf_counter()

    def record(value, lam, booster):
        v = r.score(booster)
        trace.append((time.perf_counter() - t0, v, {t["param"]: value, "reg_lambda": lam},
                      booster))
        return v

    if method == "grid":
        for value in t["grid"]:
            for lam in lambdas():
                record(value, lam, r.fit(value, lam))
    elif method in ("random", "tpe"):
        sampler = (optuna.samplers.RandomSampler(seed=0) if method == "random"
                   else optuna.samplers.TPESampler(seed=0))
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
        return dict(best_val=trace[0][1], best_test=r.score(res.booster, test=True),
                    best_params=res.params, to_best_s=at, total_s=total,
                    trainings=res.n_trainings, replays=len(res.history),
                    tune_value=res.value)
    else:
        raise ValueError(method)
    total = time.perf_counter() - t0
    best = min(trace, key=lambda e: e[1])
    return dict(best_val=best[1], best_test=r.score(best[3], test=True),
                best_params=best[2], to_best_s=best[0], total_s=total,
                trainings=len(trace))


def warm_up(r: Runner) -> float:
    """Compile every program the methods run (one training, a one-step tune)."""
    t0 = time.perf_counter()
    r.fit(r.task["start"], 1.0)
    r.tune(steps=1, regrow_every=1)
    return time.perf_counter() - t0


def worker(task: str, methods: list, warm: bool, args) -> None:
    r = Runner(task)
    out = dict(task=task, warm=warm, rows=[len(r.y), len(r.yv), len(r.yt)],
               features=int(r.X.shape[1]))
    if warm:
        out["warm_up_s"] = warm_up(r)
    for m in methods:
        res = run_method(r, m, args.steps, args.regrow_every, args.lr, args.trials)
        print(TAG + json.dumps(dict(out, method=m, **res)), flush=True)


# --- the parent --------------------------------------------------------------------------------
def launch(task: str, methods: list, warm: bool, args) -> list:
    env = dict(os.environ)
    env.setdefault("JAX_PLATFORMS", "cpu")
    if not warm:
        env["JAXBOOST_COMPILATION_CACHE"] = "0"  # a first call: every program compiles
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--_worker", task,
           ",".join(methods), "warm" if warm else "cold", "--steps", str(args.steps),
           "--regrow-every", str(args.regrow_every), "--lr", str(args.lr),
           "--trials", str(args.trials)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    rows = [json.loads(ln[len(TAG):]) for ln in p.stdout.splitlines() if ln.startswith(TAG)]
    if p.returncode != 0:
        print(p.stderr[-3000:], file=sys.stderr)
    return rows


def fmt_params(p: dict) -> str:
    return ", ".join(f"{k}={v:.3g}" for k, v in p.items())


def table(rows: list) -> str:
    head = (f"{'task':9s} {'timing':6s} {'method':7s} {'fits':>4s} {'val':>8s} {'test':>8s} "
            f"{'to best s':>9s} {'total s':>8s}  best parameters")
    out = [head, "-" * len(head)]
    for r in rows:
        out.append(f"{r['task']:9s} {'warm' if r['warm'] else 'cold':6s} {r['method']:7s} "
                   f"{r['trainings']:4d} {r['best_val']:8.4f} {r['best_test']:8.4f} "
                   f"{r['to_best_s']:9.2f} {r['total_s']:8.2f}  {fmt_params(r['best_params'])}")
    return "\n".join(out)


def verdict(rows: list) -> str:
    """Per task and timing: does tune reach the grid's validation loss in less time?"""
    out = []
    for (task, warm) in sorted({(r["task"], r["warm"]) for r in rows}):
        by = {r["method"]: r for r in rows if r["task"] == task and r["warm"] == warm}
        if "grid" not in by or "tune" not in by:
            continue
        g, t = by["grid"], by["tune"]
        ok = t["best_val"] <= g["best_val"] and t["total_s"] < g["total_s"]
        out.append(f"{task:9s} {'warm' if warm else 'cold'}: tune val {t['best_val']:.4f} "
                   f"vs grid {g['best_val']:.4f}; tune {t['total_s']:.2f} s vs grid "
                   f"{g['total_s']:.2f} s (to its best {g['to_best_s']:.2f} s): "
                   f"{'tune wins' if ok else 'tune does not win'}")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--modes", default="warm,cold", help="warm, cold or both")
    ap.add_argument("--steps", type=int, default=20, help="tune's hypergradient steps")
    ap.add_argument("--regrow-every", type=int, default=5)
    ap.add_argument("--lr", type=float, default=0.3, help="tune's Adam step size")
    ap.add_argument("--trials", type=int, default=36, help="random / TPE trials")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--_worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._worker:
        task, methods, mode = args._worker
        worker(task, methods.split(","), mode == "warm", args)
        return
    tasks = [t for t in args.tasks.split(",") if t]
    methods = [m for m in args.methods.split(",") if m]
    modes = [m for m in args.modes.split(",") if m]
    bad = sorted(set(tasks) - set(TASKS)) + sorted(set(methods) - set(METHODS)) + \
        sorted(set(modes) - {"warm", "cold"})
    if bad:
        raise SystemExit(f"unknown {bad}; tasks {list(TASKS)}, methods {list(METHODS)}, "
                         f"modes warm, cold")
    rows = []
    for task in tasks:
        if "warm" in modes:
            got = launch(task, methods, True, args)
            rows += got
            for r in got:
                print(f"{task} warm {r['method']}: val {r['best_val']:.4f} in "
                      f"{r['to_best_s']:.2f} s of {r['total_s']:.2f} s", flush=True)
        if "cold" in modes:
            for m in methods:
                got = launch(task, [m], False, args)
                rows += got
                for r in got:
                    print(f"{task} cold {m}: val {r['best_val']:.4f} in "
                          f"{r['to_best_s']:.2f} s of {r['total_s']:.2f} s", flush=True)
    text = table(rows)
    print()
    print(text)
    print()
    print(verdict(rows))
    print("fits: full trainings (tune: its retrainings, plus one replay per step); val / "
          "test: the metric of the method's best model (logloss, MAE, pinball at "
          f"{TARGET}); to best: seconds until that model was trained; total: the method's "
          "seconds; warm: programs compiled beforehand, cold: a fresh process, compile "
          "included.")
    sys.path.insert(0, str(HERE))
    from run import machine_info

    path = Path(args.out) if args.out else \
        HERE / "results" / f"tuning-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(machine=machine_info(), args=vars(args), train=TRAIN,
                                    rows=rows, table=text), indent=1, default=str))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
