"""Multi-target training from a catalogue entry: ``train(entry, X, Y)`` with ``Y`` of
shape ``(N, T)`` (``objectives.multi_target``), as XGBoost's multi-target regression.

The targets do not interact, so one tree per target per round must grow exactly the
trees of ``T`` separate models (bit for bit), and XGBoost 3.2's multi-target ``hist``
models (one tree per target, or vector leaves) must give the same margins.
"""

import json

import numpy as np
import pytest
from conftest import parity_data

import jaxboost
import objectives
from jaxboost import DataError
from jaxboost.metrics import get_metric

xgb = pytest.importorskip("xgboost")

KW = dict(n_rounds=8, max_depth=3, learning_rate=0.3, verbose=False)


@pytest.fixture(scope="module")
def data():
    X, yb, yr = parity_data()
    rng = np.random.default_rng(1)
    n = X.shape[0]
    Yr = np.stack([yr, 0.5 * yr + rng.normal(size=n), -yr], 1).astype(np.float32)
    Yb = np.stack([yb, rng.random(n) < 0.3, 1 - yb], 1).astype(np.float32)
    Yc = rng.poisson(np.exp(0.3 * Yr)).astype(np.float32)
    w = rng.uniform(0.5, 2.0, n).astype(np.float32)
    return X, {"squared": Yr, "logistic": Yb, "poisson": Yc}, w


@pytest.mark.parametrize("entry", ["squared", "logistic", "poisson"])
def test_one_tree_per_target_equals_separate_models(data, entry):
    X, Ys, w = data
    Y = Ys[entry]
    metric = get_metric(objectives.CATALOGUE[entry].metric)
    bst = jaxboost.train(entry, X, Y, sample_weight=w, eval_set=[(X, Y, w)], **KW)
    assert isinstance(bst.objective, objectives.MultiTarget)
    assert bst.n_outputs == 3 and bst.predict(X).shape == (400, 3)
    for t in range(3):
        one = jaxboost.train(entry, X, Y[:, t], sample_weight=w, **KW)
        assert np.float32(one.base_margin) == bst.base_margin[t]
        margin = bst.predict(X, output_margin=True)[:, t]
        np.testing.assert_array_equal(one.predict(X, output_margin=True), margin)
        np.testing.assert_array_equal(one.predict(X), bst.predict(X)[:, t])
    # the metric is a mean over every value, each row weighing w_i (XGBoost's)
    p = bst.predict(X).astype(np.float64)
    if entry == "squared":
        want = np.sqrt(np.sum(w[:, None] * (Y - p) ** 2) / (3 * w.sum()))
    elif entry == "logistic":
        pc = np.clip(p, 1e-7, 1 - 1e-7)
        want = -np.sum(w[:, None] * (Y * np.log(pc) + (1 - Y) * np.log(1 - pc))) / (3 * w.sum())
    else:
        from scipy.special import gammaln

        want = np.sum(w[:, None] * (p - Y * np.log(p) + gammaln(Y + 1))) / (3 * w.sum())
    got = bst.history["validation_0"][metric.name][-1]
    assert got == pytest.approx(want, rel=1e-5)


@pytest.mark.parametrize("strategy", ["one_output_per_tree", "multi_output_tree"])
@pytest.mark.parametrize(
    "entry,name", [("squared", "reg:squarederror"), ("logistic", "binary:logistic")]
)
def test_margins_match_xgboost_multi_target(data, entry, name, strategy):
    """XGBoost's start (a vector intercept: each column's mean, or its log-odds) and
    trees. min_child_weight 0: XGBoost 3.2's vector leaves apply it per target to the
    leaf weights and not to the splits, jaxboost (as XGBoost 3.4) to each child's
    trace(H) / K."""
    X, Ys, _ = data
    Y = Ys[entry]
    params = dict(
        objective=name,
        tree_method="hist",
        eta=0.3,
        max_depth=3,
        nthread=1,
        multi_strategy=strategy,
        min_child_weight=0.0,
    )
    d = xgb.DMatrix(X, label=Y, missing=np.nan)
    xb = xgb.train(params, d, 20)
    bst = jaxboost.train(
        entry,
        X,
        Y,
        **dict(KW, n_rounds=20),
        multi_strategy=strategy,
        min_child_weight=0.0,
    )
    base = json.loads(xb.save_config())["learner"]["learner_model_param"]["base_score"]
    assert base.startswith("[")  # a vector intercept, one per target
    np.testing.assert_allclose(
        bst.predict(X, output_margin=True), xb.predict(d, output_margin=True), atol=1e-5, rtol=0
    )


@pytest.mark.parametrize("entry", ["squared", "logistic"])
def test_vector_leaves_of_copies_grow_the_one_target_trees(data, entry):
    """min_child_weight bounds a vector leaf's mean Hessian over its K targets (XGBoost
    3.4's rule): K copies of one target then have the single target's Hessian in every
    node, the single target's valid splits and K times its gains, so vector leaves grow
    the one-target model's trees. Weighted rows (Hessian sums not whole numbers) and a
    bound that binds at depth 5; with the trace rule (K = 2: children of half the
    weight allowed) the trees differed."""
    X, Ys, w = data
    y = Ys[entry][:, 0]
    kw = dict(KW, max_depth=5, min_child_weight=6.0, sample_weight=w)
    one = jaxboost.train(entry, X, y, **kw)
    for K in (2, 4):
        vec = jaxboost.train(
            entry, X, np.tile(y[:, None], (1, K)), **kw, multi_strategy="multi_output_tree"
        )
        margin = vec.predict(X, output_margin=True)
        for t in range(K):
            np.testing.assert_allclose(
                margin[:, t], one.predict(X, output_margin=True), rtol=0, atol=2e-6
            )
    if entry == "squared":  # h = w: the bound binds, a leaf of the first tree holds < 12
        sums = np.bincount(one.predict(X, pred_leaf=True)[:, 0], weights=w)
        assert 6.0 <= sums[sums > 0].min() < 12.0


@pytest.mark.parametrize(
    "entry", [objectives.absolute, objectives.quantile(alpha=0.8), objectives.huber, "log_cosh"]
)
def test_leaf_refits_per_target(data, entry):
    """Entries whose leaves are refit (quantiles of the residuals, Newton steps on the
    loss) refit each target's tree on its own column: T separate models bit for bit,
    from each column's own start (its quantile, or the entry's own fit)."""
    X, Ys, w = data
    Y = Ys["squared"]
    bst = jaxboost.train(entry, X, Y, sample_weight=w, **KW)
    for t in range(3):
        one = jaxboost.train(entry, X, Y[:, t], sample_weight=w, **KW)
        assert np.float32(one.base_margin) == bst.base_margin[t]
        np.testing.assert_array_equal(one.predict(X), bst.predict(X)[:, t])


def test_absolute_error_matches_xgboost_multi_target(data):
    """reg:absoluteerror on three targets: XGBoost's start (each column's median) and
    its quantile refit of each target's leaves."""
    X, Ys, _ = data
    Y = Ys["squared"]
    params = dict(objective="reg:absoluteerror", tree_method="hist", eta=0.3, max_depth=3)
    d = xgb.DMatrix(X, label=Y, missing=np.nan)
    xb = xgb.train(dict(params, nthread=1), d, 8)
    bst = jaxboost.train("absolute", X, Y, **KW)
    np.testing.assert_allclose(
        bst.predict(X, output_margin=True), xb.predict(d, output_margin=True), atol=1e-5, rtol=0
    )


def test_save_load_and_sklearn(data, tmp_path):
    r2_score = pytest.importorskip("sklearn.metrics").r2_score
    from jaxboost.sklearn import JaxBoostRegressor

    X, Ys, w = data
    Y = Ys["squared"]
    bst = jaxboost.train(objectives.huber(delta=2.0), X, Y, refit=None, **KW)
    path = tmp_path / "m.json"
    bst.save(path)
    stored = json.loads(path.read_text())
    assert stored["objective"] == {"kind": "catalogue", "name": "huber", "params": {"delta": 2.0}}
    back = jaxboost.load(path)
    assert back.objective == objectives.multi_target(objectives.huber(delta=2.0), 3)
    np.testing.assert_array_equal(back.predict(X), bst.predict(X))
    again = jaxboost.load(path, objective=objectives.huber(delta=2.0))
    assert again.objective == back.objective

    reg = JaxBoostRegressor(n_estimators=8, max_depth=3, learning_rate=0.3)
    reg.fit(X, Y, sample_weight=w, eval_set=[(X, Y)])
    pred = reg.predict(X)
    one = jaxboost.train("squared", X, Y, sample_weight=w, **KW)
    np.testing.assert_array_equal(pred, one.predict(X))
    assert reg.score(X, Y) == pytest.approx(r2_score(Y, pred), rel=1e-6)
    assert len(reg.evals_result()["validation_0"]["rmse"]) == 8


def test_the_objective():
    m = objectives.multi_target(objectives.huber(delta=2.0), 2)
    assert repr(m) == "objectives.multi_target(objectives.huber(delta=2.0), 2)"
    assert m == objectives.multi_target("huber", 2).with_params(delta=2.0)
    assert hash(m) == hash(objectives.multi_target(objectives.huber(delta=2.0), 2))
    assert m != objectives.multi_target(objectives.huber(delta=2.0), 3)
    # the sum of the entry over the targets: 2^2 / 2 + 2 (3 - 1) (Huber, delta 2)
    assert float(m(np.array([0.0, 0.0]), np.array([2.0, 3.0]))) == pytest.approx(2.0 + 4.0)
    g, h = m.row_grad_hess()(np.float32([0.0, 0.0]), np.float32([1.0, -3.0]))
    np.testing.assert_allclose(np.asarray(g), [1.0, -2.0])
    np.testing.assert_allclose(np.asarray(h), np.diag([1.0, 0.0]))
    start = objectives.multi_target("logistic", 2).start_margin(
        np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0], [1.0, 0.0]]), np.ones(4)
    )
    np.testing.assert_allclose(start, [np.log(3.0), -np.log(3.0)], rtol=1e-6)
    for bad in ("softmax", "aft", "gaussian_nll", lambda y, f: (y - f) ** 2):
        with pytest.raises(TypeError, match="multi_target takes"):
            objectives.multi_target(bad, 2)
    with pytest.raises(ValueError, match="n_targets must be >= 1"):
        objectives.multi_target("squared", 0)


def test_errors(data):
    X, Ys, _ = data
    Y = Ys["squared"]
    with pytest.raises(ValueError, match="vector leaves .* take refit=None"):
        jaxboost.train("huber", X, Y, multi_strategy="multi_output_tree", **KW)
    with pytest.raises(DataError, match="objectives.softmax takes one label per row"):
        jaxboost.train("softmax", X, Ys["logistic"], **KW)
    bad = Ys["logistic"].copy()
    bad[7, 2] = 2.0
    with pytest.raises(DataError, match=r"target 2 \(column 2 of y\).*row 7"):
        jaxboost.train("logistic", X, bad, **KW)
    with pytest.raises(DataError, match="structure"):
        jaxboost.train("squared", X, Y, eval_set=[(X, Y[:, :2])], **KW)
    with pytest.raises(ValueError, match="metric 'auc'"):
        jaxboost.train(
            "logistic", X, Ys["logistic"], eval_set=[(X, Ys["logistic"])], eval_metric="auc", **KW
        )
    gh = jaxboost.train("squared", X, Y, **KW).grad_hess(X[:5], Y[:5])
    np.testing.assert_allclose(gh.g, gh.margin - Y[:5], rtol=1e-6)
    np.testing.assert_array_equal(gh.h, np.ones((5, 3), np.float32))


def test_metrics_mean_over_values():
    y = np.array([[0.0, 1.0], [2.0, 2.0]])
    p = np.array([[1.0, 1.0], [2.0, 5.0]])
    w = np.array([1.0, 3.0])
    assert float(get_metric("rmse")(y, p, w)) == pytest.approx(np.sqrt((1 + 27) / 8))
    assert float(get_metric("mae")(y, p, w)) == pytest.approx((1 + 9) / 8)
    with pytest.raises(ValueError, match="needs one prediction per row"):
        get_metric("r2")(y, p, w)
    with pytest.raises(ValueError, match="does not say which part is the label"):
        get_metric("rmse")(y, p[:, 0], w)


@pytest.mark.parametrize(
    "entry,name",
    [
        ("squared", "reg:squarederror"),
        ("logistic", "binary:logistic"),
        ("poisson", "count:poisson"),
    ],
)
def test_xgboost_export_and_import(data, entry, name, tmp_path):
    """A multi-target model exports as XGBoost's (num_target, a base score per target,
    each tree's target in tree_info) and predicts there what it predicts here; XGBoost's
    multi-target models import as objectives.multi_target."""
    from jaxboost.io.xgboost import from_xgboost

    X, Ys, _ = data
    Y = Ys[entry]
    bst = jaxboost.train(entry, X, Y, **KW)
    path = tmp_path / "m.json"
    bst.to_xgboost_json(path)
    xb = xgb.Booster()
    xb.load_model(str(path))
    assert json.loads(xb.save_config())["learner"]["learner_model_param"]["num_target"] == "3"
    d = xgb.DMatrix(X, missing=np.nan)
    np.testing.assert_allclose(xb.predict(d), bst.predict(X), rtol=1e-6, atol=1e-6)
    theirs = xgb.train(
        dict(objective=name, tree_method="hist", max_depth=3, nthread=1),
        xgb.DMatrix(X, label=Y, missing=np.nan),
        5,
    )
    ours = from_xgboost(theirs)
    assert isinstance(ours.objective, objectives.MultiTarget) and ours.n_outputs == 3
    np.testing.assert_allclose(ours.predict(X), theirs.predict(d), rtol=1e-6, atol=1e-6)
    vector = jaxboost.train(entry, X, Y, multi_strategy="multi_output_tree", **KW)
    with pytest.raises(ValueError, match="vector-leaf trees"):
        vector.to_xgboost_json()
    theirs = xgb.train(
        dict(objective=name, tree_method="hist", max_depth=2, multi_strategy="multi_output_tree"),
        xgb.DMatrix(X, label=Y, missing=np.nan),
        2,
    )
    with pytest.raises(ValueError, match="has vector leaves"):
        from_xgboost(theirs)


@pytest.mark.parametrize("depth", [1, 6])
def test_vector_leaves_match_xgboost_at_every_depth(data, depth):
    """Vector-leaf trees grow their shallow levels in one loop on a few node slots and
    their two deepest levels each on their own nodes (``grow_vector_tree``): with the
    loop alone (depth 1) and with four looped levels and two deep ones (depth 6; depth 3
    is ``test_margins_match_xgboost_multi_target``'s) the margins are XGBoost 3.2's
    ``multi_output_tree`` ones, with rows of missing values."""
    X, Ys, _ = data
    Y = Ys["squared"]
    params = dict(
        objective="reg:squarederror",
        tree_method="hist",
        eta=0.3,
        max_depth=depth,
        nthread=1,
        multi_strategy="multi_output_tree",
        min_child_weight=0.0,
    )
    d = xgb.DMatrix(X, label=Y, missing=np.nan)
    xb = xgb.train(params, d, 6)
    kw = dict(KW, n_rounds=6, max_depth=depth, min_child_weight=0.0)
    bst = jaxboost.train("squared", X, Y, multi_strategy="multi_output_tree", **kw)
    np.testing.assert_allclose(
        bst.predict(X, output_margin=True), xb.predict(d, output_margin=True), atol=1e-5, rtol=0
    )
    assert bst.ensemble.is_leaf.shape[-1] == 2 ** (depth + 1) - 1


def test_vector_leaves_read_the_diagonal(data):
    """The targets' Hessian is diagonal, so multi_hessian="auto" grows vector leaves from
    the diagonal (no K x K solves): the same trees as multi_hessian="full" computes with
    its solves, to float32 rounding."""
    X, Ys, w = data
    Y = Ys["logistic"]
    kw = dict(KW, multi_strategy="multi_output_tree", sample_weight=w)
    auto = jaxboost.train("logistic", X, Y, **kw)
    assert auto.train_state["multi_hessian"] == "diagonal"
    diagonal = jaxboost.train("logistic", X, Y, multi_hessian="diagonal", **kw)
    np.testing.assert_array_equal(auto.predict(X), diagonal.predict(X))
    full = jaxboost.train("logistic", X, Y, multi_hessian="full", **kw)
    assert full.train_state["multi_hessian"] == "full"
    np.testing.assert_allclose(full.predict(X), auto.predict(X), atol=1e-6)


def test_classifier_takes_multi_label_data(data):
    """An (N, T) 0/1 y is T binary labels per row, as XGBClassifier takes it: logistic on
    every label (one tree per label per round), probabilities (N, T) equal to
    XGBoost's, predict the (N, T) indicator matrix in y's dtype."""
    import pickle

    pytest.importorskip("sklearn")
    from jaxboost.sklearn import JaxBoostClassifier

    X, Ys, _ = data
    Y = Ys["logistic"].astype(np.int64)
    kw = dict(n_estimators=8, max_depth=3, learning_rate=0.3, min_child_weight=0.0)
    clf = JaxBoostClassifier(**kw).fit(X, Y, eval_set=[(X, Y)])
    theirs = xgb.XGBClassifier(tree_method="hist", **kw).fit(X, Y)
    proba = clf.predict_proba(X)
    assert proba.shape == (400, 3) and clf.multilabel_
    np.testing.assert_allclose(proba, theirs.predict_proba(X), atol=1e-6)
    pred = clf.predict(X)
    assert pred.dtype == np.int64
    np.testing.assert_array_equal(pred, (proba > 0.5).astype(np.int64))
    np.testing.assert_array_equal(clf.classes_, [0, 1, 2])
    assert clf.score(X, Y) == pytest.approx(np.mean((pred == Y).all(axis=1)))
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict_proba(X), proba)
    with pytest.raises(ValueError, match="scale_pos_weight is for two classes"):
        JaxBoostClassifier(scale_pos_weight=2.0, **kw).fit(X, Y)
    with pytest.raises(ValueError, match="eval_set\\[0\\] must be a multi-label"):
        JaxBoostClassifier(**kw).fit(X, Y, eval_set=[(X, Y[:, :2])])


def test_a_dataframe_of_targets(data):
    """A DataFrame of several columns is T targets for an entry of one output (its
    columns in order, eval sets too), as XGBoost reads it; a dict stays side data,
    which catalogue entries refuse (a dict of a label and an exposure must not train
    two targets in silence)."""
    pd = pytest.importorskip("pandas")
    X, Ys, _ = data
    Y = Ys["squared"]
    frame = pd.DataFrame(Y, columns=["first", "second", "third"])
    from_frame = jaxboost.train("squared", X, frame, eval_set=[(X, frame)], **KW)
    from_array = jaxboost.train("squared", X, Y, eval_set=[(X, Y)], **KW)
    np.testing.assert_array_equal(from_frame.predict(X), from_array.predict(X))
    assert from_frame.history == from_array.history
    with pytest.raises(DataError, match="takes one label per row"):
        jaxboost.train("poisson", X, {"label": Ys["poisson"][:, 0], "exposure": Y[:, 0]}, **KW)


def test_multi_quantile_is_xgboosts_vector_quantile_alpha(data, tmp_path):
    """objectives.multi_quantile(levels): one label, one output per level, each level's
    trees refit to its quantile: the levels' separate quantile models bit for bit, and
    XGBoost's reg:quantileerror with quantile_alpha=levels (margins to 1e-5); saved,
    exported to XGBoost and imported back with its levels."""
    from jaxboost.io import ModelFormatError
    from jaxboost.io.xgboost import from_xgboost

    X, Ys, w = data
    y = Ys["squared"][:, 0]
    levels = [0.1, 0.5, 0.9]
    bst = jaxboost.train(objectives.multi_quantile(levels), X, y, sample_weight=w, **KW)
    assert bst.predict(X).shape == (400, 3)
    for k, a in enumerate(levels):
        one = jaxboost.train(objectives.quantile(alpha=a), X, y, sample_weight=w, **KW)
        assert np.float32(one.base_margin) == bst.base_margin[k]
        np.testing.assert_array_equal(one.predict(X), bst.predict(X)[:, k])
    d = xgb.DMatrix(X, label=y, weight=w, missing=np.nan)
    params = dict(objective="reg:quantileerror", quantile_alpha=levels, tree_method="hist")
    theirs = xgb.train(dict(params, eta=0.3, max_depth=3, nthread=1), d, 8)
    margins = theirs.predict(d, output_margin=True)
    np.testing.assert_allclose(bst.predict(X, output_margin=True), margins, atol=1e-5)
    path = tmp_path / "q.json"
    bst.save(path)
    stored = json.loads(path.read_text())
    assert stored["objective"]["params"] == {"alpha": levels}
    np.testing.assert_array_equal(jaxboost.load(path).predict(X), bst.predict(X))
    exported = tmp_path / "x.json"
    bst.to_xgboost_json(exported)
    xb = xgb.Booster()
    xb.load_model(str(exported))
    np.testing.assert_allclose(xb.predict(d), bst.predict(X), atol=1e-6)
    assert from_xgboost(theirs).objective == objectives.multi_quantile(levels)
    stored["objective"]["params"]["alpha"] = [0.1, 0.5]
    with pytest.raises(ModelFormatError, match="n_outputs = 3 levels in"):
        jaxboost.io.loads(json.dumps(stored))
    with pytest.raises(ValueError, match="two or more levels in \\(0, 1\\)"):
        objectives.multi_quantile([0.5])
    with pytest.raises(ValueError, match="two or more levels in \\(0, 1\\)"):
        objectives.multi_quantile([0.0, 0.5])
    with pytest.raises(DataError, match="takes one label per row"):
        jaxboost.train(objectives.multi_quantile(levels), X, Ys["squared"], **KW)


def test_regressor_scores_a_multi_quantile_model_by_its_pinball_loss(data):
    pytest.importorskip("sklearn")
    from jaxboost.sklearn import JaxBoostRegressor

    X, Ys, _ = data
    y = Ys["squared"][:, 0]
    levels = np.array([0.2, 0.8])
    reg = JaxBoostRegressor(objective=objectives.multi_quantile(levels), n_estimators=8)
    reg.fit(X, y)
    q = reg.predict(X).astype(np.float64)  # (N, 2)
    u = y[:, None] - q
    pinball = np.maximum(levels * u, (levels - 1) * u).sum(axis=1)
    assert reg.score(X, y) == pytest.approx(-pinball.mean(), rel=1e-5)
