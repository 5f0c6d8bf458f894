"""XGBoost interop: exported models predict in XGBoost what they predict in jaxboost,
imported XGBoost models predict in jaxboost what they predict in XGBoost (NaNs
included), and unsupported or damaged models are refused with a clear message."""

import copy
import json
import warnings

import numpy as np
import pytest

import jaxboost
import objectives
from jaxboost.io import from_xgboost, to_xgboost_json

xgb = pytest.importorskip("xgboost")

TOL = 1e-5
OBJECTIVES = ("squared", "logistic", "softmax")


def xgb_load(model_or_path):
    b = xgb.Booster()
    if isinstance(model_or_path, dict):
        model_or_path = bytearray(json.dumps(model_or_path).encode())
    b.load_model(model_or_path)
    return b


# --- export ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", OBJECTIVES)
def test_exported_model_predicts_the_same_in_xgboost(interop_data, interop_models, name, tmp_path):
    X, _ = interop_data
    bst = interop_models[name]
    path = tmp_path / "model.json"
    model = to_xgboost_json(bst, path)
    assert json.loads(path.read_text()) == json.loads(json.dumps(model))
    xb = xgb_load(str(path))
    d = xgb.DMatrix(X, missing=np.nan)
    np.testing.assert_allclose(xb.predict(d), bst.predict(X), atol=TOL, rtol=0)
    np.testing.assert_allclose(
        xb.predict(d, output_margin=True), bst.predict(X, output_margin=True), atol=TOL, rtol=0
    )
    gm = model["learner"]["gradient_booster"]["model"]
    K = bst.n_outputs
    assert len(gm["trees"]) == bst.ensemble.n_trees == int(xb.num_boosted_rounds()) * K
    assert gm["tree_info"] == [t % K for t in range(bst.ensemble.n_trees)]
    # Node arrays are consistent: every non-root node has the parent that points at it.
    for tree in gm["trees"]:
        n = int(tree["tree_param"]["num_nodes"])
        assert all(
            len(tree[k]) == n
            for k in (
                "left_children",
                "right_children",
                "parents",
                "split_indices",
                "split_conditions",
                "default_left",
                "base_weights",
                "loss_changes",
                "sum_hessian",
                "split_type",
            )
        )
        for i, (a, b) in enumerate(zip(tree["left_children"], tree["right_children"])):
            if a != -1:
                assert tree["parents"][a] == tree["parents"][b] == i


def test_base_score_conventions(interop_models):
    lmp = {
        n: to_xgboost_json(interop_models[n])["learner"]["learner_model_param"] for n in OBJECTIVES
    }
    sq, lg, sm = interop_models["squared"], interop_models["logistic"], interop_models["softmax"]
    assert float(lmp["squared"]["base_score"].strip("[]")) == pytest.approx(sq.base_margin)
    p = float(lmp["logistic"]["base_score"].strip("[]"))
    assert p == pytest.approx(1 / (1 + np.exp(-lg.base_margin)), rel=1e-6)
    vec = [float(v) for v in lmp["softmax"]["base_score"].strip("[]").split(",")]
    np.testing.assert_allclose(vec, sm.base_margin, rtol=1e-7)
    assert lmp["softmax"]["num_class"] == "3" and lmp["logistic"]["num_class"] == "0"


@pytest.mark.parametrize("base", [6.0, -20.0, 40.0])
def test_extreme_logistic_base_margins_are_carried_exactly(interop_data, base):
    # XGBoost keeps a logistic base score as a float32 probability clamped to
    # [1e-6, 1 - 1e-6]: what its logit misses is added to the first tree's leaves.
    X, labels = interop_data
    bst = jaxboost.train(
        "logistic", X, labels["logistic"], n_rounds=6, max_depth=3, base_margin=base, verbose=False
    )
    xb = xgb_load(to_xgboost_json(bst))
    np.testing.assert_allclose(
        xb.predict(xgb.DMatrix(X), output_margin=True),
        bst.predict(X, output_margin=True),
        atol=TOL,
        rtol=0,
    )


def test_feature_names_are_exported(interop_data, interop_models):
    X, _ = interop_data
    bst = interop_models["squared"][:]
    bst.feature_names = ["a", "b", "c", "d", "e"]
    model = to_xgboost_json(bst)
    assert model["learner"]["feature_names"] == ["a", "b", "c", "d", "e"]
    xb = xgb_load(model)
    assert xb.feature_names == ["a", "b", "c", "d", "e"]
    assert set(xb.get_score()) <= {"a", "b", "c", "d", "e"}


def test_export_refuses_what_it_cannot_write(interop_models):
    plain = interop_models["squared"][:]
    plain.objective = lambda t, p: 0.5 * (t - p) ** 2  # XGBoost could not know its link
    with pytest.raises(ValueError, match="objectives.squared, objectives.logistic"):
        to_xgboost_json(plain)
    huber = interop_models["squared"][:]
    huber.objective = objectives.huber
    with pytest.raises(ValueError, match="objectives.huber"):
        to_xgboost_json(huber)
    vector = interop_models["softmax"][:]
    vector.trees_per_round = 1  # as multi_strategy="multi_output_tree" models have
    with pytest.raises(ValueError, match="one_output_per_tree"):
        vector.to_xgboost_json()


# --- import ----------------------------------------------------------------------------

XGB_CASES = [
    ("reg:squarederror", "squared", {}),
    ("binary:logistic", "logistic", {}),
    ("reg:logistic", "logistic", {}),
    ("multi:softprob", "softmax", {"num_class": 3}),
    ("multi:softmax", "softmax", {"num_class": 3}),
    (
        "multi:softprob",
        "softmax",
        {"num_class": 3, "num_parallel_tree": 2, "subsample": 0.8, "colsample_bynode": 0.7},
    ),
    ("reg:squarederror", "squared", {"tree_method": "exact", "max_depth": 6}),
    ("reg:squarederror", "squared", {"grow_policy": "lossguide", "max_leaves": 24, "max_depth": 0}),
]


@pytest.mark.parametrize(
    "objective,kind,extra", XGB_CASES, ids=[f"{c[0]}-{len(c[2])}" for c in XGB_CASES]
)
def test_imported_model_predicts_what_xgboost_predicts(interop_data, objective, kind, extra):
    X, labels = interop_data
    params = {"objective": objective, "max_depth": 3, "eta": 0.3, "seed": 0, **extra}
    names = [f"col{i}" for i in range(X.shape[1])]
    d = xgb.DMatrix(X, label=labels[kind], missing=np.nan, feature_names=names)
    xb = xgb.train(params, d, 6)
    bst = from_xgboost(xb)
    assert bst.objective.name == kind and bst.feature_names == names
    margin = xb.predict(d, output_margin=True)
    np.testing.assert_allclose(bst.predict(X, output_margin=True), margin, atol=TOL, rtol=0)
    response = margin if objective == "multi:softmax" else xb.predict(d)
    if objective == "multi:softmax":  # XGBoost predicts labels; jaxboost probabilities
        response = bst.predict(X, output_margin=True)
        np.testing.assert_array_equal(bst.predict(X).argmax(1), xb.predict(d))
    else:
        np.testing.assert_allclose(bst.predict(X), response, atol=TOL, rtol=0)


def test_import_accepts_paths_dicts_bytes_and_estimators(interop_data, tmp_path):
    X, labels = interop_data
    est = xgb.XGBClassifier(n_estimators=4, max_depth=3).fit(X, labels["logistic"])
    expected = est.predict_proba(X)[:, 1]
    raw = est.get_booster().save_raw(raw_format="json")
    path = tmp_path / "m.json"
    path.write_bytes(bytes(raw))
    for source in (est, est.get_booster(), raw, bytes(raw), json.loads(raw), str(path), path):
        np.testing.assert_allclose(from_xgboost(source).predict(X), expected, atol=TOL)


def test_early_stopped_model_imports_its_best_iteration(interop_data, tmp_path):
    """from_xgboost ignored best_iteration (issue 28, item 8): now it carries it and
    best_score; every tree is kept (xgboost.Booster.predict uses them all) and the
    slice to the best round predicts what the scikit-learn estimator predicts."""
    X, labels = interop_data
    y = labels["logistic"]
    est = xgb.XGBClassifier(
        n_estimators=60, max_depth=3, learning_rate=0.5, early_stopping_rounds=3
    ).fit(X[:200], y[:200], eval_set=[(X[200:], y[200:])], verbose=False)
    assert est.best_iteration + 1 < est.get_booster().num_boosted_rounds()
    bst = from_xgboost(est)
    assert bst.best_iteration == est.best_iteration
    assert bst.best_score == pytest.approx(est.best_score, rel=1e-12)
    assert len(bst) == est.get_booster().num_boosted_rounds()
    np.testing.assert_allclose(bst.predict(X), est.get_booster().predict(xgb.DMatrix(X)), atol=TOL)
    np.testing.assert_allclose(
        bst[: bst.best_iteration + 1].predict(X), est.predict_proba(X)[:, 1], atol=TOL
    )
    path = tmp_path / "m.json"
    bst.save(path)
    assert jaxboost.load(path).best_iteration == est.best_iteration
    plain = from_xgboost(xgb.XGBClassifier(n_estimators=3).fit(X, y))
    assert plain.best_iteration is None and plain.best_score is None


def test_imported_bins_are_consistent_and_the_model_saves(interop_data, tmp_path):
    X, labels = interop_data
    d = xgb.DMatrix(X, label=labels["softmax"])
    xb = xgb.train(dict(objective="multi:softprob", num_class=3, max_depth=3), d, 4)
    bst = from_xgboost(xb)
    e = bst.ensemble
    split = ~e.is_leaf & (e.cover > 0)
    # tbin and threshold agree through the bin edges (what jaxboost.io checks).
    np.testing.assert_array_equal(
        bst.bin_edges.threshold(e.feature, e.tbin)[split], e.threshold[split]
    )
    bst.save(tmp_path / "m.json")
    back = jaxboost.load(tmp_path / "m.json")
    np.testing.assert_array_equal(back.predict(X), bst.predict(X))
    # Continued training starts from the imported model, whose only cuts are its trees'
    # thresholds: they are merged with X's own cuts (as XGBoost's xgb_model= cuts the
    # data afresh), the old trees' bins moved to them. The old trees predict as before,
    # the new ones split between the imported thresholds too, and no warning is due.
    with warnings.catch_warnings():
        warnings.simplefilter("error", jaxboost.DataWarning)
        more = jaxboost.train(
            bst.objective, X, labels["softmax"], n_rounds=2, max_depth=3, init_model=bst
        )
    assert len(more) == len(bst) + 2
    np.testing.assert_array_equal(more[: len(bst)].predict(X), bst.predict(X))
    e = more.ensemble
    split = ~e.is_leaf & (e.cover > 0)
    np.testing.assert_array_equal(
        more.bin_edges.threshold(e.feature, e.tbin)[split], e.threshold[split]
    )
    cuts = {float(c) for f in range(X.shape[1]) for c in bst.bin_edges.cuts[f]}
    new_split = split[len(bst) * 3 :]
    assert not set(e.threshold[len(bst) * 3 :][new_split].tolist()) <= cuts
    more.save(tmp_path / "more.json")
    np.testing.assert_array_equal(jaxboost.load(tmp_path / "more.json").predict(X), more.predict(X))


def test_continued_import_fits_as_xgboosts_continuation():
    """5 XGBoost rounds imported, then 20 here: the training fit of XGBoost's own
    continuation (xgb_model=, which cuts the data afresh) or better; with the import's
    cuts alone (its trees' 33 thresholds on 4 features) it reached RMSE 0.76 against
    XGBoost's 0.60."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(800, 4)).astype(np.float32)
    y = (np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=800)).astype(np.float32)
    d = xgb.DMatrix(X, label=y)
    params = dict(tree_method="hist", max_depth=3, eta=0.3, nthread=1)
    xb = xgb.train(params, d, 5)
    want = float(np.sqrt(np.mean((xgb.train(params, d, 20, xgb_model=xb).predict(d) - y) ** 2)))
    imported = from_xgboost(xb)
    more = jaxboost.train(
        "squared", X, y, n_rounds=20, max_depth=3, learning_rate=0.3, init_model=imported
    )
    got = float(np.sqrt(np.mean((more.predict(X) - y) ** 2)))
    assert got <= 1.05 * want, (got, want)


def test_continued_import_on_sparse_rows_recuts_as_on_dense_ones():
    """A CSR matrix (absent entries are missing values) re-cuts an imported model's few
    cuts as its dense form with NaN does: the same model, and XGBoost's continuation's
    fit or better. Before, sparse input kept the import's cuts (15, 5, 7, 2), without a
    warning, and reached RMSE 0.52 against XGBoost's 0.37."""
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = rng.normal(size=(800, 4)).astype(np.float32)
    X[rng.random(X.shape) < 0.3] = 0.0
    y = (np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=800)).astype(np.float32)
    Xs = sp.csr_matrix(X)
    d = xgb.DMatrix(Xs, label=y)
    params = dict(tree_method="hist", max_depth=3, eta=0.3, nthread=1)
    xb = xgb.train(params, d, 5)
    want = float(np.sqrt(np.mean((xgb.train(params, d, 20, xgb_model=xb).predict(d) - y) ** 2)))
    imported = from_xgboost(xb)
    assert int(imported.bin_edges.n_cuts.max()) < 20
    kw = dict(n_rounds=20, max_depth=3, learning_rate=0.3, init_model=imported)
    sparse = jaxboost.train("squared", Xs, y, **kw)
    dense = jaxboost.train("squared", np.where(X == 0, np.nan, X), y, **kw)
    np.testing.assert_array_equal(sparse.bin_edges.n_cuts, dense.bin_edges.n_cuts)
    assert int(sparse.bin_edges.n_cuts.min()) > 100
    np.testing.assert_array_equal(sparse.predict(Xs), dense.predict(np.where(X == 0, np.nan, X)))
    got = float(np.sqrt(np.mean((sparse.predict(Xs) - y) ** 2)))
    assert got <= 1.05 * want, (got, want)


@pytest.mark.parametrize("name", OBJECTIVES)
def test_round_trips(interop_data, interop_models, name):
    X, _ = interop_data
    bst = interop_models[name]
    back = from_xgboost(to_xgboost_json(bst))
    np.testing.assert_allclose(
        back.predict(X, output_margin=True), bst.predict(X, output_margin=True), atol=TOL, rtol=0
    )
    assert back.n_outputs == bst.n_outputs and len(back) == len(bst)
    np.testing.assert_allclose(
        back.feature_importance("total_gain")["f0"],
        bst.feature_importance("total_gain")["f0"],
        rtol=1e-6,
    )
    again = to_xgboost_json(back)["learner"]["gradient_booster"]["model"]["trees"]
    first = to_xgboost_json(bst)["learner"]["gradient_booster"]["model"]["trees"]
    assert [t["split_conditions"] for t in again] == [t["split_conditions"] for t in first]


# --- refusals --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def xgb_json(interop_data):
    X, labels = interop_data
    xb = xgb.train(
        dict(objective="reg:squarederror", max_depth=2), xgb.DMatrix(X, label=labels["squared"]), 2
    )
    return json.loads(xb.save_raw(raw_format="json"))


def _damaged(model, edit):
    m = copy.deepcopy(model)
    edit(m)
    return m


def _tree0(m):
    return m["learner"]["gradient_booster"]["model"]["trees"][0]


def _set(d, key, value):
    d[key] = value


DAMAGE = [
    ("no learner", lambda m: m.pop("learner"), "no 'learner'"),
    (
        "dart",
        lambda m: _set(m["learner"]["gradient_booster"], "name", "dart"),
        "weight_drop of a dart model",
    ),
    (
        "gblinear",
        lambda m: _set(m["learner"]["gradient_booster"], "name", "gblinear"),
        "'gblinear'",
    ),
    (
        "objective",
        lambda m: _set(m["learner"]["objective"], "name", "binary:hinge"),
        "binary:hinge",
    ),
    (
        "categorical split",
        lambda m: _set(_tree0(m), "split_type", [1] + _tree0(m)["split_type"][1:]),
        "categorical",
    ),
    (
        "categorical feature",
        lambda m: _set(m["learner"], "feature_types", ["c"] * 5),
        "categorical",
    ),
    ("short array", lambda m: _tree0(m)["loss_changes"].pop(), "loss_changes"),
    ("child outside", lambda m: _tree0(m)["left_children"].__setitem__(0, 999), "outside the tree"),
    ("one child", lambda m: _tree0(m)["right_children"].__setitem__(0, -1), "one child"),
    (
        "cycle",
        lambda m: _tree0(m)["left_children"].__setitem__(0, _tree0(m)["right_children"][0]),
        "reached twice",
    ),
    ("feature", lambda m: _tree0(m)["split_indices"].__setitem__(0, 99), "num_feature"),
    (
        "base score",
        lambda m: _set(m["learner"]["learner_model_param"], "base_score", "x"),
        "base_score",
    ),
    (
        "vector leaves",
        lambda m: _set(_tree0(m)["tree_param"], "size_leaf_vector", "3"),
        "vector leaves",
    ),
    (
        "best_iteration",
        lambda m: _set(m["learner"], "attributes", {"best_iteration": "999"}),
        "best_iteration",
    ),
    ("best_score", lambda m: _set(m["learner"], "attributes", {"best_score": "nan"}), "best_score"),
]


@pytest.mark.parametrize("what,edit,message", DAMAGE, ids=[d[0] for d in DAMAGE])
def test_import_refuses_unsupported_or_damaged_models(xgb_json, what, edit, message):
    with pytest.raises(ValueError, match=message):
        from_xgboost(_damaged(xgb_json, edit))


def test_import_refuses_non_json_and_other_types(tmp_path):
    path = tmp_path / "model.ubj"
    path.write_bytes(b"{\x00\x01binary")
    with pytest.raises(ValueError, match="not an XGBoost JSON model"):
        from_xgboost(path)
    with pytest.raises(TypeError, match="xgboost.Booster"):
        from_xgboost(42)


def test_import_reads_json_as_strictly_as_model_files(xgb_json, tmp_path):
    # One reader for both formats: duplicate keys and bytes that are not UTF-8 are
    # refused; XGBoost's Infinity literals (a threshold every present value passes) are
    # read, as XGBoost writes them.
    text = json.dumps(xgb_json)
    with pytest.raises(ValueError, match="not an XGBoost JSON model.*duplicate key"):
        from_xgboost(('{"version": [3, 2, 0], ' + text[1:]).encode())
    with pytest.raises(ValueError, match="not an XGBoost JSON model.*UTF-8"):
        from_xgboost(text.encode()[:-1] + b"\xff}")
    m = copy.deepcopy(xgb_json)
    tree = m["learner"]["gradient_booster"]["model"]["trees"][0]
    assert tree["left_children"][0] != -1  # the root splits
    tree["split_conditions"][0] = float("inf")
    path = tmp_path / "inf.json"
    path.write_text(json.dumps(m))
    assert "Infinity" in path.read_text()
    bst = from_xgboost(path)
    assert np.isposinf(bst.ensemble.threshold[0][0])


def test_import_refuses_unequal_trees_per_class(interop_data):
    X, labels = interop_data
    xb = xgb.train(
        dict(objective="multi:softprob", num_class=3, max_depth=2),
        xgb.DMatrix(X, label=labels["softmax"]),
        2,
    )
    m = json.loads(xb.save_raw(raw_format="json"))
    gm = m["learner"]["gradient_booster"]["model"]
    gm["trees"].pop()
    gm["tree_info"].pop()
    with pytest.raises(ValueError, match="trees per class"):
        from_xgboost(m)


def test_import_with_more_thresholds_than_bins_warns_and_predicts(interop_data, monkeypatch):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 1)).astype(np.float32)
    y = np.sin(4 * X[:, 0]) + 0.3 * rng.normal(size=400)
    d = xgb.DMatrix(X, label=y)
    xb = xgb.train(
        dict(tree_method="exact", max_depth=4, eta=0.3, min_child_weight=0, subsample=0.5, seed=1),
        d,
        60,
    )
    # more than 254 thresholds: wide (uint16) bin edges keep them all
    bst = from_xgboost(xb)
    assert bst.params.max_bin == int(bst.bin_edges.n_cuts[0]) + 2 > 256
    np.testing.assert_allclose(bst.predict(X), xb.predict(d), atol=TOL, rtol=0)
    # more than the widest edges hold (65,534; 200 here): a subset, with a warning
    import jaxboost.io.xgboost as reader

    monkeypatch.setattr(reader, "_WIDE_CUTS", 200)
    with pytest.warns(UserWarning, match="distinct thresholds"):
        bst = from_xgboost(xb)
    np.testing.assert_allclose(bst.predict(X), xb.predict(d), atol=TOL, rtol=0)


@pytest.mark.parametrize("score", [0.999, 2e-6, 0.37])
def test_imported_logistic_base_score_matches_xgboost(interop_data, score):
    X, labels = interop_data
    d = xgb.DMatrix(X, label=labels["logistic"])
    xb = xgb.train(dict(objective="binary:logistic", base_score=score, max_depth=2), d, 2)
    np.testing.assert_allclose(
        from_xgboost(xb).predict(X, output_margin=True),
        xb.predict(d, output_margin=True),
        atol=TOL,
        rtol=0,
    )


def test_continued_model_takes_a_deeper_max_depth(tmp_path):
    """An imported model is laid out as deep as its deepest tree, often less than the
    max_depth it was trained with (and a user may continue any model deeper, as XGBoost
    allows): its trees move to the deeper layout unchanged and the new trees grow to
    the new max_depth. A shallower max_depth than the trees is refused."""
    from jaxboost.sklearn import JaxBoostRegressor

    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] + np.sin(3 * X[:, 2])).astype(np.float32)
    xr = xgb.XGBRegressor(n_estimators=3, max_depth=6, min_child_weight=60, n_jobs=1).fit(X, y)
    imported = from_xgboost(xr)
    assert imported.params.max_depth < 6  # its trees stop early
    est = JaxBoostRegressor(n_estimators=4, max_depth=6, min_child_weight=1).fit(X, y, xgb_model=xr)
    bst = est.get_booster()
    assert bst.params.max_depth == 6 and len(bst) == 7
    np.testing.assert_allclose(bst[:3].predict(X), xr.predict(X), atol=1e-6)
    split_at = np.flatnonzero((~bst.ensemble.is_leaf[3:]).any(0))  # heap positions
    assert np.floor(np.log2(split_at + 1)).max() >= imported.params.max_depth  # deeper
    bst.save(tmp_path / "m.json")
    np.testing.assert_array_equal(jaxboost.load(tmp_path / "m.json").predict(X), bst.predict(X))
    with pytest.raises(ValueError, match=r"needs max_depth >= 6, got 4"):
        jaxboost.train("squared", X, y, n_rounds=1, max_depth=4, init_model=bst)


def test_imported_categorical_model_saves_loads_and_continues(tmp_path):
    """An XGBoost model of a DataFrame with a category column records its category
    names: the import's category feature holds one code per name, so its file loads
    again (it held all 255 codes, and loading refused 5 names for them); continued on
    the frame, its numeric cuts are merged with the data's (the codes kept) and the fit
    is XGBoost's continuation's (it was 0.41 against 0.24 with the imported cuts)."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame(
        {
            "a": rng.normal(size=n).astype(np.float32),
            "b": rng.normal(size=n).astype(np.float32),
            "c": pd.Categorical(rng.choice(list("pqrst"), n)),
        }
    )
    y = (2 * df.a + np.sin(2 * df.b) + 1.5 * (df.c == "q") + 0.2 * rng.normal(size=n)).astype(
        np.float32
    )
    kw = dict(max_depth=3, enable_categorical=True, tree_method="hist", n_jobs=1)
    xr = xgb.XGBRegressor(n_estimators=5, **kw).fit(df, y)
    imported = from_xgboost(xr)
    np.testing.assert_allclose(imported.predict(df), xr.predict(df), atol=1e-5)
    imported.save(tmp_path / "imported.json")
    back = jaxboost.load(tmp_path / "imported.json")
    np.testing.assert_array_equal(back.predict(df), imported.predict(df))
    with warnings.catch_warnings():
        warnings.simplefilter("error", jaxboost.DataWarning)
        more = jaxboost.train("squared", df, y, n_rounds=20, max_depth=3, init_model=imported)
    np.testing.assert_allclose(more[:5].predict(df), xr.predict(df), atol=1e-5)
    want = xgb.XGBRegressor(n_estimators=20, **kw).fit(df, y, xgb_model=xr).predict(df)
    rmse = lambda p: float(np.sqrt(np.mean((p - y) ** 2)))  # noqa: E731
    assert rmse(more.predict(df)) <= 1.05 * rmse(want)
    more.save(tmp_path / "more.json")
    np.testing.assert_array_equal(
        jaxboost.load(tmp_path / "more.json").predict(df), more.predict(df)
    )
