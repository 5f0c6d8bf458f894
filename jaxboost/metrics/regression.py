r"""Regression metrics: errors of a mean response (``rmse``, ``mae``, ``r2``) and the
deviances of the count and positive-valued GLMs (``poisson_nll``, ``gamma_deviance``).
"""

from __future__ import annotations

import jax.numpy as jnp
from jax.scipy.special import gammaln, xlogy

from ._base import EPS, builtin, scalar_pred, wmean


def _rmse(y, pred, w):
    r"""Root mean squared error :math:`\sqrt{\sum_i w_i (y_i - p_i)^2 / \sum_i w_i}`.

    >>> round(float(rmse([0.0, 0.0], [3.0, 4.0])), 4)
    3.5355
    """
    scalar_pred("rmse", y, pred)
    return jnp.sqrt(wmean((y - pred) ** 2, w))


def _mae(y, pred, w):
    r"""Mean absolute error :math:`\sum_i w_i |y_i - p_i| / \sum_i w_i`.

    >>> float(mae([0.0, 0.0], [1.0, -3.0], w=[3.0, 1.0]))
    1.5
    """
    scalar_pred("mae", y, pred)
    return wmean(jnp.abs(y - pred), w)


def _r2(y, pred, w):
    r"""Coefficient of determination
    :math:`1 - \sum_i w_i (y_i - p_i)^2 / \sum_i w_i (y_i - \bar y_w)^2`, with the weighted
    mean :math:`\bar y_w`; larger is better (1 = perfect, 0 = the constant mean).

    >>> float(r2([1.0, 2.0, 3.0], [1.0, 2.0, 4.0]))
    0.5
    """
    scalar_pred("r2", y, pred)
    ybar = wmean(y, w)
    return 1.0 - jnp.sum(w * (y - pred) ** 2) / jnp.sum(w * (y - ybar) ** 2)


def _poisson_nll(y, pred, w):
    r"""Poisson negative log-likelihood of the mean response ``mu``.

    :math:`\sum_i w_i [\mu_i - y_i \log \mu_i + \log \Gamma(y_i + 1)] / \sum_i w_i`, the full
    negative log-likelihood (the :math:`\log\Gamma(y + 1)` term, constant in ``mu``, is
    included, as in XGBoost's ``poisson-nloglik``). ``mu`` is floored at ``EPS``; ``y >= 0``.

    >>> round(float(poisson_nll([0.0, 2.0], [1.0, 2.0])), 4)
    1.1534
    """
    scalar_pred("poisson_nll", y, pred)
    mu = jnp.maximum(pred, EPS)
    return wmean(mu - xlogy(y, mu) + gammaln(y + 1.0), w)


def _gamma_deviance(y, pred, w):
    r"""Mean gamma deviance of the mean response ``mu``.

    :math:`2 \sum_i w_i [\log(\mu_i / y_i) + y_i / \mu_i - 1] / \sum_i w_i`; ``y > 0``,
    ``mu`` floored at ``EPS``. 0 for a perfect prediction.

    >>> round(float(gamma_deviance([1.0, 2.0], [1.0, 1.0])), 4)
    0.3069
    """
    scalar_pred("gamma_deviance", y, pred)
    mu = jnp.maximum(pred, EPS)
    return 2.0 * wmean(jnp.log(mu / y) + y / mu - 1.0, w)


rmse = builtin("rmse", _rmse)
mae = builtin("mae", _mae)
r2 = builtin("r2", _r2, maximize=True)
poisson_nll = builtin("poisson_nll", _poisson_nll, needs="mean")
gamma_deviance = builtin("gamma_deviance", _gamma_deviance, needs="mean")
