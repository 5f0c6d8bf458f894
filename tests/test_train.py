import jax.numpy as jnp
import numpy as np
import pytest

import jaxboost
import objectives


def test_second_train_with_same_shapes_compiles_nothing(small_binary, compile_counter):
    X, y = small_binary
    jaxboost.train(objectives.logistic, X, y, n_rounds=12, max_depth=3)
    with compile_counter as c:
        # Same shapes; different numeric hyperparameters and round count reuse the
        # compiled program (they are dynamic arguments).
        bst = jaxboost.train(
            objectives.logistic,
            X,
            y,
            n_rounds=17,
            max_depth=3,
            reg_lambda=2.0,
            gamma=0.1,
            learning_rate=0.2,
        )
    assert c.count == 0
    assert len(bst) == 17
    with compile_counter as c:
        # depths 1-6 share one program on CPU (engine.grow.bucketed_depth); 7 does not
        jaxboost.train(objectives.logistic, X, y, n_rounds=12, max_depth=7)
    assert c.count > 0  # the counter does see compilations: a new depth bucket compiles


def test_slicing_equals_training_fewer_rounds(small_binary):
    X, y = small_binary
    full = jaxboost.train(objectives.logistic, X, y, n_rounds=25, max_depth=3)
    short = jaxboost.train(objectives.logistic, X, y, n_rounds=13, max_depth=3)
    np.testing.assert_array_equal(
        full[:13].predict(X, output_margin=True), short.predict(X, output_margin=True)
    )
    assert len(full[:13]) == 13 and len(full[:0]) == 0
    np.testing.assert_allclose(full[:0].predict(X, output_margin=True), full.base_margin)
    with pytest.raises(ValueError, match="start at round 0"):
        full[3:5]


def test_same_inputs_same_model_bits(small_binary):
    X, y = small_binary
    a = jaxboost.train(objectives.logistic, X, y, n_rounds=8, max_depth=3, seed=3)
    b = jaxboost.train(objectives.logistic, X, y, n_rounds=8, max_depth=3, seed=3)
    for fa, fb in zip(a.ensemble, b.ensemble):
        np.testing.assert_array_equal(np.asarray(fa), np.asarray(fb))


def test_integer_weights_equal_duplicated_rows():
    rng = np.random.default_rng(5)
    X = rng.integers(0, 20, size=(120, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(0, 3, 120)).astype(np.float32)
    w = rng.integers(1, 4, size=120)
    Xd, yd = np.repeat(X, w, axis=0), np.repeat(y, w)
    kw = dict(n_rounds=10, max_depth=3, min_child_weight=2.0, reg_alpha=0.5)
    weighted = jaxboost.train(objectives.squared, X, y, sample_weight=w, **kw)
    duplicated = jaxboost.train(objectives.squared, Xd, yd, **kw)
    assert weighted.base_margin == pytest.approx(duplicated.base_margin, rel=1e-6)
    np.testing.assert_allclose(weighted.predict(X), duplicated.predict(X), rtol=1e-5, atol=1e-5)


def test_recovers_a_known_tree_exactly():
    """Data generated from a depth-2 tree: one round at lr 1, lambda 0 reproduces it."""
    rng = np.random.default_rng(7)
    X = rng.integers(0, 10, size=(400, 3)).astype(np.float32)
    truth = np.where(
        X[:, 1] < 4.5, np.where(X[:, 0] < 2.5, -3.0, 1.0), np.where(X[:, 2] < 6.5, 2.0, 5.0)
    ).astype(np.float32)
    bst = jaxboost.train(
        objectives.squared,
        X,
        truth,
        n_rounds=1,
        learning_rate=1.0,
        max_depth=2,
        reg_lambda=0.0,
        base_margin=0.0,
    )
    np.testing.assert_allclose(bst.predict(X), truth, atol=1e-5)
    ens = bst.ensemble
    assert ens.feature[0, 0] == 1 and ens.threshold[0, 0] == 4.5


def test_missing_values_follow_the_learned_direction():
    rng = np.random.default_rng(8)
    x = rng.integers(-50, 51, size=600).astype(np.float32)  # exact bins
    y = (x > 0).astype(np.float32) * 4.0
    missing = rng.random(600) < 0.2
    y[missing] = 4.0  # missing rows behave like the right side
    x[missing] = np.nan
    bst = jaxboost.train(
        objectives.squared,
        x[:, None],
        y,
        n_rounds=1,
        learning_rate=1.0,
        max_depth=1,
        reg_lambda=0.0,
        base_margin=0.0,
    )
    assert not bool(bst.ensemble.default_left[0, 0])
    pred = bst.predict(np.array([[np.nan], [-1.0], [1.0]], np.float32))
    np.testing.assert_allclose(pred, [4.0, 0.0, 4.0], atol=1e-6)


def test_max_delta_step_clips_leaf_values(small_binary):
    X, y = small_binary
    bst = jaxboost.train(
        objectives.logistic,
        X,
        y,
        n_rounds=3,
        learning_rate=1.0,
        max_depth=3,
        max_delta_step=0.1,
        reg_lambda=0.0,
        base_margin=0.0,
    )
    values = np.asarray(bst.ensemble.value)[np.asarray(bst.ensemble.is_leaf)]
    assert np.abs(values).max() == pytest.approx(0.1, rel=1e-6)


def test_reg_alpha_soft_thresholds_the_root_leaf():
    X = np.zeros((10, 1), np.float32)  # no split possible: one leaf
    y = np.arange(10, dtype=np.float32)
    bst = jaxboost.train(
        objectives.squared,
        X,
        y,
        n_rounds=1,
        learning_rate=1.0,
        reg_lambda=2.0,
        reg_alpha=5.0,
        base_margin=0.0,
    )
    G, H = -y.sum(), 10.0  # g = p - y at p = 0
    expected = -(G + 5.0) / (H + 2.0)  # -T_alpha(G) / (H + lambda)
    np.testing.assert_allclose(bst.predict(X[:1]), [expected], rtol=1e-6)


def test_plain_callable_and_catalogue_entry_agree(small_binary):
    X, y = small_binary

    def my_logistic(t, p):
        return jnp.logaddexp(0.0, p) - t * p

    a = jaxboost.train(my_logistic, X, y, n_rounds=5, max_depth=3)
    b = jaxboost.train("logistic", X, y, n_rounds=5, max_depth=3)
    np.testing.assert_allclose(
        a.predict(X, output_margin=True), b.predict(X, output_margin=True), atol=1e-4
    )
    # A plain callable has no link: predict returns margins; the entry returns sigmoid.
    np.testing.assert_allclose(
        b.predict(X), 1 / (1 + np.exp(-b.predict(X, output_margin=True))), rtol=1e-5
    )


def test_exponential_probabilities_are_sigmoid_of_twice_the_margin(small_binary):
    X, y = small_binary
    bst = jaxboost.train(objectives.exponential, X, y, n_rounds=5, max_depth=2)
    m = bst.predict(X, output_margin=True)
    np.testing.assert_allclose(bst.predict(X), 1 / (1 + np.exp(-2 * m)), rtol=1e-5)
    # Intercept: half the log-odds of the label mean.
    p = y.mean()
    assert bst.base_margin == pytest.approx(0.5 * np.log(p / (1 - p)), rel=1e-5)


def test_repr(small_binary):
    X, y = small_binary
    bst = jaxboost.train(objectives.logistic, X, y, n_rounds=2, max_depth=2)
    assert repr(bst).startswith("Booster(objective=objectives.logistic, n_rounds=2")


def test_every_slice_predicts_with_one_compiled_program(small_binary, compile_counter):
    X, y = small_binary
    bst = jaxboost.train(objectives.logistic, X, y, n_rounds=40, max_depth=3)
    full = bst.predict(X, output_margin=True)
    bst[:1].predict(X)  # compile once
    with compile_counter as c:
        curves = [bst[:k].predict(X, output_margin=True) for k in (0, 3, 17, 29, 40)]
    assert c.count == 0
    np.testing.assert_array_equal(curves[-1], full)
    # Each slice is the sum of its own trees: the margins differ from slice to slice.
    assert len({float(np.abs(m).sum()) for m in curves}) == 5
