"""Compile time of a training program against ``max_depth``, and W1-like training time.

Issue 14: a tree builder that unrolls its level loop compiles a program that grows with
``max_depth``; ``jaxboost.engine.grow`` loops over levels instead. This script measures both
sides of that trade:

* **compile**: for each depth D, a fresh process (persistent compilation cache off,
  ``JAXBOOST_COMPILATION_CACHE=0``) trains ``--rounds`` rounds on the first ``--rows``
  rows of the W1 data twice at D (``compile`` = first call - second call), then at D - 1
  twice (``switch`` = the first D - 1 call - the second: what changing ``max_depth`` in a
  warm notebook costs). Printed with the ratio to the smallest depth's figure.
* **train**: W1 (1M rows x 28 features, logistic, lr 0.1, 256 bins) at each of
  ``--train-depths`` for ``--train-rounds`` rounds, the warm second call of a fresh
  process, as ``benchmarks/run.py`` times jaxboost; with ``--peer xgboost`` XGBoost hist
  runs interleaved and the table gives jaxboost / XGBoost (BENCHMARKS.md).

Every measurement is its own process; repeats are interleaved (A B A B ...) and the
median is reported. ``--src DIR`` (repeatable) runs the same measurements against other
source trees (e.g. ``git worktree`` or ``git archive`` copies of an older commit), also
interleaved, so a before/after comparison shares the machine's conditions::

    python benchmarks/compile_depth.py                          # this tree, 3 repeats
    python benchmarks/compile_depth.py --src /tmp/old --src .   # before / after
    python benchmarks/compile_depth.py --skip-train --depths 2,4,6,8,10
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TAG = "@@RESULT "


def _data(rows: int):
    sys.path.insert(0, str(HERE))
    import run  # benchmarks/run.py: the cached W1 data set

    spec = run.dataset_spec("W1", rows)
    run.ensure_dataset(spec["gen"])
    X, y, _, _ = run.load_dataset(spec)
    return run, X, y


def worker(task: dict) -> dict:
    """One measurement in this (fresh) process."""
    run, X, y = _data(task["rows"])
    if task["kind"] == "xgboost":
        spec = dict(workload="W1", rounds=task["rounds"], variant="builtin")
        old = run.MAX_DEPTH
        run.MAX_DEPTH = task["depth"]
        try:
            out = run.work_xgboost(spec, (X, y, X[:1000], y[:1000]), time.time())
        finally:
            run.MAX_DEPTH = old
        return {"train_s": out["train_s"]}
    import jax

    import jaxboost

    params = dict(
        n_rounds=task["rounds"],
        learning_rate=run.LEARNING_RATE,
        reg_lambda=run.REG_LAMBDA,
        min_child_weight=run.MIN_CHILD_WEIGHT,
        max_bin=run.MAX_BIN,
        verbose=False,
    )

    def fit(depth):
        t = time.perf_counter()
        bst = jaxboost.train("logistic", X, y, max_depth=depth, **params)
        jax.block_until_ready(bst.trees)
        return time.perf_counter() - t

    D = task["depth"]
    if task["kind"] == "train":
        fit(D)
        return {"train_s": fit(D)}
    first, second = fit(D), fit(D)
    out = {"compile_s": max(first - second, 0.0), "warm_s": second}
    if D > 1:
        a, b = fit(D - 1), fit(D - 1)
        out["switch_s"] = max(a - b, 0.0)
    return out


def launch(task: dict, src: Path) -> dict:
    env = dict(os.environ)
    env.setdefault("JAX_PLATFORMS", "cpu")
    env["JAXBOOST_COMPILATION_CACHE"] = "0"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(src), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--_worker", json.dumps(task)],
        capture_output=True,
        text=True,
        env=env,
        cwd=src,
        timeout=3600,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(TAG)]
    if proc.returncode or not lines:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-6:])
        raise RuntimeError(f"worker {task} in {src} failed:\n{tail}")
    return json.loads(lines[-1][len(TAG) :])


def med(runs, key):
    vals = [r[key] for r in runs if key in r]
    return statistics.median(vals) if vals else None


def fmt(v, spec=".2f"):
    return "-" if v is None else format(v, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--depths", default="2,4,6,8")
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--train-depths", default="6")
    ap.add_argument("--train-rows", type=int, default=1_000_000)
    ap.add_argument("--train-rounds", type=int, default=25)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--peer", choices=("none", "xgboost"), default="none")
    ap.add_argument(
        "--src",
        action="append",
        default=None,
        help="source tree to measure (repeatable; default: this one)",
    )
    ap.add_argument("--skip-compile", action="store_true")
    ap.add_argument("--skip-train", action="store_true")
    ap.add_argument("--_worker", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a._worker is not None:
        out = worker(json.loads(a._worker))
        sys.stdout.write(TAG + json.dumps(out) + "\n")
        return
    srcs = [Path(s).resolve() for s in (a.src or [str(ROOT)])]
    names = [str(s) if len(srcs) > 1 else "jaxboost" for s in srcs]
    results: dict = {}
    jobs = []
    if not a.skip_compile:
        for D in map(int, a.depths.split(",")):
            jobs += [
                ("compile", D, i, dict(kind="compile", depth=D, rows=a.rows, rounds=a.rounds))
                for i in range(len(srcs))
            ]
    if not a.skip_train:
        for D in map(int, a.train_depths.split(",")):
            t = dict(kind="train", depth=D, rows=a.train_rows, rounds=a.train_rounds)
            jobs += [("train", D, i, t) for i in range(len(srcs))]
            if a.peer == "xgboost":
                jobs.append(("train", D, -1, dict(t, kind="xgboost")))
    for rep in range(a.repeats):  # interleaved: every job once per repeat
        for what, D, i, task in jobs:
            out = launch(task, srcs[max(i, 0)])
            results.setdefault((what, D, i), []).append(out)
            print(
                f"  repeat {rep + 1} {what} D={D} {'xgboost' if i < 0 else names[i]}: {out}",
                file=sys.stderr,
                flush=True,
            )
    if not a.skip_compile:
        depths = list(map(int, a.depths.split(",")))
        print(
            f"\ncompile seconds (fresh process, cache off, {a.rows} rows, {a.rounds} rounds,"
            f" median of {a.repeats}); ratio to depth {depths[0]}"
        )
        print(
            f"{'source':<40} {'depth':>5} {'compile':>8} {'ratio':>6} "
            f"{'switch D-1':>10} {'ratio':>6} {'warm':>6}"
        )
        for i, name in enumerate(names):
            c0 = med(results[("compile", depths[0], i)], "compile_s")
            s0 = med(results[("compile", depths[0], i)], "switch_s")
            for D in depths:
                r = results[("compile", D, i)]
                c, s = med(r, "compile_s"), med(r, "switch_s")
                print(
                    f"{name[-40:]:<40} {D:>5} {fmt(c):>8} {fmt(c / c0 if c0 else None):>6} "
                    f"{fmt(s):>10} {fmt(s / s0 if s and s0 else None):>6} "
                    f"{fmt(med(r, 'warm_s')):>6}"
                )
    if not a.skip_train:
        print(
            f"\ntrain seconds (W1 data, {a.train_rows} rows, {a.train_rounds} rounds, warm "
            f"second call, median of {a.repeats})"
            + ("; ratio = jaxboost / XGBoost hist" if a.peer == "xgboost" else "")
        )
        print(f"{'source':<40} {'depth':>5} {'train':>8} {'ratio':>6}")
        for D in map(int, a.train_depths.split(",")):
            x = med(results.get(("train", D, -1), []), "train_s")
            for i, name in enumerate(names):
                t = med(results[("train", D, i)], "train_s")
                print(f"{name[-40:]:<40} {D:>5} {fmt(t):>8} {fmt(t / x if x else None):>6}")
            if x is not None:
                print(f"{'xgboost hist':<40} {D:>5} {fmt(x):>8} {'1.00':>6}")


if __name__ == "__main__":
    main()
