r"""Leaf refit: re-solve each leaf's value on the true loss after the tree is grown.

A tree's structure comes from the second-order model of the loss; for a non-smooth loss
(absolute error, quantile, Huber) that model is poor, and its leaf values are off.
Refit keeps the structure and replaces each leaf value :math:`v_l`:

* ``"newton"``: a few damped Newton steps on the regularised leaf objective

  .. math:: L_l(v) = \sum_{i \in l} w_i\,\ell(y_i, f_i + v) + \tfrac{\lambda}{2} v^2,
     \qquad v \leftarrow v - \frac{\sum_{i\in l} w_i g_i + \lambda v}
                              {\sum_{i\in l} w_i \max(h_i, 0) + \lambda}

  where each step is scaled by the best of ``1, 1/2, ..., 1/32`` (or 0) per leaf, so the
  leaf objective never increases. All leaves are solved together with segment sums over
  rows (one pass per step: the per-leaf problems are vectorised over leaves).
* ``"quantile"``: the exact weighted ``alpha``-quantile of the residuals
  :math:`y_i - f_i` of the leaf's rows (the minimiser of the pinball loss; ``alpha =
  0.5`` gives the median for absolute error): one sort of the rows by (leaf, residual),
  cumulative weights, and a search per leaf. Residual regression, as in LightGBM's and
  XGBoost's quantile and absolute-error objectives.

Either way the stored value is ``learning_rate * v`` (clipped to ``max_delta_step`` when
it is > 0). Leaves without rows keep their Newton value.
"""

from __future__ import annotations

import functools
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp

from .._types import ACC_DTYPE, FLOAT_DTYPE, INDEX_DTYPE
from .autodiff import grad_hess
from .exact import exact_scale

NEWTON_STEPS = 4
_STEP_SIZES = (1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.0)


def _segment_sum(x, leaf, M, reduce, exact_rows=None, reduce_max=None):
    if exact_rows is None:
        return reduce(jax.ops.segment_sum(x, leaf, num_segments=M))
    # Exact: every row on one power-of-two grid, so the sums are order-free.
    s = exact_scale(x, exact_rows, reduce_max=reduce_max)
    return reduce(jax.ops.segment_sum(jnp.round(x * s), leaf, num_segments=M)) / s


def _finish(tree, v, has_rows, dyn):
    eta, mds = dyn.learning_rate, dyn.max_delta_step
    v = jnp.where(mds > 0, jnp.clip(v, -mds, mds), v)
    value = jnp.where(has_rows & tree["is_leaf"], v.astype(tree["value"].dtype) * eta,
                      tree["value"])
    return dict(tree, value=value)


def _identity(x):
    return x


class RowSums(NamedTuple):
    """How ``refit_newton`` sums over rows.

    Fields:
      reduce: sums per-device partial sums over devices (``lax.psum``; identity on one).
      exact_rows: ``None``, or the number of real rows: then every sum is an exact
        quantized sum (``jaxboost.engine.exact``).
      reduce_max: takes maxima over devices (for the exact sums' common scale).
    """

    reduce: Callable = _identity
    exact_rows: Optional[int] = None
    reduce_max: Callable = _identity


ONE_DEVICE = RowSums()


def refit_newton(tree, leaf, loss, y, margin, w, dyn, *, sums: RowSums = ONE_DEVICE,
                 steps: int = NEWTON_STEPS):
    """Leaf values by damped Newton steps on the true loss (see the module docstring).

    Args:
      tree: a tree dict from ``grow_tree`` (``value`` ``(M,)``, learning rate applied).
      leaf: ``(N,)`` leaf of every row; y, margin, w: ``(N,)`` labels, margins before
        this tree, weights (0 for padding).
      dyn: dynamic parameters.
      sums: ``RowSums``, how sums over rows are taken (devices, exactness).
      steps: static number of damped Newton steps.

    Returns:
      the tree dict with refitted leaf values.
    """
    M = tree["value"].shape[0]
    eta, lam = dyn.learning_rate, dyn.reg_lambda
    seg = functools.partial(_segment_sum, leaf=leaf, M=M, reduce=sums.reduce,
                            exact_rows=sums.exact_rows, reduce_max=sums.reduce_max)
    with jax.enable_x64(True):
        # The barrier keeps the compiler from folding (w * eta) / eta into w in some
        # programs and not others: the division is always carried out, so a model is
        # the same whatever program (one device, a mesh, train_many) refits it.
        value, eta_ = jax.lax.optimization_barrier((tree["value"], eta))
        v = (value / eta_).astype(ACC_DTYPE)
        w64 = w.astype(ACC_DTYPE)
        has_rows = seg(w64) > 0

        def leaf_loss(v):
            f = margin + v[leaf].astype(margin.dtype)
            per_row = w64 * jax.vmap(loss)(y, f).astype(ACC_DTYPE)
            return seg(per_row) + 0.5 * lam * v * v

        sizes = jnp.asarray(_STEP_SIZES, ACC_DTYPE)
        last = jnp.asarray(len(_STEP_SIZES) - 1, INDEX_DTYPE)

        # One Newton step as a loop body, and the step sizes' leaf losses as a scan: the
        # program holds one copy of each (compile time), not steps x sizes copies.
        def newton_step(_, v):
            g, h = grad_hess(loss, y, margin + v[leaf].astype(margin.dtype), w)
            G = seg(g.astype(ACC_DTYPE)) + lam * v
            H = seg(jnp.maximum(h, 0.0).astype(ACC_DTYPE)) + lam
            d = -G / jnp.where(H > 0, H, 1.0)
            d = jnp.where(H > 0, d, -G)  # no curvature at all: a gradient step
            cands = jax.lax.scan(lambda c, t: (c, leaf_loss(v + t * d)), None, sizes)[1]
            # The step size is a choice (no gradient flows through it, as through a split).
            cands = jax.lax.stop_gradient(jnp.where(jnp.isfinite(cands), cands, jnp.inf))
            best = jnp.min(cands, axis=0)
            index = jnp.arange(len(_STEP_SIZES), dtype=INDEX_DTYPE)[:, None]
            j = jnp.min(jnp.where(cands == best, index, last), axis=0)
            return v + sizes[j] * d

        v = jax.lax.fori_loop(0, steps, newton_step, v)
        return _finish(tree, v, has_rows, dyn)


def refit_quantile(tree, leaf, y, margin, w, dyn, *, alpha: float):
    """Leaf values: each leaf's weighted ``alpha``-quantile of ``y - margin``.

    The quantile is the smallest residual whose cumulative weight (residuals sorted
    within the leaf) reaches ``alpha`` times the leaf's weight. One device only.

    Args:
      tree, leaf, y, margin, w, dyn: as in ``refit_newton``.
      alpha: static quantile level in ``(0, 1)``.

    Returns:
      the tree dict with refitted leaf values.
    """
    M = tree["value"].shape[0]
    N = y.shape[0]
    r = (y - margin).astype(FLOAT_DTYPE)
    order = jnp.lexsort((r, leaf))  # by leaf, then residual
    with jax.enable_x64(True):
        w64 = w.astype(ACC_DTYPE)
        cw = jnp.cumsum(w64[order])
        W = jax.ops.segment_sum(w64, leaf, num_segments=M)
        start = jnp.cumsum(W) - W
        target = start + alpha * W
        idx = jnp.searchsorted(cw, target, side="left")
        # Keep the index inside the leaf's own rows (float rounding of the two sums).
        count = jax.ops.segment_sum(jnp.ones(N, INDEX_DTYPE), leaf, num_segments=M)
        first = jnp.cumsum(count) - count
        idx = jnp.clip(idx, first, jnp.maximum(first + count - 1, first))
        q = r[order][jnp.clip(idx, 0, N - 1)].astype(ACC_DTYPE)
        return _finish(tree, q, W > 0, dyn)
