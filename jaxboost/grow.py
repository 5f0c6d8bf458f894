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


def grow_tree(bins, g, h, dyn, cuts_ext, forward_ok, *, max_depth: int, max_bin: int,
              native: bool = False, reduce=_identity, clipped: bool = True,
              any_forward: bool = True, native_threads=None):
    """Grow one tree.

    Args:
      bins: uint8 bins, bin ``max_bin - 1`` = missing; feature-major ``(F, N)`` for the
        pure-JAX histogram, row-major ``(N, F)`` when ``native``.
      g, h: ``(N,)`` float32 gradients and Hessians (already weighted; 0 for padding).
      dyn: ``(6,)`` float32 dynamic parameters (``params.DYNAMIC_FIELDS``).
      cuts_ext: ``(F, max_bin)`` float32, ``-inf``, the cuts, then ``+inf`` padding:
        ``cuts_ext[f, t]`` is the float threshold of "bins < t go left".
      forward_ok: ``(F,)`` bool (see ``split.find_best_splits``).
      max_depth, max_bin: static.
      native: static; use the native histogram kernel (``jaxboost.native``) with the
        subtraction trick: below the root only the smaller child of every split is
        histogrammed, its sibling is the parent's histogram minus it.
      reduce: sums a per-device partial over devices (``lax.psum`` under
        ``shard_map``; the identity on one device). Applied to histograms and node sums,
        the only quantities that need every row.
      clipped, any_forward: static promises passed to ``split.find_best_splits``.
      native_threads: threads of the native kernel (``None``: every core; sharded
        training over host devices passes 1).

    Returns:
      ``(tree, leaf)``: ``tree`` a dict of ``(M,)`` arrays in heap layout (``feature``
      int32, ``tbin`` int32, ``threshold`` float32, ``default_left`` bool, ``is_leaf``
      bool, ``value`` float32 (learning rate applied), ``gain`` float32, ``cover``
      float32 = H); ``leaf`` ``(N,)`` int32, the leaf node of every row.
    """
    D, B = max_depth, max_bin
    N = g.shape[0]
    rows = jnp.arange(N, dtype=jnp.int32)
    if native:
        from . import native as native_kernel

        def histogram(node, n):
            return native_kernel.histogram(bins, g, h, node, n, B, n_threads=native_threads)

        def bin_of(f_row):
            return bins[rows, f_row]
    else:
        gh = pack_gh(g, h)

        def histogram(node, n):
            return build_histogram(bins, gh, node, n, B)

        def bin_of(f_row):
            return bins[f_row, rows]
    prev = None  # the previous level's histograms (native: for the subtraction trick)
    with jax.enable_x64(True):
        # Node totals: the root's from one sum; every other node's from its parent's
        # histogram of the split feature (no per-row scatter per level).
        Gt = reduce(jnp.sum(g.astype(jnp.float64)))[None]
        Ht = reduce(jnp.sum(h.astype(jnp.float64)))[None]
        pos = jnp.zeros(N, jnp.int32)
        Gn, Hn = [], []
        feat, tbin, dleft, split, gain = [], [], [], [], []
        alive = jnp.ones(1, bool)
        bins_idx = jnp.arange(B, dtype=jnp.int32)
        for d in range(D + 1):
            n, off = 2 ** d, 2 ** d - 1
            Gn.append(Gt)
            Hn.append(Ht)
            if d == D:
                break
            local = pos - off
            in_level = (local >= 0) & (local < n)
            local = jnp.where(in_level, local, n)
            if native and prev is not None:
                # Histogram only the smaller child of each pair (by hessian sum); its
                # sibling is the parent's histogram minus it.
                left_small = Ht[0::2] <= Ht[1::2]  # (n/2,)
                is_left = (local % 2) == 0
                in_small = in_level & (is_left == left_small[jnp.minimum(local, n - 1) // 2])
                Gs, Hs = reduce(histogram(jnp.where(in_small, local // 2, n // 2), n // 2))
                Gl, Hl = prev[0] - Gs, prev[1] - Hs
                ls = left_small[None, :, None]
                Gh = jnp.stack([jnp.where(ls, Gs, Gl), jnp.where(ls, Gl, Gs)], axis=2)
                Hh = jnp.stack([jnp.where(ls, Hs, Hl), jnp.where(ls, Hl, Hs)], axis=2)
                Gh = Gh.reshape(Gs.shape[0], n, B)
                Hh = Hh.reshape(Hs.shape[0], n, B)
            else:
                Gh, Hh = reduce(histogram(local, n))
            prev = (Gh, Hh)
            s = find_best_splits(Gh, Hh, Gt, Ht, dyn, forward_ok, clipped=clipped,
                                 any_forward=any_forward)
            do = alive & is_split_worthy(s["gain"])
            f_best, t_best, dl_best = s["feature"], s["tbin"], s["default_left"]
            feat.append(jnp.where(do, f_best, 0))
            tbin.append(jnp.where(do, t_best, 0))
            dleft.append(do & dl_best)
            split.append(do)
            gain.append(jnp.where(do, s["gain"], 0.0))
            # Children totals from the split feature's histogram row of each node.
            node_ids = jnp.arange(n, dtype=jnp.int32)
            rowG, rowH = Gh[f_best, node_ids], Hh[f_best, node_ids]  # (n, B)
            goes_left = jnp.where(bins_idx[None, :] == B - 1, dl_best[:, None],
                                  bins_idx[None, :] < t_best[:, None])
            GL = jnp.sum(jnp.where(goes_left, rowG, 0.0), axis=1)
            HL = jnp.sum(jnp.where(goes_left, rowH, 0.0), axis=1)
            GR = jnp.sum(jnp.where(goes_left, 0.0, rowG), axis=1)
            HR = jnp.sum(jnp.where(goes_left, 0.0, rowH), axis=1)
            Gt = jnp.where(do[:, None], jnp.stack([GL, GR], axis=1), 0.0).reshape(2 * n)
            Ht = jnp.where(do[:, None], jnp.stack([HL, HR], axis=1), 0.0).reshape(2 * n)
            # Route: one packed table lookup per row, then the row's bin.
            code = jnp.where(do, f_best * 1024 + t_best * 2 + dl_best.astype(jnp.int32), -1)
            c_row = code[jnp.minimum(local, n - 1)]
            b_row = bin_of(jnp.maximum(c_row, 0) >> 10).astype(jnp.int32)
            go_left = jnp.where(b_row == B - 1, (c_row & 1) == 1, b_row < ((c_row >> 1) & 511))
            move = in_level & (c_row >= 0)
            pos = jnp.where(move, 2 * pos + 1 + (~go_left).astype(jnp.int32), pos)
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

        # Each node's leaf: itself, or its shallowest ancestor that is not split
        # (top-down over the small tree); then one lookup per row.
        rep = jnp.arange(2 ** (D + 1) - 1, dtype=jnp.int32)
        for d in range(1, D + 1):
            idx = jnp.arange(2 ** d - 1, 2 ** (d + 1) - 1, dtype=jnp.int32)
            par = (idx - 1) // 2
            prep = rep[par]
            rep = rep.at[idx].set(jnp.where((prep != par) | ~is_split[par], prep, idx))
        leaf = rep[pos]

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
