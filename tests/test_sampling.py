"""Row and column sampling (jaxboost.engine.sampling): fractions, counts, nesting, and draws that
depend only on the key and the global row number."""

import math

import jax
import numpy as np
import pytest

from jaxboost.engine.sampling import FeatureSampler, round_key, row_mask


def key(seed=0):
    return jax.random.key(seed)


def test_row_mask_fraction():
    m = np.asarray(row_mask(round_key(key(), 3), 20_000, 0.3))
    assert m.dtype == np.float32 and set(np.unique(m)) <= {0.0, 1.0}
    assert abs(m.mean() - 0.3) < 0.012  # 3.7 standard deviations
    assert np.asarray(row_mask(key(), 1000, 1.0)).all()
    assert not np.asarray(row_mask(key(), 1000, 0.0)).any()


def test_row_draws_do_not_depend_on_how_many_rows_are_drawn():
    k = round_key(key(5), 7)
    full = np.asarray(row_mask(k, 1000, 0.5))
    # A shorter draw is a prefix of a longer one ...
    np.testing.assert_array_equal(np.asarray(row_mask(k, 300, 0.5)), full[:300])
    # ... and a device's slice of the global rows is the same as the single-device draw.
    for offset in (0, 250, 700):
        part = row_mask(k, 300, 0.5, offset=offset, n_ids=1000)
        np.testing.assert_array_equal(np.asarray(part), full[offset : offset + 300])


def test_row_mask_is_deterministic_and_changes_with_the_round_and_seed():
    a = np.asarray(row_mask(round_key(key(1), 0), 500, 0.5))
    np.testing.assert_array_equal(a, np.asarray(row_mask(round_key(key(1), 0), 500, 0.5)))
    assert (a != np.asarray(row_mask(round_key(key(1), 1), 500, 0.5))).any()
    assert (a != np.asarray(row_mask(round_key(key(2), 0), 500, 0.5))).any()


def expected_count(ratio, n):
    return max(1, math.floor(ratio * n))


F, DEPTH = 10, 3


@jax.jit
def _sample(k, ratios):
    """The tree mask and every level's node masks, from one compiled program (eager, the
    sampler's many small operations compiled one by one took seconds)."""
    s = FeatureSampler(k, ratios, F, DEPTH)
    return s.tree, [s.level(d, 2**d) for d in range(DEPTH)]


def sample(seed, ratios):
    tree, levels = _sample(key(seed), np.asarray(ratios, np.float32))
    return np.asarray(tree), [np.asarray(m) for m in levels]


@pytest.mark.parametrize(
    "ratios",
    [(0.55, 0.5, 1.0), (0.55, 0.5, 0.5), (1.0, 1.0, 0.35), (0.05, 0.9, 0.9), (0.8, 0.7, 0.6)],
)
def test_feature_sampler_counts_and_nesting(ratios):
    r_tree, r_level, r_node = ratios
    n_tree = expected_count(r_tree, F)
    n_level = expected_count(r_level, n_tree)
    n_node = expected_count(r_node, n_level)
    for seed in range(3):
        tree, levels = sample(seed, (1.0,) + ratios)
        assert tree.shape == (F,) and tree.sum() == n_tree
        for d, m in enumerate(levels):
            assert m.shape == (2**d, F)
            assert (m.sum(axis=1) == n_node).all()  # every node: its own count
            assert not (m & ~tree).any()  # bytree contains every node's features
            # bylevel: the nodes of a level draw from one common subset of n_level.
            assert m.any(axis=0).sum() <= n_level
            if r_node == 1.0:
                assert (m == m[0]).all()


def test_feature_sampler_is_deterministic_and_draws_differ_between_nodes_and_keys():
    ratios = (1.0, 0.8, 0.75, 0.5)
    tree_a, levels_a = sample(4, ratios)
    tree_b, levels_b = sample(4, ratios)
    np.testing.assert_array_equal(tree_a, tree_b)
    for ma, mb in zip(levels_a, levels_b):
        np.testing.assert_array_equal(ma, mb)
    # Nodes of a level draw independently (not all the same), and other keys differ.
    assert any((m != m[0]).any() for m in levels_a[1:])
    assert any((sample(s, ratios)[0] != tree_a).any() for s in range(5, 9))


def test_full_ratios_keep_every_feature():
    tree, levels = sample(0, (1.0, 1.0, 1.0, 1.0))
    assert tree.all()
    assert all(m.all() for m in levels)
