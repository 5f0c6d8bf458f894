"""Class trees held one output per tree: a model of K outputs grown as K trees per
round (softmax's default, forests of them) holds each tree's own output's leaf values,
``(T, M)``, not ``(T, M, K)`` of which K - 1 columns are zeros. Memory per tree is then
one tree's, not K's (issue 27.3): a 100-class model held 100x its values. The model
is the same bit for bit: ``Booster.ensemble`` spreads the values as training stored
them, and every prediction path adds exactly what the spread layout adds."""

import json

import numpy as np
import pytest
from conftest import sparse_tree_data

import jaxboost
import objectives
from jaxboost import io
from jaxboost.engine.tree import Ensemble
from jaxboost.io.format import MAX_NODES
from jaxboost.model import booster as booster_module

# the shapes of tests/test_io_compact.py: its compiled programs serve these models too
TRAIN = dict(n_rounds=4, max_depth=5, max_bin=16, min_child_weight=4.0)
FIELDS = ("feature", "tbin", "threshold", "default_left", "is_leaf", "gain", "cover")


@pytest.fixture(scope="module")
def data():
    X, _, labels = sparse_tree_data()
    return X, labels


def _fit(data, spread=False, **kw):
    """A softmax model; ``spread=True``: as before class trees were held one output per
    tree (every (T, M, K) value kept), the reference."""
    X, y = data
    if not spread:
        return jaxboost.train(objectives.softmax, X, y, **TRAIN, **kw)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(Ensemble, "one_output_per_tree", lambda self, n_outputs: None)
        return jaxboost.train(objectives.softmax, X, y, **TRAIN, **kw)


@pytest.fixture(scope="module", params=["softmax", "forest"])
def pair(request, data):
    kw = dict(num_parallel_tree=2, subsample=0.7) if request.param == "forest" else {}
    return _fit(data, **kw), _fit(data, spread=True, **kw)


def bits(a):
    a = np.asarray(a)
    return a.view(np.int32) if a.dtype == np.float32 else a


def test_class_trees_hold_their_own_values_and_show_the_spread_ones(pair):
    held, spread = pair
    T, M, K = spread.ensemble.value.shape
    assert K == 3 and T == 4 * held.trees_per_round
    assert held.trees.value.shape == (T, M)
    assert spread.trees.value.shape == (T, M, K)  # the reference kept every column
    # K - 1 of the K float32 values of every node are no longer held
    assert held.nbytes == spread.nbytes - T * M * (K - 1) * 4
    # ensemble: the spread layout, equal to what training stored, bit for bit
    # (the other outputs' 0 carries the sign of the tree's value)
    assert held.ensemble.value.shape == (T, M, K)
    np.testing.assert_array_equal(bits(held.ensemble.value), bits(spread.ensemble.value))
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(held.trees, f), getattr(spread.trees, f), f)
    own = spread.ensemble.value[np.arange(T), :, np.arange(T) % K]
    np.testing.assert_array_equal(bits(held.trees.value), bits(own))
    assert np.signbit(held.ensemble.value).any()  # signed zeros are there to keep
    assert not held.trees.value.flags.writeable and not held.ensemble.value.flags.writeable
    # ensemble's layout, once made, is kept (and counted) beside the held values
    assert held.nbytes == spread.nbytes + T * M * 4


def test_held_class_trees_predict_what_the_spread_ones_do_bit_for_bit(pair, data, monkeypatch):
    # the default path (the native kernel on a CPU), then the compiled program
    held, spread = pair[0][:], pair[1]  # a slice: the same trees, no (T, M, K) made yet
    X = np.vstack([data[0], np.full((2, 4), np.nan, np.float32)])
    neg_zero = np.full((len(X), 3), -0.0, np.float32)  # a tree's +0 turns -0.0 into +0.0
    calls = [
        lambda b: b.predict(X),
        lambda b: b.predict(X, output_margin=True),
        lambda b: b[:2].predict(X, output_margin=True),
        lambda b: b.predict(X, output_margin=True, base_margin=neg_zero),
        lambda b: b.staged_predict(X, output_margin=True),
        lambda b: b.staged_predict(X[:5], output_margin=True, base_margin=neg_zero[:5]),
        lambda b: b.predict(X[:20], pred_contribs=True),  # TreeSHAP, per class
    ]
    for call in calls:
        want = call(spread)  # (T, M, K) values
        got = call(held)  # (T, M) values
        np.testing.assert_array_equal(bits(got), bits(want))
        with monkeypatch.context() as m:  # the compiled program (GPUs, TPUs) on them
            m.setattr(booster_module, "native_predict_enabled", lambda: False)
            np.testing.assert_array_equal(bits(call(held)), bits(want))
    assert held.dump() == spread.dump()
    assert held.nbytes < spread.nbytes  # none of that made the (T, M, K) layout


def test_files_and_continued_training_keep_them_held(data):
    held = _fit(data)
    K = held.n_outputs
    again = io.loads(io.dumps(held))
    assert again.trees.value.shape == held.trees.value.shape  # read as held
    np.testing.assert_array_equal(bits(again.trees.value), bits(held.trees.value))
    full = io.loads(io.dumps(held, compact=False))  # the full layout's file, read and held
    np.testing.assert_array_equal(bits(full.trees.value), bits(held.trees.value))
    # 2 + 2 rounds continued from a held model: the 4-round model bit for bit
    two = jaxboost.train(objectives.softmax, *data, **dict(TRAIN, n_rounds=2))
    more = jaxboost.train(objectives.softmax, *data, **dict(TRAIN, n_rounds=2), init_model=two)
    assert more.trees.value.shape == held.trees.value.shape
    for f in FIELDS + ("value",):
        np.testing.assert_array_equal(bits(getattr(more.trees, f)), bits(getattr(held.trees, f)))
    assert held.trees.n_trees == 4 * K


def test_values_edited_off_their_output_are_kept_spread(data):
    held = _fit(data)
    e = held.ensemble
    doubled = held[:4]
    doubled.ensemble = e._replace(value=e.value * 2)  # still one output per tree
    assert doubled.trees.value.ndim == 2
    np.testing.assert_array_equal(doubled.trees.value, held.trees.value * 2)
    value = np.array(e.value)
    value[0, :, 1] = np.where(e.is_leaf[0], 0.25, value[0, :, 1])  # tree 0 (class 0's)
    # now adds 0.25 to class 1 too, wherever a row lands
    edited = held[:4]
    edited.ensemble = e._replace(value=value)
    assert edited.trees.value.shape == value.shape  # cannot be held per tree: spread
    X = data[0]
    m0 = held.predict(X, output_margin=True)
    m1 = edited.predict(X, output_margin=True)
    np.testing.assert_allclose(m1[:, 1] - m0[:, 1], 0.25, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(m1[:, [0, 2]], m0[:, [0, 2]])
    doc = json.loads(io.dumps(edited))["trees"]
    assert "value_output" not in doc  # written with every output's values
    np.testing.assert_array_equal(io.loads(io.dumps(edited)).ensemble.value, value)


def test_a_100_class_model_of_depth_6_saves_and_loads():
    """10 rounds of 100 classes at depth 6 held 1,000 x 127 x 100 values (48 MiB), and
    a file of it could be saved but not loaded: the reader refused more than
    ``MAX_NODES`` = 10**7 values. Held one output per tree, it loads, as it is."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    y = np.arange(300) % 100
    bst = jaxboost.train(
        objectives.softmax, X, y, n_rounds=10, max_depth=6, max_bin=16, min_child_weight=0.0
    )
    T, M = bst.trees.value.shape
    assert (T, M) == (1000, 127) and T * M * 100 > MAX_NODES
    assert bst.nbytes < 4 * 2**20  # the (T, M, K) values alone were 48 MiB
    again = io.loads(io.dumps(bst))
    np.testing.assert_array_equal(bits(again.trees.value), bits(bst.trees.value))
    np.testing.assert_array_equal(
        again.predict(X, output_margin=True), bst.predict(X, output_margin=True)
    )


def test_an_xgboost_model_of_100_classes_imports_held():
    """The XGBoost importer built (T, M, K) values too, and refused this model (1,000
    trees x 127 nodes x 100 classes > ``MAX_NODES``); it builds the held layout."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 5)).astype(np.float32)
    y = np.arange(3000) % 100
    params = dict(objective="multi:softprob", num_class=100, max_depth=6, nthread=2)
    model = xgb.train(params, xgb.DMatrix(X, label=y), 10)
    bst = io.from_xgboost(json.loads(model.save_raw("json")))
    assert bst.trees.value.shape == (1000, 127)
    np.testing.assert_allclose(
        bst.predict(X[:100], output_margin=True),
        model.predict(xgb.DMatrix(X[:100]), output_margin=True),
        rtol=0,
        atol=1e-6,
    )
    # and it prints on one line: three base margins, "...", the last
    assert "base_margin=[0, 0, 0, ..., 0])" in repr(bst)
