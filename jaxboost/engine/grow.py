"""One tree, grown level by level inside jit.

Per level: histogram of the level's nodes -> best split per node -> route rows to
children. Histograms are ``(F, nodes, B)``: ``B`` (``TreeSpec.max_bin``) is the data's
bin bucket (``binning.BinEdges.n_bins``: the smallest of 16, 32, 64, 128, 256 that
holds every feature's value bins and the missing-value bin ``B - 1``, at most the
``max_bin`` parameter), so data of few distinct values per feature builds, scans and
routes on narrow histograms. After the last level, gamma post-pruning runs bottom-up (a
split whose children are both leaves is removed when its gain < gamma, then its parent is
checked), as the seeds and XGBoost's exact method do. Leaf values come from each node's
own sums.

Loop formulation (why the compiled program does not grow with ``max_depth``): level
``d`` has ``2**d`` nodes, so a Python loop over levels would trace a differently shaped
copy of the level for every depth, and the compile time of a training program would
grow linearly with ``max_depth``. Instead only the root's histogram is computed before
the loop (one node, summed across devices once) and levels ``0 .. max_depth - 1`` run in
one ``lax.fori_loop`` whose body works on arrays sized for the widest split level,
``W = 2**(max_depth - 1)`` nodes: level ``d`` uses the first ``2**d`` of them and the
rest are inert (never alive, so they never split; their histograms and totals are
zero). Level 0 takes the root's histogram instead of building one, so split finding and
routing are compiled once, not once for the root and once for the loop (the program is
about 30 % smaller and compiles about 30 % faster than with a separate root).

The tree itself lives in heap arrays of ``M = 2**(max_depth + 1) - 1`` nodes from the
start; level ``d`` writes its ``W``-wide window
at heap offset ``2**d - 1`` (what lies past its own nodes is overwritten by the next
level, which starts right after them). The padding costs little where work is per node:

* the native histogram kernel takes the level's node count as a traced input
  (``n_active``), so it histograms, zeroes and reduces only the live nodes;
* everything else per node (the sibling = parent - smaller child subtraction, split
  finding, the children's totals) runs in chunks of ``SPLIT_CHUNK`` nodes, a loop over
  only as many chunks as the level has nodes; the native path keeps the parent's and
  the current level's histograms in one ``(F, 2 W, B)`` buffer updated in place;
* the pure-JAX histograms cost per row; only their zero-filled output is ``W`` wide.
  Off CPU they too take only the smaller children (``TreeSpec.subtract``, the
  subtraction loop of the native path): the accelerators' formulations drop the
  other rows for the price of a comparison (``engine.histogram``).

What is left at full width is per-level ``(W,)`` bookkeeping and, with the native
kernel, zeroing its ``(F, W / 2, B)`` output past the live nodes: measured at 1M rows
(W1, 25 rounds) depth 6 trains as fast as the unrolled builder, depth 10 about 20 %
slower; compile time (fresh process, 10k rows) was 2.1 s at depth 6 and 2.2 s at depth 8
against 1.75 s at depth 2 (unrolled: 3.2 s and 4.5 s), ``benchmarks/compile_depth.py``,
with the root still outside the loop; with it inside, the tree builder alone compiles in
1.7 CPU s at depth 6 against 2.6 (``SPLIT_CHUNK`` 4: 40 rounds at 300k rows, depth 6,
take 1.43 CPU s against 1.64 before).

gamma pruning and each row's leaf are loops over levels too. Every node's arithmetic
is the same as level by level with exact shapes, so the trees are bit-identical.

Native whole trees (CPU): with the native histogram kernel, on one device, for numeric
and categorical splits (interaction and monotone constraints and ``min_samples_leaf``:
``native_constraints``) and unblocked features, the level loop above
runs as one C++ call per tree instead (``jaxboost.native.grow_tree``,
``_native_tree_grow``): the same smaller-child histograms and subtraction, the split
rules of ``jaxboost.engine.split`` and ``jaxboost.engine.categorical`` (float64
prefix sums in bin order, float32 scores and gains, XGBoost's candidate order), gamma
pruning and each row's leaf, with work
that follows the live nodes: each level histograms, scans and routes only the nodes
that exist, and a scan walks only a node's non-empty bins. On small data the XLA loop's
fixed cost (about a hundred small operations per level) was most of a tree: breast
cancer (426 rows, depth 6, 100 rounds) trains in 0.029 s instead of 0.200 s.
``JAXBOOST_NATIVE_TREE=0`` keeps the XLA loop (``tests/test_native_tree.py`` checks
that both grow the same trees).

Wide data (memory per feature): a level's histograms are ``(F, W, B)`` float64 pairs, and
the loop above keeps about ``HIST_BYTES_PER_FEATURE * W * B`` bytes per feature (393 KB
at depth 6 and ``B = 256``: 7.9 GB for 20,000 features). When that exceeds ``HIST_MEMORY``
the features are taken in blocks of ``feature_block(F, W, B)`` instead: per level, a loop
over blocks histograms every node of the level on the block's features alone (all the
level's rows: no parent histogram is kept, so there is no sibling subtraction), finds
each node's best split within the block and keeps it when its gain is strictly greater
than the best of the blocks before (blocks in ascending feature order, so the first
best candidate still wins ties, as unblocked). Memory then stays below ``HIST_MEMORY``
whatever ``F`` (a block's histograms take about a third of it); the price is the
histogram work of the larger children, and one slice of the bins per block and level.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp

from .._types import ACC_DTYPE, FLOAT_DTYPE, INDEX_DTYPE, NARROW_BIN_LIMIT, NATIVE_WIDE_BIN_LIMIT
from . import categorical
from .constraints import TreeConstraints
from .histogram import histogram as platform_histogram
from .split import (
    find_best_splits,
    find_best_vector_splits,
    is_split_worthy,
    leaf_values,
    native_vector_splits,
    vector_weight_score,
)
from .tree import bin_goes_left, code_feature, code_goes_left, split_code

# Nodes per split-finding step of a level (see the module docstring).
SPLIT_CHUNK = 4

HIST_MEMORY = 512 << 20
"""Bytes the histograms of one level may take before features are taken in blocks
(``feature_block``). Unblocked, a level of ``W`` nodes keeps about
``HIST_BYTES_PER_FEATURE * W * B`` bytes per feature (``B`` bins); 512 MiB is reached
at about 1,300 features at depth 6 with ``B = 256``, 85 at depth 10."""

HIST_BYTES_PER_FEATURE = 48
"""Bytes per (feature, node, bin) of the unblocked level loop, measured from its
buffers: the native path's ``(F, 2 W, B)`` float64 parent/level buffers for G and H
(32) and the ``(F, W / 2, B)`` smaller children (8), the pure-JAX path's complex128
scatter output and its two float64 halves (up to 48)."""


def feature_block(n_features: int, width: int, max_bin: int, budget=None) -> int:
    """Features per block of a level's histograms: all of them (``n_features``) while
    their histograms fit ``budget`` bytes (default ``HIST_MEMORY``, read at the call,
    i.e. when a training program is traced), else the most that do (at least 1).

    Example:
      >>> feature_block(28, 32, 256), feature_block(20_000, 32, 256)
      (28, 1365)
    """
    budget = HIST_MEMORY if budget is None else budget
    per_feature = HIST_BYTES_PER_FEATURE * width * max_bin
    if n_features * per_feature <= budget:
        return n_features
    return max(1, min(n_features, budget // per_feature))


NATIVE_TREE_MEMORY_FACTOR = 2
"""The native whole-tree kernel grows a tree whose XLA level loop would take its features
in blocks (``feature_block``) while its own level histograms
(``jaxboost.native.tree_scratch_bytes``) fit this many times ``HIST_MEMORY`` (1 GiB by
default; read at the call, so a smaller ``HIST_MEMORY`` bounds both). The kernel's
histograms are about a third of the level loop's (float64 G and H of the live nodes
only); with the loop's bound alone, wide data and deep trees fell back to the blocked
XLA loop: 10,000 x 2,000 rows at depth 6, 20 rounds, 8.0 s against 2.96 s on the kernel
(XGBoost ``hist`` 5.5 s); friedman1 50,000 x 20 at depth 14, 10 rounds, 6.96 against 0.83
s (XGBoost 1.65 s)."""


def native_tree_takes(
    n_rows,
    n_features: int,
    max_depth: int,
    max_bin: int,
    block=None,
    max_leaves: int = 0,
) -> bool:
    """Whether the native whole-tree kernel may take a tree of ``n_features`` features
    at ``max_depth`` on ``n_rows`` rows (``None``: any number) as far as memory goes: all
    features at once. With ``block`` (``TreeSpec.feature_block``, set by the caller) only
    when it holds every feature; otherwise when the XLA level loop would hold them all
    (``feature_block``) or the kernel's own histograms fit ``NATIVE_TREE_MEMORY_FACTOR``
    times ``HIST_MEMORY`` (``max_leaves > 0``: leaf-wise trees, whose histograms follow
    the leaves, ``jaxboost.native.tree_scratch_bytes``). Bins: uint8 (``max_bin <=
    256``) or uint16 (up to ``NATIVE_WIDE_BIN_LIMIT``; categorical features keep their
    at most 256 category slots below the missing-value bin).

    >>> native_tree_takes(10_000, 2_000, 6, 256), feature_block(2_000, 32, 256) < 2_000
    (True, True)
    >>> native_tree_takes(10_000, 2_000, 6, 256, block=500)
    False
    >>> [native_tree_takes(100_000, 20, 16, 256, max_leaves=k) for k in (0, 31)]
    [False, True]
    """
    from .. import native as native_kernel

    if int(max_bin) > NATIVE_WIDE_BIN_LIMIT:
        return False
    F = int(n_features)
    if block is not None:
        return min(int(block), F) == F
    if feature_block(F, max(1, 2 ** (max_depth - 1)), max_bin) == F:
        return True
    need = native_kernel.tree_scratch_bytes(n_rows, F, max_depth, max_bin, max_leaves)
    return need <= NATIVE_TREE_MEMORY_FACTOR * HIST_MEMORY


def _identity(x):
    return x


identity = _identity
"""``grow_tree``'s ``reduce`` on one device (the native whole-tree kernel needs it)."""


def pair_histogram(bins, *, native: bool, max_bin: int, native_threads=None):
    """``hist(a, b, node, n, n_active=None) -> (A, B)``: float64 ``(F, n, max_bin)``
    histograms of two per-row float32 channels, with the native kernel or the pure-JAX
    scatter.

    Rows with ``node >= n_active`` (default ``n``) are skipped and those nodes' slots
    are zero; ``n_active`` may be traced. The native kernel then spends only the work of
    ``n_active`` nodes; the pure-JAX scatter is told nothing (its cost is per row; the
    caller gives skipped rows node ``n``).
    """
    if native:
        from .. import native as native_kernel

        n_threads = kernel_threads(bins, native_threads)

        def hist(a, b, node, n, n_active=None):
            return native_kernel.histogram(
                bins, a, b, node, n, max_bin, n_threads=n_threads, n_active=n_active
            )
    else:

        def hist(a, b, node, n, n_active=None):
            return platform_histogram(bins, a, b, node, n, max_bin)

    return hist


def channel_histogram(bins, vals, *, native: bool, max_bin: int, native_threads=None):
    """``hist(node, n, n_active=None) -> S``: float64 ``(F, n, max_bin, C)`` histograms of
    the ``C`` per-row channels ``vals`` ``(N, C)`` (vector leaves' gradients and Hessian
    entries), channels last: with the native kernel all channels in one pass
    (``jaxboost.native.histogram_channels``), else two at a time by
    :func:`pair_histogram`. Rows and ``n_active`` as in :func:`pair_histogram`."""
    N, C = vals.shape
    if native and max_bin <= NARROW_BIN_LIMIT:
        from .. import native as native_kernel

        n_threads = kernel_threads(bins, native_threads)

        def native_hist(node, n, n_active=None):
            return native_kernel.histogram_channels(
                bins, vals, node, n, max_bin, n_threads=n_threads, n_active=n_active
            )

        return native_hist
    # uint16 bins (row-major with native): the native pair kernel, two channels a pass
    hist2 = pair_histogram(bins, native=native, max_bin=max_bin, native_threads=native_threads)
    if C % 2:
        vals = jnp.concatenate([vals, jnp.zeros((N, 1), vals.dtype)], axis=1)
    pairs = vals.T.reshape(-1, 2, N)  # (C2, 2, N)

    def hist(node, n, n_active=None):
        def one(ab):
            return jnp.stack(hist2(ab[0], ab[1], node, n, n_active))  # (2, F, n, B)

        out = jax.lax.map(one, pairs)  # (C2, 2, F, n, B)
        return jnp.moveaxis(out.reshape((-1,) + out.shape[2:])[:C], 0, -1)

    return hist


def kernel_threads(bins, cap, *, tree: bool = False):
    """The native kernel's ``n_threads`` for row-major ``bins`` ``(N, F)`` under
    ``train(n_jobs=cap)``: ``None`` (the kernel's own default) without a cap, else
    ``jaxboost.native.default_threads(N, F, cap=cap)``: a cap is at most that many
    threads, never more than the data warrants (one below 2**18 rows x features for a
    histogram, 2**20 for a whole tree: ``tree``)."""
    if cap is None:
        return None
    from .. import native as native_kernel

    N, F = bins.shape
    work = native_kernel.MIN_TREE_WORK_FOR_THREADS if tree else native_kernel._MIN_WORK_FOR_THREADS
    return native_kernel.default_threads(N, F, cap=cap, min_work=work)


def bin_reader(bins, native: bool):
    """``bin_of(f_row) -> (N,)``: each row's bin of its own feature ``f_row[i]``."""
    bins = jnp.asarray(bins)
    rows = jnp.arange(bins.shape[0] if native else bins.shape[1], dtype=INDEX_DTYPE)
    if native:
        return lambda f_row: bins[rows, f_row]
    return lambda f_row: bins[f_row, rows]


def route(pos, local, in_level, do, f_best, t_best, dl_best, bin_of, B):
    """Move the rows of a level's split nodes to their children.

    One packed table lookup per row (feature, threshold bin, default direction), then
    the row's bin. Rows of nodes that did not split, and rows outside the level, stay.
    """
    n = do.shape[0]
    code = split_code(do, f_best, t_best, dl_best, B)
    c_row = code[jnp.minimum(local, n - 1)]
    b_row = bin_of(code_feature(c_row, B)).astype(INDEX_DTYPE)
    go_left = code_goes_left(b_row, c_row, B)
    move = in_level & (c_row >= 0)
    return jnp.where(move, 2 * pos + 1 + (~go_left).astype(INDEX_DTYPE), pos)


def _pow2(d):
    """``2**d`` as int32 for a Python or traced level ``d``."""
    return jnp.left_shift(jnp.int32(1), jnp.asarray(d, INDEX_DTYPE))


def _level_window(d, width):
    """Heap indices ``2**d - 1 + [0, width)`` of level ``d`` and which are its nodes."""
    n = _pow2(d)
    k = jnp.arange(width, dtype=INDEX_DTYPE)
    return n - 1 + k, k < n


def prune_gamma(is_split, gain, gamma, D):
    """gamma post-pruning, bottom-up: a split whose children are both leaves is removed
    when its gain < gamma, then its parent is checked.

    A loop over levels ``D - 1 .. 0``, each a ``2**(D - 1)``-wide window of the heap.
    """
    if D == 0:
        return is_split
    width = 2 ** (D - 1)

    def level(i, is_split):
        idx, real = _level_window(D - 1 - i, width)
        both_leaves = ~is_split[2 * idx + 1] & ~is_split[2 * idx + 2]
        prune = real & is_split[idx] & both_leaves & (gain[idx] < gamma)
        return is_split.at[idx].set(is_split[idx] & ~prune)

    return jax.lax.fori_loop(0, D, level, is_split)


def leaf_of(pos, is_split, D):
    """Each row's leaf: the shallowest ancestor of its deepest node that is not split.

    Computed top-down over the small tree (a representative per node; a loop over
    levels), then one lookup per row.
    """
    rep = jnp.arange(2 ** (D + 1) - 1, dtype=INDEX_DTYPE)
    if D == 0:
        return rep[pos]
    width = 2**D

    def level(d, rep):
        idx, real = _level_window(d, width)
        par = (idx - 1) // 2
        prep = rep[par]
        new = jnp.where((prep != par) | ~is_split[par], prep, idx)
        return rep.at[idx].set(jnp.where(real, new, rep[idx]))

    return jax.lax.fori_loop(1, D + 1, level, rep)[pos]


def _empty_structure(M, cats=False):
    """Heap arrays of a tree's split decisions, all "no split" (``cats``: with the
    categorical splits' ``is_cat`` and category sets ``bits``)."""
    out = dict(
        feature=jnp.zeros(M, INDEX_DTYPE),
        tbin=jnp.zeros(M, INDEX_DTYPE),
        default_left=jnp.zeros(M, bool),
        is_split=jnp.zeros(M, bool),
        gain=jnp.zeros(M, FLOAT_DTYPE),
    )
    if cats:
        out.update(is_cat=jnp.zeros(M, bool), bits=jnp.zeros((M, categorical.N_WORDS), jnp.uint32))
    return out


def _record(structure, off, do, s):
    """Write one level's decisions (``do`` which nodes split, ``s`` their best splits)
    at heap offset ``off``."""
    level = dict(
        feature=jnp.where(do, s["feature"], 0),
        tbin=jnp.where(do, s["tbin"], 0),
        default_left=do & s["default_left"],
        is_split=do,
        gain=jnp.where(do, s["gain"], 0.0),
    )
    if "bits" in structure:
        level.update(
            is_cat=do & s["is_cat"],
            bits=jnp.where(
                (do & s["is_cat"])[:, None], categorical.pack_bits(s["left"]), jnp.uint32(0)
            ),
        )
    return {
        k: jax.lax.dynamic_update_slice(
            structure[k],
            level[k].astype(structure[k].dtype),
            (off,) + (off * 0,) * (level[k].ndim - 1),
        )
        for k in structure
    }


def _finish(structure, pos, dyn, cuts_ext, D):
    """gamma-pruned structure and each row's leaf.

    Returns ``(fields, leaf)``: ``fields`` has every tree field but ``value`` and
    ``cover``, as ``(M,)`` arrays (``cat_bits`` ``(M, N_WORDS)`` when the structure has
    categorical splits, whose ``threshold`` is NaN and ``tbin`` 0).
    """
    is_split = prune_gamma(structure["is_split"], structure["gain"], dyn.gamma, D)
    leaf = leaf_of(pos, is_split, D)
    return split_fields(dict(structure, is_split=is_split), cuts_ext), leaf


def split_fields(structure, cuts_ext):
    """A tree's fields but ``value`` and ``cover`` from its (final, pruned) split
    structure: the split fields of nodes that do not split zeroed, thresholds from
    ``cuts_ext`` (NaN at leaves and categorical splits)."""
    is_split = structure["is_split"]
    feature = jnp.where(is_split, structure["feature"], 0)
    tbin = jnp.where(is_split, structure["tbin"], 0)
    threshold = jnp.where(is_split, cuts_ext[feature, tbin], jnp.float32(jnp.nan))
    if "bits" in structure:
        cat = is_split & structure["is_cat"]
        threshold = jnp.where(cat, jnp.float32(jnp.nan), threshold)
    fields = dict(
        feature=feature,
        tbin=tbin,
        threshold=threshold.astype(FLOAT_DTYPE),
        default_left=structure["default_left"] & is_split,
        is_leaf=~is_split,
        gain=jnp.where(is_split, structure["gain"], 0.0).astype(FLOAT_DTYPE),
    )
    if "bits" in structure:
        fields["cat_bits"] = jnp.where(cat[:, None], structure["bits"], jnp.uint32(0))
    return fields


def _chunked_splits(find, n, width, *node_args):
    """``find(*args)`` over a level's nodes in chunks of ``SPLIT_CHUNK``.

    ``node_args`` are ``(array, axis)`` pairs whose ``axis`` runs over the ``width``
    (padded) nodes. Only the chunks that hold some of the first ``n`` (traced) nodes are
    computed; the others report gain ``-inf`` (no split).
    """
    c = SPLIT_CHUNK
    if width <= c:
        return find(*[a for a, _ in node_args])
    assert width % c == 0

    def chunk(k, acc):
        args = [jax.lax.dynamic_slice_in_dim(a, k * c, c, axis) for a, axis in node_args]
        s = find(*args)
        return {
            key: jax.lax.dynamic_update_slice_in_dim(
                acc[key], s[key].astype(acc[key].dtype), k * c, 0
            )
            for key in acc
        }

    init = dict(
        gain=jnp.full(width, -jnp.inf, FLOAT_DTYPE),
        feature=jnp.zeros(width, INDEX_DTYPE),
        tbin=jnp.zeros(width, INDEX_DTYPE),
        default_left=jnp.zeros(width, bool),
    )
    n_chunks = (n + (c - 1)) // c
    return jax.lax.fori_loop(jnp.int32(0), n_chunks.astype(INDEX_DTYPE), chunk, init)


def _children_sums(S, s, B, channels_last=False):
    """Children totals of nodes from their split feature's histogram row.

    ``S``: ``(C, F, n, B)`` histograms (``(F, n, B, C)`` with ``channels_last``, the
    vector leaves' layout), ``s`` the nodes' splits; returns ``(C, 2 n)``, children
    interleaved (left, right).
    """
    n = S.shape[2] if not channels_last else S.shape[1]
    node_ids = jnp.arange(n, dtype=INDEX_DTYPE)
    bins_idx = jnp.arange(B, dtype=INDEX_DTYPE)
    if channels_last:  # only the split features' rows move: (n, B, C) -> (C, n, B)
        rows = jnp.moveaxis(S[s["feature"], node_ids], -1, 0)
    else:
        rows = S[:, s["feature"], node_ids]  # (C, n, B)
    goes_left = bin_goes_left(
        bins_idx[None, :], s["tbin"][:, None], s["default_left"][:, None], B
    )  # (n, B)
    SL = jnp.sum(jnp.where(goes_left, rows, 0.0), axis=2)
    SR = jnp.sum(jnp.where(goes_left, 0.0, rows), axis=2)
    return jnp.stack([SL, SR], axis=2).reshape(rows.shape[0], 2 * n)


def _rows_of_level(pos, d, width):
    """``(local, in_level)``: each row's node within level ``d`` (``width`` for rows of
    other levels) and whether it is in the level."""
    n = _pow2(d)
    local = pos - (n - 1)
    in_level = (local >= 0) & (local < n)
    return jnp.where(in_level, local, width), in_level


class TreeSpec(NamedTuple):
    """What fixes a tree builder's program (static, hashable).

    ``max_depth``; ``max_bin``: ``B``, the bins per feature of the histograms (the
    data's bucket, ``binning.BinEdges.n_bins``; bin ``B - 1`` holds missing values);
    ``native``: the native histogram kernel (row-major bins)
    with the subtraction trick, else the pure-JAX histogram (feature-major bins);
    ``clipped``, ``any_forward``: static promises passed to ``split.find_best_splits``;
    ``native_threads``: the most threads of the native kernel (``train``'s ``n_jobs``;
    ``None``: every core), one where the data is too small for threads either way
    (:func:`kernel_threads`);
    ``diagonal``: vector leaves use only the diagonal of H (``grow_vector_tree``);
    ``feature_block``: features per histogram block (``grow_tree``), None: the
    ``feature_block`` function's choice (blocks only when the histograms would exceed
    ``HIST_MEMORY``); ``subtract``: the subtraction trick without the native kernel
    (the accelerators' pure-JAX histograms, whose skipped rows cost next to nothing;
    always on with ``native``); ``max_leaves``: > 0 grows leaf-wise (the native
    kernels only: ``jaxboost.native.grow_tree``); ``depth_bucket``: ``max_depth`` is a
    bucket of depths and ``rules.depth`` (``SplitRules``) the one to grow (only the
    native whole-tree kernel grows so: ``bucketed_depth``).
    """

    max_depth: int
    max_bin: int
    native: bool = False
    clipped: bool = True
    any_forward: bool = True
    native_threads: Optional[int] = None
    diagonal: bool = False
    feature_block: Optional[int] = None
    subtract: bool = False
    max_leaves: int = 0
    depth_bucket: bool = False


DEPTH_BUCKETS = (6, 8)
"""Depths up to 6 compile the program of depth 6, 7 and 8 that of 8 (``bucketed_depth``);
deeper trees compile their own."""


def bucketed_depth(max_depth: int, n_features: int, max_bin: int) -> int:
    """The depth a program is compiled for when the native whole-tree kernel grows the
    trees (one device, no constraints, one output per tree): the
    smallest of ``DEPTH_BUCKETS`` at or above ``max_depth`` (``max_depth`` itself above
    them), so a notebook's or a grid search's depths 2-6 share one round program. The
    kernel's work follows the live nodes, so the deeper arrays cost next to nothing;
    the trees are cut back to ``max_depth`` after training. ``max_depth`` itself when
    the deeper level's histograms would be taken in feature blocks (``feature_block``:
    then the XLA tree builder, which grows at the program's depth, would take over).

    >>> bucketed_depth(3, 30, 256), bucketed_depth(7, 30, 256), bucketed_depth(12, 30, 256)
    (6, 8, 12)
    """
    bucket = next((b for b in DEPTH_BUCKETS if b >= max_depth), max_depth)
    if bucket == max_depth or max_depth < 1:
        return max_depth
    if not native_tree_takes(None, n_features, bucket, max_bin):
        return max_depth
    return bucket


_BUCKET_ERROR = (
    "internal error: a program compiled for a bucket of depths must grow its trees with "
    "the native whole-tree kernel on dense bins (training.program.round_spec chose a "
    "bucket where it does not apply)"
)


class SplitRules(NamedTuple):
    """``grow_tree``'s optional rules of split finding, each None when off (the program
    is then the one without it): ``cats``, the categorical features'
    ``categorical.CatInfo`` (traced arrays); ``constraints``, a
    ``constraints.TreeConstraints`` (monotone, interaction, row minimum per child);
    ``depth``, the traced depth to grow in a program compiled for a bucket of depths
    (``TreeSpec.depth_bucket``)."""

    cats: Any = None
    constraints: Any = None
    depth: Any = None


def grow_tree(
    bins,
    g,
    h,
    dyn,
    cuts_ext,
    forward_ok,
    spec: TreeSpec,
    *,
    reduce=_identity,
    features=None,
    rules: Optional[SplitRules] = None,
):
    """Grow one tree.

    Every level, the root's included, runs in one ``lax.fori_loop`` over
    ``2**(max_depth - 1)``-wide arrays (see the module docstring), so the compiled
    program's size does not depend on ``max_depth``.

    Args:
      bins: uint8 bins, bin ``B - 1`` = missing (``B = spec.max_bin``); feature-major
        ``(F, N)`` for the pure-JAX histogram, row-major ``(N, F)`` when ``native``.
      g, h: ``(N,)`` float32 gradients and Hessians (already weighted; 0 for padding).
      dyn: ``split.TreeHyper``, the traced tree parameters.
      cuts_ext: ``(F, B)`` float32, ``-inf``, the cuts, then ``+inf`` padding:
        ``cuts_ext[f, t]`` is the float threshold of "bins < t go left".
      forward_ok: ``(F,)`` bool (see ``split.find_best_splits``).
      spec: ``TreeSpec`` (static). With ``native`` or ``subtract``, below the root
        only the smaller child of every split is histogrammed, its sibling is the
        parent's histogram minus it.
      reduce: sums a per-device partial over devices (``lax.psum`` under
        ``shard_map``; the identity on one device). Applied to histograms and node sums,
        the only quantities that need every row.
      features: optional ``sampling.FeatureSampler`` (column sampling).
      rules: optional ``SplitRules`` (each field None: off). ``rules.cats``:
        ``categorical.CatInfo``, categorical features split by sets of categories
        (``jaxboost.engine.categorical``); the tree then has ``cat_bits``
        ``(M, N_WORDS)`` uint32, each categorical split's categories going left.
        ``rules.constraints``: ``constraints.TreeConstraints`` (monotone, interaction,
        row minimum per child); with monotone constraints ``tree`` also holds every
        node's own weight bounds, ``lower`` and ``upper`` ``(M,)`` float32. Both may
        be given (``training.config`` refuses a monotone sign on a categorical
        feature).

    Example:
      >>> import numpy as np
      >>> from jaxboost.engine.split import TreeHyper
      >>> bins = np.array([[0, 1, 2, 3]], np.uint8)  # one feature, 4 rows, feature-major
      >>> g, h = np.array([0.5, -0.5, 0.5, -0.5], np.float32), np.full(4, 0.25, np.float32)
      >>> cuts = np.array([[-np.inf, 1.5, 2.5, 3.5, np.inf]], np.float32)
      >>> tree, leaf = grow_tree(bins, g, h, TreeHyper(*np.float32([1, 0, 0, 0, 0, 0])),
      ...                        cuts, np.zeros(1, bool), TreeSpec(max_depth=1, max_bin=5))
      >>> # seed 001's root split: x < 3.5, leaves -G/H = -0.5/0.75 and 0.5/0.25
      >>> tree["threshold"][0].item(), [round(v, 4) for v in tree["value"][1:].tolist()]
      (3.5, [-0.6667, 2.0])

    Returns:
      ``(tree, leaf)``: ``tree`` a dict of ``(M,)`` arrays in heap layout (``feature``
      int32, ``tbin`` int32, ``threshold`` float32, ``default_left`` bool, ``is_leaf``
      bool, ``value`` float32 (learning rate applied), ``gain`` float32, ``cover``
      float32 = H); ``leaf`` ``(N,)`` int32, the leaf node of every row.
    """
    if isinstance(bins, tuple):  # CSC bins (training.data.sparse_rows)
        if spec.depth_bucket:
            raise RuntimeError(_BUCKET_ERROR)
        return _native_sparse_tree_grow(
            bins, g, h, dyn, cuts_ext, forward_ok, features, spec, rules, reduce
        )
    max_depth, max_bin, native, clipped, any_forward, native_threads = spec[:6]
    block = spec.feature_block
    D, B = max_depth, max_bin
    W = max(1, 2 ** (D - 1))  # nodes of the widest level that splits
    raw_histogram = pair_histogram(bins, native=native, max_bin=B, native_threads=native_threads)
    bin_of = bin_reader(bins, native)
    F = bins.shape[1] if native else bins.shape[0]
    rules = SplitRules() if rules is None else rules
    cats, cons = rules.cats, rules.constraints
    whole = native and native_tree_takes(
        bins.shape[0] if native else None, F, D, B, block, spec.max_leaves
    )
    block = feature_block(F, W, B) if block is None else min(int(block), F)
    if (
        whole
        and native_constraints(cons, cats)
        and reduce is _identity
        and D > 0
        and _native_tree()
    ):
        return _native_tree_grow(bins, g, h, dyn, cuts_ext, forward_ok, features, spec, rules)
    if spec.depth_bucket:  # would grow the bucket's depth, not the model's: never
        raise RuntimeError(_BUCKET_ERROR)
    if spec.max_leaves > 0:
        if native and not whole:  # the kernel's histograms would not fit
            raise ValueError(_lossguide_memory(bins.shape[0], F, D, B, spec.max_leaves))
        raise ValueError(LOSSGUIDE_WHERE)
    grow = _Grow(
        bins=bins,
        g=g,
        h=h,
        dyn=dyn,
        cuts_ext=cuts_ext,
        forward_ok=forward_ok,
        reduce=reduce,
        cats=cats,
        cons=cons,
        D=D,
        B=B,
        W=W,
        F=F,
        block=block,
        native=native,
        subtract=native or spec.subtract,
        native_threads=native_threads,
        clipped=clipped,
        any_forward=any_forward,
        counted=cons is not None and cons.spec.min_leaf,
        raw_histogram=raw_histogram,
        bin_of=bin_of,
        masks=None if features is None else features.levels(W),
    )  # (D, W, F)
    with jax.enable_x64(True):
        return grow.tree()


class _LevelState(NamedTuple):
    """The carry of ``grow_tree``'s level loop: ``pos`` each row's node, ``alive`` which
    of the level's ``W`` node slots exist, ``bufs`` the parent's and the current level's
    histograms (the subtraction trick; else None), ``structure`` the heap's split
    decisions (``_empty_structure``), ``Gn``, ``Hn`` the ``(M,)`` node totals and
    ``cstate`` the constraints' state (None without constraints)."""

    pos: Any
    alive: Any
    bufs: Any
    structure: Any
    Gn: Any
    Hn: Any
    cstate: Any


def _decide(acc, alive):
    """``(s, do, Gc, Hc)``: which nodes split (alive, gain worth it) and their children's
    totals (0 for nodes that do not split)."""
    do = alive & is_split_worthy(acc["gain"])
    do2 = jnp.repeat(do, 2)
    return acc, do, jnp.where(do2, acc["Gc"], 0.0), jnp.where(do2, acc["Hc"], 0.0)


def _full_chunks(Gh, Hh):
    """``hist_chunk`` over whole-level histograms ``(F, width, B)``."""

    def hist_chunk(k, c, bufs):
        return (
            jax.lax.dynamic_slice_in_dim(Gh, k * c, c, 1),
            jax.lax.dynamic_slice_in_dim(Hh, k * c, c, 1),
            bufs,
        )

    return hist_chunk


class _Grow(NamedTuple):
    """One ``grow_tree`` call on the XLA level loop, and its steps as methods.

    The traced inputs (``bins``, ``g``, ``h``, ``dyn``, ``cuts_ext``, ``forward_ok``),
    ``reduce`` and the split rules (``cats``, ``cons``: ``SplitRules``' fields) as
    ``grow_tree`` took them; the rest static, Python ints and bools: ``D`` the levels,
    ``B`` the bins, ``W`` the node slots of the widest level, ``F`` the features,
    ``block`` the features per histogram block (``F``: unblocked), ``subtract`` whether
    only the smaller children are histogrammed, ``counted`` whether the constraints
    need row counts (row minimum per child). ``raw_histogram`` is ``pair_histogram``'s
    function over ``bins``, ``bin_of`` ``bin_reader``'s, ``masks`` the ``(D, W, F)``
    column-sampling masks (or None).
    """

    bins: Any
    g: Any
    h: Any
    dyn: Any
    cuts_ext: Any
    forward_ok: Any
    reduce: Any
    cats: Any
    cons: Any
    D: int
    B: int
    W: int
    F: int
    block: int
    native: bool
    subtract: bool
    native_threads: Optional[int]
    clipped: bool
    any_forward: bool
    counted: Any
    raw_histogram: Any
    bin_of: Any
    masks: Any

    def histogram(self, node, n, n_active=None):
        """``raw_histogram`` of ``g`` and ``h``."""
        return self.raw_histogram(self.g, self.h, node, n, n_active)

    def tree(self):
        """``grow_tree``'s ``(tree, leaf)``, traced under ``enable_x64``."""
        D, W, F, B = self.D, self.W, self.F, self.B
        M = 2 ** (D + 1) - 1
        # Node totals: the root's from one sum; every other node's from its parent's
        # histogram of the split feature (no per-row scatter per level).
        Gn = jnp.zeros(M, ACC_DTYPE).at[0].set(self.reduce(jnp.sum(self.g.astype(ACC_DTYPE))))
        Hn = jnp.zeros(M, ACC_DTYPE).at[0].set(self.reduce(jnp.sum(self.h.astype(ACC_DTYPE))))
        pos = jnp.zeros(self.g.shape[0], INDEX_DTYPE)
        structure = _empty_structure(M, self.cats is not None)
        cons = self.cons
        cstate = None
        if cons is not None:
            cstate = cons.init(M, W, F)
            if self.counted and self.subtract and W > 1 and self.block == F:
                cstate["C"] = jnp.zeros((F, W, B), ACC_DTYPE)  # the parent level's counts
        if D > 0 and self.block < F:
            alive = jnp.zeros(W, bool).at[0].set(True)
            state = jax.lax.fori_loop(
                0,
                D,
                self.blocked_level_step,
                _LevelState(pos, alive, None, structure, Gn, Hn, cstate),
            )
            pos, structure, Gn, Hn, cstate = (
                state.pos,
                state.structure,
                state.Gn,
                state.Hn,
                state.cstate,
            )
        elif D > 0:
            pos, structure, Gn, Hn, cstate = self.levels(pos, structure, Gn, Hn, cstate)
        fields, leaf = _finish(structure, pos, self.dyn, self.cuts_ext, D)
        if cons is None:
            tree = dict(fields, value=leaf_values(Gn, Hn, self.dyn), cover=Hn.astype(FLOAT_DTYPE))
            return tree, leaf
        value, bounds = cons.leaf_values(cstate, structure["is_split"], Gn, Hn, self.dyn)
        tree = dict(fields, value=value, cover=Hn.astype(FLOAT_DTYPE))
        if bounds is not None:
            tree["lower"], tree["upper"] = bounds
        return tree, leaf

    def levels(self, pos, structure, Gn, Hn, cstate):
        """Levels ``0 .. D - 1`` of unblocked features, in one ``fori_loop``; returns
        ``(pos, structure, Gn, Hn, cstate)`` after the last."""
        W = self.W
        # The root's histogram (one node, every row), summed across devices once.
        local, _ = _rows_of_level(pos, 0, 1)
        root = Gh, Hh = self.reduce(self.histogram(local, 1))
        bufs = None
        if self.subtract and W > 1:
            # Two levels' histograms (parent, current) in one (F, 2 W, B) buffer
            # each for G and H: level d's at node offset (d % 2) * W. The root's
            # waits where level 0 looks for its parent's (offset W).
            bufs = tuple(
                jnp.zeros((self.F, 2 * W, self.B), ACC_DTYPE).at[:, W : W + 1].set(x)
                for x in (Gh, Hh)
            )
        elif W > 1:
            root = tuple(jnp.pad(x, ((0, 0), (0, W - 1), (0, 0))) for x in (Gh, Hh))
        alive = jnp.zeros(W, bool).at[0].set(True)
        state = jax.lax.fori_loop(
            0,
            self.D,
            functools.partial(self.level_step, root),
            _LevelState(pos, alive, bufs, structure, Gn, Hn, cstate),
        )
        return state.pos, state.structure, state.Gn, state.Hn, state.cstate

    def level_totals(self, d, state):
        """``(d, n, Gt, Ht, local, in_level)``: level ``d`` as int32, its ``n = 2**d``
        nodes, their ``(W,)`` totals and each row's node within the level."""
        d = d.astype(INDEX_DTYPE)
        n = _pow2(d)
        Gt = jax.lax.dynamic_slice(state.Gn, (n - 1,), (self.W,))
        Ht = jax.lax.dynamic_slice(state.Hn, (n - 1,), (self.W,))
        local, in_level = _rows_of_level(state.pos, d, self.W)
        return d, n, Gt, Ht, local, in_level

    def level_step(self, root, d, state: _LevelState) -> _LevelState:
        """One level of ``levels``' loop (``root``: the root's histograms, padded to
        ``W`` nodes without the subtraction trick)."""
        W, cons = self.W, self.cons
        d, n, Gt, Ht, local, in_level = self.level_totals(d, state)
        if W == 1:  # max_depth 1: the root is the only level
            hist_chunk = _full_chunks(*root)
        elif self.subtract:
            hist_chunk = self.subtract_chunks(d, (local, in_level), Ht, n)
        else:
            hist_chunk = _full_chunks(
                *jax.lax.cond(d > 0, lambda: self.reduce(self.histogram(local, W)), lambda: root)
            )
        counts, cstate = None, state.cstate
        if self.counted:
            counts, cstate = self.level_counts(d, local, in_level, Ht, cstate)
        lvl = None if cons is None else cons.level(cstate, d, W, counts)
        s, do, Gc, Hc, bufs = self.split_level(
            d, Gt, Ht, state.alive, hist_chunk, state.bufs, cstate, lvl
        )
        return self.next_level(
            d, (s, do, Gc, Hc), (local, in_level), state._replace(bufs=bufs, cstate=cstate), lvl
        )

    def blocked_level_step(self, d, state: _LevelState) -> _LevelState:
        """One level with the features in blocks (``blocked_level``)."""
        d, n, Gt, Ht, local, in_level = self.level_totals(d, state)
        lvl = None if self.cons is None else self.cons.level(state.cstate, d, self.W)
        found = self.blocked_level(d, Gt, Ht, state.alive, local, n, state.cstate, lvl)
        return self.next_level(d, found, (local, in_level), state, lvl)

    def subtract_chunks(self, d, rows, Ht, n):
        """``hist_chunk`` of level ``d`` with the subtraction trick: histogram only the
        smaller child of each pair (by hessian sum); its sibling is the parent's
        histogram (in ``bufs``) minus it. Level 0 has no pair: its node is the "larger
        child" of an empty smaller one, so it gets the root's histogram minus zero,
        unchanged."""
        W, B = self.W, self.B
        local, in_level = rows
        h2 = W // 2
        left_small = (Ht[0::2] <= Ht[1::2]) & (d > 0)  # (W/2,)

        def smaller_children():
            is_left = (local % 2) == 0
            in_small = in_level & (is_left == left_small[jnp.minimum(local, W - 1) // 2])
            return self.reduce(
                self.histogram(jnp.where(in_small, local // 2, h2), h2, n_active=n // 2)
            )

        def nothing():
            z = jnp.zeros((self.F, h2, B), ACC_DTYPE)
            return z, z

        Gs, Hs = jax.lax.cond(d > 0, smaller_children, nothing)
        parent, cur = ((d + 1) % 2) * W, (d % 2) * W

        def hist_chunk(k, c, bufs):
            p, cp = k * (c // 2), c // 2  # the chunk's sibling pairs
            ls = jax.lax.dynamic_slice_in_dim(left_small, p, cp, 0)[None, :, None]
            out = []
            for small, buf in zip((Gs, Hs), bufs):
                small = jax.lax.dynamic_slice_in_dim(small, p, cp, 1)
                large = jax.lax.dynamic_slice_in_dim(buf, parent + p, cp, 1) - small
                both = jnp.stack([jnp.where(ls, small, large), jnp.where(ls, large, small)], axis=2)
                out.append(both.reshape(small.shape[0], c, B))
            bufs = tuple(
                jax.lax.dynamic_update_slice_in_dim(buf, o, cur + k * c, 1)
                for buf, o in zip(bufs, out)
            )
            return out[0], out[1], bufs

        return hist_chunk

    def empty_acc(self):
        """The ``(W,)`` no-split values of ``best_splits``' accumulator."""
        width = self.W
        acc = dict(
            gain=jnp.full(width, -jnp.inf, FLOAT_DTYPE),
            feature=jnp.zeros(width, INDEX_DTYPE),
            tbin=jnp.zeros(width, INDEX_DTYPE),
            default_left=jnp.zeros(width, bool),
            Gc=jnp.zeros(2 * width, ACC_DTYPE),
            Hc=jnp.zeros(2 * width, ACC_DTYPE),
        )
        if self.cats is not None:
            acc.update(is_cat=jnp.zeros(width, bool), left=jnp.zeros((width, self.B), bool))
        return acc

    def count_histogram(self, hist, local, width, n_active):
        """``(F', width, B)`` float64 row counts of the level's nodes (row minimum)."""
        counts = self.cons.counts
        return self.reduce(hist(counts, jnp.zeros_like(counts), local, width, n_active))[0]

    def level_counts(self, d, local, in_level, Ht, cstate):
        """``(counts, cstate)``: the ``(F, W, B)`` row counts of level ``d``. With the
        native kernel, below the root, only the smaller child of each pair (the one the
        gradient histograms take) is counted; its sibling is the parent's counts, kept
        in ``cstate["C"]``, minus it. Counts are integers in float64: exact."""
        W, B, raw_histogram = self.W, self.B, self.raw_histogram
        n = _pow2(d)
        if not (self.subtract and W > 1):
            return self.count_histogram(raw_histogram, local, W, n), cstate
        h2 = W // 2
        left_small = (Ht[0::2] <= Ht[1::2]) & (d > 0)

        def pairs():
            is_left = (local % 2) == 0
            in_small = in_level & (is_left == left_small[jnp.minimum(local, W - 1) // 2])
            small = self.count_histogram(
                raw_histogram, jnp.where(in_small, local // 2, h2), h2, n // 2
            )
            large = cstate["C"][:, :h2] - small
            ls = left_small[None, :, None]
            both = jnp.stack([jnp.where(ls, small, large), jnp.where(ls, large, small)], axis=2)
            return both.reshape(small.shape[0], W, B)

        counts = jax.lax.cond(
            d > 0, pairs, lambda: self.count_histogram(raw_histogram, local, W, n)
        )
        return counts, dict(cstate, C=counts)

    def best_splits(self, d, totals, hist_chunk, bufs, view, lvl=None, alive=None):
        """Best split of each of level ``d``'s ``W`` nodes and its children's totals,
        chunk by chunk, over the features of ``hist_chunk``'s histograms. With ``alive``
        (the ``(W,)`` nodes that exist), only the chunks holding one are computed (in
        ascending order); the others keep ``empty_acc``'s no-split values.

        ``hist_chunk(k, c, bufs) -> (Gh, Hh, bufs)`` gives chunk ``k``'s ``(F', c, B)``
        histograms (nodes ``k c .. k c + c - 1``); ``view`` is ``(fok, level_mask,
        fcats)`` of the same ``F'`` features: ``(F',)`` ``forward_ok``, the ``(W, F')``
        column-sampling mask (or None) and the categorical features (or None).
        Returns ``(acc, bufs)``: ``acc`` the ``(W,)`` splits (``feature`` counted
        within the ``F'``) and ``(2 W,)`` children totals ``Gc``, ``Hc``. ``lvl``:
        the level's constraint inputs (``TreeConstraints.level``), or None.
        """
        fok, level_mask, fcats = view
        width, cons, dyn, B = self.W, self.cons, self.dyn, self.B
        clipped, any_forward = self.clipped, self.any_forward
        Gt, Ht = totals  # the (width,) node totals
        c = min(SPLIT_CHUNK, width)
        order = None
        if alive is not None and c < width:
            # the chunks that hold a node of the level, first and in ascending order:
            # on small data most of a deep level's slots are empty (breast cancer at
            # depth 6: 0.7 of 32 nodes at level 5), and their split search is skipped
            live = jnp.any(alive.reshape(width // c, c), axis=1)
            order = jnp.argsort(~live, stable=True).astype(INDEX_DTYPE)
            n_live = jnp.sum(live, dtype=INDEX_DTYPE)

        def chunk(i, carry):
            acc, bufs = carry
            k = i if order is None else order[i]
            Gh, Hh, bufs = hist_chunk(k, c, bufs)

            def sl(a):
                return jax.lax.dynamic_slice_in_dim(a, k * c, c, 0)

            mask = None if level_mask is None else sl(level_mask)
            if fcats is not None:
                node = None if lvl is None else cons.chunk(lvl, (k, c))
                s = categorical.find_best_splits(
                    (Gh, Hh),
                    (sl(Gt), sl(Ht)),
                    dyn,
                    fok,
                    fcats,
                    clipped=clipped,
                    any_forward=any_forward,
                    feature_mask=mask,
                    node=node,
                )
                s["Gc"], s["Hc"] = categorical.children_sums(Gh, Hh, s)
            else:
                if lvl is None:
                    s = find_best_splits(
                        Gh,
                        Hh,
                        sl(Gt),
                        sl(Ht),
                        dyn,
                        fok,
                        clipped=clipped,
                        any_forward=any_forward,
                        feature_mask=mask,
                    )
                else:
                    s = cons.find(
                        (Gh, Hh),
                        (sl(Gt), sl(Ht)),
                        dyn,
                        fok,
                        mask,
                        lvl,
                        (k, c),
                        clipped=clipped,
                        any_forward=any_forward,
                    )
                s["Gc"] = _children_sums(Gh[None], s, B)[0]  # (2 c,)
                s["Hc"] = _children_sums(Hh[None], s, B)[0]
            acc = {
                key: jax.lax.dynamic_update_slice_in_dim(
                    acc[key], s[key].astype(acc[key].dtype), k * c * acc[key].shape[0] // width, 0
                )
                for key in acc
            }
            return acc, bufs

        acc = self.empty_acc()
        if c == width:
            return chunk(jnp.int32(0), (acc, bufs))
        # only the chunks that hold some of the level's 2**d nodes (live ones)
        n_chunks = (_pow2(d) + (c - 1)) // c if order is None else n_live
        return jax.lax.fori_loop(jnp.int32(0), n_chunks, chunk, (acc, bufs))

    def level_mask(self, d, cstate):
        """``(W, F)`` features level ``d``'s nodes may split on, or None (all)."""
        mask = None if self.masks is None else self.masks[d]
        return mask if self.cons is None else self.cons.level_mask(cstate, d, mask)

    def split_level(self, d, Gt, Ht, alive, hist_chunk, bufs, cstate=None, lvl=None):
        """``_decide`` on ``best_splits`` over every feature; ``(s, do, Gc, Hc, bufs)``."""
        view = (self.forward_ok, self.level_mask(d, cstate), self.cats)
        acc, bufs = self.best_splits(d, (Gt, Ht), hist_chunk, bufs, view, lvl=lvl, alive=alive)
        return _decide(acc, alive) + (bufs,)

    def blocked_level(self, d, Gt, Ht, alive, local, n_active, cstate=None, lvl=None):
        """``split_level`` with the features in blocks of ``block`` (see the module
        docstring): each block's histograms of every node of the level, its best
        splits, kept where strictly better than the blocks before."""
        full_mask = self.level_mask(d, cstate)
        width, block, F, cons, cats = self.W, self.block, self.F, self.cons, self.cats

        def one_block(b, best):
            f0 = jnp.minimum(b * block, F - block)  # the last block may overlap the one before
            block_bins = jax.lax.dynamic_slice_in_dim(self.bins, f0, block, 1 if self.native else 0)
            hist = pair_histogram(
                block_bins, native=self.native, max_bin=self.B, native_threads=self.native_threads
            )
            Gh, Hh = self.reduce(hist(self.g, self.h, local, width, n_active))
            fok = jax.lax.dynamic_slice_in_dim(self.forward_ok, f0, block, 0)
            mask = (
                None if full_mask is None else jax.lax.dynamic_slice_in_dim(full_mask, f0, block, 1)
            )
            block_lvl = (
                None
                if lvl is None
                else cons.block(
                    lvl,
                    f0,
                    block,
                    self.count_histogram(hist, local, width, n_active) if self.counted else None,
                )
            )
            view = (fok, mask, None if cats is None else cats.block(f0, block))
            acc, _ = self.best_splits(
                d, (Gt, Ht), _full_chunks(Gh, Hh), None, view, block_lvl, alive=alive
            )
            acc["feature"] = acc["feature"] + f0
            better = acc["gain"] > best["gain"]
            better2 = jnp.repeat(better, 2)

            def keep(v, a):
                cond = better2 if v.shape[0] == 2 * width else better
                return jnp.where(cond.reshape(cond.shape + (1,) * (v.ndim - 1)), a, v)

            return {k: keep(v, acc[k]) for k, v in best.items()}

        best = self.empty_acc()
        n_blocks = -(-F // block)
        best = jax.lax.fori_loop(0, n_blocks, one_block, best)
        return _decide(best, alive)

    def next_level(self, d, found, rows, state: _LevelState, lvl) -> _LevelState:
        """Record level ``d``'s splits and children totals, route its rows, update the
        constraints' state: the loop's state for level ``d + 1``.

        ``found``: ``split_level``'s ``(s, do, Gc, Hc)``; ``rows``: ``(local,
        in_level)``; ``lvl``: the level's constraint inputs (or None)."""
        s, do, Gc, Hc = found
        local, in_level = rows
        n = _pow2(d)
        structure = _record(state.structure, n - 1, do, s)
        Gn = jax.lax.dynamic_update_slice(state.Gn, Gc, (2 * n - 1,))
        Hn = jax.lax.dynamic_update_slice(state.Hn, Hc, (2 * n - 1,))
        if self.cats is None:
            pos = route(
                state.pos,
                local,
                in_level,
                do,
                s["feature"],
                s["tbin"],
                s["default_left"],
                self.bin_of,
                self.B,
            )
        else:
            pos = categorical.route(
                state.pos, local, in_level, do, s["feature"], s["left"], self.bin_of
            )
        cstate = state.cstate
        if self.cons is not None:
            cstate = self.cons.after_level(
                cstate, d, self.W, lvl, do, s["feature"], Gc, Hc, self.dyn
            )
        return _LevelState(pos, jnp.repeat(do, 2)[: self.W], state.bufs, structure, Gn, Hn, cstate)


LOSSGUIDE_WHERE = (
    "grow_policy='lossguide' is grown by the native CPU tree kernel: on one CPU device, "
    "no monotone constraints next to categorical features, one "
    "output per tree, at "
    "most 4,096 bins per feature; this training uses the XLA tree builder"
)


def _lossguide_memory(n_rows, n_features, max_depth, max_bin, max_leaves) -> str:
    """The error of a leaf-wise tree whose histograms the native kernel cannot hold."""
    from .. import native as native_kernel

    need = native_kernel.tree_scratch_bytes(n_rows, n_features, max_depth, max_bin, max_leaves)
    return (
        f"grow_policy='lossguide' with max_leaves={max_leaves} and max_depth={max_depth} on "
        f"{n_features} features and {max_bin} bins needs {-(-need >> 20)} MiB of histograms in "
        f"the native CPU tree kernel, more than its limit of "
        f"{(NATIVE_TREE_MEMORY_FACTOR * HIST_MEMORY) >> 20} MiB (2 x "
        f"jaxboost.engine.grow.HIST_MEMORY); lower max_leaves, max_bin or max_depth"
    )


def _native_tree() -> bool:
    from .. import native as native_kernel

    return native_kernel.tree_enabled()


def native_constraints(cons, cats=None) -> bool:
    """Whether the native tree kernel takes a tree's split constraints ``cons``
    (``constraints.TreeConstraints`` or None) with categorical features ``cats``:
    interaction constraints and ``min_samples_leaf`` always, monotone ones without
    categorical features (with them the XLA level loop grows the tree)."""
    return cons is None or cats is None or not cons.spec.monotone


def _native_monotone_leaves(cons, s, Gn, Hn, dyn, D):
    """``(value, (lower, upper))`` of a tree the native kernel grew under monotone
    constraints: every node's bounds replayed level by level from its splits by
    ``constraints.TreeConstraints.after_level`` (the level loop's own rule), then
    ``TreeConstraints.leaf_values``. Nodes below a split that gamma pruned get no bounds
    here (the level loop keeps those it had while growing): they are not reachable, and
    every reachable node's value and bounds are the level loop's."""
    mono = TreeConstraints(cons.spec._replace(n_sets=0), cons.values, cons.counts)
    state = mono.init(Gn.shape[0], 1, 0)
    for d in range(D):  # level d: heap nodes 2^d - 1 .., children 2^(d+1) - 1 ..
        n = 2**d
        nodes = slice(n - 1, 2 * n - 1)
        kids = slice(2 * n - 1, 4 * n - 1)  # left, right interleaved
        lvl = dict(lo=state["lo"][nodes], hi=state["hi"][nodes])
        do, feature = s["is_split"][nodes], s["feature"][nodes]
        state = mono.after_level(state, d, n, lvl, do, feature, Gn[kids], Hn[kids], dyn)
    return mono.leaf_values(state, s["is_split"], Gn, Hn, dyn)


def _native_tree_grow(bins, g, h, dyn, cuts_ext, forward_ok, features, spec: TreeSpec, rules):
    """``grow_tree`` by the native whole-tree kernel (``jaxboost.native.grow_tree``):
    the same level loop (smaller children histogrammed, siblings by subtraction, the
    split rules of ``jaxboost.engine.split``) in one call per tree, its work following
    the live nodes. Used on CPU with the native kernel on one device (numeric and
    categorical features, the split constraints ``native_constraints`` takes, features
    unblocked);
    ``JAXBOOST_NATIVE_TREE=0`` keeps the XLA level loop."""
    from .. import native as native_kernel

    cons = rules.constraints
    mono = cons.values.monotone if cons is not None and cons.spec.monotone else None
    minimum = cons is not None and cons.spec.min_leaf  # the row counts go with it
    with jax.enable_x64(True):
        root, hyper = _native_inputs(g, h, dyn)
        s, Gn, Hn, leaf = native_kernel.grow_tree(
            bins,
            g,
            h,
            hyper,
            root,
            forward_ok,
            None if features is None else features.native_args(),
            spec.max_depth,
            spec.max_bin,
            n_threads=kernel_threads(bins, spec.native_threads, tree=True),
            max_leaves=spec.max_leaves,
            depth=rules.depth if spec.depth_bucket else None,  # the model's own depth
            cats=rules.cats,
            sets=None if cons is None or not cons.spec.n_sets else cons.values.sets,
            mono=mono,
            counts=cons.counts if minimum else None,
            min_leaf=cons.values.min_leaf if minimum else None,
        )
        if mono is None:
            return _native_tree_fields(s, Gn, Hn, leaf, dyn, cuts_ext)
        value, (lower, upper) = _native_monotone_leaves(cons, s, Gn, Hn, dyn, spec.max_depth)
        tree = dict(split_fields(s, cuts_ext), value=value, cover=Hn.astype(FLOAT_DTYPE))
        return dict(tree, lower=lower, upper=upper), leaf


def class_trees_in_parallel(bins, spec: TreeSpec, reduce, rules: SplitRules) -> bool:
    """Whether a round's class trees (one per output) are grown by the native kernel
    side by side (:func:`native_class_trees`), not one after another: dense bins on the
    native tree path (as :func:`grow_tree` would take it), data too small for threads
    within a tree (below ``jaxboost.native.MIN_TREE_WORK_FOR_THREADS`` rows x
    features), and more than one core for the trees (under ``native_threads``, the
    ``n_jobs`` cap)."""
    from .. import native as native_kernel

    if isinstance(bins, tuple) or not spec.native or spec.max_depth < 1:
        return False
    if rules.constraints is not None or reduce is not _identity:
        return False
    N, F = bins.shape
    if not native_tree_takes(
        N,
        F,
        spec.max_depth,
        spec.max_bin,
        spec.feature_block,
        spec.max_leaves,
    ):
        return False
    if not _native_tree():
        return False
    cap = spec.native_threads
    one = native_kernel.default_threads(N, F, min_work=native_kernel.MIN_TREE_WORK_FOR_THREADS)
    return one == 1 and native_kernel.default_threads(cap=cap) > 1


def native_class_trees(
    bins, G, H, dyn, cuts_ext, forward_ok, colsample, spec: TreeSpec, depth, cats=None
):
    """The ``T`` trees of ``G``, ``H`` ``(T, N)`` by ``jaxboost.native.grow_trees``: each
    the tree :func:`grow_tree` grows on its row of ``G``, ``H`` (bit for bit: one thread
    per tree in both), the trees side by side on the cores. ``colsample``: ``None`` or
    the trees' stacked ``FeatureSampler.native_args``. Returns ``(trees, leaves)`` with
    a leading ``T``. The root sums and the fields are computed tree by tree
    (``lax.map``), in the shapes :func:`grow_tree` uses."""
    from .. import native as native_kernel

    with jax.enable_x64(True):
        root, hyper = jax.lax.map(lambda gh: _native_inputs(gh[0], gh[1], dyn), (G, H))
        if spec.depth_bucket:  # each tree's depth, as grow_tree passes it
            d = jnp.asarray(depth, jnp.float32).reshape(1, 1)
            hyper = jnp.concatenate([hyper, jnp.broadcast_to(d, (hyper.shape[0], 1))], axis=1)
        s, Gn, Hn, leaf = native_kernel.grow_trees(
            bins,
            G,
            H,
            hyper,
            root,
            forward_ok,
            colsample,
            spec.max_depth,
            spec.max_bin,
            n_threads=native_kernel.default_threads(cap=spec.native_threads),
            max_leaves=spec.max_leaves,
            cats=cats,
        )
        return jax.lax.map(
            lambda a: _native_tree_fields(a[0], a[1], a[2], a[3], dyn, cuts_ext), (s, Gn, Hn, leaf)
        )


def _native_sparse_tree_grow(bins, g, h, dyn, cuts_ext, forward_ok, features, spec, rules, reduce):
    """``grow_tree`` on CSC bins ``(colptr, rows, ebin)`` by the native sparse tree kernel
    (``jaxboost.native.grow_tree_sparse``; ``training.data.sparse_rows`` chose them only
    where it applies: numeric features, monotone constraints at most)."""
    from .. import native as native_kernel

    cons = None if rules is None else rules.constraints
    if (
        (rules is not None and rules.cats is not None)
        or (cons is not None and (cons.spec.n_sets or cons.spec.min_leaf))
        or reduce is not _identity
        or spec.max_depth < 1
    ):
        raise NotImplementedError("CSC bins grow numeric trees on one device only")
    mono = cons.values.monotone if cons is not None and cons.spec.monotone else None
    with jax.enable_x64(True):
        root, hyper = _native_inputs(g, h, dyn)
        s, Gn, Hn, leaf = native_kernel.grow_tree_sparse(
            bins,
            g,
            h,
            hyper,
            root,
            forward_ok,
            None if features is None else features.native_args(),
            spec.max_depth,
            spec.max_bin,
            max_leaves=spec.max_leaves,
            mono=mono,
        )
        if mono is None:
            return _native_tree_fields(s, Gn, Hn, leaf, dyn, cuts_ext)
        value, (lower, upper) = _native_monotone_leaves(cons, s, Gn, Hn, dyn, spec.max_depth)
        tree = dict(split_fields(s, cuts_ext), value=value, cover=Hn.astype(FLOAT_DTYPE))
        return dict(tree, lower=lower, upper=upper), leaf


def _native_inputs(g, h, dyn):
    """The root's float64 sums of g and h, and ``dyn`` as the kernels' ``(6,)`` array."""
    root = jnp.stack([jnp.sum(g.astype(ACC_DTYPE)), jnp.sum(h.astype(ACC_DTYPE))])
    return root, jnp.stack([jnp.asarray(x, FLOAT_DTYPE) for x in dyn])


def _native_tree_fields(s, Gn, Hn, leaf, dyn, cuts_ext):
    """``(tree, leaf)`` of a native kernel's output (gamma-pruned already)."""
    tree = dict(
        split_fields(s, cuts_ext), value=leaf_values(Gn, Hn, dyn), cover=Hn.astype(FLOAT_DTYPE)
    )
    return tree, leaf


def hessian_channels(h, diagonal: bool):
    """``(N, K, K)`` per-row Hessians -> ``(N, P)`` channels (``split.unpack_hessian``);
    ``(N, K)`` diagonals (``diagonal``) pass through."""
    K = h.shape[-1]
    if diagonal:
        return h if h.ndim == 2 else jnp.diagonal(h, axis1=-2, axis2=-1)
    iu, ju = jnp.triu_indices(K)
    return h[:, iu, ju]


def bins_in_use(cuts_ext):
    """``(F,)`` int32: the value bins of each numeric feature, ``n_cuts + 1`` (its rows
    lie in bins ``0 .. n_cuts`` and the missing bin): the entries of ``cuts_ext`` below
    ``+inf`` (``-inf`` at bin 0, then the cuts; the bucket's padding is ``+inf``).

    >>> import numpy as np
    >>> cuts_ext = np.array([[-np.inf, 0.5, 1.5, np.inf], [-np.inf, np.inf, np.inf, np.inf]])
    >>> bins_in_use(cuts_ext).tolist()
    [3, 1]
    """
    return jnp.sum(jnp.asarray(cuts_ext) < jnp.inf, axis=1, dtype=INDEX_DTYPE)


def _vector_finder(dyn, forward_ok, K, diagonal, any_forward, native=False, n_valid=None):
    """``find(S, St, mask=None)``: the best vector-leaf split of each node of
    channels-last histograms ``S`` ``(F, n, B, C)`` (``split.find_best_vector_splits``;
    by the native kernel with ``native``, which reads no bin past ``n_valid``, see
    ``bins_in_use``), as ``_chunked_splits`` calls it."""

    def find(S, St, mask=None):
        if native:
            return native_vector_splits(
                S, St, dyn, forward_ok, K=K, diagonal=diagonal, any_forward=any_forward,
                feature_mask=mask, n_valid=n_valid,
            )  # fmt: skip
        return find_best_vector_splits(
            S,
            St,
            dyn,
            forward_ok,
            channels_last=True,
            K=K,
            diagonal=diagonal,
            any_forward=any_forward,
            feature_mask=mask,
        )

    return find


def _vector_children(histogram, reduce, K, rows, n, St, S_up, exact_width=False):
    """A level's ``(F, W, B, C)`` vector-leaf histograms by the subtraction trick: only
    the smaller child of each pair (by its Hessian channels' absolute sum, ``St``: the
    level's ``(C, W)`` node sums) is histogrammed, its sibling is the parent's histogram
    (``S_up``, the level above's, parents in its first ``W / 2`` slots) minus it: half
    the rows or fewer per level instead of all of them (``n``: the level's nodes).
    ``exact_width``: ``S_up`` holds exactly the level's parents (a level of static
    width, ``grow_vector_tree``'s two deepest) and the result twice as many slots."""
    local, in_level = rows
    F, W, B, C = S_up.shape
    h2 = W // 2
    if exact_width:
        h2, W = W, 2 * W
    size = jnp.sum(jnp.abs(St[K:]), axis=0)  # (W,)
    left_small = size[0::2] <= size[1::2]  # (W / 2,)
    is_left = (local % 2) == 0
    in_small = in_level & (is_left == left_small[jnp.minimum(local, W - 1) // 2])
    small = reduce(histogram(jnp.where(in_small, local // 2, h2), h2, n // 2))
    large = S_up[:, :h2] - small
    # Slot 2 i + j holds pair i's left (j = 0) or right child, built in the (F, W, B, C)
    # layout directly (a stack then a reshape was materialised twice by XLA: once per
    # layout, for the next level and for the split search).
    first = jnp.repeat(left_small, 2) == (jnp.arange(W) % 2 == 0)  # slot holds a small
    pick = jnp.repeat(jnp.arange(h2), 2)
    return jnp.where(first[None, :, None, None], small[:, pick], large[:, pick])


VECTOR_LOOP_DEPTH = 4
"""Vector-leaf trees up to this depth run every level in one loop on the widest level's
node slots; deeper ones run their two deepest levels on their own nodes
(``grow_vector_tree``)."""


class _VectorLevels(NamedTuple):
    """The level steps of ``grow_vector_tree`` (its histograms, split search and
    routing), closed over the tree's fixed inputs."""

    histogram: Any  # channel_histogram's: (F, n, B, C) float64
    C: int
    K: int
    B: int
    reduce: Any
    find: Any
    masks: Any  # (D, W, F) feature masks, or None
    bin_of: Any
    native: bool

    def split_level(self, d, S, St, alive, rows, structure, Sn, exact):
        local, in_level, pos = rows
        args = [(S, 1), (St, 1)]
        if self.masks is not None:
            args.append((self.masks[d][: S.shape[1]], 0))
        if exact and self.native:  # every node live: one call of the native search
            s = self.find(*[a for a, _ in args])
        else:  # chunks of live nodes (and bounded memory for XLA's search)
            s = _chunked_splits(self.find, _pow2(d), S.shape[1], *args)
        do = alive & is_split_worthy(s["gain"])
        n = _pow2(d)
        structure = _record(structure, n - 1, do, s)
        Sc = jnp.where(
            jnp.repeat(do, 2)[None, :], _children_sums(S, s, self.B, channels_last=True), 0.0
        )
        Sn = jax.lax.dynamic_update_slice(Sn, Sc, (jnp.int32(0), 2 * n - 1))
        f, t, dl = s["feature"], s["tbin"], s["default_left"]
        pos = route(pos, local, in_level, do, f, t, dl, self.bin_of, self.B)
        return do, pos, structure, Sn

    def level(self, d, carry, width, exact):
        """Level ``d`` on ``width`` node slots: the level's own ``2**d`` when ``exact``
        (a static level), else padded (the loop's traced levels)."""
        pos, alive, structure, Sn, S_up = carry  # S_up: the level above's histograms
        n = _pow2(d)
        if exact:  # the nodes whose parent split (the loop's carry holds its own width)
            alive = jnp.repeat(structure["is_split"][width // 2 - 1 : width - 1], 2)
        St = jax.lax.dynamic_slice(Sn, (jnp.int32(0), n - 1), (self.C, width))
        local, in_level = _rows_of_level(pos, d, width)
        rows = (local, in_level)
        hist, reduce, K = self.histogram, self.reduce, self.K
        if exact:
            S = _vector_children(hist, reduce, K, rows, n, St, S_up, exact_width=True)
        elif width == 1:  # the root's level only
            S = S_up
        else:
            S = jax.lax.cond(
                d > 0,
                lambda: _vector_children(hist, reduce, K, rows, n, St, S_up),
                lambda: S_up,
            )  # (F, width, B, C)
        do, pos, structure, Sn = self.split_level(
            d, S, St, alive, (local, in_level, pos), structure, Sn, exact
        )
        return pos, jnp.repeat(do, 2)[:width], structure, Sn, S


def grow_vector_tree(
    bins, g, h, dyn, cuts_ext, forward_ok, spec: TreeSpec, *, reduce=_identity, features=None
):
    r"""Grow one multi-output tree with vector leaves.

    Every node holds the sums of the per-row gradient vectors ``G`` (K) and Hessian
    matrices ``H`` (K x K); leaf values solve :math:`(H + \lambda I) w = -G` and split
    gains use the same quadratic form (``split.vector_weight_score``). With
    ``diagonal=True`` only the diagonal of H is kept (cheaper for large K).

    The histograms hold ``C = K + P`` channels (``P = K (K + 1) / 2`` Hessian entries,
    or ``K`` when diagonal), laid out ``(F, nodes, B, C)`` (:func:`channel_histogram`:
    on the CPU all channels in one pass of the native kernel).

    Args:
      bins, dyn, cuts_ext, forward_ok, spec, reduce, features: as in ``grow_tree``
        (``spec.diagonal``: use only the diagonal of H).
      g: ``(N, K)`` float32 gradients; h: ``(N, K, K)`` float32 Hessians (weighted), or
        their ``(N, K)`` diagonals with ``spec.diagonal``.

    Returns:
      ``(tree, leaf)`` as ``grow_tree``, with ``value`` ``(M, K)`` and ``cover`` the
      trace of H.
    """
    max_depth, max_bin, native, _, any_forward, native_threads, diagonal = spec[:7]
    D, B = max_depth, max_bin
    N, K = g.shape
    M = 2 ** (D + 1) - 1
    W = max(1, 2 ** (D - 1))  # nodes of the widest level that splits
    vals = jnp.concatenate([g, hessian_channels(h, diagonal)], axis=1)  # (N, C)
    C = vals.shape[1]
    grower = _VectorLevels(
        channel_histogram(bins, vals, native=native, max_bin=B, native_threads=native_threads),
        C,
        K,
        B,
        reduce,
        _vector_finder(
            dyn,
            forward_ok,
            K,
            diagonal,
            any_forward,
            native,
            n_valid=bins_in_use(cuts_ext) if native else None,
        ),
        None if features is None else features.levels(W),  # (D, W, F)
        bin_reader(bins, native),
        native,
    )
    histogram, level = grower.histogram, grower.level

    with jax.enable_x64(True):
        pos = jnp.zeros(N, INDEX_DTYPE)
        St = reduce(jnp.sum(vals.astype(ACC_DTYPE), axis=0))  # (C,)
        Sn = jnp.zeros((C, M), ACC_DTYPE).at[:, 0].set(St)
        structure = _empty_structure(M)
        if D > 0:
            # The root's histogram (one node, every row), summed across devices once.
            # Levels 0 .. D - 3 run in one loop on the slots of level D - 3 (one
            # compiled level body whatever the depth); the two deepest levels, which
            # hold three quarters of the nodes, each on their own nodes (each its own
            # body): 2.5 x the nodes' histograms and searches at depth 6 instead of the
            # widest level's at every level (6 x its 32 nodes). Up to depth
            # ``VECTOR_LOOP_DEPTH`` every level runs in the loop on the widest level's
            # slots (at most 8: little to save, and one body compiles faster).
            local, _ = _rows_of_level(pos, 0, 1)
            S_root = reduce(histogram(local, 1))  # (F, 1, B, C)
            looped = D if D <= VECTOR_LOOP_DEPTH else D - 2
            Wl = 2 ** (looped - 1)
            S_up = jnp.pad(S_root, ((0, 0), (0, Wl - 1), (0, 0), (0, 0)))
            alive = jnp.zeros(Wl, bool).at[0].set(True)
            carry = (pos, alive, structure, Sn, S_up)
            carry = jax.lax.fori_loop(
                0, looped, lambda d, c: level(d.astype(INDEX_DTYPE), c, Wl, False), carry
            )
            for d in range(looped, D):
                carry = level(d, carry, 2**d, True)
            pos, _, structure, Sn, _ = carry
        fields, leaf = _finish(structure, pos, dyn, cuts_ext, D)
        w, _, cover = vector_weight_score(Sn[:K].T, Sn[K:].T, dyn, diagonal=diagonal)
        tree = dict(
            fields, value=w.astype(FLOAT_DTYPE) * dyn.learning_rate, cover=cover.astype(FLOAT_DTYPE)
        )
        return tree, leaf
