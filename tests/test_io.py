"""Model files: JSON round trips, atomic saves, and rejection of damaged files."""

import copy
import json
import os

import jax.numpy as jnp
import numpy as np
import pytest

import jaxboost
import objectives
from jaxboost import io
from jaxboost.io import ModelFormatError

N, F = 120, 4
TRAIN = dict(n_rounds=4, max_depth=3, max_bin=16)


def _sq_loss(y, pred):
    """A plain callable loss, saved by name only."""
    return 0.5 * (y - pred) ** 2


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N, F)).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = np.nan
    signal = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) + np.isnan(X[:, 2])
    return X, signal.astype(np.float32)


@pytest.fixture(scope="module")
def models(data):
    X, s = data
    labels = np.digitize(s, np.quantile(s, [1 / 3, 2 / 3])).astype(np.float32)
    return {
        "squared": jaxboost.train("squared", X, s, **TRAIN),
        "logistic": jaxboost.train(objectives.logistic, X, (s > 0.3).astype(np.float32), **TRAIN),
        "huber": jaxboost.train(objectives.huber(delta=2.0), X, s, **TRAIN),
        "softmax": jaxboost.train(objectives.softmax, X, labels, **TRAIN),
        "callable": jaxboost.train(_sq_loss, X, s, **TRAIN),
    }


def _assert_same(a, b, X):
    for field in a.ensemble._fields:
        x, y = getattr(a.ensemble, field), getattr(b.ensemble, field)
        if x is None or y is None:  # cat_bits of models without categorical splits
            assert x is None and y is None, field
            continue
        assert x.dtype == y.dtype and x.shape == y.shape, field
        np.testing.assert_array_equal(x, y, err_msg=field)
    for field in ("cuts", "n_cuts", "has_missing", "n_distinct"):
        np.testing.assert_array_equal(
            getattr(a.bin_edges, field), getattr(b.bin_edges, field), err_msg=field
        )
    assert a.bin_edges.max_bin == b.bin_edges.max_bin
    assert a.params == b.params
    np.testing.assert_array_equal(np.asarray(a.base_margin), np.asarray(b.base_margin))
    assert (a.n_features, a.n_outputs, a.trees_per_round) == (
        b.n_features,
        b.n_outputs,
        b.trees_per_round,
    )
    for attr in ("best_iteration", "best_score", "history", "train_state"):
        np.testing.assert_equal(getattr(a, attr, None), getattr(b, attr, None), attr)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    np.testing.assert_array_equal(
        a.predict(X, output_margin=True), b.predict(X, output_margin=True)
    )


# --- round trips -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["squared", "logistic", "huber", "softmax"])
def test_round_trip_catalogue(models, data, tmp_path, name):
    X, _ = data
    bst = models[name]
    path = tmp_path / "model.json"
    io.save(bst, path)
    again = io.load(path)
    _assert_same(bst, again, X)
    assert again.objective == bst.objective
    # Writing the loaded model gives the same text: the format is canonical.
    assert io.dumps(again) == path.read_text()


def test_round_trip_details(models):
    assert np.isinf(models["squared"].ensemble.threshold).any()  # "inf" thresholds occur
    huber = io.loads(io.dumps(models["huber"]))
    assert huber.objective.hyperparameters["delta"] == 2.0
    soft = io.loads(io.dumps(models["softmax"]))
    assert soft.n_outputs == 3 and soft.trees_per_round == 3
    assert soft.ensemble.value.shape[1:] == (15, 3)
    assert soft.objective == objectives.softmax(n_classes=3)


def _other_loss(y, f):
    return jnp.abs(y - f)


def test_callable_loss_model_predicts_without_its_loss(models, data, tmp_path):
    """A model of a plain callable loss stores the loss's qualname: loaded without it,
    it predicts, explains and saves (XGBoost predicts custom-objective models too); only
    what evaluates the loss says to pass it. Another loss than the stored one warns."""
    X, y = data
    bst = models["callable"]
    path = tmp_path / "custom.json"
    io.save(bst, path)
    assert json.loads(path.read_text())["objective"]["qualname"].endswith("._sq_loss")
    bare = io.load(path)
    _assert_same(bst, bare, X)
    np.testing.assert_array_equal(
        bare.predict(X, pred_contribs=True), bst.predict(X, pred_contribs=True)
    )
    with pytest.raises(TypeError, match=r"without its custom loss .*_sq_loss.*objective=_sq_loss"):
        bare.objective(y[:1], y[:1])
    resaved = tmp_path / "resaved.json"
    io.save(bare, resaved)
    assert json.loads(resaved.read_text())["objective"] == json.loads(path.read_text())["objective"]
    again = io.load(resaved, objective=_sq_loss)
    assert again.objective is _sq_loss
    _assert_same(bst, again, X)
    with pytest.warns(UserWarning, match=r"custom loss .*_sq_loss.*objective=.*_other_loss"):
        io.load(path, objective=_other_loss)


def test_objective_override(models, data, tmp_path):
    """Another objective than the stored one is refused unless asked for explicitly: a
    logistic model loaded with objective="squared" used to predict margins without a
    word (issue 28, item 6)."""
    X, _ = data
    bst = models["logistic"]
    path = tmp_path / "logistic.json"
    io.save(bst, path)
    with pytest.raises(
        ValueError,
        match=r"stores the objective objectives\.logistic\(\).*"
        r"objective=objectives\.squared\(\).*"
        r"replace_objective=True",
    ):
        io.load(path, objective="squared")
    np.testing.assert_array_equal(
        io.load(path, objective="logistic").predict(X), bst.predict(X)
    )  # repeating it is fine
    margins = io.loads(io.dumps(bst), objective="squared", replace_objective=True).predict(X)
    np.testing.assert_array_equal(margins, bst.predict(X, output_margin=True))
    with pytest.raises(ValueError, match="output"):
        io.loads(io.dumps(models["softmax"]), objective=objectives.logistic, replace_objective=True)


def test_extra_attributes_round_trip(models):
    bst = io.loads(io.dumps(models["squared"]))  # a private copy to decorate
    bst.best_iteration = 2
    bst.best_score = 0.125
    bst.history = {
        "train": {"rmse": [1.0, 0.5, float("nan"), 0.25]},
        "valid": {"rmse": [1.5, 1.0, 0.75, 0.8], "mae": [1, 2, 3, 4]},
    }
    bst.train_state = {"seed": 3, "rounds": 4}
    again = io.loads(io.dumps(bst))
    assert again.best_iteration == 2 and again.best_score == 0.125
    assert again.train_state == {"seed": 3, "rounds": 4}
    assert list(again.history) == ["train", "valid"]
    np.testing.assert_array_equal(again.history["train"]["rmse"], [1.0, 0.5, np.nan, 0.25])
    assert again.history["valid"]["mae"] == [1.0, 2.0, 3.0, 4.0]


def test_undecorated_booster_defaults(models):
    bst = models["squared"][:2]
    bst.best_iteration, bst.best_score, bst.history = None, None, {}
    for state in ({}, None):
        bst.train_state = state
        d = io.to_dict(bst)
        assert d["best_iteration"] is None and d["history"] == {}
        assert d["train_state"] == state
        again = io.from_dict(d)
        assert again.best_iteration is None and again.best_score is None
        assert again.train_state == state and again.history == {}
        assert len(again) == 2


def test_empty_model(data):
    X, s = data
    bst = jaxboost.train("squared", X, s, n_rounds=0, max_depth=3, max_bin=16)
    again = io.loads(io.dumps(bst))
    assert len(again) == 0
    np.testing.assert_array_equal(again.predict(X), bst.predict(X))


def test_file_is_plain_json(models, tmp_path):
    path = tmp_path / "m.json"
    io.save(models["huber"], path)
    raw = path.read_bytes()
    d = json.loads(raw.decode("utf-8"))
    assert d["format"] == "jaxboost-model" and d["format_version"] == 1
    assert d["objective"] == {"kind": "catalogue", "name": "huber", "params": {"delta": 2.0}}
    assert b"pickle" not in raw.lower()
    assert b"NaN" not in raw and b"Infinity" not in raw
    assert set(d) == set(io.format._TOP_KEYS)
    # indent= gives the same model
    io.save(models["huber"], path, indent=1)
    assert io.dumps(io.load(path)) == raw.decode("utf-8")


# --- atomic writes -----------------------------------------------------------------------


def test_atomic_save_keeps_old_file(models, tmp_path, monkeypatch):
    path = tmp_path / "model.json"
    io.save(models["squared"], path)
    before = path.read_bytes()

    def fail(*args, **kwargs):
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk on fire"):
        io.save(models["logistic"], path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.json"]

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="disk on fire"):
        io.save(models["logistic"], tmp_path / "new.json")
    assert os.listdir(tmp_path) == ["model.json"]


def test_save_replaces_and_cleans_up(models, tmp_path):
    path = tmp_path / "model.json"
    io.save(models["squared"], path)
    io.save(models["logistic"], str(path))
    assert os.listdir(tmp_path) == ["model.json"]
    assert io.load(path).objective == objectives.logistic
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


# --- damaged and tampered files ----------------------------------------------------------


@pytest.fixture(scope="module")
def good(models):
    return io.to_dict(models["squared"])


def _split_node(d):
    is_leaf = np.array(d["trees"]["is_leaf"])
    t, i = np.argwhere(~is_leaf)[0]
    return int(t), int(i)


def _rejects(d, match=None):
    with pytest.raises(ModelFormatError, match=match):
        io.from_dict(d)
    with pytest.raises(ModelFormatError, match=match):
        io.loads(json.dumps(d))


def test_valid_dict_loads(good):
    io.from_dict(copy.deepcopy(good))


def test_feature_out_of_range(good):
    t, i = _split_node(good)
    for bad in (F, -1, 10**30):
        d = copy.deepcopy(good)
        d["trees"]["feature"][t][i] = bad
        _rejects(d, r"trees\.feature")


def test_tbin_out_of_range(good):
    t, i = _split_node(good)
    for bad in (16, -1):
        d = copy.deepcopy(good)
        d["trees"]["tbin"][t][i] = bad
        _rejects(d, r"trees\.tbin")
    # within [0, max_bin - 1] but past the feature's cuts
    d = copy.deepcopy(good)
    f = d["trees"]["feature"][t][i]
    d["bin_edges"]["cuts"][f] = d["bin_edges"]["cuts"][f][:3]
    d["trees"]["tbin"][t][i] = 5
    _rejects(d, r"trees\.tbin.*n_cuts")


def test_threshold_tampered(good):
    t, i = _split_node(good)
    d = copy.deepcopy(good)
    thr = d["trees"]["threshold"][t][i]
    assert isinstance(thr, float)
    d["trees"]["threshold"][t][i] = float(np.nextafter(np.float32(thr), np.float32(np.inf)))
    _rejects(d, r"trees\.threshold")
    for bad in (None, "inf", "nan", True):
        d["trees"]["threshold"][t][i] = bad
        _rejects(d, r"trees\.threshold")
    # a number where a leaf has null
    d = copy.deepcopy(good)
    leaf = np.argwhere(np.array(d["trees"]["is_leaf"]))[0]
    d["trees"]["threshold"][leaf[0]][leaf[1]] = 0.5
    _rejects(d, r"trees\.threshold.*null at a leaf")


def test_bin_edge_tampered(good):
    d = copy.deepcopy(good)
    d["bin_edges"]["cuts"][0][1], d["bin_edges"]["cuts"][0][2] = (
        d["bin_edges"]["cuts"][0][2],
        d["bin_edges"]["cuts"][0][1],
    )
    _rejects(d, r"bin_edges\.cuts\[0\]\[2\].*ascending")
    d = copy.deepcopy(good)
    d["bin_edges"]["cuts"][1].append(1e30)
    _rejects(d, r"trees\.threshold|bin_edges")  # grows past max_bin - 2 or moves an edge


@pytest.mark.parametrize(
    "bad",
    [None, "nan", "1.0", float("nan"), float("inf"), 1e39, 10**400, [1.0], True],
    ids=["null", "nan-str", "str", "nan", "inf", "1e39", "huge-int", "list", "bool"],
)
def test_bad_leaf_value(good, bad):
    d = copy.deepcopy(good)
    d["trees"]["value"][0][3] = bad
    with pytest.raises(ModelFormatError, match=r"trees\.value\[0\]\[3\]"):
        io.from_dict(d)


@pytest.mark.parametrize("key", io.format._TOP_KEYS)
def test_missing_key(good, key):
    d = copy.deepcopy(good)
    del d[key]
    _rejects(d, key)


@pytest.mark.parametrize(
    "section,key",
    [
        ("trees", "cover"),
        ("bin_edges", "n_distinct"),
        ("params", "max_depth"),
        ("objective", "name"),
    ],
)
def test_missing_nested_key(good, section, key):
    d = copy.deepcopy(good)
    del d[section][key]
    _rejects(d, section)


def test_unknown_key(good):
    d = copy.deepcopy(good)
    d["pickle"] = "cos\nsystem\n"
    _rejects(d, "unknown key")


def test_format_and_version(good):
    for version, match in [
        (2, "newer"),
        (0, "format_version"),
        ("1", "integer"),
        (True, "integer"),
        (1.0, "integer"),
    ]:
        d = copy.deepcopy(good)
        d["format_version"] = version
        _rejects(d, match)
    d = copy.deepcopy(good)
    d["format"] = "xgboost"
    _rejects(d, "jaxboost-model")


def test_not_a_tree(good):
    # a split node under a leaf: turn the parent of an inner split node into a leaf
    d = copy.deepcopy(good)
    is_leaf = np.array(d["trees"]["is_leaf"])
    t, i = (int(j) for j in np.argwhere(~is_leaf[:, 1:7])[0])
    i += 1
    parent = (i - 1) // 2
    d["trees"]["is_leaf"][t][parent] = True
    d["trees"]["threshold"][t][parent] = None
    _rejects(d, rf"trees\.is_leaf\[{t}\]\[{i}\].*parent node {parent} is a leaf")
    # a split in the last level has no children
    d = copy.deepcopy(good)
    d["trees"]["is_leaf"][0] = [False] * 14 + [False]
    _rejects(d, "last level")


@pytest.mark.parametrize("frac", [0.0, 0.001, 0.3, 0.5, 0.9, 0.9999])
def test_truncated_text(models, frac):
    text = io.dumps(models["squared"])
    with pytest.raises(ModelFormatError):
        io.loads(text[: int(len(text) * frac)])
    with pytest.raises(ModelFormatError):
        io.loads(text[:-1])


def test_bool_where_int(good):
    t, i = _split_node(good)
    for mutate in (
        lambda d: d.__setitem__("n_features", True),
        lambda d: d.__setitem__("n_outputs", True),
        lambda d: d.__setitem__("trees_per_round", True),
        lambda d: d["params"].__setitem__("max_depth", True),
        lambda d: d["bin_edges"].__setitem__("max_bin", True),
        lambda d: d["trees"]["feature"][t].__setitem__(i, False),
        lambda d: d["trees"]["tbin"][t].__setitem__(i, True),
        lambda d: d["trees"]["is_leaf"][t].__setitem__(i, 0),
        lambda d: d["bin_edges"]["n_distinct"].__setitem__(0, True),
    ):
        d = copy.deepcopy(good)
        mutate(d)
        _rejects(d)


def test_shapes_and_counts(good, models):
    cases = [
        lambda d: d["trees"]["value"][0].pop(),  # short row
        lambda d: d["trees"]["gain"].pop(),  # fewer trees
        lambda d: d.__setitem__("trees_per_round", 2),  # not 1 or K
        lambda d: d.__setitem__("n_outputs", 2),  # value rows not M x K
        lambda d: d.__setitem__("base_margin", [0.5]),  # list for K = 1
        lambda d: d.__setitem__("n_features", F + 1),  # cuts rows != F
        lambda d: d["bin_edges"]["has_missing"].pop(),
        lambda d: d["params"].__setitem__("max_depth", 2),  # rows are not M
        lambda d: d["params"].__setitem__("learning_rate", -1.0),  # TreeParams refuses
        lambda d: d["params"].__setitem__("eta", 0.3),  # unknown parameter
        lambda d: d["bin_edges"].__setitem__("max_bin", 32),
        lambda d: d.__setitem__("best_iteration", 4),  # only 4 rounds
        lambda d: d.__setitem__("best_score", "0.5"),
        lambda d: d.__setitem__("history", {"train": {"rmse": ["x"]}}),
        lambda d: d.__setitem__("history", {"train": [1.0]}),
        lambda d: d.__setitem__("train_state", {"seed": -1, "rounds": 4}),
        lambda d: d.__setitem__("train_state", {"rounds": 4}),
        lambda d: d.__setitem__(
            "objective", {"kind": "catalogue", "name": "os.system", "params": {}}
        ),
        lambda d: d.__setitem__(
            "objective", {"kind": "catalogue", "name": "huber", "params": {"delta": [1]}}
        ),
        lambda d: d.__setitem__(
            "objective", {"kind": "catalogue", "name": "huber", "params": {"nope": 1}}
        ),
        lambda d: d.__setitem__("objective", {"kind": "pickle", "data": "..."}),
    ]
    for n, mutate in enumerate(cases):
        d = copy.deepcopy(good)
        mutate(d)
        with pytest.raises(ModelFormatError):
            io.from_dict(d)
            pytest.fail(f"case {n} was accepted")
    soft = io.to_dict(models["softmax"])
    for mutate in (
        lambda d: d.__setitem__("base_margin", 0.0),
        lambda d: d["base_margin"].pop(),
        lambda d: d["trees"]["value"][0][0].pop(),
        lambda d: d["objective"]["params"].__setitem__("n_classes", 4),
    ):
        d = copy.deepcopy(soft)
        mutate(d)
        with pytest.raises(ModelFormatError):
            io.from_dict(d)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "null",
        "[]",
        "{}",
        "42",
        '"jaxboost-model"',
        "\ufeff{}",
        "{" * 50 + "}" * 50,
        "[" * 100_000 + "]" * 100_000,
        '{"format": "jaxboost-model", "format": "x"}',
        '{"format": NaN}',
        '{"format": Infinity}',
        "1" * 5000,
    ],
)
def test_garbage_text(text):
    with pytest.raises(ModelFormatError):
        io.loads(text)


def test_non_finite_literals_in_model(models):
    text = io.dumps(models["squared"])
    d = json.loads(text)
    v = d["trees"]["value"][0][0]
    for literal in ("NaN", "Infinity", "-Infinity", "1e999"):
        with pytest.raises(ModelFormatError):
            io.loads(text.replace(json.dumps(v), literal, 1))


def test_bytes_and_wrong_types(models, tmp_path):
    text = io.dumps(models["squared"])
    io.loads(text.encode())
    with pytest.raises(ModelFormatError, match="UTF-8"):
        io.loads(b"\xff" + text.encode())
    with pytest.raises(TypeError):
        io.loads(12)
    with pytest.raises(TypeError):
        io.to_dict("not a booster")
    path = tmp_path / "garbage.bin"
    path.write_bytes(os.urandom(256))
    with pytest.raises(ModelFormatError):
        io.load(path)


def test_size_limit(good, monkeypatch):
    monkeypatch.setattr(io.format, "MAX_NODES", 4 * 15 - 1)
    _rejects(copy.deepcopy(good), "limit")


def test_unsaveable_models(models):
    bst = io.loads(io.dumps(models["squared"]))
    bst.ensemble = bst.ensemble._replace(value=np.full_like(bst.ensemble.value, np.nan))
    with pytest.raises(ValueError, match="non-finite"):
        io.dumps(bst)
    bst = io.loads(io.dumps(models["squared"]))
    bst.train_state = {"seed": 1}
    with pytest.raises(ValueError, match="rounds"):
        io.dumps(bst)
    bst.train_state = {"seed": 1, "rounds": True}
    with pytest.raises(ValueError, match="rounds"):
        io.dumps(bst)


def test_vector_callable_loss(data):
    X, s = data

    def two_outputs(y, pred):
        return 0.5 * (y - pred[0]) ** 2 + 0.5 * (y + pred[1]) ** 2 + 0.0 * jnp.sum(pred)

    bst = jaxboost.train(two_outputs, X, s, n_outputs=2, **TRAIN)
    again = io.loads(io.dumps(bst), objective=two_outputs)
    np.testing.assert_array_equal(again.predict(X), bst.predict(X))


def test_paths_as_bytes_empty_or_json_text_get_clear_answers(models, tmp_path):
    """save(b"path") failed with a TypeError about str concatenation while load took
    bytes; save("") named a temporary file; load(json_text) said "File name too long"
    (issue 28, item 14)."""
    bst = models["squared"]
    path = os.fsencode(tmp_path / "m.json")
    bst.save(path)
    assert jaxboost.load(path).n_features == bst.n_features
    with pytest.raises(ValueError, match="path is empty; expected a file name"):
        bst.save("")
    with pytest.raises(ValueError, match=r"looks like model JSON text.*io\.loads"):
        jaxboost.load(io.dumps(bst))
    with pytest.raises(TypeError, match="must be a file path"):
        jaxboost.load(3.5)


def test_a_long_file_name_saves_and_its_stale_temporary_is_cleaned(models, tmp_path):
    """A 250-character file name failed on the temporary file's longer name (issue
    28, item 14); the temporary name now carries a digest of such a name, and the
    stale-file cleaner looks for the same."""
    from jaxboost.io import files

    bst = models["squared"]
    path = tmp_path / ("m" * 245 + ".json")
    bst.save(path)
    assert jaxboost.load(path).n_features == bst.n_features
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temporary left
    stale = tmp_path / f".{files._temporary_stem(path.name)}.{'0' * 12}.tmp"
    stale.write_bytes(b"half a model")  # as a killed save leaves it
    assert files.remove_stale_temporaries(path) == [str(stale)]
