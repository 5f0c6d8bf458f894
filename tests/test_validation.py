"""Bad input gets a clear error, raised before training starts."""

import jax.numpy as jnp
import numpy as np
import pytest

import jaxboost
import objectives
from jaxboost import DataError, LossError


def sq(y, p):
    return 0.5 * (y - p) ** 2


@pytest.fixture(scope="module")
def Xy():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3)).astype(np.float32)
    return X, (X[:, 0] > 0).astype(np.float32)


@pytest.mark.parametrize(
    "bad, match",
    [(np.nan, "y has NaN or infinite labels: 1 value"), (np.inf, "y has NaN or infinite labels")],
)
def test_nonfinite_labels(Xy, bad, match):
    X, y = Xy
    y = y.copy()
    y[7] = bad
    with pytest.raises(DataError, match=match) as e:
        jaxboost.train(sq, X, y, n_rounds=2)
    assert "index 7" in str(e.value)


def test_length_mismatch(Xy):
    X, y = Xy
    with pytest.raises(DataError, match="X has 50 rows, y has 49 labels"):
        jaxboost.train(sq, X, y[:-1], n_rounds=2)


def test_empty_and_not_2d(Xy):
    X, y = Xy
    with pytest.raises(DataError, match="empty"):
        jaxboost.train(sq, np.zeros((0, 3), np.float32), np.zeros(0), n_rounds=2)
    with pytest.raises(DataError, match=r"must be 2-D.*X.reshape\(-1, 1\)"):
        jaxboost.train(sq, X[:, 0], y, n_rounds=2)
    with pytest.raises(DataError, match="must be 2-D"):
        jaxboost.train(sq, X[None], y, n_rounds=2)


def test_infinite_features(Xy):
    X, y = Xy
    X = X.copy()
    X[3, 1] = np.inf
    with pytest.raises(DataError, match="infinite value.*row 3"):
        jaxboost.train(sq, X, y, n_rounds=2)


def test_negative_and_bad_sample_weights(Xy):
    X, y = Xy
    w = np.ones(50)
    w[4] = -1
    with pytest.raises(DataError, match="sample_weight must be >= 0.*index 4"):
        jaxboost.train(sq, X, y, sample_weight=w, n_rounds=2)
    with pytest.raises(DataError, match="one weight per row"):
        jaxboost.train(sq, X, y, sample_weight=np.ones(3), n_rounds=2)
    with pytest.raises(DataError, match="zero for every row"):
        jaxboost.train(sq, X, y, sample_weight=np.zeros(50), n_rounds=2)


def test_labels_outside_the_objective_domain(Xy):
    X, y = Xy
    with pytest.raises(DataError, match=r"logistic needs labels y in \[0, 1\]"):
        jaxboost.train(objectives.logistic, X, y * 3, n_rounds=2)
    # the offending label as the user wrote it, not NumPy's repr (np.float32(2.0))
    bad = np.where(np.arange(len(y)) == 4, 2.0, 0.0)
    with pytest.raises(DataError, match=r"outside, the first at row 4: 2\.0$"):
        jaxboost.train(objectives.logistic, X, bad, n_rounds=2)


def test_non_scalar_loss_is_named(Xy):
    X, y = Xy

    def vector_loss(y, p):
        return jnp.stack([y - p, y + p])

    with pytest.raises(LossError, match=r"vector_loss must return a scalar.*shape \(2,\)"):
        jaxboost.train(vector_loss, X, y, n_rounds=2)


def test_loss_with_wrong_signature(Xy):
    X, y = Xy

    def one_arg(y):
        return y

    msg = r"the loss .*one_arg failed when called as loss\(y, pred\)"
    with pytest.raises(TypeError, match=msg):
        jaxboost.train(one_arg, X, y, n_rounds=2)


def test_nan_gradient_names_round_and_rows(Xy):
    X, _ = Xy
    y = np.where(X[:, 0] > 0, 10.0, 0.0).astype(np.float32)

    def blows_up_above_5(t, p):
        # Finite loss, but its gradient is NaN once the margin passes 5.
        return 0.5 * (t - p) ** 2 + jnp.where(p > 5.0, jnp.sqrt(jnp.where(p > 5.0, -p, 1.0)), 0.0)

    with pytest.raises(LossError, match="blows_up_above_5") as e:
        jaxboost.train(
            blows_up_above_5,
            X,
            y,
            n_rounds=40,
            base_margin=0.0,
            learning_rate=0.3,
            min_child_weight=0,
        )
    err = e.value
    assert err.round is not None and err.round > 0
    assert f"at round {err.round}" in str(err) and f"{err.n_rows} row(s)" in str(err)
    # The attached model is exactly the rounds before: its margins put n_rows rows
    # above 5, which is what made round `round` fail, and none were before.
    assert len(err.booster) == err.round
    margins = err.booster.predict(X, output_margin=True)
    assert int((margins > 5.0).sum()) == err.n_rows
    assert int((err.booster[: err.round - 1].predict(X, output_margin=True) > 5).sum()) == 0


def test_predict_with_wrong_feature_count(Xy):
    X, y = Xy
    bst = jaxboost.train(sq, X, y, n_rounds=2)
    with pytest.raises(DataError, match="X has 2 features but the model was trained with 3"):
        bst.predict(X[:, :2])


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(n_rounds="10"), TypeError, "n_rounds must be an integer"),
        (dict(n_rounds=-1), ValueError, "n_rounds must be >= 0"),
        (dict(max_depth=0), ValueError, "max_depth must be >= 1"),
        # XGBoost's and LightGBM's "no depth bound" get the way to leaf-wise trees here
        (
            dict(max_depth=-1, grow_policy="lossguide", max_leaves=31),
            ValueError,
            r"max_depth=-1, no bound, have no equivalent.*max_leaves=31, max_depth=8",
        ),
        (dict(max_bin=70_000), ValueError, "max_bin must be <= 65536"),
        (dict(learning_rate=0), ValueError, "learning_rate must be > 0"),
        (dict(reg_lambda=-1), ValueError, "reg_lambda must be >= 0"),
        (dict(gamma=float("nan")), ValueError, "gamma must be finite"),
        (dict(base_margin="0"), TypeError, "base_margin must be a number"),
    ],
)
def test_bad_parameters(Xy, kwargs, exc, match):
    X, y = Xy
    with pytest.raises(exc, match=match):
        jaxboost.train(sq, X, y, **kwargs)


def test_objective_not_callable(Xy):
    X, y = Xy
    with pytest.raises(TypeError, match="objective must be a callable"):
        jaxboost.train(3, X, y)
    with pytest.raises(ValueError, match="unknown objective 'hinge'"):
        jaxboost.train("hinge", X, y)


def test_scalar_validators():
    from jaxboost.inputs.numbers import check_int, check_real, is_int, is_real

    assert is_int(np.int64(3)) and not is_int(True) and not is_int(3.0)
    assert is_real(np.float32(0.5)) and is_real(2) and not is_real(False) and not is_real("1")
    assert check_int("n", np.int64(4), low=0) == 4 and type(check_int("n", np.int64(4))) is int
    assert check_real("x", np.float32(0.5), low=0, high=1) == 0.5
    for value, exc, match in [
        (True, TypeError, "n must be an integer, got bool True"),
        (2.0, TypeError, "n must be an integer, got float 2.0"),
        (-1, ValueError, r"n must be in \[0, 10\], got -1"),
        (11, ValueError, r"n must be in \[0, 10\], got 11"),
    ]:
        with pytest.raises(exc, match=match):
            check_int("n", value, low=0, high=10)
    with pytest.raises(ValueError, match="n must be >= 0, got -1"):
        check_int("n", -1, low=0)
    for value, exc, match in [
        ("1", TypeError, "x must be a number, got str '1'"),
        (float("nan"), ValueError, "x must be finite"),
        (10**400, ValueError, "x must be finite"),
        (0.0, ValueError, r"x must be in \(0, 1\], got 0.0"),
        (1.5, ValueError, r"x must be in \(0, 1\], got 1.5"),
    ]:
        with pytest.raises(exc, match=match):
            check_real("x", value, low=0, low_open=True, high=1)
    with pytest.raises(ValueError, match="x must be > 0, got 0"):
        check_real("x", 0, low=0, low_open=True)


@pytest.mark.parametrize(
    "columns,names",
    [
        ([0, 1, 2], ["0", "1", "2"]),
        (["a", 1, 2.5], ["a", "1", "2.5"]),
        ("multi", ["p_x", "p_y", "q_x"]),
    ],
)
def test_any_column_names_are_kept_and_checked(columns, names):
    """Column names that were not all strings (integers, mixed, a MultiIndex) were
    dropped, so a frame with its columns in another order was predicted by position
    without a word (issue 28, item 9). They are kept as strings and checked."""
    pd = pytest.importorskip("pandas")
    if columns == "multi":
        columns = pd.MultiIndex.from_tuples([("p", "x"), ("p", "y"), ("q", "x")])
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3)).astype(np.float32)
    frame = pd.DataFrame(X, columns=columns)
    bst = jaxboost.train("squared", frame, X[:, 0], n_rounds=3, max_depth=2)
    assert bst.feature_names == names
    with pytest.raises(DataError, match="different order"):
        bst.predict(frame[frame.columns[::-1]])
    np.testing.assert_array_equal(bst.predict(frame), bst.predict(X))
