"""``Booster.grad_hess``: the g, h and margins the trees of any round see.

Checked against closed forms (squared error, logistic, softmax) at the margins of
``booster[:k]``, against central differences of a user loss, and against the trees
themselves (a root's cover is the sum of the h it was grown on).
"""

import jax.numpy as jnp
import numpy as np
import pytest

import jaxboost
import objectives
from jaxboost import DataError
from jaxboost.io import dumps, loads

ROUNDS = 4
COMMON = dict(n_rounds=ROUNDS, max_depth=3)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(240, 4)).astype(np.float32)
    X[rng.random(240) < 0.1, 2] = np.nan
    yr = (X[:, 0] - 0.5 * X[:, 1] + 0.3 * rng.normal(size=240)).astype(np.float32)
    yb = (yr > 0).astype(np.float32)
    yk = np.digitize(yr, [-0.7, 0.7]).astype(np.float32)
    w = rng.uniform(0.2, 2.0, 240).astype(np.float32)
    return X, yr, yb, yk, w


def margins(bst, X, k):
    return bst[:k].predict(X, output_margin=True)


def test_squared_is_residual_and_one(data):
    X, yr, _, _, w = data
    bst = jaxboost.train(objectives.squared, X, yr, **COMMON)
    for k in (0, 2, ROUNDS):
        g, h, m = bst.grad_hess(X, yr, iteration=k)
        assert g.shape == h.shape == m.shape == (len(yr),) and g.dtype == np.float32
        np.testing.assert_array_equal(m, margins(bst, X, k))
        np.testing.assert_allclose(g, m - yr, rtol=0, atol=1e-6)
        np.testing.assert_array_equal(h, np.ones_like(h))
        gw, hw, _ = bst.grad_hess(X, yr, iteration=k, sample_weight=w)  # weights scale g, h
        np.testing.assert_allclose(gw, w * (m - yr), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(hw, w, rtol=1e-6)
    # k = 0 is the base margin; the default is the round after the last
    assert np.all(bst.grad_hess(X, yr, iteration=0).margin == np.float32(bst.base_margin))
    np.testing.assert_array_equal(bst.grad_hess(X, yr).margin, bst.predict(X, output_margin=True))


def test_logistic_is_p_minus_y_and_p_one_minus_p(data):
    X, _, yb, _, _ = data
    bst = jaxboost.train(objectives.logistic, X, yb, **COMMON)
    for k in (0, 1, ROUNDS):
        g, h, m = bst.grad_hess(X, yb, iteration=k)
        np.testing.assert_array_equal(m, margins(bst, X, k))
        p = 1.0 / (1.0 + np.exp(-m.astype(np.float64)))
        np.testing.assert_allclose(g, p - yb, rtol=0, atol=1e-6)
        np.testing.assert_allclose(h, p * (1 - p), rtol=1e-5, atol=1e-7)


def test_user_loss_matches_finite_differences(data):
    X, yr, _, _, w = data

    def pseudo_huber(y, pred, *, delta):
        r = (pred - y) / delta
        return delta**2 * (jnp.sqrt(1.0 + r * r) - 1.0)

    def loss64(y, f, delta=0.7):
        return delta**2 * (np.sqrt(1.0 + ((f - y) / delta) ** 2) - 1.0)

    bst = jaxboost.train(pseudo_huber, X, yr, loss_params={"delta": 0.7}, **COMMON)
    k, eps = 3, 1e-4
    g, h, m = bst.grad_hess(X, yr, iteration=k, sample_weight=w)
    f, y = m.astype(np.float64), yr.astype(np.float64)
    g_fd = (loss64(y, f + eps) - loss64(y, f - eps)) / (2 * eps)
    h_fd = (loss64(y, f + eps) - 2 * loss64(y, f) + loss64(y, f - eps)) / eps**2
    np.testing.assert_allclose(g, w * g_fd, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h, w * h_fd, rtol=1e-3, atol=1e-4)


def test_softmax_per_class_diagonal_and_root_covers(data):
    """K trees per round: h is (N, K), the diagonal each class's tree used; each tree's
    root cover (the sum of h in the node) equals the column sum at its round."""
    X, _, _, yk, w = data
    bst = jaxboost.train(objectives.softmax, X, yk, sample_weight=w, **COMMON)
    K = 3
    onehot = np.eye(K)[yk.astype(int)]
    for k in range(ROUNDS + 1):
        g, h, m = bst.grad_hess(X, yk, iteration=k, sample_weight=w)
        assert g.shape == h.shape == m.shape == (len(yk), K)
        np.testing.assert_array_equal(m, margins(bst, X, k))
        p = np.exp(m - m.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(g, w[:, None] * (p - onehot), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(h, w[:, None] * p * (1 - p), rtol=1e-5, atol=1e-6)
        if k < ROUNDS:
            np.testing.assert_allclose(
                bst.ensemble.cover[K * k : K * k + K, 0], h.sum(axis=0, dtype=np.float64), rtol=1e-5
            )


def test_the_models_hessian_policy_and_floor(data, tmp_path):
    X, _, yb, _, _ = data
    # logistic's h = p (1 - p) <= 1/4, so a floor of 0.5 lifts every row to it
    bst = jaxboost.train(objectives.logistic, X, yb, hessian="clip", hessian_floor=0.5, **COMMON)
    assert bst.train_state["hessian"] == "clip" and bst.train_state["hessian_floor"] == 0.5
    for model in (bst, loads(dumps(bst))):  # kept in the model file
        g, h, m = model.grad_hess(X, yb, iteration=2)
        np.testing.assert_array_equal(h, np.full_like(h, 0.5))
        np.testing.assert_allclose(bst.ensemble.cover[2, 0], h.sum(), rtol=1e-6)
    # a model without the training policy (e.g. read from XGBoost) uses the objective's
    bst.train_state = {}
    _, h, m = bst.grad_hess(X, yb, iteration=2)
    p = 1.0 / (1.0 + np.exp(-m.astype(np.float64)))
    np.testing.assert_allclose(h, p * (1 - p), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("multi_hessian,shape", [("full", (3, 3)), ("diagonal", (3,))])
def test_vector_trees_get_the_hessian_they_use(data, multi_hessian, shape):
    X, _, _, yk, _ = data
    bst = jaxboost.train(
        objectives.softmax,
        X,
        yk,
        multi_strategy="multi_output_tree",
        multi_hessian=multi_hessian,
        **COMMON,
    )
    g, h, m = bst.grad_hess(X, yk, iteration=1)
    assert g.shape == m.shape == (len(yk), 3) and h.shape == (len(yk),) + shape
    p = np.exp(m - m.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    full = np.einsum("nk,kl->nkl", p, np.eye(3)) - np.einsum("nk,nl->nkl", p, p)
    want = full if multi_hessian == "full" else p * (1 - p)
    np.testing.assert_allclose(h, want, rtol=1e-5, atol=1e-6)


def test_bad_calls(data):
    X, yr, yb, _, _ = data
    bst = jaxboost.train(objectives.logistic, X, yb, **COMMON)
    for bad in (-1, ROUNDS + 1):
        with pytest.raises(ValueError, match=r"iteration must be in \[0, 4\]"):
            bst.grad_hess(X, yb, iteration=bad)
    for bad in (1.5, True, "2"):
        with pytest.raises(TypeError, match="iteration must be an integer"):
            bst.grad_hess(X, yb, iteration=bad)
    with pytest.raises(DataError, match="different lengths"):
        bst.grad_hess(X, yb[:-1])
    with pytest.raises(DataError, match="logistic needs labels"):
        bst.grad_hess(X, yr)  # labels outside [0, 1]
    with pytest.raises(DataError, match="sample_weight must be >= 0"):
        bst.grad_hess(X, yb, sample_weight=-np.ones(len(yb)))
    with pytest.raises(DataError, match="features"):
        bst.grad_hess(X[:, :3], yb)
    group = np.repeat(np.arange(24), 10)
    rank = jaxboost.train(objectives.listnet, X, yr, group=group, n_rounds=1, max_depth=2)
    with pytest.raises(TypeError, match="group loss"):
        rank.grad_hess(X, yr)
