"""Group losses (jaxboost.engine.groups): exact g and Hessian diagonals per group, Hutchinson's
estimate above the exact size, and training with train(..., group=ids)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxboost
from jaxboost.engine.groups import (
    GROUP_BUCKET_MIN,
    HUTCHINSON_PROBES,
    group_buckets,
    group_grad_hess,
    group_index,
)
from jaxboost.errors import DataError


def ranknet(y, f, mask):
    """Pairwise logistic loss over the pairs (i, j) of a group with y_i > y_j."""
    pair = mask[:, None] & mask[None, :] & (y[:, None] > y[None, :])
    return jnp.sum(jnp.where(pair, jnp.logaddexp(0.0, -(f[:, None] - f[None, :])), 0.0))


def _groups(sizes, seed=0):
    rng = np.random.default_rng(seed)
    ids = np.repeat(np.arange(len(sizes)), sizes)
    perm = rng.permutation(ids.shape[0])  # rows of a group need not be contiguous
    ids = ids[perm]
    y = rng.integers(0, 4, ids.shape[0]).astype(np.float32)
    f = rng.normal(size=ids.shape[0]).astype(np.float32)
    return ids, y, f


_hess = jax.jit(lambda y, f, m: jax.hessian(lambda p: ranknet(y, p, m))(f))


def _per_group_reference(ids, y, f):
    r"""g and the Hessian diagonal of each unpadded group in float64 closed form: with
    :math:`p_{ij} = 1 / (1 + e^{f_i - f_j})` over the pairs :math:`y_i > y_j`,
    :math:`g_i = -\sum_j p_{ij} + \sum_j p_{ji}` and :math:`h_i = \sum p (1 - p)` over the
    pairs holding i (no compiled program per group size)."""
    g = np.zeros(f.shape, np.float64)
    h = np.zeros(f.shape, np.float64)
    for q in np.unique(ids):
        rows = np.flatnonzero(ids == q)
        yy, ff = y[rows].astype(np.float64), f[rows].astype(np.float64)
        pair = yy[:, None] > yy[None, :]
        p = np.where(pair, 1.0 / (1.0 + np.exp(ff[:, None] - ff[None, :])), 0.0)
        c = p * (1.0 - p)
        g[rows] = -p.sum(axis=1) + p.sum(axis=0)
        h[rows] = c.sum(axis=1) + c.sum(axis=0)
    return g, h


def test_exact_diagonal_equals_the_hessian_of_each_group():
    ids, y, f = _groups([3, 7, 1, 12, 5])
    idx = group_index(ids, ids.shape[0])
    assert idx.shape == (5, 12)
    g, h = group_grad_hess(ranknet, jnp.asarray(y), jnp.asarray(f), None, jnp.asarray(idx))
    g_ref, h_ref = _per_group_reference(ids, y, f)
    np.testing.assert_allclose(g, g_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, h_ref, rtol=1e-5, atol=1e-6)
    rows = np.flatnonzero(ids == 3)  # the reference is jax.hessian's diagonal too
    full = _hess(jnp.asarray(y[rows]), jnp.asarray(f[rows]), jnp.ones(rows.shape[0], bool))
    np.testing.assert_allclose(np.diagonal(full), h_ref[rows], rtol=1e-5, atol=1e-6)
    # weights multiply each row's g and h
    w = np.random.default_rng(1).random(ids.shape[0]).astype(np.float32)
    gw, hw = group_grad_hess(
        ranknet, jnp.asarray(y), jnp.asarray(f), jnp.asarray(w), jnp.asarray(idx)
    )
    np.testing.assert_allclose(gw, g_ref * w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hw, h_ref * w, rtol=1e-5, atol=1e-6)


def test_groups_of_many_sizes_are_taken_in_size_buckets():
    """Groups of 1-40 rows in buckets (up to 8, 9-16, 17-32, 33-64 rows): each group
    padded to at most twice its size, and g and the exact diagonal the same as with
    every group padded to the largest (and as the closed forms per group)."""
    sizes = [3, 7, 1, 12, 5, 40, 17, 9, 2, 33, 16, 8]
    ids, y, f = _groups(sizes, seed=2)
    n = ids.shape[0]
    buckets = group_buckets(ids, n)
    assert [b.shape for b in buckets] == [(6, 8), (3, 16), (1, 17), (2, 40)]
    for b in buckets:
        real = (b < n).sum(axis=1)
        assert np.all((b.shape[1] <= 2 * real) | (b.shape[1] <= GROUP_BUCKET_MIN))
    # every row in exactly one bucket, once
    rows = np.concatenate([b[b < n] for b in buckets])
    np.testing.assert_array_equal(np.sort(rows), np.arange(n))
    args = (jnp.asarray(y), jnp.asarray(f), None)
    g, h = group_grad_hess(ranknet, *args, tuple(jnp.asarray(b) for b in buckets))
    g_one, h_one = group_grad_hess(ranknet, *args, jnp.asarray(group_index(ids, n)))
    # (sums over a padded row: the padding's length moves the last bit)
    np.testing.assert_allclose(g, g_one, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, h_one, rtol=1e-5, atol=1e-6)
    g_ref, h_ref = _per_group_reference(ids, y, f)
    np.testing.assert_allclose(g, g_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, h_ref, rtol=1e-5, atol=1e-6)


def test_hutchinson_estimate_is_within_5_percent_on_average():
    ids, y, f = _groups([20] * 30, seed=3)
    idx = jnp.asarray(group_index(ids, ids.shape[0]))
    _, h_ref = _per_group_reference(ids, y, f)
    _, h_est = group_grad_hess(
        ranknet,
        jnp.asarray(y),
        jnp.asarray(f),
        None,
        idx,
        jax.random.key(0),
        exact_max=0,
        probes=HUTCHINSON_PROBES,
    )
    rel = np.abs(np.asarray(h_est) - h_ref) / np.abs(h_ref)
    print(f"\nHutchinson, {HUTCHINSON_PROBES} probes: mean relative error {rel.mean():.4f}")
    assert rel.mean() < 0.05, rel.mean()
    # unbiased: the mean over many probes converges (and one probe is far off)
    _, h_one = group_grad_hess(
        ranknet, jnp.asarray(y), jnp.asarray(f), None, idx, jax.random.key(0), exact_max=0, probes=1
    )
    assert (np.abs(np.asarray(h_one) - h_ref) / np.abs(h_ref)).mean() > 0.1
    with pytest.raises(ValueError, match="PRNG key"):
        group_grad_hess(ranknet, jnp.asarray(y), jnp.asarray(f), None, idx, exact_max=0)


def _ranking_data(seed, n_q, per, noise):
    """Queries of ``per`` rows; graded relevance 0..3 from feature 0 plus noise."""
    rng = np.random.default_rng(seed)
    ids = np.repeat(np.arange(n_q), per)
    X = rng.normal(size=(n_q * per, 4)).astype(np.float32)
    y = np.clip(np.round(X[:, 0] + noise * rng.normal(size=ids.shape[0]) + 1.5), 0, 3)
    return ids, X, y.astype(np.float32)


def test_group_loss_trains_and_ranks():
    n_q = 60
    ids, X, y = _ranking_data(0, n_q, 8, 0.3)

    def total(bst):
        f = jnp.asarray(bst.predict(X, output_margin=True))
        idx = jnp.asarray(group_index(ids, ids.shape[0]))
        m = idx < ids.shape[0]
        s = jnp.where(m, idx, 0)
        return float(jnp.sum(jax.vmap(ranknet)(jnp.asarray(y)[s], f[s], m)))

    kw = dict(group=ids, max_depth=3, learning_rate=0.3)
    b0 = jaxboost.train(ranknet, X, y, n_rounds=1, **kw)
    b1 = jaxboost.train(ranknet, X, y, n_rounds=20, **kw)
    assert b0.base_margin == 0.0
    # The summed pairwise loss falls with the rounds (0 rounds: ln 2 per pair).
    assert total(b1) < 0.7 * total(b0)
    # Within a query, a higher label gets a higher score most of the time.
    f = b1.predict(X, output_margin=True)
    agree = [
        np.mean(np.sign(f[i] - f[j]) == np.sign(y[i] - y[j]))
        for q in range(n_q)
        for i in np.flatnonzero(ids == q)
        for j in np.flatnonzero(ids == q)
        if y[i] > y[j]
    ]
    assert np.mean(agree) > 0.8


def test_group_argument_errors():
    X = np.zeros((4, 1), np.float32)
    y = np.zeros(4, np.float32)
    with pytest.raises(DataError, match="one id per row"):
        jaxboost.train(ranknet, X, y, group=[0, 0, 1])
    with pytest.raises(TypeError, match="group loss"):
        jaxboost.train("logistic", X, y, group=[0, 0, 1, 1])
    with pytest.raises(ValueError, match="pass eval_metric"):
        jaxboost.train(ranknet, X, y, group=[0, 0, 1, 1], eval_set=[(X, y)])
    with pytest.raises(ValueError, match="as eval_group"):
        jaxboost.train(ranknet, X, y, group=[0, 0, 1, 1], eval_set=[(X, y)], eval_metric="ndcg@2")
    with pytest.raises(TypeError, match="eval_group must be"):
        jaxboost.train(
            ranknet,
            X,
            y,
            group=[0, 0, 1, 1],
            eval_set=[(X, y)],
            eval_metric="ndcg@2",
            eval_group=[0, 0, 1, 1],
        )
    with pytest.raises(jaxboost.LossError, match="scalar per group"):
        jaxboost.train(lambda y, f, m: f, X, y, group=[0, 0, 1, 1])


def test_a_group_loss_with_a_nan_value_is_named_unless_it_opts_out():
    """A group loss whose value is NaN where its gradient is finite (the value's
    ``log`` of a negative number, the gradient's term 0) is stopped at round 0 with
    its name; a ``GroupObjective(value_check=False)`` states its value needs no check,
    and is not evaluated."""
    import objectives

    def nan_valued(y, f, mask):
        return ranknet(y, f, mask) + 0.0 * jnp.log(-1.0 - jnp.sum(jnp.abs(f)))

    ids, X, y = _ranking_data(2, 6, 5, 0.5)
    with pytest.raises(jaxboost.LossError, match="nan_valued returned NaN or an infinite"):
        jaxboost.train(nan_valued, X, y, group=ids, n_rounds=2)
    unchecked = objectives.GroupObjective("nan_valued", nan_valued, value_check=False)
    bst = jaxboost.train(unchecked, X, y, group=ids, n_rounds=2, eval_metric="ndcg@3")
    ranked = jaxboost.train(ranknet, X, y, group=ids, n_rounds=2, eval_metric="ndcg@3")
    np.testing.assert_array_equal(
        bst.predict(X, output_margin=True), ranked.predict(X, output_margin=True)
    )


def test_ndcg_and_map_during_training_and_early_stopping():
    """Held-out queries scored every round on the device; the history equals
    jaxboost.ranking on the staged margins, and early stopping keeps the best round."""
    from jaxboost.ranking import group_index as gi
    from jaxboost.ranking import mean_average_precision, ndcg

    ids, X, y = _ranking_data(5, 80, 6, 0.8)
    tr, te = ids < 60, ids >= 60
    bst = jaxboost.train(
        ranknet,
        X[tr],
        y[tr],
        group=ids[tr],
        n_rounds=40,
        max_depth=3,
        learning_rate=0.5,
        eval_set=[(X[te], y[te])],
        eval_group=[ids[te]],
        eval_metric=["map@3", "ndcg@5"],
        early_stopping_rounds=5,
    )
    hist = bst.history["validation_0"]
    assert bst.best_iteration == int(np.argmax(hist["ndcg@5"]))
    assert len(hist["ndcg@5"]) == bst.best_iteration + 1 + 5 < 40  # it stopped
    idx = jnp.asarray(gi(ids[te], int(te.sum())))
    yt = jnp.asarray(y[te])
    for r in (0, bst.best_iteration):
        f = jnp.asarray(bst[: r + 1].predict(X[te], output_margin=True))
        assert hist["ndcg@5"][r] == pytest.approx(float(ndcg(yt, f, idx, 5)), abs=1e-6)
        assert hist["map@3"][r] == pytest.approx(
            float(mean_average_precision(yt, f, idx, 3)), abs=1e-6
        )
    assert hist["ndcg@5"][bst.best_iteration] > 0.8


def test_group_sizes_as_xgboost_takes_them():
    """``group=`` and ``eval_group`` also take the sizes of contiguous groups (XGBoost's
    ``set_group``): the model and its evaluation history are those of the ids they
    stand for; sizes that do not sum to the rows are refused, naming both readings."""
    rng = np.random.default_rng(3)
    sizes = np.array([5, 9, 2, 7, 7])
    n = int(sizes.sum())
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = rng.integers(0, 3, n).astype(np.float32)
    ids = np.repeat(np.arange(sizes.size), sizes)
    kw = dict(n_rounds=3, max_depth=2, eval_set=[(X, y)], eval_metric="ndcg@3", verbose=False)
    by_ids = jaxboost.train(ranknet, X, y, group=ids, eval_group=[ids], **kw)
    by_sizes = jaxboost.train(ranknet, X, y, group=sizes, eval_group=[sizes], **kw)
    np.testing.assert_array_equal(by_sizes.predict(X), by_ids.predict(X))
    assert by_sizes.history == by_ids.history
    with pytest.raises(DataError, match=f"summing to {n}.*summing to {n - 1}"):
        jaxboost.train(ranknet, X, y, group=sizes - np.eye(5, dtype=int)[0], **kw)
    with pytest.raises(DataError, match=f"sizes of contiguous queries summing to {n}"):
        jaxboost.train(ranknet, X, y, group=ids, eval_group=[sizes[:-1]], **kw)
