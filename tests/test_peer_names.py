"""What XGBoost and LightGBM users type on day one (issue 31, item 1): the estimators
take XGBoost's scikit-learn names where the meaning is the same, each checked against
XGBoost run in the same test or against the jaxboost parameter it stands for; ``train``
answers the peers' spellings with an error that names jaxboost's equivalent."""

import numpy as np
import pytest
from jaxboost.sklearn import JaxBoostClassifier, JaxBoostRegressor

import jaxboost

KW = dict(n_estimators=5, max_depth=3, learning_rate=0.3)


@pytest.fixture(scope="module")
def binary():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    y = (X[:, 0] + 0.5 * rng.normal(size=300) > 0.8).astype(np.int64)
    return X, y


@pytest.mark.parametrize(
    "name, value, ours",
    [
        ("num_boost_round", 5, "n_rounds"),
        ("n_estimators", 5, "n_rounds"),
        ("eta", 0.1, "learning_rate"),
        ("lambda_l2", 1.0, "reg_lambda"),
        ("min_split_loss", 0.0, "gamma"),
        ("feature_fraction", 0.5, "colsample_bytree"),
        ("nthread", 2, "n_jobs"),
    ],
)
def test_train_names_jaxboosts_equivalent(binary, name, value, ours):
    X, y = binary
    with pytest.raises(TypeError, match=rf"'{name}'.*write {ours}="):
        jaxboost.train("logistic", X, y, **{name: value})


@pytest.mark.parametrize(
    "name, value, why",
    [
        ("tree_method", "exact", "histogram trees"),
        ("scale_pos_weight", 3.0, "sample_weight"),
        ("missing", -1.0, "np.nan"),
    ],
)
def test_train_says_why_a_peer_option_is_absent(binary, name, value, why):
    X, y = binary
    with pytest.raises(TypeError, match=why):
        jaxboost.train("logistic", X, y, **{name: value})
    with pytest.raises(TypeError, match=why):
        jaxboost.train_many([{"max_depth": 2}], X, y, objective="logistic", **{name: value})


@pytest.mark.parametrize(
    "name, value, says",
    [
        ("eta", 0.1, r"write learning_rate="),
        ("nthread", 2, r"write n_jobs="),
        ("num_boost_round", 5, r"write n_estimators="),  # not train's n_rounds
        ("random_seed", 1, r"write random_state="),  # not train's seed
        ("weight", 1.0, r"fit\(sample_weight=\)"),
        ("verbosity", 0, r"write verbose="),
        ("enable_categorical", True, r"'category' .* categorical without it"),
        ("is_unbalance", True, r"class_weight='balanced'"),
        ("boosting_type", "rf", r"num_parallel_tree"),
        ("categorical_feature", [0], r"write categorical_features="),
    ],
)
def test_estimators_name_jaxboosts_equivalent(binary, name, value, says):
    """XGBClassifier(enable_categorical=True, ...) or LGBMClassifier's names in a
    JaxBoostClassifier: the estimator's own parameter name in the error (before:
    Python's bare 'unexpected keyword argument')."""
    X, y = binary
    with pytest.raises(TypeError, match=rf"unexpected keyword argument '{name}': .*{says}"):
        JaxBoostClassifier(**{name: value}, **KW).fit(X, y)


def test_peer_names_are_not_jaxboost_options():
    """A hint never shadows a real option, and every name a hint tells the user to
    write is ``train``'s (or the estimators')."""
    import inspect

    from jaxboost.training.names import ABSENT, EQUIVALENTS
    from jaxboost.training.options import BY_NAME

    options = set(BY_NAME) | set(inspect.signature(jaxboost.train).parameters)
    estimator = set(inspect.signature(JaxBoostClassifier).parameters)
    assert not (set(EQUIVALENTS) | set(ABSENT)) & (options - {"objective"})
    for ours in EQUIVALENTS.values():
        if ours.isidentifier():
            assert ours in options | estimator, ours


def test_a_misspelt_keyword_is_still_pythons_error(binary):
    X, y = binary
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_round'"):
        jaxboost.train("logistic", X, y, n_round=5)


@pytest.mark.parametrize(
    "typed, meant",
    [("n_round", "n_rounds"), ("maxdepth", "max_depth"), ("eval_sets", "eval_set")],
)
def test_a_misspelt_keyword_names_the_closest_option(binary, typed, meant):
    X, y = binary
    with pytest.raises(TypeError, match=f"did you mean '{meant}'"):
        jaxboost.train("logistic", X, y, **{typed: 5})


def test_a_far_keyword_gets_no_guess(binary):
    X, y = binary
    with pytest.raises(TypeError) as err:
        jaxboost.train("logistic", X, y, no_such_option=5)
    assert "did you mean" not in str(err.value)


@pytest.mark.parametrize(
    "peer, ours",
    [
        ("binary:logistic", "logistic"),
        ("reg:squarederror", "squared"),
        ("multi:softprob", "softmax"),
        ("count:poisson", "poisson"),
        ("binary", "logistic"),
        ("regression_l1", "absolute"),
        ("reg:tweedie", "tweedie"),
        ("reg:logistic", "logistic"),
        ("squared_error", "squared"),  # scikit-learn
        ("log_loss", "logistic"),
        ("RMSE", "squared"),  # CatBoost
        ("MultiClass", "softmax"),
    ],
)
def test_peer_objective_names_point_to_the_catalogue(binary, peer, ours):
    X, y = binary
    with pytest.raises(ValueError, match=rf"catalogue entry for the same loss is '{ours}'"):
        jaxboost.train(peer, X, y, n_rounds=2)


def test_xgboost_aft_points_to_the_entry_and_its_interval_labels(binary):
    X, y = binary
    with pytest.raises(ValueError, match=r"is 'aft'.*label_lower_bound.*base_score 0.5"):
        jaxboost.train("survival:aft", X, y, n_rounds=2)


def test_pseudo_huber_as_xgboost_trains_it(binary):
    """XGBoost's ``reg:pseudohubererror`` is the catalogue's pseudo-Huber loss trained
    with the exact Hessian and no leaf refit (jaxboost's default refits leaves), started
    from one Newton step from 0 (jaxboost: the loss's minimiser): the error says so,
    and that training from XGBoost's start gives XGBoost's margins (run here)."""
    from xgb_readout import xgb_base_score

    xgb = pytest.importorskip("xgboost")
    X, _ = binary
    X = (np.round(X * 4) / 4).astype(np.float32)
    y = (X[:, 0] + np.random.default_rng(3).standard_t(2, len(X))).astype(np.float32)
    with pytest.raises(ValueError, match=r"hessian='exact', refit=None\) grows XGBoost's"):
        jaxboost.train("reg:pseudohubererror", X, y, n_rounds=2)
    params = dict(objective="reg:pseudohubererror", tree_method="exact", nthread=1)
    d = xgb.DMatrix(X, label=y)
    ref = xgb.train(dict(params, eta=0.3, max_depth=3), d, 10)
    base = xgb_base_score(ref)
    r = y.astype(np.float64)  # one Newton step from 0: -sum g / sum h
    assert base == pytest.approx(np.sum(r / np.sqrt(1 + r * r)) / np.sum((1 + r * r) ** -1.5))
    ours = jaxboost.train(
        "pseudo_huber",
        X,
        y,
        n_rounds=10,
        learning_rate=0.3,
        max_depth=3,
        hessian="exact",
        refit=None,
        base_margin=base,
    )
    margins = ours.predict(X, output_margin=True)
    np.testing.assert_allclose(margins, ref.predict(d, output_margin=True), atol=1e-5, rtol=0)
    default = jaxboost.train("pseudo_huber", X, y, n_rounds=10, learning_rate=0.3, max_depth=3)
    assert np.abs(default.predict(X, output_margin=True) - margins).max() > 1e-2


def test_scale_pos_weight_equals_xgboost(binary):
    """XGBoost's scale_pos_weight multiplies the positive rows' g and h: the same
    model as jaxboost's classifier with it (XGBoost run here, exact margins)."""
    xgb = pytest.importorskip("xgboost")
    X, y = binary
    X = (np.round(X * 4) / 4).astype(np.float32)  # few values per feature: same bins
    clf = JaxBoostClassifier(scale_pos_weight=3.0, **KW).fit(X, y)
    w = np.where(y == 1, 3.0, 1.0).astype(np.float32)
    same = JaxBoostClassifier(**KW).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(clf.predict_proba(X), same.predict_proba(X))
    base = float(clf.booster_.base_margin)
    ref = xgb.XGBClassifier(
        scale_pos_weight=3.0,
        tree_method="exact",
        n_jobs=1,
        base_score=1.0 / (1.0 + np.exp(-base)),
        reg_lambda=1.0,
        **KW,
    ).fit(X, y)
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X), atol=1e-5)
    with pytest.raises(ValueError, match="two classes"):
        JaxBoostClassifier(scale_pos_weight=2.0, **KW).fit(X, y + (X[:, 1] > 1))


def test_missing_marks_a_value_as_missing(binary):
    X, y = binary
    Xm = X.copy()
    Xm[::7, 2] = -999.0
    Xn = Xm.copy()
    Xn[Xn == -999.0] = np.nan
    a = JaxBoostRegressor(missing=-999.0, **KW).fit(Xm, y)
    b = JaxBoostRegressor(**KW).fit(Xn, y)
    np.testing.assert_array_equal(a.predict(Xm), b.predict(Xn))
    assert not np.array_equal(a.predict(Xm), JaxBoostRegressor(**KW).fit(Xm, y).predict(Xm))


def test_importance_type_matches_xgboost_get_score(binary):
    X, y = binary
    reg = JaxBoostRegressor(importance_type="gain", **KW).fit(X, y)
    score = reg.booster_.feature_importance("gain")
    raw = np.array([score.get(f"f{i}", 0.0) for i in range(X.shape[1])])
    np.testing.assert_allclose(reg.feature_importances_, raw / raw.sum(), rtol=1e-12)
    total = JaxBoostRegressor(**KW).fit(X, y)
    assert not np.allclose(total.feature_importances_, reg.feature_importances_)
    with pytest.raises(ValueError, match="importance_type"):
        JaxBoostRegressor(importance_type="splits", **KW).fit(X, y)


def test_tree_method_n_jobs_and_fit_verbose(binary, capsys):
    X, y = binary
    a = JaxBoostClassifier(tree_method="hist", n_jobs=-1, **KW).fit(X, y, verbose=False)
    with pytest.raises(ValueError, match="histogram trees only"):
        JaxBoostClassifier(tree_method="approx", **KW).fit(X, y)
    with pytest.raises(ValueError, match="n_jobs must be a positive integer"):
        JaxBoostClassifier(n_jobs=0, **KW).fit(X, y)
    # one thread or every core: the same model, bit for bit
    b = JaxBoostClassifier(n_jobs=1, **KW).fit(X, y)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    JaxBoostClassifier(**KW).fit(X, y, eval_set=[(X, y)], verbose=True)
    out = capsys.readouterr()
    assert "validation_0" in out.out + out.err


def test_predict_runs_under_the_estimators_n_jobs(binary, monkeypatch):
    """XGBoost's estimators predict on ``n_jobs`` threads; so do ours: the native
    prediction kernel splits rows over at most ``n_jobs`` threads (before: every core,
    whatever ``n_jobs`` said), and the predictions do not depend on it."""
    from jaxboost import native

    if not native.available():
        pytest.skip("the native kernel is not built")
    X, y = binary
    monkeypatch.setenv("JAXBOOST_NATIVE_THREADS", "2")  # two cores, on any machine
    calls = []
    ranges = native._on_row_ranges
    monkeypatch.setattr(
        native, "_on_row_ranges", lambda fn, N, n, **kw: calls.append(n) or ranges(fn, N, n, **kw)
    )
    big = np.tile(X, (70, 1))  # 21,000 rows x 5 trees: enough work for threads
    one = JaxBoostClassifier(n_jobs=1, **KW).fit(X, y)
    p1 = one.predict_proba(big)
    assert calls == []  # one thread: the rows in one call
    p2 = one.set_params(n_jobs=None).predict_proba(big)
    assert calls == [2]
    np.testing.assert_array_equal(p1, p2)
    reg = JaxBoostRegressor(n_jobs=1, **KW).fit(X, y.astype(np.float32))
    calls.clear()
    reg.predict(big)
    assert calls == []
