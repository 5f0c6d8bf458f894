"""Ranking metrics (jaxboost.ranking) against scikit-learn, query by query."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxboost.ranking import group_index, mean_average_precision, ndcg
from sklearn.metrics import average_precision_score, ndcg_score


def _queries(seed=0, n_q=25):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 15, n_q)
    ids = rng.permutation(np.repeat(np.arange(n_q), sizes))  # rows of a query scattered
    y = rng.integers(0, 4, ids.shape[0]).astype(np.float32)
    for q in range(n_q):  # every query has a relevant row (sklearn scores those 0)
        rows = np.flatnonzero(ids == q)
        if not (y[rows] > 0).any():
            y[rows[0]] = 2.0
    pred = rng.normal(size=ids.shape[0]).astype(np.float32)  # no ties
    return ids, y, pred


@pytest.mark.parametrize("k", [None, 1, 3, 10])
@pytest.mark.parametrize("gain", ["linear", "exponential"])
def test_ndcg_matches_sklearn_per_query(k, gain):
    ids, y, pred = _queries()
    idx = jnp.asarray(group_index(ids, ids.shape[0]))
    got = float(
        jax.jit(lambda a, b: ndcg(a, b, idx, k, gain=gain))(jnp.asarray(y), jnp.asarray(pred))
    )
    scores = []
    for q in np.unique(ids):
        rows = np.flatnonzero(ids == q)
        rel = y[rows] if gain == "linear" else 2.0 ** y[rows] - 1.0  # gain as relevance
        scores.append(ndcg_score(rel[None], pred[rows][None], k=k, ignore_ties=True))
    assert got == pytest.approx(np.mean(scores), abs=1e-5)


def test_map_matches_sklearn_average_precision_and_a_direct_count():
    ids, y, pred = _queries(seed=1)
    idx = jnp.asarray(group_index(ids, ids.shape[0]))
    got = float(mean_average_precision(jnp.asarray(y), jnp.asarray(pred), idx))
    want = np.mean(
        [average_precision_score(y[ids == q] > 0, pred[ids == q]) for q in np.unique(ids)]
    )
    assert got == pytest.approx(want, abs=1e-5)
    # @k, counted directly: precision at each relevant rank within the top k.
    k = 3
    aps = []
    for q in np.unique(ids):
        rel = y[ids == q][np.argsort(-pred[ids == q], kind="stable")] > 0
        hits, total = 0, 0.0
        for i, r in enumerate(rel[:k]):
            if r:
                hits += 1
                total += hits / (i + 1)
        aps.append(total / min(k, rel.sum()))
    got_k = float(mean_average_precision(jnp.asarray(y), jnp.asarray(pred), idx, k))
    assert got_k == pytest.approx(np.mean(aps), abs=1e-5)


def test_queries_without_relevant_rows_score_one_and_query_weights():
    y = jnp.array([0.0, 0.0, 2.0, 0.0])
    pred = jnp.array([0.3, 0.1, 0.2, 0.9])  # query 1 ranks its relevant row last
    idx = jnp.asarray(group_index(np.array([0, 0, 1, 1]), 4))
    # query 0: no relevant row -> 1; query 1: (3 / log2 3) / 3
    q1 = 1.0 / np.log2(3.0)
    assert float(ndcg(y, pred, idx)) == pytest.approx((1.0 + q1) / 2, rel=1e-6)
    assert float(ndcg(y, pred, idx, query_weight=jnp.array([1.0, 3.0]))) == pytest.approx(
        (1.0 + 3 * q1) / 4, rel=1e-6
    )
    assert float(mean_average_precision(y, pred, idx)) == pytest.approx((1.0 + 0.5) / 2)
    with pytest.raises(ValueError, match="gain"):
        ndcg(y, pred, idx, gain="log")


@pytest.mark.parametrize("k", [None, 1, 3, 10])
def test_metrics_over_size_buckets_equal_one_query_index(k):
    """Training's evaluation sets hold their queries in size buckets
    (``groups.group_buckets``) and rank only the top k positions when a cut-off allows
    (``lax.top_k``): NDCG and MAP equal those of one padded index and a full sort, on
    queries of 1-40 rows with tied scores (and -0.0 against 0.0)."""
    from jaxboost.ranking import group_index, mean_average_precision, ndcg

    from jaxboost.engine.groups import group_buckets

    rng = np.random.default_rng(0 if k is None else k)
    sizes = rng.integers(1, 41, 30)
    ids = rng.permutation(np.repeat(np.arange(30), sizes))
    n = ids.size
    y = jnp.asarray(rng.integers(0, 4, n).astype(np.float32))
    f = np.round(rng.normal(size=n), 1).astype(np.float32)
    f[:4] = [0.0, -0.0, -0.0, 0.0]
    f = jnp.asarray(f)
    one = jnp.asarray(group_index(ids, n))
    buckets = tuple(jnp.asarray(b) for b in group_buckets(ids, n))
    assert len(buckets) > 1
    for fn in (ndcg, mean_average_precision):
        np.testing.assert_allclose(fn(y, f, buckets, k), fn(y, f, one, k), rtol=1e-6)
