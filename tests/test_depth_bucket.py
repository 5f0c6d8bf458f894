"""One round program for a bucket of depths (CPU, native whole-tree kernel).

``training.program.round_spec`` compiles the round for ``grow.bucketed_depth(max_depth)``
(6 for depths 1-6, 8 for 7-8) where the native whole-tree kernel grows the trees, and
each model's ``Hyper.depth`` tells the kernel how many levels to grow; the trees are cut
back to the model's depth. So a notebook's or a grid search's depths share a program,
and the models are the ones a program of their own depth gives, bit for bit.
"""

import numpy as np
import pytest

import jaxboost
from jaxboost import native
from jaxboost.engine import grow
from jaxboost.engine.round import run_chunk

pytestmark = pytest.mark.skipif(
    not (native.available() and native.tree_enabled()), reason="native tree kernel unavailable"
)


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6)).astype(np.float32)
    X[::9, 2] = np.nan
    y = X[:, 0] + np.nan_to_num(X[:, 2]) * X[:, 1] + 0.3 * rng.normal(size=n) > 0
    return X, y.astype(np.float32), rng


def _same_model(a, b):
    assert a.ensemble.feature.shape == b.ensemble.feature.shape
    for x, z in zip(a.ensemble, b.ensemble):
        if x is None:
            assert z is None
        else:
            np.testing.assert_array_equal(np.asarray(x), np.asarray(z))


def _without_buckets(monkeypatch, fn):
    with monkeypatch.context() as m:
        m.setattr(grow, "DEPTH_BUCKETS", ())
        return fn()


@pytest.mark.parametrize(
    "objective, kw",
    [
        ("logistic", dict(max_depth=3, subsample=0.8, colsample_bynode=0.6, seed=4)),
        ("logistic", dict(max_depth=4, grow_policy="lossguide", max_leaves=5, gamma=0.2)),
        ("softmax", dict(max_depth=2, colsample_bylevel=0.7, seed=1)),
        ("softmax", dict(max_depth=7, num_parallel_tree=2, subsample=0.7, colsample_bynode=0.8)),
    ],
)
def test_bucketed_models_equal_their_own_depths_programs(objective, kw, monkeypatch):
    X, y, rng = _data()
    if objective == "softmax":
        y = np.digitize(X[:, 0] + 0.3 * rng.normal(size=len(X)), [-0.5, 0.5])
    kw = dict(kw, n_rounds=6, verbose=False)
    bucketed = jaxboost.train(objective, X, y, **kw)
    own = _without_buckets(monkeypatch, lambda: jaxboost.train(objective, X, y, **kw))
    M = 2 ** (kw["max_depth"] + 1) - 1
    assert bucketed.ensemble.feature.shape[1] == M  # cut back to the model's depth
    _same_model(bucketed, own)
    np.testing.assert_array_equal(bucketed.predict(X), own.predict(X))


def test_depths_of_a_bucket_share_one_round_program():
    X, y, _ = _data(seed=2)
    kw = dict(n_rounds=3, verbose=False, reg_lambda=0.7)
    jaxboost.train("logistic", X, y, max_depth=6, **kw)
    before = run_chunk._cache_size()
    models = {d: jaxboost.train("logistic", X, y, max_depth=d, **kw) for d in (1, 2, 3, 5)}
    assert run_chunk._cache_size() == before  # depths 1-5 ran depth 6's program
    for d, m in models.items():
        depth_of_leaves = np.floor(np.log2(np.flatnonzero(m.ensemble.is_leaf[0]) + 1))
        assert m.ensemble.feature.shape[1] == 2 ** (d + 1) - 1
        assert depth_of_leaves.max() <= d
    assert not models[5].ensemble.is_leaf[:, :31].all()  # the trees did grow
    jaxboost.train("logistic", X, y, max_depth=7, **kw)  # bucket 8: a program of its own
    assert run_chunk._cache_size() == before + 1


def test_categorical_depths_share_a_program(monkeypatch):
    """Categorical splits grow in the native kernel too (since 2026-11-27), so their
    depths share the bucket's program; the model is the XLA level loop's of its own
    depth (``JAXBOOST_NATIVE_TREE=0``: a program of depth 2), bit for bit."""
    X, y, rng = _data(seed=3)
    X[:, 5] = rng.integers(0, 6, len(X))
    y = np.where(np.isin(X[:, 5], [1, 4]), 1 - y, y).astype(np.float32)  # codes 1, 4 flip
    kw = dict(n_rounds=2, verbose=False, categorical_features=[5], reg_alpha=0.1)
    jaxboost.train("logistic", X, y, max_depth=3, **kw)
    before = run_chunk._cache_size()
    m = jaxboost.train("logistic", X, y, max_depth=2, **kw)
    assert run_chunk._cache_size() == before  # depth 3's program
    assert m.ensemble.feature.shape[1] == 7
    assert np.asarray(m.ensemble.cat_bits).any()  # categorical splits were made
    monkeypatch.setenv("JAXBOOST_NATIVE_TREE", "0")
    own = jaxboost.train("logistic", X, y, max_depth=2, **kw)
    assert run_chunk._cache_size() == before + 1  # the level loop's own program
    for a, b in zip(m.ensemble, own.ensemble):
        np.testing.assert_array_equal(a, b)


def test_kernel_grows_the_given_depth_in_deeper_arrays():
    X, y, rng = _data(n=300, seed=5)
    bins = np.clip((np.nan_to_num(X, nan=9) + 3) * 4, 0, 30).astype(np.uint8)
    g = (rng.normal(size=300)).astype(np.float32)
    h = np.full(300, 0.25, np.float32)
    hyper = np.float32([0.3, 1.0, 0.0, 0.0, 0.0, 0.0])
    root = np.array([g.sum(), h.sum()], np.float64)
    fwd = np.ones(6, bool)
    s3, G3, H3, leaf3 = native.grow_tree(bins, g, h, hyper, root, fwd, None, 3, 32)
    s6, G6, H6, leaf6 = native.grow_tree(bins, g, h, hyper, root, fwd, None, 6, 32, depth=3)
    for k in s3:
        np.testing.assert_array_equal(np.asarray(s6[k])[:15], np.asarray(s3[k]))
    assert not np.asarray(s6["is_split"])[15:].any()
    np.testing.assert_array_equal(np.asarray(leaf6), np.asarray(leaf3))
    np.testing.assert_array_equal(np.asarray(G6)[:15], np.asarray(G3))
    with pytest.raises(Exception, match=r"hyper\[6\]"):
        native.grow_tree(bins, g, h, hyper, root, fwd, None, 6, 32, depth=7)
