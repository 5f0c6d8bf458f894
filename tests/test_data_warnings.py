"""Data that trains but probably not as meant gets a ``DataWarning`` (issue 28, item 10),
and a polars LazyFrame a clear error (item 14); ordinary data gets no warning."""

import warnings

import numpy as np
import pytest

import jaxboost
from jaxboost import DataError, DataWarning

KW = dict(n_rounds=2, max_depth=2, verbose=False)


def test_float64_values_that_collapse_in_float32_warn():
    rng = np.random.default_rng(0)
    X = np.stack([2.0**40 + np.arange(300.0), rng.normal(size=300)], axis=1)  # float64
    y = (np.arange(300) % 2).astype(np.float32)  # depends on the collapsed column
    with pytest.warns(
        DataWarning,
        match=r"X column 0: distinct values 1099511627776\.0 and "
        r"1099511627777\.0 both become",
    ):
        jaxboost.train("logistic", X, y, **KW)
    # the advice works: the same column minus its minimum trains without a word
    X[:, 0] -= X[:, 0].min()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        jaxboost.train("logistic", X, y, **KW)


def test_chance_float32_neighbours_in_random_float64_do_not_warn():
    # 10,000 rows of float64 normals: in each column a few sampled neighbours lie within
    # float32's spacing by chance (24 pairs over these 30 columns), which changes no cut;
    # the warning is for columns that lose a real share of their values
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10_000, 30))
    s = np.sort(X, axis=0)
    chance = (s[1:] != s[:-1]) & (s[1:].astype(np.float32) == s[:-1].astype(np.float32))
    assert 0 < chance.sum(axis=0).max() <= 5
    y = (X[:, 0] > 0).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        jaxboost.train("logistic", X, y, **KW)
    # a column that loses a share of its values still warns, with the counts
    X[:, 3] = 2.0**30 + rng.integers(0, 5_000, 10_000)  # float32 spacing 128 here
    with pytest.warns(DataWarning, match=r"column 3: .* of the column's \d+ distinct"):
        jaxboost.train("logistic", X, y, **KW)


def test_large_int64_ids_warn_but_float32_input_does_not():
    y = (np.arange(400) % 3 == 0).astype(np.float32)
    ids = (2**31 + np.arange(400)).astype(np.int64)[:, None]
    with pytest.warns(DataWarning, match="column 0"):
        jaxboost.train("logistic", ids, y, **KW)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        jaxboost.train("logistic", ids.astype(np.float32), y, **KW)  # the user's own float32


def test_tiny_sample_weights_warn():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.float32)
    with pytest.warns(DataWarning, match=r"sample_weight's largest value is 1e-38"):
        b = jaxboost.train("logistic", X, y, sample_weight=np.full(200, 1e-38), **KW)
    # what the warning is about: no tree could split
    assert bool(np.all(np.asarray(b.ensemble.is_leaf)[:, 0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        jaxboost.train("logistic", X, y, sample_weight=np.full(200, 1e-3), **KW)


def test_polars_lazyframe_is_refused_with_the_fix():
    pl = pytest.importorskip("polars")
    X = pl.DataFrame({"a": [0.0, 1.0, 2.0, 3.0], "b": [1.0, 0.0, 1.0, 0.0]}).lazy()
    with pytest.raises(DataError, match=r"X is a polars LazyFrame.*X\.collect\(\)"):
        jaxboost.train("squared", X, np.arange(4.0), **KW)


def test_tune_with_a_numpy_metric_names_it_and_the_fix():
    """``tune(val_loss=sklearn's mean_squared_error)`` used to end in JAX's
    TracerArrayConversionError (issue 28, item 14)."""
    sk_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(2)
    X = rng.normal(size=(120, 2)).astype(np.float32)
    y = (X[:, 0] + 0.1 * rng.normal(size=120)).astype(np.float32)
    with pytest.raises(
        TypeError,
        match=r"val_loss 'mean_squared_error' is not a JAX "
        r"function.*val_loss='rmse'",
    ):
        jaxboost.tune(
            "squared",
            X[:80],
            y[:80],
            X[80:],
            y[80:],
            params={"reg_lambda": 1.0},
            val_loss=sk_metrics.mean_squared_error,
            n_rounds=2,
            max_depth=2,
            steps=1,
        )


def test_tune_with_a_huge_optimizer_step_names_the_parameter():
    """``optax.sgd(1e30)`` used to end in ``OverflowError: math range error``."""
    optax = pytest.importorskip("optax")
    rng = np.random.default_rng(2)
    X = rng.normal(size=(120, 2)).astype(np.float32)
    y = (X[:, 0] + 0.1 * rng.normal(size=120)).astype(np.float32)
    with pytest.raises(
        jaxboost.NonFiniteError,
        match=r"tune: the optimizer's step 0 moved "
        r"'delta'.*optax\.adam\(0\.1\)",
    ) as e:
        jaxboost.tune(
            "pseudo_huber",
            X[:80],
            y[:80],
            X[80:],
            y[80:],
            params={"delta": 1.0, "reg_lambda": 1.0},
            val_loss="rmse",
            n_rounds=4,
            max_depth=2,
            steps=3,
            optimizer=optax.sgd(1e30),
        )
    assert e.value.cause == "optimizer"


def test_init_model_continued_on_data_outside_its_edges_warns():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 2)).astype(np.float32)
    y = (X[:, 0] + 0.1 * rng.normal(size=400)).astype(np.float32)
    b = jaxboost.train("squared", X, y, **KW)
    with warnings.catch_warnings():  # data like the original: no word
        warnings.simplefilter("error", DataWarning)
        jaxboost.train("squared", X, y, init_model=b, **KW)
    X2 = X.copy()
    X2[:, 0] += 50.0  # every value far beyond the last cut
    with pytest.warns(DataWarning, match=r"X column 0: 100% of its values lie far outside") as rec:
        jaxboost.train("squared", X2, y, init_model=b, **KW)
    assert rec[0].filename == __file__  # the user's line, not a jaxboost wrapper's


def test_tune_on_a_flat_validation_loss_warns():
    """A piecewise-constant val_loss: every hypergradient 0, the start point returned."""
    import jax.numpy as jnp

    rng = np.random.default_rng(4)
    X = rng.normal(size=(120, 2)).astype(np.float32)
    y = (X[:, 0] + 0.1 * rng.normal(size=120)).astype(np.float32)

    def steps_loss(y, f):  # a rounded error: its gradient is 0 almost everywhere
        return jnp.floor(jnp.abs(y - f) * 0.0)

    with pytest.warns(jaxboost.errors.TuningWarning, match="exactly 0 for every tuned"):
        r = jaxboost.tune(
            "squared",
            X[:80],
            y[:80],
            X[80:],
            y[80:],
            params={"reg_lambda": 1.0},
            val_loss=steps_loss,
            n_rounds=2,
            max_depth=2,
            steps=2,
        )
    assert r.params == {"reg_lambda": 1.0}


def test_infinite_category_label_is_refused_at_training():
    """It used to train and then fail at save without naming a field (issue 28, 14)."""
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame({"c": pd.Categorical([1.0, np.inf, 1.0, np.inf] * 10), "x": np.arange(40.0)})
    with pytest.raises(
        DataError,
        match=r"X column 0 \('c'\) is categorical with the "
        r"category label inf",
    ):
        jaxboost.train("squared", X, np.arange(40.0), categorical_features=[0], **KW)


def test_xgboost_export_refuses_feature_names_xgboost_refuses():
    """A name with '<' used to export to a file whose XGBoost DMatrix then refused it."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(5)
    X = pd.DataFrame({"x<1": rng.normal(size=60), "b": rng.normal(size=60)})
    b = jaxboost.train("squared", X, X["b"].to_numpy() * 2, **KW)
    with pytest.raises(ValueError, match=r"feature name 'x<1' \(feature 0\) contains '<'"):
        jaxboost.to_xgboost_json(b)
    b.feature_names = ["x_lt_1", "b"]
    model = jaxboost.to_xgboost_json(b)
    assert model["learner"]["feature_names"] == ["x_lt_1", "b"]


def test_two_bins_without_missing_values_warn_that_no_tree_can_split():
    """``max_bin`` counts the bin reserved for missing values: at 2 a feature without
    NaN has one bin of values, so the model is a constant; XGBoost's ``max_bin=2`` is
    two bins of values. NaN lets trees split present from missing rows: no warning."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.float32)
    with pytest.warns(DataWarning, match="max_bin=3"):
        flat = jaxboost.train("logistic", X, y, n_rounds=3, max_depth=2, max_bin=2)
    assert np.unique(flat.predict(X)).size == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        three = jaxboost.train("logistic", X, y, n_rounds=3, max_depth=2, max_bin=3)
        X[::4, 0] = np.nan
        jaxboost.train("logistic", X, y, n_rounds=3, max_depth=2, max_bin=2)
    assert np.unique(three.predict(X[~np.isnan(X[:, 0])])).size > 1
