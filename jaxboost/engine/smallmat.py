r"""Batches of small symmetric matrices, in plain array operations: Cholesky factors,
solves with them, a positive definiteness test and eigendecompositions.

Why not ``jnp.linalg``: on the CPU, ``jnp.linalg.cholesky``, ``eigvalsh`` and the
triangular solves are LAPACK custom calls that split a large batch into tasks on
XLA's intra-op thread pool and then *block* their pool thread until every task has
run. When as many such calls run at once as the pool has threads (XLA runs
independent operations of a program side by side: the three Cholesky factors of a
vector leaf solve, on a 2-core machine; or programs of fits in several Python threads),
every pool thread waits for tasks that no thread is left to run, and the program never
finishes (``multi_output_tree`` with the full Hessian hung for 6 or more outputs, and
``hessian="clip"`` fits in three threads). The loops here are ordinary XLA operations:
they cannot block.

Every function works on the last two axes and broadcasts over the leading ones; ``K``
is static. Up to ``UNROLL_MAX`` the steps are written out entry by entry (XLA fuses
them into a few loops over the batch: 2-5x faster than the loop below at ``K <= 10``,
and faster than LAPACK at ``K = 4``); larger ``K`` takes a ``fori_loop`` of ``K``
steps over whole columns, so a program's size stops growing with ``K``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

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
        d = jax.lax.dynamic_index_in_dim(Aj, j, axis=-1, keepdims=False) - jnp.sum(Lj * Lj, axis=-1)
        ljj = jnp.where(d > 0, jnp.sqrt(jnp.where(d > 0, d, 1.0)), nan)
        col = (Aj - jnp.einsum("...ik,...k->...i", L, Lj)) / ljj[..., None]
        col = jnp.where(rows > j, col, jnp.where(rows == j, ljj[..., None], 0.0))
        return jnp.where(rows == j, col[..., :, None], L)

    L = jax.lax.fori_loop(0, K, column, jnp.zeros_like(A))
    failed = jnp.any(jnp.isnan(jnp.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
    return jnp.where(failed[..., None, None], nan, L)


def _cholesky_unrolled(A, nan):
    K = A.shape[-1]
    L: list[list[Any]] = [[None] * K for _ in range(K)]
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
    out = jnp.stack([jnp.stack(L[i][: i + 1] + [zero] * (K - 1 - i), -1) for i in range(K)], -2)
    return jnp.where(failed[..., None, None], nan, out)


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
        y: list[Any] = [None] * K
        for j in range(K):
            s = b[..., j]
            for k in range(j):
                s = s - L[..., j, k] * y[k]
            y[j] = s / L[..., j, j]
        x: list[Any] = [None] * K
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


JACOBI_SWEEPS = 30
"""The most sweeps of ``eigh`` (it stops once every matrix is diagonal to rounding;
cyclic Jacobi converges quadratically, 5-8 sweeps for ``K <= 10`` in float64)."""


def eigh(A):
    r"""Eigenvalues and eigenvectors of ``(..., K, K)`` symmetric ``A``, by cyclic
    Jacobi rotations: ``(lam, V)`` with :math:`A = V \operatorname{diag}(\lambda)
    V^\top`, ``lam`` ``(..., K)`` (not sorted), ``V`` ``(..., K, K)`` orthogonal.

    A sweep rotates every pair :math:`p < q` in turn: with :math:`\theta = (a_{qq} -
    a_{pp}) / (2 a_{pq})`, :math:`t = \operatorname{sign}(\theta) / (|\theta| +
    \sqrt{\theta^2 + 1})`, :math:`c = 1 / \sqrt{1 + t^2}`, :math:`s = t c`, the
    rotation :math:`J` (:math:`J_{pp} = J_{qq} = c`, :math:`J_{pq} = -J_{qp} = s`) makes
    :math:`(J^\top A J)_{pq} = 0`; ``V`` collects the rotations. Sweeps go on until the
    off-diagonal entries of every matrix are below ``1e-15`` of its Frobenius norm
    (at most ``JACOBI_SWEEPS``). Work in the dtype of ``A`` (float64 under x64).

    Example:
      >>> import numpy as np
      >>> lam, V = eigh(jnp.array([[2.0, 1.0], [1.0, 2.0]]))
      >>> sorted(np.round(np.asarray(lam), 6).tolist())
      [1.0, 3.0]
    """
    K = A.shape[-1]
    dt = A.dtype
    A = 0.5 * (A + jnp.swapaxes(A, -1, -2))
    V = jnp.broadcast_to(jnp.eye(K, dtype=dt), A.shape)
    if K == 1:
        return A[..., 0], V
    pairs = [(p, q) for p in range(K) for q in range(p + 1, K)]
    P = jnp.asarray([p for p, _ in pairs], jnp.int32)
    Q = jnp.asarray([q for _, q in pairs], jnp.int32)
    off = ~jnp.eye(K, dtype=bool)
    norm = jnp.sqrt(jnp.sum(jnp.square(A), axis=(-2, -1)))
    tol = jnp.asarray(1e-15 if dt == jnp.float64 else 1e-7, dt) * norm
    huge = float(np.sqrt(np.finfo(dt).max)) / 4  # above it theta^2 + 1 would overflow

    def take(M, i, axis):
        return jax.lax.dynamic_index_in_dim(M, i, axis=axis, keepdims=False)

    def put(M, v, i, axis):
        return jax.lax.dynamic_update_index_in_dim(M, v, i, axis=axis)

    def rotate(i, AV):
        A, V = AV
        p, q = P[i], Q[i]
        Ap, Aq = take(A, p, -1), take(A, q, -1)  # columns p and q
        app, aqq, apq = take(Ap, p, -1), take(Aq, q, -1), take(Aq, p, -1)
        active = apq != 0
        theta = (aqq - app) / (2.0 * jnp.where(active, apq, 1.0))
        big = jnp.abs(theta) > huge  # t = 1 / (2 theta) to rounding
        root = jnp.sqrt(jnp.where(big, 1.0, theta * theta) + 1.0)
        t = jnp.where(big, 0.5 / theta, jnp.sign(theta) / (jnp.abs(theta) + root))
        t = jnp.where(active, jnp.where(theta == 0, 1.0, t), 0.0)
        c = 1.0 / jnp.sqrt(1.0 + t * t)
        s = t * c
        c_, s_ = c[..., None], s[..., None]
        A = put(put(A, c_ * Ap - s_ * Aq, p, -1), s_ * Ap + c_ * Aq, q, -1)  # A J
        Rp, Rq = take(A, p, -2), take(A, q, -2)
        A = put(put(A, c_ * Rp - s_ * Rq, p, -2), s_ * Rp + c_ * Rq, q, -2)  # J^T A J
        Vp, Vq = take(V, p, -1), take(V, q, -1)
        V = put(put(V, c_ * Vp - s_ * Vq, p, -1), s_ * Vp + c_ * Vq, q, -1)
        return A, V

    def unfinished(state):
        A, _, sweep = state
        offmax = jnp.max(jnp.where(off, jnp.abs(A), 0.0), axis=(-2, -1))
        return (sweep < JACOBI_SWEEPS) & jnp.any(offmax > tol)

    def sweep(state):
        A, V, k = state
        A, V = jax.lax.fori_loop(0, len(pairs), rotate, (A, V))
        return A, V, k + 1

    A, V, _ = jax.lax.while_loop(unfinished, sweep, (A, V, jnp.int32(0)))
    return jnp.diagonal(A, axis1=-2, axis2=-1), V
