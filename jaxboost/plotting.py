"""Learning-curve figures (needs matplotlib: ``pip install jaxboost[plot]``).

matplotlib is imported inside the functions, never when jaxboost is imported, and the
global backend is left alone: a figure that is only saved is drawn on its own Agg
canvas, so saving works without a display.
"""

from __future__ import annotations

import math

__all__ = ["plot_comparison", "plot_learning_curves"]

_LINESTYLES = ("-", "--", ":", "-.")


def _matplotlib():
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError("jaxboost's plots need matplotlib: pip install jaxboost[plot] "
                          "(or pip install matplotlib)") from e
    return matplotlib


def _figure(n_panels, path):
    """A figure with ``n_panels`` axes, up to 3 per row (2 x 2 for four)."""
    _matplotlib()
    cols = 2 if n_panels == 4 else min(n_panels, 3)
    rows = math.ceil(n_panels / cols)
    size = (4.6 * cols, 3.6 * rows)
    if path is None:
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=size)
    else:
        # Not registered with pyplot: nothing opens a window, and the Agg canvas draws it.
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=size)
        FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    return fig, axes[:n_panels]


def _finish(fig, path, dpi):
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=dpi)
    return fig


def _as_list(x):
    return [x] if isinstance(x, str) else list(x)


def plot_comparison(comparison, path=None, *, data=None, metrics=None, title=None,
                    dpi: int = 120):
    """Learning curves of a ``Comparison``: one panel per metric, one line per objective.

    Args:
      comparison: what ``jaxboost.compare`` returned.
      path: file to save the figure to (PNG by the extension); ``None`` only returns it.
      data: a data set name or a list of them (default: ``comparison.table_data``, the
        last eval set). With several, each gets its own line style.
      metrics: metric names to draw (default: all of ``comparison.metrics``).
      title: figure title (default: names the data sets).
      dpi: resolution of the saved file.

    Returns:
      The ``matplotlib.figure.Figure`` (x: rounds ``k`` of the model ``booster[:k]``).

    Raises:
      ImportError: matplotlib is not installed (``pip install jaxboost[plot]``).
      KeyError: an unknown data set or metric name.
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
    fig, axes = _figure(len(names), path)
    for ax, m in zip(axes, names):
        drawn = False
        for i, label in enumerate(comparison.boosters):
            for j, d in enumerate(datas):
                curve = comparison.curves[label][d][m]
                drawn = drawn or not all(math.isnan(v) for v in curve)
                rounds = range(1, len(curve) + 1)
                ax.plot(rounds, curve, color=f"C{i % 10}",
                        linestyle=_LINESTYLES[j % len(_LINESTYLES)],
                        label=label if len(datas) == 1 else f"{label} ({d})")
        if not drawn:
            ax.text(0.5, 0.5, "not defined for these models\n(see Comparison.notes)",
                    ha="center", va="center", transform=ax.transAxes, color="0.4")
        better = "higher" if comparison.metrics[m].maximize else "lower"
        ax.set_title(f"{m} ({better} is better)")
        ax.set_xlabel("rounds k")
        ax.set_ylabel(m)
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(title if title is not None else
                 f"Learning curves on {', '.join(datas)} ({comparison.n_rounds} rounds)")
    return _finish(fig, path, dpi)


def plot_learning_curves(curves, path=None, *, title=None, dpi: int = 120):
    """One model's learning curves: ``{data_name: {metric_name: values}}``.

    One panel per metric (in order of first appearance), one line per data set; x is
    the round count ``1..len(values)``.

    Args:
      curves: e.g. ``comparison.curves[label]``.
      path: file to save the figure to; ``None`` only returns it.
      title: optional figure title.
      dpi: resolution of the saved file.

    Returns:
      The ``matplotlib.figure.Figure``.

    Raises:
      ImportError: matplotlib is not installed (``pip install jaxboost[plot]``).
    """
    _matplotlib()
    names = []
    for per in curves.values():
        for m in per:
            if m not in names:
                names.append(m)
    if not names:
        raise ValueError("curves has no metric to plot")
    fig, axes = _figure(len(names), path)
    for ax, m in zip(axes, names):
        for j, (d, per) in enumerate(curves.items()):
            if m in per:
                values = list(per[m])
                ax.plot(range(1, len(values) + 1), values, color=f"C{j % 10}", label=d)
        ax.set_title(m)
        ax.set_xlabel("rounds k")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    if title is not None:
        fig.suptitle(title)
    return _finish(fig, path, dpi)
