r"""Split constraints: monotone, interaction, and a minimum number of rows per leaf.

Three options restrict the splits a tree may make. Each is off by default and, when on,
is a static switch of the round program (``ConstraintSpec``) with its values traced
(``ConstraintValues``): changing the signs, the sets or the row minimum reuses the
compiled program; the default program is the one compiled without this module.

**Monotone constraints** (XGBoost 3.2's ``hist`` rules, ``src/tree/split_evaluator.h``
and ``hist/evaluate_splits.h``). Feature ``f`` has a sign :math:`c_f \in \{-1, 0, 1\}`.
Every node ``p`` has bounds :math:`[l_p, u_p]` on its weight (the root: the float32
range). A candidate split of ``p`` gives its children the weights

.. math::

   w_L = \mathrm{clip}(w^*(G_L, H_L), l_p, u_p), \qquad
   w_R = \mathrm{clip}(w^*(G_R, H_R), l_p, u_p)

and the gain

.. math::

   \mathrm{gain} = S(G_L, H_L; w_L) + S(G_R, H_R; w_R) - S(G_p, H_p; w_p), \qquad
   S(G, H; w) = -\big(2 G w + (H + \lambda) w^2\big)

where :math:`w_p` is ``p``'s own weight clipped to its parent's bounds. A split on a
feature with :math:`c_f = +1` and :math:`w_L > w_R` (or :math:`c_f = -1` and
:math:`w_L < w_R`) is refused. The children inherit ``p``'s bounds, and the midpoint
:math:`m = (w_L + w_R) / 2` becomes the upper bound of the left child and the lower
bound of the right one when :math:`c_f = +1` (the reverse when :math:`c_f = -1`). A
node's value is its weight clipped to its parent's bounds, times the learning rate. So
every leaf left of a split on an increasing feature is :math:`\le m \le` every leaf on
its right, each tree is monotone along the feature, and so is their sum. As in XGBoost,
once any feature has a sign every score (constrained feature or not) takes the form
:math:`S(G, H; w)`, in float32 arithmetic with :math:`G, H` rounded to float32 first; it
equals :math:`T_\alpha(G)^2 / (H + \lambda)` up to rounding when nothing is clipped.
A refitted leaf (``refit=``) is clipped to the leaf's own bounds, which keeps the order.

**Interaction constraints** (XGBoost's rules, ``src/tree/constraints.cc``): sets of
features :math:`S_1, \dots, S_C`. The root may split on any feature. Below it, with
:math:`P` the features split on along the path from the root, a node may split on
:math:`f` when :math:`f \in P` or :math:`f \in S_j` for a set with :math:`P \subseteq
S_j`. (A feature in no set can split the root, and below it only itself.) With column
sampling a node may split on the features allowed by both.

**min_samples_leaf** ``k``: a candidate split is valid only when each child holds at
least ``k`` of the rows the tree is grown on: real rows of positive weight whose g and
h are finite and that row sampling (``subsample``) kept for this round. Rows count 1
each, whatever their weight; ``min_child_weight`` instead bounds each child's sum of
Hessians (which scale with ``sample_weight``). The counts come from one more histogram
per level (a ``(count, 0)`` pair through the same kernel; with the native kernel only
of the smaller child of each pair, the sibling's by subtraction, as for g and h).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._types import ACC_DTYPE, FLOAT_DTYPE, INDEX_DTYPE
from .split import (
    _pass_gains,
    _plain_score,
    calc_score,
    calc_weight,
    leaf_values,
    pick_best,
    prefix_sums,
)

FLOAT32_MAX = float(np.finfo(np.float32).max)


class ConstraintSpec(NamedTuple):
    """The static part (hashable, in ``round.RoundSpec``): which constraints are on.

    ``monotone``: some feature has a nonzero sign; ``n_sets``: rows of the interaction
    sets matrix (0: no interaction constraints); ``min_leaf``: a row minimum per child
    is checked (counts are histogrammed).
    """

    monotone: bool = False
    n_sets: int = 0
    min_leaf: bool = False


class ConstraintValues(NamedTuple):
    """The traced part (in ``round.Hyper``): ``monotone`` ``(F,)`` int32 signs,
    ``sets`` ``(C', F)`` bool (row ``j``: the features of set ``j``; rows past the
    ``C`` sets are empty, see ``training.constraints.set_rows``), ``min_leaf`` an int32
    scalar."""

    monotone: Any
    sets: Any
    min_leaf: Any


def _r32(x):
    """Round to float32, kept as float64 for the next operation."""
    return x.astype(FLOAT_DTYPE).astype(ACC_DTYPE)


def score_given_weight(G, H, w, reg_lambda):
    """:math:`S(G, H; w) = -(2 G w + (H + \\lambda) w^2)` as XGBoost 3.2 computes it
    under monotone constraints (``CalcGainGivenWeight<float>``): ``G`` and ``H``
    (float64 sums) rounded to float32, then every operation rounded to float32; 0 where
    ``H <= 0``.

    Each operation is carried out in float64 on float32 operands and rounded once,
    which gives the float32 result exactly (products of two float32 numbers are exact
    in float64; sums round correctly through float64) and leaves nothing a compiler
    could fuse into a multiply-add.

    Example:
      >>> import numpy as np
      >>> G, H = np.float64(-3.0), np.float64(2.0)
      >>> float(score_given_weight(G, H, np.float32(1.0), np.float32(1.0)))  # G^2/(H+1)
      3.0
    """
    with jax.enable_x64(True):
        g, h = _r32(jnp.asarray(G, ACC_DTYPE)), _r32(jnp.asarray(H, ACC_DTYPE))
        w = jnp.asarray(w).astype(FLOAT_DTYPE).astype(ACC_DTYPE)
        lam = jnp.asarray(reg_lambda).astype(FLOAT_DTYPE).astype(ACC_DTYPE)
        lin = _r32(2.0 * g * w)
        quad = _r32(_r32(h + lam) * _r32(w * w))
        s = (-(lin + quad)).astype(FLOAT_DTYPE)
        return jnp.where(jnp.asarray(H) <= 0, jnp.float32(0.0), s)


def bounded_weight(G, H, dyn, lo, hi):
    """The float32 Newton weight :math:`w^*(G, H)` clipped to ``[lo, hi]``."""
    return jnp.clip(calc_weight(G, H, dyn).astype(FLOAT_DTYPE), lo, hi)


def gain_rule(Gp, Hp, dyn, node, *, clipped: bool = True):
    """The gain of candidate splits of nodes with totals ``Gp``, ``Hp`` ``(n,)`` under
    the monotone rules of ``node`` (see ``find_best_constrained``; without ``"sign"``
    the unconstrained gain of ``split``): ``gains(GL, HL, GR, HR)``, children sums
    ``(F', n, V')`` float64 in, float32 gains out, ``-inf`` where a child's H is below
    ``min_child_weight`` or the weights are out of order for ``node["sign"]``
    ``(F',)``. Call in x64 scope.

    Example:
      >>> import numpy as np, jax
      >>> from jaxboost.engine.split import TreeHyper
      >>> dyn = TreeHyper(*np.float32([1, 0, 0, 0, 0, 0]))
      >>> with jax.enable_x64(True):
      ...     gains = gain_rule(np.array([0.0]), np.array([2.0]), dyn, {})
      ...     one = np.ones((1, 1, 1))
      ...     float(gains(-one, one, one, one)[0, 0, 0])  # 1/1 + 1/1 - 0/2
      2.0
    """
    mcw = dyn.min_child_weight.astype(ACC_DTYPE)
    if "sign" not in node:
        score = calc_score if clipped else _plain_score
        sp = score(Gp, Hp, dyn)[None, :, None]

        def plain_gains(GL, HL, GR, HR):
            return _pass_gains(GL, HL, GR, HR, sp, dyn, score)

        return plain_gains
    lam = dyn.reg_lambda
    lo, hi = node["lo"][None, :, None], node["hi"][None, :, None]
    wp = bounded_weight(Gp, Hp, dyn, node["plo"], node["phi"])
    sp = score_given_weight(Gp, Hp, wp, lam)[None, :, None]
    sign = node["sign"][:, None, None]

    def gains(GL, HL, GR, HR):
        wl = bounded_weight(GL, HL, dyn, lo, hi)
        wr = bounded_weight(GR, HR, dyn, lo, hi)
        gain = (score_given_weight(GL, HL, wl, lam) + score_given_weight(GR, HR, wr, lam)) - sp
        ordered = (sign == 0) | ((sign > 0) & (wl <= wr)) | ((sign < 0) & (wl >= wr))
        return jnp.where((HL >= mcw) & (HR >= mcw) & ordered, gain, -jnp.inf)

    return gains


def rows_ok(gain, CL, CR, k):
    """``gain`` where both children hold at least ``k`` rows (``CL``, ``CR``), else
    ``-inf``."""
    return jnp.where((CL >= k) & (CR >= k), gain, -jnp.inf)


def constrained_gains(
    G, H, Gp, Hp, dyn, forward_ok, node, *, clipped: bool = True, any_forward: bool = True
):
    """``(gain_a, gain_b)``: the ``(F, n, V)`` float32 gains of the threshold candidates
    of ``find_best_constrained``'s two passes (``gain_a`` None unless ``any_forward``),
    as ``split.numeric_gains`` does unconstrained; call in x64 scope."""
    V = G.shape[-1] - 1
    Gv, Hv = G[..., :V], H[..., :V]
    Gpb, Hpb = Gp[None, :, None], Hp[None, :, None]
    gains = gain_rule(Gp, Hp, dyn, node, clipped=clipped)
    counted = "C" in node
    if counted:
        Cv, Cpb = node["C"][..., :V], node["Cp"][None, :, None]
        k = node["k"].astype(ACC_DTYPE)

    # Pass B: thresholds descending, missing left (see split.find_best_splits).
    GRb = prefix_sums(Gv[..., ::-1])
    HRb = prefix_sums(Hv[..., ::-1])
    gain_b = gains(Gpb - GRb, Hpb - HRb, GRb, HRb)
    if counted:
        CRb = prefix_sums(Cv[..., ::-1])
        gain_b = rows_ok(gain_b, Cpb - CRb, CRb, k)
    gain_a = None
    if any_forward:  # Pass A: thresholds ascending, missing right.
        GLa = prefix_sums(Gv)
        HLa = prefix_sums(Hv)
        gain_a = gains(GLa, HLa, Gpb - GLa, Hpb - HLa)
        if counted:
            CLa = prefix_sums(Cv)
            gain_a = rows_ok(gain_a, CLa, Cpb - CLa, k)
        gain_a = jnp.where(forward_ok[:, None, None], gain_a, -jnp.inf)
    return gain_a, gain_b


def find_best_constrained(
    G,
    H,
    Gp,
    Hp,
    dyn,
    forward_ok,
    node,
    *,
    clipped: bool = True,
    any_forward: bool = True,
    feature_mask=None,
):
    """``split.find_best_splits`` under constraints.

    Args:
      G, H, Gp, Hp, dyn, forward_ok, clipped, any_forward, feature_mask: as in
        ``split.find_best_splits`` (``(F, n, B)`` histograms, ``(n,)`` totals).
      node: dict of the nodes' constraint inputs. Monotone: ``sign`` ``(F,)`` int32,
        ``lo``, ``hi`` ``(n,)`` float32 the nodes' bounds and ``plo``, ``phi`` their
        parents' bounds. Row minimum: ``C`` ``(F, n, B)`` float64 row counts, ``Cp``
        ``(n,)`` the nodes' counts, ``k`` the minimum.

    Returns:
      as ``split.find_best_splits``.

    Example:
      >>> import numpy as np
      >>> from jaxboost.engine.split import TreeHyper
      >>> dyn = TreeHyper(*np.float32([1, 0, 0, 0, 0, 0]))  # lambda 0, no child minimum
      >>> G = np.array([[[-2.0, -1.0, 1.0, 2.0, 0.0]]])       # (F, n, B); bin 4: missing
      >>> H = np.array([[[1.0, 1.0, 1.0, 1.0, 0.0]]])
      >>> node = dict(lo=np.float32([-3e38]), hi=np.float32([3e38]),
      ...             plo=np.float32([-3e38]), phi=np.float32([3e38]))
      >>> def best(sign):
      ...     s = find_best_constrained(G, H, G.sum((0, 2)), H.sum((0, 2)), dyn,
      ...                               np.zeros(1, bool), dict(node, sign=np.int32([sign])))
      ...     return float(s["gain"][0]), int(s["tbin"][0])
      >>> best(-1)  # weights 1.5 | -1.5: decreasing, allowed; gain 9/2 + 9/2
      (9.0, 2)
      >>> best(+1)[0]  # every useful split decreases: only gain-0 candidates are left
      0.0
    """
    with jax.enable_x64(True):
        gain_a, gain_b = constrained_gains(
            G, H, Gp, Hp, dyn, forward_ok, node, clipped=clipped, any_forward=any_forward
        )
    return pick_best(gain_a, gain_b, feature_mask)


def _pow2(d):
    return jnp.left_shift(jnp.int32(1), jnp.asarray(d, INDEX_DTYPE))


class TreeConstraints:
    """The constraints of one tree, as ``grow.grow_tree`` applies them.

    ``spec``: ``ConstraintSpec`` (static); ``values``: ``ConstraintValues`` (traced);
    ``counts``: ``(N,)`` float32, 1 for each row the tree is grown on (only with
    ``spec.min_leaf``). The tree builder carries a ``state`` dict through its level
    loop: the heap bounds ``lo``, ``hi`` ``(M,)`` (monotone) and, for the ``W`` nodes of
    the current level, the features used on their paths ``used`` ``(W, F)`` and the sets
    that hold all of them ``rel`` ``(W, C)`` (interaction).
    """

    def __init__(self, spec: ConstraintSpec, values: ConstraintValues, counts=None):
        if spec.min_leaf and counts is None:
            raise ValueError("min_samples_leaf needs the per-row counts")
        self.spec, self.values, self.counts = spec, values, counts

    @property
    def monotone(self) -> bool:
        return self.spec.monotone

    def init(self, M: int, W: int, F: int) -> dict:
        state = {}
        if self.spec.monotone:
            state["lo"] = jnp.full(M, -FLOAT32_MAX, FLOAT_DTYPE)
            state["hi"] = jnp.full(M, FLOAT32_MAX, FLOAT_DTYPE)
        if self.spec.n_sets:
            state["used"] = jnp.zeros((W, F), bool)
            state["rel"] = jnp.ones((W, self.values.sets.shape[0]), bool)
        return state

    def level_mask(self, state, d, base):
        """``(W, F)`` features each node of level ``d`` may split on: ``base`` (column
        sampling, or None) and the interaction sets."""
        if not self.spec.n_sets:
            return base
        sets = self.values.sets.astype(FLOAT_DTYPE)
        allowed = state["used"] | (state["rel"].astype(FLOAT_DTYPE) @ sets > 0)
        allowed = allowed | (jnp.asarray(d) == 0)
        return allowed if base is None else base & allowed

    def level(self, state, d, W: int, count_hist=None) -> dict:
        """The per-node inputs of level ``d`` (``find``'s ``lvl``): bounds of the
        level's ``W``-wide window and of their parents, the signs, and the level's
        ``(F, W, B)`` row-count histogram with the nodes' counts."""
        out: dict[str, Any] = {}
        if self.spec.monotone:
            idx = _pow2(d) - 1 + jnp.arange(W, dtype=INDEX_DTYPE)
            parent = jnp.maximum((idx - 1) // 2, 0)
            out.update(
                lo=state["lo"][idx],
                hi=state["hi"][idx],
                plo=state["lo"][parent],
                phi=state["hi"][parent],
                sign=self.values.monotone,
            )
        if self.spec.min_leaf:
            out["k"] = self.values.min_leaf
            if count_hist is not None:  # (a blocked level adds each block's: ``block``)
                with jax.enable_x64(True):
                    out.update(C=count_hist, Cp=jnp.sum(count_hist[0], axis=-1))
        return out

    @staticmethod
    def block(lvl: dict, f0, size: int, count_hist=None) -> dict:
        """``lvl`` restricted to the features ``f0 .. f0 + size - 1`` (a feature block),
        with that block's count histogram."""
        out = dict(lvl)
        if "sign" in out:
            out["sign"] = jax.lax.dynamic_slice_in_dim(out["sign"], f0, size, 0)
        if count_hist is not None:
            with jax.enable_x64(True):
                out.update(C=count_hist, Cp=jnp.sum(count_hist[0], axis=-1))
        return out

    def find(self, hists, totals, dyn, fok, mask, lvl, chunk, *, clipped, any_forward):
        """Best splits of a level's chunk of nodes: ``find_best_constrained`` on the
        chunk's histograms ``hists = (G, H)`` and totals ``totals = (Gp, Hp)``, with
        the chunk's part of ``lvl``; ``chunk = (k, c)``: nodes ``k c .. k c + c - 1``."""
        (Gh, Hh), (Gt, Ht) = hists, totals
        return find_best_constrained(
            Gh,
            Hh,
            Gt,
            Ht,
            dyn,
            fok,
            self.chunk(lvl, chunk),
            clipped=clipped,
            any_forward=any_forward,
            feature_mask=mask,
        )

    @staticmethod
    def chunk(lvl: dict, chunk) -> dict:
        """``lvl``'s inputs of the nodes ``k c .. k c + c - 1`` (``chunk = (k, c)``):
        ``find_best_constrained``'s ``node``."""
        k, c = chunk
        node = {}
        for key, v in lvl.items():
            if key in ("sign", "k"):
                node[key] = v
            elif key == "C":
                node[key] = jax.lax.dynamic_slice_in_dim(v, k * c, c, 1)
            else:
                node[key] = jax.lax.dynamic_slice_in_dim(v, k * c, c, 0)
        return node

    def after_level(self, state, d, W: int, lvl, do, feature, Gc, Hc, dyn) -> dict:
        """The state once level ``d``'s nodes have split (``do``, on ``feature``) into
        children with totals ``Gc``, ``Hc`` ``(2 W,)`` (left, right interleaved)."""
        state = dict(state)
        if self.spec.monotone:
            with jax.enable_x64(True):
                lo, hi = lvl["lo"], lvl["hi"]
                wl = bounded_weight(Gc[0::2], Hc[0::2], dyn, lo, hi)
                wr = bounded_weight(Gc[1::2], Hc[1::2], dyn, lo, hi)
            mid = (wl + wr) / jnp.float32(2.0)
            c = jnp.where(do, self.values.monotone[feature], 0)
            left_lo, left_hi = jnp.where(c < 0, mid, lo), jnp.where(c > 0, mid, hi)
            right_lo, right_hi = jnp.where(c > 0, mid, lo), jnp.where(c < 0, mid, hi)
            off = 2 * _pow2(d) - 1  # heap index of the level's first child
            for key, (a, b) in (("lo", (left_lo, right_lo)), ("hi", (left_hi, right_hi))):
                both = jnp.stack([a, b], axis=1).reshape(2 * W)
                state[key] = jax.lax.dynamic_update_slice(state[key], both, (off,))
        if self.spec.n_sets:
            F = state["used"].shape[1]
            one_hot = jnp.arange(F, dtype=INDEX_DTYPE)[None, :] == feature[:, None]
            used = state["used"] | one_hot
            rel = state["rel"] & self.values.sets.T[feature]
            state["used"] = jnp.repeat(used, 2, axis=0)[:W]
            state["rel"] = jnp.repeat(rel, 2, axis=0)[:W]
        return state

    def leaf_values(self, state, made_split, Gn, Hn, dyn):
        """``(value, bounds)``: every node's stored value (``split.leaf_values``; with
        monotone constraints the weight is clipped to the parent's bounds first) and,
        with monotone constraints, every node's own bounds ``(lo, hi)`` (else None).

        ``made_split`` ``(M,)``: the splits made while growing (before gamma pruning);
        a node whose parent made none does not exist: it keeps the unclipped value (0)
        and the bounds of the whole float32 range."""
        if not self.spec.monotone:
            return leaf_values(Gn, Hn, dyn), None
        M = Gn.shape[0]
        i = jnp.arange(M, dtype=INDEX_DTYPE)
        parent = jnp.maximum((i - 1) // 2, 0)
        w = calc_weight(Gn, Hn, dyn).astype(FLOAT_DTYPE)
        exists = (i == 0) | made_split[parent]
        w = jnp.where(exists, jnp.clip(w, state["lo"][parent], state["hi"][parent]), w)
        bounds = (
            jnp.where(exists, state["lo"], -FLOAT32_MAX),
            jnp.where(exists, state["hi"], FLOAT32_MAX),
        )
        return w * dyn.learning_rate, bounds


def clip_to_bounds(tree, bounds, eta):
    """Leaf values of ``tree`` (learning rate applied) clipped to each leaf's own bounds
    ``bounds = (lo, hi)`` scaled by ``eta``: after a refit, this keeps a tree monotone
    (the scaled midpoint bounds both sides of every constrained split alike)."""
    lo, hi = bounds
    v = tree["value"]
    clipped = jnp.clip(v, lo * eta, hi * eta)
    return dict(tree, value=jnp.where(tree["is_leaf"], clipped, v))
