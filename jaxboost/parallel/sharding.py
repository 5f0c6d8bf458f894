"""Rows sharded over a 1-D device mesh; histograms summed across devices.

Training is data-parallel: every device holds a slice of the rows (padded to equal
length with rows of zero weight), computes g, h and histograms for its rows, and the
histograms and node sums are added with ``lax.psum`` inside ``jax.shard_map``. Split
decisions are then computed identically on every device from the global sums, so all
devices grow the same tree.

Using every CPU core. Measured with jax 0.10.2 on a 2-core machine: one XLA CPU
device already spreads its work over the cores, and splitting the host into two JAX CPU
devices made a training round 1.4-1.6x slower (each device loses the other's threads),
even though the cross-device sum itself costs about 1 ms per level. So on a CPU machine
jaxboost trains on one device by default, and its native histogram kernel
(``jaxboost.native``) runs on every core itself. Host CPU devices remain available for
testing the sharded path or by choice:

* ``jaxboost.sharding.use_cpu_devices(N)``, called before JAX starts its backends (before
  any JAX computation), asks JAX for N CPU devices (it sets ``jax_num_cpu_devices``;
  ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` does the same). jaxboost never
  changes the device count by itself;
* ``train(..., mesh=Mesh(jax.devices("cpu"), ("rows",)))`` shards rows over them.

On GPU and TPU backends with several local devices, ``mesh=None`` shards rows over all of
them. Training across processes (hosts, TPU slices) is in ``jaxboost.distributed``; the
quantized mode that makes the model bit-identical for any layout in ``jaxboost.engine.exact``.
"""

from __future__ import annotations

import os

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ..inputs.numbers import is_int

ROW_AXIS = "rows"
# Below this many rows per device, one device is faster (the psum of histograms and the
# per-device dispatch cost more than the scatter they split).
MIN_ROWS_PER_DEVICE = 1 << 15
# Small data is padded to this many rows, so it all shares one compiled program.
MIN_PADDED_ROWS = 256
# Up to this many rows, data is padded to a power of two, so that a cross-validation
# fold and the refit on all rows (1.25-1.5x the fold) usually share one compiled program.
SMALL_PADDED_ROWS = 1 << 12


def use_cpu_devices(n: int | str = "auto") -> int:
    """Ask JAX for ``n`` host CPU devices (``"auto"``: one per core), to try sharded
    training on one machine (see the module docs). Returns the count set.

    Must run before JAX initialises its backends (before any JAX computation, e.g.
    right after the imports); it sets JAX's ``jax_num_cpu_devices``, which nothing in
    jaxboost changes otherwise.

    Raises:
      RuntimeError: when JAX's backends have started already, or ``XLA_FLAGS`` sets the
        count (``--xla_force_host_platform_device_count``).
      ValueError: when ``n`` is not a positive integer or ``"auto"``.
    """
    if n == "auto":
        n = os.cpu_count() or 1
    if not is_int(n) or n < 1:
        raise ValueError(f"n must be a positive integer or 'auto', got {n!r}")
    from jax._src import xla_bridge

    if xla_bridge.backends_are_initialized():
        raise RuntimeError(
            "JAX's backends have started already; call use_cpu_devices before any JAX computation"
        )
    if "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""):
        raise RuntimeError(
            "XLA_FLAGS sets the CPU device count "
            "(--xla_force_host_platform_device_count); change it there"
        )
    jax.config.update("jax_num_cpu_devices", n)
    return n


def auto_mesh(n_rows: int) -> Mesh | None:
    """The default mesh: on GPU/TPU, every local device when rows are plenty.

    Returns ``None`` (single device, no sharding) on CPU (see the module docs), for one
    device, or for small data.
    """
    if jax.default_backend() == "cpu":
        return None
    devices = jax.local_devices()
    n = len(devices)
    while n > 1 and n_rows < n * MIN_ROWS_PER_DEVICE:
        n //= 2
    if n <= 1:
        return None
    return Mesh(np.array(devices[:n]), (ROW_AXIS,))


def check_mesh(mesh, *, keep_single: bool = False) -> Mesh | None:
    """Validate a user-supplied mesh: a ``jax.sharding.Mesh`` with one axis.

    A one-device mesh becomes ``None`` (no sharding) unless ``keep_single`` (a
    multi-process job, where even one device per process is a real mesh).
    """
    if mesh is None:
        return None
    if not isinstance(mesh, Mesh):
        raise TypeError(f"mesh must be a jax.sharding.Mesh or None, got {type(mesh).__name__}")
    if len(mesh.axis_names) != 1:
        raise ValueError(
            f"mesh must have exactly one axis (rows are sharded over it), got "
            f"axes {mesh.axis_names}"
        )
    return mesh if (mesh.size > 1 or keep_single) else None


def padded_rows(n_rows: int, n_shards: int) -> int:
    """Rows after padding: a size bucket (at least ``MIN_PADDED_ROWS``; up to
    ``SMALL_PADDED_ROWS`` the next power of two, above at most ~6 % more), divisible by
    the shards.

    Buckets let different data sizes (cross-validation folds and the refit on all rows,
    the many small data sets of scikit-learn's estimator checks) reuse compiled code: on
    small data a new program's compile costs more than the padding rows' arithmetic.
    Padding rows have weight 0.

    >>> [padded_rows(n, 1) for n in (100, 284, 426, 1000, 5000)]
    [256, 512, 512, 1024, 5120]
    """
    n_rows = max(n_rows, MIN_PADDED_ROWS)
    if n_rows <= SMALL_PADDED_ROWS and (1 << (n_rows - 1).bit_length()) % n_shards == 0:
        return 1 << (n_rows - 1).bit_length()
    step = max(1 << max(n_rows.bit_length() - 5, 0), 1)
    step = int(np.lcm(step, n_shards))
    return -(-n_rows // step) * step


def shard_offsets(counts, block: int, shards_per_process: int) -> np.ndarray:
    """``(n_shards,)`` int32: the global row number of each shard's first row.

    Process ``p`` holds its ``counts[p]`` rows in a block of ``block`` rows (padding
    after them), split evenly over its ``shards_per_process`` devices. Row numbers count
    the real rows of all processes in process order, so row ``i`` of process ``p`` is
    row ``sum(counts[:p]) + i`` of the concatenated data: random draws keyed by it
    (``subsample``) are the same whatever the layout.

    Example:
      >>> shard_offsets([5, 3], 8, 2).tolist()
      [0, 4, 5, 9]
    """
    per = block // shards_per_process
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    out = (starts[:, None] + per * np.arange(shards_per_process)[None, :]).ravel()
    return out.astype(np.int32)


def row_sharding(mesh: Mesh, feature_major: bool = False) -> NamedSharding:
    """Rows split over the mesh: ``(N, ...)`` arrays, or ``(F, N)`` when feature_major."""
    (axis,) = mesh.axis_names
    spec = PartitionSpec(None, axis) if feature_major else PartitionSpec(axis)
    return NamedSharding(mesh, spec)
