"""``jaxboost.sklearn.JaxBoostRanker``: learning to rank through scikit-learn's
interface, as XGBoost's ``XGBRanker`` (``qid``) and LightGBM's ``LGBMRanker``
(``group`` sizes)."""

import pickle

import numpy as np
import pytest

pytest.importorskip("sklearn")

from jaxboost.sklearn import JaxBoostRanker  # noqa: E402

import jaxboost  # noqa: E402

KW = dict(n_estimators=10, max_depth=3, learning_rate=0.3)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    qid = np.repeat(np.arange(60), 8)
    X = rng.normal(size=(480, 4)).astype(np.float32)
    y = np.clip(np.floor(X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=480) * 0.5 + 1), 0, 3)
    return X, y.astype(np.float32), qid


def test_ranker_is_train_with_groups(data):
    X, y, qid = data
    w = np.random.default_rng(1).uniform(0.5, 2.0, 480).astype(np.float32)
    ranker = JaxBoostRanker(**KW).fit(X, y, qid=qid, sample_weight=w)
    bst = jaxboost.train(
        "lambdarank",
        X,
        y,
        group=qid,
        sample_weight=w,
        n_rounds=10,
        max_depth=3,
        learning_rate=0.3,
        verbose=False,
    )
    np.testing.assert_array_equal(ranker.predict(X), bst.predict(X, output_margin=True))
    sizes = JaxBoostRanker(**KW).fit(X, y, group=np.full(60, 8), sample_weight=w)
    np.testing.assert_array_equal(sizes.predict(X), ranker.predict(X))
    again = pickle.loads(pickle.dumps(ranker))
    np.testing.assert_array_equal(again.predict(X), ranker.predict(X))
    listnet = JaxBoostRanker(objective="listnet", **KW).fit(X, y, qid=qid)
    assert listnet.booster_.objective.name == "listnet"


def test_score_is_the_mean_ndcg(data):
    """NDCG of each whole query (gain 2**y - 1, discount 1 / log2(rank + 1)), averaged;
    a query whose labels are all 0 counts 1."""
    X, y, qid = data
    ranker = JaxBoostRanker(**KW).fit(X, y, qid=qid)
    s = ranker.predict(X).astype(np.float64)
    per_query = []
    for q in range(60):
        rows = qid == q
        gains = 2.0 ** y[rows] - 1.0
        disc = 1.0 / np.log2(np.arange(2, rows.sum() + 2))
        dcg = np.sum(gains[np.argsort(-s[rows], kind="stable")] * disc)
        ideal = np.sum(np.sort(gains)[::-1] * disc)
        per_query.append(dcg / ideal if ideal > 0 else 1.0)
    assert ranker.score(X, y, qid=qid) == pytest.approx(np.mean(per_query), rel=1e-5)
    assert ranker.score(X, y, group=np.full(60, 8)) == ranker.score(X, y, qid=qid)


def test_eval_sets_and_errors(data):
    X, y, qid = data
    tr, te = qid < 40, qid >= 40
    ranker = JaxBoostRanker(**KW).fit(
        X[tr], y[tr], qid=qid[tr], eval_set=[(X[te], y[te])], eval_qid=[qid[te]]
    )
    curve = ranker.evals_result()["validation_0"]["ndcg@10"]
    assert len(curve) == 10 and curve[-1] > curve[0]
    with pytest.raises(TypeError, match="give qid or group, not both"):
        JaxBoostRanker(**KW).fit(X, y, qid=qid, group=np.full(60, 8))
    with pytest.raises(ValueError, match="eval_set needs the queries of each set"):
        JaxBoostRanker(**KW).fit(X, y, qid=qid, eval_set=[(X, y)])
    with pytest.raises(TypeError, match="fit needs the queries: qid="):
        JaxBoostRanker(**KW).fit(X, y)
    with pytest.raises(TypeError, match="score needs the queries"):
        ranker.score(X, y)
