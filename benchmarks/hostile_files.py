"""Memory and time of refusing hostile model files: ``jaxboost.load`` and ``from_xgboost``.

Writes each hostile file (default about 100 MB; the issue's small originals too) to a
temporary folder, then reads it in a fresh process per (file, reader): once timed (wall
time of the call, and how far the process's peak resident memory rose above its
resident memory before the call: ``VmHWM`` of ``/proc/self/status``, reset through
``/proc/self/clear_refs`` just before the call), once under ``tracemalloc`` (the peak of Python and
NumPy allocations during the call). Every call must raise ``ModelFormatError``; the
script prints a table and writes the figures to ``benchmarks/results/``.

Files: ``nested-arrays`` (``[[],[],...]``: 1.8 GB of lists once parsed),
``deep-nesting`` (``[[[[...``), ``num-class`` (an XGBoost model declaring 10 million
classes, padded with whitespace to the size), ``long-chains`` (XGBoost trees of depth 16
whose heap layout would take gigabytes), ``n-outputs`` (a jaxboost model declaring 10
million outputs, padded), ``floats-at-budget`` (a list of floats whose parse cost is
97 % of ``files.MAX_PARSE_BYTES``: the largest parse the bound lets through, refused
after it as no model), and the originals: ``num-class-567B``, ``num-feature-4M``,
``chains-1000`` (1,000 depth-16 chains, 1.7 MB).

Run: ``python benchmarks/hostile_files.py [--size-mb 100] [--out results.json]``
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
sys.path.insert(0, str(ROOT))  # this checkout's jaxboost, here and in the children

CHILD = r"""
import json, os, sys, time, tracemalloc
import jaxboost
from jaxboost import io
reader, path, traced = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
read = {"load": io.load, "from_xgboost": io.from_xgboost}[reader]

def status_mib(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024

before_rss = status_mib("VmRSS")
try:  # reset the peak (VmHWM) to the current RSS, so the peak below is the call's
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    reset = True
except OSError:
    reset = False
before_max = status_mib("VmHWM")
if traced:
    tracemalloc.start()
t0 = time.perf_counter()
try:
    read(path)
    error = None
except Exception as e:
    error = e
seconds = time.perf_counter() - t0
peak = tracemalloc.get_traced_memory()[1] / 2 ** 20 if traced else None
after_max = status_mib("VmHWM")
print(json.dumps({"seconds": seconds, "traced_peak_mib": peak,
                  "rss_before_mib": before_rss, "maxrss_before_mib": before_max,
                  "maxrss_after_mib": after_max, "peak_reset": reset,
                  "error": type(error).__name__ if error else None,
                  "message": str(error)[:160] if error else None}))
"""


def xgb_model(trees, objective="reg:squarederror", num_class="0", num_feature="2"):
    return {
        "learner": {
            "attributes": {},
            "feature_names": [],
            "feature_types": [],
            "gradient_booster": {
                "model": {
                    "gbtree_model_param": {"num_parallel_tree": "1", "num_trees": str(len(trees))},
                    "iteration_indptr": list(range(len(trees) + 1)),
                    "tree_info": [0] * len(trees),
                    "trees": trees,
                },
                "name": "gbtree",
            },
            "learner_model_param": {
                "base_score": "5E-1",
                "boost_from_average": "1",
                "num_class": num_class,
                "num_feature": num_feature,
                "num_target": "1",
            },
            "objective": {"name": objective},
        },
        "version": [3, 2, 0],
    }


def tree(left, right):
    n = len(left)
    cond = [0.5 if c != -1 else 0.125 for c in left]
    hess = [0.0] * n
    for i in reversed(range(n)):
        hess[i] = 1.0 if left[i] == -1 else hess[left[i]] + hess[right[i]]
    return {
        "base_weights": cond,
        "categories": [],
        "categories_nodes": [],
        "categories_segments": [],
        "categories_sizes": [],
        "default_left": [0] * n,
        "id": 0,
        "left_children": left,
        "loss_changes": [0.0] * n,
        "parents": [2147483647] * n,
        "right_children": right,
        "split_conditions": cond,
        "split_indices": [0] * n,
        "split_type": [0] * n,
        "sum_hessian": hess,
        "tree_param": {
            "num_deleted": "0",
            "num_feature": "2",
            "num_nodes": str(n),
            "size_leaf_vector": "1",
        },
    }


def stump():
    return tree([1, -1, -1], [2, -1, -1])


def chain(depth=16):
    n = 2 * depth + 1
    left, right = [-1] * n, [-1] * n
    for k in range(depth):
        left[2 * k], right[2 * k] = 2 * k + 1, 2 * k + 2
    return tree(left, right)


def compact(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def padded(data: bytes, size: int) -> bytes:
    return data + b" " * max(size - len(data), 0)


def jaxboost_model_text(n_outputs) -> bytes:
    """A valid jaxboost model file with ``n_outputs`` replaced (refused by the limit)."""
    import numpy as np

    import jaxboost
    from jaxboost import io

    X = np.arange(16, dtype=np.float32).reshape(8, 2)
    bst = jaxboost.train("squared", X, X[:, 0], n_rounds=1, max_depth=1, verbose=False)
    d = io.to_dict(bst)
    d["n_outputs"] = n_outputs
    return compact(d)


def files(size):
    """``(name, readers, bytes)`` of each hostile file."""
    n_pairs = (size - 2) // 3
    yield "nested-arrays", ("load", "from_xgboost"), b"[" + b"[]," * n_pairs + b"[]]"
    yield "deep-nesting", ("load", "from_xgboost"), b"[" * size
    small = compact(xgb_model([stump()], "multi:softprob", num_class="10000000"))
    yield "num-class", ("from_xgboost",), padded(small, size)
    one = len(compact(chain()))
    yield (
        "long-chains",
        ("from_xgboost",),
        compact(xgb_model([chain() for _ in range(max(size // (one + 1), 1))])),
    )
    yield "n-outputs", ("load",), padded(jaxboost_model_text(10**7), size)
    # The most a text the cost bound lets through can take: floats up to 97 % of it.
    from jaxboost.io import files as jfiles

    n = int(0.97 * jfiles.MAX_PARSE_BYTES / jfiles.parse_cost(b"0.5,"))
    yield "floats-at-budget", ("load", "from_xgboost"), b"[" + b"0.5," * n + b"0.5]"
    yield "num-class-567B", ("from_xgboost",), small
    yield "num-feature-4M", ("from_xgboost",), compact(xgb_model([stump()], num_feature="4000000"))
    yield "chains-1000", ("from_xgboost",), compact(xgb_model([chain() for _ in range(1000)]))


def run(reader, path, traced, timeout):
    env = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run(
        [sys.executable, "-c", CHILD, reader, str(path), "1" if traced else "0"],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--size-mb",
        type=float,
        default=100.0,
        help="size of the large hostile files in MB (default 100)",
    )
    ap.add_argument(
        "--out",
        default=None,
        help="JSON file for the figures (default "
        "benchmarks/results/hostile-files-<timestamp>.json)",
    )
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    size = int(args.size_mb * 1e6)
    rows = []
    print(
        f"{'file':16s} {'MB':>7s} {'reader':13s} {'seconds':>8s} {'traced MiB':>10s} "
        f"{'RSS +MiB':>9s}  refusal"
    )
    with tempfile.TemporaryDirectory(prefix="jaxboost-hostile-") as folder:
        for name, readers, data in files(size):
            path = Path(folder) / f"{name}.json"
            path.write_bytes(data)
            mb = len(data) / 1e6
            del data
            for reader in readers:
                timed = run(reader, path, False, args.timeout)
                traced = run(reader, path, True, args.timeout)
                growth = timed["maxrss_after_mib"] - timed["rss_before_mib"]
                row = {
                    "file": name,
                    "bytes": path.stat().st_size,
                    "reader": reader,
                    "seconds": timed["seconds"],
                    "traced_peak_mib": traced["traced_peak_mib"],
                    "rss_growth_mib": growth,
                    **{f"timed_{k}": v for k, v in timed.items() if k not in ("seconds",)},
                }
                rows.append(row)
                print(
                    f"{name:16s} {mb:7.1f} {reader:13s} {timed['seconds']:8.3f} "
                    f"{traced['traced_peak_mib']:10.1f} {growth:9.1f}  "
                    f"{timed['error']}: {(timed['message'] or '')[:70]}"
                )
            path.unlink()
    bad = [r for r in rows if r["timed_error"] != "ModelFormatError"]
    if bad:
        print(f"NOT REFUSED with ModelFormatError: {[(r['file'], r['reader']) for r in bad]}")
    out = (
        Path(args.out)
        if args.out
        else (HERE / "results" / f"hostile-files-{time.strftime('%Y%m%d-%H%M%S')}.json")
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    import platform

    out.write_text(
        json.dumps(
            {
                "size_mb": args.size_mb,
                "python": sys.version,
                "machine": platform.platform(),
                "cpus": os.cpu_count(),
                "rows": rows,
            },
            indent=1,
        )
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
