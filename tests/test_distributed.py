"""Training across processes: 2 local processes on 127.0.0.1 give the one-process model;
a killed process makes the other exit with a clear error, and a restart from the last
checkpoint finishes the job. Plus the communication volume stated in docs/scale-out.md."""

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest
from conftest import opt_level_env, session_cache_env
from jax.sharding import Mesh

import jaxboost
from jaxboost import distributed
from jaxboost.engine.round import N_CENSUS

sys.path.insert(0, str(Path(__file__).parent))
import distributed_worker as dw  # noqa: E402

WORKER = Path(__file__).parent / "distributed_worker.py"
LAUNCH_TIMEOUT = 240  # seconds for one launch of the processes, compile included


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_CACHE = {}


def launch(out, *args, processes=2, **env_extra):
    """Start the worker processes (own session each, output to files).

    Launches share a persistent compilation cache in a temporary directory (the same
    shapes recur: only the first launch compiles), never the user's cache.
    """
    env = dict(
        os.environ,
        JAX_PLATFORMS="cpu",
        JAXBOOST_COMPILATION_CACHE="1",
        JAXBOOST_CACHE_DIR=str(_CACHE["dir"]),
        PYTHONUNBUFFERED="1",
        **env_extra,
    )
    env.pop("XLA_FLAGS", None)
    env.update(opt_level_env())  # the suite's XLA optimization level
    port = free_port()
    procs = []
    for i in range(processes):
        log = open(out / f"log_{i}.txt", "ab")
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    str(WORKER),
                    "--port",
                    str(port),
                    "--process-id",
                    str(i),
                    "--processes",
                    str(processes),
                    "--out",
                    str(out),
                    *args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        )
        log.close()
    return procs


def stop(procs):
    """Kill every child still running (its whole session) and reap it."""
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.wait()


def wait(procs, out, timeout=LAUNCH_TIMEOUT):
    deadline = time.monotonic() + timeout
    try:
        for p in procs:
            p.wait(timeout=max(deadline - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        pytest.fail(f"processes still running after {timeout} s:\n" + logs(out))
    finally:
        stop(procs)
    codes = [p.returncode for p in procs]
    assert codes == [0] * len(procs), f"exit codes {codes}:\n" + logs(out)


def signal_and_time_exit(procs, sig):
    """Send ``sig`` to process 1; seconds until process 0 exits (fails after 90 s)."""
    os.killpg(procs[1].pid, sig)
    t0 = time.monotonic()
    try:
        procs[0].wait(timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail(f"process 0 still runs 90 s after process 1 got signal {sig}")
    return time.monotonic() - t0


def logs(out):
    return "\n".join(
        f"--- {f.name}\n{f.read_text(errors='replace')[-3000:]}"
        for f in sorted(out.glob("log_*.txt"))
    )


def reference(config, rounds):
    """The model one process trains on all the rows (one device, no mesh)."""
    X, y, w = dw.make_data(config.split("-")[0])
    bst = dw.fit(config, X, y, w, (0, dw.N_ROWS), rounds)
    return X, bst


# logistic-qa-h: quantized, data passed as global jax.Arrays, a host metric beside
# logloss; softmax: float sums, numpy rows.
CONFIGS = ("logistic-qa-h", "softmax")


@pytest.fixture(scope="module", autouse=True)
def compilation_cache(tmp_path_factory):
    _CACHE["dir"] = session_cache_env().get("JAXBOOST_CACHE_DIR") or tmp_path_factory.mktemp(
        "xla_cache"
    )
    yield
    _CACHE.clear()


@pytest.fixture(scope="module")
def two_process_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("two_processes")
    wait(launch(out, "--configs", ",".join(CONFIGS), "--rounds", "12"), out)
    return out


@pytest.mark.parametrize("config", CONFIGS)
def test_two_processes_train_the_one_process_model(two_process_run, config):
    """Process 0 holds 62 % of the rows, process 1 the rest; row and column sampling
    on; each process holds part of the evaluation set."""
    out = two_process_run
    X, ref = reference(config, 12)
    want = ref.predict(X, output_margin=True)
    for p in (0, 1):
        got = np.load(out / f"{config}_margins_{p}.npy")
        if "-q" in config:  # quantized: exact sums, bit for bit
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        # Metrics over the whole evaluation set, the same on every process.
        hist = np.load(out / f"{config}_history_{p}.npy")
        np.testing.assert_allclose(
            hist, next(iter(ref.history["validation_0"].values())), rtol=1e-5
        )
        if "-h" in config:  # a host metric: every process scores the whole set, exactly
            np.testing.assert_array_equal(
                np.load(out / f"{config}_host_{p}.npy"),
                ref.history["validation_0"]["average_precision_score"],
            )
    # Process 0 wrote the model file; it predicts what it predicted in training.
    saved = jaxboost.load(out / f"{config}.json")
    np.testing.assert_array_equal(
        saved.predict(X, output_margin=True), np.load(out / f"{config}_margins_0.npy")
    )


def test_killed_process_makes_the_other_exit_clearly_and_a_restart_finishes(tmp_path):
    out, ckpt = tmp_path, tmp_path / "ckpt.json"
    rounds = 40
    procs = launch(
        out,
        "--configs",
        "logistic-qa",
        "--rounds",
        str(rounds),
        "--slow",
        "0.2",
        "--checkpoint",
        str(ckpt),
    )
    try:
        deadline = time.monotonic() + LAUNCH_TIMEOUT
        while not ckpt.exists() and time.monotonic() < deadline:
            if any(p.poll() is not None for p in procs):
                pytest.fail("a process ended early:\n" + logs(out))
            time.sleep(0.2)
        assert ckpt.exists(), "no checkpoint was written:\n" + logs(out)
        time.sleep(1.0)  # mid-training
        assert all(p.poll() is None for p in procs), logs(out)
        took = signal_and_time_exit(procs, signal.SIGKILL)
    finally:
        stop(procs)
    log0 = (out / "log_0.txt").read_text(errors="replace")
    assert procs[0].returncode == distributed.PEER_LOST_EXIT_CODE, log0[-3000:]
    assert "lost contact with" in log0 and "init_model=jaxboost.load" in log0
    assert re.search(r"last checkpoint, .*ckpt\.json.*holds \d+ round", log0), log0[-2000:]
    print(f"\nthe surviving process exited {took:.1f} s after the kill (code 75)")
    assert took < 60, f"took {took:.1f} s to exit"
    done = jaxboost.load(ckpt).train_state["rounds"]
    assert 0 < done < rounds

    # Restart both processes from the checkpoint: the job finishes, and the model is
    # the one an uninterrupted single process trains (quantized: bit for bit).
    for f in out.glob("log_*.txt"):
        f.unlink()
    wait(
        launch(
            out,
            "--configs",
            "logistic-qa",
            "--rounds",
            str(rounds),
            "--checkpoint",
            str(ckpt),
            "--resume",
        ),
        out,
    )
    X, ref = reference("logistic-qa", rounds)
    for p in (0, 1):
        np.testing.assert_array_equal(
            np.load(out / f"logistic-qa_margins_{p}.npy"), ref.predict(X, output_margin=True)
        )


def test_frozen_process_is_noticed_by_the_heartbeat(tmp_path):
    """A peer that stops answering without closing its sockets (SIGSTOP: a hung host)
    leaves the collective waiting forever; the heartbeat watchdog ends the survivor."""
    procs = launch(
        tmp_path,
        "--configs",
        "logistic-qa",
        "--rounds",
        "200",
        "--slow",
        "0.1",
        JAXBOOST_PEER_TIMEOUT="5",
    )
    try:
        deadline = time.monotonic() + LAUNCH_TIMEOUT
        log0 = tmp_path / "log_0.txt"
        while "training" not in log0.read_text(errors="replace"):
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                pytest.fail("training did not start:\n" + logs(tmp_path))
            time.sleep(0.2)
        time.sleep(2.0)
        took = signal_and_time_exit(procs, signal.SIGSTOP)
    finally:
        stop(procs)  # SIGKILL ends stopped processes too
    text = log0.read_text(errors="replace")
    assert procs[0].returncode == distributed.PEER_LOST_EXIT_CODE, text[-3000:]
    assert re.search(r"lost contact with process 1 \(no heartbeat for \d+ s\)", text), text[-2000:]
    print(f"\nthe surviving process exited {took:.1f} s after its peer froze (timeout 5 s)")
    # The silence counts from the last beat seen, up to 2 heartbeat periods before the stop.
    assert 5 - 2.5 <= took < 60


def test_histogram_bytes_per_tree_is_what_the_compiled_round_sums(compile_counter):
    """docs/scale-out.md's communication volume: every all-reduce in the compiled round."""
    devices = jax.devices("cpu")
    if len(devices) < 4:
        pytest.skip("needs 4 host CPU devices")
    from jaxboost.training import data, loop

    mesh = Mesh(np.array(devices[:4]), ("rows",))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 5)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.float32)
    seen = {}
    real = loop.run_chunk

    def spy(*a, **k):
        seen["args"] = (a, k)
        return real(*a, **k)

    loop.run_chunk = spy
    try:
        jaxboost.train("logistic", X, y, n_rounds=1, max_depth=3, max_bin=32, mesh=mesh)
    finally:
        loop.run_chunk = real
    a, k = seen["args"]
    hlo = real.lower(*a, **k).compile().as_text()
    size = {"f64": 8, "f32": 4, "s32": 4, "pred": 1}
    total = 0
    for line in hlo.splitlines():
        if "all-reduce(" in line or "all-reduce-start(" in line:
            result = line.split("=", 1)[1].split("all-reduce")[0]
            for dtype, dims in re.findall(r"(f64|f32|s32|pred)\[([\d,]*)\]", result):
                total += size[dtype] * int(np.prod([int(d) for d in dims.split(",") if d]))
    subtraction = data.use_native()
    # The compiled round holds the root's all-reduce once and the level loop's once (it
    # runs max_depth - 1 = 2 times per tree); + 36 bytes: the round's nine int32 row
    # counts (autodiff.CENSUS: non-finite g or h, Hessians that cannot help; then the
    # row counts of engine.round.BAD_CAUSES: all but the trees' two, the same on every
    # device).
    per_node = 8 * 2 * 5 * 32
    level = distributed.histogram_nodes_per_level(3, subtraction=subtraction) * per_node
    assert N_CENSUS - 2 == 9
    assert (
        total
        == distributed.histogram_bytes_per_tree(5, 3, 32, subtraction=subtraction) - level + 36
    )
    assert (
        distributed.histogram_bytes_per_tree(5, 3, 32, subtraction=subtraction)
        == per_node * (1 + 2 * (2 if subtraction else 4)) + 16
    )
