"""Peak memory split into private and shared pages, jaxboost against XGBoost ``hist``.

``run.py`` and ``everyday.py`` report a process's whole peak (``VmHWM``). That figure
counts two kinds of pages:

* **private** (``RssAnon``): the process's own memory: the data, the libraries' heaps,
  the binned matrix, gradients, scratch, models. It is what a second process cannot
  share and what runs a machine out of memory.
* **file-backed** (``RssFile``): pages of the shared libraries' code and read-only data
  that the process has touched. They are page cache, shared with every process that
  maps the same library, and the kernel reclaims them under pressure. JAX's runtime
  (``libjax_common.so``, with XLA and LLVM) touches more of them than XGBoost's
  library does, and a compile touches more again.

Each (workload, library) runs in a fresh process; a thread samples
``/proc/self/status`` every 5 ms during the fit and reports the largest ``VmRSS``,
``RssAnon`` and ``RssFile`` seen, with ``VmHWM`` at the end (the ``VmHWM`` figure is
the one the other scripts report; the sampled ones can miss a peak shorter than 5 ms).
jaxboost runs with its persistent compilation cache off, as in the other scripts.

Workloads: ``W1`` (run.py's: make_classification 1M x 28 float32, logistic, depth 6,
100 rounds, lr 0.1, 256 bins, 2 threads; its data in memory before the fit, as there)
and everyday.py's rows by name (``digits``, ``forest_digits``, ``cv``, ...; their fits,
warm fits and evaluation as there).

    python benchmarks/memory_split.py                     # W1,digits,forest_digits,cv
    python benchmarks/memory_split.py --workloads W1

Linux only. Prints a table and writes ``benchmarks/results/memory-split-<stamp>.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
TAG = "@@SPLIT "
LIBS = ("jaxboost", "xgboost")
FIELDS = ("VmRSS", "RssAnon", "RssFile")


def status_mib() -> dict:
    """``VmHWM``, ``VmRSS``, ``RssAnon``, ``RssFile`` of this process, MiB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key = line.split(":", 1)[0]
            if key in FIELDS or key == "VmHWM":
                out[key] = int(line.split()[1]) / 1024
    return out


class Sampler:
    """Largest ``VmRSS``, ``RssAnon`` and ``RssFile`` seen every ``every`` seconds."""

    def __init__(self, every=0.005):
        self.every, self.peak, self._stop = every, dict.fromkeys(FIELDS, 0.0), False
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop:
            self._take()
            time.sleep(self.every)

    def _take(self):
        for k, v in status_mib().items():
            if k in self.peak:
                self.peak[k] = max(self.peak[k], v)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop = True
        self._thread.join()
        self._take()


def _w1_fit(lib: str, threads: int):
    import numpy as np
    import run

    spec = run.dataset_spec("W1", run.W1_ROWS)
    run.ensure_dataset(spec["gen"])
    X, y, Xt, _ = run.load_dataset(spec)
    if lib == "jaxboost":
        import jax

        import jaxboost

        def fit():
            b = jaxboost.train(
                "logistic",
                X,
                y,
                n_rounds=100,
                learning_rate=run.LEARNING_RATE,
                max_depth=run.MAX_DEPTH,
                reg_lambda=run.REG_LAMBDA,
                min_child_weight=run.MIN_CHILD_WEIGHT,
                max_bin=run.MAX_BIN,
                verbose=False,
            )
            jax.block_until_ready(b.trees)
            return np.asarray(b.predict(Xt, output_margin=True))

        return fit
    import xgboost as xgb

    params = dict(run.xgboost_params(nthread=threads), objective="binary:logistic")

    def fit():
        d = xgb.QuantileDMatrix(X, label=y, max_bin=run.MAX_BIN, nthread=threads)
        b = xgb.train(params, d, num_boost_round=100)
        return b.inplace_predict(Xt, predict_type="margin")

    return fit


def _everyday_fit(row: str, lib: str, threads: int):
    import everyday

    everyday.ensure_data(row, False)
    data = everyday.load_data(row, False)
    fit, evaluate = everyday.WORKERS[lib](row, data, everyday.n_rounds(row, False), threads)

    def run_all():  # as an everyday.py worker: a cold fit, 3 warm fits, the evaluation
        model = fit()
        for _ in range(3):
            model = fit()
        return evaluate(model)

    return run_all


def worker(workload: str, lib: str, threads: int) -> None:
    before = status_mib()
    fit = _w1_fit(lib, threads) if workload == "W1" else _everyday_fit(workload, lib, threads)
    loaded = status_mib()
    with Sampler() as s:
        fit()
    end = status_mib()
    res = dict(
        workload=workload,
        lib=lib,
        start=before,
        loaded=loaded,
        end=end,
        peak=dict(s.peak, VmHWM=end["VmHWM"]),
    )
    print(TAG + json.dumps(res), flush=True)


def run_one(workload: str, lib: str, threads: int) -> dict:
    env = dict(
        os.environ,
        JAX_PLATFORMS="cpu",
        JAXBOOST_COMPILATION_CACHE="0",
        OMP_NUM_THREADS=str(threads),
    )
    cmd = [sys.executable, __file__, "--_worker", workload, lib, str(threads)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith(TAG)), None)
    if line is None:
        raise RuntimeError(f"{workload}/{lib} worker failed:\n{out.stderr[-3000:]}")
    return json.loads(line[len(TAG) :])


def table(results: list) -> str:
    by = {(r["workload"], r["lib"]): r for r in results}
    head = (
        f"{'workload':14s} {'library':9s} {'VmHWM':>7s} {'private':>8s} {'file':>6s}"
        f"   {'VmHWM/XGB':>9s} {'private/XGB':>11s} {'file-XGB':>8s}"
    )
    lines = [head, "-" * len(head)]
    for (w, lib), r in by.items():
        p = r["peak"]
        x = by.get((w, "xgboost"))
        ratios = ""
        if x is not None:
            q = x["peak"]
            ratios = (
                f"   {p['VmHWM'] / q['VmHWM']:9.2f} {p['RssAnon'] / q['RssAnon']:11.2f}"
                f" {p['RssFile'] - q['RssFile']:+8.0f}"
            )
        lines.append(
            f"{w:14s} {lib:9s} {p['VmHWM']:7.0f} {p['RssAnon']:8.0f} {p['RssFile']:6.0f}{ratios}"
        )
    lines.append(
        "MiB. VmHWM: the whole process's peak (what run.py / everyday.py report); private: "
        "the largest RssAnon sampled every 5 ms; file: the largest RssFile (shared library "
        "pages touched); file-XGB: jaxboost's file pages minus XGBoost's."
    )
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", default="W1,digits,forest_digits,cv")
    ap.add_argument("--repeats", type=int, default=1, help="processes per (workload, library)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    results = []
    for w in args.workloads.split(","):
        for _ in range(args.repeats):
            for lib in LIBS:
                r = run_one(w, lib, args.threads)
                p = r["peak"]
                print(
                    f"[{w}] {lib}: VmHWM {p['VmHWM']:.0f}, private {p['RssAnon']:.0f}, "
                    f"file {p['RssFile']:.0f} MiB",
                    flush=True,
                )
                results.append(r)
    # medians over repeats, per (workload, library)
    merged = []
    for w in args.workloads.split(","):
        for lib in LIBS:
            runs = [r for r in results if r["workload"] == w and r["lib"] == lib]
            peak = {k: sorted(r["peak"][k] for r in runs)[len(runs) // 2] for k in runs[0]["peak"]}
            merged.append(dict(workload=w, lib=lib, peak=peak))
    print()
    print(table(merged))
    (HERE / "results").mkdir(exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = HERE / "results" / f"memory-split-{stamp}.json"
    path.write_text(json.dumps(dict(runs=results, medians=merged), indent=1) + "\n")
    print(f"raw figures: {path}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--_worker":
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        sys.exit(main())
