"""``jaxboost.cv``: k-fold cross-validation round by round, as XGBoost's ``xgb.cv``.

On data whose every value appears in every fold's training rows (so the held-out rows
fall between the same cuts), XGBoost's ``hist`` ``cv`` with the same folds gives the
same means and standard deviations per round, and early stopping on the mean test
value stops at the same round.
"""

import numpy as np
import pytest

import jaxboost
from jaxboost.adapters.cv import make_folds

xgb = pytest.importorskip("xgboost")

KW = dict(max_depth=3, learning_rate=0.3)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 8, size=(400, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    yr = (np.nan_to_num(X[:, 0]) - 2 * np.nan_to_num(X[:, 1]) + rng.normal(size=400)).astype(
        np.float32
    )
    yb = (yr > np.median(yr)).astype(np.float32)
    return X, yr, yb, make_folds(400, 4, seed=1)


def xgb_cv(X, y, folds, objective, base_score, rounds, **extra):
    params = dict(objective=objective, tree_method="hist", max_depth=3, eta=0.3, nthread=1)
    d = xgb.DMatrix(X, label=y, missing=np.nan)
    return xgb.cv(dict(params, base_score=base_score), d, rounds, folds=folds, **extra)


def test_means_and_stds_match_xgboost_cv(data):
    X, yr, _, folds = data
    res = jaxboost.cv("squared", X, yr, folds=folds, n_rounds=30, base_margin=0.25, **KW)
    theirs = xgb_cv(X, yr, folds, "reg:squarederror", 0.25, 30, as_pandas=True)
    ours = res.to_pandas()
    assert list(ours.columns) == [
        "train-rmse-mean",
        "train-rmse-std",
        "test-rmse-mean",
        "test-rmse-std",
    ]
    np.testing.assert_allclose(ours.values, theirs[ours.columns].values, atol=1e-6)
    assert res.best_iteration is None and len(res.boosters) == 4
    # each fold's model is train() on its training rows
    tr, te = folds[2]
    alone = jaxboost.train(
        "squared", X[tr], yr[tr], n_rounds=30, base_margin=0.25, verbose=False, **KW
    )
    np.testing.assert_array_equal(res.boosters[2].predict(X[te]), alone.predict(X[te]))


def test_early_stopping_on_the_mean_matches_xgboost_cv(data, monkeypatch):
    """The folds train in lockstep chunks (CV_CHUNK, shrunk here so that the stop comes
    after several chunks) and stop where XGBoost's cv stops; curves and models are cut
    to the best round."""
    import jaxboost.adapters.cv as cv_module

    X, _, yb, folds = data
    monkeypatch.setattr(cv_module, "CV_CHUNK", 4)
    res = jaxboost.cv(
        "logistic", X, yb, folds=folds, n_rounds=200, base_margin=0.0, early_stopping_rounds=5, **KW
    )
    theirs = xgb_cv(
        X, yb, folds, "binary:logistic", 0.5, 200, early_stopping_rounds=5, as_pandas=True
    )
    assert res.best_iteration == len(theirs) - 1
    ours = res.to_pandas()
    np.testing.assert_allclose(ours.values, theirs[ours.columns].values, atol=1e-6)
    assert res.best_score == pytest.approx(theirs["test-logloss-mean"].values[-1], abs=1e-6)
    assert all(len(b) == res.best_iteration + 1 for b in res.boosters)
    assert str(res).startswith("4-fold cv")


def test_folds(data):
    KFold = pytest.importorskip("sklearn.model_selection").KFold

    X, yr, yb, _ = data
    for folds in (make_folds(400, 5, seed=3), make_folds(400, 3, y=yb, stratified=True)):
        tests = np.concatenate([te for _, te in folds])
        assert np.array_equal(np.sort(tests), np.arange(400))  # a partition of the rows
        for tr, te in folds:
            assert np.intersect1d(tr, te).size == 0 and tr.size + te.size == 400
    strat = make_folds(400, 3, y=yb, stratified=True)
    positives = [int(yb[te].sum()) for _, te in strat]
    assert max(positives) - min(positives) <= 1
    splitter = KFold(4, shuffle=True, random_state=0)
    a = jaxboost.cv("squared", X, yr, folds=splitter, n_rounds=3, **KW)
    pairs = [(tr, te) for tr, te in KFold(4, shuffle=True, random_state=0).split(X)]
    b = jaxboost.cv("squared", X, yr, folds=pairs, n_rounds=3, **KW)
    np.testing.assert_array_equal(a.mean["test"]["rmse"], b.mean["test"]["rmse"])


def test_frames_and_weights(data):
    pd = pytest.importorskip("pandas")
    X, yr, _, folds = data
    w = np.random.default_rng(2).uniform(0.5, 2.0, 400).astype(np.float32)
    frame = pd.DataFrame(X, columns=[f"c{i}" for i in range(5)])
    res = jaxboost.cv(
        "squared", frame, pd.Series(yr), folds=folds, n_rounds=5, sample_weight=w, **KW
    )
    tr, te = folds[1]
    model = res.boosters[1]
    assert model.feature_names == list(frame.columns)
    p = model.predict(X[te]).astype(np.float64)
    per_fold = np.sqrt(np.sum(w[te] * (yr[te] - p) ** 2) / np.sum(w[te]))  # weighted rmse
    others = []
    for k, (_, te_k) in enumerate(folds):
        pk = res.boosters[k].predict(X[te_k]).astype(np.float64)
        others.append(np.sqrt(np.sum(w[te_k] * (yr[te_k] - pk) ** 2) / np.sum(w[te_k])))
    assert others[1] == pytest.approx(per_fold)
    assert res.mean["test"]["rmse"][-1] == pytest.approx(np.mean(others), rel=1e-5)
    assert res.std["test"]["rmse"][-1] == pytest.approx(np.std(others), rel=1e-4)


def test_errors(data):
    X, yr, _, _ = data
    with pytest.raises(ValueError, match=r"nfold must be an integer in \[2, N = 400\]"):
        jaxboost.cv("squared", X, yr, nfold=1)
    with pytest.raises(TypeError, match="cv\\(\\) takes no 'eval_set'"):
        jaxboost.cv("squared", X, yr, eval_set=[(X, yr)])
    with pytest.raises(ValueError, match="stratified=True needs one label per row"):
        jaxboost.cv("squared", X, np.stack([yr, yr], 1), stratified=True)
    with pytest.raises(ValueError, match="early_stopping_rounds must be an integer >= 1"):
        jaxboost.cv("squared", X, yr, early_stopping_rounds=0)
    with pytest.raises(ValueError, match="fold 0: test rows out of range"):
        jaxboost.cv("squared", X, yr, folds=[(np.arange(10), np.array([400]))])
    with pytest.raises(TypeError, match="cv\\(\\) takes no 'eval_base_margin'"):
        jaxboost.cv("squared", X, yr, eval_base_margin=[np.zeros(400)])


def test_margins_per_row_are_sliced_with_the_folds_as_xgboost_cv(data, monkeypatch):
    """A per-row base_margin (XGBoost: the DMatrix's, which its cv slices per fold): each
    fold trains from its rows' margins and both sets are scored from theirs, with
    early stopping's continued chunks too; equal to XGBoost's cv, curves and stop."""
    import jaxboost.adapters.cv as cv_module

    X, _, yb, folds = data
    offsets = np.random.default_rng(3).normal(size=400).astype(np.float32)
    params = dict(objective="binary:logistic", tree_method="hist", max_depth=3, eta=0.3, nthread=1)
    d = xgb.DMatrix(X, label=yb, base_margin=offsets, missing=np.nan)
    res = jaxboost.cv("logistic", X, yb, folds=folds, n_rounds=30, base_margin=offsets, **KW)
    theirs = xgb.cv(params, d, 30, folds=folds, as_pandas=True)
    ours = res.to_pandas()
    np.testing.assert_allclose(ours.values, theirs[ours.columns].values, atol=1e-6)
    monkeypatch.setattr(cv_module, "CV_CHUNK", 4)  # continued every 4 rounds
    stopped = jaxboost.cv(
        "logistic",
        X,
        yb,
        folds=folds,
        n_rounds=200,
        base_margin=offsets,
        early_stopping_rounds=5,
        **KW,
    )
    theirs = xgb.cv(params, d, 200, folds=folds, early_stopping_rounds=5, as_pandas=True)
    assert stopped.best_iteration == len(theirs) - 1 > 8
    ours = stopped.to_pandas()
    np.testing.assert_allclose(ours.values, theirs[ours.columns].values, atol=1e-6)
    tr, te = folds[1]
    alone = jaxboost.train(
        "logistic", X[tr], yb[tr], n_rounds=30, base_margin=offsets[tr], verbose=False, **KW
    )
    np.testing.assert_array_equal(
        res.boosters[1].predict(X[te], base_margin=offsets[te]),
        alone.predict(X[te], base_margin=offsets[te]),
    )
