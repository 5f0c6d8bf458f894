"""Compile latency: what a user waits for the compiler (issue 14).

Two figures, each measured in fresh Python processes on this machine:

1. **First model** (``first``): a fresh process with an EMPTY XLA compilation cache runs
   ``import jaxboost; jaxboost.train("logistic", X, y, n_rounds=100, max_depth=6)`` on the
   first 10,000 training rows of W2's data (BENCHMARKS.md). The data are generated once
   by this script and handed over as ``.npy`` files, so their construction is not timed.
   Each repeat gets a new ``JAXBOOST_CACHE_DIR`` (and ``JAXBOOST_COMPILATION_CACHE``
   unset, i.e. the persistent cache on, as a user has it); an untimed process builds the
   native histogram kernel into that directory first and its ``xla`` subfolder is then
   deleted, so only XLA compilation is left to the timed process. Figures: ``wall s``
   (subprocess start to exit, timed from outside: interpreter, imports, binning,
   compiling, training), and inside the process ``import s`` (``import jaxboost``),
   ``train s`` (the ``train`` call) and ``compile s`` (XLA compile seconds in that call,
   from ``jax.monitoring``). The peer is XGBoost ``hist`` (256 bins, depth 6, eta 0.3,
   100 rounds, ``QuantileDMatrix``) in a fresh process timed the same way; repeats are
   interleaved (jaxboost, XGBoost, ...) and medians reported. Target: wall <= 3 s.

2. **Extra wall time of each change** (``changes``): one fresh process with
   ``JAXBOOST_COMPILATION_CACHE=0`` (the persistent cache cannot hide a compile) trains a
   base model, then applies one change at a time, each against the state right before
   it. ``extra s`` = seconds of the call with the change minus seconds of an identical
   (warm) repeat of the call before it, run just before. ``compiles`` = XLA compilations
   during the call with the change (``benchmarks/_compiles.py``; the JSON has their
   program names). Sweeps apply several new values in turn: the table shows the first
   new value and the median over the following values (what each further value of a
   hyperparameter sweep costs). Changes: the catalogue ``pseudo_huber(delta=...)``; a
   user-written pseudo-Huber ``loss(y, p, *, delta)`` with ``loss_params={"delta": d}``
   (or ``functools.partial`` where ``train`` has no ``loss_params`` yet: marked
   ``[partial]``); the Hessian policy exact -> clip and ``hessian_floor``; ``max_depth``
   6 -> 5; adding an eval set, its row count, removing it, the eval metric; ``predict``
   row counts; and ``train_many`` over 8 configurations against 8 separate ``train``
   calls (total seconds of each; extra = total minus the warm time of as many calls).
   Targets: <= 0.5 s extra per change, <= 2 s for ``max_depth`` and the Hessian policy.

Usage::

    python benchmarks/compile_latency.py            # both parts, 3 first-model repeats
    python benchmarks/compile_latency.py --quick    # smoke test: 1 repeat, short sweeps
    python benchmarks/compile_latency.py --parts changes

Prints one table and writes the raw figures (every step, compile names, machine and
versions) to ``benchmarks/results/compile-latency-<timestamp>.json``. On a shared machine
read ``extra s`` next to ``compiles``: a step with 0 compiles has only noise as extra.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS_DIR = HERE / "results"
TAG = "@@COMPILE_LATENCY "

ROWS, N_EVAL_MAX = 10_000, 1_000
ROUNDS, DEPTH = 100, 6
TARGET_FIRST_S = 3.0
TARGET_CHANGE_S, TARGET_STATIC_S = 0.5, 2.0

# Sweeps: the first value is the state before the sweep, the second the "first new
# value", the rest give the median cost per further value.
FULL = dict(
    deltas=(1.0, 2.0, 3.0, 4.0, 5.0),
    floors=(1e-6, 1e-5, 1e-4, 1e-3, 1e-2),
    eval_rows=(100, 101, 150, 333),
    metrics=("logloss", "auc", "error"),
    predict_rows=(ROWS, 7, 100, 1000, 1234, 5000),
    many_grid=tuple((lr, lam) for lr in (0.05, 0.1, 0.2, 0.4) for lam in (2.0, 5.0)),
    many_deltas=(0.5, 0.75, 1.25, 1.5, 2.5, 3.5, 4.5, 6.0),
)
QUICK = dict(
    deltas=(1.0, 2.0, 3.0),
    floors=(1e-6, 1e-5, 1e-4),
    eval_rows=(100, 101, 150),
    metrics=("logloss", "auc"),
    predict_rows=(ROWS, 7, 100),
    many_grid=((0.05, 2.0), (0.1, 2.0), (0.2, 5.0), (0.4, 5.0)),
    many_deltas=(0.5, 1.5, 2.5, 4.5),
)


# --------------------------------------------------------------------------------------
# Data and machine (parent process)
# --------------------------------------------------------------------------------------
def write_data(folder: Path) -> dict:
    """W2's data (first 10k training rows) and the first test rows, as .npy in ``folder``.

    Also a regression target for the robust losses: a fixed linear function of the
    features plus noise.
    """
    sys.path.insert(0, str(HERE))
    import numpy as np
    from run import dataset_spec, ensure_dataset, load_dataset

    spec = dataset_spec("W2", ROWS)
    gen = ensure_dataset(spec["gen"])
    X, y, Xt, yt = load_dataset(spec)
    rng = np.random.default_rng(0)
    w = rng.normal(size=X.shape[1]).astype(np.float32)
    y_reg = (X @ w + rng.normal(size=len(X))).astype(np.float32)
    for name, arr in (
        ("X", X),
        ("y", y),
        ("y_reg", y_reg),
        ("X_eval", Xt[:N_EVAL_MAX]),
        ("y_eval", yt[:N_EVAL_MAX]),
    ):
        np.save(folder / f"{name}.npy", arr)
    return {"gen": spec["gen"], "rows": ROWS, "generation_s": gen["generation_s"]}


def base_env() -> dict:
    """run.py's worker environment (CPU JAX, all cores, this checkout first on the path)."""
    sys.path.insert(0, str(HERE))
    from run import worker_env

    env = worker_env()
    env.pop("JAXBOOST_COMPILATION_CACHE", None)
    return env


def fresh_cache_dir(parent: Path, env: dict) -> Path:
    """A new ``JAXBOOST_CACHE_DIR`` holding the built native kernel and no XLA cache."""
    cache = Path(tempfile.mkdtemp(prefix="jaxboost-cache-", dir=parent))
    env = dict(env, JAXBOOST_CACHE_DIR=str(cache))
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from jaxboost import native; print(native.available(), native.unavailable_reason())",
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if proc.returncode != 0 or not proc.stdout.startswith("True"):
        print(
            f"warning: native kernel not available: {proc.stdout.strip()} "
            f"{proc.stderr.strip()[-500:]}",
            file=sys.stderr,
        )
    shutil.rmtree(cache / "xla", ignore_errors=True)
    return cache


def run_child(args: list, env: dict, timeout: float) -> dict:
    """Run a child process; return its tagged JSON line plus the outside wall time."""
    sys.path.insert(0, str(HERE))
    from run import busy_cpu_seconds, children_cpu_seconds

    busy0, own0 = busy_cpu_seconds(), children_cpu_seconds()
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )
    wall = time.perf_counter() - t0
    busy, own = busy_cpu_seconds() - busy0, children_cpu_seconds() - own0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(TAG)]
    if proc.returncode != 0 or not lines:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
        raise RuntimeError(f"child {args[:2]} failed (exit {proc.returncode}):\n{tail}")
    out = json.loads(lines[-1][len(TAG) :])
    out["wall_s"] = wall
    if busy0 is not None and wall > 0:
        out["others_cpu_share"] = max(busy - own, 0.0) / (wall * os.cpu_count())
    return out


# --------------------------------------------------------------------------------------
# Part 1: the first model in a fresh process
# --------------------------------------------------------------------------------------
# Run with ``python -c CODE DATA_DIR LAUNCH_TIME``; the first line is the process start.
FIRST_JAXBOOST = """
import time; t0 = time.perf_counter(); w0 = time.time()
import json, sys
import numpy as np
data = sys.argv[1]
X, y = np.load(data + "/X.npy"), np.load(data + "/y.npy")
t1 = time.perf_counter()
import jaxboost
t2 = time.perf_counter()
import jax
sys.path.insert(0, {here!r})
from _compiles import count_compiles
with count_compiles() as c:
    t3 = time.perf_counter()
    bst = jaxboost.train("logistic", X, y, n_rounds={rounds}, max_depth={depth})
    jax.block_until_ready(bst.trees)
    t4 = time.perf_counter()
print({tag!r} + json.dumps(dict(
    startup_s=w0 - float(sys.argv[2]), load_s=t1 - t0, import_s=t2 - t1, train_s=t4 - t3,
    inside_s=t4 - t0, compile_s=c.total_seconds(), compiles=len(c), xla_compiles=len(c.misses()),
    compile_names=list(c), compile_seconds=c.seconds, cache=jaxboost.compile_cache.status())))
"""

FIRST_XGBOOST = """
import time; t0 = time.perf_counter(); w0 = time.time()
import json, os, sys
import numpy as np
data = sys.argv[1]
X, y = np.load(data + "/X.npy"), np.load(data + "/y.npy")
t1 = time.perf_counter()
import xgboost as xgb
t2 = time.perf_counter()
d = xgb.QuantileDMatrix(X, label=y, max_bin=256, nthread=os.cpu_count())
bst = xgb.train(dict(tree_method="hist", max_bin=256, grow_policy="depthwise",
                     max_depth={depth}, eta=0.3, objective="binary:logistic",
                     nthread=os.cpu_count(), verbosity=0), d, num_boost_round={rounds})
t4 = time.perf_counter()
print({tag!r} + json.dumps(dict(startup_s=w0 - float(sys.argv[2]), load_s=t1 - t0,
      import_s=t2 - t1, train_s=t4 - t2, inside_s=t4 - t0)))
"""


def part_first_model(data_dir: Path, tmp: Path, repeats: int, timeout: float) -> dict:
    """Interleaved fresh-process runs of jaxboost (empty XLA cache) and XGBoost hist."""
    env = base_env()
    code = {
        lib: src.format(here=str(HERE), tag=TAG, rounds=ROUNDS, depth=DEPTH)
        for lib, src in (("jaxboost", FIRST_JAXBOOST), ("xgboost", FIRST_XGBOOST))
    }
    runs = {"jaxboost": [], "xgboost": []}
    for r in range(repeats):
        for lib in ("jaxboost", "xgboost"):
            child_env = dict(env)
            if lib == "jaxboost":
                child_env["JAXBOOST_CACHE_DIR"] = str(fresh_cache_dir(tmp, env))
            out = run_child(["-c", code[lib], str(data_dir), repr(time.time())], child_env, timeout)
            runs[lib].append(out)
            print(
                f"  first model, repeat {r + 1}/{repeats}, {lib}: {out['wall_s']:.2f} s "
                f"(train {out['train_s']:.2f} s)",
                flush=True,
            )
    med = {
        lib: {
            k: statistics.median(run[k] for run in rs)
            for k in rs[0]
            if isinstance(rs[0][k], (int, float))
        }
        for lib, rs in runs.items()
    }
    return {
        "runs": runs,
        "median": med,
        "ratio_vs_xgboost": med["jaxboost"]["wall_s"] / med["xgboost"]["wall_s"],
    }


# --------------------------------------------------------------------------------------
# Part 2: extra wall time of each change, in one process (worker side)
# --------------------------------------------------------------------------------------
def user_pseudo_huber(y, pred, *, delta):
    """Pseudo-Huber written by hand, with the hyperparameter as a keyword."""
    import jax.numpy as jnp

    r = pred - y
    return r * r / (jnp.sqrt(1.0 + (r / delta) ** 2) + 1.0)


class Steps:
    """Times calls against a warm repeat of the state before them; keeps every step."""

    def __init__(self):
        import jax
        from _compiles import count_compiles

        self._jax, self._count = jax, count_compiles
        self.state = None  # the call that makes the current state (a thunk)
        self.log = []

    def _time(self, call):
        with self._count() as c:
            t = time.perf_counter()
            out = call()
            self._jax.block_until_ready(getattr(out, "ensemble", out))
            seconds = time.perf_counter() - t
        return seconds, c

    def settle(self, label, call):
        """Make ``call`` the current state (untimed for the table; kept in the log)."""
        seconds, c = self._time(call)
        self.log.append(
            dict(
                section="settle",
                change=label,
                time_s=seconds,
                compiles=len(c.misses()),
                compile_names=list(c),
            )
        )
        self.state = call

    def step(self, section, change, call, target, value=None, sweep=None):
        """Time ``call`` against a warm repeat of the current state; it becomes the state."""
        base_s, base_c = self._time(self.state)
        seconds, c = self._time(call)
        rec = dict(
            section=section,
            change=change,
            value=value,
            sweep=sweep,
            base_s=base_s,
            time_s=seconds,
            extra_s=seconds - base_s,
            compiles=len(c.misses()),
            compile_names=list(c),
            compile_s=c.total_seconds(),
            traces=sorted(set(c.traces)),
            base_compiles=list(base_c),
            target_s=target,
        )
        self.log.append(rec)
        self.state = call
        print(
            f"  {change:<44} {seconds:7.2f} s  extra {rec['extra_s']:+6.2f} s  "
            f"{rec['compiles']} compile(s) {c.summary()}",
            flush=True,
        )
        return rec

    def sweep(self, section, label, make_call, values, target, fmt="{}"):
        """Steps through ``values[1:]`` (the state must be ``values[0]`` already)."""
        return [
            self.step(
                section,
                f"{label} {fmt.format(values[i - 1])} -> {fmt.format(v)}",
                make_call(v),
                target,
                value=v,
                sweep=label,
            )
            for i, v in enumerate(values)
            if i > 0
        ]


def worker_changes(data_dir: str, quick: bool) -> None:
    """Part 2 in this (fresh) process; prints one tagged JSON line."""
    t_start = time.perf_counter()
    sys.path.insert(0, str(HERE))
    import numpy as np

    import jaxboost
    import objectives

    cfg = QUICK if quick else FULL
    X = np.load(f"{data_dir}/X.npy")
    y = np.load(f"{data_dir}/y.npy")
    y_reg = np.load(f"{data_dir}/y_reg.npy")
    Xe, ye = np.load(f"{data_dir}/X_eval.npy"), np.load(f"{data_dir}/y_eval.npy")
    common = dict(n_rounds=ROUNDS, max_depth=DEPTH, verbose=False)
    S = Steps()

    def train(obj, labels, **kw):
        return lambda: jaxboost.train(obj, X, labels, **{**common, **kw})

    PH = objectives.pseudo_huber
    d0 = cfg["deltas"][0]
    # Base model: its first call is the cold compile (no persistent cache).
    S.settle("base: pseudo_huber(delta=1.0), regression", train(PH(delta=d0), y_reg))
    base_first = S.log[-1]
    S.step("base", "base model, identical repeat", S.state, None)

    # Catalogue loss hyperparameter.
    S.sweep(
        "catalogue",
        "pseudo_huber delta",
        lambda d: train(PH(delta=d), y_reg),
        cfg["deltas"],
        TARGET_CHANGE_S,
    )

    # User loss with a traced hyperparameter (loss_params), else functools.partial.
    import inspect

    params = inspect.signature(jaxboost.train).parameters
    has_lp = "loss_params" in params or any(p.kind == p.VAR_KEYWORD for p in params.values())
    mode = {"loss_params": has_lp}

    def user_call(d):
        # One partial per value, made with the call: a repeat of the same call reuses it
        # (a new partial object per call would compile every time, being compared by id).
        fn = functools.partial(user_pseudo_huber, delta=d)

        def call():
            if mode["loss_params"]:
                try:
                    return jaxboost.train(
                        user_pseudo_huber, X, y_reg, loss_params={"delta": d}, **common
                    )
                except TypeError as e:
                    if "loss_params" not in str(e):
                        raise
                    mode["loss_params"] = False
                    print(
                        "  (train has no loss_params: falling back to functools.partial)",
                        flush=True,
                    )
            return jaxboost.train(fn, X, y_reg, **common)

        return call

    if not has_lp:
        print(
            "  (train has no loss_params: user loss via functools.partial, the fallback)",
            flush=True,
        )
    S.step("user loss", f"user loss: first call (delta={d0})", user_call(d0), None, value=d0)
    tag = "" if mode["loss_params"] else " [partial]"
    S.sweep("user loss", "user loss delta" + tag, user_call, cfg["deltas"], TARGET_CHANGE_S)
    user_mode = "loss_params" if mode["loss_params"] else "functools.partial (fallback)"

    # Hessian policy and floor.
    S.settle("pseudo_huber hessian=exact", train(PH(delta=d0), y_reg, hessian="exact"))
    S.step(
        "hessian",
        "hessian policy exact -> clip",
        train(PH(delta=d0), y_reg, hessian="clip"),
        TARGET_STATIC_S,
    )
    S.sweep(
        "hessian",
        "hessian_floor (clip)",
        lambda f: train(PH(delta=d0), y_reg, hessian="clip", hessian_floor=f),
        cfg["floors"],
        TARGET_CHANGE_S,
        fmt="{:g}",
    )

    # Depth.
    S.settle("base again", train(PH(delta=d0), y_reg))
    S.step("depth", "max_depth 6 -> 5", train(PH(delta=d0), y_reg, max_depth=5), TARGET_STATIC_S)

    # Evaluation sets and metrics (binary logistic).
    S.settle("logistic", train("logistic", y))

    def with_eval(n, metric=None):
        kw = dict(eval_set=[(Xe[:n], ye[:n])])
        if metric is not None:
            kw["eval_metric"] = metric
        return train("logistic", y, **kw)

    rows = cfg["eval_rows"]
    S.step(
        "eval", f"add eval_set ({rows[0]} rows)", with_eval(rows[0]), TARGET_CHANGE_S, value=rows[0]
    )
    S.sweep("eval", "eval rows", with_eval, rows, TARGET_CHANGE_S)
    S.step("eval", "remove eval_set", train("logistic", y), TARGET_CHANGE_S)
    mets = cfg["metrics"]
    S.step(
        "eval",
        f"add eval_set ({rows[-1]} rows, {mets[0]})",
        with_eval(rows[-1], mets[0]),
        TARGET_CHANGE_S,
    )
    for a, b in zip(mets, mets[1:]):
        S.step("eval", f"eval_metric {a} -> {b}", with_eval(rows[-1], b), TARGET_CHANGE_S, value=b)

    # Prediction row counts.
    bst = jaxboost.train("logistic", X, y, **common)
    pr = cfg["predict_rows"]
    S.settle(f"predict {pr[0]} rows", lambda: bst.predict(X[: pr[0]]))
    S.sweep("predict", "predict rows", lambda n: lambda: bst.predict(X[:n]), pr, TARGET_CHANGE_S)

    # train_many against separate train calls, two families.
    many = []
    grid = [dict(learning_rate=lr, reg_lambda=lam) for lr, lam in cfg["many_grid"]]
    deltas = [dict(objective=PH(delta=d)) for d in cfg["many_deltas"]]
    for family, labels, obj, confs, base in (
        ("logistic (learning_rate, reg_lambda)", y, "logistic", grid, train("logistic", y)),
        ("pseudo_huber deltas", y_reg, None, deltas, train(PH(delta=d0), y_reg)),
    ):
        many.append(time_many(S, family, labels, obj, confs, base, X, common))

    out = dict(
        log=S.log,
        many=many,
        user_loss_mode=user_mode,
        base_first=base_first,
        worker_s=time.perf_counter() - t_start,
        cache=jaxboost.compile_cache.status(),
    )
    print(TAG + json.dumps(out))


def time_many(S: Steps, family, labels, obj, confs, base, X, common) -> dict:
    """8 separate ``train`` calls (new values) vs one ``train_many``, first and warm."""
    import jaxboost

    m = len(confs)
    S.settle(f"train_many base: {family}", base)
    warm_one, _ = S._time(base)
    separate = []
    for conf in confs:
        kw = dict(conf)
        o = kw.pop("objective", obj)
        seconds, c = S._time(lambda o=o, kw=kw: jaxboost.train(o, X, labels, **common, **kw))
        separate.append(dict(time_s=seconds, compiles=len(c.misses()), names=list(c)))
    shared = {k: v for k, v in common.items() if k != "verbose"}
    call = lambda: jaxboost.train_many(confs, X, labels, objective=obj, **shared)  # noqa: E731
    first_s, c_first = S._time(call)
    warm_s, _ = S._time(call)
    sep_s = sum(r["time_s"] for r in separate)
    rec = dict(
        family=family,
        models=m,
        warm_one_s=warm_one,
        separate=separate,
        separate_s=sep_s,
        separate_extra_s=sep_s - m * warm_one,
        separate_compiles=sum(r["compiles"] for r in separate),
        many_first_s=first_s,
        many_warm_s=warm_s,
        many_extra_s=first_s - warm_s,
        many_compiles=len(c_first.misses()),
        many_compile_names=list(c_first),
    )
    print(
        f"  {m} configs, {family}: separate {sep_s:.2f} s "
        f"({rec['separate_compiles']} compiles), train_many {first_s:.2f} s first "
        f"({rec['many_compiles']} compiles), {warm_s:.2f} s warm",
        flush=True,
    )
    return rec


def part_changes(data_dir: Path, tmp: Path, quick: bool, timeout: float) -> dict:
    env = base_env()
    env["JAXBOOST_CACHE_DIR"] = str(fresh_cache_dir(tmp, env))
    env["JAXBOOST_COMPILATION_CACHE"] = "0"
    args = [str(Path(__file__).resolve()), "--_worker", str(data_dir)]
    if quick:
        args.append("--quick")
    return run_child(args, env, timeout)


# --------------------------------------------------------------------------------------
# Table
# --------------------------------------------------------------------------------------
def table_rows(first: dict | None, changes: dict | None) -> list:
    """(change, time s, extra s, compiles, target, OK/over) rows for the printed table."""
    rows = []

    def verdict(value, target):
        if target is None or value is None:
            return "-", "-"
        return f"<= {target:g} s", "OK" if value <= target else "over"

    if first:
        mj, mx = first["median"]["jaxboost"], first["median"]["xgboost"]
        rows.append(
            (
                "first model, fresh process (wall)",
                mj["wall_s"],
                None,
                mj.get("xla_compiles"),
                *verdict(mj["wall_s"], TARGET_FIRST_S),
            )
        )
        rows.append(("  in it: import jaxboost", mj["import_s"], None, None, "-", "-"))
        rows.append(("  in it: train call", mj["train_s"], None, None, "-", "-"))
        rows.append(("  in it: XLA compiles in train", mj["compile_s"], None, None, "-", "-"))
        rows.append(
            (
                "XGBoost hist, fresh process (wall)",
                mx["wall_s"],
                None,
                None,
                f"ratio {first['ratio_vs_xgboost']:.2f}x",
                "-",
            )
        )
    if changes:
        bf = changes["base_first"]
        rows.append(
            ("base model, first call in process", bf["time_s"], None, bf["compiles"], "-", "-")
        )
        steps = [s for s in changes["log"] if s["section"] != "settle"]
        i = 0
        while i < len(steps):
            s = steps[i]
            rows.append(
                (
                    s["change"],
                    s["time_s"],
                    s["extra_s"],
                    s["compiles"],
                    *verdict(s["extra_s"], s["target_s"]),
                )
            )
            j = i + 1
            while s["sweep"] and j < len(steps) and steps[j]["sweep"] == s["sweep"]:
                j += 1
            rest = steps[i + 1 : j]  # a sweep: the first new value, then the median of the rest
            if rest:
                ex = statistics.median(r["extra_s"] for r in rest)
                vals = ", ".join(r["change"].rsplit("-> ", 1)[1] for r in rest)
                rows.append(
                    (
                        f"  then {vals}: median",
                        statistics.median(r["time_s"] for r in rest),
                        ex,
                        statistics.median(r["compiles"] for r in rest),
                        *verdict(ex, s["target_s"]),
                    )
                )
            i = j
        for m in changes["many"]:
            rows.append(
                (
                    f"{m['models']} separate train, {m['family']}",
                    m["separate_s"],
                    m["separate_extra_s"],
                    m["separate_compiles"],
                    "-",
                    "-",
                )
            )
            rows.append(
                (
                    f"train_many x{m['models']}, same (first call)",
                    m["many_first_s"],
                    m["many_extra_s"],
                    m["many_compiles"],
                    "-",
                    "-",
                )
            )
    return rows


def format_table(rows: list) -> str:
    head = ("change", "time s", "extra s", "compiles", "target", "OK/over")
    cells = [
        [
            r[0],
            "" if r[1] is None else f"{r[1]:.2f}",
            "" if r[2] is None else f"{r[2]:+.2f}",
            "" if r[3] is None else f"{r[3]:g}",
            r[4],
            r[5],
        ]
        for r in rows
    ]
    widths = [max(len(str(c[k])) for c in [head, *cells]) for k in range(len(head))]

    def line(c):
        return "  ".join(
            str(v).ljust(w) if k == 0 else str(v).rjust(w)
            for k, (v, w) in enumerate(zip(c, widths))
        )

    return "\n".join([line(head), line(["-" * w for w in widths]), *map(line, cells)])


def footnotes(first: dict | None, changes: dict | None) -> str:
    notes = [
        "time s: seconds of the call (first model: wall s of the whole process, timed "
        "from outside, median of the repeats; 'in it': measured inside that process).",
        "extra s: time s minus a warm repeat of the call before the change; "
        "compiles: XLA compilations during the call (JAXBOOST_COMPILATION_CACHE=0).",
    ]
    if changes:
        notes.append(f"user loss passed via {changes['user_loss_mode']}.")
        cold = [s["change"] for s in changes["log"] if s.get("base_compiles")]
        if cold:
            notes.append(
                "warning: the repeat of the state before compiled for: "
                + "; ".join(cold)
                + " (their extra s is understated)."
            )
        for m in changes["many"]:
            notes.append(
                f"{m['family']}: {m['models']} separate calls {m['separate_s']:.2f} s "
                f"vs train_many {m['many_first_s']:.2f} s first call "
                f"({m['many_warm_s']:.2f} s warm; one call "
                f"{m['warm_one_s']:.2f} s warm)."
            )
    if first:
        shares = [r.get("others_cpu_share") for rs in first["runs"].values() for r in rs]
        shares = [s for s in shares if s is not None]
        if shares and max(shares) > 0.05:
            notes.append(
                f"warning: other processes used up to {max(shares):.0%} of the CPU "
                "during the first-model runs."
            )
    if changes and (changes.get("others_cpu_share") or 0) > 0.05:
        notes.append(
            f"warning: other processes used {changes['others_cpu_share']:.0%} of the "
            "CPU during the changes run."
        )
    return "\n".join(notes)


# --------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--parts", default="first,changes", help="comma list of 'first' (first model) and 'changes'"
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="first-model repeats per library (default 3, --quick 1)",
    )
    p.add_argument("--quick", action="store_true", help="smoke test: 1 repeat, short sweeps")
    p.add_argument(
        "--out", default=None, help="JSON path (default results/compile-latency-<timestamp>.json)"
    )
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--_worker", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args._worker:
        worker_changes(args._worker, args.quick)
        return 0
    sys.path.insert(0, str(HERE))
    from run import machine_info

    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    repeats = args.repeats or (1 if args.quick else 3)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out_path = Path(args.out) if args.out else RESULTS_DIR / f"compile-latency-{stamp}.json"
    machine = machine_info()
    print(
        f"machine: {machine['cores']} cores, {machine['cpu_model']}, "
        f"jax {machine['versions']['jax']}, commit {machine['git_commit']}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="compile-latency-") as tmp_s:
        tmp = Path(tmp_s)
        data_dir = tmp / "data"
        data_dir.mkdir()
        data = write_data(data_dir)
        first = changes = None
        if "first" in parts:
            print("first model:", flush=True)
            first = part_first_model(data_dir, tmp, repeats, args.timeout)
        if "changes" in parts:
            print("changes (one process, JAXBOOST_COMPILATION_CACHE=0):", flush=True)
            changes = part_changes(data_dir, tmp, args.quick, args.timeout)
    table = format_table(table_rows(first, changes))
    notes = footnotes(first, changes)
    print()
    print(table)
    print()
    print(notes)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    result = dict(
        command=" ".join([Path(sys.executable).name, *sys.argv]),
        machine=machine,
        quick=args.quick,
        repeats=repeats,
        data=data,
        settings=dict(
            rows=ROWS,
            n_rounds=ROUNDS,
            max_depth=DEPTH,
            targets=dict(
                first_model_s=TARGET_FIRST_S,
                change_s=TARGET_CHANGE_S,
                depth_policy_s=TARGET_STATIC_S,
            ),
            sweeps=QUICK if args.quick else FULL,
        ),
        first_model=first,
        changes=changes,
        table=table,
        notes=notes,
    )
    out_path.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"\nraw figures: {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
