"""The native whole-tree kernel (``jaxboost.native.grow_tree``) against the XLA level loop.

Both grow from the same native histograms; they differ only in how float64 sums are
associated (prefix sums in bin order here, blocked products there; children's sums in
bin order here, XLA's reduction there). So on data without near-ties the trees must
have the same splits, and node sums, gains and leaf values must agree to float64 /
float32 rounding. Settings cover what the kernel implements itself: missing values
(both default directions), the ascending pass only where ``forward_ok``, L1,
min_child_weight, max_delta_step, column sampling masks, rows left out (g = h = 0),
negative Hessians, a depth where most nodes die early, and depth 1.
"""

import functools
import zlib

import jax
import numpy as np
import pytest

from jaxboost import native as native_kernel
from jaxboost.engine import grow as grow_mod
from jaxboost.engine.grow import TreeSpec, grow_tree
from jaxboost.engine.sampling import FeatureSampler
from jaxboost.engine.split import TreeHyper
from jaxboost.engine.tree import binned_leaf

pytestmark = pytest.mark.skipif(not native_kernel.available(), reason="native kernel unavailable")

N, F, B = 400, 6, 16  # bin 15 = missing


def _grower(D, native_tree, with_mask):
    """A jitted ``grow_tree`` (native histogram) with the whole-tree kernel on or off;
    ``with_mask``: column sampling by ``FeatureSampler(key, ratios)``."""

    def fn(bins, g, h, dyn, cuts, fok, key, ratios):
        saved = grow_mod._native_tree
        grow_mod._native_tree = lambda: native_tree
        try:
            features = FeatureSampler(key, ratios, F, D) if with_mask else None
            return grow_tree(
                bins, g, h, dyn, cuts, fok, TreeSpec(D, B, native=True), features=features
            )
        finally:
            grow_mod._native_tree = saved

    return jax.jit(fn)


@functools.lru_cache(maxsize=None)
def grower(D, native_tree, with_mask):
    return _grower(D, native_tree, with_mask)


def data(seed, missing=0.1, dropped=0.2, negative_h=False):
    rng = np.random.default_rng(seed)
    bins = rng.integers(0, B - 1, size=(N, F)).astype(np.uint8)
    bins[:, 1] = rng.integers(0, 3, size=N)  # few values: empty bins to skip
    bins[rng.random((N, F)) < missing] = B - 1
    signal = (bins[:, 0] < 7) * 1.5 - (bins[:, 2] > 9) * 1.0 + 0.3 * (bins[:, 1] == 2)
    g = (rng.normal(size=N) - signal).astype(np.float32)
    h = rng.uniform(0.2, 1.0, size=N).astype(np.float32)
    if negative_h:
        h[rng.random(N) < 0.05] *= -0.3
    keep = rng.random(N) >= dropped
    g, h = np.where(keep, g, 0).astype(np.float32), np.where(keep, h, 0).astype(np.float32)
    cuts = np.array(
        [[-np.inf] + [t - 0.5 + 100 * f for t in range(1, B - 1)] + [np.inf] for f in range(F)],
        np.float32,
    )
    fok = np.array([True, False, True, True, False, True])
    return bins, g, h, cuts, fok


def _seed(case: str) -> int:
    """A data seed for a test case's name, the same in every process (``hash`` of a
    string is salted per process: the data, and whether a case found what it checks,
    changed from run to run)."""
    return zlib.crc32(case.encode()) % 1000


def hyper(lam=1.0, alpha=0.0, gamma=0.0, mcw=1.0, mds=0.0):
    return TreeHyper(*(np.float32(v) for v in (0.3, lam, alpha, gamma, mcw, mds)))


NO_SAMPLING = np.ones(4, np.float32)


def both(D, seed, dyn, ratios=None, key_seed=0, **kw):
    bins, g, h, cuts, fok = data(seed, **kw)
    r = NO_SAMPLING if ratios is None else np.asarray(ratios, np.float32)
    out = []
    for native_tree in (True, False):
        tree, leaf = grower(D, native_tree, ratios is not None)(
            bins, g, h, dyn, cuts, fok, jax.random.key(key_seed), r
        )
        out.append(({k: np.asarray(v) for k, v in tree.items()}, np.asarray(leaf)))
    (t1, l1), (t0, l0) = out
    return bins, t1, l1, t0, l0


CASES = {
    "plain": dict(dyn=hyper()),
    "l1_mcw": dict(dyn=hyper(lam=0.5, alpha=0.4, mcw=3.0)),
    "max_delta_step": dict(dyn=hyper(mds=0.35)),
    "gamma": dict(dyn=hyper(gamma=2.0)),
    "no_missing_no_drop": dict(dyn=hyper(), missing=0.0, dropped=0.0),
    "negative_hessians": dict(dyn=hyper(mcw=0.0), negative_h=True),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("D", [1, 4])
def test_native_tree_matches_level_loop(case, D):
    kw = dict(CASES[case])
    bins, t1, l1, t0, l0 = both(D, seed=_seed(case), **kw)
    split = ~t0["is_leaf"]
    assert split.sum() >= (1 if D == 1 else 4)  # the data has splits to find
    for key in ("is_leaf", "feature", "tbin", "default_left"):
        np.testing.assert_array_equal(t1[key], t0[key], err_msg=key)
    np.testing.assert_array_equal(t1["threshold"][split], t0["threshold"][split])
    np.testing.assert_array_equal(l1, l0)
    np.testing.assert_allclose(t1["gain"], t0["gain"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(t1["cover"], t0["cover"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(t1["value"], t0["value"], rtol=1e-5, atol=1e-7)
    # every row's leaf is where the finished tree routes its bins
    np.testing.assert_array_equal(np.asarray(binned_leaf(t1, bins, max_depth=D, max_bin=B)), l1)


@pytest.mark.parametrize("key_seed", [0, 1, 2])
def test_native_tree_column_sampling(key_seed):
    """colsample by tree, level and node: the kernel draws each live node's features
    itself; the same draws as ``FeatureSampler.levels``, so the same tree as the level
    loop, and no node splits outside its set."""
    D = 4
    ratios = np.float32([1.0, 0.8, 0.8, 0.7])  # subsample, bytree, bylevel, bynode
    bins, t1, l1, t0, l0 = both(D, seed=11, dyn=hyper(), ratios=ratios, key_seed=key_seed)
    for key in ("is_leaf", "feature", "tbin", "default_left"):
        np.testing.assert_array_equal(t1[key], t0[key], err_msg=key)
    np.testing.assert_array_equal(l1, l0)
    np.testing.assert_allclose(t1["value"], t0["value"], rtol=1e-5, atol=1e-7)
    levels = jax.jit(lambda key: FeatureSampler(key, ratios, F, D).levels(8))
    masks = np.asarray(levels(jax.random.key(key_seed)))
    # of 6 features: 4 per tree, 3 per level, floor(0.7 * 3) = 2 per node
    assert (masks.sum(axis=2)[0, :1] == 2).all()
    assert (~t1["is_leaf"]).sum() >= 3
    for d in range(D):
        for k in range(2**d):
            i = 2**d - 1 + k
            if not t1["is_leaf"][i]:
                assert masks[d, k, t1["feature"][i]], (d, k)


def test_native_tree_exact_sums_on_the_grid():
    """On sums that are exact in float64 (dyadic g, h), the two formulations associate
    differently but round nothing: every float equal, bit for bit."""
    bins, g, h, cuts, fok = data(3)
    g = np.round(g * 64) / 64
    h = np.round(h * 64) / 64
    D = 4
    trees = [
        grower(D, nt, False)(
            bins,
            g.astype(np.float32),
            h.astype(np.float32),
            hyper(),
            cuts,
            fok,
            jax.random.key(0),
            NO_SAMPLING,
        )
        for nt in (True, False)
    ]
    for key in trees[0][0]:
        np.testing.assert_array_equal(
            np.asarray(trees[0][0][key]), np.asarray(trees[1][0][key]), err_msg=key
        )
    np.testing.assert_array_equal(np.asarray(trees[0][1]), np.asarray(trees[1][1]))


def test_native_tree_threads_agree():
    """Large enough for the split search (nodes x features x bins >= 2**16) and the
    routing (>= 2**16 rows) to run on several threads: the same tree as on one thread
    (sums to float64 rounding: the histogram's row blocks associate differently)."""
    rng = np.random.default_rng(7)
    n, f, b = 70_000, 64, 256
    bins = rng.integers(0, b, size=(n, f)).astype(np.uint8)
    g = (rng.normal(size=n) - (bins[:, 0] < 100) - 0.5 * (bins[:, 5] > 30)).astype(np.float32)
    h = rng.uniform(0.5, 1.0, size=n).astype(np.float32)
    _one_and_three_threads(bins, g, h, b)


def _one_and_three_threads(bins, g, h, b):
    """A depth-4 tree of ``bins`` grown on one thread and on three: the same full tree
    (sums to float64 rounding); returns the one-thread tree and its root sums."""
    root = np.array([g.astype(np.float64).sum(), h.astype(np.float64).sum()])
    hyp = np.array(list(hyper()), np.float32)
    fok = np.ones(bins.shape[1], bool)
    outs = [
        native_kernel.grow_tree(bins, g, h, hyp, root, fok, None, 4, b, n_threads=t) for t in (1, 3)
    ]
    (s1, G1, H1, p1), (s3, G3, H3, p3) = outs
    assert np.asarray(s1["is_split"]).sum() == 15  # a full tree of depth 4
    for key in ("feature", "tbin", "default_left", "is_split"):
        np.testing.assert_array_equal(np.asarray(s1[key]), np.asarray(s3[key]), err_msg=key)
    np.testing.assert_allclose(np.asarray(s1["gain"]), np.asarray(s3["gain"]), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(G1), np.asarray(G3), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.asarray(H1), np.asarray(H3), rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(p1), np.asarray(p3))
    return s1, root


def test_uint16_bins_grow_the_same_tree_on_one_thread_and_three():
    """uint16 bins (1,000 bins a feature): rows by segments on one thread, by blocks of
    rows on three (70,000 x 64 is above the segments' 2**22 rows x features), the same
    tree; its root split is the best of a brute-force scan of the bins of feature 0."""
    rng = np.random.default_rng(8)
    n, f, b = 70_000, 64, 1000
    bins = rng.integers(0, b - 1, size=(n, f)).astype(np.uint16)
    bins[rng.random((n, f)) < 0.05] = b - 1  # missing
    g = (rng.normal(size=n) - 2 * (bins[:, 0] < 600) - 0.5 * (bins[:, 5] > 300)).astype(np.float32)
    h = rng.uniform(0.5, 1.0, size=n).astype(np.float32)
    s1, root = _one_and_three_threads(bins, g, h, b)
    # the root: feature 0 at the threshold of the largest gain, missing sent left or right
    assert int(s1["feature"][0]) == 0
    G, H = np.zeros(b), np.zeros(b)
    np.add.at(G, bins[:, 0], g.astype(np.float64))
    np.add.at(H, bins[:, 0], h.astype(np.float64))
    GL, HL = np.cumsum(G[:-1]), np.cumsum(H[:-1])  # bins < t + 1 go left, missing right

    def score(G, H):  # reg_lambda 1
        return G * G / (H + 1.0)

    gains = score(GL, HL) + score(root[0] - GL, root[1] - HL)
    gains_ml = score(GL + G[-1], HL + H[-1]) + score(root[0] - GL - G[-1], root[1] - HL - H[-1])
    t = int(s1["tbin"][0])
    assert bool(s1["default_left"][0]) == (gains_ml.max() > gains.max())
    assert t - 1 == int(np.argmax(gains_ml if s1["default_left"][0] else gains))
    assert 550 < t < 650


def test_uint16_bins_refuse_what_only_uint8_bins_grow():
    z = np.zeros(4, np.float32)
    wide = np.zeros((4, 2), np.uint16)
    args = (z, z, np.array(list(hyper()), np.float32), np.zeros(2), np.ones(2, bool), None, 2)
    with pytest.raises(ValueError, match="n_bins must be in \\[2, 4096\\]"):
        native_kernel.grow_tree(wide, *args, 4097)

    with pytest.raises(ValueError, match="n_bins must be in \\[2, 256\\]"):
        native_kernel.grow_tree(np.zeros((4, 2), np.uint8), *args, 600)


def test_native_tree_refuses_bad_arguments():
    z = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="max_depth"):
        native_kernel.grow_tree(
            np.zeros((4, 2), np.uint8),
            z,
            z,
            np.zeros(6, np.float32),
            np.zeros(2),
            np.zeros(2, bool),
            None,
            0,
            8,
        )
    with pytest.raises(ValueError, match="n_bins"):
        native_kernel.grow_tree(
            np.zeros((4, 2), np.uint8),
            z,
            z,
            np.zeros(6, np.float32),
            np.zeros(2),
            np.zeros(2, bool),
            None,
            2,
            300,
        )


def test_native_tree_turned_off(monkeypatch):
    monkeypatch.setenv(native_kernel.ENV_TREE, "0")
    assert not native_kernel.tree_enabled()
    monkeypatch.setenv(native_kernel.ENV_TREE, "1")
    assert native_kernel.tree_enabled()


FOREST = dict(
    n_rounds=1, num_parallel_tree=4, subsample=0.6, colsample_bynode=0.6, learning_rate=1.0
)


def test_grow_trees_equals_grow_tree_one_by_one():
    """``native.grow_trees`` grows each of its trees as ``grow_tree`` with one thread,
    bit for bit: column sampling, a depth below the arrays', lossguide."""
    rng = np.random.default_rng(3)
    N, F, T, D, B = 700, 9, 5, 4, 17
    bins = rng.integers(0, B - 1, size=(N, F)).astype(np.uint8)
    bins[rng.random((N, F)) < 0.05] = B - 1  # missing
    G = rng.normal(size=(T, N)).astype(np.float32)
    H = rng.uniform(0.1, 1.0, size=(T, N)).astype(np.float32)
    root = np.stack([G.astype(np.float64).sum(1), H.astype(np.float64).sum(1)], 1)
    hyper = np.tile(np.float32([1.0, 0.5, 0.1, 0.2, 1.0, 0.0, 3.0]), (T, 1))
    fo = rng.random(F) < 0.5
    sets = rng.random((T, D, F)) < 0.8
    keys = rng.integers(0, 2**32, size=(T, 2), dtype=np.uint64).astype(np.uint32)
    ratio = np.full((T, 1), 0.7, np.float32)
    for colsample, leaves in ((None, 0), ((keys, sets, ratio), 0), (None, 6)):
        s, Gn, Hn, leaf = native_kernel.grow_trees(
            bins, G, H, hyper, root, fo, colsample, D, B, n_threads=2, max_leaves=leaves
        )
        for t in range(T):
            cs = None if colsample is None else (keys[t], sets[t], ratio[t])
            one = native_kernel.grow_tree(
                bins,
                G[t],
                H[t],
                hyper[t, :6],
                root[t],
                fo,
                cs,
                D,
                B,
                n_threads=1,
                max_leaves=leaves,
                depth=3,
            )
            for a, b in zip(jax.tree.leaves((s, Gn, Hn, leaf)), jax.tree.leaves(one)):
                np.testing.assert_array_equal(np.asarray(a)[t], np.asarray(b))


@pytest.mark.parametrize(
    "objective, extra",
    [
        ("softmax", dict(subsample=0.8, colsample_bynode=0.6)),
        ("softmax", FOREST),
        ("logistic", FOREST),
        ("logistic", dict(FOREST, bootstrap=True, max_depth=3)),
        ("softmax", dict(categorical_features=[0, 5], max_cat_to_onehot=3)),
    ],
    ids=["boosting", "forest", "binary-forest", "binary-forest-bootstrap", "categorical"],
)
def test_class_trees_side_by_side_equal_one_after_another(objective, extra):
    """Small data, K class trees per round or P trees of a forest: grown side by side
    on the cores (``n_jobs`` unset) they are the trees grown one after another on one
    thread (``n_jobs=1``), bit for bit."""
    import jaxboost

    if native_kernel.default_threads() < 2:
        pytest.skip("one core: the trees are grown one after another either way")
    rng = np.random.default_rng(0)
    X = rng.integers(0, 17, size=(500, 12)).astype(np.float32)
    y = rng.integers(0, 4, size=500).astype(np.float32)
    if objective == "logistic":
        y = (y > 1).astype(np.float32)
    kw = dict(n_rounds=4, max_depth=4, seed=1, verbose=False) | extra
    side = jaxboost.train(objective, X, y, **kw)
    one = jaxboost.train(objective, X, y, n_jobs=1, **kw)
    for a, b in zip(side.ensemble, one.ensemble):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(
        side.predict(X, output_margin=True), one.predict(X, output_margin=True)
    )


def test_n_jobs_caps_the_threads_and_never_raises_them(monkeypatch):
    """``train(n_jobs=k)`` is a cap (``TreeSpec.native_threads``): data too small for
    threads within a tree still gets one thread per histogram and its class trees side
    by side; before, ``n_jobs=2`` forced two threads on 500 rows and one class tree after
    another (digits softmax 2.5x slower than with ``n_jobs`` unset)."""
    monkeypatch.setenv("JAXBOOST_NATIVE_THREADS", "2")  # a two-core machine, anywhere
    small = np.zeros((500, 12), np.uint8)  # 6,000 < 2**18 rows x features
    large = jax.ShapeDtypeStruct((1 << 15, 12), np.uint8)  # 393,216 >= 2**18
    kernel_threads = grow_mod.kernel_threads
    assert kernel_threads(small, None) is None  # the kernel's own default
    assert kernel_threads(small, 2) == 1
    assert [kernel_threads(large, c) for c in (1, 2, 8)] == [1, 2, 2]
    # a whole tree walks its nodes' own rows on one thread: threads from 2**20 on
    assert kernel_threads(large, 2, tree=True) == 1
    huge = jax.ShapeDtypeStruct((1 << 17, 8), np.uint8)  # 2**20
    assert kernel_threads(huge, 2, tree=True) == 2
    rules = grow_mod.SplitRules()
    spec = TreeSpec(4, 32, native=True, native_threads=2)
    assert grow_mod.class_trees_in_parallel(small, spec, grow_mod.identity, rules)
    assert grow_mod.class_trees_in_parallel(
        small, spec._replace(native_threads=None), grow_mod.identity, rules
    )
    one = spec._replace(native_threads=1)  # n_jobs=1: one thread, trees one after another
    assert not grow_mod.class_trees_in_parallel(small, one, grow_mod.identity, rules)
    assert native_kernel.default_threads(cap=1) == 1 and native_kernel.default_threads(cap=8) == 2


@pytest.mark.parametrize("depth", [0.0, 2.5, 5.0])
def test_grow_trees_refuses_a_depth_outside_the_arrays(depth):
    """Each tree's hyper[6] (its depth) must be an integer in [1, max_depth]: the
    kernel refuses the call instead of growing past its arrays."""
    z = np.zeros((2, 4), np.float32)
    hyper = np.zeros((2, 7), np.float32)
    hyper[:, 6] = [2.0, depth]
    with pytest.raises(Exception, match=r"hyper\[6\] \(depth\)"):
        jax.block_until_ready(
            native_kernel.grow_trees(
                np.zeros((4, 2), np.uint8),
                z,
                z,
                hyper,
                np.zeros((2, 2)),
                np.zeros(2, bool),
                None,
                3,
                8,
            )
        )


def test_scratch_is_pooled_between_calls_and_handed_back_after_training():
    """The kernels' scratch blocks (rows' node ids, level histograms) are kept in a
    pool between calls, so that the rounds of a fit reuse them instead of leaving
    freed blocks in glibc's per-thread arenas (500,000 x 30 rows, four fits in one
    process: peak 490 -> 405 MiB, with the kept binning threads); a training call hands
    the idle blocks back when it ends. The trees are the same either way."""
    import jaxboost
    from jaxboost.engine import compile as compile_module

    release = native_kernel._state["lib"].JaxboostReleaseScratch
    rng = np.random.default_rng(5)
    n, f, b = 4096, 8, 32
    bins = rng.integers(0, b - 1, size=(n, f)).astype(np.uint8)
    g = (rng.normal(size=n) - (bins[:, 0] < 10)).astype(np.float32)
    h = np.ones(n, np.float32)
    root = np.array([g.astype(np.float64).sum(), h.astype(np.float64).sum()])
    hyp = np.array(list(hyper()), np.float32)

    def tree():
        out = native_kernel.grow_tree(bins, g, h, hyp, root, np.ones(f, bool), None, 5, b)
        return {k: np.asarray(v) for k, v in out[0].items()}, np.asarray(out[3])

    release()
    first = tree()
    # the tree's blocks stay in the pool: at least its rows' node ids and two levels'
    # histograms of 16 nodes x 8 features x 32 bins x (g, h) in float64
    assert release() >= 4 * n + 2 * 16 * f * b * 16
    assert release() == 0  # nothing left
    tree()
    second = tree()  # the same blocks again
    for key in first[0]:
        np.testing.assert_array_equal(first[0][key], second[0][key], err_msg=key)
    np.testing.assert_array_equal(first[1], second[1])
    tree()
    compile_module.release_free_memory()
    assert release() == 0  # release_free_memory handed them back
    tree()
    X = bins[:, :4].astype(np.float32)
    jaxboost.train(
        "logistic", X, (g > 0).astype(np.float32), n_rounds=2, max_depth=3, verbose=False
    )
    assert release() == 0  # and so does the end of a training call


CAT_CASES = {
    "plain": hyper(),
    "l1_mcw": hyper(lam=0.5, alpha=0.4, mcw=3.0),
    "max_delta_step": hyper(mds=0.35),
    "gamma": hyper(gamma=2.0),
    "mcw0": hyper(mcw=0.0),
}


@pytest.mark.parametrize("threshold", [64, 3])
@pytest.mark.parametrize("case", sorted(CAT_CASES))
def test_native_tree_splits_categories_as_the_level_loop(case, threshold, monkeypatch):
    """Categorical features (``categorical.find_best_splits``) in the native whole-tree
    kernel: feature 0 holds 12 categories (partition splits, a code never seen), feature
    1 three (one-vs-rest), with missing values; the kernel gets the ``CatInfo`` and
    grows the level loop's trees bit for bit: the same category sets, default ways,
    node sums, gains and leaves (before, categorical features kept the XLA loop)."""
    _categorical_trees(case, threshold, monkeypatch)


@pytest.mark.parametrize("case, threshold", [("plain", 64), ("l1_mcw", 3), ("mcw0", 64)])
def test_native_tree_splits_categories_with_a_row_minimum(case, threshold, monkeypatch):
    """``min_samples_leaf`` next to categorical features: the kernel counts the rows of
    each side of one-vs-rest and partition candidates as it sums their g and h (the
    missing rows as the parent's count minus the present ones', as for the sums), and
    grows the level loop's trees bit for bit; every leaf holds >= 30 counted rows and
    the minimum binds (without it some leaf holds fewer)."""
    free = _categorical_trees(case, threshold, monkeypatch)
    leaves, counts = _categorical_trees(case, threshold, monkeypatch, min_leaf=30)
    held = np.bincount(leaves, weights=counts, minlength=2 ** (4 + 1))
    assert held[np.bincount(leaves, minlength=held.size) > 0].min() >= 30
    held_free = np.bincount(free[0], weights=counts)
    assert held_free[np.bincount(free[0]) > 0].min() < 30


def _categorical_trees(case, threshold, monkeypatch, min_leaf=0):
    """The categorical trees of ``case`` by the native kernel and the level loop, checked
    equal; returns every row's leaf and the rows' counts (1: g, h not dropped)."""
    from jaxboost.engine import categorical
    from jaxboost.engine.binning import category_slots
    from jaxboost.engine.constraints import ConstraintSpec, ConstraintValues, TreeConstraints

    D = 4
    bins, g, h, cuts, fok = data(_seed(case) + threshold)
    rng = np.random.default_rng(threshold)
    c12 = rng.integers(0, 12, size=N)
    c12[c12 == 5] = 6  # code 5 never seen: it goes the default way
    bins[:, 0] = np.where(bins[:, 0] == B - 1, B - 1, c12)
    g = (g - 0.8 * np.isin(bins[:, 0], [1, 4, 9]) + 0.5 * (bins[:, 1] == 1)).astype(np.float32)
    n_cats = np.array([12, 3, 0, 0, 0, 0], np.int32)
    kind = np.array([categorical.PARTITION, categorical.ONE_HOT, 0, 0, 0, 0], np.int32)
    seen = np.zeros((F, B), bool)
    seen[0, :12], seen[1, :3] = True, True
    seen[0, 5] = False
    S = category_slots(12, B)
    cats = categorical.CatInfo(
        kind, n_cats, seen, np.array([0, 1], np.int32), np.int32(threshold), np.arange(S)
    )
    counts = (h != 0).astype(np.float32)  # data() drops rows: g = h = 0
    calls = []
    real = native_kernel.grow_tree
    monkeypatch.setattr(
        native_kernel,
        "grow_tree",
        lambda *a, **k: calls.append((k["cats"], k.get("counts"))) or real(*a, **k),
    )

    def fn(native_tree, bins, g, h, dyn, cuts, fok, cats):
        monkeypatch.setattr(grow_mod, "_native_tree", lambda: native_tree)
        cons = None
        if min_leaf:
            values = ConstraintValues(
                np.zeros(F, np.int32), np.zeros((0, F), bool), np.int32(min_leaf)
            )
            cons = TreeConstraints(ConstraintSpec(min_leaf=True), values, counts)
        rules = grow_mod.SplitRules(cats=cats, constraints=cons)
        return grow_tree(bins, g, h, dyn, cuts, fok, TreeSpec(D, B, native=True), rules=rules)

    out = [
        jax.jit(functools.partial(fn, nt))(bins, g, h, CAT_CASES[case], cuts, fok, cats)
        for nt in (True, False)
    ]
    assert len(calls) == 1 and calls[0][0] is not None  # the native kernel had the categories
    assert (calls[0][1] is not None) == bool(min_leaf)  # and the counts
    (t1, l1), (t0, l0) = [({k: np.asarray(v) for k, v in t.items()}, np.asarray(l)) for t, l in out]
    split = ~t0["is_leaf"]
    cat_split = split & (t0["feature"] <= 1)
    assert cat_split.sum() >= 2  # categorical splits were found and compared
    assert t1.keys() == t0.keys()
    for key in t0:
        np.testing.assert_array_equal(t1[key], t0[key], err_msg=key)
    np.testing.assert_array_equal(l1, l0)
    # every row's leaf is where the finished tree routes its bins
    np.testing.assert_array_equal(np.asarray(binned_leaf(t1, bins, max_depth=D, max_bin=B)), l1)
    return l1, counts


def test_tree_kernel_gives_the_same_sums_on_any_thread_count():
    """Below 2**22 rows x features the tree kernel spreads the features, not the rows,
    over its threads: every (feature, bin) sum adds the same rows in the same order, so
    one thread and two give the same tree to the last bit of the float64 node sums
    (before, two threads summed blocks of rows and the sums differed in their last
    bits)."""
    rng = np.random.default_rng(7)
    n, f = 1 << 17, 8  # 2**20 rows x features: threads are used
    bins = rng.integers(0, 255, size=(n, f)).astype(np.uint8)
    # gradients over 10 decades: float64 sums of them depend on the order of the adds
    g = rng.normal(size=n) * np.exp(rng.uniform(-12, 12, n)) - 0.01 * bins[:, 0]
    g = g.astype(np.float32)
    h = rng.uniform(0.1, 1.0, size=n).astype(np.float32)
    hyper = np.float32([0.3, 1.0, 0.0, 0.0, 1.0, 0.0])
    root = np.array([g.astype(np.float64).sum(), h.astype(np.float64).sum()])
    out = [
        native_kernel.grow_tree(
            bins, g, h, hyper, root, np.ones(f, bool), None, 4, 256, n_threads=t
        )
        for t in (1, 2)
    ]
    (s1, G1, H1, l1), (s2, G2, H2, l2) = [jax.tree.map(np.asarray, o) for o in out]
    assert s1["is_split"].sum() >= 7
    for k in s1:
        np.testing.assert_array_equal(s1[k], s2[k], err_msg=k)
    assert G1.tobytes() == G2.tobytes() and H1.tobytes() == H2.tobytes()
    np.testing.assert_array_equal(l1, l2)


def _few_row_data(n, f, b, seed):
    """Bins over ``b`` bins (``b - 1`` missing, 10 % of values), a feature of three
    values, rows left out (g = h = 0) and gradients with a signal; for trees deep enough
    that most nodes have a few rows."""
    rng = np.random.default_rng(seed)
    bins = rng.integers(0, b - 1, size=(n, f)).astype(np.uint8)
    bins[:, 1] = rng.integers(0, 3, size=n)
    bins[rng.random((n, f)) < 0.1] = b - 1
    signal = (bins[:, 0] < b // 3) * 1.5 - (bins[:, 2] > b // 2) * 1.0 + 0.3 * (bins[:, 1] == 2)
    g = (rng.normal(size=n) - signal).astype(np.float32)
    h = rng.uniform(0.2, 1.0, size=n).astype(np.float32)
    keep = rng.random(n) >= 0.15
    return bins, np.where(keep, g, 0).astype(np.float32), np.where(keep, h, 0).astype(np.float32)


@pytest.mark.parametrize("mds", [0.0, 0.4])
def test_few_row_nodes_match_the_level_loop(mds):
    """A smaller child of at most ``(B - 1) // 4`` rows (at most 64) keeps, per feature,
    the list of bins its rows fall in instead of a whole histogram (``hist.cc``, few-row
    slots): the sibling subtracts, the scan walks and the children sums add only those
    bins. With 64 bins and depth 8 on 700 rows, most nodes below depth 3 are such nodes,
    larger children among them inherit their parent's lists, and missing values go
    through the lists' last bin: the tree is the level loop's."""
    n, f, b, D = 700, 5, 64, 8
    bins, g, h = _few_row_data(n, f, b, seed=3)
    cuts = np.array(
        [[-np.inf] + [t - 0.5 + 100 * j for t in range(1, b - 1)] + [np.inf] for j in range(f)],
        np.float32,
    )
    fok = np.array([True, False, True, True, False])
    dyn = TreeHyper(*(np.float32(v) for v in (0.3, 1.0, 0.0, 0.0, 0.0, mds)))
    out = []
    for native_tree in (True, False):

        def fn(bins, g, h, dyn, cuts, fok, native_tree=native_tree):
            saved = grow_mod._native_tree
            grow_mod._native_tree = lambda: native_tree
            try:
                return grow_tree(bins, g, h, dyn, cuts, fok, TreeSpec(D, b, native=True))
            finally:
                grow_mod._native_tree = saved

        tree, leaf = jax.jit(fn)(bins, g, h, dyn, cuts, fok)
        out.append(({k: np.asarray(v) for k, v in tree.items()}, np.asarray(leaf)))
    (t1, l1), (t0, l0) = out
    split = ~t0["is_leaf"]
    rows = np.zeros(split.size, np.int64)  # rows through each node
    node = l0.astype(np.int64)
    for _ in range(D + 1):
        np.add.at(rows, node, 1)
        node = np.maximum(node - 1, 0) // 2  # the parent; the root stays
    rows[0] = n  # (the walk added to the root more than once)
    # many splits, a good part of them of nodes of at most (64 - 1) // 4 = 15 rows
    assert split.sum() >= 40
    assert (split & (rows <= 15)).sum() >= 10
    for key in ("is_leaf", "feature", "tbin", "default_left"):
        np.testing.assert_array_equal(t1[key], t0[key], err_msg=key)
    np.testing.assert_array_equal(l1, l0)
    np.testing.assert_allclose(t1["gain"], t0["gain"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(t1["cover"], t0["cover"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(t1["value"], t0["value"], rtol=1e-5, atol=1e-7)


def test_few_row_nodes_on_threads_give_the_one_thread_tree():
    """The few-row lists are built feature by feature, so the threads that share out
    the features (2**20 to 2**22 rows x features) build them too: a deep tree, most of
    whose nodes have a few rows, is the same on one thread and two, to the last bit."""
    n, f, b, D = 1 << 18, 4, 128, 14
    bins, g, h = _few_row_data(n, f, b, seed=5)
    hyp = np.float32([0.3, 1.0, 0.0, 0.0, 0.0, 0.0])
    root = np.array([g.astype(np.float64).sum(), h.astype(np.float64).sum()])
    fok = np.ones(f, bool)
    outs = [
        jax.tree.map(
            np.asarray,
            native_kernel.grow_tree(bins, g, h, hyp, root, fok, None, D, b, n_threads=t),
        )
        for t in (1, 2)
    ]
    (s1, G1, H1, p1), (s2, G2, H2, p2) = outs
    deep = np.arange(s1["is_split"].size) >= (1 << 12) - 1  # depth 12 and below
    assert s1["is_split"][deep].sum() >= 500  # nodes of about 64 rows and fewer split
    for k in s1:
        np.testing.assert_array_equal(s1[k], s2[k], err_msg=k)
    assert G1.tobytes() == G2.tobytes() and H1.tobytes() == H2.tobytes()
    np.testing.assert_array_equal(p1, p2)


def test_row_minimum_on_row_blocks_gives_the_one_thread_tree():
    """``min_samples_leaf`` in the tree kernel: the row counts go through the same paths
    as g and h. At 2**22 rows x features two threads sum blocks of rows (the threaded
    histogram kernel, counts included) while one thread walks each node's rows; the
    trees are the same, every leaf holds at least ``k`` counted rows (rows left out, g
    = h = 0 and count 0, do not count) and the minimum binds (without it the tree has
    smaller leaves)."""
    n, f, b, D, k = 1 << 19, 8, 64, 8, 3000
    bins, g, h = _few_row_data(n, f, b, seed=11)
    counts = (h > 0).astype(np.float32)  # the rows _few_row_data kept
    hyp = np.float32([0.3, 1.0, 0.0, 0.0, 0.0, 0.0])
    root = np.array([g.astype(np.float64).sum(), h.astype(np.float64).sum()])
    fok = np.ones(f, bool)

    def grown(t, minimum=True):
        more = dict(counts=counts, min_leaf=k) if minimum else {}
        out = native_kernel.grow_tree(bins, g, h, hyp, root, fok, None, D, b, n_threads=t, **more)
        return jax.tree.map(np.asarray, out)

    (s1, _, _, p1), (s2, _, _, p2) = grown(1), grown(2)
    for key in ("feature", "tbin", "default_left", "is_split"):
        np.testing.assert_array_equal(s1[key], s2[key], err_msg=key)
    np.testing.assert_array_equal(p1, p2)
    per_leaf = np.bincount(p1, weights=counts)
    assert per_leaf[np.bincount(p1) > 0].min() >= k
    assert s1["is_split"].sum() >= 60
    free = grown(2, minimum=False)[3]
    assert np.bincount(free, weights=counts)[np.bincount(free) > 0].min() < k


def _best_first(is_split, gain, max_leaves):
    """XGBoost's lossguide order on a level-wise tree: from the root, the split node of
    largest gain is expanded, ties to the node allocated first (each expanded node's
    children take the next two numbers), until ``max_leaves`` leaves. Returns the
    expanded nodes as a mask."""
    import heapq

    keep = np.zeros(is_split.size, bool)
    heap = [(-gain[0], 0, 0)] if is_split[0] else []
    leaves, alloc = 1, 1
    while heap and leaves < max_leaves:
        _, _, i = heapq.heappop(heap)
        keep[i], leaves = True, leaves + 1
        for c in (2 * i + 1, 2 * i + 2):
            if c < is_split.size and is_split[c]:
                heapq.heappush(heap, (-gain[c], alloc, c))
            alloc += 1
    return keep


def _leaf_under(keep, deepest):
    """Each row's leaf in the tree of the expanded nodes ``keep``, from its leaf
    ``deepest`` in the full tree: its shallowest ancestor that is not expanded."""
    depth = np.floor(np.log2(deepest + 1)).astype(int)
    out = np.full(deepest.shape, -1)
    for d in range(depth.max() + 1):
        anc = ((deepest + 1) >> np.maximum(depth - d, 0)) - 1
        take = (out < 0) & (d <= depth) & ~keep[np.where(d <= depth, anc, 0)]
        out = np.where(take, anc, out)
    return out


@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize(
    "case", ["plain", "sets", "mono", "row-minimum", "colsample", "categorical", "gamma"]
)
def test_leaf_wise_tree_is_the_level_wise_tree_best_first(case, n_threads):
    """Leaf-wise trees (``max_leaves``) are grown best first on one thread (only the
    expanded nodes' children are histogrammed and scanned) and level by level on more,
    each level keeping the splits the walk can take. The tree is the one XGBoost's
    lossguide order picks from the whole level-wise tree of the same depth (each node's
    best split depends only on its rows and its path): the same splits, gains, node
    sums and leaves, bit for bit, whatever the number of threads."""
    from jaxboost.engine import categorical
    from jaxboost.engine.binning import category_slots

    rng = np.random.default_rng(11)
    n, f, b, D = 3000, 8, 32, 7
    bins = rng.integers(0, b - 1, size=(n, f)).astype(np.uint8)
    bins[rng.random((n, f)) < 0.05] = b - 1  # missing
    signal = np.sin(bins[:, 0] / 4.0) + (bins[:, 1] > 12) - 0.5 * (bins[:, 2] % 5 == 0)
    signal = signal + 0.3 * np.cos(bins[:, 3] * bins[:, 4] / 50.0)
    g = (rng.normal(size=n) * 0.3 - signal).astype(np.float32)
    h = rng.uniform(0.2, 1.0, size=n).astype(np.float32)
    gamma = 0.5 if case == "gamma" else 0.0
    hyper = np.float32([0.3, 1.0, 0.1, gamma, 1.0, 0.0])
    root = np.array([g.astype(np.float64).sum(), h.astype(np.float64).sum()])
    fok = rng.random(f) < 0.7
    kw, colsample = {}, None
    if case == "sets":
        kw["sets"] = np.array([[1, 1, 0, 0, 0, 0, 0, 0], [0, 0, 1, 1, 0, 0, 0, 0]], bool)
        kw["sets"] = np.vstack([kw["sets"], [[0, 0, 0, 0, 1, 1, 1, 1], [1, 0, 0, 0, 1, 0, 0, 0]]])
    elif case == "mono":
        kw["mono"] = np.array([1, 0, -1, 0, 0, 1, 0, 0], np.int32)
    elif case == "row-minimum":
        kw["counts"] = (rng.random(n) < 0.9).astype(np.float32)
        kw["min_leaf"] = np.int32(40)
        g, h = g * kw["counts"], h * kw["counts"]
        root = np.array([g.astype(np.float64).sum(), h.astype(np.float64).sum()])
    elif case == "colsample":
        key = rng.integers(0, 2**32, size=2, dtype=np.uint64).astype(np.uint32)
        colsample = (key, rng.random((D, f)) < 0.8, np.float32([0.6]))
    elif case == "categorical":
        bins[:, 0] = np.where(bins[:, 0] == b - 1, b - 1, rng.integers(0, 12, size=n))
        bins[:, 1] = np.where(bins[:, 1] == b - 1, b - 1, rng.integers(0, 3, size=n))
        g = (g - 0.8 * np.isin(bins[:, 0], [1, 4, 9]) + 0.5 * (bins[:, 1] == 1)).astype(np.float32)
        root = np.array([g.astype(np.float64).sum(), h.astype(np.float64).sum()])
        seen = np.zeros((f, b), bool)
        seen[0, :12], seen[1, :3] = True, True
        kind = np.array([categorical.PARTITION, categorical.ONE_HOT] + [0] * (f - 2), np.int32)
        S = category_slots(12, b)
        kw["cats"] = categorical.CatInfo(
            kind,
            np.array([12, 3] + [0] * (f - 2), np.int32),
            seen,
            np.array([0, 1], np.int32),
            np.int32(64),
            np.arange(S),
        )

    def grow(leaves, threads):
        args = (bins, g, h, hyper, root, fok, colsample, D, b)
        out = native_kernel.grow_tree(*args, n_threads=threads, max_leaves=leaves, **kw)
        return jax.tree.map(np.asarray, out)

    (full, Gf, Hf, leaf_full), splits = grow(0, 1), []
    for leaves in (2, 6, 13, 24):
        s, Gn, Hn, leaf = grow(leaves, n_threads)
        keep = _best_first(full["is_split"], full["gain"], leaves)
        if gamma == 0.0:  # (gamma prunes the selected tree again, in both)
            np.testing.assert_array_equal(s["is_split"], keep)
        else:
            assert not (s["is_split"] & ~keep).any()
        kept = s["is_split"]
        for k in s:
            np.testing.assert_array_equal(
                np.where(kept, s[k].T, 0).T, np.where(kept, full[k].T, 0).T
            )
        reach = np.r_[True, kept[(np.arange(1, kept.size) - 1) // 2]]
        np.testing.assert_array_equal(Gn[reach], Gf[reach])
        np.testing.assert_array_equal(Hn[reach], Hf[reach])
        np.testing.assert_array_equal(leaf, _leaf_under(kept, leaf_full))
        splits.append(int(kept.sum()))
    assert full["is_split"].sum() > 23  # the leaf limit binds: a tree of its own
    if gamma == 0.0:
        assert splits == [1, 5, 12, 23]


@pytest.mark.parametrize("path", ["row-blocks", "sparse"])
def test_level_wise_leaf_wise_trees_grow_only_what_the_walk_can_expand(path):
    """Where leaf-wise trees are grown level by level (several threads, here on rows
    read in blocks; the sparse kernel), each level keeps only the splits that
    the best-first walk over the levels so far expands: the walk over the whole tree
    expands the shallower nodes in that order, so no other split can be expanded
    later. The tree is the walk over the whole level-wise tree, bit for bit (it fails
    when a level keeps too few splits), with at most max_leaves - 1 splits a level."""
    rng = np.random.default_rng(4)
    b, D = 32, 7
    n, f = (1 << 19, 8) if path == "row-blocks" else (20_000, 12)
    bins = rng.integers(0, b - 1, size=(n, f)).astype(np.uint8)
    signal = np.sin(bins[:, 0] / 4.0) + (bins[:, 1] > 12) - 0.5 * (bins[:, 2] % 5 == 0)
    g = (rng.normal(size=n) * 0.3 - signal).astype(np.float32)
    h = rng.uniform(0.2, 1.0, size=n).astype(np.float32)
    hyper = np.float32([0.3, 1.0, 0.0, 0.0, 1.0, 0.0])
    root = np.array([g.astype(np.float64).sum(), h.astype(np.float64).sum()])
    fok = np.ones(f, bool)
    if path == "sparse":
        bins[rng.random((n, f)) < 0.7] = b - 1  # absent entries: missing
        keep = bins != b - 1
        cols = [np.flatnonzero(keep[:, j]) for j in range(f)]
        colptr = np.r_[0, np.cumsum([c.size for c in cols])].astype(np.int32)
        rows = np.concatenate(cols).astype(np.int32)
        ebin = np.concatenate([bins[c, j] for j, c in enumerate(cols)]).astype(np.uint8)

        def grow(leaves):
            out = native_kernel.grow_tree_sparse(
                (colptr, rows, ebin), g, h, hyper, root, fok, None, D, b, max_leaves=leaves
            )
            return jax.tree.map(np.asarray, out)
    else:
        assert n * f >= 1 << 22  # the kernel's row blocks (on two threads)

        def grow(leaves):
            args = (bins, g, h, hyper, root, fok, None, D, b)
            return jax.tree.map(
                np.asarray, native_kernel.grow_tree(*args, n_threads=2, max_leaves=leaves)
            )

    full, Gf, Hf, leaf_full = grow(0)
    assert full["is_split"].sum() > 60
    for leaves in (3, 9, 20):
        s, Gn, Hn, leaf = grow(leaves)
        keep = _best_first(full["is_split"], full["gain"], leaves)
        np.testing.assert_array_equal(s["is_split"], keep)
        for k in ("feature", "tbin", "default_left", "gain"):
            np.testing.assert_array_equal(np.where(keep, s[k], 0), np.where(keep, full[k], 0))
        reach = np.r_[True, keep[(np.arange(1, keep.size) - 1) // 2]]
        np.testing.assert_array_equal(Gn[reach], Gf[reach])
        np.testing.assert_array_equal(Hn[reach], Hf[reach])
        np.testing.assert_array_equal(leaf, _leaf_under(keep, leaf_full))
        assert keep.sum() == leaves - 1
