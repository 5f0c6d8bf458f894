"""Host metrics (issue 15, item 4): NumPy / scikit-learn callables marked with
``jaxboost.metrics.host`` score training on the host, once per round, from one copy of a
chunk's predictions, and drive early stopping like device metrics.

The data and settings are test_training_control.py's (``noisy``, depth 4), so the round
programs are the ones compiled there.
"""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import average_precision_score, f1_score, log_loss, roc_auc_score

import jaxboost
import objectives
from jaxboost import metrics
from jaxboost.engine.round import run_chunk
from jaxboost.errors import MetricError
from jaxboost.sklearn import JaxBoostClassifier
from jaxboost.training import evaluation, loop
from jaxboost.training.evaluation import chunk_margins, chunk_metrics, chunk_responses


@pytest.fixture(scope="module")
def noisy():
    """test_training_control.py's noisy binary problem (same draws)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 6)).astype(np.float32)
    X[rng.random(1200) < 0.05, 3] = np.nan
    y = (X[:, 0] + 1.5 * rng.normal(size=1200) > 0).astype(np.float32)
    w = (rng.random(1200) + 0.5).astype(np.float32)
    return X[:800], y[:800], w[:800], X[800:], y[800:], w[800:]


COMMON = dict(max_depth=4, learning_rate=0.3, verbose=False)
SLOW = dict(COMMON, learning_rate=0.05)  # AP peaks at round 13: stops in the third chunk
AP = metrics.host(average_precision_score, maximize=True)
PATIENCE = 10


def hand_early_stop(curve, patience):
    """(best round, stop round) of a maximised curve, as EarlyStopping rules: the first
    best, and the first round ``patience`` rounds past it."""
    for r in range(len(curve)):
        best = int(np.argmax(curve[:r + 1]))
        if r - best >= patience:
            return best, r
    return int(np.argmax(curve)), len(curve) - 1


def test_average_precision_drives_early_stopping_as_by_hand(noisy):
    X, y, _, Xv, yv, wv = noisy
    bst = jaxboost.train("logistic", X, y, n_rounds=60, **SLOW, eval_set=[(Xv, yv, wv)],
                         eval_metric=["logloss", AP],
                         early_stopping_metric="average_precision_score",
                         early_stopping_rounds=PATIENCE)
    full = jaxboost.train("logistic", X, y, n_rounds=60, **SLOW)
    # by hand: scikit-learn on each round's predictions of the model cut to that round
    hand = np.array([average_precision_score(yv, full[:r + 1].predict(Xv), sample_weight=wv)
                     for r in range(60)])
    best, stop = hand_early_stop(hand, PATIENCE)
    assert best >= 10 and stop >= 20  # not decided in the first chunk
    h = bst.history["validation_0"]
    assert list(h) == ["logloss", "average_precision_score"]
    assert len(h["average_precision_score"]) == stop + 1 == len(h["logloss"])
    np.testing.assert_array_equal(h["average_precision_score"], hand[:stop + 1])
    assert bst.best_iteration == best and bst.best_score == hand[best]
    assert len(bst) == best + 1
    np.testing.assert_array_equal(bst.predict(Xv), full[:best + 1].predict(Xv))
    # the device metric beside it is unchanged
    p = full[:stop + 1].predict(Xv)
    assert h["logloss"][-1] == pytest.approx(log_loss(yv, p, sample_weight=wv), rel=1e-4)


def test_roc_auc_host_metric_equals_device_auc_and_adds_no_device_program(noisy,
                                                                         monkeypatch):
    X, y, _, Xv, yv, wv = noisy
    ev = {"valid": (Xv, yv, wv), "train": (X[:300], y[:300])}
    kw = dict(n_rounds=25, **COMMON, eval_set=ev)
    device = jaxboost.train("logistic", X, y, eval_metric=["auc"], **kw)  # warm
    sizes = (run_chunk._cache_size(), chunk_margins._cache_size(), chunk_metrics._cache_size())
    calls, transfers = [], []
    get = loop.jax.device_get

    def sk_auc(y_, p, sample_weight=None):
        calls.append(p.shape)
        return roc_auc_score(y_, p, sample_weight=sample_weight)

    def counted_get(x):
        if isinstance(x, dict):  # the host metrics' predictions of one chunk and set
            transfers.append(sorted(x))
        return get(x)

    monkeypatch.setattr(loop.jax, "device_get", counted_get)
    both = jaxboost.train("logistic", X, y, **kw,
                          eval_metric=["auc", metrics.host(sk_auc, maximize=True)])
    # the device metrics' programs (and the tree builder) are the same ones
    assert (run_chunk._cache_size(), chunk_margins._cache_size(),
            chunk_metrics._cache_size()) == sizes
    assert chunk_responses._cache_size() >= 1  # the link, in a program of its own
    for name in ("valid", "train"):
        h = both.history[name]
        assert list(h) == ["auc", "sk_auc"] and len(h["sk_auc"]) == 25
        assert h["auc"] == device.history[name]["auc"]  # device values unchanged
        np.testing.assert_allclose(h["sk_auc"], h["auc"], rtol=0, atol=1e-6)
    # one call per round and set, on the set's rows (no padding), and one call per set
    # on the starting predictions before training
    assert calls.count((400,)) == 25 + 1 and calls.count((300,)) == 25 + 1
    # one transfer per chunk and set (3 chunks x 2 sets), of the responses only
    assert transfers == [["response"]] * 6
