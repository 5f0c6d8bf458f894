"""Microbenchmark: one level's gradient histograms, XLA scatter vs the native FFI kernel.

Prints milliseconds per level (median of ``--repeats`` after one warm-up call), every
implementation called inside ``jax.jit`` on ONE JAX CPU device:

* ``xla``: :func:`jaxboost.engine.histogram.build_histogram` on feature-major ``(F, N)`` bins and
  packed ``g + i h`` (the pure-JAX default; XLA:CPU may already run parts of it on
  several cores through its intra-op thread pool);
* ``nat 1T``: :func:`jaxboost.native.histogram` on row-major ``(N, F)`` bins, float32 g, h,
  ``n_threads=1``;
* ``nat xT``: the same with ``n_threads=T`` (``--threads``, default: the cores available
  to the process), the threads run on XLA:CPU's intra-op pool;
* ``std xT``: the same on std::threads started per call (the kernel's fallback when the
  runtime offers no pool; ``--no-std`` to skip).

``speed-up`` is xla / nat xT; ``scaling`` is nat 1T / nat xT.

Rows are assigned uniformly to ``n_nodes`` nodes; in the "50%" rows, half of the rows (at
random) have ``node == n_nodes`` and are skipped, as under the histogram subtraction
trick. ``--bins skewed`` puts 7/8 of each feature's values in bin 0 and ``--bins binary``
uses only bins 0 and 1 (worst cases for store-to-load dependencies and cache-set
conflicts).

Usage::

    python benchmarks/hist_kernels.py                 # N=1M, F=28, 256 bins
    python benchmarks/hist_kernels.py --threads 4 --bins skewed
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--n-bins", type=int, default=256)
    ap.add_argument("--nodes", default="1,8,32")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="threads of the multi-threaded columns (default: available cores)",
    )
    ap.add_argument("--no-std", action="store_true", help="skip the std::thread column")
    ap.add_argument("--bins", choices=("uniform", "skewed", "binary"), default="uniform")
    args = ap.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")

    import jax
    import jax.numpy as jnp
    import numpy as np

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from jaxboost import native
    from jaxboost.engine.histogram import build_histogram, pack_gh

    N, F, B = args.rows, args.features, args.n_bins
    rng = np.random.default_rng(0)
    if args.bins == "uniform":
        bins_rm = rng.integers(0, B, size=(N, F), dtype=np.uint8)
    elif args.bins == "skewed":
        bins_rm = np.where(rng.random((N, F)) < 0.875, 0, rng.integers(0, B, size=(N, F))).astype(
            np.uint8
        )
    else:
        bins_rm = rng.integers(0, 2, size=(N, F), dtype=np.uint8)
    bins_t = jnp.asarray(np.ascontiguousarray(bins_rm.T))
    bins_rm = jnp.asarray(bins_rm)
    g = jnp.asarray(rng.normal(size=N).astype(np.float32))
    h = jnp.asarray(rng.random(N).astype(np.float32))
    gh = pack_gh(g, h)

    def timeit(fn, *a):
        jax.block_until_ready(fn(*a))  # compile + warm-up
        ts = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            jax.block_until_ready(fn(*a))
            ts.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ts)

    have_native = native.available()
    if not have_native:
        print(f"native kernel unavailable: {native.unavailable_reason()}")
    T = args.threads or native.default_threads()

    print(
        f"N={N:,} F={F} n_bins={B} bins={args.bins}  ms per level, median of "
        f"{args.repeats}, one device (jax {jax.__version__}, "
        f"{len(os.sched_getaffinity(0))} cores available, T={T})"
    )
    cols = ["xla"]
    if have_native:
        cols += ["nat 1T", f"nat {T}T"] + ([] if args.no_std else [f"std {T}T"])
    print(
        f"{'n_nodes':>7} {'rows kept':>9} "
        + " ".join(f"{c:>9}" for c in cols)
        + f" {'speed-up':>8} {'scaling':>7}"
    )
    for n_nodes in [int(x) for x in args.nodes.split(",")]:
        xla = jax.jit(lambda b, gh_, nd, n=n_nodes: build_histogram(b, gh_, nd, n, B))

        def nat(threads, pool=True, n=n_nodes):
            return jax.jit(
                lambda b, g_, h_, nd: native.histogram(
                    b, g_, h_, nd, n, B, n_threads=threads, _xla_pool=pool
                )
            )

        for half in (False, True):
            node = rng.integers(0, n_nodes, size=N).astype(np.int32)
            if half:
                node[rng.random(N) < 0.5] = n_nodes
            node = jnp.asarray(node)
            res = {"xla": timeit(xla, bins_t, gh, node)}
            extra = ""
            if have_native:
                res["nat 1T"] = timeit(nat(1), bins_rm, g, h, node)
                res[f"nat {T}T"] = timeit(nat(T), bins_rm, g, h, node)
                if not args.no_std:
                    res[f"std {T}T"] = timeit(nat(T, False), bins_rm, g, h, node)
                extra = (
                    f" {res['xla'] / res[f'nat {T}T']:7.1f}x"
                    f" {res['nat 1T'] / res[f'nat {T}T']:6.2f}x"
                )
            kept = "50%" if half else "100%"
            print(
                f"{n_nodes:>7} {kept:>9} " + " ".join(f"{res[c]:9.2f}" for c in cols) + extra,
                flush=True,
            )


if __name__ == "__main__":
    main()
