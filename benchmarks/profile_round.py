"""Where the time of one W1 round goes, stage by stage.

Times, at W1 size (1M rows x 28 features, depth 6, 256 bins) on one JAX device:

* a whole round, native histogram kernel vs the pure-JAX scatter (``JAXBOOST_NATIVE``);
* the same round with the histogram stubbed out (everything but the histograms);
* split finding alone for 1, 2, ..., 32 nodes (one level each);
* the histogram alone per level size (native and pure JAX; root = all rows, deeper
  levels = the smaller children, about half the rows).

Run: ``python benchmarks/profile_round.py [--rows N]``. Each figure is the median of
several repeats after a warm-up; run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def _median_time(fn, repeats=5):
    import jax

    jax.block_until_ready(fn())
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(fn())
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def data(rows):
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=rows, n_features=28, n_informative=14, n_redundant=4, random_state=0
    )
    return X.astype(np.float32), y.astype(np.float32)


def round_time(rows, stub_histogram: bool):
    """Seconds per round: (train 11 rounds - train 1 round) / 10, warm."""
    import jax
    import jax.numpy as jnp

    import jaxboost
    import objectives
    from jaxboost import native

    if stub_histogram:

        def fake(bins, g, h, node, n_nodes, n_bins, **kwargs):
            F = bins.shape[1]
            with jax.enable_x64(True):
                z = jnp.zeros((F, n_nodes, n_bins), jnp.float64) + g[0].astype(jnp.float64)
            return z, z + 1.0

        native.histogram = fake
    X, y = data(rows)
    kw = dict(learning_rate=0.1, max_depth=6)
    jaxboost.train(objectives.logistic, X, y, n_rounds=1, **kw)
    one, eleven = [], []
    for _ in range(3):
        t = time.perf_counter()
        jaxboost.train(objectives.logistic, X, y, n_rounds=1, **kw)
        one.append(time.perf_counter() - t)
        t = time.perf_counter()
        jaxboost.train(objectives.logistic, X, y, n_rounds=11, **kw)
        eleven.append(time.perf_counter() - t)
    return (statistics.median(eleven) - statistics.median(one)) / 10


def split_times():
    import jax
    import jax.numpy as jnp

    from jaxboost.engine.split import find_best_splits
    from jaxboost.model.params import TreeParams

    rng = np.random.default_rng(0)
    F, B = 28, 256
    dyn = TreeParams().dynamic()
    fo = np.zeros(F, bool)
    f = jax.jit(find_best_splits, static_argnames=("clipped", "any_forward"))
    out = {}
    for n in (1, 2, 4, 8, 16, 32):
        with jax.enable_x64(True):
            G = jnp.asarray(rng.normal(size=(F, n, B)))
            H = jnp.asarray(rng.random((F, n, B)))
            Gp, Hp = G[0].sum(-1), H[0].sum(-1)
        out[n] = _median_time(
            lambda G=G, H=H, Gp=Gp, Hp=Hp: f(
                G, H, Gp, Hp, dyn, fo, clipped=False, any_forward=False
            ),
            20,
        )
    return out


def histogram_times(rows):
    import jax
    import jax.numpy as jnp

    from jaxboost import native
    from jaxboost.engine.histogram import build_histogram, pack_gh

    rng = np.random.default_rng(0)
    F, B = 28, 256
    bins_rm = rng.integers(0, 255, size=(rows, F)).astype(np.uint8)
    bins_fm = np.ascontiguousarray(bins_rm.T)
    g = jnp.asarray(rng.normal(size=rows).astype(np.float32))
    h = jnp.ones(rows, jnp.float32)
    xla = jax.jit(
        lambda b, node, n: build_histogram(b, pack_gh(g, h), node, n, B), static_argnums=2
    )
    nat = jax.jit(lambda b, node, n: native.histogram(b, g, h, node, n, B), static_argnums=2)
    out = {}
    for n, kept in ((1, 1.0), (1, 0.5), (8, 0.5), (32, 0.5)):
        node = rng.integers(0, n, size=rows).astype(np.int32)
        node[rng.random(rows) >= kept] = n  # skipped rows
        node = jnp.asarray(node)
        row = {"xla": _median_time(lambda node=node, n=n: xla(bins_fm, node, n))}
        if native.available():
            row["native"] = _median_time(lambda node=node, n=n: nat(bins_rm, node, n))
        out[(n, kept)] = row
    return out


def _child(args):
    """Run one round-time measurement in a fresh process (env decides the kernel)."""
    env = dict(os.environ, JAXBOOST_COMPILATION_CACHE="0")
    env.update(args["env"])
    code = (
        f"import sys; sys.path.insert(0, {HERE!r}); import profile_round as p; "
        f"print(p.round_time({args['rows']}, {args['stub']}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    args = ap.parse_args(argv)
    rows = args.rows
    print(f"One round at {rows:,} rows x 28 features, depth 6, 256 bins, one device")
    cases = [
        ("round, native kernel", {}, False),
        ("round, pure-JAX scatter (JAXBOOST_NATIVE=0)", {"JAXBOOST_NATIVE": "0"}, False),
        ("round without histograms (stubbed)", {}, True),
    ]
    for label, env, stub in cases:
        t = _child({"rows": rows, "env": env, "stub": stub})
        print(f"  {label:48s} {t * 1000:8.1f} ms")
    print("Split finding per level (nodes: ms)")
    for n, t in split_times().items():
        print(f"  {n:3d} nodes {t * 1000:8.2f} ms")
    print("Histogram per level (nodes, share of rows histogrammed: ms)")
    for (n, kept), row in histogram_times(rows).items():
        cells = "  ".join(f"{k} {v * 1000:7.1f} ms" for k, v in row.items())
        print(f"  {n:3d} nodes, {kept:4.0%} rows  {cells}")


if __name__ == "__main__":
    main()
