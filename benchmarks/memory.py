"""Peak memory and time of training, per row, per feature and per class (issue 16.7).

Every case trains one model in its **own fresh Python process** (data generated there,
one ``jaxboost.train`` call, nothing else), so its peak resident memory belongs to that
case alone. The parent starts the worker with ``subprocess.Popen`` and collects it with
``os.wait4``, whose resource usage is that child's only: ``ru_maxrss`` (peak RSS) and
``ru_utime + ru_stime`` (CPU seconds). The worker reports its own wall seconds for the
``train`` call (compilation included: one call per process) and the bytes of its data.

Cases (depth 6 unless said, 256 bins, learning rate 0.3, one JAX CPU device):

* ``base``: squared loss, 1,000 x 20, 10 rounds: the fixed cost (interpreter, JAX,
  jaxboost, compiling the round program);
* ``rows``: squared, 1,000,000 x 20, 10 rounds: bytes per row (``rows - base``);
* ``softmax10`` / ``softmax100``: ``objectives.softmax``, 100,000 x 20, 10 rounds,
  K = 10 / 100 classes, one tree per class per round (the default
  ``multi_strategy``): bytes per row and class;
* ``classes100``: ``objectives.softmax``, 5,000 x 10, 100 classes, 100 rounds: 10,000
  class trees of depth 6, whose ``(T, M, K)`` leaf values came to 484 MiB before class
  trees were held one output per tree (``Booster.trees``; ``model MiB``: the trees the
  booster holds); ``classes100eval``: the same data at depth 6 for 20 rounds with an
  evaluation set of 10,000 rows (its log loss every round);
* ``wide2k`` / ``wide20k``: squared, 500 x 2,000 / 500 x 20,000, 3 rounds: bytes per
  feature;
* ``sparse1m``: logistic on a ``scipy.sparse`` matrix of 1,000 rows x 1,000,000
  word-presence columns with 5,000 stored entries, 5 rounds (issue 28: the native
  sparse tree kernel, bins by stored entry);
* ``predict20m``: a 50-round model of 10,000 x 5 rows, then ``predict`` on 20,000,000 x 5
  float32 rows (381 MiB; generated in blocks, so the peak is the predict's own);
* ``staged``: a 2,000-round depth-2 model, then ``staged_predict`` on 100,000 rows (a
  763 MiB output);
* ``deep12``: squared, 200,000 x 10, 20 rounds of depth 12: the native tree grower's
  histograms of a level's live nodes (up to 2,048 here) dominate.

For the last two, ``train s`` is the seconds of the ``predict`` / ``staged_predict``
call.

Acceptance targets (issue 16.7): ``softmax100`` and ``wide20k`` peaks under 1.5 GB.

The machine this runs on may be shared: peak memory is reliable, wall seconds are not
(CPU seconds are printed next to them).

Usage::

    python benchmarks/memory.py                        # every case
    python benchmarks/memory.py --cases base,wide20k   # some
    python benchmarks/memory.py --label before         # a tag stored in the JSON

Prints a table and writes the figures to ``benchmarks/results/memory-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from _process import launch_measured

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TAG = "@@MEMORY "
GB = 1e9
MIB = 2**20

CASES = {
    # name: (objective, rows, features, classes, rounds)
    "base": ("squared", 1_000, 20, 1, 10),
    "rows": ("squared", 1_000_000, 20, 1, 10),
    "softmax10": ("softmax", 100_000, 20, 10, 10),
    "softmax100": ("softmax", 100_000, 20, 100, 10),
    "classes100": ("softmax", 5_000, 10, 100, 100),
    "classes100eval": ("softmax", 5_000, 10, 100, 20),
    "wide2k": ("squared", 500, 2_000, 1, 3),
    "wide20k": ("squared", 500, 20_000, 1, 3),
    "sparse1m": ("logistic", 1_000, 1_000_000, 1, 5),
    "predict20m": ("logistic", 20_000_000, 5, 1, 50),
    "staged": ("logistic", 100_000, 5, 1, 2000),
    "deep12": ("squared", 200_000, 10, 1, 20),
}
DEPTHS = {"deep12": 12}  # max_depth where it is not 6
TARGETS = {"softmax100": 1.5 * GB, "wide20k": 1.5 * GB}


def make_data(rows: int, features: int, classes: int):
    """Reproducible float32 features and labels (class indices when ``classes > 1``)."""
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, features), dtype=np.float32)
    if classes == 1:
        y = (
            X[:, : min(features, 5)].sum(axis=1) + 0.1 * rng.standard_normal(rows, dtype=np.float32)
        ).astype(np.float32)
        return X, y
    W = rng.standard_normal((features, classes), dtype=np.float32)
    y = np.argmax(X @ W + rng.gumbel(size=(rows, classes)).astype(np.float32), axis=1)
    y[:classes] = np.arange(classes)  # every class present: K is inferred as max(y) + 1
    return X, y.astype(np.float32)


def special(name: str) -> dict:
    """The cases that are not one plain ``train`` call (see the module docstring)."""
    import numpy as np
    import scipy.sparse as sp

    import jaxboost

    rng = np.random.default_rng(0)
    if name == "sparse1m":
        n, f = 1_000, 1_000_000
        rows = np.concatenate([rng.integers(0, n, 3000), rng.integers(0, n, 2000)])
        cols = np.concatenate([rng.integers(0, 10, 3000) * 99_991, rng.integers(0, f, 2000)])
        X = sp.csr_matrix((np.ones(5000, np.float32), (rows, cols)), shape=(n, f))
        X.sum_duplicates()
        X.data[:] = 1.0
        y = (
            np.asarray(X[:, 0].todense()).ravel()
            - np.asarray(X[:, 99_991].todense()).ravel()
            + 0.3 * rng.normal(size=n)
            > 0
        ).astype(np.float32)
        t0, c0 = time.perf_counter(), time.process_time()
        bst = jaxboost.train("logistic", X, y, n_rounds=5, max_depth=6, verbose=False)
        return dict(
            train_s=time.perf_counter() - t0,
            train_cpu_s=time.process_time() - c0,
            data_bytes=int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes),
            n_trees=int(bst.trees.n_trees),
        )
    Xs = rng.standard_normal((10_000, 5), dtype=np.float32)
    ys = (Xs[:, 0] > 0).astype(np.float32)
    if name == "predict20m":
        bst = jaxboost.train("logistic", Xs, ys, n_rounds=50, max_depth=6, verbose=False)
        X = np.empty((20_000_000, 5), np.float32)
        for lo in range(0, X.shape[0], 1_000_000):
            X[lo : lo + 1_000_000] = rng.standard_normal((1_000_000, 5), dtype=np.float32)
        t0, c0 = time.perf_counter(), time.process_time()
        out = bst.predict(X)
    else:  # staged
        bst = jaxboost.train(
            "logistic", Xs, ys, n_rounds=2000, max_depth=2, learning_rate=0.01, verbose=False
        )
        X = rng.standard_normal((100_000, 5), dtype=np.float32)
        t0, c0 = time.perf_counter(), time.process_time()
        out = bst.staged_predict(X)
    return dict(
        train_s=time.perf_counter() - t0,
        train_cpu_s=time.process_time() - c0,
        data_bytes=int(X.nbytes),
        output_bytes=int(out.nbytes),
        n_trees=int(bst.trees.n_trees),
    )


def worker(name: str) -> None:
    if name in ("sparse1m", "predict20m", "staged"):
        print(TAG + json.dumps(dict(case=name, **special(name))), flush=True)
        return
    objective, rows, features, classes, rounds = CASES[name]
    extra = {}
    if name == "classes100eval":  # and 10,000 more rows of the same data to evaluate
        X, y = make_data(rows + 10_000, features, classes)
        X, y, extra["eval_set"] = X[:rows], y[:rows], [(X[rows:], y[rows:])]
    else:
        X, y = make_data(rows, features, classes)
    import jaxboost

    t0 = time.perf_counter()
    c0 = time.process_time()
    bst = jaxboost.train(
        objective,
        X,
        y,
        n_rounds=rounds,
        max_depth=DEPTHS.get(name, 6),
        learning_rate=0.3,
        verbose=False,
        **extra,
    )
    margin = bst.predict(X[:10], output_margin=True)
    out = dict(
        case=name,
        train_s=time.perf_counter() - t0,
        train_cpu_s=time.process_time() - c0,
        data_bytes=int(X.nbytes + y.nbytes),
        n_trees=int(bst.trees.n_trees),
        model_bytes=int(bst.nbytes),
        margin_head=[float(v) for v in margin.ravel()[:4]],
    )
    print(TAG + json.dumps(out), flush=True)


def launch(name: str, timeout: float) -> dict:
    """Run one case in a fresh process; its own peak RSS and CPU seconds by ``wait4``."""
    return launch_measured(
        [sys.executable, str(Path(__file__).resolve()), "--_worker", name], name, timeout, TAG
    )


def model(results: dict) -> list:
    """Bytes per row, per feature, per class from differences between cases."""

    def peak(c):
        r = results.get(c)
        return None if r is None or "error" in r else r["peak_bytes"]

    lines = []

    def diff(a, b, units, what):
        pa, pb = peak(a), peak(b)
        if pa is None or pb is None:
            return
        per = (pa - pb) / units
        lines.append(dict(what=what, cases=f"{a} - {b}", bytes=per))

    rows, base, s10, s100, w2, w20 = (
        CASES[c] for c in ("rows", "base", "softmax10", "softmax100", "wide2k", "wide20k")
    )
    diff("rows", "base", rows[1] - base[1], f"per row (squared, {rows[2]} features)")
    diff("softmax100", "softmax10", s100[1] * (s100[3] - s10[3]), "per row and class (softmax)")
    diff("wide20k", "wide2k", w20[2] - w2[2], f"per feature ({w20[1]} rows)")
    return lines


def _model_mib(r: dict) -> str:
    return "-" if r.get("model_bytes") is None else f"{r['model_bytes'] / MIB:,.1f}"


def table(results: dict) -> str:
    head = (
        f"{'case':10s}  {'objective':9s}  {'rows':>9s}  {'feat':>6s}  {'K':>4s}  "
        f"{'rounds':>6s}  {'peak MiB':>9s}  {'model MiB':>9s}  {'train s':>8s}  {'CPU s':>7s}  "
        "target"
    )
    out = [head, "-" * len(head)]
    for name, r in results.items():
        obj, rows, feats, k, rounds = CASES[name]
        if "error" in r:
            out.append(
                f"{name:10s}  failed (rc {r['returncode']}, peak "
                f"{r['peak_bytes'] / MIB:,.0f} MiB): {r['error'].strip()[-300:]}"
            )
            continue
        tgt = TARGETS.get(name)
        ok = (
            ""
            if tgt is None
            else (f"< {tgt / GB:.1f} GB " + ("met" if r["peak_bytes"] < tgt else "OVER"))
        )
        out.append(
            f"{name:10s}  {obj:9s}  {rows:9,d}  {feats:6,d}  {k:4d}  {rounds:6d}  "
            f"{r['peak_bytes'] / MIB:9,.0f}  {_model_mib(r):>9s}  {r['train_s']:8.1f}  "
            f"{r['cpu_s']:7.1f}  {ok}"
        )
    out.append("")
    for m in model(results):
        out.append(f"{m['what']:32s} {m['bytes']:12,.0f} bytes   ({m['cases']})")
    out.append(
        "peak MiB: the worker's peak RSS (ru_maxrss by wait4), data included; model MiB: "
        "the trees the booster holds (Booster.nbytes); train s: "
        "wall seconds of the train call (compile included); CPU s: the worker's user + "
        "system seconds."
    )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--label", default="", help="a tag stored in the JSON (before/after)")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    names = [c for c in args.cases.split(",") if c]
    unknown = [c for c in names if c not in CASES]
    if unknown:
        raise SystemExit(f"unknown case(s) {unknown}; known: {list(CASES)}")
    results = {}
    for name in names:
        results[name] = launch(name, args.timeout)
        r = results[name]
        print(
            f"{name}: peak {r['peak_bytes'] / MIB:,.0f} MiB, wall {r['wall_s']:.1f} s, "
            f"CPU {r['cpu_s']:.1f} s" + (" FAILED" if "error" in r else ""),
            flush=True,
        )
    text = table(results)
    print(text)
    sys.path.insert(0, str(HERE))
    from run import machine_info

    out = (
        Path(args.out)
        if args.out
        else HERE / "results" / f"memory-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            dict(
                label=args.label,
                argv=sys.argv,
                machine=machine_info(),
                cases={
                    k: dict(zip(("objective", "rows", "features", "classes", "rounds"), CASES[k]))
                    for k in names
                },
                results=results,
                model=model(results),
                table=text,
            ),
            indent=1,
        )
        + "\n"
    )
    print(f"raw figures: {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--_worker":
        worker(sys.argv[2])
    else:
        main()
