"""Hostile and extreme model files: both readers refuse them with ``ModelFormatError``
(a ``ValueError``) before they cost memory, time or a wrong prediction; ``save`` refuses
targets that are not regular files and cleans up after saves that were killed.

The models are built by hand (a one-split stump in each format, the XGBoost JSON schema
written out), so every expected number is known without training: the stump sends
``x0 < 0.5`` left (value ``-1``) and the rest right (``+2``), base margin ``0.25``.
"""

from __future__ import annotations

import copy
import json
import math
import os
import signal
import socket
import subprocess
import sys
import textwrap
import tracemalloc

import numpy as np
import pytest
from test_io_fuzz import watchdog

import jaxboost
import objectives
from jaxboost import io
from jaxboost.engine.binning import BinEdges
from jaxboost.engine.tree import Ensemble
from jaxboost.io import ModelFormatError, files, from_xgboost
from jaxboost.io.checks import MAX_FEATURES, MAX_NODES
from jaxboost.model.params import TreeParams

F32_MAX = float(np.finfo(np.float32).max)
X = np.array([[0.0, 1.0], [1.0, 0.0], [np.nan, 2.0]], np.float32)
EXPECTED = np.array([0.25 - 1.0, 0.25 + 2.0, 0.25 - 1.0], np.float32)  # NaN goes left


# --------------------------------------------------------------------------------------
# Hand-built models
# --------------------------------------------------------------------------------------


def stump(objective=objectives.squared, left=-1.0, right=2.0, cover=(3.0, 1.0, 2.0)):
    """A jaxboost Booster of one depth-1 tree: x0 < 0.5 (or missing) -> left."""
    ens = Ensemble(
        feature=np.zeros((1, 3), np.int32),
        tbin=np.array([[1, 0, 0]], np.int32),
        threshold=np.array([[0.5, np.nan, np.nan]], np.float32),
        default_left=np.array([[True, False, False]]),
        is_leaf=np.array([[False, True, True]]),
        value=np.array([[0.0, left, right]], np.float32),
        gain=np.array([[1.0, 0.0, 0.0]], np.float32),
        cover=np.array([cover], np.float32),
    )
    edges = BinEdges(
        cuts=np.array([[0.5] + [np.inf] * 5, [np.inf] * 6], np.float32),
        n_cuts=np.array([1, 0], np.int32),
        has_missing=np.array([True, False]),
        n_distinct=np.array([2, 1], np.int64),
        max_bin=8,
    )
    return jaxboost.Booster(
        ens,
        objective=objective,
        params=TreeParams(max_depth=1, max_bin=8),
        bin_edges=edges,
        base_margin=0.25,
        n_features=2,
    )


@pytest.fixture(scope="module")
def doc():
    """The stump in jaxboost's format, parsed."""
    d = io.to_dict(stump())
    assert io.from_dict(copy.deepcopy(d)).n_features == 2
    return d


def xgb_tree(left, right, split_indices, split_conditions, sum_hessian):
    n = len(left)
    return {
        "base_weights": list(split_conditions),
        "categories": [],
        "categories_nodes": [],
        "categories_segments": [],
        "categories_sizes": [],
        "default_left": [1 if c != -1 else 0 for c in left],
        "id": 0,
        "left_children": list(left),
        "loss_changes": [1.0 if c != -1 else 0.0 for c in left],
        "parents": [2147483647] * n,
        "right_children": list(right),
        "split_conditions": list(split_conditions),
        "split_indices": list(split_indices),
        "split_type": [0] * n,
        "sum_hessian": list(sum_hessian),
        "tree_param": {
            "num_deleted": "0",
            "num_feature": "2",
            "num_nodes": str(n),
            "size_leaf_vector": "1",
        },
    }


def xgb_stump(left=-1.0, right=2.0):
    return xgb_tree([1, -1, -1], [2, -1, -1], [0, 0, 0], [0.5, left, right], [3.0, 1.0, 2.0])


def xgb_model(
    trees,
    objective="reg:squarederror",
    num_class="0",
    base_score="2.5E-1",
    num_feature="2",
    tree_info=None,
):
    """An XGBoost 3.x JSON model (a dict) of the given trees."""
    return {
        "learner": {
            "attributes": {},
            "feature_names": [],
            "feature_types": [],
            "gradient_booster": {
                "model": {
                    "gbtree_model_param": {"num_parallel_tree": "1", "num_trees": str(len(trees))},
                    "iteration_indptr": list(range(len(trees) + 1)),
                    "tree_info": tree_info if tree_info is not None else [0] * len(trees),
                    "trees": trees,
                },
                "name": "gbtree",
            },
            "learner_model_param": {
                "base_score": base_score,
                "boost_from_average": "1",
                "num_class": num_class,
                "num_feature": num_feature,
                "num_target": "1",
            },
            "objective": {"name": objective},
        },
        "version": [3, 2, 0],
    }


def peak_mib(fn, *args):
    """``fn(*args)``'s exception (or None) and the peak of memory it traced, in MiB."""
    tracemalloc.start()
    try:
        fn(*args)
        error = None
    except Exception as e:  # noqa: BLE001 - returned to the caller to check
        error = e
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return error, peak / 2**20


def test_hand_built_models_predict_the_expected_margins(doc):
    # The baseline every refusal below departs from: both readers accept the stumps.
    np.testing.assert_array_equal(io.from_dict(copy.deepcopy(doc)).predict(X), EXPECTED)
    np.testing.assert_array_equal(from_xgboost(xgb_model([xgb_stump()])).predict(X), EXPECTED)


# --------------------------------------------------------------------------------------
# Limits checked before anything of the declared size is allocated
# --------------------------------------------------------------------------------------


def test_xgboost_huge_num_class_is_refused_before_allocation(tmp_path):
    # The 567-byte file: num_class 10,000,000 cost 7.8 s and 2.9 GB.
    model = xgb_model([xgb_stump()], "multi:softprob", num_class="10000000")
    path = tmp_path / "classes.json"
    path.write_text(json.dumps(model))
    assert path.stat().st_size < 1000
    error, peak = peak_mib(from_xgboost, path)
    assert isinstance(error, ModelFormatError), error
    assert "num_class" in str(error) and "MAX_CLASSES" in str(error)
    assert str(objectives.MAX_CLASSES) in str(error)
    assert peak < 20


def test_xgboost_huge_num_feature_is_refused_before_allocation():
    # num_feature 4,000,000 cost 49 s and 4.3 GB.
    error, peak = peak_mib(from_xgboost, xgb_model([xgb_stump()], num_feature="4000000"))
    assert isinstance(error, ModelFormatError), error
    assert "num_feature" in str(
        error
    ) and f"MAX_FEATURES (jaxboost.io.checks) = {MAX_FEATURES}" in str(error)
    assert peak < 20


def chain(depth):
    """A tree whose left branch goes ``depth`` levels down: 2 depth + 1 nodes."""
    n = 2 * depth + 1
    left, right = [-1] * n, [-1] * n
    for k in range(depth):  # node 2k splits into 2k + 1 (the chain) and 2k + 2 (a leaf)
        left[2 * k], right[2 * k] = 2 * k + 1, 2 * k + 2
    # relabel so that the chain continues at 2k + 1: the last chain node is a leaf
    cond = [0.5 if left[i] != -1 else 0.125 for i in range(n)]
    hess = [0.0] * n
    for i in reversed(range(n)):  # covers that add up: leaves 1, splits their sum
        hess[i] = 1.0 if left[i] == -1 else hess[left[i]] + hess[right[i]]
    return xgb_tree(left, right, [0] * n, cond, hess)


def test_xgboost_deep_chain_trees_are_refused_by_the_node_limit():
    # 1,000 depth-16 chain trees (1.7 MB of JSON) cost 10 GB in the heap layout.
    model = xgb_model([chain(16) for _ in range(1000)])
    assert len(json.dumps(model, separators=(",", ":"))) < 2_000_000
    error, peak = peak_mib(from_xgboost, model)
    assert isinstance(error, ModelFormatError), error
    assert f"MAX_NODES = {MAX_NODES}" in str(error) and "depth 16" in str(error)
    assert peak < 50
    # A few such trees fit: the chain predicts its leaves.
    few = from_xgboost(xgb_model([chain(16) for _ in range(3)]))
    assert few.params.max_depth == 16
    np.testing.assert_allclose(few.predict(X), 0.25 + 3 * 0.125)


def test_xgboost_tree_deeper_than_16_is_refused():
    with pytest.raises(ModelFormatError, match="deeper than 16"):
        from_xgboost(xgb_model([chain(17)]))


def test_jaxboost_format_n_outputs_limit(doc):
    d = copy.deepcopy(doc)
    d["n_outputs"] = 10**7
    error, peak = peak_mib(io.from_dict, d)
    assert isinstance(error, ModelFormatError)
    assert "n_outputs" in str(error) and str(objectives.MAX_CLASSES) in str(error)
    assert peak < 20


def test_softmax_class_limit_at_construction():
    K = objectives.MAX_CLASSES
    assert objectives.softmax(n_classes=K).outputs == K
    with pytest.raises(ValueError, match=f"MAX_CLASSES = {K}"):
        objectives.softmax(n_classes=K + 1)
    with pytest.raises(TypeError, match="n_classes"):
        objectives.softmax(n_classes=3.0)


# --------------------------------------------------------------------------------------
# Bounded reads: regular files only, size and parse cost checked before parsing
# --------------------------------------------------------------------------------------


def _readers():
    return [("load", io.load), ("from_xgboost", from_xgboost)]


@pytest.mark.parametrize("name,read", _readers(), ids=["load", "from_xgboost"])
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_are_refused_without_reading(name, read, device):
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    with watchdog(30):
        error, peak = peak_mib(read, device)
    assert isinstance(error, ModelFormatError), error
    assert "a character device, not a regular file" in str(error) and device in str(error)
    assert peak < 5


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
@pytest.mark.parametrize("name,read", _readers(), ids=["load", "from_xgboost"])
def test_fifo_is_refused_without_blocking(tmp_path, name, read):
    fifo = tmp_path / "model.json"
    os.mkfifo(fifo)
    with watchdog(30):  # reading a FIFO without a writer would block forever
        with pytest.raises(ModelFormatError, match="FIFO"):
            read(fifo)


@pytest.mark.parametrize("name,read", _readers(), ids=["load", "from_xgboost"])
def test_directory_is_refused(tmp_path, name, read):
    with pytest.raises(ModelFormatError, match="a directory, not a regular file"):
        read(tmp_path)


@pytest.mark.parametrize("name,read", _readers(), ids=["load", "from_xgboost"])
def test_file_over_the_size_limit_is_refused_by_its_size(tmp_path, name, read):
    path = tmp_path / "big.json"
    with open(path, "wb") as f:  # sparse: 2 GiB on paper, nothing on disk
        f.truncate(2**31)
    error, peak = peak_mib(read, path)  # refused by fstat: nothing is read
    assert isinstance(error, ModelFormatError), error
    assert f"larger than the limit of {files.MAX_TEXT_BYTES} bytes" in str(error)
    assert peak < 5


@pytest.mark.parametrize("name,read", _readers(), ids=["load", "from_xgboost"])
def test_nested_empty_arrays_are_refused_before_parsing(tmp_path, monkeypatch, name, read):
    # The 100 MB of nested empty arrays cost 2.7 GB and 24 s before the error;
    # 30 MB of them (1.3 GB of lists once parsed) are refused from counts of "[" and ","
    # while only the bytes are in memory.
    n = 10_000_000
    path = tmp_path / "arrays.json"
    path.write_bytes(b"[" + b"[]," * n + b"[]]")
    size_mib = path.stat().st_size / 2**20

    def no_parse(*args, **kwargs):
        raise AssertionError("json.loads was called")

    monkeypatch.setattr(files.json, "loads", no_parse)
    error, peak = peak_mib(read, path)
    assert isinstance(error, ModelFormatError), error
    assert "MAX_PARSE_BYTES" in str(error)
    assert peak < size_mib + 10


def test_parse_cost_bounds_what_json_takes():
    # The bound must err high: measured parse memory never exceeds it.
    texts = [
        "[" + ",".join([p] * 20000) + "]"
        for p in ("[]", "{}", '{"a":0}', '"abcd"', "0.5", "300", "-1e-5", "[[0.25]]", "null")
    ]
    for text in texts:
        data = text.encode()
        tracemalloc.start()
        value = files.parse_json(data)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        del value
        assert peak <= files.parse_cost(data), text[:20]
    assert files.parse_cost("[1,2,3]") == 7 + 80 + 2 * 48


def test_deep_nesting_is_a_model_format_error(tmp_path):
    deep = b"[" * 100_000
    path = tmp_path / "deep.json"
    path.write_bytes(deep)
    for call in (
        lambda: io.loads(deep),
        lambda: io.loads(deep.decode()),
        lambda: io.load(path),
        lambda: from_xgboost(deep),
        lambda: from_xgboost(path),
    ):
        with pytest.raises(ModelFormatError, match="nested too deeply"):
            call()


def test_memory_error_while_parsing_is_a_model_format_error(monkeypatch, doc):
    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(files.json, "loads", exhausted)
    with pytest.raises(ModelFormatError, match="ran out of memory"):
        io.loads(json.dumps(doc))
    with pytest.raises(ModelFormatError, match="ran out of memory"):
        from_xgboost(json.dumps(xgb_model([xgb_stump()])).encode())


# --------------------------------------------------------------------------------------
# The XGBoost reader: one error type, the field named
# --------------------------------------------------------------------------------------


def _tree0(m):
    return m["learner"]["gradient_booster"]["model"]["trees"][0]


def _param(m):
    return m["learner"]["learner_model_param"]


# (what, edit of xgb_model([xgb_stump(), xgb_stump()]), message): each of these raised
# OverflowError, KeyError, TypeError or nothing at all before.
XGB_DAMAGE = [
    (
        "child beyond int64",
        lambda m: _tree0(m)["left_children"].__setitem__(0, 2**70),
        r"left_children\[0\]",
    ),
    (
        "num_feature beyond int64",
        lambda m: _param(m).__setitem__("num_feature", "9" * 30),
        "num_feature",
    ),
    (
        "num_nodes inf",
        lambda m: _tree0(m)["tree_param"].__setitem__("num_nodes", "inf"),
        "num_nodes",
    ),
    ("num_feature 1e3", lambda m: _param(m).__setitem__("num_feature", "1e3"), "num_feature"),
    ("num_feature 1_0", lambda m: _param(m).__setitem__("num_feature", "1_0"), "num_feature"),
    ("num_feature missing", lambda m: _param(m).pop("num_feature"), "no 'num_feature'"),
    (
        "objective name list",
        lambda m: m["learner"]["objective"].__setitem__("name", ["x"]),
        "objective.name must be a string",
    ),
    (
        "booster name dict",
        lambda m: m["learner"]["gradient_booster"].__setitem__("name", {}),
        "gradient_booster.name",
    ),
    ("tree_param string", lambda m: _tree0(m).__setitem__("tree_param", "x"), "tree_param"),
    (
        "left child 1.7",
        lambda m: _tree0(m)["left_children"].__setitem__(0, 1.7),
        r"left_children\[0\]: expected integers, got float 1.7",
    ),
    (
        "split index true",
        lambda m: _tree0(m)["split_indices"].__setitem__(0, True),
        r"split_indices\[0\]",
    ),
    ("default_left 2", lambda m: _tree0(m)["default_left"].__setitem__(0, 2), r"default_left\[0\]"),
    (
        "feature_names string",
        lambda m: m["learner"].__setitem__("feature_names", "ab"),
        "feature_names",
    ),
    (
        "feature_types string",
        lambda m: m["learner"].__setitem__("feature_types", "qc"),
        "feature_types",
    ),
    (
        "tree_info bool",
        lambda m: m["learner"]["gradient_booster"]["model"].__setitem__("tree_info", [True, 0]),
        "tree_info",
    ),
    (
        "leaf 1e39",
        lambda m: _tree0(m)["split_conditions"].__setitem__(1, 1e39),
        r"split_conditions\[1\] = 1e\+39: a leaf value must be finite in float32",
    ),
    (
        "threshold 1e39",
        lambda m: _tree0(m)["split_conditions"].__setitem__(0, 1e39),
        r"split_conditions\[0\]",
    ),
    ("base_score 1e39", lambda m: _param(m).__setitem__("base_score", "1e39"), "base_score"),
    ("base_score nan", lambda m: _param(m).__setitem__("base_score", "nan"), "base_score"),
    (
        "two 3e38 leaves",
        lambda m: [_t(m, t)["split_conditions"].__setitem__(2, 3e38) for t in (0, 1)],
        "beyond the float32 range",
    ),
    (
        "NaN cover",
        lambda m: _tree0(m)["sum_hessian"].__setitem__(0, math.nan),
        r"sum_hessian\[0\] = nan",
    ),
    (
        "negative cover",
        lambda m: _tree0(m)["sum_hessian"].__setitem__(1, -1.0),
        r"sum_hessian\[1\]",
    ),
    (
        "subnormal cover",
        lambda m: _tree0(m)["sum_hessian"].__setitem__(0, 1e-45),
        r"sum_hessian\[0\] = 1e-45 is not the sum of its children's covers",
    ),
    (
        "NaN gain",
        lambda m: _tree0(m)["loss_changes"].__setitem__(0, math.nan),
        r"loss_changes\[0\]",
    ),
]


def _t(m, t):
    return m["learner"]["gradient_booster"]["model"]["trees"][t]


@pytest.mark.parametrize("what,edit,message", XGB_DAMAGE, ids=[d[0] for d in XGB_DAMAGE])
def test_xgboost_reader_refuses_with_one_error_type(what, edit, message):
    model = xgb_model([xgb_stump(), xgb_stump()])
    edit(model)
    with pytest.raises(ModelFormatError, match=message) as info:
        from_xgboost(model)
    assert not str(info.value).startswith("malformed XGBoost model ("), info.value  # a check
    try:  # the same through the text reader (NaN as the literal XGBoost would write)
        text = json.dumps(model).encode()
    except (ValueError, OverflowError):
        return
    with pytest.raises(ModelFormatError, match=message):
        from_xgboost(text)


def test_leaves_up_to_the_float32_range_load_and_predict_finite():
    # One leaf of 3e38 (and a small one in another tree) is a valid model: the sum stays
    # in float32. Two of them would overflow (refused above).
    model = xgb_model([xgb_stump(right=3e38), xgb_stump()])
    bst = from_xgboost(model)
    margin = bst.predict(X)
    assert np.isfinite(margin).all()
    np.testing.assert_allclose(margin, [0.25 - 2.0, np.float32(3e38), 0.25 - 2.0], rtol=1e-6)
    shap = bst.predict(X, pred_contribs=True)
    assert np.isfinite(shap).all()  # float32 terms of +-2e38: rows add up to ~1e-7 of it
    np.testing.assert_allclose(shap.sum(axis=1), margin, atol=1e-6 * 3e38)


def test_xgboost_covers_that_add_up_give_finite_shap_values():
    # Covers are weights of TreeSHAP's branches: a subnormal parent under normal
    # children is refused (above); consistent tiny covers are fine.
    model = xgb_model(
        [xgb_tree([1, -1, -1], [2, -1, -1], [0, 0, 0], [0.5, -1.0, 2.0], [3e-30, 1e-30, 2e-30])]
    )
    bst = from_xgboost(model)
    shap = bst.predict(X, pred_contribs=True)
    assert np.isfinite(shap).all()
    # Closed form for one split on f0: phi_0 = v(x) - (1/3 (-1) + 2/3 (2)) = v(x) - 1.
    np.testing.assert_allclose(shap[:, 0], EXPECTED - 0.25 - 1.0, rtol=1e-6)


# --------------------------------------------------------------------------------------
# jaxboost's format: sums and covers, objective hyperparameters
# --------------------------------------------------------------------------------------


def test_jaxboost_format_leaves_that_overflow_are_refused(doc):
    d = copy.deepcopy(doc)
    d["trees"]["value"][0][2] = 3e38  # finite in float32, but with the base margin ...
    d["base_margin"] = 1e38  # ... 3e38 + 1e38 overflows
    with pytest.raises(ModelFormatError, match="beyond the float32 range"):
        io.from_dict(d)
    d["base_margin"] = 0.25
    bst = io.from_dict(d)
    np.testing.assert_allclose(bst.predict(X), [-0.75, np.float32(3e38), -0.75], rtol=1e-6)


@pytest.mark.parametrize(
    "cover,message",
    [
        ([1e-45, 1.0, 2.0], r"trees.cover\[0\]\[0\]"),  # the inf SHAP values
        ([3.0, -1.0, 4.0], r"trees.cover\[0\]\[0\]"),
        ([3.0, 1.0, 1.0], r"1.0 \+ 1.0"),
    ],
)
def test_jaxboost_format_covers_must_add_up(doc, cover, message):
    d = copy.deepcopy(doc)
    d["trees"]["cover"][0] = cover
    with pytest.raises(ModelFormatError, match=message):
        io.from_dict(d)


def test_jaxboost_format_consistent_covers_give_exact_shap(doc):
    bst = io.from_dict(copy.deepcopy(doc))
    shap = bst.predict(X, pred_contribs=True)
    np.testing.assert_allclose(shap[:, 0], EXPECTED - 0.25 - 1.0, rtol=1e-6)
    np.testing.assert_allclose(shap[:, 2], 0.25 + 1.0, rtol=1e-6)  # bias: base + E[tree]


@pytest.mark.parametrize(
    "make,error,message",
    [
        (lambda: objectives.huber(delta=-1), ValueError, "delta > 0"),
        (lambda: objectives.huber(delta="x"), TypeError, "delta to be a real number"),
        (lambda: objectives.huber(delta=math.inf), ValueError, "finite"),
        (lambda: objectives.pseudo_huber(delta=0.0), ValueError, "delta > 0"),
        (lambda: objectives.quantile(alpha=1e308), ValueError, r"alpha in \(0, 1\)"),
        (lambda: objectives.quantile(alpha=True), TypeError, "alpha"),
        (lambda: objectives.cauchy(scale=-2.0), ValueError, "scale > 0"),
        (lambda: objectives.focal(gamma=-0.5), ValueError, "gamma >= 0"),
        (lambda: objectives.tweedie(power=2.5), ValueError, r"power in \(1, 2\)"),
    ],
)
def test_objective_hyperparameters_are_checked_at_construction(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_valid_objective_hyperparameters_still_construct():
    assert objectives.huber(delta=np.float32(2.0)).hyperparameters["delta"] == 2.0
    assert objectives.quantile(alpha=0.9)(0.0, 1.0) == pytest.approx(0.1)
    assert objectives.tweedie(power=1.2) == objectives.tweedie(power=1.2)


@pytest.mark.parametrize(
    "name,params,message",
    [
        ("huber", {"delta": -1}, "delta > 0"),
        ("huber", {"delta": "x"}, "delta to be a real number"),
        ("quantile", {"alpha": 1e308}, r"alpha in \(0, 1\)"),
        ("tweedie", {"power": None}, "power"),
    ],
)
def test_objective_hyperparameters_are_checked_on_load(doc, name, params, message):
    d = copy.deepcopy(doc)
    d["objective"] = {"kind": "catalogue", "name": name, "params": params}
    with pytest.raises(ModelFormatError, match=r"objective\.params: .*" + message):
        io.loads(json.dumps(d))
    d["objective"]["params"] = {}  # the defaults load, and predict the stump's margins
    np.testing.assert_array_equal(io.from_dict(d).predict(X, output_margin=True), EXPECTED)


# --------------------------------------------------------------------------------------
# save: targets that are not regular files, temporary files of killed saves
# --------------------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_save_refuses_a_fifo(tmp_path):
    fifo = tmp_path / "model.json"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="a FIFO"):
        stump().save(fifo)
    assert os.path.exists(fifo) and not os.path.isfile(fifo)  # still the FIFO
    with pytest.raises(ValueError, match="a FIFO"):
        stump().to_xgboost_json(fifo)
    assert os.listdir(tmp_path) == ["model.json"]


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="no Unix sockets")
def test_save_refuses_a_socket(tmp_path):
    path = tmp_path / "model.json"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        with pytest.raises(ValueError, match="a socket"):
            io.save(stump(), path)
        assert not os.path.isfile(path)


def test_save_refuses_a_directory(tmp_path):
    (tmp_path / "model.json").mkdir()
    with pytest.raises(IsADirectoryError):
        io.save(stump(), tmp_path / "model.json")


def _temporaries(folder):
    return sorted(n for n in os.listdir(folder) if n.endswith(".tmp"))


@pytest.mark.skipif(files.fcntl is None, reason="no flock")
def test_next_save_removes_stale_temporaries_but_not_live_ones(tmp_path):
    path = tmp_path / "model.json"
    stale = tmp_path / ".model.json.0123456789ab.tmp"
    stale.write_bytes(b"half a model")
    live = tmp_path / ".model.json.ba9876543210.tmp"  # a save in progress holds its lock
    other = tmp_path / ".other.json.0123456789ab.tmp"  # another target's: not ours
    other.write_bytes(b"x")
    fd = os.open(live, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        files.fcntl.flock(fd, files.fcntl.LOCK_EX)
        io.save(stump(), path)
        assert _temporaries(tmp_path) == [live.name, other.name]
    finally:
        os.close(fd)  # the "save" ends (or dies): its lock is gone
    io.save(stump(), path)
    assert _temporaries(tmp_path) == [other.name]
    np.testing.assert_array_equal(io.load(path).predict(X), EXPECTED)


@pytest.mark.skipif(
    files.fcntl is None or not hasattr(signal, "SIGKILL"), reason="no flock or SIGKILL"
)
def test_kill_9_during_save_leaves_nothing_after_the_next_save(tmp_path):
    # A child process saves with fsync stalled (the moment a crash leaves the temporary
    # file behind) and is killed with SIGKILL there; the next save cleans up.
    path = tmp_path / "model.json"
    child = textwrap.dedent(f"""
        import os, sys, time
        from jaxboost.io import files
        def stall(fd):
            print("writing", flush=True)
            time.sleep(600)
        files.os.fsync = stall
        files.atomic_write({str(path)!r}, b"{{}}" * 1000)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout.readline().strip() == b"writing"
        assert len(_temporaries(tmp_path)) == 1  # the half-written file
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
    assert not path.exists() and len(_temporaries(tmp_path)) == 1
    stump().save(path)
    assert _temporaries(tmp_path) == []
    np.testing.assert_array_equal(io.load(path).predict(X), EXPECTED)


def test_parse_limits_apply_to_files_and_bytes_not_to_a_live_booster(monkeypatch, tmp_path):
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(3)
    Xt = rng.normal(size=(200, 2)).astype(np.float32)
    xb = xgb.train({"max_depth": 2}, xgb.DMatrix(Xt, label=Xt[:, 0]), 3)
    raw = bytes(xb.save_raw(raw_format="json"))
    path = tmp_path / "m.json"
    path.write_bytes(raw)
    monkeypatch.setattr(files, "MAX_PARSE_BYTES", files.parse_cost(raw) - 1)
    for source in (raw, path):  # from outside: bounded
        with pytest.raises(ModelFormatError, match="MAX_PARSE_BYTES"):
            from_xgboost(source)
    # XGBoost's own text of a model in this process is not hostile: no bound.
    np.testing.assert_allclose(from_xgboost(xb).predict(Xt), xb.predict(xgb.DMatrix(Xt)), atol=1e-5)
