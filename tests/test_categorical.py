"""Categorical features (issue 17, item 2): splits on sets of categories as XGBoost 3.2's
``tree_method="hist"`` with ``enable_categorical=True`` makes them.

Parity: on data whose numeric column has few distinct values (so its bins are XGBoost's)
and whose categorical columns are codes, the trees, predictions, SHAP values and gains
equal XGBoost's, for one-vs-rest splits, partition splits and the ``max_cat_threshold``
cap. Then: the model file and XGBoost JSON both ways, unseen categories, pandas/polars
columns, and the errors of bad codes. Every model here has 300 rows, 3 features and depth
3, so the tests share one compiled training program.
"""

import json

import numpy as np
import pytest

import jaxboost
from jaxboost import io
from jaxboost.errors import DataError, ModelFormatError

xgb = pytest.importorskip("xgboost")

N, ROUNDS, DEPTH, LR = 300, 5, 3, 0.3
FT = ["c", "q", "c"]  # XGBoost's feature types of the columns below


def make_data(seed=0, nan_share=0.1):
    """Column 0: 6 categories (partition splits at XGBoost's default
    max_cat_to_onehot=4), column 1: numeric with 4 values, column 2: 3 categories
    (one-vs-rest); NaN in the categorical columns."""
    rng = np.random.default_rng(seed)
    c6 = rng.integers(0, 6, N).astype(np.float32)
    x = rng.integers(0, 4, N).astype(np.float32)
    c3 = rng.integers(0, 3, N).astype(np.float32)
    effect = np.array([0.3, -1.0, 2.0, 0.5, -0.2, 1.1])
    y = effect[c6.astype(int)] + 0.5 * x - 0.8 * (c3 == 1) + 0.3 * rng.normal(size=N)
    for col in (c6, c3):
        col[rng.random(N) < nan_share] = np.nan
    return np.c_[c6, x, c3], y.astype(np.float32)


@pytest.fixture(scope="module")
def data():
    return make_data()


def ours(X, y, **kw):
    p = dict(n_rounds=ROUNDS, max_depth=DEPTH, learning_rate=LR, base_margin=0.5, verbose=False)
    p.update(kw)
    return jaxboost.train(
        "squared",
        X,
        y,
        **(
            {"categorical_features": [0, 2]}
            if "categorical_features" not in kw and not hasattr(X, "columns")
            else {}
        ),
        **p,
    )


def dmatrix(X, y=None):
    return xgb.DMatrix(X, y, feature_types=FT, enable_categorical=True)


def theirs(X, y, **kw):
    p = dict(tree_method="hist", max_depth=DEPTH, eta=LR, base_score=0.5, nthread=1)
    p.update(kw)
    return xgb.train(p, dmatrix(X, y), ROUNDS)


# --- parity with XGBoost ----------------------------------------------------------------

SETTINGS = [
    dict(),  # defaults: column 0 partition, column 2 one-hot
    dict(max_cat_to_onehot=10),  # both one-vs-rest
    dict(max_cat_to_onehot=1),  # both partition
    dict(max_cat_to_onehot=1, max_cat_threshold=2),  # one category per side at most
    dict(max_cat_to_onehot=1, reg_lambda=0.0, min_child_weight=5.0),
]


@pytest.mark.parametrize(
    "kw", SETTINGS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "defaults"
)
def test_predictions_equal_xgboost_hist(data, kw):
    X, y = data
    bst, ref = ours(X, y, **kw), theirs(X, y, **kw)
    d = dmatrix(X)
    np.testing.assert_allclose(bst.predict(X), ref.predict(d), rtol=1e-6, atol=1e-6)
    # the same splits: categorical gains and importances agree too
    ours_gain = bst.feature_importance("total_gain")
    ref_gain = ref.get_score(importance_type="total_gain")
    assert ours_gain.keys() == ref_gain.keys()
    for f in ours_gain:
        assert ours_gain[f] == pytest.approx(ref_gain[f], rel=1e-5)
    # SHAP values over categorical splits (path-dependent TreeSHAP, as XGBoost's)
    np.testing.assert_allclose(
        bst.predict(X, pred_contribs=True), ref.predict(d, pred_contribs=True), atol=2e-6
    )


def _root_left_categories(bst, tree=0):
    from jaxboost.model.explain import left_categories

    return left_categories(bst, tree, 0)


def test_one_vs_rest_below_max_cat_to_onehot_partition_above(data):
    """Below max_cat_to_onehot a split sends one category right (XGBoost's one-hot
    convention: the chosen category is the one in its right-going set); otherwise the
    categories sorted by G/H split into any two groups, at most max_cat_threshold - 1
    gathered on the scanned side."""
    X, y = data
    one = ours(X, y, max_cat_to_onehot=10, n_rounds=1, max_depth=1)
    part = ours(X, y, max_cat_to_onehot=1, n_rounds=1, max_depth=1)
    assert int(one.ensemble.feature[0, 0]) == int(part.ensemble.feature[0, 0]) == 0
    assert len(_root_left_categories(one)) == 5  # one category of six goes right
    left = _root_left_categories(part)
    assert 1 < len(left) < 5  # a real partition
    # the partition is a prefix of the categories sorted by their Newton weight -G/H
    g = 0.5 - y  # squared error at the base margin 0.5, h = 1
    c = X[:, 0]
    w = np.array([-g[c == k].sum() / ((c == k).sum() + 1.0) for k in range(6)])
    assert set(left) in ({int(k) for k in np.argsort(w, kind="stable")[i:]} for i in range(1, 6))
    capped = ours(X, y, max_cat_to_onehot=1, max_cat_threshold=2, n_rounds=1, max_depth=1)
    assert len(_root_left_categories(capped)) in (1, 5)
    assert "f0:{" in part.dump()


# --- unseen categories -----------------------------------------------------------------


def test_unseen_categories_go_the_default_way_as_in_xgboost():
    """A code beyond the largest seen in training goes where missing values go. XGBoost
    sends a code outside a split's set left, which is its default way when training had
    no missing value in the column: there the two agree code for code. A code inside
    the range that training never saw (a gap) goes the default way here too; XGBoost
    sends it wherever its empty bin fell in the sorted order."""
    X, y = make_data(seed=1, nan_share=0.0)
    X[X[:, 0] == 4, 0] = 3  # code 4 of column 0 is never seen: a gap below the largest
    bst, ref = ours(X, y), theirs(X, y)
    np.testing.assert_allclose(bst.predict(X), ref.predict(dmatrix(X)), rtol=1e-6, atol=1e-6)
    cat_nodes = ~bst.ensemble.is_leaf & np.isnan(bst.ensemble.threshold)
    assert bst.ensemble.default_left[cat_nodes].all()  # no NaN in training: left
    rows = np.array([[9, 2, 1], [250, 0, 2], [1, 3, 7], [200, 1, 40], [4, 1, 0]], np.float32)
    missing = rows.copy()
    missing[[0, 1, 3, 4], 0] = np.nan
    missing[2:4, 2] = np.nan
    np.testing.assert_array_equal(bst.predict(rows), bst.predict(missing))
    beyond = rows[:4]
    np.testing.assert_allclose(
        bst.predict(beyond), ref.predict(dmatrix(beyond)), rtol=1e-6, atol=1e-6
    )
    np.testing.assert_allclose(
        bst.predict(missing), ref.predict(dmatrix(missing)), rtol=1e-6, atol=1e-6
    )


def test_unseen_categories_follow_missing_values_where_default_is_learned(data):
    X, y = data  # with NaN: some splits send missing values right
    bst = ours(X, y, max_cat_to_onehot=1)
    cat_nodes = ~bst.ensemble.is_leaf & np.isnan(bst.ensemble.threshold)
    assert (~bst.ensemble.default_left[cat_nodes]).any()
    unseen = np.array([[6, 1, 3], [100, 0, 255], [255, 2, 1000]], np.float32)
    missing = np.array([[np.nan, 1, np.nan], [np.nan, 0, np.nan], [np.nan, 2, np.nan]], np.float32)
    np.testing.assert_array_equal(bst.predict(unseen), bst.predict(missing))
    np.testing.assert_array_equal(bst.predict_leaf(unseen), bst.predict_leaf(missing))
    np.testing.assert_allclose(
        bst.predict(unseen, pred_contribs=True), bst.predict(missing, pred_contribs=True), atol=1e-6
    )


# --- model file and XGBoost JSON ----------------------------------------------------------

PROBE = np.array([[0, 1, 0], [5, 3, 2], [np.nan, 0, 1], [7, 2, np.nan], [254, 1, 9]], np.float32)


def test_model_file_round_trip(data, tmp_path):
    X, y = data
    bst = ours(X, y)
    path = tmp_path / "m.json"
    bst.save(path)
    back = jaxboost.load(path)
    Z = np.r_[X, PROBE]
    np.testing.assert_array_equal(back.predict(Z), bst.predict(Z))
    np.testing.assert_array_equal(back.ensemble.cat_bits, bst.ensemble.cat_bits)
    assert back.categorical_features == (0, 2)
    assert back.dump() == bst.dump()
    d = json.loads(path.read_text())
    assert d["bin_edges"]["categorical"] == [0, 2]
    assert d["bin_edges"]["categories"] == [[0, 1, 2, 3, 4, 5], [0, 1, 2]]
    # staged predictions and continued training read the file's trees
    np.testing.assert_array_equal(back.staged_predict(X)[-1], bst.predict(X))
    more = jaxboost.train(
        "squared",
        X,
        y,
        n_rounds=2,
        max_depth=DEPTH,
        learning_rate=LR,
        init_model=back,
        verbose=False,
    )
    np.testing.assert_array_equal(more.predict(X), ours(X, y, n_rounds=ROUNDS + 2).predict(X))


def _hostile(d, edit):
    d = json.loads(json.dumps(d))
    edit(d)
    return d


def test_hostile_files_are_refused(data):
    X, y = data
    d = io.to_dict(ours(X, y))
    tree, node = next(
        (t, i)
        for t, row in enumerate(d["trees"]["categories"])
        for i, v in enumerate(row)
        if v is not None
    )

    def set_codes(codes):
        return lambda d: d["trees"]["categories"][tree].__setitem__(node, codes)

    cases = {
        "out of range": (set_codes([0, 300]), r"categories\[\d+\]\[\d+\]\[1\]"),
        "negative": (set_codes([-1]), r"integer >= 0|in \[0"),
        "not ascending": (set_codes([2, 1]), "ascending"),
        "unseen code": (lambda d: set_codes([6])(d), "seen in training"),
        "not a list": (set_codes("0,1"), "list of integers"),
        "numeric node": (
            lambda d: d["trees"]["categories"][tree].__setitem__(
                next(i for i, v in enumerate(d["trees"]["categories"][tree]) if v is None), [0]
            ),
            "null",
        ),
        "threshold at a categorical split": (
            lambda d: d["trees"]["threshold"][tree].__setitem__(node, 1.5),
            "null",
        ),
        "seen code out of range": (
            lambda d: d["bin_edges"]["categories"][0].append(999),
            "categories",
        ),
        "cuts do not match": (lambda d: d["bin_edges"]["cuts"][0].__setitem__(0, 0.25), "cuts"),
        "no categories": (lambda d: d["trees"].pop("categories"), "categories"),
        "labels of a numeric feature": (
            lambda d: d.__setitem__("category_labels", [{"feature": 1, "labels": ["a"]}]),
            "categorical",
        ),
    }
    for edit, match in cases.values():
        with pytest.raises(ModelFormatError, match=match):
            io.from_dict(_hostile(d, edit))


@pytest.mark.parametrize("onehot", [4, 1])
def test_xgboost_json_export_and_import(data, tmp_path, onehot):
    X, y = data
    Z = np.r_[X, PROBE]
    bst = ours(X, y, max_cat_to_onehot=onehot)
    path = tmp_path / "x.json"
    model = bst.to_xgboost_json(path)
    assert model["learner"]["feature_types"] == ["c", "float", "c"]
    loaded = xgb.Booster()
    loaded.load_model(path)
    np.testing.assert_allclose(loaded.predict(dmatrix(Z)), bst.predict(Z), rtol=1e-6, atol=1e-6)
    # an XGBoost categorical model read back predicts and explains as XGBoost does
    ref = theirs(X, y, max_cat_to_onehot=onehot)
    imported = jaxboost.from_xgboost(ref)
    assert imported.categorical_features == (0, 2)
    np.testing.assert_allclose(imported.predict(Z), ref.predict(dmatrix(Z)), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(
        imported.predict(X, pred_contribs=True),
        ref.predict(dmatrix(X), pred_contribs=True),
        atol=2e-6,
    )
    again = io.loads(io.dumps(imported))
    np.testing.assert_array_equal(again.predict(Z), imported.predict(Z))


def test_xgboost_import_refuses_categories_it_cannot_hold(data):
    X, y = data
    model = json.loads(theirs(X, y).save_raw(raw_format="json"))
    tree = model["learner"]["gradient_booster"]["model"]["trees"][0]
    tree["categories"][0] = 300
    with pytest.raises(ModelFormatError, match="category 300"):
        jaxboost.from_xgboost(model)
    tree["categories_nodes"] = tree["categories_nodes"][1:]
    with pytest.raises(ModelFormatError, match="categories_nodes"):
        jaxboost.from_xgboost(model)


# --- DataFrames ---------------------------------------------------------------------------

LABELS6, LABELS3 = list("abcdef"), ["low", "mid", "high"]


def _frame(X):
    pd = pytest.importorskip("pandas")

    def cat(col, labels):
        return pd.Categorical.from_codes(np.nan_to_num(col, nan=-1).astype(int), labels)

    return pd.DataFrame(
        {"city": cat(X[:, 0], LABELS6), "x": X[:, 1], "size": cat(X[:, 2], LABELS3)}
    )


def test_pandas_categories_give_the_model_of_their_codes(data):
    X, y = data
    df = _frame(X)
    bst, codes = ours(df, y), ours(X, y)
    assert bst.categorical_features == (0, 2)
    assert (
        bst.dump().replace("city", "f0").replace("[x<", "[f1<").replace("size", "f2")
        == codes.dump()
    )
    np.testing.assert_array_equal(bst.predict(df), codes.predict(X))
    assert bst.category_labels == {0: LABELS6, 2: LABELS3}
    # categories in another order, or some the model never saw: re-coded by label
    other = df.assign(
        city=df["city"].cat.reorder_categories(LABELS6[::-1]),
        size=df["size"].cat.add_categories(["huge"]),
    )
    other.loc[0, "size"] = "huge"
    expected = X.copy()
    expected[0, 2] = np.nan
    np.testing.assert_array_equal(bst.predict(other), codes.predict(expected))
    back = io.loads(io.dumps(bst))
    assert back.category_labels == bst.category_labels
    np.testing.assert_array_equal(back.predict(other), bst.predict(other))
    # evaluation sets are re-coded the same way
    ev = jaxboost.train(
        "squared",
        df,
        y,
        n_rounds=ROUNDS,
        max_depth=DEPTH,
        base_margin=0.5,
        learning_rate=LR,
        eval_set=[(other, y)],
        eval_metric="rmse",
        verbose=False,
    )
    rmse = np.sqrt(np.mean((bst.predict(other) - y) ** 2))
    assert ev.history["validation_0"]["rmse"][-1] == pytest.approx(rmse, rel=1e-5)


def test_polars_categorical_gives_the_model_of_its_codes(data):
    pl = pytest.importorskip("polars")
    X, y = data
    frame = pl.DataFrame(
        {
            "city": pl.Series(
                [None if np.isnan(v) else LABELS6[int(v)] for v in X[:, 0]], dtype=pl.Enum(LABELS6)
            ),
            "x": X[:, 1],
            "size": pl.Series(
                [None if np.isnan(v) else LABELS3[int(v)] for v in X[:, 2]], dtype=pl.Enum(LABELS3)
            ),
        }
    )
    bst, codes = ours(frame, y), ours(X, y)
    assert bst.categorical_features == (0, 2)
    np.testing.assert_array_equal(bst.predict(frame), codes.predict(X))
    cat = frame.with_columns(pl.col("size").cast(pl.String).cast(pl.Categorical))
    got = jaxboost.train("squared", cat, y, n_rounds=1, max_depth=DEPTH, verbose=False)
    assert got.categorical_features == (0, 2)


# --- errors -------------------------------------------------------------------------------


def test_bad_codes_and_arguments_are_named(data):
    X, y = data
    for bad, match in [
        (0.5, r"categorical feature 0 \('f0'\).*row 3 holds 0.5"),
        (-2, r"categorical feature 0 \('f0'\).*row 3 holds -2"),
        (
            300,
            r"categorical feature 0 \('f0'\) has a category code 300.*"
            r"at most 255",
        ),
    ]:
        Xb = X.copy()
        Xb[3, 0] = bad
        with pytest.raises(DataError, match=match):
            ours(Xb, y)
    Xb = X.copy()
    Xb[:, 0] = np.nan_to_num(Xb[:, 0]) + 10  # codes up to 15
    with pytest.raises(DataError, match="at most 15 categories"):
        ours(Xb, y, max_bin=16)
    with pytest.raises(DataError, match="index 3"):
        ours(X, y, categorical_features=[3])
    with pytest.raises(DataError, match="no column names"):
        ours(X, y, categorical_features=["city"])
    with pytest.raises(TypeError, match="categorical_features"):
        ours(X, y, categorical_features=[True, False, True])
    with pytest.raises(ValueError, match="max_cat_to_onehot"):
        ours(X, y, max_cat_to_onehot=0)
    with pytest.raises(ValueError, match="multi_output_tree"):
        jaxboost.train(
            "softmax",
            X,
            (y > 0.5) * 1.0 + (y > 1.5),
            n_rounds=1,
            categorical_features=[0],
            multi_strategy="multi_output_tree",
        )
    bst = ours(X, y, n_rounds=1)
    with pytest.raises(DataError, match=r"categorical feature 2 \('f2'\).*row 1 holds -1"):
        bst.predict(np.array([[0, 1, 0], [0, 1, -1]], np.float32))


def test_numeric_models_are_unchanged(data):
    """Without categorical features nothing categorical is built: no category sets in
    the trees (so the numeric programs are the ones compiled before), and a DataFrame
    categorical column at predict time is refused for a numeric feature."""
    pd = pytest.importorskip("pandas")
    X, y = data
    bst = jaxboost.train("squared", np.nan_to_num(X), y, n_rounds=1, max_depth=DEPTH, verbose=False)
    assert bst.ensemble.cat_bits is None and bst.categorical_features == ()
    assert bst.bin_edges.categorical is None
    assert "categories" not in io.to_dict(bst)["trees"]
    df = pd.DataFrame({"a": pd.Categorical(["u", "v"]), "b": [1.0, 2.0], "c": [0.0, 1.0]})
    with pytest.raises(DataError, match="column 0 of X is categorical"):
        bst.predict(df)


def test_estimators_and_train_many_take_categorical_features(data):
    pytest.importorskip("sklearn")
    from jaxboost.sklearn import JaxBoostRegressor

    X, y = data
    df = _frame(X)
    kw = dict(n_rounds=ROUNDS, max_depth=DEPTH, learning_rate=LR, verbose=False)
    ref = jaxboost.train("squared", X, y, categorical_features=[0, 2], **kw)
    est = JaxBoostRegressor(
        n_estimators=ROUNDS, max_depth=DEPTH, learning_rate=LR, categorical_features=[0, 2]
    ).fit(X, y)
    np.testing.assert_array_equal(est.predict(X), ref.predict(X))
    est = JaxBoostRegressor(n_estimators=ROUNDS, max_depth=DEPTH, learning_rate=LR).fit(df, y)
    assert est.booster_.categorical_features == (0, 2)
    other = df.assign(city=df["city"].cat.reorder_categories(LABELS6[::-1]))
    np.testing.assert_array_equal(est.predict(other), ref.predict(X))
    many = jaxboost.train_many(
        [{"learning_rate": LR}, {"learning_rate": 0.1}],
        df,
        y,
        objective="squared",
        n_rounds=ROUNDS,
        max_depth=DEPTH,
    )
    assert [m.categorical_features for m in many] == [(0, 2), (0, 2)]
    np.testing.assert_array_equal(many[0].predict(other), ref.predict(X))


def test_sharded_rows_and_feature_blocks_give_the_same_trees(data, monkeypatch):
    """Rows over two devices (histograms summed across them) and features taken one at
    a time (``grow.feature_block``, the wide-data path) find the same categorical splits."""
    import jax

    import jaxboost.engine.grow as grow

    X, y = data
    monkeypatch.setattr(grow, "HIST_MEMORY", grow.HIST_BYTES_PER_FEATURE * 4 * 256)
    mesh = jax.make_mesh((2,), ("rows",), devices=jax.devices()[:2])
    bst = ours(X, y, mesh=mesh)
    np.testing.assert_allclose(
        bst.predict(X), theirs(X, y).predict(dmatrix(X)), rtol=1e-6, atol=1e-6
    )


# --- with constraints --------------------------------------------------------------------


def test_constraints_with_categorical_features_equal_xgboost(data):
    """Monotone and interaction constraints and ``min_samples_leaf`` with categorical
    features (one compiled program): XGBoost 3.2 hist with the same monotone sign (on
    the numeric column) and interaction sets gives the same predictions. Once a sign is
    set every candidate, the categorical ones included, is scored with bounded weights;
    columns 0 and 2 never meet on a path. XGBoost has no row minimum, but under the
    squared loss each row's Hessian is 1, so ``min_samples_leaf=k`` gives its
    ``min_child_weight=k`` trees for one-vs-rest splits (partition splits differ: a
    category below ``min_child_weight`` sorts with weight 0); partition splits keep
    ``k`` rows in every leaf. A monotone sign on a categorical feature is refused:
    categories have no order."""
    X, y = data
    k = 25
    kw = dict(monotone_constraints="(0,1,0)", interaction_constraints="[[0,1],[1,2]]")
    for extra in (dict(max_cat_to_onehot=10), dict(min_child_weight=k)):
        bst = ours(X, y, min_samples_leaf=k, **kw, **extra)
        ref = theirs(X, y, **kw, **dict(extra, min_child_weight=k))
        np.testing.assert_allclose(bst.predict(X), ref.predict(dmatrix(X)), rtol=1e-6, atol=1e-6)
    assert (~bst.ensemble.is_leaf & np.isnan(bst.ensemble.threshold)).sum() >= 5

    def smallest_leaf(bst):
        return min(np.bincount(t)[np.bincount(t) > 0].min() for t in bst.predict_leaf(X).T)

    assert smallest_leaf(ours(X, y, min_samples_leaf=k, **kw)) >= k
    assert smallest_leaf(ours(X, y)) < k  # without the minimum some leaf is smaller
    with pytest.raises(ValueError, match="categorical feature 2 the sign -1"):
        ours(X, y, monotone_constraints="(0,1,-1)")


@pytest.mark.parametrize("kind", ["bool", "nullable boolean"])
def test_boolean_categories_round_trip_through_the_model_file(tmp_path, kind):
    """A frame's boolean categories saved as JSON true/false: the loader refused the
    model's own file (``category_labels[0].labels: expected a list of strings or
    numbers``), and with it every checkpoint of the run (issue 28, item 1)."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    n = 240
    flag = rng.random(n) > 0.5
    values = pd.array(flag, dtype="boolean") if kind == "nullable boolean" else flag
    frame = pd.DataFrame({"a": rng.normal(size=n).astype(np.float32), "c": pd.Categorical(values)})
    y = (frame["a"].to_numpy() + 2.0 * flag > 1.0).astype(np.float32)
    bst = jaxboost.train("logistic", frame, y, n_rounds=4, max_depth=2)
    path = tmp_path / "m.json"
    bst.save(path)
    loaded = jaxboost.load(path)
    assert [bool(v) for v in loaded.category_labels[1]] == [False, True]
    np.testing.assert_array_equal(loaded.predict(frame), bst.predict(frame))
    # the categories reordered in the frame are mapped by label, not by code
    flipped = frame.assign(c=frame["c"].cat.reorder_categories([True, False]))
    np.testing.assert_array_equal(loaded.predict(flipped), bst.predict(frame))


def test_numeric_column_for_a_categorical_one_is_refused():
    """A frame whose column was categorical in training but is numeric at predict was
    read as codes whatever its values meant (issue 28, item 5: MSE 6.28 against
    0.008); the reverse was refused already. An array of codes is still taken."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(5)
    n = 200
    c = rng.choice(["x", "y", "z"], n)
    frame = pd.DataFrame({"a": rng.normal(size=n).astype(np.float32), "c": pd.Categorical(c)})
    y = (frame["a"].to_numpy() + 2.0 * (c == "z")).astype(np.float32)
    bst = jaxboost.train("squared", frame, y, n_rounds=5, max_depth=3)
    numeric = frame.assign(c=rng.normal(size=n))  # numbers, not categories
    with pytest.raises(
        DataError,
        match=r"column 'c' of X is not categorical.*"
        r"labels \['x', 'y', 'z'\]",
    ):
        bst.predict(numeric)
    codes = frame.assign(c=frame["c"].cat.codes).to_numpy(np.float32)
    np.testing.assert_array_equal(bst.predict(codes), bst.predict(frame))
    with pytest.raises(DataError, match="is categorical, but the model was trained"):
        jaxboost.train(
            "squared", frame.assign(c=frame["c"].cat.codes.astype(float)), y, n_rounds=2
        ).predict(frame)
