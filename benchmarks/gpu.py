"""The prepared GPU run: engine tests on the accelerator, then W1/W5 against XGBoost.

One command (``make gpu OUT=folder``, or ``python benchmarks/gpu.py OUT``), under 8
minutes on one H100/H200, written for a machine that is lent for minutes:

1. what the machine is (``nvidia-smi``, jax and its devices, XGBoost's build);
2. the engine tests (``ENGINE_TESTS``) on the default backend, in 4 processes;
3. the histogram formulations (``jaxboost.engine.histogram.METHODS``) alone on
   ``(28, N)`` bins at the largest size, one level of 1 and of 32 nodes;
4. W1 (1M rows) and W5 (4M, 10M) of BENCHMARKS.md: binary logistic, depth 6, 100 rounds,
   lr 0.1, lambda 1, min_child_weight 1, 256 bins; jaxboost and XGBoost ``hist``
   (``device="cuda"`` when the installed XGBoost was built with CUDA), each in a fresh
   process: a first fit (compile included) and a second one (warm), the warm one timed
   against XGBoost's warm one. One ``make_classification`` set of the largest size plus
   200,000 test rows (28 features, 14 informative, 4 redundant, seed 0) is generated
   once; smaller sizes take its first rows, every size the same test rows;
5. while time is left, jaxboost at the first size with the other formulations
   (``VARIANTS``).

Everything goes into the output folder: ``gpu.json`` (every figure), ``summary.txt``
(one line, also printed last), ``tests.log``. Each step has a deadline inside the total
budget (``--budget`` seconds), so a slow step loses its own figures, not the run's.

The project runs from this source tree (``PYTHONPATH``) against the jax that the
machine has: the GPU machine has jax/jaxlib 0.11.2 with the CUDA 13 plugin, newer than
``pyproject.toml``'s ``<0.11`` pin, and nothing can be installed there but carried
wheels; the pure-JAX engine (the native kernel is CPU only and is never built there)
runs on both. XGBoost travels as the ``xgboost-cu13`` 3.2.0 wheel (59 MiB) in ``.whl``
(see ``benchmarks/README.md``); without it the XGBoost rows are left out.

Rehearsal on CPU (sizes scaled down)::

    JAX_PLATFORMS=cpu python benchmarks/gpu.py /tmp/gpu-rehearsal --scale 0.01
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from run import auc, logloss, sigmoid  # noqa: E402  (NumPy only)

RESULT_TAG = "@@RESULT "

ENGINE_TESTS = (
    "tests/test_histogram.py",
    "tests/test_split.py",
    "tests/test_grow.py",
    "tests/test_tree.py",
    "tests/test_refit.py",
    "tests/test_sampling.py",
    "tests/test_seed001.py",
    "tests/test_forest.py",
    "tests/test_train.py",
    "tests/test_io.py",
    "tests/test_io_compact.py",
    "tests/test_class_trees.py",
    "tests/test_compiles.py",
    "tests/test_parity_xgboost.py",
    # integer-key sorts (uint64), size buckets and lax.top_k since 28 Nov 2026: not yet
    # run on a GPU
    "tests/test_sort.py",
    "tests/test_groups.py",
    "tests/test_ranking.py",
    "tests/test_cox.py",
    # the base-margin fit as one while_loop with lax.cond, and objectives.aft (its
    # closed-form g and h, XGBoost parity): since 28 Nov 2026, not yet run on a GPU
    "tests/test_autodiff.py",
    "tests/test_aft.py",
    # several targets / quantiles from an entry (per-target refits in the round
    # program; vector leaves with the subtraction trick on XLA's search) and jaxboost.cv:
    # since 28 Nov 2026, not yet run on a GPU
    "tests/test_multi_target.py",
    "tests/test_cv.py",
)
SIZES = (1_000_000, 4_000_000, 10_000_000)
N_TEST = 200_000
N_FEATURES = 28
VARIANTS = {
    "no-subtraction": {"JAXBOOST_SUBTRACT": "0"},
    "onehot": {"JAXBOOST_HISTOGRAM": "onehot"},
    "float64-scatter": {"JAXBOOST_HISTOGRAM": "scatter"},
}
"""jaxboost with a formulation forced (``engine.histogram``, ``training.program``),
run at the first size after the main rows while the budget lasts."""
PARAMS = dict(max_depth=6, learning_rate=0.1, reg_lambda=1.0, min_child_weight=1.0, max_bin=256)


def _env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def _sub(args, timeout, log=None, **env):
    """Run ``python args`` with a deadline; ``(returncode or 'timeout', output)``."""
    t = time.perf_counter()
    try:
        p = subprocess.run(
            [sys.executable] + args,
            cwd=ROOT,
            env=_env(**env),
            capture_output=True,
            text=True,
            timeout=max(timeout, 1),
        )
        out, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        rc = "timeout"
    if log is not None:
        Path(log).write_text(out)
    return rc, out, time.perf_counter() - t


def _result(out):
    for line in out.splitlines()[::-1]:
        if line.startswith(RESULT_TAG):
            return json.loads(line[len(RESULT_TAG) :])
    return None


# --------------------------------------------------------------------------------------
# Workers (each in a fresh process)
# --------------------------------------------------------------------------------------
def _data_path(cache, n_total):
    return Path(cache) / f"gpu_cls_{n_total}_X.npy", Path(cache) / f"gpu_cls_{n_total}_y.npy"


def worker_data(cache, n_total):
    from sklearn.datasets import make_classification

    xp, yp = _data_path(cache, n_total)
    if not xp.exists():
        t = time.perf_counter()
        X, y = make_classification(
            n_samples=n_total,
            n_features=N_FEATURES,
            n_informative=14,
            n_redundant=4,
            random_state=0,
        )
        xp.parent.mkdir(parents=True, exist_ok=True)
        np.save(xp, X.astype(np.float32))
        np.save(yp, y.astype(np.float32))
        print(RESULT_TAG + json.dumps({"generated_s": time.perf_counter() - t}))
    else:
        print(RESULT_TAG + json.dumps({"generated_s": 0.0}))


def _load(cache, n_total, n_train, n_test):
    xp, yp = _data_path(cache, n_total)
    X = np.load(xp, mmap_mode="r")
    y = np.load(yp, mmap_mode="r")
    return (
        np.ascontiguousarray(X[:n_train]),
        np.ascontiguousarray(y[:n_train]),
        np.ascontiguousarray(X[-n_test:]),
        np.ascontiguousarray(y[-n_test:]),
    )


def _scores(yt, margin):
    """Test log loss and AUC of margins (``run.py``'s NumPy metrics)."""
    return logloss(yt, sigmoid(margin)), auc(yt, margin)


def worker_jaxboost(cache, n_total, n_train, n_test, rounds):
    import jax

    import jaxboost

    X, y, Xt, yt = _load(cache, n_total, n_train, n_test)
    out = {"backend": jax.default_backend(), "device": str(jax.devices()[0])}

    def fit():
        t = time.perf_counter()
        b = jaxboost.train("logistic", X, y, n_rounds=rounds, **PARAMS)
        jax.block_until_ready(b.trees)
        return b, time.perf_counter() - t

    _, out["first_s"] = fit()
    b, out["train_s"] = fit()
    # the host's share of a fit: binning (quantiles, then every value's bin)
    from jaxboost import native
    from jaxboost.engine.binning import apply_bins, compute_bin_edges

    out["native_binning"] = bool(native.available())
    t = time.perf_counter()
    edges = compute_bin_edges(X, PARAMS["max_bin"])
    out["edges_s"] = time.perf_counter() - t
    bins = np.zeros((X.shape[1], X.shape[0]), np.uint8)
    t = time.perf_counter()
    apply_bins(X, edges, out=bins, row_major=False)
    out["apply_bins_s"] = time.perf_counter() - t
    del bins
    t = time.perf_counter()
    margin = b.predict(Xt, output_margin=True)
    out["predict_s"] = time.perf_counter() - t
    out["logloss"], out["auc"] = _scores(yt, np.asarray(margin))
    print(RESULT_TAG + json.dumps(out))


def worker_xgboost(cache, n_total, n_train, n_test, rounds):
    import xgboost as xgb

    X, y, Xt, yt = _load(cache, n_total, n_train, n_test)
    cuda = bool(xgb.build_info().get("USE_CUDA"))
    import shutil

    gpu = (
        shutil.which("nvidia-smi") is not None
        and subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    )
    device = "cuda" if cuda and gpu and os.environ.get("JAX_PLATFORMS", "") != "cpu" else "cpu"
    out = {"version": xgb.__version__, "device": device}
    params = dict(
        tree_method="hist",
        device=device,
        max_bin=PARAMS["max_bin"],
        grow_policy="depthwise",
        max_depth=PARAMS["max_depth"],
        eta=PARAMS["learning_rate"],
        reg_lambda=PARAMS["reg_lambda"],
        min_child_weight=PARAMS["min_child_weight"],
        objective="binary:logistic",
        verbosity=0,
    )

    def fit():
        t = time.perf_counter()
        d = xgb.QuantileDMatrix(X, label=y, max_bin=PARAMS["max_bin"])
        b = xgb.train(params, d, num_boost_round=rounds)
        b.predict(xgb.DMatrix(X[:1]))  # waits for the device
        return b, time.perf_counter() - t

    _, out["first_s"] = fit()
    b, out["train_s"] = fit()
    t = time.perf_counter()
    margin = b.predict(xgb.DMatrix(Xt), output_margin=True)
    out["predict_s"] = time.perf_counter() - t
    out["logloss"], out["auc"] = _scores(yt, np.asarray(margin))
    print(RESULT_TAG + json.dumps(out))


def worker_hist(n_rows, repeats=5):
    """Each histogram formulation alone, jitted, on one level of 1 and of 32 nodes."""
    import jax
    import jax.numpy as jnp

    from jaxboost.engine import histogram as H

    rng = np.random.default_rng(0)
    bins = jnp.asarray(rng.integers(0, 255, size=(N_FEATURES, n_rows), dtype=np.uint8))
    g = jnp.asarray(rng.normal(size=n_rows).astype(np.float32))
    h = jnp.asarray(rng.random(n_rows, dtype=np.float32))
    out = {}
    # (slots, live): a level of 1 and of 32 nodes, and the subtraction loop's second
    # level (16 slots, one smaller child holding half the rows, the rest skipped)
    for n_nodes, live in ((1, 1), (32, 32), (16, 0)):
        if live:
            node = jnp.asarray(rng.integers(0, live, size=n_rows).astype(np.int32))
        else:
            node = jnp.asarray(np.where(rng.random(n_rows) < 0.5, 0, n_nodes).astype(np.int32))
        for name, fn in H.METHODS.items():
            key = f"{name}_{n_nodes}"
            try:
                f = jax.jit(fn, static_argnums=(4, 5))
                t = time.perf_counter()
                jax.block_until_ready(f(bins, g, h, node, n_nodes, 256))
                compile_s = time.perf_counter() - t
                times = []
                for _ in range(repeats):
                    t = time.perf_counter()
                    jax.block_until_ready(f(bins, g, h, node, n_nodes, 256))
                    times.append(time.perf_counter() - t)
                out[key] = {"ms": 1e3 * float(np.median(times)), "compile_s": compile_s}
            except Exception as e:  # a formulation the backend cannot run
                out[key] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
            print(key, out[key], flush=True)
    print(RESULT_TAG + json.dumps(out))


# --------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------
def machine():
    info = {"python": platform.python_version(), "host": platform.node()}
    try:
        info["nvidia_smi"] = subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=name,memory.total,driver_version,clocks.max.sm",
                "--format=csv,noheader",
            ],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        info["nvidia_smi"] = None
    rc, out, _ = _sub(
        [
            "-c",
            "import jax, jaxlib, numpy; print(jax.__version__, "
            "jaxlib.__version__, numpy.__version__, jax.default_backend(), "
            "jax.devices())",
        ],
        120,
    )
    info["jax"] = out.strip().splitlines()[-1] if out.strip() else f"failed: {rc}"
    rc, out, _ = _sub(
        ["-c", "import xgboost as x; print(x.__version__, bool(x.build_info().get('USE_CUDA')))"],
        60,
    )
    info["xgboost"] = out.strip().splitlines()[-1] if rc == 0 else None
    return info


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", help="output folder (gpu.json, summary.txt, tests.log)")
    ap.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="multiply every size (and the test rows) by this (CPU rehearsal)",
    )
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--budget", type=float, default=450.0, help="seconds for everything")
    ap.add_argument("--tests-budget", type=float, default=150.0)
    ap.add_argument("--no-tests", action="store_true")
    ap.add_argument("--cache", default=os.environ.get("JAXBOOST_GPU_CACHE", "/tmp/jaxboost-gpu"))
    ap.add_argument("--_worker", nargs="*", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a._worker:
        kind, *rest = a._worker
        {
            "data": lambda c, n: worker_data(c, int(n)),
            "jaxboost": lambda *r: worker_jaxboost(r[0], *map(int, r[1:])),
            "xgboost": lambda *r: worker_xgboost(r[0], *map(int, r[1:])),
            "hist": lambda n: worker_hist(int(n)),
        }[kind](*rest)
        return 0
    if not a.out:
        ap.error("the output folder is required")

    t_end = time.perf_counter() + a.budget
    left = lambda: t_end - time.perf_counter()  # noqa: E731
    out_dir = Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    res = {
        "machine": machine(),
        "scale": a.scale,
        "rounds": a.rounds,
        "params": PARAMS,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "rows": [],
    }
    save = lambda: (out_dir / "gpu.json").write_text(json.dumps(res, indent=1))  # noqa: E731
    save()
    print("machine:", json.dumps(res["machine"]), flush=True)
    me = [str(Path(__file__).resolve())]

    if not a.no_tests:
        rc, out, secs = _sub(
            [
                "-m",
                "pytest",  # not -q: its header names the backend (tests/conftest.py)
                "-p",
                "no:cacheprovider",
                "-n",
                "4",
                "--dist",
                "loadfile",
                *ENGINE_TESTS,
            ],
            min(a.tests_budget, left() - 60),
            log=out_dir / "tests.log",
            JAXBOOST_TEST_FULL_OPT="1",
            # tests/conftest.py defaults JAX_PLATFORMS to "cpu": an empty value (JAX's
            # default, the accelerator) keeps the tests on the machine's own backend.
            # Until 27 Nov 2026 they ran on the GPU machine's CPU.
            JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", ""),
        )
        summary = [ln for ln in out.splitlines() if re.search(r"\d+ (passed|failed)", ln)]
        backend = re.search(r"^jax .*backend (\w+)", out, re.M)
        res["tests"] = {
            "backend": backend.group(1) if backend else None,
            "rc": rc,
            "seconds": secs,
            "summary": summary[-1].strip("= ")
            if summary
            else out.strip().splitlines()[-1:] and out.strip().splitlines()[-1],
        }
        print("tests:", res["tests"], flush=True)
        save()

    sizes = [max(int(s * a.scale), 1000) for s in SIZES]
    n_test = max(int(N_TEST * a.scale), 1000)
    n_total = sizes[-1] + n_test
    rc, out, secs = _sub(me + ["--_worker", "data", a.cache, str(n_total)], left() - 30)
    res["data"] = {"rc": rc, "seconds": secs, **(_result(out) or {"tail": out[-500:]})}
    print("data:", res["data"], flush=True)
    save()

    rc, out, secs = _sub(me + ["--_worker", "hist", str(sizes[-1])], min(90, left() - 30))
    res["histogram"] = _result(out) or {"rc": rc, "tail": out[-1500:]}
    print("histogram:", json.dumps(res["histogram"]), flush=True)
    save()

    for n in sizes:
        row = {"rows": n, "workload": "W1" if n == sizes[0] else "W5"}
        for lib in ("xgboost", "jaxboost"):
            if lib == "xgboost" and not res["machine"]["xgboost"]:
                continue
            if left() < 20:
                row[lib] = {"skipped": "budget"}
                continue
            rc, out, secs = _sub(
                me + ["--_worker", lib, a.cache, str(n_total), str(n), str(n_test), str(a.rounds)],
                left() - 10,
            )
            row[lib] = _result(out) or {"rc": rc, "seconds": secs, "tail": out[-1500:]}
            print(n, lib, json.dumps(row[lib]), flush=True)
        j, x = row.get("jaxboost", {}), row.get("xgboost", {})
        if "train_s" in j and "train_s" in x:
            row["ratio"] = j["train_s"] / x["train_s"]
            row["logloss_rel"] = j["logloss"] / x["logloss"] - 1
        res["rows"].append(row)
        save()

    # the formulations the platform does not choose, at the first size, while time is left
    res["variants"] = {}
    for name, env in VARIANTS.items():
        if left() < 45:
            break
        rc, out, secs = _sub(
            me
            + [
                "--_worker",
                "jaxboost",
                a.cache,
                str(n_total),
                str(sizes[0]),
                str(n_test),
                str(a.rounds),
            ],
            left() - 10,
            **env,
        )
        res["variants"][name] = {"env": env, **(_result(out) or {"rc": rc, "tail": out[-800:]})}
        print("variant", name, json.dumps(res["variants"][name]), flush=True)
        save()

    gpu = (res["machine"].get("nvidia_smi") or "no GPU").split(",")[0]
    parts = [f"gpu.py {gpu}", f"jax {res['machine']['jax'].split()[0]}"]
    if "tests" in res:
        parts.append(f"tests ({res['tests'].get('backend')}): {res['tests']['summary']}")
    for r in res["rows"]:
        j, x = r.get("jaxboost", {}), r.get("xgboost", {})
        cell = f"{r['rows'] / 1e6:g}M: jaxboost {j.get('train_s', float('nan')):.2f} s"
        if "train_s" in x:
            cell += (
                f" vs xgboost-{x['device']} {x['train_s']:.2f} s ({r['ratio']:.2f}x,"
                f" logloss {100 * r['logloss_rel']:+.2f} %)"
            )
        parts.append(cell)
    line = " | ".join(parts)
    res["summary"] = line
    save()
    (out_dir / "summary.txt").write_text(line + "\n")
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
