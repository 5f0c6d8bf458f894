"""Category labels travel with the XGBoost export (issue 28, item 4).

A model trained on a DataFrame's categorical column keeps its labels; ``to_xgboost_json``
writes them into XGBoost's ``model.cats`` block, so XGBoost (which re-codes a frame
against them) predicts a frame whose categories come in another order as jaxboost
does, and ``from_xgboost`` reads them back. A model without labels refuses a
categorical frame it cannot map, instead of reading the frame's codes as its own
(MSE 1.892 against 0.008 before).
"""

import copy

import numpy as np
import pytest

import jaxboost
from jaxboost import DataError, ModelFormatError

pd = pytest.importorskip("pandas")
xgb = pytest.importorskip("xgboost")

KW = dict(n_rounds=20, max_depth=3, verbose=False)


def frame(labels, seed=0, n=400):
    rng = np.random.default_rng(seed)
    c = rng.choice(np.asarray(labels, dtype=object), n)
    X = pd.DataFrame({"c": pd.Categorical(c), "x": rng.normal(size=n)})
    y = np.select([c == labels[0], c == labels[1]], [3.0, 1.0], 0.0) + 0.1 * X["x"]
    return X, y.to_numpy() if hasattr(y, "to_numpy") else y


@pytest.mark.parametrize(
    "labels", [["red", "green", "blue"], [7, 30, 2]], ids=["strings", "integers"]
)
def test_xgboost_recodes_a_reordered_frame_like_jaxboost(labels, tmp_path):
    X, y = frame(labels)
    b = jaxboost.train("squared", X, y, **KW)
    path = tmp_path / "m.json"
    model = jaxboost.to_xgboost_json(b, path)
    cats = model["learner"]["gradient_booster"]["model"]["cats"]
    assert cats["feature_segments"] == [0, 3, 3]
    xb = xgb.Booster()
    xb.load_model(str(path))
    X2 = X.copy()
    X2["c"] = X2["c"].cat.reorder_categories(list(reversed(X["c"].cat.categories)))
    expected = b.predict(X2)  # jaxboost maps the frame's labels to its codes
    np.testing.assert_allclose(expected, b.predict(X), rtol=1e-6)
    got = xb.predict(xgb.DMatrix(X2, enable_categorical=True))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    back = jaxboost.from_xgboost(path)  # and the labels come back
    assert back.category_labels == {0: sorted(labels)}
    np.testing.assert_allclose(back.predict(X2), expected, rtol=1e-5, atol=1e-5)


def test_a_model_without_labels_refuses_a_categorical_frame(tmp_path):
    X, y = frame(["red", "green", "blue"])
    b = jaxboost.train("squared", X, y, **KW)
    model = copy.deepcopy(jaxboost.to_xgboost_json(b))
    model["learner"]["gradient_booster"]["model"]["cats"] = {
        "enc": [],
        "feature_segments": [],
        "sorted_idx": [],
    }  # a model file without them
    bare = jaxboost.from_xgboost(model)
    assert bare.category_labels is None
    with pytest.raises(DataError, match=r"has no category labels for it"):
        bare.predict(X)
    codes = np.stack([X["c"].cat.codes.to_numpy(np.float32), X["x"].to_numpy(np.float32)], 1)
    np.testing.assert_allclose(bare.predict(codes), b.predict(X), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "corrupt, message",
    [
        (lambda e: e[0].update(offsets=[0, 4, 3, 12]), "offsets"),
        (lambda e: e[0].update(values=[0xFF] * 12), "UTF-8"),
        (lambda e: e.pop(), "num_feature"),
        (lambda e: e[1].update(values=[1, 2]), "not categorical"),
    ],
)
def test_malformed_category_block_is_refused(corrupt, message):
    X, y = frame(["red", "green", "blue"])
    b = jaxboost.train("squared", X, y, n_rounds=2, max_depth=2, verbose=False)
    model = copy.deepcopy(jaxboost.to_xgboost_json(b))
    corrupt(model["learner"]["gradient_booster"]["model"]["cats"]["enc"])
    with pytest.raises(ModelFormatError, match=message):
        jaxboost.from_xgboost(model)
