"""Benchmarks for jaxboost against XGBoost (and optionally LightGBM, scikit-learn).

Workloads and rules are defined in the project's BENCHMARKS.md (shared/ beside the
repository), summarised in ``benchmarks/README.md``:

* W1  binary logistic, 1M training rows, depth 6, 100 rounds, lr 0.1, 256 bins.
* W2  the same at 10k rows, the *whole script* (import, bin, compile, train, predict) in a
      fresh process, timed from outside.
* W3  a user-written loss at 1M rows: plain-JAX logistic vs the built-in
      ``objectives.logistic``, and a focal loss (gamma 2).
* W4  multi-class softmax (jaxboost: ``objectives.softmax``, one tree per class per round).
* W5  W1 at 100k, 1M and 4M training rows.

Every (library, workload) measurement runs in its own fresh subprocess
(``run.py --_worker SPEC``) so that peak resident memory is per library. Repeats are
interleaved (jaxboost, xgboost, jaxboost, xgboost, ...) and the median of the repeats is
reported. Every library gets all cores of the machine. Timings drift on shared machines, so
read the ratios (jaxboost / XGBoost hist, measured in the same run), not absolute seconds.

Usage::

    python benchmarks/run.py                          # W1,W2 vs XGBoost, 3 repeats
    python benchmarks/run.py --rows 20000 --repeats 1 # quick smoke run
    python benchmarks/run.py --workloads W1,W3,W5 --peers xgboost,lightgbm,sklearn

The worker processes import nothing heavy before they start timing, so the W2 figure is
what a user waits for in a fresh notebook kernel.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE_DIR = HERE / ".cache"
RESULTS_DIR = HERE / "results"
RESULT_TAG = "@@RESULT "

N_TEST = 200_000
W1_ROWS = 1_000_000
W2_ROWS = 10_000
W5_SIZES = (100_000, 1_000_000, 4_000_000)
W4_TRAIN, W4_TEST = 200_000, 40_000

# Hyper-parameters shared by every library (BENCHMARKS.md).
MAX_DEPTH = 6
LEARNING_RATE = 0.1
REG_LAMBDA = 1.0
MIN_CHILD_WEIGHT = 1.0
MAX_BIN = 256
DEFAULT_ROUNDS = {"W1": 100, "W2": 100, "W3": 100, "W4": 50, "W5": 100}

ALL_WORKLOADS = ("W1", "W2", "W3", "W4", "W5")
ALL_PEERS = ("xgboost", "lightgbm", "sklearn")
# Variants per (workload, library): W3 compares ways of giving the same loss.
W3_VARIANTS = {
    "jaxboost": ("builtin", "jax-logistic", "jax-focal2"),
    "xgboost": ("builtin", "numpy-logistic", "pypi-jaxboost"),
    "lightgbm": ("builtin",),
    "sklearn": ("builtin",),
}


# --------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------
def dataset_spec(workload: str, n_train: int) -> dict:
    """The ``make_classification`` arguments and the train/test slice for a workload.

    Binary workloads use the 1.2M-row set (first ``n_train`` rows train, the last 200k
    test); a training size above 1M (W5 at 4M) uses ``n_train + 200k`` samples generated
    the same way. W4 uses its own 10-class set (first rows train, last 40k test).
    """
    if workload == "W4":
        gen = dict(
            n_samples=W4_TRAIN + W4_TEST,
            n_features=50,
            n_informative=30,
            n_classes=10,
            random_state=0,
        )
        return dict(gen=gen, n_train=min(n_train, W4_TRAIN), n_test=W4_TEST)
    n_samples = max(W1_ROWS, n_train) + N_TEST
    gen = dict(n_samples=n_samples, n_features=28, n_informative=14, n_redundant=4, random_state=0)
    return dict(gen=gen, n_train=n_train, n_test=N_TEST)


def _cache_paths(gen: dict) -> tuple[Path, Path, Path]:
    """Cache file names (X, y, metadata) for one ``make_classification`` call."""
    tag = "cls_" + "_".join(f"{k}{v}" for k, v in sorted(gen.items()))
    return (CACHE_DIR / f"{tag}_X.npy", CACHE_DIR / f"{tag}_y.npy", CACHE_DIR / f"{tag}_meta.json")


def ensure_dataset(gen: dict) -> dict:
    """Generate and cache a dataset as float32 ``.npy`` unless cached already.

    Returns ``{"generated": bool, "generation_s": float}``: whether it was generated now,
    and the seconds that generating it (and writing the cache) took, now or when cached.
    """
    x_path, y_path, meta_path = _cache_paths(gen)
    if x_path.exists() and y_path.exists():
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            meta = {}
        return {"generated": False, "generation_s": meta.get("generation_s")}
    from sklearn.datasets import make_classification

    t0 = time.perf_counter()
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    X, y = make_classification(**gen)
    for path, arr in ((x_path, X.astype(np.float32)), (y_path, y.astype(np.float32))):
        tmp = path.with_name(path.name + ".tmp.npy")
        np.save(tmp, arr)
        os.replace(tmp, path)
    seconds = time.perf_counter() - t0
    meta_path.write_text(json.dumps({"gen": gen, "generation_s": seconds}) + "\n")
    return {"generated": True, "generation_s": seconds}


def load_dataset(spec: dict):
    """Load ``(X_train, y_train, X_test, y_test)`` from the cache.

    The slices are copied into process memory (not left memory-mapped), so every library
    starts from the same in-memory float32 arrays and they count in its peak memory.
    """
    x_path, y_path, _ = _cache_paths(spec["gen"])
    X = np.load(x_path, mmap_mode="r")
    y = np.load(y_path, mmap_mode="r")
    n, m = spec["n_train"], spec["n_test"]
    return (np.array(X[:n]), np.array(y[:n]), np.array(X[-m:]), np.array(y[-m:]))


# --------------------------------------------------------------------------------------
# Metrics (NumPy only, so workers need not import scikit-learn / SciPy)
# --------------------------------------------------------------------------------------
def logloss(y: np.ndarray, p: np.ndarray) -> float:
    """Mean binary cross-entropy of probabilities ``p`` (clipped to [1e-15, 1 - 1e-15])."""
    p = np.clip(np.asarray(p, np.float64), 1e-15, 1 - 1e-15)
    y = np.asarray(y, np.float64)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))


def mlogloss(y: np.ndarray, P: np.ndarray) -> float:
    """Mean multi-class cross-entropy of an ``(N, K)`` probability matrix."""
    P = np.clip(np.asarray(P, np.float64), 1e-15, 1.0)
    P = P / P.sum(axis=1, keepdims=True)
    return float(-np.mean(np.log(P[np.arange(len(y)), np.asarray(y, np.int64)])))


def auc(y: np.ndarray, score: np.ndarray) -> float:
    """ROC AUC by the rank-sum (Mann-Whitney) formula, ties given their average rank."""
    y = np.asarray(y) > 0.5
    s = np.asarray(score, np.float64)
    order = np.argsort(s, kind="mergesort")
    s_sorted = s[order]
    ranks = np.empty(len(s), np.float64)
    # Average rank (1-based) over each run of equal scores.
    starts = np.flatnonzero(np.r_[True, s_sorted[1:] != s_sorted[:-1]])
    ends = np.r_[starts[1:], len(s)]
    avg = (starts + ends + 1) / 2.0
    ranks[order] = np.repeat(avg, ends - starts)
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def macro_auc(y: np.ndarray, P: np.ndarray) -> float:
    """One-vs-rest ROC AUC averaged over classes."""
    y = np.asarray(y, np.int64)
    return float(np.mean([auc(y == k, P[:, k]) for k in range(P.shape[1])]))


def sigmoid(m: np.ndarray) -> np.ndarray:
    """Numerically stable logistic function in float64."""
    m = np.asarray(m, np.float64)
    return np.exp(-np.logaddexp(0.0, -m))


def peak_rss_mib() -> float:
    """Peak resident set size of this process in MiB (VmHWM, else ru_maxrss)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# --------------------------------------------------------------------------------------
# Workers: one library, one workload, one process
# --------------------------------------------------------------------------------------
class CompileClock:
    """Wall time JAX spends tracing, lowering and compiling, from ``jax.monitoring``.

    The union of the time spans of JAX's compile events, so nested traces are not
    counted twice. Cache hits record no event.
    """

    EVENTS = (
        "/jax/core/compile/jaxpr_trace_duration",
        "/jax/core/compile/jaxpr_to_mlir_module_duration",
        "/jax/core/compile/backend_compile_duration",
    )

    def __init__(self):
        from jax import monitoring

        self.spans = []
        monitoring.register_event_time_span_listener(self._on_span)

    def _on_span(self, event, start, end, **_):
        if event in self.EVENTS:
            self.spans.append((start, end))

    def seconds(self) -> float:
        """Total compile seconds recorded so far (union of spans)."""
        total, cur_s, cur_e = 0.0, None, None
        for s, e in sorted(self.spans):
            if cur_e is None or s > cur_e:
                if cur_e is not None:
                    total += cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        if cur_e is not None:
            total += cur_e - cur_s
        return total


def _jax_losses():
    """The user-written W3 losses: plain-JAX logistic and focal loss (gamma 2)."""
    import jax
    import jax.numpy as jnp

    def jax_logistic(y, pred):
        """Binary cross-entropy on the margin, written as a user would."""
        return jnp.logaddexp(0.0, pred) - y * pred

    def jax_focal2(y, pred, gamma=2.0):
        """Focal loss (Lin et al. 2017), gamma 2, on the margin."""
        p = jax.nn.sigmoid(pred)
        log_p = jax.nn.log_sigmoid(pred)
        log_1mp = jax.nn.log_sigmoid(-pred)
        return -(y * (1 - p) ** gamma * log_p + (1 - y) * p**gamma * log_1mp)

    return {"jax-logistic": jax_logistic, "jax-focal2": jax_focal2}


def work_jaxboost(spec: dict, data, t_start: float) -> dict:
    """Train and evaluate jaxboost for one workload.

    W1/W3/W5: a first ``train`` (compile + train) and a second one with the same shapes
    (warm); train seconds = the second, compile ~= first - second. W2: one cold call, as a
    fresh script would, with compile seconds from ``jax.monitoring``.
    """
    t0 = time.perf_counter()
    import jax

    import jaxboost
    import objectives

    clock = CompileClock()
    import_s = time.perf_counter() - t0
    X, y, Xt, yt = data
    jax_losses = _jax_losses()
    multi = spec["workload"] == "W4"
    # W4: softmax, one tree per class per round (XGBoost's multi:softprob layout).
    loss = (
        objectives.softmax(n_classes=10)
        if multi
        else jax_losses.get(spec["variant"], objectives.logistic)
    )
    params = dict(
        n_rounds=spec["rounds"],
        learning_rate=LEARNING_RATE,
        max_depth=MAX_DEPTH,
        reg_lambda=REG_LAMBDA,
        min_child_weight=MIN_CHILD_WEIGHT,
        max_bin=MAX_BIN,
    )

    def fit():
        t = time.perf_counter()
        bst = jaxboost.train(loss, X, y, **params)
        jax.block_until_ready(bst.trees)
        return bst, time.perf_counter() - t

    out = {"import_s": import_s}
    bst, first_s = fit()
    out["first_train_s"] = first_s
    out["first_fit_peak_mib"] = peak_rss_mib()  # before the warm second fit
    if spec["workload"] != "W2":
        del bst
        bst, second_s = fit()
        out["train_s"] = second_s
        out["compile_s"] = max(first_s - second_s, 0.0)
    t = time.perf_counter()
    margin = bst.predict(Xt, output_margin=not multi)
    out["predict_s"] = time.perf_counter() - t
    if multi:
        return finish(out, spec, t_start, yt, margin, "multi")
    if spec["workload"] == "W2":
        out["script_s"] = time.time() - t_start
        out["train_s"] = first_s
        out["compile_s"] = clock.seconds()
        out["compile_share"] = out["compile_s"] / out["script_s"]
    out["jax_compile_events_s"] = clock.seconds()
    return finish(out, spec, t_start, yt, margin, "margin")


def xgboost_params(**extra) -> dict:
    """XGBoost ``hist`` settings of BENCHMARKS.md (256 bins, depth-wise depth 6, eta 0.1,
    reg_lambda 1, min_child_weight 1), all cores, silent; ``extra`` added or overriding.
    Every script that times XGBoost against W1's settings takes them from here."""
    params = dict(
        tree_method="hist",
        max_bin=MAX_BIN,
        grow_policy="depthwise",
        max_depth=MAX_DEPTH,
        eta=LEARNING_RATE,
        reg_lambda=REG_LAMBDA,
        min_child_weight=MIN_CHILD_WEIGHT,
        nthread=os.cpu_count(),
        verbosity=0,
    )
    params.update(extra)
    return params


def work_xgboost(spec: dict, data, t_start: float) -> dict:
    """Train and evaluate XGBoost hist (built-in objective, or a NumPy custom objective).

    The training data go into a ``QuantileDMatrix`` (XGBoost's memory-lean input for
    ``hist``: it sketches and bins at construction and keeps no float copy). Its
    construction is binning, which jaxboost does inside ``train``, so ``train_s`` counts
    it; ``dmatrix_s`` and ``boost_s`` are the two parts.
    """
    t0 = time.perf_counter()
    import xgboost as xgb

    out = {"import_s": time.perf_counter() - t0}
    X, y, Xt, yt = data
    cores = os.cpu_count()
    t = time.perf_counter()
    dtrain = xgb.QuantileDMatrix(X, label=y, max_bin=MAX_BIN, nthread=cores)
    out["dmatrix_s"] = time.perf_counter() - t
    params = xgboost_params(nthread=cores)
    obj = None
    multi = spec["workload"] == "W4"
    if multi:
        params.update(objective="multi:softprob", num_class=10)
    elif spec["variant"] == "pypi-jaxboost":
        # The same plain JAX logistic loss, turned into XGBoost callbacks by the PyPI
        # package of the same name (installed apart: see ensure_pypi_jaxboost).
        import jax.numpy as jnp

        import jaxboost as pypi_jaxboost

        if not str(pypi_jaxboost.__file__).startswith(str(PYPI_JAXBOOST_DIR)):
            raise RuntimeError(f"imported the wrong jaxboost: {pypi_jaxboost.__file__}")
        params.update(base_score=0.0)

        @pypi_jaxboost.auto_objective
        def bridge_logistic(y_pred, y_true):
            return jnp.logaddexp(0.0, y_pred) - y_true * y_pred

        obj = bridge_logistic.xgb_objective
    elif spec["variant"] == "numpy-logistic":
        params.update(base_score=0.0)  # margins start at 0, as with a raw objective

        def obj(pred, dmat):
            """Closed-form logistic g, h in NumPy."""
            s = 1.0 / (1.0 + np.exp(-pred))
            return s - dmat.get_label(), np.maximum(s * (1.0 - s), 1e-16)
    else:
        params.update(objective="binary:logistic")
    t = time.perf_counter()
    bst = xgb.train(params, dtrain, num_boost_round=spec["rounds"], obj=obj)
    out["boost_s"] = time.perf_counter() - t
    out["train_s"] = out["dmatrix_s"] + out["boost_s"]
    out["first_fit_peak_mib"] = peak_rss_mib()
    t = time.perf_counter()
    pred = bst.inplace_predict(Xt, predict_type="value" if multi else "margin")
    out["predict_s"] = time.perf_counter() - t
    return finish(out, spec, t_start, yt, pred, "multi" if multi else "margin")


def work_lightgbm(spec: dict, data, t_start: float) -> dict:
    """Train and evaluate LightGBM with the settings of BENCHMARKS.md."""
    t0 = time.perf_counter()
    import lightgbm as lgb

    out = {"import_s": time.perf_counter() - t0}
    X, y, Xt, yt = data
    multi = spec["workload"] == "W4"
    params = dict(
        objective="multiclass" if multi else "binary",
        num_leaves=64,
        max_depth=MAX_DEPTH,
        max_bin=MAX_BIN - 1,
        min_data_in_leaf=1,
        min_sum_hessian_in_leaf=MIN_CHILD_WEIGHT,
        learning_rate=LEARNING_RATE,
        lambda_l2=REG_LAMBDA,
        num_threads=os.cpu_count(),
        verbose=-1,
    )
    if multi:
        params["num_class"] = 10
    t = time.perf_counter()
    dtrain = lgb.Dataset(X, label=y, params=params)  # binned lazily inside lgb.train
    out["dataset_s"] = time.perf_counter() - t
    t = time.perf_counter()
    bst = lgb.train(params, dtrain, num_boost_round=spec["rounds"])
    out["train_s"] = time.perf_counter() - t
    out["first_fit_peak_mib"] = peak_rss_mib()
    t = time.perf_counter()
    pred = bst.predict(Xt, raw_score=not multi)
    out["predict_s"] = time.perf_counter() - t
    return finish(out, spec, t_start, yt, pred, "multi" if multi else "margin")


def work_sklearn(spec: dict, data, t_start: float) -> dict:
    """Train and evaluate scikit-learn's HistGradientBoostingClassifier."""
    t0 = time.perf_counter()
    from sklearn.ensemble import HistGradientBoostingClassifier

    out = {"import_s": time.perf_counter() - t0}
    X, y, Xt, yt = data
    clf = HistGradientBoostingClassifier(
        max_iter=spec["rounds"],
        learning_rate=LEARNING_RATE,
        max_depth=MAX_DEPTH,
        max_leaf_nodes=64,
        l2_regularization=REG_LAMBDA,
        max_bins=MAX_BIN - 1,
        early_stopping=False,
        random_state=0,
    )  # min_samples_leaf: library default (20)
    t = time.perf_counter()
    clf.fit(X, y.astype(np.int64))
    out["train_s"] = time.perf_counter() - t
    out["first_fit_peak_mib"] = peak_rss_mib()
    t = time.perf_counter()
    P = clf.predict_proba(Xt)
    out["predict_s"] = time.perf_counter() - t
    return finish(out, spec, t_start, yt, P, "multi" if spec["workload"] == "W4" else "proba")


def finish(out: dict, spec: dict, t_start: float, yt, pred, kind: str) -> dict:
    """Record the W2 whole-script time and the test metrics of one worker.

    ``kind``: ``"margin"`` (binary margins), ``"proba"`` (binary class probabilities,
    ``(N, 2)``) or ``"multi"`` (``(N, K)`` class probabilities).
    """
    if kind == "multi":
        out.update(logloss=mlogloss(yt, pred), auc=macro_auc(yt, pred))
        return out
    if spec["workload"] == "W2":
        out.setdefault("script_s", time.time() - t_start)
    p = sigmoid(pred) if kind == "margin" else pred[:, 1]
    out.update(logloss=logloss(yt, p), auc=auc(yt, p))
    return out


WORKERS = {
    "jaxboost": work_jaxboost,
    "xgboost": work_xgboost,
    "lightgbm": work_lightgbm,
    "sklearn": work_sklearn,
}


def worker_main(spec_json: str) -> None:
    """Entry point of a worker process: run one measurement, print one JSON line."""
    spec = json.loads(spec_json)
    t0 = time.perf_counter()
    data = load_dataset(spec["data"])
    load_s = time.perf_counter() - t0
    out = WORKERS[spec["lib"]](spec, data, spec["t_launch"])
    out["load_s"] = load_s
    out["peak_rss_mib"] = peak_rss_mib()
    sys.stdout.write(RESULT_TAG + json.dumps(out) + "\n")
    sys.stdout.flush()


# --------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------
# W2 for jaxboost runs twice: with an empty persistent compilation cache (what a user
# waits for the very first time) and with a cache a previous process filled (every later
# fresh process: a notebook restarted, a script run again).
W2_VARIANTS = {"jaxboost": ("cold-cache", "warm-cache")}
PYPI_JAXBOOST_DIR = CACHE_DIR / "pypi-jaxboost"
PYPI_JAXBOOST_PINS = ("jaxboost==0.5.0", "chex==0.1.91", "toolz==1.1.0")


def ensure_pypi_jaxboost() -> Path:
    """Install the unrelated PyPI package ``jaxboost`` (a JAX-loss-to-XGBoost bridge) into
    its own target directory, never into this environment (it would shadow this project)."""
    marker = PYPI_JAXBOOST_DIR / ".installed"
    if not marker.exists():
        PYPI_JAXBOOST_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--no-deps",
                "--target",
                str(PYPI_JAXBOOST_DIR),
                *PYPI_JAXBOOST_PINS,
            ],
            check=True,
        )
        marker.write_text(" ".join(PYPI_JAXBOOST_PINS))
    return PYPI_JAXBOOST_DIR


def worker_env(spec: dict | None = None) -> dict:
    """Environment of a worker: CPU JAX unless chosen otherwise, all cores for OpenMP.

    The W2 jaxboost variants choose the compilation cache; the W3 ``pypi-jaxboost``
    variant puts the PyPI package's directory, not this project, on the path.
    """
    env = dict(os.environ)
    env.setdefault("JAX_PLATFORMS", "cpu")
    env.setdefault("OMP_NUM_THREADS", str(os.cpu_count()))
    variant = (spec or {}).get("variant")
    first = str(ROOT)
    if variant == "pypi-jaxboost":
        first = str(ensure_pypi_jaxboost())
    elif variant == "cold-cache":
        env["JAXBOOST_COMPILATION_CACHE"] = "0"
    elif variant == "warm-cache":
        env["JAXBOOST_CACHE_DIR"] = str(CACHE_DIR / "jaxboost-w2-cache")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (first, env.get("PYTHONPATH")) if p)
    return env


def run_worker(spec: dict, timeout: float) -> dict:
    """Run one worker subprocess; return its JSON result plus the outside wall time."""
    spec = dict(spec, t_launch=time.time())
    busy0, own0 = busy_cpu_seconds(), children_cpu_seconds()
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--_worker", json.dumps(spec)],
            capture_output=True,
            text=True,
            env=worker_env(spec),
            timeout=timeout,
            cwd=ROOT if spec.get("variant") != "pypi-jaxboost" else HERE,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    wall_s = time.perf_counter() - t0
    busy, own = busy_cpu_seconds() - busy0, children_cpu_seconds() - own0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_TAG)]
    if proc.returncode != 0 or not lines:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-8:])
        return {"error": f"exit {proc.returncode}: {tail}", "wall_s": wall_s}
    out = json.loads(lines[-1][len(RESULT_TAG) :])
    out["wall_s"] = wall_s
    # Share of the machine's CPU capacity used by *other* processes during this run.
    if busy0 is not None and wall_s > 0:
        out["others_cpu_share"] = max(busy - own, 0.0) / (wall_s * os.cpu_count())
    return out


def busy_cpu_seconds():
    """CPU seconds all processes of the machine have spent so far (/proc/stat), or None."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds():
    """CPU seconds (user + system) of this driver's finished child processes."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def build_jobs(workloads, libs, rows, rounds, w5_sizes):
    """The measurement list: one entry per (workload, rows, library, variant)."""
    jobs = []
    for wl in workloads:
        n_rounds = rounds or DEFAULT_ROUNDS[wl]
        if wl == "W5":
            sizes = w5_sizes
        elif wl == "W2":
            sizes = [W2_ROWS]
        elif wl == "W4":
            sizes = [rows or W4_TRAIN]
        else:
            sizes = [rows or W1_ROWS]
        for n in sizes:
            for lib in libs:
                if wl == "W3":
                    variants = W3_VARIANTS[lib]
                elif wl == "W2":
                    variants = W2_VARIANTS.get(lib, ("builtin",))
                else:
                    variants = ("builtin",)
                for v in variants:
                    jobs.append(
                        dict(
                            workload=wl,
                            lib=lib,
                            variant=v,
                            rows=n,
                            rounds=n_rounds,
                            data=dataset_spec(wl, n),
                        )
                    )
    return jobs


def median_of(runs: list, key: str):
    """Median of ``key`` over successful runs that report it, else ``None``."""
    vals = [r[key] for r in runs if "error" not in r and r.get(key) is not None]
    return statistics.median(vals) if vals else None


def summarise(job: dict, runs: list) -> dict:
    """Median figures of one job over its repeats."""
    keys = (
        "train_s",
        "compile_s",
        "predict_s",
        "load_s",
        "logloss",
        "auc",
        "peak_rss_mib",
        "first_fit_peak_mib",
        "wall_s",
        "script_s",
        "compile_share",
        "import_s",
        "first_train_s",
        "jax_compile_events_s",
    )
    others = [r["others_cpu_share"] for r in runs if r.get("others_cpu_share") is not None]
    row = {k: job[k] for k in ("workload", "lib", "variant", "rows", "rounds")}
    row.update({k: median_of(runs, k) for k in keys})
    errors = [r["error"] for r in runs if "error" in r]
    skipped = [r["skipped"] for r in runs if "skipped" in r]
    row["others_cpu_share"] = max(others) if others else None
    if skipped:
        row["skipped"] = skipped[0]
    if errors:
        row["errors"] = errors
    # For W2 the headline time is the whole script, timed from outside.
    row["time_s"] = row["wall_s"] if job["workload"] == "W2" else row["train_s"]
    return row


def add_ratios(rows: list) -> None:
    """Ratio of each row's time and peak memory to XGBoost hist (built-in objective)."""
    ref = {
        (r["workload"], r["rows"]): r
        for r in rows
        if r["lib"] == "xgboost" and r["variant"] == "builtin"
    }
    for r in rows:
        x = ref.get((r["workload"], r["rows"]))
        for key, name in (
            ("time_s", "time_ratio"),
            ("peak_rss_mib", "mem_ratio"),
            ("first_fit_peak_mib", "first_fit_mem_ratio"),
        ):
            ok = x is not None and r.get(key) is not None and x.get(key)
            r[name] = r[key] / x[key] if ok else None


def _fmt(v, spec):
    """Format a number, or "-" when missing."""
    return "-" if v is None else format(v, spec)


def format_table(rows: list) -> str:
    """Aligned plain-text table of the summary rows, with footnotes."""
    head = (
        "workload",
        "library",
        "variant",
        "rows",
        "time s",
        "compile s",
        "predict s",
        "logloss",
        "AUC",
        "peak MiB",
        "time/XGB",
        "mem/XGB",
        "1st fit MiB",
        "/XGB",
    )
    body = []
    for r in rows:
        if r.get("skipped"):
            body.append((r["workload"], r["lib"], r["variant"], f"{r['rows']:,}") + ("n/a",) * 10)
            continue
        if r.get("errors") and r["time_s"] is None:
            body.append(
                (r["workload"], r["lib"], r["variant"], f"{r['rows']:,}") + ("error",) + ("-",) * 9
            )
            continue
        body.append(
            (
                r["workload"],
                r["lib"],
                r["variant"],
                f"{r['rows']:,}",
                _fmt(r["time_s"], ".2f"),
                _fmt(r["compile_s"], ".2f"),
                _fmt(r["predict_s"], ".2f"),
                _fmt(r["logloss"], ".4f"),
                _fmt(r["auc"], ".4f"),
                _fmt(r["peak_rss_mib"], ".0f"),
                _fmt(r["time_ratio"], ".2f"),
                _fmt(r["mem_ratio"], ".2f"),
                _fmt(r.get("first_fit_peak_mib"), ".0f"),
                _fmt(r.get("first_fit_mem_ratio"), ".2f"),
            )
        )
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    left = 3  # text columns left-aligned, numbers right-aligned

    def line(cells):
        return "  ".join(
            str(c).ljust(w) if i < left else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths))
        )

    out = [line(head), "  ".join("-" * w for w in widths)] + [line(b) for b in body]
    notes = [
        "time s: training seconds, median of repeats (jaxboost: warm second call; "
        "binning is inside training for every library); W2: wall seconds of the whole "
        "script in a fresh process, timed from outside.",
        "compile s: jaxboost first call - second call (W2: JAX compile events).",
        "peak MiB: the worker's whole-process peak (VmHWM), data and prediction included; "
        "jaxboost fits twice in W1/W3/W4/W5 (for the warm time), so its figure is the "
        "second fit's, on a heap the first one grew. 1st fit MiB: VmHWM read right after "
        "the first fit (the other libraries fit once).",
    ]
    others = [r["others_cpu_share"] for r in rows if r.get("others_cpu_share") is not None]
    if others and max(others) > 0.05:
        notes.append(
            f"warning: other processes used up to {max(others):.0%} of the machine's "
            f"CPU during a run; absolute times are noisy, read the ratios."
        )
    for r in rows:
        if r["workload"] == "W2" and r["lib"] == "jaxboost" and r.get("compile_share"):
            notes.append(
                f"W2 jaxboost {r['variant']} compile share: "
                f"{r['compile_share']:.0%} of the whole "
                f"script ({r['compile_s']:.2f} s of {r['script_s']:.2f} s, measured "
                f"inside the worker)."
            )
        for e in r.get("errors", []):
            notes.append(f"ERROR {r['workload']} {r['lib']} {r['variant']}: {e}")
    return "\n".join(out + [""] + notes)


def machine_info() -> dict:
    """Cores, CPU model, GPU (if any), Python and library versions."""
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    gpu = None
    try:
        res = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        if res.returncode == 0 and res.stdout.strip():
            gpu = res.stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        pass
    versions = {}
    for name, dists in (
        ("jax", ["jax"]),
        ("jaxlib", ["jaxlib"]),
        ("xgboost", ["xgboost", "xgboost-cpu"]),
        ("lightgbm", ["lightgbm"]),
        ("sklearn", ["scikit-learn"]),
        ("numpy", ["numpy"]),
        ("jaxboost", ["jaxboost"]),
    ):
        versions[name] = None
        for d in dists:
            try:
                versions[name] = metadata.version(d)
                break
            except metadata.PackageNotFoundError:
                continue
    versions["python"] = platform.python_version()
    commit = None
    try:
        res = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        )
        commit = res.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "cores": os.cpu_count(),
        "cpu_model": cpu,
        "gpu": gpu,
        "platform": platform.platform(),
        "jax_platforms": worker_env()["JAX_PLATFORMS"],
        "versions": versions,
        "git_commit": commit,
    }


def parse_args(argv=None):
    """Command-line flags (see the module docstring)."""
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--workloads", default="W1,W2", help="comma list of W1..W5 (default W1,W2)")
    ap.add_argument(
        "--peers",
        default="xgboost",
        help="comma list of xgboost,lightgbm,sklearn (default xgboost)",
    )
    ap.add_argument("--repeats", type=int, default=3, help="repeats per measurement (median)")
    ap.add_argument(
        "--rows",
        type=int,
        default=None,
        help="training rows for W1, W3, W4 (smoke runs); W2 is always 10k",
    )
    ap.add_argument(
        "--w5-sizes",
        default=",".join(str(n) for n in W5_SIZES),
        help="training sizes for W5 (default 100000,1000000,4000000)",
    )
    ap.add_argument(
        "--rounds", type=int, default=None, help="boosting rounds (default 100; 50 for W4)"
    )
    ap.add_argument(
        "--out", default=None, help="JSON output (default benchmarks/results/<timestamp>.json)"
    )
    ap.add_argument(
        "--timeout", type=float, default=3600.0, help="seconds before a worker is killed"
    )
    ap.add_argument("--_worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.workloads = [w.strip().upper() for w in args.workloads.split(",") if w.strip()]
    args.peers = [p.strip().lower() for p in args.peers.split(",") if p.strip()]
    bad = [w for w in args.workloads if w not in ALL_WORKLOADS]
    bad += [p for p in args.peers if p not in ALL_PEERS]
    if bad:
        ap.error(f"unknown workload(s)/peer(s): {bad}")
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    args.w5_sizes = [int(s) for s in args.w5_sizes.split(",") if s.strip()]
    return args


def main(argv=None) -> int:
    """Prepare data, run the interleaved worker processes, print the table, write JSON."""
    args = parse_args(argv)
    if args._worker is not None:
        worker_main(args._worker)
        return 0
    libs = ["jaxboost"] + args.peers
    jobs = build_jobs(args.workloads, libs, args.rows, args.rounds, args.w5_sizes)

    data_prep = {}
    for job in jobs:
        gen = job["data"]["gen"]
        key = _cache_paths(gen)[0].name
        if key not in data_prep:
            print(f"data: make_classification({gen}) ...", end=" ", flush=True)
            data_prep[key] = dict(ensure_dataset(gen), gen=gen)
            secs = data_prep[key]["generation_s"]
            secs = "?" if secs is None else f"{secs:.1f} s"
            state = "generated" if data_prep[key]["generated"] else "cached; generating took"
            print(f"{state} {secs}", flush=True)

    runs = {i: [] for i in range(len(jobs))}
    # Interleave: for each (workload, rows), run every library once per repeat in turn.
    groups = {}
    for i, job in enumerate(jobs):
        groups.setdefault((job["workload"], job["rows"]), []).append(i)
    for (wl, n), idx in groups.items():
        for i in idx:
            if jobs[i]["variant"] == "warm-cache":  # fill the cache once, untimed
                print(f"[{wl}] filling jaxboost's compilation cache (untimed) ...", flush=True)
                shutil.rmtree(CACHE_DIR / "jaxboost-w2-cache", ignore_errors=True)
                run_worker(jobs[i], args.timeout)
        for rep in range(args.repeats):
            for i in idx:
                job = jobs[i]
                print(
                    f"[{wl} rows={n:,} repeat {rep + 1}/{args.repeats}] {job['lib']} "
                    f"{job['variant']} ...",
                    end=" ",
                    flush=True,
                )
                res = run_worker(job, args.timeout)
                runs[i].append(res)
                if "error" in res:
                    print("ERROR", flush=True)
                    print("   ", res["error"].replace("\n", "\n    "), flush=True)
                else:
                    t = res["wall_s"] if wl == "W2" else res["train_s"]
                    print(f"{t:.2f} s, {res['peak_rss_mib']:.0f} MiB", flush=True)

    rows = [summarise(job, runs[i]) for i, job in enumerate(jobs)]
    add_ratios(rows)
    table = format_table(rows)
    print()
    print(table)

    out = (
        Path(args.out)
        if args.out
        else RESULTS_DIR / (datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + ".json")
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "created": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": [Path(sys.executable).name] + sys.argv,
        "machine": machine_info(),
        "settings": dict(
            workloads=args.workloads,
            peers=args.peers,
            repeats=args.repeats,
            rows=args.rows,
            rounds=args.rounds,
            w5_sizes=args.w5_sizes,
            max_depth=MAX_DEPTH,
            learning_rate=LEARNING_RATE,
            reg_lambda=REG_LAMBDA,
            min_child_weight=MIN_CHILD_WEIGHT,
            max_bin=MAX_BIN,
            threads=os.cpu_count(),
        ),
        "data": list(data_prep.values()),
        "summary": rows,
        "runs": [
            dict(job={k: v for k, v in job.items() if k != "data"}, repeats=runs[i])
            for i, job in enumerate(jobs)
        ],
        "table": table,
    }
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"\nraw figures: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
