"""Host metrics (issue 15, item 4): NumPy / scikit-learn callables marked with
``jaxboost.metrics.host`` score training on the host, once per round, from one copy of a
chunk's predictions, and drive early stopping like device metrics.

The data and settings are test_training_control.py's (``noisy``, depth 4), so the round
programs are the ones compiled there.
"""

import numpy as np
import pytest
from conftest import noisy_binary
from jaxboost.sklearn import JaxBoostClassifier
from sklearn.base import clone
from sklearn.metrics import average_precision_score, f1_score, log_loss, roc_auc_score

import jaxboost
import objectives
from jaxboost import metrics
from jaxboost.engine.round import run_chunk
from jaxboost.errors import MetricError
from jaxboost.training import loop
from jaxboost.training.evaluation import chunk_margins, chunk_metrics, chunk_responses


@pytest.fixture(scope="module")
def noisy():
    """conftest.noisy_binary: (X, y, w) for training, then for validation."""
    return noisy_binary()


COMMON = dict(max_depth=4, learning_rate=0.3, verbose=False)
SLOW = dict(COMMON, learning_rate=0.05)  # AP peaks at round 13: stops in the third chunk
AP = metrics.host(average_precision_score, maximize=True)
PATIENCE = 10


def hand_early_stop(curve, patience):
    """(best round, stop round) of a maximised curve, as EarlyStopping rules: the first
    best, and the first round ``patience`` rounds past it."""
    for r in range(len(curve)):
        best = int(np.argmax(curve[: r + 1]))
        if r - best >= patience:
            return best, r
    return int(np.argmax(curve)), len(curve) - 1


def test_average_precision_drives_early_stopping_as_by_hand(noisy):
    X, y, _, Xv, yv, wv = noisy
    bst = jaxboost.train(
        "logistic",
        X,
        y,
        n_rounds=60,
        **SLOW,
        eval_set=[(Xv, yv, wv)],
        eval_metric=["logloss", AP],
        early_stopping_metric="average_precision_score",
        early_stopping_rounds=PATIENCE,
    )
    full = jaxboost.train("logistic", X, y, n_rounds=60, **SLOW)
    # by hand: scikit-learn on each round's predictions of the model cut to that round
    hand = np.array(
        [
            average_precision_score(yv, full[: r + 1].predict(Xv), sample_weight=wv)
            for r in range(60)
        ]
    )
    best, stop = hand_early_stop(hand, PATIENCE)
    assert best >= 10 and stop >= 20  # not decided in the first chunk
    h = bst.history["validation_0"]
    assert list(h) == ["logloss", "average_precision_score"]
    assert len(h["average_precision_score"]) == stop + 1 == len(h["logloss"])
    np.testing.assert_array_equal(h["average_precision_score"], hand[: stop + 1])
    assert bst.best_iteration == best and bst.best_score == hand[best]
    assert len(bst) == best + 1
    np.testing.assert_array_equal(bst.predict(Xv), full[: best + 1].predict(Xv))
    # the device metric beside it is unchanged
    p = full[: stop + 1].predict(Xv)
    assert h["logloss"][-1] == pytest.approx(log_loss(yv, p, sample_weight=wv), rel=1e-4)


def test_roc_auc_host_metric_equals_device_auc_and_adds_no_device_program(noisy, monkeypatch):
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
    both = jaxboost.train(
        "logistic", X, y, **kw, eval_metric=["auc", metrics.host(sk_auc, maximize=True)]
    )
    # the device metrics' programs (and the tree builder) are the same ones
    assert (
        run_chunk._cache_size(),
        chunk_margins._cache_size(),
        chunk_metrics._cache_size(),
    ) == sizes
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


def mean_pred(y, pred):
    """The mean prediction (float64): shows which predictions a host metric got."""
    return float(np.mean(pred, dtype=np.float64))


def test_host_metrics_on_margins_and_on_probabilities(noisy):
    X, y, _, Xv, yv, _ = noisy
    on_margin = metrics.host(mean_pred, on="margin", name="mean_margin")
    on_response = metrics.host(mean_pred, name="mean_probability")
    bst = jaxboost.train(
        "logistic",
        X,
        y,
        n_rounds=12,
        **COMMON,
        eval_set=[(Xv, yv)],
        eval_metric=[on_margin, on_response, "logloss"],
    )
    h = bst.history["validation_0"]
    margins = bst.staged_predict(Xv, output_margin=True)
    probs = bst.staged_predict(Xv)
    np.testing.assert_array_equal(h["mean_margin"], margins.mean(axis=1, dtype=np.float64))
    np.testing.assert_array_equal(h["mean_probability"], probs.mean(axis=1, dtype=np.float64))
    assert not np.allclose(h["mean_margin"], h["mean_probability"])
    assert all(0 < v < 1 for v in h["mean_probability"])


def test_a_metric_that_needs_probabilities_is_refused_for_a_loss_without_a_link(noisy):
    X, y, _, Xv, yv, _ = noisy

    def logistic_loss(y, pred):
        return objectives.logistic(y, pred)

    ll = metrics.host(log_loss, needs="probability")
    with pytest.raises(ValueError, match="link='sigmoid'"):
        jaxboost.train(
            logistic_loss, X, y, n_rounds=5, **COMMON, eval_set=[(Xv, yv)], eval_metric=ll
        )


def test_multi_output_host_metric_gets_class_probabilities(noisy):
    X, _, w, Xv, _, wv = noisy
    y3, yv3 = np.digitize(X[:, 0], [-0.5, 0.5]), np.digitize(Xv[:, 0], [-0.5, 0.5])
    sk_mlogloss = metrics.host(
        lambda y, p, sample_weight: log_loss(y, p, sample_weight=sample_weight, labels=[0, 1, 2]),
        name="sk_mlogloss",
    )
    bst = jaxboost.train(
        "softmax",
        X,
        y3,
        n_rounds=10,
        **COMMON,
        eval_set=[(Xv, yv3, wv)],
        eval_metric=["mlogloss", sk_mlogloss],
    )
    h = bst.history["validation_0"]
    np.testing.assert_allclose(h["sk_mlogloss"], h["mlogloss"], rtol=2e-5)
    assert h["sk_mlogloss"][-1] == log_loss(
        yv3, bst.predict(Xv), sample_weight=wv, labels=[0, 1, 2]
    )


class BadAfter:
    """A host metric that goes wrong at its ``n``-th call (call 0 is the check on the
    starting predictions, call ``r + 1`` scores round ``r``)."""

    def __init__(self, n, bad):
        self.n, self.bad, self.calls = n, bad, 0
        self.__name__ = "bad_after"

    def __call__(self, y, pred):
        self.calls += 1
        if self.calls <= self.n:
            return float(np.mean(pred))
        if self.bad == "raise":
            raise RuntimeError("metric exploded")
        return np.array([1.0, 2.0]) if self.bad == "array" else float("nan")


@pytest.mark.parametrize(
    "bad, says",
    [
        ("nan", "returned nan; a host metric must return a finite number"),
        ("array", "returned an array of shape \\(2,\\)"),
        ("raise", "RuntimeError: metric exploded"),
    ],
)
def test_a_bad_value_names_metric_set_and_round_and_keeps_the_work(noisy, bad, says):
    X, y, _, Xv, yv, _ = noisy
    metric = metrics.host(BadAfter(12, bad))  # round 11: in the second chunk
    with pytest.raises(
        MetricError, match=f"host metric 'bad_after' on eval set 'valid' at round 11: {says}"
    ) as err:
        jaxboost.train(
            "logistic",
            X,
            y,
            n_rounds=30,
            **COMMON,
            eval_set={"valid": (Xv, yv)},
            eval_metric=["logloss", metric],
        )
    e = err.value
    assert (e.metric, e.data, e.round) == ("bad_after", "valid", 11)
    assert len(e.booster) == 11  # the rounds before, with their history
    assert [len(v) for v in e.booster.history["valid"].values()] == [11, 11]
    full = jaxboost.train("logistic", X, y, n_rounds=11, **COMMON)
    np.testing.assert_array_equal(e.booster.predict(Xv), full.predict(Xv))
    assert isinstance(e.__cause__, RuntimeError) == (bad == "raise")


def test_a_host_metric_that_fails_on_the_start_fails_before_training(noisy, monkeypatch):
    X, y, _, Xv, yv, _ = noisy
    monkeypatch.setattr(loop, "run_chunk", None)  # no round may run
    f1 = metrics.host(f1_score, maximize=True)  # on probabilities: scikit-learn refuses
    with pytest.raises(
        MetricError,
        match="host metric 'f1_score' fails on eval set "
        "'validation_0'.*before training.*ValueError: "
        "Classification metrics",
    ) as err:
        jaxboost.train("logistic", X, y, n_rounds=10, **COMMON, eval_set=[(Xv, yv)], eval_metric=f1)
    assert err.value.round is None and err.value.booster is None
    with pytest.raises(MetricError, match="returned an array of shape \\(400,\\)"):
        jaxboost.train(
            "logistic",
            X,
            y,
            n_rounds=10,
            **COMMON,
            eval_set=[(Xv, yv)],
            eval_metric=metrics.host(lambda y, p: p),
        )


def test_an_unmarked_numpy_metric_is_told_to_use_host(noisy):
    X, y, _, Xv, yv, _ = noisy
    with pytest.raises(
        ValueError,
        match=r"converts traced arrays to NumPy.*mark it as a "
        r"host metric, eval_metric=jaxboost\.metrics\.host"
        r"\(average_precision_score, maximize=True\)",
    ):
        jaxboost.train(
            "logistic",
            X,
            y,
            n_rounds=10,
            **COMMON,
            eval_set=[(Xv, yv)],
            eval_metric=average_precision_score,
        )


def test_host_constructor_errors():
    with pytest.raises(TypeError, match="host\\(\\) takes a callable"):
        metrics.host("average_precision_score")
    with pytest.raises(TypeError, match="already a Metric"):
        metrics.host(metrics.auc)
    with pytest.raises(ValueError, match="cannot be grouped"):
        metrics.Metric("x", mean_pred, host=True, grouped=True)
    with pytest.raises(ValueError, match="on= must be one of"):
        metrics.host(mean_pred, on="probability")
    m = metrics.host(average_precision_score, maximize=True)
    assert m == AP and hash(m) == hash(AP)  # equal metrics compare equal
    assert m.fn.weight_kw == "sample_weight" and metrics.host(mean_pred).fn.weight_kw is None


def test_train_many_stops_each_model_at_its_own_host_metric_best(noisy):
    X, y, _, Xv, yv, wv = noisy
    kw = dict(
        eval_set=[(Xv, yv, wv)],
        eval_metric=AP,
        early_stopping_rounds=PATIENCE,
        n_rounds=60,
        max_depth=4,
    )
    rates = (0.05, 0.3)
    many = jaxboost.train_many(
        [{"learning_rate": lr} for lr in rates], X, y, objective="logistic", **kw
    )
    for lr, got in zip(rates, many):
        one = jaxboost.train("logistic", X, y, learning_rate=lr, verbose=False, **kw)
        assert got.history == one.history
        assert (got.best_iteration, got.best_score) == (one.best_iteration, one.best_score)
        full = jaxboost.train(
            "logistic", X, y, n_rounds=60, max_depth=4, learning_rate=lr, verbose=False
        )
        hand = [average_precision_score(yv, p, sample_weight=wv) for p in full.staged_predict(Xv)]
        assert (
            got.best_iteration,
            len(got.history["validation_0"][AP.name]) - 1,
        ) == hand_early_stop(hand, PATIENCE)
    assert many[0].best_iteration != many[1].best_iteration


def test_compare_and_the_classifier_take_host_metrics(noisy):
    X, y, _, Xv, yv, _ = noisy
    cmp = jaxboost.compare(
        ["logistic"], X, y, eval_set=[(Xv, yv)], metrics=["auc", AP], n_rounds=20, **COMMON
    )
    bst = cmp.boosters["logistic"]
    for name, (Xd, yd) in (("train", (X, y)), ("validation_0", (Xv, yv))):
        hand = [average_precision_score(yd, p) for p in bst.staged_predict(Xd)]
        np.testing.assert_array_equal(cmp.curves["logistic"][name][AP.name], hand)
    assert cmp.table[0][AP.name + "_best_round"] == int(np.argmax(hand)) + 1
    # scikit-learn's estimator: eval_metric passes through, the estimator clones
    clf = JaxBoostClassifier(
        n_estimators=60,
        max_depth=4,
        learning_rate=0.05,
        eval_metric=AP,
        early_stopping_rounds=PATIENCE,
        verbose=False,
    )
    assert clone(clf).get_params()["eval_metric"] == AP
    clf.fit(X, y, eval_set=[(Xv, yv)])
    full = jaxboost.train("logistic", X, y, n_rounds=60, **SLOW)
    hand = [average_precision_score(yv, p) for p in full.staged_predict(Xv)]
    best, stop = hand_early_stop(hand, PATIENCE)
    assert clf.best_iteration == best and clf.best_score == hand[best]
    np.testing.assert_array_equal(clf.evals_result()["validation_0"][AP.name], hand[: stop + 1])
