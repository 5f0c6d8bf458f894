r"""Robust regression losses: absolute, Huber, pseudo-Huber, log-cosh, quantile, Cauchy.

All are functions of the residual :math:`r = f - y` (margin minus label); the response is
the margin itself (identity link) and any finite label is allowed. Derivatives are with
respect to the margin ``f``.

Why most of them do not default to the exact Hessian: a Newton step ``-G / H`` uses the
curvature, and these losses were chosen precisely because they flatten out for large
residuals. The absolute and quantile losses have ``h = 0`` almost everywhere, Huber has
``h = 0`` outside ``|r| < delta``, pseudo-Huber and log-cosh have a positive ``h`` that
decays to zero, so Newton steps from a large residual overshoot (Newton's method on
:math:`\sqrt{1 + r^2}` diverges from any ``|r| > 1``), and the Cauchy loss is not convex.
Their defaults therefore grow the tree on the gradient alone (``hessian="constant"``:
``h = 1`` per row, a least-squares fit of the negative gradient) and then set each leaf
from the true loss (``refit``), or use the expected Hessian (Cauchy).
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from ._base import Objective, identity
from ._checks import Interval, check_hyper, real_hyper


def absolute_loss(y, pred):
    r"""Absolute error :math:`\ell = |f - y|`.

    g = sign(f - y) (0 at r = 0), h = 0 away from r = 0 (nonnegative; the kink at r = 0
    has no second derivative). Any label; identity link.

    Defaults: ``hessian="constant"`` (h = 1: the tree fits the signs of the residuals,
    since the exact h carries no information) and ``refit="quantile"``: each leaf is set
    to the median (alpha = 0.5) of its residuals, a minimiser of the loss in the leaf,
    and training starts from the labels' median, both by XGBoost's rules (interpolated
    without ``sample_weight``, the weighted step rule with it): the margins are those
    of XGBoost's ``reg:absoluteerror`` (``hist``). Metric ``"mae"``.

    >>> float(absolute_loss(1.0, 3.0))
    2.0
    """
    r = pred - y
    return jnp.maximum(r, -r)  # the subgradient at r = 0 is the midpoint 0


def huber_loss(y, pred, *, delta=1.0):
    r"""Huber loss: squared near zero, absolute in the tails.

    .. math:: \ell = \tfrac12 r^2 \text{ if } |r| \le \delta, \quad
              \delta\,(|r| - \tfrac12\delta) \text{ otherwise}, \qquad r = f - y.

    g = clip(r, -delta, delta); h = 1 for |r| < delta and 0 for |r| > delta
    (nonnegative; h jumps at |r| = delta). Any label; identity link; ``delta > 0``.

    Defaults: ``hessian="constant"`` with ``refit="newton"``. The exact h is 0 for every
    outlier, so a node of outliers has no Hessian at all (``min_child_weight`` blocks it)
    and a mixed node's Newton step is set by its inliers only; with h = 1 the tree is a
    least-squares fit of the clipped residuals (Friedman's Huber M-regression) and the
    leaf values are then refit by damped Newton steps on the true loss. Metric
    ``"objective"`` (mean Huber loss).

    >>> float(huber_loss(0.0, 3.0))
    2.5
    """
    check_hyper("huber", "delta", delta, lambda d: d > 0, "> 0")
    r = pred - y
    a = jnp.abs(r)
    return jnp.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))


def pseudo_huber_loss(y, pred, *, delta=1.0):
    r"""Pseudo-Huber loss, a smooth Huber.

    .. math:: \ell = \delta^2 \left(\sqrt{1 + (r/\delta)^2} - 1\right)
              = \frac{r^2}{\sqrt{1 + (r/\delta)^2} + 1}, \qquad r = f - y

    (the second form is computed: no cancellation for small r).
    g = r / sqrt(1 + (r/delta)^2), h = (1 + (r/delta)^2)^(-3/2) > 0 (positive, but
    decaying like |r|^-3). Any label; identity link; ``delta > 0``. XGBoost's
    ``reg:pseudohubererror`` is this loss (``huber_slope`` = delta).

    Defaults: ``hessian="constant"``, ``refit="newton"``: the exact Newton step from a
    residual r is ``-r (1 + (r/delta)^2)``, which overshoots (diverges) for
    |r| > delta; the tree fits the bounded gradient and the leaves are refit on the true
    loss by damped Newton steps. Use ``hessian="exact"`` when residuals are of order
    delta. Metric ``"objective"``. XGBoost trains it with the exact Hessian and no
    refit, from one Newton step from 0 (its ``base_score``, :math:`-\sum g / \sum h`
    at margin 0) where jaxboost starts from the loss's minimiser:
    ``train(objectives.pseudo_huber, X, y, hessian="exact", refit=None,
    base_margin=base_score)`` is XGBoost's model (``tests/test_peer_names.py``).

    >>> round(float(pseudo_huber_loss(0.0, 3.0)), 4)
    2.1623
    """
    check_hyper("pseudo_huber", "delta", delta, lambda d: d > 0, "> 0")
    r = pred - y
    return r * r / (jnp.sqrt(1.0 + (r / delta) ** 2) + 1.0)


def log_cosh_loss(y, pred):
    r"""Log-cosh loss :math:`\ell = \log\cosh(f - y)`.

    g = tanh(r), h = 1 - tanh(r)^2 = sech(r)^2 > 0 (positive, decaying like
    4 e^{-2|r|}); r = f - y. About r^2/2 near zero and |r| - log 2 in the tails. Computed
    as ``logaddexp(r, -r) - log 2`` (no overflow). Any label; identity link.

    Defaults: ``hessian="constant"``, ``refit="newton"``, for the pseudo-Huber reason:
    the exact Newton step ``-tanh(r) cosh(r)^2`` explodes for |r| > 1. Metric
    ``"objective"``.

    >>> round(float(log_cosh_loss(0.0, 1.0)), 4)
    0.4338
    """
    r = pred - y
    return jnp.logaddexp(r, -r) - math.log(2.0)


def quantile_loss(y, pred, *, alpha=0.5):
    r"""Pinball (quantile) loss for the ``alpha``-quantile.

    .. math:: \ell = \max(\alpha\,u, (\alpha - 1)\,u), \qquad u = y - f.

    g = 1 - alpha when f >= y, -alpha when f < y (at f = y the right-hand derivative,
    XGBoost's convention: the weighted start and exact refits put rows there); h = 0 away
    from f = y (nonnegative). ``0 < alpha < 1``; alpha = 0.5 is half the absolute loss
    (whose g at f = y is 0). Any label; identity link.

    Defaults: ``hessian="constant"`` (h = 1: the tree fits the gradient signs) and
    ``refit="quantile"``: each leaf is set to the alpha-quantile of its residuals and
    training starts from the labels' alpha-quantile, by XGBoost's rules (see
    ``absolute_loss``): the margins are those of XGBoost's ``reg:quantileerror``
    (``hist``). Metric ``"objective"`` (mean pinball loss).

    >>> round(float(quantile_loss(1.0, 0.0, alpha=0.9)), 4)
    0.9
    """
    check_hyper("quantile", "alpha", alpha, lambda a: 0 < a < 1, "in (0, 1)")
    u = y - pred
    # where, not maximum: at u = 0 autodiff takes the (alpha - 1) u branch, so
    # g = 1 - alpha as XGBoost's reg:quantileerror (maximum would split the tie)
    return jnp.where(u > 0, alpha * u, (alpha - 1.0) * u)


def cauchy_loss(y, pred, *, scale=1.0):
    r"""Cauchy (Lorentzian) loss, a redescending robust loss.

    .. math:: \ell = \frac{s^2}{2}\,\log\!\left(1 + \frac{r^2}{s^2}\right),
              \qquad r = f - y,\ s = \text{scale}

    i.e. the Cauchy negative log-likelihood of location f and scale s, times s^2 / 2 so
    that it matches r^2 / 2 near zero. g = r / (1 + r^2/s^2) (bounded by s/2, going back
    to 0 for far outliers), h = (1 - r^2/s^2) / (1 + r^2/s^2)^2: **negative for
    |r| > s** (not convex; h_sign ``"any"``). Any label; identity link; ``scale > 0``.

    Expected Hessian: for y ~ Cauchy(f, s) the Fisher information of the location is
    1 / (2 s^2) for the unscaled negative log-likelihood, so E[h] = (s^2/2) / (2 s^2)
    = 1/4 for this loss. Default ``hessian="expected"`` (h = 1/4 per row: Fisher
    scoring, never negative); it assumes ``scale`` matches the noise, and with noise much
    smaller than s the steps are up to 4 times the Newton step, which the learning rate
    absorbs. Metric ``"objective"``.

    >>> round(float(cauchy_loss(0.0, 1.0)), 4)
    0.3466
    """
    check_hyper("cauchy", "scale", scale, lambda s: s > 0, "> 0")
    r = pred - y
    return 0.5 * scale * scale * jnp.log1p((r / scale) ** 2)


def _cauchy_expected_hessian(y, pred, *, scale=1.0):
    """E[h] = 1/4 for y ~ Cauchy(pred, scale), whatever the scale."""
    return jnp.full_like(pred - y, 0.25)


absolute = Objective(
    "absolute",
    absolute_loss,
    link=identity,
    metric="mae",
    hessian="constant",
    refit="quantile",
    h_sign="nonnegative",
)
huber = Objective(
    "huber",
    huber_loss,
    link=identity,
    metric="objective",
    hessian="constant",
    refit="newton",
    h_sign="nonnegative",
    check_params=real_hyper("huber", "delta", Interval(lo=0.0), "> 0"),
)
pseudo_huber = Objective(
    "pseudo_huber",
    pseudo_huber_loss,
    link=identity,
    metric="objective",
    hessian="constant",
    refit="newton",
    h_sign="positive",
    check_params=real_hyper("pseudo_huber", "delta", Interval(lo=0.0), "> 0"),
)
log_cosh = Objective(
    "log_cosh",
    log_cosh_loss,
    link=identity,
    metric="objective",
    hessian="constant",
    refit="newton",
    h_sign="positive",
)
quantile = Objective(
    "quantile",
    quantile_loss,
    link=identity,
    metric="objective",
    hessian="constant",
    refit="quantile",
    h_sign="nonnegative",
    check_params=real_hyper("quantile", "alpha", Interval(0.0, 1.0), "in (0, 1)"),
)
cauchy = Objective(
    "cauchy",
    cauchy_loss,
    link=identity,
    metric="objective",
    expected_hessian=_cauchy_expected_hessian,
    hessian="expected",
    h_sign="any",
    check_params=real_hyper("cauchy", "scale", Interval(lo=0.0), "> 0"),
)
