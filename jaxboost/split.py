r"""Split finding and leaf values: XGBoost's Newton-boosting formulas.

For a node with sums :math:`G = \sum g`, :math:`H = \sum h`, with
:math:`T_\alpha(G) = \mathrm{sign}(G)\max(|G| - \alpha, 0)`:

.. math::

   w^* = -\frac{T_\alpha(G)}{H + \lambda} \ \text{(clipped to } \pm\text{max\_delta\_step
   when it is > 0; 0 when } H < \text{min\_child\_weight or } H \le 0)

   S(G, H) = \frac{T_\alpha(G)^2}{H + \lambda}
   \quad\text{or, with max\_delta\_step} > 0:\quad
   S = -\big(2 G w^* + (H + \lambda) {w^*}^2\big)

   \mathrm{gain} = S(G_L, H_L) + S(G_R, H_R) - S(G, H)

Scores are computed from float64 sums and rounded to float32, and the gain is summed in
float32, as XGBoost 3.2 does; equal float32 gains then break ties the same way.

Candidate order (first strictly greater gain wins, as in XGBoost's exact method):
features ascending; within a feature, when it had missing values in training and more
than one distinct value, thresholds ascending with missing rows sent right (the last of
them puts every present value left); then always thresholds descending with missing
rows sent left (the last puts every present value right).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._types import MIN_SPLIT_GAIN

# Indices into the dynamic parameter vector (params.DYNAMIC_FIELDS).
ETA, LAMBDA, ALPHA, GAMMA, MCW, MDS = range(6)


def threshold_l1(G, alpha):
    """Soft-thresholding :math:`T_\\alpha(G)`."""
    return jnp.where(G > alpha, G - alpha, jnp.where(G < -alpha, G + alpha, 0.0))


def calc_weight(G, H, dyn):
    """Newton leaf weight :math:`w^*` in float64 (see the module docstring)."""
    lam, alpha, mcw, mds = (dyn[i].astype(jnp.float64) for i in (LAMBDA, ALPHA, MCW, MDS))
    w = -threshold_l1(G, alpha) / (H + lam)
    w = jnp.where(mds > 0, jnp.clip(w, -mds, mds), w)
    return jnp.where((H < mcw) | (H <= 0), 0.0, w)


def calc_score(G, H, dyn):
    """Node score :math:`S(G, H)` as float32, from float64 sums."""
    lam, alpha, mds = (dyn[i].astype(jnp.float64) for i in (LAMBDA, ALPHA, MDS))
    safe = jnp.where(H + lam > 0, H + lam, 1.0)
    s_plain = (jnp.square(threshold_l1(G, alpha)) / safe).astype(jnp.float32)
    w = calc_weight(G, H, dyn).astype(jnp.float32)
    lam32 = dyn[LAMBDA]
    quad = ((H.astype(jnp.float32) + lam32) * (w * w)).astype(jnp.float64)
    lin = 2.0 * G.astype(jnp.float32).astype(jnp.float64) * w.astype(jnp.float64)
    s_clip = (-(lin + quad)).astype(jnp.float32)
    s = jnp.where(mds > 0, s_clip, s_plain)
    return jnp.where(H <= 0, jnp.float32(0.0), s)


def leaf_values(G, H, dyn):
    """Stored leaf values: ``float32(w*) * learning_rate`` in float32."""
    return calc_weight(G, H, dyn).astype(jnp.float32) * dyn[ETA]


def _pass_gains(GL, HL, GR, HR, sp, dyn, score):
    """float32 gains of candidates with the given child sums (float64)."""
    gain = (score(GL, HL, dyn) + score(GR, HR, dyn)) - sp
    mcw = dyn[MCW].astype(jnp.float64)
    valid = (HL >= mcw) & (HR >= mcw)
    return jnp.where(valid, gain, -jnp.inf)


def _plain_score(G, H, dyn):
    """``calc_score`` when max_delta_step == 0 (the common case; cheaper)."""
    lam, alpha = dyn[LAMBDA].astype(jnp.float64), dyn[ALPHA].astype(jnp.float64)
    safe = jnp.where(H + lam > 0, H + lam, 1.0)
    s = (jnp.square(threshold_l1(G, alpha)) / safe).astype(jnp.float32)
    return jnp.where(H <= 0, jnp.float32(0.0), s)


def find_best_splits(G, H, Gp, Hp, dyn, forward_ok, *, clipped: bool = True,
                     any_forward: bool = True):
    """Best split of every node of a level.

    Args:
      G, H: ``(F, n, B)`` float64 histograms; bin ``B - 1`` holds missing values.
      Gp, Hp: ``(n,)`` float64 node totals.
      dyn: float32 dynamic parameters (``params.DYNAMIC_FIELDS``).
      forward_ok: ``(F,)`` bool, whether the ascending, missing-right pass is tried.
      clipped: static; ``False`` promises ``max_delta_step == 0`` and compiles only the
        plain score (cheaper). ``True`` handles either value.
      any_forward: static; ``False`` promises ``forward_ok`` is all false and skips the
        ascending pass.

    Returns:
      dict of ``(n,)`` arrays: ``gain`` float32 (``-inf`` when no candidate is valid),
      ``feature`` int32, ``tbin`` int32 (bins ``< tbin`` go left), ``default_left``
      bool.
    """
    F, n, B = G.shape
    V = B - 1
    with jax.enable_x64(True):
        Gv, Hv = G[..., :V], H[..., :V]
        Gpb, Hpb = Gp[None, :, None], Hp[None, :, None]
        score = calc_score if clipped else _plain_score
        sp = score(Gp, Hp, dyn)[None, :, None]

        def gains(GL, HL, GR, HR):
            return _pass_gains(GL, HL, GR, HR, sp, dyn, score)

        # Pass B: t = V-1..0, right = bins >= t, missing left; left = parent - right.
        # (Reverse cumulative sums, then flipped so that index j means t = V-1-j.)
        GRb = jax.lax.cumsum(Gv, axis=2, reverse=True)[..., ::-1]
        HRb = jax.lax.cumsum(Hv, axis=2, reverse=True)[..., ::-1]
        gain_b = gains(Gpb - GRb, Hpb - HRb, GRb, HRb)
        # Pass A: t = 1..V, left = bins < t, missing right; right = parent - left.
        if any_forward:
            GLa = jax.lax.cumsum(Gv, axis=2)
            HLa = jax.lax.cumsum(Hv, axis=2)
            gain_a = gains(GLa, HLa, Gpb - GLa, Hpb - HLa)
            gain_a = jnp.where(forward_ok[:, None, None], gain_a, -jnp.inf)
    # Candidate order per feature: pass A (when present), then pass B.
    gain = jnp.concatenate([gain_a, gain_b], axis=-1) if any_forward else gain_b
    gain = jnp.where(jnp.isnan(gain), -jnp.inf, gain)
    per_feature = gain.shape[-1]
    flat = jnp.transpose(gain, (1, 0, 2)).reshape(n, F * per_feature)
    # First index of the maximum (ties: first candidate wins), as two plain reductions;
    # lax.argmax's variadic reduction was 3x slower on CPU. Index arithmetic in int32,
    # outside the x64 scope.
    best_gain = jnp.max(flat, axis=1)
    iota = jax.lax.broadcasted_iota(jnp.int32, flat.shape, 1)
    best = jnp.min(jnp.where(flat == best_gain[:, None], iota, F * per_feature), axis=1)
    best = jnp.minimum(best, F * per_feature - 1)
    feature = best // per_feature
    j = best % per_feature + (0 if any_forward else V)  # j >= V: pass B
    default_left = j >= V
    tbin = jnp.where(default_left, 2 * V - 1 - j, j + 1)
    return dict(gain=best_gain, feature=feature, tbin=tbin, default_left=default_left)


def is_split_worthy(gain):
    """A split is made only when its gain exceeds XGBoost's kRtEps (1e-6)."""
    return gain > jnp.float32(MIN_SPLIT_GAIN)
