"""jaxboost.plotting renders every figure to PNG; Booster's text and HTML reprs."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jaxboost
import objectives

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")  # this test module only: no display needed

from matplotlib.figure import Figure  # noqa: E402

from jaxboost import plotting  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MIN_PNG_BYTES = 5_000


def assert_png(path, fig):
    assert isinstance(fig, Figure)
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > MIN_PNG_BYTES, len(data)


@pytest.fixture(scope="module")
def stopped(small_binary):
    """A logistic model with two eval sets, two metrics and early stopping."""
    X, y = small_binary
    return jaxboost.train(
        objectives.logistic,
        X[:200],
        y[:200],
        n_rounds=80,
        max_depth=3,
        learning_rate=0.5,
        eval_set={"train": (X[:200], y[:200]), "valid": (X[200:], y[200:])},
        eval_metric=["logloss", "auc"],
        early_stopping_rounds=5,
        verbose=False,
    )


@pytest.fixture(scope="module")
def softmax_model(small_binary):
    X, _ = small_binary
    labels = (X[:, 0] > -0.4).astype(np.float32) + (X[:, 1] > 0.4)
    return jaxboost.train(objectives.softmax, X, labels, n_rounds=3, max_depth=3, verbose=False)


# --- figures of one booster ---------------------------------------------------------------


def test_plot_history(stopped, tmp_path):
    assert stopped.best_iteration is not None
    path = tmp_path / "history.png"
    fig = plotting.plot_history(stopped, path)
    assert_png(path, fig)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == ["logloss", "auc"]
    for ax in visible:
        labels = [line.get_label() for line in ax.get_lines()]
        assert "train" in labels and "valid" in labels
        best = [line for line in ax.get_lines() if line.get_label().startswith("best_iter")]
        assert len(best) == 1
        assert list(best[0].get_xdata()) == [stopped.best_iteration + 1] * 2
    # one metric, one data set
    fig = plotting.plot_history(stopped, tmp_path / "one.png", metrics="auc", data="valid")
    assert [ax.get_title() for ax in fig.axes if ax.get_visible()] == ["auc"]


def test_plot_history_errors(stopped, small_binary):
    with pytest.raises(KeyError, match="no metric"):
        plotting.plot_history(stopped, metrics="rmse")
    with pytest.raises(KeyError, match="no data set"):
        plotting.plot_history(stopped, data="test")
    X, y = small_binary
    plain = jaxboost.train("logistic", X, y, n_rounds=2, max_depth=2, verbose=False)
    with pytest.raises(ValueError, match="eval_set"):
        plotting.plot_history(plain)


def test_plot_history_without_early_stopping(small_binary, tmp_path):
    X, y = small_binary
    bst = jaxboost.train(
        "logistic", X, y, n_rounds=5, max_depth=2, eval_set=[(X, y)], verbose=False
    )
    assert bst.best_iteration is None
    fig = plotting.plot_history(bst, tmp_path / "h.png")
    assert_png(tmp_path / "h.png", fig)
    assert not any(
        line.get_label().startswith("best") for ax in fig.axes for line in ax.get_lines()
    )


def _bar_names(fig):
    ax = fig.axes[0]
    return [t.get_text() for t in ax.get_yticklabels()][::-1]  # top bar first


def test_plot_importance(stopped, tmp_path):
    for kind in plotting.IMPORTANCE_TYPES:
        path = tmp_path / f"importance_{kind}.png"
        fig = plotting.plot_importance(stopped, path, importance_type=kind)
        assert_png(path, fig)
        assert fig.axes[0].get_xlabel() == kind
    fig = plotting.plot_importance(stopped, importance_type="total_gain", max_features=2)
    names = _bar_names(fig)
    assert len(names) == 2
    # The label depends on x0 and x1 only: they carry the most gain.
    assert set(names) <= {"f0", "f1", "f2", "f3"} and names[0] == "f0"
    with pytest.raises(ValueError, match="importance_type"):
        plotting.plot_importance(stopped, importance_type="split")
    with pytest.raises(ValueError, match="max_features"):
        plotting.plot_importance(stopped, max_features=0)


def test_importance_from_the_trees(stopped):
    e = stopped.ensemble
    split = ~np.asarray(e.is_leaf)
    feature = np.asarray(e.feature)[split]
    gain = np.asarray(e.gain, np.float64)[split]
    cover = np.asarray(e.cover, np.float64)[split]
    scores = {k: plotting._importance_from_trees(stopped, k) for k in plotting.IMPORTANCE_TYPES}
    for f in range(stopped.n_features):
        name, mask = f"f{f}", feature == f
        if not mask.any():
            assert all(name not in s for s in scores.values())
            continue
        assert scores["weight"][name] == mask.sum()
        np.testing.assert_allclose(scores["total_gain"][name], gain[mask].sum(), rtol=1e-9)
        np.testing.assert_allclose(scores["gain"][name], gain[mask].mean(), rtol=1e-9)
        np.testing.assert_allclose(scores["total_cover"][name], cover[mask].sum(), rtol=1e-9)
        np.testing.assert_allclose(scores["cover"][name], cover[mask].mean(), rtol=1e-9)


def test_plot_importance_uses_the_boosters_method(tmp_path):
    class WithMethod:
        n_features = 3
        feature_names = ["a", "b", "c"]

        def feature_importance(self, importance_type):
            assert importance_type == "cover"
            return {"b": 5.0, "a": 1.0, "c": 3.0}

    path = tmp_path / "imp.png"
    fig = plotting.plot_importance(WithMethod(), path, importance_type="cover")
    assert_png(path, fig)
    assert _bar_names(fig) == ["b", "c", "a"]


def test_importance_uses_feature_names(stopped, monkeypatch):
    monkeypatch.setattr(stopped, "feature_names", ["x0", "x1", "noise_a", "noise_b"], raising=False)
    scores = plotting._importance_from_trees(stopped, "weight")
    assert set(scores) <= {"x0", "x1", "noise_a", "noise_b"} and "x0" in scores


def _reachable(bst, t):
    is_leaf = np.asarray(bst.ensemble.is_leaf[t])
    splits, leaves, stack = [], [], [0]
    while stack:
        i = stack.pop()
        if is_leaf[i]:
            leaves.append(i)
        else:
            splits.append(i)
            stack += [2 * i + 1, 2 * i + 2]
    return splits, leaves


def test_plot_tree(stopped, tmp_path):
    path = tmp_path / "tree.png"
    fig = plotting.plot_tree(stopped, 0, path)
    assert_png(path, fig)
    texts = [t.get_text() for t in fig.axes[0].texts]
    splits, leaves = _reachable(stopped, 0)
    assert sum(t.startswith("leaf ") for t in texts) == len(leaves)
    assert sum(" < " in t for t in texts) == len(splits)
    answers = [t for t in texts if t.split(",")[0] in ("yes", "no")]
    assert len(answers) == 2 * len(splits)
    assert sum("missing" in t for t in answers) == len(splits)
    root = int(stopped.ensemble.feature[0, 0])
    thr = float(stopped.ensemble.threshold[0, 0])
    assert f"f{root} < {thr:.3g}\n" in "\n".join(texts) + "\n"
    assert fig.axes[0].get_title().startswith("Tree 0 of")
    # the last tree, counted from the end
    fig = plotting.plot_tree(stopped, -1)
    assert fig.axes[0].get_title().startswith(f"Tree {stopped.ensemble.n_trees - 1} of")
    with pytest.raises(IndexError):
        plotting.plot_tree(stopped, stopped.ensemble.n_trees)
    with pytest.raises(TypeError):
        plotting.plot_tree(stopped, 0.0)


def test_plot_tree_of_a_multi_output_model(softmax_model, tmp_path):
    bst = softmax_model
    assert bst.trees_per_round == bst.n_outputs == 3
    path = tmp_path / "tree.png"
    fig = plotting.plot_tree(bst, 4, path)
    assert_png(path, fig)
    assert "round 1, output 1" in fig.axes[0].get_title()
    leaf_texts = [t.get_text() for t in fig.axes[0].texts if t.get_text().startswith("leaf")]
    _, leaves = _reachable(bst, 4)
    expected = {f"leaf {float(bst.ensemble.value[4, i, 1]):.3g}" for i in leaves}
    assert {t.split("\n")[0] for t in leaf_texts} == expected


def test_plot_tree_with_vector_leaves(small_binary, tmp_path):
    X, _ = small_binary
    labels = (X[:, 0] > -0.4).astype(np.float32) + (X[:, 1] > 0.4)
    bst = jaxboost.train(
        objectives.softmax,
        X,
        labels,
        n_rounds=1,
        max_depth=2,
        multi_strategy="multi_output_tree",
        verbose=False,
    )
    assert bst.trees_per_round == 1 and bst.ensemble.value.shape[-1] == 3
    path = tmp_path / "tree.png"
    fig = plotting.plot_tree(bst, 0, path)
    assert_png(path, fig)
    _, leaves = _reachable(bst, 0)
    shown = {
        t.get_text().split("\n")[0] for t in fig.axes[0].texts if t.get_text().startswith("leaf")
    }
    assert shown == {
        "leaf [" + ", ".join(f"{float(v):.3g}" for v in bst.ensemble.value[0, i]) + "]"
        for i in leaves
    }


def test_plot_tree_of_a_stump(small_binary, tmp_path):
    X, y = small_binary
    # gamma so large that every split is pruned: the tree is one leaf
    bst = jaxboost.train("logistic", X, y, n_rounds=1, max_depth=2, gamma=1e9, verbose=False)
    assert bool(bst.ensemble.is_leaf[0, 0])
    path = tmp_path / "stump.png"
    fig = plotting.plot_tree(bst, 0, path)
    assert path.stat().st_size > 1000
    assert [t.get_text().split("\n")[0] for t in fig.axes[0].texts] == [
        f"leaf {float(bst.ensemble.value[0, 0]):.3g}"
    ]


# --- the existing figures -------------------------------------------------------------------


@pytest.fixture(scope="module")
def comparison(small_binary):
    X, y = small_binary
    return jaxboost.compare(
        ["logistic", "squared"],
        X[:200],
        y[:200],
        eval_set=[(X[200:], y[200:])],
        metrics=["logloss", "auc"],
        n_rounds=6,
        max_depth=2,
    )


def test_plot_comparison_and_comparison_plot(comparison, tmp_path):
    fig = plotting.plot_comparison(comparison, tmp_path / "cmp.png")
    assert_png(tmp_path / "cmp.png", fig)
    fig = comparison.plot(tmp_path / "method.png", metrics=["auc"])
    assert_png(tmp_path / "method.png", fig)


def test_plot_learning_curves(comparison, tmp_path):
    fig = plotting.plot_learning_curves(
        comparison.curves["logistic"], tmp_path / "lc.png", title="logistic"
    )
    assert_png(tmp_path / "lc.png", fig)


def _every_figure(stopped, comparison):
    """Every figure-returning call, without a path: (name, figure)."""
    return [
        ("plot_history", plotting.plot_history(stopped)),
        ("plot_importance", plotting.plot_importance(stopped)),
        ("plot_tree", plotting.plot_tree(stopped, 1)),
        ("plot_comparison", plotting.plot_comparison(comparison)),
        ("plot_learning_curves", plotting.plot_learning_curves(comparison.curves["logistic"])),
        ("Comparison.plot", comparison.plot()),
    ]


def test_figures_are_not_left_open_in_pyplot(stopped, comparison, tmp_path):
    """No function leaves its figure registered with pyplot (a notebook would show it
    once by pyplot's end-of-cell flush and once as the cell's value); each still saves
    and renders itself as PNG for IPython."""
    import matplotlib.pyplot as plt

    plt.close("all")
    figures = _every_figure(stopped, comparison)
    assert plt.get_fignums() == []
    for name, fig in figures:
        assert isinstance(fig, Figure), name
        assert fig.axes, name
        fig.savefig(tmp_path / f"{name}.png")
        assert_png(tmp_path / f"{name}.png", fig)
        png = fig._repr_png_()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > MIN_PNG_BYTES, name
    assert plt.get_fignums() == []


def test_saved_figures_are_not_registered_with_pyplot(stopped, tmp_path):
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    plotting.plot_tree(stopped, 0, tmp_path / "t.png")
    plotting.plot_importance(stopped, tmp_path / "i.png")
    assert plt.get_fignums() == before


def test_drawing_into_the_callers_axes(stopped, comparison, tmp_path):
    """With ax=, each function draws into the caller's Axes and returns the caller's
    figure, still open in pyplot, without laying it out again."""
    import matplotlib.pyplot as plt

    plt.close("all")
    fig, axes = plt.subplots(2, 3, figsize=(12, 6))
    # a layout of the caller's own that tight_layout would change
    fig.subplots_adjust(left=0.3, right=0.95, wspace=0.6)
    before = [a.get_position().bounds for a in axes.ravel()]
    assert plotting.plot_importance(stopped, ax=axes[0, 0]) is fig
    assert _bar_names(fig)[0] == _bar_names(plotting.plot_importance(stopped))[0]
    assert plotting.plot_tree(stopped, 1, ax=axes[0, 1]) is fig
    assert not axes[0, 1].axison and axes[0, 1].texts
    assert plotting.plot_history(stopped, ax=axes[1, :2], path=tmp_path / "h.png") is fig
    assert_png(tmp_path / "h.png", fig)
    assert [axes[1, j].get_title() for j in range(2)] == ["logloss", "auc"]
    assert comparison.plot(metrics="auc", ax=axes[0, 2]) is fig
    assert axes[0, 2].get_title() == "auc (higher is better)"
    assert plotting.plot_learning_curves({"valid": {"rmse": [3.0, 2.0]}}, ax=[axes[1, 2]]) is fig
    assert [list(line.get_ydata()) for line in axes[1, 2].get_lines()] == [[3.0, 2.0]]
    assert [a.get_position().bounds for a in axes.ravel()] == before
    assert fig._suptitle is None  # no default title written over the caller's figure
    assert plt.get_fignums() == [fig.number]  # the caller's figure stays open
    plt.close(fig)


def test_wrong_axes_are_refused(stopped, comparison):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3)
    other, ax2 = plt.subplots()
    try:
        with pytest.raises(ValueError, match=r"draws 2 panel\(s\); ax must hold 2 Axes"):
            plotting.plot_history(stopped, ax=axes[0])
        with pytest.raises(ValueError, match="draws 2 panel"):
            plotting.plot_comparison(comparison, ax=axes)
        with pytest.raises(ValueError, match="one figure"):
            plotting.plot_history(stopped, ax=[axes[0], ax2])
        with pytest.raises(TypeError, match="ax must be a matplotlib Axes, got Figure"):
            plotting.plot_importance(stopped, ax=fig)
        with pytest.raises(TypeError, match="ax must be a matplotlib Axes"):
            plotting.plot_tree(stopped, 0, ax=[axes[0]])
        with pytest.raises(TypeError, match="Axes or a sequence of them, got str"):
            plotting.plot_history(stopped, ax="left")
    finally:
        plt.close(fig)
        plt.close(other)


def test_import_leaves_matplotlib_alone():
    code = (
        "import sys, jaxboost, jaxboost.plotting, jaxboost.model.booster\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported'\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]


def test_missing_matplotlib_says_how_to_install(stopped, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    for call in (
        lambda: plotting.plot_history(stopped),
        lambda: plotting.plot_importance(stopped),
        lambda: plotting.plot_tree(stopped),
    ):
        with pytest.raises(
            ImportError, match=r"pip install matplotlib.*plot extra \(pip install '\.\[plot\]'"
        ):
            call()


# --- Booster reprs ----------------------------------------------------------------------


def test_repr_is_one_informative_line(stopped, softmax_model, monkeypatch):
    text = repr(stopped)
    assert "\n" not in text
    assert text.startswith("Booster(objective=objectives.logistic, n_rounds=")
    for part in (
        f"n_rounds={len(stopped)}",
        f"n_trees={stopped.ensemble.n_trees}",
        "max_depth=3",
        "n_features=4",
        "base_margin=",
        f"best_iteration={stopped.best_iteration}",
    ):
        assert part in text, (part, text)
    soft = repr(softmax_model)
    assert "n_outputs=3" in soft and "n_trees=9" in soft and "best_iteration" not in soft
    monkeypatch.setattr(stopped, "feature_names", ["a", "b", "c", "d"], raising=False)
    assert "feature_names=['a', 'b', 'c', 'd']" in repr(stopped)
    monkeypatch.setattr(stopped, "feature_names", [f"c{i}" for i in range(4)] * 2, raising=False)
    monkeypatch.setattr(stopped, "n_features", 8)
    assert "feature_names" not in repr(stopped)  # too many to show


def test_repr_html(stopped, softmax_model, monkeypatch):
    page = stopped._repr_html_()
    assert page.startswith("<table") and page.endswith("</table>")
    for key in (
        "objective",
        "n_rounds",
        "n_trees",
        "max_depth",
        "learning_rate",
        "n_features",
        "n_outputs",
        "base_margin",
        "best_iteration",
        "best_score",
        "valid logloss",
        "valid auc",
        "train auc",
    ):
        assert f">{key}</th>" in page, key
    last = stopped.history["valid"]["auc"][-1]
    assert f"{last:.6g} (last of {len(stopped.history['valid']['auc'])} rounds)" in page
    assert "3 per round" in softmax_model._repr_html_()
    # names and metric names are escaped
    monkeypatch.setattr(stopped, "feature_names", ["<b>a</b>", "b&c", "c", "d"], raising=False)
    monkeypatch.setattr(stopped, "history", {"<script>x</script>": {'m"q': [0.5]}})
    page = stopped._repr_html_()
    assert "<script>" not in page and "<b>a</b>" not in page
    assert "&lt;script&gt;x&lt;/script&gt; m&quot;q" in page
    assert "&lt;b&gt;a&lt;/b&gt;, b&amp;c" in page


# --- in a notebook ----------------------------------------------------------------------

CALLS = [
    "plotting.plot_history(bst)",
    "plotting.plot_importance(bst)",
    "plotting.plot_tree(bst, 1)",
    "plotting.plot_comparison(cmp)",
    "plotting.plot_learning_curves(cmp.curves['logistic'])",
    "cmp.plot()",
]


def _png_outputs(cell):
    return [o.output_type for o in cell.outputs if "image/png" in o.get("data", {})]


def test_an_executed_notebook_shows_each_figure_once(stopped, comparison, tmp_path):
    """A real Jupyter kernel (ipykernel, matplotlib's inline backend) runs a notebook
    whose cells end with each plotting call: every cell shows exactly one PNG, the
    cell's value, before pyplot was ever imported (the figure's own ``_repr_png_``) and
    after (the inline backend's formatter); with ``ax=`` from pyplot, pyplot's own
    end-of-cell display is the one."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    import json
    import os

    model = tmp_path / "model.json"
    stopped.save(model)
    curves = {
        label: {
            d: {m: [float(v) for v in values] for m, values in per.items()}
            for d, per in by_data.items()
        }
        for label, by_data in comparison.curves.items()
    }
    setup = "\n".join(
        [
            "import json",
            "import jaxboost",
            "from jaxboost import plotting",
            "from jaxboost.compare import Comparison",
            "from jaxboost.metrics import get_metric",
            f"bst = jaxboost.load({str(model)!r})",
            f"curves = json.loads({json.dumps(curves)!r})",
            "cmp = Comparison(boosters=dict.fromkeys(curves), curves=curves, train_seconds={},",
            f"                 metrics={{m: get_metric(m) for m in {list(comparison.metrics)!r}}},",
            f"                 data_names={comparison.data_names!r}, n_rows={{}},",
            f"                 n_rounds={comparison.n_rounds}, notes=[])",
            "import sys",
            "assert 'matplotlib.pyplot' not in sys.modules",
        ]
    )
    with_pyplot = "import matplotlib.pyplot as plt\nplt.close(plt.figure())"
    own_axes = "fig, ax = plt.subplots()\nplotting.plot_importance(bst, ax=ax);"
    sources = [setup, *CALLS, with_pyplot, *CALLS, own_axes, "plt.get_fignums()"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    env = dict(
        os.environ,
        MPLBACKEND="module://matplotlib_inline.backend_inline",
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    )
    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=300,
        startup_timeout=120,
        resources={"metadata": {"path": str(ROOT)}},
    )
    client.execute(env=env)
    cells = nb.cells
    assert _png_outputs(cells[0]) == [] and _png_outputs(cells[7]) == []
    n = len(CALLS)
    for i, call in enumerate(CALLS * 2):
        cell = cells[1 + i + (i >= n)]
        assert cell.source == call
        assert _png_outputs(cell) == ["execute_result"], (call, cell.outputs)
    assert _png_outputs(cells[-2]) == ["display_data"], cells[-2].outputs
    # nothing of ours is left open in pyplot; the caller's figure was closed by the
    # inline backend after it showed it
    assert cells[-1].outputs[0]["data"]["text/plain"] == "[]"


def test_plot_cv(tmp_path):
    """Mean curves of train and test in one-std bands, a dashed line at the best round."""
    import jaxboost

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=300) > 0).astype(np.float32)
    res = jaxboost.cv(
        "logistic",
        X,
        y,
        nfold=3,
        n_rounds=60,
        max_depth=3,
        learning_rate=0.5,
        eval_metric=["error", "logloss"],
        early_stopping_rounds=5,
    )
    path = tmp_path / "cv.png"
    fig = res.plot(path)
    assert isinstance(fig, Figure) and path.stat().st_size > 0
    assert [a.get_title() for a in fig.axes] == ["error", "logloss"]
    ax = fig.axes[1]
    lines = {line.get_label(): line for line in ax.get_lines()}
    np.testing.assert_allclose(lines["test"].get_ydata(), res.mean["test"]["logloss"])
    assert len(ax.collections) == 2  # the two bands
    band = ax.collections[1].get_paths()[0].vertices[:, 1]
    top = res.mean["test"]["logloss"] + res.std["test"]["logloss"]
    assert np.isclose(band.max(), top.max())
    dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert len(dashed) == 1 and dashed[0].get_xdata()[0] == res.best_iteration + 1
    one = plotting.plot_cv(res, metrics="logloss")
    assert [a.get_title() for a in one.axes] == ["logloss"]
    with pytest.raises(KeyError, match="unknown metric"):
        plotting.plot_cv(res, metrics="auc")
