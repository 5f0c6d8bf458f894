r"""Row and column sampling, driven by one seed.

Every random draw comes from ``key(seed)`` folded (``fold``, a keyed hash) with the
global round number (and the tree within the round, and the level), so a model is a
pure function of its inputs and seed: the same seed gives the same model bit for bit,
and training 4 rounds then 4 more (``init_model``) draws exactly what 8 rounds in one
call draw.

* ``subsample``: each row takes part in a round's tree with probability ``subsample``
  (its g and h are zeroed otherwise, so shapes never change).
* ``bootstrap``: instead, each tree draws ``round(subsample * N)`` rows with
  replacement (``bootstrap_counts``); a row drawn ``c`` times enters with ``c g`` and
  ``c h``, which is what ``c`` copies of it would give.
* ``colsample_bytree``, ``colsample_bylevel``, ``colsample_bynode``: nested feature
  subsets, as in XGBoost: a tree draws ``max(1, floor(r_tree * F))`` features, each level
  ``max(1, floor(r_level * n_tree))`` of those, each node ``max(1, floor(r_node *
  n_level))`` of the level's.

Random numbers for row and column masks come from ``uniform``, a keyed counter hash
(a few integer operations per number; XLA's threefry cost about 38 ns per number on
CPU, a fifth of a random forest's tree); ``bootstrap`` keeps ``jax.random.randint``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from objectives._sort import pairwise_ranks

from .._types import FLOAT_DTYPE, INDEX_DTYPE

# Indices of the sampling-ratio vector.
SUBSAMPLE, BYTREE, BYLEVEL, BYNODE = range(4)
FIELDS = ("subsample", "colsample_bytree", "colsample_bylevel", "colsample_bynode")


def round_key(seed_key, round_index):
    """The key of one boosting round (``round_index`` counts from the model's start)."""
    return fold(seed_key, round_index)


def tree_key(rk, p):
    """The key of tree ``p`` of a forest's round (``rk``: the round's key); training
    and ``engine.replay`` both take a forest tree's samples from it."""
    return fold(fold(rk, 3), p)


def _mix(x):
    """murmur3's 32-bit finaliser: a bijection of uint32 that spreads every input bit."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


@jax.jit
def fold(key, data):
    """A new PRNG key from a scalar ``key`` and an integer ``data`` (the role of
    ``jax.random.fold_in``), by a keyed hash of the key's uint32 words.

    With ``w`` the words and ``d = data``: ``a_j = mix(w_j ^ a_{j-1}) + c`` from ``a_{-1}
    = mix(d c + 1)``, then ``o_j = mix(a_j ^ o_{j-1})`` from ``o_{-1} = a_last`` (0 for a
    key of one word), where ``mix`` is murmur3's finaliser and ``c`` the golden-ratio
    constant. For a fixed
    ``data`` it maps the words one to one (no two keys fold to the same key), and every
    new word depends on every old word and on ``data``. A few dozen integer operations,
    where ``fold_in`` runs threefry (20 rounds, in a loop of its own) at each call: a
    random forest's round program folds nine times, and with ``fold_in`` it compiled
    about 8 % slower (digits, 100 trees a class, subsample and colsample_bynode 0.8:
    1.16-1.24 s against 1.06-1.11 s). Keys made here feed ``uniform`` (row and feature
    masks) and ``jax.random.randint`` (bootstrap); a user's loss gets its key from
    ``fold_in``.

    >>> import jax
    >>> k = jax.random.key(0)
    >>> a, b = (jax.random.key_data(fold(k, d)).tolist() for d in (1, 2))
    >>> a != b, jax.random.key_data(fold(k, 1)).tolist() == a
    (True, True)
    """
    impl = jax.random.key_impl(key)
    words = jax.random.key_data(key).astype(jnp.uint32)
    c = jnp.uint32(0x9E3779B9)
    acc = _mix(jnp.asarray(data).astype(jnp.uint32) * c + jnp.uint32(1))
    absorbed = []
    for j in range(words.shape[-1]):
        acc = _mix(words[..., j] ^ acc) + c
        absorbed.append(acc)
    out = []
    acc = acc if len(absorbed) > 1 else jnp.uint32(0)  # a one-word key: o_0 = mix(a_0)
    for a in absorbed:
        acc = _mix(a ^ acc)
        out.append(acc)
    return jax.random.wrap_key_data(jnp.stack(out, axis=-1), impl=impl)


def key_words(key):
    """A PRNG key's first and last uint32 words: what ``uniform`` hashes with (and the
    native tree kernel's by-node draw, ``FeatureSampler.native_args``)."""
    k = jax.random.key_data(key).reshape(-1).astype(jnp.uint32)
    return k[0], k[-1]


def uniform(key, shape):
    """``shape`` float32 uniform numbers in ``[0, 1)`` on a 2**-24 grid, entry ``i`` (in
    C order) a hash of the key's two words and ``i`` alone (so a longer draw starts with
    the shorter one, as ``row_mask`` needs).

    A counter-based hash (murmur3's finaliser, twice, keyed by the key's words) instead
    of ``jax.random.uniform``: XLA's threefry cost about 38 ns per number on CPU, and
    a random forest draws a row mask and per-node feature masks for every tree (about
    0.2 ms of a 0.4 ms tree on digits); this is a few integer operations per number.
    Ample for choosing rows and features; not a general-purpose generator.

    >>> import jax
    >>> u = uniform(jax.random.key(0), (100_000,))
    >>> bool((u >= 0).all() & (u < 1).all()), round(float(u.mean()), 2)
    (True, 0.5)
    >>> bool((uniform(jax.random.key(0), (10,)) == u[:10]).all())
    True
    """
    k0, k1 = key_words(key)
    i = jnp.arange(math.prod(shape), dtype=jnp.uint32).reshape(shape)
    x = _mix(_mix(i * jnp.uint32(0x9E3779B9) ^ k0) + k1)
    return (x >> 8).astype(FLOAT_DTYPE) * FLOAT_DTYPE(2.0**-24)


def row_mask(key, n_local, subsample, *, offset=0, n_ids=None):
    """``(n_local,)`` float32 0/1: whether each row of this device is in the sample.

    The draw is one uniform number per global row number (``n_ids`` of them, default
    ``n_local``) and this device takes ``n_local`` of them from ``offset`` (its first
    row's global number, see ``jaxboost.parallel.sharding.shard_offsets``). JAX's counter-based
    generator makes element ``i`` independent of the draw's length, so a sharded or
    multi-process run samples the same rows as a single-device one.
    """
    n_ids = n_local if n_ids is None else n_ids
    u = uniform(fold(key, 0), (n_ids,))
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
    draws = jax.random.randint(fold(key, 4), (n_ids,), 0, n_total, dtype=INDEX_DTYPE)
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
    u = jnp.where(allowed, uniform(key, allowed.shape), 2.0)
    return _ranks(u) < k


PAIRWISE_RANKS = 1 << 20
"""Up to this many comparisons (rows x entries**2), ``_ranks`` compares every pair
instead of sorting."""


def _ranks(u):
    """Each entry's position in a stable ascending sort of its row (last axis): the
    entries smaller than it, plus the equal ones before it. Up to ``PAIRWISE_RANKS``
    comparisons by comparing every pair (XLA's CPU sort of many short rows was
    most of a random forest's round), else by two sorts; the same ranks either way.

    >>> import jax.numpy as jnp
    >>> _ranks(jnp.array([0.5, 0.1, 0.5, 0.0])).tolist()
    [2, 1, 3, 0]
    """
    F = u.shape[-1]
    if u.size * F > PAIRWISE_RANKS:
        return jnp.argsort(jnp.argsort(u, axis=-1), axis=-1).astype(INDEX_DTYPE)
    return pairwise_ranks(u).astype(INDEX_DTYPE)


class FeatureSampler:
    """Feature masks of one tree: ``level(d, n) -> (n, F)`` bool, one row per node.

    Every draw happens at construction (outside any scoped-x64 region of the tree
    builder, where JAX's PRNG would mix integer widths).
    """

    def __init__(self, key, ratios, n_features: int, max_depth: int, kinds=(True, True, True)):
        """``kinds``: static, whether each of the tree's, the levels' and the nodes'
        draws may keep fewer than all features (its ratio may be below 1). A kind that
        cannot keeps every feature it is offered, without a draw: what the draw gives
        at ratio 1, without ranking the features of every level and node."""
        F, D = n_features, max_depth
        W = 2 ** max(D - 1, 0)
        everything = jnp.ones(F, bool)
        tree = _choose(fold(key, 0), everything, ratios[BYTREE]) if kinds[0] else everything
        self.tree = tree
        if D == 0:
            self._all = jnp.zeros((0, W, F), bool)
            self.level_sets, self.node_key, self.node_ratio = None, None, None
            return
        # One draw per kind for every level and node at once (a handful of operations
        # per tree, not a handful per level): level d's sets (D, F) from the tree's,
        # then node k of level d's (D, W, F) from its level's; rows k >= 2**d are off.
        lvl = jnp.broadcast_to(tree, (D, F))
        if kinds[1]:
            lvl = _choose(fold(key, 1), lvl, ratios[BYLEVEL])
        # What the native tree kernel draws itself, for its live nodes only (the same
        # numbers: jaxboost.native.grow_tree's colsample).
        self.level_sets, self.node_key, self.node_ratio = (
            lvl,
            fold(key, 2),
            ratios[BYNODE],
        )
        nodes = jnp.broadcast_to(lvl[:, None], (D, W, F))
        if kinds[2]:
            nodes = _choose(self.node_key, nodes, ratios[BYNODE])
        real = jnp.arange(W)[None, :] < (2 ** jnp.arange(D))[:, None]  # (D, W)
        self._all = nodes & real[:, :, None]

    def native_args(self):
        """``(node_key_words, level_sets, node_ratio)`` for ``jaxboost.native.grow_tree``:
        the key's two uint32 words, the ``(max_depth, F)`` level sets and the by-node
        ratio, from which the kernel draws the masks ``levels`` holds."""
        return (
            jnp.stack(key_words(self.node_key)),
            self.level_sets,
            jnp.asarray(self.node_ratio, FLOAT_DTYPE).reshape(1),
        )

    def level(self, d: int, n: int):
        """The ``(n, F)`` masks of level ``d`` (``n = 2**d`` nodes)."""
        assert n == 2**d
        return self._all[d, :n]

    def levels(self, width: int):
        """Every level's masks in one ``(max_depth, width, F)`` array.

        Level ``d``'s ``2**d`` rows come first, then ``False`` rows up to ``width``
        (``>= 2**(max_depth - 1)``): what the tree builder's level loop indexes with a
        traced level. The masks are the ones ``level`` returns (the same draws).
        """
        W = self._all.shape[1]
        return jnp.pad(self._all, ((0, 0), (0, width - W), (0, 0)))
