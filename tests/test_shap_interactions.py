"""SHAP interaction values (issue 31, item 4): ``predict(X, pred_interactions=True)``
equals XGBoost's ``pred_interactions`` on the exported model (XGBoost run here), and
each row's matrix sums to its SHAP values."""

import json

import numpy as np
import pytest
from conftest import binnable_features

import jaxboost

xgb = pytest.importorskip("xgboost")


def _xgb(bst):
    b = xgb.Booster()
    b.load_model(bytearray(json.dumps(bst.to_xgboost_json()).encode()))
    return b


@pytest.mark.parametrize("objective, classes", [("squared", 0), ("logistic", 2), ("softmax", 3)])
def test_interactions_equal_xgboost_pred_interactions(objective, classes):
    rng = np.random.default_rng(0)
    X = binnable_features(rng)  # NaN in features 1 and 3
    signal = X[:, 2] * np.nan_to_num(X[:, 0]) * 0.1 + X[:, 4]
    y = signal + rng.normal(size=len(X))
    if classes:
        y = np.digitize(y, np.quantile(y, np.linspace(0, 1, classes + 1)[1:-1]))
    bst = jaxboost.train(objective, X, y.astype(np.float32), n_rounds=6, max_depth=4, verbose=False)
    d = xgb.DMatrix(X, missing=np.nan)
    ref = _xgb(bst).predict(d, pred_interactions=True)
    got = bst.predict(X, pred_interactions=True)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, atol=2e-6, rtol=0)
    contribs = bst.predict(X, pred_contribs=True)
    np.testing.assert_allclose(got.sum(axis=-1), contribs, atol=2e-6)
    # symmetric, as interaction values are
    np.testing.assert_allclose(got, np.swapaxes(got, -1, -2), atol=2e-6)
