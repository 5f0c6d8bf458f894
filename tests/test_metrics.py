"""jaxboost.metrics against scikit-learn, SciPy and NumPy closed forms, under jit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as skm

import jaxboost
import objectives
from jaxboost import metrics

N = 257


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(42)
    y_bin = (rng.random(N) < 0.4).astype(np.float32)
    p = np.clip(rng.beta(2, 2, N) * 0.9 + 0.45 * y_bin * 0.2, 0.01, 0.99).astype(np.float32)
    w = rng.uniform(0.0, 3.0, N).astype(np.float32)
    w[::17] = 0.0  # zero weights must drop rows
    y_reg = rng.normal(size=N).astype(np.float32)
    f = (y_reg + rng.normal(scale=0.7, size=N)).astype(np.float32)
    return dict(y_bin=y_bin, p=p, w=w, y_reg=y_reg, f=f, rng=rng)


def jitted(m, y, pred, w):
    return float(jax.jit(m)(y, pred, w))


def close(a, b, rtol=2e-5, atol=1e-6):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def test_regression_metrics_match_sklearn(data):
    y, f, w = data["y_reg"], data["f"], data["w"]
    close(jitted(metrics.rmse, y, f, w), np.sqrt(skm.mean_squared_error(y, f, sample_weight=w)))
    close(jitted(metrics.mae, y, f, w), skm.mean_absolute_error(y, f, sample_weight=w))
    close(jitted(metrics.r2, y, f, w), skm.r2_score(y, f, sample_weight=w), rtol=1e-4)
    # No weights = all weights equal.
    close(float(metrics.rmse(y, f)), np.sqrt(skm.mean_squared_error(y, f)))
    close(float(metrics.mae(y, f, w=2.0 * np.ones(N))), skm.mean_absolute_error(y, f))
    assert metrics.r2.maximize and not metrics.rmse.maximize


def test_logloss_matches_sklearn_and_clips(data):
    y, p, w = data["y_bin"], data["p"], data["w"]
    close(jitted(metrics.logloss, y, p, w), skm.log_loss(y, p, sample_weight=w))
    # Outside (0, 1), e.g. a squared-loss response: clipped to [1e-7, 1 - 1e-7].
    y2 = np.array([1.0, 0.0, 1.0, 0.0], np.float32)
    p2 = np.array([-0.3, 1.2, 1.0, 0.0], np.float32)
    pc = np.clip(p2.astype(np.float64), 1e-7, 1 - 1e-7)
    want = -np.mean(y2 * np.log(pc) + (1 - y2) * np.log1p(-pc))
    close(float(metrics.logloss(y2, p2)), want, rtol=1e-4)
    assert np.isfinite(float(metrics.logloss(y2, p2)))


def test_error_accuracy_brier(data):
    y, p, w = data["y_bin"], data["p"], data["w"]
    acc = skm.accuracy_score(y, p > 0.5, sample_weight=w)
    close(jitted(metrics.accuracy, y, p, w), acc)
    close(jitted(metrics.error, y, p, w), 1.0 - acc)
    close(jitted(metrics.brier, y, p, w), skm.brier_score_loss(y, p, sample_weight=w))
    # Brier clips the response to [0, 1].
    close(float(metrics.brier([1.0, 0.0], [1.5, -2.0])), 0.0)


@pytest.mark.parametrize("decimals", [None, 1, 0])
def test_auc_matches_sklearn_with_weights_and_ties(data, decimals):
    y, p, w = data["y_bin"], data["p"], data["w"]
    if decimals is not None:  # rounding makes many ties (decimals=0: three values)
        p = np.round(p, decimals).astype(np.float32)
        assert len(np.unique(p)) < N // 10
    close(jitted(metrics.auc, y, p, w), skm.roc_auc_score(y, p, sample_weight=w), rtol=1e-5)
    close(float(metrics.auc(y, p)), skm.roc_auc_score(y, p), rtol=1e-5)


def test_auc_edge_cases():
    assert float(metrics.auc([0.0, 0.0, 1.0, 1.0], [0.5, 0.5, 0.5, 0.5])) == 0.5
    assert float(metrics.auc([0.0, 1.0], [0.9, 0.1])) == 0.0
    assert np.isnan(float(metrics.auc([1.0, 1.0], [0.2, 0.3])))  # no negatives
    # Only the order matters: margins and probabilities give the same AUC.
    f = np.array([-2.0, 0.3, 1.5, -0.1], np.float32)
    y = np.array([0.0, 1.0, 1.0, 0.0], np.float32)
    assert float(metrics.auc(y, f)) == float(metrics.auc(y, 1 / (1 + np.exp(-f))))


def test_auc_tie_groups_with_signed_zeros_and_infinities(data):
    """Tie groups are found by score changes in the sorted order: -0 and 0 tie (they
    sort apart as bits), infinities rank last and first; against scikit-learn with the
    infinities replaced by +-1e30 (it refuses them)."""
    rng = np.random.default_rng(7)
    values = np.array([0.0, -0.0, 0.5, 1.0, np.inf, -np.inf, 2.0], np.float32)
    for n in (2, 9, 64):
        p = rng.choice(values, size=n)
        y = (np.arange(n) % 2).astype(np.float32)
        w = rng.random(n).astype(np.float32)
        q = np.where(np.isinf(p), np.sign(p) * 1e30, p)
        close(jitted(metrics.auc, y, p, w), skm.roc_auc_score(y, q, sample_weight=w), rtol=1e-5)


def test_auc_is_nan_for_a_nan_score_unless_its_weight_is_zero(data):
    y, p, w = data["y_bin"], data["p"].copy(), data["w"].copy()
    p[[3, 100]] = np.nan
    assert np.isnan(float(jitted(metrics.auc, y, p, w)))
    w[[3, 100]] = 0.0  # weightless rows do not count: the AUC of the others
    keep = np.ones(N, bool)
    keep[[3, 100]] = False
    ref = skm.roc_auc_score(y[keep], p[keep], sample_weight=w[keep])
    close(jitted(metrics.auc, y, p, w), ref, rtol=1e-5)


def test_multiclass_metrics_match_sklearn(data):
    rng, w = data["rng"], data["w"]
    K = 4
    logits = rng.normal(size=(N, K))
    P = (np.exp(logits) / np.exp(logits).sum(1, keepdims=True)).astype(np.float32)
    y = rng.integers(0, K, N).astype(np.float32)
    close(
        jitted(metrics.mlogloss, y, P, w),
        skm.log_loss(y, P, sample_weight=w, labels=np.arange(K)),
        rtol=1e-5,
    )
    close(
        jitted(metrics.merror, y, P, w), 1.0 - skm.accuracy_score(y, P.argmax(1), sample_weight=w)
    )


def test_count_and_positive_metrics(data):
    rng, w = data["rng"], data["w"]
    mu = rng.uniform(0.2, 5.0, N).astype(np.float32)
    counts = rng.poisson(mu).astype(np.float32)
    want = np.average(-stats.poisson.logpmf(counts, mu.astype(np.float64)), weights=w)
    close(jitted(metrics.poisson_nll, counts, mu, w), want, rtol=1e-5)
    ypos = rng.gamma(2.0, mu).astype(np.float32)
    close(
        jitted(metrics.gamma_deviance, ypos, mu, w),
        skm.mean_gamma_deviance(ypos, mu, sample_weight=w),
        rtol=1e-4,
    )


def test_objective_metric_scalar_and_vector_margins(data):
    y, w = data["y_bin"], data["w"]
    f = np.log(data["p"] / (1 - data["p"]))
    m = metrics.get_metric("objective", objective=objectives.logistic)
    assert (m.name, m.on, m.maximize) == ("loss", "margin", False)
    want = np.average(np.logaddexp(0.0, f) - y * f, weights=w)
    close(jitted(m, y, f, w), want, rtol=1e-5)
    # Equal objectives give equal (hash-equal) metrics: compiled code is shared.
    assert m == metrics.objective_metric(objectives.logistic)
    assert hash(m) == hash(metrics.objective_metric(objectives.logistic))

    def softmax_ce(y, f):  # one row: class index, (K,) margins
        return jax.nn.logsumexp(f) - f[y.astype(jnp.int32)]

    F = data["rng"].normal(size=(N, 3)).astype(np.float32)
    yk = data["rng"].integers(0, 3, N).astype(np.float32)
    m = metrics.objective_metric(softmax_ce)
    P = np.exp(F) / np.exp(F).sum(1, keepdims=True)
    close(jitted(m, yk, F, w), skm.log_loss(yk, P, sample_weight=w, labels=[0, 1, 2]), rtol=1e-5)


def test_get_metric_names_errors_and_callables():
    assert metrics.get_metric("AUC") is metrics.auc
    assert metrics.get_metric(metrics.rmse) is metrics.rmse
    with pytest.raises(ValueError, match="unknown metric 'nope'.*logloss.*rmse"):
        metrics.get_metric("nope")
    with pytest.raises(ValueError, match="objective"):
        metrics.get_metric("objective")
    with pytest.raises(TypeError):
        metrics.get_metric(3)
    with pytest.raises(ValueError, match="on="):
        metrics.Metric("x", lambda y, p, w: 0.0, on="probability")

    def max_err(y, pred):
        return jnp.max(jnp.abs(y - pred))

    m = metrics.get_metric(max_err)
    assert (m.name, m.maximize, m.on) == ("max_err", False, "response")
    assert float(m([0.0, 1.0], [0.5, 3.0])) == 2.0
    # A scikit-learn style callable gets the weights as sample_weight=.
    m = metrics.get_metric(skm.mean_absolute_error)
    assert float(m(np.array([0.0, 0.0]), np.array([1.0, 3.0]), np.array([1.0, 0.0]))) == 1.0

    def hit(y, pred):
        return jnp.mean((pred > 0.5) == (y > 0.5))

    hit.maximize = True
    assert metrics.get_metric(hit).maximize


def test_shape_errors():
    with pytest.raises(ValueError, match="mlogloss.*scalar-output"):
        metrics.mlogloss(np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="logloss.*one prediction per row"):
        metrics.logloss(np.zeros(3), np.zeros((3, 2)))


def test_evaluate_stages_jax_and_numpy_callables(data):
    y, p, w = data["y_bin"], data["p"], data["w"]
    stages = np.stack([np.clip(p + d, 0.01, 0.99) for d in (-0.2, 0.0, 0.2)])
    got = metrics.evaluate_stages(metrics.logloss, y, stages, w)
    assert got.shape == (3,) and got.dtype == np.float64
    close(got, [skm.log_loss(y, s, sample_weight=w) for s in stages])
    # A NumPy-only callable (scikit-learn) cannot be traced: evaluated stage by stage.
    got = metrics.evaluate_stages(skm.roc_auc_score, y, stages, w)
    close(got, [skm.roc_auc_score(y, s, sample_weight=w) for s in stages])
    assert metrics.evaluate_stages("rmse", y, stages[:0], w).shape == (0,)


def test_best_and_better():
    assert metrics.auc.best([0.5, 0.7, 0.7]) == (0.7, 1)
    assert metrics.logloss.best([0.5, np.nan, 0.3, 0.4]) == (0.3, 2)
    v, i = metrics.logloss.best([np.nan, np.nan])
    assert np.isnan(v) and i is None
    assert metrics.auc.better(0.8, 0.7) and not metrics.auc.better(0.7, 0.8)
    assert metrics.rmse.better(1.0, 2.0) and not metrics.rmse.better(1.95, 2.0, min_delta=0.1)
    assert not metrics.rmse.better(np.nan, 1.0)


def test_peer_metric_names():
    """XGBoost's and LightGBM's metric names get jaxboost's; ``aft-nloglik`` is an AFT
    model's own mean loss under XGBoost's name (at the trained sigma)."""
    entry = objectives.aft(distribution="normal", sigma=0.5)
    m = metrics.get_metric("aft-nloglik", objective=entry)
    lo = np.array([1.0, 2.0, 0.5], np.float32)
    y = {"lower": lo, "upper": np.array([1.0, np.inf, 0.5], np.float32)}
    f = np.array([0.1, 0.5, -0.2], np.float32)
    assert m.name == "aft-nloglik" and not m.maximize
    z = (np.log(lo.astype(np.float64)) - f) / 0.5  # log T = f + 0.5 Z, Z normal
    by_row = -stats.norm.logpdf(z) + np.log(0.5 * lo)  # events: the density of T
    by_row[1] = -stats.norm.logsf(z[1])  # right-censored at 2: the survival
    assert float(m(y, f)) == pytest.approx(np.mean(by_row), rel=1e-5)
    for name, want in [
        ("aft-nloglik", "objectives.aft model"),  # not an AFT model: refused
        ("poisson-nloglik", "'poisson_nll'"),
        ("binary_logloss", "LightGBM's name; jaxboost's is 'logloss'"),
    ]:
        with pytest.raises(ValueError, match=want):
            metrics.get_metric(name, objective=objectives.squared)


def test_a_metric_called_outside_training_is_one_program(compile_counter):
    """metrics.auc(y, p) (an estimator's score, a notebook's check) runs the metric as
    one compiled program per shape: op by op it compiled each operation (Harrell's C:
    85 programs, 2.0 s a new size; now 4, 0.8 s). A metric that needs concrete
    values (a scikit-learn function) still runs."""
    from jaxboost.metrics import get_metric

    rng = np.random.default_rng(0)
    y = np.where(rng.random(777) < 0.6, 1.0, -1.0) * (rng.exponential(size=777) + 0.1)
    r = rng.normal(size=777)
    with compile_counter:
        c = float(get_metric("cindex")(y.astype(np.float32), r.astype(np.float32)))
    assert compile_counter.count <= 5, compile_counter.count  # the program, w, casts
    assert c == pytest.approx(jaxboost.survival.concordance_index(y, r), abs=1e-6)
    m = metrics.get_metric(skm.mean_absolute_error)
    assert float(m(np.array([0.0, 0.0]), np.array([1.0, 3.0]), np.array([1.0, 0.0]))) == 1.0
