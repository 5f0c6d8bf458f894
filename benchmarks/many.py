"""``train_many`` against separate ``train`` calls, each in a fresh process.

What a user waits for when comparing 8 configurations on W2-sized data (10,000 training
rows of the W1 data set, depth 6, 100 rounds, learning rate 0.1, 256 bins): the whole
script (import, bin, compile, train) in a fresh Python process, timed from outside,
interleaved (many, separate, many, separate, ...), median of ``--repeats``.

Two sets of 8 configurations:

* ``losses``: 8 different losses on the binary labels (logistic, exponential,
  focal(gamma=2), squared, huber(delta=0.5), pseudo_huber, log_cosh, absolute) - what
  ``jaxboost.compare`` and ``examples/compare_losses.py`` do;
* ``grid``: one loss (logistic), 8 (learning_rate, reg_lambda) pairs - a
  hyperparameter grid, where separate calls already share one compiled program.

Each with an empty compilation cache (``JAXBOOST_COMPILATION_CACHE=0``: the first time)
and with a warm one (a cache a previous process filled). Every worker also reports the
test AUC of its 8 models, so the two ways can be seen to train the same models.

Usage::

    python benchmarks/many.py                 # both sets, cold and warm, 3 repeats
    python benchmarks/many.py --sets losses --caches cold --repeats 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TAG = "MANYRESULT "
ROWS, ROUNDS, DEPTH, LR = 10_000, 100, 6, 0.1


def configs(which: str) -> list:
    import objectives as O

    if which == "losses":
        return [
            dict(objective=o)
            for o in (
                O.logistic,
                O.exponential,
                O.focal(gamma=2.0),
                O.squared,
                O.huber(delta=0.5),
                O.pseudo_huber,
                O.log_cosh,
                O.absolute,
            )
        ]
    return [
        dict(objective="logistic", learning_rate=lr, reg_lambda=lam)
        for lr in (0.05, 0.1, 0.2, 0.3)
        for lam in (1.0, 5.0)
    ]


def worker(mode: str, which: str) -> None:
    t0 = time.perf_counter()
    sys.path.insert(0, str(HERE))
    from run import auc, dataset_spec, ensure_dataset, load_dataset

    spec = dataset_spec("W2", ROWS)
    ensure_dataset(spec["gen"])
    X, y, Xt, yt = load_dataset(spec)
    t_data = time.perf_counter()
    import jaxboost

    cfgs = configs(which)
    kw = dict(n_rounds=ROUNDS, max_depth=DEPTH, learning_rate=LR)
    if mode == "many":
        models = jaxboost.train_many(cfgs, X, y, **kw)
    else:
        models = []
        for c in cfgs:
            c = dict(c)
            models.append(jaxboost.train(c.pop("objective"), X, y, **dict(kw, **c)))
    t_train = time.perf_counter()
    aucs = [auc(yt, m.predict(Xt, output_margin=True)) for m in models]
    print(
        TAG
        + json.dumps(
            dict(mode=mode, which=which, data_s=t_data - t0, train_s=t_train - t_data, aucs=aucs)
        ),
        flush=True,
    )


def launch(mode, which, cache_env) -> dict:
    env = dict(os.environ, **cache_env)
    env.setdefault("JAX_PLATFORMS", "cpu")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--_worker", mode, which],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    wall = time.perf_counter() - t0
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith(TAG)]
    if out.returncode != 0 or not lines:
        raise SystemExit(f"{mode}/{which} failed:\n{out.stderr[-3000:]}")
    return dict(json.loads(lines[-1][len(TAG) :]), wall_s=wall)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="losses,grid")
    ap.add_argument("--caches", default="cold,warm")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="jaxboost-many-") as tmp:
        for which in args.sets.split(","):
            for cache in args.caches.split(","):
                if cache == "cold":
                    envs = {m: {"JAXBOOST_COMPILATION_CACHE": "0"} for m in ("many", "separate")}
                else:  # one cache per mode, filled by a first run that is not timed
                    envs = {
                        m: {"JAXBOOST_CACHE_DIR": str(Path(tmp) / f"{which}-{m}")}
                        for m in ("many", "separate")
                    }
                    for m in envs:
                        launch(m, which, envs[m])
                walls = {"many": [], "separate": []}
                last = {}
                for _ in range(args.repeats):
                    for m in ("many", "separate"):
                        r = launch(m, which, envs[m])
                        walls[m].append(r["wall_s"])
                        last[m] = r
                med = {m: statistics.median(v) for m, v in walls.items()}
                row = dict(
                    set=which,
                    cache=cache,
                    many_s=med["many"],
                    separate_s=med["separate"],
                    ratio=med["many"] / med["separate"],
                    walls=walls,
                    max_auc_diff=max(
                        abs(a - b) for a, b in zip(last["many"]["aucs"], last["separate"]["aucs"])
                    ),
                )
                results.append(row)
                print(
                    f"{which:7s} {cache:5s} cache: train_many {med['many']:6.2f} s, 8 x train "
                    f"{med['separate']:6.2f} s, ratio {row['ratio']:.2f}  "
                    f"(max |AUC difference| {row['max_auc_diff']:.1e})",
                    flush=True,
                )
    out = HERE / "results" / f"many-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            dict(rows=ROWS, rounds=ROUNDS, depth=DEPTH, cores=os.cpu_count(), results=results),
            indent=1,
        )
        + "\n"
    )
    print(f"raw figures: {out.relative_to(ROOT)}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--_worker":
        worker(sys.argv[2], sys.argv[3])
    else:
        main()
