"""Prediction by the native CPU kernel (``jaxboost.native.predict``): the same numbers
as the compiled ``predict_margin`` (what GPUs and TPUs run), bit for bit, with nothing
compiled but the link."""

import numpy as np
import pytest
import scipy.sparse as sp

import jaxboost
from jaxboost import native
from jaxboost.engine import tree as tree_module
from jaxboost.engine.tree import Ensemble, predict_margin
from jaxboost.model import booster as booster_module

pytestmark = pytest.mark.skipif(not native.available(), reason="native kernel unavailable")

KW = dict(n_rounds=8, max_depth=3, learning_rate=0.3, verbose=False)


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[::7, 1] = np.nan
    X[::11, 3] = np.nan
    return X, rng


def _both(monkeypatch, fn):
    """``fn()`` by the native kernel, then by the compiled program (the accelerators')."""
    native_out = fn()
    with monkeypatch.context() as m:
        m.setattr(booster_module, "native_predict_enabled", lambda: False)
        xla_out = fn()
    return native_out, xla_out


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)


@pytest.fixture(scope="module")
def logistic():
    X, rng = _data()
    y = (np.nan_to_num(X[:, 0]) + X[:, 2] > 0.2).astype(np.float32)
    return jaxboost.train("logistic", X, y, subsample=0.8, seed=3, **KW), X


def test_logistic_margins_and_probabilities_equal_the_compiled_program(logistic, monkeypatch):
    b, X = logistic
    assert tree_module.native_predict_enabled()
    Xt = np.vstack([X[:130], np.full((3, 5), np.nan)])  # 133 rows: not a whole block
    for kwargs in (dict(output_margin=True), {}):
        a, x = _both(monkeypatch, lambda kwargs=kwargs: b.predict(Xt, **kwargs))
        _same(a, x)
    # the first k trees (booster[:k]) and per-row offsets
    for k in (0, 1, 5):
        a, x = _both(monkeypatch, lambda k=k: b[:k].predict(Xt, output_margin=True))
        _same(a, x)
    off = np.linspace(-1, 1, len(Xt)).astype(np.float32)
    a, x = _both(monkeypatch, lambda: b.predict(Xt, base_margin=off))
    _same(a, x)
    assert not np.array_equal(a, b.predict(Xt))


def test_native_prediction_compiles_no_predict_program(logistic):
    b, X = logistic
    before = predict_margin._cache_size()
    for n in (17, 130, 333, 600):
        m = b.predict(X[:n], output_margin=True)
        assert m.shape == (n,)
    assert predict_margin._cache_size() == before


def test_the_link_compiles_once_per_octave_of_rows(logistic):
    """Probabilities of batches of 70..128 rows share one link program (rows padded to
    a power of two); ``bucket_rows``' finer buckets compiled four (72, 96, 112, 128)."""
    b, X = logistic
    sizes = (70, 90, 110, 128)
    before = tree_module._apply_link._cache_size()
    for n in sizes:
        p = b.predict(X[:n])
        np.testing.assert_array_equal(p, b.predict(X[:200])[:n])
    assert tree_module._apply_link._cache_size() - before <= 1


def test_the_padded_trees_are_made_only_for_a_device_prediction(monkeypatch):
    # the native predictor reads the trees as they are: a padded copy made with every
    # model held the trees twice. The device program makes it once, for the whole model
    # and its slices booster[:k].
    X, rng = _data(seed=2)
    y = (np.nan_to_num(X[:, 0]) > 0).astype(np.float32)
    b = jaxboost.train("logistic", X, y, **KW)
    b.predict(X)
    b[:3].predict(X)
    assert not b._padded_trees.made and not b[:3]._padded_trees.made
    a, x = _both(monkeypatch, lambda: b[:5].predict(X, output_margin=True))
    _same(a, x)
    assert b._padded_trees.made and b[:2]._padded_trees is b._padded_trees
    padded = b._padded_trees.get()
    assert padded.n_trees == 8 and padded.feature.shape == (8, 15)  # already a bucket
    np.testing.assert_array_equal(padded.value, b.ensemble.value)


def test_a_models_trees_are_read_only_and_new_trees_are_predicted_on_both_paths(monkeypatch):
    # booster[:k] shares its model's arrays, so they are read-only (in one part or in
    # several chunks alike); trees given anew are what both predictors then use (the
    # device predictor's padded copy follows them)
    X, _ = _data()
    y = (np.nan_to_num(X[:, 0]) > 0).astype(np.float32)
    for n_rounds in (8, 30):  # one chunk of rounds; several
        b = jaxboost.train("logistic", X, y, **dict(KW, n_rounds=n_rounds))
        for f in Ensemble._fields[:-1]:
            assert not getattr(b.ensemble, f).flags.writeable, f
        with pytest.raises(ValueError, match="read-only"):
            b.ensemble.value[0, 0] = 1.0
        with pytest.raises(ValueError, match="read-only"):
            b[:2].ensemble.value[0, 0] = 1.0
    before = b.predict(X, output_margin=True)
    _both(monkeypatch, lambda: b.predict(X, output_margin=True))  # padded copy made
    b.ensemble = b.ensemble._replace(value=b.ensemble.value * 2)
    a, x = _both(monkeypatch, lambda: b.predict(X, output_margin=True))
    _same(a, x)
    base = np.float32(b.base_margin)
    np.testing.assert_allclose(a - base, 2 * (before - base), rtol=1e-5, atol=1e-5)


def test_one_part_is_read_not_copied():
    # a fit whose trees come in one part (one chunk of rounds, or a forest's one
    # round) holds them once: Ensemble.concat reads that part, equal to a copy
    X, _ = _data()
    y = (np.nan_to_num(X[:, 0]) > 0).astype(np.float32)
    e = jaxboost.train("logistic", X, y, **KW).ensemble
    one = Ensemble.concat([e])
    two = Ensemble.concat([e, e[:0]])
    for f in Ensemble._fields[:-1]:
        assert np.shares_memory(getattr(one, f), getattr(e, f))
        assert not np.shares_memory(getattr(two, f), getattr(e, f))
        np.testing.assert_array_equal(getattr(one, f), getattr(two, f))


def test_softmax_and_squared_equal_the_compiled_program(monkeypatch):
    X, rng = _data(seed=1)
    y3 = np.digitize(np.nan_to_num(X[:, 0]) + 0.3 * rng.normal(size=len(X)), [-0.5, 0.5])
    b = jaxboost.train("softmax", X, y3, **KW)
    for kwargs in (dict(output_margin=True), {}):
        a, x = _both(monkeypatch, lambda kwargs=kwargs: b.predict(X, **kwargs))
        assert a.shape == (len(X), 3)
        _same(a, x)
    yr = np.nan_to_num(X[:, 2]) * 2 + rng.normal(size=len(X))
    r = jaxboost.train("squared", X, yr, **KW)
    a, x = _both(monkeypatch, lambda: r.predict(X))
    _same(a, x)


def test_categorical_splits_equal_the_compiled_program(monkeypatch):
    rng = np.random.default_rng(2)
    n = 1500
    X = np.c_[rng.integers(0, 40, n).astype(float), rng.normal(size=n)]
    X[::13, 0] = np.nan
    y = (np.isin(X[:, 0], [1, 5, 9, 33]) + X[:, 1] > 0.6).astype(np.float32)
    b = jaxboost.train("logistic", X, y, categorical_features=[0], **KW)
    assert b.ensemble.cat_bits is not None and np.isnan(b.ensemble.threshold).any()
    Xt = X[:200].copy()
    Xt[:6, 0] = [45, 2, 39, np.nan, 0, 255]  # unseen codes, missing, the widest code
    a, x = _both(monkeypatch, lambda: b.predict(Xt, output_margin=True))
    _same(a, x)


def test_sparse_input_equals_its_dense_twin(logistic):
    b, X = logistic
    Xs = np.where(np.isnan(X), 0.0, X)
    Xs[np.abs(Xs) < 0.5] = 0.0
    dense = np.where(Xs == 0.0, np.nan, Xs)  # absent entries are missing values
    _same(b.predict(sp.csr_matrix(Xs)), b.predict(dense))


def test_threads_and_blocks_do_not_change_the_sums(logistic):
    b, X = logistic
    Xt = np.ascontiguousarray(np.vstack([X] * 3)[:1700], np.float32)
    out = {}
    for threads in (1, 2, 3):
        m = np.full(len(Xt), 0.25, np.float32)
        out[threads] = native.predict(Xt, b.ensemble, m, b.params.max_depth, n_threads=threads)
    _same(out[1], out[2])
    _same(out[1], out[3])


def test_stump_by_hand():
    # x < 0.5 goes left (-1), else right (+2); NaN follows default_left (left)
    stump = Ensemble(
        feature=np.int32([[0, 0, 0]]),
        tbin=np.int32([[1, 0, 0]]),
        threshold=np.float32([[0.5, 0, 0]]),
        default_left=np.array([[True, False, False]]),
        is_leaf=np.array([[False, True, True]]),
        value=np.float32([[0, -1, 2]]),
        gain=np.zeros((1, 3), np.float32),
        cover=np.zeros((1, 3), np.float32),
    )
    X = np.float32([[0.0], [0.5], [np.nan], [-np.inf], [np.inf]])
    m = native.predict(X, stump, np.float32([0, 0, 0, 0, 10]), 1)
    assert m.tolist() == [-1.0, 2.0, -1.0, -1.0, 12.0]
    with pytest.raises(ValueError, match="float32"):
        native.predict(X.astype(np.float64), stump, np.zeros(5, np.float32), 1)
    # no read outside the arrays, whatever the trees say (a model file is not trusted)
    far = stump._replace(feature=np.int32([[1, 0, 0]]))
    with pytest.raises(ValueError, match="outside the 1 columns"):
        native.predict(X, far, np.zeros(5, np.float32), 1)
    with pytest.raises(ValueError, match="cannot hold depth 2"):
        native.predict(X, stump, np.zeros(5, np.float32), 2)


def test_staged_predictions_equal_the_compiled_program(logistic, monkeypatch):
    b, X = logistic
    Xt = X[:150]
    for kwargs in (dict(output_margin=True), {}):
        a, x = _both(monkeypatch, lambda kwargs=kwargs: b.staged_predict(Xt, **kwargs))
        assert a.shape == (len(b), len(Xt))
        _same(a, x)
    _same(b.staged_predict(Xt)[-1], b.predict(Xt))  # the last stage is the model's prediction
    off = np.linspace(-1, 1, len(Xt)).astype(np.float32)
    a, x = _both(monkeypatch, lambda: b.staged_predict(Xt, base_margin=off))
    _same(a, x)


def test_staged_softmax_equals_the_compiled_program(monkeypatch):
    X, rng = _data(n=300, seed=4)
    y3 = np.digitize(np.nan_to_num(X[:, 0]) + 0.3 * rng.normal(size=len(X)), [-0.5, 0.5])
    b = jaxboost.train("softmax", X, y3, **KW)  # 3 trees per round
    a, x = _both(monkeypatch, lambda: b.staged_predict(X))
    assert a.shape == (KW["n_rounds"], len(X), 3)
    _same(a, x)
    stages = native.predict_stages(
        np.ascontiguousarray(X, np.float32),
        b.ensemble,
        np.tile(np.asarray(b.base_margin, np.float32), (len(X), 1)),
        b.params.max_depth,
    )
    assert stages.shape == (b.ensemble.n_trees, len(X), 3)  # every tree, not every round
    _same(stages[2::3], b.staged_predict(X, output_margin=True))
    _same(stages[-1], b.predict(X, output_margin=True))


def _tree(feature, threshold, is_leaf, value, default_left=None):
    """One heap-layout tree (or several: 2-D arguments) as an ``Ensemble``."""
    feature = np.atleast_2d(np.int32(feature))
    shape = feature.shape
    return Ensemble(
        feature=feature,
        tbin=np.zeros(shape, np.int32),
        threshold=np.atleast_2d(np.float32(threshold)),
        default_left=np.zeros(shape, bool)
        if default_left is None
        else np.atleast_2d(np.asarray(default_left, bool)),
        is_leaf=np.atleast_2d(np.asarray(is_leaf, bool)),
        value=np.float32(value).reshape(shape[0], shape[1], -1).squeeze(-1)
        if np.ndim(value) < 3
        else np.float32(value),
        gain=np.zeros(shape, np.float32),
        cover=np.zeros(shape, np.float32),
    )


# depth 2 in a model of depth 3 (15 nodes): x0 < 0 -> leaf -1 (node 1); else x1 < 0.5
# -> 2 (node 5), else 3 (node 6). The nodes below leaves hold junk, feature 999 among it.
JUNK = 999
DEPTH_2 = dict(
    feature=[0, JUNK, 1, JUNK, JUNK, 0, 0] + [JUNK] * 8,
    threshold=[0.0, 7.0, 0.5, 1.0, 1.0, 0.0, 0.0] + [5.0] * 8,
    is_leaf=[False, True, False, False, False, True, True] + [False] * 8,
    value=[0.0, -1.0, 0.0, 50.0, 60.0, 2.0, 3.0] + [100.0] * 8,
)


def test_each_tree_is_packed_to_its_own_depth():
    # a row takes its tree's steps, not the model's: the leaves above the last level are
    # completed (their descendants there hold their value), junk below them is unread
    tree = _tree(**DEPTH_2)
    leaf_only = _tree(**{**DEPTH_2, "is_leaf": [True] * 15, "value": [4.0] + [9.0] * 14})
    both = Ensemble.concat([tree, leaf_only])
    packed = native.pack_trees(both, 3, 1)
    assert packed.depth.tolist() == [2, 0] and packed.max_feature == 1
    assert packed.value[0, 3:7].tolist() == [-1.0, -1.0, 2.0, 3.0]  # level 2: the leaves
    assert packed.nodes["feature"][0, :3].tolist() == [0, 0, 1]  # level 2 is not read
    X = np.float32([[-1.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, np.nan], [-np.inf, 9.0]])
    want = [-1.0 + 4.0, 2.0 + 4.0, 3.0 + 4.0, 3.0 + 4.0, -1.0 + 4.0]  # NaN goes right
    assert native.predict(X, both, np.zeros(5, np.float32), 3).tolist() == want
    assert native.predict(X, packed, np.zeros(5, np.float32), 3).tolist() == want
    assert native.predict(X, packed, np.zeros(5, np.float32), 3, n_trees=1).tolist() == [
        -1.0,
        2.0,
        3.0,
        3.0,
        -1.0,
    ]
    # a reachable split outside X's columns is still refused
    with pytest.raises(ValueError, match="outside the 1 columns"):
        native.predict(X[:, :1].copy(), packed, np.zeros(5, np.float32), 3)


def test_blocks_with_and_without_missing_values_equal_the_compiled_program(logistic, monkeypatch):
    # a block of 64 rows with no NaN skips the default-direction test; one NaN anywhere
    # in a block takes it for the whole block
    b, X = logistic
    dense = np.nan_to_num(X[:256], nan=0.3)
    dense[70, 0] = np.nan  # block 1 only (feature 0 is split on: y follows x0 + x2)
    dense[255, 2] = np.nan  # block 3's last row
    for rows in (dense, dense[:64], dense[64:200]):
        a, x = _both(monkeypatch, lambda rows=rows: b.predict(rows, output_margin=True))
        _same(a, x)
    # the NaN row took its default way, which one of +-100 does not take
    present = [dense.copy(), dense.copy()]
    present[0][70, 0], present[1][70, 0] = -100.0, 100.0
    assert any(b.predict(p)[70] != b.predict(dense)[70] for p in present)


def _held_pair(values, K):
    """Class trees (one per output, tree ``t`` on output ``t % K``): the stumps of
    ``values`` (``(T, 2)``: left and right leaf) on x0 < 0, held and spread."""
    T = len(values)
    value = np.zeros((T, 3), np.float32)
    value[:, 1:] = values
    held = _tree(
        feature=np.zeros((T, 3)),
        threshold=np.zeros((T, 3)),
        is_leaf=np.tile([False, True, True], (T, 1)),
        value=value,
    )
    return held, held._replace(value=tree_module._spread_values(value, 0, K))


def test_held_class_trees_end_at_signed_zeros_as_the_spread_ones():
    # output 0's only tree has -0.0 leaves; output 1's tree +1 (left) and -1 (right).
    # From -0.0 the spread layout adds output 1's 0 * v to output 0: +0 for the left
    # rows, -0 for the right; held trees add v to its output only, and the rows ending
    # at -0.0 are summed again with the zeros.
    held, spread = _held_pair(np.float32([[-0.0, -0.0], [1.0, -1.0]]), 2)
    X = np.float32([[-1.0], [1.0], [-2.0]])
    start = np.full((3, 2), -0.0, np.float32)
    got = native.predict(X, held, start.copy(), 1)
    want = native.predict(X, spread, start.copy(), 1)
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
    assert np.signbit(got[:, 0]).tolist() == [False, True, False]  # 0 + (+0), 0 + (-0)
    assert got[:, 1].tolist() == [1.0, -1.0, 1.0]


def test_an_infinite_leaf_of_a_class_tree_makes_what_the_spread_layout_makes():
    # inf * 0 is NaN: the spread layout puts NaN beside an infinite leaf, so the held
    # trees are packed spread when a value is not finite
    with np.errstate(invalid="ignore"):  # inf * 0, on purpose
        held, spread = _held_pair(np.float32([[np.inf, 1.0], [2.0, 3.0]]), 2)
    X = np.float32([[-1.0], [1.0]])
    got = native.predict(X, held, np.zeros((2, 2), np.float32), 1)
    want = native.predict(X, spread, np.zeros((2, 2), np.float32), 1)
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
    assert np.isinf(got[0, 0]) and np.isnan(got[0, 1]) and got[1].tolist() == [1.0, 3.0]
    assert native.pack_trees(held, 1, 2).out is None  # packed in the (T, M, K) layout


def test_a_model_packs_its_trees_once_for_itself_and_its_slices(logistic, monkeypatch):
    b, X = logistic
    b = b[:]
    b.ensemble = b.ensemble  # the same trees as new ones: nothing packed yet
    calls = []
    real = native.pack_trees
    monkeypatch.setattr(native, "pack_trees", lambda *a: calls.append(a) or real(*a))
    first = b.predict(X[:10])
    _same(b.predict(X[:10]), first)
    b[:3].predict(X[:10])
    b.staged_predict(X[:10])
    assert len(calls) == 1
    b.ensemble = b.ensemble._replace(value=b.ensemble.value * 2)  # new trees: packed anew
    a, x = _both(monkeypatch, lambda: b.predict(X[:10]))
    _same(a, x)
    assert not np.array_equal(a, first)
    assert len(calls) == 2


def test_stages_every_round_equal_every_trees_stages():
    # staged_predict records each round's margins (every K class trees), not each tree's
    X, rng = _data(n=300, seed=4)
    y3 = np.digitize(np.nan_to_num(X[:, 0]) + 0.3 * rng.normal(size=len(X)), [-0.5, 0.5])
    b = jaxboost.train("softmax", X, y3, **KW)  # 3 trees per round
    X32 = np.ascontiguousarray(X, np.float32)
    start = np.tile(np.asarray(b.base_margin, np.float32), (len(X), 1))
    every_tree = native.predict_stages(X32, b.trees, start.copy(), b.params.max_depth)
    rounds = native.predict_stages(X32, b.trees, start.copy(), b.params.max_depth, every=3)
    assert rounds.shape == (KW["n_rounds"], len(X), 3)
    _same(rounds, every_tree[2::3])
    _same(rounds, b.staged_predict(X, output_margin=True))
    with pytest.raises(ValueError, match="must divide"):
        native.predict_stages(X32, b.trees, start.copy(), b.params.max_depth, every=5)


def test_csr_rows_predict_what_their_dense_twins_do(monkeypatch):
    # a CSR matrix is predicted by its stored entries (absent = NaN), not in dense
    # blocks: the same margins bit for bit, for class trees held one output per tree
    # (with -0.0 offsets: the re-summed rows), with stored NaN and explicit zeros
    X, rng = _data(n=700, seed=5)
    X[np.abs(X) < 0.4] = 0.0  # dropped from the CSR matrix below: missing there
    y3 = np.digitize(np.nan_to_num(X[:, 0]) + 0.3 * rng.normal(size=len(X)), [-0.5, 0.5])
    b = jaxboost.train("softmax", X, y3, **KW)
    csr = sp.csr_matrix(np.where(np.isnan(X), np.nan, X))  # stored NaN stays stored
    csr.eliminate_zeros()
    csr[3, 2] = 0.0  # an explicit stored zero: present, 0.0
    coo = csr.tocoo()  # the dense twin: every stored entry, NaN elsewhere
    dense = np.full(X.shape, np.nan, np.float32)
    dense[coo.row, coo.col] = coo.data
    assert dense[3, 2] == 0.0 and np.isnan(dense).any()
    called = []
    real = native.predict_csr
    monkeypatch.setattr(native, "predict_csr", lambda *a, **k: called.append(1) or real(*a, **k))
    neg_zero = np.full((len(X), 3), -0.0, np.float32)
    for kwargs in ({}, dict(output_margin=True), dict(output_margin=True, base_margin=neg_zero)):
        got = b.predict(csr, **kwargs)
        want = b.predict(dense, **kwargs)
        np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
    assert len(called) == 3  # the CSR kernel ran, no dense blocks
    X32 = csr.astype(np.float32)
    start = np.zeros((len(X), 3), np.float32)
    one = native.predict_csr(X32, b.trees, start.copy(), b.params.max_depth, n_threads=1)
    two = native.predict_csr(X32, b.trees, start.copy(), b.params.max_depth, n_threads=2)
    _same(one, two)
    # no columns at all (a model of single leaves): no division by the width
    leaves = _tree(feature=[[0]], threshold=[[0.0]], is_leaf=[[True]], value=[[1.5]])
    empty = sp.csr_matrix((3, 0), dtype=np.float32)
    assert native.predict_csr(empty, leaves, np.zeros(3, np.float32), 0).tolist() == [1.5] * 3
    bad = X32.copy()
    bad.indices[0] = 99  # outside the 5 columns
    with pytest.raises(ValueError, match=r"X.indices\[0\] = 99 is out of range"):
        native.predict_csr(bad, b.trees, start.copy(), b.params.max_depth)
