"""Data-parallel training: several devices, several processes, the same model.

    python examples/multi_device.py                  # 4 host CPU devices, one process
    python examples/multi_device.py --processes 2    # 2 local processes on 127.0.0.1

The first form splits the rows of the shipped breast-cancer data over 4 simulated CPU
devices (``jaxboost.sharding.use_cpu_devices(4)``) and compares the model with the one-device model,
with float sums and with ``quantize=True`` (exact sums: bit for bit). The second starts
``--processes`` copies of this script as one JAX distributed job on 127.0.0.1, each
process holding its share of the rows, and compares the model they save with the
one-process model. Both print how many bytes of histograms are summed across devices
per tree: the communication of data-parallel training, independent of the row count.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", type=int, default=4, help="host CPU devices (one process)")
    ap.add_argument("--processes", type=int, default=0, help="local processes (0: none)")
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--max-depth", type=int, default=4)
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def shares(n_rows, n_processes):
    edges = np.linspace(0, n_rows, n_processes + 1).astype(int)
    return list(zip(edges[:-1], edges[1:]))


def settings(args):
    return dict(
        n_rounds=args.rounds,
        max_depth=args.max_depth,
        learning_rate=0.3,
        quantize=True,
        verbose=False,
    )


def communication(n_features, args, native):
    import jaxboost

    per_tree = jaxboost.distributed.histogram_bytes_per_tree(
        n_features, args.max_depth, 256, subtraction=native
    )
    print(
        f"histograms summed across devices: {per_tree:,} bytes per tree "
        f"({n_features} features x 256 bins x 2 float64 sums, "
        f"{'smaller child of each split' if native else 'every node'} per level), "
        f"{per_tree * args.rounds / 1e6:.1f} MB for {args.rounds} rounds; "
        f"independent of the number of rows"
    )


def one_process(args):
    import jax
    from jax.sharding import Mesh

    import jaxboost
    from jaxboost.datasets import load_breast_cancer
    from jaxboost.parallel.sharding import use_cpu_devices
    from jaxboost.training.data import use_native as _use_native

    if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
        use_cpu_devices(args.devices)  # before any JAX computation

    X, y, _ = load_breast_cancer()
    devices = jax.devices()
    if len(devices) < args.devices:
        sys.exit(
            f"JAX has {len(devices)} device(s); XLA_FLAGS asks for fewer than "
            f"{args.devices} (--xla_force_host_platform_device_count)"
        )
    mesh = Mesh(np.array(devices[: args.devices]), ("rows",))
    print(
        f"{len(X)} rows x {X.shape[1]} features, {args.devices} devices: "
        f"{[str(d) for d in mesh.devices]}"
    )
    for quantize in (False, True):
        kw = dict(settings(args), quantize=quantize)
        t0 = time.perf_counter()
        one = jaxboost.train("logistic", X, y, **kw)
        t1 = time.perf_counter()
        many = jaxboost.train("logistic", X, y, mesh=mesh, **kw)
        t2 = time.perf_counter()
        a = one.predict(X, output_margin=True)
        b = many.predict(X, output_margin=True)
        print(
            f"quantize={quantize!s:5}  1 device {t1 - t0:5.1f} s, {args.devices} devices "
            f"{t2 - t1:5.1f} s (compilation included)  max |margin difference| "
            f"{np.abs(a - b).max():.3g}  bit-identical: {bool(np.array_equal(a, b))}"
        )
    communication(X.shape[1], args, _use_native())


def launch(args):
    """Start ``args.processes`` workers of this script as one JAX job on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ)  # one CPU device per process (JAX's default)
    out = tempfile.mkdtemp(prefix="jaxboost_multi_")
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--worker",
                str(i),
                "--port",
                str(port),
                "--processes",
                str(args.processes),
                "--out",
                out,
                "--rounds",
                str(args.rounds),
                "--max-depth",
                str(args.max_depth),
            ],
            env=env,
        )
        for i in range(args.processes)
    ]
    try:
        codes = [p.wait(timeout=600) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    if any(codes):
        sys.exit(f"worker exit codes {codes}")

    import jaxboost
    from jaxboost.datasets import load_breast_cancer

    X, y, _ = load_breast_cancer()
    joint = jaxboost.load(os.path.join(out, "model.json"))
    alone = jaxboost.train("logistic", X, y, **settings(args))
    a = alone.predict(X, output_margin=True)
    b = joint.predict(X, output_margin=True)
    print(
        f"{args.processes} processes vs one process on all rows (quantize=True): "
        f"bit-identical: {bool(np.array_equal(a, b))}"
    )


def worker(args):
    import jaxboost
    from jaxboost.datasets import load_breast_cancer
    from jaxboost.training.data import use_native as _use_native

    # The coordinator listens on 127.0.0.1 only; for several hosts, give process 0's
    # private address (see docs/scale-out.md: trusted networks only).
    jaxboost.distributed.initialize(f"127.0.0.1:{args.port}", args.processes, args.worker)
    X, y, _ = load_breast_cancer()
    lo, hi = shares(len(X), args.processes)[args.worker]
    t0 = time.perf_counter()
    bst = jaxboost.train("logistic", X[lo:hi], y[lo:hi], **settings(args))
    took = time.perf_counter() - t0
    bst.save(os.path.join(args.out, "model.json"))  # written by process 0 only
    if args.worker == 0:
        print(
            f"process 0 of {args.processes}: rows {lo}..{hi - 1} of {len(X)}, "
            f"{len(bst)} trees in {took:.1f} s (compilation included)"
        )
        communication(X.shape[1], args, _use_native())
    jaxboost.distributed.shutdown()


def main(argv=None):
    args = parse(argv)
    if args.worker is not None:
        worker(args)
    elif args.processes > 0:
        launch(args)
    else:
        one_process(args)


if __name__ == "__main__":
    main()
