r"""Distributional regression: a Gaussian with a mean and a log-scale per row."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from ._base import Objective, weighted_mean

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def gaussian_nll_loss(y, pred):
    r"""Gaussian negative log-likelihood with two margins, mean and log standard deviation.

    ``pred = (mu, s)`` with :math:`\sigma = e^s`, and :math:`z = (y - \mu) e^{-s}`:

    .. math:: \ell = \tfrac12 \log(2\pi) + s + \tfrac12 z^2

    (the constant makes the mean loss the true mean negative log-likelihood).
    g = (-z e^{-s}, 1 - z^2);
    H = [[e^{-2s}, 2 z e^{-s}], [2 z e^{-s}, 2 z^2]]. The diagonal is nonnegative
    (2 z^2 = 0 when y = mu: h_sign ``"nonnegative"``) but H itself is indefinite
    (det = -2 z^2 e^{-2s} < 0): the loss is not jointly convex. Any label.
    Response ``link``: (mean, standard deviation) = (mu, e^s) per row.

    Expected Hessian (Fisher information, z ~ N(0, 1)): diag(e^{-2s}, 2) =
    diag(1 / sigma^2, 2), positive definite. Default ``hessian="expected"``: natural
    gradient steps (as NGBoost), well scaled whatever the fit; the exact log-scale
    curvature vanishes on well-fitted rows. Metric ``"objective"`` (mean NLL).

    >>> round(float(gaussian_nll_loss(0.0, jnp.zeros(2))), 4)
    0.9189
    """
    mu, s = pred[0], pred[1]
    z = (y - mu) * jnp.exp(-s)
    return _HALF_LOG_2PI + s + 0.5 * z * z


def _gaussian_expected_hessian(y, pred):
    """Fisher information diag(e^{-2s}, 2) of (mean, log-scale)."""
    s = pred[1]
    a = jnp.exp(-2.0 * s) + 0.0 * y
    two = jnp.full_like(a, 2.0)
    zero = jnp.zeros_like(a)
    return jnp.stack([jnp.stack([a, zero]), jnp.stack([zero, two])])


def gaussian_link(margin):
    """Margins ``(..., 2)`` (mean, log-scale) -> responses ``(..., 2)`` (mean, std).

    >>> gaussian_link(jnp.array([[1.0, 0.0]])).tolist()
    [[1.0, 1.0]]
    """
    return jnp.stack([margin[..., 0], jnp.exp(margin[..., 1])], axis=-1)


def _gaussian_intercept(y, w, **_):
    """(weighted mean, log of the weighted standard deviation about it), or None when
    the labels do not vary: the constant minimising the Gaussian NLL."""
    mu = weighted_mean(y, w)
    var = weighted_mean((y - mu) ** 2, w)
    return np.array([mu, 0.5 * np.log(var)]) if var > 0 else None


gaussian_nll = Objective(
    "gaussian_nll",
    gaussian_nll_loss,
    link=gaussian_link,
    expected_hessian=_gaussian_expected_hessian,
    metric="objective",
    hessian="expected",
    n_outputs=2,
    h_sign="nonnegative",
    intercept=_gaussian_intercept,
)
