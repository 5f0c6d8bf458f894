"""objectives.aft: g and h against XGBoost survival:aft row by row, training margins and
aft-nloglik against XGBoost's exact method, the loss against double-precision
probabilities far in the tails, label forms and errors, XGBoost export and import."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import parity_data
from xgb_readout import xgb_base_score, xgb_leaf_grad_hess

import jaxboost
import objectives
from jaxboost import io
from jaxboost.errors import DataError, ModelFormatError

xgb = pytest.importorskip("xgboost")
stats = pytest.importorskip("scipy.stats")

DISTS = {"normal": stats.norm, "logistic": stats.logistic, "extreme": stats.gumbel_l}


def _intervals(rng, t):
    """A quarter each: events, right-censored, left-censored and interval-censored."""
    kind = np.arange(t.shape[0]) % 4
    lo = np.select([kind == 0, kind == 1, kind == 2], [t, 0.7 * t, 0.0 * t], 0.8 * t)
    hi = np.select([kind == 0, kind == 1, kind == 2], [t, np.inf + t, 1.3 * t], 1.5 * t)
    return lo.astype(np.float32), hi.astype(np.float32)


def _xgb_dmatrix(X, lo, hi):
    d = xgb.DMatrix(X, missing=np.nan)
    d.set_float_info("label_lower_bound", lo)
    d.set_float_info("label_upper_bound", hi)
    return d


def _rows(obj, lo, hi, f, fn="loss"):
    y = {"lower": jnp.asarray(lo), "upper": jnp.asarray(hi)}
    if fn == "loss":
        return np.asarray(jax.jit(jax.vmap(obj))(y, jnp.asarray(f)), np.float64)
    return tuple(
        np.asarray(a, np.float64) for a in jax.jit(jax.vmap(obj.row_grad_hess()))(y, jnp.asarray(f))
    )


@pytest.mark.parametrize("dist, sigma", [("normal", 1.0), ("logistic", 0.5), ("extreme", 0.7)])
def test_gradient_and_hessian_equal_xgboost_survival_aft(dist, sigma):
    """One XGBoost round with one row per leaf (``xgb_readout``) at start margins within
    a few sigma of each row's interval, every kind of censoring."""
    rng = np.random.default_rng(1)
    n = 80
    t = np.exp(rng.normal(size=n)).astype(np.float32)
    lo, hi = _intervals(rng, t)
    f0 = (np.log(t) + sigma * rng.uniform(-2.5, 2.5, n)).astype(np.float32)
    params = dict(
        objective="survival:aft",
        aft_loss_distribution=dist,
        aft_loss_distribution_scale=sigma,
        max_depth=60,
    )
    gx, hx, leaf = xgb_leaf_grad_hess(xgb, params, None, f0, bounds=(lo, hi))
    g, h = _rows(objectives.aft(distribution=dist, sigma=sigma), lo, hi, f0, "gh")
    G = np.array([g[leaf == v].sum() for v in leaf])
    H = np.array([h[leaf == v].sum() for v in leaf])
    single = np.array([np.sum(leaf == v) == 1 for v in leaf])
    assert single.sum() >= n // 2
    print(
        f"\naft {dist}: max |G - G_xgboost| {np.max(np.abs(G - gx)):.1e}, max rel "
        f"|H - H_xgboost| {np.max(np.abs(H - hx) / hx):.1e} ({single.sum()} one-row leaves)"
    )
    np.testing.assert_allclose(G, gx, atol=2e-5, rtol=2e-5)
    np.testing.assert_allclose(H, hx, rtol=1e-4)


def test_xgboost_loses_the_hessian_far_above_a_lower_bound():
    """XGBoost takes F(b) - F(a) from double CDFs: 8 sigma above the median 1 - Phi
    has no digits left and its h falls to the floor 1e-16. The exact h there is about
    1 / sigma^2 (the normal's hazard has slope about 1), clipped to 15 by ``clip``."""
    lo, hi = np.float32([np.exp(1.6)] * 2), np.float32([np.inf] * 2)
    f0 = np.float32([0.0, 0.0])
    params = dict(objective="survival:aft", aft_loss_distribution_scale=0.2)
    _, cover, _ = xgb_leaf_grad_hess(xgb, params, None, f0, bounds=(lo, hi))
    a = 1.6 / 0.2  # the standardised lower bound: 8
    mills = stats.norm.pdf(a) / stats.norm.sf(a)
    h_exact = mills * (mills - a) / 0.2**2  # d2/df2 of -log(1 - Phi((log l - f) / sigma))
    assert np.all(cover <= 2.1e-16) and h_exact > 20  # (one leaf, two rows at 1e-16)
    g, h = _rows(objectives.aft(sigma=0.2, clip=False), lo, hi, f0, "gh")
    np.testing.assert_allclose(h, h_exact, rtol=2e-4)  # (float32 slopes of log_ndtr)
    np.testing.assert_allclose(g, -mills / 0.2, rtol=1e-5)
    _, h = _rows(objectives.aft(sigma=0.2), lo, hi, f0, "gh")
    assert np.all(h == 15.0)


def _aft_data(spread):
    """``parity_data``'s features with times of log T = spread * yr + 0.5."""
    X, _, yr = parity_data()
    t = np.exp(spread * yr + 0.5).astype(np.float32)
    return X, *_intervals(np.random.default_rng(0), t)


@pytest.mark.parametrize(
    "dist, sigma, spread",
    [("normal", 1.0, 0.3), ("logistic", 1.0, 0.3), ("extreme", 1.0, 0.1), ("normal", 0.25, 0.1)],
)
def test_margins_and_nloglik_equal_xgboost_exact(dist, sigma, spread):
    """20 rounds, depth 3, on data whose features have fewer values than max_bin (so
    the histogram method is XGBoost's exact one). sigma = 0.25: an event's h = 16 is
    clipped to 15 on both sides. XGBoost 3.2's default metric (no eval_metric given)
    evaluates aft-nloglik at scale 1 whatever aft_loss_distribution_scale is: compared
    at sigma 1. The times stay
    within reach of XGBoost's double CDF differences (``spread``): with log times 0.3
    yr + 0.5 a right-censored extreme row at z = 3.5 (S = e^{-33}) gets h = 14.09 from
    XGBoost where the exact h, e^z = 33, clips to 15."""
    X, lo, hi = _aft_data(spread)
    d = _xgb_dmatrix(X, lo, hi)
    res = {}
    ref = xgb.train(
        dict(
            objective="survival:aft",
            aft_loss_distribution=dist,
            aft_loss_distribution_scale=sigma,
            tree_method="exact",
            max_depth=3,
            eta=0.3,
            nthread=1,
        ),
        d,
        20,
        evals=[(d, "train")],
        evals_result=res,
        verbose_eval=False,
    )
    base = float(np.log(np.float32(xgb_base_score(ref))))  # log 0.5: XGBoost's start
    y = {"lower": lo, "upper": hi}
    entry = objectives.aft(distribution=dist, sigma=sigma)
    bst = jaxboost.train(
        entry,
        X,
        y,
        n_rounds=20,
        max_depth=3,
        learning_rate=0.3,
        base_margin=base,
        eval_set={"train": (X, y)},
        verbose=False,
    )
    margins = bst.predict(X, output_margin=True)
    theirs = ref.predict(d, output_margin=True)
    np.testing.assert_allclose(margins, theirs, atol=1e-5, rtol=0)
    np.testing.assert_allclose(bst.predict(X), np.exp(margins), rtol=1e-6)
    at_one = np.mean(_rows(entry.with_params(sigma=1.0), lo, hi, margins))
    assert at_one == pytest.approx(res["train"]["aft-nloglik"][-1], rel=1e-5)
    if sigma == 1.0:  # the history is the mean loss after each round
        np.testing.assert_allclose(
            bst.history["train"]["loss"], res["train"]["aft-nloglik"], rtol=1e-5
        )


@pytest.mark.parametrize("dist", sorted(DISTS))
def test_loss_and_gradient_equal_double_precision_far_in_the_tails(dist):
    """float32 loss against scipy's float64 probabilities (each from the side where the
    difference keeps its digits): events, open and closed intervals from 1e-7 wide to
    wide, margins up to 6 sigma away; g and h (clip=False: the closed forms of
    ``_aft_grad_hess``) against central differences of the float64 loss."""
    D = DISTS[dist]
    uppers = [1.0, 1.0000001, 1.001, 1.05, 1.1, 1.5, 3.0, 20.0, np.inf]
    margins = [-6.0, -2.0, 0.0, 0.5, 3.0, 6.0]
    lo = np.float32([0.0] + [1.0] * len(uppers))  # (0, 20]: left-censored
    hi = np.float32([20.0] + uppers)
    lo, hi = np.repeat(lo, len(margins)), np.repeat(hi, len(margins))
    f = np.tile(np.float32(margins), len(uppers) + 1)

    def nll64(f):
        with np.errstate(divide="ignore", invalid="ignore"):
            a, b = (np.log(lo.astype(np.float64)) - f), (np.log(hi.astype(np.float64)) - f)
            below = -np.log(D.cdf(b) - D.cdf(a))
            above = -np.log(D.sf(a) - D.sf(b))
            event = -D.logpdf(a) + np.log(lo.astype(np.float64))
        out = np.where(D.cdf(a) < 0.5, below, above)
        return np.where(lo == hi, event, out)

    want = nll64(f.astype(np.float64))
    ours = _rows(objectives.aft(distribution=dist), lo, hi, f)
    np.testing.assert_allclose(ours, want, rtol=1e-6, atol=1e-6)
    eps = 1e-4
    f64 = f.astype(np.float64)
    g_fd = (nll64(f64 + eps) - nll64(f64 - eps)) / (2 * eps)
    g, h = _rows(objectives.aft(distribution=dist, clip=False), lo, hi, f, "gh")
    np.testing.assert_allclose(g, g_fd, rtol=2e-4, atol=2e-5)
    e = 1e-3  # h (closed form) against second differences of the float64 loss, but on
    # the interval 1e-7 wide, whose float64 CDF difference is too coarse for them
    h_fd = (nll64(f64 + e) - 2 * nll64(f64) + nll64(f64 - e)) / e**2
    ok = ~((hi > lo) & (hi - lo < 1e-6))
    np.testing.assert_allclose(h[ok], h_fd[ok], rtol=2e-3, atol=2e-5)


def test_label_forms_train_the_same_model_and_bad_labels_are_named():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 3)).astype(np.float32)
    t = np.exp(X[:, 0] + 0.3 * rng.normal(size=120)).astype(np.float32)
    lo, hi = _intervals(rng, t)
    kw = dict(n_rounds=4, max_depth=2, verbose=False)

    def margins(y):
        return jaxboost.train(objectives.aft, X, y, **kw).predict(X, output_margin=True)

    both = margins({"lower": lo, "upper": hi})
    np.testing.assert_array_equal(margins(np.stack([lo, hi], axis=1)), both)
    # event times (N,) are the intervals [t, t]: the same loss, g and h row by row
    f = jnp.asarray(np.linspace(-2, 2, 120, dtype=np.float32))
    tt = {"lower": jnp.asarray(t), "upper": jnp.asarray(t)}
    for fn in (objectives.aft, objectives.aft.row_grad_hess()):
        np.testing.assert_array_equal(
            np.asarray(jax.jit(jax.vmap(fn))(jnp.asarray(t), f)),
            np.asarray(jax.jit(jax.vmap(fn))(tt, f)),
        )
    # a row (0, inf] says nothing: loss 0, g 0, h XGBoost's floor (0 without clip)
    zero = {"lower": jnp.float32(0.0), "upper": jnp.float32(np.inf)}
    assert float(objectives.aft(zero, 0.3)) == 0.0
    assert [float(v) for v in objectives.aft.row_grad_hess()(zero, jnp.float32(0.3))] == [
        0.0,
        np.float32(1e-16),
    ]
    assert float(objectives.aft(clip=False).row_grad_hess()(zero, jnp.float32(0.3))[1]) == 0.0
    # errors name what was wrong
    with pytest.raises(DataError, match=r"a dict \{'lower': ..., 'upper': ...\}.*'lo'"):
        jaxboost.train(objectives.aft, X, {"lo": lo, "hi": hi}, **kw)
    with pytest.raises(DataError, match=r"\(N, 2\) array.*structure \(N, 3\)"):
        jaxboost.train(objectives.aft, X, np.stack([lo, hi, hi], axis=1), **kw)
    bad_hi = hi.copy()
    bad_hi[5] = 0.5 * lo[5]
    with pytest.raises(DataError, match=r"1 row\(s\) are outside, the first at row 5"):
        jaxboost.train(objectives.aft, X, {"lower": lo, "upper": bad_hi}, **kw)
    at_zero = lo.copy()
    at_zero[[0, 4]] = 0.0  # rows 0 and 4 are events (lower = upper): at time 0
    with pytest.raises(DataError, match=r"the first at row 0: lower = 0, upper = 0"):
        jaxboost.train(
            objectives.aft, X, {"lower": at_zero, "upper": np.where(lo == hi, at_zero, hi)}, **kw
        )
    with pytest.raises(DataError, match=r"aft needs labels y > 0.*row 7"):
        jaxboost.train(objectives.aft, X, np.where(np.arange(120) == 7, -1.0, t), **kw)
    bst = jaxboost.train(objectives.aft, X, {"lower": lo, "upper": hi}, **kw)
    with pytest.raises(DataError, match=r"'lower'.*structure \{'low'"):
        bst.grad_hess(X, {"low": lo, "upper": hi})
    g, h, margin = bst.grad_hess(X, {"lower": lo, "upper": hi})
    g_ref, h_ref = _rows(objectives.aft, lo, hi, bst.predict(X, output_margin=True), "gh")
    np.testing.assert_allclose(g, g_ref, rtol=1e-6)
    np.testing.assert_allclose(h, h_ref, rtol=1e-6)
    with pytest.raises(ValueError, match="distribution one of"):
        objectives.aft(distribution="weibull")
    with pytest.raises(ValueError, match="sigma > 0"):
        objectives.aft(sigma=0.0)
    # sigma is traced: every scale shares one compiled program
    assert objectives.aft(sigma=0.4).traced_split()[0] == objectives.aft.traced_split()[0]


def test_xgboost_export_predicts_the_same_and_imports_back(tmp_path):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(150, 3)).astype(np.float32)
    t = np.exp(0.5 + X[:, 0] + 0.3 * rng.normal(size=150)).astype(np.float32)
    lo, hi = _intervals(rng, t)
    entry = objectives.aft(distribution="logistic", sigma=0.6)
    bst = jaxboost.train(
        entry, X, {"lower": lo, "upper": hi}, n_rounds=5, max_depth=3, verbose=False
    )
    path = tmp_path / "aft.json"
    io.to_xgboost_json(bst, path)
    ref = xgb.Booster()
    ref.load_model(str(path))
    block = json.loads(ref.save_config())["learner"]["objective"]
    assert block["name"] == "survival:aft"
    assert block["aft_loss_param"]["aft_loss_distribution"] == "logistic"
    np.testing.assert_allclose(ref.predict(xgb.DMatrix(X)), bst.predict(X), rtol=2e-6)
    back = io.from_xgboost(ref)
    assert back.objective == entry
    np.testing.assert_allclose(back.predict(X), bst.predict(X), rtol=2e-6)
    model = json.loads(path.read_text())
    model["learner"]["objective"]["aft_loss_param"]["aft_loss_distribution"] = "weibull"
    with pytest.raises(ModelFormatError, match=r"aft_loss_distribution must be one of"):
        io.from_xgboost(model)


def test_the_regressor_takes_intervals_as_two_columns_and_scores_the_likelihood():
    """``JaxBoostRegressor(objective="aft")`` takes ``(N, 2)`` intervals (inf an open
    end): the model of ``jaxboost.train`` on the same rows; ``score`` is the mean
    log-likelihood (minus the eval set's loss); folds split it as any array; a dict
    gets an error that says to pass columns."""
    from jaxboost.sklearn import JaxBoostRegressor
    from sklearn.model_selection import cross_val_score

    rng = np.random.default_rng(3)  # the data and settings of the label-forms test
    X = rng.normal(size=(120, 3)).astype(np.float32)
    t = np.exp(X[:, 0] + 0.3 * rng.normal(size=120)).astype(np.float32)
    lo, hi = _intervals(rng, t)
    Y = np.stack([lo, hi], axis=1)
    est = JaxBoostRegressor(objective="aft", n_estimators=4, max_depth=2)
    est.fit(X, Y, eval_set=[(X, Y)])
    bst = jaxboost.train(objectives.aft, X, {"lower": lo, "upper": hi}, n_rounds=4, max_depth=2)
    np.testing.assert_array_equal(est.predict(X), bst.predict(X))
    nll = est.evals_result()["validation_0"]["loss"][-1]
    assert est.score(X, Y) == pytest.approx(-nll, rel=1e-6)
    scores = cross_val_score(est, X, Y, cv=2)
    assert scores.shape == (2,) and np.all(np.isfinite(scores))
    with pytest.raises(ValueError, match=r"an \(N, 2\) array with the columns \[lower, upper\]"):
        JaxBoostRegressor(objective="aft").fit(X, {"lower": lo, "upper": hi})


def test_compare_ranks_the_three_noise_laws_on_intervals():
    """``jaxboost.compare`` takes side data: the three distributions on one set of
    intervals (trained together by ``train_many``), each curve of ``"objective"`` the
    model's own mean loss after each round; a label metric gets a NaN curve and a note
    that says why."""
    rng = np.random.default_rng(3)  # the data of the label-forms test
    X = rng.normal(size=(120, 3)).astype(np.float32)
    t = np.exp(X[:, 0] + 0.3 * rng.normal(size=120)).astype(np.float32)
    lo, hi = _intervals(rng, t)
    y = {"lower": lo, "upper": hi}
    laws = [objectives.aft(distribution=d) for d in ("normal", "logistic", "extreme")]
    cmp = jaxboost.compare(laws, X, y, metrics=["objective", "rmse"], n_rounds=4, max_depth=2)
    for label, entry in zip(cmp.curves, laws):
        bst = cmp.boosters[label]
        want = [
            np.mean(_rows(entry, lo, hi, bst[:r].predict(X, output_margin=True))) for r in (1, 4)
        ]
        np.testing.assert_allclose(cmp.curves[label]["train"]["loss"][[0, 3]], want, rtol=1e-5)
        assert np.all(np.isnan(cmp.curves[label]["train"]["rmse"]))
    assert any("rmse is NaN" in n and "without a 'label' entry" in n for n in cmp.notes)
