"""Fuzzing model files: damaged text and tampered JSON raise only ``ModelFormatError``.

Two small models (logistic and 3-class softmax, depth 2, 8 bins, NaNs in the data)
are written once. Every prefix of their text must be refused with
``ModelFormatError``; random mutations of the parsed JSON and of the raw text must
either be refused with ``ModelFormatError`` or load a model that predicts, saves and
loads again without error. A mutation may well produce another valid model (a leaf
value changed, a history entry dropped): that is fine. Any other exception type, or
a loaded model that cannot predict, is a bug in ``jaxboost.io``.

The same holds for ``from_xgboost`` on structural mutations of real XGBoost models
(squared, logistic, 3-class softmax, trained here): only ``ModelFormatError`` from an
explicit check, and an accepted model predicts finite margins, probabilities and SHAP
values, and survives ``jaxboost.save`` / ``load``.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import json
import math
import os
import signal
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import jaxboost
import objectives
from jaxboost import io
from jaxboost.io import ModelFormatError

N_ROWS, N_FEATURES = 60, 4
_EXPLORE = os.environ.get("JAXBOOST_FUZZ_EXAMPLES")
FUZZ = settings(
    max_examples=int(_EXPLORE or 750),
    deadline=None,
    derandomize=not _EXPLORE,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
"""Two fuzz tests, each run for two models, of 750 examples each: 3,000 mutations in all,
the same ones every run. ``JAXBOOST_FUZZ_EXAMPLES=20000`` explores: that many fresh
random examples per test and model."""
_XGB_EXPLORE = os.environ.get("JAXBOOST_XGB_FUZZ_EXAMPLES")
XGB_FUZZ = settings(
    max_examples=int(_XGB_EXPLORE or 300),
    deadline=None,
    derandomize=not _XGB_EXPLORE,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
"""The ``from_xgboost`` fuzz: 300 mutations over three XGBoost models, the same ones
every run; ``JAXBOOST_XGB_FUZZ_EXAMPLES=20000`` explores that many fresh ones."""

F32_MAX = float(np.finfo(np.float32).max)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(N_ROWS, N_FEATURES)).astype(np.float32)
    X[rng.random(X.shape) < 0.15] = np.nan
    return X


@pytest.fixture(scope="module")
def texts(data):
    X = data
    x0, x2 = np.nan_to_num(X[:, 0]), np.nan_to_num(X[:, 2])
    binary = ((x0 + np.isnan(X[:, 1])) > 0.2).astype(np.float32)
    classes = ((x0 > 0).astype(np.float32) + (x2 > 0.5)).astype(np.float32)
    small = dict(max_depth=2, max_bin=8, verbose=False)
    named = {}
    if "feature_names" in inspect.signature(jaxboost.train).parameters:
        named["feature_names"] = ["alpha", "beta", "gamma", "delta"]  # optional key
    logistic = jaxboost.train(
        objectives.logistic,
        X,
        binary,
        n_rounds=3,
        eval_set={"train": (X, binary)},
        **small,
        **named,
    )
    softmax = jaxboost.train(objectives.softmax, X, classes, n_rounds=2, **small)
    out = {"logistic": io.dumps(logistic), "softmax": io.dumps(softmax)}
    for text in out.values():  # small enough to try every prefix quickly
        assert len(text) < 6000
    return out


@pytest.fixture(scope="module")
def X_small(data):
    """Four rows (one all-NaN) to predict on: enough to walk every branch kind."""
    X = data[:4].copy()
    X[3] = np.nan
    return X


# --------------------------------------------------------------------------------------
# The property every input must satisfy
# --------------------------------------------------------------------------------------


@contextlib.contextmanager
def watchdog(seconds=60):
    """Fail (instead of hanging) when the block runs longer than ``seconds``."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def expire(signum, frame):
        raise TimeoutError(f"a load or predict took longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _margin_bound(bst) -> float:
    """An upper bound of ``|margin|``: base margin plus the largest leaf of every tree."""
    value = np.abs(np.asarray(bst.ensemble.value, np.float64))
    per_tree = value.reshape(value.shape[0], -1).max(axis=1) if value.size else value
    return float(np.max(np.abs(np.asarray(bst.base_margin, np.float64))) + per_tree.sum())


def check_load(load, X):
    """``load()`` raises ModelFormatError, or returns a Booster that works.

    Returns ``"rejected"`` or ``"loaded"``; any other exception propagates and fails
    the test.
    """
    with watchdog():
        try:
            bst = load()
        except ModelFormatError as e:
            # Every refusal should come from an explicit check naming a key, not from
            # from_dict's safety net, which wraps stray TypeErrors and the like.
            assert not str(e).startswith("invalid model ("), e
            return "rejected"
        assert isinstance(bst, jaxboost.Booster)
        K = bst.n_outputs
        shape = (X.shape[0],) if K == 1 else (X.shape[0], K)
        margin = bst.predict(X, output_margin=True)
        pred = bst.predict(X)
        assert margin.shape == shape and pred.shape == shape
        assert bst.predict_leaf(X).shape == (X.shape[0], bst.ensemble.n_trees)
        repr(bst)
        bst._repr_html_()
        if isinstance(bst.objective, objectives.Objective):  # a usable loss, e.g. not
            y0 = np.float32(0.0)  # softmax(n_classes="3")
            f0 = np.zeros(K, np.float32) if K > 1 else np.float32(0.0)
            assert np.isfinite(float(bst.objective(y0, f0)))
        # The reader refuses leaf values whose sums could overflow float32.
        assert _margin_bound(bst) <= F32_MAX
        assert np.isfinite(margin).all(), margin
        if _margin_bound(bst) < 80:  # no link (even exp) can overflow
            assert np.isfinite(pred).all(), pred
        # What loads also saves, and the saved text loads to the same predictions.
        again = io.loads(io.dumps(bst))
        np.testing.assert_array_equal(again.predict(X, output_margin=True), margin)
    return "loaded"


def test_model_format_error_is_a_value_error():
    assert issubclass(ModelFormatError, ValueError)
    assert isinstance(ModelFormatError("trees.feature[0][0]: expected ..."), ValueError)


# --------------------------------------------------------------------------------------
# Truncation at every offset
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["logistic", "softmax"])
def test_every_truncation_is_refused(texts, name):
    text = texts[name]
    data = text.encode("utf-8")
    with watchdog():
        for i in range(len(text)):
            with pytest.raises(ModelFormatError):
                io.loads(text[:i])
            pytest.raises(ModelFormatError, io.loads, data[:i])
    assert io.loads(text).n_rounds >= 2  # the whole text still loads


def test_every_truncation_of_a_saved_file_is_refused(texts, tmp_path):
    path = tmp_path / "model.json"
    data = texts["logistic"].encode("utf-8")
    for i in range(0, len(data), 97):  # the file path reads bytes; a sample suffices
        path.write_bytes(data[:i])
        with pytest.raises(ModelFormatError):
            io.load(path)


# --------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------

_SPECIAL_INTS = [
    0,
    1,
    -1,
    2,
    3,
    4,
    6,
    7,
    8,
    16,
    17,
    255,
    256,
    2**31 - 1,
    2**31,
    2**53 + 1,
    2**63 - 1,
    2**63,
    -(2**63) - 1,
    2**64,
    10**30,
    -(10**30),
    10**400,
]
_SPECIAL_FLOATS = [
    0.0,
    -0.0,
    0.5,
    -0.5,
    1e-45,
    1e-40,
    3.4e38,
    3.5e38,
    -3.5e38,
    1e308,
    F32_MAX,
    math.nan,
    math.inf,
    -math.inf,
]
_SPECIAL_STRINGS = [
    "",
    "inf",
    "-inf",
    "nan",
    "NaN",
    "Infinity",
    "-Infinity",
    "null",
    "0",
    "3",
    "1e999",
    "logistic",
    "softmax",
    "catalogue",
    "callable",
    "jaxboost-model",
    "\x00",
    "\ud800",
    "é",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from(_SPECIAL_INTS),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(_SPECIAL_FLOATS),
    st.text(max_size=8),
    st.sampled_from(_SPECIAL_STRINGS),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)

_KEY_NAMES = sorted(
    set(io.format._TOP_KEYS)
    | {
        "kind",
        "name",
        "params",
        "qualname",
        "max_depth",
        "max_bin",
        "learning_rate",
        "cuts",
        "has_missing",
        "n_distinct",
        "feature",
        "tbin",
        "threshold",
        "default_left",
        "is_leaf",
        "value",
        "gain",
        "cover",
        "seed",
        "rounds",
        "n_classes",
        "delta",
        "feature_names",
        "train",
        "logloss",
        "__class__",
        "",
    }
)


def _paths(doc):
    """Every path (tuple of keys and indices) into ``doc``, the root ``()`` included."""
    out = [()]
    stack = [((), doc)]
    while stack:
        path, node = stack.pop()
        items = (
            node.items()
            if isinstance(node, dict)
            else enumerate(node)
            if isinstance(node, list)
            else ()
        )
        for k, v in items:
            out.append(path + (k,))
            stack.append((path + (k,), v))
    return out


def _get(doc, path):
    for k in path:
        doc = doc[k]
    return doc


def _set(doc, path, value):
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


def _nearby(v, draw):
    """A value of about the same kind as ``v``: the changes a careless edit makes."""
    if isinstance(v, bool):
        return draw(st.sampled_from([not v, int(v), None, str(v).lower()]))
    if isinstance(v, int):
        wide = float(v) if abs(v) < 2**1000 else 0.5
        return draw(
            st.sampled_from([v + 1, v - 1, -v, 2 * v, v + 2**31, wide, str(v), [v], None, True])
        )
    if isinstance(v, float):
        if not math.isfinite(v):
            return draw(st.sampled_from([0.0, 1.0, "inf", "-inf", None, -v]))
        with np.errstate(over="ignore"):
            up32 = float(np.nextafter(np.float32(v), np.float32(np.inf)))
        return draw(
            st.sampled_from(
                [
                    -v,
                    2 * v,
                    v / 3,
                    v + 1.0,
                    up32,
                    float(np.nextafter(v, math.inf)),
                    v * 1e38,
                    round(v),
                    "inf",
                    "-inf",
                    None,
                    math.nan,
                    str(v),
                ]
            )
        )
    if isinstance(v, str):
        edits = [v + "x", v[:-1], v.upper(), "", None, 0]
        if v.strip("[]").replace("E", "").replace(".", "").replace("-", "").isdigit():
            # a number as XGBoost writes it ("5", "[5E-1]"): extreme and malformed ones
            edits += [
                "10000000",
                "4000000",
                "99999999999999999999",
                "-1",
                "1.7",
                "inf",
                "nan",
                "1e39",
                "[1E39]",
                "[" + v.strip("[]") + "," + v.strip("[]") + "]",
                "1_0",
                " " + v,
            ]
        return draw(st.sampled_from(edits))
    if isinstance(v, list):
        return draw(st.sampled_from([v[:-1], v + v[-1:], v[::-1], [v], [], v * 2, v[1:]]))
    if isinstance(v, dict):
        return draw(st.sampled_from([{}, dict(list(v.items())[:-1]), [v], None]))
    return draw(json_values)


def _walks(doc):
    """Paths by a random walk from the root: unlike a uniform choice among all paths
    (mostly tree entries), this reaches the small sections (params, objective, ...)."""

    @st.composite
    def walk(draw):
        path, node = (), doc
        while isinstance(node, (dict, list)) and node and draw(st.integers(0, 9)) >= 3:
            keys = list(node) if isinstance(node, dict) else range(len(node))
            key = draw(st.sampled_from(keys))
            path, node = path + (key,), node[key]
        return path

    return walk()


OPERATIONS = ("replace", "nearby", "delete", "add_key", "swap", "resize", "transplant")


@st.composite
def mutated_docs(draw, base, key_names=None):
    """``base`` (a parsed model) after one to three random edits (``add_key`` adds one of
    ``key_names``, default jaxboost's keys, or a random one)."""
    key_names = _KEY_NAMES if key_names is None else key_names
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths) | _walks(doc))
        node = _get(doc, path)
        op = draw(st.sampled_from(OPERATIONS))
        if op == "replace":
            doc = _set(doc, path, draw(json_values))
        elif op == "nearby":
            doc = _set(doc, path, _nearby(node, draw))
        elif op == "delete" and path:
            del _get(doc, path[:-1])[path[-1]]
        elif op == "add_key" and isinstance(node, dict):
            key = draw(st.sampled_from(key_names) | st.text(max_size=5))
            node[key] = draw(json_values)
        elif op == "swap" and isinstance(node, list) and len(node) >= 2:
            i = draw(st.integers(0, len(node) - 1))
            j = draw(st.integers(0, len(node) - 1))
            node[i], node[j] = node[j], node[i]
        elif op == "resize" and isinstance(node, list):
            if node and draw(st.booleans()):
                del node[draw(st.integers(0, len(node) - 1))]
            else:
                node.insert(
                    draw(st.integers(0, len(node))),
                    copy.deepcopy(draw(st.sampled_from(node))) if node else draw(json_values),
                )
        elif op == "transplant":  # a value from elsewhere in the model: plausible types
            other = copy.deepcopy(_get(doc, draw(st.sampled_from(paths))))
            doc = _set(doc, path, other)
        else:  # the operation does not apply here: replace instead
            doc = _set(doc, path, draw(json_values))
        if not isinstance(doc, (dict, list)):
            break
    return doc


def _encode(value, dup_at=None, dup_value=None):
    """JSON text of ``value``; the object at path ``dup_at`` repeats its first key."""

    def enc(v, path):
        if isinstance(v, dict):
            parts = [f"{json.dumps(k)}:{enc(x, path + (k,))}" for k, x in v.items()]
            if path == dup_at and v:
                first = next(iter(v))
                parts.append(f"{json.dumps(first)}:{json.dumps(dup_value)}")
            return "{" + ",".join(parts) + "}"
        if isinstance(v, list):
            return "[" + ",".join(enc(x, path + (i,)) for i, x in enumerate(v)) + "]"
        return json.dumps(v)  # NaN / Infinity become the non-standard literals

    return enc(value, ())


# --------------------------------------------------------------------------------------
# Mutations of the parsed JSON
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["logistic", "softmax"])
@FUZZ
@given(data=st.data())
def test_fuzz_parsed(texts, X_small, name, data):
    base = json.loads(texts[name])
    doc = data.draw(mutated_docs(base), label="doc")
    # from_dict sees the Python values as they are (NaN floats, 10**400, ...)
    check_load(lambda: io.from_dict(copy.deepcopy(doc)), X_small)
    # loads sees them as text: NaN and Infinity become literals it must refuse
    try:
        text = json.dumps(doc)
    except (ValueError, OverflowError):  # e.g. 10**400 beyond int -> str digit limits
        return
    check_load(lambda: io.loads(text), X_small)


# --------------------------------------------------------------------------------------
# Mutations of the raw text
# --------------------------------------------------------------------------------------

TEXT_OPERATIONS = (
    "flip_char",
    "flip_byte",
    "insert",
    "delete",
    "duplicate_key",
    "splice",
    "swap_chars",
)
_JSON_CHARS = '{}[]:,"0123456789.-+eE \\tnulfasr'


@st.composite
def mutated_texts(draw, text):
    """``text`` (str) or its UTF-8 bytes after one to three raw edits."""
    out = text
    as_bytes = False
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(TEXT_OPERATIONS))
        n = len(out)
        i = draw(st.integers(0, max(n - 1, 0)))
        if op == "flip_char":
            c = draw(st.sampled_from(_JSON_CHARS) | st.characters())
            c = c.encode("utf-8", "surrogatepass") if as_bytes else c
            out = out[:i] + c + out[i + 1 :]
        elif op == "flip_byte":
            raw = bytearray(out if as_bytes else out.encode("utf-8", "surrogatepass"))
            if raw:
                j = min(i, len(raw) - 1)
                raw[j] ^= 1 << draw(st.integers(0, 7))
            out, as_bytes = bytes(raw), True
        elif op == "insert":
            piece = draw(st.text(_JSON_CHARS, min_size=1, max_size=6) | st.text(max_size=4))
            piece = piece.encode("utf-8", "surrogatepass") if as_bytes else piece
            out = out[:i] + piece + out[i:]
        elif op == "delete":
            out = out[:i] + out[i + draw(st.integers(1, 20)) :]
        elif op == "swap_chars" and n >= 2:
            j = draw(st.integers(0, n - 1))
            a, b = sorted((i, j))
            out = out[:a] + out[b : b + 1] + out[a + 1 : b] + out[a : a + 1] + out[b + 1 :]
        elif op == "splice":  # a slice of the text copied elsewhere
            j = draw(st.integers(0, n))
            out = out[:i] + out[j : j + draw(st.integers(1, 40))] + out[i:]
        else:  # duplicate_key (only on well-formed text), else delete one character
            try:
                doc = json.loads(out)
            except (ValueError, TypeError):
                out = out[:i] + out[i + 1 :]
                continue
            objs = [p for p in _paths(doc) if isinstance(_get(doc, p), dict) and _get(doc, p)]
            if not objs:
                continue
            at = draw(st.sampled_from(objs))
            first = next(iter(_get(doc, at)))
            same = draw(st.booleans())  # the same value again, or another one
            dup = _get(doc, at)[first] if same else draw(json_values)
            try:
                out = _encode(doc, at, dup)
            except (ValueError, OverflowError):
                continue
            if as_bytes:
                out = out.encode("utf-8")
    return out


@pytest.mark.parametrize("name", ["logistic", "softmax"])
@FUZZ
@given(data=st.data())
def test_fuzz_text(texts, X_small, name, data):
    text = data.draw(mutated_texts(texts[name]), label="text")
    check_load(lambda: io.loads(text), X_small)


# --------------------------------------------------------------------------------------
# Regressions found by the fuzzer, and hand-picked edits it reaches only by luck
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_classes", ["3", 3.0, 3.7, True, [3], "three"])
def test_softmax_n_classes_must_be_an_integer(texts, n_classes):
    doc = json.loads(texts["softmax"])
    doc["objective"]["params"]["n_classes"] = n_classes
    with pytest.raises(ModelFormatError, match="n_classes"):
        io.from_dict(doc)


def test_duplicate_key_with_the_same_value_is_refused(texts):
    doc = json.loads(texts["logistic"])
    for at in [(), ("params",), ("trees",), ("bin_edges",), ("history", "train")]:
        with pytest.raises(ModelFormatError, match="duplicate key"):
            io.loads(_encode(doc, at, next(iter(_get(doc, at).values()))))


def test_valid_edits_load(texts, X_small):
    """Edits that keep the model valid load and change predictions accordingly."""
    doc = json.loads(texts["logistic"])
    before = io.from_dict(copy.deepcopy(doc)).predict(X_small, output_margin=True)
    doc["base_margin"] = doc["base_margin"] + 1.0
    doc["history"] = {}
    doc["best_iteration"], doc["best_score"] = 1, 0.25
    bst = io.from_dict(doc)
    np.testing.assert_allclose(bst.predict(X_small, output_margin=True), before + 1.0, rtol=1e-6)
    assert check_load(lambda: io.from_dict(doc), X_small) == "loaded"


# --------------------------------------------------------------------------------------
# from_xgboost: structural mutations of real XGBoost models
# --------------------------------------------------------------------------------------

_XGB_KEY_NAMES = sorted(
    {
        "learner",
        "gradient_booster",
        "model",
        "trees",
        "tree_info",
        "name",
        "objective",
        "learner_model_param",
        "num_class",
        "num_feature",
        "num_target",
        "base_score",
        "feature_names",
        "feature_types",
        "tree_param",
        "num_nodes",
        "size_leaf_vector",
        "left_children",
        "right_children",
        "split_indices",
        "split_conditions",
        "default_left",
        "loss_changes",
        "sum_hessian",
        "base_weights",
        "split_type",
        "categories_nodes",
        "iteration_indptr",
        "gbtree_model_param",
        "",
    }
)


@pytest.fixture(scope="module")
def xgb_docs(data):
    """Three real XGBoost models (parsed JSON) of the fuzz data, NaNs included."""
    xgb = pytest.importorskip("xgboost")
    X = data
    x0, x2 = np.nan_to_num(X[:, 0]), np.nan_to_num(X[:, 2])
    labels = {
        "reg:squarederror": x0 + 0.5 * x2,
        "binary:logistic": ((x0 + np.isnan(X[:, 1])) > 0.2).astype(np.float32),
        "multi:softprob": ((x0 > 0).astype(np.float32) + (x2 > 0.5)),
    }
    docs = {}
    for objective, y in labels.items():
        params = {
            "objective": objective,
            "max_depth": 3,
            "eta": 0.5,
            "seed": 0,
            "min_child_weight": 0.5,
        }
        if objective == "multi:softprob":
            params["num_class"] = 3
        xb = xgb.train(params, xgb.DMatrix(X, label=y, missing=np.nan), 3)
        docs[objective] = json.loads(bytes(xb.save_raw(raw_format="json")))
    return docs


def check_import(source, X):
    """``from_xgboost(source)`` raises ModelFormatError from an explicit check, or
    returns a Booster whose predictions and SHAP values are finite and that saves and
    loads to the same margins. Returns ``"rejected"`` or ``"loaded"``."""
    with watchdog():
        try:
            bst = io.from_xgboost(source)
        except ModelFormatError as e:
            assert not str(e).startswith("malformed XGBoost model ("), e  # the safety net
            return "rejected"
        assert isinstance(bst, jaxboost.Booster)
        K, F = bst.n_outputs, bst.n_features
        if F != X.shape[1]:  # a valid edit of num_feature: as many columns, NaN-padded
            wide = np.full((X.shape[0], F), np.nan, np.float32)
            wide[:, : min(F, X.shape[1])] = X[:, :F]
            X = wide
        margin = bst.predict(X, output_margin=True)
        pred = bst.predict(X)
        assert margin.shape == ((X.shape[0],) if K == 1 else (X.shape[0], K))
        assert np.isfinite(margin).all(), margin
        assert np.isfinite(pred).all(), pred
        shap = bst.predict(X, pred_contribs=True)
        assert np.isfinite(shap).all(), shap
        again = io.loads(io.dumps(bst))
        np.testing.assert_array_equal(again.predict(X, output_margin=True), margin)
    return "loaded"


@XGB_FUZZ
@given(data=st.data())
def test_fuzz_from_xgboost(xgb_docs, X_small, data):
    name = data.draw(st.sampled_from(sorted(xgb_docs)), label="model")
    doc = data.draw(mutated_docs(xgb_docs[name], _XGB_KEY_NAMES), label="doc")
    # the dict as it is (NaN floats, 10**400, ...), then as JSON text (NaN literals)
    if isinstance(doc, dict):
        event(f"from_xgboost(dict): {check_import(copy.deepcopy(doc), X_small)}")
    else:  # a root that is no dict is an input of another kind (a str would be a path)
        with pytest.raises(TypeError, match="from_xgboost reads"):
            io.from_xgboost(doc if not isinstance(doc, str) else [doc])
    try:
        text = json.dumps(doc).encode()
    except (ValueError, OverflowError):
        return
    event(f"from_xgboost(bytes): {check_import(text, X_small)}")


def test_unmutated_xgboost_models_import(xgb_docs, X_small):
    for doc in xgb_docs.values():
        assert check_import(copy.deepcopy(doc), X_small) == "loaded"
