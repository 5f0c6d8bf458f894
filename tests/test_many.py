"""train_many: M models in one program equal M separate train() calls."""

import os
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import optax
import pytest
from conftest import session_cache_env

import jaxboost
import objectives as O
from jaxboost.errors import LossError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUSION_OFF = "--xla_cpu_use_fusion_emitters=false"

N, F = 400, 5


@pytest.fixture(scope="module")
def data():
    return make_data()


def make_data():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N, F)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (
        np.nan_to_num(X[:, 0]) - 0.7 * np.nan_to_num(X[:, 1]) + 0.6 * rng.normal(size=N) > 0
    ).astype(np.float32)
    w = rng.uniform(0.5, 2.0, N).astype(np.float32)
    return X, y, w


def plain_logistic(y, f):  # a user's own loss
    return jnp.logaddexp(0.0, f) - y * f


# Eight configurations: different losses (exact, clipped and constant Hessians; Newton
# and quantile leaf refits; a plain callable) and, for one loss, different dynamic
# parameters, a seed and a learning-rate schedule (those three share one train()
# program, which keeps the test's compile time down), plus row and column sampling.
CONFIGS = [
    dict(objective="logistic"),
    dict(
        objective="logistic",
        learning_rate=0.1,
        reg_lambda=3.0,
        reg_alpha=0.2,
        gamma=0.5,
        min_child_weight=4.0,
        seed=11,
    ),
    dict(objective="logistic", learning_rate=optax.exponential_decay(0.4, 5, 0.5)),
    dict(objective=O.focal(gamma=2.0), max_delta_step=0.7),
    dict(objective="squared", subsample=0.7, colsample_bynode=0.6, seed=3),
    dict(objective=O.huber(delta=0.5)),
    dict(objective="absolute"),
    dict(objective=plain_logistic, reg_lambda=0.0),
]
SHARED = dict(n_rounds=13, max_depth=2)


@pytest.fixture(scope="module")
def many(data):
    X, y, w = data
    return jaxboost.train_many(CONFIGS, X, y, sample_weight=w, **SHARED)


def assert_eight_equal(X, y, w, many):
    """The eight ``train_many`` models equal eight ``train`` calls, bit for bit."""
    assert len(many) == 8
    for cfg, model in zip(CONFIGS, many):
        cfg = dict(cfg)
        ref = jaxboost.train(
            cfg.pop("objective"), X, y, sample_weight=w, verbose=False, **SHARED, **cfg
        )
        # bit for bit: the same compiled round runs in both
        for a, b in zip(model.ensemble, ref.ensemble):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(
            model.predict(X, output_margin=True), ref.predict(X, output_margin=True)
        )
        assert len(model) == len(ref) == SHARED["n_rounds"]
        assert model.base_margin == ref.base_margin
        assert model.params == ref.params and model.objective == ref.objective
        assert model.train_state == ref.train_state


def test_eight_configurations_equal_eight_train_calls(data, many):
    """In this process when it compiles with XLA's CPU fusion emitters (as users do), or
    with the loop emitters and LLVM's expensive passes off (the suite's ``OPT_FLAG``,
    tests/conftest.py). With the loop emitters and those passes on, XLA evaluates the
    focal loss's ``pow``/``log`` differently for 8 models at once than for one (a few
    ulps, which 13 rounds carry into the leaves), so there the check runs in a
    subprocess that keeps the fusion emitters."""
    flags = os.environ.get("XLA_FLAGS", "")
    if FUSION_OFF not in flags or "--xla_llvm_disable_expensive_passes=true" in flags:
        assert_eight_equal(*data, many)
        return
    script = (
        "import sys; sys.path.insert(0, 'tests'); import test_many as t; "
        "d = t.make_data(); "
        "t.assert_eight_equal(*d, t.jaxboost.train_many(t.CONFIGS, d[0], d[1], "
        "sample_weight=d[2], **t.SHARED)); print('equal')"
    )
    env = dict(os.environ, XLA_FLAGS=flags.replace(FUSION_OFF, "").strip(), **session_cache_env())
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0 and out.stdout.split()[-1:] == ["equal"], out.stderr[-3000:]


def test_models_differ_and_can_be_saved(data, many, tmp_path):
    X, _, _ = data
    preds = [m.predict(X, output_margin=True) for m in many]
    assert not np.allclose(preds[0], preds[1])  # same loss, other parameters and seed
    path = tmp_path / "m.json"
    many[4].save(path)
    np.testing.assert_array_equal(jaxboost.load(path).predict(X), many[4].predict(X))


def test_shared_objective_and_grid_order(data):
    X, y, _ = data
    grid = [{"learning_rate": lr, "reg_lambda": lam} for lr in (0.1, 0.5) for lam in (0.0, 5.0)]
    models = jaxboost.train_many(grid, X, y, objective="logistic", n_rounds=4, max_depth=3)
    assert [(m.params.learning_rate, m.params.reg_lambda) for m in models] == [
        (g["learning_rate"], g["reg_lambda"]) for g in grid
    ]


def test_errors_say_what_to_do(data):
    X, y, _ = data
    with pytest.raises(TypeError, match="init_model.*continue each model"):
        jaxboost.train_many(["logistic"], X, y, init_model=None)
    with pytest.raises(ValueError, match="configuration 1 sets 'max_depth'"):
        jaxboost.train_many(["logistic", {"objective": "squared", "max_depth": 2}], X, y)
    with pytest.raises(TypeError, match="configuration 0 has no objective"):
        jaxboost.train_many([{"learning_rate": 0.1}], X, y)
    with pytest.raises(ValueError, match="configuration 1: learning_rate"):
        jaxboost.train_many(["logistic", {"objective": "squared", "learning_rate": -1.0}], X, y)
    with pytest.raises(TypeError, match=r"group loss.*with train\(\.\.\., group=\.\.\.\)"):
        jaxboost.train_many([O.ranknet], X, y)
    with pytest.raises(TypeError, match=r"group loss.*with train\(\.\.\.\)$"):
        jaxboost.train_many([O.cox], X, y)  # all rows one group: no group= needed
    with pytest.raises(TypeError, match="list of configurations"):
        jaxboost.train_many("logistic", X, y)
    with pytest.raises(jaxboost.DataError, match="configuration 0"):
        jaxboost.train_many(["poisson"], X, y - 1.0)


def test_non_finite_gradient_names_configuration_loss_and_round(data):
    """A configuration whose loss turns NaN stops at the round before it, the others
    train whole (issue 28, item 13: one diverging configuration cut all of them at
    round 10 and returned the failed one as None), and a ConfigurationWarning names the
    configuration, the loss and the round."""
    from jaxboost.errors import ConfigurationWarning

    X, y, _ = data

    def log_loss_of_margin(y, f):  # NaN g once a margin passes 0.9
        return (y - f) ** 2 + 1e-3 * jnp.sqrt(0.9 - f)

    configs = [
        "squared",
        {"objective": log_loss_of_margin, "base_margin": 0.5},
        {"objective": "squared", "learning_rate": 0.5},
    ]
    with (
        pytest.warns(
            ConfigurationWarning,
            match=r"1 of 3 configuration\(s\) failed.*configuration 1: LossError: "
            r"configuration 1: the loss \S*log_loss_of_margin gave NaN.* at "
            r"round \d+",
        ),
        pytest.warns(jaxboost.HessianWarning, match="configuration 1: .* negative"),
    ):
        models = jaxboost.train_many(configs, X, y, n_rounds=25, max_depth=3)
    healthy, failed, other = models
    err = failed.error
    assert isinstance(err, LossError) and 0 < err.round < 25
    assert len(failed) == err.round and err.booster is failed
    for i, m in ((0, healthy), (2, other)):  # whole, and what train gives alone
        assert len(m) == 25
        alone = jaxboost.train(
            **({"objective": configs[i]} if isinstance(configs[i], str) else configs[i]),
            X=X,
            y=y,
            n_rounds=25,
            max_depth=3,
        )
        assert_same_model(m, alone)


def assert_same_model(a, b):
    for x, y in zip(a.ensemble, b.ensemble):
        np.testing.assert_array_equal(x, y)
    assert a.history == b.history
    assert (a.best_iteration, a.best_score) == (b.best_iteration, b.best_score)
    assert np.array_equal(np.asarray(a.base_margin), np.asarray(b.base_margin))


def test_eval_sets_early_stopping_and_softmax_equal_train(data):
    """train_many gains what train has: evaluation sets, early stopping per model (each
    model cut at its own best round), vector outputs; every model equals train's."""
    X, y, w = data
    ev = [(X[:150], y[:150])]
    configs = [
        {"objective": "logistic", "learning_rate": 0.8},
        {"objective": "logistic", "learning_rate": 0.05},
    ]
    kw = dict(n_rounds=40, max_depth=2, eval_set=ev, early_stopping_rounds=3)
    many = jaxboost.train_many(configs, X[150:], y[150:], **kw)
    assert many[0].best_iteration < many[1].best_iteration  # stopped on its own
    for cfg, m in zip(configs, many):
        ref = jaxboost.train(
            cfg["objective"],
            X[150:],
            y[150:],
            verbose=False,
            learning_rate=cfg["learning_rate"],
            **kw,
        )
        assert_same_model(m, ref)
    cls = np.digitize(np.nan_to_num(X[:, 2]), [-0.5, 0.5]).astype(np.float32)
    (soft,) = jaxboost.train_many(
        ["softmax"], X, cls, n_rounds=4, max_depth=2, eval_set=ev[:0] + [(X[:150], cls[:150])]
    )
    ref = jaxboost.train(
        "softmax", X, cls, n_rounds=4, max_depth=2, verbose=False, eval_set=[(X[:150], cls[:150])]
    )
    assert soft.n_outputs == 3
    assert_same_model(soft, ref)
