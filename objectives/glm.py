r"""Log-link losses for positive responses: Poisson, gamma, Tweedie.

The margin is the log of the mean, :math:`f = \log\mu`; the response (``link``) is
:math:`\mu = e^f`. Each loss is the negative log-likelihood up to terms free of ``f``,
written as XGBoost writes it (``count:poisson``, ``reg:gamma``, ``reg:tweedie``).

The Hessian of each is linear in ``y``, so its expectation under the model (``y`` with
mean :math:`e^f`) is the exact Hessian at ``y = e^f``; ``expected_hessian`` gives it
(the Fisher information of the log-link model).

Early rounds can take large steps on the log scale (exp of a leaf value multiplies the
mean). XGBoost's ``count:poisson`` guards against it by scaling its Hessian by
:math:`e^{0.7}` (its ``max_delta_step`` parameter): ``objectives.poisson(max_delta_step=0.7)``
does the same. ``train(max_delta_step=...)``, which clips every leaf value, helps all three.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ._base import Objective, log_mean_intercept
from ._checks import Interval, check_hyper, is_number, raise_bad_labels, real_hyper


def exp_link(margin):
    """Inverse log link: the mean :math:`e^f`.

    >>> float(exp_link(0.0))
    1.0
    """
    return jnp.exp(margin)


def poisson_loss(y, pred, *, max_delta_step=0.0):
    r"""Poisson negative log-likelihood on the log link, :math:`\ell = e^f - y f`.

    g = e^f - y, h = e^f > 0 (positive). Labels y >= 0 (counts, or any nonnegative
    rates); response e^f. Default ``hessian="exact"`` (convex and smooth), metric
    ``"poisson_nll"``.

    ``max_delta_step`` (default 0: the exact Hessian) is XGBoost's ``count:poisson``
    parameter of that name: the trees then use :math:`h = e^{f + \text{max\_delta\_step}}`,
    the exact Hessian times :math:`e^{\text{max\_delta\_step}}`, which shrinks every
    Newton step by that factor (a guard against large early steps on the log scale,
    e.g. with many zero labels). The loss and g are unchanged. XGBoost gives the same
    value to its trees' ``max_delta_step`` (each leaf clipped to +-0.7), and its
    default is 0.7 for both, so ``count:poisson`` at its defaults is
    ``train(objectives.poisson(max_delta_step=0.7), ..., max_delta_step=0.7)``.

    >>> float(poisson_loss(1.0, 0.0))
    1.0
    """
    return jnp.exp(pred) - y * pred


def _poisson_grad_hess(y, pred, *, max_delta_step=0.0):
    """g = e^f - y and h = e^(f + max_delta_step), rounded as XGBoost's count:poisson."""
    return jnp.exp(pred) - y, jnp.exp(pred + max_delta_step)


def _poisson_expected_hessian(y, pred, *, max_delta_step=0.0):
    """E[h] = e^(f + max_delta_step): the Hessian the trees use (it does not depend on y)."""
    return jnp.exp(pred + max_delta_step) + 0.0 * y


def _check_poisson_labels(y, **_):
    y = np.asarray(y)
    raise_bad_labels("poisson", "y >= 0 (counts or rates)", y < 0, y)


def gamma_loss(y, pred):
    r"""Gamma negative log-likelihood on the log link, :math:`\ell = y e^{-f} + f`.

    g = 1 - y e^{-f}, h = y e^{-f} > 0 (positive, since y > 0). Labels y > 0; response
    e^f. The expected Hessian is E[y] e^{-f} = 1 (``expected_hessian``; with
    ``hessian="expected"`` this is the constant policy). Default ``hessian="exact"``
    (convex and smooth), metric ``"gamma_deviance"``.

    >>> float(gamma_loss(1.0, 0.0))
    1.0
    """
    return y * jnp.exp(-pred) + pred


def _gamma_expected_hessian(y, pred):
    """E[h] = E[y] e^{-f} = 1."""
    return jnp.ones_like(pred - y)


def _check_gamma_labels(y, **_):
    y = np.asarray(y)
    raise_bad_labels("gamma", "y > 0 (strictly positive)", y <= 0, y)


def tweedie_loss(y, pred, *, power=1.5):
    r"""Tweedie negative log-likelihood on the log link, variance power ``p`` in (1, 2).

    .. math:: \ell = -\frac{y\,e^{(1-p) f}}{1-p} + \frac{e^{(2-p) f}}{2-p}

    g = -y e^{(1-p) f} + e^{(2-p) f},
    h = (p - 1) y e^{(1-p) f} + (2 - p) e^{(2-p) f} > 0 (positive for 1 < p < 2 and
    y >= 0). A compound Poisson-gamma model: exact zeros plus positive amounts (claims,
    rainfall); p near 1 is Poisson-like, near 2 gamma-like. Labels y >= 0; response e^f.
    Expected Hessian e^{(2-p) f}. Default ``hessian="exact"``, metric ``"objective"``.

    >>> float(tweedie_loss(1.0, 0.0))
    4.0
    """
    check_hyper("tweedie", "power", power, lambda p: 1 < p < 2, "in (1, 2)")
    return -y * jnp.exp((1.0 - power) * pred) / (1.0 - power) + jnp.exp((2.0 - power) * pred) / (
        2.0 - power
    )


def _tweedie_expected_hessian(y, pred, *, power=1.5):
    """E[h] at E[y] = e^f: e^{(2-p) f}."""
    return jnp.exp((2.0 - power) * pred) + 0.0 * y


def _check_tweedie_labels(y, *, power=1.5, **_):
    if is_number(power) and not 1 < power < 2:
        raise ValueError(f"objectives.tweedie needs power in (1, 2), got {power!r}")
    y = np.asarray(y)
    raise_bad_labels("tweedie", "y >= 0", y < 0, y)


poisson = Objective(
    "poisson",
    poisson_loss,
    link=exp_link,
    grad_hess=_poisson_grad_hess,
    expected_hessian=_poisson_expected_hessian,
    check_labels=_check_poisson_labels,
    metric="poisson_nll",
    check_params=real_hyper("poisson", "max_delta_step", Interval(lo=0.0, lo_closed=True), ">= 0"),
    intercept=log_mean_intercept,
)
gamma = Objective(
    "gamma",
    gamma_loss,
    link=exp_link,
    expected_hessian=_gamma_expected_hessian,
    check_labels=_check_gamma_labels,
    metric="gamma_deviance",
    intercept=log_mean_intercept,
)
tweedie = Objective(
    "tweedie",
    tweedie_loss,
    link=exp_link,
    expected_hessian=_tweedie_expected_hessian,
    check_labels=_check_tweedie_labels,
    metric="objective",
    check_params=real_hyper("tweedie", "power", Interval(1.0, 2.0), "in (1, 2)"),
    intercept=log_mean_intercept,
)
