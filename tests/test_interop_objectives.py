"""XGBoost interop for every catalogue objective with an XGBoost counterpart (issue 31,
item 3): export with its parameters, import with them, predictions equal XGBoost's to
1e-5 both ways (XGBoost run in the same test)."""

import json

import numpy as np
import pytest
from conftest import binnable_features

import jaxboost
import objectives
from jaxboost import from_xgboost, to_xgboost_json

xgb = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = binnable_features(rng)
    counts = rng.poisson(np.exp(-0.4 * X[:, 2])).astype(np.float32)
    positive = rng.gamma(2.0, 1.0, len(X)) * np.exp(-0.3 * X[:, 2]) + 0.01
    real = X[:, 2] + rng.standard_t(3, len(X))
    return X, {
        "counts": counts,
        "positive": positive.astype(np.float32),
        "real": real.astype(np.float32),
    }


CASES = [
    # (jaxboost entry, labels, XGBoost objective, its parameters)
    (objectives.poisson(max_delta_step=0.7), "counts", "count:poisson", {"max_delta_step": 0.7}),
    (objectives.gamma, "positive", "reg:gamma", {}),
    (objectives.tweedie(power=1.3), "counts", "reg:tweedie", {"tweedie_variance_power": 1.3}),
    (objectives.absolute, "real", "reg:absoluteerror", {}),
    (objectives.pseudo_huber(delta=2.0), "real", "reg:pseudohubererror", {"huber_slope": 2.0}),
    (objectives.quantile(alpha=0.3), "real", "reg:quantileerror", {"quantile_alpha": 0.3}),
]
IDS = [c[2] for c in CASES]


def _xgb_booster(model):
    b = xgb.Booster()
    b.load_model(bytearray(json.dumps(model).encode()))
    return b


def _exported(bst, X, name):
    """``bst`` exported and loaded in XGBoost, which must name ``name`` as its objective
    and predict margins and responses as ``bst`` does (1e-5); then read back by
    ``from_xgboost``, whose objective must be ``bst``'s and whose predictions equal
    ``bst``'s to 1e-6 (log links: the base margin goes through XGBoost's float32 mean
    and back). Returns the XGBoost booster."""
    model = to_xgboost_json(bst)
    assert model["learner"]["objective"]["name"] == name
    xb = _xgb_booster(model)
    d = xgb.DMatrix(X, missing=np.nan)
    np.testing.assert_allclose(
        xb.predict(d, output_margin=True), bst.predict(X, output_margin=True), atol=1e-5, rtol=0
    )
    np.testing.assert_allclose(xb.predict(d), bst.predict(X), atol=1e-5, rtol=1e-6)
    back = from_xgboost(xb)
    assert back.objective == bst.objective
    np.testing.assert_allclose(back.predict(X), bst.predict(X), atol=1e-6, rtol=1e-6)
    return xb


@pytest.mark.parametrize("entry, labels, name, params", CASES, ids=IDS)
def test_export_predicts_as_jaxboost_in_xgboost(data, entry, labels, name, params):
    X, ys = data
    bst = jaxboost.train(entry, X, ys[labels], n_rounds=10, max_depth=3, verbose=False)
    xb = _exported(bst, X, name)
    # XGBoost reads the parameters as written
    cfg = json.loads(xb.save_config())["learner"]["objective"]
    for key, value in params.items():
        block = next(v for v in cfg.values() if isinstance(v, dict) and key in v)
        assert float(block[key].strip("[]")) == pytest.approx(value, rel=1e-6)


@pytest.mark.parametrize("entry, labels, name, params", CASES, ids=IDS)
def test_import_predicts_as_xgboost(data, entry, labels, name, params):
    X, ys = data
    d = xgb.DMatrix(X, label=ys[labels], missing=np.nan)
    ref = xgb.train(dict(objective=name, max_depth=3, eta=0.3, nthread=1, **params), d, 10)
    bst = from_xgboost(ref)
    assert bst.objective == entry
    dp = xgb.DMatrix(X, missing=np.nan)
    np.testing.assert_allclose(
        bst.predict(X, output_margin=True), ref.predict(dp, output_margin=True), atol=1e-5, rtol=0
    )
    np.testing.assert_allclose(bst.predict(X), ref.predict(dp), atol=1e-5, rtol=1e-6)


def test_huber_export_names_xgboosts_nearest_objective(data):
    X, ys = data
    bst = jaxboost.train(objectives.huber, X, ys["real"], n_rounds=2, verbose=False)
    with pytest.raises(ValueError, match="no Huber objective.*objectives.pseudo_huber"):
        to_xgboost_json(bst)


@pytest.mark.parametrize("normalize_type", ["tree", "forest"])
def test_dart_models_import_with_their_tree_weights(data, normalize_type):
    X, ys = data
    d = xgb.DMatrix(X, label=ys["real"], missing=np.nan)
    ref = xgb.train(
        dict(
            booster="dart",
            rate_drop=0.5,
            one_drop=1,
            normalize_type=normalize_type,
            max_depth=3,
            nthread=1,
            seed=0,
        ),
        d,
        8,
    )
    weights = json.loads(ref.save_raw("json"))["learner"]["gradient_booster"]["weight_drop"]
    assert min(weights) < 0.9  # trees really are weighted
    bst = from_xgboost(ref)
    np.testing.assert_allclose(
        bst.predict(X), ref.predict(xgb.DMatrix(X, missing=np.nan)), atol=1e-5, rtol=0
    )


@pytest.mark.parametrize(
    "entry, name",
    [
        (objectives.cox, "survival:cox"),
        (objectives.ranknet, "rank:pairwise"),
        (objectives.lambdarank, "rank:ndcg"),
    ],
    ids=["cox", "ranknet", "lambdarank"],
)
def test_group_losses_export_and_import(data, entry, name):
    X, ys = data
    rng = np.random.default_rng(5)
    if name == "survival:cox":  # signed times: negative = censored
        y = (ys["positive"] * np.where(rng.random(len(X)) < 0.3, -1, 1)).astype(np.float32)
        kw = {}
    else:
        y = rng.integers(0, 3, len(X)).astype(np.float32)
        kw = {"group": np.repeat(np.arange(len(X) // 20), 20)}
    bst = jaxboost.train(entry, X, y, n_rounds=5, max_depth=3, verbose=False, **kw)
    assert bst.objective == entry
    _exported(bst, X, name)
