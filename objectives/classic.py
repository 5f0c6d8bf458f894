r"""Squared, logistic and exponential losses.

Each loss is written for one row; autodiff vmaps it. Margins are ``pred``; labels ``y``.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ._base import (
    Objective,
    check_binary_labels,
    identity,
    logit_intercept,
    mean_intercept,
    sigmoid,
)
from ._checks import raise_bad_labels


def squared_loss(y, pred):
    r"""Squared error :math:`\ell = \tfrac12 (y - f)^2`.

    g = f - y, h = 1 (positive: convex). Any label; identity link. The same loss as
    XGBoost's ``reg:squarederror``. Default ``hessian="exact"``, metric ``"rmse"``.

    >>> float(squared_loss(1.0, 3.0))
    2.0
    """
    return 0.5 * (y - pred) ** 2


def logistic_loss(y, pred):
    r"""Binary cross-entropy on the margin, :math:`\ell = \log(1 + e^f) - y f`.

    g = sigma(f) - y, h = sigma(f)(1 - sigma(f)) > 0 (positive); y in [0, 1] (0/1
    classes or probabilities). Response sigma(f). The entry carries a closed-form
    ``grad_hess`` with XGBoost's float32 rounding (``binary:logistic``: h floored at
    1e-16), so parity with XGBoost holds to the bit. Default ``hessian="exact"``, metric
    ``"logloss"``.

    >>> round(float(logistic_loss(1.0, 0.0)), 6)
    0.693147
    """
    return jnp.logaddexp(0.0, pred) - y * pred


def _logistic_grad_hess(y, pred):
    # XGBoost's float32 formulas (binary:logistic), so parity tests match to the bit:
    # s = 1 / (exp(min(-x, 88.7)) + 1), g = s - y, h = max(s (1 - s), 1e-16).
    s = 1.0 / (jnp.exp(jnp.minimum(-pred, 88.7)) + 1.0)
    return s - y, jnp.maximum(s * (1.0 - s), 1e-16)


def exponential_loss(y, pred):
    r"""AdaBoost's exponential loss :math:`\ell = e^{-\tilde y f}`, :math:`\tilde y = 2y - 1`.

    y in {0, 1} (checked: with a fractional label the loss would not be the expected
    loss over classes, and at y = 1/2 it is constant). g = -y~ e^{-y~ f},
    h = e^{-y~ f} > 0 (positive). The population minimiser is half the log-odds, so the
    response is the probability sigma(2 f). Default ``hessian="exact"``, metric ``"logloss"``.

    >>> float(exponential_loss(1.0, 0.0))
    1.0
    """
    yt = 2.0 * y - 1.0
    return jnp.exp(-yt * pred)


def _check_exponential_labels(y, **_):
    y = np.asarray(y)
    raise_bad_labels("exponential", "y in {0, 1} (two classes)", (y != 0) & (y != 1), y)


def _half_logit_intercept(y, w, **_):
    """Half the log-odds of the weighted mean: exponential loss's start margin."""
    c = logit_intercept(y, w)
    return None if c is None else 0.5 * c


def _sigmoid2(margin):
    return sigmoid(2.0 * margin)


squared = Objective("squared", squared_loss, link=identity, metric="rmse", intercept=mean_intercept)
logistic = Objective(
    "logistic",
    logistic_loss,
    link=sigmoid,
    grad_hess=_logistic_grad_hess,
    check_labels=check_binary_labels("logistic"),
    metric="logloss",
    value_check=False,  # log(1 + e^f) - y f: finite wherever f is
    intercept=logit_intercept,
)
exponential = Objective(
    "exponential",
    exponential_loss,
    link=_sigmoid2,
    check_labels=_check_exponential_labels,
    metric="logloss",
    intercept=_half_logit_intercept,
)
