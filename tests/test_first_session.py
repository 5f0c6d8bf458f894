"""What a new user's first notebook session runs into: mistakes that used to train a
model silently or fail with a misleading message, each now named before any work."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxboost.sklearn import JaxBoostClassifier

import jaxboost
import objectives
from jaxboost.metrics.custom import sounds_larger_is_better
from jaxboost.training.config import check_classes

RNG = np.random.default_rng(0)
X = RNG.normal(size=(120, 3)).astype(np.float32)
Y01 = (X[:, 0] > 0).astype(np.float32)


def test_softmax_labels_that_skip_class_indices_warn():
    """softmax takes K = max(y) + 1: labels 1..3 (R's, pd.cut's) or codes 0 and 50 give
    outputs for indices that have no rows; XGBoost refuses such labels."""
    y13 = np.digitize(X[:, 0], [-0.5, 0.5]) + 1.0  # 1, 2, 3
    with pytest.warns(jaxboost.DataWarning, match=r"class index 0 has no rows.*subtract 1"):
        bst = jaxboost.train("softmax", X, y13, n_rounds=1, max_depth=1, verbose=False)
    assert bst.n_outputs == 4  # the model the warning describes
    codes = np.where(X[:, 0] > 0, 50.0, 0.0)
    with pytest.warns(jaxboost.DataWarning, match=r"49 of the class indices 0\.\.50"):
        check_classes(objectives.softmax, codes)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_classes(objectives.softmax, y13 - 1)  # 0, 1, 2: every index has rows
        check_classes(objectives.softmax(n_classes=5), y13)  # said on purpose


def test_a_loss_that_ignores_pred_is_refused_before_training():
    def typo_loss(y, pred):
        return (y - y) ** 2  # pred unused: every gradient is 0

    with pytest.raises(jaxboost.LossError, match=r"typo_loss .*does not depend on pred"):
        jaxboost.train(typo_loss, X, X[:, 0], n_rounds=2)
    # pred behind stop_gradient or a where still counts as used
    jaxboost.engine.autodiff.check_loss(
        lambda y, p: jnp.where(p > 0, (y - p) ** 2, 0.0) + jax.lax.stop_gradient(p),
        jax.ShapeDtypeStruct((), jnp.float32),
        jax.ShapeDtypeStruct((), jnp.float32),
    )


def test_a_scalar_loss_given_vector_margins_says_what_pred_is():
    with pytest.raises(jaxboost.LossError, match=r"3 outputs.*pred is each row's \(3,\) vector"):
        jaxboost.train(
            lambda y, f: jnp.logaddexp(0.0, f) - y * f,
            X,
            np.floor(np.abs(X[:, 0])).clip(0, 2),
            n_outputs=3,
            n_rounds=1,
        )


def focal(y, f, *, gamma):
    p = jax.nn.sigmoid(f)
    pt = jnp.where(y > 0, p, 1 - p)
    return -((1 - pt) ** gamma) * jnp.log(jnp.clip(pt, 1e-7, 1.0))


def pseudo_huber(y, f, delta=1.0):
    return delta**2 * (jnp.sqrt(1 + ((y - f) / delta) ** 2) - 1)


def test_loss_parameters_given_to_train_point_at_loss_params():
    """train's own gamma is the split penalty, so focal's gamma went missing; an unknown
    keyword that the loss takes names loss_params."""
    with pytest.raises(TypeError, match=r"loss_params=\{'gamma': \.\.\.\}"):
        jaxboost.train(focal, X, Y01, gamma=2.0, link="sigmoid", n_rounds=1)
    with pytest.raises(TypeError, match=r"pass it as loss_params=\{'delta': 2\.0\}"):
        jaxboost.train(pseudo_huber, X, X[:, 0], delta=2.0, n_rounds=1)


def test_peer_spellings_and_typos_get_their_names():
    with pytest.raises(TypeError, match=r"cv\(\) got .*'metrics'.*write eval_metric="):
        jaxboost.cv("squared", X, X[:, 0], metrics=["rmse"])
    with pytest.raises(TypeError, match=r"'max_deph': did you mean 'max_depth'\?"):
        JaxBoostClassifier(max_deph=1).fit(X, Y01)
    with pytest.raises(jaxboost.DataError, match=r"reshape\(1, -1\) for a single row"):
        jaxboost.train("squared", X[0], X[:3, 0])
    with pytest.raises(TypeError, match="verbose=False is accepted"):
        jaxboost.train_many([{"reg_lambda": 2.0}], X, Y01, objective="logistic", verbose=True)
    many = jaxboost.train_many(
        [{"reg_lambda": 2.0}], X, Y01, objective="logistic", n_rounds=1, max_depth=1, verbose=False
    )
    one = jaxboost.train("logistic", X, Y01, n_rounds=1, max_depth=1, reg_lambda=2.0, verbose=False)
    np.testing.assert_array_equal(many[0].predict(X), one.predict(X))


def test_a_metric_named_like_a_score_without_a_direction_warns():
    """A user metric is minimised unless it says otherwise (XGBoost's rule): one named
    accuracy with no maximize attribute kept the worst round as best_iteration."""

    def my_accuracy(y, p):
        return jnp.mean((p > 0.5) == (y > 0.5))

    kw = dict(eval_set={"v": (X, Y01)}, n_rounds=1, max_depth=1, verbose=False)
    with pytest.warns(jaxboost.MetricWarning, match=r"my_accuracy\.maximize = True"):
        jaxboost.train("logistic", X, Y01, eval_metric=[my_accuracy], **kw)
    my_accuracy.maximize = True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bst = jaxboost.train("logistic", X, Y01, eval_metric=[my_accuracy], **kw)
    assert bst.history["v"]["my_accuracy"][0] == pytest.approx(
        float(np.mean((bst.predict(X) > 0.5) == (Y01 > 0.5)))
    )
    assert [
        sounds_larger_is_better(n) for n in ("f1_macro", "aucPR", "MAP@10", "hit_rate", "c_index")
    ] == [True] * 5
    names = ("top1_error", "ndcg_loss", "rmse", "brier_score", "score")
    assert not any(sounds_larger_is_better(n) for n in names)


def test_a_classifier_loss_on_probabilities_is_not_read_as_logits_silently():
    """JaxBoostClassifier reads a plain loss's margins through the sigmoid; squared error
    on 0/1 labels fits probabilities, which the sigmoid squashed into 0.49-0.74 with no
    word. It warns and names link='identity', which reads them as probabilities."""

    def squared(y, f):
        return (y - f) ** 2

    def logistic(y, f):
        return jnp.logaddexp(0.0, f) - y * f

    kw = dict(n_estimators=3, max_depth=2)
    with pytest.warns(UserWarning, match=r"loss .*squared as logits.*link=.identity."):
        JaxBoostClassifier(objective=squared, **kw).fit(X, Y01)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        JaxBoostClassifier(objective=logistic, **kw).fit(X, Y01)
        probs = JaxBoostClassifier(objective=squared, link="identity", **kw).fit(X, Y01)
    margin = probs.booster_.predict(X, output_margin=True)
    np.testing.assert_allclose(probs.predict_proba(X)[:, 1], np.clip(margin, 0, 1), atol=1e-6)


def test_a_date_column_gets_advice_for_dates():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": np.arange(10.0), "day": pd.date_range("2020-01-01", periods=10)})
    with pytest.raises(
        jaxboost.DataError, match=r"'day' \(datetime64.*'day' as seconds.*\.dt\.year"
    ):
        jaxboost.train("squared", df, np.arange(10.0))


def test_cv_takes_the_classes_of_all_rows():
    """softmax in jaxboost.cv: a fold whose training rows miss the largest class used to
    train fewer outputs than its test rows need and fail ("labels ... outside"); the
    classes now come from all the rows, as XGBoost's cv takes num_class once."""
    y = Y01.copy()
    y[:2] = 2.0  # class 2 only in the first fold's test rows
    res = jaxboost.cv("softmax", X, y, nfold=5, shuffle=False, n_rounds=2, max_depth=1)
    assert [b.n_outputs for b in res.boosters] == [3] * 5
    assert np.isfinite(res.mean["test"]["mlogloss"]).all()


def test_xgboost_booster_habits(tmp_path):
    """An XGBoost user saves with ``save_model`` (the same JSON file as ``save``) and
    reaches for XGBoost's other Booster methods; each is named with jaxboost's way."""
    bst = jaxboost.train("squared", X, X[:, 0], n_rounds=2, max_depth=1, verbose=False)
    bst.save_model(tmp_path / "m.json")
    assert np.array_equal(jaxboost.load(tmp_path / "m.json").predict(X), bst.predict(X))
    for name, hint in [
        ("load_model", r"jaxboost\.load\(path\)"),
        ("get_dump", r"booster\.dump\(\)"),
        ("inplace_predict", r"booster\.predict\(X\)"),
        ("predcit", "did you mean 'predict'"),
        ("best_iteraton", "did you mean 'best_iteration'"),  # an instance attribute
    ]:
        with pytest.raises(AttributeError, match=rf"no attribute '{name}'; .*{hint}"):
            getattr(bst, name)
    assert not hasattr(bst, "_private")  # hasattr and copying still see a plain miss


def test_an_xgboost_params_dict_as_the_loss_says_how_to_pass_it():
    with pytest.raises(TypeError, match=r"got dict; a params dict .* \*\*params"):
        jaxboost.train({"objective": "binary:logistic", "max_depth": 3}, X, Y01)


def test_string_query_ids_say_how_to_number_them():
    ids = np.repeat(np.array(["q1", "q2", "q3"]), 40)
    with pytest.raises(jaxboost.DataError, match=r"qid\) must be finite numbers.*return_inverse"):
        jaxboost.train("lambdarank", X, Y01, group=ids, n_rounds=1)


@pytest.mark.parametrize("kind", ["softmax", "multi-target", "multi_quantile"])
def test_zero_rounds_of_several_outputs_is_the_start_model(kind, tmp_path):
    """n_rounds=0 (n_estimators=0) with K trees a round gives the model of its start,
    as one output does, not an IndexError: the same margins as a trained model's [:0]."""
    objective, y = {
        "softmax": ("softmax", (X[:, 0] > 0) + (X[:, 1] > 0.5).astype(np.float32)),
        "multi-target": ("squared", X[:, :2] * 2.0),
        "multi_quantile": (objectives.multi_quantile([0.1, 0.9]), X[:, 0]),
    }[kind]
    none = jaxboost.train(objective, X, y, n_rounds=0, max_depth=1, verbose=False)
    one = jaxboost.train(objective, X, y, n_rounds=1, max_depth=1, verbose=False)
    assert len(none) == 0
    np.testing.assert_array_equal(
        none.predict(X, output_margin=True), one[:0].predict(X, output_margin=True)
    )
    none.save(tmp_path / "m.json")
    np.testing.assert_array_equal(jaxboost.load(tmp_path / "m.json").predict(X), none.predict(X))
