"""Sparse input: a CSR matrix trains the model of its NaN-dense twin, in less memory.

Issue 17's acceptance case: a 100,000 x 1,000 CSR matrix with 1 % of its entries stored
(a tenth of them explicit zeros, which are values), trained with ``jaxboost.train`` as
it is and as the dense float32 array with NaN in the absent places (what XGBoost makes
of a CSR matrix: absent entries are missing). The two models must be equal, tree for
tree and bit for bit, and so must their predictions.

Each case runs in its **own fresh Python process** (``subprocess.Popen``, collected with
``os.wait4``), which builds the same matrix from the same seed, converts it (dense case
only: ``toarray`` would put zeros where NaN belongs, so the NaN twin is written entry by
entry), trains, predicts on the first 10,000 rows, and writes the model and the
predictions to a temporary folder. Its peak resident memory (``ru_maxrss``, the
process's alone) and CPU seconds come from ``wait4``; the worker reports the wall
seconds of ``train`` (compilation included) and the bytes of its input. The parent then
compares the two models.

Usage::

    python benchmarks/sparse.py                          # 100,000 x 1,000, 1 %, 10 rounds
    python benchmarks/sparse.py --rows 20000 --features 200 --rounds 3    # a quick run

Prints a table and writes ``benchmarks/results/sparse-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TAG = "@@SPARSE "
MIB = 2**20


def make_csr(rows: int, features: int, density: float, seed: int = 0):
    """The benchmark's CSR matrix (float32, ``density`` of the entries stored, a tenth
    of them explicit zeros) and labels ``(rows,)`` from ten of its columns."""
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    nnz = int(rows * features * density)
    flat = np.unique(rng.integers(0, rows * features, size=nnz, dtype=np.int64))
    r, c = np.divmod(flat, features)
    values = rng.standard_normal(flat.shape[0], dtype=np.float32)
    values[rng.random(flat.shape[0]) < 0.1] = 0.0
    X = sp.csr_matrix((values, (r, c)), shape=(rows, features), dtype=np.float32)
    W = rng.standard_normal(10).astype(np.float32)
    y = X[:, :10] @ W + (X[:, 10].toarray().ravel() == 0) * 0.5  # absent counts as 0 here
    y = (y + 0.1 * rng.standard_normal(rows)).astype(np.float32)
    return X, y


def nan_dense(X):
    """The dense twin: stored entries as they are (zeros included), NaN elsewhere."""
    import numpy as np

    coo = X.tocoo()
    out = np.full(X.shape, np.nan, np.float32)
    out[coo.row, coo.col] = coo.data
    return out


def worker(case: str, args, out_dir: str) -> None:
    import numpy as np

    import jaxboost

    X, y = make_csr(args.rows, args.features, args.density)
    if case == "dense":
        X = nan_dense(X)
        data_bytes = X.nbytes
    else:
        data_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    t0 = time.perf_counter()
    bst = jaxboost.train(
        "squared",
        X,
        y,
        n_rounds=args.rounds,
        max_depth=args.depth,
        learning_rate=0.3,
        verbose=False,
    )
    seconds = time.perf_counter() - t0
    pred = bst.predict(X[: min(10_000, args.rows)])
    bst.save(os.path.join(out_dir, f"{case}.json"))
    np.save(os.path.join(out_dir, f"{case}-pred.npy"), pred)
    print(TAG + json.dumps({"train_seconds": seconds, "data_bytes": int(data_bytes)}), flush=True)


def run_case(case: str, argv: list, out_dir: str) -> dict:
    env = dict(os.environ)
    env.setdefault("JAX_PLATFORMS", "cpu")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.Popen(
        [sys.executable, __file__, "--worker", case, "--out-dir", out_dir, *argv],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.stdout.close()
    if status != 0:
        raise SystemExit(f"the {case} worker failed (status {status}):\n{out[-3000:]}")
    line = next(ln for ln in out.splitlines() if ln.startswith(TAG))
    rec = json.loads(line[len(TAG) :])
    rec.update(
        peak_rss_mib=usage.ru_maxrss / 1024,  # ru_maxrss is in KiB on Linux
        cpu_seconds=usage.ru_utime + usage.ru_stime,
    )
    return rec


def same_models(out_dir: str) -> dict:
    import numpy as np

    import jaxboost

    a = jaxboost.load(os.path.join(out_dir, "sparse.json"))
    b = jaxboost.load(os.path.join(out_dir, "dense.json"))
    trees = all(
        (x is None and y is None) or np.array_equal(x, y, equal_nan=True)
        for x, y in zip(a.ensemble, b.ensemble)
    )
    edges = np.array_equal(a.bin_edges.cuts, b.bin_edges.cuts) and np.array_equal(
        a.bin_edges.has_missing, b.bin_edges.has_missing
    )
    pa = np.load(os.path.join(out_dir, "sparse-pred.npy"))
    pb = np.load(os.path.join(out_dir, "dense-pred.npy"))
    return {
        "trees_equal": bool(trees),
        "bin_edges_equal": bool(edges),
        "predictions_equal": bool(np.array_equal(pa, pb)),
        "n_trees": a.ensemble.n_trees,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--features", type=int, default=1_000)
    ap.add_argument("--density", type=float, default=0.01)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--worker", choices=("sparse", "dense"))
    ap.add_argument("--out-dir")
    ap.add_argument("--out", default=None, help="JSON file for the figures")
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args, args.out_dir)
    argv = [
        f"--rows={args.rows}",
        f"--features={args.features}",
        f"--density={args.density}",
        f"--rounds={args.rounds}",
        f"--depth={args.depth}",
    ]
    print(
        f"{args.rows:,} x {args.features:,} at {args.density:.1%} stored (a tenth of them "
        f"explicit zeros), squared loss, {args.rounds} rounds of depth {args.depth}; "
        f"each case in a fresh process"
    )
    with tempfile.TemporaryDirectory() as tmp:
        cases = {c: run_case(c, argv, tmp) for c in ("sparse", "dense")}
        check = same_models(tmp)
    print(f"{'input':<8}{'data MiB':>10}{'peak RSS MiB':>14}{'train s':>9}{'CPU s':>8}")
    for c, r in cases.items():
        print(
            f"{c:<8}{r['data_bytes'] / MIB:>10.1f}{r['peak_rss_mib']:>14.0f}"
            f"{r['train_seconds']:>9.2f}{r['cpu_seconds']:>8.1f}"
        )
    print(
        f"models equal: trees {check['trees_equal']}, bin edges {check['bin_edges_equal']}, "
        f"predictions on 10,000 rows {check['predictions_equal']} "
        f"({check['n_trees']} trees)"
    )
    out = args.out or str(HERE / "results" / f"sparse-{time.strftime('%Y%m%d-%H%M%S')}.json")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps({"args": vars(args), "cases": cases, "check": check}, indent=2))
    print(f"figures written to {out}")
    if not all(check[k] for k in ("trees_equal", "bin_edges_equal", "predictions_equal")):
        raise SystemExit("the sparse and dense models differ")


if __name__ == "__main__":
    main()
