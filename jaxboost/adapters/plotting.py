"""Figures: learning curves, feature importance and single trees.

Needs matplotlib (the ``plot`` extra). matplotlib is imported inside the
functions, never when jaxboost is imported, and the global backend is left alone.

Every function returns a ``matplotlib.figure.Figure`` that pyplot does not know about:
it is made as a plain ``Figure`` on its own Agg canvas, never with ``pyplot.figure``, so
nothing opens a window, ``pyplot.show()`` and a notebook's end-of-cell flush do not
draw it, and a notebook cell ending with the call shows it exactly once (as the cell's
value, through IPython's figure formatter or the figure's own ``_repr_png_``).
``fig.savefig(path)`` works as usual, and ``path=`` saves it directly.

To draw into a figure of your own (a pyplot window in a script, a grid of panels),
pass ``ax=``: the Axes to draw into (a sequence of them, one per panel, for the
functions that draw several panels). The function then returns that Axes' figure,
neither laid out again nor closed; if pyplot made it, pyplot shows it as it shows any
figure of its own (end a notebook cell with ``;`` to avoid seeing it twice).

>>> from matplotlib.figure import Figure
>>> from jaxboost import plotting
>>> fig = plotting.plot_learning_curves({"valid": {"logloss": [0.61, 0.52, 0.47]}})
>>> isinstance(fig, Figure), fig.axes[0].get_title()
(True, 'logloss')
"""

from __future__ import annotations

import math

from ..inputs.numbers import is_int
from ..model.explain import IMPORTANCE_TYPES, feature_names, is_categorical_split, left_categories

__all__ = [
    "plot_comparison",
    "plot_cv",
    "plot_learning_curves",
    "plot_history",
    "plot_importance",
    "plot_tree",
    "IMPORTANCE_TYPES",
]

_LINESTYLES = ("-", "--", ":", "-.")


def _matplotlib():
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError(
            "jaxboost's plots need matplotlib: pip install matplotlib, or "
            "install jaxboost with its plot extra (pip install '.[plot]' "
            "from a checkout)"
        ) from e
    return matplotlib


_FIGURE_CLASS = None


def _figure_class():
    """``Figure`` with a ``_repr_png_``, made once matplotlib is imported.

    IPython shows a figure that is a cell's value through the formatter matplotlib's
    inline backend registers, which exists only once pyplot has loaded that backend; a
    figure made before that (pyplot never imported) would show as text alone.
    ``_repr_png_`` is IPython's fallback for objects without a registered formatter, so
    the figure shows as a PNG either way, and once only: IPython uses one or the other.
    """
    global _FIGURE_CLASS
    if _FIGURE_CLASS is None:
        from matplotlib.figure import Figure

        class JaxboostFigure(Figure):
            """A ``matplotlib.figure.Figure`` that renders itself as PNG in IPython."""

            def _repr_png_(self):
                import io

                buf = io.BytesIO()
                self.canvas.print_figure(
                    buf,
                    format="png",
                    bbox_inches="tight",
                    facecolor=self.get_facecolor(),
                    edgecolor=self.get_edgecolor(),
                )
                return buf.getvalue()

        JaxboostFigure.__module__ = __name__
        _FIGURE_CLASS = JaxboostFigure
    return _FIGURE_CLASS


def _new_figure(size):
    """An empty figure of ``size`` inches on its own Agg canvas, unknown to pyplot."""
    _matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = _figure_class()(figsize=size)
    FigureCanvasAgg(fig)
    return fig


def _root_figure(ax):
    """The top-level ``Figure`` an Axes is drawn in (through any subfigures)."""
    fig = ax.figure
    while getattr(fig, "figure", fig) is not fig:
        fig = fig.figure
    return fig


def _given_axes(ax, n_panels, what):
    """The caller's ``ax`` as ``(figure, [Axes] * n_panels)``: one Axes, or a sequence
    (list, tuple, NumPy array from ``pyplot.subplots``) of ``n_panels`` Axes of one
    figure."""
    import numpy as np
    from matplotlib.axes import Axes

    if isinstance(ax, Axes):
        axes = [ax]
    else:
        try:
            axes = list(np.ravel(np.asarray(ax, dtype=object)))
        except Exception:  # noqa: BLE001 - reported as the TypeError below
            axes = None
        if not axes or not all(isinstance(a, Axes) for a in axes):
            raise TypeError(
                f"ax must be a matplotlib Axes or a sequence of them, got {type(ax).__name__}"
            )
    if len(axes) != n_panels:
        raise ValueError(
            f"{what} draws {n_panels} panel(s); ax must hold {n_panels} "
            f"Axes, one per panel, got {len(axes)}"
        )
    fig = _root_figure(axes[0])
    if any(_root_figure(a) is not fig for a in axes[1:]):
        raise ValueError("the Axes in ax must all belong to one figure")
    return fig, axes


def _one_axes(ax, size):
    """``(figure, Axes, own)``: a new figure of ``size`` inches with one Axes (``own``),
    or the caller's Axes ``ax`` and its figure."""
    if ax is None:
        fig = _new_figure(size)
        return fig, fig.subplots(), True
    _matplotlib()
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    return _root_figure(ax), ax, False


def _figure(n_panels, ax=None, what="this plot"):
    """``(figure, axes, own)``: a new figure with ``n_panels`` axes, up to 3 per row
    (2 x 2 for four), or the caller's ``ax`` (see ``_given_axes``)."""
    _matplotlib()
    if ax is not None:
        fig, axes = _given_axes(ax, n_panels, what)
        return fig, axes, False
    cols = 2 if n_panels == 4 else min(n_panels, 3)
    rows = math.ceil(n_panels / cols)
    fig = _new_figure((4.6 * cols, 3.6 * rows))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for a in axes[n_panels:]:
        a.set_visible(False)
    return fig, list(axes[:n_panels]), True


def _finish(fig, path, dpi, own=True):
    """Lay out a figure of our own (a caller's is left as it is), save it when ``path``
    is given, and return it."""
    if own:
        fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=dpi)
    return fig


def _as_list(x):
    return [x] if isinstance(x, str) else list(x)


def _metric_names(curves) -> list:
    """The metric names of ``{data_name: {metric_name: values}}``, in order of first
    appearance."""
    names = []
    for per in curves.values():
        for m in per:
            if m not in names:
                names.append(m)
    return names


def _curve_panel(ax, m, curves, best=None):
    """Metric ``m``'s panel: one line per data set over rounds ``1..len(values)``; when
    ``best`` (a 0-based round) is given, a dot on each line and a dashed line there."""
    for j, (d, per) in enumerate(curves.items()):
        if m not in per:
            continue
        values = [float(v) for v in per[m]]
        color = f"C{j % 10}"
        ax.plot(range(1, len(values) + 1), values, color=color, label=d)
        if best is not None and 0 <= best < len(values):
            ax.plot([best + 1], [values[best]], "o", color=color, markersize=5)
    if best is not None:
        ax.axvline(
            best + 1, color="0.35", linestyle="--", linewidth=1, label=f"best_iteration = {best}"
        )
    ax.set_title(m)
    ax.set_xlabel("rounds k")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)


def plot_comparison(
    comparison, path=None, *, data=None, metrics=None, title=None, dpi: int = 120, ax=None
):
    """Learning curves of a ``Comparison``: one panel per metric, one line per objective.

    Args:
      comparison: what ``jaxboost.compare`` returned.
      path: file to save the figure to (PNG by the extension); ``None`` only returns it.
      data: a data set name or a list of them (default: ``comparison.table_data``, the
        last eval set). With several, each gets its own line style.
      metrics: metric names to draw (default: all of ``comparison.metrics``).
      title: figure title (default: names the data sets; with ``ax``, only a title
        given is drawn).
      dpi: resolution of the saved file.
      ax: Axes to draw into, one per metric (a single Axes for one metric); default a
        new figure (see the module docstring).

    Returns:
      The ``matplotlib.figure.Figure`` (x: rounds ``k`` of the model ``booster[:k]``),
      not registered with pyplot unless ``ax`` came from it.

    Raises:
      ImportError: matplotlib is not installed (the ``plot`` extra).
      KeyError: an unknown data set or metric name.
      TypeError: ``ax`` is not an Axes or a sequence of them.
      ValueError: ``ax`` holds a number of Axes other than the number of metrics.
    """
    _matplotlib()
    datas = _as_list(comparison.table_data if data is None else data)
    names = list(comparison.metrics) if metrics is None else _as_list(metrics)
    for d in datas:
        if d not in comparison.data_names:
            raise KeyError(f"no data set {d!r}; this comparison has {comparison.data_names}")
    for m in names:
        if m not in comparison.metrics:
            raise KeyError(f"no metric {m!r}; this comparison has {list(comparison.metrics)}")
    fig, axes, own = _figure(len(names), ax, "plot_comparison")
    for a, m in zip(axes, names):
        drawn = False
        for i, label in enumerate(comparison.boosters):
            for j, d in enumerate(datas):
                curve = comparison.curves[label][d][m]
                drawn = drawn or not all(math.isnan(v) for v in curve)
                rounds = range(1, len(curve) + 1)
                a.plot(
                    rounds,
                    curve,
                    color=f"C{i % 10}",
                    linestyle=_LINESTYLES[j % len(_LINESTYLES)],
                    label=label if len(datas) == 1 else f"{label} ({d})",
                )
        if not drawn:
            a.text(
                0.5,
                0.5,
                "not defined for these models\n(see Comparison.notes)",
                ha="center",
                va="center",
                transform=a.transAxes,
                color="0.4",
            )
        better = "higher" if comparison.metrics[m].maximize else "lower"
        a.set_title(f"{m} ({better} is better)")
        a.set_xlabel("rounds k")
        a.set_ylabel(m)
        a.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8)
    if title is None and own:
        title = f"Learning curves on {', '.join(datas)} ({comparison.n_rounds} rounds)"
    if title is not None:
        fig.suptitle(title)
    return _finish(fig, path, dpi, own)


def plot_learning_curves(curves, path=None, *, title=None, dpi: int = 120, ax=None):
    """One model's learning curves: ``{data_name: {metric_name: values}}``.

    One panel per metric (in order of first appearance), one line per data set; x is
    the round count ``1..len(values)``.

    Args:
      curves: e.g. ``comparison.curves[label]``.
      path: file to save the figure to; ``None`` only returns it.
      title: optional figure title.
      dpi: resolution of the saved file.
      ax: Axes to draw into, one per metric (a single Axes for one metric); default a
        new figure (see the module docstring).

    Returns:
      The ``matplotlib.figure.Figure``, not registered with pyplot unless ``ax`` came
      from it.

    Raises:
      ImportError: matplotlib is not installed (the ``plot`` extra).
      ValueError: ``curves`` has no metric, or ``ax`` holds a number of Axes other
        than the number of metrics.
      TypeError: ``ax`` is not an Axes or a sequence of them.

    Example:
      >>> from jaxboost import plotting
      >>> fig = plotting.plot_learning_curves({"train": {"rmse": [1.0, 0.7, 0.6]},
      ...                                      "valid": {"rmse": [1.1, 0.9, 0.85]}})
      >>> [line.get_label() for line in fig.axes[0].get_lines()]
      ['train', 'valid']
    """
    _matplotlib()
    names = _metric_names(curves)
    if not names:
        raise ValueError("curves has no metric to plot")
    fig, axes, own = _figure(len(names), ax, "plot_learning_curves")
    for a, m in zip(axes, names):
        _curve_panel(a, m, curves)
    if title is not None:
        fig.suptitle(title)
    return _finish(fig, path, dpi, own)


def plot_cv(result, path=None, *, metrics=None, title=None, dpi: int = 120, ax=None):
    """Cross-validation curves of ``jaxboost.cv``: one panel per metric, the mean over
    the folds of the training and the held-out rows per round, each in a band of one
    standard deviation; with early stopping a dashed line at ``best_iteration``.

    Args:
      result: what ``jaxboost.cv`` returned (a ``CVResult``).
      path: file to save the figure to; ``None`` only returns it.
      metrics: metric names to draw (default: all of them).
      title: optional figure title (default: the number of folds).
      dpi: resolution of the saved file.
      ax: Axes to draw into, one per metric; default a new figure.

    Returns:
      The ``matplotlib.figure.Figure`` (x: rounds ``k``), not registered with pyplot
      unless ``ax`` came from it.

    Raises:
      ImportError: matplotlib is not installed (the ``plot`` extra).
      KeyError: an unknown metric name.

    Example:
      >>> import numpy as np, jaxboost
      >>> from jaxboost import plotting
      >>> rng = np.random.default_rng(0)
      >>> X = rng.normal(size=(200, 2)).astype(np.float32)
      >>> y = (X[:, 0] > 0).astype(np.float32)
      >>> res = jaxboost.cv("logistic", X, y, nfold=3, n_rounds=5, max_depth=2)
      >>> fig = plotting.plot_cv(res)
      >>> [line.get_label() for line in fig.axes[0].get_lines()]
      ['train', 'test']
    """
    _matplotlib()
    names = list(result.mean["test"])
    if metrics is not None:
        wanted = _as_list(metrics)
        unknown = [m for m in wanted if m not in names]
        if unknown:
            raise KeyError(f"unknown metric(s) {unknown}; this cv has {names}")
        names = wanted
    fig, axes, own = _figure(len(names), ax, "plot_cv")
    best = result.best_iteration
    for a, m in zip(axes, names):
        for j, data in enumerate(("train", "test")):
            mean, std = result.mean[data][m], result.std[data][m]
            k = range(1, len(mean) + 1)
            a.plot(k, mean, color=f"C{j}", label=data)
            a.fill_between(k, mean - std, mean + std, color=f"C{j}", alpha=0.2, linewidth=0)
        if best is not None:
            a.axvline(best + 1, color="0.35", linestyle="--", linewidth=1)
        a.set_title(m)
        a.set_xlabel("rounds k")
        a.grid(True, alpha=0.3)
        a.legend(fontsize=8)
    if title is not None or own:
        fig.suptitle(title if title is not None else f"{len(result.folds)}-fold cv, mean +- std")
    return _finish(fig, path, dpi, own)


# --------------------------------------------------------------------------------------
# One booster: history, importance, trees
# --------------------------------------------------------------------------------------


def plot_history(
    booster, path=None, *, metrics=None, data=None, title=None, dpi: int = 120, ax=None
):
    """The evaluation history recorded by ``train(eval_set=...)``.

    One panel per metric, one line per evaluation data set, from
    ``booster.history`` (``{data_name: {metric_name: [score per round]}}``). When early
    stopping set ``booster.best_iteration``, a dashed line marks it (x is the round
    count, so the best model ``booster[:best_iteration + 1]`` sits at
    ``best_iteration + 1``) and each curve gets a dot there.

    Args:
      booster: a trained ``Booster``.
      path: file to save the figure to (PNG by the extension); ``None`` only returns it.
      metrics: a metric name or list of them (default: every metric in the history).
      data: a data set name or list of them (default: all).
      title: figure title (default: names the model's rounds and best iteration;
        with ``ax``, only a title given is drawn).
      dpi: resolution of the saved file.
      ax: Axes to draw into, one per metric (a single Axes for one metric); default a
        new figure (see the module docstring).

    Returns:
      The ``matplotlib.figure.Figure``, not registered with pyplot unless ``ax`` came
      from it.

    Raises:
      ImportError: matplotlib is not installed (the ``plot`` extra).
      ValueError: the booster has no history (train with ``eval_set=``), or ``ax``
        holds a number of Axes other than the number of metrics.
      KeyError: an unknown data set or metric name.
      TypeError: ``ax`` is not an Axes or a sequence of them.
    """
    _matplotlib()
    history = getattr(booster, "history", None) or {}
    curves = {d: per for d, per in history.items() if per}
    if not curves:
        raise ValueError(
            "booster.history is empty: train with eval_set=... (and "
            "optionally eval_metric=...) to record learning curves"
        )
    if data is not None:
        wanted = _as_list(data)
        for d in wanted:
            if d not in curves:
                raise KeyError(f"no data set {d!r} in booster.history; it has {list(curves)}")
        curves = {d: curves[d] for d in wanted}
    names = _metric_names(curves)
    if metrics is not None:
        wanted = _as_list(metrics)
        for m in wanted:
            if m not in names:
                raise KeyError(f"no metric {m!r} in booster.history; it has {names}")
        names = wanted
    best = getattr(booster, "best_iteration", None)
    fig, axes, own = _figure(len(names), ax, "plot_history")
    for a, m in zip(axes, names):
        _curve_panel(a, m, curves, best)
    if title is None and own:
        title = f"Evaluation history ({len(booster)} rounds"
        score = getattr(booster, "best_score", None)
        if best is not None:
            title += f", best_iteration {best}"
            if score is not None and math.isfinite(score):
                title += f", best_score {score:.5g}"
        title += ")"
    if title is not None:
        fig.suptitle(title)
    return _finish(fig, path, dpi, own)


# What plot_importance can rank features by is explain.IMPORTANCE_TYPES (XGBoost's
# meanings): weight the number of splits on the feature, total_gain / total_cover the sum
# of the splits' loss reductions / Hessian sums, gain / cover their mean per split.


def _importance_from_trees(booster, importance_type) -> dict:
    """``{feature name: score}`` over the split nodes of every tree (used features only):
    ``jaxboost.model.explain.feature_importance``, for boosters without their own method."""
    from ..model.explain import feature_importance

    return feature_importance(booster, importance_type)


def _importance(booster, importance_type) -> dict:
    """The booster's own ``feature_importance`` when it has one, else from its trees."""
    method = getattr(booster, "feature_importance", None)
    if not callable(method):
        return _importance_from_trees(booster, importance_type)
    scores = method(importance_type)
    if hasattr(scores, "items"):
        return {str(k): float(v) for k, v in scores.items()}
    names = feature_names(booster)  # an array over all features
    return {names[f]: float(v) for f, v in enumerate(scores) if v}


def plot_importance(
    booster,
    path=None,
    *,
    importance_type: str = "gain",
    max_features: int | None = 20,
    title=None,
    dpi: int = 120,
    ax=None,
):
    """Horizontal bars of feature importance, the most important feature on top.

    Scores come from ``booster.feature_importance(importance_type)`` when the booster
    has that method, else from the trees: over every split node, the number of splits
    per feature (``"weight"``), the mean or total loss reduction (``"gain"``,
    ``"total_gain"``) or Hessian sum (``"cover"``, ``"total_cover"``); see
    ``IMPORTANCE_TYPES``. Features the trees never split on are left out, as XGBoost
    does. Bars are labelled with ``booster.feature_names`` when the model has them,
    else ``f0``, ``f1``, ...

    Args:
      booster: a trained ``Booster``.
      path: file to save the figure to; ``None`` only returns it.
      importance_type: what to rank by (default ``"gain"``, the mean gain per split).
      max_features: draw at most this many (the largest); ``None`` draws all.
      title: Axes title (default names the importance type).
      dpi: resolution of the saved file.
      ax: an Axes to draw into; default a new figure (see the module docstring).

    Returns:
      The ``matplotlib.figure.Figure``, not registered with pyplot unless ``ax`` came
      from it.

    Raises:
      ImportError: matplotlib is not installed (the ``plot`` extra).
      ValueError: an unknown ``importance_type`` or a ``max_features`` below 1.
      TypeError: ``ax`` is not a matplotlib Axes.
    """
    _matplotlib()
    if max_features is not None and (not is_int(max_features) or max_features < 1):
        raise ValueError(f"max_features must be an int >= 1 or None, got {max_features!r}")
    scores = _importance(booster, importance_type)
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ranked if max_features is None else ranked[:max_features]
    fig, ax, own = _one_axes(ax, (7.0, 1.2 + 0.32 * max(len(shown), 3)))
    if shown:
        labels = [name for name, _ in shown][::-1]
        values = [v for _, v in shown][::-1]
        bars = ax.barh(range(len(shown)), values, color="C0", height=0.7)
        ax.set_yticks(range(len(shown)), labels)
        ax.bar_label(bars, labels=[f"{v:.4g}" for v in values], padding=3, fontsize=8)
        ax.margins(x=0.15)
    else:
        ax.text(
            0.5,
            0.5,
            "no split in this model",
            ha="center",
            va="center",
            transform=ax.transAxes,
            color="0.4",
        )
        ax.set_yticks([])
    ax.set_xlabel(importance_type)
    ax.grid(True, axis="x", alpha=0.3)
    hidden = len(ranked) - len(shown)
    if title is None:
        title = f"Feature importance ({importance_type})"
        if hidden:
            title += f": top {len(shown)} of {len(ranked)} features used"
    ax.set_title(title)
    return _finish(fig, path, dpi, own)


def _tree_layout(is_split, M):
    """``{node: (x, depth)}`` of the reachable nodes: leaves at 0, 1, 2, ... left to
    right, each split node centred over its two children."""
    place = {}
    leaves = 0
    stack = [(0, 0, False)]
    while stack:  # post-order without recursion
        i, depth, children_done = stack.pop()
        left, right = 2 * i + 1, 2 * i + 2
        split = bool(is_split[i]) and right < M
        if not split:
            place[i] = (float(leaves), depth)
            leaves += 1
        elif children_done:
            place[i] = ((place[left][0] + place[right][0]) / 2, depth)
        else:
            stack += [(i, depth, True), (right, depth + 1, False), (left, depth + 1, False)]
    return place, leaves


def _fmt(v, precision) -> str:
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:.{precision}g}"


def plot_tree(
    booster,
    tree_index: int = 0,
    path=None,
    *,
    precision: int = 3,
    title=None,
    dpi: int = 120,
    ax=None,
):
    """One tree as a diagram, drawn with matplotlib alone (no graphviz).

    Split nodes read ``f2 < 0.53`` (with the split's gain and cover): a row whose
    value is below the threshold follows the ``yes`` edge (left), others the ``no``
    edge (a categorical split reads ``f0 in {1,4}``, the categories going ``yes``);
    ``missing`` marks the side a missing value (NaN) takes. Leaves show their value
    (learning rate applied) and cover, green when positive and red when negative.
    In a model with one tree per output (``trees_per_round == n_outputs``) a tree holds
    one output's values, which the title names; a tree of vector leaves shows vectors.

    Args:
      booster: a trained ``Booster``.
      tree_index: which tree, counting every tree of every round (``-1``: the last).
      path: file to save the figure to; ``None`` only returns it.
      precision: significant digits of thresholds and values.
      title: Axes title (default names the tree, its round and output).
      dpi: resolution of the saved file.
      ax: an Axes to draw into (its axis is switched off); default a new figure sized
        to the tree (see the module docstring).

    Returns:
      The ``matplotlib.figure.Figure``, not registered with pyplot unless ``ax`` came
      from it.

    Raises:
      ImportError: matplotlib is not installed (the ``plot`` extra).
      IndexError: ``tree_index`` is out of range.
      TypeError: ``tree_index`` is not an int, or ``ax`` not a matplotlib Axes.
    """
    _matplotlib()
    import numpy as np

    e = booster.trees  # class trees as held: each tree's own values
    T = int(e.n_trees)
    if not is_int(tree_index):
        raise TypeError(f"tree_index must be an int, got {type(tree_index).__name__}")
    if not -T <= tree_index < T:
        raise IndexError(f"tree_index {tree_index} is out of range: the model has {T} tree(s)")
    t = int(tree_index) % T
    feature = np.asarray(e.feature[t])
    threshold = np.asarray(e.threshold[t], np.float64)
    default_left = np.asarray(e.default_left[t], bool)
    is_split = ~np.asarray(e.is_leaf[t], bool)
    value = np.asarray(e.value[t], np.float64)
    gain = np.asarray(e.gain[t], np.float64)
    cover = np.asarray(e.cover[t], np.float64)
    M = is_split.shape[0]
    K, tpr = int(booster.n_outputs), int(booster.trees_per_round // booster.num_parallel_tree)
    output = None
    if K > 1 and tpr == K:  # one tree per output
        output = t % K
        if value.ndim == 2:  # spread (values edited by hand): output t % K's column
            value = value[:, output]
    names = feature_names(booster)

    place, n_leaves = _tree_layout(is_split, M)
    depth = max(d for _, d in place.values())
    width_needed = 2.0 * n_leaves + 0.5
    scale = min(1.0, 60.0 / width_needed)  # keep very wide trees within 60 inches
    fontsize = max(3.0, 8.5 * scale)
    fig, ax, own = _one_axes(ax, (max(5.0, min(width_needed, 60.0)), max(2.5, 1.35 * (depth + 1))))
    ax.set_axis_off()
    ax.set_xlim(-0.6, n_leaves - 0.4)
    ax.set_ylim(-depth - 0.45, 0.45)

    def xy(i):
        x, d = place[i]
        return x, -d

    for i in place:  # edges first, under the boxes
        if not (is_split[i] and 2 * i + 2 < M):
            continue
        x0, y0 = xy(i)
        for child, answer in ((2 * i + 1, "yes"), (2 * i + 2, "no")):
            x1, y1 = xy(child)
            ax.plot([x0, x1], [y0, y1], color="0.55", linewidth=1, zorder=1)
            missing = default_left[i] == (answer == "yes")
            label = f"{answer}, missing" if missing else answer
            ax.text(
                (x0 + x1) / 2,
                (y0 + y1) / 2,
                label,
                ha="center",
                va="center",
                fontsize=fontsize * 0.85,
                color="0.25",
                zorder=2,
                bbox=dict(
                    boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.9
                ),
            )
    for i in place:
        x, y = xy(i)
        if is_split[i] and 2 * i + 2 < M:
            test = f"{names[int(feature[i])]} < {_fmt(threshold[i], precision)}"
            if is_categorical_split(e, t, i):  # the training categories going left
                codes = ",".join(map(str, left_categories(booster, t, i)))
                test = f"{names[int(feature[i])]} in {{{codes}}}"
            text = f"{test}\ngain {_fmt(gain[i], precision)}, cover {_fmt(cover[i], precision)}"
            face = "#dbe8f5"
        else:
            v = value[i]
            if np.ndim(v) == 0:
                shown = _fmt(float(v), precision)
                sign = float(v)
            else:
                parts = [_fmt(float(a), precision) for a in v[:4]]
                shown = "[" + ", ".join(parts) + (", ...]" if len(v) > 4 else "]")
                sign = 0.0
            text = f"leaf {shown}\ncover {_fmt(cover[i], precision)}"
            face = "#e3f4df" if sign > 0 else "#fbe3e1" if sign < 0 else "#eeeeee"
        ax.text(
            x,
            y,
            text,
            ha="center",
            va="center",
            fontsize=fontsize,
            zorder=3,
            bbox=dict(boxstyle="round,pad=0.35", facecolor=face, edgecolor="0.45"),
        )
    if title is None:
        title = f"Tree {t} of {T} (round {t // tpr}"
        title += f", output {output})" if output is not None else ")"
    ax.set_title(title, fontsize=max(fontsize + 1.5, 8))
    return _finish(fig, path, dpi, own)
