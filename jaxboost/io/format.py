r"""jaxboost's model format: a ``Booster`` as validated JSON, written atomically.

No pickle is involved anywhere: a model file is plain JSON (RFC 8259, UTF-8, no
``NaN``/``Infinity`` literals), and loading it runs no code named in the file. Every
field is checked on load; anything unexpected raises ``ModelFormatError`` (a
``ValueError``) naming the key and what was expected, so a damaged or tampered file
never becomes a booster that predicts something else.

>>> import numpy as np, jaxboost
>>> from jaxboost import io
>>> X = np.arange(16, dtype=np.float32).reshape(8, 2)
>>> bst = jaxboost.train("squared", X, X[:, 0], n_rounds=2, max_depth=2)
>>> text = io.dumps(bst)
>>> again = io.loads(text)
>>> bool(np.array_equal(again.predict(X), bst.predict(X)))
True
>>> io.loads(text.replace('"format_version":1', '"format_version":2'))  # doctest: +ELLIPSIS
Traceback (most recent call last):
  ...
jaxboost.errors.ModelFormatError: format_version: this file has format version 2, newer ...

Functions: ``save(booster, path)`` / ``load(path)`` for files, ``dumps`` / ``loads`` for
text, ``to_dict`` / ``from_dict`` for the parsed structure (no I/O).

File format, version 1
----------------------

Shapes: ``T`` trees, ``M = 2 ** (max_depth + 1) - 1`` nodes per tree in heap layout
(node ``i`` has children ``2 i + 1`` and ``2 i + 2``), ``F`` features, ``K`` outputs.
"int" means a JSON integer (``true``/``false`` are not integers), "number" a JSON
integer or float. Float32 data are written as the exact decimal of their float64
widening, so every bit survives the round trip. One JSON object with exactly these keys:

``format`` (string)
    Always ``"jaxboost-model"``.
``format_version`` (int)
    ``1``. A larger value is refused with a message asking for a newer jaxboost.
``jaxboost_version`` (string)
    The version that wrote the file (informational).
``objective`` (object)
    Either ``{"kind": "catalogue", "name": str, "params": {str: null | bool | int |
    number | str}}``: the entry ``objectives.CATALOGUE[name]`` with those
    hyperparameters (``objectives.huber(delta=2.0)``; an entry of one output with
    ``n_outputs`` K >= 2 is trained on K targets, ``objectives.multi_target``, and
    ``quantile`` with ``"alpha"`` a list of K levels is ``objectives.multi_quantile``);
    or ``{"kind": "callable",
    "qualname": str}``: a plain callable loss, recorded by ``module.qualname`` only.
    Code is never imported from a file: a model of a callable loss loads without it
    for prediction (a stand-in that raises when the loss itself is needed), and with
    it when the caller passes it again (``load(path, objective=loss)``); for a
    catalogue model a passed ``objective=`` replaces the stored one. A callable trained with
    ``train(..., link=...)`` has one more key, ``"link"``: ``{"kind": "named", "name":
    str}`` (one of ``objectives.LINKS``: ``identity``, ``sigmoid``, ``softmax``,
    ``exp``; restored on load) or ``{"kind": "callable", "qualname": str}`` (a custom
    link, passed again on load: ``load(path, objective=loss, link=fn)``). Readers
    older than this key refuse such files rather than predict margins.
``params`` (object)
    ``TreeParams.to_dict()``: ``max_depth`` and ``max_bin`` (ints, required) and the
    dynamic hyperparameters (numbers, defaults when absent); rebuilt with
    ``TreeParams(**params)``, which validates them.
``n_features`` (int, >= 1)
    ``F``, the number of input features.
``n_outputs`` (int, >= 1)
    ``K``, margins per row, at most ``MAX_CLASSES`` (``objectives.MAX_CLASSES``).
``trees_per_round`` (int)
    Trees per boosting round: ``1``, or ``K`` (one tree per output), times
    ``num_parallel_tree``. ``T`` is a multiple of it.
``base_margin`` (number, or list of ``K`` numbers)
    The initial margin: a number when ``K == 1``, a list otherwise. Finite in float32.
``bin_edges`` (object)
    ``max_bin`` (int, equal to ``params.max_bin``); ``cuts`` (``F`` lists of numbers,
    list ``f`` holding the real cuts of feature ``f`` only, finite and strictly
    ascending in float32, at most ``max_bin - 2`` of them; the ``+inf`` padding of
    ``BinEdges.cuts`` is not stored); ``has_missing`` (``F`` bools: the feature had
    missing values in training); ``n_distinct`` (``F`` ints >= 0: distinct present
    values seen in training).
``trees`` (object)
    The ``Ensemble`` fields, each a list of ``T`` rows of ``M`` entries (``value``:
    ``M`` entries when ``K == 1``, ``M`` lists of ``K`` numbers when ``K > 1``):

    * ``feature`` (ints in ``[0, F)``): the split feature (0 at leaves);
    * ``tbin`` (ints in ``[0, max_bin - 1]``; at a split node also at most
      ``n_cuts[feature] + 1``): bins ``< tbin`` go left (0 at leaves);
    * ``threshold``: ``null`` at leaves; at a split node the float test ``x <
      threshold``, which must equal the bin edge of ``(feature, tbin)`` exactly --
      ``tbin == 0`` is ``"-inf"`` (every present value goes right), ``tbin ==
      n_cuts[feature] + 1`` is ``"inf"`` (every present value goes left), otherwise
      the number ``cuts[feature][tbin - 1]``. The strings ``"inf"``/``"-inf"`` are
      the only non-finite values a file holds;
    * ``default_left`` (bools): where a missing value goes;
    * ``is_leaf`` (bools): the node is a leaf (or unused). The children of a leaf
      are leaves, and nodes of the last level are leaves, so the split nodes form a
      binary tree rooted at node 0;
    * ``value`` (finite numbers): the output of the node (learning rate applied). For
      each output ``k``, ``|base_margin[k]|`` plus the largest ``|value|`` of each
      tree's leaves, summed over the trees, is at most the largest float32 (3.4e38):
      no prediction can overflow;
    * ``gain`` (finite numbers): the split's loss reduction (0 at leaves);
    * ``cover`` (finite numbers): the sum of Hessians in the node. At a split node
      the cover and both children's covers are ``>= 0`` and the children's add up to
      the node's (within 0.1 %): SHAP values weight the branches by these fractions.

    **Compact layout** (what ``save`` and ``dumps`` write; ``to_dict(compact=True)``):
    ``trees`` has one more key, ``node`` (``T`` lists of ints: each tree's reachable
    nodes -- the root and both children of every split -- as heap indices, ascending
    from 0), and each field above holds, per tree, one entry per listed node. Every
    node not listed holds ``BLANK_NODE`` (feature 0, tbin 0, threshold null,
    default_left false, is_leaf true, value, gain and cover 0); the listed nodes must be
    exactly the reachable ones. With ``K > 1`` outputs and one output per tree, the
    optional key ``value_output`` (the string ``"t mod n_outputs"``) says each tree's
    values are those of output ``t mod K``, one number per node (the other outputs
    hold 0, with that number's sign, as training stores them). A model whose
    unreachable nodes are not blank, or with categorical splits, is written in the full
    layout, and so is one of a single output whose trees are nearly full (8 of 9 nodes
    reached or more), where the node lists would cost more than they leave out. Readers
    older than these keys refuse such files. sklearn's digits (10 classes, 100 rounds of
    depth 6: 1,000 trees of 127 nodes): 8.9 MiB, saved in 0.41 s and loaded in 0.40 s
    in the full layout; 0.68 MiB, 0.03 s and 0.02 s in the compact one (XGBoost's JSON
    1.32 MiB, 0.010 s and 0.032 s; ``benchmarks/model_files.py``).
``best_iteration`` (int in ``[0, n_rounds)``, or null)
    The best round found by early stopping, if any.
``best_score`` (finite number, or null)
    The evaluation score at ``best_iteration`` (null when unset or not finite).
``history`` (object)
    Evaluation history: ``{data_name: {metric_name: [number | null, ...]}}``, one
    entry per round; ``null`` stands for a non-finite score (restored as NaN).
``train_state`` (object or null)
    What continuing training needs: ``seed`` (int >= 0, the PRNG seed) and
    ``rounds`` (int >= 0, total rounds trained); further keys may hold JSON scalars
    (``train`` records its Hessian policy, and the constraints of a constrained model:
    ``monotone_constraints`` and ``interaction_constraints`` in XGBoost's string forms,
    ``"(1,0,-1)"`` and ``"[[0,1],[2]]"``, and ``min_samples_leaf``; prediction reads
    none of them). ``{}`` (a booster not made by ``train``) and ``null`` mean no state.

Optional keys (absent in files of models without them; files written before they
existed load unchanged):

``feature_names`` (list of ``F`` unique strings, or null)
    The names of the input columns, in order (a training DataFrame's columns or
    ``train(feature_names=...)``). Written only when the model has names.
``category_labels``, ``bin_edges.categorical``, ``bin_edges.categories``,
``trees.categories``
    Categorical features and splits, only in models that have them (threshold null at a
    categorical split): see ``jaxboost.io.categories``.
``num_parallel_tree`` (int >= 1, default 1)
    Trees per output and round of a forest (``train(num_parallel_tree=P)``); written
    only when ``P > 1``. Readers older than this key refuse such files.

Limits: at most ``MAX_NODES`` nodes (``T * M``) and as many leaf-value entries
(``T * M * K``; ``T * M`` for class trees written one output per tree,
``value_output``, which are read and held so: ``Booster.trees``), ``MAX_FEATURES``
features, ``MAX_CLASSES`` outputs, ``MAX_HISTORY`` history entries,
``files.MAX_TEXT_BYTES`` bytes of text and ``files.MAX_PARSE_BYTES`` of estimated
parse memory, each checked before anything of that size is allocated; ``load`` reads
regular files only (a FIFO or a device such as ``/dev/zero`` is refused before it is
read). A hostile file cannot exhaust memory: ``benchmarks/hostile_files.py`` measures
the peak.
"""

from __future__ import annotations

import inspect
import itertools
import json
import math
import re
import warnings

import numpy as np

from objectives import MultiTarget

from .._version import __version__
from ..engine.binning import BinEdges
from ..engine.tree import BLANK_NODE, Ensemble
from ..errors import ModelFormatError, user_stacklevel
from ..inputs.numbers import is_int
from ..model.booster import Booster, register_writer
from ..model.params import TreeParams
from . import categories
from .checks import (
    MAX_CLASSES,
    MAX_FEATURES,
    MAX_NODES,
    as_finite,
    as_int,
    as_object,
    check_keys,
    check_scalar,
    cover_problem,
    fail,
    float_list,
    heap_split_covers,
    json_scalar,
    margin_overflow,
    nested,
)
from .files import atomic_write, parse_json, read_json
from .objective import (
    MissingLoss,
    StoredCallable,
    given_objective,
    objective_from_dict,
    objective_to_dict,
    with_stored_link,
)

FORMAT_NAME = "jaxboost-model"

#: A scikit-learn estimator's file (``JaxBoostClassifier.save_model``): its model under
#: ``"model"`` beside what the estimator learned of its labels; ``load`` reads the model.
ESTIMATOR_FORMAT = "jaxboost-sklearn-estimator"
FORMAT_VERSION = 1

MAX_HISTORY = 10**7
"""Most evaluation-history entries a file may hold."""

_TOP_KEYS = (
    "format",
    "format_version",
    "jaxboost_version",
    "objective",
    "params",
    "n_features",
    "n_outputs",
    "trees_per_round",
    "base_margin",
    "bin_edges",
    "trees",
    "best_iteration",
    "best_score",
    "history",
    "train_state",
)
_OPTIONAL_KEYS = ("feature_names", "category_labels", "num_parallel_tree")


# --------------------------------------------------------------------------------------
# Booster -> dict
# --------------------------------------------------------------------------------------


def _history_to_dict(history) -> dict:
    if history is None:
        return {}
    if not isinstance(history, dict):
        raise ValueError(f"booster.history must be a dict, got {type(history).__name__}")
    out = {}
    for data, metrics in history.items():
        if not isinstance(data, str) or not isinstance(metrics, dict):
            raise ValueError(
                "booster.history must map data names (str) to dicts of "
                "metric name -> list of scores"
            )
        out[data] = {}
        for metric, scores in metrics.items():
            if not isinstance(metric, str):
                raise ValueError(f"booster.history[{data!r}] keys must be metric names")
            vals = [float(s) for s in scores]
            out[data][metric] = [v if math.isfinite(v) else None for v in vals]
    return out


def _train_state_to_dict(state):
    if state is None:
        return None
    if not isinstance(state, dict):
        raise ValueError(f"booster.train_state must be a dict or None, got {type(state).__name__}")
    if not state:  # a booster not made by train(): no state to continue from
        return {}
    out = {}
    for key in ("seed", "rounds"):
        v = state.get(key)
        if not is_int(v) or v < 0:
            raise ValueError(f"booster.train_state[{key!r}] must be an int >= 0, got {v!r}")
        out[key] = int(v)
    for k, v in state.items():
        if k not in out:
            if not isinstance(k, str):
                raise ValueError(f"booster.train_state keys must be strings, got {k!r}")
            out[k] = json_scalar(v, f"train_state[{k!r}]")
    return out


def to_dict(booster: Booster, *, compact: bool = False) -> dict:
    """The model as a JSON-ready dict (see the module docstring for every key).

    ``compact=True`` writes each tree's reachable nodes only, and a multi-class model's
    leaf values of each tree's own output only (the module docstring's compact
    layout; ``dumps`` and ``save`` write it); the default is the full heap layout.
    Either loads to the same model, bit for bit.

    Raises ``ValueError`` when the model holds something a file cannot represent
    (non-finite leaf values, an unsupported hyperparameter value).

    Example:
      >>> import numpy as np, jaxboost
      >>> X = np.arange(8, dtype=np.float32).reshape(4, 2)
      >>> bst = jaxboost.train("squared", X, X[:, 0], n_rounds=1, max_depth=3)
      >>> len(to_dict(bst)["trees"]["feature"][0]), to_dict(bst, compact=True)["trees"]["node"]
      (15, [[0, 1, 2]])
    """

    if not isinstance(booster, Booster):
        raise TypeError(f"to_dict expects a Booster, got {type(booster).__name__}")
    e = booster.trees.to_numpy()  # class trees: each tree's own values (Booster.trees)
    K = int(booster.n_outputs)
    threshold = _thresholds_to_list(e)
    base_out = _base_margin_to_dict(booster.base_margin, K)
    best_iteration, best_score = _best_to_dict(booster)
    out = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "jaxboost_version": str(__version__),
        "objective": objective_to_dict(booster.objective),
        "params": booster.params.to_dict(),
        "n_features": int(booster.n_features),
        "n_outputs": K,
        "trees_per_round": int(booster.trees_per_round),
        "base_margin": base_out,
        "bin_edges": _edges_to_dict(booster.bin_edges),
        "trees": (compact and _compact_trees(e, threshold, K))
        or _trees_to_dict(booster, e.spread(K), threshold),
        "best_iteration": best_iteration,
        "best_score": best_score,
        "history": _history_to_dict(getattr(booster, "history", None)),
        "train_state": _train_state_to_dict(getattr(booster, "train_state", None)),
    }
    names = getattr(booster, "feature_names", None)
    if names is not None:
        names = [str(n) for n in names]
        if len(names) != int(booster.n_features) or len(set(names)) != len(names):
            raise ValueError(
                f"booster.feature_names must be {booster.n_features} unique strings, got {names!r}"
            )
        out["feature_names"] = names
    labels = categories.labels_to_list(booster)
    if labels is not None:
        out["category_labels"] = labels
    if booster.num_parallel_tree > 1:
        out["num_parallel_tree"] = int(booster.num_parallel_tree)
    return out


def _thresholds_to_list(e):
    """The ensemble ``e``'s thresholds as a JSON-ready object array: numbers, ``"inf"``
    and ``"-inf"`` at splits, None at leaves and categorical splits; checks first that
    its values, gains and covers are finite and no numeric split's threshold is NaN."""
    split = ~np.asarray(e.is_leaf, bool)
    for field in ("value", "gain", "cover"):
        if not np.all(np.isfinite(getattr(e, field))):
            raise ValueError(f"cannot save a model whose trees hold non-finite {field}s")
    thr = np.asarray(e.threshold, np.float32)
    cat_split = split & np.isnan(thr) & (e.cat_bits is not None)
    if np.isnan(thr[split & ~cat_split]).any():
        raise ValueError("cannot save a model with a NaN threshold at a split node")
    threshold = thr.astype(np.float64).astype(object)
    threshold[~split | cat_split] = None
    threshold[split & np.isposinf(thr)] = "inf"
    threshold[split & np.isneginf(thr)] = "-inf"
    return threshold


def _base_margin_to_dict(base, K):
    """A float (``K = 1``) or a list of ``K``; finite, else ``ValueError``."""
    if K == 1:
        base_out = float(base)
        ok = math.isfinite(base_out)
    else:
        base_out = float_list(np.asarray(base, np.float32).reshape(K))
        ok = all(math.isfinite(b) for b in base_out)
    if not ok:
        raise ValueError("cannot save a model with a non-finite base_margin")
    return base_out


def _best_to_dict(booster):
    """``(best_iteration, best_score)``: an int or None, a finite float or None."""
    best_iteration = getattr(booster, "best_iteration", None)
    if best_iteration is not None:
        if not is_int(best_iteration):
            raise ValueError(
                f"booster.best_iteration must be an int or None, got {best_iteration!r}"
            )
        best_iteration = int(best_iteration)
    best_score = getattr(booster, "best_score", None)
    if best_score is not None:
        best_score = float(best_score)
        if not math.isfinite(best_score):
            best_score = None
    return best_iteration, best_score


def _edges_to_dict(edges) -> dict:
    """The ``bin_edges`` entry: each feature's own cuts, missing values, distinct values
    and categories."""
    n_cuts = np.asarray(edges.n_cuts)
    return {
        "max_bin": int(edges.max_bin),
        "cuts": [float_list(edges.cuts[f, : int(n_cuts[f])]) for f in range(edges.cuts.shape[0])],
        "has_missing": np.asarray(edges.has_missing, bool).tolist(),
        "n_distinct": np.asarray(edges.n_distinct, np.int64).tolist(),
        **categories.edges_to_dict(edges),
    }


def _trees_to_dict(booster, e, threshold) -> dict:
    """The ``trees`` entry of ensemble ``e`` (``threshold``: ``_thresholds_to_list``'s)."""
    return {
        "feature": np.asarray(e.feature, np.int64).tolist(),
        "tbin": np.asarray(e.tbin, np.int64).tolist(),
        "threshold": threshold.tolist(),
        "default_left": np.asarray(e.default_left, bool).tolist(),
        "is_leaf": np.asarray(e.is_leaf, bool).tolist(),
        "value": float_list(e.value),
        "gain": float_list(e.gain),
        "cover": float_list(e.cover),
        **({} if e.cat_bits is None else {"categories": categories.trees_to_list(booster)}),
    }


VALUE_OUTPUT = "t mod n_outputs"
"""``trees.value_output``: tree ``t`` adds to output ``t mod K`` only (``K`` trees per
round, forests ``p * K + k`` within a round), so the file holds that column only."""


def reachable(is_leaf) -> np.ndarray:
    """``(T, M)`` bool: the nodes of heap-layout trees that a row can reach (the root,
    and both children of every reachable split), level by level."""
    is_leaf = np.asarray(is_leaf, bool)
    T, M = is_leaf.shape
    reach = np.zeros((T, M), bool)
    if M:
        reach[:, 0] = True
    lo = 0
    while 2 * lo + 1 < M:
        hi = 2 * lo + 1  # this level's nodes are lo .. hi - 1
        parents = reach[:, lo:hi] & ~is_leaf[:, lo:hi]
        reach[:, 2 * lo + 1 : 2 * hi + 1 : 2] = parents
        reach[:, 2 * lo + 2 : 2 * hi + 1 : 2] = parents
        lo = hi
    return reach


def _compact_trees(e, threshold, K) -> dict | None:
    """The ``trees`` entry in the compact layout, or None where it would not restore the
    model exactly (categorical splits, a node no split reaches that is not blank) or
    would not be smaller (one output, and at least 8 nodes in 9 reached: the node lists
    cost more than the nodes left out)."""
    if e.cat_bits is not None:
        return None
    reach = reachable(e.is_leaf)
    off = ~reach
    for name, blank in BLANK_NODE.items():
        a = np.asarray(getattr(e, name))[off]
        if name == "threshold":  # null in the file, as at every leaf
            ok = bool(np.isnan(a).all())
        elif isinstance(blank, float):
            ok = not (np.any(a != 0) or np.any(np.signbit(a)))
        else:
            ok = bool(np.all(a == blank))
        if not ok:
            return None
    out_of_tree = None
    if K > 1:  # training stores w * one_hot(t mod K): the others hold 0 with w's sign
        held = e.one_output_per_tree(K)
        if held is not None:
            e, out_of_tree = held, VALUE_OUTPUT
        else:
            e = e.spread(K)
    value = np.asarray(e.value, np.float32)
    if out_of_tree is None and reach.sum() * (len(BLANK_NODE) + 1) >= reach.size * len(BLANK_NODE):
        return None  # nearly every node is reached: the node lists would cost more
    ends = np.cumsum(reach.sum(axis=1)).tolist()
    starts = [0, *ends[:-1]]

    def rows(a, dtype=None):
        a = np.asarray(a)
        flat = (a[reach] if dtype is None else a[reach].astype(dtype)).tolist()
        return [flat[i:j] for i, j in zip(starts, ends)]

    out = {
        "node": rows(np.broadcast_to(np.arange(reach.shape[1]), reach.shape), np.int64),
        "feature": rows(e.feature, np.int64),
        "tbin": rows(e.tbin, np.int64),
        "threshold": rows(threshold),
        "default_left": rows(e.default_left, bool),
        "is_leaf": rows(e.is_leaf, bool),
        "value": rows(np.asarray(value, np.float32), np.float64),
        "gain": rows(np.asarray(e.gain, np.float32), np.float64),
        "cover": rows(np.asarray(e.cover, np.float32), np.float64),
    }
    if out_of_tree is not None:
        out["value_output"] = out_of_tree
    return out


def _read_params(d) -> TreeParams:
    d = as_object(d, "params")
    missing = [k for k in ("max_depth", "max_bin") if k not in d]
    if missing:
        raise ModelFormatError(f"params: missing key(s) {missing}")
    fields = {f.name for f in TreeParams.__dataclass_fields__.values()}
    unknown = sorted(set(d) - fields)
    if unknown:
        raise ModelFormatError(f"params: unknown key(s) {unknown}; expected {sorted(fields)}")
    try:
        return TreeParams(**d)
    except (TypeError, ValueError) as e:
        raise ModelFormatError(f"params: {e}") from None


def _read_bin_edges(d, F, max_bin) -> BinEdges:
    where = "bin_edges"
    as_object(d, where)
    check_keys(
        d, where, ("max_bin", "cuts", "has_missing", "n_distinct"), ("categorical", "categories")
    )
    if as_int(d["max_bin"], f"{where}.max_bin") != max_bin:
        fail(f"{where}.max_bin", f"params.max_bin = {max_bin}", d["max_bin"])
    cuts_in = d["cuts"]
    if not isinstance(cuts_in, list) or len(cuts_in) != F:
        fail(f"{where}.cuts", f"a list of n_features = {F} lists", cuts_in)
    width = max(max_bin - 2, 1)
    cuts = np.full((F, width), np.inf, np.float32)
    n_cuts = np.zeros(F, np.int32)
    for f, row in enumerate(cuts_in):
        w = f"{where}.cuts[{f}]"
        if not isinstance(row, list) or len(row) > max_bin - 2:
            fail(w, f"a list of at most max_bin - 2 = {max_bin - 2} numbers", row)
        arr = nested(row, w, (len(row),), "float")
        if arr.size > 1 and not np.all(arr[1:] > arr[:-1]):
            i = int(np.flatnonzero(~(arr[1:] > arr[:-1]))[0]) + 1
            fail(
                f"{w}[{i}]",
                f"cuts strictly ascending (greater than {float(arr[i - 1])!r})",
                float(arr[i]),
            )
        cuts[f, : arr.size] = arr
        n_cuts[f] = arr.size
    has_missing = nested(d["has_missing"], f"{where}.has_missing", (F,), "bool")
    n_distinct = nested(d["n_distinct"], f"{where}.n_distinct", (F,), "int")
    if (n_distinct < 0).any():
        i = int(np.flatnonzero(n_distinct < 0)[0])
        fail(f"{where}.n_distinct[{i}]", "an integer >= 0", int(n_distinct[i]))
    edges = BinEdges(
        cuts=cuts,
        n_cuts=n_cuts,
        has_missing=has_missing,
        n_distinct=n_distinct,
        max_bin=int(max_bin),
    )
    return categories.read_edges(d, edges)


def _read_trees(d, params: TreeParams, edges: BinEdges, F, K, tpr) -> Ensemble:
    where = "trees"
    as_object(d, where)
    check_keys(
        d,
        where,
        tuple(f for f in Ensemble._fields if f != "cat_bits"),
        ("categories", "node", "value_output"),
    )
    M = params.n_nodes
    rows = d["feature"]
    if not isinstance(rows, list):
        fail(f"{where}.feature", "a list of trees", rows)
    T = len(rows)
    per_tree = "node" in d and "value_output" in d  # values (T, M): one output per tree
    if T * M > MAX_NODES or (T * M * K > MAX_NODES and not per_tree):
        raise ModelFormatError(
            f"{where}: {T} trees of {M} nodes and {K} output(s) exceed "
            f"the limit of {MAX_NODES} nodes/values"
        )
    if T % tpr:
        raise ModelFormatError(f"{where}: {T} trees is not a multiple of trees_per_round = {tpr}")
    shape = (T, M)
    kinds = dict(
        feature="int",
        tbin="int",
        threshold="threshold",
        default_left="bool",
        is_leaf="bool",
        value="float",
        gain="float",
        cover="float",
    )
    # (the trees' categorical splits are checked below, categories.read_trees)
    if "node" in d:
        arrays = _read_compact(d, kinds, T, M, K)
    else:
        if "value_output" in d:
            fail(f"{where}.value_output", "absent (it goes with trees.node)", d["value_output"])
        arrays = {}
        for name, kind in kinds.items():
            s = shape + (K,) if name == "value" and K > 1 else shape
            arrays[name] = nested(d[name], f"{where}.{name}", s, kind)
    _check_tree_bins(arrays, edges, F)
    _check_tree_structure(arrays["is_leaf"], params.max_depth)
    feature, tbin, is_leaf = arrays["feature"], arrays["tbin"], arrays["is_leaf"]
    threshold = arrays["threshold"]
    split = ~is_leaf

    # Thresholds: null at leaves, the bin edge of (feature, tbin) at split nodes (null at
    # categorical splits).
    bad = is_leaf & ~np.isnan(threshold)
    if bad.any():
        t, i = _first_tree_node(bad)
        fail(f"{where}.threshold[{t}][{i}]", "null at a leaf", float(threshold[t, i]))
    cat_bits = categories.read_trees(d, arrays, edges, split)
    expected = edges.cuts_ext()[feature, tbin]
    bad = split & ~(threshold == expected)
    if cat_bits is not None:
        bad &= ~np.isnan(threshold)
    if bad.any():
        t, i = _first_tree_node(bad)
        exp = float(expected[t, i])
        exp_text = f'"{"inf" if exp > 0 else "-inf"}"' if math.isinf(exp) else repr(exp)
        fail(
            f"{where}.threshold[{t}][{i}]",
            f"{exp_text}, the bin edge of feature {int(feature[t, i])} at tbin {int(tbin[t, i])}",
            float(threshold[t, i]),
        )

    return Ensemble(
        feature=feature.astype(np.int32),
        tbin=tbin.astype(np.int32),
        threshold=threshold,
        default_left=arrays["default_left"],
        is_leaf=is_leaf,
        value=arrays["value"],
        gain=arrays["gain"],
        cover=arrays["cover"],
        cat_bits=cat_bits,
    )


def _read_compact(d, kinds, T, M, K) -> dict:
    """The compact layout's fields as full ``(T, M)`` arrays (``(T, M, K)`` values, or
    ``(T, M)`` with ``value_output``: each tree's own output's, output ``t mod K``, as
    ``Ensemble`` holds class trees): each tree's listed nodes from the file, every other node
    ``BLANK_NODE``. The listed nodes must be exactly those a row can reach
    (``reachable``).

    Each field is checked as one flat list (a file of millions of one-node trees loads
    in one pass per field, not one per tree); an entry that fails is then named by its
    tree and position, ``trees.feature[t][j]``."""
    where = "trees"
    if "categories" in d:
        fail(f"{where}.categories", "absent (categorical models use the full layout)", "...")
    per_tree = "value_output" in d
    if per_tree and (K == 1 or d["value_output"] != VALUE_OUTPUT):
        expected = f'"{VALUE_OUTPUT}" with n_outputs > 1' if K > 1 else "absent (one output)"
        fail(f"{where}.value_output", expected, d["value_output"])
    for name in ("node", *kinds):
        if not isinstance(d[name], list) or len(d[name]) != T:
            fail(f"{where}.{name}", f"a list of {T} trees (as trees.feature)", d[name])
    rows = d["node"]
    n = np.array([len(r) if type(r) is list else -1 for r in rows], np.int64)
    bad = (n < 1) | (n > M)
    if bad.any():
        t = int(np.flatnonzero(bad)[0])
        fail(f"{where}.node[{t}]", f"a list of 1 to {M} node indices", rows[t])
    tree = np.repeat(np.arange(T), n)  # each entry's tree
    first = np.zeros(tree.size, bool)
    first[np.cumsum(n)[:-1]] = True
    if tree.size:
        first[0] = True
    node = _flat(rows, n, f"{where}.node", (), "int")
    prev = np.r_[np.int64(-1), node[:-1]]
    bad = (node < 0) | (node >= M) | np.where(first, node != 0, node <= prev)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        t, j = int(tree[i]), int(i - np.searchsorted(tree, tree[i]))
        fail(
            f"{where}.node[{t}][{j}]",
            f"node indices in [0, {M}), ascending from the root 0",
            int(node[i]),
        )
    dtypes = dict(int=np.int64, bool=bool, float=np.float32, threshold=np.float32)
    arrays = {}
    for name, kind in kinds.items():
        wide = name == "value" and K > 1 and not per_tree
        arrays[name] = np.full((T, M, K) if wide else (T, M), BLANK_NODE[name], dtypes[kind])
        lists_k = wide and not per_tree
        t = next((t for t, r in enumerate(d[name]) if type(r) is not list or len(r) != n[t]), None)
        if t is not None:
            fail(
                f"{where}.{name}[{t}]", f"a list of {n[t]} entries (as trees.node[{t}])", d[name][t]
            )
        got = _flat(d[name], n, f"{where}.{name}", (K,) if lists_k else (), kind)
        arrays[name][tree, node] = got
    listed = np.zeros((T, M), bool)
    listed[tree, node] = True
    reach = reachable(arrays["is_leaf"])
    if (listed != reach).any():
        t, i = _first_tree_node(listed != reach)
        p = (i - 1) // 2
        why = (
            f"node {i} is listed, but no split reaches it"
            if listed[t, i]
            else f"node {i}, a child of split node {p}, is not listed"
        )
        raise ModelFormatError(
            f"{where}.node[{t}]: expected the nodes a row can reach, exactly; {why}"
        )
    return arrays


def _flat(rows, n, where, inner, kind) -> np.ndarray:
    """The entries of the per-tree lists ``rows`` (``n[t]`` in tree ``t``, each of shape
    ``inner``) checked as ``kind`` and joined tree after tree; a failing entry is named
    by its tree: ``where[t][j]``."""
    flat = list(itertools.chain.from_iterable(rows))
    try:
        return nested(flat, where, (len(flat), *inner), kind)
    except ModelFormatError as e:
        at = re.match(re.escape(where) + r"\[(\d+)\]", str(e))
        if at is None:
            raise
        t = int(np.searchsorted(np.cumsum(n), int(at.group(1)), side="right"))
        nested(rows[t], f"{where}[{t}]", (int(n[t]), *inner), kind)  # names tree t
        raise


def _first_tree_node(mask):
    """``(t, i)``: the first tree and node where the ``(T, M)`` ``mask`` holds."""
    t, i = (int(j) for j in np.argwhere(mask)[0])
    return t, i


def _check_tree_bins(arrays, edges: BinEdges, F) -> None:
    """The trees' features are the model's ``F``, their bins within their feature's."""
    where = "trees"
    feature, tbin = arrays["feature"], arrays["tbin"]
    split = ~arrays["is_leaf"]
    bad = (feature < 0) | (feature >= F)
    if bad.any():
        t, i = _first_tree_node(bad)
        fail(f"{where}.feature[{t}][{i}]", f"a feature index in [0, {F})", int(feature[t, i]))
    bad = (tbin < 0) | (tbin > edges.max_bin - 1)
    if bad.any():
        t, i = _first_tree_node(bad)
        fail(
            f"{where}.tbin[{t}][{i}]",
            f"a bin in [0, max_bin - 1 = {edges.max_bin - 1}]",
            int(tbin[t, i]),
        )
    limit = edges.n_cuts[feature] + 1
    bad = split & (tbin > limit)
    if bad.any():
        t, i = _first_tree_node(bad)
        fail(
            f"{where}.tbin[{t}][{i}]",
            f"a bin <= n_cuts + 1 = {int(limit[t, i])} of feature {int(feature[t, i])}",
            int(tbin[t, i]),
        )


def _check_tree_structure(is_leaf, max_depth) -> None:
    """Leaves' children are leaves; the last level holds only leaves."""
    where = "trees"
    shape = is_leaf.shape
    M = shape[1]
    split = ~is_leaf
    first_last = (M - 1) // 2
    bad = np.zeros(shape, bool)
    bad[:, first_last:] = split[:, first_last:]
    if bad.any():
        t, i = _first_tree_node(bad)
        raise ModelFormatError(
            f"{where}.is_leaf[{t}][{i}]: expected a leaf (node {i} is in "
            f"the last level of a depth-{max_depth} tree and has "
            f"no children), got a split node"
        )
    if M > 1:
        parent = (np.arange(1, M) - 1) // 2
        bad = np.zeros(shape, bool)
        bad[:, 1:] = split[:, 1:] & is_leaf[:, parent]
        if bad.any():
            t, i = _first_tree_node(bad)
            raise ModelFormatError(
                f"{where}.is_leaf[{t}][{i}]: expected a leaf, because its parent node "
                f"{(i - 1) // 2} is a leaf (split nodes must form a tree), got a split node"
            )


def _check_sums(ens: Ensemble, base_margin) -> None:
    """Leaf values whose sums could overflow float32, covers SHAP cannot use."""
    K = np.size(base_margin)
    per_tree = (np.arange(ens.n_trees) % K) if ens.held_one_output_per_tree(K) else None
    over = margin_overflow(ens.value, ens.is_leaf, base_margin, per_tree)
    if over is not None:
        k, bound = over
        out = f" for output {k}" if K > 1 else ""
        raise ModelFormatError(
            f"trees.value: the leaf values of the {ens.n_trees} trees and base_margin add "
            f"up to {bound:.6g}{out}, beyond the float32 range (3.4028e38): predictions "
            f"would overflow to inf; expected leaf values whose sums stay finite"
        )
    t, i, c, left, right = heap_split_covers(ens.cover, ens.is_leaf)
    j = cover_problem(c, left, right)
    if j is not None:
        t, i = int(t[j]), int(i[j])
        raise ModelFormatError(
            f"trees.cover[{t}][{i}]: expected the cover of a split node and of its "
            f"children {2 * i + 1} and {2 * i + 2} to be >= 0 and the children's to add "
            f"up to the node's (SHAP values weight the branches by these fractions), got "
            f"{float(c[j])!r} = {float(left[j])!r} + {float(right[j])!r}"
        )


def _read_history(d) -> dict:
    where = "history"
    as_object(d, where)
    out = {}
    total = 0
    for data, metrics in d.items():
        as_object(metrics, f"{where}.{data}")
        out[data] = {}
        for metric, scores in metrics.items():
            w = f"{where}.{data}.{metric}"
            if not isinstance(scores, list):
                fail(w, "a list of numbers or nulls", scores)
            total += len(scores)
            if total > MAX_HISTORY:
                raise ModelFormatError(f"{where}: more than {MAX_HISTORY} entries")
            vals = []
            for i, s in enumerate(scores):
                vals.append(math.nan if s is None else as_finite(s, f"{w}[{i}]"))
            out[data][metric] = vals
    return out


def _read_feature_names(v, F):
    where = "feature_names"
    if v is None:
        return None
    if not isinstance(v, list) or len(v) != F:
        fail(where, f"a list of n_features = {F} strings, or null", v)
    seen = set()
    for i, name in enumerate(v):
        if not isinstance(name, str):
            fail(f"{where}[{i}]", "a string", name)
        if name in seen:
            fail(f"{where}[{i}]", "a name not used by an earlier feature", name)
        seen.add(name)
    return list(v)


def _read_train_state(d):
    where = "train_state"
    if d is None:
        return None
    as_object(d, where)
    if not d:
        return {}
    missing = [k for k in ("seed", "rounds") if k not in d]
    if missing:
        raise ModelFormatError(f"{where}: missing key(s) {missing}")
    out = {
        "seed": as_int(d["seed"], f"{where}.seed", lo=0),
        "rounds": as_int(d["rounds"], f"{where}.rounds", lo=0),
    }
    for k, v in d.items():
        if k not in out:
            out[k] = check_scalar(v, f"{where}.{k}")
    return out


def _check_header(d) -> None:
    """The model's first checks: a JSON object of jaxboost's format, of a version this
    jaxboost reads, with the keys it expects."""
    if not isinstance(d, dict):
        fail("model", "a JSON object", d)
    as_object(d, "model")
    if d.get("format") != FORMAT_NAME:
        if "format" not in d:
            raise ModelFormatError(
                f"format: missing key; this is not a jaxboost model "
                f'file (expected "format": "{FORMAT_NAME}")'
            )
        fail("format", f'"{FORMAT_NAME}" (not a jaxboost model file?)', d["format"])
    if "format_version" not in d:
        raise ModelFormatError("format_version: missing key")
    version = as_int(d["format_version"], "format_version")
    if version > FORMAT_VERSION:
        raise ModelFormatError(
            f"format_version: this file has format version {version}, "
            f"newer than the version this jaxboost reads "
            f"({FORMAT_VERSION}); upgrade jaxboost to load it"
        )
    if version != FORMAT_VERSION:
        fail("format_version", f"{FORMAT_VERSION}", version)
    check_keys(d, "model", _TOP_KEYS, _OPTIONAL_KEYS)
    if not isinstance(d["jaxboost_version"], str):
        fail("jaxboost_version", "a string", d["jaxboost_version"])


def _parse(d) -> dict:
    """Validate a parsed model; the constructor arguments (objective not yet resolved)."""
    _check_header(d)
    params = _read_params(d["params"])
    F = as_int(d["n_features"], "n_features", lo=1, hi=MAX_FEATURES)
    K = as_int(d["n_outputs"], "n_outputs", lo=1)
    if K > MAX_CLASSES:
        raise ModelFormatError(
            f"n_outputs: {K} outputs, more than jaxboost's limit of "
            f"MAX_CLASSES = {MAX_CLASSES} (objectives.MAX_CLASSES)"
        )
    n_parallel = as_int(d.get("num_parallel_tree", 1), "num_parallel_tree", lo=1, hi=MAX_NODES)
    tpr = as_int(d["trees_per_round"], "trees_per_round", lo=1)
    if tpr not in (n_parallel, K * n_parallel):
        fail(
            "trees_per_round",
            f"num_parallel_tree = {n_parallel} times 1 or n_outputs = {K}"
            if n_parallel > 1
            else f"1 or n_outputs = {K}",
            tpr,
        )

    base = d["base_margin"]
    if K == 1:
        base_margin = as_finite(base, "base_margin", float32=True)
    else:
        base_margin = nested(base, "base_margin", (K,), "float")

    edges = _read_bin_edges(d["bin_edges"], F, params.max_bin)
    ensemble = _read_trees(d["trees"], params, edges, F, K, tpr)
    n_rounds = ensemble.n_trees // tpr
    _check_sums(ensemble, base_margin)

    best_iteration = d["best_iteration"]
    if best_iteration is not None:
        if n_rounds == 0:
            fail("best_iteration", "null (the model has no rounds)", best_iteration)
        best_iteration = as_int(best_iteration, "best_iteration", lo=0, hi=n_rounds - 1)
    best_score = d["best_score"]
    if best_score is not None:
        best_score = as_finite(best_score, "best_score")

    return dict(
        objective=objective_from_dict(d["objective"], K),
        ensemble=ensemble,
        params=params,
        bin_edges=edges,
        base_margin=base_margin,
        n_features=F,
        n_outputs=K,
        trees_per_round=tpr,
        num_parallel_tree=n_parallel,
        feature_names=_read_feature_names(d.get("feature_names"), F),
        category_labels=categories.read_labels(d.get("category_labels"), edges),
        extra=dict(
            best_iteration=best_iteration,
            best_score=best_score,
            history=_read_history(d["history"]),
            train_state=_read_train_state(d["train_state"]),
        ),
    )


def from_dict(d, objective=None, link=None, *, replace_objective: bool = False) -> Booster:
    """Rebuild a ``Booster`` from ``to_dict``'s output (or parsed JSON), validating it.

    Args:
      d: the parsed model.
      objective: the loss to attach. A model trained with a plain callable loss loads
        without it too: it predicts through the stored link, and what evaluates the
        loss (training on, the ``"loss"`` metric) raises ``TypeError`` until the same
        callable is passed here (another name warns). For a catalogue model it may repeat the
        stored objective (same entry and hyperparameters); another one is refused
        (``ValueError``) unless ``replace_objective=True``, since it changes what
        ``predict`` returns (a logistic model loaded as ``"squared"`` predicts
        margins). A catalogue name is accepted too.
      replace_objective: attach ``objective`` in place of the stored catalogue
        objective, link included (an explicit override).
      link: the inverse link of a plain callable ``objective`` (as ``train``'s
        ``link``). A named link (``"sigmoid"``, ...) is stored in the file and restored
        without it; a custom callable link is stored by qualname only and must be
        passed again.

    Raises:
      ModelFormatError: ``d`` is not a valid model (message names the key).
      TypeError: the model needs ``link=`` (a custom link, stored by name only) and
        none was given.
      ValueError: ``link`` conflicts with a catalogue objective's own link.
    """
    if isinstance(d, dict) and d.get("format") == ESTIMATOR_FORMAT:
        d = d.get("model")  # an estimator's file: its model (validated as any)
    try:
        parts = _parse(d)
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
    ) as e:  # a safety net: every check above should come first
        raise ModelFormatError(f"invalid model ({type(e).__name__}: {e})") from e

    stored = parts.pop("objective")
    K = parts["n_outputs"]
    if objective is not None:
        given = given_objective(objective, K, targets=isinstance(stored, MultiTarget))
        if not isinstance(stored, StoredCallable) and not replace_objective:
            _same_objective(given, stored)
        if isinstance(stored, StoredCallable) and not replace_objective:
            _same_callable(given, stored)
        obj = with_stored_link(given, stored, link, K)
    elif isinstance(stored, StoredCallable):
        # Predicting needs only the link; the loss stands in until it is needed.
        obj = with_stored_link(MissingLoss(stored.qualname), stored, link, K)
    else:
        obj = with_stored_link(stored, stored, link, K)

    extra = parts.pop("extra")
    accepted = inspect.signature(Booster.__init__).parameters
    booster = Booster(
        parts.pop("ensemble"),
        objective=obj,
        **parts,
        **{k: v for k, v in extra.items() if k in accepted},
    )
    for k, v in extra.items():
        if k not in accepted:
            setattr(booster, k, v)
    return booster


def _same_callable(given, stored) -> None:
    """Warn when the loss passed to ``load`` is not named as the file's custom loss
    (a renamed function loads too; another loss would train on from the model)."""
    from objectives import LinkedLoss

    from .objective import _qualname

    have = _qualname(given.loss if isinstance(given, LinkedLoss) else given)
    if have != stored.qualname and not have.endswith("<lambda>"):
        warnings.warn(
            f"this model was trained with the custom loss {stored.qualname}, and "
            f"objective={have} stands for it; pass the same loss (or "
            f"replace_objective=True to replace it on purpose)",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def _same_objective(given, stored) -> None:
    """Refuse a caller's objective that is not the file's catalogue objective."""
    from .objective import objective_to_dict

    have, want = objective_to_dict(given), objective_to_dict(stored)
    if have != want:

        def text(d):
            if d["kind"] == "catalogue":
                params = ", ".join(f"{k}={v!r}" for k, v in d["params"].items())
                return f"objectives.{d['name']}({params})"
            return d["qualname"]

        raise ValueError(
            f"this model file stores the objective {text(want)}, and "
            f"objective={text(have)} would replace it (and its link: what "
            f"predict returns); load without objective= to use the stored "
            f"one, or pass replace_objective=True to replace it"
        )


# --------------------------------------------------------------------------------------
# Text and files
# --------------------------------------------------------------------------------------


def dumps(booster: Booster, *, indent=None, compact: bool = True) -> str:
    """The model as JSON text (no whitespace unless ``indent`` is given); the trees in
    the compact layout unless ``compact=False`` (``to_dict``)."""
    seps = (",", ":") if indent is None else (",", ": ")
    return json.dumps(
        to_dict(booster, compact=compact),
        allow_nan=False,
        indent=indent,
        separators=seps,
        ensure_ascii=True,
    )


def loads(text, objective=None, link=None, *, replace_objective: bool = False) -> Booster:
    """A ``Booster`` from JSON text (``str`` or UTF-8 ``bytes``); see ``from_dict``."""
    return from_dict(
        parse_json(text), objective=objective, link=link, replace_objective=replace_objective
    )


def save(booster: Booster, path, *, indent=None, compact: bool = True) -> None:
    """Write the model to ``path`` as JSON, atomically (``files.atomic_write``): after
    a crash at any moment ``path`` holds either the old file or the new one, never a
    mix, and the temporary file of a save that was killed is removed by the next save
    to ``path``. A FIFO, a device or a socket at ``path`` is refused (``ValueError``),
    a directory too (``IsADirectoryError``), before the model is written."""
    atomic_write(path, dumps(booster, indent=indent, compact=compact).encode("utf-8"))


def load(path, objective=None, link=None, *, replace_objective: bool = False) -> Booster:
    """Read a model written by ``save``; see ``from_dict`` for ``objective``, ``link``
    and ``replace_objective``.

    Raises ``ModelFormatError`` for anything but a valid model file: a file that is
    not a regular file (a FIFO, a device, a directory), larger than
    ``files.MAX_TEXT_BYTES``, too costly to parse (``files.MAX_PARSE_BYTES``), or not
    a valid model; all checked before the parse or before anything of the declared
    size is allocated. ``OSError`` when the file cannot be opened or read.
    """
    return from_dict(
        read_json(path), objective=objective, link=link, replace_objective=replace_objective
    )


__all__ = [
    "FORMAT_VERSION",
    "ModelFormatError",
    "to_dict",
    "from_dict",
    "dumps",
    "loads",
    "save",
    "load",
]


register_writer("json", save)
