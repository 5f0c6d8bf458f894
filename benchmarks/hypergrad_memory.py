"""Peak memory of a hypergradient against a plain training run (issue 19).

Same method as ``benchmarks/memory.py``: every case runs in its **own fresh Python
process** (data generated there, one call, nothing else), started with
``subprocess.Popen`` and collected with ``os.wait4``, whose ``ru_maxrss`` is that
child's peak resident memory.

Cases (squared loss, 100,000 training rows x 20 features, 20,000 validation rows,
200 rounds, depth 6, 256 bins, learning rate 0.1, one JAX CPU device; both processes
hold the same training and validation arrays):

* ``train``: ``jaxboost.train``;
* ``hypergrad``: ``jaxboost.hypergrad`` with the same settings, ``params={"reg_lambda":
  1.0, "learning_rate": 0.1}``, ``val_loss="rmse"``: it trains the same run, then
  replays it (``jaxboost.engine.replay``, checkpointed in ``ceil(sqrt(200)) = 15``-round
  segments) for the value and gradient.

The hypergrad worker also prints XLA's own memory estimate of the compiled replay
program (``jaxboost.tuning.hypergrad._value_and_grad``: ``memory_analysis()`` of its
lowered, compiled form): arguments, outputs and temporaries.

Acceptance target (issue 19): the hypergrad peak at most 3 x the training peak.

Usage::

    python benchmarks/hypergrad_memory.py                 # both cases
    python benchmarks/hypergrad_memory.py --rows 20000    # a smaller run

Prints a table and writes ``benchmarks/results/hypergrad-memory-<timestamp>.json``.
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
TAG = "@@HGMEM "
MIB = 2**20
CASES = ("train", "hypergrad")
SETTINGS = dict(n_rounds=200, max_depth=6, learning_rate=0.1, reg_lambda=1.0)
TARGET_RATIO = 3.0


def make_data(rows: int, features: int, val_rows: int):
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows + val_rows, features), dtype=np.float32)
    y = (
        X[:, :5].sum(axis=1)
        + np.sin(3 * X[:, 5])
        + 0.5 * rng.standard_normal(len(X), dtype=np.float32)
    ).astype(np.float32)
    return X[:rows], y[:rows], X[rows:], y[rows:]


def worker(case: str, rows: int, features: int, val_rows: int) -> None:
    X, y, Xv, yv = make_data(rows, features, val_rows)
    import jaxboost

    t0 = time.perf_counter()
    out = dict(case=case, data_bytes=int(X.nbytes + y.nbytes + Xv.nbytes + yv.nbytes))
    if case == "train":
        bst = jaxboost.train("squared", X, y, verbose=False, **SETTINGS)
        out["val_margin_head"] = [float(v) for v in bst.predict(Xv[:4], output_margin=True)]
    else:
        kw = dict(SETTINGS)
        params = {k: kw.pop(k) for k in ("reg_lambda", "learning_rate")}
        res = jaxboost.hypergrad(
            "squared", X, y, Xv, yv, params=params, val_loss="rmse", verbose=False, **kw
        )
        out.update(value=res.value, grads=res.grads, max_margin_diff=res.max_margin_diff)
        out["seconds_before_xla_estimate"] = time.perf_counter() - t0
        from jaxboost.tuning.hypergrad import _value_and_grad

        rp = res.replay
        m = _value_and_grad.lower(rp.spec, rp.data, rp.theta0).compile().memory_analysis()
        if m is not None:
            out["xla"] = {
                k: int(getattr(m, k))
                for k in (
                    "argument_size_in_bytes",
                    "output_size_in_bytes",
                    "temp_size_in_bytes",
                    "generated_code_size_in_bytes",
                    "alias_size_in_bytes",
                )
                if hasattr(m, k)
            }
    out["seconds"] = time.perf_counter() - t0
    print(TAG + json.dumps(out), flush=True)


def launch(case: str, args) -> dict:
    """One case in a fresh process; its own peak RSS and CPU seconds by ``wait4``."""
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--_worker",
        case,
        "--rows",
        str(args.rows),
        "--features",
        str(args.features),
        "--val-rows",
        str(args.val_rows),
    ]
    return launch_measured(cmd, case, args.timeout, TAG)


def table(results: dict, args) -> str:
    out = [
        f"{args.rows:,} x {args.features} training rows, {args.val_rows:,} validation rows, "
        f"{SETTINGS['n_rounds']} rounds, depth {SETTINGS['max_depth']}, squared loss",
        f"{'case':10s}  {'peak MiB':>9s}  {'seconds':>8s}  {'CPU s':>7s}",
        "-" * 42,
    ]
    for name, r in results.items():
        if "error" in r:
            out.append(f"{name:10s}  failed (rc {r['returncode']}): {r['error'].strip()[-300:]}")
            continue
        out.append(
            f"{name:10s}  {r['peak_bytes'] / MIB:9,.0f}  {r['seconds']:8.1f}  {r['cpu_s']:7.1f}"
        )
    tr, hg = results.get("train"), results.get("hypergrad")
    if tr and hg and "error" not in tr and "error" not in hg:
        ratio = hg["peak_bytes"] / tr["peak_bytes"]
        out.append(
            f"ratio hypergrad / train peak: {ratio:.2f} (target <= {TARGET_RATIO:g}: "
            f"{'met' if ratio <= TARGET_RATIO else 'OVER'})"
        )
        x = hg.get("xla")
        if x:
            out.append(
                "XLA estimate of the replay program (MiB): "
                + ", ".join(
                    f"{k.replace('_size_in_bytes', '')} {v / MIB:,.1f}" for k, v in x.items()
                )
            )
    out.append(
        "peak MiB: the worker's peak RSS (ru_maxrss by wait4), interpreter, JAX and "
        "data included; seconds: the call, compile included (one call per process)."
    )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--val-rows", type=int, default=20_000)
    ap.add_argument("--timeout", type=float, default=3600.0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--_worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._worker:
        worker(args._worker, args.rows, args.features, args.val_rows)
        return
    names = [c for c in args.cases.split(",") if c]
    if set(names) - set(CASES):
        raise SystemExit(f"unknown case(s) {sorted(set(names) - set(CASES))}; known {CASES}")
    results = {}
    for name in names:
        r = results[name] = launch(name, args)
        print(
            f"{name}: peak {r['peak_bytes'] / MIB:,.0f} MiB, wall {r['wall_s']:.1f} s"
            + (" FAILED" if "error" in r else ""),
            flush=True,
        )
    text = table(results, args)
    print(text)
    sys.path.insert(0, str(HERE))
    from run import machine_info

    path = (
        Path(args.out)
        if args.out
        else HERE / "results" / f"hypergrad-memory-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            dict(
                machine=machine_info(),
                settings=SETTINGS,
                args=vars(args),
                results=results,
                table=text,
            ),
            indent=1,
            default=str,
        )
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
