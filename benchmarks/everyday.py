"""W6, everyday data: jaxboost against XGBoost ``hist`` and LightGBM on what most users meet first.

The workload of BENCHMARKS.md's W6 (issue 27, item 7). Rows:

================  =====================================================================
breast_cancer     ``load_breast_cancer``, logistic, 100 rounds (75 % train, 25 % test)
wine              ``load_wine``, 3-class softmax, 100 rounds
digits            ``load_digits``, 10-class softmax, 100 rounds
forest_digits     a random forest on digits: one round of 100 trees per class (XGBRF's
                  defaults: learning rate 1, subsample 0.8, colsample_bynode 0.8,
                  reg_lambda 1e-5; LightGBM ``boosting="rf"`` with the same bagging)
cv                5-fold ``cross_val_score`` of the scikit-learn estimators on all of
                  breast cancer, ``scoring="neg_log_loss"``
grid              ``GridSearchCV``: max_depth {3, 6} x learning_rate {0.1, 0.3}, 3 folds,
                  refit, on the breast-cancer training split (test log loss of the best)
sparse_5k         CSR 100k x 5k at 1 % (``scipy.sparse.random``, seed 0), logistic labels
                  from a sparse linear model, 20 rounds
sparse_50k        CSR 100k x 50k at 0.1 %, 100 rounds (the one most likely to time out)
friedman1         ``make_friedman1`` 200k x 10 (noise 1), squared error, 100 rounds
classification    ``make_classification`` 500k x 30, logistic, 100 rounds
categorical       census-like 40k x 8: 4 numeric columns and 4 categorical ones (2, 5,
                  14 and 50 categories, 5 % missing), logistic, 100 rounds; each library
                  with its own categorical splits (XGBoost ``enable_categorical``,
                  LightGBM ``categorical_feature``)
================  =====================================================================

Shared settings: depth-wise trees of depth 6, learning rate 0.1, 256 bins (255 for
LightGBM), reg_lambda 1, min_child_weight 1, 2 threads (``--threads``: XGBoost
``nthread``, LightGBM ``num_threads``, jaxboost ``n_jobs`` as a user passes it, with
``JAXBOOST_NATIVE_THREADS`` and ``OMP_NUM_THREADS``; XLA's own thread pool is the
machine's cores).

Every (row, library) runs in its **own fresh process** (``everyday.py --_worker SPEC``),
with jaxboost's persistent compilation cache off (``JAXBOOST_COMPILATION_CACHE=0``), so:

* **cold** = the first fit in that process (jaxboost: tracing and compiling included;
  the imports are timed apart, as ``import_s``);
* **warm** = the median of ``--warm-repeats`` (3) further fits in the same process;
* **peak** = the process's peak resident memory (its ``VmHWM``, reported by the worker;
  ``ru_maxrss`` from ``os.wait4`` only when the worker was killed first);
* **quality** = a held-out figure (test logloss / mlogloss / RMSE, accuracy, AUC) or the
  CV score, from the last fit, so that a fast wrong model shows.

A fit is what a user times: binning included (XGBoost ``QuantileDMatrix``, LightGBM
``Dataset``, jaxboost ``train``), prediction excluded. The libraries of one row run one
after another (jaxboost, XGBoost, LightGBM), ``--repeats`` times interleaved; the
medians over those processes are reported, with the ratios jaxboost / XGBoost. Data sets
are built once by the driver and cached under ``benchmarks/.cache/everyday/``.

Usage::

    python benchmarks/everyday.py                                   # all rows, XGBoost + LightGBM
    python benchmarks/everyday.py --quick --rows breast_cancer,wine --peers xgboost  # smoke
    python benchmarks/everyday.py --rows sparse_50k --timeout 900

``--quick``: 20 rounds (forest: 10 trees per class), a tenth of the large data sets, one
warm fit. Prints one table and writes ``benchmarks/results/everyday-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE_DIR = HERE / ".cache" / "everyday"
RESULTS_DIR = HERE / "results"
RESULT_TAG = "@@EVERYDAY "

sys.path.insert(0, str(HERE))
# run.py's shared settings, metrics and machine record (it imports only NumPy at
# module level)
from run import (  # noqa: E402
    LEARNING_RATE,
    MAX_BIN,
    MAX_DEPTH,
    MIN_CHILD_WEIGHT,
    REG_LAMBDA,
    auc,
    busy_cpu_seconds,
    logloss,
    machine_info,
    mlogloss,
    peak_rss_mib,
    xgboost_params,
)

# Random forest (XGBRFClassifier's defaults), for every library.
RF = dict(learning_rate=1.0, subsample=0.8, colsample_bynode=0.8, reg_lambda=1e-5)
GRID = {"max_depth": [3, 6], "learning_rate": [0.1, 0.3]}
ALL_PEERS = ("xgboost", "lightgbm")

# name -> task, rounds (forest: trees per class), data (full size; quick size)
ROWS = {
    "breast_cancer": dict(task="binary", rounds=100, data=("sklearn", "breast_cancer")),
    "wine": dict(task="multi", rounds=100, data=("sklearn", "wine")),
    "digits": dict(task="multi", rounds=100, data=("sklearn", "digits")),
    "forest_digits": dict(task="forest", rounds=100, data=("sklearn", "digits")),
    "cv": dict(task="cv", rounds=100, data=("sklearn", "breast_cancer_all")),
    "grid": dict(task="grid", rounds=100, data=("sklearn", "breast_cancer")),
    "sparse_5k": dict(
        task="binary",
        rounds=20,
        data=(
            "sparse",
            dict(rows=100_000, features=5_000, density=0.01),
            dict(rows=10_000, features=1_000, density=0.01),
        ),
    ),
    "sparse_50k": dict(
        task="binary",
        rounds=100,
        data=(
            "sparse",
            dict(rows=100_000, features=50_000, density=0.001),
            dict(rows=10_000, features=5_000, density=0.001),
        ),
    ),
    "friedman1": dict(
        task="regression", rounds=100, data=("friedman1", dict(rows=200_000), dict(rows=20_000))
    ),
    "classification": dict(
        task="binary", rounds=100, data=("classification", dict(rows=500_000), dict(rows=50_000))
    ),
    "categorical": dict(
        task="binary",
        rounds=100,
        data=("categorical", dict(rows=40_000), dict(rows=5_000)),
        categorical=[4, 5, 6, 7],  # the columns holding category codes
    ),
}
QUICK_ROUNDS = 20
QUICK_TREES = 10
TEST_SHARE = 0.2  # held-out rows of the generated data sets, as a share of training rows


# --------------------------------------------------------------------------------------
# Data: built by the driver, cached as .npz, read by the workers with NumPy (+ SciPy)
# --------------------------------------------------------------------------------------
def data_key(row: str, quick: bool) -> str:
    kind, *sizes = ROWS[row]["data"]
    if kind == "sklearn":
        return f"{kind}-{sizes[0]}"
    size = sizes[1] if quick else sizes[0]
    return f"{kind}-" + "-".join(f"{k}{v}" for k, v in sorted(size.items()))


def _sparse_data(rows: int, features: int, density: float, seed: int = 0):
    """CSR float32 ``(rows + test, features)`` from ``scipy.sparse.random`` (standard
    normal values) and 0/1 labels of a sparse linear model: 10 % of the columns have a
    normal coefficient; y = [X w + 0.5 noise > 0]. Absent entries are 0 to the linear
    model and missing to the learners (as XGBoost reads CSR)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    n = rows + int(rows * TEST_SHARE)
    X = sp.random(
        n,
        features,
        density=density,
        format="csr",
        dtype=np.float32,
        rng=rng,
        data_rvs=lambda k: rng.standard_normal(k).astype(np.float32),
    )
    w = np.where(rng.random(features) < 0.1, rng.standard_normal(features), 0.0)
    margin = X @ w.astype(np.float32)
    y = (margin + 0.5 * rng.standard_normal(n) > 0).astype(np.float32)
    return X[:rows], y[:rows], X[rows:], y[rows:]


def _categorical_data(n: int, m: int, seed: int = 0):
    """Census-like rows: columns 0-3 numeric (age, hours with 5 % missing, log-normal
    income, a count), 4-7 category codes with 2, 5, 14 and 50 categories (5 % missing
    in the last three); 0/1 labels of a logistic model in which some categories of
    columns 5, 6 and 7 move the odds. ``(X_train, y_train, X_test, y_test)``, float32."""
    rng = np.random.default_rng(seed)
    X = np.empty((m, 8), np.float32)
    X[:, 0] = rng.integers(18, 90, m)
    X[:, 1] = rng.normal(40, 10, m)
    X[:, 2] = rng.lognormal(10, 1, m)
    X[:, 3] = rng.poisson(2, m)
    for j, c in zip(range(4, 8), (2, 5, 14, 50)):
        X[:, j] = rng.integers(0, c, m)
    effect = [rng.normal(0, s, c) for c, s in ((2, 0.3), (5, 0.6), (14, 0.8), (50, 0.5))]
    logit = 0.03 * (X[:, 0] - 40) + 0.04 * (X[:, 1] - 40) + 0.3 * np.log(X[:, 2] / 2e4)
    for j, e in zip(range(4, 8), effect):
        logit += e[X[:, j].astype(np.int64)]
    y = (rng.random(m) < 1 / (1 + np.exp(-logit))).astype(np.float32)
    X[rng.random(m) < 0.05, 1] = np.nan
    for j in (5, 6, 7):
        X[rng.random(m) < 0.05, j] = np.nan
    return X[:n], y[:n], X[n:], y[n:]


def build_data(row: str, quick: bool) -> dict:
    """``{X_train, y_train, X_test, y_test}`` of a row (sparse ones as CSR matrices)."""
    kind, *sizes = ROWS[row]["data"]
    if kind == "sklearn":
        from sklearn import datasets
        from sklearn.model_selection import train_test_split

        name = sizes[0]
        loader = {
            "breast_cancer": datasets.load_breast_cancer,
            "breast_cancer_all": datasets.load_breast_cancer,
            "wine": datasets.load_wine,
            "digits": datasets.load_digits,
        }[name]
        X, y = loader(return_X_y=True)
        X, y = X.astype(np.float32), y.astype(np.float32)
        if name == "breast_cancer_all":  # cross-validation: all rows, no test split
            return dict(X_train=X, y_train=y, X_test=X[:0], y_test=y[:0])
        Xa, Xb, ya, yb = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
        return dict(X_train=Xa, y_train=ya, X_test=Xb, y_test=yb)
    size = sizes[1] if quick else sizes[0]
    n = size["rows"]
    m = n + int(n * TEST_SHARE)
    if kind == "sparse":
        Xa, ya, Xb, yb = _sparse_data(n, size["features"], size["density"])
        return dict(X_train=Xa, y_train=ya, X_test=Xb, y_test=yb)
    if kind == "categorical":
        Xa, ya, Xb, yb = _categorical_data(n, m)
        return dict(X_train=Xa, y_train=ya, X_test=Xb, y_test=yb)
    from sklearn import datasets

    if kind == "friedman1":
        X, y = datasets.make_friedman1(n_samples=m, n_features=10, noise=1.0, random_state=0)
    else:
        X, y = datasets.make_classification(
            n_samples=m, n_features=30, n_informative=15, n_redundant=5, random_state=0
        )
    X, y = X.astype(np.float32), y.astype(np.float32)
    return dict(X_train=X[:n], y_train=y[:n], X_test=X[n:], y_test=y[n:])


def ensure_data(row: str, quick: bool) -> dict:
    """Build and cache a row's data unless cached; ``{key, generated, generation_s}``."""
    key = data_key(row, quick)
    path = CACHE_DIR / f"{key}.npz"
    meta = CACHE_DIR / f"{key}.json"
    if path.exists() and meta.exists():
        return dict(json.loads(meta.read_text()), key=key, generated=False)
    t0 = time.perf_counter()
    data = build_data(row, quick)
    arrays = {}
    for name, a in data.items():
        if hasattr(a, "tocsr"):
            a = a.tocsr()
            arrays.update(
                {
                    f"{name}.data": a.data,
                    f"{name}.indices": a.indices,
                    f"{name}.indptr": a.indptr,
                    f"{name}.shape": np.array(a.shape, np.int64),
                }
            )
        else:
            arrays[name] = a
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, path)
    info = dict(
        generation_s=time.perf_counter() - t0,
        shape=list(data["X_train"].shape),
        n_test=int(data["X_test"].shape[0]),
        stored=int(getattr(data["X_train"], "nnz", data["X_train"].size)),
    )
    meta.write_text(json.dumps(info) + "\n")
    return dict(info, key=key, generated=True)


def load_data(row: str, quick: bool):
    """The cached ``(X_train, y_train, X_test, y_test)`` of a row (CSR where sparse)."""
    z = np.load(CACHE_DIR / f"{data_key(row, quick)}.npz")
    out = []
    for name in ("X_train", "y_train", "X_test", "y_test"):
        if name in z.files:
            out.append(np.array(z[name]))
        else:
            import scipy.sparse as sp

            out.append(
                sp.csr_matrix(
                    (z[f"{name}.data"], z[f"{name}.indices"], z[f"{name}.indptr"]),
                    shape=tuple(z[f"{name}.shape"]),
                )
            )
    return tuple(out)


# --------------------------------------------------------------------------------------
# Quality figures (NumPy only)
# --------------------------------------------------------------------------------------
def quality(task: str, yt, pred) -> dict:
    """Held-out figures: ``pred`` is P(y=1) (binary), ``(N, K)`` probabilities
    (multi, forest) or values (regression)."""
    pred = np.asarray(pred, np.float64)
    if task == "regression":
        return {"rmse": float(np.sqrt(np.mean((pred - yt) ** 2)))}
    if task == "binary":
        return {
            "logloss": logloss(yt, pred),
            "auc": auc(yt, pred),
            "accuracy": float(np.mean((pred > 0.5) == (yt > 0.5))),
        }
    return {
        "mlogloss": mlogloss(yt, pred),
        "accuracy": float(np.mean(np.argmax(pred, axis=1) == yt)),
    }


# --------------------------------------------------------------------------------------
# Workers: one library, one row, one process. Each returns (fit, evaluate): fit() trains
# once and returns what evaluate(model) turns into the quality figures.
# --------------------------------------------------------------------------------------
def n_rounds(row: str, quick: bool, rounds: int | None = None) -> int:
    """Boosting rounds of ``row`` (trees of a forest row): its own, ``--quick``'s cap,
    or ``--rounds`` for every row when given."""
    if rounds is not None:
        return rounds
    r = ROWS[row]["rounds"]
    if quick:
        r = min(r, QUICK_TREES if ROWS[row]["task"] == "forest" else QUICK_ROUNDS)
    return r


def _sklearn_task(row, est_factory, data, rounds):
    """cv / grid with one library's scikit-learn estimator."""
    X, y, Xt, yt = data
    if ROWS[row]["task"] == "cv":
        from sklearn.model_selection import cross_val_score

        def fit():
            return cross_val_score(est_factory(rounds), X, y, cv=5, scoring="neg_log_loss")

        def evaluate(scores):
            return {
                "cv_logloss": float(-np.mean(scores)),
                "cv_logloss_folds": [float(-s) for s in scores],
            }

        return fit, evaluate
    from sklearn.model_selection import GridSearchCV

    def fit():
        return GridSearchCV(
            est_factory(rounds), GRID, cv=3, scoring="neg_log_loss", refit=True
        ).fit(X, y)

    def evaluate(search):
        out = quality("binary", yt, search.predict_proba(Xt)[:, 1])
        out.update(
            cv_logloss=float(-search.best_score_),
            best_params={k: float(v) for k, v in search.best_params_.items()},
        )
        return out

    return fit, evaluate


def n_classes_of(y) -> int:
    return int(np.max(y)) + 1


def work_jaxboost(row: str, data, rounds: int, threads: int):
    import jax

    import jaxboost

    task = ROWS[row]["task"]
    if task in ("cv", "grid"):
        from jaxboost.sklearn import JaxBoostClassifier

        def est(r):
            return JaxBoostClassifier(
                n_estimators=r,
                learning_rate=LEARNING_RATE,
                max_depth=MAX_DEPTH,
                reg_lambda=REG_LAMBDA,
                min_child_weight=MIN_CHILD_WEIGHT,
                max_bin=MAX_BIN,
                random_state=0,
                n_jobs=threads,
            )

        return _sklearn_task(row, est, data, rounds)
    X, y, Xt, yt = data
    objective = {
        "binary": "logistic",
        "multi": "softmax",
        "forest": "softmax",
        "regression": "squared",
    }[task]
    params = dict(
        n_rounds=rounds,
        learning_rate=LEARNING_RATE,
        max_depth=MAX_DEPTH,
        reg_lambda=REG_LAMBDA,
        min_child_weight=MIN_CHILD_WEIGHT,
        max_bin=MAX_BIN,
        verbose=False,
        n_jobs=threads,
    )
    if task == "forest":
        params.update(RF, n_rounds=1, num_parallel_tree=rounds, seed=0)
    cat = ROWS[row].get("categorical")
    if cat:
        params["categorical_features"] = cat

    def fit():
        bst = jaxboost.train(objective, X, y, **params)
        jax.block_until_ready(bst.trees)
        return bst

    def evaluate(bst):
        return quality(task, yt, bst.predict(Xt))  # through the link: P, (N, K) P or value

    return fit, evaluate


def work_xgboost(row: str, data, rounds: int, threads: int):
    import xgboost as xgb

    task = ROWS[row]["task"]
    # run.py's settings: the same depth, learning rate, bins and regularisation
    params = xgboost_params(nthread=threads)
    common = {k: v for k, v in params.items() if k not in ("eta", "nthread", "verbosity")}
    if task in ("cv", "grid"):

        def est(r):
            return xgb.XGBClassifier(
                n_estimators=r,
                learning_rate=LEARNING_RATE,
                n_jobs=threads,
                random_state=0,
                verbosity=0,
                **common,
            )

        return _sklearn_task(row, est, data, rounds)
    X, y, Xt, yt = data
    n_boost = rounds
    if task == "binary":
        params["objective"] = "binary:logistic"
    elif task == "regression":
        params["objective"] = "reg:squarederror"
    else:
        params.update(objective="multi:softprob", num_class=n_classes_of(y))
    if task == "forest":  # XGBRFClassifier: one round of num_parallel_tree trees
        params.update(
            num_parallel_tree=rounds,
            subsample=RF["subsample"],
            colsample_bynode=RF["colsample_bynode"],
            eta=RF["learning_rate"],
            reg_lambda=RF["reg_lambda"],
            seed=0,
        )
        n_boost = 1

    types = {}
    cat = ROWS[row].get("categorical")
    if cat:
        ft = ["c" if j in cat else "q" for j in range(X.shape[1])]
        types = dict(feature_types=ft, enable_categorical=True)

    def fit():
        dtrain = xgb.QuantileDMatrix(X, label=y, max_bin=MAX_BIN, nthread=threads, **types)
        return xgb.train(params, dtrain, num_boost_round=n_boost)

    def evaluate(bst):
        return quality(task, yt, bst.inplace_predict(Xt))

    return fit, evaluate


def work_lightgbm(row: str, data, rounds: int, threads: int):
    import lightgbm as lgb

    task = ROWS[row]["task"]
    if task in ("cv", "grid"):

        def est(r):
            return lgb.LGBMClassifier(
                n_estimators=r,
                learning_rate=LEARNING_RATE,
                max_depth=MAX_DEPTH,
                num_leaves=2**MAX_DEPTH,
                max_bin=MAX_BIN - 1,
                min_child_samples=1,
                min_child_weight=MIN_CHILD_WEIGHT,
                reg_lambda=REG_LAMBDA,
                n_jobs=threads,
                random_state=0,
                verbose=-1,
            )

        return _sklearn_task(row, est, data, rounds)
    X, y, Xt, yt = data
    params = dict(
        num_leaves=2**MAX_DEPTH,
        max_depth=MAX_DEPTH,
        max_bin=MAX_BIN - 1,
        min_data_in_leaf=1,
        min_sum_hessian_in_leaf=MIN_CHILD_WEIGHT,
        learning_rate=LEARNING_RATE,
        lambda_l2=REG_LAMBDA,
        num_threads=threads,
        verbose=-1,
        seed=0,
    )
    if hasattr(X, "tocsr"):
        params["zero_as_missing"] = True  # absent entries missing, as in XGBoost/jaxboost
    if task == "binary":
        params["objective"] = "binary"
    elif task == "regression":
        params["objective"] = "regression"
    else:
        params.update(objective="multiclass", num_class=n_classes_of(y))
    if task == "forest":
        params.update(
            boosting="rf",
            bagging_fraction=RF["subsample"],
            bagging_freq=1,
            feature_fraction_bynode=RF["colsample_bynode"],
            lambda_l2=RF["reg_lambda"],
            learning_rate=RF["learning_rate"],
        )

    cats = ROWS[row].get("categorical")
    cat = dict(categorical_feature=cats) if cats else {}

    def fit():
        dtrain = lgb.Dataset(X, label=y, params=params, **cat)
        return lgb.train(params, dtrain, num_boost_round=rounds)

    def evaluate(bst):
        return quality(task, yt, bst.predict(Xt))

    return fit, evaluate


WORKERS = {"jaxboost": work_jaxboost, "xgboost": work_xgboost, "lightgbm": work_lightgbm}


def worker_main(spec_json: str) -> None:
    """One (row, library): cold fit, warm fits, quality. Prints a result line after each
    step, so that a run killed at its timeout still reports what it finished."""
    spec = json.loads(spec_json)
    row, lib, quick = spec["row"], spec["lib"], spec["quick"]
    out = {}

    def report():
        out["vm_hwm_mib"] = peak_rss_mib()
        sys.stdout.write(RESULT_TAG + json.dumps(out) + "\n")
        sys.stdout.flush()

    t = time.perf_counter()
    data = load_data(row, quick)
    out["load_s"] = time.perf_counter() - t
    t = time.perf_counter()
    fit, evaluate = WORKERS[lib](
        row, data, n_rounds(row, quick, spec.get("rounds")), spec["threads"]
    )
    out["import_s"] = time.perf_counter() - t
    t = time.perf_counter()
    model = fit()
    out["cold_s"] = time.perf_counter() - t
    report()
    warm = []
    for _ in range(spec["warm_repeats"]):
        del model
        t = time.perf_counter()
        model = fit()
        warm.append(time.perf_counter() - t)
        out["warm_runs_s"] = warm
        out["warm_s"] = statistics.median(warm)
        report()
    t = time.perf_counter()
    out["quality"] = evaluate(model)
    out["eval_s"] = time.perf_counter() - t
    report()


# --------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------
def worker_env(threads: int) -> dict:
    env = dict(os.environ)
    env.setdefault("JAX_PLATFORMS", "cpu")
    env["JAXBOOST_COMPILATION_CACHE"] = "0"  # every process compiles: cold = first fit
    env["JAXBOOST_NATIVE_THREADS"] = str(threads)
    env["OMP_NUM_THREADS"] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def run_worker(spec: dict, timeout: float) -> dict:
    """One worker process; its last result line plus ``peak_rss_mib`` (its VmHWM, else
    ``ru_maxrss`` from ``os.wait4``) and ``wall_s``; ``timeout: True`` when it was
    killed at ``timeout`` seconds, ``error`` when it failed."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--_worker", json.dumps(spec)]
    busy0 = busy_cpu_seconds()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=err, env=worker_env(spec["threads"]), cwd=ROOT
        )
        timed_out = False
        while True:  # wait4 with a deadline
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > timeout:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                timed_out = True
                break
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        lines = [ln for ln in out.read().splitlines() if ln.startswith(RESULT_TAG)]
        res = json.loads(lines[-1][len(RESULT_TAG) :]) if lines else {}
        # the worker's own VmHWM (the high-water mark since its exec): ru_maxrss of a
        # child also counts the driver's pages it was forked with (every row read the
        # driver's 607 MiB once the data sets were built), so it is the fallback only
        peak = res.pop("vm_hwm_mib", None)
        res.update(
            wall_s=wall,
            peak_rss_mib=usage.ru_maxrss / 1024.0 if peak is None else peak,
            cpu_s=usage.ru_utime + usage.ru_stime,
        )
        busy = busy_cpu_seconds()
        if busy0 is not None and busy is not None and wall > 0:
            # share of the machine's CPU that *other* processes used meanwhile
            res["others_cpu_share"] = max(busy - busy0 - res["cpu_s"], 0.0) / (
                wall * os.cpu_count()
            )
        if timed_out:
            res["timeout"] = True
        elif proc.returncode != 0 or "quality" not in res:
            tail = err.read().strip().splitlines()[-8:]
            res["error"] = f"exit {proc.returncode}: " + "\n".join(tail)
    return res


def median_of(runs: list, key: str):
    vals = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def summarise(row: str, lib: str, runs: list) -> dict:
    out = {"row": row, "lib": lib}
    for key in ("cold_s", "warm_s", "peak_rss_mib", "import_s", "wall_s", "cpu_s"):
        out[key] = median_of(runs, key)
    qual = [r["quality"] for r in runs if "quality" in r]
    out["quality"] = qual[-1] if qual else None
    out["timeout"] = any(r.get("timeout") for r in runs)
    others = [r["others_cpu_share"] for r in runs if r.get("others_cpu_share") is not None]
    out["others_cpu_share"] = max(others) if others else None
    errors = [r["error"] for r in runs if "error" in r]
    if errors:
        out["errors"] = errors
    return out


def add_ratios(rows: list) -> None:
    """jaxboost / XGBoost ratios of warm, cold and peak memory, per row."""
    ref = {r["row"]: r for r in rows if r["lib"] == "xgboost"}
    for r in rows:
        x = ref.get(r["row"])
        for key in ("warm_s", "cold_s", "peak_rss_mib"):
            ok = x is not None and r.get(key) is not None and x.get(key)
            r[key.split("_")[0] + "_ratio"] = r[key] / x[key] if ok else None


PRIMARY = ("logloss", "mlogloss", "rmse")  # the first one a row has is its headline


def _quality_text(q) -> str:
    if not q:
        return "-"
    key = (
        "cv_logloss"
        if "cv_logloss" in q and "logloss" not in q
        else next(k for k in PRIMARY if k in q)
    )
    text = f"{key} {q[key]:.4f}"
    if "accuracy" in q:
        text += f", acc {q['accuracy']:.3f}"
    return text


def _fmt(v, spec, missing="-"):
    return missing if v is None else format(v, spec)


def format_table(rows: list) -> str:
    head = (
        "row",
        "library",
        "warm s",
        "cold s",
        "peak MiB",
        "quality (held out / CV)",
        "warm/XGB",
        "cold/XGB",
        "mem/XGB",
    )
    body = []
    for r in rows:
        miss = "timeout" if r["timeout"] else ("error" if r.get("errors") else "-")
        body.append(
            (
                r["row"],
                r["lib"],
                _fmt(r["warm_s"], ".3f", miss),
                _fmt(r["cold_s"], ".2f", miss),
                _fmt(r["peak_rss_mib"], ".0f"),
                _quality_text(r["quality"]),
                _fmt(r["warm_ratio"], ".2f"),
                _fmt(r["cold_ratio"], ".2f"),
                _fmt(r["peak_ratio"], ".2f"),
            )
        )
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    text_cols = (0, 1, 5)

    def line(cells):
        return "  ".join(
            str(c).ljust(w) if i in text_cols else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths))
        )

    out = [line(head), "  ".join("-" * w for w in widths)] + [line(b) for b in body]
    notes = [
        "warm s: median of the fits after the first in one process; cold s: the first "
        "fit in a fresh process, jaxboost's compilation cache off (compile included, "
        "imports not); peak MiB: the process's VmHWM. A fit includes binning.",
        "cv: mean 5-fold log loss; grid: test log loss of the refit best (4 settings "
        "x 3 folds + refit).",
    ]
    others = [r["others_cpu_share"] for r in rows if r.get("others_cpu_share") is not None]
    if others and max(others) > 0.05:
        notes.append(
            f"warning: other processes used up to {max(others):.0%} of the machine's "
            f"CPU during a run; absolute times are noisy, read the ratios."
        )
    for r in rows:
        for e in r.get("errors", []):
            notes.append(f"ERROR {r['row']} {r['lib']}: {e}")
    return "\n".join(out + [""] + notes)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--rows",
        default=",".join(ROWS),
        help="comma list of rows (default all): " + ", ".join(ROWS),
    )
    ap.add_argument(
        "--peers",
        default=",".join(ALL_PEERS),
        help="comma list of xgboost,lightgbm (default both; jaxboost always runs)",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 20 rounds (forest 10 trees), a tenth of the large data sets, 1 warm fit",
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="boosting rounds (trees of the forest row) for every row, in place of each row's own",
    )
    ap.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="fresh processes per (row, library), interleaved; medians reported",
    )
    ap.add_argument(
        "--warm-repeats",
        type=int,
        default=None,
        help="warm fits per process (default 3; 1 with --quick)",
    )
    ap.add_argument("--threads", type=int, default=2, help="threads per library (default 2)")
    ap.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds before a worker is killed and reported as a timeout "
        "(default 900; 120 with --quick)",
    )
    ap.add_argument(
        "--out",
        default=None,
        help="JSON output (default benchmarks/results/everyday-<timestamp>.json)",
    )
    ap.add_argument("--_worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    args.peers = [p.strip().lower() for p in args.peers.split(",") if p.strip()]
    bad = [r for r in args.rows if r not in ROWS] + [p for p in args.peers if p not in ALL_PEERS]
    if bad:
        ap.error(f"unknown row(s)/peer(s): {bad}")
    if args.warm_repeats is None:
        args.warm_repeats = 1 if args.quick else 3
    if args.timeout is None:
        args.timeout = 120.0 if args.quick else 900.0
    if args.repeats < 1 or args.warm_repeats < 1:
        ap.error("--repeats and --warm-repeats must be >= 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args._worker is not None:
        worker_main(args._worker)
        return 0
    libs = ["jaxboost"] + args.peers
    data_info = {}
    for row in args.rows:
        key = data_key(row, args.quick)
        if key not in data_info:
            print(f"data {key} ...", end=" ", flush=True)
            data_info[key] = ensure_data(row, args.quick)
            state = "built" if data_info[key]["generated"] else "cached; building took"
            print(f"{state} {data_info[key]['generation_s']:.1f} s", flush=True)
    # Build the native histogram kernel now if it is not built yet (untimed).
    subprocess.run(
        [sys.executable, "-c", "import jaxboost.native as n; n.available()"],
        env=worker_env(args.threads),
        cwd=ROOT,
        check=False,
    )

    runs = {(row, lib): [] for row in args.rows for lib in libs}
    for row in args.rows:
        for rep in range(args.repeats):
            for lib in libs:
                spec = dict(
                    row=row,
                    lib=lib,
                    quick=args.quick,
                    rounds=args.rounds,
                    threads=args.threads,
                    warm_repeats=args.warm_repeats,
                )
                print(f"[{row} {rep + 1}/{args.repeats}] {lib} ...", end=" ", flush=True)
                res = run_worker(spec, args.timeout)
                runs[(row, lib)].append(res)
                if res.get("timeout"):
                    print(f"TIMEOUT after {args.timeout:.0f} s", flush=True)
                elif "error" in res:
                    print("ERROR\n    " + res["error"].replace("\n", "\n    "), flush=True)
                else:
                    print(
                        f"cold {res['cold_s']:.2f} s, warm {res['warm_s']:.3f} s, "
                        f"{res['peak_rss_mib']:.0f} MiB, {_quality_text(res['quality'])}",
                        flush=True,
                    )

    rows = [summarise(row, lib, runs[(row, lib)]) for row in args.rows for lib in libs]
    add_ratios(rows)
    table = format_table(rows)
    print()
    print(table)
    out = (
        Path(args.out)
        if args.out
        else RESULTS_DIR
        / ("everyday-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + ".json")
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "created": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": [Path(sys.executable).name] + sys.argv,
        "machine": machine_info(),
        "settings": dict(
            rows=args.rows,
            peers=args.peers,
            quick=args.quick,
            repeats=args.repeats,
            warm_repeats=args.warm_repeats,
            threads=args.threads,
            timeout_s=args.timeout,
            max_depth=MAX_DEPTH,
            learning_rate=LEARNING_RATE,
            reg_lambda=REG_LAMBDA,
            min_child_weight=MIN_CHILD_WEIGHT,
            max_bin=MAX_BIN,
            forest=RF,
            grid=GRID,
            rounds={r: n_rounds(r, args.quick, args.rounds) for r in args.rows},
        ),
        "data": data_info,
        "summary": rows,
        "runs": [
            dict(row=row, lib=lib, repeats=runs[(row, lib)]) for row in args.rows for lib in libs
        ],
        "table": table,
    }
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"\nraw figures: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
