"""Routing rows through trees (jaxboost.engine.tree): binned routing (training side) equals
raw-feature routing (prediction side), and both equal a plain NumPy traversal, on random
trees and data with NaN and values exactly at the thresholds."""

import functools

import jax
import numpy as np

from jaxboost.engine.tree import Ensemble, binned_leaf, predict_leaf, predict_margin, staged_margins

F, B, D, T, N = 4, 6, 3, 3, 300  # value bins 0..4, bin 5 = missing; 4 cuts per feature
V = B - 1
M = 2 ** (D + 1) - 1

_binned_leaf = jax.jit(functools.partial(binned_leaf, max_depth=D, max_bin=B))


def random_cuts(rng):
    return np.sort(
        rng.choice(np.arange(-20, 20) * 0.25, size=(F, V - 1), replace=False), axis=1
    ).astype(np.float32)


def random_tree(rng, cuts):
    """A heap-layout tree of depth <= D: random splits (features, threshold bins 0..V
    including the all-right and all-left ends, default directions); unused slots are
    leaves, as grow_tree leaves them."""
    cuts_ext = np.concatenate(
        [np.full((F, 1), -np.inf), cuts, np.full((F, 1), np.inf)], axis=1
    ).astype(np.float32)
    t = dict(
        feature=np.zeros(M, np.int32),
        tbin=np.zeros(M, np.int32),
        threshold=np.full(M, np.nan, np.float32),
        default_left=np.zeros(M, bool),
        is_leaf=np.ones(M, bool),
        value=rng.normal(size=M).astype(np.float32),
        gain=np.zeros(M, np.float32),
        cover=np.zeros(M, np.float32),
    )
    stack = [(0, 0)]
    while stack:
        i, depth = stack.pop()
        if depth == D or (i > 0 and rng.random() < 0.25):
            continue
        f, tb = int(rng.integers(F)), int(rng.integers(0, V + 1))
        t["feature"][i], t["tbin"][i], t["threshold"][i] = f, tb, cuts_ext[f, tb]
        t["default_left"][i] = rng.random() < 0.5
        t["is_leaf"][i] = False
        stack += [(2 * i + 1, depth + 1), (2 * i + 2, depth + 1)]
    return t


def random_rows(rng, cuts):
    """Raw values: exactly at a cut, between cuts, below and above all cuts, NaN; and
    their bins (the number of cuts <= x; NaN -> the missing bin)."""
    X = np.empty((N, F), np.float32)
    for f in range(F):
        c = cuts[f]
        pool = np.concatenate([c, (c[1:] + c[:-1]) / 2, [c[0] - 1, c[-1] + 1], [np.nan]])
        X[:, f] = rng.choice(pool.astype(np.float32), size=N)
    bins = np.stack([np.searchsorted(cuts[f], X[:, f], side="right") for f in range(F)], axis=1)
    bins[np.isnan(X)] = V
    return X, bins.astype(np.uint8)


def ref_leaf(t, x):
    i = 0
    while not t["is_leaf"][i]:
        v = x[t["feature"][i]]
        left = t["default_left"][i] if np.isnan(v) else v < t["threshold"][i]
        i = 2 * i + 1 if left else 2 * i + 2
    return i


def make_case(seed):
    rng = np.random.default_rng(seed)
    cuts = random_cuts(rng)
    trees = [random_tree(rng, cuts) for _ in range(T)]
    X, bins = random_rows(rng, cuts)
    ens = Ensemble(*(np.stack([t[k] for t in trees]) for k in Ensemble._fields if k in trees[0]))
    return trees, ens, X, bins


def test_binned_and_raw_routing_equal_a_numpy_traversal():
    at_threshold = 0
    for seed in range(4):
        trees, ens, X, bins = make_case(seed)
        raw = np.asarray(predict_leaf(ens, X, max_depth=D))  # (N, T)
        for k, t in enumerate(trees):
            expected = np.array([ref_leaf(t, x) for x in X])
            assert t["is_leaf"][expected].all()
            np.testing.assert_array_equal(raw[:, k], expected)
            np.testing.assert_array_equal(np.asarray(_binned_leaf(t, bins)), expected)
            # The data do hit the thresholds exactly (x == threshold goes right).
            split = np.flatnonzero(~t["is_leaf"])
            at_threshold += int((X[:, t["feature"][split]] == t["threshold"][split]).sum())
        assert np.isnan(X).any()
    assert at_threshold > 50


def test_predict_margin_equals_a_numpy_traversal():
    trees, ens, X, _ = make_case(10)
    base = np.float32(0.25)
    running = np.full(N, base, np.float32)
    stages = []
    for t in trees:  # float32, tree by tree, as XGBoost accumulates
        running = running + np.array([t["value"][ref_leaf(t, x)] for x in X], np.float32)
        stages.append(running)
    np.testing.assert_allclose(
        np.asarray(predict_margin(ens, X, base, max_depth=D)), stages[-1], rtol=1e-6, atol=1e-6
    )
    np.testing.assert_allclose(
        np.asarray(predict_margin(ens, X, base, 2, max_depth=D)), stages[1], rtol=1e-6, atol=1e-6
    )
    np.testing.assert_allclose(
        np.asarray(staged_margins(ens, X, base, max_depth=D)),
        np.stack(stages),
        rtol=1e-6,
        atol=1e-6,
    )
