"""What the per-round non-finite checks cost: the same training in two checkouts.

Every round checks, on the device, the loss's g and h before and after the sample
weight, the loss's value, the round's trees and the new margins, and the counts ride on
the per-chunk flag transfer (``jaxboost.engine.round.BAD_CAUSES``). This script times a
round with and without them: it trains the same problem with this checkout and with
another one (``--base``, e.g. a worktree of the commit before the checks), each in its
own subprocess, interleaved (base, this, base, this, ...), and prints the median
seconds per round of each and their ratio.

A round's time is ``(t(n_rounds) - t(10)) / (n_rounds - 10)`` of warm calls (compile
excluded). Losses: a plain callable (its value costs one more vmapped evaluation) and
softmax with 5 classes (5 trees per round).

Run: ``python benchmarks/round_checks.py --base /path/to/other/checkout [--rows 200000]``
on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CHILD = r"""
import json, sys, time
import jax.numpy as jnp
import numpy as np
import jaxboost

rows, rounds, loss_name = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(0)
X = rng.normal(size=(rows, 28)).astype(np.float32)
z = X[:, 0] + 0.5 * X[:, 1] - 0.3 * X[:, 2]
if loss_name == "softmax":
    loss, y = "softmax", np.digitize(z, [-1.0, -0.3, 0.3, 1.0]).astype(np.float32)
else:
    def loss(y, f):  # logistic, written by hand
        return jnp.logaddexp(0.0, f) - y * f
    y = (z + rng.normal(size=rows) > 0).astype(np.float32)
kw = dict(max_depth=6, verbose=False)

def timed(n):
    t = time.perf_counter()
    jaxboost.train(loss, X, y, n_rounds=n, **kw)
    return time.perf_counter() - t

timed(10)  # compile
short, long = timed(10), timed(rounds)
print(json.dumps((long - short) / (rounds - 10)))
"""


def per_round(path, rows, rounds, loss) -> float:
    env = dict(os.environ, PYTHONPATH=path, JAX_PLATFORMS="cpu")
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(rows), str(rounds), loss],
        env=env,
        cwd=path,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the checkout to compare with")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--losses", default="callable,softmax")
    args = ap.parse_args()
    for loss in args.losses.split(","):
        times = {"base": [], "this": []}
        for _ in range(args.repeats):
            for name, path in (("base", args.base), ("this", ROOT)):
                times[name].append(per_round(path, args.rows, args.rounds, loss))
        b, t = statistics.median(times["base"]), statistics.median(times["this"])
        print(
            f"{loss:9s} rows={args.rows} depth 6: base {1e3 * b:.1f} ms/round, "
            f"this {1e3 * t:.1f} ms/round, ratio {t / b:.3f}  "
            f"(runs: base {[round(1e3 * v, 1) for v in times['base']]}, "
            f"this {[round(1e3 * v, 1) for v in times['this']]})",
            flush=True,
        )


if __name__ == "__main__":
    main()
