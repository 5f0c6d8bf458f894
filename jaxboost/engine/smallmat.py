r"""Batches of small symmetric matrices, in plain array operations: Cholesky factors,
solves with them, and a positive semi-definiteness test.

Why not ``jnp.linalg``: on the CPU, ``jnp.linalg.cholesky``, ``eigvalsh`` and the
triangular solves are LAPACK custom calls that split a large batch into tasks on
XLA's intra-op thread pool and then *block* their pool thread until every task has
run. When as many such calls run at once as the pool has threads (XLA runs
independent operations of a program side by side: the three Cholesky factors of a
vector leaf solve, on a 2-core machine), every pool thread waits for tasks that no
thread is left to run, and the program never finishes (``multi_output_tree`` with the
full Hessian hung for 6 or more outputs). The loops here are ordinary XLA operations:
they cannot block, and for the small ``K`` of vector leaves (``K`` outputs) they cost
about what LAPACK's calls do.

Every function works on the last two axes and broadcasts over the leading ones; ``K``
is static. Up to ``UNROLL_MAX`` the steps are written out entry by entry (XLA fuses
them into a few loops over the batch: 2-5x faster than the loop below at ``K <= 10``,
and faster than LAPACK at ``K = 4``); larger ``K`` takes a ``fori_loop`` of ``K``
steps over whole columns, so a program's size stops growing with ``K``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

UNROLL_MAX = 4
"""The largest ``K`` whose steps are written out entry by entry (``K (K + 1) / 2``
entries, ``K^3 / 6`` multiply-adds as separate operations: compile time grows as
``K^3``)."""


def cholesky(A):
    r"""Lower Cholesky factors :math:`L L^\top = A` of ``(..., K, K)`` symmetric ``A``
    (only the lower triangle is read).

    Column ``j``: :math:`d_j = A_{jj} - \sum_{k<j} L_{jk}^2`, :math:`L_{jj} =
    \sqrt{d_j}`, :math:`L_{ij} = (A_{ij} - \sum_{k<j} L_{ik} L_{jk}) / L_{jj}` for
    :math:`i > j`. As LAPACK's ``potrf`` (and ``jnp.linalg.cholesky``), a matrix with a
    pivot :math:`d_j \le 0` (not positive definite, or singular) or a NaN gets a factor
    of all NaN.

    Returns:
      ``(..., K, K)`` lower-triangular ``L`` (zeros above the diagonal).

    Example:
      >>> import numpy as np
      >>> L = cholesky(jnp.array([[[4.0, 2.0], [2.0, 5.0]], [[1.0, 2.0], [2.0, 1.0]]]))
      >>> np.asarray(L[0]).tolist(), bool(np.isnan(L[1]).all())
      ([[2.0, 0.0], [1.0, 2.0]], True)
    """
    K = A.shape[-1]
    nan = jnp.asarray(jnp.nan, A.dtype)
    if K <= UNROLL_MAX:
        return _cholesky_unrolled(A, nan)
    rows = jnp.arange(K)

    def column(j, L):
        Lj = jax.lax.dynamic_index_in_dim(L, j, axis=-2, keepdims=False)  # zeros from j on
        Aj = jax.lax.dynamic_index_in_dim(A, j, axis=-1, keepdims=False)
        d = jax.lax.dynamic_index_in_dim(Aj, j, axis=-1, keepdims=False) - jnp.sum(
            Lj * Lj, axis=-1
        )
        ljj = jnp.where(d > 0, jnp.sqrt(jnp.where(d > 0, d, 1.0)), nan)
        col = (Aj - jnp.einsum("...ik,...k->...i", L, Lj)) / ljj[..., None]
        col = jnp.where(rows > j, col, jnp.where(rows == j, ljj[..., None], 0.0))
        return jnp.where(rows == j, col[..., :, None], L)

    L = jax.lax.fori_loop(0, K, column, jnp.zeros_like(A))
    failed = jnp.any(jnp.isnan(jnp.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
    return jnp.where(failed[..., None, None], nan, L)


def _cholesky_unrolled(A, nan):
    K = A.shape[-1]
    L = [[None] * K for _ in range(K)]
    failed = jnp.zeros(A.shape[:-2], bool)
    for j in range(K):
        d = A[..., j, j]
        for k in range(j):
            d = d - L[j][k] * L[j][k]
        failed = failed | ~(d > 0)
        L[j][j] = jnp.sqrt(jnp.where(d > 0, d, 1.0))
        for i in range(j + 1, K):
            s = A[..., i, j]
            for k in range(j):
                s = s - L[i][k] * L[j][k]
            L[i][j] = s / L[j][j]
    zero = jnp.zeros_like(failed, A.dtype)
    L = jnp.stack([jnp.stack(L[i][: i + 1] + [zero] * (K - 1 - i), -1) for i in range(K)], -2)
    return jnp.where(failed[..., None, None], nan, L)


def cho_solve(L, b):
    r"""``x`` with :math:`L L^\top x = b`, for ``(..., K, K)`` lower ``L``
    (``cholesky``) and ``(..., K)`` ``b``: forward then back substitution.

    Example:
      >>> A = jnp.array([[4.0, 2.0], [2.0, 5.0]])
      >>> cho_solve(cholesky(A), A @ jnp.array([1.0, -1.0])).tolist()
      [1.0, -1.0]
    """
    K = L.shape[-1]
    if K <= UNROLL_MAX:
        y = [None] * K
        for j in range(K):
            s = b[..., j]
            for k in range(j):
                s = s - L[..., j, k] * y[k]
            y[j] = s / L[..., j, j]
        x = [None] * K
        for j in reversed(range(K)):
            s = y[j]
            for k in range(j + 1, K):
                s = s - L[..., k, j] * x[k]
            x[j] = s / L[..., j, j]
        return jnp.stack(x, -1)
    rows = jnp.arange(K)
    diag = jnp.diagonal(L, axis1=-2, axis2=-1)

    def forward(j, y):  # y_j = (b_j - sum_{k<j} L_jk y_k) / L_jj; y is 0 from j on
        Lj = jax.lax.dynamic_index_in_dim(L, j, axis=-2, keepdims=False)
        bj = jax.lax.dynamic_index_in_dim(b, j, axis=-1, keepdims=False)
        dj = jax.lax.dynamic_index_in_dim(diag, j, axis=-1, keepdims=False)
        yj = (bj - jnp.sum(Lj * y, axis=-1)) / dj
        return jnp.where(rows == j, yj[..., None], y)

    def back(i, x):  # x_j = (y_j - sum_{k>j} L_kj x_k) / L_jj; x is 0 up to j
        j = K - 1 - i
        Lj = jax.lax.dynamic_index_in_dim(L, j, axis=-1, keepdims=False)  # column j
        yj = jax.lax.dynamic_index_in_dim(y, j, axis=-1, keepdims=False)
        dj = jax.lax.dynamic_index_in_dim(diag, j, axis=-1, keepdims=False)
        xj = (yj - jnp.sum(Lj * x, axis=-1)) / dj
        return jnp.where(rows == j, xj[..., None], x)

    y = jax.lax.fori_loop(0, K, forward, jnp.zeros_like(b))
    return jax.lax.fori_loop(0, K, back, jnp.zeros_like(b))


def positive_definite(A):
    """``(...)`` bool: which ``(..., K, K)`` symmetric ``A`` have a Cholesky factor
    (every pivot > 0: positive definite, up to rounding)."""
    L = cholesky(A)
    return ~jnp.isnan(L[..., 0, 0])
