"""One tree, grown level by level inside jit.

Per level: histogram of the level's nodes -> best split per node -> route rows to
children. After the last level, gamma post-pruning runs bottom-up (a split whose
children are both leaves is removed when its gain < gamma, then its parent is checked),
as the seeds and XGBoost's exact method do. Leaf values come from each node's own sums.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from .histogram import build_histogram, pack_gh
from .split import (
    ETA,
    GAMMA,
    find_best_splits,
    find_best_vector_splits,
    is_split_worthy,
    leaf_values,
    vector_weight_score,
)


def _identity(x):
    return x


def pair_histogram(bins, *, native: bool, max_bin: int, native_threads=None):
    """``hist(a, b, node, n) -> (A, B)``: float64 ``(F, n, max_bin)`` histograms of two
    per-row float32 channels, with the native kernel or the pure-JAX scatter."""
    if native:
        from . import native as native_kernel

        def hist(a, b, node, n):
            return native_kernel.histogram(bins, a, b, node, n, max_bin,
                                           n_threads=native_threads)
    else:
        def hist(a, b, node, n):
            return build_histogram(bins, pack_gh(a, b), node, n, max_bin)
    return hist


def bin_reader(bins, native: bool):
    """``bin_of(f_row) -> (N,)``: each row's bin of its own feature ``f_row[i]``."""
    rows = jnp.arange(bins.shape[0] if native else bins.shape[1], dtype=jnp.int32)
    if native:
        return lambda f_row: bins[rows, f_row]
    return lambda f_row: bins[f_row, rows]


def route(pos, local, in_level, do, f_best, t_best, dl_best, bin_of, B):
    """Move the rows of a level's split nodes to their children.

    One packed table lookup per row (feature, threshold bin, default direction), then
    the row's bin. Rows of nodes that did not split, and rows outside the level, stay.
    """
    n = do.shape[0]
    code = jnp.where(do, f_best * 1024 + t_best * 2 + dl_best.astype(jnp.int32), -1)
    c_row = code[jnp.minimum(local, n - 1)]
    b_row = bin_of(jnp.maximum(c_row, 0) >> 10).astype(jnp.int32)
    go_left = jnp.where(b_row == B - 1, (c_row & 1) == 1, b_row < ((c_row >> 1) & 511))
    move = in_level & (c_row >= 0)
    return jnp.where(move, 2 * pos + 1 + (~go_left).astype(jnp.int32), pos)


def prune_gamma(is_split, gain, gamma, D):
    """gamma post-pruning, bottom-up: a split whose children are both leaves is removed
    when its gain < gamma, then its parent is checked."""
    for d in range(D - 1, -1, -1):
        idx = jnp.arange(2 ** d - 1, 2 ** (d + 1) - 1)
        both_leaves = ~is_split[2 * idx + 1] & ~is_split[2 * idx + 2]
        prune = is_split[idx] & both_leaves & (gain[idx] < gamma)
        is_split = is_split.at[idx].set(is_split[idx] & ~prune)
    return is_split


def leaf_of(pos, is_split, D):
    """Each row's leaf: the shallowest ancestor of its deepest node that is not split.

    Computed top-down over the small tree (a representative per node), then one lookup
    per row.
    """
    rep = jnp.arange(2 ** (D + 1) - 1, dtype=jnp.int32)
    for d in range(1, D + 1):
        idx = jnp.arange(2 ** d - 1, 2 ** (d + 1) - 1, dtype=jnp.int32)
        par = (idx - 1) // 2
        prep = rep[par]
        rep = rep.at[idx].set(jnp.where((prep != par) | ~is_split[par], prep, idx))
    return rep[pos]


class _Structure:
    """A tree's split decisions, level by level, assembled into heap arrays at the end."""

    def __init__(self):
        self.levels = []

    def add(self, do, s):
        """Record one level: ``do`` (n,) which nodes split, ``s`` their best splits."""
        self.levels.append((jnp.where(do, s["feature"], 0), jnp.where(do, s["tbin"], 0),
                            do & s["default_left"], do, jnp.where(do, s["gain"], 0.0)))

    def finish(self, pos, dyn, cuts_ext, D):
        """gamma-pruned structure and each row's leaf.

        Returns ``(fields, leaf)``: ``fields`` has every tree field but ``value`` and
        ``cover``, as ``(M,)`` arrays.
        """
        pad = 2 ** D
        cols = list(zip(*self.levels))
        fill = (jnp.zeros(pad, jnp.int32), jnp.zeros(pad, jnp.int32), jnp.zeros(pad, bool),
                jnp.zeros(pad, bool), jnp.zeros(pad, jnp.float32))
        feature, tbin, default_left, is_split, gain = (
            jnp.concatenate(list(c) + [f]) for c, f in zip(cols, fill))
        is_split = prune_gamma(is_split, gain, dyn[GAMMA], D)
        leaf = leaf_of(pos, is_split, D)
        feature = jnp.where(is_split, feature, 0)
        tbin = jnp.where(is_split, tbin, 0)
        threshold = jnp.where(is_split, cuts_ext[feature, tbin], jnp.float32(jnp.nan))
        fields = dict(feature=feature, tbin=tbin, threshold=threshold.astype(jnp.float32),
                      default_left=default_left & is_split, is_leaf=~is_split,
                      gain=jnp.where(is_split, gain, 0.0).astype(jnp.float32))
        return fields, leaf


def grow_tree(bins, g, h, dyn, cuts_ext, forward_ok, *, max_depth: int, max_bin: int,
              native: bool = False, reduce=_identity, clipped: bool = True,
              any_forward: bool = True, native_threads=None, features=None):
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
      features: optional ``sampling.FeatureSampler`` (column sampling).

    Returns:
      ``(tree, leaf)``: ``tree`` a dict of ``(M,)`` arrays in heap layout (``feature``
      int32, ``tbin`` int32, ``threshold`` float32, ``default_left`` bool, ``is_leaf``
      bool, ``value`` float32 (learning rate applied), ``gain`` float32, ``cover``
      float32 = H); ``leaf`` ``(N,)`` int32, the leaf node of every row.
    """
    D, B = max_depth, max_bin
    N = g.shape[0]
    histogram = pair_histogram(bins, native=native, max_bin=B, native_threads=native_threads)
    histogram = functools.partial(histogram, g, h)
    bin_of = bin_reader(bins, native)
    prev = None  # the previous level's histograms (native: for the subtraction trick)
    with jax.enable_x64(True):
        # Node totals: the root's from one sum; every other node's from its parent's
        # histogram of the split feature (no per-row scatter per level).
        Gt = reduce(jnp.sum(g.astype(jnp.float64)))[None]
        Ht = reduce(jnp.sum(h.astype(jnp.float64)))[None]
        pos = jnp.zeros(N, jnp.int32)
        Gn, Hn = [], []
        structure = _Structure()
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
                                 any_forward=any_forward,
                                 feature_mask=None if features is None else features.level(d, n))
            do = alive & is_split_worthy(s["gain"])
            f_best, t_best, dl_best = s["feature"], s["tbin"], s["default_left"]
            structure.add(do, s)
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
            pos = route(pos, local, in_level, do, f_best, t_best, dl_best, bin_of, B)
            alive = jnp.repeat(do, 2)
        fields, leaf = structure.finish(pos, dyn, cuts_ext, D)
        Gn = jnp.concatenate(Gn)
        Hn = jnp.concatenate(Hn)
        tree = dict(fields, value=leaf_values(Gn, Hn, dyn), cover=Hn.astype(jnp.float32))
        return tree, leaf


def hessian_channels(h, diagonal: bool):
    """``(N, K, K)`` per-row Hessians -> ``(N, P)`` channels (``split.unpack_hessian``)."""
    K = h.shape[-1]
    if diagonal:
        return jnp.diagonal(h, axis1=-2, axis2=-1)
    iu, ju = jnp.triu_indices(K)
    return h[:, iu, ju]


def grow_vector_tree(bins, g, h, dyn, cuts_ext, forward_ok, *, max_depth: int,
                     max_bin: int, diagonal: bool = False, native: bool = False,
                     reduce=_identity, any_forward: bool = True, native_threads=None,
                     features=None):
    r"""Grow one multi-output tree with vector leaves.

    Every node holds the sums of the per-row gradient vectors ``G`` (K) and Hessian
    matrices ``H`` (K x K); leaf values solve :math:`(H + \lambda I) w = -G` and split
    gains use the same quadratic form (``split.vector_weight_score``). With
    ``diagonal=True`` only the diagonal of H is kept (cheaper for large K).

    The histograms hold ``C = K + P`` channels (``P = K (K + 1) / 2`` Hessian entries,
    or ``K`` when diagonal), built two channels per pass of the scalar histogram.

    Args:
      bins, dyn, cuts_ext, forward_ok, max_depth, max_bin, native, reduce, any_forward,
        native_threads, features: as in ``grow_tree``.
      g: ``(N, K)`` float32 gradients; h: ``(N, K, K)`` float32 Hessians (weighted).
      diagonal: static; use only the diagonal of H.

    Returns:
      ``(tree, leaf)`` as ``grow_tree``, with ``value`` ``(M, K)`` and ``cover`` the
      trace of H.
    """
    D, B = max_depth, max_bin
    N, K = g.shape
    vals = jnp.concatenate([g, hessian_channels(h, diagonal)], axis=1)  # (N, C)
    C = vals.shape[1]
    if C % 2:
        vals = jnp.concatenate([vals, jnp.zeros((N, 1), vals.dtype)], axis=1)
    pairs = vals.T.reshape(-1, 2, N)  # (C2, 2, N)
    hist2 = pair_histogram(bins, native=native, max_bin=B, native_threads=native_threads)
    bin_of = bin_reader(bins, native)

    def histogram(node, n):
        def one(ab):
            return jnp.stack(hist2(ab[0], ab[1], node, n))  # (2, F, n, B)
        out = jax.lax.map(one, pairs)  # (C2, 2, F, n, B)
        return out.reshape((-1,) + out.shape[2:])[:C]

    with jax.enable_x64(True):
        pos = jnp.zeros(N, jnp.int32)
        St = reduce(jnp.sum(vals[:, :C].astype(jnp.float64), axis=0))[:, None]  # (C, 1)
        Sn = []
        structure = _Structure()
        alive = jnp.ones(1, bool)
        bins_idx = jnp.arange(B, dtype=jnp.int32)
        for d in range(D + 1):
            n, off = 2 ** d, 2 ** d - 1
            Sn.append(St)
            if d == D:
                break
            local = pos - off
            in_level = (local >= 0) & (local < n)
            local = jnp.where(in_level, local, n)
            S = reduce(histogram(local, n))  # (C, F, n, B)
            s = find_best_vector_splits(
                S, St, dyn, forward_ok, K=K, diagonal=diagonal, any_forward=any_forward,
                feature_mask=None if features is None else features.level(d, n))
            do = alive & is_split_worthy(s["gain"])
            f_best, t_best, dl_best = s["feature"], s["tbin"], s["default_left"]
            structure.add(do, s)
            node_ids = jnp.arange(n, dtype=jnp.int32)
            rows = S[:, f_best, node_ids]  # (C, n, B)
            goes_left = jnp.where(bins_idx[None, :] == B - 1, dl_best[:, None],
                                  bins_idx[None, :] < t_best[:, None])  # (n, B)
            SL = jnp.sum(jnp.where(goes_left, rows, 0.0), axis=2)
            SR = jnp.sum(jnp.where(goes_left, 0.0, rows), axis=2)
            St = jnp.where(do[None, :, None], jnp.stack([SL, SR], axis=2), 0.0).reshape(C, 2 * n)
            pos = route(pos, local, in_level, do, f_best, t_best, dl_best, bin_of, B)
            alive = jnp.repeat(do, 2)
        fields, leaf = structure.finish(pos, dyn, cuts_ext, D)
        Sn = jnp.concatenate(Sn, axis=1)  # (C, M)
        w, _, cover = vector_weight_score(Sn[:K].T, Sn[K:].T, dyn, diagonal=diagonal)
        tree = dict(fields, value=w.astype(jnp.float32) * dyn[ETA],
                    cover=cover.astype(jnp.float32))
        return tree, leaf
