"""K x K linear algebra without LAPACK calls in the round (``engine.smallmat``).

``multi_output_tree`` with the full Hessian hung for 6 or more outputs on a 2-core
machine: the vector leaf solves called LAPACK's batched Cholesky and triangular solves
(three independent calls per level), each of which blocks its thread of XLA's pool
until tasks it queued on that pool have run; with as many such calls running as the
pool has threads, none ever ran (``hessian="clip"`` fits in three Python threads too,
by LAPACK's ``eigh``). The factors, solves and eigendecompositions are now plain array
operations, checked here against NumPy's, and the compiled round holds no LAPACK call.
"""

import re
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxboost
import objectives
from jaxboost.engine import autodiff, smallmat
from jaxboost.engine.autodiff import apply_hessian_policy, not_psd
from jaxboost.engine.split import MAX_CONDITION

sys.path.insert(0, str(Path(__file__).parent))
from test_memory import compiled_round  # noqa: E402

# K = 1..4 are written out entry by entry, larger K take the loop over columns.
KS = [1, 2, 3, smallmat.UNROLL_MAX, smallmat.UNROLL_MAX + 1, 9]


def spd(rng, n, K, shift=0.1):
    M = rng.normal(size=(n, K, K))
    return M @ np.swapaxes(M, -1, -2) + shift * np.eye(K)


@pytest.mark.parametrize("K", KS)
def test_cholesky_and_solve_equal_numpy(K):
    rng = np.random.default_rng(K)
    A = spd(rng, 40, K)
    b = rng.normal(size=(40, K))
    with jax.enable_x64(True):
        L = jax.jit(smallmat.cholesky)(jnp.asarray(A))
        x = jax.jit(smallmat.cho_solve)(L, jnp.asarray(b))
        L, x = np.asarray(L), np.asarray(x)
    np.testing.assert_allclose(L, np.linalg.cholesky(A), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(x, np.linalg.solve(A, b[..., None])[..., 0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("K", KS)
def test_cholesky_of_a_matrix_without_one_is_nan(K):
    """As LAPACK's potrf: a pivot <= 0 (indefinite, or singular: exactly 0) or a NaN
    entry gives a factor of NaN; the other matrices of the batch are unaffected."""
    rng = np.random.default_rng(10 + K)
    A = spd(rng, 4, K)
    Q = np.linalg.qr(rng.normal(size=(K, K)))[0]
    A[0] = (Q * np.linspace(-0.5, 2.0, K)) @ Q.T  # one negative eigenvalue
    A[1] = A[1] * (np.arange(K) != K // 2)  # row and column K // 2 zero: a pivot of 0
    A[2, 0, 0] = np.nan
    with jax.enable_x64(True):
        L = np.asarray(jax.jit(smallmat.cholesky)(jnp.asarray(A)))
    assert np.isnan(L[0]).all()
    assert np.isnan(L[1]).all()
    assert np.isnan(L[2]).all()
    np.testing.assert_allclose(L[3], np.linalg.cholesky(A[3]), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("K", [3, 5, 9])
def test_not_psd_agrees_with_the_eigenvalues(K):
    """Smallest eigenvalue -1e-3 (not PSD) or -1e-7, 0, +1e-3 (PSD within ``PSD_TOL``)
    of matrices of size ~1, as NumPy's ``eigvalsh`` says; a softmax Hessian (singular,
    in float32) and the zero matrix are PSD."""
    rng = np.random.default_rng(K)
    lows = [-1e-3, -1e-7, 0.0, 1e-3]
    mats = []
    for lo in lows:
        Q = np.linalg.qr(rng.normal(size=(K, K)))[0]
        lam = np.concatenate([[lo], rng.uniform(0.2, 1.0, size=K - 1)])
        mats.append((Q * lam) @ Q.T)
    p = np.exp(rng.normal(size=K))
    p /= p.sum()
    mats += [np.diag(p) - np.outer(p, p), np.zeros((K, K))]
    h = jnp.asarray(np.stack(mats), jnp.float32)
    assert np.asarray(jax.jit(not_psd)(h)).tolist() == [True, False, False, False, False, False]


@pytest.mark.parametrize("K", [2, 3, 6, 9])
def test_eigh_equals_numpy(K):
    """Jacobi eigendecomposition: ``V diag(lam) V^T`` rebuilds ``A``, ``V`` is
    orthogonal, the eigenvalues are NumPy's; diagonal, all-ones and zero matrices too."""
    rng = np.random.default_rng(K)
    M = rng.normal(size=(30, K, K))
    A = M + np.swapaxes(M, -1, -2)
    A[0], A[1], A[2] = np.diag(np.arange(K, 0, -1.0)), np.ones((K, K)), 0.0
    with jax.enable_x64(True):
        lam, V = (np.asarray(v) for v in jax.jit(smallmat.eigh)(jnp.asarray(A)))
    np.testing.assert_allclose(np.sort(lam, -1), np.linalg.eigvalsh(A), atol=1e-12)
    np.testing.assert_allclose(np.einsum("nik,nk,njk->nij", V, lam, V), A, atol=1e-12)
    np.testing.assert_allclose(
        np.einsum("nki,nkj->nij", V, V), np.broadcast_to(np.eye(K), A.shape), atol=1e-12
    )


def test_clip_raises_the_eigenvalues_to_the_floor():
    """``hessian="clip"`` on ``K x K`` Hessians: eigenvalues below the floor raised to it,
    the eigenvectors kept (float32, as the rounds compute it)."""
    rng = np.random.default_rng(0)
    M = rng.normal(size=(50, 5, 5))
    h = (M + np.swapaxes(M, -1, -2)).astype(np.float32)
    out = np.asarray(
        jax.jit(lambda h: apply_hessian_policy(None, None, None, h, "clip", 0.25))(jnp.asarray(h)),
        np.float64,
    )
    lam, V = np.linalg.eigh(h.astype(np.float64))
    expect = np.einsum("nik,nk,njk->nij", V, np.maximum(lam, 0.25), V)
    np.testing.assert_allclose(out, expect, atol=2e-5)


@pytest.mark.parametrize("hessian", ["exact", "clip"])
def test_the_full_hessian_round_holds_no_lapack_call(hessian):
    """The compiled round of a 6-class multi-output tree with the full Hessian calls no
    LAPACK routine (before: ``lapack_dpotrf_ffi`` and ``lapack_dtrsm_ffi`` for the
    leaves, ``lapack_ssyevd_ffi`` for ``not_psd`` and the ``clip`` policy: the calls that
    deadlocked)."""
    c = compiled_round(
        objectives.softmax(n_classes=6), 256, 4, 6, multi_output_tree=True, hessian=hessian
    )
    targets = set(re.findall(r'custom_call_target="([^"]+)"', c.as_text()))
    assert not [t for t in targets if "lapack" in t], targets


def test_six_class_full_hessian_leaves_are_damped_newton_steps():
    """Six classes, ``multi_output_tree`` with the full Hessian (hung before): every leaf
    is the damped Newton step of its rows. A softmax Hessian sum is singular (its rows
    add up to 0), so ``split.vector_weight_score`` damps it with
    ``mu = tr|H| / (K MAX_CONDITION)`` (the Gershgorin bound of a softmax Hessian is 0):
    ``w = -eta (H + (lambda + mu) I)^-1 G``."""
    rng = np.random.default_rng(6)
    K, n = 6, 600
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = (np.floor(3 * (X[:, 0] > 0) + 2 * np.tanh(X[:, 1]) + 2) % K).astype(np.int32)
    lam, eta = 1.5, 0.5
    bst = jaxboost.train(
        "softmax",
        X,
        y,
        n_rounds=1,
        max_depth=2,
        multi_strategy="multi_output_tree",
        multi_hessian="full",
        reg_lambda=lam,
        learning_rate=eta,
        verbose=False,
    )
    gh = bst.grad_hess(X, y, iteration=0)
    g, h = np.asarray(gh.g, np.float64), np.asarray(gh.h, np.float64)
    assert h.shape == (n, K, K)
    leaf = bst.predict_leaf(X)[:, 0]
    assert len(np.unique(leaf)) >= 3
    for node in np.unique(leaf):
        G, H = g[leaf == node].sum(0), h[leaf == node].sum(0)
        mu = np.abs(H).trace() / (K * MAX_CONDITION)
        expect = -eta * np.linalg.solve(H + (lam + mu) * np.eye(K), G)
        np.testing.assert_allclose(bst.ensemble.value[0, node], expect, rtol=2e-5, atol=1e-6)


# --- a user's loss that calls LAPACK --------------------------------------------------------


def gaussian_with_solve(y, f):
    """A loss whose value solves a 3 x 3 system and takes a log-determinant (LAPACK's
    LU on the CPU, twice, independent of each other)."""
    A = 2.0 * jnp.eye(3) + jnp.outer(jnp.tanh(f), jnp.tanh(f))
    r = y - f
    return 0.5 * r @ jnp.linalg.solve(A, r) + 0.5 * jnp.linalg.slogdet(A)[1]


def assert_small_lapack_batches(text):
    """Every LAPACK call of a compiled program's text (there is one at least) is an LU
    or a triangular solve whose batch's work, at most size * max(m, n) for these, stays
    below jaxlib's task threshold with ``map_rows``' margin of 4."""
    calls = re.findall(r"= \(?f32\[([\d,]+)\][^\n]*custom_call_target=\"(lapack_\w+)\"", text)
    assert calls, "the program should call LAPACK"
    for dims, target in calls:
        shape = [int(d) for d in dims.split(",")]
        assert target in ("lapack_sgetrf_ffi", "lapack_strsm_ffi"), target
        work = int(np.prod(shape)) * max(shape[-2:])
        assert work < autodiff.LAPACK_TASK_WORK / 4, (target, shape)


def test_a_loss_that_calls_lapack_gets_small_batches():
    """Such a loss over 20,000 rows hung ``train`` on 2 cores (two batched LU calls,
    each blocking a pool thread for its tasks). Its rows are now mapped in chunks that
    no LAPACK call splits into tasks (``autodiff.map_rows``): every LAPACK call of the
    compiled g/h program has a batch whose work stays below ``LAPACK_TASK_WORK``, and
    g and h equal the plain vmapped ones."""
    n, K = 1000, 3
    rng = np.random.default_rng(0)
    y = jnp.asarray(rng.normal(size=(n, K)), jnp.float32)
    f = jnp.asarray(0.3 * rng.normal(size=(n, K)), jnp.float32)
    fn = jax.jit(lambda y, f: autodiff.grad_hess(gaussian_with_solve, y, f))
    text = fn.lower(y, f).compile().as_text()
    # and a whole round (g, h, and the loss values its checks read), 4,096 rows
    text += compiled_round(gaussian_with_solve, 4096, 4, K, multi_output_tree=True).as_text()
    assert_small_lapack_batches(text)
    g, h = fn(y, f)
    row = autodiff._row_grad_hess(gaussian_with_solve, K)
    g0, h0 = jax.jit(jax.vmap(row))(y, f)  # 1,000 rows: small enough to run inline
    np.testing.assert_allclose(np.asarray(g), np.asarray(g0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(h), np.asarray(h0), rtol=1e-6, atol=1e-6)


def test_lapack_chunks_shrink_under_an_outer_vmap():
    """The staged evaluation of a chunk's rounds vmaps the loss over the stages: each
    LAPACK call then batches every stage's chunk, so the chunks shrink by the stages'
    number and every call still stays below ``LAPACK_TASK_WORK``."""
    n, K, stages = 1000, 3, 10
    rng = np.random.default_rng(1)
    y = jnp.asarray(rng.normal(size=(n, K)), jnp.float32)
    f = jnp.asarray(0.3 * rng.normal(size=(stages, n, K)), jnp.float32)
    fn = jax.jit(jax.vmap(lambda f: autodiff.map_rows(gaussian_with_solve, y, f)))
    text = fn.lower(f).compile().as_text()
    assert_small_lapack_batches(text)
    ref = jax.jit(jax.vmap(jax.vmap(gaussian_with_solve), in_axes=(None, 0)))(y, f[:1])
    np.testing.assert_allclose(np.asarray(fn(f))[:1], np.asarray(ref), rtol=1e-6, atol=1e-6)


def correlated_group_loss(y, p, mask):
    """A group loss with a solve: 0.5 r^T A^-1 r over the group's rows, A = I + c 11^T
    with c = 0.1 (1 + m^2) from the group's mean label m (a matrix per group)."""
    S = y.shape[0]
    r = jnp.where(mask, y - p, 0.0)
    c = 0.1 * (1.0 + jnp.mean(y) ** 2)
    return 0.5 * r @ jnp.linalg.solve(jnp.eye(S) + c * jnp.ones((S, S)), r)


def test_a_group_loss_that_calls_lapack_gets_small_batches():
    """Group losses go through ``map_rows`` by groups: 3,000 groups of 4 rows, every
    batched LAPACK call of the g/h program has a small batch (an LU of 3,000 matrices
    before), and g, h equal closed-form ones: g = -A^-1 r per group, h = diag(A^-1)."""
    from jaxboost.engine.groups import group_grad_hess, group_index

    G, S = 3000, 4
    n = G * S
    rng = np.random.default_rng(2)
    y = jnp.asarray(rng.normal(size=n), jnp.float32)
    p = jnp.asarray(0.1 * rng.normal(size=n), jnp.float32)
    idx = group_index(np.repeat(np.arange(G), S), n)
    fn = jax.jit(lambda y, p: group_grad_hess(correlated_group_loss, y, p, None, idx))
    text = fn.lower(y, p).compile().as_text()
    assert_small_lapack_batches(text)
    g, h = (np.asarray(v, np.float64) for v in fn(y, p))
    yg = np.asarray(y, np.float64).reshape(G, S)
    c = 0.1 * (1.0 + yg.mean(axis=1) ** 2)
    Ainv = np.linalg.inv(np.eye(S) + c[:, None, None] * np.ones((S, S)))
    r = yg - np.asarray(p, np.float64).reshape(G, S)
    np.testing.assert_allclose(g, -np.einsum("gij,gj->gi", Ainv, r).ravel(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, np.diagonal(Ainv, axis1=1, axis2=2).ravel(), rtol=1e-5)
