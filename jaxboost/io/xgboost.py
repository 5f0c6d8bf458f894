"""XGBoost interop: export a ``Booster`` as an XGBoost JSON model, import one back.

``to_xgboost_json(booster)`` writes the model in the JSON schema XGBoost 3.x reads with
``xgboost.Booster().load_model(path)``; ``from_xgboost(model)`` reads such a model (a
path, the parsed dict, raw JSON bytes, or a live ``xgboost.Booster`` / scikit-learn
estimator) into a ``jaxboost.Booster``. Both directions cover gradient-boosted trees
(``gbtree``) with numeric and categorical splits and one output per tree, for the
objectives

=================  =========================  ==================================================
jaxboost           XGBoost                    base score (``learner_model_param``)
=================  =========================  ==================================================
``squared``        ``reg:squarederror``       the base margin itself
``logistic``       ``binary:logistic``        ``sigmoid(base margin)``, a probability
``softmax`` (K)    ``multi:softprob``         the K base margins (a vector)
``absolute``       ``reg:absoluteerror``      the base margin itself
``pseudo_huber``   ``reg:pseudohubererror``   the base margin (``huber_slope``: delta)
``quantile``       ``reg:quantileerror``      the base margin (``quantile_alpha``: [alpha])
``poisson``        ``count:poisson``          ``exp(base margin)``, a mean (``max_delta_step``)
``gamma``          ``reg:gamma``              ``exp(base margin)``
``tweedie``        ``reg:tweedie``            ``exp(base margin)`` (``tweedie_variance_power``)
``cox``            ``survival:cox``           ``exp(base margin)``, a hazard ratio
``aft``            ``survival:aft``           ``exp(base margin)``, a time (``aft_loss_param``)
``ranknet``        ``rank:pairwise``          the base margin itself
``lambdarank``     ``rank:ndcg``              the base margin itself
=================  =========================  ==================================================

(import also accepts ``reg:logistic`` and ``multi:softmax``, read as ``logistic`` and
``softmax``: jaxboost's softmax predicts probabilities, as ``multi:softprob`` does).
XGBoost keeps a logistic base score as a float32 probability and takes its logit in
float32, clamped to ``[1e-6, 1 - 1e-6]``; on export, whatever that logit misses of the
base margin by more than 1e-6 (large ``|margin|``) is added to the first tree's leaves.

Both libraries send a present value ``x`` left when ``x < threshold`` and a missing one
to the node's default side, and both accumulate float32 margins tree by tree, so the two
predict the same numbers up to float32 rounding of the sums.

Categorical splits (XGBoost's ``enable_categorical=True``) go both ways: XGBoost keeps
the categories a split sends *right* (``categories``, ``categories_nodes``,
``categories_segments``, ``categories_sizes``, ``split_type`` 1) and sends any other
code left; jaxboost keeps those it sends left and sends codes never seen in training the
default way (``jaxboost.engine.categorical``). Export writes every code ``0 .. 255``
that goes right, so the two agree on codes below 256 (a larger code goes left in
XGBoost, the default way here); import reads codes ``0 .. 254`` exactly (a split on a
larger code is refused). Categorical features are marked ``"c"`` in
``feature_types``; the exported model reads category codes (DataFrame labels are not
exported).

Conversions of the trees:

* export compacts each heap-layout tree (node ``i`` has children ``2 i + 1`` and
  ``2 i + 2``) into XGBoost's node arrays in breadth-first order; a leaf carries its
  value (learning rate applied) in ``split_conditions`` and ``base_weights``; gains
  become ``loss_changes`` and covers (sums of hessians) ``sum_hessian``;
* import lays each tree out in a heap of depth ``max_depth`` = the deepest tree, with
  the thresholds taken from ``split_conditions``. The bin edges of the imported model
  are the sorted distinct thresholds of each feature, so ``tbin`` is consistent with
  ``threshold`` and the model can be saved with ``jaxboost.save``: ``max_bin = 256``,
  or the most thresholds of a feature plus 2 for a model trained with more bins
  (uint16 bins, at most ``MAX_BIN_LIMIT``). A feature with more distinct thresholds
  than 65,534 keeps 65,534 of them as bin edges; the other splits get ``tbin = 0``
  (prediction, which reads only ``threshold``, is unaffected, but such a model cannot
  be saved nor continued with ``train(init_model=...)``).

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
import re
import warnings
from typing import Any, NamedTuple, Optional

import numpy as np

import objectives
from objectives._targets import not_per_target

from .._types import MAX_BIN_LIMIT
from ..engine.autodiff import loss_name
from ..engine.binning import BinEdges
from ..engine.categorical import bits_of_codes, codes_of_bits
from ..engine.tree import Ensemble, breadth_first
from ..errors import ModelFormatError
from ..model.booster import Booster, register_writer
from ..model.params import TreeParams
from .checks import (
    F32_MAX,
    MAX_CLASSES,
    MAX_FEATURES,
    MAX_NODES,
    cover_problem,
    describe,
    is_json_int,
    is_json_number,
    nested,
)
from .files import atomic_write, parse_json, read_json

_EXPORTS = {
    "squared": "reg:squarederror",
    "logistic": "binary:logistic",
    "softmax": "multi:softprob",
    "absolute": "reg:absoluteerror",
    "pseudo_huber": "reg:pseudohubererror",
    "quantile": "reg:quantileerror",
    "poisson": "count:poisson",
    "gamma": "reg:gamma",
    "tweedie": "reg:tweedie",
    "cox": "survival:cox",
    "aft": "survival:aft",
    "ranknet": "rank:pairwise",
    "lambdarank": "rank:ndcg",
}
_IMPORTS = {
    "reg:squarederror": "squared",
    "reg:linear": "squared",
    "binary:logistic": "logistic",
    "reg:logistic": "logistic",
    "multi:softprob": "softmax",
    "multi:softmax": "softmax",
    "reg:absoluteerror": "absolute",
    "reg:pseudohubererror": "pseudo_huber",
    "reg:quantileerror": "quantile",
    "count:poisson": "poisson",
    "reg:gamma": "gamma",
    "reg:tweedie": "tweedie",
    "survival:cox": "cox",
    "survival:aft": "aft",
    "rank:pairwise": "ranknet",
    "rank:ndcg": "lambdarank",
}
# Log-link entries: XGBoost stores their base score as a mean, exp(base margin), and
# takes its float32 log back.
_LOG_LINK = ("poisson", "gamma", "tweedie", "cox", "aft")
# Entry -> (XGBoost's parameter block, {XGBoost parameter: jaxboost hyperparameter}).
_OBJECTIVE_PARAMS = {
    "pseudo_huber": ("pseudo_huber_param", {"huber_slope": "delta"}),
    "quantile": ("quantile_loss_param", {"quantile_alpha": "alpha"}),
    "poisson": ("poisson_regression_param", {"max_delta_step": "max_delta_step"}),
    "tweedie": ("tweedie_regression_param", {"tweedie_variance_power": "power"}),
    "aft": ("aft_loss_param", {"aft_loss_distribution_scale": "sigma"}),
}
# Entry -> {XGBoost parameter: (jaxboost hyperparameter, its allowed names)}: the
# parameters of an objective block that are names, not numbers (the same names).
_OBJECTIVE_NAMES = {
    "aft": {"aft_loss_distribution": ("distribution", objectives.survival.AFT_DISTRIBUTIONS)},
}
_NO_PARENT = 2147483647  # XGBoost's parent of the root
_MAX_CUTS = 254  # cuts per feature of a BinEdges with max_bin = 256
_WIDE_CUTS = MAX_BIN_LIMIT - 2  # the most cuts per feature of any BinEdges
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
    if isinstance(obj, (objectives.Objective, objectives.GroupObjective)):
        return obj.name
    return None


def _unsupported_export(booster) -> str | None:
    obj = booster.objective
    name = _export_name(obj)
    if name not in _EXPORTS:
        if isinstance(obj, objectives.LinkedLoss):
            from objectives._link import link_label

            what = (
                f"the plain loss {loss_name(obj)} with link "
                f"{link_label(obj.link)!r}, which XGBoost's exported objectives do not "
                f"have (a plain loss exports with link 'identity', 'sigmoid' or "
                f"'softmax')"
            )
        elif isinstance(obj, (objectives.Objective, objectives.GroupObjective)):
            what = f"objectives.{obj.name}"
        else:
            what = (
                f"the plain loss {loss_name(obj)} without a link (train it with "
                f"link='identity', 'sigmoid' or 'softmax' to export it)"
            )
        ours = ", ".join(f"objectives.{k}" for k in _EXPORTS)
        theirs = ", ".join(_EXPORTS.values())
        return (
            f"to_xgboost_json exports models trained with {ours} (XGBoost's "
            f"{theirs}), or a plain loss with link 'identity', 'sigmoid' or "
            f"'softmax'; this model was trained with {what}"
            + (
                ". XGBoost has no Huber objective: its reg:pseudohubererror is "
                "objectives.pseudo_huber"
                if what == "objectives.huber"
                else ""
            )
        )
    K = booster.n_outputs
    if name == "softmax" and K > 1 and not booster.one_output_per_tree:
        return (
            "to_xgboost_json exports softmax models with one tree per class per round "
            "(multi_strategy='one_output_per_tree'); this model has vector-leaf trees "
            "(multi_strategy='multi_output_tree'), which this exporter does not "
            "write"
        )
    if isinstance(booster.objective, objectives.MultiTarget):
        if not booster.one_output_per_tree:
            return (
                "to_xgboost_json exports multi-target models with one tree per target "
                "per round (multi_strategy='one_output_per_tree'); this model has "
                "vector-leaf trees, which this exporter does not write"
            )
        if name == "quantile" and not isinstance(booster.objective, objectives.MultiQuantile):
            return f"XGBoost's reg:quantileerror takes one target; this model has {K}"
        return None
    if name != "softmax" and K != 1:
        return f"a {name} model must have one output, this one has {K}"
    return None


def _float(v) -> float:
    """A float32 value as the Python float JSON writes (``Infinity`` for inf)."""
    return float(np.float32(v))


def _base_score_text(values) -> str:
    # XGBoost 3.x writes a vector, e.g. "[5E-1]"; shortest float32 round-trip digits.
    parts = [
        np.format_float_scientific(np.float32(v), unique=True, trim="-").upper() for v in values
    ]
    return "[" + ",".join(parts) + "]"


def _export_bases(name, base_margin, K):
    """``(base_score text, offsets)``: XGBoost's base scores of a model's base margin
    (one per output of a multi-target model; softmax's margins as they are) and, per
    output, what XGBoost's margin of its score misses, to be added to that output's
    first tree (0 where it misses nothing beyond ``_BASE_TOLERANCE``)."""
    if name == "softmax":
        return _base_score_text(np.asarray(base_margin, np.float32)), [0.0]
    scores, offsets = [], []
    for margin in np.asarray(base_margin, np.float64).reshape(-1)[: max(K, 1)]:
        if name == "logistic":
            score, residual = _logistic_base(float(margin))
        elif name in _LOG_LINK:
            score, residual = _log_base(float(margin))
        else:
            score, residual = margin, 0.0
        scores.append(score)
        offsets.append(residual if abs(residual) > _BASE_TOLERANCE else 0.0)
    return _base_score_text(scores), offsets


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


def _log_base(margin: float):
    """``(base_score, residual)`` of a log-link entry: the float32 mean ``exp(margin)``
    XGBoost stores, and what its float32 log misses of the margin (added to the trees).
    Beyond ``|margin| = 80`` the score is 1 (margin 0) and the margin goes to the trees."""
    if not abs(margin) <= 80.0:
        return np.float32(1.0), margin
    mean = np.float32(math.exp(margin))
    return mean, margin - _xgb_log(mean)


def _xgb_log(mean) -> float:
    """The margin XGBoost gives a log-link base score (float32 arithmetic)."""
    return float(np.log(np.float32(mean)))


def _param_text(v) -> str:
    """A float32 hyperparameter as XGBoost writes its parameters (shortest digits)."""
    return np.format_float_positional(np.float32(v), unique=True, trim="-")


def _objective_block(name, obj, K) -> dict:
    """The ``learner.objective`` block of an export, with the entry's parameters."""
    block = {"name": _EXPORTS[name]}
    # defaults included; a plain loss with a link exports as squared/logistic/softmax
    hyper = obj.hyperparameters if isinstance(obj, objectives.Objective) else {}
    if name == "softmax":
        block["softmax_multiclass_param"] = {"num_class": str(K)}
    elif name in _OBJECTIVE_PARAMS:
        key, names = _OBJECTIVE_PARAMS[name]
        values = {xk: _param_text(hyper[jk]) for xk, jk in names.items()}
        if name == "quantile":
            levels = getattr(obj, "alphas", ()) or (hyper["alpha"],)  # multi_quantile's
            values["quantile_alpha"] = "[" + ",".join(_param_text(a) for a in levels) + "]"
        for xk, (jk, _) in _OBJECTIVE_NAMES.get(name, {}).items():
            values[xk] = hyper[jk]
        block[key] = values
    elif name in ("squared", "logistic", "gamma"):
        block["reg_loss_param"] = {"scale_pos_weight": "1"}
    return block


def _import_objective(name, block, K):
    """The catalogue entry of an imported model, with the parameters of its objective
    block (``ModelFormatError`` for a malformed or out-of-domain value)."""
    if name == "softmax":
        return objectives.softmax(n_classes=K) if K > 1 else None
    entry = getattr(objectives, name)
    if name not in _OBJECTIVE_PARAMS:
        return entry
    key, names = _OBJECTIVE_PARAMS[name]
    params = block.get(key, {})
    if not isinstance(params, dict):
        raise _malformed(f"learner.objective.{key} must be an object, got {describe(params)}")
    values = {}
    for xk, jk in names.items():
        if xk not in params:
            continue
        where = f"learner.objective.{key}.{xk}"
        v = _base_scores(params[xk], where, max(K, 2))
        if name == "quantile" and K > 1 and v.size == K:  # one level per output
            try:
                return objectives.multi_quantile([float(_param_text(a)) for a in v])
            except ValueError as e:
                raise ModelFormatError(f"{where}: {e}") from None
        if v.size != 1:
            raise ModelFormatError(f"{where}: jaxboost reads one value, got {v.tolist()}")
        # XGBoost prints float32 parameters in full ("0.699999988"): read back the
        # shortest text of that float32 (0.7), and leave out an entry's default.
        value = float(_param_text(v[0]))
        if value != entry.hyperparameters.get(jk):
            values[jk] = value
    for xk, (jk, allowed) in _OBJECTIVE_NAMES.get(name, {}).items():
        if xk not in params:
            continue
        if params[xk] not in allowed:
            raise _malformed(
                f"learner.objective.{key}.{xk} must be one of {list(allowed)}, "
                f"got {describe(params[xk])}"
            )
        if params[xk] != entry.hyperparameters[jk]:
            values[jk] = params[xk]
    try:
        return entry(**values) if values else entry
    except (TypeError, ValueError) as e:
        raise ModelFormatError(f"learner.objective.{key}: {e}") from None


def _xgb_logit(p) -> float:
    """The margin XGBoost gives a logistic base score ``p`` (float32 arithmetic)."""
    p = np.clip(np.float32(p), np.float32(1e-6), np.float32(1 - 1e-6))
    one = np.float32(1.0)
    return float(-np.log(one / p - one))


def _compact_tree(t, ens, column, offset, n_features, tree_id):
    """One heap tree as XGBoost's node arrays (breadth-first node ids)."""
    is_leaf = ens.is_leaf[t]
    order, left, right = breadth_first(is_leaf)  # heap indices, breadth first
    n = len(order)
    own = column is None or ens.value.ndim == 2  # (M,) values: this tree's own
    value = ens.value[t] if own else ens.value[t][:, column]
    parents = [_NO_PARENT] * n
    split_indices, default_left = [0] * n, [0] * n
    conditions, weights, gains, covers = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
    split_type, cats = [0] * n, {}
    for k, h in enumerate(order):
        weights[k] = _float(value[h] + offset)
        covers[k] = _float(ens.cover[t][h])
        if is_leaf[h]:
            conditions[k] = weights[k]
            continue
        parents[left[k]] = parents[right[k]] = k
        split_indices[k] = int(ens.feature[t][h])
        default_left[k] = int(bool(ens.default_left[t][h]))
        conditions[k] = _float(ens.threshold[t][h])
        gains[k] = _float(ens.gain[t][h])
        if math.isnan(conditions[k]) and ens.cat_bits is not None:
            # XGBoost's set: the codes going right (every code 0..255 whose bit is 0)
            split_type[k], conditions[k] = 1, 0.0
            cats[k] = codes_of_bits(~np.asarray(ens.cat_bits[t][h], np.uint32)).tolist()
        elif math.isnan(conditions[k]):
            raise ValueError(f"tree {t} has a NaN threshold at split node {h}")
    nodes = sorted(cats)
    sizes = [len(cats[k]) for k in nodes]
    segments = [int(x) for x in np.cumsum([0] + sizes[:-1])] if nodes else []
    return {
        "base_weights": weights,
        "categories": [c for k in nodes for c in cats[k]],
        "categories_nodes": nodes,
        "categories_segments": segments,
        "categories_sizes": sizes,
        "default_left": default_left,
        "id": tree_id,
        "left_children": left,
        "loss_changes": gains,
        "parents": parents,
        "right_children": right,
        "split_conditions": conditions,
        "split_indices": split_indices,
        "split_type": split_type,
        "sum_hessian": covers,
        "tree_param": {
            "num_deleted": "0",
            "num_feature": str(n_features),
            "num_nodes": str(n),
            "size_leaf_vector": "1",
        },
    }


_CAT_INT64 = 15
"""XGBoost's type code of an int64 category array in ``model.cats.enc`` (3.2)."""


def _cats_block(booster, F) -> dict:
    """XGBoost's ``model.cats``: the category labels a DataFrame's categorical columns
    had in training, so that XGBoost (>= 3.1) re-codes a frame whose categories come in
    another order. Written when every categorical feature has labels XGBoost can hold
    (all strings, or all integers); else empty (XGBoost then reads codes, as it reads
    a model trained on codes). Per feature: strings as UTF-8 bytes with offsets,
    integers as int64; ``sorted_idx`` each feature's labels in sorted order."""
    empty = {"enc": [], "feature_segments": [], "sorted_idx": []}
    labels = getattr(booster, "category_labels", None) or {}
    cat = booster.categorical_features
    if not cat or any(f not in labels for f in cat):
        return empty
    enc, segments, sorted_idx = [], [0], []
    for f in range(F):
        lab = list(labels.get(f, [])) if f in cat else []
        if lab and all(isinstance(v, str) for v in lab):
            data = [v.encode("utf-8") for v in lab]
            offsets = np.concatenate([[0], np.cumsum([len(b) for b in data])]).tolist()
            enc.append(
                {"offsets": [int(o) for o in offsets], "values": [int(x) for b in data for x in b]}
            )
            order = sorted(range(len(data)), key=lambda i: data[i])
        elif lab and all(isinstance(v, int) and not isinstance(v, bool) for v in lab):
            enc.append({"type": _CAT_INT64, "values": [int(v) for v in lab]})
            order = sorted(range(len(lab)), key=lambda i: lab[i])
        elif lab:
            return empty  # floats or booleans: XGBoost takes only strings and integers
        else:
            enc.append({"offsets": [], "values": []})
            order = []
        segments.append(segments[-1] + len(order))
        sorted_idx.extend(order)
    return {"enc": enc, "feature_segments": segments, "sorted_idx": sorted_idx}


def _read_cats(model, F, cat_features):
    """``{feature: labels}`` from an XGBoost ``model.cats`` block (checked), or None."""
    cats = model.get("cats")
    if not cats or not cats.get("enc"):
        return None
    enc = cats["enc"]
    if not isinstance(enc, list) or len(enc) != F:
        raise _malformed(
            f"gradient_booster.model.cats.enc must have num_feature = {F} "
            f"entries, got {describe(enc)}"
        )
    out = {}
    for f, e in enumerate(enc):
        where = f"gradient_booster.model.cats.enc[{f}]"
        if not isinstance(e, dict) or not isinstance(e.get("values"), list):
            raise _malformed(f"{where} must be an object with a 'values' list")
        vals = e["values"]
        if not vals:
            continue
        if not cat_features[f]:
            raise _malformed(
                f"{where} holds categories of a feature that is not "
                f"categorical (learner.feature_types)"
            )
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
            raise _malformed(f"{where}.values must be integers")
        if "offsets" in e:
            off = e["offsets"]
            if (
                not isinstance(off, list)
                or len(off) < 2
                or off[0] != 0
                or off[-1] != len(vals)
                or any(b < a for a, b in zip(off, off[1:]))
                or not all(0 <= v < 256 for v in vals)
            ):
                raise _malformed(
                    f"{where}.offsets must run from 0 to len(values), "
                    f"non-decreasing, over byte values"
                )
            try:
                labels = [bytes(vals[a:b]).decode("utf-8") for a, b in zip(off, off[1:])]
            except UnicodeDecodeError:
                raise _malformed(f"{where}: a category is not UTF-8 text") from None
        else:
            labels = [int(v) for v in vals]
        if len(set(labels)) != len(labels):
            raise _malformed(f"{where}: categories must be distinct")
        out[f] = labels
    return out or None


_XGB_NAME_CHARS = "[]<,"
"""Characters XGBoost refuses in feature names (``to_xgboost_json`` checks them)."""


def _exportable_names(names):
    """``names`` (or None), refused (``ValueError``) where XGBoost would refuse one."""
    for j, n in enumerate(names or ()):
        bad = sorted(set(n) & set(_XGB_NAME_CHARS))
        if bad:
            raise ValueError(
                f"feature name {n!r} (feature {j}) contains {' '.join(map(repr, bad))}, "
                f"which XGBoost does not accept in feature names (its DMatrix refuses "
                f"'[', ']', '<' and ','); rename it before exporting, e.g. "
                f"booster.feature_names = [n.replace('<', 'lt') ... for n in "
                f"booster.feature_names]"
            )
    return names


def to_xgboost_json(booster: Booster, path=None) -> dict:
    """The model as an XGBoost JSON model (a dict), also written to ``path`` if given.

    ``xgboost.Booster().load_model(path)`` loads it (XGBoost >= 3.0, which reads a
    vector base score for multi-class models); its ``predict(DMatrix(X))`` and
    ``predict(..., output_margin=True)`` equal ``booster.predict(X)`` and
    ``booster.predict(X, output_margin=True)`` up to float32 rounding (about 1e-6).

    Args:
      booster: a model trained with ``objectives.squared``, ``objectives.logistic`` or
        ``objectives.softmax`` (one tree per class per round), another entry with an
        XGBoost counterpart (``docs/interop.md``), an entry's multi-target model
        (``objectives.multi_target``, one tree per target per round: ``num_target``
        and a base score per target), or with a plain loss and
        ``link="identity"``, ``"sigmoid"`` or ``"softmax"``: exported as that entry
        (XGBoost's prediction depends only on the trees, the base score and the link;
        continuing training in XGBoost would use its own loss, not the plain one).
      path: optional file to write (UTF-8 JSON; give it a ``.json`` suffix, which is how
        XGBoost recognises the format).

    Returns:
      The XGBoost model as a JSON-ready dict.

    Raises:
      ValueError: other objectives (plain JAX losses without a link or with another
        link included: XGBoost would not know their link), softmax models with
        vector-leaf trees, or feature names holding ``[``, ``]``, ``<`` or ``,`` (which
        XGBoost refuses).
    """
    problem = _unsupported_export(booster)
    if problem:
        raise ValueError(problem)
    name = _export_name(booster.objective)
    ens = booster.trees.to_numpy()  # class trees: each tree's own values, output t % K
    K, T, F = booster.n_outputs, ens.n_trees, booster.n_features
    targets = isinstance(booster.objective, objectives.MultiTarget)
    base_score, offsets = _export_bases(name, booster.base_margin, K)
    trees, tree_info = [], []
    for t in range(T):
        column = (t % K) if K > 1 else None
        offset = offsets[t] if t < len(offsets) else 0.0  # each output's first tree
        trees.append(_compact_tree(t, ens, column, offset, F, t))
        tree_info.append(t % K if K > 1 else 0)
    if any(offsets) and T == 0:  # no tree to carry the residuals: one-leaf trees do
        stump = Ensemble(*(None if a is None else np.zeros((1, 1), a.dtype) for a in ens))
        stump = stump._replace(is_leaf=np.ones((1, 1), bool))
        for k, offset in enumerate(offsets):
            trees.append(_compact_tree(0, stump, None, offset, F, k))
            tree_info.append(k)
    per_round = max(booster.trees_per_round, 1)
    indptr = list(range(0, len(trees) + 1, per_round))
    if indptr[-1] != len(trees):
        indptr.append(len(trees))
    objective = _objective_block(name, booster.objective, K)
    names = _exportable_names(getattr(booster, "feature_names", None))
    cat = booster.categorical_features
    model = {
        "learner": {
            "attributes": {},
            "feature_names": list(names) if names else [],
            "feature_types": (["c" if f in cat else "float" for f in range(F)] if cat else []),
            "gradient_booster": {
                "model": {
                    "cats": _cats_block(booster, F),
                    "gbtree_model_param": {
                        "num_parallel_tree": str(booster.num_parallel_tree),
                        "num_trees": str(len(trees)),
                    },
                    "iteration_indptr": indptr,
                    "tree_info": tree_info,
                    "trees": trees,
                },
                "name": "gbtree",
            },
            "learner_model_param": {
                "base_score": base_score,
                "boost_from_average": "1",
                "num_class": str(K if name == "softmax" else 0),
                "num_feature": str(F),
                "num_target": str(K if targets else 1),
            },
            "objective": objective,
        },
        "version": [3, 2, 0],
    }
    if path is not None:
        atomic_write(path, json.dumps(model).encode("utf-8"))
    return model


# --- import -------------------------------------------------------------------------
#
# One strict reader, as jaxboost's own format has: every refusal is a ModelFormatError
# naming the field, and the limits (classes, features, heap nodes) are checked before
# anything of the declared size is allocated.

_MAX_DEPTH = 16  # jaxboost's heap layout holds trees of depth <= 16 (TreeParams)
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?")


def _malformed(msg) -> ModelFormatError:
    return ModelFormatError(f"malformed XGBoost model: {msg}")


def _load(source) -> dict:
    """The parsed model, read by ``files`` as jaxboost's own format is (regular files
    only, bounded size and parse cost, strict UTF-8 JSON, no duplicate keys); XGBoost's
    ``Infinity`` literals are allowed."""
    if isinstance(source, dict):
        return source
    if hasattr(source, "get_booster"):  # xgboost's scikit-learn estimators
        source = source.get_booster()
    if hasattr(source, "save_raw"):  # xgboost.Booster: its own text, not a hostile one
        try:
            return parse_json(
                source.save_raw(raw_format="json"), allow_nonfinite=True, limits=False
            )
        except ModelFormatError as e:
            raise ModelFormatError(
                f"the xgboost.Booster's JSON is not an XGBoost JSON model ({e})"
            ) from None
    if isinstance(source, (bytes, bytearray)):
        where = "the given bytes"
    elif isinstance(source, (str, os.PathLike)):
        where = f"{os.fspath(source)!r}"
    else:
        raise TypeError(
            f"from_xgboost reads a path, a dict, JSON bytes or an "
            f"xgboost.Booster; got {type(source).__name__}"
        )
    try:
        if isinstance(source, (bytes, bytearray)):
            return parse_json(source, allow_nonfinite=True)
        return read_json(source, allow_nonfinite=True)
    except ModelFormatError as e:
        raise ModelFormatError(
            f"{where} is not an XGBoost JSON model ({e}); save the "
            f"XGBoost model with a .json suffix (UBJSON and the legacy "
            f"binary format are not read)"
        ) from None


def _get(d, key, where, kind=dict):
    if not isinstance(d, dict) or key not in d:
        raise _malformed(f"{where} has no {key!r}")
    v = d[key]
    if not isinstance(v, kind):
        name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise _malformed(f"{where}.{key} must be a {name}, got {describe(v)}")
    return v


def _int_param(d, key, where, *, default=None, lo=0, hi=None, limit=None) -> int:
    """An integer parameter, as XGBoost writes them (``"5"``) or a JSON integer; only
    decimal digits (``"1.7"``, ``"1e3"``, ``"inf"``, ``"1_0"`` are refused). ``limit``:
    the name of the constant ``hi`` is, for the message."""
    if not isinstance(d, dict):
        raise _malformed(f"{where} must be an object, got {describe(d)}")
    if key not in d:
        if default is not None:
            return default
        raise _malformed(f"{where} has no {key!r}")
    v = d[key]
    text = v.strip() if isinstance(v, str) else None
    if is_json_int(v):
        n = int(v)
    elif text is not None and _INT_TEXT.fullmatch(text):
        n = int(text) if len(text) <= 19 else (-1 if text[0] == "-" else 1) * 10**19
    else:
        raise _malformed(f"{where}.{key} must be an integer (decimal digits), got {describe(v)}")
    if limit is not None and n > hi:
        raise ModelFormatError(
            f"{where}.{key} = {describe(v)}: more than jaxboost's limit of {limit} = {hi}"
        )
    if n < lo or (hi is not None and n > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise _malformed(f"{where}.{key} must be an integer {rng}, got {describe(v)}")
    return n


def _base_scores(v, where, max_count) -> np.ndarray:
    """XGBoost's ``base_score``: ``"5E-1"`` or a vector ``"[5E-1,2E-1]"`` (or a JSON
    number), each finite in float32."""
    if is_json_number(v):
        try:
            items = [float(v)]
        except OverflowError:  # an integer literal beyond float64
            raise _malformed(
                f"{where} = {describe(v)}: expected numbers finite in float32"
            ) from None
    elif isinstance(v, str):
        s = v.strip()
        if s.startswith("[") and s.endswith("]"):
            s = s[1:-1]
        parts = s.split(",", max_count)
        if len(parts) > max_count:
            raise _malformed(f"{where} holds more than {max_count} numbers")
        items = []
        for p in parts:
            if not _FLOAT_TEXT.fullmatch(p.strip()):
                raise _malformed(f"{where} = {describe(v)} is not a number or a list of numbers")
            items.append(float(p))
    else:
        raise _malformed(f"{where} must be a string of numbers, got {describe(v)}")
    out = np.asarray(items, np.float64)
    with np.errstate(over="ignore"):
        ok = np.isfinite(out) & np.isfinite(out.astype(np.float32))
    if not ok.all():
        raise _malformed(f"{where} = {describe(v)}: expected numbers finite in float32")
    return out


def _numbers(tree, key, where, n) -> np.ndarray:
    """``tree[key]``: a list of ``n`` JSON numbers (NaN and infinities as parsed), as
    float64; the caller checks their range."""
    v = tree.get(key)
    if not isinstance(v, list) or len(v) != n:
        raise _malformed(
            f"{where}.{key} must be a list of num_nodes = {n} numbers, got {describe(v)}"
        )
    if not set(map(type, v)) <= {int, float}:
        i = next(i for i, x in enumerate(v) if type(x) not in (int, float))
        raise _malformed(f"{where}.{key}[{i}] must be a number, got {describe(v[i])}")
    try:
        return np.array(v, np.float64)
    except OverflowError:  # an integer literal beyond float64
        i = next(i for i, x in enumerate(v) if isinstance(x, int) and abs(x) > 2**1000)
        raise _malformed(f"{where}.{key}[{i}] is beyond the float range") from None


def _f32_finite(a) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return np.isfinite(a) & np.isfinite(a.astype(np.float32))


def _first(mask) -> int:
    return int(np.flatnonzero(mask)[0])


def _parse_tree(tree, where, n_features):
    """Node arrays of one XGBoost tree, checked; each reachable node's depth (-1 for
    nodes no path reaches: XGBoost's deleted nodes)."""
    a, n = _node_arrays(tree, where)
    left, right = a["left_children"], a["right_children"]
    leaf = left == -1
    if not np.array_equal(leaf, right == -1):
        raise _malformed(
            f"{where} has a node with one child (node {_first(leaf != (right == -1))})"
        )
    internal = ~leaf
    _check_links(a, where, internal, n_features)
    depth = _depths(left, right, where)
    seen = depth >= 0
    _check_values(a, where, seen, leaf)
    cond = a["split_conditions"]
    with np.errstate(over="ignore"):
        leaves = np.abs(cond[seen & leaf].astype(np.float32))
    a["leaf_max"] = float(leaves.max()) if leaves.size else 0.0
    return a, depth


def _node_arrays(tree, where):
    """``(a, n)``: a tree's ``n`` nodes' arrays by field, each of the right length and
    type (their values are checked by the caller)."""
    if not isinstance(tree, dict):
        raise _malformed(f"{where} must be an object, got {describe(tree)}")
    param = _get(tree, "tree_param", where)
    n = _int_param(param, "num_nodes", f"{where}.tree_param", lo=1, hi=MAX_NODES)
    if _int_param(param, "size_leaf_vector", f"{where}.tree_param", default=1) > 1:
        raise ModelFormatError(
            f"{where} has vector leaves (multi_strategy="
            f"'multi_output_tree'); from_xgboost reads trees with one "
            f"output per tree"
        )
    split_type = tree.get("split_type", [0] * n)
    if not isinstance(split_type, list) or len(split_type) != n:
        raise _malformed(
            f"{where}.split_type must be a list of num_nodes = {n} integers, "
            f"got {describe(split_type)}"
        )
    if any(type(s) is not int or s not in (0, 1) for s in split_type):
        i = next(i for i, s in enumerate(split_type) if type(s) is not int or s not in (0, 1))
        raise _malformed(
            f"{where}.split_type[{i}] must be 0 (numeric) or 1 (categorical), "
            f"got {describe(split_type[i])}"
        )
    a = {
        k: nested(tree.get(k), f"{where}.{k}", (n,), "int")
        for k in ("left_children", "right_children", "split_indices")
    }
    a["split_type"] = np.array(split_type, np.int64)
    a["right_cats"] = _categories(tree, where, n)
    dl = tree.get("default_left")
    if not isinstance(dl, list) or len(dl) != n:
        raise _malformed(
            f"{where}.default_left must be a list of num_nodes = {n} entries, got {describe(dl)}"
        )
    if not all(x is True or x is False or (type(x) is int and x in (0, 1)) for x in dl):
        i = next(
            i
            for i, x in enumerate(dl)
            if not (x is True or x is False or (type(x) is int and x in (0, 1)))
        )
        raise _malformed(
            f"{where}.default_left[{i}] must be 0, 1, true or false, got {describe(dl[i])}"
        )
    a["default_left"] = np.array(dl, bool)
    for k in ("split_conditions", "loss_changes", "sum_hessian"):
        a[k] = _numbers(tree, k, where, n)
    bw = tree.get("base_weights")
    a["base_weights"] = (
        a["split_conditions"].copy()
        if bw is None or bw == []
        else _numbers(tree, "base_weights", where, n)
    )
    return a, n


def _check_links(a, where, internal, n_features) -> None:
    """A tree's splits name nodes of the tree and features of the model, and exactly
    its categorical splits are listed in ``categories_nodes``."""
    n = internal.size
    for k in ("left_children", "right_children"):
        bad = internal & ((a[k] < 1) | (a[k] >= n))
        if bad.any():
            i = _first(bad)
            raise _malformed(
                f"{where}.{k}[{i}] = {int(a[k][i])} points outside the tree (nodes 1 to {n - 1})"
            )
    bad = internal & ((a["split_indices"] < 0) | (a["split_indices"] >= n_features))
    if bad.any():
        i = _first(bad)
        raise _malformed(
            f"{where}.split_indices[{i}] = {int(a['split_indices'][i])} refers "
            f"to a feature outside [0, num_feature = {n_features})"
        )
    is_cat = a["split_type"] == 1
    if set(a["right_cats"]) != set(np.flatnonzero(internal & is_cat).tolist()):
        i = min(set(a["right_cats"]) ^ set(np.flatnonzero(internal & is_cat).tolist()))
        listed = i in a["right_cats"]
        raise _malformed(
            f"{where}: node {i} has split_type {int(a['split_type'][i])} "
            f"({'a categorical split' if a['split_type'][i] else 'numeric'}"
            f"{'' if internal[i] else ', a leaf'}) but is "
            f"{'' if listed else 'not '}listed in categories_nodes"
        )


def _depths(left, right, where) -> np.ndarray:
    """Each node's depth (-1: unreached), by a breadth-first walk from the root: every
    node reached at most once, depth <= 16."""
    depth = np.full(left.size, -1, np.int64)
    depth[0] = 0
    queue = [0]
    lefts, rights = left.tolist(), right.tolist()
    for node in queue:
        if lefts[node] == -1:
            continue
        d = int(depth[node]) + 1
        if d > _MAX_DEPTH:
            raise ModelFormatError(
                f"{where} is deeper than {_MAX_DEPTH} (node {node} at "
                f"depth {d - 1} splits); jaxboost's heap layout holds "
                f"trees of depth <= {_MAX_DEPTH}"
            )
        for c in (lefts[node], rights[node]):
            if depth[c] >= 0:
                raise _malformed(f"{where} is not a tree (node {c} is reached twice)")
            depth[c] = d
            queue.append(c)
    return depth


def _check_values(a, where, seen, leaf) -> None:
    """The values of a tree's reached nodes (``seen``). What a jaxboost model holds is
    float32; no NaN anywhere, inf only as a split's threshold (every present value goes
    one way); covers ``>= 0``, a split's the sum of its children's."""
    internal = ~leaf
    cond = a["split_conditions"]
    bad = seen & leaf & ~_f32_finite(cond)
    if bad.any():
        i = _first(bad)
        raise _malformed(
            f"{where}.split_conditions[{i}] = {float(cond[i])!r}: a leaf value must "
            f"be finite in float32"
        )
    bad = seen & internal & (np.isnan(cond) | (np.isfinite(cond) & ~_f32_finite(cond)))
    if bad.any():
        i = _first(bad)
        raise _malformed(
            f"{where}.split_conditions[{i}] = {float(cond[i])!r}: a split threshold "
            f"must be a number finite in float32, or +-Infinity"
        )
    for k in ("base_weights", "loss_changes", "sum_hessian"):
        bad = seen & ~_f32_finite(a[k])
        if bad.any():
            i = _first(bad)
            raise _malformed(
                f"{where}.{k}[{i}] = {float(a[k][i])!r}: expected a number finite in float32"
            )
    cover = a["sum_hessian"]
    bad = seen & (cover < 0)
    if bad.any():
        i = _first(bad)
        raise _malformed(
            f"{where}.sum_hessian[{i}] = {float(cover[i])!r}: a sum of Hessians is >= 0"
        )
    left, right = a["left_children"], a["right_children"]
    nodes = np.flatnonzero(seen & internal)
    j = cover_problem(cover[nodes], cover[left[nodes]], cover[right[nodes]])
    if j is not None:
        i = int(nodes[j])
        c, l_, r = (float(cover[k]) for k in (i, left[i], right[i]))
        raise _malformed(
            f"{where}.sum_hessian[{i}] = {c!r} is not the sum of its children's "
            f"covers {l_!r} + {r!r} (SHAP values weight the branches by these "
            f"fractions)"
        )


_MAX_CODE = _MAX_CUTS  # codes 0 .. 254 are jaxboost's categories (max_bin = 256)


def _categories(tree, where, n) -> dict:
    """``{node: [codes going right]}`` of a tree's categorical splits, checked."""
    keys = ("categories", "categories_nodes", "categories_segments", "categories_sizes")
    vals = {}
    for k in keys:
        v = tree.get(k, [])
        if not isinstance(v, list) or not all(type(x) is int for x in v):
            raise _malformed(f"{where}.{k} must be a list of integers, got {describe(v)}")
        vals[k] = v
    nodes, segs, sizes, cats = (vals[k] for k in keys[1:] + keys[:1])
    if not (len(nodes) == len(segs) == len(sizes)):
        raise _malformed(
            f"{where}: categories_nodes, categories_segments and "
            f"categories_sizes must have one entry per categorical node"
        )
    out = {}
    for node, seg, size in zip(nodes, segs, sizes):
        if not 0 <= node < n or node in out:
            raise _malformed(
                f"{where}.categories_nodes: node {node} is outside the tree or listed twice"
            )
        if seg < 0 or size < 0 or seg + size > len(cats):
            raise _malformed(
                f"{where}: the categories of node {node} (segment {seg}, "
                f"size {size}) lie outside categories (length {len(cats)})"
            )
        codes = cats[seg : seg + size]
        bad = [c for c in codes if not 0 <= c <= _MAX_CODE]
        if bad:
            raise ModelFormatError(
                f"{where}: node {node} splits on category {bad[0]}; "
                f"jaxboost's categories are codes 0 to {_MAX_CODE}"
            )
        out[node] = codes
    return out


def _heap_positions(a):
    """Heap index of every reachable node (XGBoost node id -> 2 i + 1 / 2 i + 2)."""
    left, right = a["left_children"].tolist(), a["right_children"].tolist()
    pos = {0: 0}
    queue = [0]
    for node in queue:
        if left[node] == -1:
            continue
        pos[left[node]] = 2 * pos[node] + 1
        pos[right[node]] = 2 * pos[node] + 2
        queue += [left[node], right[node]]
    return pos


def _bin_edges(feature, threshold, split, n_features):
    """Cuts = sorted distinct finite thresholds per feature; the matching ``tbin``.

    Vectorised over features (a model may declare ``MAX_FEATURES`` of them): the
    distinct ``(feature, threshold)`` pairs are sorted once, and each split finds its
    cut by one ``searchsorted`` over pair keys.
    """
    n_cuts = np.zeros(n_features, np.int32)
    tbin = np.zeros(feature.shape, np.int32)
    fs, th = feature[split].astype(np.int64), threshold[split]
    fin = np.isfinite(th)
    order = np.lexsort((th[fin], fs[fin]))
    sf, st = fs[fin][order], th[fin][order]
    new = np.ones(sf.size, bool)
    new[1:] = (sf[1:] != sf[:-1]) | (st[1:] != st[:-1])  # -0.0 == 0.0: one cut
    pf, pt = sf[new], st[new]  # distinct (feature, threshold) pairs, sorted
    counts = np.bincount(pf, minlength=n_features)
    # A model trained with max_bin > 256 splits a feature at more than 254 thresholds:
    # its edges get as many cuts (uint16 bins, max_bin = cuts + 2), up to MAX_BIN_LIMIT.
    width = int(min(max(_MAX_CUTS, counts.max(initial=0)), _WIDE_CUTS))
    cuts = np.full((n_features, width), np.inf, np.float32)
    keep = np.ones(pf.size, bool)
    start = np.concatenate([[0], np.cumsum(counts)])
    for f in np.flatnonzero(counts > width):  # keep an evenly spread subset
        warnings.warn(
            f"feature {f} of the XGBoost model splits at {counts[f]} distinct "
            f"thresholds; jaxboost's bin edges hold {width}, so the imported "
            f"model predicts and explains exactly but cannot be saved with "
            f"jaxboost.save nor continued with train(init_model=...)",
            stacklevel=4,
        )
        chosen = np.linspace(0, counts[f] - 1, width).round().astype(np.int64)
        mask = np.zeros(counts[f], bool)
        mask[chosen] = True
        keep[start[f] : start[f + 1]] = mask
    pf, pt = pf[keep], pt[keep]
    n_cuts[:] = np.bincount(pf, minlength=n_features)
    first = np.concatenate([[0], np.cumsum(n_cuts)])[:-1]
    cuts[pf, np.arange(pf.size) - first[pf]] = pt
    # tbin of each split: 1 + the position of its threshold among its feature's cuts,
    # 0 when it is not one of them (or -inf); n_cuts + 1 for +inf. One searchsorted
    # over keys (feature, rank of the threshold among all distinct thresholds).
    b = np.zeros(fs.size, np.int64)
    values = np.unique(pt)
    V = values.size
    if V:
        key = pf * (V + 1) + np.searchsorted(values, pt)  # ascending
        vi = np.searchsorted(values, th)
        q = fs * (V + 1) + vi
        ki = np.searchsorted(key, q)
        hit = (values[np.minimum(vi, V - 1)] == th) & (key[np.minimum(ki, key.size - 1)] == q)
        b = np.where(hit, ki - first[fs] + 1, 0)
    b = np.where(np.isposinf(th), n_cuts[fs] + 1, b)
    tbin[split] = b
    edges = BinEdges(
        cuts=cuts,
        n_cuts=n_cuts,
        has_missing=np.ones(n_features, bool),
        n_distinct=(n_cuts + 1).astype(np.int64),
        max_bin=width + 2,
    )
    return edges, tbin


def _categorical_edges(edges, cat, labels=None):
    """Bin edges whose categorical features hold every code ``0 .. 254``: an XGBoost
    model does not record which categories training saw, and sends every code outside a
    split's set left, which the imported category sets reproduce code by code. A
    feature whose category names the model records (``labels``: ``{feature: names}``,
    XGBoost 3's ``cats`` of a DataFrame's categories) holds codes ``0 .. len(names) -
    1``, one per name (a DataFrame's other values are missing): its model file then
    loads again (every seen code needs a name)."""
    import dataclasses

    cuts, n_cuts = edges.cuts.copy(), edges.n_cuts.copy()
    if cuts.shape[1] < _MAX_CUTS:  # narrow cuts of very wide data (binning.EdgeBuilder)
        cuts = np.pad(cuts, ((0, 0), (0, _MAX_CUTS - cuts.shape[1])), constant_values=np.inf)
    n_distinct = edges.n_distinct.copy()
    seen = np.zeros((edges.n_features, edges.max_bin), bool)
    cuts[cat] = np.arange(_MAX_CUTS, dtype=np.float32) + np.float32(0.5)
    n_cuts[cat] = _MAX_CUTS
    n_distinct[cat] = _MAX_CODE + 1
    seen[cat, : _MAX_CODE + 1] = True
    for f, names in (labels or {}).items():
        if not names:
            continue
        k = min(len(names), _MAX_CODE + 1)
        cuts[f, k - 1 :] = np.inf
        n_cuts[f], n_distinct[f] = k - 1, k
        seen[f, k:] = False
    return dataclasses.replace(
        edges, cuts=cuts, n_cuts=n_cuts, n_distinct=n_distinct, categories=seen, categorical=cat
    )


def from_xgboost(model) -> Booster:
    """A ``jaxboost.Booster`` from an XGBoost tree model.

    Args:
      model: an XGBoost JSON model: a path to a ``.json`` file, the parsed dict, the
        raw JSON bytes, an ``xgboost.Booster`` or an XGBoost scikit-learn estimator.
        It must be a ``gbtree`` model with numeric or categorical splits (categories
        ``0 .. 254``; see the module docstring) and one output per tree, for
        ``reg:squarederror``, ``binary:logistic`` / ``reg:logistic`` or
        ``multi:softprob`` / ``multi:softmax`` (read as ``objectives.squared``,
        ``objectives.logistic`` and ``objectives.softmax(n_classes=K)``) and the
        other objectives of the module docstring; a multi-target model
        (``num_target = T``) as ``objectives.multi_target(entry, T)``.

    Returns:
      A ``Booster`` whose ``predict(X)`` (on any JAX device) equals XGBoost's
      ``predict(DMatrix(X))`` up to float32 rounding (class probabilities for
      ``multi:softmax``, whose XGBoost ``predict`` returns class labels instead). Gains
      (``loss_changes``) and covers (``sum_hessian``) are kept, so
      ``feature_importance``, ``dump`` and SHAP values work as for a trained model.
      XGBoost's feature names, when it has them, become ``feature_names``. An
      early-stopped model keeps every tree, as ``xgboost.Booster.predict`` uses them
      all, with XGBoost's ``best_iteration`` and ``best_score`` (``None`` when it has
      none): ``booster[:booster.best_iteration + 1]`` predicts what XGBoost's
      scikit-learn estimators predict, which stop at the best round.

    The model is read as strictly as jaxboost's own files (``jaxboost.io.format``): a
    path must name a regular file of at most ``files.MAX_TEXT_BYTES`` whose parse costs
    at most ``files.MAX_PARSE_BYTES`` (bytes too; a live ``xgboost.Booster``'s own text
    is not bounded); integers are decimal digits; every number is
    finite in float32 (a split threshold may be ``Infinity``); covers are ``>= 0`` and
    a split's children's add up to its own (SHAP weights); no prediction can overflow
    float32 (``|base| +`` the largest leaf of each tree, summed, ``<= 3.4e38``); at most
    ``MAX_CLASSES`` classes, ``MAX_FEATURES`` features and ``MAX_NODES`` heap nodes
    (``T * (2 ** (D + 1) - 1) * K``, ``D`` the deepest tree), checked before anything
    of that size is allocated.

    Raises:
      ModelFormatError: (a ``ValueError``) for every model it does not read: another
        booster (``gblinear``), objective, categories beyond 254, vector leaves,
        trees deeper than 16, a limit exceeded, a file that is not a regular file, or
        malformed data (the message names the field).
      TypeError: an input of another kind.
    """
    d = _load(model)
    try:
        return _import(d)
    except ModelFormatError:
        raise
    except (
        TypeError,
        ValueError,
        KeyError,
        IndexError,
        OverflowError,
        AttributeError,
        RecursionError,
    ) as e:  # a safety net: every check should come first
        raise ModelFormatError(f"malformed XGBoost model ({type(e).__name__}: {e})") from e


def _check_heap_nodes(T, D, deepest) -> None:
    """``T`` trees of depth ``D`` fit ``MAX_NODES`` in heap layout (a class tree holds
    one value per node: ``Booster.trees``)."""
    M = 2 ** (D + 1) - 1
    if T * M > MAX_NODES:
        which = f" (trees[{deepest}] has depth {D})" if deepest is not None else ""
        raise ModelFormatError(
            f"the model's {T} trees of depth {D}{which} take {T} x {M} = {T * M} heap "
            f"nodes in jaxboost's layout, more than the limit of MAX_NODES = {MAX_NODES} "
            f"(jaxboost.io.checks)"
        )


class _Header(NamedTuple):
    """What ``_import`` reads of a model before its trees: the ``gbtree`` block ``gb``
    (a dart model's inner one) and dart's ``drop_weights`` (else None); the objective
    block ``obj``, its XGBoost name ``obj_name`` and jaxboost entry ``name``; ``F``
    features, ``K`` outputs, the ``(F,)`` ``cat_features``, the feature ``names`` (or
    None / empty) and the ``base_margin``."""

    gb: dict
    drop_weights: Optional[np.ndarray]
    obj: dict
    obj_name: str
    name: str
    F: int
    K: int
    cat_features: np.ndarray
    names: Any
    base_margin: Any


def _import(d) -> Booster:
    if not isinstance(d, dict):
        raise _malformed(f"the model must be a JSON object, got {describe(d)}")
    learner = _get(d, "learner", "the model")
    head = _read_header(learner)
    K, F = head.K, head.F
    gm = _get(head.gb, "model", "learner.gradient_booster")
    trees = _get(gm, "trees", "learner.gradient_booster.model", list)
    # A forest (num_parallel_tree = P) has P trees per class per round.
    P = _int_param(
        gm.get("gbtree_model_param", {}),
        "num_parallel_tree",
        "learner.gradient_booster.model.gbtree_model_param",
        default=1,
        lo=1,
        hi=MAX_NODES,
    )
    info, parsed, D = _read_trees(gm, trees, head)
    order = _round_order(info, len(trees), K, P)
    T = len(trees)
    _check_heap_nodes(T, D, None)
    arrays = _heap_arrays(parsed, order, info, D, head)
    edges, tbin = _bin_edges(
        arrays["feature"],
        arrays["threshold"],
        ~arrays["is_leaf"] & ~np.isnan(arrays["threshold"]),
        F,
    )
    labels = _read_cats(gm, F, head.cat_features)
    if arrays["cat_bits"] is not None:
        edges = _categorical_edges(edges, head.cat_features, labels)
    objective = _import_objective(head.name, head.obj, K)
    if K > 1 and objective.outputs == 1:  # _read_header let in per-row entries only
        objective = objectives.multi_target(objective, K)
    ens = Ensemble(tbin=tbin, **arrays)
    booster = Booster(
        ens,
        objective=objective,
        params=TreeParams(max_depth=D, max_bin=edges.max_bin),
        bin_edges=edges,
        base_margin=head.base_margin,
        n_features=F,
        n_outputs=K,
        trees_per_round=K * P,
        num_parallel_tree=P,
    )
    if head.names:
        booster.feature_names = list(head.names)
    if labels:
        booster.category_labels = labels
    booster.best_iteration, booster.best_score = _best_of(learner, T // (K * P))
    return booster


def _read_header(learner) -> _Header:
    """``learner``'s booster, objective, feature and base-score sections, checked."""
    gb, drop_weights = _read_booster(learner)
    obj = _get(learner, "objective", "learner")
    obj_name = obj.get("name")
    if not isinstance(obj_name, str):
        raise _malformed(f"learner.objective.name must be a string, got {describe(obj_name)}")
    if obj_name not in _IMPORTS:
        raise ModelFormatError(
            f"from_xgboost reads models with objective {', '.join(_IMPORTS)}; this "
            f"model's objective is {obj_name!r}"
        )
    where = "learner.learner_model_param"
    mp = _get(learner, "learner_model_param", "learner")
    F = _int_param(
        mp, "num_feature", where, lo=1, hi=MAX_FEATURES, limit="MAX_FEATURES (jaxboost.io.checks)"
    )
    name = _IMPORTS[obj_name]
    K = _int_param(mp, "num_target", where, default=1, lo=1, hi=MAX_CLASSES, limit="MAX_CLASSES")
    if K > 1 and (name == "softmax" or not_per_target(getattr(objectives, name))):
        raise ModelFormatError(f"{obj_name} has one target, but num_target is {K}")
    if name == "softmax":
        K = _int_param(
            mp,
            "num_class",
            where,
            lo=1,
            hi=MAX_CLASSES,
            limit="MAX_CLASSES (objectives.MAX_CLASSES)",
        )
        if K == 1:
            raise ModelFormatError(f"{obj_name} with num_class = 1 is not a multi-class model")
    cat_features, names = _read_features(learner, F)
    base = _base_scores(mp.get("base_score", "0.5"), f"{where}.base_score", max(K, 1))
    return _Header(
        gb,
        drop_weights,
        obj,
        obj_name,
        name,
        F,
        K,
        cat_features,
        names,
        _base_margin(base, name, obj_name, K),
    )


def _read_booster(learner):
    """``(gb, drop_weights)``: the ``gbtree`` block (a dart model's inside its own) and
    dart's per-tree weights as float32 (None for ``gbtree``)."""
    gb = _get(learner, "gradient_booster", "learner")
    kind = gb.get("name")
    if not isinstance(kind, str):
        raise _malformed(f"learner.gradient_booster.name must be a string, got {describe(kind)}")
    drop_weights = None
    if kind == "dart":  # a gbtree block inside, and each tree's weight at prediction
        drop_weights = gb.get("weight_drop")
        if not isinstance(drop_weights, list) or not all(is_json_number(v) for v in drop_weights):
            raise _malformed(
                f"learner.gradient_booster.weight_drop of a dart model must "
                f"be a list of numbers, got {describe(drop_weights)}"
            )
        drop_weights = np.asarray(drop_weights, np.float64)
        with np.errstate(over="ignore"):
            if not np.isfinite(drop_weights.astype(np.float32)).all():
                raise _malformed(
                    "learner.gradient_booster.weight_drop: expected numbers finite in float32"
                )
        drop_weights = drop_weights.astype(np.float32)
        gb = _get(gb, "gbtree", "learner.gradient_booster")
    elif kind != "gbtree":
        raise ModelFormatError(
            f"from_xgboost reads gradient-boosted tree models "
            f"(booster='gbtree' or 'dart'); this model's booster is "
            f"{kind!r}"
        )
    return gb, drop_weights


def _read_features(learner, F):
    """``(cat_features, names)``: which of the ``F`` features are categorical
    (``feature_types`` ``"c"``) and their names (None or empty when the model has none)."""
    types = learner.get("feature_types")
    if types is not None and (
        not isinstance(types, list) or not all(isinstance(t, str) for t in types)
    ):
        raise _malformed(f"learner.feature_types must be a list of strings, got {describe(types)}")
    if types and len(types) != F:
        raise _malformed(
            f"learner.feature_types must have num_feature = {F} entries, got {len(types)}"
        )
    cat_features = np.array([t == "c" for t in types], bool) if types else np.zeros(F, bool)
    names = learner.get("feature_names")
    if names is not None and names != []:
        if (
            not isinstance(names, list)
            or len(names) != F
            or not all(isinstance(s, str) for s in names)
            or len(set(names)) != F
        ):
            raise _malformed(
                f"learner.feature_names must be a list of num_feature = {F} "
                f"distinct strings, got {describe(names)}"
            )
    return cat_features, names


def _base_margin(base, name, obj_name, K):
    """The base margin of XGBoost's base scores ``base`` (on the response scale) for the
    objective ``name`` with ``K`` outputs (classes, or targets: a score per target, or
    one for all)."""
    if K > 1 and name != "softmax":
        if base.size not in (1, K):
            raise _malformed(f"{base.size} base scores for {K} targets")
        each = [_base_margin(b[None], name, obj_name, 1) for b in np.broadcast_to(base, (K,))]
        return np.asarray(each, np.float32)
    if name == "logistic":
        if base.size != 1 or not 0.0 < base[0] < 1.0:
            raise _malformed(
                f"base_score {base.tolist()} of {obj_name} must be one probability in (0, 1)"
            )
        return _xgb_logit(base[0])
    if name in _LOG_LINK:
        if base.size != 1 or not base[0] > 0.0:
            raise _malformed(f"base_score {base.tolist()} of {obj_name} must be one positive mean")
        return _xgb_log(base[0])
    if name != "softmax":
        if base.size != 1:
            raise _malformed(f"{obj_name} has {base.size} base scores")
        return float(base[0])
    if base.size not in (1, K):
        raise _malformed(f"{base.size} base scores for {K} classes")
    return np.broadcast_to(base, (K,)).astype(np.float32)


def _read_trees(gm, trees, head: _Header):
    """``(info, parsed, D)``: each tree's class, its ``_parse_tree`` arrays and the
    deepest tree's depth (at least 1), with the limits on heap nodes and on the size of
    a prediction checked."""
    K, drop_weights = head.K, head.drop_weights
    if drop_weights is not None and drop_weights.size != len(trees):
        raise _malformed(
            f"learner.gradient_booster.weight_drop has {drop_weights.size} "
            f"weights for {len(trees)} trees"
        )
    info = gm.get("tree_info", [0] * len(trees))
    if (
        not isinstance(info, list)
        or len(info) != len(trees)
        or not all(type(c) is int and 0 <= c < K for c in info)
    ):
        raise _malformed(f"tree_info must give each of the {len(trees)} trees a class in [0, {K})")
    # Each tree's depth is known once it is read: the heap-node limit is checked as soon
    # as the deepest tree so far makes len(trees) trees of its depth too many.
    parsed, D = [], 1
    for i, tr in enumerate(trees):
        parsed.append(_parse_tree(tr, f"trees[{i}]", head.F))
        d_i = int(parsed[-1][1].max())
        if d_i > D:
            D = d_i
            _check_heap_nodes(len(trees), D, i)
    # No prediction may overflow: |base_k| + the largest leaf of each tree of class k.
    bound = np.abs(np.asarray(head.base_margin, np.float64)).reshape(-1) * np.ones(K)
    for i, ((a, _), c) in enumerate(zip(parsed, info)):
        bound[c] += a["leaf_max"] * (1.0 if drop_weights is None else abs(float(drop_weights[i])))
    if not (bound <= F32_MAX).all():
        k = _first(~(bound <= F32_MAX))
        cls = f" of class {k}" if K > 1 else ""
        raise _malformed(
            f"the leaf values of the trees{cls} and the base score add up to "
            f"{bound[k]:.6g}, beyond the float32 range (3.4028e38): "
            f"predictions would overflow to inf"
        )
    return info, parsed, D


def _round_order(info, n_trees, K, P):
    """The XGBoost trees in jaxboost's order: tree ``t`` belongs to class ``t % K``, round
    by round (a forest's round: its ``P`` trees of each class interleaved, ``P x K``
    trees)."""
    order = list(range(n_trees))
    if K > 1:
        per_class = [[i for i, c in enumerate(info) if c == k] for k in range(K)]
        if len({len(p) for p in per_class}) != 1:
            counts = sorted({len(p) for p in per_class})
            raise ModelFormatError(
                f"the model has unequal numbers of trees per class (between {counts[0]} "
                f"and {counts[-1]}); from_xgboost needs whole rounds of {K} trees"
            )
        order = [per_class[k][r] for r in range(len(per_class[0])) for k in range(K)]
    if n_trees % (K * P):
        raise ModelFormatError(
            f"the model has {n_trees} trees, not whole rounds of "
            f"num_parallel_tree = {P} tree(s) for each of {K} "
            f"class(es)"
        )
    return order


def _heap_arrays(parsed, order, info, D, head: _Header) -> dict:
    """The ``Ensemble`` fields but ``tbin`` of the parsed trees in ``order``, in heap
    layout of depth ``D`` (``cat_bits`` None without categorical features). Values are
    ``(T, M)``: tree ``t`` of a model of ``K`` classes is class ``t % K``'s
    (``_round_order``), held one output per tree as ``Booster.trees`` holds class
    trees."""
    T, M = len(order), 2 ** (D + 1) - 1
    out = dict(
        feature=np.zeros((T, M), np.int32),
        threshold=np.full((T, M), np.nan, np.float32),
        default_left=np.zeros((T, M), bool),
        is_leaf=np.ones((T, M), bool),
        value=np.zeros((T, M), np.float32),
        gain=np.zeros((T, M), np.float32),
        cover=np.zeros((T, M), np.float32),
        cat_bits=np.zeros((T, M, 8), np.uint32) if head.cat_features.any() else None,
    )
    for t, src in enumerate(order):
        heap, w = _heap_tree(out, t, src, parsed[src][0], head)
        assert head.K == 1 or info[src] == t % head.K  # _round_order's
        out["value"][t, heap] = w
    return out


def _heap_tree(out, t, src, a, head: _Header):
    """Write XGBoost tree ``src`` (``_parse_tree``'s arrays ``a``) as tree ``t`` of the
    heap arrays ``out`` but ``value``; returns ``(heap, w)``, its reached nodes' heap
    positions and outputs."""
    cat_features, drop_weights = head.cat_features, head.drop_weights
    pos = _heap_positions(a)
    nodes = np.fromiter(pos.keys(), np.int64)
    heap = np.fromiter(pos.values(), np.int64)
    split = a["left_children"][nodes] != -1
    hs = heap[split]
    out["is_leaf"][t, hs] = False
    out["feature"][t, hs] = a["split_indices"][nodes[split]]
    out["threshold"][t, hs] = a["split_conditions"][nodes[split]].astype(np.float32)
    out["default_left"][t, hs] = a["default_left"][nodes[split]]
    out["gain"][t, hs] = a["loss_changes"][nodes[split]]
    out["cover"][t, heap] = a["sum_hessian"][nodes]
    every_code = np.ones(_MAX_CODE + 1, bool)
    for node, codes in a["right_cats"].items():
        f = int(a["split_indices"][node])
        if not cat_features[f]:
            raise ModelFormatError(
                f"trees[{src}]: node {node} is a categorical split "
                f"on feature {f}, which feature_types does not mark "
                f"categorical ('c')"
            )
        h = pos.get(node)
        if h is None:  # a node no path reaches
            continue
        out["threshold"][t, h] = np.nan
        left = sorted(set(range(_MAX_CODE + 1)) - set(codes))
        out["cat_bits"][t, h] = bits_of_codes(left, bool(a["default_left"][node]), every_code)
    numeric_on_cat = [
        i
        for i in nodes[split]
        if a["split_type"][i] == 0 and cat_features[int(a["split_indices"][i])]
    ]
    if numeric_on_cat:
        raise ModelFormatError(
            f"trees[{src}]: node {numeric_on_cat[0]} is a numeric split on a categorical feature"
        )
    w = np.where(split, a["base_weights"][nodes], a["split_conditions"][nodes])
    if drop_weights is not None:  # dart: the tree's output times its weight
        w = (w.astype(np.float32) * drop_weights[src]).astype(np.float32)
    return heap, w


def _best_of(learner, n_rounds):
    """``(best_iteration, best_score)`` from ``learner.attributes`` (XGBoost writes them
    as strings when early stopping ran), each None when absent; checked: an integer
    round of the model and a finite score."""
    attrs = learner.get("attributes", {})
    if not isinstance(attrs, dict):
        raise _malformed(f"learner.attributes must be an object, got {describe(attrs)}")
    best, score = attrs.get("best_iteration"), attrs.get("best_score")
    where = "learner.attributes"
    if best is not None:
        if not (isinstance(best, str) and best.isdigit() and len(best) <= 12):
            raise _malformed(
                f"{where}.best_iteration must be a decimal integer string, got {describe(best)}"
            )
        best = int(best)
        if not 0 <= best < max(n_rounds, 1) or n_rounds == 0:
            raise _malformed(
                f"{where}.best_iteration is {best}, but the model has {n_rounds} round(s)"
            )
    if score is not None:
        try:
            score = float(score) if isinstance(score, str) and len(score) <= 64 else None
        except ValueError:
            score = None
        if score is None or not math.isfinite(score):
            raise _malformed(
                f"{where}.best_score must be a finite number as a string, got "
                f"{describe(attrs.get('best_score'))}"
            )
    return best, score


register_writer("xgboost", to_xgboost_json)
