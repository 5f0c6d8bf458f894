import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import objectives
from jaxboost.engine.autodiff import fit_base_margin, grad_hess

ROWS = np.array([-3.0, -0.7, 0.0, 0.4, 2.5], np.float32)
LABELS01 = np.array([0.0, 1.0, 1.0, 0.0, 1.0], np.float32)


def finite_diff(loss, y, f, eps=1e-3):
    y = y.astype(np.float64)
    f = f.astype(np.float64)
    with jax.enable_x64(True):  # float64 differences, scoped
        lo, mid, hi = (
            np.array([float(loss(jnp.float64(a), jnp.float64(b))) for a, b in zip(y, f + d)])
            for d in (-eps, 0.0, eps)
        )
    return (hi - lo) / (2 * eps), (hi - 2 * mid + lo) / eps**2


@pytest.mark.parametrize(
    "obj", [objectives.squared, objectives.logistic, objectives.exponential], ids=lambda o: o.name
)
def test_grad_hess_equal_finite_differences(obj):
    g, h = grad_hess(obj, jnp.asarray(LABELS01), jnp.asarray(ROWS))
    g_fd, h_fd = finite_diff(obj.loss, LABELS01, ROWS)
    np.testing.assert_allclose(np.asarray(g), g_fd, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(h), h_fd, rtol=1e-4, atol=1e-4)
    assert np.all(np.asarray(h) > 0)  # all three are convex


def test_closed_forms():
    y, f = jnp.asarray(LABELS01), jnp.asarray(ROWS)
    g, h = grad_hess(objectives.squared, y, f)
    np.testing.assert_array_equal(np.asarray(g), ROWS - LABELS01)
    np.testing.assert_array_equal(np.asarray(h), 1.0)
    s = 1 / (1 + np.exp(-ROWS.astype(np.float64)))
    g, h = grad_hess(objectives.logistic, y, f)
    np.testing.assert_allclose(np.asarray(g), s - LABELS01, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(h), s * (1 - s), rtol=1e-5)
    yt = 2 * LABELS01 - 1
    g, h = grad_hess(objectives.exponential, y, f)
    np.testing.assert_allclose(np.asarray(g), -yt * np.exp(-yt * ROWS), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(h), np.exp(-yt * ROWS), rtol=1e-6)


def test_logistic_closed_form_equals_autodiff_of_its_loss():
    f = jnp.linspace(-20, 20, 101, dtype=jnp.float32)
    y = jnp.where(jnp.arange(101) % 2 == 0, 1.0, 0.0).astype(jnp.float32)
    g1, h1 = grad_hess(objectives.logistic, y, f)
    g2, h2 = grad_hess(objectives.logistic.loss, y, f)  # the bare function: autodiff
    np.testing.assert_allclose(np.asarray(g1), np.asarray(g2), atol=1e-6)
    np.testing.assert_allclose(np.asarray(h1), np.asarray(h2), atol=1e-6)


def test_sample_weights_multiply_g_and_h():
    w = jnp.asarray(np.array([0.0, 1.0, 2.0, 0.5, 3.0], np.float32))
    g, h = grad_hess(objectives.exponential, jnp.asarray(LABELS01), jnp.asarray(ROWS))
    gw, hw = grad_hess(objectives.exponential, jnp.asarray(LABELS01), jnp.asarray(ROWS), w)
    np.testing.assert_allclose(np.asarray(gw), np.asarray(g) * np.asarray(w), rtol=1e-7)
    np.testing.assert_allclose(np.asarray(hw), np.asarray(h) * np.asarray(w), rtol=1e-7)


def test_base_margin_closed_forms():
    rng = np.random.default_rng(0)
    y = (rng.random(500) < 0.8).astype(np.float32)
    w = rng.random(500).astype(np.float32) + 0.1
    p = float((w * y).sum() / w.sum())
    yr = rng.normal(3.0, 2.0, 500).astype(np.float32)
    c = fit_base_margin(objectives.squared, jnp.asarray(yr), jnp.asarray(w))
    assert float(c) == pytest.approx(float((w * yr).sum() / w.sum()), rel=1e-5)
    c = fit_base_margin(objectives.logistic, jnp.asarray(y), jnp.asarray(w))
    assert float(c) == pytest.approx(np.log(p / (1 - p)), rel=1e-5)
    c = fit_base_margin(objectives.exponential, jnp.asarray(y), jnp.asarray(w))
    assert float(c) == pytest.approx(0.5 * np.log(p / (1 - p)), rel=1e-5)


@pytest.mark.parametrize("n", [2_000, 200_000])
def test_base_margin_is_the_float32_next_to_the_closed_form_minimiser(n):
    """Logistic, Poisson and squared error, weighted: the fit ends within 2 float32
    ulps of the closed-form minimiser (log-odds, log-mean, mean of the weighted labels),
    on logistic that of XGBoost's base score too. Near the minimum the float32 losses'
    totals round by more than they differ (``autodiff.LOSS_ROUNDING``): comparing them
    strictly stopped Newton's steps there, 3,793 ulps (2.9e-4) from the log-odds on
    200,000 rows."""
    import xgboost as xgb

    rng = np.random.default_rng(3 + n)
    y = (rng.random(n) < 0.3).astype(np.float32)
    w = (rng.random(n) + 0.5).astype(np.float32)
    counts = rng.poisson(2.5, n).astype(np.float32)
    yr = rng.normal(3.0, 2.0, n).astype(np.float32)
    w64 = w.astype(np.float64)
    p = (w64 * y).sum() / w64.sum()
    cases = [
        (objectives.logistic, y, np.log(p / (1 - p))),
        (objectives.poisson, counts, np.log((w64 * counts).sum() / w64.sum())),
        (objectives.squared, yr, (w64 * yr).sum() / w64.sum()),
    ]
    for loss, labels, best in cases:
        c = np.float32(fit_base_margin(loss, jnp.asarray(labels), jnp.asarray(w)))
        ulps = int(c.view(np.int32)) - int(np.float32(best).view(np.int32))
        assert abs(ulps) <= 2, (loss, float(c), best, ulps)
    booster = xgb.train(
        {"objective": "binary:logistic"}, xgb.DMatrix(np.zeros((n, 1)), label=y, weight=w), 1
    )
    config = json.loads(booster.save_config())["learner"]["learner_model_param"]
    score = float(config["base_score"].strip("[]"))
    c = float(fit_base_margin(objectives.logistic, jnp.asarray(y), jnp.asarray(w)))
    assert c == pytest.approx(np.log(score / (1 - score)), abs=3e-7)


def forbid_base_margin_fit(monkeypatch):
    """Make training's base-margin fit raise, so a test sees that it did not run."""
    from jaxboost.training import data

    def no_fit(*a, **k):
        raise AssertionError("the base-margin fit ran")

    monkeypatch.setattr(data, "fit_base_margin", no_fit)


CLOSED_FORM_STARTS = [
    ("squared", lambda r, n: r.normal(3.0, 2.0, n)),
    ("logistic", lambda r, n: (r.random(n) < 0.3).astype(float)),
    ("exponential", lambda r, n: (r.random(n) < 0.7).astype(float)),
    ("poisson", lambda r, n: r.poisson(2.5, n)),
    ("gamma", lambda r, n: r.gamma(2.0, 1.5, n)),
    ("tweedie", lambda r, n: r.poisson(1.0, n) * r.gamma(2.0, 1.0, n)),
]


@pytest.mark.parametrize("name, draw", CLOSED_FORM_STARTS, ids=[c[0] for c in CLOSED_FORM_STARTS])
def test_closed_form_start_is_the_fitted_minimiser_and_skips_the_fit(name, draw, monkeypatch):
    """Squared error, logistic, exponential, Poisson, gamma and Tweedie start training
    from their closed-form minimiser (``Objective.intercept``), within 2 float32 ulps of
    what the general fit finds, without running that fit (its compile is 0.15-0.2 s of
    a first fit); with ``quantize=True`` (exact sums) they still fit it."""
    import jaxboost

    rng = np.random.default_rng(11)
    n = 700
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = draw(rng, n).astype(np.float32)
    w = (rng.random(n) + 0.5).astype(np.float32)
    fitted = np.float32(fit_base_margin(getattr(objectives, name), jnp.asarray(y), jnp.asarray(w)))

    forbid_base_margin_fit(monkeypatch)
    kw = dict(n_rounds=1, max_depth=2, sample_weight=w, verbose=False)
    start = np.float32(jaxboost.train(name, X, y, **kw).base_margin)
    assert abs(int(start.view(np.int32)) - int(fitted.view(np.int32))) <= 2, (start, fitted)
    with pytest.raises(AssertionError, match="the base-margin fit ran"):
        jaxboost.train(name, X, y, quantize=True, **kw)


def test_softmax_starts_from_the_log_class_shares_without_the_fit(monkeypatch):
    """Softmax: the log of the weighted class shares less their mean (the vector fit
    finds them up to a constant), without running the fit; a class without weight
    (an empty class below n_classes) leaves it to the fit."""
    import jaxboost

    rng = np.random.default_rng(5)
    n, K = 600, 4
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = rng.integers(0, K, n).astype(np.float32)
    w = (rng.random(n) + 0.5).astype(np.float32)
    log_p = np.log(np.bincount(y.astype(int), weights=w.astype(np.float64)) / w.sum())
    fitted = np.asarray(
        fit_base_margin(objectives.softmax(n_classes=K), jnp.asarray(y), jnp.asarray(w), K)
    )
    np.testing.assert_allclose(fitted - fitted.mean(), log_p - log_p.mean(), atol=5e-5)

    forbid_base_margin_fit(monkeypatch)
    kw = dict(n_rounds=1, max_depth=2, sample_weight=w, verbose=False)
    bst = jaxboost.train("softmax", X, y, **kw)
    np.testing.assert_allclose(bst.base_margin, log_p - log_p.mean(), rtol=0, atol=3e-7)
    with pytest.raises(AssertionError, match="the base-margin fit ran"):
        jaxboost.train(objectives.softmax(n_classes=K + 1), X, y, **kw)


def test_gaussian_nll_starts_at_the_mean_and_log_sd_and_the_vector_fit_finds_them(monkeypatch):
    """Gaussian NLL (mean, log-scale): training starts from the weighted mean and the
    log of the weighted standard deviation without the fit; and the vector fit, whose
    Newton direction from 0 climbs (the Hessian is indefinite there), now takes a
    diagonal Newton step instead and reaches the same point (it stopped at mean -1.98,
    log-scale 1.29 for labels of mean 2.97, not even a stationary point)."""
    import jaxboost

    rng = np.random.default_rng(0)
    y = rng.normal(3, 2, 800).astype(np.float32)
    w = (rng.random(800) + 0.5).astype(np.float32)
    X = rng.normal(size=(800, 2)).astype(np.float32)
    w64 = w.astype(np.float64)
    mu = (w64 * y).sum() / w64.sum()
    want = np.array([mu, 0.5 * np.log((w64 * (y - mu) ** 2).sum() / w64.sum())])
    fitted = np.asarray(fit_base_margin(objectives.gaussian_nll, jnp.asarray(y), jnp.asarray(w), 2))
    np.testing.assert_allclose(fitted, want, atol=2e-4)

    forbid_base_margin_fit(monkeypatch)
    bst = jaxboost.train(
        "gaussian_nll", X, y, sample_weight=w, n_rounds=1, max_depth=2, verbose=False
    )
    np.testing.assert_allclose(bst.base_margin, want, rtol=1e-6)


def test_closed_form_start_falls_back_to_the_fit_without_a_finite_one():
    """Every logistic label 1: no finite log-odds, so training fits the constant as
    before (phase 1's point, where the loss has flattened out)."""
    import jaxboost

    X = np.random.default_rng(0).normal(size=(50, 2)).astype(np.float32)
    y = np.ones(50, np.float32)
    assert objectives.logistic.start_margin(y, np.ones(50)) is None
    bst = jaxboost.train("logistic", X, y, n_rounds=1, max_depth=2, verbose=False)
    assert bst.base_margin == float(fit_base_margin(objectives.logistic, jnp.asarray(y)))
    assert bst.base_margin > 5


def test_base_margin_of_a_custom_loss_is_its_minimiser():
    """Pseudo-Huber (delta 1): compare with a brute-force search over a fine grid."""
    rng = np.random.default_rng(1)
    y = np.concatenate([rng.normal(0, 1, 300), rng.normal(20, 1, 30)]).astype(np.float32)

    def pseudo_huber(t, f):
        return jnp.sqrt(1.0 + (t - f) ** 2) - 1.0

    c = float(fit_base_margin(pseudo_huber, jnp.asarray(y)))
    grid = np.linspace(-2, 4, 60001)
    objective = np.sqrt(1 + (y[None, :] - grid[:, None]) ** 2).sum(axis=1)
    assert c == pytest.approx(grid[np.argmin(objective)], abs=2e-4)
    assert abs(c - float(y.mean())) > 1.0  # robust: far from the mean


def test_base_margin_fit_compiles_the_loss_at_two_places_and_finds_its_minimiser():
    """The fit's loops evaluate the loss at one place and its derivatives at one
    (``_scalar_fit``): its compiled program holds two copies of a loss's arctan (the
    value and the derivatives' forward pass), where the nested loops it replaced held 12
    (of their 17 calls: 2.7 s of compiling for objectives.aft). The margin is still the
    minimiser."""
    from jaxboost.engine import autodiff

    def loss(y, f):
        return jnp.arctan(f - y) ** 2 + 0.1 * (f - y) ** 2

    rng = np.random.default_rng(2)
    y = np.concatenate([rng.normal(0, 1, 300), rng.normal(6, 1, 60)]).astype(np.float32)
    family, values = autodiff.split_loss(loss)
    fit = jax.jit(autodiff._fit_base_margin_impl, static_argnums=(0, 4))
    cpu = jax.devices("cpu")[0]  # the CPU's program (a GPU's fusions may copy an op)
    with jax.enable_x64(True), jax.default_device(cpu):
        yc = jax.device_put(y, cpu)
        program = fit.lower(family, values, yc, None, False, np.int32(1)).compile()
    assert program.as_text().count(" atan2(") == 2
    c = float(fit_base_margin(loss, jnp.asarray(y)))
    grid = np.linspace(-1, 3, 40001)
    r = grid[:, None] - y[None, :].astype(np.float64)
    assert c == pytest.approx(
        grid[np.argmin((np.arctan(r) ** 2 + 0.1 * r**2).sum(axis=1))], abs=2e-4
    )


def test_small_solve_equals_lapack_with_pivoting_and_flags_singular_systems():
    """The vector base-margin fit's K x K solve (Gauss-Jordan with partial pivoting, in
    place of LAPACK's LU, whose custom call compiled slowly) solves what NumPy's LAPACK
    solves, needs its row swaps (zero leading pivots), and returns non-finite numbers
    for a singular system, which the fit turns into a gradient step."""
    from jaxboost.engine.autodiff import small_solve

    rng = np.random.default_rng(0)
    solve = jax.jit(small_solve)
    with jax.enable_x64(True):
        for K in (1, 2, 3, 10, 25):
            for kind in ("general", "spd", "zero_pivots"):
                A = rng.normal(size=(K, K))
                if kind == "spd":
                    A = A @ A.T + 1e-6 * np.eye(K)
                elif kind == "zero_pivots" and K > 1:
                    A = np.roll(np.diag(rng.uniform(1, 2, size=K)), 1, axis=1)  # a permutation
                b = rng.normal(size=K)
                x = np.asarray(solve(jnp.asarray(A), jnp.asarray(b)))
                np.testing.assert_allclose(A @ x, b, rtol=0, atol=1e-9 * np.abs(b).max() * K)
                np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=1e-8, atol=1e-10)
        singular = jnp.asarray([[1.0, 2.0], [2.0, 4.0]])
        assert not np.isfinite(np.asarray(solve(singular, jnp.ones(2)))).all()


def _softmax_totals(N=1797, K=10):
    """The vector base-margin fit's weighted loss on 10-class labels (float32 losses
    summed in float64, as in the fit), and a point and direction of its line search."""
    from jaxboost.engine.autodiff import bind_loss, split_loss

    rng = np.random.default_rng(0)
    y = jnp.asarray(rng.integers(0, K, N).astype(np.float32))
    loss = bind_loss(*split_loss(objectives.softmax(n_classes=K)))

    def total(c):
        f = jnp.broadcast_to(c.astype(jnp.float32), (N, K))
        return jnp.sum(jax.vmap(loss)(y, f).astype(jnp.float64))

    c = np.zeros(K)
    c[:3] = [-0.19317158, -0.06434896, -0.12669326]
    return total, c, np.full(K, 0.0288)


def test_line_search_losses_equal_one_by_one():
    """``losses_along`` gives each step size's loss. Vmapped over the 12 step sizes,
    XLA's CPU backend gave entries 9-11 the values of entries 0-2 here (51.65 below
    the true loss at s = 2**-9), and the fit followed them."""
    from jaxboost.engine.autodiff import losses_along

    total, c, d = _softmax_totals()
    steps = 0.5 ** np.arange(12.0)
    with jax.enable_x64(True):
        got = np.asarray(
            jax.jit(lambda c, d, s: losses_along(total, c, d, s))(
                jnp.asarray(c), jnp.asarray(d), jnp.asarray(steps)
            )
        )
        want = np.array([float(jax.jit(total)(jnp.asarray(c + s * d))) for s in steps])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_softmax_base_margin_is_the_log_class_frequencies():
    """Up to the constant softmax leaves free: log of the weighted class shares."""
    rng = np.random.default_rng(0)
    N, K = 1797, 10
    y = rng.integers(0, K, N).astype(np.float32)
    w = (rng.random(N) + 0.5).astype(np.float32)
    c = np.asarray(
        fit_base_margin(objectives.softmax(n_classes=K), jnp.asarray(y), jnp.asarray(w), K),
        np.float64,
    )
    log_p = np.log(np.bincount(y.astype(int), weights=w, minlength=K) / w.sum())
    np.testing.assert_allclose(c - c.mean(), log_p - log_p.mean(), atol=5e-5)
