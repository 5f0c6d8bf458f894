"""Rows sharded over a 1-D device mesh; histograms summed across devices.

Training is data-parallel: every device holds a slice of the rows (padded to equal
length with rows of zero weight), computes g, h and histograms for its rows, and the
histograms and node sums are added with ``lax.psum`` inside ``jax.shard_map``. Split
decisions are then computed identically on every device from the global sums, so all
devices grow the same tree.

Using every CPU core. XLA runs a scatter-add on one core, so on a CPU machine jaxboost
splits the host into one JAX CPU device per core and shards rows over them. JAX only
accepts that setting before its backends start, so ``import jaxboost`` sets
``jax_num_cpu_devices`` to the core count when, and only when, all of these hold:

* the environment variable ``JAXBOOST_CPU_DEVICES`` is unset or ``auto`` (set it to a
  number to choose the count, or to ``1`` to turn this off);
* JAX's backends have not started yet (a user who already ran JAX code keeps their
  setup);
* the user has not chosen a CPU device count themselves (``XLA_FLAGS`` with
  ``--xla_force_host_platform_device_count``, or ``jax_num_cpu_devices``).

The only visible effect outside jaxboost is that ``jax.devices("cpu")`` lists one
device per core; arrays are still placed on the first device by default.
"""

from __future__ import annotations

import os

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

ENV_CPU_DEVICES = "JAXBOOST_CPU_DEVICES"
ROW_AXIS = "rows"
# Below this many rows per device, one device is faster (the psum of histograms and the
# per-device dispatch cost more than the scatter they split).
MIN_ROWS_PER_DEVICE = 1 << 15


def configure_host_devices() -> str:
    """Ask JAX for one CPU device per core when that is safe (see the module docs).

    Returns a short sentence saying what was done, for diagnostics.
    """
    setting = os.environ.get(ENV_CPU_DEVICES, "auto").strip().lower()
    if setting in ("", "auto"):
        n = os.cpu_count() or 1
    else:
        try:
            n = int(setting)
        except ValueError:
            return f"ignored {ENV_CPU_DEVICES}={setting!r} (expected 'auto' or a number)"
    if n <= 1:
        return "one CPU device (as asked)" if setting not in ("", "auto") else "one core"
    from jax._src import xla_bridge

    if xla_bridge.backends_are_initialized():
        return "JAX was already initialised; its device setup is kept"
    if "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""):
        return "XLA_FLAGS sets the CPU device count; kept"
    if jax.config.jax_num_cpu_devices not in (-1, None):
        return "jax_num_cpu_devices already set; kept"
    jax.config.update("jax_num_cpu_devices", n)
    return f"jax_num_cpu_devices set to {n}"


def auto_mesh(n_rows: int) -> Mesh | None:
    """The default mesh: every device of the default backend, when rows are plenty.

    Returns ``None`` (single device, no sharding) for one device or small data.
    """
    devices = jax.devices()
    n = len(devices)
    while n > 1 and n_rows < n * MIN_ROWS_PER_DEVICE:
        n //= 2
    if n <= 1:
        return None
    return Mesh(np.array(devices[:n]), (ROW_AXIS,))


def check_mesh(mesh) -> Mesh | None:
    """Validate a user-supplied mesh: a ``jax.sharding.Mesh`` with one axis."""
    if mesh is None:
        return None
    if not isinstance(mesh, Mesh):
        raise TypeError(f"mesh must be a jax.sharding.Mesh or None, got {type(mesh).__name__}")
    if len(mesh.axis_names) != 1:
        raise ValueError(f"mesh must have exactly one axis (rows are sharded over it), got "
                         f"axes {mesh.axis_names}")
    return mesh if mesh.size > 1 else None


def padded_rows(n_rows: int, n_shards: int) -> int:
    """Rows after padding: a size bucket (at most ~6 % more), divisible by the shards.

    Buckets let different data sizes (cross-validation folds) reuse compiled code.
    """
    step = max(1 << max(n_rows.bit_length() - 5, 0), 1)
    step = int(np.lcm(step, n_shards))
    return -(-n_rows // step) * step


def row_sharding(mesh: Mesh, feature_major: bool = False) -> NamedSharding:
    spec = PartitionSpec(None, ROW_AXIS) if feature_major else PartitionSpec(ROW_AXIS)
    return NamedSharding(mesh, spec)
