"""XGBoost's prediction options: ``iteration_range`` on ``Booster.predict`` and the
estimators, ``output_margin`` on the estimators' ``predict``, and ``apply``."""

import os
import tempfile

import numpy as np
import pytest

import jaxboost

xgb = pytest.importorskip("xgboost")
pytest.importorskip("sklearn")

from jaxboost.sklearn import JaxBoostClassifier, JaxBoostRegressor  # noqa: E402


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    y = (X[:, 0] + 0.5 * rng.normal(size=300) > 0).astype(np.float32)
    return X, y


def test_iteration_range_is_the_first_rounds(data):
    X, y = data
    bst = jaxboost.train("logistic", X, y, n_rounds=12, max_depth=3, verbose=False)
    for end in (1, 5, 12):
        first = bst[:end]
        np.testing.assert_array_equal(bst.predict(X, iteration_range=(0, end)), first.predict(X))
        np.testing.assert_array_equal(
            bst.predict(X, pred_contribs=True, iteration_range=(0, end)),
            first.predict(X, pred_contribs=True),
        )
    np.testing.assert_array_equal(bst.predict(X, iteration_range=(0, 0)), bst.predict(X))
    # XGBoost's iteration_range on the exported model gives the same margins
    path = os.path.join(tempfile.mkdtemp(), "m.json")
    bst.to_xgboost_json(path)
    xb = xgb.Booster()
    xb.load_model(path)
    theirs = xb.predict(xgb.DMatrix(X), output_margin=True, iteration_range=(0, 5))
    ours = bst.predict(X, output_margin=True, iteration_range=(0, 5))
    np.testing.assert_allclose(ours, theirs, atol=1e-6)
    with pytest.raises(ValueError, match="range starts at 0"):
        bst.predict(X, iteration_range=(2, 5))
    with pytest.raises(ValueError, match="0 <= end <= 12"):
        bst.predict(X, iteration_range=(0, 13))
    with pytest.raises(TypeError, match="a pair \\(0, end\\) of ints"):
        bst.predict(X, iteration_range=5)


def test_estimators_take_xgboosts_predict_options(data):
    X, y = data
    reg = JaxBoostRegressor(n_estimators=8, max_depth=3, objective="poisson").fit(X, y)
    bst = reg.get_booster()
    np.testing.assert_array_equal(
        reg.predict(X, output_margin=True, iteration_range=(0, 3)),
        bst[:3].predict(X, output_margin=True),
    )
    clf = JaxBoostClassifier(n_estimators=8, max_depth=3).fit(X, y)
    logits = clf.predict(X, output_margin=True)
    np.testing.assert_array_equal(logits, clf.get_booster().predict(X, output_margin=True))
    p = clf.predict_proba(X, iteration_range=(0, 2))[:, 1]
    np.testing.assert_array_equal(p, clf.get_booster()[:2].predict(X).astype(np.float64))
    leaves = clf.apply(X)
    assert leaves.shape == (300, 8)
    np.testing.assert_array_equal(leaves, clf.get_booster().predict_leaf(X))
    np.testing.assert_array_equal(clf.apply(X, iteration_range=(0, 3)), leaves[:, :3])


def test_xgboost_names_on_the_booster(data, tmp_path):
    """pred_leaf, num_boosted_rounds and get_score answer as XGBoost's on the exported
    model: the same splits counted per feature, the same number of rounds, each row's
    leaf (jaxboost's heap index, XGBoost's own node id: compared through the leaf
    values)."""
    X, y = data
    bst = jaxboost.train("logistic", X, y, n_rounds=6, max_depth=3, verbose=False)
    leaves = bst.predict(X, pred_leaf=True)
    np.testing.assert_array_equal(leaves, bst.predict_leaf(X))
    np.testing.assert_array_equal(
        bst.predict(X, pred_leaf=True, iteration_range=(0, 2)), leaves[:, :2]
    )
    path = os.path.join(tempfile.mkdtemp(), "m.json")
    bst.to_xgboost_json(path)
    xb = xgb.Booster()
    xb.load_model(path)
    assert bst.num_boosted_rounds() == xb.num_boosted_rounds() == 6
    assert bst.get_score() == xb.get_score(importance_type="weight")
    ours = bst.trees.to_numpy().value  # (T, M): each row's leaf value, tree by tree
    theirs = xb.predict(xgb.DMatrix(X), pred_leaf=True)
    leaf_values = {t: {} for t in range(6)}
    df = xb.trees_to_dataframe()
    for _, r in df[df["Feature"] == "Leaf"].iterrows():
        leaf_values[r["Tree"]][r["Node"]] = r["Gain"]
    for t in range(6):
        mine = ours[t][leaves[:, t]]
        xgbs = np.array([leaf_values[t][n] for n in theirs[:, t]])
        np.testing.assert_allclose(mine, xgbs, atol=1e-6)
