"""Parallel training: the same journey with its rows spread over devices and processes.

Nothing here changes what is computed, only where: the engine's round runs inside
``jax.shard_map`` with each device holding a block of the rows, and the histograms
are summed with ``lax.psum`` (see ``engine.round``); training (``jaxboost.training``)
asks these modules where the rows go and what every process must agree on.

* ``sharding``: rows over a 1-D device mesh of one process (``auto_mesh``,
  ``check_mesh``, padding and shard offsets); ``use_cpu_devices(n)`` for N host CPU
  devices;
* ``distributed``: several processes (hosts) on JAX's distributed runtime:
  ``initialize`` / ``shutdown``, each process's row block, agreed bin edges, gathered
  evaluation sets, heartbeats that end a job whose peer died.

Both are also ``jaxboost.sharding`` and ``jaxboost.distributed``, the names the
docs use (attributes of ``jaxboost``; import the modules from here).
"""

from . import distributed, sharding

__all__ = ["distributed", "sharding"]
