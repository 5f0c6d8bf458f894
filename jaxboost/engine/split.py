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

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from .._types import ACC_DTYPE, FLOAT_DTYPE, INDEX_DTYPE, MIN_SPLIT_GAIN
from .smallmat import cho_solve, cholesky, positive_definite


class TreeHyper(NamedTuple):
    """The numbers of one tree that are traced, not compiled in (float32 scalars):
    a grid over them reuses one compiled program. Names follow XGBoost's."""

    learning_rate: Any
    reg_lambda: Any
    reg_alpha: Any
    gamma: Any
    min_child_weight: Any
    max_delta_step: Any


def threshold_l1(G, alpha):
    """Soft-thresholding :math:`T_\\alpha(G)`."""
    return jnp.where(G > alpha, G - alpha, jnp.where(G < -alpha, G + alpha, 0.0))


def newton_weight(G, H, lam, alpha, mcw, mds):
    r"""The Newton leaf weight :math:`-T_\alpha(G) / (H + \lambda)`, clipped to
    :math:`\pm` ``mds`` when ``mds > 0``, and 0 where :math:`H <` ``mcw`` or
    :math:`H \le 0`; in the dtype of ``G`` and ``H``. Unused entries divide by 1, so
    the gradient of the weight (``jaxboost.engine.replay``) has no NaN.

    >>> float(newton_weight(-3.0, 2.0, 1.0, 0.0, 1.0, 0.0))
    1.0
    """
    used = (H >= mcw) & (H > 0)
    w = -threshold_l1(G, alpha) / jnp.where(used & (H + lam > 0), H + lam, 1.0)
    w = jnp.where(mds > 0, jnp.clip(w, -mds, mds), w)
    return jnp.where(used, w, 0.0)


def calc_weight(G, H, dyn):
    """Newton leaf weight :math:`w^*` in float64 (see the module docstring)."""
    lam, alpha, mcw, mds = (
        x.astype(ACC_DTYPE)
        for x in (dyn.reg_lambda, dyn.reg_alpha, dyn.min_child_weight, dyn.max_delta_step)
    )
    return newton_weight(G, H, lam, alpha, mcw, mds)


def calc_score(G, H, dyn):
    """Node score :math:`S(G, H)` as float32, from float64 sums."""
    lam, alpha, mds = (
        x.astype(ACC_DTYPE) for x in (dyn.reg_lambda, dyn.reg_alpha, dyn.max_delta_step)
    )
    safe = jnp.where(H + lam > 0, H + lam, 1.0)
    s_plain = (jnp.square(threshold_l1(G, alpha)) / safe).astype(FLOAT_DTYPE)
    w = calc_weight(G, H, dyn).astype(FLOAT_DTYPE)
    lam32 = dyn.reg_lambda
    quad = ((H.astype(FLOAT_DTYPE) + lam32) * (w * w)).astype(ACC_DTYPE)
    lin = 2.0 * G.astype(FLOAT_DTYPE).astype(ACC_DTYPE) * w.astype(ACC_DTYPE)
    s_clip = (-(lin + quad)).astype(FLOAT_DTYPE)
    s = jnp.where(mds > 0, s_clip, s_plain)
    return jnp.where(H <= 0, jnp.float32(0.0), s)


def leaf_values(G, H, dyn):
    """Stored leaf values: ``float32(w*) * learning_rate`` in float32."""
    return calc_weight(G, H, dyn).astype(FLOAT_DTYPE) * dyn.learning_rate


def _pass_gains(GL, HL, GR, HR, sp, dyn, score):
    """float32 gains of candidates with the given child sums (float64)."""
    gain = (score(GL, HL, dyn) + score(GR, HR, dyn)) - sp
    mcw = dyn.min_child_weight.astype(ACC_DTYPE)
    valid = (HL >= mcw) & (HR >= mcw)
    return jnp.where(valid, gain, -jnp.inf)


def _plain_score(G, H, dyn):
    """``calc_score`` when max_delta_step == 0 (the common case; cheaper)."""
    lam, alpha = dyn.reg_lambda.astype(ACC_DTYPE), dyn.reg_alpha.astype(ACC_DTYPE)
    safe = jnp.where(H + lam > 0, H + lam, 1.0)
    s = (jnp.square(threshold_l1(G, alpha)) / safe).astype(FLOAT_DTYPE)
    return jnp.where(H <= 0, jnp.float32(0.0), s)


def find_best_splits(
    G,
    H,
    Gp,
    Hp,
    dyn,
    forward_ok,
    *,
    clipped: bool = True,
    any_forward: bool = True,
    feature_mask=None,
):
    """Best split of every node of a level.

    Args:
      G, H: ``(F, n, B)`` float64 histograms; bin ``B - 1`` holds missing values.
      Gp, Hp: ``(n,)`` float64 node totals.
      dyn: ``TreeHyper`` (traced float32 scalars).
      forward_ok: ``(F,)`` bool, whether the ascending, missing-right pass is tried.
      clipped: static; ``False`` promises ``max_delta_step == 0`` and compiles only the
        plain score (cheaper). ``True`` handles either value.
      any_forward: static; ``False`` promises ``forward_ok`` is all false and skips the
        ascending pass.
      feature_mask: optional ``(n, F)`` bool, the features each node may split on
        (column sampling).

    Returns:
      dict of ``(n,)`` arrays: ``gain`` float32 (``-inf`` when no candidate is valid),
      ``feature`` int32, ``tbin`` int32 (bins ``< tbin`` go left), ``default_left``
      bool.
    """
    with jax.enable_x64(True):
        score = calc_score if clipped else _plain_score
        gain_a, gain_b = numeric_gains(
            G, H, Gp, Hp, dyn, forward_ok, score=score, any_forward=any_forward
        )
    return pick_best(gain_a, gain_b, feature_mask)


PREFIX_BLOCK = 16
"""Bins per block of ``prefix_sums``."""


def prefix_sums(x):
    """Cumulative sums over the last axis (the bins): ``out[..., j] = x[..., :j+1].sum()``.

    In blocks of ``PREFIX_BLOCK`` bins: sums within each block, then the totals of the
    blocks before it, both as products with small 0/1 triangular matrices (about
    ``2 * PREFIX_BLOCK`` multiply-adds per bin, in a matrix kernel). XLA's CPU backend
    lowers ``cumsum`` to a reduce-window as wide as the axis, quadratic in the bins
    unless its optimising passes rewrite it; this form was faster both with XLA's
    default settings (0.12 vs 0.21 ms for ``(64, 4, 255)`` float64) and unoptimised as
    the test suite compiles (0.41 vs 1.76 ms).

    >>> import jax.numpy as jnp
    >>> out = prefix_sums(jnp.arange(1.0, 20.0)).tolist()
    >>> [out[j] for j in (0, 1, 15, 16, 18)]
    [1.0, 3.0, 136.0, 153.0, 190.0]
    """
    V, b = x.shape[-1], PREFIX_BLOCK
    m = -(-V // b)
    if m * b != V:
        x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, m * b - V)])
    blocks = x.reshape(x.shape[:-1] + (m, b))
    within = jnp.matmul(
        blocks, jnp.triu(jnp.ones((b, b), x.dtype)), precision=jax.lax.Precision.HIGHEST
    )
    before = jnp.matmul(
        within[..., -1], jnp.triu(jnp.ones((m, m), x.dtype), 1), precision=jax.lax.Precision.HIGHEST
    )
    return (within + before[..., None]).reshape(x.shape[:-1] + (m * b,))[..., :V]


def numeric_gains(G, H, Gp, Hp, dyn, forward_ok, *, score, any_forward: bool):
    """``(gain_a, gain_b)``: the ``(F, n, V)`` float32 gains of the threshold candidates
    of ``find_best_splits``'s two passes (``gain_a`` None unless ``any_forward``), with
    the node score ``score`` (``calc_score`` or ``_plain_score``); call in x64 scope."""
    F, n, B = G.shape
    V = B - 1
    Gv, Hv = G[..., :V], H[..., :V]
    Gpb, Hpb = Gp[None, :, None], Hp[None, :, None]
    sp = score(Gp, Hp, dyn)[None, :, None]

    def gains(GL, HL, GR, HR):
        return _pass_gains(GL, HL, GR, HR, sp, dyn, score)

    # Pass B: t = V-1..0, right = bins >= t, missing left; left = parent - right.
    # (Reverse cumulative sums, then flipped so that index j means t = V-1-j.)
    GRb = prefix_sums(Gv[..., ::-1])
    HRb = prefix_sums(Hv[..., ::-1])
    gain_b = gains(Gpb - GRb, Hpb - HRb, GRb, HRb)
    # Pass A: t = 1..V, left = bins < t, missing right; right = parent - left.
    gain_a = None
    if any_forward:
        GLa = prefix_sums(Gv)
        HLa = prefix_sums(Hv)
        gain_a = gains(GLa, HLa, Gpb - GLa, Hpb - HLa)
        gain_a = jnp.where(forward_ok[:, None, None], gain_a, -jnp.inf)
    return gain_a, gain_b


def pick_best(gain_a, gain_b, feature_mask=None):
    """The first best candidate of each node, decoded into a split.

    Args:
      gain_a: ``(F, n, V)`` float32 gains of pass A (thresholds ascending, missing
        right), or ``None`` when that pass was skipped.
      gain_b: ``(F, n, V)`` gains of pass B (index ``j`` is threshold ``V - 1 - j``,
        missing left).
      feature_mask: optional ``(n, F)`` bool; features outside it are not candidates.

    Returns:
      dict of ``(n,)`` arrays ``gain``, ``feature``, ``tbin``, ``default_left`` (see
      ``find_best_splits``).
    """
    F, n, V = gain_b.shape
    any_forward = gain_a is not None
    # Candidate order per feature: pass A (when present), then pass B.
    gain = jnp.concatenate([gain_a, gain_b], axis=-1) if any_forward else gain_b
    gain = jnp.where(jnp.isnan(gain), -jnp.inf, gain)
    if feature_mask is not None:
        gain = jnp.where(feature_mask.T[:, :, None], gain, -jnp.inf)
    per_feature = gain.shape[-1]
    flat = jnp.transpose(gain, (1, 0, 2)).reshape(n, F * per_feature)
    # First index of the maximum (ties: first candidate wins), as two plain reductions;
    # lax.argmax's variadic reduction was 3x slower on CPU. Index arithmetic in int32,
    # outside the x64 scope.
    best_gain = jnp.max(flat, axis=1)
    iota = jax.lax.broadcasted_iota(INDEX_DTYPE, flat.shape, 1)
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


# --- vector leaves ---------------------------------------------------------------------
def unpack_hessian(Hc, K: int, diagonal: bool):
    """``(..., P)`` Hessian channels -> ``(..., K, K)`` symmetric matrices.

    Channels are the diagonal (``P = K``) or the upper triangle in ``triu_indices``
    order (``P = K (K + 1) / 2``).
    """
    if diagonal:
        return Hc[..., :, None] * jnp.eye(K, dtype=Hc.dtype)
    iu, ju = jnp.triu_indices(K)
    Hm = jnp.zeros(Hc.shape[:-1] + (K, K), Hc.dtype).at[..., iu, ju].set(Hc)
    return Hm + jnp.swapaxes(Hm, -1, -2) - Hm * jnp.eye(K, dtype=Hc.dtype)


MAX_CONDITION = 100.0
"""The damping rule of K x K leaf solves (``vector_weight_score``): a node's Hessian sum
with an eigenvalue below ``trace(|H|) / K / MAX_CONDITION`` (indefinite, singular or
nearly so) is solved as ``H + (lambda + mu) I``, with ``mu`` large enough that every
eigenvalue of ``H + mu I`` is at least that floor."""


def vector_weight_score(G, Hc, dyn, *, diagonal: bool):
    r"""Newton leaf weights and scores of vector leaves.

    With :math:`A = H + \lambda I` and :math:`t = T_\alpha(G)` (soft-thresholding per
    output):

    .. math:: w^* = -A^{-1} t \ (\text{each entry clipped to} \pm \text{max\_delta\_step
              when it is} > 0), \qquad S = -(2 t^\top w^* + {w^*}^\top A w^*)

    which is :math:`t^\top A^{-1} t` without clipping. ``diagonal`` keeps only the
    diagonal of H (K independent scalar problems; an output whose ``H_kk + lambda <= 0``
    gets ``w_k = 0``). Nodes whose cover ``trace(H)`` is ``<= 0``, or whose mean
    Hessian over the outputs ``trace(H) / K`` is below ``min_child_weight``, get
    ``w = 0`` and score 0 (``min_child_weight`` bounds the Hessian of one output, as a
    scalar tree's: K copies of one target grow that target's scalar trees; XGBoost
    3.4's rule for vector leaves, ``IsValidSplit`` on the Hessian sum over targets / K).

    Damping rule of the full ``H`` (``MAX_CONDITION``): with the node's curvature
    scale :math:`s = \operatorname{tr}|H| / K` and :math:`\epsilon = s /
    \text{MAX\_CONDITION}`, a node whose ``H`` has an eigenvalue below
    :math:`\epsilon` (``H - eps I`` has no Cholesky factor: indefinite, singular or
    nearly so) has a quadratic model with no minimum or a flat direction, along which
    :math:`H + \lambda I` could step arbitrarily far (leaves of 100 and more on a
    zero-inflated Poisson). There the solve is damped (Levenberg-Marquardt):

    .. math:: A = H + (\lambda + \mu) I, \qquad
              \mu = \epsilon + \max\bigl(0, -\min_i (H_{ii} - \textstyle\sum_{j \ne i}
              |H_{ij}|)\bigr)

    (the Gershgorin bound: every eigenvalue of :math:`A - \lambda I` is at least
    :math:`\epsilon`), so no step is longer than :math:`|t| / (\epsilon + \lambda)`.
    Positive definite ``H`` with every eigenvalue at least :math:`\epsilon` are solved
    exactly as written.

    Args:
      G: ``(..., K)`` float64 gradient sums; Hc: ``(..., P)`` Hessian channels
        (``unpack_hessian``).
      dyn: dynamic parameters.

    Returns:
      ``(w, score, cover)``: ``(..., K)`` float64, ``(...)`` float64, ``(...)`` float64.
    """
    K = G.shape[-1]
    lam, alpha, mcw, mds = (
        x.astype(ACC_DTYPE)
        for x in (dyn.reg_lambda, dyn.reg_alpha, dyn.min_child_weight, dyn.max_delta_step)
    )
    t = threshold_l1(G, alpha)
    if diagonal:
        Hd = Hc
        cover = jnp.sum(Hd, axis=-1)
        A = Hd + lam
        w = jnp.where(A > 0, -t / jnp.where(A > 0, A, 1.0), 0.0)
    else:
        Hm = unpack_hessian(Hc, K, False)
        eye = jnp.eye(K, dtype=G.dtype)
        A = Hm + lam * eye
        cover = jnp.trace(A, axis1=-2, axis2=-1) - K * lam
        # Where H is indefinite, singular or nearly so (H - floor I has no Cholesky
        # factor) the quadratic model has no minimum or a flat direction, and a solve
        # with H + lambda I can step arbitrarily far along it: Levenberg-Marquardt
        # damping, A = H + (lambda + mu) I with mu = floor + max(0, -Gershgorin lower
        # bound of H's eigenvalues), so every eigenvalue of A - lambda I is at least
        # floor. One Cholesky solve of the A each node uses (``smallmat``: plain array
        # operations; LAPACK's batched calls can deadlock XLA's thread pool).
        floor = jnp.trace(jnp.abs(Hm), axis1=-2, axis2=-1) / (K * MAX_CONDITION)
        damped = ~positive_definite(Hm - floor[..., None, None] * eye)
        diag = jnp.diagonal(Hm, axis1=-2, axis2=-1)
        radius = jnp.sum(jnp.abs(Hm), axis=-1) - jnp.abs(diag)
        mu = floor + jnp.maximum(0.0, -jnp.min(diag - radius, axis=-1))
        A = A + jnp.where(damped, mu, 0.0)[..., None, None] * eye
        w = -cho_solve(cholesky(A), t)
    w = jnp.where(mds > 0, jnp.clip(w, -mds, mds), w)
    ok = (cover > 0) & (cover / K >= mcw) & jnp.all(jnp.isfinite(w), axis=-1)
    w = jnp.where(ok[..., None], w, 0.0)
    Aw = A * w if diagonal else jnp.einsum("...ij,...j->...i", A, w)
    score = -(2.0 * jnp.sum(t * w, axis=-1) + jnp.sum(w * Aw, axis=-1))
    return w, jnp.where(ok, score, 0.0), cover


def native_vector_splits(
    S, Sp, dyn, forward_ok, *, K: int, diagonal: bool, any_forward: bool, feature_mask, n_valid=None
):
    """``find_best_vector_splits(..., native=True, channels_last=True)``: the native
    search (``jaxboost.native.vector_splits``) on ``(F, n, B, C)`` histograms ``S`` and
    ``(C, n)`` node totals ``Sp``. ``n_valid``: ``(F,)`` int32 or None, each feature's
    bins in use below the missing bin (``grow.bins_in_use``); the search reads no bin
    past them (they are empty: the same result either way, sooner)."""
    from .. import native as native_kernel

    F, n = S.shape[:2]
    with jax.enable_x64(True):
        fields = (dyn.reg_lambda, dyn.reg_alpha, dyn.min_child_weight, dyn.max_delta_step)
        hyper = jnp.stack([x.astype(ACC_DTYPE) for x in fields])
        mask = jnp.ones((n, F), bool) if feature_mask is None else feature_mask
        gain, feature, tbin, left = native_kernel.vector_splits(
            S,
            Sp.T,
            hyper,
            forward_ok,
            mask,
            K=K,
            diagonal=diagonal,
            any_forward=any_forward,
            n_valid=n_valid,
        )
    return dict(gain=gain, feature=feature, tbin=tbin, default_left=left)


def find_best_vector_splits(
    S,
    Sp,
    dyn,
    forward_ok,
    *,
    K: int,
    diagonal: bool,
    any_forward: bool = True,
    feature_mask=None,
    native: bool = False,
    channels_last: bool = False,
):
    """Best split of every node of a level, for vector leaves.

    Args:
      S: ``(C, F, n, B)`` float64 histograms of the ``C = K + P`` channels (``K``
        gradients, then ``P`` Hessian channels); bin ``B - 1`` holds missing values.
        ``(F, n, B, C)`` with ``channels_last`` (static; the native kernels' layout).
      Sp: ``(C, n)`` float64 node totals.
      dyn, forward_ok, any_forward, feature_mask: as in ``find_best_splits``.
      K, diagonal: outputs and Hessian layout (static).
      native: static; search with the native CPU kernel (``jaxboost.native.
        vector_splits``: the same candidates and rules, one ``K x K`` solve at a time,
        10-30x faster on the CPU at ``K = 10``; float64 sums may differ in the last
        bits). Call it only where that kernel is available.

    Returns:
      as ``find_best_splits``.
    """
    if not channels_last:
        S = jnp.moveaxis(S, 0, -1)  # (F, n, B, C)
    F, n, B, C = S.shape
    if native:
        return native_vector_splits(
            S, Sp, dyn, forward_ok, K=K, diagonal=diagonal, any_forward=any_forward,
            feature_mask=feature_mask,
        )  # fmt: skip
    V = B - 1
    mcw = dyn.min_child_weight.astype(ACC_DTYPE)
    with jax.enable_x64(True):
        Sv = S[:, :, :V]  # (F, n, V, C)
        Spb = jnp.moveaxis(Sp, 0, -1)[None, :, None, :]  # (1, n, 1, C)
        _, sp, _ = vector_weight_score(Spb[..., :K], Spb[..., K:], dyn, diagonal=diagonal)

        def gains(SL, SR):
            _, sl, cl = vector_weight_score(SL[..., :K], SL[..., K:], dyn, diagonal=diagonal)
            _, sr, cr = vector_weight_score(SR[..., :K], SR[..., K:], dyn, diagonal=diagonal)
            gain = (sl + sr - sp).astype(FLOAT_DTYPE)
            valid = (cl / K >= mcw) & (cr / K >= mcw) & (cl > 0) & (cr > 0)
            return jnp.where(valid, gain, -jnp.inf)

        SRb = jax.lax.cumsum(Sv, axis=2, reverse=True)[:, :, ::-1]
        gain_b = gains(Spb - SRb, SRb)
        gain_a = None
        if any_forward:
            SLa = jax.lax.cumsum(Sv, axis=2)
            gain_a = gains(SLa, Spb - SLa)
            gain_a = jnp.where(forward_ok[:, None, None], gain_a, -jnp.inf)
    return pick_best(gain_a, gain_b, feature_mask)
