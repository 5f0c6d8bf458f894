r"""Survival losses: Cox proportional hazards on right-censored times, and the
accelerated failure time (AFT) likelihood on interval-censored times (``aft``).

Labels follow XGBoost's ``survival:cox`` convention: ``y > 0`` is an event (death,
failure) at time ``y``; ``y < 0`` is a row censored at time ``-y`` (still alive then);
``y = 0`` is not allowed. The margin ``f`` is the log hazard ratio; the response
(``predict``) is the hazard ratio :math:`e^f`, as XGBoost's.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

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
_GL3_LOG_WEIGHTS = tuple(float(v) for v in np.log(np.array([5.0, 8.0, 5.0]) / 9.0))


def _gl3_weights(log_pdf_nodes):
    """``(log sum_i c_i p(z_i), (q_0, q_1, q_2))``, ``q_i`` = c_i p(z_i) / the sum, from
    the three nodes' log densities: three scalars, not a ``(3,)`` axis (vmapped over
    rows, a trailing axis of 3 made the narrow branch 30 of the loss's 35 ms per
    1,000,000 rows)."""
    terms = [lp + lw for lp, lw in zip(log_pdf_nodes, _GL3_LOG_WEIGHTS)]
    top = jnp.maximum(jnp.maximum(terms[0], terms[1]), terms[2])
    e = [jnp.exp(t - top) for t in terms]
    total = e[0] + e[1] + e[2]
    return top + jnp.log(total), tuple(v / total for v in e)


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


def _normal_slopes(z):
    return -z, -jnp.ones_like(z)


def _normal_ratio(z, upper, log_pdf, log_tail):
    rho = jnp.exp(log_pdf - log_tail)  # the Mills ratio's inverse, or phi / Phi
    return rho, jnp.where(upper, rho * (rho - z), -rho * (rho + z))


def _logistic_slopes(z):
    return -jnp.tanh(0.5 * z), -2.0 * _sigmoid(z) * _sigmoid(-z)


def _logistic_ratio(z, upper, log_pdf, log_tail):
    both = _sigmoid(z) * _sigmoid(-z)  # p / S = F and p / F = S
    return _sigmoid(jnp.where(upper, z, -z)), jnp.where(upper, both, -both)


def _extreme_slopes(z):
    w = jnp.exp(z)
    return 1.0 - w, -w


def _extreme_ratio(z, upper, log_pdf, log_tail):
    # p / S = e^z = w; p / F = w e^{-w} / (1 - e^{-w}), with slope rho (1 - w / (1 -
    # e^{-w})) in z; by series below w = 0.01 (1 - w/2 + w^2/12; slope -w/2 + w^2/6)
    w = jnp.exp(z)
    small = w < 1e-2
    ws = jnp.where(small, 1.0, w)
    kept = -jnp.expm1(-ws)  # 1 - e^{-w}
    rho_f = jnp.where(small, 1.0 - 0.5 * w + w * w / 12.0, ws * jnp.exp(-ws) / kept)
    slope_f = jnp.where(small, -0.5 * w + w * w / 6.0, rho_f * (1.0 - ws / kept))
    return jnp.where(upper, w, rho_f), jnp.where(upper, w, slope_f)


class _AftLaw(NamedTuple):
    """One noise distribution of ``aft``: ``log_pdf(z)``; ``log_tail(z, upper)`` (``log
    F(z)``, or ``log S(z)`` where ``upper``); ``slopes(z)``, the first two derivatives
    of ``log_pdf``; ``ratio(z, upper, log_pdf, log_tail)``, ``p / S`` (the hazard) or
    ``p / F`` and its derivative in ``z``, in closed form where there is one."""

    log_pdf: Callable
    log_tail: Callable
    slopes: Callable
    ratio: Callable


_AFT_LOG = {
    "normal": _AftLaw(_normal_log_pdf, _normal_log_tail, _normal_slopes, _normal_ratio),
    "logistic": _AftLaw(_logistic_log_pdf, _logistic_log_tail, _logistic_slopes, _logistic_ratio),
    "extreme": _AftLaw(_extreme_log_pdf, _extreme_log_tail, _extreme_slopes, _extreme_ratio),
}
"""Each distribution's functions (``_AftLaw``)."""


def _log1mexp(d):
    """``log(1 - e^d)`` for ``d < 0``: relative precision near 0, absolute far below
    (where the value is about ``-e^d``, below float32's resolution of the loss)."""
    return jnp.log(-jnp.expm1(d))


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
    q = _aft_parts(y, f, sigma, distribution)
    nll_event = -q.log_pdf_a + jnp.log(sigma) + q.log_lo
    nll_interval = -(q.top + _log1mexp(q.d))
    nll_narrow = -(jnp.log(q.half) + _gl3_weights(q.log_pdf_nodes)[0])
    return jnp.where(q.event, nll_event, jnp.where(q.narrow, nll_narrow, nll_interval))


class _AftParts(NamedTuple):
    """What ``aft_loss`` and its closed-form g and h share for one row (``_aft_parts``)."""

    event: jax.Array  # lower == upper
    log_lo: jax.Array  # log lower (0 where lower = 0)
    a: jax.Array  # (log lower - f) / sigma, (log 1 - f) / sigma where lower = 0
    above: jax.Array  # the mass taken as S(a) - S(b) (a > 0), else F(b) - F(a)
    t_end: jax.Array  # the end of the larger tail term: a above, else b
    u_end: jax.Array  # the end of the smaller one
    t_open: jax.Array  # the larger term is F(inf) = 1
    u_open: jax.Array  # the smaller term is 0 (F(0), S(inf)), or the row is an event
    top: jax.Array  # log of the larger tail term
    bottom: jax.Array  # log of the smaller one (any finite value where u_open)
    d: jax.Array  # bottom - top (-inf where u_open), at most -1e-12
    log_pdf_a: jax.Array
    log_pdf_t: jax.Array  # log p at t_end (log_pdf_a or b's)
    log_pdf_u: jax.Array  # log p at u_end
    narrow: jax.Array  # a closed interval holding under a tenth of the tail beyond it
    half: jax.Array  # half its width in z (1 elsewhere)
    nodes: tuple  # the 3 Gauss-Legendre nodes across it
    log_pdf_nodes: tuple


def _aft_parts(y, f, sigma, distribution) -> _AftParts:
    """``aft_loss``'s pieces of one row: the standardised ends, the mass's two tail
    terms (``F(b) - F(a)``, or ``S(a) - S(b)`` when the interval lies above the median,
    ``a > 0``: the difference taken where it is small) and, for a narrow interval (d >
    -0.1: the log-density changes by about 0.1 or less across it, and float32 log-CDFs
    lose digits to the difference), the nodes of 3-point Gauss-Legendre on the
    density."""
    law = _AFT_LOG[distribution]
    lo, hi = _aft_bounds(y)
    lo, hi = jnp.asarray(lo, jnp.result_type(f)), jnp.asarray(hi, jnp.result_type(f))
    event = lo == hi
    has_lo, has_hi = lo > 0, jnp.isfinite(hi)
    log_lo = jnp.log(jnp.where(has_lo, lo, 1.0))
    a = (log_lo - f) / sigma
    b = (jnp.log(jnp.where(has_hi, hi, 1.0)) - f) / sigma
    above = has_lo & (a > 0)
    t_end, u_end = jnp.where(above, a, b), jnp.where(above, b, a)
    t_open = ~above & ~has_hi
    u_open = jnp.where(above, ~has_hi, ~has_lo) | event
    top = jnp.where(t_open, 0.0, law.log_tail(t_end, above))
    bottom = law.log_tail(u_end, above)
    d = jnp.minimum(jnp.where(u_open, -jnp.inf, bottom) - top, -1e-12)
    narrow = has_lo & has_hi & ~event & (d > -0.1)
    width = jnp.log1p((hi - lo) / jnp.where(has_lo, lo, 1.0)) / sigma
    half = 0.5 * jnp.where(narrow, width, 1.0)
    mid = jnp.where(narrow, a, 0.0) + half
    nodes = (mid - _GL3_NODE * half, mid, mid + _GL3_NODE * half)
    lp_a, lp_b = law.log_pdf(a), law.log_pdf(b)  # (the loss reads only lp_a)
    return _AftParts(
        event, log_lo, a, above, t_end, u_end, t_open, u_open, top, bottom, d,
        lp_a, jnp.where(above, lp_a, lp_b), jnp.where(above, lp_b, lp_a),
        narrow, half, nodes, tuple(law.log_pdf(z) for z in nodes),
    )  # fmt: skip


def _aft_grad_hess(y, f, *, sigma=1.0, distribution="normal", clip=True):
    r"""``aft_loss``'s g and h in closed form (from the loss's own log terms), clipped to
    XGBoost's ranges when ``clip``. With :math:`\psi = (\log p)'`:

    * an event: :math:`g = \psi(a)/\sigma`, :math:`h = -\psi'(a)/\sigma^2`;
    * an interval, its mass :math:`T (1 - e^d)` (``top`` :math:`\log T`, ``d``), with
      :math:`E = e^d / (1 - e^d)`, :math:`\rho` the ratio ``p / T`` at the larger
      term's end and ``p / B`` at the other's (the hazard ``p / S``, or ``p / F``),
      :math:`\rho'` their derivatives, ``s`` = -1 for survival terms, +1 for CDFs:
      :math:`g = s((1+E)\rho_t - E\rho_u)/\sigma`,
      :math:`h = (E(1+E)(\rho_t-\rho_u)^2 - s((1+E)\rho'_t - E\rho'_u))/\sigma^2`;
    * a narrow interval, the Gauss-Legendre weights :math:`q_i \propto c_i p(z_i)`:
      :math:`g = E_q[\psi]/\sigma`, :math:`h = -(E_q[\psi'] + Var_q[\psi])/\sigma^2`.

    One pass of the loss's forward terms and a few products, with each distribution's
    hazards and their slopes in closed form (``_AftLaw.ratio``): autodiff's
    forward-over-reverse pass through the log-CDFs took 2.5 times as long (normal, 98
    against 38 ms per 1,000,000 rows) and rounded h worse (extreme: 4e-3 against 4e-4
    of the float64 value at most, far in the tails)."""
    law = _AFT_LOG[distribution]
    q = _aft_parts(y, f, sigma, distribution)
    psi_a, dpsi_a = law.slopes(q.a)
    g_event, h_event = psi_a / sigma, -dpsi_a / sigma**2
    s = jnp.where(q.above, -1.0, 1.0)
    E = 1.0 / jnp.expm1(-q.d)  # e^d / (1 - e^d); 0 where the smaller term is 0
    rho_t, drho_t = law.ratio(q.t_end, q.above, q.log_pdf_t, q.top)
    rho_u, drho_u = law.ratio(q.u_end, q.above, q.log_pdf_u, q.bottom)
    rho_t, drho_t = (jnp.where(q.t_open, 0.0, v) for v in (rho_t, drho_t))
    rho_u, drho_u = (jnp.where(q.u_open, 0.0, v) for v in (rho_u, drho_u))
    g_interval = s * ((1.0 + E) * rho_t - E * rho_u) / sigma
    curvature = E * (1.0 + E) * (rho_t - rho_u) ** 2 - s * ((1.0 + E) * drho_t - E * drho_u)
    h_interval = curvature / sigma**2
    w = _gl3_weights(q.log_pdf_nodes)[1]
    slopes = [law.slopes(z) for z in q.nodes]
    mean = sum(wi * psi for wi, (psi, _) in zip(w, slopes))
    spread = sum(wi * (dpsi + (psi - mean) ** 2) for wi, (psi, dpsi) in zip(w, slopes))
    g_narrow, h_narrow = mean / sigma, -spread / sigma**2
    g = jnp.where(q.event, g_event, jnp.where(q.narrow, g_narrow, g_interval))
    h = jnp.where(q.event, h_event, jnp.where(q.narrow, h_narrow, h_interval))
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
