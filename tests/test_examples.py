"""The scripts in examples/ run as shipped (README and docs/ blocks: tests/test_readme.py).

Each script runs as ``__main__`` with its command line, in this test process (its stdout
captured; a ``sys.exit`` with a non-zero code fails the test). Running them here rather
than in a new interpreter saves importing jax, jaxboost, xgboost and matplotlib again for
each (1-2 s of CPU apiece). ``multi_device.py`` chooses the device count before JAX
starts, so it runs in a subprocess of its own.
"""

import contextlib
import io
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

from conftest import session_cache_env

ROOT = Path(__file__).resolve().parent.parent


def run(script, *args, subprocess_=False):
    path = ROOT / "examples" / script
    if subprocess_:
        out = subprocess.run(
            [sys.executable, str(path), *args],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=ROOT,
            env={**os.environ, **session_cache_env()},
        )
        assert out.returncode == 0, out.stderr[-3000:]
        return out.stdout
    buf, argv, cwd = io.StringIO(), sys.argv, os.getcwd()
    sys.argv = [str(path), *args]
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(buf):
            runpy.run_path(str(path), run_name="__main__")
    except SystemExit as e:
        assert e.code in (None, 0), f"{script} exited with {e.code!r}:\n{buf.getvalue()[-3000:]}"
    finally:
        sys.argv = argv
        os.chdir(cwd)
    return buf.getvalue()


def test_custom_loss_example_prefers_the_robust_loss():
    out = run("custom_loss.py")
    errs = dict(
        re.findall(
            r"^(\w+)\s+mean \|prediction - truth\| on held-out rows: ([\d.]+)", out, flags=re.M
        )
    )
    assert float(errs["pseudo_huber"]) < float(errs["squared"])


def test_demo_runs_and_writes_figures(tmp_path):
    out = run("demo.py", "--rounds", "30", "--out", str(tmp_path))
    number = r"(\d+\.\d+)"
    for loss in ("logistic", "squared", "exponential"):
        # objective, then per metric (logloss, auc, accuracy, brier): final, best@k
        row = re.search(
            rf"^{loss}" + rf"\s+{number}\s+{number}@(\d+)" * 4 + r"\s+[\d.]+$", out, flags=re.M
        )
        assert row, out
        logloss, auc = float(row.group(1)), float(row.group(4))
        assert 0 < logloss < 0.7 and 0.5 < auc <= 1.0, row.group(0)
        assert 1 <= int(row.group(3)) <= 30
    import importlib.util

    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "learning_curves.png").stat().st_size > 10_000
        assert (tmp_path / "margins.png").stat().st_size > 10_000
    else:
        assert "figures skipped" in out


def test_plots_example_writes_three_figures(tmp_path):
    import importlib.util

    import pytest

    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("examples/plots.py needs matplotlib")
    out = run("plots.py", "--rounds", "40", "--out", str(tmp_path))
    assert "early stopping kept" in out, out
    for name in ("history.png", "importance.png", "tree.png"):
        path = tmp_path / name
        assert path.exists(), out
        assert path.read_bytes()[:4] == b"\x89PNG" and path.stat().st_size > 5_000, name


def test_multi_device_example_prints_equal_models_and_communication():
    out = run("multi_device.py", "--devices", "4", "--rounds", "10", subprocess_=True)
    rows = re.findall(r"^quantize=(True|False)\s.*bit-identical: (True|False)$", out, flags=re.M)
    assert dict(rows).get("True") == "True", out  # quantized: bit for bit on 4 devices
    assert "False" in dict(rows), out
    volume = re.search(r"histograms summed across devices: ([\d,]+) bytes per tree", out)
    from jaxboost.parallel.distributed import histogram_bytes_per_tree

    want = {histogram_bytes_per_tree(30, 4, 256, subtraction=s) for s in (True, False)}
    assert volume and int(volume.group(1).replace(",", "")) in want, out


def test_ranking_example_beats_random_order():
    out = run("ranking.py", "--rounds", "20", "--queries", "100")
    floor = float(re.search(r"^random order: held-out NDCG@10 ([\d.]+)", out, flags=re.M)[1])
    scores = dict(re.findall(r"^(\w+)\s+held-out NDCG@10 ([\d.]+)", out, flags=re.M))
    for name in ("ranknet", "lambdarank", "listnet"):
        assert float(scores[name]) > floor + 0.25, out
    if "xgboost" in scores:
        assert abs(float(scores["lambdarank"]) - float(scores["xgboost"])) < 0.05, out


def test_survival_example_ranks_patients(tmp_path):
    out = run("survival.py", "--rounds", "30", "--rows", "1500", "--out", str(tmp_path))
    c = float(re.search(r"^jaxboost cox: held-out C-index ([\d.]+)", out, flags=re.M)[1])
    best = float(re.search(r"^true log hazard: held-out C-index ([\d.]+)", out, flags=re.M)[1])
    assert 0.65 < c <= best + 0.02, out
    ref = re.search(r"^xgboost survival:cox: held-out C-index ([\d.]+)", out, flags=re.M)
    if ref:
        assert abs(c - float(ref[1])) < 0.03, out
    import importlib.util

    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "survival_curves.png").stat().st_size > 5_000


def test_compare_losses_example_trains_eight_losses_in_one_program(tmp_path):
    out = run("compare_losses.py", "--rounds", "20", "--out", str(tmp_path))
    rows = re.findall(r"^(\S+)\s+([\d.]+)\s+([\d.]+)@\d+\s", out, flags=re.M)
    aucs = {name: float(auc) for name, auc, _ in rows}
    assert len(aucs) == 8, out
    assert all(0.85 < a <= 1.0 for a in aucs.values()), out  # every loss learns
    assert "trained together by train_many" in out, out
    import importlib.util

    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "eight_losses.png").stat().st_size > 10_000


def test_poisson_exposure_example_offsets_equal_side_data_and_xgboost():
    out = run("poisson_exposure.py", "--rounds", "40", "--rows", "3000")
    dev = dict(
        re.findall(
            r"^(\w+(?: \w+)?)\s+held-out Poisson deviance per policy: ([\d.]+)", out, flags=re.M
        )
    )
    assert float(dev["offset"]) == float(dev["side data"]), out
    assert float(dev["offset"]) < float(dev["naive"]) - 0.01, out
    gap = re.search(r"offset vs side-data model: max \|training margin difference\| (\S+)", out)
    assert float(gap[1]) < 1e-4, out
    ref = re.search(
        r"count:poisson with base_margin: max \|training margin difference\| "
        r"(\S+)",
        out,
    )
    if ref:
        assert float(ref[1]) < 1e-5, out


def test_binomial_trials_example_equals_the_weighted_logistic_model():
    out = run("binomial_trials.py", "--rounds", "30", "--rows", "2000")
    dev = dict(
        re.findall(r"^(\w+)\s+held-out binomial deviance per trial: ([\d.]+)", out, flags=re.M)
    )
    assert float(dev["trials"]) < float(dev["unweighted"]), out
    gap = re.search(r"trials vs weighted: max \|probability difference\| (\S+)", out)
    assert float(gap[1]) < 1e-5, out


def test_interval_censored_example_beats_the_midpoint_model():
    out = run("interval_censored.py", "--rounds", "40", "--rows", "2000")
    rows = {
        name.strip(): (float(rmse), float(nll))
        for name, rmse, nll in re.findall(
            r"^(.{18}) held-out RMSE of log time ([\d.]+), interval NLL ([\d.]+)$", out, flags=re.M
        )
    }
    aft, naive = rows["aft (interval)"], rows["naive (midpoint)"]
    assert aft[0] < naive[0] and aft[1] < naive[1], out
    assert rows["true log time"][0] == 0.0
    if "xgboost survival:aft" in rows:  # XGBoost's own AFT: close, not the same trees
        assert abs(aft[1] - rows["xgboost survival:aft"][1]) < 0.05, out


def test_forest_vs_boosting_example_prints_seed_004s_table():
    """Seed 004's comparison on the digits: every model far above chance (10 %), Newton
    boosting ahead of plain gradient boosting at the same budget, the forest one round
    of 10 x 5 trees, and the example's configurations are the recipes it names.
    (Retraining a model here to compare its accuracy would add a compile, ~5 s.)"""
    out = run("forest_vs_boosting.py", "--small")
    rows = {
        name.strip(): (int(trees), float(acc))
        for name, trees, acc in re.findall(
            r"^(Newton boosting|gradient boosting|random forest)\s+(\d+)\s+([\d.]+)\s+[\d.]+",
            out,
            flags=re.M,
        )
    }
    assert set(rows) == {"Newton boosting", "gradient boosting", "random forest"}, out
    assert all(trees == 50 for trees, _ in rows.values()), out
    assert all(acc > 0.6 for _, acc in rows.values()), out
    assert rows["Newton boosting"][1] > rows["gradient boosting"][1], out
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "forest_vs_boosting", ROOT / "examples" / "forest_vs_boosting.py"
    )
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    configs = example.models(5, 5, 3, 4)
    forest = configs["random forest"]
    assert (forest["n_rounds"], forest["learning_rate"], forest["num_parallel_tree"]) == (1, 1.0, 5)
    assert forest["bootstrap"] and forest["colsample_bynode"] < 1
    assert configs["gradient boosting"] == dict(configs["Newton boosting"], hessian="constant")
    X_train, X_test, _, _ = example.data()
    assert f"digits: {len(X_train)} training and {len(X_test)} test images" in out


def test_tune_losses_example_tunes_delta_against_a_grid():
    """Issue 19: the example runs tune and a grid search on the diabetes data; tune's best
    run is at least as good as its start (the start is one of its trained runs), the
    MAE the script measures on that booster is the value tune computed by replaying
    it, and each method made the trainings its settings imply (3 x 3 grid; 4 steps,
    retraining every 2: steps 0 and 2, then the final one)."""
    out = run("tune_losses.py", "--small")
    rows = {
        m: (int(n), float(v), float(t))
        for m, n, v, t in re.findall(
            r"^(grid|tune)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+[\d.]+\s+delta=", out, flags=re.M
        )
    }
    assert set(rows) == {"grid", "tune"}, out
    assert rows["grid"][0] == 9 and rows["tune"][0] == 3, out
    replayed = float(re.search(r"the replay's\): val MAE ([\d.]+)", out).group(1))
    assert abs(replayed - rows["tune"][1]) < 1e-4, out
    start = float(re.search(r"started at val MAE ([\d.]+)", out).group(1))
    assert rows["tune"][1] <= start + 1e-4, out
    assert 0.3 < rows["grid"][1] < 1.0 and 0.3 < rows["tune"][2] < 1.0, out
