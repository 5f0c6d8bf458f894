r"""Group losses: a loss that couples the rows of a group (a query, a risk set).

``train(loss, X, y, group=ids)`` with ``loss(y_group, pred_group, mask) -> scalar``: the
rows with the same id form a group; the loss sees the group's labels and margins as
``(S,)`` vectors padded to the largest group size ``S``, with ``mask`` (``(S,)`` bool)
false on the padding, which the loss must ignore. The training objective is the sum
of the group losses.

Per row, :math:`g_i = \partial L_{q(i)} / \partial f_i` (exact, by reverse-mode
autodiff of each group's loss) and the Hessian diagonal
:math:`h_i = \partial^2 L_{q(i)} / \partial f_i^2`:

* exact for groups of at most ``EXACT_MAX_GROUP`` rows: the diagonal of
  ``jax.hessian`` of the group loss (``S`` Hessian-vector products per group);
* above that, Hutchinson's unbiased estimate
  :math:`\mathrm{diag}(H) \approx \frac1P \sum_p z_p \odot H z_p` with ``P =
  HUTCHINSON_PROBES`` Rademacher probes :math:`z_p \in \{\pm1\}^S` (seeded from the
  training seed and the round, so runs are reproducible). Its variance for entry ``i``
  is :math:`\sum_{j \ne i} H_{ij}^2 / P`, so it is accurate when the diagonal dominates.

A loss that carries a closed-form diagonal (an ``objectives.GroupObjective`` with
``hess_diag``, e.g. ``objectives.cox``) uses it instead, at every group size.

Sample weights multiply each row's g and h, as for per-row losses.
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np

from .._types import FLOAT_DTYPE, INDEX_DTYPE
from .autodiff import HESSIAN_FLOOR, apply_hessian_policy, map_rows

EXACT_MAX_GROUP = 64
HUTCHINSON_PROBES = 64


def group_ids(group, n_rows: int):
    """``(n_rows,)`` group ids from ``group``: one id per row as given, or the sizes of
    contiguous groups (XGBoost's ``set_group`` / ``group=``: positive integers summing
    to ``n_rows``, fewer of them than rows), expanded to ids ``0, 0, ..., 1, ...``.
    ``None`` where ``group`` is neither (the caller says what was expected). One id per
    row wins where both readings fit (``n_rows`` sizes of 1).

    Example:
      >>> group_ids(np.array([2, 3]), 5).tolist(), group_ids(np.array([7, 7, 3]), 3).tolist()
      ([0, 0, 1, 1, 1], [7, 7, 3])
    """
    ids = np.asarray(group)
    if ids.shape == (n_rows,):
        return ids
    if ids.ndim != 1 or ids.size == 0 or ids.dtype.kind not in "iuf":
        return None
    if not np.all(np.isfinite(ids)) or np.any(ids != np.round(ids)) or np.any(ids < 1):
        return None
    if int(ids.sum()) != n_rows:
        return None
    return np.repeat(np.arange(ids.size, dtype=np.int64), ids.astype(np.int64))


def group_index(group, n_rows: int, n_pad: int | None = None, order_key=None) -> np.ndarray:
    """``(G, S)`` int32 row numbers of each group, padded with ``n_pad`` (out of range).

    Groups are the distinct values of ``group`` (any order of rows; groups ordered by
    id, rows within a group by position, or by ``order_key`` ``(N,)`` and then by
    position: ``GroupObjective.row_order``).

    Example:
      >>> group_index(np.array([7, 3, 7, 7]), 4).tolist()
      [[1, 4, 4], [0, 2, 3]]
      >>> group_index(np.array([7, 3, 7, 7]), 4, order_key=np.array([5, 0, 1, 3])).tolist()
      [[1, 4, 4], [2, 3, 0]]
    """
    ids = np.asarray(group)
    if ids.shape != (n_rows,):
        raise ValueError(f"group must be one id per row, shape ({n_rows},), got {ids.shape}")
    n_pad = n_rows if n_pad is None else n_pad
    uniq, inv, counts = np.unique(ids, return_inverse=True, return_counts=True)
    inv = inv.reshape(-1)
    if order_key is None:
        order = np.argsort(inv, kind="stable")
    else:
        order = np.lexsort((np.arange(n_rows), np.asarray(order_key).reshape(-1), inv))
    starts = np.cumsum(counts) - counts
    within = np.arange(n_rows) - np.repeat(starts, counts)
    idx = np.full((uniq.shape[0], int(counts.max())), n_pad, INDEX_DTYPE)
    idx[inv[order], within] = order
    return idx


GROUP_BUCKET_MIN = 8
"""Groups of at most this many rows share the first size bucket (``group_buckets``)."""


def group_buckets(group, n_rows: int, n_pad: int | None = None, order_key=None) -> tuple:
    """``group_index``'s groups split by size: a tuple of ``(G_b, S_b)`` int32 arrays,
    bucket ``b`` holding the groups of ``GROUP_BUCKET_MIN * 2**(b-1) < size <=
    GROUP_BUCKET_MIN * 2**b`` rows (the first: up to ``GROUP_BUCKET_MIN``), padded to
    the largest size in the bucket (``S_b``). Empty buckets are left out; groups keep
    their id order within a bucket.

    A group loss costs its padded size's work for every group (``S^2`` for pairwise
    ranking losses), so one padding for all (``G x S_max``) made a data set of queries
    of many sizes cost as many queries of its largest (2,000 queries of 2-384 rows,
    mean 44: 8.4 GB and 44 s for 20 rounds; XGBoost 0.4 s). Bucketed, no group is
    padded to more than twice its size (or ``GROUP_BUCKET_MIN``). Groups of one size
    give one bucket, ``group_index``'s array.

    Example:
      >>> [b.tolist() for b in group_buckets(np.array([0, 1, 1, 0, 2] + [3] * 9), 14)]
      [[[0, 3], [1, 2], [4, 14]], [[5, 6, 7, 8, 9, 10, 11, 12, 13]]]
    """
    idx = group_index(group, n_rows, n_pad, order_key)
    sizes = (idx < n_rows).sum(axis=1)
    cls = np.maximum(0, np.ceil(np.log2(np.maximum(sizes, 1) / GROUP_BUCKET_MIN))).astype(int)
    return tuple(
        np.ascontiguousarray(idx[cls == c][:, : int(sizes[cls == c].max())]) for c in np.unique(cls)
    )


def group_grad_hess(
    loss,
    y,
    pred,
    sample_weight,
    idx,
    key=None,
    *,
    exact_max=EXACT_MAX_GROUP,
    probes=HUTCHINSON_PROBES,
    hessian="exact",
    floor=HESSIAN_FLOOR,
):
    """Per-row g and Hessian diagonal h of a group loss (see the module docs).

    Args:
      loss: ``loss(y_group, pred_group, mask) -> scalar`` on ``(S,)`` vectors, or an
        ``objectives.GroupObjective``; when that has a ``hess_diag`` it gives h.
      y, pred: ``(N,)`` labels and float32 margins.
      sample_weight: ``(N,)`` weights (0 for padding rows) or None.
      idx: ``(G, S)`` from ``group_index`` (padding = any index >= N), or a tuple of
        such arrays (``group_buckets``: each bucket of groups is taken at its own size).
      key: PRNG key for the Hutchinson probes (needed when ``S > exact_max``; bucket
        ``b > 0`` folds ``b`` into it).
      exact_max, probes: static; the exact/estimated switch and the probe count.
      hessian, floor: the Hessian policy, ``"exact"``, ``"clip"`` or ``"constant"``
        (``jaxboost.engine.autodiff.apply_hessian_policy``), applied per row before the weight.

    Returns:
      ``(g, h)``, each ``(N,)`` float32; rows in no group get 0.

    Example:
      >>> import jax.numpy as jnp, numpy as np
      >>> def listnet(y, f, m):  # softmax cross-entropy over the group
      ...     logp = jax.nn.log_softmax(jnp.where(m, f, -jnp.inf))
      ...     return -jnp.sum(jnp.where(m, jax.nn.softmax(jnp.where(m, y, -jnp.inf)) * logp, 0))
      >>> idx = group_index(np.array([0, 0, 1, 1, 1]), 5)
      >>> g, h = group_grad_hess(listnet, jnp.array([1., 0, 2, 0, 0]), jnp.zeros(5), None, idx)
      >>> [round(float(v), 4) for v in g]  # softmax(f) - softmax(y) within each group
      [-0.2311, 0.2311, -0.4537, 0.2268, 0.2268]
    """
    try:
        hash(loss)
    except TypeError:  # a loss that cannot key a compiled program: op by op
        return _weighted_derivatives(
            loss, y, pred, sample_weight, idx, key, exact_max, probes, hessian, floor
        )
    return _weighted_derivatives_jit(
        loss, y, pred, sample_weight, idx, key, exact_max, probes, hessian, floor
    )


def _weighted_derivatives(
    loss, y, pred, sample_weight, idx, key, exact_max, probes, hessian, floor
):
    g, h, _ = group_derivatives(
        loss, y, pred, idx, key, exact_max=exact_max, probes=probes, hessian=hessian, floor=floor
    )
    if sample_weight is not None:
        g, h = g * sample_weight, h * sample_weight
    return g, h


# Called outside training (which traces group_derivatives itself), one compiled program
# per loss and group shapes: op by op, 12 groups of 1-40 rows took 10 s, compiled 0.6 s.
_weighted_derivatives_jit = jax.jit(
    _weighted_derivatives, static_argnames=("loss", "exact_max", "probes", "hessian")
)


def group_derivatives(
    loss,
    y,
    pred,
    idx,
    key=None,
    *,
    exact_max=EXACT_MAX_GROUP,
    probes=HUTCHINSON_PROBES,
    hessian="exact",
    floor=HESSIAN_FLOOR,
    rows_in_order=False,
):
    """``group_grad_hess`` before the sample weight, with whether each row's group loss
    value is finite: ``(g, h, value_ok)``, each ``(N,)`` (``value_ok`` bool; rows in no
    group: 0, 0, True). The value comes out of the gradient pass at no extra cost.
    ``idx``: one ``(G, S)`` array or a tuple of them (``group_buckets``), each
    bucket's derivatives scattered back to its rows. ``rows_in_order`` (static): the
    groups' rows are in the loss's ``GroupObjective.row_order`` (``group_index``'s
    ``order_key``), and the loss is traced inside its ``rows_ordered()`` context.
    """
    N = y.shape[0]
    buckets = idx if isinstance(idx, (tuple, list)) else (idx,)
    g_rows = jnp.zeros(N, FLOAT_DTYPE)
    h_rows = jnp.zeros(N, FLOAT_DTYPE)
    ok_rows = jnp.ones(N, bool)
    for b, bucket in enumerate(buckets):
        bucket_key = key if (b == 0 or key is None) else jax.random.fold_in(key, b)
        with loss.rows_ordered() if rows_in_order else contextlib.nullcontext():
            g, h, ok = _bucket_derivatives(
                loss, y, pred, bucket, bucket_key, exact_max, probes, hessian, floor
            )
        # Each row is in one group: scatter back (padding indices are out of range: dropped).
        flat = bucket.ravel()
        g_rows = g_rows.at[flat].set(g.ravel(), mode="drop")
        h_rows = h_rows.at[flat].set(h.ravel(), mode="drop")
        ok_rows = ok_rows.at[flat].set(ok.ravel(), mode="drop")
    return g_rows, h_rows, ok_rows


def _bucket_derivatives(loss, y, pred, idx, key, exact_max, probes, hessian, floor):
    """One bucket's ``(g, h, value_ok)``, each ``(G, S)`` (0, 0, True on padding)."""
    N = y.shape[0]
    idx = jnp.asarray(idx)  # a NumPy index would make the mask a NumPy constant
    G, S = idx.shape
    mask = idx < N
    safe = jnp.where(mask, idx, 0)
    yg, pg = y[safe], pred[safe].astype(FLOAT_DTYPE)

    def total(p, yy, m):
        return loss(yy, p, m)

    if getattr(loss, "value_check", True):
        values, g = map_rows(jax.value_and_grad(total), pg, yg, mask)
    else:  # GroupObjective.value_check: the value is not computed (finite by design)
        values, g = jnp.zeros(G, FLOAT_DTYPE), map_rows(jax.grad(total), pg, yg, mask)
    closed = getattr(loss, "group_hess_diag", None)
    closed = closed() if callable(closed) else None
    if closed is not None:
        h = map_rows(closed, yg, pg, mask).astype(FLOAT_DTYPE)
    elif S <= exact_max:
        h = map_rows(lambda p, yy, m: jnp.diagonal(jax.hessian(total)(p, yy, m)), pg, yg, mask)
    else:
        if key is None:
            raise ValueError("a PRNG key is needed for the Hutchinson estimate")
        z = jax.random.rademacher(key, (G, probes, S), FLOAT_DTYPE)
        z = jnp.where(mask[:, None, :], z, 0.0)

        def hvp(p, yy, m, v):
            return jax.jvp(lambda q: jax.grad(total)(q, yy, m), (p,), (v,))[1]

        hz = map_rows(
            lambda p, yy, m, zz: jax.vmap(lambda v: hvp(p, yy, m, v))(zz), pg, yg, mask, z
        )  # (G, P, S)
        h = jnp.mean(z * hz, axis=1)
    h = apply_hessian_policy(loss, None, None, h.ravel(), hessian, floor).reshape(h.shape)
    g = jnp.where(mask, g, 0.0)
    h = jnp.where(mask, h, 0.0)
    return g, h, jnp.broadcast_to(jnp.isfinite(values)[:, None], (G, S))
