"""Leaf-wise trees (issue 31, item 2): ``grow_policy="lossguide"`` with ``max_leaves``
equals XGBoost's ``hist`` lossguide on training margins (XGBoost run in the same test),
under the parity tests' conditions (every feature's values fit the bins)."""

import jax
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import binnable_features
from jaxboost.sklearn import JaxBoostRegressor

import jaxboost
import objectives
from jaxboost import native

xgb = pytest.importorskip("xgboost")

# Loss-guided trees are grown by the native kernel, an FFI handler of the CPU backend
# (elsewhere training says so: grow.py's "grown by the native CPU tree kernel").
pytestmark = pytest.mark.skipif(
    jax.default_backend() != "cpu" or not native.available(),
    reason="loss-guided trees are grown by the native CPU kernel",
)
P = dict(reg_lambda=1.0, reg_alpha=0.0, gamma=0.0, min_child_weight=1.0, max_delta_step=0.0)


def xgb_lossguide(dtrain, rounds, leaves, depth, **params):
    """XGBoost ``hist`` lossguide with the tests' shared settings (eta 0.3, one thread,
    ``P``) and ``params`` on top."""
    base = dict(tree_method="hist", grow_policy="lossguide", eta=0.3, nthread=1, **P)
    return xgb.train(dict(base, max_leaves=leaves, max_depth=depth, **params), dtrain, rounds)


def ours_lossguide(X, y, rounds, leaves, depth, **kw):
    """jaxboost's squared-error lossguide with the same settings as ``xgb_lossguide``
    (learning rate 0.3, ``P``, base margin 0) and ``kw`` on top."""
    return jaxboost.train(
        "squared",
        X,
        y,
        n_rounds=rounds,
        learning_rate=0.3,
        max_depth=depth,
        grow_policy="lossguide",
        max_leaves=leaves,
        base_margin=0.0,
        verbose=False,
        **P,
        **kw,
    )


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = binnable_features(rng, N=1000)  # NaN in features 1 and 3
    y = np.nan_to_num(X[:, 0]) * 0.2 - X[:, 2] + X[:, 4] * 0.5 + rng.normal(size=len(X))
    return X, y.astype(np.float32)


@pytest.mark.parametrize(
    "objective, xgb_objective, leaves, depth",
    [
        ("squared", "reg:squarederror", 4, 6),
        ("squared", "reg:squarederror", 31, 10),
        ("logistic", "binary:logistic", 8, 6),
        ("softmax", "multi:softprob", 6, 5),
    ],
)
def test_lossguide_equals_xgboost_hist(data, objective, xgb_objective, leaves, depth):
    X, y = data
    if objective == "logistic":
        y = (y > 0).astype(np.float32)
    elif objective == "softmax":
        y = np.digitize(y, [-0.5, 0.5]).astype(np.float32)
    d = xgb.DMatrix(X, label=y, missing=np.nan)
    extra = {"num_class": 3} if objective == "softmax" else {}
    ref = xgb_lossguide(
        d,
        20,
        leaves,
        depth,
        objective=xgb_objective,
        base_score=0.5 if objective == "logistic" else 0.0,
        **extra,
    )
    kw = dict(n_rounds=20, learning_rate=0.3, max_depth=depth, verbose=False, **P)
    loss = objectives.softmax(curvature="xgboost") if objective == "softmax" else objective
    bst = jaxboost.train(
        loss,
        X,
        y,
        grow_policy="lossguide",
        max_leaves=leaves,
        base_margin=[0.0] * 3 if objective == "softmax" else 0.0,
        **kw,
    )
    np.testing.assert_allclose(
        bst.predict(X, output_margin=True), ref.predict(d, output_margin=True), atol=1e-5, rtol=0
    )
    splits = (~np.asarray(bst.ensemble.is_leaf)).sum(axis=1)
    assert splits.max() == leaves - 1  # leaf-wise trees of max_leaves leaves
    assert bst.train_state["max_leaves"] == leaves
    # without a leaf limit, lossguide is the level-wise tree
    if objective == "squared" and leaves == 4:
        full = jaxboost.train(objective, X, y, grow_policy="lossguide", **kw)
        plain = jaxboost.train(objective, X, y, **kw)
        np.testing.assert_array_equal(full.predict(X), plain.predict(X))


@pytest.mark.parametrize("leaves, depth", [(4, 6), (31, 10)])
def test_lossguide_with_monotone_constraints_equals_xgboost_hist(data, leaves, depth):
    """Monotone signs on leaf-wise trees (the native kernel's bounds on the candidate
    tree, the best-first subset of its splits): XGBoost ``hist`` lossguide with the same
    ``monotone_constraints`` gives the same margins; the constraints bind on this data
    (XGBoost without them differs by more than 1)."""
    X, y = data
    y = (y + np.sin(2 * X[:, 2])).astype(np.float32)  # not monotone in feature 2
    d = xgb.DMatrix(X, label=y, missing=np.nan)
    mono = dict(objective="reg:squarederror", base_score=0.0)
    ref = xgb_lossguide(d, 20, leaves, depth, monotone_constraints="(1,-1,1,0,1)", **mono)
    bst = ours_lossguide(X, y, 20, leaves, depth, monotone_constraints=(1, -1, 1, 0, 1))
    margins = ref.predict(d, output_margin=True)
    np.testing.assert_allclose(bst.predict(X, output_margin=True), margins, atol=1e-5, rtol=0)
    free = xgb_lossguide(d, 20, leaves, depth, **mono).predict(d, output_margin=True)
    assert np.abs(free - margins).max() > 1.0


def test_lossguide_on_sparse_rows_equals_dense(data):
    X, y = data
    Xs = np.where(np.isnan(X), 0.0, X)
    Xs[Xs == 0.0] = np.nan  # sparse: absent entries are missing
    kw = dict(grow_policy="lossguide", max_leaves=7, max_depth=6, n_rounds=10, verbose=False)
    dense = jaxboost.train("squared", Xs, y, **kw)
    csr = sp.csr_matrix(np.nan_to_num(Xs))
    sparse = jaxboost.train("squared", csr, y, **kw)
    np.testing.assert_allclose(sparse.predict(csr), dense.predict(Xs), atol=1e-5)


def test_lossguide_errors_and_estimator(data):
    X, y = data
    with pytest.raises(ValueError, match="grow_policy='lossguide'"):
        jaxboost.train("squared", X, y, max_leaves=8, n_rounds=2)
    with pytest.raises(ValueError, match="grow_policy must be one of"):
        jaxboost.train("squared", X, y, grow_policy="leafwise", n_rounds=2)
    # the kernel takes min_samples_leaf (LightGBM's min_data_in_leaf), with categorical
    # features too: every leaf holds 40 rows
    kw = dict(grow_policy="lossguide", max_leaves=6, n_rounds=2, min_samples_leaf=40)
    codes = (np.arange(len(X)) % 4).astype(np.float32)[:, None]
    Xc = np.hstack([codes, X[:, 1:]])
    for data_X, more in ((X, {}), (Xc, dict(categorical_features=[0]))):
        leaves = jaxboost.train("squared", data_X, y, verbose=False, **kw, **more).predict_leaf(
            data_X
        )
        assert min(np.bincount(t)[np.bincount(t) > 0].min() for t in leaves.T) >= 40
    # monotone signs next to categorical features take the level loop: not leaf-wise
    with pytest.raises(ValueError, match="no monotone constraints next to categorical"):
        jaxboost.train(
            "squared",
            Xc,
            y,
            categorical_features=[0],
            monotone_constraints=(0, 1, 0, 0, 0),
            grow_policy="lossguide",
            max_leaves=6,
            n_rounds=2,
        )
    reg = JaxBoostRegressor(grow_policy="lossguide", max_leaves=5, n_estimators=5).fit(X, y)
    assert (~np.asarray(reg.booster_.ensemble.is_leaf)).sum(axis=1).max() == 4
    with pytest.raises(TypeError, match="max_leaves with grow_policy='lossguide'"):
        jaxboost.train("squared", X, y, num_leaves=31)


def test_lossguide_memory_follows_the_leaves(monkeypatch):
    """Leaf-wise trees hold histograms for their leaves that may still split, not for
    the widest level of ``max_depth``: with the histogram budget cut to 2 MiB, 8 leaves
    at depth 10 train (the level-wise bound, 512 nodes x 5 features x 256 bins, is 10
    MiB) and give the model of the full budget; 200 leaves (8 MiB) get an error that
    says what the histograms need."""
    from jaxboost.engine import grow

    rng = np.random.default_rng(5)
    X = rng.normal(size=(2000, 5)).astype(np.float32)  # 256 bins each
    y = (X[:, 0] - X[:, 1] * X[:, 2] + rng.normal(size=2000)).astype(np.float32)
    kw = dict(grow_policy="lossguide", max_depth=10, n_rounds=3, verbose=False)
    full = jaxboost.train("squared", X, y, max_leaves=8, **kw).predict(X)
    monkeypatch.setattr(grow, "HIST_MEMORY", 1 << 20)
    assert not grow.native_tree_takes(len(X), X.shape[1], 10, 256)
    small = jaxboost.train("squared", X, y, max_leaves=8, **kw).predict(X)
    np.testing.assert_array_equal(small, full)
    with pytest.raises(ValueError, match=r"max_leaves=200 and max_depth=10 .* needs 8 MiB"):
        jaxboost.train("squared", X, y, max_leaves=200, max_depth=10, grow_policy="lossguide")


@pytest.mark.parametrize("onehot", [4, 10], ids=["partition", "one-vs-rest"])
def test_lossguide_with_categories_equals_xgboost_hist(onehot):
    """Leaf-wise trees over categorical features (the native kernel splits categories
    since 2026-11-27; before, training refused them): XGBoost's lossguide with
    ``enable_categorical`` on the same codes, run here."""
    rng = np.random.default_rng(3)
    N = 1200
    c7 = rng.integers(0, 7, N).astype(np.float32)
    c7[rng.random(N) < 0.1] = np.nan
    x = rng.integers(0, 30, N).astype(np.float32)
    effect = np.array([0.4, -1.2, 2.0, 0.3, -0.6, 1.1, 0.0])
    y = (np.where(np.isnan(c7), 0.5, effect[np.nan_to_num(c7).astype(int)]) + 0.05 * x).astype(
        np.float32
    ) + rng.normal(size=N).astype(np.float32)
    X = np.c_[c7, x]
    leaves, depth = 9, 6
    ref = xgb_lossguide(
        xgb.DMatrix(X, label=y, feature_types=["c", "q"], enable_categorical=True),
        10,
        leaves,
        depth,
        base_score=0.0,
        max_cat_to_onehot=onehot,
    )
    bst = ours_lossguide(
        X, y, 10, leaves, depth, categorical_features=[0], max_cat_to_onehot=onehot
    )
    d = xgb.DMatrix(X, feature_types=["c", "q"], enable_categorical=True)
    np.testing.assert_allclose(
        bst.predict(X, output_margin=True), ref.predict(d, output_margin=True), atol=1e-5, rtol=0
    )
    assert (~np.asarray(bst.ensemble.is_leaf)).sum(axis=1).max() == leaves - 1
    assert np.asarray(bst.ensemble.cat_bits).any()  # categorical splits were made
