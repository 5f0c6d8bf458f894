"""Compile only when the program really changes (issue 14).

Each test trains once to warm the programs up, then makes a change a researcher makes
in a notebook and counts what compiled: entries added to the round program's cache
(``engine.round.run_chunk``: the tree builder) and XLA backend compiles in total.
Numbers a user sweeps are traced values, so a sweep adds no round program.
"""

import functools
import os

import jax.numpy as jnp
import numpy as np
import pytest

import jaxboost
import objectives as O
from jaxboost.engine.round import run_chunk
from jaxboost.engine.tree import predict_margin
from jaxboost.model import booster as booster_module
from jaxboost.training.evaluation import chunk_margins, chunk_metrics

N, F = 300, 4
KW = dict(n_rounds=10, max_depth=3, verbose=False)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(N, F)).astype(np.float32)
    y = (X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=N)).astype(np.float32)
    return X, y, (y > 0).astype(np.float32)


def rounds_compiled(fn):
    """``fn()``'s new round programs (tree builders) and XLA programs compiled or loaded
    from the session's compilation cache (the same compile event for both)."""
    from jax import monitoring

    before = run_chunk._cache_size()
    seen = []

    def listener(name, duration, **kwargs):
        if name == "/jax/core/compile/backend_compile_duration":
            seen.append(duration)

    monitoring.register_event_duration_secs_listener(listener)
    try:
        fn()
    finally:
        monitoring.unregister_event_duration_listener(listener)
    return run_chunk._cache_size() - before, len(seen)


def sweep(train_one, values):
    """Train at ``values[0]`` (may compile), then count what the other values add."""
    train_one(values[0])
    return rounds_compiled(lambda: [train_one(v) for v in values[1:]])


def test_catalogue_hyperparameter_sweep_compiles_nothing_new(data):
    X, y, _ = data
    models = {}

    def one(d):
        models[d] = jaxboost.train(O.pseudo_huber(delta=d), X, y, **KW)

    assert sweep(one, [1.0, 2.0, 3.0, 0.5, 5.0]) == (0, 0)
    # ... and the values do reach the program: each model equals its own fresh run
    preds = [models[d].predict(X) for d in (1.0, 2.0, 5.0)]
    assert not np.allclose(preds[0], preds[1]) and not np.allclose(preds[1], preds[2])


def test_user_loss_with_traced_hyperparameter(data):
    X, y, _ = data

    def pseudo_huber(y, p, *, delta):
        r = p - y
        return r * r / (jnp.sqrt(1.0 + (r / delta) ** 2) + 1.0)

    models = {}

    def one(d):
        models[d] = jaxboost.train(
            pseudo_huber, X, y, loss_params={"delta": d}, hessian="constant", refit="newton", **KW
        )

    assert sweep(one, [1.0, 2.0, 3.0, 0.5, 5.0]) == (0, 0)
    # The traced value gives the model the catalogue entry gives with that value.
    ref = jaxboost.train(O.pseudo_huber(delta=2.0), X, y, **KW)
    np.testing.assert_array_equal(models[2.0].predict(X), ref.predict(X))
    # functools.partial with numeric keywords is traced the same way.
    part = functools.partial(pseudo_huber, delta=3.0)
    assert (
        rounds_compiled(
            lambda: jaxboost.train(part, X, y, hessian="constant", refit="newton", **KW)
        )[0]
        == 0
    )


def test_eval_sets_and_metrics_do_not_recompile_the_tree_builder(data):
    X, _, yb = data
    base = jaxboost.train("logistic", X, yb, **KW)
    changes = [
        dict(eval_set=[(X[:100], yb[:100])]),
        dict(eval_set=[(X[:101], yb[:101])]),
        dict(eval_set=[(X[:100], yb[:100]), (X[100:250], yb[100:250])]),
        dict(eval_set=[(X[:100], yb[:100])], eval_metric="auc"),
        dict(eval_set=[(X[:100], yb[:100])], eval_metric=["error", "logloss"]),
        dict(),
    ]
    histories = []

    def run():
        for c in changes:
            b = jaxboost.train("logistic", X, yb, **KW, **c)
            np.testing.assert_array_equal(b.predict(X), base.predict(X))
            histories.append(b.history)

    new_rounds, _ = rounds_compiled(run)
    assert new_rounds == 0
    # the metrics are right: logloss after the last round, recomputed from predict
    p = np.clip(base.predict(X[:101]), 1e-7, 1 - 1e-7)
    ll = -np.mean(yb[:101] * np.log(p) + (1 - yb[:101]) * np.log(1 - p))
    assert histories[1]["validation_0"]["logloss"][-1] == pytest.approx(ll, rel=1e-5)


def test_a_new_metric_compiles_only_the_metric_program(data):
    X, _, yb = data
    ev = [(X[:100], yb[:100])]
    jaxboost.train("logistic", X, yb, **KW, eval_set=ev, eval_metric="logloss")
    routes, metric_progs = chunk_margins._cache_size(), chunk_metrics._cache_size()
    out = {}

    def run():
        out["b"] = jaxboost.train("logistic", X, yb, **KW, eval_set=ev, eval_metric="rmse")

    assert rounds_compiled(run)[0] == 0
    b = out["b"]
    assert chunk_margins._cache_size() == routes  # rows are routed by the same program
    assert chunk_metrics._cache_size() == metric_progs + 1
    # and the new metric is right: RMSE of the probabilities after the last round
    p = b.predict(X[:100])
    rmse = np.sqrt(np.mean((p - yb[:100]) ** 2))
    assert b.history["validation_0"]["rmse"][-1] == pytest.approx(rmse, rel=1e-5)


def test_eval_and_predict_row_counts_share_programs(data, monkeypatch):
    X, _, yb = data
    counts = [97, 100, 104, 108, 111]  # one size bucket (112 rows)
    # warmed up on that bucket (the counts were 91-111 and the warm-up 90 rows, which
    # span the 96 and 112 buckets: run alone, the test saw the 112 bucket compile)
    b = jaxboost.train("logistic", X, yb, **KW, eval_set=[(X[:97], yb[:97])])

    def run():
        for n in counts:
            jaxboost.train("logistic", X, yb, **KW, eval_set=[(X[:n], yb[:n])])

    assert rounds_compiled(run) == (0, 0)
    # the compiled prediction (GPU, TPU; on CPU the native kernel compiles none)
    monkeypatch.setattr(booster_module, "native_predict_enabled", lambda: False)
    full = b.predict(X)  # its own bucket (320 rows), compiled before the count
    preds_before = predict_margin._cache_size()
    for n in counts:
        out = b.predict(X[:n])
        assert out.shape == (n,)
        np.testing.assert_array_equal(out, full[:n])
    assert predict_margin._cache_size() - preds_before <= 1
    assert chunk_margins._cache_size() >= 1


def test_hessian_floor_sweep(data):
    X, y, _ = data

    def one(f):
        jaxboost.train(
            O.focal(gamma=2.0), X, (y > 0).astype(np.float32), hessian="clip", hessian_floor=f, **KW
        )

    assert sweep(one, [1e-6, 1e-5, 1e-4, 1e-3, 1e-2]) == (0, 0)


def test_train_many_over_one_family_is_one_round_program(data):
    X, y, _ = data
    configs = [
        {"objective": O.huber(delta=d), "learning_rate": lr}
        for d in (0.5, 1.0, 2.0, 4.0)
        for lr in (0.1, 0.3)
    ]
    before = run_chunk._cache_size()
    models = jaxboost.train_many(configs, X, y, n_rounds=10, max_depth=3)
    assert run_chunk._cache_size() - before == 1
    assert len({m.predict(X[:5]).tobytes() for m in models}) == 8


def test_small_data_rounds_compile_with_the_quick_cpu_options(data, monkeypatch):
    """On the CPU, a round on fewer than ``SMALL_ROUND_ROWS`` rows compiles with
    ``SMALL_CPU_COMPILE`` (LLVM's costlier passes off: a cold fit on sklearn's digits
    1.77 -> 1.42 s), larger ones with ``CPU_COMPILE``; the models are the same bit for
    bit (softmax, with row sampling)."""
    import jax

    from jaxboost.engine import round as round_module

    if jax.default_backend() != "cpu":
        pytest.skip("the CPU's compile options")
    X, y, _ = data
    yc = np.digitize(y, [-0.5, 0.5]).astype(np.float32)
    kw = dict(KW, subsample=0.8, seed=2)

    def fit():
        small = run_chunk._cpu_small._cache_size()
        large = run_chunk._cpu._cache_size()
        bst = jaxboost.train("softmax", X, yc, **kw)
        return bst, run_chunk._cpu_small._cache_size() - small, run_chunk._cpu._cache_size() - large

    jax.clear_caches()
    small_model, new_small, new_large = fit()
    assert (new_small, new_large) == (1, 0)
    monkeypatch.setattr(round_module, "SMALL_ROUND_ROWS", 0)  # as if the rows were many
    large_model, new_small, new_large = fit()
    assert (new_small, new_large) == (0, 1)
    for a, b in zip(small_model.ensemble, large_model.ensemble, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(small_model.predict(X), large_model.predict(X))


def test_small_rounds_compile_at_level_1_unless_xla_flags_set_a_level(monkeypatch):
    """``SMALL_CPU_COMPILE`` asks for XLA's optimisation level 1 (a few per cent off a
    small data set's compile, the same models), but a level in ``XLA_FLAGS`` wins: this
    suite's level 0 (conftest's ``OPT_FLAG``) still applies to its round programs."""
    from jaxboost.engine import compile as compile_module

    # the flags this process started with (the suite's, unless make test-full-opt)
    flagged = "--xla_backend_optimization_level=" in os.environ.get("XLA_FLAGS", "")
    asked = compile_module.SMALL_CPU_COMPILE.get("xla_backend_optimization_level")
    assert asked == (None if flagged else 1)
    level = {"xla_backend_optimization_level": 1}
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_thunk_runtime=true")
    assert compile_module._unless_flagged(level) == level
    monkeypatch.setenv("XLA_FLAGS", "--foo=1 --xla_backend_optimization_level=3")
    assert compile_module._unless_flagged(level) == {}


def test_every_compile_option_jaxboost_asks_for_is_known_to_the_installed_xla():
    """XLA retires debug options between releases (``xla_cpu_use_fusion_emitters`` is
    not in jaxlib 0.11's). jaxboost drops one that XLA rejects (next test); this test
    tells whoever moves the jax pin that an option no longer does anything, so that its
    compile-time figures are measured again."""
    import jax

    from jaxboost.engine.autodiff import QUICK_COMPILE
    from jaxboost.engine.compile import ACCELERATOR_COMPILE, CPU_COMPILE, SMALL_CPU_COMPILE

    if jax.default_backend() != "cpu":
        pytest.skip("the CPU's compile options")
    # ACCELERATOR_COMPILE is a backend-independent XLA option: the CPU knows it too
    for options in (CPU_COMPILE, SMALL_CPU_COMPILE, QUICK_COMPILE, ACCELERATOR_COMPILE):
        out = jax.jit(lambda x: x * 2 + 1, compiler_options=dict(options))(jnp.float32(1.0))
        assert float(out) == 3.0


def test_a_compile_option_this_xla_lacks_is_dropped_and_the_model_is_the_same(data, monkeypatch):
    """On a jax whose XLA has no ``xla_cpu_use_fusion_emitters`` (0.11, as on the lent
    GPU machine), every CPU fit stopped with "No such compile option". Here an option
    from no release stands in for it, added to the round program's and the base-margin
    fit's options: the fit goes on without it and the model is the one of today's
    options, bit for bit."""
    import jax

    from jaxboost.engine import autodiff
    from jaxboost.engine import compile as compile_module

    if jax.default_backend() != "cpu":
        pytest.skip("the CPU's compile options")
    X, y, _ = data
    want = jaxboost.train(O.squared, X, y, **KW)
    bogus = "xla_cpu_option_of_another_release"
    monkeypatch.setattr(compile_module, "_UNKNOWN", set())
    for fn in (run_chunk, autodiff._fit_base_margin):
        for name in ("_options", "_small_options", "_cpu", "_cpu_small", "_accel", "_known_at"):
            monkeypatch.setattr(fn, name, getattr(fn, name))
        fn._options = {**fn._options, bogus: True}
        if fn._small_options is not None:
            fn._small_options = {**fn._small_options, bogus: True}
        fn._build()
    with pytest.raises(jax.errors.JaxRuntimeError, match=f"No such compile option: '{bogus}'"):
        jax.jit(lambda x: x + 1, compiler_options={bogus: True})(jnp.float32(0.0))
    got = jaxboost.train(O.squared, X, y, **KW)
    assert compile_module._UNKNOWN == {bogus}
    assert bogus not in compile_module.known_options(run_chunk._options)
    for a, b in zip(want.ensemble, got.ensemble, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(want.predict(X), got.predict(X))


def test_a_second_fit_does_not_trace_the_loss_again(data):
    """The check that a loss is a per-row scalar loss (``autodiff.check_loss``, an
    abstract trace) runs once per loss, hyperparameter values and row shapes: a fit
    repeated (cross-validation, a grid over tree settings) traces the loss no more."""
    X, y, _ = data
    calls = []

    def counted(t, p, *, delta):
        calls.append(1)
        return delta**2 * (jnp.sqrt(1 + ((p - t) / delta) ** 2) - 1)

    def fit(delta, **kw):
        jaxboost.train(counted, X, y, loss_params={"delta": delta}, **KW | kw)

    import jax

    from jaxboost import native

    same_programs = dict(learning_rate=0.1)  # a traced value
    if jax.default_backend() == "cpu" and native.tree_enabled():
        # the native kernel's round programs take a bucket of depths; elsewhere a new
        # depth is a new program (and so a new trace of the loss)
        same_programs["max_depth"] = 2
    fit(1.0)
    first = len(calls)  # the check, the intercept's and the round program's traces
    fit(1.0, **same_programs)
    fit(1.0)
    assert len(calls) == first  # nothing traced: before, one trace a fit (the check)
    fit(2.0)  # a new value: checked (the programs take it traced)
    fit(2.0)
    assert len(calls) == first + 1


def test_a_loss_that_failed_its_check_fails_it_again(data):
    """Only checks that passed are remembered: a loss whose check raised raises on
    every call."""
    X, y, _ = data

    def vector_out(t, p):
        return jnp.stack([t - p, p])

    for _ in range(2):
        with pytest.raises(jaxboost.LossError, match="must return a scalar"):
            jaxboost.train(vector_out, X, y, **KW)


def test_a_value_rounded_to_float32_on_purpose_stays_rounded():
    """The programs that train compile without XLA's excess precision on accelerators
    (``compile.ACCELERATOR_COMPILE``): a float64 value rounded to float32 and back is
    the rounded value, as XGBoost's float32 leaf weights are (on an H200 the GPU
    compiler had kept the float64 value, and logistic with ``max_delta_step`` grew
    other trees than XGBoost's). On the CPU it holds with either setting."""
    import jax

    from jaxboost.engine.compile import backend_jit

    with jax.enable_x64(True):
        x = np.random.default_rng(0).normal(size=1000) * 3.0
        f = backend_jit(lambda v: v.astype(jnp.float32).astype(jnp.float64) * 3.0 - v * 3.0)
        np.testing.assert_array_equal(
            np.asarray(f(jnp.asarray(x))), x.astype(np.float32).astype(np.float64) * 3.0 - x * 3.0
        )
