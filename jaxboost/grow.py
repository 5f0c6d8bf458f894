"""One tree, grown level by level inside jit.

Per level: histogram of the level's nodes -> best split per node -> route rows to
children. After the last level, gamma post-pruning runs bottom-up (a split whose
children are both leaves is removed when its gain < gamma, then its parent is checked),
as the seeds and XGBoost's exact method do. Leaf values come from each node's own sums.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .histogram import build_histogram, pack_gh
from .split import GAMMA, find_best_splits, is_split_worthy, leaf_values


def _identity(x):
    return x


def grow_tree(bins_t, g, h, dyn, cuts_ext, forward_ok, *, max_depth: int, max_bin: int,
              histogram_fn=build_histogram, reduce=_identity, clipped: bool = True,
              any_forward: bool = True):
    """Grow one tree.

    Args:
      bins_t: ``(F, N)`` uint8 bins, feature-major; bin ``max_bin - 1`` = missing.
      g, h: ``(N,)`` float32 gradients and Hessians (already weighted; 0 for padding).
      dyn: ``(6,)`` float32 dynamic parameters (``params.DYNAMIC_FIELDS``).
      cuts_ext: ``(F, max_bin)`` float32, ``-inf``, the cuts, then ``+inf`` padding:
        ``cuts_ext[f, t]`` is the float threshold of "bins < t go left".
      forward_ok: ``(F,)`` bool (see ``split.find_best_splits``).
      max_depth, max_bin: static.
      histogram_fn: the histogram step ``(bins_t, gh, node, n_nodes, n_bins) -> (G, H)``.
      clipped, any_forward: static promises passed to ``split.find_best_splits``.
      reduce: sums a per-device partial over devices (``lax.psum`` under
        ``shard_map``; the identity on one device). Applied to histograms and node sums,
        the only quantities that need every row.

    Returns:
      ``(tree, leaf)``: ``tree`` a dict of ``(M,)`` arrays in heap layout (``feature``
      int32, ``tbin`` int32, ``threshold`` float32, ``default_left`` bool, ``is_leaf``
      bool, ``value`` float32 (learning rate applied), ``gain`` float32, ``cover``
      float32 = H); ``leaf`` ``(N,)`` int32, the leaf node of every row.
    """
    D, B = max_depth, max_bin
    N = g.shape[0]
    rows = jnp.arange(N, dtype=jnp.int32)
    gh = pack_gh(g, h)
    with jax.enable_x64(True):
        g64 = g.astype(jnp.float64)
        h64 = h.astype(jnp.float64)
        pos = jnp.zeros(N, jnp.int32)
        depth_row = jnp.zeros(N, jnp.int32)
        Gn, Hn = [], []
        feat, tbin, dleft, split, gain = [], [], [], [], []
        alive = jnp.ones(1, bool)
        for d in range(D + 1):
            n, off = 2 ** d, 2 ** d - 1
            local = pos - off
            in_level = (local >= 0) & (local < n)
            local = jnp.where(in_level, local, n)
            Gt, Ht = reduce((jax.ops.segment_sum(g64, local, num_segments=n + 1)[:n],
                             jax.ops.segment_sum(h64, local, num_segments=n + 1)[:n]))
            Gn.append(Gt)
            Hn.append(Ht)
            if d == D:
                break
            Gh, Hh = reduce(histogram_fn(bins_t, gh, local, n, B))
            s = find_best_splits(Gh, Hh, Gt, Ht, dyn, forward_ok, clipped=clipped,
                                 any_forward=any_forward)
            do = alive & is_split_worthy(s["gain"])
            feat.append(jnp.where(do, s["feature"], 0))
            tbin.append(jnp.where(do, s["tbin"], 0))
            dleft.append(do & s["default_left"])
            split.append(do)
            gain.append(jnp.where(do, s["gain"], 0.0))
            lc = jnp.minimum(local, n - 1)
            f_row = s["feature"][lc]
            b_row = bins_t[f_row, rows].astype(jnp.int32)
            go_left = jnp.where(b_row == B - 1, s["default_left"][lc], b_row < s["tbin"][lc])
            move = in_level & do[lc]
            pos = jnp.where(move, 2 * pos + 1 + (~go_left).astype(jnp.int32), pos)
            depth_row = depth_row + move.astype(jnp.int32)
            alive = jnp.repeat(do, 2)
        n_leaf_level = 2 ** D
        Gn = jnp.concatenate(Gn)
        Hn = jnp.concatenate(Hn)
        pad_i = jnp.zeros(n_leaf_level, jnp.int32)
        feature = jnp.concatenate(feat + [pad_i])
        tbin = jnp.concatenate(tbin + [pad_i])
        default_left = jnp.concatenate(dleft + [jnp.zeros(n_leaf_level, bool)])
        is_split = jnp.concatenate(split + [jnp.zeros(n_leaf_level, bool)])
        gain = jnp.concatenate(gain + [jnp.zeros(n_leaf_level, jnp.float32)])

        # gamma post-pruning, bottom-up.
        gamma = dyn[GAMMA]
        for d in range(D - 1, -1, -1):
            idx = jnp.arange(2 ** d - 1, 2 ** (d + 1) - 1)
            both_leaves = ~is_split[2 * idx + 1] & ~is_split[2 * idx + 2]
            prune = is_split[idx] & both_leaves & (gain[idx] < gamma)
            is_split = is_split.at[idx].set(is_split[idx] & ~prune)

        # Each row's leaf: its shallowest ancestor that is not split.
        leaf = pos
        for d in range(D - 1, -1, -1):
            anc = jnp.right_shift(pos + 1, jnp.maximum(depth_row - d, 0)) - 1
            leaf = jnp.where((depth_row >= d) & ~is_split[anc], anc, leaf)

        value = leaf_values(Gn, Hn, dyn)
        is_leaf = ~is_split
        feature = jnp.where(is_split, feature, 0)
        tbin = jnp.where(is_split, tbin, 0)
        default_left = default_left & is_split
        threshold = jnp.where(is_split, cuts_ext[feature, tbin], jnp.float32(jnp.nan))
        tree = dict(feature=feature, tbin=tbin, threshold=threshold.astype(jnp.float32),
                    default_left=default_left, is_leaf=is_leaf, value=value,
                    gain=jnp.where(is_split, gain, 0.0).astype(jnp.float32),
                    cover=Hn.astype(jnp.float32))
        return tree, leaf
