"""Random-forest mode (``num_parallel_tree``, ``bootstrap``): XGBoost 3.2's forests.

Without sampling the ``P`` trees of a round are identical and each holds ``eta w* / P``,
so the margins equal XGBoost's ``tree_method="exact"`` forest to float32 rounding; with
sampling the trees differ as their samples say, and held-out errors agree with
XGBoost's ``XGBRFRegressor`` and (bootstrap) scikit-learn's ``RandomForestRegressor``.
A forest is a model like any other: files, XGBoost JSON both ways, SHAP, slicing,
``train_many``, ``compare`` and continued training.
"""

import json

import numpy as np
import pytest
from conftest import binnable_features, forest_parity_data

import jaxboost
import objectives
from jaxboost.engine.sampling import bootstrap_counts

xgb = pytest.importorskip("xgboost")

P = 40  # trees of the sampled forests (one compiled program per forest shape)


def same_trees(a, b):
    return all(
        (x is None and y is None) or np.array_equal(x, y, equal_nan=True)
        for x, y in zip(a.ensemble, b.ensemble)
    )


def half_squared(y, f):  # a plain JAX loss: XGBoost's reg:squarederror g and h
    return 0.5 * (y - f) ** 2


@pytest.fixture(scope="module")
def regression():
    """400 training and 400 held-out rows of binnable features, a noisy linear label."""
    rng = np.random.default_rng(0)
    X = binnable_features(rng, N=800)
    f = (
        0.4 * np.nan_to_num(X[:, 0] - 6)
        - 0.8 * X[:, 2]
        + 0.3 * np.nan_to_num(X[:, 1], nan=3.0)
        + 0.5 * X[:, 4]
    )
    y = (f + rng.normal(size=800)).astype(np.float32)
    return X[:400], y[:400], X[400:], y[400:]


def test_forest_without_sampling_matches_xgboost_exact():
    """num_parallel_tree=3, no sampling: three identical trees per round, each a third
    of the boosted tree, margins equal to XGBoost's exact forest."""
    X, y = forest_parity_data()
    d = xgb.DMatrix(X, label=y, missing=np.nan)
    ref = xgb.train(
        dict(
            objective="binary:logistic",
            tree_method="exact",
            eta=0.3,
            base_score=0.5,
            max_depth=3,
            num_parallel_tree=3,
            nthread=1,
        ),
        d,
        5,
    )
    bst = jaxboost.train(
        objectives.logistic,
        X,
        y,
        n_rounds=5,
        learning_rate=0.3,
        max_depth=3,
        base_margin=0.0,
        num_parallel_tree=3,
    )
    assert (len(bst), bst.ensemble.n_trees, bst.trees_per_round) == (5, 15, 3)
    e = bst.ensemble
    for r in range(5):  # the round's trees are one tree three times
        for t in (3 * r + 1, 3 * r + 2):
            assert np.array_equal(e.value[t], e.value[3 * r])
            assert np.array_equal(e.feature[t], e.feature[3 * r])
    # each leaf is float32(w) * float32(eta / 3), as XGBoost stores it
    theirs = json.loads(ref.save_raw("json"))["learner"]["gradient_booster"]["model"]
    t0 = theirs["trees"][0]
    leaf = np.array(t0["left_children"]) == -1
    w = np.array(t0["base_weights"], np.float32)[leaf]
    assert np.array_equal(
        np.sort(w * (np.float32(0.3) / np.float32(3))),
        np.sort(e.value[0][e.is_leaf[0] & (e.cover[0] > 0)]),
    )
    assert theirs["iteration_indptr"][:3] == [0, 3, 6]
    np.testing.assert_allclose(
        bst.predict(X, output_margin=True), ref.predict(d, output_margin=True), atol=1e-5, rtol=0
    )


def test_sampled_forest_of_a_plain_loss_agrees_with_xgboost_rf_in_compare(regression):
    """A forest of a plain JAX loss through compare(): XGBoost's RF recipe (one round,
    learning rate 1, subsample 0.8, colsample_bynode 0.8) gives a held-out MSE within
    15 % of XGBRFRegressor's (measured 0.987-1.015 of it over six seeds)."""
    Xtr, ytr, Xte, yte = regression
    kw = dict(max_depth=3, subsample=0.8, colsample_bynode=0.8)
    cmp = jaxboost.compare(
        {"forest": half_squared},
        Xtr,
        ytr,
        eval_set=[(Xte, yte)],
        metrics=["rmse"],
        n_rounds=1,
        learning_rate=1.0,
        num_parallel_tree=P,
        reg_lambda=1e-5,
        **kw,
    )
    forest = cmp.boosters["forest"]
    assert (len(forest), forest.ensemble.n_trees) == (1, P)
    ours = float(np.mean((forest.predict(Xte) - yte) ** 2))
    assert cmp.curves["forest"]["validation_0"]["rmse"][-1] == pytest.approx(
        np.sqrt(ours), rel=1e-5
    )
    theirs_model = xgb.XGBRFRegressor(n_estimators=P, random_state=0, tree_method="hist", **kw).fit(
        Xtr, ytr
    )
    theirs = float(np.mean((theirs_model.predict(Xte) - yte) ** 2))
    assert 0.85 < ours / theirs < 1.15, (ours, theirs)


def test_row_and_column_samples_per_tree(regression):
    """Each tree draws its own rows (subsample 0.5: the root's cover, the count of its
    rows under h = 1, is Binomial(400, 0.5)) and its own features (colsample_bytree 0.5
    of 5: 2 features per tree, different ones across trees)."""
    Xtr, ytr, _, _ = regression
    bst = jaxboost.train(
        half_squared,
        Xtr,
        ytr,
        n_rounds=1,
        learning_rate=1.0,
        num_parallel_tree=P,
        reg_lambda=1e-5,
        max_depth=3,
        subsample=0.5,
        colsample_bytree=0.5,
        colsample_bynode=0.99,
        seed=3,
    )
    e = bst.ensemble
    rows = e.cover[:, 0]
    assert np.all(np.abs(rows - 200) < 5 * 10)  # sd sqrt(400 / 4) = 10
    assert abs(rows.mean() - 200) < 4 * 10 / np.sqrt(P)
    assert len(set(rows.tolist())) > P // 4  # the samples differ between trees
    used = [set(e.feature[t][~e.is_leaf[t]].tolist()) for t in range(P)]
    assert all(1 <= len(u) <= 2 for u in used)
    counts = np.bincount([f for u in used for f in u], minlength=5)
    assert (counts > 0).sum() >= 4, counts  # every tree its own pair of features


def test_bootstrap_forest_agrees_with_sklearn_random_forest(regression):
    """bootstrap=True: each tree's rows are drawn with replacement, N of them, so the
    root's cover (h = 1) is exactly 400; held-out MSE within 15 % of scikit-learn's
    RandomForestRegressor with the same depth and feature fraction (measured 0.98-1.05
    over six seeds)."""
    from sklearn.ensemble import RandomForestRegressor

    Xtr, ytr, Xte, yte = regression
    bst = jaxboost.train(
        half_squared,
        Xtr,
        ytr,
        n_rounds=1,
        learning_rate=1.0,
        num_parallel_tree=P,
        reg_lambda=1e-5,
        min_child_weight=0.0,
        max_depth=3,
        bootstrap=True,
        colsample_bynode=0.8,
    )
    e = bst.ensemble
    assert np.array_equal(e.cover[:, 0], np.full(P, 400.0, np.float32))
    assert len({e.value[t].tobytes() for t in range(P)}) == P  # different samples
    ours = float(np.mean((bst.predict(Xte) - yte) ** 2))
    rf = RandomForestRegressor(n_estimators=P, max_depth=3, max_features=0.8, random_state=0).fit(
        np.nan_to_num(Xtr, nan=-1), ytr
    )
    theirs = float(np.mean((rf.predict(np.nan_to_num(Xte, nan=-1)) - yte) ** 2))
    assert 0.85 < ours / theirs < 1.15, (ours, theirs)


def test_bootstrap_counts_are_a_multinomial_draw_the_same_on_any_layout():
    import jax

    key = jax.random.key(5)
    c = np.asarray(bootstrap_counts(key, 10_000, 1.0, 10_000))
    assert c.sum() == 10_000 and c.min() >= 0
    assert abs((c > 0).mean() - (1 - np.exp(-1))) < 0.03  # sd 0.005
    assert abs(c.var() - 1.0) < 0.1  # Binomial(n, 1/n): variance ~ 1
    half = np.asarray(bootstrap_counts(key, 10_000, 0.5, 10_000))
    assert half.sum() == 5_000
    # 4 shards of 2,560 rows (10,000 real, padding at the end): each takes its slice
    shards = [
        np.asarray(bootstrap_counts(key, 2560, 1.0, 10_000, offset=o, n_ids=10_240))
        for o in (0, 2560, 5120, 7680)
    ]
    assert np.array_equal(
        np.concatenate(shards)[:10_000],
        np.asarray(bootstrap_counts(key, 10_240, 1.0, 10_000))[:10_000],
    )


def test_forest_model_round_trips_files_xgboost_json_shap_and_continues(interop_data, tmp_path):
    """A sampled softmax forest (3 classes x 3 trees per round): its XGBoost JSON loads
    in XGBoost with the same predictions (all rounds and the first), reads back with
    from_xgboost, survives the model file; SHAP rows sum to the margins; train_many
    and continued training give the same trees bit for bit."""
    X, labels = interop_data
    y = labels["softmax"]
    forest = dict(num_parallel_tree=3, subsample=0.7, colsample_bynode=0.6, seed=1)
    bst = jaxboost.train("softmax", X, y, n_rounds=2, max_depth=3, **forest)
    assert (len(bst), bst.trees_per_round, bst.num_parallel_tree) == (2, 9, 3)
    margin = bst.predict(X, output_margin=True)
    path = tmp_path / "forest.json"
    bst.to_xgboost_json(path)
    theirs = xgb.Booster()
    theirs.load_model(path)
    d = xgb.DMatrix(X)
    np.testing.assert_allclose(theirs.predict(d, output_margin=True), margin, atol=1e-5)
    np.testing.assert_allclose(
        theirs.predict(d, output_margin=True, iteration_range=(0, 1)),
        bst[:1].predict(X, output_margin=True),
        atol=1e-5,
    )
    back = jaxboost.from_xgboost(path)
    assert (back.trees_per_round, back.num_parallel_tree) == (9, 3)
    np.testing.assert_allclose(back.predict(X), bst.predict(X), atol=1e-6)
    bst.save(tmp_path / "model.json")
    loaded = jaxboost.load(tmp_path / "model.json")
    assert loaded.num_parallel_tree == 3
    assert np.array_equal(loaded.predict(X), bst.predict(X))
    shap = bst.predict(X, pred_contribs=True)
    np.testing.assert_allclose(shap.sum(axis=-1), margin, atol=1e-5)
    assert "booster[8] (class 2):" in bst.dump()  # tree 8: the third tree of class 2
    staged = bst.staged_predict(X, output_margin=True)
    assert staged.shape == (2, X.shape[0], 3)
    np.testing.assert_allclose(staged[0], bst[:1].predict(X, output_margin=True), atol=1e-6)
    (many,) = jaxboost.train_many([forest], X, y, objective="softmax", n_rounds=2, max_depth=3)
    assert same_trees(many, bst)
    more = jaxboost.train("softmax", X, y, n_rounds=1, max_depth=3, init_model=bst[:1], **forest)
    assert same_trees(more, bst)
    with pytest.raises(ValueError, match="num_parallel_tree give 3 and 3"):
        jaxboost.train("softmax", X, y, n_rounds=1, max_depth=3, init_model=bst)


def test_xgboost_random_forest_reads_as_one_round_of_trees(interop_data, tmp_path):
    X, labels = interop_data
    rf = xgb.XGBRFClassifier(n_estimators=5, max_depth=2, random_state=0).fit(X, labels["softmax"])
    rf.get_booster().save_model(tmp_path / "rf.json")
    bst = jaxboost.from_xgboost(tmp_path / "rf.json")
    assert (len(bst), bst.num_parallel_tree, bst.ensemble.n_trees) == (1, 5, 15)
    np.testing.assert_allclose(bst.predict(X), rf.predict_proba(X), atol=1e-6)
    model = json.loads((tmp_path / "rf.json").read_text())
    model["learner"]["gradient_booster"]["model"]["gbtree_model_param"]["num_parallel_tree"] = "4"
    with pytest.raises(jaxboost.ModelFormatError, match="not whole rounds"):
        jaxboost.from_xgboost(model)


def test_forest_arguments_are_checked_before_training(small_binary):
    X, y = small_binary
    with pytest.raises(ValueError, match=r"num_parallel_tree must be in \[1, 4096\], got 0"):
        jaxboost.train("logistic", X, y, num_parallel_tree=0)
    with pytest.raises(TypeError, match="num_parallel_tree must be an integer"):
        jaxboost.train("logistic", X, y, num_parallel_tree=2.0)
    with pytest.raises(TypeError, match="bootstrap must be True or False"):
        jaxboost.train("logistic", X, y, bootstrap="yes")


def test_min_samples_leaf_counts_each_trees_own_sample(regression):
    """With subsample 0.5 and h = 1, a leaf's cover is the count of the tree's sampled
    rows in it: min_samples_leaf holds for each tree's own sample."""
    Xtr, ytr, _, _ = regression
    bst = jaxboost.train(
        half_squared,
        Xtr,
        ytr,
        n_rounds=1,
        learning_rate=1.0,
        num_parallel_tree=8,
        max_depth=4,
        subsample=0.5,
        min_samples_leaf=30,
        reg_lambda=1e-5,
    )
    e = bst.ensemble
    leaves = e.is_leaf & (e.cover > 0)
    assert e.cover[leaves].min() >= 30
    assert (~e.is_leaf).sum() >= 8 * 3  # the trees do split


def test_a_forest_round_is_dispatched_alone_with_the_same_model(regression, monkeypatch):
    """A round of many trees is a chunk of its own: the round program's tree outputs
    hold that round's trees, not ``ROUNDS_PER_DISPATCH`` rounds' worth (a 1,000-tree
    forest filled and copied 10,000). The trees are those of 10-round chunks bit for
    bit, and so is early stopping; the evaluation metrics agree to float32 rounding
    (their program sums the rows over arrays of another shape)."""
    from jaxboost.training import loop

    X, y, Xt, yt = regression
    kw = dict(
        n_rounds=8,
        learning_rate=1.0,  # overfits after a few rounds: early stopping ends it
        reg_lambda=0.0,
        min_child_weight=0.0,
        max_depth=3,
        num_parallel_tree=P,
        subsample=0.5,
        colsample_bynode=0.8,
        seed=5,
        eval_set=[(Xt, yt)],
        early_stopping_rounds=1,
        verbose=False,
    )
    shapes = []
    run_chunk = loop.run_chunk

    def recording(specs, chunk, *args):
        out = run_chunk(specs, chunk, *args)
        shapes.append((chunk, out[2][0][0]["feature"].shape[0]))
        return out

    monkeypatch.setattr(loop, "run_chunk", recording)
    assert loop.rounds_per_dispatch(P) == 100 // P == 2
    chunked = jaxboost.train("squared", X, y, **kw)
    assert shapes[0] == (2, 2 * P)
    monkeypatch.setattr(loop, "TREES_PER_DISPATCH", 10**6)  # 10 rounds per chunk
    shapes.clear()
    whole = jaxboost.train("squared", X, y, **kw)
    assert shapes == [(10, 10 * P)]
    assert same_trees(chunked, whole)
    a, b = chunked.history["validation_0"]["rmse"], whole.history["validation_0"]["rmse"]
    assert len(a) == len(b) < kw["n_rounds"]  # early stopping ended both, in one round
    np.testing.assert_allclose(a, b, rtol=1e-6)
    assert chunked.best_iteration == whole.best_iteration == len(a) - 2  # one past the best


def test_train_many_mixes_a_forest_and_a_boosted_model_with_an_eval_set(regression):
    """Models trained together share the forest's smaller chunk (2 rounds of 40 trees),
    evaluation included; each equals its own ``train`` (trees bit for bit, metrics to
    float32 rounding: the plain model alone evaluates 10 rounds at a time)."""
    X, y, Xt, yt = regression
    configs = [
        dict(objective="squared", num_parallel_tree=P, subsample=0.8, seed=2),
        dict(objective="squared"),
    ]
    kw = dict(n_rounds=5, max_depth=3, eval_set=[(Xt, yt)])
    together = jaxboost.train_many(configs, X, y, **kw)
    for config, model in zip(configs, together):
        config = dict(config)
        alone = jaxboost.train(config.pop("objective"), X, y, verbose=False, **kw, **config)
        assert same_trees(model, alone)
        a, b = model.history["validation_0"]["rmse"], alone.history["validation_0"]["rmse"]
        assert len(a) == len(b) == 5
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_per_tree_rate_is_the_correctly_rounded_float32_quotient():
    """A forest's trees take ``float32(eta / P)`` correctly rounded, as XGBoost stores
    them, on every backend (an H200's float32 division gave ``0.3f / 3 = 0.10000001``):
    checked against NumPy's IEEE float32 division over many rates and forest sizes."""
    import jax
    import jax.numpy as jnp

    from jaxboost.engine.round import per_tree_rate

    rng = np.random.default_rng(0)
    etas = np.concatenate([[0.3, 0.1, 0.05, 1.0], rng.uniform(1e-3, 1.0, 60)]).astype(np.float32)
    Ps = np.arange(2, 18, dtype=np.int32)
    # P traced through the "zero" argument (P - 1 + 1): one program for every P
    got = jax.jit(jax.vmap(lambda p: per_tree_rate(jnp.asarray(etas), 1, p - 1)))(Ps)
    np.testing.assert_array_equal(np.asarray(got), etas[None, :] / Ps[:, None].astype(np.float32))
