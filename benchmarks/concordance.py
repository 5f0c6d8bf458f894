"""Harrell's concordance index: the ``cindex`` metric and ``concordance_index``.

Times, on survival labels of N rows (70 % events, continuous times), the float32
``cindex`` metric as training evaluates it (one compiled program, warm) and the float64
``jaxboost.survival.concordance_index`` (warm, its size bucket compiled), against the
same sums over every pair in NumPy float64, blocks of 2,048 rows: what a user would
write without an O(N log N) routine (XGBoost has no C-index; lifelines' and
scikit-survival's are not dependencies). A size whose every-pair time would pass
``--pairs-max`` rows is skipped for that column. The values of the three agree to
float32 rounding. Prints a table and writes
``benchmarks/results/concordance-<timestamp>.json``; nothing is asserted.

    python benchmarks/concordance.py
    python benchmarks/concordance.py --sizes 2000,20000 --pairs-max 20000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _timing import timed  # noqa: E402  (benchmarks/_timing.py)


def by_pairs(y, r, block=2048):
    """Harrell's C over every pair, NumPy float64, in blocks of event rows."""
    t = np.abs(y)
    ev = np.flatnonzero(y > 0)
    num = den = 0.0
    for s in range(0, ev.size, block):
        i = ev[s : s + block]
        comparable = t[None, :] > t[i, None]
        score = (r[i, None] > r[None, :]) + 0.5 * (r[i, None] == r[None, :])
        num += float(np.sum(comparable * score))
        den += float(np.sum(comparable))
    return num / den


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2000,20000,100000,1000000")
    ap.add_argument("--pairs-max", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import jax
    import jax.numpy as jnp
    from jaxboost.survival import concordance_index

    from jaxboost.metrics.survival import _cindex

    metric = jax.jit(_cindex)
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        rng = np.random.default_rng(0)
        t = rng.exponential(size=n)
        y = np.where(rng.random(n) < 0.7, t, -t)
        r = rng.normal(size=n) - 0.3 * np.log(t)
        yj, rj, wj = (jnp.asarray(a, jnp.float32) for a in (y, r, np.ones(n)))
        m_s, m_v = timed(lambda a=(yj, rj, wj): float(metric(*a)), args.repeats)
        h_s, h_v = timed(lambda a=(y, r): concordance_index(*a), args.repeats)
        p_s = p_v = None
        if n <= args.pairs_max:  # once: nothing to compile
            p_s, p_v = timed(lambda a=(y, r): by_pairs(*a), 1, warm=False)
        rows.append(
            dict(
                rows=n,
                metric_s=m_s,
                metric=m_v,
                function_s=h_s,
                function=h_v,
                pairs_s=p_s,
                pairs=p_v,
            )
        )
        pairs = "-" if p_s is None else f"{p_s:.3f}"
        print(
            f"{n:>9,}  metric {m_s:8.4f} s  concordance_index {h_s:8.4f} s  "
            f"every pair {pairs:>8} s  C {h_v:.6f}",
            flush=True,
        )
    out = (
        Path(args.out)
        if args.out
        else HERE / "results" / ("concordance-" + time.strftime("%Y%m%d-%H%M%S") + ".json")
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    machine = dict(
        cores=os.cpu_count(),
        platform=platform.platform(),
        jax_platforms=os.environ.get("JAX_PLATFORMS"),
    )
    out.write_text(
        json.dumps(
            dict(
                command=["python", "benchmarks/concordance.py"],
                settings=vars(args),
                machine=machine,
                rows=rows,
            ),
            indent=1,
        )
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
