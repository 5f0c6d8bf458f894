r"""Replay a boosting run with its tree structures fixed: the leaf values as functions
of the continuous hyperparameters, for hypergradients (``jaxboost.tuning``).

Training chooses each tree's splits (a piecewise-constant choice) and then sets its
leaves to Newton steps of sums of g and h. Given the splits of a run, the whole run is
a smooth function of the loss's hyperparameters :math:`\theta`, the learning rate
``eta`` and the penalties ``lambda`` and ``alpha``: starting from the intercept
:math:`f^{(0)} = c(\theta)`, round :math:`t` computes

.. math::
   g_i = w_i\,\partial_f \ell_\theta(y_i, f^{(t-1)}_i), \quad
   h_i = w_i\,\pi(\partial^2_f \ell_\theta(y_i, f^{(t-1)}_i)), \quad
   G_l = \sum_{i \in l} g_i,\; H_l = \sum_{i \in l} h_i,

   v_l = \frac{\eta}{P}\,\mathrm{clip}_{\pm\delta}\!\left(
         -\frac{T_\alpha(G_l)}{H_l + \lambda}\right), \qquad
   f^{(t)}_i = f^{(t-1)}_i + v_{l_t(x_i)}

(``pi`` the Hessian policy, ``delta`` = ``max_delta_step`` when > 0, ``P`` the trees
of a forest round, each with its own row sample; leaves with :math:`H_l <`
``min_child_weight`` get 0, as in training), and the validation margins follow the
same leaf values on the validation rows' leaves. Autodiff of a validation loss of
:math:`f^{(T)}` gives the hypergradient. A run whose leaves were refit by Newton steps
on the true loss (``refit="newton"``) has those steps replayed after each tree's
Newton values, the step size each one chose held fixed like the splits.

The intercept: a fitted intercept :math:`c_0 = \arg\min_c \sum_i w_i \ell_{\theta_0}(y_i,
c)` moves to first order as the implicit-function theorem says,

.. math:: c(\theta) = c_0 - \frac{\sum_i w_i\,\partial_f\ell_\theta(y_i, c_0) - G_0}{H_0},

with :math:`G_0, H_0` the sums of g and exact h at :math:`(c_0, \theta_0)`: equal to
:math:`c_0` at :math:`\theta_0`, with the derivative of the argmin there (no change
when :math:`H_0 \le 0`, e.g. quantile loss, whose argmin is piecewise constant).

Memory: the rounds run as a scan of ``S`` segments of ``L`` rounds (``S L >= T``),
each segment and each round checkpointed, so the reverse pass holds about
``(S + L)`` copies of the margins (train and validation rows) instead of ``T``, and one
round's intermediate arrays; everything else is recomputed.

Arrays in, arrays out, on one device; dtype-generic (float64 in a scoped x64 context).
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp

from .._types import INDEX_DTYPE
from .autodiff import bind_loss, grad_hess
from .refit import refit_newton
from .sampling import bootstrap_counts, round_key, row_mask, tree_key
from .split import TreeHyper, newton_weight
from .tree import Ensemble, _tree_leaf

REPLAY_FIELDS = ("learning_rate", "reg_lambda", "reg_alpha", "max_delta_step", "hessian_floor")
"""The booster's continuous hyperparameters that ``Theta`` carries (beside the loss's)
and that a replay differentiates."""


class ReplaySpec(NamedTuple):
    """What fixes the replay program (static, hashable).

    ``loss`` the loss family (``autodiff.split_loss``), ``val`` the validation loss
    ``val(y, margin, w) -> scalar`` (a weighted mean), ``hessian`` the policy,
    ``P`` trees per round (a forest), ``row_sampling`` / ``bootstrap`` as in
    ``round.RoundSpec``, ``segment`` rounds per checkpointed segment ``L``,
    ``fit_intercept`` whether the intercept follows ``c(theta)``, and ``refit``
    ``"newton"`` when each leaf is then refit as training does (``refit.refit_newton``:
    its damped Newton steps on the true loss, replayed; the step sizes it picks are
    choices, like the splits) or None.
    """

    loss: Any
    val: Any
    max_depth: int
    hessian: str
    P: int = 1
    row_sampling: bool = False
    bootstrap: bool = False
    segment: int = 1
    fit_intercept: bool = True
    refit: Optional[str] = None


class Theta(NamedTuple):
    """The differentiated numbers (scalars of the replay's dtype): ``REPLAY_FIELDS``,
    ``min_child_weight`` (traced, not differentiated: it only zeroes leaves), and
    ``loss_params``, a dict of the loss's hyperparameters."""

    learning_rate: Any
    reg_lambda: Any
    reg_alpha: Any
    max_delta_step: Any
    hessian_floor: Any
    min_child_weight: Any
    loss_params: Any


class ReplayData(NamedTuple):
    """The run's rows and trees.

    ``X`` ``(N, F)`` and ``X_val`` ``(V, F)`` raw float32 features; ``y``, ``w`` and
    ``y_val``, ``w_val`` labels and weights (``(N,)``, ``(V,)``); ``trees`` an
    ``Ensemble`` whose fields are ``(S, L, P, M)`` (round ``r = s L + j``'s ``P``
    trees); ``active`` ``(S, L)`` bool (False for the padding rounds past the run's
    ``T``); ``rounds`` ``(S, L)`` int32 each round's index from the model's start (its
    random stream); ``seed`` int32 and ``subsample`` of the run's row sampling; ``c0``,
    ``G0``, ``H0`` the intercept and its sums at the initial parameters (see the module
    docstring).
    """

    X: Any
    y: Any
    w: Any
    X_val: Any
    y_val: Any
    w_val: Any
    trees: Any
    active: Any
    rounds: Any
    seed: Any
    subsample: Any
    c0: Any
    G0: Any
    H0: Any


def layout(n_rounds: int, segment: int | None = None) -> tuple:
    """``(S, L)``: segments and rounds per segment for ``n_rounds`` rounds (``L`` about
    ``sqrt(T)`` by default, so the saved margins ``S + L`` are about ``2 sqrt(T)``).

    >>> layout(200), layout(7), layout(1)
    ((14, 15), (3, 3), (1, 1))
    """
    L = max(1, math.ceil(math.sqrt(n_rounds))) if segment is None else int(segment)
    return math.ceil(n_rounds / L), L


def row_derivatives(loss, y, f, w, *, hessian: str, floor):
    """Weighted per-row ``(g, h)`` of ``loss`` at margins ``f`` under the Hessian policy
    (``autodiff.grad_hess``, in the margins' dtype); rows where either is not finite get
    0, as training does."""
    g, h = grad_hess(loss, y, f, w, hessian=hessian, floor=floor)
    ok = jnp.isfinite(g) & jnp.isfinite(h)
    return jnp.where(ok, g, 0.0), jnp.where(ok, h, 0.0)


def newton_leaves(G, H, theta: Theta, n_parallel: int):
    r"""Leaf values :math:`\frac{\eta}{P}\,\mathrm{clip}(-T_\alpha(G)/(H + \lambda))`,
    0 where :math:`H <` ``min_child_weight`` or :math:`H \le 0`: training's
    ``split.newton_weight``, in the dtype of ``G``."""
    w = newton_weight(
        G, H, theta.reg_lambda, theta.reg_alpha, theta.min_child_weight, theta.max_delta_step
    )
    return w * (theta.learning_rate / n_parallel)


def intercept(spec: ReplaySpec, data: ReplayData, theta: Theta):
    """``c(theta)`` (the module docstring); ``c0`` when the intercept is given."""
    if not spec.fit_intercept:
        return data.c0
    G, _ = _sums_at(bind_loss(spec.loss, theta.loss_params), data.y, data.w, data.c0)
    ok = data.H0 > 0
    return data.c0 - jnp.where(ok, (G - data.G0) / jnp.where(ok, data.H0, 1.0), 0.0)


def _sums_at(loss, y, w, c):
    """Sums of weighted g and exact h over the rows, every margin at the constant ``c``."""
    g, h = grad_hess(loss, y, jnp.full(y.shape[0], c, c.dtype), w)
    return jnp.sum(g), jnp.sum(h)


@functools.partial(jax.jit, static_argnums=(0,))
def intercept_sums(family, values, y, w, c0):
    """``(G0, H0)``: the sums of weighted g and exact h at the intercept ``c0``, of the
    loss ``family`` at hyperparameters ``values`` (traced: a retraining at new values,
    as ``tune`` makes, compiles nothing)."""
    return _sums_at(bind_loss(family, values), y, w, c0)


def _round(spec: ReplaySpec, data: ReplayData, theta: Theta, carry, xs):
    """One round: ``(f, f_val) -> (f + trees, f_val + trees)`` (inactive rounds add 0)."""
    f, f_val = carry
    trees, active, r = xs
    loss = bind_loss(spec.loss, theta.loss_params)
    g, h = row_derivatives(loss, data.y, f, data.w, hessian=spec.hessian, floor=theta.hessian_floor)
    N, M = f.shape[0], trees.feature.shape[-1]
    rk = round_key(jax.random.key(data.seed), r)
    d, d_val = jnp.zeros_like(f), jnp.zeros_like(f_val)
    for p in range(spec.P):  # the round's trees, from the same margins
        tree = Ensemble(*(None if a is None else a[p] for a in trees))
        tk = rk if spec.P == 1 else tree_key(rk, p)
        gt, ht = g, h
        if spec.bootstrap:
            c = bootstrap_counts(tk, N, data.subsample, N).astype(f.dtype)
            gt, ht = g * c, h * c
        elif spec.row_sampling:
            take = row_mask(tk, N, data.subsample) > 0
            gt, ht = jnp.where(take, g, 0.0), jnp.where(take, h, 0.0)
        leaf = _tree_leaf(tree, data.X, spec.max_depth)
        G = jax.ops.segment_sum(gt, leaf, num_segments=M)
        H = jax.ops.segment_sum(ht, leaf, num_segments=M)
        v = newton_leaves(G, H, theta, spec.P)
        if spec.refit == "newton":
            dyn = TreeHyper(
                theta.learning_rate / spec.P,
                theta.reg_lambda,
                theta.reg_alpha,
                0.0,
                theta.min_child_weight,
                theta.max_delta_step,
            )
            v = refit_newton(
                {"value": v, "is_leaf": tree.is_leaf}, leaf, loss, data.y, f, data.w, dyn
            )["value"]
        v = jnp.where(active, v, 0.0)
        d = d + v[leaf]
        d_val = d_val + v[_tree_leaf(tree, data.X_val, spec.max_depth)]
    return (f + d, f_val + d_val), None


def replay_margins(spec: ReplaySpec, data: ReplayData, theta: Theta):
    """``(f, f_val)``: the margins of the training and validation rows after the run's
    rounds, with the leaf values recomputed at ``theta`` (checkpointed segments)."""
    dtype = data.c0.dtype
    c = intercept(spec, data, theta)
    f = jnp.full(data.y.shape[0], c, dtype)
    f_val = jnp.full(data.y_val.shape[0], c, dtype)
    one_round = jax.checkpoint(lambda carry, xs: _round(spec, data, theta, carry, xs))

    @jax.checkpoint
    def segment(carry, xs):
        return jax.lax.scan(one_round, carry, xs)

    (f, f_val), _ = jax.lax.scan(segment, (f, f_val), (data.trees, data.active, data.rounds))
    return f, f_val


def replay_loss(spec: ReplaySpec, data: ReplayData, theta: Theta):
    """``(value, f_val)``: the validation loss ``spec.val(y_val, f_val, w_val)`` after the
    replayed run, and the validation margins."""
    _, f_val = replay_margins(spec, data, theta)
    return spec.val(data.y_val, f_val, data.w_val), f_val


def stack_rounds(ensemble: Ensemble, n_rounds: int, P: int, segment: int, round0: int = 0):
    """``(trees, active, rounds)`` of ``ReplayData`` from a model's ``T = n_rounds P``
    trees (host NumPy): fields reshaped to ``(S, L, P, M)``, padded with copies of the
    first round, marked inactive."""
    import numpy as np

    S, L = math.ceil(n_rounds / segment), segment
    pad = S * L - n_rounds

    def shape(a):
        if a is None:
            return None
        a = np.asarray(a).reshape((n_rounds, P) + np.shape(a)[1:])
        a = np.concatenate([a, np.repeat(a[:1], pad, axis=0)]) if pad else a
        return a.reshape((S, L, P) + a.shape[2:])

    trees = Ensemble(*(shape(a) for a in ensemble))
    active = (np.arange(S * L) < n_rounds).reshape(S, L)
    rounds = (round0 + np.arange(S * L, dtype=np.int32)).reshape(S, L)
    return trees, active, rounds.astype(INDEX_DTYPE)
