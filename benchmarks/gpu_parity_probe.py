"""Where jaxboost on a GPU parts from XGBoost's exact trees: a prepared run for a lent GPU.

On an H200 (jax 0.11.2, 27 Nov 2026) the CPU-exact parity tests ran on the GPU for the
first time (``benchmarks/gpu.py`` had run its engine tests on the GPU machine's CPU).
Two cases that are exact on the CPU, on the native kernel and on the pure-JAX
histogram alike (also with ``JAXBOOST_NATIVE=0 JAXBOOST_SUBTRACT=1
JAXBOOST_HISTOGRAM=fixed``, the GPU's formulation), were not on the GPU:

* ``logistic-clipped``: ``tests/test_parity_xgboost.py``'s ``GRID[3]`` (depth 4,
  lambda 0.5, alpha 0.2, min_child_weight 0.5, max_delta_step 0.3), logistic, 20
  rounds: 291 of 400 training margins off by up to 0.59;
* ``forest``: ``tests/test_forest.py::test_forest_without_sampling_matches_xgboost_exact``
  (3 parallel trees, eta 0.3): the first tree's leaves 1 ulp from XGBoost's
  ``float32(w) * float32(eta / 3)`` (after ``exact.pow2``; before it, a different tree).

The GPU machine's jax is 0.11.2 and this machine's 0.10.2 (jax 0.11 needs Python 3.12;
the CPU machines here have 3.11), so a jax-version difference is not ruled out: the
``cpu`` variants run the cases on the GPU machine's CPU with its jax.

This script trains both cases under several variants, each in a fresh process (the
environment variables choose jaxboost's formulation or XLA's settings), and writes for
each: the largest margin difference, the first round whose margins differ, and that
round's first tree from both libraries in XGBoost's text format (jaxboost's through
its XGBoost JSON export). It also checks ``jnp.ldexp`` and ``exact.pow2`` against
NumPy's exact powers of two.

    python benchmarks/gpu_parity_probe.py OUT [--budget 200]     # on the GPU machine
    JAX_PLATFORMS=cpu python benchmarks/gpu_parity_probe.py /tmp/probe   # rehearsal

Output: ``OUT/probe.json`` and one printed line per variant. Needs XGBoost (the
``xgboost-cu13`` wheel travels as for ``benchmarks/gpu.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TAG = "@@PROBE "

VARIANTS = {
    "default": {},
    # the GPU machine's own jax (0.11.2, newer than the CPU here) on its CPU: tells a
    # jax-version difference from a GPU one
    "cpu-pure-jax": {"JAX_PLATFORMS": "cpu", "JAXBOOST_NATIVE": "0", "JAXBOOST_SUBTRACT": "1"},
    "cpu": {"JAX_PLATFORMS": "cpu"},
    # XLA may drop a float64 -> float32 -> float64 round trip or compute in a wider type
    # than asked (on by default); off, every convert is kept
    "no-excess-precision": {"XLA_FLAGS": "--xla_allow_excess_precision=false"},
    "no-subtraction": {"JAXBOOST_SUBTRACT": "0"},
    "scatter": {"JAXBOOST_HISTOGRAM": "scatter"},
    "onehot": {"JAXBOOST_HISTOGRAM": "onehot"},
    "matmul-highest": {"JAX_DEFAULT_MATMUL_PRECISION": "highest"},
}
"""Environment of each worker, on top of the machine's (the GPU unless it says cpu)."""


def _data():
    """The parity tests' data (``tests/conftest.parity_data``: features, logistic label)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import parity_data  # the tests' own builder, not a copy

    X, y, _ = parity_data()
    return X, y


def _clipped():
    """``tests/test_parity_xgboost.py``'s ``GRID[3]`` (alpha 0.2, max_delta_step 0.3)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from test_parity_xgboost import GRID

    return GRID[3]


def _forest_data():
    """``tests/test_forest.py``'s data for the forest case (``conftest.forest_parity_data``)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import forest_parity_data

    return forest_parity_data()


def _compare(bst, ref, X, rounds, per_round):
    """Largest margin difference, first round (1-based) off by more than 1e-5, and that
    round's first tree from both, as XGBoost text."""
    import numpy as np
    import xgboost as xgb

    d = xgb.DMatrix(X, missing=np.nan)
    first = None
    for r in range(1, rounds + 1):
        ours = bst[:r].predict(X, output_margin=True)
        theirs = ref.predict(d, output_margin=True, iteration_range=(0, r))
        if np.abs(ours - theirs).max() > 1e-5:
            first = r
            break
    full = np.abs(bst.predict(X, output_margin=True) - ref.predict(d, output_margin=True))
    out = {"max_abs_diff": float(full.max()), "n_off": int((full > 1e-5).sum())}
    if first is not None:
        mine = xgb.Booster(model_file=bytearray(json.dumps(bst.to_xgboost_json()).encode()))
        t = (first - 1) * per_round
        out.update(
            first_round_off=first,
            jaxboost_tree=mine.get_dump(with_stats=True)[t],
            xgboost_tree=ref.get_dump(with_stats=True)[t],
        )
    return out


def _worker():
    # tests/conftest.py (the data's generator) defaults JAX_PLATFORMS to cpu, adds the
    # suite's XLA flags and asks for 4 CPU devices: imported first, with the machine's
    # backend kept and XLA's default settings.
    os.environ.setdefault("JAX_PLATFORMS", "")
    os.environ["JAXBOOST_TEST_FULL_OPT"] = "1"
    X, y = _data()
    Xf, yf = _forest_data()
    clipped = _clipped()

    import jax
    import jax.numpy as jnp
    import numpy as np
    import xgboost as xgb

    import jaxboost
    import objectives
    from jaxboost.engine.exact import pow2

    res = {"backend": jax.default_backend(), "jax": jax.__version__}
    with jax.enable_x64(True):
        e = np.arange(-1000, 1001)
        exact = np.ldexp(np.ones(e.size), e)
        ld = np.asarray(jax.jit(lambda e: jnp.ldexp(jnp.ones((), jnp.float64), e))(e))
        p2 = np.asarray(jax.jit(pow2, static_argnums=1)(e, jnp.float64))
    res["ldexp_inexact"] = int((ld != exact).sum())
    res["pow2_inexact"] = int((p2 != exact).sum())

    ref = xgb.train(
        dict(
            objective="binary:logistic",
            tree_method="exact",
            eta=0.3,
            base_score=0.5,
            nthread=1,
            **clipped,
        ),
        xgb.DMatrix(X, label=y, missing=np.nan),
        20,
    )
    bst = jaxboost.train(
        objectives.logistic, X, y, n_rounds=20, learning_rate=0.3, base_margin=0.0, **clipped
    )
    res["logistic_clipped"] = _compare(bst, ref, X, 20, 1)

    X, y = Xf, yf
    p = dict(max_depth=3, num_parallel_tree=3)
    ref = xgb.train(
        dict(objective="binary:logistic", tree_method="exact", eta=0.3, base_score=0.5, nthread=1)
        | p,
        xgb.DMatrix(X, label=y, missing=np.nan),
        5,
    )
    bst = jaxboost.train(
        objectives.logistic, X, y, n_rounds=5, learning_rate=0.3, base_margin=0.0, **p
    )
    res["forest"] = _compare(bst, ref, X, 5, 3)
    res["forest"]["first_tree_leaves"] = _forest_leaves(bst, ref)
    # the per-tree rate alone, in a program of its own (P constant, zero traced), and
    # the float32 quotient as this backend divides
    from jaxboost.engine.round import per_tree_rate

    rate = jax.jit(lambda e, z: per_tree_rate(e, 3, z))(jnp.float32(0.3), jnp.int32(0))
    div = jax.jit(lambda e, z: e / (z + 3).astype(jnp.float32))(jnp.float32(0.3), jnp.int32(0))
    res["forest"]["per_tree_rate"] = float(rate)
    res["forest"]["f32_division"] = float(div)
    res["forest"]["numpy_rate"] = float(np.float32(0.3) / np.float32(3))
    print(TAG + json.dumps(res), flush=True)


def _forest_leaves(bst, ref):
    """The first tree's leaves: XGBoost's ``base_weights`` ``w``, its stored leaves,
    jaxboost's stored leaves, and jaxboost's leaf / w in float64 (the rate it applied),
    in the order of XGBoost's leaf values (the trees are the same)."""
    import numpy as np

    t0 = json.loads(ref.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"][0]
    leaf = np.array(t0["left_children"]) == -1
    w = np.array(t0["base_weights"], np.float32)[leaf]
    theirs = np.array(t0["split_conditions"], np.float32)[leaf]
    e = bst.ensemble
    ours = np.asarray(e.value[0])[np.asarray(e.is_leaf[0]) & (np.asarray(e.cover[0]) > 0)]
    ours = ours[np.argsort(ours)][np.argsort(np.argsort(theirs))]
    return {
        "w": w.tolist(),
        "xgboost": theirs.tolist(),
        "jaxboost": ours.tolist(),
        "jaxboost_over_w": (ours.astype(np.float64) / w.astype(np.float64)).tolist(),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--budget", type=float, default=200.0, help="seconds for every variant")
    ap.add_argument("--_worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a._worker:
        return _worker()
    out = Path(a.out or "gpu_probe")
    out.mkdir(parents=True, exist_ok=True)
    t0, results = time.perf_counter(), {}
    for name, env in VARIANTS.items():
        left = a.budget - (time.perf_counter() - t0)
        if left < 20:
            results[name] = {"skipped": "budget"}
            continue
        full = dict(
            os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
        )
        full.update(env)
        try:
            p = subprocess.run(
                [sys.executable, __file__, "--_worker"],
                env=full,
                capture_output=True,
                text=True,
                timeout=left,
            )
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith(TAG)]
            results[name] = (
                json.loads(lines[-1][len(TAG) :])
                if lines
                else {"rc": p.returncode, "tail": (p.stdout + p.stderr)[-2000:]}
            )
        except subprocess.TimeoutExpired:
            results[name] = {"skipped": "timeout"}
        r = results[name]
        print(
            name,
            r.get("backend"),
            {
                k: {kk: v[kk] for kk in ("max_abs_diff", "n_off", "first_round_off") if kk in v}
                for k, v in r.items()
                if isinstance(v, dict)
            },
            {k: r[k] for k in ("ldexp_inexact", "pow2_inexact", "skipped", "rc") if k in r},
            flush=True,
        )
        (out / "probe.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
