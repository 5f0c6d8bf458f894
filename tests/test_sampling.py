"""Row and column sampling (jaxboost.engine.sampling): fractions, counts, nesting, and draws that
depend only on the key and the global row number."""

import functools
import math

import jax
import numpy as np
import pytest

import jaxboost
import objectives
from jaxboost.engine.sampling import FeatureSampler, bootstrap_counts, fold, round_key, row_mask


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


def test_fold_is_one_to_one_and_new_for_every_number():
    """``fold(key, d)`` (a keyed hash in ``jax.random.fold_in``'s place): the same key
    and number give the same key; 200 seeds x 200 numbers give 40,000 different keys;
    and for one number, keys that differ in either word fold to different keys."""
    seeds, nums = np.arange(200), np.arange(200)
    many = jax.jit(jax.vmap(jax.vmap(fold, (None, 0)), (0, None)))(
        jax.vmap(jax.random.key)(seeds), nums
    )
    words = np.asarray(jax.random.key_data(many)).reshape(-1, 2)
    assert len({tuple(w) for w in words.tolist()}) == 200 * 200
    again = jax.random.key_data(fold(key(7), 11))
    np.testing.assert_array_equal(words[7 * 200 + 11], np.asarray(again))
    # one number, keys differing in one word (the high word, which jax.random.key
    # leaves 0 below 2**32, or the low one)
    data = np.stack([np.repeat(np.arange(100, dtype=np.uint32), 2), np.tile([0, 1], 100)], 1)
    both = np.concatenate([data, data[:, ::-1]]).astype(np.uint32)
    keys = jax.random.wrap_key_data(both)
    folded = np.asarray(jax.random.key_data(jax.jit(jax.vmap(fold, (0, None)))(keys, 3)))
    assert len({tuple(w) for w in folded.tolist()}) == len({tuple(w) for w in both.tolist()})
    # keys of other generators (JAX's rbg: four words) fold to keys of theirs
    rbg = jax.vmap(fold, (None, 0))(jax.random.key(0, impl="rbg"), nums)
    assert jax.random.key_impl(rbg) == jax.random.key_impl(jax.random.key(0, impl="rbg"))
    rbg_words = np.asarray(jax.random.key_data(rbg))
    assert rbg_words.shape == (200, 4) and len({tuple(w) for w in rbg_words.tolist()}) == 200


def test_row_masks_of_different_trees_are_uncorrelated():
    """Row masks of 600 trees (3 seeds x 20 rounds x 10 trees of a forest, keyed as the
    round program keys them): each keeps half the 2,000 rows up to binomial spread, and
    no two trees' masks correlate beyond chance (the largest of 179,700 pairwise
    correlations within 6 standard deviations, 6 / sqrt(2,000))."""
    N = 2000

    @jax.jit
    def masks(seed, r):
        rk = round_key(jax.random.key(seed), r)
        return jax.vmap(lambda p: row_mask(fold(fold(rk, 3), p), N, 0.5))(np.arange(10))

    M = np.concatenate([np.asarray(masks(s, r)) for s in range(3) for r in range(20)])
    counts = M.sum(axis=1)
    assert abs(counts.mean() - N / 2) < 3 * math.sqrt(N) / 2 / math.sqrt(len(M))
    assert 0.8 < counts.std() / (math.sqrt(N) / 2) < 1.2
    corr = np.corrcoef(M)[~np.eye(len(M), dtype=bool)]
    assert np.abs(corr).max() < 6 / math.sqrt(N)


def test_a_sampled_forests_round_program_runs_no_threefry(monkeypatch):
    """The keys of a forest's rounds, trees, row masks and feature masks come from
    ``fold`` (a few integer operations), not ``jax.random.fold_in``, whose threefry
    loops were 9 of a forest round's while loops and about 8 % of its compile."""
    from jaxboost.training import loop

    seen = []
    run_chunk = loop.run_chunk

    def recording(*args):
        seen.append(args)
        return run_chunk(*args)

    monkeypatch.setattr(loop, "run_chunk", recording)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(256, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.float32)
    kw = dict(n_rounds=1, max_depth=3, num_parallel_tree=4, subsample=0.5, seed=1)
    jaxboost.train("logistic", X, y, colsample_bynode=0.5, colsample_bylevel=0.8, **kw)
    text = run_chunk.lower(*seen[-1]).as_text()
    assert "threefry" not in text
    # the check can see it: bootstrap draws with jax.random.randint
    jaxboost.train("logistic", X, y, bootstrap=True, **kw)
    assert "threefry" in run_chunk.lower(*seen[-1]).as_text()


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


@pytest.mark.parametrize("ratios", [(1.0, 1.0, 0.5), (1.0, 0.6, 1.0), (0.7, 1.0, 0.8)])
def test_kinds_at_ratio_1_skip_their_draw_and_keep_the_masks(ratios):
    """A kind whose ratio is 1 (``RoundSpec.col_kinds`` False: known when compiling)
    keeps every feature it is offered without a draw: the tree's, every level's and
    every node's masks equal the drawing sampler's, and the program holds fewer
    operations on features-by-features arrays (the ranks' pairwise comparisons)."""
    kinds = tuple(bool(r < 1) for r in ratios)
    W = 2 ** (DEPTH - 1)

    def masks(k, r, kinds):
        s = FeatureSampler(k, r, F, DEPTH, kinds)
        return s.tree, s.levels(W)

    r = np.asarray((0.8,) + ratios, np.float32)  # subsample first
    full = jax.jit(functools.partial(masks, kinds=(True, True, True)))(key(3), r)
    lean = jax.jit(functools.partial(masks, kinds=kinds))(key(3), r)
    for a, b in zip(full, lean):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

    def comparisons(kinds):
        """Operations on features-by-features arrays (the ranks' pairwise comparisons)."""
        jaxpr = jax.make_jaxpr(functools.partial(masks, kinds=kinds))(key(3), r)
        count = 0

        def walk(j):
            nonlocal count
            for eqn in j.eqns:
                count += sum(v.aval.shape[-2:] == (F, F) for v in eqn.outvars)
                for p in eqn.params.values():
                    inner = getattr(p, "jaxpr", None)
                    if inner is not None:
                        walk(getattr(inner, "jaxpr", inner))

        walk(jaxpr.jaxpr)
        return count

    assert 0 < comparisons(kinds) < comparisons((True, True, True))


def test_full_ratios_keep_every_feature():
    tree, levels = sample(0, (1.0, 1.0, 1.0, 1.0))
    assert tree.all()
    assert all(m.all() for m in levels)


# Refit losses: absolute error (interpolated quantile), pinball with sample weights (the
# weighted step quantile), pseudo-Huber (Newton refit).
REFIT_CASES = [
    (objectives.absolute, False),
    (objectives.quantile(alpha=0.3), True),
    (objectives.pseudo_huber, False),
]


def _refit_data(n=300):
    rng = np.random.default_rng(5)
    X = rng.integers(0, 10, size=(n, 3)).astype(np.float32)  # the same cuts in any half
    y = (X[:, 0] - 0.7 * X[:, 1] + rng.standard_t(2, size=n)).astype(np.float32)
    w = rng.uniform(0.5, 2.0, size=n).astype(np.float32)
    return X, y, w


def _one_tree(entry, X, y, w, rows=None, **options):
    """The margins on every row of one tree trained from 0 on ``rows`` (all by default)."""
    rows = np.ones(len(y), bool) if rows is None else rows
    zero = np.zeros(len(y), np.float32)
    bst = jaxboost.train(
        entry,
        X[rows],
        y[rows],
        n_rounds=1,
        learning_rate=1.0,
        max_depth=3,
        seed=4,
        base_margin=zero[rows],
        sample_weight=None if w is None else w[rows],
        **options,
    )
    return bst.predict(X, output_margin=True, base_margin=zero)


@pytest.mark.parametrize("entry, weighted", REFIT_CASES, ids=["absolute", "q0.3-w", "huber"])
def test_refit_leaves_count_only_the_rows_of_the_trees_sample(entry, weighted):
    """A refit leaf value comes from the rows the tree was grown on: a tree of a row
    sample (``subsample=0.5``) is the tree trained on those rows alone, leaf values
    included (XGBoost's quantile leaves leave the sampled-out rows out too; before, the
    refit took every row of the leaf, sampled or not)."""
    X, y, w = _refit_data()
    w = w if weighted else None
    taken = np.asarray(row_mask(round_key(key(4), 0), len(y), 0.5)) > 0
    sampled = _one_tree(entry, X, y, w, subsample=0.5)
    alone = _one_tree(entry, X, y, w, rows=taken)
    np.testing.assert_allclose(sampled, alone, rtol=0, atol=1e-5)


@pytest.mark.parametrize("entry", [REFIT_CASES[0][0], REFIT_CASES[2][0]], ids=["absolute", "huber"])
def test_bootstrap_refit_weighs_rows_by_their_draw_count(entry):
    """With ``bootstrap=True`` a row drawn ``c`` times counts ``c`` times in the leaf
    values, as in the splits: the tree equals the one trained with ``sample_weight=c``
    (so a quantile leaf takes the weighted rule, draws being weights)."""
    X, y, _ = _refit_data()
    c = np.asarray(bootstrap_counts(round_key(key(4), 0), len(y), 0.7, len(y)))
    drawn = _one_tree(entry, X, y, None, subsample=0.7, bootstrap=True)
    weighted = _one_tree(entry, X, y, c)
    np.testing.assert_allclose(drawn, weighted, rtol=0, atol=1e-5)
