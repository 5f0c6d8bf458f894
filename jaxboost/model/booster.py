"""``Booster``: a trained ensemble with what prediction needs beside the trees."""

from __future__ import annotations

import difflib
import numbers
import warnings
from typing import NamedTuple

import numpy as np

from objectives import LinkedLoss, Objective
from objectives._link import link_label

from .._types import bucket_rows, float32_programs, pad_rows
from ..engine.autodiff import HESSIAN_FLOOR, loss_name, model_grad_hess
from ..engine.binning import BinEdges
from ..engine.tree import (
    Ensemble,
    native_predict_enabled,
    predict_leaf,
    predict_margin,
    predict_margin_host,
    staged_margins,
    staged_margins_host,
)
from ..errors import DataError, DataWarning
from ..inputs.arrays import (
    as_features,
    as_offsets,
    as_targets,
    as_weights,
    is_side_data,
    pad_targets,
    target_structure,
)
from ..inputs.frames import check_feature_names, check_names_list, frame_kind
from ..inputs.sparse import ColumnView, block_rows, dense_rows, is_sparse
from .params import TreeParams

# Model writers by format, registered by the modules that own the formats
# (``jaxboost.io.format``: "json", ``jaxboost.io.xgboost``: "xgboost") when they are
# imported, which ``import jaxboost`` does. The model does not import its file formats:
# they import it.
_WRITERS: dict = {}


def register_writer(fmt: str, write) -> None:
    """Register ``write(booster, path)`` as the writer of format ``fmt``."""
    _WRITERS[fmt] = write


def _writer(fmt: str):
    try:
        return _WRITERS[fmt]
    except KeyError:  # only if jaxboost/__init__ was bypassed
        raise RuntimeError(f"no writer for {fmt!r} models: import jaxboost first") from None


def _link_of(objective):
    return getattr(objective, "link", None)


def _link_text(objective):
    """The inverse link's name (``"sigmoid"``), its qualname for another callable, or
    ``"none (margins)"`` for a plain callable loss without one."""
    link = _link_of(objective)
    return "none (margins)" if link is None else link_label(link)


PREDICT_BLOCK_VALUES = 1 << 24
"""Entries (rows x features) of one block of a dense ``X`` at prediction (64 MB of
float32): a 20M-row ``predict`` holds the input, the output and one block."""

SHAP_PATHS_KEPT_BYTES = 32 << 20
"""TreeSHAP's leaf paths are kept with the model up to this size (``_TreeLayouts``)."""

STAGED_BLOCK_VALUES = 1 << 22
"""``staged_predict``: (trees x rows x outputs) margins computed per block (16 MB)."""


def _pow2_floor(n: int) -> int:
    n = max(1, int(n))
    return 1 << (n.bit_length() - 1)


def _available_bytes():
    """Memory the system reports available (Linux ``MemAvailable``), or None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _check_output_size(shape, what: str, hint: str) -> None:
    """Refuse (``MemoryError`` with the sizes and ``hint``) an output of float32
    ``shape`` larger than the memory the system has available, before any work."""
    need = 4
    for d in shape:
        need *= int(d)
    avail = _available_bytes()
    if avail is not None and need > avail:
        raise MemoryError(
            f"{what} would return a float32 array of shape {tuple(int(d) for d in shape)}, "
            f"{need / 2**30:.1f} GiB, more than the {avail / 2**30:.1f} GiB of memory "
            f"available; {hint}"
        )


def _read_only(a) -> np.ndarray:
    """A read-only NumPy view of ``a`` (``a`` itself unchanged)."""
    view = np.asarray(a).view()
    view.flags.writeable = False
    return view


def one_output_per_tree(n_outputs: int, trees_per_round: int, num_parallel_tree: int) -> bool:
    """Whether a model of these shapes grows one tree per output (``K > 1`` outputs as
    ``K`` trees per round, ``num_parallel_tree`` of each; ``Booster.one_output_per_tree``):
    its class trees are then held with their own values (``Booster.trees``)."""
    return n_outputs > 1 and trees_per_round == n_outputs * num_parallel_tree


def _short_list(items: list) -> str:
    """``[a, b, c]``; past six items the first three and the last (``[a, b, c, ..., z]``),
    so that a model of 100 classes prints its base margins on one line."""
    if len(items) > 6:
        items = items[:3] + ["..."] + items[-1:]
    return "[" + ", ".join(items) + "]"


def _read_only_trees(trees: Ensemble) -> Ensemble:
    """``trees`` with every field a read-only NumPy view."""
    return Ensemble(*(None if a is None else _read_only(a) for a in trees))


class _TreeLayouts:
    """A model's trees in the layouts prediction reads, each made on first use and
    kept; one holder is shared by a booster and its slices ``booster[:k]`` (whose trees
    begin the model's, so the first ``k`` trees of a layout serve them).

    * ``get()``: the trees padded to a bucketed count (``Ensemble.padded``) for the
      compiled device predictor. Made lazily because the native CPU predictor reads
      the trees as they are: a padded copy built with every model doubled its memory
      (sklearn's digits, softmax, 100 rounds: 7.9 MiB more per model, held and made at
      the end of each fit).
    * ``native(max_depth, n_outputs)``: the native CPU predictor's packed trees
      (``jaxboost.native.pack_trees``): 0.2-0.4 ms a call for a digits softmax, most
      of a small prediction, when it was packed anew each time.
    * ``shap_paths(make)``: TreeSHAP's leaf paths (``model.explain``).
    """

    __slots__ = ("_trees", "_padded", "_native", "_shap")

    def __init__(self, trees: Ensemble):
        self._trees = trees  # class trees as held (predict_margin takes n_outputs)
        self._padded = None
        self._native = None
        self._shap = None

    def get(self) -> Ensemble:
        """The padded layout."""
        if self._padded is None:  # a race makes two equal copies, never a wrong one
            self._padded = self._trees.padded()
        return self._padded

    def native(self, max_depth: int, n_outputs: int):
        if self._native is None:  # as above
            from .. import native

            self._native = native.pack_trees(self._trees, max_depth, n_outputs)
        return self._native

    def shap_paths(self, make):
        """TreeSHAP's leaf paths of the trees (``make(trees)``), kept when they take at
        most ``SHAP_PATHS_KEPT_BYTES`` (a model of 10,000 trees at depth 6 has some
        300,000 paths: 75 MB, made again on each call instead)."""
        if self._shap is not None:
            return self._shap
        paths = make(self._trees)
        if paths.nbytes <= SHAP_PATHS_KEPT_BYTES:  # a race keeps one of two equal ones
            self._shap = paths
        return paths

    @property
    def made(self) -> bool:
        """Whether the padded layout was made."""
        return self._padded is not None


class GradHess(NamedTuple):
    """What the trees of one round see (``Booster.grad_hess``): per-row gradients ``g``,
    Hessians ``h`` and the ``margin`` they are taken at, float32 NumPy arrays."""

    g: np.ndarray
    h: np.ndarray
    margin: np.ndarray


_XGBOOST_NAMES = {  # XGBoost Booster methods a user reaches for, and jaxboost's way
    "load_model": "load a model with jaxboost.load(path), which returns the Booster",
    "get_dump": "booster.dump() returns every tree as text, booster.trees_to_dataframe() "
    "as a table",
    "dump_model": "booster.dump() returns every tree as text",
    "inplace_predict": "booster.predict(X) predicts any array or DataFrame",
    "get_fscore": "booster.get_score() counts the splits per feature",
    "num_features": "booster.n_features is the number of features",
    "set_param": "a trained model's parameters are fixed; pass them to jaxboost.train",
    "best_ntree_limit": "booster.best_iteration is the early-stopping round; "
    "booster[: booster.best_iteration + 1] is that model",
    "feature_types": "booster.categorical_features lists the categorical features",
}


class Booster:
    """A trained model: stacked trees, bin edges, base margin and the objective.

    ``booster[:k]`` is the model of the first ``k`` rounds; ``len(booster)`` the number
    of rounds. ``ensemble`` holds the trees as read-only NumPy arrays, which a model's
    slices share; to change them, give the model new ones
    (``bst.ensemble = bst.ensemble._replace(value=bst.ensemble.value * 0.5)``). A model
    of ``K`` outputs grown one tree per output (softmax's class trees) holds each tree's
    own values only (``trees``; ``K`` times less memory), and ``ensemble`` shows them in
    the ``(T, M, K)`` layout.

    Example:
      >>> import numpy as np, jaxboost, objectives
      >>> X = np.arange(8, dtype=np.float32).reshape(-1, 1); y = (X[:, 0] > 3) * 1.0
      >>> bst = jaxboost.train(objectives.logistic, X, y, n_rounds=5, min_child_weight=0)
      >>> len(bst), len(bst[:2])
      (5, 2)
      >>> bool(bst.predict(X)[0] < 0.5 < bst.predict(X)[-1])
      True
    """

    error: Exception | None = None
    """The error that stopped this model early in ``train_many`` (its partial model is
    returned), else None."""

    def __init__(
        self,
        ensemble: Ensemble,
        *,
        objective,
        params: TreeParams,
        bin_edges: BinEdges,
        base_margin,
        n_features: int,
        n_outputs: int = 1,
        trees_per_round: int = 1,
        feature_names=None,
        category_labels=None,
        num_parallel_tree: int = 1,
        _padded: _TreeLayouts | None = None,
    ):
        self.objective = objective
        self.params = params
        self.bin_edges = bin_edges
        self.n_outputs = int(n_outputs)
        self.trees_per_round = int(trees_per_round)
        # Trees per output and round: P > 1 for a forest (train(num_parallel_tree=P)).
        self.num_parallel_tree = int(num_parallel_tree)
        self.ensemble = ensemble  # read-only views, class trees held compactly (the setter)
        if _padded is not None:  # a slice: the whole model's padded trees
            self._padded_trees = _padded
        self.base_margin = (
            float(base_margin)
            if self.n_outputs == 1
            else np.asarray(base_margin, np.float32).reshape(self.n_outputs)
        )
        self.n_features = int(n_features)
        # Column names from training (a DataFrame's, or train(feature_names=...)); None
        # when unknown. DataFrames given to predict must have exactly these columns.
        self.feature_names = (
            None if feature_names is None else check_names_list(feature_names, self.n_features)
        )
        # The labels of DataFrame categories ({feature index: [labels]}, code c is
        # labels[c]); None when the model has none. predict re-codes DataFrames by them.
        self.category_labels = (
            None if not category_labels else {int(f): list(v) for f, v in category_labels.items()}
        )
        # Set by train(): evaluation history, early-stopping result, and the state
        # continued training needs (seed, rounds).
        self.history: dict = {}
        self.best_iteration: int | None = None
        self.best_score: float | None = None
        self.train_state: dict = {}

    @property
    def trained_with_offsets(self) -> bool:
        """Whether ``train`` received margins per row (``base_margin`` of shape ``(N,)``
        or ``(N, K)``): the model's margins are then offsets plus trees, and
        ``predict``/``staged_predict``/``grad_hess`` without ``base_margin`` warn
        (``DataWarning``); evaluation sets without ``eval_base_margin`` are refused.
        Recorded in ``train_state`` (saved with the model)."""
        return (self.train_state or {}).get("offsets") is True

    # --- structure -----------------------------------------------------------------
    @property
    def ensemble(self) -> Ensemble:
        """The trees (``Ensemble``), read-only NumPy arrays, values ``(T, M, K)`` for
        ``K`` outputs. For class trees (``one_output_per_tree``) this layout is made from
        ``trees`` on first use and kept with the model (``K`` times the memory of their
        values); prediction, saving and slicing read ``trees`` and never make it."""
        if not self._trees.held_one_output_per_tree(self.n_outputs):
            return self._trees
        spread = self._spread
        if spread is None:  # a race makes two equal copies, never a wrong one
            spread = self._spread = _read_only_trees(self._trees.spread(self.n_outputs))
        return spread

    @ensemble.setter
    def ensemble(self, trees: Ensemble) -> None:
        # read-only views: booster[:k] shares these arrays (as may the training chunk
        # they were read from), so writing into one model's trees would change another's
        trees = Ensemble(*trees)
        if self.one_output_per_tree:  # hold each class tree's own values only
            held = trees.one_output_per_tree(self.n_outputs)
            trees = trees.spread(self.n_outputs) if held is None else held
        self._trees = _read_only_trees(trees)
        self._spread = None
        # The trees padded to a bucketed count, shared by every slice booster[:k] of one
        # model, so all of them predict with one compiled program; made on first use
        # (the native CPU predictor never needs them), and anew for new trees.
        self._padded_trees = _TreeLayouts(self._trees)

    @property
    def trees(self) -> Ensemble:
        """The trees as the model holds them: ``ensemble``, except that class trees
        (``one_output_per_tree``) hold each tree's own values, ``value`` ``(T, M)``, tree
        ``t``'s of output ``t % K`` (see ``jaxboost.engine.tree.Ensemble``): a 100-class
        softmax of 50 rounds at depth 6 holds 2.4 MiB of values where ``ensemble`` has
        242 MiB. Read-only NumPy arrays.

        Example:
          >>> import numpy as np, jaxboost
          >>> X = np.arange(12, dtype=np.float32).reshape(-1, 1); y = np.arange(12) % 3
          >>> bst = jaxboost.train("softmax", X, y, n_rounds=2, max_depth=2)
          >>> bst.trees.value.shape, bst.ensemble.value.shape
          ((6, 7), (6, 7, 3))
        """
        return self._trees

    @property
    def nbytes(self) -> int:
        """Bytes of the trees the model holds (``trees``' arrays; the ``(T, M, K)``
        layout of class trees counts once ``ensemble`` has made it)."""
        n = sum(int(a.nbytes) for a in self._trees if a is not None)
        return n + (0 if self._spread is None else int(self._spread.value.nbytes))

    def __len__(self) -> int:
        return self._trees.n_trees // self.trees_per_round

    @property
    def n_rounds(self) -> int:
        return len(self)

    @property
    def one_output_per_tree(self) -> bool:
        """Whether each tree holds the values of one output (``K > 1`` outputs grown as
        ``K`` trees per round, ``num_parallel_tree`` of each): tree ``t`` is then
        output ``t % K``'s."""
        return one_output_per_tree(self.n_outputs, self.trees_per_round, self.num_parallel_tree)

    @property
    def categorical_features(self) -> tuple:
        """The indices of the features split by category (``()`` when none)."""
        cat = getattr(self.bin_edges, "categorical", None)
        return () if cat is None else tuple(int(f) for f in np.flatnonzero(cat))

    def __getitem__(self, key) -> "Booster":
        if not isinstance(key, slice):
            raise TypeError(
                f"a Booster is sliced by rounds, e.g. booster[:10]; got {type(key).__name__}"
            )
        if key.step not in (None, 1):
            raise ValueError(
                "Booster slices must be contiguous (step 1): boosting rounds "
                "depend on the rounds before them"
            )
        start = key.start or 0
        if start != 0:
            raise ValueError(
                "Booster slices must start at round 0 (booster[:k]): later "
                "trees are fitted to the margins of earlier ones"
            )
        stop = len(self) if key.stop is None else key.stop
        stop = max(0, min(len(self), stop if stop >= 0 else len(self) + stop))
        out = self._with_trees(
            self._trees[: stop * self.trees_per_round], _padded=self._padded_trees
        )
        out.best_iteration = out.best_score = None
        if self.train_state:
            out.train_state = dict(self.train_state, rounds=stop)
        return out

    def _with_trees(self, trees: Ensemble, **changes) -> "Booster":
        """A Booster like this one holding ``trees`` (as ``trees`` holds them), with
        ``changes`` to the constructor's other arguments (``params``, ``bin_edges``,
        ``_padded``); its history, best round and training state are this one's."""
        kw = dict(
            objective=self.objective,
            params=self.params,
            bin_edges=self.bin_edges,
            base_margin=self.base_margin,
            n_features=self.n_features,
            n_outputs=self.n_outputs,
            trees_per_round=self.trees_per_round,
            feature_names=self.feature_names,
            category_labels=self.category_labels,
            num_parallel_tree=self.num_parallel_tree,
        )
        out = Booster(trees, **dict(kw, **changes))
        out.history, out.train_state = self.history, dict(self.train_state)
        out.best_iteration, out.best_score = self.best_iteration, self.best_score
        return out

    def __repr__(self) -> str:
        """One line: objective (and the link given to a plain loss), rounds, trees, depth,
        features (named when few), outputs, base margin and, after early stopping, the
        best iteration."""
        base = (
            f"{self.base_margin:.6g}"
            if self.n_outputs == 1
            else _short_list([f"{b:.4g}" for b in self.base_margin])
        )
        parts = [f"objective={loss_name(self.objective)}"]
        if isinstance(self.objective, LinkedLoss):
            parts.append(f"link={_link_text(self.objective)}")
        parts += [
            f"n_rounds={len(self)}",
            f"n_trees={self._trees.n_trees}",
            f"max_depth={self.params.max_depth}",
            f"n_features={self.n_features}",
        ]
        names = getattr(self, "feature_names", None)
        if names is not None and len(names) <= 6:
            parts.append(f"feature_names={list(names)!r}")
        if self.n_outputs > 1:
            parts.append(f"n_outputs={self.n_outputs}")
        if self.num_parallel_tree > 1:
            parts.append(f"num_parallel_tree={self.num_parallel_tree}")
        parts.append(f"base_margin={base}")
        if getattr(self, "best_iteration", None) is not None:
            parts.append(f"best_iteration={self.best_iteration}")
        return f"Booster({', '.join(parts)})"

    def _repr_html_(self) -> str:
        """A small table for notebooks (every value HTML-escaped)."""
        import html
        import math

        def number(v):
            v = float(v)
            return f"{v:.6g}" if math.isfinite(v) else str(v)

        rounds = len(self)
        rows = [
            ("objective", loss_name(self.objective)),
            ("link", _link_text(self.objective)),
            ("n_rounds", rounds),
            (
                "n_trees",
                f"{self._trees.n_trees} ({self.trees_per_round} per round)"
                if self.trees_per_round > 1
                else self._trees.n_trees,
            ),
            ("max_depth", self.params.max_depth),
            ("learning_rate", number(self.params.learning_rate)),
        ]
        names = getattr(self, "feature_names", None)
        if names is None:
            rows.append(("n_features", self.n_features))
        else:
            shown = ", ".join(str(n) for n in list(names)[:8])
            more = f", ... ({len(names) - 8} more)" if len(names) > 8 else ""
            rows.append(("n_features", f"{self.n_features}: {shown}{more}"))
        rows.append(("n_outputs", self.n_outputs))
        rows.append(
            (
                "base_margin",
                number(self.base_margin)
                if self.n_outputs == 1
                else _short_list([number(b) for b in self.base_margin]),
            )
        )
        best = getattr(self, "best_iteration", None)
        if best is not None:
            rows.append(("best_iteration", best))
            score = getattr(self, "best_score", None)
            if score is not None:
                rows.append(("best_score", number(score)))
        for data, metrics in (getattr(self, "history", None) or {}).items():
            for metric, scores in metrics.items():
                scores = list(scores)
                last = (
                    f"{number(scores[-1])} (last of {len(scores)} rounds)"
                    if scores
                    else "(no rounds)"
                )
                rows.append((f"{data} {metric}", last))
        body = "".join(
            f'<tr><th style="text-align:left">{html.escape(str(k))}</th>'
            f'<td style="text-align:left">{html.escape(str(v))}</td></tr>'
            for k, v in rows
        )
        return (
            f'<table class="jaxboost-booster"><caption style="text-align:left">'
            f"<b>jaxboost.Booster</b></caption>{body}</table>"
        )

    # --- files ---------------------------------------------------------------------
    def save(self, path) -> None:
        """Write the model to ``path`` as a validated JSON model file, atomically.

        See ``jaxboost.io`` for the format; ``jaxboost.load(path)`` reads it back and
        predicts bit for bit what this model predicts. No pickle is involved. In a
        multi-process job (``jaxboost.distributed``), where every process holds the
        same model, only process 0 writes.
        """
        from ..parallel.distributed import is_writer

        if is_writer():
            _writer("json")(self, path)

    def save_model(self, path) -> None:
        """``save(path)`` under XGBoost's name: the same validated JSON model file
        (``jaxboost.load(path)`` reads it; ``to_xgboost_json`` writes XGBoost's format).

        Example:
          >>> import numpy as np, jaxboost, os, tempfile
          >>> X = np.arange(8, dtype=np.float32).reshape(-1, 1)
          >>> bst = jaxboost.train("squared", X, X[:, 0], n_rounds=2, min_child_weight=0)
          >>> path = os.path.join(tempfile.mkdtemp(), "model.json")
          >>> bst.save_model(path)
          >>> bool(np.array_equal(jaxboost.load(path).predict(X), bst.predict(X)))
          True
        """
        self.save(path)

    def __getattr__(self, name):
        """Only reached for a missing attribute: name jaxboost's counterpart of an
        XGBoost ``Booster`` method, or a close public name, in the ``AttributeError``."""
        if name.startswith("_"):
            raise AttributeError(name)
        hint = _XGBOOST_NAMES.get(name)
        if hint is None:
            public = [n for n in dir(self) if not n.startswith("_")]
            close = difflib.get_close_matches(name, public, n=1, cutoff=0.75)
            hint = f"did you mean {close[0]!r}?" if close else None
        message = f"'Booster' object has no attribute {name!r}"
        raise AttributeError(message + (f"; {hint}" if hint else ""))

    # --- prediction ----------------------------------------------------------------
    def _base(self, offsets=None, n_pad=None):
        """The margins before the trees: the model's base margin, or ``offsets`` (validated
        margins per row) padded to ``n_pad`` rows like the features."""
        if offsets is None:
            return np.asarray(self.base_margin, np.float32)
        return offsets if n_pad is None else pad_targets(offsets, n_pad)

    def _offsets(self, base_margin, n_rows):
        """``base_margin`` given to a prediction: None, or validated ``(N[, K])``
        margins per row (``DataError`` otherwise). A model trained with offsets
        (``trained_with_offsets``) given none gets a ``DataWarning``: its rows are
        predicted at offset 0."""
        if base_margin is None:
            if self.trained_with_offsets:
                warnings.warn(
                    "this model was trained with margins per row (train(base_margin=...), "
                    "offsets such as np.log(exposure)) and is given none: every row is "
                    "predicted at offset 0 (for a Poisson model: the rate per unit of "
                    "exposure). Pass base_margin= with the rows' offsets, or "
                    "base_margin=np.zeros(n) to predict at offset 0 without this "
                    "warning",
                    DataWarning,
                    stacklevel=3,
                )
            return None
        return as_offsets(
            base_margin,
            n_rows,
            self.n_outputs,
            hint=" (a model's intercept is its own base_margin; pass margins per row here)",
        )

    def _features(self, X):
        # A DataFrame must carry the training columns in the training order; arrays
        # (and frames without string column names) are read by position. A sparse X
        # stays sparse (a checked CSR matrix, absent = missing): see _by_blocks.
        check_feature_names(self.feature_names, X)
        Xf = as_features(X, allow_inf=True, sparse="csr")
        if Xf.shape[1] != self.n_features:
            raise DataError(
                f"X has {Xf.shape[1]} features but the model was trained with {self.n_features}"
            )
        cat = self.categorical_features
        from ..inputs import categorical as _categorical

        frame = _categorical.frame_categories(X)
        labelled = set(self.category_labels or ())
        if labelled and frame_kind(X) is not None and labelled - set(frame):
            # codes are positions among the training labels: a numeric column would be
            # read as codes whatever its values mean (a silent wrong prediction)
            f = min(labelled - set(frame))
            labels = list(self.category_labels[f])
            shown = labels[:5] + (["..."] if len(labels) > 5 else [])
            raise DataError(
                f"column {_categorical.column_name(f, self.feature_names)} of X is not "
                f"categorical, but the model was trained on it as a categorical column "
                f"(labels {shown}); pass it as a categorical column (pandas Categorical, "
                f"polars Categorical or Enum) so that its labels map to the model's codes, "
                f"or pass X as an array of the model's codes"
            )
        if cat or frame:
            if set(frame) - set(cat):
                f = min(set(frame) - set(cat))
                raise DataError(
                    f"column {f} of X is categorical, but the model was trained "
                    f"with a numeric feature {f}"
                )
            unmapped = set(frame) - labelled
            if unmapped:
                # a frame's codes are positions among its own categories; without the
                # training labels nothing says which of the model's codes they are
                f = min(unmapped)
                raise DataError(
                    f"column {_categorical.column_name(f, self.feature_names)} of X is a "
                    f"categorical column, but the model has no category labels for it (it "
                    f"was trained on codes, or imported from a model file without them), so "
                    f"its categories cannot be mapped to the model's codes; pass the codes "
                    f"the model was trained with as a numeric column or array"
                )
            if frame and self.category_labels:
                Xf = _categorical.recode(Xf, frame, self.category_labels)
            _categorical.check_predict_codes(
                ColumnView(Xf) if is_sparse(Xf) else Xf, cat, self.feature_names
            )
        return Xf

    @staticmethod
    def _by_blocks(fn, X, offsets=None, axis=0, rows=None):
        """``fn(X_block, offsets_block)`` over row blocks of ``X``, the results placed
        along ``axis`` of one output array (allocated once: no concatenation copy).

        Blocks of ``rows`` rows (default ``PREDICT_BLOCK_VALUES // F``), a power of two
        so full blocks share a compiled program: views of a dense ``X``, so memory beyond
        the input and the output stays one block's; dense copies of a sparse one (NaN
        where absent, ``_sparse.dense_rows``), at most ``_sparse.block_rows(F)`` rows.
        """
        n, F = X.shape
        step = _pow2_floor(rows if rows is not None else PREDICT_BLOCK_VALUES // max(1, F))
        sparse = is_sparse(X)
        if sparse:
            step = min(step, block_rows(F))
        if n <= step:
            return fn(dense_rows(X, 0, n) if sparse else X, offsets)
        out = None
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            part = np.asarray(
                fn(
                    dense_rows(X, lo, hi) if sparse else X[lo:hi],
                    None if offsets is None else offsets[lo:hi],
                )
            )
            if out is None:
                shape = list(part.shape)
                shape[axis] = n
                out = np.empty(shape, part.dtype)
            index = [slice(None)] * part.ndim
            index[axis] = slice(lo, hi)
            out[tuple(index)] = part
        return out

    def _margins(self, X, offsets, n_trees, link=None) -> np.ndarray:
        """``(N[, K])`` margins (``link`` applied) of the first ``n_trees`` trees."""

        if native_predict_enabled():  # the CPU kernel: no program to compile
            trees = self._trees[: min(int(n_trees), self._trees.n_trees)]
            depth, K = self.params.max_depth, self.n_outputs
            packed = self._padded_trees.native(depth, K)  # made once per model

            def host(Xd, o):
                return predict_margin_host(
                    trees, Xd, self._base(o), max_depth=depth, link=link, n_outputs=K, packed=packed
                )

            if is_sparse(X):  # by the stored entries: no dense blocks (0.25 -> 0.02 s)
                return host(X, offsets)
            return self._by_blocks(host, X, offsets)

        def margins(Xd, o):
            # Rows padded to a size bucket: new row counts mostly reuse a program.
            Xp = pad_rows(Xd)
            out = predict_margin(
                self._padded_trees.get(),
                Xp,
                self._base(o, Xp.shape[0]),
                np.int32(n_trees),
                max_depth=self.params.max_depth,
                link=link,
                n_outputs=self.n_outputs,
            )
            return np.asarray(out)[: Xd.shape[0]]

        return self._by_blocks(margins, X, offsets)

    @float32_programs
    def predict(
        self,
        X,
        output_margin: bool = False,
        pred_contribs: bool = False,
        base_margin=None,
        pred_interactions: bool = False,
        iteration_range=None,
        pred_leaf: bool = False,
    ) -> np.ndarray:
        """Predictions for raw features.

        The margin of row ``i`` is ``b_i + sum_t tree_t(x_i)`` with ``b_i`` the row's
        ``base_margin`` when given, else the model's ``base_margin`` (its intercept).

        Args:
          X: ``(N, F)`` array-like of floats, NaN = missing, same features as training;
            or a DataFrame, whose columns must then be the model's ``feature_names`` in
            the same order (``DataError`` otherwise); or a ``scipy.sparse`` matrix
            whose absent entries are missing values, as in training (read in dense
            row blocks, ``jaxboost.inputs.sparse``).
          output_margin: return the raw margin ``f(x)`` instead of the objective's
            response (``sigmoid(f)`` for logistic, ``f`` for squared).
          pred_contribs: return exact SHAP values of the margin instead (path-dependent
            TreeSHAP, see ``jaxboost.model.explain``): ``(N, F + 1)`` float32, the last column
            the bias (it holds the row's ``base_margin``); ``(N, K, F + 1)`` for K
            outputs. Each row sums to the margin.
          base_margin: optional margins per row (offsets), ``(N,)`` or ``(N, K)`` for K
            outputs, as given to ``train(base_margin=...)`` (e.g. ``np.log(exposure)``):
            they replace the model's intercept for these rows, as in XGBoost.
          pred_interactions: return exact SHAP interaction values instead, as
            XGBoost's ``pred_interactions``: ``(N, F + 1, F + 1)`` float32
            (``(N, K, F + 1, F + 1)``), each row's matrix summing to its SHAP values
            (``jaxboost.model.explain.shap_interaction_values``).
          iteration_range: optional ``(0, end)``: the model of its first ``end``
            rounds, as XGBoost's ``iteration_range`` (``(0, 0)`` or None: every round;
            ``booster[:end]`` is the same model). Later rounds fit the margins of
            earlier ones, so ranges start at round 0.
          pred_leaf: return each row's leaf (heap node index) in each tree instead,
            ``(N, n_trees)`` int32, as XGBoost's ``pred_leaf`` (``predict_leaf``).

        Returns:
          ``(N,)`` float32 NumPy array, or ``(N, K)`` for a model of K outputs
          (softmax: class probabilities).

        Example:
          >>> import numpy as np, jaxboost
          >>> X = np.arange(8, dtype=np.float32).reshape(-1, 1)
          >>> t = np.linspace(1.0, 2.0, 8)                # exposures
          >>> bst = jaxboost.train("poisson", X, X[:, 0], n_rounds=3,
          ...                      base_margin=np.log(t))
          >>> m = bst.predict(X, output_margin=True, base_margin=np.log(t))
          >>> at_zero = bst.predict(X, output_margin=True, base_margin=np.zeros(8))
          >>> bool(np.allclose(m - np.log(t), at_zero))
          True
        """
        end = self.rounds_of(iteration_range)
        if pred_leaf:
            return self[:end].predict_leaf(X)
        if end < len(self) and (pred_contribs or pred_interactions):
            return self[:end].predict(
                X, output_margin, pred_contribs, base_margin, pred_interactions
            )
        X = self._features(X)
        offsets = self._offsets(base_margin, X.shape[0])
        if pred_interactions:
            from .explain import shap_interaction_values

            return self._by_blocks(
                lambda Xd, o: shap_interaction_values(self, Xd, base_margin=o), X, offsets
            )
        if pred_contribs:
            from .explain import shap_values

            return self._by_blocks(lambda Xd, o: shap_values(self, Xd, base_margin=o), X, offsets)
        link = None if output_margin else _link_of(self.objective)
        return self._margins(X, offsets, end * self.trees_per_round, link)

    def rounds_of(self, iteration_range) -> int:
        """The rounds an ``iteration_range`` ``(0, end)`` keeps (``end == 0``: all)."""
        if iteration_range is None:
            return len(self)
        try:
            begin, end = (int(v) for v in iteration_range)
        except (TypeError, ValueError):
            raise TypeError(
                f"iteration_range must be a pair (0, end) of ints, got {iteration_range!r}"
            ) from None
        if begin != 0 or not 0 <= end <= len(self):
            raise ValueError(
                f"iteration_range must be (0, end) with 0 <= end <= {len(self)} (the "
                f"model's rounds; later rounds fit the margins of earlier ones, so a "
                f"range starts at 0), got {tuple(iteration_range)}"
            )
        return end or len(self)

    @float32_programs
    def staged_predict(self, X, output_margin: bool = False, base_margin=None) -> np.ndarray:
        """Predictions after every round, in one pass over the trees.

        Row ``r`` equals ``self[:r + 1].predict(X, output_margin, base_margin=...)``;
        use it for learning curves.

        Args:
          X: ``(N, F)`` raw features, NaN = missing.
          output_margin: margins instead of responses.
          base_margin: optional ``(N,)`` (``(N, K)``) margins per row, as in ``predict``.

        Returns:
          ``(n_rounds, N)`` float32 NumPy array (``(n_rounds, N, K)`` for K outputs).

        Example:
          >>> import numpy as np, jaxboost
          >>> X = np.arange(8, dtype=np.float32).reshape(-1, 1)
          >>> bst = jaxboost.train("squared", X, X[:, 0], n_rounds=3)
          >>> bool(np.allclose(bst.staged_predict(X)[1], bst[:2].predict(X)))
          True
        """
        X = self._features(X)
        offsets = self._offsets(base_margin, X.shape[0])
        link = None if output_margin else _link_of(self.objective)
        T = self._trees.n_trees
        _check_output_size(
            (len(self), X.shape[0], self.n_outputs),
            "staged_predict",
            "predict with a slice of the model (bst[:r].predict), or fewer rows at a time",
        )

        host = native_predict_enabled()  # the CPU kernel: only the link compiles
        depth, K = self.params.max_depth, self.n_outputs

        tpr = self.trees_per_round

        def stages(Xd, o):
            if host:  # the margins after each round only (not each of its trees)
                return staged_margins_host(
                    self._trees,  # as held (class trees: K times fewer values)
                    Xd,
                    self._base(o),
                    max_depth=depth,
                    link=link,
                    n_outputs=K,
                    packed=self._padded_trees.native(depth, K),
                    every=tpr,
                )
            out = staged_margins(
                self._trees, Xd, self._base(o), max_depth=depth, link=link, n_outputs=K
            )
            return np.asarray(out)[tpr - 1 :: tpr]

        # a block's (stages, rows[, K]) margins stay near STAGED_BLOCK_VALUES entries
        per_row = (len(self) if host else T) * self.n_outputs
        rows = max(1, STAGED_BLOCK_VALUES // max(1, per_row))
        return self._by_blocks(stages, X, offsets, axis=1, rows=rows)

    @float32_programs
    def grad_hess(self, X, y, *, iteration=None, sample_weight=None, base_margin=None) -> GradHess:
        r"""The gradients and Hessians the trees of round ``iteration`` are grown on.

        Round ``k`` fits its trees to the margins of the first ``k`` rounds,
        :math:`f^{(k)} = \texttt{self[:k].predict(X, output_margin=True)}`; at them

        .. math:: g_i = w_i\,\partial_f \ell(y_i, f^{(k)}_i), \qquad
                  h_i = w_i\,P\big(\partial_f^2 \ell(y_i, f^{(k)}_i)\big)

        computed by the functions training uses (``jaxboost.engine.autodiff.grad_hess``:
        autodiff, or the objective's closed form, e.g. softmax's ``curvature``), with
        ``P`` the model's Hessian policy and floor (``hessian``, ``hessian_floor`` of
        the ``train`` call, kept in ``train_state``; for a model without them, e.g. one
        read from XGBoost, the objective's default policy and floor ``1e-6``). On the
        training rows, with their ``sample_weight``, these are the g and h of that
        round before row sampling (``subsample``), before rows whose g or h is not
        finite are zeroed, and before ``quantize``'s grid.

        Args:
          X: ``(N, F)`` raw features (NaN = missing) or a DataFrame, as for ``predict``.
          y: ``(N,)`` labels (checked against the objective's label domain), or side
            data for a loss of your own (an ``(N, L)`` array, a dict), as in ``train``.
          iteration: round ``k`` in ``[0, len(self)]``; default ``len(self)``, the
            round a continued ``train(..., init_model=self)`` would grow next.
            ``0`` gives the g and h at the base margin (the first trees').
          sample_weight: optional ``(N,)`` non-negative weights ``w_i``; they multiply
            g and h as in training. Default: unweighted (``w_i = 1``).
          base_margin: optional ``(N,)`` (``(N, K)``) margins per row, as in ``predict``
            (the offsets the model was trained with, on the training rows).

        Returns:
          ``GradHess(g, h, margin)``, float32 NumPy arrays:

          * one output: ``g``, ``h``, ``margin`` all ``(N,)``;
          * ``K`` outputs with K trees per round (softmax's default): ``g`` ``(N, K)``,
            ``h`` ``(N, K)`` (class k's tree uses ``h[:, k]``: the policy applied to the
            diagonal of the ``K x K`` Hessian, which is never formed), ``margin``
            ``(N, K)``;
          * ``K`` outputs with vector-leaf trees (``multi_strategy=
            "multi_output_tree"``): ``h`` ``(N, K, K)``, or ``(N, K)`` when trained with
            ``multi_hessian="diagonal"``.

        Raises:
          DataError: bad ``X``, ``y`` (also labels outside the objective's domain) or
            ``sample_weight``.
          TypeError: ``iteration`` is not an integer, or the model's loss is a group
            loss (its g and h need the group ids; not supported here).
          ValueError: ``iteration`` outside ``[0, len(self)]``.

        Example:
          >>> import numpy as np, jaxboost
          >>> X = np.arange(8, dtype=np.float32).reshape(-1, 1); y = X[:, 0]
          >>> bst = jaxboost.train("squared", X, y, n_rounds=3, base_margin=0.0)
          >>> g, h, margin = bst.grad_hess(X, y, iteration=2)
          >>> bool(np.allclose(g, margin - y)), float(h.min()), float(h.max())
          (True, 1.0, 1.0)
          >>> bool(np.array_equal(margin, bst[:2].predict(X, output_margin=True)))
          True
        """
        from objectives import GroupObjective

        objective = self.objective
        if isinstance(objective, GroupObjective):
            raise TypeError(
                f"grad_hess needs a per-row loss; {loss_name(objective)} is a "
                f"group loss, whose g and h couple the rows of a group"
            )
        if iteration is None:
            iteration = len(self)
        if isinstance(iteration, bool) or not isinstance(iteration, numbers.Integral):
            raise TypeError(
                f"iteration must be an integer round in [0, {len(self)}], got "
                f"{type(iteration).__name__} {iteration!r}"
            )
        if not 0 <= iteration <= len(self):
            raise ValueError(
                f"iteration must be in [0, {len(self)}] (the model has "
                f"{len(self)} rounds), got {iteration}"
            )
        X = self._features(X)
        n = X.shape[0]
        y = as_targets(y, n)
        w = as_weights(sample_weight, n)
        offsets = self._offsets(base_margin, n)
        validate = getattr(objective, "validate_labels", None)
        entry = isinstance(objective, Objective) and not isinstance(objective, LinkedLoss)
        side = is_side_data(y)  # a catalogue entry takes it only as its label_fields
        if side and entry and not objective.several_per_row:
            raise DataError(
                f"{objective!r} takes one label per row, y of shape (N,); "
                f"side data (a dict or an (N, L) array) is for losses of "
                f"your own"
            )
        if side and entry and not objective.takes_label_fields(y):
            raise DataError(objective.label_fields_message(target_structure(y)))
        if validate is not None and (entry or not side):
            try:
                validate(y)
            except ValueError as e:
                raise DataError(str(e)) from None
        state = self.train_state or {}
        hessian = state.get("hessian") or getattr(objective, "hessian", "exact")
        floor = float(state.get("hessian_floor", HESSIAN_FLOOR))
        diagonal = self.n_outputs > 1 and (
            self.one_output_per_tree or state.get("multi_hessian") == "diagonal"
        )
        margin = self._margins(X, offsets, int(iteration) * self.trees_per_round)
        n_pad = bucket_rows(n)
        g, h = model_grad_hess(
            objective,
            pad_targets(y, n_pad),
            pad_targets(margin, n_pad),
            None if w is None else pad_rows(w),
            hessian=hessian,
            floor=floor,
            diagonal=diagonal,
        )
        return GradHess(np.asarray(g)[:n], np.asarray(h)[:n], margin)

    def num_boosted_rounds(self) -> int:
        """The model's rounds, ``len(booster)`` (XGBoost's name)."""
        return len(self)

    def get_score(self, importance_type: str = "weight") -> dict:
        """XGBoost's ``get_score``: ``feature_importance`` with XGBoost's default type,
        ``"weight"`` (the number of splits on each feature)."""
        return self.feature_importance(importance_type)

    def feature_importance(self, importance_type: str = "gain") -> dict:
        """Per-feature importance, as XGBoost's ``get_score``: ``{name: value}``.

        ``importance_type``: ``"weight"`` (splits on the feature), ``"gain"`` (mean loss
        change of its splits), ``"total_gain"``, ``"cover"`` (mean sum of hessians at
        its splits) or ``"total_cover"``. Features that never split are left out; names
        are ``feature_names`` when known, else ``"f0"``, ``"f1"``, ...
        (``jaxboost.model.explain.feature_importance``).
        """
        from .explain import feature_importance

        return feature_importance(self, importance_type)

    def dump(self, with_stats: bool = True) -> str:
        """Every tree as readable text, like XGBoost's text dump
        (``jaxboost.model.explain.dump``): ``0:[f2<0.5] yes=1,no=2,missing=1,gain=..,cover=..``
        for a split, ``1:leaf=0.012,cover=..`` for a leaf; node ids are heap indices."""
        from .explain import dump

        return dump(self, with_stats)

    def trees_to_dataframe(self):
        """Every node of every tree as a pandas ``DataFrame``, XGBoost's
        ``trees_to_dataframe``: columns ``Tree``, ``Node`` (heap index, as ``dump`` and
        ``predict_leaf``), ``ID`` (``"tree-node"``), ``Feature`` (``"Leaf"`` for a leaf),
        ``Split``, ``Yes``, ``No``, ``Missing``, ``Gain`` (a leaf's value for a leaf),
        ``Cover``, ``Category`` (a categorical split's codes that go ``Yes``); see
        ``jaxboost.model.explain.tree_rows``. Needs pandas.

        Example:
          >>> import numpy as np, jaxboost
          >>> X = np.arange(8, dtype=np.float32).reshape(-1, 1)
          >>> bst = jaxboost.train("squared", X, X[:, 0], n_rounds=1, max_depth=1,
          ...                      learning_rate=1.0, reg_lambda=0.0)
          >>> df = bst.trees_to_dataframe()
          >>> df["ID"].tolist(), df["Feature"].tolist(), float(df["Split"][0])
          (['0-0', '0-1', '0-2'], ['f0', 'Leaf', 'Leaf'], 3.5)
          >>> df["Gain"].tolist()  # the split's loss change, then the leaves' values
          [32.0, -2.0, 2.0]
        """
        import pandas as pd

        from .explain import tree_rows

        return pd.DataFrame(tree_rows(self))

    def to_shap(self) -> dict:
        """The model in the ``shap`` package's tree format: ``shap.TreeExplainer(
        bst.to_shap())`` explains the margin as ``predict(X, pred_contribs=True)`` does
        (``jaxboost.explain.shap_model``)."""
        from .explain import shap_model

        return shap_model(self)

    def to_xgboost_json(self, path=None) -> dict:
        """The model as an XGBoost JSON model (also written to ``path`` if given); see
        ``jaxboost.io.xgboost.to_xgboost_json``."""
        return _writer("xgboost")(self, path)

    @float32_programs
    def predict_leaf(self, X) -> np.ndarray:
        """Leaf node (heap index) of every row in every tree: ``(N, T)`` int32."""
        X = self._features(X)

        def leaves(Xd, _):
            trees = self._padded_trees.get()
            out = predict_leaf(trees, pad_rows(Xd), max_depth=self.params.max_depth)
            return np.asarray(out)[: Xd.shape[0], : self._trees.n_trees]

        return self._by_blocks(leaves, X)
