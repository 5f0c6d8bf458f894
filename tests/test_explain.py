"""Explanations: exact TreeSHAP (rows sum to the margin; equal to XGBoost's
``pred_contribs`` on the exported model; equal to Shapley values by enumeration of
coalitions), feature importance against XGBoost's ``get_score``, and the text dump."""

import itertools
import json
import math

import numpy as np
import pytest

import jaxboost
from jaxboost.io import to_xgboost_json
from jaxboost.model.explain import shap_values

xgb = pytest.importorskip("xgboost")

OBJECTIVES = ("squared", "logistic", "softmax")


def xgb_booster(bst):
    b = xgb.Booster()
    b.load_model(bytearray(json.dumps(to_xgboost_json(bst)).encode()))
    return b


# --- SHAP ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", OBJECTIVES)
def test_contributions_sum_to_the_margin(interop_data, interop_models, name):
    X, _ = interop_data
    bst = interop_models[name]
    phi = bst.predict(X, pred_contribs=True)
    K, F = bst.n_outputs, X.shape[1]
    assert phi.shape == ((X.shape[0], F + 1) if K == 1 else (X.shape[0], K, F + 1))
    assert phi.dtype == np.float32
    np.testing.assert_allclose(
        phi.astype(np.float64).sum(-1), bst.predict(X, output_margin=True), atol=1e-5, rtol=0
    )


@pytest.mark.parametrize("name", OBJECTIVES)
def test_contributions_equal_xgboost_treeshap(interop_data, interop_models, name):
    X, _ = interop_data
    bst = interop_models[name]
    expected = xgb_booster(bst).predict(xgb.DMatrix(X, missing=np.nan), pred_contribs=True)
    got = bst.predict(X, pred_contribs=True)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)


def test_pattern_tables_and_row_by_row_evaluation_agree(interop_data, interop_models):
    X, _ = interop_data
    for bst in interop_models.values():
        np.testing.assert_allclose(
            shap_values(bst, X[:40], use_patterns=True),
            shap_values(bst, X[:40], use_patterns=False),
            atol=1e-6,
            rtol=0,
        )


def _conditional_expectation(ens, t, x, known, value):
    """E[tree t | x_S] with cover-weighted averaging at splits on unknown features."""

    def walk(i):
        if ens.is_leaf[t, i]:
            return value[i]
        f = int(ens.feature[t, i])
        left, right = 2 * i + 1, 2 * i + 2
        if f in known:
            go_left = (
                bool(ens.default_left[t, i])
                if math.isnan(x[f])
                else bool(x[f] < ens.threshold[t, i])
            )
            return walk(left if go_left else right)
        cl, cr = float(ens.cover[t, left]), float(ens.cover[t, right])
        return (cl * walk(left) + cr * walk(right)) / (cl + cr)

    return walk(0)


def _brute_force_shapley(bst, x):
    """Shapley values of v(S) = sum of trees' E[f | x_S], by enumerating coalitions."""
    ens = bst.ensemble.to_numpy()
    F = bst.n_features

    def v(S):
        return bst.base_margin + sum(
            _conditional_expectation(ens, t, x, set(S), ens.value[t].astype(np.float64))
            for t in range(ens.n_trees)
        )

    phi = np.zeros(F + 1)
    for i in range(F):
        others = [j for j in range(F) if j != i]
        for r in range(F):
            for S in itertools.combinations(others, r):
                weight = math.factorial(r) * math.factorial(F - r - 1) / math.factorial(F)
                phi[i] += weight * (v(S + (i,)) - v(S))
    phi[F] = v(())
    return phi


def test_contributions_equal_brute_force_shapley_values(interop_data, interop_models):
    # A tiny model on 3 features (NaNs included, features repeating along paths), and
    # the 5-feature squared model: 2 ** F coalitions each.
    rng = np.random.default_rng(3)
    X3 = rng.normal(size=(200, 3)).astype(np.float32)
    X3[rng.random(X3.shape) < 0.2] = np.nan
    y = (
        np.nan_to_num(X3[:, 0]) * np.nan_to_num(X3[:, 1], nan=-1.0)
        + np.abs(np.nan_to_num(X3[:, 2]))
    ).astype(np.float32)
    tiny = jaxboost.from_xgboost(
        xgb.train(
            dict(objective="reg:squarederror", max_depth=4, min_child_weight=0),
            xgb.DMatrix(X3, label=y, missing=np.nan),
            3,
        )
    )
    X, _ = interop_data
    for bst, rows in ((tiny, X3[:10]), (interop_models["squared"], X[:4])):
        phi = bst.predict(rows, pred_contribs=True)
        for n in range(rows.shape[0]):
            np.testing.assert_allclose(
                phi[n], _brute_force_shapley(bst, rows[n]), atol=1e-5, rtol=0
            )


def test_missing_values_follow_the_default_direction(interop_data, interop_models):
    X, _ = interop_data
    bst = interop_models["squared"]
    Xm = X[:20].copy()
    Xm[:, 0] = np.nan
    phi = bst.predict(Xm, pred_contribs=True)
    np.testing.assert_allclose(
        phi.astype(np.float64).sum(-1), bst.predict(Xm, output_margin=True), atol=1e-5, rtol=0
    )
    expected = xgb_booster(bst).predict(xgb.DMatrix(Xm, missing=np.nan), pred_contribs=True)
    np.testing.assert_allclose(phi, expected, atol=1e-4, rtol=0)


def test_vector_leaf_contributions_sum_to_the_margins(interop_data, interop_models):
    # Vector leaves (multi_strategy="multi_output_tree" models have one tree per round
    # whose leaves hold K values): the softmax model's trees read as such a model.
    X, _ = interop_data
    src = interop_models["softmax"]
    bst = jaxboost.Booster(
        src.ensemble,
        objective=src.objective,
        params=src.params,
        bin_edges=src.bin_edges,
        base_margin=src.base_margin,
        n_features=src.n_features,
        n_outputs=3,
        trees_per_round=1,
    )
    phi = bst.predict(X[:30], pred_contribs=True)
    assert phi.shape == (30, 3, X.shape[1] + 1)
    np.testing.assert_allclose(
        phi.astype(np.float64).sum(-1), bst.predict(X[:30], output_margin=True), atol=1e-5, rtol=0
    )
    np.testing.assert_allclose(phi, src.predict(X[:30], pred_contribs=True), atol=1e-6)


# --- feature importance and dump -------------------------------------------------------


@pytest.mark.parametrize("name", OBJECTIVES)
@pytest.mark.parametrize("kind", ["weight", "gain", "total_gain", "cover", "total_cover"])
def test_feature_importance_equals_xgboost_get_score(interop_models, name, kind):
    bst = interop_models[name]
    ours = bst.feature_importance(kind)
    theirs = xgb_booster(bst).get_score(importance_type=kind)
    assert list(ours) == sorted(theirs, key=lambda k: int(k[1:]))
    for k, v in theirs.items():
        assert ours[k] == pytest.approx(v, rel=1e-4)


def test_gain_and_cover_conventions_match_xgboost_training():
    # Trained side by side (exact method; data with few distinct values, where jaxboost's
    # splits equal XGBoost's): the importances of the two libraries agree.
    rng = np.random.default_rng(0)
    X = (rng.integers(0, 12, size=(300, 5)) * 0.5).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) + rng.normal(size=300)).astype(np.float32)
    bst = jaxboost.train("squared", X, y, n_rounds=6, max_depth=3, base_margin=0.5, verbose=False)
    xb = xgb.train(
        dict(
            objective="reg:squarederror",
            tree_method="exact",
            eta=0.3,
            max_depth=3,
            base_score=0.5,
            nthread=1,
        ),
        xgb.DMatrix(X, label=y, missing=np.nan),
        6,
    )
    for kind in ("weight", "total_gain", "total_cover"):
        theirs = xb.get_score(importance_type=kind)
        ours = bst.feature_importance(kind)
        assert ours.keys() == theirs.keys()
        for k, v in theirs.items():
            assert ours[k] == pytest.approx(v, rel=1e-4), (kind, k)


def test_feature_importance_uses_feature_names(interop_models):
    bst = interop_models["squared"][:]
    bst.feature_names = ["a", "b", "c", "d", "e"]
    assert set(bst.feature_importance("weight")) <= {"a", "b", "c", "d", "e"}
    with pytest.raises(ValueError, match="importance_type"):
        bst.feature_importance("split")


def test_dump_lists_every_node(interop_models):
    bst = interop_models["softmax"]
    text = bst.dump()
    e = bst.ensemble
    assert text.count("booster[") == e.n_trees
    assert "booster[1] (class 1):" in text
    from jaxboost.model.explain import _reachable

    reach = _reachable(e)
    assert text.count("leaf=") == int((reach & e.is_leaf).sum())
    assert text.count("yes=") == int((reach & ~e.is_leaf).sum())
    # The root line of tree 0 spells out the split and its statistics.
    f, thr = int(e.feature[0, 0]), float(e.threshold[0, 0])
    missing = 1 if e.default_left[0, 0] else 2
    assert text.splitlines()[1] == (
        f"0:[f{f}<{thr:.9g}] yes=1,no=2,missing={missing},gain={float(e.gain[0, 0]):.9g},"
        f"cover={float(e.cover[0, 0]):.9g}"
    )
    assert "gain=" not in bst.dump(with_stats=False)
    named = bst[:]
    named.feature_names = ["a", "b", "c", "d", "e"]
    assert f"0:[{'abcde'[f]}<" in named.dump()


# --- the native pattern lookup and the kept paths ---------------------------------------


def test_native_pattern_lookup_by_hand():
    # one path of two elements: x0 < 0.5 (a missing x0 follows), and x1 a category in
    # {1, 3} (a missing or unseen x1 does not follow); table[pattern] = the two
    # elements' contributions, bit e of the pattern = the row follows element e
    from jaxboost import native

    if not native.available():
        pytest.skip("native kernel unavailable")
    cats = np.zeros((1, 2, 8), np.uint32)
    cats[0, 1, 0] = (1 << 1) | (1 << 3)
    table = np.float64([[[1, 2], [3, 4], [5, 6], [7, 8]]])  # (P, 2 ** L, L)
    X = np.float32([[0.2, 3.0], [0.7, 1.0], [np.nan, np.nan], [0.7, 300.0], [0.5, 2.9]])
    out = np.zeros((5, 2))
    args = (
        np.int32([[0, 1]]),
        np.float64([[-np.inf, -np.inf]]),
        np.float64([[0.5, np.inf]]),
        np.uint8([[2 | 4, 16]]),  # has_hi, missing follows; categorical
        cats,
        table,
    )
    native.shap_patterns(X, *args, out)
    # patterns: 0b11, 0b10, 0b01, 0b00, 0b00 (2.9 is code 2: not in the set)
    np.testing.assert_array_equal(out, [[7, 8], [5, 6], [3, 4], [1, 2], [1, 2]])
    big = np.repeat(X, 100, axis=0)
    one, two = np.zeros((500, 2)), np.zeros((500, 2))
    native.shap_patterns(big, *args, one, n_threads=1)
    native.shap_patterns(big, *args, two, n_threads=2)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(one, np.repeat(out, 100, axis=0))
    with pytest.raises(ValueError, match="unexpected"):  # a feature outside X
        native.shap_patterns(X[:, :1].copy(), *args, np.zeros((5, 1)))
    # pairs (interaction values): entry [pattern, e, j] goes to (feature e, feature j)
    pairs = np.arange(16, dtype=np.float64).reshape(1, 4, 2, 2)
    out = np.zeros((5, 2, 2))
    native.shap_patterns(X, *args[:-1], pairs, out)
    np.testing.assert_array_equal(out, pairs[0][[3, 2, 1, 0, 0]])


def test_a_model_keeps_its_paths_and_its_slices_take_theirs(interop_data, interop_models):
    from jaxboost.model import explain

    X, _ = interop_data
    bst = interop_models["softmax"][:]
    bst.ensemble = bst.ensemble  # the same trees as new ones: nothing kept yet
    made = []
    real = explain._Paths
    try:
        explain._Paths = lambda *a: made.append(a) or real(*a)
        full = bst.predict(X, pred_contribs=True)
        np.testing.assert_array_equal(bst.predict(X, pred_contribs=True), full)
        part = bst[:2].predict(X, pred_contribs=True)
        assert len(made) == 1  # the slice took the model's paths of its trees
    finally:
        explain._Paths = real
    # ... which are what the slice's own trees give, bit for bit
    fresh = explain._Paths(bst[:2].trees, bst.n_outputs, bst.n_outputs)
    kept = explain._paths_of(bst[:2])
    assert kept.n_paths == fresh.n_paths < explain._paths_of(bst).n_paths
    for name, a in vars(fresh).items():
        np.testing.assert_array_equal(getattr(kept, name), a, err_msg=name)
    np.testing.assert_allclose(
        part.astype(np.float64).sum(-1), bst[:2].predict(X, output_margin=True), atol=1e-5
    )
    # what is kept grows with the paths, not with paths x classes: a class tree's paths
    # hold its own value (a 100-class model kept 100 float64 values per path)
    paths = explain._paths_of(bst)
    assert paths.own.shape == (paths.n_paths,) and paths.output.shape == (paths.n_paths,)
    spread = np.stack([paths.column(k) for k in range(3)], axis=1)
    np.testing.assert_array_equal(spread.sum(axis=1), paths.own)  # one output per path
    assert ((spread != 0).sum(axis=1) <= 1).all()
    # paths larger than the limit are made for each call, not kept
    from jaxboost.model import booster as booster_module

    fresh = bst[:]
    fresh.ensemble = fresh.ensemble
    limit = booster_module.SHAP_PATHS_KEPT_BYTES
    try:
        booster_module.SHAP_PATHS_KEPT_BYTES = paths.nbytes - 1
        np.testing.assert_array_equal(fresh.predict(X, pred_contribs=True), full)
        assert fresh._padded_trees._shap is None
    finally:
        booster_module.SHAP_PATHS_KEPT_BYTES = limit


def test_the_numpy_pattern_lookup_equals_the_native_one(interop_data, interop_models, monkeypatch):
    # where the native library is missing (no compiler), the rows' lookups run in NumPy
    # (SHAP values: by pattern tables; interaction values: row by row)
    from jaxboost import native
    from jaxboost.model.explain import shap_interaction_values

    X, _ = interop_data
    for bst in interop_models.values():
        with_kernel = shap_values(bst, X[:300], use_patterns=True)
        pairs = shap_interaction_values(bst, X[:300])
        with monkeypatch.context() as m:
            m.setattr(native, "available", lambda: False)
            without = shap_values(bst, X[:300], use_patterns=True)
            pairs_without = shap_interaction_values(bst, X[:300])
        np.testing.assert_allclose(without, with_kernel, atol=1e-6, rtol=0)
        np.testing.assert_allclose(pairs_without, pairs, atol=1e-6, rtol=0)


def test_trees_to_dataframe_matches_xgboosts(tmp_path):
    """The node table of XGBoost's trees_to_dataframe on the exported model: the same
    features, thresholds, gains, covers and leaf values, tree by tree (node ids are
    jaxboost's heap indices, XGBoost's are its own); a categorical split lists its
    codes; vector leaves are refused."""
    pd = pytest.importorskip("pandas")
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.integers(0, 6, size=(300, 3)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) + rng.normal(size=300) > 2.5).astype(np.float32)
    bst = jaxboost.train("logistic", X, y, n_rounds=3, max_depth=3, verbose=False)
    ours = bst.trees_to_dataframe()
    path = tmp_path / "m.json"
    bst.to_xgboost_json(path)
    xb = xgb.Booster()
    xb.load_model(str(path))
    theirs = xb.trees_to_dataframe()
    assert list(ours.columns) == list(theirs.columns)
    key = ["Tree", "Feature", "Split", "Gain", "Cover"]

    def table(df):
        return df[key].round(4).sort_values(key, na_position="first").reset_index(drop=True)

    pd.testing.assert_frame_equal(table(ours), table(theirs), check_dtype=False)
    # children by id: each split's Yes / No rows exist, Missing is one of them
    ids = set(ours["ID"])
    splits = ours[ours["Feature"] != "Leaf"]
    assert set(splits["Yes"]) <= ids and set(splits["No"]) <= ids
    assert all(m in (a, b) for m, a, b in zip(splits["Missing"], splits["Yes"], splits["No"]))
    frame = pd.DataFrame({"c": pd.Categorical(rng.choice(["a", "b", "c"], 300))})
    cat = jaxboost.train("logistic", frame, y, n_rounds=1, max_depth=1, verbose=False)
    row = cat.trees_to_dataframe().iloc[0]
    assert np.isnan(row["Split"]) and set(row["Category"]) < {0, 1, 2}
    Y = np.stack([y, 1 - y], 1)
    vector = jaxboost.train(
        "logistic", X, Y, n_rounds=1, multi_strategy="multi_output_tree", verbose=False
    )
    with pytest.raises(ValueError, match="vector leaves"):
        vector.trees_to_dataframe()
