"""jaxboost.compare, Comparison, the plots and the ``python -m jaxboost compare`` CLI."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
from conftest import session_cache_env
from sklearn import metrics as skm

import jaxboost
import objectives
from jaxboost.adapters import cli

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 12
SETTINGS = dict(n_rounds=ROUNDS, max_depth=3, learning_rate=0.3)
HAS_MPL = importlib.util.find_spec("matplotlib") is not None


def clip(p):
    return np.clip(np.asarray(p, np.float64), 1e-7, 1 - 1e-7)


@pytest.fixture(scope="module")
def split(small_binary):
    X, y = small_binary
    return X[:200], y[:200], X[200:], y[200:]


@pytest.fixture(scope="module")
def cmp(split):
    X, y, Xte, yte = split
    return jaxboost.compare(
        ["logistic", "squared", objectives.exponential],
        X,
        y,
        eval_set=[(Xte, yte)],
        metrics=["logloss", "auc", "error", "mlogloss"],
        **SETTINGS,
    )


def test_curves_have_one_value_per_round(cmp):
    assert list(cmp.boosters) == ["logistic", "squared", "exponential"]
    assert cmp.data_names == ["train", "validation_0"] and cmp.table_data == "validation_0"
    assert list(cmp.metrics) == ["logloss", "auc", "error", "mlogloss"]
    for label in cmp.boosters:
        assert len(cmp.boosters[label]) == ROUNDS and cmp.train_seconds[label] > 0
        for d in cmp.data_names:
            for m in cmp.metrics:
                curve = cmp.curves[label][d][m]
                assert curve.shape == (ROUNDS,) and curve.dtype == np.float64


def test_final_values_equal_metrics_of_the_predictions(cmp, split):
    X, y, Xte, yte = split
    for row in cmp.table:
        bst = cmp.boosters[row["objective"]]
        p = bst.predict(Xte)  # the response: sigmoid(f), f, sigmoid(2f)
        np.testing.assert_allclose(row["logloss"], skm.log_loss(yte, clip(p)), rtol=1e-5)
        np.testing.assert_allclose(row["auc"], skm.roc_auc_score(yte, p), rtol=1e-6)
        np.testing.assert_allclose(row["error"], 1 - skm.accuracy_score(yte, p > 0.5), atol=1e-7)
        # A middle round: the curve is the model booster[:k].
        k = 5
        p5 = bst[:k].predict(X)
        np.testing.assert_allclose(
            cmp.curves[row["objective"]]["train"]["logloss"][k - 1],
            skm.log_loss(y, clip(p5)),
            rtol=1e-5,
        )
    # The three losses read their margins through different links.
    lls = [row["logloss"] for row in cmp.table]
    assert len(set(lls)) == 3 and all(0 < v < 0.6 for v in lls)


def test_best_value_and_round_agree_with_the_curve(cmp):
    for row in cmp.table:
        for m in ("logloss", "auc", "error"):
            curve = cmp.curves[row["objective"]]["validation_0"][m]
            k = row[m + "_best_round"]
            assert 1 <= k <= ROUNDS
            assert row[m + "_best"] == curve[k - 1]
            assert row[m] == curve[-1]
            target = curve.max() if m == "auc" else curve.min()
            assert row[m + "_best"] == target
            assert k - 1 == int(np.flatnonzero(curve == target)[0])  # first one reached
            assert cmp.best(row["objective"], m) == (row[m + "_best"], k)


def test_metric_that_does_not_apply_is_nan_with_a_note(cmp):
    for label in cmp.boosters:
        assert np.isnan(cmp.curves[label]["validation_0"]["mlogloss"]).all()
    row = cmp.table[0]
    assert np.isnan(row["mlogloss"]) and row["mlogloss_best_round"] is None
    assert any(
        n.startswith("mlogloss is NaN for logistic, squared, exponential") for n in cmp.notes
    ), cmp.notes


def test_text_table(cmp):
    text = str(cmp)
    assert text == repr(cmp)
    assert text.startswith("validation_0: 100 rows, 12 rounds")
    for label in cmp.boosters:
        m = re.search(rf"^{label}\s+(\d+\.\d+)\s+(\d+\.\d+)@(\d+)\s+(\d+\.\d+)", text, re.M)
        assert m, text
        row = next(r for r in cmp.table if r["objective"] == label)
        assert float(m.group(1)) == pytest.approx(row["logloss"], abs=1e-4)
        assert int(m.group(3)) == row["logloss_best_round"]
    assert "highest for auc" in text and "note: mlogloss" in text


def test_dict_of_objectives_default_metrics_and_weighted_eval(split):
    X, y, Xte, yte = split
    w = np.linspace(0.0, 2.0, yte.size).astype(np.float32)
    cmp = jaxboost.compare(
        {"logit": objectives.logistic, "sq": "squared"},
        X,
        y,
        eval_set={"holdout": (Xte, yte, w)},
        **SETTINGS,
    )
    assert list(cmp.boosters) == ["logit", "sq"]
    assert list(cmp.metrics) == ["logloss", "rmse"]  # defaults, in order of first appearance
    assert cmp.data_names == ["train", "holdout"]
    p = cmp.boosters["logit"].predict(Xte)
    np.testing.assert_allclose(
        cmp.curves["logit"]["holdout"]["logloss"][-1],
        skm.log_loss(yte, clip(p), sample_weight=w),
        rtol=1e-5,
    )
    p = cmp.boosters["sq"].predict(Xte)
    np.testing.assert_allclose(
        cmp.curves["sq"]["holdout"]["rmse"][-1],
        np.sqrt(skm.mean_squared_error(yte, p, sample_weight=w)),
        rtol=1e-5,
    )
    # No eval set: the training data only.
    cmp = jaxboost.compare({"logit": "logistic"}, X, y, metrics="auc", **SETTINGS)
    assert cmp.data_names == ["train"] and cmp.table_data == "train"
    np.testing.assert_allclose(
        cmp.table[0]["auc"], skm.roc_auc_score(y, cmp.boosters["logit"].predict(X)), rtol=1e-6
    )


def test_plain_callable_objective(split):
    X, y, Xte, yte = split

    def pseudo_huber(y, pred):
        r = y - pred
        return jnp.sqrt(1.0 + r * r) - 1.0

    cmp = jaxboost.compare([pseudo_huber], X, y, eval_set=[(Xte, yte)], **SETTINGS)
    assert list(cmp.boosters) == ["pseudo_huber"]
    assert list(cmp.metrics) == ["loss"]  # no default metric: the model's own loss
    assert cmp.metrics["loss"].on == "margin"
    f = cmp.boosters["pseudo_huber"].predict(Xte, output_margin=True).astype(np.float64)
    want = np.mean(np.sqrt(1 + (yte - f) ** 2) - 1)
    np.testing.assert_allclose(cmp.table[0]["loss"], want, rtol=1e-5)


def test_bad_arguments_fail_before_training(split):
    X, y, Xte, yte = split
    with pytest.raises(ValueError, match="unknown metric 'logloos'.*known metrics"):
        jaxboost.compare(["logistic"], X, y, metrics=["logloos"], **SETTINGS)
    with pytest.raises(ValueError, match="unknown objective 'logstic'"):
        jaxboost.compare(["logstic"], X, y, **SETTINGS)
    with pytest.raises(ValueError, match="at least one objective"):
        jaxboost.compare([], X, y, **SETTINGS)
    with pytest.raises(jaxboost.DataError, match="features"):
        jaxboost.compare(["logistic"], X, y, eval_set=[(Xte[:, :2], yte)], **SETTINGS)


def test_to_pandas(cmp):
    if importlib.util.find_spec("pandas") is None:
        with pytest.raises(ImportError, match="pip install pandas"):
            cmp.to_pandas()
    else:
        df = cmp.to_pandas()
        assert list(df.index) == list(cmp.boosters)
        assert df.loc["logistic", "logloss"] == cmp.table[0]["logloss"]


@pytest.mark.skipif(not HAS_MPL, reason="matplotlib not installed")
def test_plots_write_png(cmp, tmp_path):
    from jaxboost.plotting import plot_learning_curves

    fig = cmp.plot(tmp_path / "cmp.png", metrics=["logloss", "auc"], data=["train", "validation_0"])
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 2
    assert (tmp_path / "cmp.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    plot_learning_curves(cmp.curves["logistic"], tmp_path / "one.png")
    assert (tmp_path / "one.png").stat().st_size > 5_000
    with pytest.raises(KeyError, match="no metric"):
        cmp.plot(metrics=["rmse"])


# --- the command line -----------------------------------------------------------------
@pytest.fixture(scope="module")
def csv_file(small_binary, tmp_path_factory):
    X, y = small_binary
    path = tmp_path_factory.mktemp("cli") / "data.csv"
    lines = ["f0,f1,label,f2,f3"]
    for i, (row, t) in enumerate(zip(X, y)):
        cells = [f"{v:.6g}" for v in row]
        if i % 50 == 7:
            cells[3] = "NA" if i % 100 == 7 else ""  # missing feature values
        lines.append(",".join(cells[:2] + [str(int(t))] + cells[2:]))
    path.write_text("\n".join(lines) + "\n")
    return path


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "jaxboost", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "JAX_PLATFORMS": "cpu", **session_cache_env()},
    )


def test_cli_prints_the_table_and_writes_the_png(csv_file, tmp_path):
    png = tmp_path / "curves.png"
    out = run_cli(
        "compare",
        csv_file,
        "--target",
        "label",
        "--objectives",
        "squared",
        "--rounds",
        8,
        "--max-depth",
        3,
        "--metrics",
        "rmse,auc",
        "--plot",
        png,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "300 rows, 4 features, target 'label'; train 210 / test 90 rows" in out.stdout
    assert re.search(r"^squared\s+\d+\.\d+\s+\d+\.\d+@\d+\s+\d+\.\d+", out.stdout, re.M), out.stdout
    if HAS_MPL:
        assert png.read_bytes()[:4] == b"\x89PNG" and f"wrote {png}" in out.stdout
    else:
        assert "--plot skipped" in out.stderr


def test_cli_bad_target_column_exits_2(csv_file):
    out = run_cli("compare", csv_file, "--target", "labl")
    assert out.returncode == 2
    assert "no column named 'labl'" in out.stderr and "'label'" in out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""


def test_cli_input_errors_in_process(tmp_path, capsys):
    assert cli.main(["compare", str(tmp_path / "missing.csv")]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,y\n1,2,0\n3,oops,1\n")
    assert cli.main(["compare", str(bad)]) == 2
    assert "line 3, column 'b': 'oops' is not a number" in capsys.readouterr().err
    bad.write_text("a,b,y\n1,2,0\n3,4,\n")
    assert cli.main(["compare", str(bad), "--target", "2"]) == 2
    assert "target column 'y' has 1 missing" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(["compare", str(bad), "--rounds", "0"])
    assert e.value.code == 2


def test_read_csv_missing_values_and_delimiters(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text('a;"b";c\n1;;nan\nNA;2.5;-1e3\n\n4;N/A;0\n')
    header, data, lines = cli.read_csv(str(p), ";")
    assert header == ["a", "b", "c"]
    np.testing.assert_array_equal(data, [[1, np.nan, np.nan], [np.nan, 2.5, -1000], [4, np.nan, 0]])
    assert lines == [2, 3, 5]
    p.write_text("a,b\n1,2\n3,4\n")  # the fast path
    header, data, lines = cli.read_csv(str(p))
    assert data.shape == (2, 2) and lines is None


def test_plot_without_matplotlib_says_how_to_install(cmp, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    with pytest.raises(ImportError, match=r"pip install matplotlib.*plot extra"):
        cmp.plot()


def test_compare_trains_compatible_objectives_with_train_many():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.float32)
    kw = dict(n_rounds=5, max_depth=2)
    cmp = jaxboost.compare(["logistic", "squared"], X, y, metrics=["auc"], **kw)
    assert any("train_many" in n for n in cmp.notes)
    for name in ("logistic", "squared"):
        alone = jaxboost.train(name, X, y, verbose=False, **kw)
        np.testing.assert_allclose(
            cmp.boosters[name].predict(X, output_margin=True),
            alone.predict(X, output_margin=True),
            atol=1e-6,
        )
    # an argument train_many does not take: one train() call per objective, no note
    cmp = jaxboost.compare(["logistic", "squared"], X, y, metrics=["auc"], init_model=None, **kw)
    assert not any("train_many" in n for n in cmp.notes)
