"""``compare()``: train several losses with one tree budget and compare their metrics.

Every objective is trained with the same data, ``n_rounds`` and tree parameters (in one
program by ``jaxboost.train_many`` when they are single-output per-row losses and every
argument is one it takes; else by one ``train`` call each), then
each metric is evaluated after every round on every data set (learning curves), from
one ``Booster.staged_predict`` pass per model and data set.
"""

from __future__ import annotations

import inspect
import math
import time

import numpy as np

from .. import metrics as _metrics
from ..errors import DataError
from ..inputs.arrays import as_features, as_targets, as_weights
from ..metrics.targets import metric_targets
from ..training import train
from ..training.evaluation import check_metric_links
from ..training.many import train_many

__all__ = ["compare", "Comparison"]


# --- objectives and their labels ------------------------------------------------------------
def _catalogue():
    import objectives

    return objectives


def _resolve(objective):
    from objectives import resolve as resolve_objective

    return resolve_objective(objective)


def _label(objective) -> str:
    """``name`` for a catalogue entry (``name(k=v)`` with non-default hyperparameters),
    ``__name__`` for a callable."""
    cat = _catalogue()
    if isinstance(objective, cat.Objective):
        try:
            defaults = {
                k: p.default
                for k, p in inspect.signature(objective.loss).parameters.items()
                if p.kind is p.KEYWORD_ONLY
            }
        except (TypeError, ValueError):
            defaults = {}
        changed = []
        for k, v in objective.params:
            try:
                same = k in defaults and bool(defaults[k] == v)
            except Exception:  # array-valued hyperparameters and the like
                same = False
            if not same:
                changed.append(f"{k}={v!r}")
        return f"{objective.name}({', '.join(changed)})" if changed else objective.name
    return getattr(objective, "__name__", None) or type(objective).__name__


def _unique(labels, reserved=()):
    seen, out = {r: 1 for r in reserved}, []
    for lab in labels:
        n = seen.get(lab, 0) + 1
        seen[lab] = n
        out.append(lab if n == 1 else f"{lab}_{n}")
    return out


def _linked(objective, link):
    """A plain callable with ``link`` (catalogue entries keep their own links)."""
    from objectives import attach_link
    from objectives._base import Hyperparameters

    if link is None or isinstance(objective, Hyperparameters):
        return objective
    return attach_link(objective, link)


def _objectives(objectives, link=None) -> dict:
    if isinstance(objectives, dict):
        items = []
        for k, v in objectives.items():
            if not isinstance(k, str):
                raise TypeError(f"objective labels must be str, got {type(k).__name__}")
            items.append((k, _linked(_resolve(v), link)))
    else:
        if isinstance(objectives, str) or callable(objectives):
            objectives = [objectives]
        resolved = [_linked(_resolve(o), link) for o in objectives]
        items = list(zip(_unique([_label(o) for o in resolved]), resolved))
    if not items:
        raise ValueError("compare() needs at least one objective")
    return dict(items)


# --- data sets ---------------------------------------------------------------------------------
def _data_set(name, Xy, n_features):
    if not isinstance(Xy, (tuple, list)) or len(Xy) not in (2, 3):
        raise TypeError(f"eval set {name!r} must be a tuple (X, y) or (X, y, sample_weight)")
    X = as_features(Xy[0], name=f"X of eval set {name!r}", allow_inf=True, sparse="csr")
    if X.shape[1] != n_features:
        raise DataError(
            f"eval set {name!r} has {X.shape[1]} features, the training data {n_features}"
        )
    y = as_targets(Xy[1], X.shape[0])
    w = as_weights(Xy[2], X.shape[0]) if len(Xy) == 3 else None
    return X, y, w


def _data_sets(X, y, sample_weight, eval_set) -> dict:
    Xf = as_features(X, sparse="csc")  # scipy.sparse stays sparse (absent = missing)
    sets = {"train": (Xf, as_targets(y, Xf.shape[0]), as_weights(sample_weight, Xf.shape[0]))}
    if eval_set is None:
        return sets
    if isinstance(eval_set, dict):
        named = list(eval_set.items())
    elif (
        isinstance(eval_set, tuple)
        and len(eval_set) in (2, 3)
        and not isinstance(eval_set[0], (tuple, list))
    ):
        named = [("validation_0", eval_set)]  # a single (X, y) pair
    else:
        named = [(f"validation_{i}", e) for i, e in enumerate(eval_set)]
    for name, Xy in named:
        if not isinstance(name, str):
            raise TypeError(f"eval set names must be str, got {type(name).__name__}")
        if name == "train":
            raise ValueError(
                "'train' is the name of the training data; name the eval set something else"
            )
        sets[name] = _data_set(name, Xy, Xf.shape[1])
    return sets


# --- metrics ---------------------------------------------------------------------------------
def _metric_specs(metrics, objectives: dict) -> list:
    from objectives import LinkedLoss

    if metrics is None:
        specs = []
        for obj in objectives.values():
            # a plain callable's default is its mean loss, with or without a link
            name = None if isinstance(obj, LinkedLoss) else getattr(obj, "metric", None)
            if isinstance(name, str) and name not in specs:
                specs.append(name)
        return specs or ["objective"]
    if isinstance(metrics, (str, _metrics.Metric)) or callable(metrics):
        metrics = [metrics]
    specs = list(metrics)
    if not specs:
        raise ValueError("metrics is empty; pass None for each objective's default metric")
    first = next(iter(objectives.values()))
    for m in specs:  # unknown names fail here, before any training
        _metrics.get_metric(m, objective=first)
    return specs


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "nan"
    v = float(v)
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
        return f"{v:.3e}"
    return f"{v:.4f}"


class Comparison:
    """What ``compare()`` returns: the models, their learning curves and a table.

    Attributes:
      boosters: ``{label: Booster}``, in the order the objectives were given.
      curves: ``{label: {data_name: {metric_name: (n_rounds,) float64 array}}}``;
        entry ``r`` is the metric of the model ``booster[:r + 1]``. A metric that does
        not apply to a model (e.g. ``mlogloss`` for a scalar output) is all NaN, and
        ``notes`` says why.
      train_seconds: ``{label: seconds}`` of training, compilation included (each
        model's share of the joint time when ``train_many`` trained them together).
      metrics: ``{metric_name: Metric}`` (for ``"loss"``, the metric ``"objective"``
        gives, the first model's).
      data_names: the data sets, ``"train"`` first, then the eval sets.
      n_rows: ``{data_name: rows}``.
      table_data: the data set the table reports: the last eval set, or ``"train"``.
      notes: why some curves are NaN, one line each.
    """

    def __init__(
        self, *, boosters, curves, train_seconds, metrics, data_names, n_rows, n_rounds, notes
    ):
        self.boosters = boosters
        self.curves = curves
        self.train_seconds = train_seconds
        self.metrics = metrics
        self.data_names = list(data_names)
        self.n_rows = n_rows
        self.n_rounds = n_rounds
        self.notes = list(notes)

    @property
    def labels(self) -> list[str]:
        return list(self.boosters)

    @property
    def table_data(self) -> str:
        return self.data_names[-1]

    def best(self, label, metric, data=None) -> tuple[float, int | None]:
        """``(best value, rounds k)`` of one curve; ``booster[:k]`` is that model.

        ``k`` counts rounds from 1 (``None`` when the curve is all NaN or empty). An
        unknown label, metric or data set is a ``ValueError`` naming the known ones.
        """
        data = self.table_data if data is None else data
        for what, value, known in (
            ("objective label", label, self.labels),
            ("metric", metric, list(self.metrics)),
            ("data set", data, self.data_names),
        ):
            if not isinstance(value, str) or value not in known:
                raise ValueError(
                    f"unknown {what} {value!r}; this comparison has {', '.join(map(repr, known))}"
                )
        value, i = self.metrics[metric].best(self.curves[label][data][metric])
        return value, None if i is None else i + 1

    @property
    def table(self) -> list[dict]:
        """One dict per objective, for ``table_data``.

        Keys: ``"objective"`` (the label); for each metric ``m``: ``m`` (the value after
        the last round), ``m + "_best"`` (the best value over rounds: lowest, or highest
        for a metric with ``maximize``) and ``m + "_best_round"`` (the number of rounds
        ``k`` that reached it, counted from 1: ``booster[:k]`` is that model); then
        ``"train_seconds"``.
        """
        rows = []
        for label in self.boosters:
            row = {"objective": label}
            for m in self.metrics:
                curve = self.curves[label][self.table_data][m]
                row[m] = float(curve[-1]) if len(curve) else math.nan
                row[m + "_best"], row[m + "_best_round"] = self.best(label, m)
            row["train_seconds"] = self.train_seconds[label]
            rows.append(row)
        return rows

    def __str__(self) -> str:
        data = self.table_data
        rows = self.table
        names = list(self.metrics)
        w_lab = max([len("objective")] + [len(r["objective"]) for r in rows]) + 2
        cells = []  # per row: label, then (final, best@k) per metric, then seconds
        for r in rows:
            line = []
            for m in names:
                k = r[m + "_best_round"]
                line += [_fmt(r[m]), _fmt(r[m + "_best"]) + ("" if k is None else f"@{k}")]
            cells.append(line)
        heads = []
        for m in names:
            heads += [m, "best@k"]
        widths = [max([len(h)] + [len(c[j]) for c in cells]) + 2 for j, h in enumerate(heads)]
        head = "objective".ljust(w_lab) + "".join(h.rjust(wd) for h, wd in zip(heads, widths))
        head += "fit s".rjust(8)
        out = [f"{data}: {self.n_rows[data]} rows, {self.n_rounds} rounds", head, "-" * len(head)]
        for r, line in zip(rows, cells):
            out.append(
                r["objective"].ljust(w_lab)
                + "".join(c.rjust(wd) for c, wd in zip(line, widths))
                + f"{r['train_seconds']:8.2f}"
            )
        higher = [m for m, met in self.metrics.items() if met.maximize]
        out.append(
            "value after the last round; best@k: the best value over rounds (lowest"
            + (f"; highest for {', '.join(higher)}" if higher else "")
            + ")"
        )
        out.append(
            "and the rounds k of the model that reached it, booster[:k]; fit s: "
            "training time, compilation included (each model's share when trained "
            "together)"
        )
        out += [f"note: {n}" for n in self.notes]
        return "\n".join(out)

    __repr__ = __str__

    def to_pandas(self):
        """``table`` as a ``pandas.DataFrame`` indexed by objective (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError("Comparison.to_pandas() needs pandas: pip install pandas") from e
        return pd.DataFrame(self.table).set_index("objective")

    def plot(self, path=None, **kwargs):
        """Learning curves, one panel per metric: ``jaxboost.plotting.plot_comparison``
        (``data=``, ``metrics=``, ``title=``, ``dpi=``, ``ax=``). Returns the
        ``matplotlib.figure.Figure``, not registered with pyplot (a notebook cell ending
        with ``cmp.plot()`` shows it once); ``path`` also saves it."""
        from .plotting import plot_comparison

        return plot_comparison(self, path, **kwargs)


def _many_compatible(objs: dict, train_kwargs: dict, y) -> bool:
    """Whether ``train_many`` can train these objectives with these arguments: single-
    output per-row losses, and only arguments ``train_many`` takes."""
    from objectives import GroupObjective, Objective

    from ..training.many import CONFIG_KEYS

    shared = {"max_depth", "max_bin", "sample_weight", "feature_names", "quantize"}
    if any(k not in CONFIG_KEYS and k not in shared for k in train_kwargs):
        return False
    for obj in objs.values():
        if isinstance(obj, Objective):
            try:
                if obj.resolve_outputs(y).outputs != 1:
                    return False
            except Exception:  # labels outside the loss's domain: train() says so
                return False
        elif not callable(obj) or isinstance(obj, GroupObjective):
            return False
    return True


def _stages(booster, X, on, cache):
    key = on == "margin"
    if key not in cache:
        cache[key] = booster.staged_predict(X, output_margin=key)
    return cache[key]


def compare(
    objectives, X, y, *, eval_set=None, metrics=None, n_rounds: int = 100, link=None, **train_kwargs
) -> Comparison:
    """Train several objectives with the same budget and compare them round by round.

    Args:
      objectives: a list of catalogue names (``"logistic"``), ``objectives`` entries
        and plain callables ``loss(y, pred)``, labelled by catalogue name (with
        non-default hyperparameters, e.g. ``huber(delta=2.0)``) or ``__name__``; or a
        dict ``{label: objective}``.
      X: ``(N, F)`` training features, NaN = missing (or a ``scipy.sparse`` matrix,
        whose absent entries are missing; so may the eval sets' be).
      y: ``(N,)`` training labels, or side data for losses that take it (a dict of
        ``(N,)`` arrays or an ``(N, L)`` array: ``objectives.aft``'s intervals, a loss of
        your own's extra columns); the eval sets' ``y`` alike.
      eval_set: ``None``, a list of ``(X, y)`` (or ``(X, y, sample_weight)``) named
        ``validation_0``, ``validation_1``, ..., or a dict ``{name: (X, y)}``. The
        training data is always evaluated too, as ``"train"``.
      metrics: names (``jaxboost.metrics.names()``), ``Metric`` objects (host metrics,
        ``jaxboost.metrics.host(fn)``, are called on NumPy arrays stage by stage) or
        callables ``metric(y, pred) -> scalar``; ``"objective"`` is each model's own loss (named
        ``"loss"`` in the curves and the table, evaluated on the margins). Default:
        the objectives' default metrics (``objective.metric``), in order of first
        appearance; ``["objective"]`` when no objective has one (plain callables). A
        metric that does not apply to a model (e.g. ``mlogloss`` on a scalar output)
        gives NaN curves and a line in ``Comparison.notes`` instead of an error.
      n_rounds: boosting rounds for every objective.
      link: the inverse link of the plain callables among ``objectives`` (as ``train``'s
        ``link``: ``"sigmoid"``, ``"softmax"``, ``"exp"``, ``"identity"`` or a JAX
        callable); catalogue entries keep their own. Without it a plain callable's
        response is its margin, and a metric that needs probabilities or a mean
        (``logloss``, ``error``, ``brier``, ...) gives it NaN curves and a note that
        names ``link=``.
      **train_kwargs: passed to ``jaxboost.train`` for every objective (``learning_rate``,
        ``max_depth``, ``sample_weight``, ...).

    Returns:
      ``Comparison``: ``boosters``, ``curves[label][data][metric]`` (``(n_rounds,)``
      arrays; entry ``r`` is the model ``booster[:r + 1]``), ``train_seconds``,
      ``table`` (final and best values on the last eval set, or the training data), a
      text table as ``str()``, ``to_pandas()`` and ``plot()``.

    Each model's staged predictions on a data set, ``(n_rounds, N)`` floats (times
    ``K`` for vector outputs), are held in memory while its metrics are computed.
    Metrics with ``on="response"`` see each model's response (its link applied to the
    margins: a probability for ``logistic`` and for a plain callable given
    ``link="sigmoid"``, the margin itself for ``squared`` and plain callables without a
    link); ``on="margin"`` metrics see the margins.

    Example:
      >>> import numpy as np, jaxboost
      >>> rng = np.random.default_rng(0)
      >>> X = rng.normal(size=(300, 3)).astype(np.float32)
      >>> y = (X[:, 0] + 0.5 * rng.normal(size=300) > 0).astype(np.float32)
      >>> cmp = jaxboost.compare(["logistic", "squared"], X[:200], y[:200],
      ...                        eval_set=[(X[200:], y[200:])], metrics=["logloss", "auc"],
      ...                        n_rounds=20, max_depth=2)
      >>> cmp.curves["logistic"]["validation_0"]["auc"].shape
      (20,)
      >>> [row["objective"] for row in cmp.table], cmp.data_names
      (['logistic', 'squared'], ['train', 'validation_0'])
      >>> bool(cmp.table[0]["logloss"] < 0.6)
      True
    """
    objs = _objectives(objectives, link)
    data = _data_sets(X, y, train_kwargs.get("sample_weight"), eval_set)
    specs = _metric_specs(metrics, objs)

    boosters, seconds, notes = {}, {}, []
    Xtr, ytr, _ = data["train"]
    if len(objs) > 1 and _many_compatible(objs, train_kwargs, ytr):
        # One program for all models (jaxboost.train_many): the same models, one compile.
        t0 = time.perf_counter()
        models = train_many(list(objs.values()), Xtr, ytr, n_rounds=n_rounds, **train_kwargs)
        total = time.perf_counter() - t0
        for label, m in zip(objs, models):
            boosters[label] = m
            seconds[label] = total / len(objs)
        notes.append(
            f"the {len(objs)} models were trained together by train_many in "
            f"{total:.2f} s; train_seconds is the share of each"
        )
    else:
        for label, obj in objs.items():
            t0 = time.perf_counter()
            boosters[label] = train(obj, Xtr, ytr, n_rounds=n_rounds, **train_kwargs)
            seconds[label] = time.perf_counter() - t0

    curves, failed, metric_objs = {}, {}, {}
    for label, obj in objs.items():
        # The trained objective: its output count is resolved from the labels.
        trained = getattr(boosters[label], "objective", obj)
        resolved = [_metrics.get_metric(m, objective=trained) for m in specs]
        names = _unique([m.name for m in resolved], reserved=("objective", "train_seconds"))
        for name, m in zip(names, resolved):
            metric_objs.setdefault(name, m)
        curves[label] = {}
        for dname, (Xd, yd, wd) in data.items():
            cache = {}
            per = curves[label][dname] = {}
            for name, m in zip(names, resolved):
                stages = _stages(boosters[label], Xd, m.on, cache)
                try:
                    check_metric_links([m], trained)  # probabilities of margins: no
                    targets = metric_targets(m, yd)  # side data: the label, or all of y
                    per[name] = _metrics.evaluate_stages(m, targets, stages, wd)
                except Exception as e:  # a metric that does not apply to this model
                    per[name] = np.full(stages.shape[0], np.nan)
                    why = (str(e).strip().splitlines() or [""])[0]
                    labels, _ = failed.setdefault(name, ([], f"{type(e).__name__}: {why}"))
                    if label not in labels:
                        labels.append(label)
    notes += [
        f"{name} is NaN for {', '.join(labels)}: {why}" for name, (labels, why) in failed.items()
    ]
    n_rows = {name: d[0].shape[0] for name, d in data.items()}
    return Comparison(
        boosters=boosters,
        curves=curves,
        train_seconds=seconds,
        metrics=metric_objs,
        data_names=list(data),
        n_rows=n_rows,
        n_rounds=n_rounds,
        notes=notes,
    )
