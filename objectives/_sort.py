"""Sorting float32 values fast on XLA's CPU backend, in the order ``jnp.argsort`` gives.

XLA's CPU sort of one integer array runs without a comparator call per comparison; a
float32 array, or several arrays sorted together (``jnp.argsort``, ``jnp.lexsort``),
take the slow path: on 100,000 values 3 ms against 17-24 ms. So the values are sorted
as integer codes in their order, with the row packed into the low bits of one uint64.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def ordered_bits(x):
    """float32 ``x`` as uint32 codes in the same order: the sign bit flipped for
    positive values, every bit for negative ones; ``-0.0`` is taken as ``0.0`` and every
    NaN as the positive quiet NaN (after ``+inf``), as ``jnp.sort`` orders them.
    Subnormals keep their order (XLA's CPU comparisons flush them to 0).

    >>> import jax.numpy as jnp
    >>> c = ordered_bits(jnp.array([-jnp.inf, -1.0, -0.0, 0.0, 2.0, jnp.inf, jnp.nan]))
    >>> bool(jnp.all(c[1:] >= c[:-1])), bool(c[2] == c[3])
    (True, True)
    """
    x = jnp.asarray(x, jnp.float32)
    x = jnp.where(jnp.isnan(x), jnp.float32(jnp.nan), x)
    b = jax.lax.bitcast_convert_type(x, jnp.uint32)
    # -0.0 by its bits: ``x == 0`` also holds for subnormals where the CPU flushes them
    b = jnp.where(b == jnp.uint32(0x80000000), jnp.uint32(0), b)
    negative = (b >> 31) == 1
    return b ^ jnp.where(negative, jnp.uint32(0xFFFFFFFF), jnp.uint32(0x80000000))


def argsort_stable(x):
    """``jnp.argsort(x, stable=True)`` of a vector ``(N,)``, as ``(N,)`` int32 (``-0.0``
    ties with ``0.0``). float32: one sort of uint64 keys, the value's code above the
    row; any other type (float64 under x64, whose order float32 codes would lose) by
    ``jnp.argsort`` itself.

    >>> import jax.numpy as jnp
    >>> argsort_stable(jnp.array([2.0, -1.0, 2.0, 0.5])).tolist()
    [1, 3, 0, 2]
    """
    if x.dtype != jnp.float32:
        return jnp.argsort(x, stable=True).astype(jnp.int32)
    n = x.shape[0]
    row_bits = max(1, int(n - 1).bit_length())
    with jax.enable_x64(True):
        key = (ordered_bits(x).astype(jnp.uint64) << row_bits) | jnp.arange(n, dtype=jnp.uint64)
        return (jax.lax.sort(key) & jnp.uint64((1 << row_bits) - 1)).astype(jnp.int32)


def pairwise_ranks(key):
    """Each entry's position in a stable ascending sort of its row (last axis), by
    comparing every pair: the entries below it plus the equal ones before it, int32.
    For many short rows (a forest's feature draws, a query's rows), where XLA's CPU
    sort of short float rows is slow and ``S^2`` comparisons are cheap.

    >>> import jax.numpy as jnp
    >>> pairwise_ranks(jnp.array([0.5, 0.1, 0.5, 0.0])).tolist()
    [2, 1, 3, 0]
    """
    S = key.shape[-1]
    a, b = key[..., :, None], key[..., None, :]  # entry i against entry j
    before = (b < a) | ((b == a) & jnp.tri(S, k=-1, dtype=bool))
    return jnp.sum(before, axis=-1, dtype=jnp.int32)


def run_ids(sorted_x):
    """Each position's run of equal values in a sorted vector, numbered from 0 (a
    running count of changes): equal values share one id, ids keep the values' order
    (dense ranks), int32.

    >>> import jax.numpy as jnp
    >>> run_ids(jnp.array([1.0, 2.0, 2.0, 5.0])).tolist()
    [0, 1, 1, 2]
    """
    change = (sorted_x[1:] != sorted_x[:-1]).astype(jnp.int32)
    return jnp.cumsum(jnp.concatenate([jnp.zeros(1, jnp.int32), change]))


def run_bounds(sorted_x):
    """For each position ``p`` of a sorted vector, the first and the last position of
    the values equal to ``sorted_x[p]``: ``jnp.searchsorted(sorted_x, sorted_x,
    side="left")`` and ``side="right"`` less 1, in O(N): runs of equal values numbered
    by a running count of changes, their ends by one scatter-min and one scatter-max
    (0.45 ms on 100,000 values, against 1.1 ms for running max / min scans and 1.6 ms
    for ``searchsorted``).

    >>> import jax.numpy as jnp
    >>> first, last = run_bounds(jnp.array([1.0, 2.0, 2.0, 2.0, 5.0]))
    >>> first.tolist(), last.tolist()
    ([0, 1, 1, 1, 4], [0, 3, 3, 3, 4])
    """
    n = sorted_x.shape[0]
    pos = jnp.arange(n, dtype=jnp.int32)
    run = run_ids(sorted_x)
    first = jnp.full(n, n, jnp.int32).at[run].min(pos)[run]
    last = jnp.zeros(n, jnp.int32).at[run].max(pos)[run]
    return first, last
