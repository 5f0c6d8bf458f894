"""``jaxboost.cv``: k-fold cross-validation of one training configuration, round by
round, as XGBoost's ``xgb.cv`` and LightGBM's ``lgb.cv``.

Each fold trains ``jaxboost.train`` on the other folds' rows and is evaluated after
every round on its own training rows (``"train"``) and on its held-out rows
(``"test"``); the result holds each metric's mean and standard deviation over the folds
per round. Early stopping watches the mean test value of the last metric, as
XGBoost's ``cv`` does: the folds train in lockstep, a chunk of rounds at a time
(continued with ``init_model``, which grows exactly the trees one longer call grows),
and stop once the mean has not improved for ``early_stopping_rounds`` rounds; the
curves and the fold models are cut to the best round.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..errors import DataError
from ..inputs.numbers import is_int
from ..metrics import get_metric
from ..training import train
from ..training.config import check_classes
from ..training.names import peer_names

#: Rounds each fold trains per call while early stopping watches the mean (at least
#: twice ``early_stopping_rounds``).
CV_CHUNK = 50


@dataclasses.dataclass
class CVResult:
    """What ``cv`` returns.

    Attributes:
      mean, std: ``{"train" | "test": {metric: (R,) array}}``: each metric's mean and
        (population) standard deviation over the folds after rounds ``1 .. R``.
      best_iteration: the round (0-based) of the best mean test value of the last
        metric; None without early stopping.
      best_score: that mean test value (None without early stopping).
      boosters: the fold models, cut to ``best_iteration + 1`` rounds with early
        stopping.
      folds: ``(train_rows, test_rows)`` index arrays of each fold.
    """

    mean: dict
    std: dict
    best_iteration: Any
    best_score: Any
    boosters: list
    folds: list

    def to_dict(self) -> dict:
        """XGBoost's ``cv`` columns: ``{"train-rmse-mean": [...], "train-rmse-std": [...],
        "test-rmse-mean": [...], ...}`` as lists of floats."""
        out = {}
        for data in ("train", "test"):
            for name, values in self.mean[data].items():
                out[f"{data}-{name}-mean"] = [float(v) for v in values]
                out[f"{data}-{name}-std"] = [float(v) for v in self.std[data][name]]
        return out

    def to_pandas(self):
        """The ``to_dict`` columns as a pandas ``DataFrame``, one row per round (what
        ``xgb.cv`` returns)."""
        import pandas as pd

        return pd.DataFrame(self.to_dict())

    def plot(self, path=None, **kwargs):
        """The curves, one panel per metric, mean +- one standard deviation of train
        and test: ``jaxboost.plotting.plot_cv`` (``metrics=``, ``title=``, ``dpi=``,
        ``ax=``). Returns the ``matplotlib.figure.Figure`` (not registered with
        pyplot); ``path`` also saves it."""
        from .plotting import plot_cv

        return plot_cv(self, path, **kwargs)

    def __str__(self) -> str:
        rounds = len(next(iter(next(iter(self.mean.values())).values()), []))
        lines = [f"{len(self.folds)}-fold cv, {rounds} rounds"]
        for data in ("train", "test"):
            for name, values in self.mean[data].items():
                sd = self.std[data][name]
                lines.append(f"  {data}-{name}: {values[-1]:.6g} +- {sd[-1]:.3g}")
        if self.best_iteration is not None:
            lines.append(
                f"  best_iteration {self.best_iteration}, best_score {self.best_score:.6g}"
            )
        return "\n".join(lines)


def _classes_of_all_rows(objective, y):
    """An entry that takes its classes from the labels (softmax: ``K = max(y) + 1``)
    with ``K`` from all the rows, as XGBoost's ``cv`` takes ``num_class`` once: from each
    fold's training rows, a fold whose training rows miss the largest class trained
    fewer outputs than its test rows need (and each fold warned of empty classes)."""
    from objectives import Objective
    from objectives import resolve as resolve_objective

    try:
        entry = resolve_objective(objective)
    except (TypeError, ValueError):
        return objective  # train says what is wrong
    if not (isinstance(entry, Objective) and entry.outputs is None and entry.infer_outputs):
        return objective
    try:
        labels = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        return objective
    if labels.ndim != 1 or labels.size == 0 or not np.isfinite(labels).all():
        return objective  # train's label checks name the problem
    check_classes(entry, labels)
    return entry.resolve_outputs(labels)


@peer_names
def cv(
    objective,
    X,
    y,
    *,
    nfold: int = 5,
    n_rounds: int = 100,
    folds=None,
    stratified: bool = False,
    shuffle: bool = True,
    seed: int = 0,
    eval_metric=None,
    early_stopping_rounds=None,
    min_delta: float = 0.0,
    sample_weight=None,
    **train_kwargs,
) -> CVResult:
    r"""k-fold cross-validation of ``train(objective, X, y, **train_kwargs)``.

    Args:
      objective, X, y: as ``jaxboost.train``'s (arrays, DataFrames, ``scipy.sparse``
        matrices; ``y`` may be ``(N, T)`` targets or side data). An objective that takes
        its classes from the labels (``"softmax"``) takes them from all the rows, so
        every fold's model has the same outputs (XGBoost's ``num_class``).
      nfold: the number of folds, ``2 <= nfold <= N``.
      n_rounds: rounds of each fold's model (the most, with early stopping).
      folds: the folds instead of ``nfold``: a list of ``(train_rows, test_rows)`` index
        arrays, or a scikit-learn splitter (``KFold(...)``, ``GroupKFold``: its
        ``split(X, y)`` is used).
      stratified: folds with the classes of ``y`` (labels ``(N,)``) in equal shares
        (each class's rows dealt to the folds in turn, after the shuffle).
      shuffle, seed: shuffle the rows (with ``seed``) before they are dealt into folds;
        ``shuffle=False`` takes contiguous blocks.
      eval_metric: the metrics (as ``train``'s; default: the objective's). Early stopping
        watches the last one.
      early_stopping_rounds: stop when the mean test value of the last metric has not
        improved by more than ``min_delta`` for this many rounds; the curves and models
        are cut to the best round (XGBoost's ``cv`` rule).
      sample_weight: optional ``(N,)`` weights; each fold's rows keep theirs, in training
        and in its metrics.
      **train_kwargs: ``train``'s other options, the same for every fold
        (``learning_rate``, ``max_depth``, ``seed`` of the trees' sampling, ...), not
        ``eval_set`` (the folds are the evaluation). A ``base_margin`` of margins per row
        (``(N,)``, ``(N, K)``; XGBoost's ``base_margin`` of the ``DMatrix`` its ``cv``
        slices) is sliced with the folds: each fold trains from its training rows'
        margins and evaluates both sets from theirs; a number (or one per output) is the
        intercept of every fold's model.

    Returns:
      ``CVResult``: ``mean`` and ``std`` per data (``"train"``, ``"test"``) and metric,
      ``best_iteration``, ``best_score``, the fold ``boosters`` and the ``folds``;
      ``to_dict()`` / ``to_pandas()`` give XGBoost's ``cv`` columns.

    Raises:
      TypeError: ``eval_set`` or ``early_stopping_rounds`` for ``train`` among
        ``train_kwargs``, or ``folds`` that are not index pairs or a splitter.
      ValueError: ``nfold`` out of range, ``stratified`` without ``(N,)`` labels, a fold
        without rows; ``train``'s errors as ``train`` raises them.

    Example:
      >>> import numpy as np, jaxboost
      >>> rng = np.random.default_rng(0)
      >>> X = rng.normal(size=(300, 3)).astype(np.float32)
      >>> y = (X[:, 0] + rng.normal(size=300) > 0).astype(np.float32)
      >>> res = jaxboost.cv("logistic", X, y, nfold=3, n_rounds=20, max_depth=2)
      >>> sorted(res.to_dict())[:2]
      ['test-logloss-mean', 'test-logloss-std']
      >>> bool(res.mean["test"]["logloss"][-1] < res.mean["test"]["logloss"][0])
      True
    """
    for key in (
        "eval_set",
        "eval_base_margin",
        "early_stopping_metric",
        "early_stopping_data",
        "init_model",
    ):
        if key in train_kwargs:
            raise TypeError(f"cv() takes no {key!r}: each fold is evaluated on its held-out rows")
    n = _n_rows(X)
    offsets, train_kwargs = _row_margins(train_kwargs, y, n)
    objective = _classes_of_all_rows(objective, y)
    folds = make_folds(
        n, nfold, y=y, folds=folds, stratified=stratified, shuffle=shuffle, seed=seed, X=X
    )
    patience = _patience(early_stopping_rounds)
    parts = [_fold_data(X, y, sample_weight, tr, te) for tr, te in folds]
    # margins per row: each fold trains from its rows' and evaluates from its sets' own
    margins = [
        {}
        if offsets is None
        else dict(
            base_margin=offsets[tr], eval_base_margin=dict(train=offsets[tr], test=offsets[te])
        )
        for tr, te in folds
    ]
    boosters: list = [None] * len(folds)
    curves: list = [{} for _ in folds]
    done, best = 0, None
    chunk = n_rounds if patience is None else max(CV_CHUNK, 2 * patience)
    later = {k: v for k, v in train_kwargs.items() if k != "base_margin"}  # in the model
    while done < n_rounds:
        step = min(chunk, n_rounds - done)
        for k, (train_set, evals, w) in enumerate(parts):
            bst = train(
                objective,
                *train_set,
                sample_weight=w,
                n_rounds=step,
                eval_set=evals,
                eval_metric=eval_metric,
                init_model=boosters[k],
                verbose=False,
                **(later if done else train_kwargs),
                **margins[k],
            )
            boosters[k] = bst
            _extend(curves[k], bst.history)
        done += step
        if patience is not None:  # the mean test curve's best round so far
            best = _best_round(curves, boosters[0], eval_metric, min_delta)
            if done - 1 - best >= patience:
                break
    mean, std = _summaries(curves)
    if patience is None:
        return CVResult(mean, std, None, None, boosters, folds)
    cut = best + 1
    mean = {d: {m: v[:cut] for m, v in ms.items()} for d, ms in mean.items()}
    std = {d: {m: v[:cut] for m, v in ms.items()} for d, ms in std.items()}
    name = list(mean["test"])[-1]
    return CVResult(
        mean, std, best, float(mean["test"][name][best]), [b[:cut] for b in boosters], folds
    )


def make_folds(n, nfold, *, y=None, folds=None, stratified=False, shuffle=True, seed=0, X=None):
    """``[(train_rows, test_rows), ...]``: sorted index arrays of each fold (see ``cv``).

    >>> [t.tolist() for _, t in make_folds(5, 2, shuffle=False)]
    [[0, 1, 2], [3, 4]]
    """
    if folds is not None:
        return _given_folds(n, folds, X, y)
    if not is_int(nfold) or not 2 <= int(nfold) <= n:
        raise ValueError(f"nfold must be an integer in [2, N = {n}], got {nfold!r}")
    nfold = int(nfold)
    order = np.random.default_rng(seed).permutation(n) if shuffle else np.arange(n)
    if stratified:
        labels = np.asarray(y) if not isinstance(y, dict) else None
        if labels is None or labels.ndim != 1:
            raise ValueError("stratified=True needs one label per row, y of shape (N,)")
        dealt = order[np.argsort(labels[order], kind="stable")]  # classes, shuffled within
        fold_of = np.empty(n, np.int64)
        fold_of[dealt] = np.arange(n) % nfold
        tests = [np.flatnonzero(fold_of == k) for k in range(nfold)]
    else:
        tests = [np.sort(part) for part in np.array_split(order, nfold)]
    every = np.arange(n)
    return [(np.setdiff1d(every, t, assume_unique=True), t) for t in tests]


def _given_folds(n, folds, X, y):
    """A user's folds: index pairs, or a scikit-learn splitter's ``split(X, y)``."""
    if hasattr(folds, "split"):
        folds = list(folds.split(X, None if isinstance(y, dict) else y))
    try:
        pairs = [(np.asarray(tr), np.asarray(te)) for tr, te in folds]
    except (TypeError, ValueError):
        raise TypeError(
            "folds must be a list of (train_rows, test_rows) index arrays or a "
            "scikit-learn splitter (an object with split(X, y))"
        ) from None
    if not pairs:
        raise ValueError("folds is empty")
    for k, (tr, te) in enumerate(pairs):
        for what, idx in (("train", tr), ("test", te)):
            if idx.ndim != 1 or idx.size == 0 or idx.dtype.kind not in "iu":
                raise ValueError(f"fold {k}: its {what} rows must be a non-empty 1-D integer array")
            if idx.min() < 0 or idx.max() >= n:
                raise ValueError(f"fold {k}: {what} rows out of range [0, {n})")
    return [(np.sort(tr), np.sort(te)) for tr, te in pairs]


def _patience(rounds):
    if rounds is None:
        return None
    if not is_int(rounds) or int(rounds) < 1:
        raise ValueError(f"early_stopping_rounds must be an integer >= 1, got {rounds!r}")
    return int(rounds)


def _n_rows(X) -> int:
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None else len(X)


def _take(a, rows):
    """Rows ``rows`` of an array, DataFrame, Series, sparse matrix or dict of arrays."""
    if a is None:
        return None
    if isinstance(a, dict):
        return {k: _take(v, rows) for k, v in a.items()}
    module = type(a).__module__
    if module.startswith("pandas"):
        return a.iloc[rows]
    if module.startswith("polars"):
        return a[rows]
    if module.startswith("scipy.sparse"):
        return a.tocsr()[rows]
    return np.asarray(a)[rows]


def _row_margins(train_kwargs: dict, y, n: int):
    """``(offsets, train_kwargs)``: a ``base_margin`` of margins per row (``(N,)``, or
    ``(N, K)``, for ``(N,)`` labels) taken out of ``train_kwargs`` as a float32 array, each
    fold's rows to get theirs; an intercept (a number, or one per output) stays there."""
    bm = train_kwargs.get("base_margin")
    per_row = np.ndim(bm) >= (2 if np.ndim(y) == 2 else 1) and n > 1 and np.shape(bm)[0] == n
    if not per_row:
        return None, train_kwargs
    rest = {k: v for k, v in train_kwargs.items() if k != "base_margin"}
    return np.asarray(bm, np.float32), rest


def _fold_data(X, y, w, tr, te):
    """``((X, y) of the training rows, eval sets {"train", "test"}, training weights)``."""
    Xt, yt, wt = _take(X, tr), _take(y, tr), _take(w, tr)
    Xe, ye, we = _take(X, te), _take(y, te), _take(w, te)
    if _n_rows(Xe) == 0 or _n_rows(Xt) == 0:
        raise DataError("a fold has no rows")
    train_eval = (Xt, yt) if wt is None else (Xt, yt, wt)
    test_eval = (Xe, ye) if we is None else (Xe, ye, we)
    return (Xt, yt), {"train": train_eval, "test": test_eval}, wt


def _extend(curve: dict, history: dict) -> None:
    for data, metrics in history.items():
        for name, values in metrics.items():
            curve.setdefault(data, {}).setdefault(name, []).extend(values)


def _summaries(curves):
    """``(mean, std)`` over the folds, per data and metric, float64 arrays."""
    mean, std = {}, {}
    for data, metrics in curves[0].items():
        for name in metrics:
            v = np.array([c[data][name] for c in curves], np.float64)  # (folds, rounds)
            mean.setdefault(data, {})[name] = v.mean(axis=0)
            std.setdefault(data, {})[name] = v.std(axis=0)
    return mean, std


def _best_round(curves, booster, metrics, min_delta):
    """The round of the best mean test value of the last metric (first on ties, a gain
    of more than ``min_delta`` needed)."""
    mean, _ = _summaries(curves)
    name = list(mean["test"])[-1]
    metric = _metric_named(name, metrics, booster.objective)
    values = mean["test"][name]
    best = 0
    for i in range(1, len(values)):
        if metric.better(values[i], values[best], min_delta):
            best = i
    return best


def _metric_named(name, metrics, objective):
    """The ``Metric`` of a history's column (its ``maximize``); minimised if unknown."""
    given = metrics if isinstance(metrics, (list, tuple)) else [metrics]
    for m in given:
        if m is None:
            continue
        try:
            resolved = get_metric(m, objective=objective)
        except (TypeError, ValueError):
            continue
        if resolved.name == name:
            return resolved
    try:
        return get_metric(name)
    except (TypeError, ValueError):
        return get_metric(lambda y, p: 0.0)  # any minimised metric: only better() is read
