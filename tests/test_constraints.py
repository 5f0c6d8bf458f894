"""Monotone constraints, interaction constraints and ``min_samples_leaf`` (issue 17).

Most models here share one data set (``binnable_features``: 400 x 5, values that fit the
bins, so jaxboost's and XGBoost's ``hist`` bins coincide) and depth 3, 8 rounds, so the
constrained round programs compile once and are reused across tests.
"""

import json

import numpy as np
import pytest
from conftest import binnable_features

import jaxboost
import objectives
from jaxboost import io
from jaxboost.engine import grow

N_ROUNDS, DEPTH, LR = 8, 3, 0.3
MONO = "(1,-1,1,0,1)"  # XGBoost's string form, read by both libraries
MONO_T = (1, -1, 1, 0, 1)
SETS = "[[0,1],[1,2],[3]]"  # feature 4 is in no set


@pytest.fixture(scope="module")
def data():
    """Training rows, their labels, and 100 held-out rows. The label is not monotone
    in feature 2 (a sine), so its constraint binds."""
    rng = np.random.default_rng(0)
    X = binnable_features(rng)
    y = (
        0.3 * np.nan_to_num(X[:, 0])
        - 0.2 * np.nan_to_num(X[:, 1], nan=5.0)
        + np.sin(2 * X[:, 2])
        + 0.5 * X[:, 4]
        + rng.normal(size=len(X))
    ).astype(np.float32)
    X_test = binnable_features(rng, N=100)
    return X, y, X_test


def train(X, y, **kw):
    args = dict(
        n_rounds=N_ROUNDS, max_depth=DEPTH, learning_rate=LR, base_margin=0.5, verbose=False
    )
    args.update(kw)
    return jaxboost.train("squared", X, y, **args)


@pytest.fixture(scope="module")
def mono_model(data):
    X, y, _ = data
    return train(X, y, monotone_constraints=MONO)


def grid_predictions(bst, rows, f, lo, hi, n=40):
    """``(rows, n)`` predictions with feature ``f`` of each row set to ``n`` values in
    ``[lo, hi]`` (the others kept)."""
    grid = np.linspace(lo, hi, n, dtype=np.float32)
    Z = np.repeat(rows, n, axis=0)
    Z[:, f] = np.tile(grid, len(rows))
    return bst.predict(Z).reshape(len(rows), n)


def worst_step(bst, rows, f, sign, X):
    """The most negative ``sign * (p(x_f + step) - p(x_f))`` over a grid along ``f``
    (0 when monotone)."""
    lo, hi = np.nanmin(X[:, f]) - 1, np.nanmax(X[:, f]) + 1
    return float(np.min(sign * np.diff(grid_predictions(bst, rows, f, lo, hi), axis=1)))


# --- monotone constraints -------------------------------------------------------------
def test_predictions_are_monotone_along_each_constrained_feature(data, mono_model):
    """On a grid over every constrained feature, for each of 100 held-out rows (NaNs in
    the other features included), predictions never move against the sign; XGBoost's
    unconstrained model on the same data does move against it on feature 2."""
    X, y, X_test = data
    for f, sign in enumerate(MONO_T):
        if sign:
            assert worst_step(mono_model, X_test, f, sign, X) >= 0.0, f
    free = jaxboost.from_xgboost(_xgb_model(X, y, {}))
    assert worst_step(free, X_test, 2, 1, X) < -0.05
    # the constraint still leaves a useful model
    assert np.corrcoef(mono_model.predict(X), y)[0, 1] > 0.6


def test_monotone_with_refit_and_one_tree_per_output(data):
    """Refitted leaves (quantile refit of the absolute loss) are clipped to their bounds,
    and each of K outputs' trees keeps the signs (softmax margins)."""
    X, y, X_test = data
    bst = jaxboost.train(
        "absolute",
        X,
        y,
        n_rounds=N_ROUNDS,
        max_depth=DEPTH,
        monotone_constraints=MONO,
        verbose=False,
    )
    for f, sign in enumerate(MONO_T):
        if sign:
            assert worst_step(bst, X_test, f, sign, X) >= 0.0, f
    labels = np.digitize(y, np.quantile(y, [0.33, 0.66])).astype(np.float32)
    soft = jaxboost.train(
        objectives.softmax,
        X,
        labels,
        n_rounds=4,
        max_depth=2,
        monotone_constraints={0: 1, 2: -1},
        verbose=False,
    )
    lo, hi = np.nanmin(X[:, 2]) - 1, np.nanmax(X[:, 2]) + 1
    grid = np.linspace(lo, hi, 30, dtype=np.float32)
    Z = np.repeat(X_test[:20], 30, axis=0)
    Z[:, 2] = np.tile(grid, 20)
    margins = soft.predict(Z, output_margin=True).reshape(20, 30, 3)
    assert np.all(np.diff(margins, axis=1) <= 0.0)


def test_off_by_default_and_values_are_traced(data, mono_model, compile_counter):
    """All-zero signs and a row minimum of 1 are the unconstrained model and program;
    other signs reuse the constrained program (they are traced, not compiled in)."""
    X, y, _ = data
    plain = train(X, y)
    with compile_counter:
        same = train(X, y, monotone_constraints=(0,) * 5, min_samples_leaf=1)
        flipped = train(X, y, monotone_constraints="(-1,1,-1,0,-1)")
    assert compile_counter.count == 0
    np.testing.assert_array_equal(same.predict(X), plain.predict(X))
    assert "monotone_constraints" not in same.train_state
    assert flipped.train_state["monotone_constraints"] == "(-1,1,-1,0,-1)"


# --- XGBoost hist parity --------------------------------------------------------------
def _xgb_model(X, y, params, rounds=N_ROUNDS):
    xgb = pytest.importorskip("xgboost")
    p = dict(
        objective="reg:squarederror",
        tree_method="hist",
        max_bin=256,
        eta=LR,
        base_score=0.5,
        max_depth=DEPTH,
        nthread=1,
        **params,
    )
    return xgb.train(p, xgb.DMatrix(X, label=y, missing=np.nan), rounds)


PARITY = {
    "monotone": dict(monotone_constraints=MONO),
    "monotone-regularised": dict(
        monotone_constraints=MONO,
        reg_lambda=2.0,
        reg_alpha=0.3,
        min_child_weight=3.0,
        max_delta_step=0.7,
    ),
    "interaction": dict(interaction_constraints=SETS),
    "both": dict(
        monotone_constraints="(-1,1,1,0,-1)", interaction_constraints="[[0,1,4],[1,2],[3,4]]"
    ),
}


@pytest.mark.parametrize("name", list(PARITY))
def test_xgboost_hist_parity(data, mono_model, name):
    """XGBoost 3.2 ``tree_method="hist"`` with the same constraints (its string forms)
    gives the same predictions to float32 rounding: bins coincide on this data, and
    jaxboost follows hist's monotone rules (weights clipped to the node's bounds, the
    score -(2 G w + (H + lambda) w^2) in float32 for every feature, bounds from the
    midpoint) and its interaction rule. gamma is 0: hist refuses low-gain splits while
    growing where jaxboost post-prunes (see DESIGN.md). Compared on the training rows:
    where a node's rows leave bins empty, thresholds across them tie and the two
    libraries pick different ones (jaxboost keeps XGBoost exact's order), which moves
    held-out rows, with or without constraints."""
    X, y, _ = data
    params = PARITY[name]
    xgb = pytest.importorskip("xgboost")
    d = xgb.DMatrix(X, label=y, missing=np.nan)
    ref = _xgb_model(X, y, params).predict(d)
    bst = mono_model if name == "monotone" else train(X, y, **params)
    ours = bst.predict(X)
    np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=1e-6)
    free = _xgb_model(X, y, {k: v for k, v in params.items() if "constraints" not in k})
    assert np.abs(free.predict(d) - ref).max() > 0.1  # the constraints changed the model


# --- interaction constraints ----------------------------------------------------------
def _paths(ensemble):
    """Every split node's ``(feature, features split on above it)``, over all trees."""
    feature = np.asarray(ensemble.feature)
    split = ~np.asarray(ensemble.is_leaf)
    out = []
    for t in range(feature.shape[0]):
        above = {0: ()}
        for i in range(feature.shape[1]):
            if i in above and split[t, i]:
                out.append((int(feature[t, i]), above[i]))
                for child in (2 * i + 1, 2 * i + 2):
                    above[child] = above[i] + (int(feature[t, i]),)
    return out


def allowed(feature, above, sets):
    """XGBoost's rule: any feature at the root; below, one used above or one of a set
    that holds every feature used above."""
    used = set(above)
    return not used or feature in used or any(used <= set(s) and feature in s for s in sets)


def test_no_path_mixes_features_of_different_sets(data):
    """With column sampling and depth 4, every split uses a feature the sets allow given
    the features above it; XGBoost's unconstrained model breaks the rule on this data,
    so the check has teeth."""
    X, y, _ = data
    sets = json.loads(SETS)
    bst = jaxboost.train(
        "squared",
        X,
        y,
        n_rounds=10,
        max_depth=4,
        colsample_bynode=0.8,
        interaction_constraints=[["a", "b"], ["b", "c"], ["d"]],
        feature_names=list("abcde"),
        verbose=False,
    )
    paths = _paths(bst.ensemble)
    assert all(allowed(f, above, sets) for f, above in paths)
    assert any(len(set(above)) >= 1 and f not in above for f, above in paths)  # interacts
    free = jaxboost.from_xgboost(_xgb_model(X, y, {}, rounds=10))
    assert not all(allowed(f, above, sets) for f, above in _paths(free.ensemble))
    assert json.loads(bst.train_state["interaction_constraints"]) == sets


NATIVE_CASES = {
    "interaction": dict(interaction_constraints=SETS, max_depth=5),
    "interaction-sampled": dict(
        interaction_constraints=SETS, max_depth=4, colsample_bynode=0.6, subsample=0.8, seed=2
    ),
    "interaction-lossguide": dict(
        interaction_constraints=SETS, max_depth=4, grow_policy="lossguide", max_leaves=9
    ),
    "monotone": dict(monotone_constraints=MONO, max_depth=5),
    "monotone-regularised": dict(PARITY["monotone-regularised"], colsample_bynode=0.8, seed=1),
    "both": dict(monotone_constraints=MONO, interaction_constraints=SETS, max_depth=5),
    "min-samples-leaf": dict(min_samples_leaf=12, max_depth=5),
    "min-samples-leaf-sampled": dict(
        min_samples_leaf=9, max_depth=6, subsample=0.7, colsample_bynode=0.8, seed=4
    ),
    "min-samples-leaf-lossguide": dict(
        min_samples_leaf=15, max_depth=4, grow_policy="lossguide", max_leaves=9
    ),
    "all-three": dict(
        monotone_constraints=MONO, interaction_constraints=SETS, min_samples_leaf=10, max_depth=5
    ),
}


@pytest.mark.parametrize("name", list(NATIVE_CASES))
def test_constraints_grow_on_the_native_kernel(data, name, monkeypatch, request):
    """Interaction and monotone constraints and ``min_samples_leaf`` are grown by the
    native tree kernel (``hist.cc``: per node, the features on its path and the sets
    holding it; the node's bounds, XGBoost's float32 scores given the bounded weights,
    the midpoint bounds; row counts histogrammed with g and h), the same trees and leaf
    values as the XLA level loop's, bit for bit (pure-JAX histogram path); leaf-wise
    trees, which only the kernel grows, keep the interaction rule on every path and the
    row minimum in every leaf. 20,000 x 20 rows, depth 6, 50 rounds
    (benchmarks/constraints.py): interaction 0.18 -> 0.06 s, monotone 0.19 -> 0.08 s
    (XGBoost 0.05, 0.09 s), min_samples_leaf=20 0.26 -> 0.11 s."""
    import jax

    from jaxboost import native as native_kernel

    if not native_kernel.available():
        pytest.skip("native kernel unavailable")
    X, y, _ = data
    kw = dict(n_rounds=8, **NATIVE_CASES[name])
    calls = []
    grow_tree = native_kernel.grow_tree

    def counted(*a, **k):
        calls.append(tuple(k.get(key) is not None for key in ("sets", "mono", "counts")))
        return grow_tree(*a, **k)

    jax.clear_caches()
    monkeypatch.setattr(native_kernel, "grow_tree", counted)
    bst = train(X, y, **kw)
    want = tuple(
        key in kw for key in ("interaction_constraints", "monotone_constraints", "min_samples_leaf")
    )
    assert calls and all(c == want for c in calls)  # the kernel grew them, with the rules
    if "min_samples_leaf" in kw and "subsample" not in kw:  # (sampled: of the kept rows)
        leaves = bst.predict_leaf(X)
        for t in range(leaves.shape[1]):
            counts = np.bincount(leaves[:, t])
            assert counts[counts > 0].min() >= kw["min_samples_leaf"], t
    if "interaction_constraints" in kw:
        sets = json.loads(SETS)
        paths = _paths(bst.ensemble)
        assert all(allowed(f, above, sets) for f, above in paths)
        assert any(len(set(above)) >= 1 and f not in above for f, above in paths)
    if kw.get("grow_policy") == "lossguide":
        leaves = np.asarray(bst.ensemble.is_leaf)
        assert ((~leaves).sum(axis=1) <= 8).all()  # 9 leaves at most: 8 splits
        # with room for every split, leaf-wise growth is the level-wise tree
        kw.update(max_leaves=2 ** kw["max_depth"])
        bst = train(X, y, **kw)
        del kw["grow_policy"], kw["max_leaves"]
    if "monotone_constraints" in kw:  # and the model is monotone
        for f, sign in enumerate(MONO_T):
            if sign:
                assert worst_step(bst, X[:50], f, sign, X) >= -1e-6
    request.getfixturevalue("pure_jax_histogram")
    ref = train(X, y, **kw)
    for field in ("feature", "tbin", "default_left", "is_leaf", "value"):
        np.testing.assert_array_equal(
            getattr(bst.ensemble, field), getattr(ref.ensemble, field), err_msg=field
        )


# --- min_samples_leaf -----------------------------------------------------------------
def _brute_force_tree(X, g, h, depth, k, lam):
    """Seed 000's ``min_leaf`` rule with XGBoost's gain, by brute force: each node tries
    every threshold between distinct values of every feature, keeps candidates whose
    children both hold >= k rows, and splits on the best gain when it is > 1e-6.
    Returns each row's leaf value -G/(H + lambda)."""
    out = np.zeros(len(g))

    def grow_node(rows, d):
        G, H = g[rows].sum(), h[rows].sum()
        best = (1e-6, None)
        if d < depth:
            for f in range(X.shape[1]):
                for t in np.unique(X[rows, f])[1:]:
                    left = rows[X[rows, f] < t]
                    right = rows[X[rows, f] >= t]
                    if len(left) < k or len(right) < k:
                        continue
                    gain = (
                        g[left].sum() ** 2 / (h[left].sum() + lam)
                        + g[right].sum() ** 2 / (h[right].sum() + lam)
                        - G * G / (H + lam)
                    )
                    if gain > best[0]:
                        best = (gain, (left, right))
        if best[1] is None:
            out[rows] = -G / (H + lam)
        else:
            for part in best[1]:
                grow_node(part, d + 1)

    grow_node(np.arange(len(g)), 0)
    return out


def test_min_samples_leaf_matches_brute_force_on_a_tiny_data_set():
    """24 rows, 2 features, depth 2, one round of squared error from margin 0: the tree
    equals the brute-force search of seed 000's rule (rows per child >= k), which differs
    here from the tree without the minimum. (Seed 000's own ``Node`` class, run on these
    rows with ``min_leaf=5``, gamma 0, lambda 1, gives these predictions to 2e-8; it
    differs from jaxboost only where its best split has a negative gain, which it makes
    and jaxboost, like XGBoost, does not.)"""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(24, 2)).astype(np.float32)
    y = (np.where(X[:, 0] > 1.2, 4.0, 0.0) + X[:, 1] + 0.3 * rng.normal(size=24)).astype(np.float32)
    g, h = -y.astype(np.float64), np.ones(24)  # squared error at margin 0
    expected = _brute_force_tree(X.astype(np.float64), g, h, depth=2, k=5, lam=1.0)
    unlimited = _brute_force_tree(X.astype(np.float64), g, h, depth=2, k=1, lam=1.0)
    assert np.abs(expected - unlimited).max() > 0.5
    bst = jaxboost.train(
        "squared",
        X,
        y,
        n_rounds=1,
        max_depth=2,
        learning_rate=1.0,
        reg_lambda=1.0,
        min_child_weight=0.0,
        base_margin=0.0,
        min_samples_leaf=5,
        verbose=False,
    )
    np.testing.assert_allclose(bst.predict(X), expected, rtol=1e-5, atol=1e-5)
    assert np.bincount(bst.predict_leaf(X)[:, 0]).max() >= 5
    assert min(c for c in np.bincount(bst.predict_leaf(X)[:, 0]) if c) >= 5


ALL_ON = dict(monotone_constraints=MONO, interaction_constraints=SETS, min_samples_leaf=25)


@pytest.fixture(scope="module")
def weighted(data):
    """Sample weights with 10 % zeros (rows that never count toward the minimum)."""
    X, y, _ = data
    w = np.random.default_rng(1).uniform(0.5, 2.0, len(y)).astype(np.float32)
    w[::10] = 0.0
    return w


@pytest.fixture(scope="module")
def all_on(data, weighted):
    X, y, _ = data
    return train(X, y, sample_weight=weighted, **ALL_ON)


def test_every_leaf_holds_min_samples_leaf_rows(data, weighted, all_on):
    """Every leaf of every tree holds >= 25 training rows of positive weight (rows of
    weight 0 do not count), with the other two constraints on as well; the sample
    weights are far from 1, so a minimum on summed weight would give other trees.
    Without the option, the same data grows leaves of fewer rows."""
    X, y, X_test = data
    positive = weighted > 0
    leaves = all_on.predict_leaf(X)
    for t in range(leaves.shape[1]):
        counts = np.bincount(leaves[positive, t])
        assert counts[counts > 0].min() >= 25, t
    free = jaxboost.from_xgboost(_xgb_model(X, y, {}))
    leaves = free.predict_leaf(X)
    assert (
        min(
            np.bincount(leaves[:, t])[np.bincount(leaves[:, t]) > 0].min()
            for t in range(leaves.shape[1])
        )
        < 25
    )
    assert all(allowed(f, above, json.loads(SETS)) for f, above in _paths(all_on.ensemble))
    for f, sign in enumerate(MONO_T):
        if sign:
            assert worst_step(all_on, X_test, f, sign, X) >= 0.0
    state = io.loads(io.dumps(all_on)).train_state  # recorded in the model file
    assert state["monotone_constraints"] == MONO and state["min_samples_leaf"] == 25
    assert json.loads(state["interaction_constraints"]) == json.loads(SETS)


@pytest.fixture(scope="module")
def mesh2():
    import jax
    from jax.sharding import Mesh

    devices = jax.devices("cpu")
    if len(devices) < 2:
        pytest.skip("needs 2 host CPU devices (jaxboost.sharding.use_cpu_devices)")
    return Mesh(np.array(devices[:2]), ("rows",))


@pytest.mark.parametrize("where", ["mesh", "pure_jax", "feature_blocks"])
def test_constraints_on_every_tree_builder_path(
    data, weighted, all_on, where, mesh2, monkeypatch, request
):
    """The three constraints together give the same model sharded over two devices (row
    counts summed across devices), on the pure-JAX histogram, and with the features in
    blocks of one (wide data's path)."""
    X, y, _ = data
    kw = dict(sample_weight=weighted, **ALL_ON)
    if where == "mesh":
        kw["mesh"] = mesh2
    elif where == "pure_jax":
        request.getfixturevalue("pure_jax_histogram")
    else:
        import jax

        jax.clear_caches()
        monkeypatch.setattr(grow, "HIST_MEMORY", 1)
    bst = train(X, y, **kw)
    for field in ("feature", "tbin", "default_left", "is_leaf"):
        np.testing.assert_array_equal(
            getattr(bst.ensemble, field), getattr(all_on.ensemble, field), err_msg=field
        )
    np.testing.assert_allclose(bst.predict(X), all_on.predict(X), rtol=1e-5, atol=1e-5)


# --- arguments ------------------------------------------------------------------------
BAD = [
    (dict(monotone_constraints=(1, 0)), ValueError, "has 2 entries; the data has 3"),
    (dict(monotone_constraints=(1, 2, 0)), ValueError, r"must be -1 .* got 2"),
    (dict(monotone_constraints=(1, 0.5, 0)), ValueError, r"\[1\] must be -1"),
    (dict(monotone_constraints="(1,x,0)"), ValueError, "XGBoost's form"),
    (dict(monotone_constraints={5: 1}), ValueError, r"index 5, outside \[0, 3\)"),
    (dict(monotone_constraints={"z": 1}), ValueError, "no names"),
    (dict(monotone_constraints=3), TypeError, "sequence of 3 signs"),
    (dict(interaction_constraints=[[0, 1], [3]]), ValueError, "outside"),
    (dict(interaction_constraints=[]), ValueError, "is empty"),
    (dict(interaction_constraints=[[0], []]), ValueError, r"\[1\] is an empty set"),
    (dict(interaction_constraints=[0, 1]), TypeError, r"\[0\] must be a list"),
    (dict(interaction_constraints="[[0,1]"), ValueError, "XGBoost's form"),
    (dict(min_samples_leaf=0), ValueError, r"in \[1, "),
    (dict(min_samples_leaf=2.5), TypeError, "integer"),
    (dict(min_samples_leaf=True), TypeError, "integer"),
    (
        dict(monotone_constraints=(1, 0, 0), n_outputs=2, multi_strategy="multi_output_tree"),
        ValueError,
        "one output",
    ),
]


@pytest.mark.parametrize("kw,exc,match", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_constraints_are_refused_before_training(kw, exc, match):
    X = np.zeros((20, 3), np.float32)
    y = np.zeros(20, np.float32)
    loss = "squared"
    if kw.get("n_outputs"):

        def loss(y, pred):
            return (pred[0] - y) ** 2 + pred[1] ** 2

    with pytest.raises(exc, match=match):
        jaxboost.train(loss, X, y, n_rounds=1, **kw)


def test_names_train_many_and_scikit_learn(data):
    """Constraints by feature name (a DataFrame's columns), a wrong name, train_many's
    per-configuration key, and the scikit-learn estimators' parameters."""
    pd = pytest.importorskip("pandas")
    from jaxboost.sklearn import JaxBoostClassifier, JaxBoostRegressor
    from sklearn.base import clone

    X, y, X_test = data
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    with pytest.raises(ValueError, match="unknown feature 'g0'"):
        jaxboost.train("squared", frame, y, n_rounds=1, monotone_constraints={"g0": 1})
    with pytest.raises(ValueError, match="configuration 1"):
        jaxboost.train_many(
            [{}, {"monotone_constraints": (1,)}], X, y, objective="squared", n_rounds=1
        )
    named = dict(zip(frame.columns, MONO_T))
    reg = JaxBoostRegressor(
        n_estimators=N_ROUNDS,
        max_depth=DEPTH,
        learning_rate=LR,
        monotone_constraints=named,
        min_samples_leaf=1,
    )
    assert clone(reg).get_params()["monotone_constraints"] == named
    assert "interaction_constraints" in JaxBoostClassifier().get_params()
    reg.fit(frame, y)
    assert reg.booster_.train_state["monotone_constraints"] == MONO
    # the model of train() with the signs by position (both fit the intercept)
    ref = train(X, y, monotone_constraints=MONO_T, base_margin=None)
    rows = pd.DataFrame(X_test, columns=frame.columns)
    np.testing.assert_array_equal(reg.predict(rows), ref.predict(X_test))


def _zero_gh_loss(y, pred):
    """Squared error, except rows labelled 0 contribute nothing (g = h = 0)."""
    import jax.numpy as jnp

    return jnp.where(y == 0, 0.0 * pred, (pred - y) ** 2)


def test_rows_with_zero_g_and_h_count_toward_min_samples_leaf(request):
    """Rows whose g and h are exactly 0 still count toward the minimum: 200 rows, x = 0 ..
    19 (10 rows each, no missing values: one pass, thresholds descending), labels -1
    below 14, 0 at 14 (the loss ignores those rows), +1 above. The best split sends
    x >= 15 right (50 rows) or, with the same sums, x >= 14 (60 rows); with
    ``min_samples_leaf=55`` only the second is allowed. The native kernel skips bins
    whose sums are 0 in its scan, so it must keep bins that hold counted rows (without
    that it splits at x >= 13); the pure-JAX level loop scans every bin."""
    x = np.repeat(np.arange(20, dtype=np.float32), 10)[:, None]
    y = np.where(x[:, 0] < 14, -1.0, np.where(x[:, 0] == 14, 0.0, 1.0)).astype(np.float32)
    kw = dict(n_rounds=1, max_depth=1, base_margin=0.0, min_child_weight=0.0, verbose=False)

    def threshold(**more):
        bst = jaxboost.train(_zero_gh_loss, x, y, **kw, **more)
        return float(np.asarray(bst.ensemble.threshold)[0, 0])

    assert threshold() == 14.5  # unconstrained: the first of the two equal candidates
    assert threshold(min_samples_leaf=55) == 13.5  # native kernel where available
    request.getfixturevalue("pure_jax_histogram")
    assert threshold(min_samples_leaf=55) == 13.5
