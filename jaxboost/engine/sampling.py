r"""Row and column sampling, driven by one seed.

Every random draw comes from ``key(seed)`` folded with the global round number (and the
tree within the round, and the level), so a model is a pure function of its inputs and
seed: the same seed gives the same model bit for bit, and training 4 rounds then 4 more
(``init_model``) draws exactly what 8 rounds in one call draw.

* ``subsample``: each row takes part in a round's tree with probability ``subsample``
  (its g and h are zeroed otherwise, so shapes never change).
* ``bootstrap``: instead, each tree draws ``round(subsample * N)`` rows with
  replacement (``bootstrap_counts``); a row drawn ``c`` times enters with ``c g`` and
  ``c h``, which is what ``c`` copies of it would give.
* ``colsample_bytree``, ``colsample_bylevel``, ``colsample_bynode``: nested feature
  subsets, as in XGBoost: a tree draws ``max(1, floor(r_tree * F))`` features, each level
  ``max(1, floor(r_level * n_tree))`` of those, each node ``max(1, floor(r_node *
  n_level))`` of the level's.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .._types import FLOAT_DTYPE, INDEX_DTYPE

# Indices of the sampling-ratio vector.
SUBSAMPLE, BYTREE, BYLEVEL, BYNODE = range(4)
FIELDS = ("subsample", "colsample_bytree", "colsample_bylevel", "colsample_bynode")


def round_key(seed_key, round_index):
    """The key of one boosting round (``round_index`` counts from the model's start)."""
    return jax.random.fold_in(seed_key, round_index)


def row_mask(key, n_local, subsample, *, offset=0, n_ids=None):
    """``(n_local,)`` float32 0/1: whether each row of this device is in the sample.

    The draw is one uniform number per global row number (``n_ids`` of them, default
    ``n_local``) and this device takes ``n_local`` of them from ``offset`` (its first
    row's global number, see ``jaxboost.parallel.sharding.shard_offsets``). JAX's counter-based
    generator makes element ``i`` independent of the draw's length, so a sharded or
    multi-process run samples the same rows as a single-device one.
    """
    n_ids = n_local if n_ids is None else n_ids
    u = jax.random.uniform(jax.random.fold_in(key, 0), (n_ids,), FLOAT_DTYPE)
    if n_ids != n_local:
        u = jax.lax.dynamic_slice(u, (offset,), (n_local,))
    return (u < subsample).astype(FLOAT_DTYPE)


def bootstrap_counts(key, n_local, subsample, n_total, *, offset=0, n_ids=None):
    r"""``(n_local,)`` float32 multiplicities of this device's rows in a bootstrap sample.

    :math:`n = \max(1, \mathrm{round}(\text{subsample} \cdot N))` draws, uniform with
    replacement, among the ``N = n_total`` real rows of all devices (global row numbers
    ``0 .. N - 1``, see ``row_mask``): the counts ``c`` follow a multinomial
    distribution with :math:`\sum_i c_i = n` and :math:`E[c_i] = n / N` (``subsample = 1``:
    the classic bootstrap, about :math:`1 - 1/e \approx 63.2\,\%` of the rows drawn at
    least once). Every device makes the same ``n_ids`` draws (``n_ids >= N``; draws past
    ``n`` are dropped) and takes its slice from ``offset``, so a sharded run samples
    what one device samples.

    Example:
      >>> import jax
      >>> c = bootstrap_counts(jax.random.key(0), 1000, 1.0, 1000)
      >>> int(c.sum()), 0.55 < float((c > 0).mean()) < 0.7
      (1000, True)
    """
    n_ids = n_local if n_ids is None else n_ids
    draws = jax.random.randint(jax.random.fold_in(key, 4), (n_ids,), 0, n_total,
                               dtype=INDEX_DTYPE)
    n_real = jnp.asarray(n_total).astype(FLOAT_DTYPE)
    n = jnp.maximum(1, jnp.round(subsample * n_real).astype(INDEX_DTYPE))
    used = (jnp.arange(n_ids, dtype=INDEX_DTYPE) < n).astype(FLOAT_DTYPE)
    counts = jnp.zeros(n_ids, FLOAT_DTYPE).at[draws].add(used)
    if n_ids != n_local:
        counts = jax.lax.dynamic_slice(counts, (offset,), (n_local,))
    return counts


def _choose(key, allowed, ratio):
    """Among ``allowed`` (``(..., F)`` bool), ``max(1, floor(ratio * count))`` at random."""
    count = jnp.sum(allowed, axis=-1, keepdims=True)
    k = jnp.maximum(1, jnp.floor(ratio * count.astype(FLOAT_DTYPE))).astype(INDEX_DTYPE)
    u = jnp.where(allowed, jax.random.uniform(key, allowed.shape, FLOAT_DTYPE), 2.0)
    ranks = jnp.argsort(jnp.argsort(u, axis=-1), axis=-1)
    return ranks < k


class FeatureSampler:
    """Feature masks of one tree: ``level(d, n) -> (n, F)`` bool, one row per node.

    Every draw happens at construction (outside any scoped-x64 region of the tree
    builder, where JAX's PRNG would mix integer widths).
    """

    def __init__(self, key, ratios, n_features: int, max_depth: int):
        tree = _choose(jax.random.fold_in(key, 0), jnp.ones(n_features, bool), ratios[BYTREE])
        self.tree = tree
        self._levels = []
        for d in range(max_depth):
            k = jax.random.fold_in(key, 1 + d)
            lvl = _choose(jax.random.fold_in(k, 0), tree, ratios[BYLEVEL])
            nodes = jnp.broadcast_to(lvl, (2 ** d, n_features))
            self._levels.append(_choose(jax.random.fold_in(k, 1), nodes, ratios[BYNODE]))

    def level(self, d: int, n: int):
        """The ``(n, F)`` masks of level ``d`` (``n = 2**d`` nodes)."""
        mask = self._levels[d]
        assert mask.shape[0] == n
        return mask

    def levels(self, width: int):
        """Every level's masks in one ``(max_depth, width, F)`` array.

        Level ``d``'s ``2**d`` rows come first, then ``False`` rows up to ``width``
        (``>= 2**(max_depth - 1)``): what the tree builder's level loop indexes with a
        traced level. The masks are the ones ``level`` returns (the same draws).
        """
        return jnp.stack([jnp.pad(m, ((0, width - m.shape[0]), (0, 0)))
                          for m in self._levels])
