"""``shap.TreeExplainer`` on jaxboost models (issue 31, item 4): through
``Booster.to_shap()`` (shap's own tree format) and through the XGBoost export, shap's
SHAP values, interaction values and expected value equal jaxboost's and XGBoost's
(XGBoost run here on the exported model)."""

import json

import numpy as np
import pytest
from conftest import binnable_features

import jaxboost

shap = pytest.importorskip("shap")
xgb = pytest.importorskip("xgboost")


def _xgb(bst):
    b = xgb.Booster()
    b.load_model(bytearray(json.dumps(bst.to_xgboost_json()).encode()))
    return b


def _data(classes):
    rng = np.random.default_rng(1)
    X = binnable_features(rng)  # NaN in features 1 and 3
    y = X[:, 2] * np.nan_to_num(X[:, 0]) * 0.1 + X[:, 4] + rng.normal(size=len(X))
    if classes:
        y = np.digitize(y, np.quantile(y, np.linspace(0, 1, classes + 1)[1:-1]))
    return X, y.astype(np.float32)


@pytest.mark.parametrize(
    "objective, classes, extra",
    [
        ("squared", 0, {}),
        ("logistic", 2, {}),
        ("softmax", 3, {}),
        ("squared", 0, {"num_parallel_tree": 3, "subsample": 0.7}),
    ],
)
def test_tree_explainer_on_to_shap_equals_xgboost(objective, classes, extra):
    X, y = _data(classes)
    bst = jaxboost.train(objective, X, y, n_rounds=5, max_depth=4, verbose=False, **extra)
    explainer = shap.TreeExplainer(bst.to_shap())
    got = np.asarray(explainer.shap_values(X))
    ref = _xgb(bst).predict(xgb.DMatrix(X, missing=np.nan), pred_contribs=True)
    ours = bst.predict(X, pred_contribs=True)
    np.testing.assert_allclose(ours, ref, atol=2e-6, rtol=0)
    if classes > 2:  # shap: (N, F, K); jaxboost and XGBoost: (N, K, F + 1)
        got = np.moveaxis(got, -1, 1)
    np.testing.assert_allclose(got, ref[..., :-1], atol=2e-6, rtol=0)
    np.testing.assert_allclose(
        np.asarray(explainer.expected_value).reshape(-1),
        np.atleast_2d(ref[0, ..., -1]).reshape(-1),
        atol=2e-6,
    )
    # rows sum to the margin, as shap's additivity check asserts
    margin = bst.predict(X, output_margin=True)
    total = got.sum(axis=-1) + np.asarray(explainer.expected_value).reshape(-1)
    np.testing.assert_allclose(total.reshape(margin.shape), margin, atol=1e-5)


def test_tree_explainer_interactions_equal_xgboost():
    X, y = _data(2)
    X = X[:60]
    bst = jaxboost.train("logistic", X, y[:60], n_rounds=4, max_depth=3, verbose=False)
    got = shap.TreeExplainer(bst.to_shap()).shap_interaction_values(X)
    ref = _xgb(bst).predict(xgb.DMatrix(X, missing=np.nan), pred_interactions=True)
    np.testing.assert_allclose(got, ref[:, :-1, :-1], atol=2e-6, rtol=0)


def test_tree_explainer_on_the_estimator_and_the_export():
    pytest.importorskip("sklearn")
    X, y = _data(2)
    from jaxboost.sklearn import JaxBoostClassifier

    est = JaxBoostClassifier(n_estimators=4, max_depth=3).fit(X, y)
    via_shap = shap.TreeExplainer(est.to_shap()).shap_values(X)
    # the export path: shap reads the XGBoost model jaxboost wrote
    via_export = shap.TreeExplainer(_xgb(est.get_booster())).shap_values(X)
    np.testing.assert_allclose(via_shap, via_export, atol=2e-6, rtol=0)
    np.testing.assert_allclose(
        via_shap, est.get_booster().predict(X, pred_contribs=True)[:, :-1], atol=2e-6, rtol=0
    )


def test_to_shap_refuses_categorical_splits():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 5, 300), rng.normal(size=300)]).astype(np.float32)
    y = (X[:, 0] % 2 + X[:, 1] > 0.5).astype(np.float32)
    bst = jaxboost.train(
        "logistic", X, y, n_rounds=3, max_depth=3, verbose=False, categorical_features=[0]
    )
    with pytest.raises(ValueError, match="categorical"):
        bst.to_shap()
