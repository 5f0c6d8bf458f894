"""The worked example of seed 001 (../shared/seeds/001_*.txt), number for number."""

import numpy as np
import pytest

import jaxboost
import objectives

X = np.array([[1.0], [2.0], [3.0], [4.0]], np.float32)
Y = np.array([0.0, 1.0, 0.0, 1.0], np.float32)
SEED_PARAMS = dict(
    n_rounds=1,
    learning_rate=1.0,
    max_depth=2,
    reg_lambda=0.0,
    min_child_weight=0.0,
    base_margin=0.0,
)


@pytest.fixture(autouse=True, params=["default", "pure_jax"])
def histogram_path(request):
    """Every test twice: on the default histogram (native on CPU when it builds) and on
    the pure-JAX one (the GPU/TPU default). Same shapes: one extra program."""
    if request.param == "default":
        yield
        return
    calls = request.getfixturevalue("pure_jax_histogram")
    yield
    assert calls, "train() did not ask which histogram to use"


def test_first_tree_is_an_optimal_tree_of_the_seed():
    bst = jaxboost.train(objectives.logistic, X, Y, gamma=0.5, **SEED_PARAMS)
    margins = bst.predict(X, output_margin=True)
    # The seed's optimal trees: root x < 3.5 (gain 1.33), then a split of the left
    # child with gain 0.67 (x < 1.5 or x < 2.5, tied); leaves -2, 0 and 2.
    assert sorted(set(np.round(margins, 6).tolist())) == [-2.0, 0.0, 2.0]
    assert margins[3] == pytest.approx(2.0)
    assert margins.tolist() in ([-2.0, 0.0, 0.0, 2.0], [0.0, 0.0, -2.0, 2.0])
    ens = bst.ensemble
    assert float(ens.threshold[0, 0]) == 3.5
    assert float(ens.gain[0, 0]) == pytest.approx(4 / 3, rel=1e-6)
    assert float(ens.gain[0, 1]) == pytest.approx(2 / 3, rel=1e-6)
    # XGBoost breaks the 1.5/2.5 tie like this with no missing values: the largest
    # tied threshold wins.
    assert float(ens.threshold[0, 1]) == 2.5
    # Probabilities from the seed's table: e^f / (1 + e^f).
    np.testing.assert_allclose(bst.predict(X), 1 / (1 + np.exp(-margins)), rtol=1e-6)


def test_gamma_above_the_second_gain_prunes_it():
    bst = jaxboost.train(objectives.logistic, X, Y, gamma=0.7, **SEED_PARAMS)
    margins = bst.predict(X, output_margin=True)
    # Left child [-0.5, 0.5, -0.5] becomes a leaf: -0.5 / (3 * 0.25) = -2/3.
    np.testing.assert_allclose(margins, [-2 / 3, -2 / 3, -2 / 3, 2.0], rtol=1e-6)
    assert bool(bst.ensemble.is_leaf[0, 1])


def test_gamma_above_root_gain_prunes_everything():
    bst = jaxboost.train(objectives.logistic, X, Y, gamma=1.4, **SEED_PARAMS)
    # Root gain 1.33 < 1.4 once its children are leaves: a single leaf, G = 0 -> 0.
    np.testing.assert_allclose(bst.predict(X, output_margin=True), 0.0, atol=1e-7)
