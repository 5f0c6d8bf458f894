"""Evaluation, early stopping, callbacks, schedules, sampling, continuation, checkpoints."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from conftest import noisy_binary
from jaxboost.callbacks import Checkpoint
from sklearn.metrics import log_loss, roc_auc_score

import jaxboost
import objectives
from jaxboost import io

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def noisy():
    """conftest.noisy_binary: (X, y, w) for training, then for validation."""
    return noisy_binary()


COMMON = dict(max_depth=4, learning_rate=0.3, verbose=False)


def test_history_matches_metrics_of_staged_predictions(noisy):
    X, y, w, Xv, yv, wv = noisy
    bst = jaxboost.train(
        objectives.logistic,
        X,
        y,
        n_rounds=25,
        **COMMON,
        eval_set={"train": (X, y, w), "valid": (Xv, yv, wv)},
        eval_metric=["logloss", "error", "auc"],
    )
    assert list(bst.history) == ["train", "valid"]
    assert list(bst.history["valid"]) == ["logloss", "error", "auc"]
    for name, (Xe, ye, we) in {"train": (X, y, w), "valid": (Xv, yv, wv)}.items():
        p = bst.staged_predict(Xe)
        h = bst.history[name]
        assert len(h["auc"]) == 25
        for r in (0, 9, 10, 24):
            assert h["logloss"][r] == pytest.approx(log_loss(ye, p[r], sample_weight=we), rel=1e-4)
            assert h["auc"][r] == pytest.approx(roc_auc_score(ye, p[r], sample_weight=we), rel=1e-5)
            err = np.sum(we * ((p[r] > 0.5) != (ye > 0.5))) / np.sum(we)
            assert h["error"][r] == pytest.approx(err, abs=1e-6)


@pytest.mark.parametrize("metric", ["logloss", "auc"])
def test_early_stopping_cuts_to_the_best_round(noisy, metric):
    X, y, _, Xv, yv, _ = noisy
    full = jaxboost.train(objectives.logistic, X, y, n_rounds=60, **COMMON)
    bst = jaxboost.train(
        objectives.logistic,
        X,
        y,
        n_rounds=60,
        **COMMON,
        eval_set=[(Xv, yv)],
        eval_metric=["error", metric],
        early_stopping_rounds=5,
    )
    curve = np.array(bst.history["validation_0"][metric])
    assert len(curve) < 60  # it stopped
    best = bst.best_iteration
    # maximize comes from the metric: auc is maximised, logloss minimised
    assert best == (int(np.argmax(curve)) if metric == "auc" else int(np.argmin(curve)))
    assert len(curve) == best + 1 + 5
    assert bst.best_score == curve[best]
    assert len(bst) == best + 1
    np.testing.assert_array_equal(bst.predict(Xv), full[: best + 1].predict(Xv))


@pytest.mark.parametrize("metric,labels", [("auc", "one class"), ("r2", "constant")])
def test_early_stopping_on_a_non_finite_metric_warns_and_never_cuts(noisy, metric, labels):
    """AUC of a one-class eval set is NaN, r2 of constant labels -inf: early stopping
    stopped after `rounds` rounds with best_iteration None and no word (issue 28,
    item 7). Now it warns, names what happened, and trains every round."""
    from jaxboost.errors import EarlyStoppingWarning

    X, y, _, Xv, _, _ = noisy
    loss = "logistic" if metric == "auc" else "squared"
    yv = np.ones(len(Xv), np.float32)  # one class / constant labels
    with pytest.warns(
        EarlyStoppingWarning, match=rf"{metric} on 'validation_0', which is (nan|-inf) at round 0"
    ):
        bst = jaxboost.train(
            loss,
            X,
            y,
            n_rounds=12,
            **COMMON,
            eval_set=[(Xv, yv)],
            eval_metric=metric,
            early_stopping_rounds=3,
        )
    curve = bst.history["validation_0"][metric]
    assert len(curve) == 12 and not np.isfinite(curve).any()
    assert bst.best_iteration is None and len(bst) == 12


def test_min_delta_and_the_watched_set(noisy):
    X, y, _, Xv, yv, _ = noisy
    kw = dict(
        n_rounds=40,
        eval_set={"a": (Xv, yv), "b": (X, y)},
        eval_metric="logloss",
        early_stopping_rounds=3,
        **COMMON,
    )
    # watching the training data ("b" is last): its loss keeps falling
    on_train = jaxboost.train("logistic", X, y, **kw)
    on_valid = jaxboost.train("logistic", X, y, early_stopping_data="a", **kw)
    assert len(on_valid.history["a"]["logloss"]) < len(on_train.history["b"]["logloss"])
    strict = jaxboost.train("logistic", X, y, min_delta=0.05, **kw)
    assert len(strict.history["b"]["logloss"]) < len(on_train.history["b"]["logloss"])


def test_callbacks_see_every_round_and_can_stop(noisy):
    X, y, _, Xv, yv, _ = noisy
    seen = []

    def spy(env):
        seen.append(
            (
                env.round,
                len(env.history["validation_0"]["logloss"]),
                len(env.booster) if env.round in (0, 13) else None,
            )
        )
        return env.round == 13

    bst = jaxboost.train(
        "logistic", X, y, n_rounds=30, eval_set=[(Xv, yv)], callbacks=[spy], **COMMON
    )
    assert [s[0] for s in seen] == list(range(14))
    assert all(n == r + 1 for r, n, _ in seen)
    assert seen[0][2] == 1 and seen[13][2] == 14
    assert len(bst) == 14


def test_custom_jax_metric_in_history(noisy):
    X, y, _, Xv, yv, _ = noisy

    def hit_rate(t, p):
        return ((p > 0.5) == (t > 0.5)).mean()

    hit_rate.maximize = True
    bst = jaxboost.train(
        "logistic", X, y, n_rounds=5, eval_set=[(Xv, yv)], eval_metric=[hit_rate], **COMMON
    )
    p = bst.staged_predict(Xv)[-1]
    assert bst.history["validation_0"]["hit_rate"][-1] == pytest.approx(
        np.mean((p > 0.5) == (yv > 0.5)), abs=1e-6
    )


def test_learning_rate_schedule_reproduces_hand_computed_shrinkage():
    optax = pytest.importorskip("optax")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 2)).astype(np.float32)
    y = (5.0 + 3.0 * X[:, 0] + rng.normal(size=300)).astype(np.float32)
    schedule = optax.exponential_decay(init_value=0.5, transition_steps=2, decay_rate=0.3)
    lam = 1.0
    # gamma huge: every tree is one leaf, its value -G / (H + lambda) times the rate
    bst = jaxboost.train(
        objectives.squared,
        X,
        y,
        n_rounds=6,
        learning_rate=schedule,
        max_depth=1,
        gamma=1e9,
        reg_lambda=lam,
        base_margin=0.0,
        verbose=False,
    )
    m = np.float32(bst.base_margin)
    for r in range(6):
        w = -np.sum(m - y.astype(np.float64)) / (len(y) + lam)
        rate = 0.5 * 0.3 ** (r / 2)  # optax: init * rate ** (step / transition_steps)
        v = np.float32(np.float32(w) * np.float32(rate))
        assert bst.ensemble.value[r, 0] == pytest.approx(v, rel=1e-5)
        m = np.float32(m + v)


def _models_equal(a, b):
    # cat_bits is None in models without categorical splits
    return all(
        (u is None and v is None)
        if u is None or v is None
        else np.array_equal(u, v, equal_nan=True)
        for u, v in zip(a.ensemble, b.ensemble)
    )


@pytest.mark.parametrize(
    "sampling",
    [{}, dict(subsample=0.7, colsample_bytree=0.8, colsample_bylevel=0.9, colsample_bynode=0.7)],
)
def test_four_plus_four_rounds_equal_eight(noisy, sampling):
    X, y, w, *_ = noisy
    kw = dict(sample_weight=w, seed=7, **COMMON, **sampling)
    eight = jaxboost.train("logistic", X, y, n_rounds=8, **kw)
    four = jaxboost.train("logistic", X, y, n_rounds=4, **kw)
    again = jaxboost.train("logistic", X, y, n_rounds=4, init_model=four, **kw)
    assert len(again) == 8 and again.train_state == {
        "seed": 7,
        "rounds": 8,
        "hessian": "exact",
        "hessian_floor": 1e-6,
    }
    assert _models_equal(eight, again)
    # through a model file too (what a checkpoint is)
    loaded = io.loads(io.dumps(four))
    again2 = jaxboost.train("logistic", X, y, n_rounds=4, init_model=loaded, **kw)
    assert _models_equal(eight, again2)


def test_same_seed_same_bytes_different_seed_different_model(noisy):
    X, y, *_ = noisy
    kw = dict(n_rounds=6, subsample=0.6, colsample_bynode=0.5, **COMMON)
    texts = {io.dumps(jaxboost.train("logistic", X, y, seed=3, **kw)) for _ in range(3)}
    assert len(texts) == 1
    other = jaxboost.train("logistic", X, y, seed=4, **kw)
    assert io.dumps(other) not in texts
    assert not np.array_equal(other.ensemble.value, io.loads(texts.pop()).ensemble.value)


def test_subsample_zeroes_rows_and_colsample_restricts_features(noisy):
    X, y, *_ = noisy
    one = jaxboost.train("logistic", X, y, n_rounds=3, colsample_bytree=1 / 6, **COMMON)
    split = ~one.ensemble.is_leaf
    for t in range(3):  # one feature per tree
        assert len(np.unique(one.ensemble.feature[t][split[t]])) <= 1
    # a subsample of rows lowers the root cover (sum of h over the rows used)
    full = jaxboost.train("logistic", X, y, n_rounds=1, **COMMON)
    half = jaxboost.train("logistic", X, y, n_rounds=1, subsample=0.5, **COMMON)
    assert half.ensemble.cover[0, 0] == pytest.approx(0.5 * full.ensemble.cover[0, 0], rel=0.15)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(subsample=0.0), "subsample must be in"),
        (dict(subsample=1.5), "subsample must be in"),
        (dict(colsample_bynode=0), "colsample_bynode must be in"),
        (dict(eval_metric="loglos", eval_set="X"), "eval_set must be"),
        (dict(early_stopping_rounds=5), "needs an evaluation set"),
        (dict(early_stopping_rounds=0, eval_set="valid"), "early_stopping_rounds must be"),
        (dict(eval_metric="loglos", eval_set="valid"), "unknown metric 'loglos'"),
        (dict(eval_metric="mlogloss", eval_set="valid"), "cannot evaluate this model"),
        (dict(learning_rate=lambda r: -1.0), "learning_rate schedule gave"),
        (dict(verbose="yes"), "verbose must be"),
        (
            dict(early_stopping_rounds=3, early_stopping_metric="auc", eval_set="valid"),
            "watches metric 'auc'",
        ),
    ],
)
def test_bad_parameters_fail_before_training(noisy, kwargs, match):
    X, y, _, Xv, yv, _ = noisy
    if kwargs.get("eval_set") == "valid":
        kwargs = dict(kwargs, eval_set=[(Xv, yv)])
    t = time.perf_counter()
    with pytest.raises((ValueError, TypeError), match=match):
        jaxboost.train("logistic", X, y, n_rounds=5, **kwargs)
    assert time.perf_counter() - t < 2.0  # no compilation happened


def test_progress_line_and_silence(noisy, capsys):
    X, y, _, Xv, yv, _ = noisy
    jaxboost.train("logistic", X, y, n_rounds=3, eval_set=[(Xv, yv)], max_depth=4, verbose=True)
    err = capsys.readouterr().err
    assert "3/3" in err and "validation_0-logloss" in err
    jaxboost.train("logistic", X, y, n_rounds=3, max_depth=4, verbose=False)
    assert capsys.readouterr().err == ""


CHILD = textwrap.dedent("""
    import sys, time
    import numpy as np
    import jaxboost
    from jaxboost.callbacks import Checkpoint

    path, n_rounds = sys.argv[1], int(sys.argv[2])
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 5)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=600) > 0).astype(np.float32)

    def slow(env):
        time.sleep(0.04)  # a round on the host side takes a while: kills land anywhere
        return False

    jaxboost.train("logistic", X, y, n_rounds=n_rounds, max_depth=3, subsample=0.8,
                   colsample_bynode=0.8, seed=11, verbose=False,
                   callbacks=[Checkpoint(path, every=3), slow])
""")


def test_sigkill_then_resume_from_checkpoint_equals_uninterrupted(tmp_path):
    n_rounds = 60
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    ckpt = tmp_path / "model.json"
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(ckpt), str(n_rounds)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.time() + 120
        while not ckpt.exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.02)
        assert ckpt.exists(), proc.stderr.read().decode()[-2000:]
        time.sleep(float(np.random.default_rng().uniform(0.0, 1.5)))  # a random round
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # never half-written: the checkpoint loads and validates
    part = jaxboost.load(ckpt)
    done = part.train_state["rounds"]
    assert done == len(part) and 3 <= done <= n_rounds and done % 3 == 0 or done == n_rounds

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 5)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=600) > 0).astype(np.float32)
    kw = dict(max_depth=3, subsample=0.8, colsample_bynode=0.8, verbose=False)
    resumed = jaxboost.train(
        "logistic", X, y, n_rounds=n_rounds - done, init_model=part, **kw
    )  # the seed comes from the checkpoint
    whole = jaxboost.train("logistic", X, y, n_rounds=n_rounds, seed=11, **kw)
    assert _models_equal(whole, resumed)
    np.testing.assert_array_equal(whole.predict(X), resumed.predict(X))


def test_checkpoint_writes_every_k_rounds(tmp_path, noisy):
    X, y, *_ = noisy
    path = tmp_path / "ck.json"
    written = []

    def watch(env):
        if path.exists():
            written.append(jaxboost.load(path).train_state["rounds"])
        return False

    jaxboost.train(
        "logistic", X, y, n_rounds=7, callbacks=[Checkpoint(path, every=3), watch], **COMMON
    )
    assert sorted(set(written)) == [3, 6, 7]  # every 3 rounds, and after the last
    assert jaxboost.load(path).train_state["rounds"] == 7  # and the last round
    assert [p.name for p in tmp_path.iterdir()] == ["ck.json"]  # no temporary files
