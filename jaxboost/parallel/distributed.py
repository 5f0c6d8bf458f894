r"""Training across processes (hosts) on JAX's own distributed runtime.

Every process runs the same program, holding its own rows::

    import jaxboost
    jaxboost.distributed.initialize("10.0.0.1:8476", num_processes=2, process_id=i)
    X, y = load_my_part(i)                         # this process's rows
    bst = jaxboost.train("logistic", X, y, n_rounds=200,
                         callbacks=[jaxboost.callbacks.Checkpoint("ckpt.json")])
    bst.save("model.json")                         # written by process 0

and every process gets the same model, the one a single process would train on all the
rows (within float rounding; bit for bit with ``quantize=True``, see
``jaxboost.engine.exact``). What ``train`` does when ``jax.process_count() > 1``:

* **Rows.** Each process's rows fill one block of a global array sharded over a 1-D mesh
  (by default: every device on GPU/TPU, one CPU device per process on CPU), padded with
  weight-0 rows to the largest process's count (``jax.make_array_from_process_local_data``).
  Histograms are summed with ``lax.psum`` across all devices of all processes: per tree,
  ``sum over levels d of 2**d * F * max_bin * 2`` float64 values (see
  ``histogram_bytes_per_tree``), independent of the number of rows.
* **Bin edges.** Each process sends a sample of its rows (all of them when the data is
  small, otherwise its share of ``jaxboost.engine.binning.QUANTILE_SAMPLE_ROWS``) to every
  process; all compute the same quantiles from the same gathered sample. Which features
  have missing values is agreed from every row.
* **Evaluation sets** are gathered to every process, so metrics are computed on all of
  their rows, identically everywhere, and early stopping stops every process at the same
  round. Any callback's stop request is shared too (the earliest round wins).
* **Files.** ``Checkpoint`` and ``Booster.save`` write on process 0 only.
* **A lost process.** A process that dies leaves the others waiting in a collective
  that can never finish. A heartbeat thread in every process (through the coordinator's
  key-value store) notices a peer that has been silent for ``JAXBOOST_PEER_TIMEOUT``
  seconds (default 30) and ends its own process with a message that says what happened
  and how to resume (exit code ``PEER_LOST_EXIT_CODE``), rather than hang. Restart every
  process with ``init_model=jaxboost.load(checkpoint)``.

Security: the coordinator and the collectives speak unauthenticated, unencrypted
protocols (gRPC and Gloo/NCCL over TCP). Use them on a trusted network only, and bind
the coordinator to a private address (``initialize`` binds it to the address it is
given, not to every interface).
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ..inputs.numbers import is_int
from .sharding import ROW_AXIS, padded_rows, row_sharding, shard_offsets

ENV_PEER_TIMEOUT = "JAXBOOST_PEER_TIMEOUT"
DEFAULT_PEER_TIMEOUT = 30.0
PEER_LOST_EXIT_CODE = 75  # EX_TEMPFAIL: try again (from the last checkpoint)
_HEARTBEAT_EVERY = 1.0


def initialize(
    coordinator_address: str,
    num_processes: int,
    process_id: int,
    *,
    bind_address: str | None = None,
    local_device_ids=None,
    heartbeat_timeout: int = 30,
    initialization_timeout: int = 120,
) -> None:
    """Join a multi-process JAX job (call once per process, before any JAX work).

    A thin wrapper over ``jax.distributed.initialize`` with safer defaults: process 0
    runs the coordinator bound to ``bind_address`` (default: ``coordinator_address``
    itself, not every interface as JAX's default ``[::]:port`` is), and JAX's own
    heartbeat gives up on a silent process after ``heartbeat_timeout`` seconds instead
    of 100.

    Args:
      coordinator_address: ``"host:port"`` of process 0, reachable from every process.
      num_processes: processes in the job.
      process_id: this process, in ``[0, num_processes)``.
      bind_address: ``"host:port"`` the coordinator listens on (process 0 only).
      local_device_ids: the accelerators this process uses (default: all visible).
      heartbeat_timeout: seconds of silence after which JAX declares a process dead.
      initialization_timeout: seconds to wait for every process to join.

    Example (two processes on one machine, each with a CPU device)::

        # process 0:
        jaxboost.distributed.initialize("127.0.0.1:8476", 2, 0)
        # process 1:
        jaxboost.distributed.initialize("127.0.0.1:8476", 2, 1)

    The coordinator and collectives are unauthenticated: trusted networks only.
    """
    for name, v in (("num_processes", num_processes), ("process_id", process_id)):
        if not is_int(v):
            raise TypeError(f"{name} must be an integer, got {type(v).__name__}")
    if not 0 <= process_id < num_processes:
        raise ValueError(f"process_id must be in [0, {num_processes}), got {process_id}")
    if not isinstance(coordinator_address, str) or ":" not in coordinator_address:
        raise ValueError(f"coordinator_address must be 'host:port', got {coordinator_address!r}")
    jax.distributed.initialize(
        coordinator_address,
        num_processes,
        process_id,
        local_device_ids=local_device_ids,
        coordinator_bind_address=bind_address or coordinator_address,
        heartbeat_timeout_seconds=int(heartbeat_timeout),
        initialization_timeout=int(initialization_timeout),
    )


def shutdown() -> None:
    """Leave the job: waits until every process has called it, then disconnects.

    Call it at the end of every process's program (all of them), so that no process
    exits while another still talks to the coordinator.
    """
    jax.distributed.shutdown()


def is_multiprocess() -> bool:
    """Whether this is one of several processes of a JAX distributed job."""
    return jax.process_count() > 1


def is_writer() -> bool:
    """Whether this process writes files (process 0, or the only process)."""
    return jax.process_index() == 0


def histogram_nodes_per_level(max_depth: int, *, subtraction: bool = True) -> int:
    """Nodes whose histograms one level below the root sums across devices.

    The tree builder runs levels ``1 .. max_depth - 1`` in one loop over arrays sized for
    the widest level (``jaxboost.engine.grow``), and the sum across devices covers that
    whole width every level: ``2**(max_depth - 2)`` smaller children with the
    subtraction trick (the native CPU kernel), else ``2**(max_depth - 1)`` nodes.

    >>> histogram_nodes_per_level(6), histogram_nodes_per_level(6, subtraction=False)
    (16, 32)
    """
    if max_depth <= 1:
        return 0
    return 2 ** (max_depth - 2) if subtraction else 2 ** (max_depth - 1)


def histogram_bytes_per_tree(
    n_features: int,
    max_depth: int,
    max_bin: int = 256,
    *,
    subtraction: bool = True,
    channels: int = 2,
) -> int:
    r"""Bytes of histograms summed across devices to grow one tree.

    A histogram of ``n`` nodes holds ``n * F * max_bin`` bins of ``channels`` float64
    sums (g and h for scalar trees); the number of rows does not enter. ``max_bin`` is
    the training program's bins per feature ``B`` (``BinEdges.n_bins``: the data's bin
    bucket, at most the ``max_bin`` parameter; 256 for continuous data of many rows). The root needs
    one, and each of the ``max_depth - 1`` deeper levels that split sums
    ``histogram_nodes_per_level`` nodes. The root's g and h totals add
    ``8 * channels`` bytes. A ring all-reduce moves about twice this in and out of each
    device.

    .. math:: \text{bytes} = 8 c F B \,(1 + (D - 1)\, n_{level}) + 8 c

    Example:
      >>> histogram_bytes_per_tree(28, 6)  # HIGGS-like: 28 features, depth 6
      9289744
      >>> histogram_bytes_per_tree(28, 6, subtraction=False)
      18464784
    """
    nodes = 1 + (max_depth - 1) * histogram_nodes_per_level(max_depth, subtraction=subtraction)
    return 8 * channels * n_features * max_bin * nodes + 8 * channels


# --- collectives between processes ------------------------------------------------------


def allgather(a) -> np.ndarray:
    """``(P, *a.shape)``: every process's ``a`` (same shape and dtype everywhere).

    A collective: every process must call it, in the same order as the others.

    Example (one process, so ``P = 1``):
      >>> allgather(np.arange(3)).tolist()
      [[0, 1, 2]]
    """
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(np.asarray(a), tiled=False))


def gather_rows(a: np.ndarray) -> np.ndarray:
    """Every process's rows of ``a`` (``(n_p, ...)``, any ``n_p``), concatenated in
    process order, on every process: ``(sum_p n_p, ...)``. A collective.

    Example (one process):
      >>> gather_rows(np.ones((2, 3), np.float32)).shape
      (2, 3)
    """
    a = np.asarray(a)
    counts = allgather(np.int64(a.shape[0]))
    top = int(counts.max())
    padded = np.zeros((top,) + a.shape[1:], a.dtype)
    padded[: a.shape[0]] = a
    parts = allgather(padded)
    return np.concatenate([parts[p, : counts[p]] for p in range(len(counts))])


def earliest_stop(stop):
    """The earliest round any process asked to stop at (``None``: none did). A
    collective.

    Example (one process):
      >>> earliest_stop(None), earliest_stop(7)
      (None, 7)
    """
    v = allgather(np.int64(-1 if stop is None else stop))
    asked = v[v >= 0]
    return int(asked.min()) if asked.size else None


# --- rows, meshes and bin edges ---------------------------------------------------------


def default_mesh() -> Mesh:
    """Every device of every process (GPU/TPU); on CPU, one device per process (one
    XLA CPU device already uses every core, see ``jaxboost.sharding``)."""
    devices = sorted(jax.devices(), key=lambda d: (d.process_index, d.id))
    if jax.default_backend() == "cpu":
        first = {}
        for d in devices:
            first.setdefault(d.process_index, d)
        devices = [first[p] for p in sorted(first)]
    return Mesh(np.array(devices), (ROW_AXIS,))


def check_process_mesh(mesh: Mesh) -> int:
    """Devices per process of a multi-process mesh (each process's devices must be
    contiguous along the axis, the same number for every process)."""
    procs = [d.process_index for d in mesh.devices.ravel()]
    P = jax.process_count()
    if sorted(set(procs)) != list(range(P)):
        raise ValueError(
            f"the mesh must include devices of every process (0..{P - 1}), "
            f"it has devices of processes {sorted(set(procs))}"
        )
    per = len(procs) // P
    if len(procs) % P or any(procs[i] != i // per for i in range(len(procs))):
        raise ValueError(
            "each process must hold the same number of the mesh's devices, "
            "in process order along the axis (process 0's devices first)"
        )
    return per


class RowLayout:
    """Where every process's rows live in the global row-sharded arrays.

    Attributes:
      mesh: the mesh (``None``: one device).
      counts: real rows of each process.
      block: rows per process after padding (its devices' shards together).
      offsets: ``(n_shards,)`` int32 global row number of each shard's first row.
      n_total: real rows of all processes.
      multi: whether several processes take part.
    """

    def __init__(self, n_rows: int, mesh):
        self.multi = is_multiprocess()
        if self.multi:
            self.mesh = default_mesh() if mesh is None else mesh
            per = check_process_mesh(self.mesh)
            self.counts = [int(c) for c in allgather(np.int64(n_rows))]
        else:
            self.mesh = mesh
            per = 1 if mesh is None else mesh.size
            self.counts = [n_rows]
        self.per_process = per
        self.block = padded_rows(max(self.counts), per)
        self.offsets = shard_offsets(self.counts, self.block, per)
        self.n_total = int(sum(self.counts))

    @property
    def n_shards(self) -> int:
        return 1 if self.mesh is None else self.mesh.size

    def put(self, block: np.ndarray, feature_major: bool = False):
        """This process's block -> the global row-sharded array (rows on axis 0, or on
        axis 1 when ``feature_major``)."""
        if self.mesh is None:
            # device_put copies; jnp.asarray would compile a small program per shape
            return jax.device_put(block)
        sharding = row_sharding(self.mesh, feature_major)
        if self.multi:
            return jax.make_array_from_process_local_data(sharding, block)
        return jax.device_put(block, sharding)

    def replicate(self, a):
        """The same array on every device of the mesh (identical on every process)."""
        a = np.asarray(a)
        if not self.multi:
            return jax.device_put(a)
        return jax.make_array_from_process_local_data(NamedSharding(self.mesh, PartitionSpec()), a)

    def replicate_tree(self, tree):
        """``replicate`` of every leaf of ``tree``: one batched transfer in one process
        (a transfer per leaf cost ~0.03 ms each, 0.6 ms of a small fit's fixed cost)."""
        if not self.multi:
            return jax.device_put(jax.tree.map(np.asarray, tree))
        return jax.tree.map(self.replicate, tree)


def local_rows(a):
    """This process's rows of ``a``: a global ``jax.Array`` whose rows are split over
    the processes (as ``jax.make_array_from_process_local_data`` makes) becomes the
    NumPy array of the rows this process holds, in row order; anything else is
    returned as it is.

    Example (one process: every array is fully addressable, so nothing changes):
      >>> local_rows(np.arange(4)).tolist()
      [0, 1, 2, 3]
    """
    if not (isinstance(a, jax.Array) and not a.is_fully_addressable):
        return a
    parts = {}
    for shard in a.addressable_shards:
        rows = shard.index[0] if shard.index else slice(None)
        start = 0 if rows.start is None else rows.start
        parts.setdefault(start, shard)  # replicas of the same rows count once
    out = np.concatenate([np.asarray(parts[k].data) for k in sorted(parts)])
    counts = allgather(np.int64(out.shape[0]))
    if int(counts.sum()) != a.shape[0]:
        raise ValueError(
            f"the rows of a global array must be split over the processes, "
            f"each row held by one process; the processes hold "
            f"{counts.tolist()} rows of {a.shape[0]} (shard the array's first "
            f"axis over every process, e.g. with "
            f"jax.make_array_from_process_local_data)"
        )
    return out


def local(x):
    """A replicated global array's copy on this process (no transfer between hosts);
    anything else as it is."""
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
        return x.addressable_data(0)
    return x


def agreed_bin_edges(X: np.ndarray, max_bin: int, w, seed: int, n_total: int):
    """Bin edges every process agrees on (see the module docs): each contributes a
    seeded sample of its rows of weight > 0 (all of them for small data), every process
    computes the quantiles of the gathered sample, and missing-value flags come from
    every row."""
    from ..engine.binning import QUANTILE_SAMPLE_ROWS, compute_bin_edges

    keep = np.ones(X.shape[0], bool) if w is None else (np.asarray(w) > 0)
    rows = np.flatnonzero(keep)
    if n_total > QUANTILE_SAMPLE_ROWS:
        share = math.ceil(QUANTILE_SAMPLE_ROWS * X.shape[0] / n_total)
        if rows.size > share:
            rng = np.random.default_rng([seed, jax.process_index()])
            rows = np.sort(rng.choice(rows, share, replace=False))
    Xs = gather_rows(X[rows])
    ws = None if w is None else gather_rows(np.asarray(w, np.float32)[rows])
    edges = compute_bin_edges(Xs, max_bin, ws, seed=seed)
    missing = np.isnan(X[keep]).any(axis=0)
    missing = allgather(missing).any(axis=0)
    edges.has_missing[:] = missing
    return edges


# --- a lost process ---------------------------------------------------------------------


def peer_timeout() -> float:
    """Seconds of silence after which a peer counts as lost (``JAXBOOST_PEER_TIMEOUT``)."""
    v = os.environ.get(ENV_PEER_TIMEOUT, "")
    try:
        t = float(v) if v else DEFAULT_PEER_TIMEOUT
    except ValueError:
        t = DEFAULT_PEER_TIMEOUT
    return t if t > 0 else DEFAULT_PEER_TIMEOUT


_runs = 0


class Watchdog:
    """Heartbeats between the processes of one ``train`` call; ends this process with a
    clear message when a peer falls silent (see the module docs).

    ``status()`` is a callable giving a short description of where training is (the
    round, the last checkpoint) for the message.
    """

    def __init__(self, status=lambda: "", timeout: float | None = None):
        global _runs
        _runs += 1
        from jax._src import distributed as _dist

        self.client = _dist.global_state.client
        self.prefix = f"jaxboost/train{_runs}/alive/"
        self.me = jax.process_index()
        self.P = jax.process_count()
        self.timeout = peer_timeout() if timeout is None else timeout
        self.status = status
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="jaxboost-watchdog", daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, typ, exc, tb):
        self._stop.set()
        self._thread.join(timeout=5)
        if exc is not None and collective_failed(exc):
            # A peer vanished mid-collective and the transport said so: the same
            # situation as a silent peer, and the same exit (the JAX runtime cannot
            # even shut down cleanly now: its shutdown barrier waits for the lost peer).
            first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            self._exit("another process", f"a collective failed: {type(exc).__name__}: {first}")
        return False

    def _run(self):
        beat = 0
        seen = {p: (None, time.monotonic()) for p in range(self.P) if p != self.me}
        failing_since = None
        while not self._stop.wait(_HEARTBEAT_EVERY if beat else 0.0):
            beat += 1
            now = time.monotonic()
            try:
                self.client.key_value_set(
                    self.prefix + str(self.me), str(beat), allow_overwrite=True
                )
                values = dict(self.client.key_value_dir_get(self.prefix))
                failing_since = None
            except Exception as e:  # the coordinator (process 0) is gone or unreachable
                failing_since = failing_since or now
                if now - failing_since >= min(self.timeout, 10.0):
                    self._lost(0, now - failing_since, f" ({type(e).__name__})")
                continue
            for p, (last, since) in seen.items():
                v = values.get(self.prefix + str(p))
                if v != last:
                    seen[p] = (v, now)
                elif now - since >= self.timeout:
                    self._lost(p, now - since, "")

    def _lost(self, peer, silent, why):
        if self._stop.is_set():
            return
        self._exit(f"process {peer}", f"no heartbeat for {silent:.0f} s{why}")

    def _exit(self, who, what):
        try:
            where = self.status()
        except Exception:
            where = ""
        msg = (
            f"\njaxboost.train: process {self.me} of {self.P} lost contact with {who} "
            f"({what}){where}. The histogram sums need every process, so training "
            f"cannot go on; this process exits (code {PEER_LOST_EXIT_CODE}) instead of "
            f"waiting forever. Restart every process; to resume, pass "
            f"init_model=jaxboost.load(<checkpoint>) and the remaining n_rounds.\n"
        )
        try:
            sys.stderr.write(msg)
            sys.stderr.flush()
        finally:
            os._exit(PEER_LOST_EXIT_CODE)


_TRANSPORT_WORDS = (
    "gloo",
    "nccl",
    "connection closed",
    "connection reset",
    "connection refused",
    "broken pipe",
    "heartbeat",
    "unavailable:",
    "deadline_exceeded",
    "coordination service",
    "socket closed",
)


def collective_failed(exc: BaseException) -> bool:
    """Whether ``exc`` looks like a collective or the coordinator failing (a peer gone),
    as opposed to an error in the user's data or loss."""
    from ..errors import DataError, LossError

    if isinstance(exc, (DataError, LossError, KeyboardInterrupt)):
        return False
    text = str(exc).lower()
    return any(w in text for w in _TRANSPORT_WORDS)
