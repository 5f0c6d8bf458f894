"""A link for any loss (issue 15, item 1): ``train(loss, X, y, link=...)``.

A hand-written logistic loss with ``link="sigmoid"`` must be scored, early-stopped,
compared, saved, exported and read by the scikit-learn classifier exactly as
``objectives.logistic`` is; without a link, a metric of probabilities is refused before
any round. One small data set keeps the compile cost low.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxboost
import objectives as O
from jaxboost.engine.round import run_chunk
from jaxboost.io import to_xgboost_json

N, F = 300, 4
KW = dict(n_rounds=30, max_depth=3, verbose=False)
METRICS = ["logloss", "error", "auc"]


def logistic(y, f):
    return jnp.logaddexp(0.0, f) - y * f


def softmax_ce(y, f):
    return jax.nn.logsumexp(f) - f[y.astype(jnp.int32)]


def half_sigmoid(f):  # a custom link, saved by qualname
    return 1.0 / (1.0 + jnp.exp(-0.5 * f))


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N, F)).astype(np.float32)
    y = (X[:, 0] - X[:, 1] + rng.normal(size=N) > 0).astype(np.float32)
    return X[:200], y[:200], X[200:], y[200:]


@pytest.fixture(scope="module")
def pair(data):
    """The plain loss with ``link="sigmoid"`` and ``objectives.logistic``, same settings,
    early stopping on the test log loss."""
    X, y, Xt, yt = data
    kw = dict(
        KW,
        eval_set=[(Xt, yt)],
        eval_metric=METRICS,
        early_stopping_rounds=3,
        early_stopping_metric="logloss",
    )
    return (
        jaxboost.train(logistic, X, y, link="sigmoid", **kw),
        jaxboost.train(O.logistic, X, y, **kw),
    )


def test_history_early_stopping_and_predictions_match_catalogue_logistic(pair, data):
    mine, ref = pair
    h, r = mine.history["validation_0"], ref.history["validation_0"]
    assert list(h) == METRICS
    for m in METRICS:
        np.testing.assert_allclose(h[m], r[m], rtol=0, atol=1e-6)
    assert mine.best_iteration == ref.best_iteration
    assert mine.best_score == pytest.approx(ref.best_score, abs=1e-6)
    Xt = data[2]
    p = mine.predict(Xt)
    np.testing.assert_allclose(p, ref.predict(Xt), atol=1e-6)
    assert p.min() > 0 and p.max() < 1  # probabilities, not margins
    np.testing.assert_allclose(
        p, 1 / (1 + np.exp(-mine.predict(Xt, output_margin=True))), atol=1e-6
    )
    assert isinstance(mine.objective, O.LinkedLoss)
    assert mine.objective.link is O.sigmoid
    assert repr(mine.objective) == "objectives.with_link(logistic, 'sigmoid')"
    assert "link=sigmoid" in repr(mine) and "objective=logistic" in repr(mine)


def test_without_link_the_model_and_compiles_are_unchanged(data):
    """The link changes no tree and compiles no new round program."""
    X, y, _, _ = data
    plain = jaxboost.train(logistic, X, y, **KW)
    assert plain.objective is logistic  # no wrapping without link=
    before = run_chunk._cache_size()
    linked = jaxboost.train(logistic, X, y, link="sigmoid", **KW)
    assert run_chunk._cache_size() == before
    for a, b in zip(plain.ensemble.to_numpy(), linked.ensemble.to_numpy()):
        np.testing.assert_array_equal(a, b)
    assert plain.base_margin == linked.base_margin
    np.testing.assert_array_equal(plain.predict(X), linked.predict(X, output_margin=True))


@pytest.mark.parametrize(
    "metric,link",
    [
        ("logloss", "sigmoid"),
        ("error", "sigmoid"),
        ("accuracy", "sigmoid"),
        ("brier", "sigmoid"),
        ("poisson_nll", "exp"),
    ],
)
def test_probability_metric_without_link_fails_before_any_round(data, metric, link):
    X, y, Xt, yt = data
    calls = []
    with pytest.raises(ValueError, match=rf"metric '{metric}'.*no link.*link='{link}'"):
        jaxboost.train(
            logistic,
            X,
            y,
            eval_set=[(Xt, yt)],
            eval_metric=["auc", metric],
            callbacks=[lambda env: calls.append(env) or False],
            **KW,
        )
    assert calls == []
    with pytest.raises(ValueError, match="configuration 1: metric 'logloss'"):
        jaxboost.train_many(
            ["logistic", logistic],
            X,
            y,
            eval_set=[(Xt, yt)],
            eval_metric="logloss",
            n_rounds=3,
            max_depth=3,
        )


def test_margin_metrics_and_regression_metrics_keep_working_without_link(data):
    X, y, Xt, yt = data
    bst = jaxboost.train(
        logistic,
        X,
        y,
        eval_set=[(Xt, yt)],
        eval_metric=["auc", "objective"],
        **dict(KW, n_rounds=5),
    )
    assert list(bst.history["validation_0"]) == ["auc", "loss"]

    def sq(y, f):
        return 0.5 * (y - f) ** 2

    reg = jaxboost.train(
        sq,
        X,
        X[:, 0],
        eval_set=[(Xt, Xt[:, 0])],
        eval_metric=["rmse", "mae"],
        **dict(KW, n_rounds=5),
    )
    ref = jaxboost.train(
        O.squared,
        X,
        X[:, 0],
        eval_set=[(Xt, Xt[:, 0])],
        eval_metric=["rmse", "mae"],
        **dict(KW, n_rounds=5),
    )
    for m in ("rmse", "mae"):
        np.testing.assert_allclose(
            reg.history["validation_0"][m], ref.history["validation_0"][m], atol=1e-6
        )


def test_catalogue_entries_keep_their_own_link(data):
    X, y, _, _ = data
    with pytest.raises(ValueError, match=r"objectives.logistic has its own link \(sigmoid\)"):
        jaxboost.train(O.logistic, X, y, link="identity", **KW)
    with pytest.raises(ValueError, match="unknown link 'probit'"):
        jaxboost.train(logistic, X, y, link="probit", **KW)
    with pytest.raises(ValueError, match="link='softmax' is for losses of K >= 2"):
        jaxboost.train(logistic, X, y, link="softmax", **KW)
    same = jaxboost.train(O.logistic, X, y, link="logistic", **dict(KW, n_rounds=2))
    assert same.objective is O.logistic


def test_compare_table_matches_catalogue_logistic(data):
    X, y, Xt, yt = data
    kw = dict(eval_set=[(Xt, yt)], metrics=METRICS, n_rounds=20, max_depth=3)
    mine = jaxboost.compare([logistic], X, y, link="sigmoid", **kw)
    ref = jaxboost.compare(["logistic"], X, y, **kw)
    (a,), (b,) = mine.table, ref.table
    assert a["objective"] == b["objective"] == "logistic"
    for m in METRICS:
        assert a[m] == pytest.approx(b[m], abs=1e-6)
        assert a[m + "_best"] == pytest.approx(b[m + "_best"], abs=1e-6)
        assert a[m + "_best_round"] == b[m + "_best_round"]
    assert not mine.notes
    # without the link: no wrong numbers, NaN and a note naming link=
    plain = jaxboost.compare([logistic], X, y, **kw)
    assert np.isnan(plain.table[0]["logloss"]) and np.isfinite(plain.table[0]["auc"])
    assert any("link='sigmoid'" in n for n in plain.notes)


def test_train_many_takes_link_per_configuration(data):
    X, y, Xt, yt = data
    kw = dict(eval_set=[(Xt, yt)], eval_metric=METRICS, n_rounds=10, max_depth=3)
    mine, ref = jaxboost.train_many(
        [{"objective": logistic, "link": "sigmoid"}, "logistic"], X, y, **kw
    )
    for m in METRICS:
        np.testing.assert_allclose(
            mine.history["validation_0"][m], ref.history["validation_0"][m], atol=1e-6
        )
    shared = jaxboost.train_many([logistic], X, y, link="sigmoid", **kw)[0]
    assert shared.history == mine.history


def test_sklearn_classifier_proba_equals_catalogue_logistic(data):
    from jaxboost.sklearn import JaxBoostClassifier

    X, y, Xt, yt = data
    kw = dict(n_estimators=20, max_depth=3, eval_metric="logloss")
    ref = JaxBoostClassifier(objective="logistic", **kw).fit(X, y, eval_set=[(Xt, yt)])
    auto = JaxBoostClassifier(objective=logistic, **kw).fit(X, y, eval_set=[(Xt, yt)])
    given = JaxBoostClassifier(objective=logistic, link="sigmoid", **kw).fit(X, y)
    want = ref.predict_proba(Xt)
    np.testing.assert_allclose(auto.predict_proba(Xt), want, atol=1e-6)
    np.testing.assert_allclose(given.predict_proba(Xt), want, atol=1e-6)
    # the booster, its metrics and the estimator read one link
    np.testing.assert_allclose(auto.booster_.predict(Xt), want[:, 1], atol=1e-6)
    np.testing.assert_allclose(
        auto.evals_result()["validation_0"]["logloss"],
        ref.evals_result()["validation_0"]["logloss"],
        atol=1e-6,
    )
    assert auto.get_params()["link"] == "auto"


def test_save_load_keeps_the_link(pair, data, tmp_path):
    mine, _ = pair
    Xt = data[2]
    path = tmp_path / "m.json"
    mine.save(path)
    bare = jaxboost.load(path)  # the stored link predicts without the loss
    np.testing.assert_array_equal(bare.predict(Xt), mine.predict(Xt))
    again = jaxboost.load(path, objective=logistic)
    assert again.objective == mine.objective
    np.testing.assert_array_equal(again.predict(Xt), mine.predict(Xt))
    assert again.history == mine.history and again.best_iteration == mine.best_iteration
    # continue training from the loaded model: the link stays
    more = jaxboost.train(
        again.objective, data[0], data[1], init_model=again, n_rounds=2, max_depth=3
    )
    assert more.objective == mine.objective and len(more) == len(mine) + 2


def test_custom_link_is_saved_by_qualname(data, tmp_path):
    X, y, Xt, _ = data
    bst = jaxboost.train(logistic, X, y, link=half_sigmoid, **dict(KW, n_rounds=3))
    np.testing.assert_allclose(
        bst.predict(Xt), half_sigmoid(bst.predict(Xt, output_margin=True)), atol=1e-6
    )
    assert "link=half_sigmoid" in repr(bst) and "half_sigmoid" in bst._repr_html_()
    path = tmp_path / "c.json"
    bst.save(path)
    with pytest.raises(TypeError, match="custom link .*half_sigmoid.*link=half_sigmoid"):
        jaxboost.load(path, objective=logistic)
    again = jaxboost.load(path, objective=logistic, link=half_sigmoid)
    np.testing.assert_array_equal(again.predict(Xt), bst.predict(Xt))


def test_xgboost_export_follows_the_link(pair, data):
    mine, ref = pair
    a, b = to_xgboost_json(mine), to_xgboost_json(ref)
    assert a["learner"]["objective"] == b["learner"]["objective"]
    assert a["learner"]["objective"]["name"] == "binary:logistic"
    X, y, _, _ = data
    with pytest.raises(ValueError, match="without a link"):
        to_xgboost_json(jaxboost.train(logistic, X, y, **dict(KW, n_rounds=2)))
    with pytest.raises(ValueError, match="with link 'exp'"):
        to_xgboost_json(jaxboost.train(logistic, X, y, link="exp", **dict(KW, n_rounds=2)))


def test_html_repr_shows_the_link(pair):
    mine, ref = pair
    assert (
        '<th style="text-align:left">link</th><td style="text-align:left">sigmoid'
        in mine._repr_html_()
    )
    assert "sigmoid" in ref._repr_html_()


def test_softmax_link_for_a_vector_loss(data):
    X, _, Xt, _ = data
    y3 = np.digitize(X[:, 0], [-0.5, 0.5]).astype(np.float32)
    yt3 = np.digitize(Xt[:, 0], [-0.5, 0.5]).astype(np.float32)
    kw = dict(eval_set=[(Xt, yt3)], eval_metric=["mlogloss", "merror"], n_rounds=5, max_depth=3)
    with pytest.raises(ValueError, match="metric 'mlogloss'.*link='softmax'"):
        jaxboost.train(softmax_ce, X, y3, n_outputs=3, **kw)
    bst = jaxboost.train(softmax_ce, X, y3, n_outputs=3, link="softmax", **kw)
    ref = jaxboost.train(O.softmax, X, y3, **kw)
    p = bst.predict(Xt)
    assert p.shape == (100, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(
        bst.history["validation_0"]["mlogloss"], ref.history["validation_0"]["mlogloss"], atol=1e-5
    )
    assert bst.objective.outputs == 3
