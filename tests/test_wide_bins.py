"""``max_bin`` above 256 (issue 31, item 2): bins are uint16 where the data needs more
than 256 bins per feature and stay uint8 where it does not. With ``max_bin`` above a
feature's distinct values every value gets its own bin, so the trees equal XGBoost's
exact method (run here), which 256 bins cannot reach on the same data."""

import numpy as np
import pytest
import scipy.sparse as sp

import jaxboost
from jaxboost.engine.binning import apply_bins, compute_bin_edges
from jaxboost.errors import DataError

xgb = pytest.importorskip("xgboost")

N, ROUNDS, DEPTH = 2000, 8, 4


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(N, 4)), 2).astype(np.float32)  # ~450 values each
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (
        2 * np.nan_to_num(X[:, 0]) + np.sin(3 * np.nan_to_num(X[:, 1])) + 0.3 * rng.normal(size=N)
    ).astype(np.float32)
    return X, y


def _exact(X, y, base, rounds=ROUNDS):
    d = xgb.DMatrix(X, label=y, missing=np.nan)
    params = dict(tree_method="exact", max_depth=DEPTH, eta=0.3, base_score=base, nthread=1)
    return xgb.train(params, d, rounds).predict(d, output_margin=True)


def test_bins_are_uint16_only_where_the_data_needs_them():
    X, _ = _data()
    wide = compute_bin_edges(X, max_bin=1024)
    assert wide.n_bins == 512 and int(wide.n_cuts.max()) > 254
    assert apply_bins(X, wide).dtype == np.uint16
    few = compute_bin_edges(np.round(X, 0), max_bin=1024)  # a few values per feature
    assert few.n_bins == 16 and apply_bins(np.round(X, 0), few).dtype == np.uint8
    assert apply_bins(X, compute_bin_edges(X)).dtype == np.uint8  # the default


def test_max_bin_1024_equals_xgboost_exact_where_256_cannot():
    X, y = _data()
    bst = jaxboost.train(
        "squared",
        X,
        y,
        n_rounds=ROUNDS,
        max_depth=DEPTH,
        max_bin=1024,
        eval_set={"valid": (X[:500], y[:500])},
        verbose=False,
    )
    ref = _exact(X, y, float(bst.base_margin))
    np.testing.assert_allclose(bst.predict(X, output_margin=True), ref, atol=1e-5, rtol=0)
    # the eval set was binned with the same uint16 bins: its loss is the model's
    rmse = np.sqrt(np.mean((bst.predict(X[:500]) - y[:500]) ** 2))
    np.testing.assert_allclose(bst.history["valid"]["rmse"][-1], rmse, rtol=1e-5)
    narrow = jaxboost.train("squared", X, y, n_rounds=ROUNDS, max_depth=DEPTH, verbose=False)
    assert np.abs(narrow.predict(X, output_margin=True) - ref).max() > 1e-2


def test_wide_bins_save_load_continue_and_sparse(tmp_path):
    X, y = _data(1)
    first = jaxboost.train(
        "squared", X, y, n_rounds=ROUNDS // 2, max_depth=DEPTH, max_bin=1024, verbose=False
    )
    first.save(tmp_path / "m.json")
    again = jaxboost.load(tmp_path / "m.json")
    assert again.params.max_bin == 1024 and again.bin_edges.n_bins == 512
    np.testing.assert_array_equal(again.predict(X), first.predict(X))
    more = jaxboost.train(
        "squared",
        X,
        y,
        n_rounds=ROUNDS // 2,
        max_depth=DEPTH,
        max_bin=1024,
        init_model=again,
        verbose=False,
    )
    whole = jaxboost.train(
        "squared", X, y, n_rounds=ROUNDS, max_depth=DEPTH, max_bin=1024, verbose=False
    )
    np.testing.assert_allclose(
        more.predict(X, output_margin=True), whole.predict(X, output_margin=True), atol=1e-6
    )
    # CSR input (absent = missing) trains the dense model with NaN in the absent cells
    Xs = sp.csr_matrix(np.nan_to_num(X, nan=0.0))
    dense = np.where(np.nan_to_num(X, nan=0.0) == 0, np.nan, X)
    a = jaxboost.train("squared", Xs, y, n_rounds=2, max_depth=DEPTH, max_bin=1024, verbose=False)
    b = jaxboost.train(
        "squared", dense, y, n_rounds=2, max_depth=DEPTH, max_bin=1024, verbose=False
    )
    np.testing.assert_array_equal(a.predict(Xs), b.predict(dense))


def _lossguide_like_xgboost(X, y, d, leaves, ours=(), **extra):
    """jaxboost's and XGBoost ``hist``'s lossguide at ``max_bin=1024`` (6 rounds,
    learning rate 0.3, depth at most 6, base margin 0, ``extra`` for both, ``ours``
    for jaxboost only): equal training margins to 1e-5, on uint16 bins; returns
    jaxboost's model."""
    params = dict(tree_method="hist", grow_policy="lossguide", max_leaves=leaves, max_depth=6)
    params.update(eta=0.3, max_bin=1024, base_score=0.0, nthread=1, **extra)
    ref = xgb.train(params, d, 6)
    bst = jaxboost.train(
        "squared",
        X,
        y,
        n_rounds=6,
        learning_rate=0.3,
        max_depth=6,
        max_bin=1024,
        grow_policy="lossguide",
        max_leaves=leaves,
        base_margin=0.0,
        verbose=False,
        **dict(ours),
        **extra,
    )
    assert bst.bin_edges.n_bins > 256
    assert (~np.asarray(bst.ensemble.is_leaf)).sum(axis=1).max() == leaves - 1
    np.testing.assert_allclose(
        bst.predict(X, output_margin=True), ref.predict(d, output_margin=True), atol=1e-5, rtol=0
    )
    return bst


def test_lossguide_on_1024_bins_equals_xgboost_hist(monkeypatch):
    """Leaf-wise trees on uint16 bins (the whole-tree kernel level by level, keeping
    the splits the best-first walk expands): XGBoost ``hist`` lossguide's training
    margins at ``max_bin=1024``, where every one of the ~450 values per feature has its
    own bin in both. Histograms beyond the kernel's budget get the error that says what
    they need, as on uint8 bins."""
    from jaxboost.engine import grow

    X, y = _data(4)
    _lossguide_like_xgboost(X, y, xgb.DMatrix(X, label=y, missing=np.nan), 8)
    monkeypatch.setattr(grow, "HIST_MEMORY", 1 << 20)
    with pytest.raises(ValueError, match=r"max_leaves=200 and max_depth=10 .* MiB"):
        kw = dict(max_leaves=200, max_depth=10, max_bin=1024, verbose=False)
        jaxboost.train("squared", X, y, grow_policy="lossguide", **kw)


def test_lossguide_with_categories_on_1024_bins_equals_xgboost_hist():
    """Leaf-wise trees over a categorical feature beside one of ~450 values at
    ``max_bin=1024`` (uint16 bins; the categories keep their slots below the
    missing-value bin, which goes each split's default way): XGBoost's lossguide with
    ``enable_categorical`` on the same codes, run here."""
    X, y = _data(5)
    rng = np.random.default_rng(6)
    X[:, 1] = rng.integers(0, 7, N)
    X[rng.random(N) < 0.1, 1] = np.nan
    effect = np.array([0.4, -1.2, 2.0, 0.3, -0.6, 1.1, 0.0], np.float32)
    y = y + np.where(np.isnan(X[:, 1]), 0.5, effect[np.nan_to_num(X[:, 1]).astype(int)])
    y = y.astype(np.float32)
    types = ["q", "c", "q", "q"]
    d = xgb.DMatrix(X, label=y, feature_types=types, enable_categorical=True)
    ours = {"categorical_features": [1]}
    bst = _lossguide_like_xgboost(X, y, d, 9, ours=ours, max_cat_to_onehot=1)
    assert np.asarray(bst.ensemble.cat_bits).any()


def test_wide_bins_refusals_name_the_limit():
    X, y = _data()
    Xc = np.column_stack([np.arange(N) % 300, X[:, 0]]).astype(np.float32)
    with pytest.raises(DataError, match="at most 255 categories"):
        jaxboost.train(
            "squared", Xc, y, n_rounds=1, max_bin=1024, verbose=False, categorical_features=[0]
        )
    with pytest.raises(ValueError, match="max_bin must be <= 65536"):
        jaxboost.train("squared", X, y, n_rounds=1, max_bin=65537, verbose=False)


def test_an_xgboost_model_of_1024_bins_imports_saves_and_continues(tmp_path):
    X, _ = _data(2)
    y = np.sin(8 * np.nan_to_num(X[:, 0])).astype(np.float32)  # many splits on feature 0
    d = xgb.DMatrix(X, label=y, missing=np.nan)
    ref = xgb.train(dict(tree_method="hist", max_bin=1024, max_depth=6, eta=0.3, nthread=1), d, 40)
    path = tmp_path / "xgb.json"
    ref.save_model(path)
    with __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("error")  # no cuts are dropped
        bst = jaxboost.from_xgboost(path)
    assert int(bst.bin_edges.n_cuts.max()) > 254 and bst.params.max_bin > 256
    np.testing.assert_allclose(
        bst.predict(X, output_margin=True), ref.predict(d, output_margin=True), atol=1e-5, rtol=0
    )
    bst.save(tmp_path / "m.json")
    again = jaxboost.load(tmp_path / "m.json")
    more = jaxboost.train(
        "squared",
        X,
        y,
        n_rounds=2,
        max_depth=6,
        init_model=again,
        max_bin=again.params.max_bin,
        verbose=False,
    )
    assert len(more) == 42


def _spy(monkeypatch, module, name):
    """Record the dtype and shape of the bins each call of ``module.name`` gets."""
    seen = []
    real = getattr(module, name)

    def spy(bins, *args, **kwargs):
        seen.append((np.dtype(bins.dtype), bins.shape))
        return real(bins, *args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return seen


# Trees on uint16 bins grow in the native whole-tree kernel (one call per tree, or per
# round's class trees), categorical features beside wide ones too (their at most 256
# category slots below the missing-value bin); vector leaves grow in the XLA level loop
# over the native histogram (their channels two at a time, test below). Either way the
# trees are the pure-JAX path's, bit for bit.
WIDE_CASES = {
    "plain": ("squared", dict(), "grow_tree"),
    "counted-monotone": (
        "squared",
        dict(min_samples_leaf=30, monotone_constraints=[1, 0, 0, 0, 0]),
        "grow_tree",
    ),
    "class-trees": ("softmax", dict(max_bin=2048), "grow_trees"),
    "categorical": ("squared", dict(categorical_features=[3, 4]), "grow_tree"),
}


@pytest.mark.parametrize("case", sorted(WIDE_CASES))
def test_uint16_bins_take_the_native_kernels_and_grow_the_pure_jax_model(case, monkeypatch):
    from jaxboost import native
    from jaxboost.training import data

    if not native.available():
        pytest.skip(f"native kernel unavailable: {native.unavailable_reason()}")
    objective, extra, kernel = WIDE_CASES[case]
    X, y = _data(3)
    # a fifth column: programs of their own (the module's other tests compiled F = 4,
    # and a program already compiled is not traced again, so the spies would see nothing)
    X = np.column_stack([X, np.round(np.random.default_rng(5).normal(size=N), 2)])
    if objective == "softmax":
        y = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3])).astype(np.float32)
    if case == "categorical":  # 12 and 3 categories (partition, one-hot) with missing
        rng = np.random.default_rng(4)  # values beside ~450 values
        X[:, 3] = rng.integers(0, 12, N)
        X[:, 4] = rng.integers(0, 3, N)
        X[:, 3:] = np.where(rng.random((N, 2)) < 0.05, np.nan, X[:, 3:])
        y = (y + 2 * np.isin(X[:, 3], [1, 4, 7]) - (X[:, 4] == 1)).astype(np.float32)
    seen = _spy(monkeypatch, native, kernel)
    kw = dict(dict(n_rounds=3, max_depth=4, max_bin=1024, verbose=False), **extra)
    # categorical: the training rows' routing on bins (the eval set's) agrees with
    # predict on raw values: the missing bin, past code 255, goes the split's default way
    if case == "categorical":
        assert np.asarray(jaxboost.train(objective, X, y, **kw).ensemble.cat_bits).any()
    ev = dict(eval_set={"train": (X, y)}) if case == "categorical" else {}
    fast = jaxboost.train(objective, X, y, **ev, **kw)
    assert fast.bin_edges.n_bins > 256
    assert seen and {d for d, _ in seen} == {np.dtype(np.uint16)}
    assert {s[1] for _, s in seen} == {5} and min(s[0] for _, s in seen) >= N  # (N, F)
    monkeypatch.setattr(data, "use_native", lambda: False)
    ref = jaxboost.train(objective, X, y, **kw)
    for name in ("feature", "threshold", "value", "default_left", "is_leaf"):
        np.testing.assert_array_equal(
            np.asarray(getattr(fast.ensemble, name)), np.asarray(getattr(ref.ensemble, name))
        )
    np.testing.assert_array_equal(fast.predict(X), ref.predict(X))
    if ev:
        rmse = np.sqrt(np.mean((fast.predict(X) - y) ** 2))
        np.testing.assert_allclose(fast.history["train"]["rmse"][-1], rmse, rtol=1e-5)


def test_vector_leaf_channels_of_uint16_bins_go_through_the_native_pair_kernel():
    """Vector leaves' channel histograms on uint16 (row-major) bins: two channels a
    pass of the native pair kernel, equal to the pure-JAX scatter's on the same bins
    laid out feature-major, and to NumPy's sums."""
    import jax

    from jaxboost import native
    from jaxboost.engine.grow import channel_histogram

    if not native.available():
        pytest.skip(f"native kernel unavailable: {native.unavailable_reason()}")
    rng = np.random.default_rng(6)
    n, f, B, C, nodes = 700, 3, 600, 5, 4
    bins = rng.integers(0, B, size=(n, f)).astype(np.uint16)
    vals = rng.normal(size=(n, C)).astype(np.float32)
    node = rng.integers(0, nodes + 1, n).astype(np.int32)  # node 4: rows skipped
    with jax.enable_x64(True):
        fast = channel_histogram(bins, vals, native=True, max_bin=B)(node, nodes)
        pure = channel_histogram(bins.T.copy(), vals, native=False, max_bin=B)(node, nodes)
    want = np.zeros((f, nodes, B, C))
    keep = node < nodes
    for j in range(f):
        np.add.at(want[j], (node[keep], bins[keep, j]), vals[keep].astype(np.float64))
    assert fast.shape == (f, nodes, B, C)
    np.testing.assert_array_equal(np.asarray(fast), np.asarray(pure))
    np.testing.assert_allclose(np.asarray(fast), want, rtol=1e-12, atol=1e-12)
