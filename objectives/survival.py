r"""Survival losses: Cox proportional hazards on right-censored times, and the
accelerated failure time (AFT) likelihood on interval-censored times (``aft``).

Labels follow XGBoost's ``survival:cox`` convention: ``y > 0`` is an event (death,
failure) at time ``y``; ``y < 0`` is a row censored at time ``-y`` (still alive then);
``y = 0`` is not allowed. The margin ``f`` is the log hazard ratio; the response
(``predict``) is the hazard ratio :math:`e^f`, as XGBoost's.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._base import Objective
from ._checks import Interval, raise_bad_labels, real_hyper
from ._group import GroupObjective, rows_in_order
from ._sort import argsort_stable, run_bounds
from .glm import exp_link


def _risk_sets(y, f, mask):
    r"""Every per-row piece of ``cox_loss``, its gradient and Hessian diagonal, from one
    pass over the rows sorted by time.

    Returns ``(e, event, risk, a, b, m)``, each ``(N,)`` in the rows' order but the
    scalar shift ``m``: :math:`e^{f - m}` (0 on padding), the event flags, each row's
    risk-set sum :math:`S_i e^{-m} = \sum_{j: T_j \ge T_i} e^{f_j - m}` (tied times
    share it), and :math:`A_k e^{m}`, :math:`B_k e^{2m}` of ``cox_loss`` (sums over the
    events with :math:`T_i \le T_k`).

    Training hands each group's rows over in time order (``cox.row_order``; padding
    last) and says so (``rows_in_order()``): no sort then. Otherwise the rows are
    sorted (``argsort_stable``) and the results put back in their order.
    """
    t = jnp.where(mask, jnp.abs(y), jnp.inf)
    m = jax.lax.stop_gradient(jnp.max(jnp.where(mask, f, -jnp.inf)))
    m = jnp.where(jnp.isfinite(m), m, 0.0)

    def in_time_order(t, y, f, mask):
        event = mask & (y > 0)
        e = jnp.where(mask, jnp.exp(jnp.where(mask, f, m) - m), 0.0)
        suffix = jnp.cumsum(e[::-1])[::-1]  # sum over positions >= p
        first, last = run_bounds(t)  # ties share the risk set T_j >= T_i
        risk = suffix[first]
        inv = jnp.where(event, 1.0 / jnp.where(event, risk, 1.0), 0.0)
        return e, event, risk, jnp.cumsum(inv)[last], jnp.cumsum(inv * inv)[last]

    if rows_in_order():
        return in_time_order(t, y, f, mask) + (m,)
    order = argsort_stable(t)
    out = in_time_order(t[order], y[order], f[order], mask[order])
    return tuple(jnp.zeros_like(v).at[order].set(v) for v in out) + (m,)


def _time_order_key(y):
    """``cox.row_order``: the rows' times as the loss sees them (float32), by which
    training orders each group's rows: ties stay in row order, as the sort leaves them."""
    return np.abs(np.asarray(y, np.float32))


def cox_loss(y, f, mask):
    r"""Cox negative log partial likelihood with Breslow's handling of tied times.

    :math:`L = \sum_{i:\delta_i = 1} \left(\log S_i - f_i\right)`,
    :math:`S_i = \sum_{j: T_j \ge T_i} e^{f_j}` (the risk set at the event time; tied
    rows share it), :math:`\delta_i = [y_i > 0]`, :math:`T_i = |y_i|`. With
    :math:`A_k = \sum_{i:\delta_i=1, T_i \le T_k} 1/S_i` and
    :math:`B_k = \sum_{i:\delta_i=1, T_i \le T_k} 1/S_i^2`:
    :math:`g_k = e^{f_k} A_k - \delta_k`,
    :math:`h_k = e^{f_k} A_k - e^{2 f_k} B_k \ge 0` (the diagonal; carried in closed
    form, so the whole data is one group at any size). O(N log N): one sort by time
    and cumulative sums. Labels (XGBoost's ``survival:cox`` convention): y > 0 an event
    at time y, y < 0 censored at time -y; nonzero and finite. Response
    :math:`e^f` (hazard ratio); default metric ``"cox-nloglik"`` (the mean over events,
    as XGBoost's). ``train(objectives.cox, X, y)`` treats all rows as one group;
    ``group=`` splits them into strata with separate baseline hazards.

    >>> y = jnp.array([1.0, -2.0, 3.0])  # event at 1, censored at 2, event at 3
    >>> round(float(cox_loss(y, jnp.zeros(3), jnp.ones(3, bool))), 4)  # log 3 + log 1
    1.0986
    """
    return _partial_likelihood(y, f, mask)


@jax.custom_jvp
def _partial_likelihood(y, f, mask):
    """``cox_loss``'s sum, differentiated in ``f`` by its closed form (``_cox_grad``):
    the same sort and running sums as the Hessian diagonal, where autodiff ran back
    through the sort's gathers and scatters (100,000 rows: g and h 7.9 -> 5 ms).
    Forward mode, so ``jax.hessian`` still differentiates the closed form."""
    nll, _ = event_nll(y, f, mask)
    return jnp.sum(nll)


@_partial_likelihood.defjvp
def _partial_likelihood_jvp(primals, tangents):
    y, f, mask = primals
    _, df, _ = tangents  # no derivative in the labels (times) or the mask
    return _partial_likelihood(y, f, mask), jnp.sum(_cox_grad(y, f, mask) * df)


def _cox_grad(y, f, mask):
    r""":math:`g_k = e^{f_k} A_k - \delta_k` (``cox_loss``), 0 off ``mask``."""
    e, event, _, a, _, _ = _risk_sets(y, f, mask)
    return jnp.where(mask, e * a - event.astype(e.dtype), 0.0)


def event_nll(y, f, mask):
    r"""Each event's term :math:`\log S_i - f_i` of ``cox_loss`` (0 for other rows) and
    the event flags, both ``(N,)``; rows outside ``mask`` are in no risk set.

    >>> nll, event = event_nll(jnp.array([1.0, -2.0]), jnp.zeros(2), jnp.ones(2, bool))
    >>> [round(float(v), 4) for v in nll], event.tolist()
    ([0.6931, 0.0], [True, False])
    """
    _, event, risk, _, _, m = _risk_sets(y, f, mask)
    log_risk = jnp.log(jnp.where(event, risk, 1.0)) + m
    return jnp.where(event, log_risk - f, 0.0), event


def _cox_hess_diag(y, f, mask):
    e, _, _, a, b, _ = _risk_sets(y, f, mask)  # A, B: the events with T_i <= T_k
    h = e * a - e * e * b
    return jnp.where(mask, jnp.maximum(h, 0.0), 0.0)


def _check_cox_labels(y, **_):
    y = np.asarray(y)
    raise_bad_labels(
        "cox",
        "nonzero and finite (y > 0: event at time y; y < 0: censored at time -y)",
        ~np.isfinite(y) | (y == 0),
        y,
    )


def hazard_ratio(margin):
    """Inverse link of ``cox``: the hazard ratio :math:`e^f`.

    >>> float(hazard_ratio(0.0))
    1.0
    """
    return jnp.exp(margin)


cox = GroupObjective(
    "cox",
    cox_loss,
    link=hazard_ratio,
    hess_diag=_cox_hess_diag,
    check_labels=_check_cox_labels,
    metric="cox-nloglik",
    whole_data=True,
    row_order=_time_order_key,
)


# --- accelerated failure time ------------------------------------------------------------

AFT_DISTRIBUTIONS = ("normal", "logistic", "extreme")
"""``aft``'s noise distributions (XGBoost's ``aft_loss_distribution`` values)."""

AFT_FIELDS = ("lower", "upper")
"""``aft``'s label fields: ``y = {"lower": ..., "upper": ...}`` (or an ``(N, 2)`` array
of the two columns in this order)."""

# XGBoost's ranges for the AFT gradient and Hessian (``aft_loss``'s ``clip=True``).
AFT_G_RANGE = (-15.0, 15.0)
AFT_H_RANGE = (1e-16, 15.0)

_HALF_LOG_2PI = 0.5 * float(np.log(2.0 * np.pi))
_GL3_NODE = float(np.sqrt(0.6))  # 3-point Gauss-Legendre on [-1, 1]: nodes 0, +-sqrt(3/5)
_GL3_LOG_WEIGHTS = np.log(np.array([5.0, 8.0, 5.0]) / 9.0).astype(np.float32)


def _normal_log_pdf(z):
    return -0.5 * z * z - _HALF_LOG_2PI


def _normal_log_tail(z, upper):
    """``log F(z)``, or ``log S(z) = log F(-z)`` where ``upper``: one ``log_ndtr``."""
    from jax.scipy.special import log_ndtr

    return log_ndtr(jnp.where(upper, -z, z))


@jax.custom_jvp
def _sigmoid(x):
    """``1 / (1 + e^{-x})`` with slope ``sigmoid(x) sigmoid(-x)`` (``jax.nn.sigmoid``'s
    ``s (1 - s)`` loses the digits of a small ``1 - s``)."""
    return jax.nn.sigmoid(x)


@_sigmoid.defjvp
def _sigmoid_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return _sigmoid(x), _sigmoid(x) * _sigmoid(-x) * dx


@jax.custom_jvp
def _softplus(x):
    """``log(1 + e^x)`` with slope ``_sigmoid(x)``, so that its second derivative keeps
    its digits far in the tails."""
    return jax.nn.softplus(x)


@_softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return _softplus(x), _sigmoid(x) * dx


def _logistic_log_pdf(z):
    """The standard logistic's log density, ``F = 1 / (1 + e^{-z})``."""
    a = jnp.abs(z)
    return -a - 2.0 * _softplus(-a)


def _logistic_log_tail(z, upper):
    return -_softplus(jnp.where(upper, z, -z))


def _extreme_log_pdf(z):
    """The standard minimum extreme-value (Gumbel) log density, ``F = 1 - exp(-e^z)``
    (log T Gumbel: T Weibull)."""
    return z - jnp.exp(z)


def _extreme_log_tail(z, upper):
    w = jnp.exp(z)
    small = w < 1e-3  # log(1 - e^{-w}) = log w - w / 2 + O(w^2): no 0 / 0 in its slope
    log_cdf = jnp.where(small, z - 0.5 * w, _log1mexp(-jnp.where(small, 1.0, w)))
    return jnp.where(upper, -w, log_cdf)


_AFT_LOG = {
    "normal": (_normal_log_pdf, _normal_log_tail),
    "logistic": (_logistic_log_pdf, _logistic_log_tail),
    "extreme": (_extreme_log_pdf, _extreme_log_tail),
}
"""Each distribution's ``log_pdf(z)`` and ``log_tail(z, upper)`` (``log F(z)``, or
``log S(z)`` where ``upper``)."""


def _log1mexp(d):
    """``log(1 - e^d)`` for ``d < 0``, accurate at both ends."""
    near = d > -0.6931472
    return jnp.where(
        near,
        jnp.log(-jnp.expm1(jnp.where(near, d, -1.0))),
        jnp.log1p(-jnp.exp(jnp.where(near, -1.0, d))),
    )


def _aft_bounds(y):
    """One row's ``(lower, upper)`` from an event time (a scalar), a dict of the two
    fields, or a ``(2,)`` row."""
    if isinstance(y, dict):
        return y["lower"], y["upper"]
    y = jnp.asarray(y)
    if y.ndim == 1:
        return y[0], y[1]
    return y, y


def aft_loss(y, f, *, sigma=1.0, distribution="normal", clip=True):
    r"""Accelerated failure time (AFT) negative log-likelihood on interval-censored times.

    The model: :math:`\log T = f + \sigma Z` with :math:`Z` of ``distribution``
    (``"normal"``: log-normal times, ``"logistic"``: log-logistic, ``"extreme"``: the
    minimum extreme-value law, :math:`F(z) = 1 - e^{-e^z}`, Weibull times). A row's
    time is known to lie in :math:`(l, u]`, with :math:`a = (\log l - f)/\sigma`,
    :math:`b = (\log u - f)/\sigma`:

    .. math::
        \ell = \begin{cases}
        -\log p(a) + \log(\sigma\, l) & l = u \text{ (an event at } l\text{)}\\
        -\log\big(F(b) - F(a)\big) & l < u
        \end{cases}

    with :math:`F(a) = 0` for :math:`l = 0` (left-censored) and :math:`F(b) = 1` for
    :math:`u = \infty` (right-censored). The first line is the density of :math:`T`, so
    the mean loss is XGBoost's ``aft-nloglik``. Computed on log-densities and log-CDFs,
    the difference taken on the side where it is small (survival functions above the
    median), so the loss and its derivatives stay finite far in both tails; an interval
    holding under a tenth of the tail beyond it (where float32 log-CDFs lose digits to
    the difference) by 3-point Gauss-Legendre on the density.

    Labels: an event time per row (``y`` of shape ``(N,)``, ``y > 0``: uncensored
    data), or intervals as ``y = {"lower": l, "upper": u}`` (or an ``(N, 2)`` array of
    the two columns) with :math:`0 \le l \le u \le \infty`, ``l = u > 0`` an event,
    ``l = 0`` left-, ``u = inf`` right-censored (XGBoost's ``label_lower_bound`` and
    ``label_upper_bound``). Response ``e^f``: the predicted time (XGBoost's
    ``predict``); margins are log times. Metric ``"objective"`` (the mean negative
    log-likelihood).

    Derivatives: for an event, :math:`g = -\partial_f \log p(a)`, for the normal
    :math:`g = -a/\sigma`, :math:`h = 1/\sigma^2`; for an interval
    :math:`g = (p(b) - p(a)) / (\sigma (F(b) - F(a)))`. All three densities are
    log-concave, so :math:`h \ge 0` (nonnegative); :math:`h = 0` only on an interval
    :math:`(0, \infty]`, which says nothing. ``clip=True`` (the default, XGBoost's
    ``survival:aft``) clips g to [-15, 15] and h to [1e-16, 15] per row before the
    trees see them: rows far outside their interval pull with at most 15, and every row
    keeps a little weight (XGBoost's regularisation; it changes the model where
    :math:`1/\sigma^2 > 15`, e.g. a normal with ``sigma < 0.26``). ``clip=False``: the
    exact g and h. Default ``hessian="exact"``.

    Hyperparameters: ``sigma`` > 0 (XGBoost's ``aft_loss_distribution_scale``; traced,
    so a sweep over it compiles once), ``distribution`` and ``clip`` (fixed per
    program). XGBoost's ``aft-nloglik`` floors each row's probability at 1e-12 (a loss
    of at most 27.6); this loss does not.

    >>> round(float(aft_loss(1.0, 0.0)), 4)  # an event at t = 1, log T ~ N(0, 1)
    0.9189
    >>> y = {"lower": jnp.float32(1.0), "upper": jnp.float32(jnp.inf)}  # alive at 1
    >>> round(float(aft_loss(y, 0.0)), 4)  # -log P(T > 1) = -log(1/2)
    0.6931
    """
    log_pdf, log_tail = _AFT_LOG[distribution]
    lo, hi = _aft_bounds(y)
    lo, hi = jnp.asarray(lo, jnp.result_type(f)), jnp.asarray(hi, jnp.result_type(f))
    event = lo == hi
    has_lo, has_hi = lo > 0, jnp.isfinite(hi)
    log_lo = jnp.log(jnp.where(has_lo, lo, 1.0))
    a = (log_lo - f) / sigma
    b = (jnp.log(jnp.where(has_hi, hi, 1.0)) - f) / sigma
    nll_event = -log_pdf(a) + jnp.log(sigma) + log_lo
    # The interval's mass F(b) - F(a), or S(a) - S(b) when it lies above the median
    # (a > 0): top and bottom are the larger and the smaller of the two log terms.
    above = has_lo & (a > 0)
    top = jnp.where(~above & ~has_hi, 0.0, log_tail(jnp.where(above, a, b), above))  # F(inf) = 1
    bottom_open = jnp.where(above, ~has_hi, ~has_lo) | event  # S(inf) = 0, F(0) = 0
    bottom = log_tail(jnp.where(above, b, a), above)
    d = jnp.minimum(jnp.where(bottom_open, -jnp.inf, bottom) - top, -1e-12)
    nll_interval = -(top + _log1mexp(d))
    # A narrow interval, holding under a tenth of the tail beyond it (d > -0.1: the
    # log-density then changes by about 0.1 or less across it, and float32 log-CDFs lose
    # digits to the difference): its mass by 3-point Gauss-Legendre on the density.
    closed = has_lo & has_hi & ~event
    width = jnp.log1p((hi - lo) / jnp.where(has_lo, lo, 1.0)) / sigma
    narrow = closed & (d > -0.1)
    half = 0.5 * jnp.where(narrow, width, 1.0)
    mid = jnp.where(narrow, a, 0.0) + half
    nodes = jnp.stack([mid - _GL3_NODE * half, mid, mid + _GL3_NODE * half])
    nll_narrow = -(jnp.log(half) + jax.nn.logsumexp(log_pdf(nodes) + _GL3_LOG_WEIGHTS))
    return jnp.where(event, nll_event, jnp.where(narrow, nll_narrow, nll_interval))


def _aft_grad_hess(y, f, *, sigma=1.0, distribution="normal", clip=True):
    """``aft_loss``'s g and h by autodiff, clipped to XGBoost's ranges when ``clip``."""
    d_loss = jax.grad(aft_loss, argnums=1)
    kw = dict(sigma=sigma, distribution=distribution, clip=clip)
    g, h = jax.jvp(lambda p: d_loss(y, p, **kw), (f,), (jnp.ones_like(f),))
    if clip:
        g, h = jnp.clip(g, *AFT_G_RANGE), jnp.clip(h, *AFT_H_RANGE)
    return g, h


def aft_label_bounds(y):
    """``(lower, upper)`` NumPy arrays of ``aft`` labels: event times ``(N,)`` (both
    the times), a dict with the fields ``AFT_FIELDS``, or an ``(N, 2)`` array.

    >>> aft_label_bounds(np.array([[0.0, 2.0]]))
    (array([0.]), array([2.]))
    """
    if isinstance(y, dict):
        keys = sorted(y)
        if keys != sorted(AFT_FIELDS):
            raise ValueError(
                f"aft takes y = {{'lower': ..., 'upper': ...}} (the interval of each "
                f"row's time); got a dict with keys {keys}"
            )
        return np.asarray(y["lower"]), np.asarray(y["upper"])
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 2:
        return y[:, 0], y[:, 1]
    if y.ndim <= 1:
        return y, y
    raise ValueError(
        f"aft takes event times y of shape (N,), or intervals as an (N, 2) array "
        f"[lower, upper] or a dict {{'lower': ..., 'upper': ...}}; got shape {y.shape}"
    )


def _check_aft_labels(y, **_):
    lo, hi = aft_label_bounds(y)
    if np.ndim(y) <= 1 and not isinstance(y, dict):
        raise_bad_labels("aft", "y > 0 and finite (event times)", ~(np.isfinite(lo) & (lo > 0)), lo)
        return
    with np.errstate(invalid="ignore"):
        bad = ~(np.isfinite(lo) & (lo >= 0)) | np.isnan(hi) | (hi < lo) | (hi <= 0)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"aft needs intervals 0 <= lower <= upper <= inf with upper > 0 (lower = "
            f"upper: an event at that time; lower = 0: left-censored; upper = inf: "
            f"right-censored); {int(bad.sum())} row(s) are outside, the first at row "
            f"{i}: lower = {float(lo[i]):.7g}, upper = {float(hi[i]):.7g}"
        )


def _check_aft_params(*, sigma=1.0, distribution="normal", clip=True, **_):
    real_hyper("aft", "sigma", Interval(lo=0.0), "> 0")(sigma=sigma)
    if distribution not in AFT_DISTRIBUTIONS:
        raise ValueError(
            f"objectives.aft needs distribution one of {list(AFT_DISTRIBUTIONS)} "
            f"(XGBoost's aft_loss_distribution), got {distribution!r}"
        )
    if not isinstance(clip, (bool, np.bool_)):
        raise TypeError(f"objectives.aft needs clip True or False, got {clip!r}")


aft = Objective(
    "aft",
    aft_loss,
    link=exp_link,
    grad_hess=_aft_grad_hess,
    check_labels=_check_aft_labels,
    metric="objective",
    h_sign="nonnegative",
    check_params=_check_aft_params,
    label_fields=AFT_FIELDS,
)
