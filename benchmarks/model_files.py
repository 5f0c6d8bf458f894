"""Model files: size, save and load time of jaxboost's JSON against XGBoost's, same process.

The everyday rows of ``benchmarks/everyday.py`` (same data, settings and models: depth
6, 100 rounds, a 100-tree-per-class forest), each model trained once by each library,
then saved and loaded ``--repeats`` times (medians): jaxboost's compact layout (what
``save`` writes), its full heap layout (``save(..., compact=False)``, the only layout
before 27 Nov 2026), and XGBoost's ``save_model``/``load_model`` JSON.

    python benchmarks/model_files.py [--rows breast_cancer,digits] [--repeats 5]

Prints one table with the ratios to XGBoost and writes
``benchmarks/results/model-files-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import everyday  # noqa: E402  (the rows' data and models)

ROWS = ("breast_cancer", "wine", "digits", "forest_digits", "friedman1")


def timed(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def measure(row: str, repeats: int, folder: Path) -> dict:
    import numpy as np
    import xgboost as xgb

    from jaxboost import io

    everyday.ensure_data(row, quick=False)
    data = everyday.load_data(row, quick=False)
    rounds = everyday.n_rounds(row, quick=False)
    out = {}
    fit, _ = everyday.work_jaxboost(row, data, rounds, threads=2)
    bst = fit()
    X = data[2]
    want = bst.predict(X)
    for name, compact in (("jaxboost", True), ("jaxboost full", False)):
        path = folder / f"{row}-{name.replace(' ', '-')}.json"
        save_s = timed(lambda: io.save(bst, path, compact=compact), repeats)  # noqa: B023
        load_s = timed(lambda: io.load(path), repeats)  # noqa: B023
        assert np.array_equal(io.load(path).predict(X), want), (row, name)
        out[name] = dict(mib=path.stat().st_size / 2**20, save_s=save_s, load_s=load_s)
    fit, _ = everyday.work_xgboost(row, data, rounds, threads=2)
    ref = fit()
    path = folder / f"{row}-xgboost.json"
    save_s = timed(lambda: ref.save_model(path), repeats)
    load_s = timed(lambda: xgb.Booster(model_file=path), repeats)
    out["xgboost"] = dict(mib=path.stat().st_size / 2**20, save_s=save_s, load_s=load_s)
    trees = bst.ensemble.to_numpy()
    out["trees"] = int(trees.n_trees)
    out["nodes_per_tree"] = int(trees.is_leaf.shape[1])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    rows = [r for r in a.rows.split(",") if r]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for row in rows:
            results[row] = measure(row, a.repeats, Path(tmp))
            print(f"[{row}] done", flush=True)
    head = f"{'row':<14} {'library':<14} {'MiB':>7} {'save s':>8} {'load s':>8}"
    head += f" {'MiB/XGB':>8} {'save/XGB':>9} {'load/XGB':>9}"
    print("\n" + head + "\n" + "-" * len(head))
    for row, r in results.items():
        x = r["xgboost"]
        for lib in ("jaxboost", "jaxboost full", "xgboost"):
            m = r[lib]
            print(
                f"{row:<14} {lib:<14} {m['mib']:7.2f} {m['save_s']:8.3f} {m['load_s']:8.3f}"
                f" {m['mib'] / x['mib']:8.2f} {m['save_s'] / x['save_s']:9.2f}"
                f" {m['load_s'] / x['load_s']:9.2f}"
            )
    print(
        f"\nmedians of {a.repeats}; jaxboost: the compact layout save() writes; jaxboost "
        "full: save(compact=False), the heap layout; xgboost: save_model/load_model JSON"
    )
    out = (
        Path(a.out) if a.out else HERE / "results" / time.strftime("model-files-%Y%m%d-%H%M%S.json")
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"raw figures: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
