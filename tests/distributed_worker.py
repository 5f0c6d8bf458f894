"""One process of the multi-process tests (tests/test_distributed.py) and of
examples/multi_device.py's --processes mode.

Run as ``python tests/distributed_worker.py --port P --process-id I --processes N --out DIR``;
process ``I`` trains each of ``--configs`` on its share of a fixed data set and writes
``DIR/<config>.json`` (process 0), ``DIR/<config>_margins_I.npy`` (its predictions on all
rows) and ``DIR/<config>_history_I.npy`` (its evaluation curve).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

N_ROWS = 1003
SPLIT = (0.62,)  # process 0 holds 62 % of the rows (uneven on purpose)


def make_data(objective: str):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N_ROWS, 6)).astype(np.float32)
    X[rng.random(N_ROWS) < 0.1, 1] = np.nan
    z = X[:, 0] + np.nan_to_num(X[:, 1]) - 0.5 * X[:, 2] + 0.5 * rng.normal(size=N_ROWS)
    if objective == "softmax":
        y = np.digitize(z, [-0.7, 0.7]).astype(np.float32)
    else:
        y = (z > 0).astype(np.float32)
    w = (0.5 + rng.random(N_ROWS)).astype(np.float32)
    return X, y, w


def bounds(n_processes: int):
    """Row ranges of the processes (the first takes SPLIT[0], the rest share evenly)."""
    if n_processes == 1:
        return [(0, N_ROWS)]
    first = int(N_ROWS * SPLIT[0])
    rest = np.linspace(first, N_ROWS, n_processes).astype(int)
    edges = [0] + list(rest)
    return [(edges[i], edges[i + 1]) for i in range(n_processes)]


def train_kwargs(config: str, rounds: int):
    """``config`` is ``objective`` with optional suffixes: ``-q`` quantized, ``-a`` the
    training data passed as global ``jax.Array``s (``fit``), ``-h`` scikit-learn's
    average precision as a host metric after the objective's own metric."""
    objective = config.split("-")[0]
    kw = dict(
        objective=objective,
        n_rounds=rounds,
        max_depth=4,
        learning_rate=0.3,
        quantize="-q" in config,
        subsample=0.8,
        colsample_bytree=0.8,
        seed=3,
    )
    if "-h" in config:
        from sklearn.metrics import average_precision_score

        import jaxboost

        kw["eval_metric"] = [
            "logloss",
            jaxboost.metrics.host(average_precision_score, maximize=True),
        ]
    return kw


def fit(config, X, y, w, rows, rounds, **extra):
    """Train ``config`` on ``rows`` (evaluation set: those of them in the first half)."""
    import jaxboost

    kw = train_kwargs(config, rounds)
    kw.update(extra)
    objective = kw.pop("objective")
    lo, hi = rows
    e_hi = max(lo, min(hi, N_ROWS // 2))
    Xt, yt, wt = X[lo:hi], y[lo:hi], w[lo:hi]
    if "-a" in config:  # global arrays, rows split over the processes
        import jax
        from jax.sharding import Mesh, NamedSharding, PartitionSpec

        mesh = Mesh(np.array(jax.devices()), ("rows",))
        counts = jaxboost.distributed.allgather(np.int64(hi - lo))
        block = int(counts.max())  # equal blocks: this process's rows, then copies

        def glob(a):
            pad = np.concatenate([a, np.repeat(a[:1], block - len(a), axis=0)])
            return jax.make_array_from_process_local_data(
                NamedSharding(mesh, PartitionSpec("rows")), pad
            )

        # Padding rows get weight 0: they do not count (the model stays the same).
        wt = np.concatenate([wt, np.zeros(block - len(wt), np.float32)])
        Xt, yt, wt = glob(Xt), glob(yt), glob(wt)
    return jaxboost.train(
        objective,
        Xt,
        yt,
        sample_weight=wt,
        eval_set=[(X[lo:e_hi], y[lo:e_hi])],
        verbose=False,
        **kw,
    )


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--process-id", type=int, required=True)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", default="logistic")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--checkpoint", default=None)
    ap.add_argument("--slow", type=float, default=0.0, help="seconds of sleep per round")
    ap.add_argument("--resume", action="store_true")
    args = ap.parse_args(argv)

    import jaxboost

    jaxboost.distributed.initialize(
        f"127.0.0.1:{args.port}", args.processes, args.process_id, heartbeat_timeout=60
    )
    rows = bounds(args.processes)[args.process_id]
    for config in args.configs.split(","):
        X, y, w = make_data(config.split("-")[0])
        callbacks = []
        if args.slow:
            callbacks.append(lambda env: time.sleep(args.slow) or False)
        extra = {}
        if args.checkpoint:
            callbacks.append(jaxboost.callbacks.Checkpoint(args.checkpoint, every=2))
        if args.resume:
            init = jaxboost.load(args.checkpoint)
            extra = dict(init_model=init, n_rounds=args.rounds - init.train_state["rounds"])
        print(f"process {args.process_id}: {config} training", flush=True)
        bst = fit(config, X, y, w, rows, args.rounds, callbacks=callbacks, **extra)
        bst.save(os.path.join(args.out, f"{config}.json"))
        np.save(
            os.path.join(args.out, f"{config}_margins_{args.process_id}.npy"),
            bst.predict(X, output_margin=True),
        )
        np.save(
            os.path.join(args.out, f"{config}_history_{args.process_id}.npy"),
            np.array(next(iter(bst.history["validation_0"].values()))),
        )
        if "-h" in config:
            np.save(
                os.path.join(args.out, f"{config}_host_{args.process_id}.npy"),
                np.array(bst.history["validation_0"]["average_precision_score"]),
            )
        print(f"process {args.process_id}: {config} done, {len(bst)} trees", flush=True)
    jaxboost.distributed.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
