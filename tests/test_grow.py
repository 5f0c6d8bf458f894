"""Growing one tree (jaxboost.engine.grow.grow_tree) on pre-binned data with a known answer.

As in scikit-learn's ``tests/test_grower.py``: the targets come from a known depth-2
tree, so the optimal tree is known and worked out by hand below; the seed-001 example
checks gamma post-pruning; both histogram paths (native kernel, row-major bins; pure
JAX, feature-major bins) must grow the same tree. One shape everywhere (64 rows, 3
features, 5 bins, depth 2): one compiled program per histogram path.
"""

import functools
import itertools

import jax
import numpy as np
import pytest

from jaxboost import native as native_kernel
from jaxboost.engine.grow import TreeSpec, grow_tree
from jaxboost.engine.split import TreeHyper
from jaxboost.engine.tree import binned_leaf

N, F, B, D = 64, 3, 5, 2  # bins 0..3 hold values, bin 4 = missing
# The native kernel is an FFI handler of the CPU backend: on a GPU or TPU (benchmarks/
# gpu.py runs these tests there) training never takes it, so neither do these tests.
NATIVE_HERE = native_kernel.available() and jax.default_backend() == "cpu"
NO_NATIVE = "native kernel unavailable, or not the CPU backend"
PATHS = [
    pytest.param(False, id="pure_jax"),
    pytest.param(True, id="native", marks=pytest.mark.skipif(not NATIVE_HERE, reason=NO_NATIVE)),
]

_grow = {
    native: jax.jit(functools.partial(grow_tree, spec=TreeSpec(D, B, native=native)))
    for native in (False, True)
}
_binned_leaf = jax.jit(functools.partial(binned_leaf, max_depth=D, max_bin=B))


def dyn(eta=1.0, lam=0.0, alpha=0.0, gamma=0.0, mcw=0.0, mds=0.0):
    return TreeHyper(*(np.float32(v) for v in (eta, lam, alpha, gamma, mcw, mds)))


# Raw value of bin v of feature f: v + 10 f; cuts_ext[f, t] is the threshold of
# "bins < t go left".
CUTS = np.array(
    [[-np.inf] + [t - 0.5 + 10 * f for t in (1, 2, 3)] + [np.inf] for f in range(F)], np.float32
)


def grow(native, bins_fn, g, h, d, forward_ok=(False,) * F):
    """Grow with ``bins_fn`` (N, F) given row-major; the pure path gets it transposed."""
    bins = np.ascontiguousarray(bins_fn if native else bins_fn.T).astype(np.uint8)
    tree, leaf = _grow[native](
        bins,
        np.asarray(g, np.float32),
        np.asarray(h, np.float32),
        d,
        CUTS,
        np.asarray(forward_ok, bool),
    )
    tree = {k: np.asarray(v) for k, v in tree.items()}
    leaf = np.asarray(leaf)
    # The rows' leaves agree with routing the binned rows through the finished tree.
    np.testing.assert_array_equal(np.asarray(_binned_leaf(tree, bins_fn.astype(np.uint8))), leaf)
    return tree, leaf


def splits(tree):
    """{node: (feature, tbin, threshold)} of the split nodes."""
    return {
        int(i): (int(tree["feature"][i]), int(tree["tbin"][i]), float(tree["threshold"][i]))
        for i in np.flatnonzero(~tree["is_leaf"])
    }


# Every combination of 3 features x 4 values: 64 rows, balanced.
GRID = np.array(list(itertools.product(range(4), repeat=F)), np.uint8)


@pytest.mark.parametrize("native", PATHS)
def test_grows_the_tree_that_generated_the_targets(native):
    x0, x1, x2 = GRID.T
    # The known tree: x1 < 2 ? (x0 < 3 ? -4 : -2) : (x2 < 1 ? 2 : 4).
    y = np.where(x1 < 2, np.where(x0 < 3, -4.0, -2.0), np.where(x2 < 1, 2.0, 4.0))
    # Squared error at prediction 0: g = -y, h = 1, so with lambda = 0 a leaf is its
    # rows' mean of y (times eta = 0.5).
    # Root: x1 < 2 splits 32 rows of mean -3.5 from 32 of mean 3.5:
    #   gain = 2 * 112^2 / 32 - 0 = 784; x1 < 1 or < 3 give 196 + 56^2 / 48 < 784, any
    #   other feature at most 12.
    # Left child: x0 < 3: 96^2 / 24 + 16^2 / 8 - 112^2 / 32 = 24 (x0 < 2: 8, x0 < 1:
    #   8/3, x1 and x2: 0); the right child alike with x2 < 1.
    tree, leaf = grow(native, GRID, -y, np.ones(N), dyn(eta=0.5, mcw=1.0))
    assert splits(tree) == {0: (1, 2, 11.5), 1: (0, 3, 2.5), 2: (2, 1, 20.5)}
    np.testing.assert_allclose(tree["gain"][:3], [784.0, 24.0, 24.0], rtol=1e-6)
    np.testing.assert_allclose(tree["value"][3:], [-2.0, -1.0, 1.0, 2.0], rtol=1e-6)
    np.testing.assert_allclose(tree["cover"], [64, 32, 32, 24, 8, 8, 24])
    expected_leaf = np.where(x1 < 2, np.where(x0 < 3, 3, 4), np.where(x2 < 1, 5, 6))
    np.testing.assert_array_equal(leaf, expected_leaf)


def seed_rows():
    """The seed-001 example in the test shape: rows 0..3 are x = 1..4 (bins 0..3 of
    feature 0), g = p - y = 0.5, -0.5, 0.5, -0.5, h = 0.25; 60 padding rows g = h = 0;
    features 1 and 2 constant."""
    bins = np.zeros((N, F), np.uint8)
    bins[:4, 0] = [0, 1, 2, 3]
    g = np.zeros(N)
    h = np.zeros(N)
    g[:4] = [0.5, -0.5, 0.5, -0.5]
    h[:4] = 0.25
    return bins, g, h


@pytest.mark.parametrize("native", PATHS)
def test_seed_tree_and_gamma_post_pruning(native):
    bins, g, h = seed_rows()
    cuts = dict(enumerate(CUTS[0]))
    # gamma 0.5: root x < 3.5 (gain 4/3), left child x < 2.5 (gain 2/3; tied with x < 1.5,
    # the largest tied threshold wins without NaN); leaves 0 (x = 1, 2), -2 (x = 3), 2.
    tree, leaf = grow(native, bins, g, h, dyn(gamma=0.5))
    assert splits(tree) == {0: (0, 3, cuts[3]), 1: (0, 2, cuts[2])}
    np.testing.assert_allclose(tree["gain"][:2], [4 / 3, 2 / 3], rtol=1e-6)
    np.testing.assert_allclose(tree["value"][[3, 4, 2]], [0.0, -2.0, 2.0], atol=1e-7)
    assert leaf[:4].tolist() == [3, 3, 4, 2]
    # gamma 0.7 > 2/3: the second-level split is pruned; its node becomes a leaf with
    # -0.5 / 0.75 = -2/3. The root (4/3 > 0.7) stays.
    tree, leaf = grow(native, bins, g, h, dyn(gamma=0.7))
    assert splits(tree) == {0: (0, 3, cuts[3])}
    assert tree["gain"][1] == 0.0
    np.testing.assert_allclose(tree["value"][[1, 2]], [-2 / 3, 2.0], rtol=1e-6)
    assert leaf[:4].tolist() == [1, 1, 1, 2]
    # gamma 1.4 > 4/3: then the root too; one leaf, G = 0 -> 0.
    tree, leaf = grow(native, bins, g, h, dyn(gamma=1.4))
    assert splits(tree) == {}
    assert tree["value"][0] == 0.0
    assert (leaf == 0).all()


@pytest.mark.parametrize("native", PATHS)
def test_gamma_keeps_a_weak_split_above_a_strong_one(native):
    x0, x1, _ = GRID.T.astype(int)
    # An unbalanced XOR: root gain 1 (x0 < 2: 0 and 8 of 64 total 8 -> 64/32 - 64/64;
    # x1 < 2 ties and loses to the smaller feature), left child x1 < 2 gain 32
    # (+-1 by halves), right child x1 < 2 gain 16 + 36 - 2 = 50.
    y = np.where(x0 < 2, np.where(x1 < 2, 1.0, -1.0), np.where(x1 < 2, -1.0, 1.5))
    ones = np.ones(N)
    tree, _ = grow(native, GRID, -y, ones, dyn(gamma=5.0))
    assert splits(tree) == {0: (0, 2, 1.5), 1: (1, 2, 11.5), 2: (1, 2, 11.5)}
    np.testing.assert_allclose(tree["gain"][:3], [1.0, 32.0, 50.0], rtol=1e-6)
    # gamma 40: node 1 goes (32 < 40); node 2 stays, so the root stays too.
    tree, _ = grow(native, GRID, -y, ones, dyn(gamma=40.0))
    assert splits(tree) == {0: (0, 2, 1.5), 2: (1, 2, 11.5)}
    np.testing.assert_allclose(tree["value"][[1, 5, 6]], [0.0, -1.0, 1.5], atol=1e-6)
    # gamma 60: both children go, then the root (1 < 60).
    tree, _ = grow(native, GRID, -y, ones, dyn(gamma=60.0))
    assert splits(tree) == {}
    np.testing.assert_allclose(tree["value"][0], 8 / 64, rtol=1e-6)


@pytest.mark.skipif(not NATIVE_HERE, reason=NO_NATIVE)
def test_native_and_pure_jax_histograms_grow_the_same_tree():
    rng = np.random.default_rng(3)
    for trial in range(3):
        bins = rng.integers(0, B, size=(N, F)).astype(np.uint8)  # bin 4: missing
        g = rng.normal(size=N).astype(np.float32)
        h = rng.uniform(0.1, 1.0, size=N).astype(np.float32)
        d = dyn(
            eta=0.3, lam=1.0, alpha=0.1 * trial, gamma=0.05, mcw=0.5, mds=0.7 if trial == 2 else 0.0
        )
        ok = (True, False, True)
        a, leaf_a = grow(False, bins, g, h, d, ok)
        b, leaf_b = grow(True, bins, g, h, d, ok)
        assert splits(a) == splits(b)
        assert len(splits(a)) == 3  # a full depth-2 tree: the comparison has teeth
        for k in ("is_leaf", "default_left", "feature", "tbin"):
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
        for k in ("value", "gain", "cover"):
            np.testing.assert_allclose(a[k], b[k], rtol=1e-6, atol=1e-7, err_msg=k)
        np.testing.assert_array_equal(leaf_a, leaf_b)
