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
* ``"quantile"``: the ``alpha``-quantile of the residuals :math:`y_i - f_i` of the
  leaf's rows (``alpha = 0.5`` gives the median for absolute error) by XGBoost's rules:
  interpolated between the sorted residuals without sample weights, the weighted step
  rule with them (``refit_quantile``); one sort of the rows by (leaf, residual) as
  integer keys, then a search or two lookups per leaf. Residual regression, as in
  LightGBM's and XGBoost's quantile and absolute-error objectives; XGBoost also starts
  from the labels' quantile (``quantile_intercept``).
* ``"exact"``: the minimiser of the regularised leaf objective :math:`L_l(v)` above, for
  any convex per-row loss (pinball, absolute error, Huber, a loss of your own, whatever
  its keywords are called), found by bisection on the leaf's derivative

  .. math:: L_l'(v) = \sum_{i \in l} w_i\,\partial_f \ell(y_i, f_i + v) + \lambda v,

  which is non-decreasing in :math:`v` for a convex loss. A bracket around the Newton
  value is widened by factors of 4 until :math:`L_l'` changes sign across it (at most
  ``EXACT_WIDEN`` times), then halved until it is as narrow as float32 margins can
  tell apart (at most ``EXACT_HALVE`` times). A leaf whose bracket never closes (a
  loss with no minimum in the leaf), and a leaf where the result would not lower
  :math:`L_l` below the Newton value's (a loss that is not convex there), keeps the
  Newton value. A pinball loss at level :math:`\tau` gets its leaf's weighted
  :math:`\tau`-quantile (to float32), pulled towards 0 by :math:`\lambda`.

Either way the stored value is ``learning_rate * v`` (clipped to ``max_delta_step`` when
it is > 0). Leaves without rows keep their Newton value.
"""

from __future__ import annotations

import functools
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp

from objectives._sort import ordered_bits

from .._types import ACC_DTYPE, FLOAT_DTYPE, INDEX_DTYPE
from .autodiff import grad_hess, map_rows
from .exact import exact_scale

NEWTON_STEPS = 4
EXACT_WIDEN = 40
EXACT_HALVE = 80
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
    value = jnp.where(
        has_rows & tree["is_leaf"], v.astype(tree["value"].dtype) * eta, tree["value"]
    )
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


def _leaf_problem(tree, leaf, loss, y, margin, w, dyn, sums):
    """What both true-loss refits solve, inside their x64 scope: ``(seg, v, has_rows,
    leaf_loss)``: the per-leaf sum over rows, the leaves' Newton values (learning rate
    taken off), which leaves have rows, and the regularised leaf objective
    :math:`L_l(v)` of every leaf at values ``v`` ``(M,)``."""
    lam = dyn.reg_lambda
    seg = functools.partial(
        _segment_sum,
        leaf=leaf,
        M=tree["value"].shape[0],
        reduce=sums.reduce,
        exact_rows=sums.exact_rows,
        reduce_max=sums.reduce_max,
    )
    # The barrier keeps the compiler from folding (w * eta) / eta into w in some
    # programs and not others: the division is always carried out, so a model is
    # the same whatever program (one device, a mesh, train_many) refits it.
    value, eta_ = jax.lax.optimization_barrier((tree["value"], dyn.learning_rate))
    v = (value / eta_).astype(ACC_DTYPE)
    w64 = w.astype(ACC_DTYPE)
    has_rows = seg(w64) > 0

    def leaf_loss(v):
        """``L_l`` at values ``v``: ``(M,)``, or ``(S, M)`` for S candidate values of
        every leaf, taken in one pass over the rows (the per-row losses ``(N, S)``, their
        leaf sums one segment sum of S columns)."""
        if v.ndim == 1:
            return leaf_loss(v[None])[0]
        f = margin[:, None] + v.T[leaf].astype(margin.dtype)  # (N, S)
        per_row = map_rows(lambda t, fs: jax.vmap(lambda f1: loss(t, f1))(fs), y, f)
        per_row = w64[:, None] * per_row.astype(ACC_DTYPE)
        return jax.vmap(seg, in_axes=1)(per_row) + 0.5 * lam * v * v

    return seg, v, has_rows, leaf_loss


def refit_newton(
    tree, leaf, loss, y, margin, w, dyn, *, sums: RowSums = ONE_DEVICE, steps: int = NEWTON_STEPS
):
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
    lam = dyn.reg_lambda
    with jax.enable_x64(True):
        seg, v, has_rows, leaf_loss = _leaf_problem(tree, leaf, loss, y, margin, w, dyn, sums)
        sizes = jnp.asarray(_STEP_SIZES, ACC_DTYPE)
        last = jnp.asarray(len(_STEP_SIZES) - 1, INDEX_DTYPE)

        # One Newton step as a loop body (the program holds one copy of it, not one per
        # step), its step sizes' leaf losses taken together in one pass over the rows.
        def newton_step(_, v):
            g, h = grad_hess(loss, y, margin + v[leaf].astype(margin.dtype), w)
            G = seg(g.astype(ACC_DTYPE)) + lam * v
            H = seg(jnp.maximum(h, 0.0).astype(ACC_DTYPE)) + lam
            d = -G / jnp.where(H > 0, H, 1.0)
            d = jnp.where(H > 0, d, -G)  # no curvature at all: a gradient step
            cands = leaf_loss(v[None] + sizes[:, None] * d[None])  # (sizes, M), one pass
            # The step size is a choice (no gradient flows through it, as through a split).
            cands = jax.lax.stop_gradient(jnp.where(jnp.isfinite(cands), cands, jnp.inf))
            best = jnp.min(cands, axis=0)
            index = jnp.arange(len(_STEP_SIZES), dtype=INDEX_DTYPE)[:, None]
            j = jnp.min(jnp.where(cands == best, index, last), axis=0)
            return v + sizes[j] * d

        v = jax.lax.fori_loop(0, steps, newton_step, v)
        return _finish(tree, v, has_rows, dyn)


def refit_exact(tree, leaf, loss, y, margin, w, dyn, *, sums: RowSums = ONE_DEVICE):
    """Leaf values minimising the regularised leaf objective of the true loss, by
    bisection on its derivative (see the module docstring).

    Args:
      tree, leaf, loss, y, margin, w, dyn, sums: as in ``refit_newton``.

    Returns:
      the tree dict with refitted leaf values.

    Example:
      >>> import jax.numpy as jnp
      >>> from types import SimpleNamespace
      >>> def pinball(y, f, *, tau=0.8):
      ...     r = y - f
      ...     return jnp.maximum(tau * r, (tau - 1.0) * r)
      >>> tree = {"value": jnp.zeros(1), "is_leaf": jnp.ones(1, bool)}
      >>> dyn = SimpleNamespace(learning_rate=1.0, reg_lambda=0.0, max_delta_step=0.0)
      >>> y = jnp.arange(0.0, 11.0)          # the 0.8-quantile of 0..10 is 8
      >>> out = refit_exact(tree, jnp.zeros(11, jnp.int32), pinball, y, jnp.zeros(11),
      ...                   jnp.ones(11), dyn)
      >>> round(float(out["value"][0]), 4)
      8.0
    """
    lam = dyn.reg_lambda
    with jax.enable_x64(True):
        seg, v0, has_rows, leaf_loss = _leaf_problem(tree, leaf, loss, y, margin, w, dyn, sums)

        def slope(v):  # L_l'(v) for every leaf, (M,)
            g, _ = grad_hess(loss, y, margin + v[leaf].astype(margin.dtype), w)
            return seg(g.astype(ACC_DTYPE)) + lam * v

        # Widen [lo, hi] around v0 until the slope is <= 0 at lo and >= 0 at hi.
        step0 = jnp.maximum(jnp.abs(v0), 1e-3)

        def widen_cond(c):
            i, lo, hi, dlo, dhi = c
            return (i < EXACT_WIDEN) & jnp.any(has_rows & ((dlo > 0) | (dhi < 0)))

        def widen(c):
            i, lo, hi, dlo, dhi = c
            grow = step0 * 4.0 ** (i + 1).astype(ACC_DTYPE)
            lo = jnp.where(dlo > 0, v0 - grow, lo)
            hi = jnp.where(dhi < 0, v0 + grow, hi)
            return i + 1, lo, hi, slope(lo), slope(hi)

        lo, hi = v0 - step0, v0 + step0
        _, lo, hi, dlo, dhi = jax.lax.while_loop(
            widen_cond, widen, (jnp.asarray(0, INDEX_DTYPE), lo, hi, slope(lo), slope(hi))
        )
        closed = (dlo <= 0) & (dhi >= 0)

        # Halve it while float32 margins can still tell its ends apart.
        def apart(lo, hi):
            return lo.astype(FLOAT_DTYPE) != hi.astype(FLOAT_DTYPE)

        def halve_cond(c):
            i, lo, hi = c
            return (i < EXACT_HALVE) & jnp.any(has_rows & closed & apart(lo, hi))

        def halve(c):
            i, lo, hi = c
            mid = 0.5 * (lo + hi)
            up = slope(mid) > 0
            return i + 1, jnp.where(up, lo, mid), jnp.where(up, mid, hi)

        _, lo, hi = jax.lax.while_loop(halve_cond, halve, (jnp.asarray(0, INDEX_DTYPE), lo, hi))
        v = 0.5 * (lo + hi)
        # The minimiser where the bracket closed and the loss went down; else v0.
        better = jax.lax.stop_gradient(leaf_loss(v) <= leaf_loss(v0))
        v = jnp.where(closed & better & jnp.isfinite(v), v, v0)
        return _finish(tree, v, has_rows, dyn)


def sort_by_leaf(leaf, r, n_leaves: int):
    """The row order that sorts rows by ``(leaf, r)``, ties in row order: what
    ``jnp.lexsort((r, leaf))`` gives (``leaf`` ``(N,)`` int in ``[0, n_leaves]``, ``r``
    ``(N,)`` float32), as ``(N,)`` int32.

    One sort of uint64 keys ``leaf | bits of r | row`` where the three fit in 64 bits
    (``n_leaves + 1`` leaf values and ``N`` rows in 32 bits: up to 33M rows at depth 6),
    else of ``leaf | bits of r`` with the row beside it (``objectives._sort``: XLA's CPU
    sort of one integer key runs without a comparator call per comparison; on 100,000
    rows 3 ms against 24 ms for ``jnp.lexsort``, which sorts three operands).

    >>> import jax.numpy as jnp
    >>> with jax.enable_x64(True):
    ...     sort_by_leaf(jnp.array([1, 0, 1, 0]), jnp.array([0.5, 2.0, -1.0, 2.0]), 2).tolist()
    [1, 3, 2, 0]
    """
    N = r.shape[0]
    leaf_bits = max(1, int(n_leaves).bit_length())
    row_bits = max(1, int(N - 1).bit_length())
    key = (leaf.astype(jnp.uint64) << 32) | ordered_bits(r.astype(FLOAT_DTYPE)).astype(jnp.uint64)
    if leaf_bits + row_bits <= 32:
        rows = jnp.arange(N, dtype=jnp.uint64)
        packed = jax.lax.sort((key << row_bits) | rows)
        return (packed & jnp.uint64((1 << row_bits) - 1)).astype(INDEX_DTYPE)
    rows = jnp.arange(N, dtype=INDEX_DTYPE)
    return jax.lax.sort((key, rows), num_keys=1, is_stable=True)[1]


def refit_quantile(tree, leaf, y, margin, w, dyn, *, alpha, weighted: bool = True):
    r"""Leaf values: each leaf's ``alpha``-quantile of the residuals ``y - margin``, as
    XGBoost's ``reg:quantileerror`` and ``reg:absoluteerror`` set them.

    * ``weighted`` (training was given ``sample_weight``, or draws a bootstrap): the
      smallest residual whose cumulative weight (residuals sorted within the leaf)
      reaches ``alpha`` times the leaf's weight, a step function of ``alpha`` (XGBoost's
      ``WeightedQuantile``);
    * otherwise the quantile interpolated between order statistics (XGBoost's
      ``Quantile``): of the leaf's :math:`n` residuals sorted, :math:`r_{(0)} \le \dots
      \le r_{(n-1)}`, :math:`r_{(0)}` when :math:`\alpha \le 1/(n+1)`,
      :math:`r_{(n-1)}` when :math:`\alpha \ge n/(n+1)`, else with :math:`x =
      \alpha (n + 1)`, :math:`k = \lfloor x \rfloor - 1`, :math:`d = x - 1 - k`:
      :math:`r_{(k)} + d\,(r_{(k+1)} - r_{(k)})` (the median of an even count is the
      mean of the middle two). Rows of weight 0 (padding) are left out.

    One device only.

    Args:
      tree, leaf, y, margin, w, dyn: as in ``refit_newton``.
      alpha: the quantile level in ``(0, 1)`` (a float32 scalar, may be traced).
      weighted: static; which of the two rules.

    Returns:
      the tree dict with refitted leaf values.

    Example:
      >>> import jax.numpy as jnp
      >>> from types import SimpleNamespace
      >>> tree = {"value": jnp.zeros(1), "is_leaf": jnp.ones(1, bool)}
      >>> dyn = SimpleNamespace(learning_rate=1.0, max_delta_step=0.0)
      >>> y, rows = jnp.array([4.0, 1.0, 3.0, 2.0]), jnp.zeros(4, jnp.int32)
      >>> fit = lambda weighted: refit_quantile(tree, rows, y, jnp.zeros(4), jnp.ones(4),
      ...                                       dyn, alpha=0.5, weighted=weighted)
      >>> float(fit(False)["value"][0]), float(fit(True)["value"][0])
      (2.5, 2.0)
    """
    M = tree["value"].shape[0]
    N = y.shape[0]
    r = (y - margin).astype(FLOAT_DTYPE)
    with jax.enable_x64(True):
        w64 = w.astype(ACC_DTYPE)
        if weighted:
            order = sort_by_leaf(leaf, r, M)
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
        # Unweighted: rows of weight 0 go to a leaf after the last, sorted out of the way.
        used = w > 0
        key_leaf = jnp.where(used, leaf, M)
        sorted_r = r[sort_by_leaf(key_leaf, r, M)]
        count = jax.ops.segment_sum(used.astype(INDEX_DTYPE), leaf, num_segments=M)
        first = jnp.cumsum(count) - count
        n = count.astype(ACC_DTYPE)
        a = jnp.asarray(alpha, FLOAT_DTYPE).astype(ACC_DTYPE)
        x = a * (n + 1.0)
        k = jnp.floor(x) - 1.0
        d = (x - 1.0) - k
        low = a <= 1.0 / (n + 1.0)
        high = a >= n / (n + 1.0)
        ki = jnp.clip(k, 0, jnp.maximum(n - 2.0, 0.0)).astype(INDEX_DTYPE)

        def at(j):  # the leaf's j-th smallest residual
            return sorted_r[jnp.clip(first + j, 0, N - 1)]

        v0, v1 = at(ki), at(ki + 1)
        mid = (v0.astype(ACC_DTYPE) + d * (v1 - v0).astype(ACC_DTYPE)).astype(FLOAT_DTYPE)
        q = jnp.where(low, at(0), jnp.where(high, at(jnp.maximum(count - 1, 0)), mid))
        return _finish(tree, q.astype(ACC_DTYPE), count > 0, dyn)


def quantile_intercept(y, w, alpha: float, weighted: bool) -> float:
    r"""The labels' ``alpha``-quantile as XGBoost's ``reg:quantileerror`` and
    ``reg:absoluteerror`` start from it (their ``base_score``), by
    ``refit_quantile``'s two rules, on the host.

    * ``weighted``: the labels sorted (stably), their weights' float32 running sums
      :math:`S_i`, and the first label whose :math:`S_i \ge` ``float32(S_{n-1} *
      alpha)`` (XGBoost's ``WeightedQuantile``, float32 sums as there);
    * otherwise the quantile interpolated between the sorted labels of weight > 0
      (XGBoost's ``Quantile``; see ``refit_quantile``).

    Args:
      y: ``(N,)`` float32 labels; w: ``(N,)`` weights (0 for padding rows).
      alpha: the level in ``(0, 1)``.
      weighted: whether training was given ``sample_weight`` (or a bootstrap's counts).

    Returns:
      the quantile as a Python float (a float32 value).

    >>> import numpy as np
    >>> y, w = np.array([4.0, 1.0, 3.0, 2.0], np.float32), np.ones(4, np.float32)
    >>> quantile_intercept(y, w, 0.5, False), quantile_intercept(y, w, 0.5, True)
    (2.5, 2.0)
    """
    import numpy as np

    y = np.asarray(y, np.float32)
    w = np.asarray(w, np.float32)
    if weighted:
        order = np.argsort(y, kind="stable")
        cdf = np.cumsum(w[order], dtype=np.float32)  # sequential float32 sums
        thresh = np.float32(np.float64(cdf[-1]) * np.float64(alpha))
        idx = min(int(np.searchsorted(cdf, thresh, side="left")), y.size - 1)
        return float(y[order][idx])
    v = np.sort(y[w > 0], kind="stable")
    n, a = float(v.size), float(np.float32(alpha))
    if a <= 1.0 / (n + 1.0):
        return float(v[0])
    if a >= n / (n + 1.0):
        return float(v[-1])
    x = a * (n + 1.0)
    k = np.floor(x) - 1.0
    d = (x - 1.0) - k
    v0, v1 = v[int(k)], v[int(k) + 1]
    return float(np.float32(np.float64(v0) + d * np.float64(np.float32(v1 - v0))))
