r"""Categorical splits: category codes are bins, a split is a set of categories.

A categorical feature holds integer codes ``0 .. C - 1`` (``binning``: code ``c`` is bin
``c``; missing values and codes never seen in training are in the missing-value bin). A
split sends a *set* of categories left and the others right, as XGBoost 3.2's
``tree_method="hist"`` with ``enable_categorical=True`` does. With per-category sums
:math:`G_c, H_c` of a node (parent :math:`G, H`; missing values :math:`G_m = G - \sum_c
G_c`, likewise :math:`H_m`), the candidates of one feature, in XGBoost's order, are:

* **one-vs-rest**, when ``C < max_cat_to_onehot``: for ``c = 0 .. C - 1``, category
  ``c`` right and the rest left with missing values left (gain of
  :math:`(G - G_c, G_c)`), then the same with missing values right (gain of
  :math:`(G - G_c - G_m, G_c + G_m)`);
* **partition**, otherwise: the categories sorted by their Newton weight
  :math:`w_c = -T_\alpha(G_c)/(H_c + \lambda)` (0 when :math:`H_c` is below
  ``min_child_weight``; float32, a stable sort, so ties keep code order) and, with
  :math:`s_1, s_2, \dots` that order and :math:`m = \min(\text{max\_cat\_threshold},
  C)`: the first :math:`k` categories right, missing left, for :math:`k = 1 .. m - 1`;
  then the last :math:`k` categories left, missing right, for :math:`k = 1 .. m - 1`.
  On each side at most ``max_cat_threshold - 1`` categories are gathered, as XGBoost.

Each candidate's gain is the numeric one, :math:`S(G_L, H_L) + S(G_R, H_R) - S(G, H)`
(``split``), with both children's :math:`H \ge` ``min_child_weight``; the first
strictly best candidate over all features (ascending) wins, numeric features keeping
their own candidates.

A categorical split node stores the categories going left as a 256-bit set
(``N_WORDS`` uint32 words, bit ``c`` of word ``c >> 5``): ``pack_bits``. Codes never
seen in training (in range or not) get the node's default direction, as missing values
do; a prediction reads bit ``c`` for codes ``0 <= c < 256`` and the default direction
for any other value (``tree.categorical_left``). XGBoost stores the other side (its
bit set holds the categories going right) and sends codes outside its set left: the two
agree on codes beyond the largest training code when the default way is left (as it is
without missing values in training), and XGBoost sends a code inside the range that
training never saw wherever its empty bin fell in the sorted order.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from .._types import ACC_DTYPE, FLOAT_DTYPE, INDEX_DTYPE
from .binning import category_slots
from .constraints import constrained_gains, gain_rule, rows_ok
from .split import _pass_gains, _plain_score, calc_score, calc_weight, numeric_gains, pick_best

NUMERIC, ONE_HOT, PARTITION = 0, 1, 2
"""``CatInfo.kind`` of a feature: split by threshold, one-vs-rest, or by partition."""

N_WORDS = 8
"""uint32 words of a node's category set: 256 bits, one per bin (``max_bin <= 256``)."""


class CatInfo(NamedTuple):
    """What split finding knows of the categorical features (arrays; traced).

    ``kind`` ``(F,)`` int32 (``NUMERIC``, ``ONE_HOT``, ``PARTITION``); ``n_cats`` ``(F,)``
    int32, the categories ``C`` of the feature (bins ``0 .. C - 1``, 0 for numeric
    features); ``seen`` ``(F, B)`` bool, the codes present in training (``B``:
    ``binning.BinEdges.n_bins``);
    ``index`` ``(n_cat,)`` int32, the categorical features in ascending order (or None:
    treat every feature as possibly categorical); ``max_cat_threshold`` int32;
    ``codes`` ``(S,)`` int32, ``0 .. S - 1``: its length ``S`` (static) covers every
    feature's categories, the largest ``n_cats`` rounded up to a power of two (at least
    8, at most ``max_bin - 1``: ``binning.category_slots``; ``B > S``), so split finding
    sorts ``S`` bins, not ``B``.
    """

    kind: Any
    n_cats: Any
    seen: Any
    index: Any
    max_cat_threshold: Any
    codes: Any = None

    def block(self, f0, size: int) -> "CatInfo":
        """The features ``f0 .. f0 + size - 1`` (``f0`` may be traced), without
        ``index``."""

        def sl(a):
            return jax.lax.dynamic_slice_in_dim(a, f0, size, 0)

        return CatInfo(
            sl(self.kind), sl(self.n_cats), sl(self.seen), None, self.max_cat_threshold, self.codes
        )


def cat_info(edges, max_cat_to_onehot: int, max_cat_threshold: int) -> Optional[CatInfo]:
    """The ``CatInfo`` of bin edges with categorical features (host arrays), or None
    when every feature is numeric.

    >>> import numpy as np
    >>> from jaxboost.engine.binning import compute_bin_edges
    >>> X = np.array([[0, 1.0], [2, 2.0], [1, 3.0]], np.float32)
    >>> e = compute_bin_edges(X, max_bin=8, categorical=np.array([True, False]))
    >>> c = cat_info(e, max_cat_to_onehot=4, max_cat_threshold=64)
    >>> c.kind.tolist(), c.n_cats.tolist(), c.index.tolist()
    ([1, 0], [3, 0], [0])
    """
    if not edges.is_categorical:
        return None
    cat = np.asarray(edges.categorical, bool)
    seen = np.asarray(edges.categories, bool)
    present = seen.any(axis=1)
    n_cats = np.where(cat & present, np.asarray(edges.n_cuts) + 1, 0).astype(np.int32)
    kind = np.where(cat, np.where(n_cats < max_cat_to_onehot, ONE_HOT, PARTITION), NUMERIC).astype(
        np.int32
    )
    # S: independent of the program's bins B (binning.bins_needed makes B > S), so the
    # category sorts and sums are those of bins padded to max_bin.
    width = category_slots(int(n_cats.max()), edges.max_bin)
    return CatInfo(
        kind,
        n_cats,
        seen[:, : edges.n_bins],
        np.flatnonzero(cat).astype(np.int32),
        np.int32(max_cat_threshold),
        np.arange(width, dtype=np.int32),
    )


def _category_gains(P, Pp, dyn, cat: CatInfo, gains):
    """Gains of every categorical candidate: ``(C, n, 2 V)`` float32 and the
    ``(C, n, S)`` sorted order of the categories (partition splits).

    ``P``: ``(k, C, n, B)`` float64 histograms of ``C`` features, stacked: ``P[0]``
    the gradients, ``P[1]`` the Hessians, ``P[2]`` row counts (when a row minimum is
    checked); ``Pp`` ``(k, n)`` the nodes' totals of the same. ``gains(L, R)``: the
    gains of candidates with children sums ``L``, ``R`` ``(k, C, n, S)``. ``V = B - 1``
    value bins, of which the first ``S`` (``cat.codes``) can hold categories. Slots of
    one-vs-rest features: ``2 c`` (category ``c`` right, missing left), ``2 c + 1``
    (missing right); of partition features: ``k - 1`` (the first ``k`` sorted categories
    right, missing left), ``V + k - 1`` (the last ``k`` left, missing right). Slots that
    are no candidate hold ``-inf``.
    """
    _, C, n, B = P.shape
    V = B - 1
    S = cat.codes.shape[0]
    Pv = P[..., :S]
    Ppb = Pp[:, None, :, None]
    n_cats = cat.n_cats[:, None, None]
    slot = jnp.arange(S, dtype=INDEX_DTYPE)[None, None, :]
    valid = slot < n_cats

    # One-vs-rest: missing = parent - present, as XGBoost computes it.
    Pm = Ppb - jnp.sum(Pv, axis=3, keepdims=True)
    one_a = gains(Ppb - Pv, Pv)
    one_b = gains(Ppb - Pv - Pm, Pv + Pm)
    one = jnp.stack(
        [jnp.where(valid, one_a, -jnp.inf), jnp.where(valid, one_b, -jnp.inf)], axis=-1
    ).reshape(C, n, 2 * S)
    one = jnp.pad(one, ((0, 0), (0, 0), (0, 2 * (V - S))), constant_values=-jnp.inf)
    # Partition: categories sorted by weight (stable), prefix sums both ways.
    key = jnp.where(valid, calc_weight(Pv[0], Pv[1], dyn).astype(FLOAT_DTYPE), jnp.inf)
    order = jnp.argsort(key, axis=-1, stable=True).astype(INDEX_DTYPE)
    Ps = jnp.take_along_axis(Pv, jnp.broadcast_to(order, Pv.shape), axis=-1)
    R = jax.lax.cumsum(Ps, axis=3)
    fwd = gains(Ppb - R, R)
    T = jax.lax.cumsum(Ps, axis=3, reverse=True)  # T[i] = sum of sorted i .. S - 1
    first = jnp.broadcast_to(jnp.clip(n_cats - 1 - slot, 0, S - 1), Ps.shape)
    L = jnp.take_along_axis(T, first, axis=-1)
    bwd = gains(L, Ppb - L)
    ok = slot < jnp.minimum(cat.max_cat_threshold, n_cats) - 1
    pad = ((0, 0), (0, 0), (0, V - S))
    part = jnp.concatenate(
        [
            jnp.pad(jnp.where(ok, fwd, -jnp.inf), pad, constant_values=-jnp.inf),
            jnp.pad(jnp.where(ok, bwd, -jnp.inf), pad, constant_values=-jnp.inf),
        ],
        axis=-1,
    )
    onehot = (cat.kind == ONE_HOT)[:, None, None]
    return jnp.where(onehot, one, part), order


def _rules(hists, totals, dyn, forward_ok, idx, node, *, clipped, any_forward):
    """``(gain_a, gain_b, P, Pp, gains)``: the threshold gains of every feature, the
    stacked histograms of the features ``idx`` and their totals, and the gain of their
    candidates (``_category_gains``), unconstrained or under ``node``'s constraints
    (``constraints.find_best_constrained``). Call in x64 scope."""
    (G, H), (Gp, Hp) = hists, totals
    if node is None:
        score = calc_score if clipped else _plain_score
        gain_a, gain_b = numeric_gains(
            G, H, Gp, Hp, dyn, forward_ok, score=score, any_forward=any_forward
        )
        spb = score(Gp, Hp, dyn)[None, :, None]

        def plain_gains(L, R):
            return _pass_gains(L[0], L[1], R[0], R[1], spb, dyn, score)

        return gain_a, gain_b, jnp.stack([G[idx], H[idx]]), jnp.stack([Gp, Hp]), plain_gains
    gain_a, gain_b = constrained_gains(
        G, H, Gp, Hp, dyn, forward_ok, node, clipped=clipped, any_forward=any_forward
    )
    sub = dict(node, sign=node["sign"][idx]) if "sign" in node else node
    rule = gain_rule(Gp, Hp, dyn, sub, clipped=clipped)
    P, Pp = [G[idx], H[idx]], [Gp, Hp]
    if "C" in node:
        P.append(node["C"][idx])
        Pp.append(node["Cp"])
        k = node["k"].astype(ACC_DTYPE)

    def gains(L, R):
        gain = rule(L[0], L[1], R[0], R[1])
        return gain if "C" not in node else rows_ok(gain, L[2], R[2], k)

    return gain_a, gain_b, jnp.stack(P), jnp.stack(Pp), gains


def find_best_splits(
    hists,
    totals,
    dyn,
    forward_ok,
    cat: CatInfo,
    *,
    clipped: bool = True,
    any_forward: bool = True,
    feature_mask=None,
    node=None,
):
    """``split.find_best_splits`` with categorical features.

    Args:
      hists: ``(G, H)``, ``(F, n, B)`` float64 histograms; totals: ``(Gp, Hp)``
        ``(n,)``; dyn, forward_ok, clipped, any_forward, feature_mask: as in
        ``split.find_best_splits``.
      cat: ``CatInfo`` of the same ``F`` features.
      node: optional constraint inputs of the ``n`` nodes, as
        ``constraints.find_best_constrained``'s (monotone bounds and signs, row
        counts); every candidate, categorical or not, then follows those rules (no
        feature split by category may have a monotone sign).

    Returns:
      dict of ``(n,)`` arrays ``gain``, ``feature``, ``tbin`` (0 at categorical
      splits), ``default_left``, ``is_cat`` (bool), and ``left`` ``(n, B)`` bool, the
      bins the split sends left (the missing-value bin and codes never seen in
      training: ``default_left``).
    """
    F, n, B = hists[0].shape
    V = B - 1
    idx = jnp.arange(F, dtype=INDEX_DTYPE) if cat.index is None else cat.index
    sub = CatInfo(cat.kind[idx], cat.n_cats[idx], None, None, cat.max_cat_threshold, cat.codes)
    with jax.enable_x64(True):
        gain_a, gain_b, P, Pp, gains = _rules(
            hists, totals, dyn, forward_ok, idx, node, clipped=clipped, any_forward=any_forward
        )
        if gain_a is None:
            gain_a = jnp.full_like(gain_b, -jnp.inf)
        gain = jnp.concatenate([gain_a, gain_b], axis=-1)  # (F, n, 2 V)
        cgain, order = _category_gains(P, Pp, dyn, sub, gains)
        is_cat_f = (sub.kind != NUMERIC)[:, None, None]
        gain = gain.at[idx].set(jnp.where(is_cat_f, cgain, gain[idx]))
    s = pick_best(gain[..., :V], gain[..., V:], feature_mask)
    return _decode(s, order, cat, idx, V)


def _decode(s, order, cat: CatInfo, idx, V):
    """The bins each node's chosen split sends left (see ``find_best_splits``)."""
    f, tbin, dl = s["feature"], s["tbin"], s["default_left"]
    n = f.shape[0]
    B = V + 1
    j = jnp.where(dl, 2 * V - 1 - tbin, tbin - 1)  # the candidate's slot
    kind = cat.kind[f]
    is_cat = kind != NUMERIC
    # The feature's row of ``order``: its position among ``idx``.
    pos = jnp.clip(jnp.searchsorted(idx, f), 0, idx.shape[0] - 1)
    nodes = jnp.arange(n, dtype=INDEX_DTYPE)
    S = order.shape[-1]  # the bins that can hold categories (CatInfo.codes)
    o = order[pos, nodes]  # (n, S)
    rank = (
        jnp.zeros((n, S), INDEX_DTYPE)
        .at[nodes[:, None], o]
        .set(jnp.arange(S, dtype=INDEX_DTYPE)[None, :])
    )
    forward = j < V
    k = jnp.where(forward, j + 1, cat.n_cats[f] - (j - V + 1))  # categories going right
    code = jnp.arange(S, dtype=INDEX_DTYPE)[None, :]
    one = kind == ONE_HOT
    left_v = jnp.where(one[:, None], code != (j // 2)[:, None], rank >= k[:, None])
    dl_cat = jnp.where(one, j % 2 == 0, forward)
    left_v = jnp.where(cat.seen[f][:, :S], left_v, dl_cat[:, None])
    # codes S .. V - 1 were never seen, and the missing-value bin: the default way
    left_cat = jnp.concatenate([left_v, jnp.broadcast_to(dl_cat[:, None], (n, V - S + 1))], axis=1)
    bins = jnp.arange(B, dtype=INDEX_DTYPE)[None, :]
    left_num = jnp.where(bins == B - 1, dl[:, None], bins < tbin[:, None])
    return dict(
        gain=s["gain"],
        feature=f,
        tbin=jnp.where(is_cat, 0, tbin),
        default_left=jnp.where(is_cat, dl_cat, dl),
        is_cat=is_cat,
        left=jnp.where(is_cat[:, None], left_cat, left_num),
    )


def children_sums(Gh, Hh, s):
    """``(Gc, Hc)``: the ``(2 n,)`` children totals (left, right interleaved) of nodes
    whose splits send the bins ``s["left"]`` ``(n, B)`` left, from their split feature's
    histogram row (``Gh``, ``Hh``: ``(F, n, B)``)."""
    n = s["feature"].shape[0]
    nodes = jnp.arange(n, dtype=INDEX_DTYPE)
    out = []
    for S in (Gh, Hh):
        row = S[s["feature"], nodes]  # (n, B)
        SL = jnp.sum(jnp.where(s["left"], row, 0.0), axis=1)
        SR = jnp.sum(jnp.where(s["left"], 0.0, row), axis=1)
        out.append(jnp.stack([SL, SR], axis=1).reshape(2 * n))
    return tuple(out)


def route(pos, local, in_level, do, feature, left, bin_of):
    """Move the rows of a level's split nodes to their children: a row goes left when
    ``left[node, bin]`` for its bin of the node's split feature (``grow.route`` for
    splits given by bin masks ``left`` ``(n, B)``)."""
    n = do.shape[0]
    node = jnp.minimum(local, n - 1)
    b_row = bin_of(jnp.where(do, feature, 0)[node]).astype(INDEX_DTYPE)
    go_left = left[node, b_row]
    move = in_level & do[node]
    return jnp.where(move, 2 * pos + 1 + (~go_left).astype(INDEX_DTYPE), pos)


def pack_bits(left):
    """``(..., B)`` bool bins going left -> ``(..., N_WORDS)`` uint32 category sets:
    bit ``c % 32`` of word ``c // 32`` for code ``c``; codes ``B .. 255`` (beyond the
    bins) take the missing-value bin's direction. With more than 256 bins (uint16 bins:
    another feature needs them) the codes are bins ``0 .. 255`` and the missing-value
    bin, past them, goes the split's ``default_left`` way (``categorical_left``).

    >>> import numpy as np
    >>> pack_bits(np.array([True, False, True, False])).tolist()[:2]
    [5, 0]
    """
    left = jnp.asarray(left, bool)
    B = left.shape[-1]
    width = 32 * N_WORDS
    if B < width:
        fill = jnp.broadcast_to(left[..., B - 1 : B], left.shape[:-1] + (width - B,))
        left = jnp.concatenate([left, fill], axis=-1)
    elif B > width:
        left = left[..., :width]
    words = left.reshape(left.shape[:-1] + (N_WORDS, 32)).astype(jnp.uint32)
    return jnp.sum(words << jnp.arange(32, dtype=jnp.uint32), axis=-1, dtype=jnp.uint32)


def codes_of_bits(bits: np.ndarray) -> np.ndarray:
    """The codes ``0 .. 255`` whose bit is set in one node's ``(N_WORDS,)`` set (host).

    >>> codes_of_bits(np.array([5, 0, 0, 0, 0, 0, 0, 1], np.uint32)).tolist()
    [0, 2, 224]
    """
    words = np.asarray(bits, np.uint32).reshape(N_WORDS)
    mask = (words[:, None] >> np.arange(32, dtype=np.uint32)) & np.uint32(1)
    return np.flatnonzero(mask.reshape(-1))


def bits_of_codes(codes, default_left: bool, seen: np.ndarray) -> np.ndarray:
    """A node's ``(N_WORDS,)`` uint32 set from the training codes going left: the other
    seen codes go right, every code not ``seen`` (``(>= 1,)`` bool by code) goes the
    default way (host; the inverse of ``codes_of_bits`` on seen codes)."""
    left = np.zeros(32 * N_WORDS, bool)
    seen_all = np.zeros(32 * N_WORDS, bool)
    seen_all[: min(seen.shape[0], left.shape[0])] = seen[: left.shape[0]]
    left[~seen_all] = bool(default_left)
    left[np.asarray(codes, np.int64)] = True
    return np.asarray(pack_bits(left))
