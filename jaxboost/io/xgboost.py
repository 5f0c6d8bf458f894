"""XGBoost interop: export a ``Booster`` as an XGBoost JSON model, import one back.

``to_xgboost_json(booster)`` writes the model in the JSON schema XGBoost 3.x reads with
``xgboost.Booster().load_model(path)``; ``from_xgboost(model)`` reads such a model (a
path, the parsed dict, raw JSON bytes, or a live ``xgboost.Booster`` / scikit-learn
estimator) into a ``jaxboost.Booster``. Both directions cover gradient-boosted trees
(``gbtree``) with numeric splits and one output per tree, for the objectives

===================  =====================  ==============================================
jaxboost             XGBoost                base score (``learner_model_param``)
===================  =====================  ==============================================
``squared``          ``reg:squarederror``   the base margin itself
``logistic``         ``binary:logistic``    ``sigmoid(base margin)``, a probability
``softmax`` (K)      ``multi:softprob``     the K base margins (a vector)
===================  =====================  ==============================================

(import also accepts ``reg:logistic`` and ``multi:softmax``, read as ``logistic`` and
``softmax``: jaxboost's softmax predicts probabilities, as ``multi:softprob`` does).
XGBoost keeps a logistic base score as a float32 probability and takes its logit in
float32, clamped to ``[1e-6, 1 - 1e-6]``; on export, whatever that logit misses of the
base margin by more than 1e-6 (large ``|margin|``) is added to the first tree's leaves.

Both libraries send a present value ``x`` left when ``x < threshold`` and a missing one
to the node's default side, and both accumulate float32 margins tree by tree, so the two
predict the same numbers up to float32 rounding of the sums.

Conversions of the trees:

* export compacts each heap-layout tree (node ``i`` has children ``2 i + 1`` and
  ``2 i + 2``) into XGBoost's node arrays in breadth-first order; a leaf carries its
  value (learning rate applied) in ``split_conditions`` and ``base_weights``; gains
  become ``loss_changes`` and covers (sums of hessians) ``sum_hessian``;
* import lays each tree out in a heap of depth ``max_depth`` = the deepest tree, with
  the thresholds taken from ``split_conditions``. The bin edges of the imported model
  are the sorted distinct thresholds of each feature (at most ``max_bin - 2 = 254``),
  so ``tbin`` is consistent with ``threshold`` and the model can be saved with
  ``jaxboost.save``. A feature with more distinct thresholds than that keeps 254 of
  them as bin edges; the other splits get ``tbin = 0`` (prediction, which reads only
  ``threshold``, is unaffected, but such a model cannot be saved nor continued with
  ``train(init_model=...)``).

>>> import numpy as np, jaxboost
>>> X = np.random.default_rng(0).normal(size=(64, 3)).astype(np.float32)
>>> bst = jaxboost.train("squared", X, X[:, 0], n_rounds=3, max_depth=2)
>>> model = to_xgboost_json(bst)
>>> model["learner"]["objective"]["name"]
'reg:squarederror'
>>> back = from_xgboost(model)
>>> bool(np.allclose(back.predict(X), bst.predict(X), atol=1e-6))
True
"""

from __future__ import annotations

import json
import math
import os
import warnings

import numpy as np

import objectives

from ..booster import Booster, register_writer
from ..engine.autodiff import loss_name
from ..engine.binning import BinEdges
from ..engine.tree import Ensemble
from ..errors import ModelFormatError
from ..params import TreeParams
from .files import atomic_write, parse_json, read_bytes

_EXPORTS = {"squared": "reg:squarederror", "logistic": "binary:logistic",
            "softmax": "multi:softprob"}
_IMPORTS = {"reg:squarederror": "squared", "reg:linear": "squared",
            "binary:logistic": "logistic", "reg:logistic": "logistic",
            "multi:softprob": "softmax", "multi:softmax": "softmax"}
_NO_PARENT = 2147483647  # XGBoost's parent of the root
_MAX_CUTS = 254  # cuts per feature of a BinEdges with max_bin = 256
# A logistic base score is a float32 probability; when its logit misses the base margin
# by more than this, the rest is added to the first tree's leaves.
_BASE_TOLERANCE = 1e-6


# A plain loss trained with link= exports as the catalogue entry of the same link
# (XGBoost's predictions depend only on the trees, the base score and the link).
_LINK_EXPORTS = {"identity": "squared", "sigmoid": "logistic", "softmax": "softmax"}


def _export_name(obj) -> str | None:
    """The catalogue entry whose XGBoost objective the model exports as, or None."""
    if isinstance(obj, objectives.LinkedLoss):
        return _LINK_EXPORTS.get(objectives.link_name(obj.link))
    return obj.name if isinstance(obj, objectives.Objective) else None


def _unsupported_export(booster) -> str | None:
    obj = booster.objective
    name = _export_name(obj)
    if name not in _EXPORTS:
        if isinstance(obj, objectives.LinkedLoss):
            from objectives._link import link_label

            what = (f"the plain loss {loss_name(obj)} with link "
                    f"{link_label(obj.link)!r}, which XGBoost's exported objectives do not "
                    f"have (a plain loss exports with link 'identity', 'sigmoid' or "
                    f"'softmax')")
        elif isinstance(obj, objectives.Objective):
            what = f"objectives.{obj.name}"
        else:
            what = (f"the plain loss {loss_name(obj)} without a link (train it with "
                    f"link='identity', 'sigmoid' or 'softmax' to export it)")
        return (f"to_xgboost_json exports models trained with objectives.squared, "
                f"objectives.logistic or objectives.softmax (XGBoost's reg:squarederror, "
                f"binary:logistic, multi:softprob), or a plain loss with the same link; "
                f"this model was trained with {what}")
    K = booster.n_outputs
    if name == "softmax" and K > 1 and booster.trees_per_round != K:
        return ("to_xgboost_json exports softmax models with one tree per class per round "
                "(multi_strategy='one_output_per_tree'); this model has vector-leaf trees "
                "(multi_strategy='multi_output_tree'), which this exporter does not "
                "write")
    if name != "softmax" and K != 1:
        return f"a {name} model must have one output, this one has {K}"
    return None


def _float(v) -> float:
    """A float32 value as the Python float JSON writes (``Infinity`` for inf)."""
    return float(np.float32(v))


def _base_score_text(values) -> str:
    # XGBoost 3.x writes a vector, e.g. "[5E-1]"; shortest float32 round-trip digits.
    parts = [np.format_float_scientific(np.float32(v), unique=True, trim="-").upper()
             for v in values]
    return "[" + ",".join(parts) + "]"


def _logistic_base(margin: float):
    """``(base_score, residual)``: the float32 probability XGBoost stores for a logistic
    base margin, and what XGBoost's margin of it misses (to be added to the trees).

    XGBoost turns the score back into a margin in float32, ``-log(1 / p - 1)``, with
    ``p`` clamped to ``[1e-6, 1 - 1e-6]``; beyond ``|margin| = 13`` the score is 0.5
    (margin 0) and the whole margin goes to the trees.
    """
    if not abs(margin) <= 13.0:
        return np.float32(0.5), margin
    p = np.float32(1.0 / (1.0 + math.exp(-margin)))
    return p, margin - _xgb_logit(p)


def _xgb_logit(p) -> float:
    """The margin XGBoost gives a logistic base score ``p`` (float32 arithmetic)."""
    p = np.clip(np.float32(p), np.float32(1e-6), np.float32(1 - 1e-6))
    one = np.float32(1.0)
    return float(-np.log(one / p - one))


def _compact_tree(t, ens, column, offset, n_features, tree_id):
    """One heap tree as XGBoost's node arrays (breadth-first node ids)."""
    is_leaf = ens.is_leaf[t]
    order = [0]  # heap indices in breadth-first order
    i = 0
    while i < len(order):
        h = order[i]
        if not is_leaf[h]:
            order += [2 * h + 1, 2 * h + 2]
        i += 1
    new_id = {h: k for k, h in enumerate(order)}
    n = len(order)
    value = ens.value[t] if column is None else ens.value[t][:, column]
    left, right, parents = [-1] * n, [-1] * n, [_NO_PARENT] * n
    split_indices, default_left = [0] * n, [0] * n
    conditions, weights, gains, covers = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
    for k, h in enumerate(order):
        weights[k] = _float(value[h] + offset)
        covers[k] = _float(ens.cover[t][h])
        if is_leaf[h]:
            conditions[k] = weights[k]
            continue
        a, b = new_id[2 * h + 1], new_id[2 * h + 2]
        left[k], right[k] = a, b
        parents[a] = parents[b] = k
        split_indices[k] = int(ens.feature[t][h])
        default_left[k] = int(bool(ens.default_left[t][h]))
        conditions[k] = _float(ens.threshold[t][h])
        gains[k] = _float(ens.gain[t][h])
        if math.isnan(conditions[k]):
            raise ValueError(f"tree {t} has a NaN threshold at split node {h}")
    return {
        "base_weights": weights, "categories": [], "categories_nodes": [],
        "categories_segments": [], "categories_sizes": [], "default_left": default_left,
        "id": tree_id, "left_children": left, "loss_changes": gains, "parents": parents,
        "right_children": right, "split_conditions": conditions,
        "split_indices": split_indices, "split_type": [0] * n, "sum_hessian": covers,
        "tree_param": {"num_deleted": "0", "num_feature": str(n_features),
                       "num_nodes": str(n), "size_leaf_vector": "1"},
    }


def to_xgboost_json(booster: Booster, path=None) -> dict:
    """The model as an XGBoost JSON model (a dict), also written to ``path`` if given.

    ``xgboost.Booster().load_model(path)`` loads it (XGBoost >= 3.0, which reads a
    vector base score for multi-class models); its ``predict(DMatrix(X))`` and
    ``predict(..., output_margin=True)`` equal ``booster.predict(X)`` and
    ``booster.predict(X, output_margin=True)`` up to float32 rounding (about 1e-6).

    Args:
      booster: a model trained with ``objectives.squared``, ``objectives.logistic`` or
        ``objectives.softmax`` (one tree per class per round), or with a plain loss and
        ``link="identity"``, ``"sigmoid"`` or ``"softmax"``: exported as that entry
        (XGBoost's prediction depends only on the trees, the base score and the link;
        continuing training in XGBoost would use its own loss, not the plain one).
      path: optional file to write (UTF-8 JSON; give it a ``.json`` suffix, which is how
        XGBoost recognises the format).

    Returns:
      The XGBoost model as a JSON-ready dict.

    Raises:
      ValueError: other objectives (plain JAX losses without a link or with another
        link included: XGBoost would not know their link), or softmax models with
        vector-leaf trees.
    """
    problem = _unsupported_export(booster)
    if problem:
        raise ValueError(problem)
    name = _export_name(booster.objective)
    ens = booster.ensemble.to_numpy()
    K, T, F = booster.n_outputs, booster.ensemble.n_trees, booster.n_features
    offset = 0.0  # added to the first tree's leaves
    if name == "softmax":
        base_score = _base_score_text(np.asarray(booster.base_margin, np.float32))
    elif name == "logistic":
        p, residual = _logistic_base(float(booster.base_margin))
        base_score = _base_score_text([p])
        if abs(residual) > _BASE_TOLERANCE:
            offset = residual
    else:
        base_score = _base_score_text([booster.base_margin])
    trees, tree_info = [], []
    for t in range(T):
        column = (t % K) if K > 1 else None
        trees.append(_compact_tree(t, ens, column, offset if t == 0 else 0.0, F, t))
        tree_info.append(t % K if K > 1 else 0)
    if offset and T == 0:  # no tree to carry the residual: a one-leaf tree does
        stump = Ensemble(*(np.zeros((1, 1), a.dtype) for a in ens))._replace(
            is_leaf=np.ones((1, 1), bool))
        trees.append(_compact_tree(0, stump, None, offset, F, 0))
        tree_info.append(0)
    per_round = max(booster.trees_per_round, 1)
    indptr = list(range(0, len(trees) + 1, per_round))
    if indptr[-1] != len(trees):
        indptr.append(len(trees))
    objective = {"name": _EXPORTS[name]}
    if name == "softmax":
        objective["softmax_multiclass_param"] = {"num_class": str(K)}
    else:
        objective["reg_loss_param"] = {"scale_pos_weight": "1"}
    names = getattr(booster, "feature_names", None)
    model = {
        "learner": {
            "attributes": {},
            "feature_names": list(names) if names else [],
            "feature_types": [],
            "gradient_booster": {
                "model": {
                    "cats": {"enc": [], "feature_segments": [], "sorted_idx": []},
                    "gbtree_model_param": {"num_parallel_tree": "1",
                                           "num_trees": str(len(trees))},
                    "iteration_indptr": indptr,
                    "tree_info": tree_info,
                    "trees": trees,
                },
                "name": "gbtree",
            },
            "learner_model_param": {
                "base_score": base_score, "boost_from_average": "1",
                "num_class": str(K if name == "softmax" else 0),
                "num_feature": str(F), "num_target": "1",
            },
            "objective": objective,
        },
        "version": [3, 2, 0],
    }
    if path is not None:
        atomic_write(path, json.dumps(model).encode("utf-8"))
    return model


# --- import -------------------------------------------------------------------------

def _load(source) -> dict:
    """The parsed model, read by ``files`` as jaxboost's own format is (bounded read,
    strict UTF-8 JSON, no duplicate keys); XGBoost's ``Infinity`` literals are allowed."""
    if isinstance(source, dict):
        return source
    if hasattr(source, "get_booster"):  # xgboost's scikit-learn estimators
        source = source.get_booster()
    if hasattr(source, "save_raw"):  # xgboost.Booster
        source = source.save_raw(raw_format="json")
    if isinstance(source, (bytes, bytearray)):
        where = "the given bytes"
    elif isinstance(source, (str, os.PathLike)):
        where = f"{os.fspath(source)!r}"
    else:
        raise TypeError(f"from_xgboost reads a path, a dict, JSON bytes or an "
                        f"xgboost.Booster; got {type(source).__name__}")
    try:
        text = source if isinstance(source, (bytes, bytearray)) else read_bytes(source)
        return parse_json(text, allow_nonfinite=True)
    except ModelFormatError as e:
        raise ValueError(f"{where} is not an XGBoost JSON model ({e}); save the XGBoost "
                         f"model with a .json suffix (UBJSON and the legacy binary format "
                         f"are not read)") from None


def _get(d, key, where, kind=dict):
    if not isinstance(d, dict) or key not in d:
        raise ValueError(f"malformed XGBoost model: {where} has no {key!r}")
    v = d[key]
    if not isinstance(v, kind):
        raise ValueError(f"malformed XGBoost model: {where}.{key} must be a "
                         f"{kind.__name__ if isinstance(kind, type) else 'value'}, got "
                         f"{type(v).__name__}")
    return v


def _numbers(text, where) -> list:
    s = str(text).strip()
    if s.startswith("[") and s.endswith("]"):
        s = s[1:-1]
    try:
        out = [float(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"malformed XGBoost model: {where} = {text!r} is not a number "
                         f"or a list of numbers") from None
    if not out or not all(math.isfinite(v) for v in out):
        raise ValueError(f"malformed XGBoost model: {where} = {text!r}")
    return out


def _int_param(d, key, where, default=None) -> int:
    if key not in d and default is not None:
        return default
    try:
        return int(float(_get(d, key, where, (str, int, float))))
    except ValueError:
        raise ValueError(f"malformed XGBoost model: {where}.{key} = {d[key]!r} is not an "
                         f"integer") from None


def _array(tree, key, where, n, dtype):
    v = tree.get(key)
    if not isinstance(v, list) or len(v) != n:
        raise ValueError(f"malformed XGBoost model: {where}.{key} must be a list of "
                         f"num_nodes = {n} entries")
    try:
        return np.asarray(v, dtype)
    except (TypeError, ValueError):
        raise ValueError(f"malformed XGBoost model: {where}.{key} holds non-numbers") from None


def _parse_tree(tree, where, n_features):
    """Node arrays of one XGBoost tree, checked; and each node's depth."""
    if not isinstance(tree, dict):
        raise ValueError(f"malformed XGBoost model: {where} is not an object")
    param = _get(tree, "tree_param", where)
    n = _int_param(param, "num_nodes", f"{where}.tree_param")
    if n < 1:
        raise ValueError(f"malformed XGBoost model: {where} has {n} nodes")
    if _int_param(param, "size_leaf_vector", f"{where}.tree_param", default=1) > 1:
        raise ValueError(f"{where} has vector leaves (multi_strategy='multi_output_tree'); "
                         f"from_xgboost reads trees with one output per tree")
    a = {k: _array(tree, k, where, n, dt) for k, dt in (
        ("left_children", np.int64), ("right_children", np.int64),
        ("split_indices", np.int64), ("split_conditions", np.float64),
        ("default_left", np.int64), ("loss_changes", np.float64),
        ("sum_hessian", np.float64))}
    a["base_weights"] = (_array(tree, "base_weights", where, n, np.float64)
                         if len(tree.get("base_weights") or []) == n
                         else a["split_conditions"].copy())
    split_type = tree.get("split_type", [0] * n)
    if (not isinstance(split_type, list) or len(split_type) != n
            or any(s != 0 for s in split_type) or tree.get("categories_nodes")):
        raise ValueError(f"{where} has categorical splits; from_xgboost reads numeric "
                         f"splits only")
    left, right = a["left_children"], a["right_children"]
    leaf = left == -1
    if not np.array_equal(leaf, right == -1):
        raise ValueError(f"malformed XGBoost model: {where} has a node with one child")
    internal = ~leaf
    for k in ("left_children", "right_children"):
        c = a[k][internal]
        if ((c < 1) | (c >= n)).any():
            raise ValueError(f"malformed XGBoost model: {where}.{k} points outside the tree")
    f = a["split_indices"][internal]
    if ((f < 0) | (f >= n_features)).any():
        raise ValueError(f"malformed XGBoost model: {where}.split_indices refers to a "
                         f"feature outside [0, num_feature = {n_features})")
    if not np.isfinite(a["split_conditions"][leaf]).all():
        raise ValueError(f"malformed XGBoost model: {where} has a non-finite leaf value")
    if np.isnan(a["split_conditions"][internal]).any():
        raise ValueError(f"malformed XGBoost model: {where} has a NaN split condition")
    # Breadth-first walk from the root: every node reached exactly once.
    depth = np.full(n, -1, np.int64)
    depth[0] = 0
    queue = [0]
    for node in queue:
        if leaf[node]:
            continue
        for c in (int(left[node]), int(right[node])):
            if depth[c] >= 0:
                raise ValueError(f"malformed XGBoost model: {where} is not a tree "
                                 f"(node {c} is reached twice)")
            depth[c] = depth[node] + 1
            queue.append(c)
    return a, depth


def _heap_positions(a):
    """Heap index of every reachable node (XGBoost node id -> 2 i + 1 / 2 i + 2)."""
    left, right = a["left_children"], a["right_children"]
    pos = {0: 0}
    queue = [0]
    for node in queue:
        if left[node] == -1:
            continue
        pos[int(left[node])] = 2 * pos[node] + 1
        pos[int(right[node])] = 2 * pos[node] + 2
        queue += [int(left[node]), int(right[node])]
    return pos


def _bin_edges(feature, threshold, split, n_features):
    """Cuts = sorted distinct finite thresholds per feature; the matching ``tbin``."""
    cuts = np.full((n_features, _MAX_CUTS), np.inf, np.float32)
    n_cuts = np.zeros(n_features, np.int32)
    tbin = np.zeros(feature.shape, np.int32)
    for f in range(n_features):
        mask = split & (feature == f)
        thr = threshold[mask]
        distinct = np.unique(thr[np.isfinite(thr)])
        if distinct.size > _MAX_CUTS:  # keep an evenly spread subset
            warnings.warn(
                f"feature {f} of the XGBoost model splits at {distinct.size} distinct "
                f"thresholds; jaxboost's bin edges hold {_MAX_CUTS}, so the imported "
                f"model predicts and explains exactly but cannot be saved with "
                f"jaxboost.save nor continued with train(init_model=...)", stacklevel=3)
            distinct = distinct[np.linspace(0, distinct.size - 1, _MAX_CUTS).round()
                                .astype(int)]
        cuts[f, : distinct.size] = distinct
        n_cuts[f] = distinct.size
        pos = np.searchsorted(distinct, thr)
        hit = (pos < distinct.size) & (distinct[np.minimum(pos, distinct.size - 1)] == thr
                                       if distinct.size else False)
        b = np.where(hit, pos + 1, 0)
        b = np.where(np.isposinf(thr), distinct.size + 1, b)  # every present value left
        tbin[mask] = b
    edges = BinEdges(cuts=cuts, n_cuts=n_cuts, has_missing=np.ones(n_features, bool),
                     n_distinct=(n_cuts + 1).astype(np.int64), max_bin=_MAX_CUTS + 2)
    return edges, tbin


def from_xgboost(model) -> Booster:
    """A ``jaxboost.Booster`` from an XGBoost tree model.

    Args:
      model: an XGBoost JSON model: a path to a ``.json`` file, the parsed dict, the
        raw JSON bytes, an ``xgboost.Booster`` or an XGBoost scikit-learn estimator.
        It must be a ``gbtree`` model with numeric splits and one output per tree, for
        ``reg:squarederror``, ``binary:logistic`` / ``reg:logistic`` or
        ``multi:softprob`` / ``multi:softmax`` (read as ``objectives.squared``,
        ``objectives.logistic`` and ``objectives.softmax(n_classes=K)``).

    Returns:
      A ``Booster`` whose ``predict(X)`` (on any JAX device) equals XGBoost's
      ``predict(DMatrix(X))`` up to float32 rounding (class probabilities for
      ``multi:softmax``, whose XGBoost ``predict`` returns class labels instead). Gains
      (``loss_changes``) and covers (``sum_hessian``) are kept, so
      ``feature_importance``, ``dump`` and SHAP values work as for a trained model.
      XGBoost's feature names, when it has them, become ``feature_names``.

    Raises:
      ValueError: another booster (``dart``, ``gblinear``), objective, categorical
        splits, vector leaves, trees deeper than 16, or malformed data (the message
        names the field).
      TypeError: an input of another kind.
    """
    d = _load(model)
    learner = _get(d, "learner", "the model")
    gb = _get(learner, "gradient_booster", "learner")
    kind = gb.get("name")
    if kind != "gbtree":
        raise ValueError(f"from_xgboost reads gradient-boosted tree models "
                         f"(booster='gbtree'); this model's booster is {kind!r}")
    obj = _get(learner, "objective", "learner")
    obj_name = obj.get("name")
    if obj_name not in _IMPORTS:
        raise ValueError(f"from_xgboost reads models with objective reg:squarederror, "
                         f"binary:logistic, reg:logistic, multi:softprob or multi:softmax; "
                         f"this model's objective is {obj_name!r}")
    mp = _get(learner, "learner_model_param", "learner")
    F = _int_param(mp, "num_feature", "learner.learner_model_param")
    if F < 1:
        raise ValueError(f"malformed XGBoost model: num_feature = {F}")
    if _int_param(mp, "num_target", "learner.learner_model_param", default=1) > 1:
        raise ValueError("from_xgboost reads single-target models; this one has "
                         "num_target > 1")
    name = _IMPORTS[obj_name]
    K = 1
    if name == "softmax":
        K = _int_param(mp, "num_class", "learner.learner_model_param")
        if K < 1:
            raise ValueError(f"malformed XGBoost model: num_class = {K} for {obj_name}")
    types = learner.get("feature_types") or []
    if any(t == "c" for t in types):
        raise ValueError("the model has categorical features; from_xgboost reads numeric "
                         "features only")
    base = np.asarray(_numbers(mp.get("base_score", "0.5"),
                               "learner.learner_model_param.base_score"))
    if name == "logistic":
        if base.size != 1 or not 0.0 < base[0] < 1.0:
            raise ValueError(f"malformed XGBoost model: base_score {base.tolist()} of "
                             f"{obj_name} must be one probability in (0, 1)")
        base_margin = _xgb_logit(base[0])
    elif name == "squared":
        if base.size != 1:
            raise ValueError(f"malformed XGBoost model: {obj_name} has "
                             f"{base.size} base scores")
        base_margin = float(base[0])
    else:
        if base.size not in (1, K):
            raise ValueError(f"malformed XGBoost model: {base.size} base scores for "
                             f"{K} classes")
        base_margin = np.broadcast_to(base, (K,)).astype(np.float32)

    gm = _get(gb, "model", "learner.gradient_booster")
    trees = _get(gm, "trees", "learner.gradient_booster.model", list)
    info = gm.get("tree_info", [0] * len(trees))
    if (not isinstance(info, list) or len(info) != len(trees)
            or not all(isinstance(c, int) and 0 <= c < K for c in info)):
        raise ValueError(f"malformed XGBoost model: tree_info must give each of the "
                         f"{len(trees)} trees a class in [0, {K})")
    parsed = [_parse_tree(tr, f"trees[{i}]", F) for i, tr in enumerate(trees)]
    # jaxboost's tree t belongs to class t % K: order the trees round by round.
    order = list(range(len(trees)))
    if K > 1:
        per_class = [[i for i, c in enumerate(info) if c == k] for k in range(K)]
        if len({len(p) for p in per_class}) != 1:
            raise ValueError(f"the model has unequal numbers of trees per class "
                             f"({[len(p) for p in per_class]}); from_xgboost needs whole "
                             f"rounds of {K} trees")
        order = [per_class[k][r] for r in range(len(per_class[0])) for k in range(K)]
    D = max([int(depth.max()) for _, depth in parsed] + [1])
    if D > 16:
        raise ValueError(f"a tree of the model has depth {D}; jaxboost's heap layout "
                         f"holds trees of depth <= 16")
    T, M = len(trees), 2 ** (D + 1) - 1
    feature = np.zeros((T, M), np.int32)
    threshold = np.full((T, M), np.nan, np.float32)
    default_left = np.zeros((T, M), bool)
    is_leaf = np.ones((T, M), bool)
    value = np.zeros((T, M) if K == 1 else (T, M, K), np.float32)
    gain = np.zeros((T, M), np.float32)
    cover = np.zeros((T, M), np.float32)
    for t, src in enumerate(order):
        a, _ = parsed[src]
        pos = _heap_positions(a)
        nodes = np.fromiter(pos.keys(), np.int64)
        heap = np.fromiter(pos.values(), np.int64)
        split = a["left_children"][nodes] != -1
        hs = heap[split]
        is_leaf[t, hs] = False
        feature[t, hs] = a["split_indices"][nodes[split]]
        threshold[t, hs] = a["split_conditions"][nodes[split]].astype(np.float32)
        default_left[t, hs] = a["default_left"][nodes[split]] != 0
        gain[t, hs] = a["loss_changes"][nodes[split]]
        cover[t, heap] = a["sum_hessian"][nodes]
        w = np.where(split, a["base_weights"][nodes], a["split_conditions"][nodes])
        if K == 1:
            value[t, heap] = w
        else:
            value[t, heap, info[src]] = w
    edges, tbin = _bin_edges(feature, threshold, ~is_leaf, F)
    objective = {"squared": objectives.squared, "logistic": objectives.logistic,
                 "softmax": objectives.softmax(n_classes=K) if K > 1 else None}[name]
    if objective is None:
        raise ValueError(f"{obj_name} with num_class = 1 is not a multi-class model")
    ens = Ensemble(feature=feature, tbin=tbin, threshold=threshold,
                   default_left=default_left, is_leaf=is_leaf, value=value, gain=gain,
                   cover=cover)
    booster = Booster(ens, objective=objective,
                      params=TreeParams(max_depth=D, max_bin=edges.max_bin),
                      bin_edges=edges, base_margin=base_margin, n_features=F,
                      n_outputs=K, trees_per_round=K)
    names = learner.get("feature_names") or []
    if names:
        if (len(names) != F or not all(isinstance(s, str) for s in names)
                or len(set(names)) != F):
            raise ValueError(f"malformed XGBoost model: feature_names must be {F} "
                             f"distinct strings")
        booster.feature_names = list(names)
    return booster


register_writer("xgboost", to_xgboost_json)
