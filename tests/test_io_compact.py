"""The compact layout of jaxboost's model files (what ``save`` and ``dumps`` write):
each tree's reachable nodes only, and a multi-class model's leaf values of each tree's
own output only. Loading it gives the model of the full heap layout bit for bit, and a
file that lists the wrong nodes is refused with the node named."""

import bisect
import copy
import json

import numpy as np
import pytest
from conftest import sparse_tree_data
from test_io import _assert_same

import jaxboost
import objectives
from jaxboost import io
from jaxboost.io import ModelFormatError
from jaxboost.io.format import BLANK_NODE, VALUE_OUTPUT, reachable

FIELDS = ("feature", "tbin", "threshold", "default_left", "is_leaf", "value", "gain", "cover")
TRAIN = dict(n_rounds=4, max_depth=5, max_bin=16, min_child_weight=4.0)
"""Trees of 63 nodes that stop early on 120 rows: most nodes are never reached."""


@pytest.fixture(scope="module")
def data():
    return sparse_tree_data()


@pytest.fixture(scope="module")
def models(data):
    X, s, labels = data
    return {
        "squared": jaxboost.train("squared", X, s, **TRAIN),
        "softmax": jaxboost.train(objectives.softmax, X, labels, **TRAIN),
        "softmax forest": jaxboost.train(
            objectives.softmax, X, labels, num_parallel_tree=2, subsample=0.7, **TRAIN
        ),
        "vector leaves": jaxboost.train(
            objectives.softmax, X, labels, multi_strategy="multi_output_tree", **TRAIN
        ),
        "no trees": jaxboost.train("squared", X, s, **dict(TRAIN, n_rounds=0)),
    }


def bits(a):
    """Arrays compared bit for bit: float32 as their int32 patterns (-0.0 != 0.0)."""
    a = np.asarray(a)
    return a.view(np.int32) if a.dtype == np.float32 else a


@pytest.mark.parametrize(
    "name", ["squared", "softmax", "softmax forest", "vector leaves", "no trees"]
)
def test_the_compact_layout_loads_to_the_same_model_bit_for_bit(models, data, name):
    bst = models[name]
    text = io.dumps(bst)
    doc = json.loads(text)["trees"]
    e = bst.ensemble.to_numpy()
    reach = reachable(e.is_leaf)
    if name == "no trees":  # nothing to leave out: the full layout
        assert "node" not in doc
        _assert_same(bst, io.loads(text), data[0])
        return
    assert reach.mean() < 0.5
    assert [len(row) for row in doc["node"]] == reach.sum(axis=1).tolist()
    assert all(len(doc[f][t]) == len(doc["node"][t]) for f in FIELDS for t in range(e.n_trees))
    # one output per tree: the file holds that output's values only
    assert doc.get("value_output") == (VALUE_OUTPUT if name.startswith("softmax") else None)
    again = io.loads(text)
    for f in FIELDS:
        np.testing.assert_array_equal(bits(getattr(again.ensemble, f)), bits(getattr(e, f)), f)
    _assert_same(bst, again, data[0])
    assert io.dumps(again) == text
    assert io.loads(io.dumps(bst, compact=False)).ensemble.value.shape == e.value.shape


def test_a_softmax_file_holds_one_number_per_reachable_node(models):
    """Digits-sized figures are measured by benchmarks/model_files.py; here a 3-class
    model of depth 5: the full layout has T x 63 x 3 values, the compact one a number
    per reachable node."""
    bst = models["softmax"]
    e = bst.ensemble.to_numpy()
    full = io.to_dict(bst)["trees"]["value"]
    compact = json.loads(io.dumps(bst))["trees"]["value"]
    assert np.asarray(full).size == e.n_trees * 63 * 3
    assert sum(len(row) for row in compact) == reachable(e.is_leaf).sum() < e.n_trees * 63 / 2
    assert len(io.dumps(bst)) < len(io.dumps(bst, compact=False))


def test_nodes_no_split_reaches_are_blank(models):
    """What the compact layout leaves out holds ``BLANK_NODE`` in every model jaxboost
    trains (else ``to_dict(compact=True)`` writes the full layout)."""
    for bst in models.values():
        e = bst.ensemble.to_numpy()
        off = ~reachable(e.is_leaf)
        for f, blank in BLANK_NODE.items():
            a = np.asarray(getattr(e, f))[off]
            if f == "threshold":
                assert np.isnan(a).all()
            else:
                np.testing.assert_array_equal(bits(a), bits(np.full(a.shape, blank, a.dtype)))


def test_a_model_whose_hidden_nodes_hold_data_is_written_in_full(models):
    bst = models["squared"]
    e = bst.ensemble.to_numpy()
    off = np.argwhere(~reachable(e.is_leaf))[0]
    cover = np.array(e.cover)
    cover[tuple(off)] = 1.5
    bst2 = jaxboost.Booster(**{**_booster_args(bst), "ensemble": e._replace(cover=cover)})
    doc = json.loads(io.dumps(bst2))["trees"]
    assert "node" not in doc
    assert io.loads(io.dumps(bst2)).ensemble.cover[tuple(off)] == 1.5


def _booster_args(bst):
    return dict(
        objective=bst.objective,
        ensemble=bst.ensemble,
        params=bst.params,
        bin_edges=bst.bin_edges,
        base_margin=bst.base_margin,
        n_features=bst.n_features,
        n_outputs=bst.n_outputs,
        trees_per_round=bst.trees_per_round,
    )


@pytest.fixture(scope="module")
def doc(models):
    return json.loads(io.dumps(models["softmax"]))


def _refused(d, match):
    with pytest.raises(ModelFormatError, match=match):
        io.from_dict(d)
    with pytest.raises(ModelFormatError, match=match):
        io.loads(json.dumps(d))


def _tree_with_split(d):
    return next(t for t, row in enumerate(d["trees"]["is_leaf"]) if not row[0])


def test_listed_nodes_must_be_exactly_the_reachable_ones(doc):
    t = _tree_with_split(doc)
    trees = doc["trees"]

    def edit(fn):
        d = copy.deepcopy(doc)
        fn(d["trees"])
        return d

    def drop_last(tr):  # a child of a split is not listed
        for f in ("node", *FIELDS):
            tr[f][t].pop()

    _refused(edit(drop_last), rf"trees.node\[{t}\].*a child of split node .* is not listed")

    def add_hidden(tr):  # a node below a leaf is listed
        leaf = trees["node"][t][trees["is_leaf"][t].index(True)]
        child = 2 * leaf + 1
        j = bisect.bisect(trees["node"][t], child)
        for f, v in zip(("node", *FIELDS), (child, 0, 0, None, False, True, 0.0, 0.0, 0.0)):
            tr[f][t].insert(j, v)

    _refused(edit(add_hidden), rf"trees.node\[{t}\].*no split reaches it")
    _refused(edit(lambda tr: tr["node"][t].reverse()), rf"trees.node\[{t}\]\[0\].*ascending")
    _refused(edit(lambda tr: tr["node"][t].__setitem__(0, 1)), rf"trees.node\[{t}\]\[0\]")
    _refused(edit(lambda tr: tr["node"][t].__setitem__(-1, 10**6)), r"in \[0, 63\)")
    _refused(edit(lambda tr: tr["node"].__setitem__(t, [])), rf"trees.node\[{t}\]")
    _refused(edit(lambda tr: tr["feature"][t].pop()), rf"trees.feature\[{t}\]")
    _refused(edit(lambda tr: tr["node"].pop()), "a list of")


def test_value_output_is_checked(doc, models):
    d = copy.deepcopy(doc)
    d["trees"]["value_output"] = "t div n_outputs"
    _refused(d, "value_output")
    d = copy.deepcopy(doc)
    del d["trees"]["value_output"]  # then each value is a list of K numbers
    _refused(d, r"trees.value\[0\]")
    full = io.to_dict(models["softmax"])
    full["trees"]["value_output"] = VALUE_OUTPUT
    _refused(full, "goes with trees.node")
    single = json.loads(io.dumps(models["squared"]))
    single["trees"]["value_output"] = VALUE_OUTPUT
    _refused(single, "one output")


def test_full_trees_of_one_output_keep_the_full_layout(data):
    """Where (nearly) every node is reached, the node lists would cost more than the
    nodes they leave out: a single-output model of stumps is written in full."""
    X, s, _ = data
    bst = jaxboost.train("squared", X, s, n_rounds=3, max_depth=1)
    assert reachable(bst.ensemble.to_numpy().is_leaf).all()
    assert "node" not in json.loads(io.dumps(bst))["trees"]
    assert io.dumps(bst) == io.dumps(bst, compact=False)


def test_entries_are_checked_field_by_field_and_named_by_tree(doc, monkeypatch):
    """A file of many small trees is checked in one pass per field (a per-tree pass made
    a 128 MiB file of one-node trees a minutes-long load); a bad entry is still named
    by its tree and position."""
    from jaxboost.io import format as fmt

    calls = []
    real = fmt.nested
    monkeypatch.setattr(fmt, "nested", lambda *a: calls.append(a[1]) or real(*a))
    many = copy.deepcopy(doc)
    trees = many["trees"]
    reps = 50
    for key in ("node", *FIELDS):
        trees[key] = trees[key] * reps
    many["best_iteration"] = None
    T = len(trees["node"])
    io.from_dict(many)
    assert sum(c.startswith("trees.") for c in calls) == 1 + len(FIELDS) < T
    t = _tree_with_split(doc) + len(doc["trees"]["node"]) * (reps - 1)
    bad = copy.deepcopy(many)
    bad["trees"]["gain"][t] = list(bad["trees"]["gain"][t])
    bad["trees"]["gain"][t][1] = "x"
    _refused(bad, rf"trees\.gain\[{t}\]\[1\]: expected finite numbers")
    bad = copy.deepcopy(many)
    bad["trees"]["cover"][t] = bad["trees"]["cover"][t][:-1]
    _refused(bad, rf"trees\.cover\[{t}\]: expected a list of")
