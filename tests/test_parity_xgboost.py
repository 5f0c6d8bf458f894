"""Training margins equal XGBoost 3.2 ``tree_method="exact"`` (the version pinned in the
test extra) on data whose features have fewer distinct values than ``max_bin``, with
NaNs, over a grid of regularisation parameters. DESIGN.md lists the rules that give
this parity."""

import json

import numpy as np
import pytest
from conftest import parity_data
from xgb_readout import xgb_base_score

import jaxboost
import objectives

xgb = pytest.importorskip("xgboost")

N_ROUNDS = 20
LR = 0.3


@pytest.fixture(scope="module")
def data():
    return parity_data()


GRID = [
    dict(
        max_depth=3,
        reg_lambda=1.0,
        reg_alpha=0.0,
        gamma=0.0,
        min_child_weight=1.0,
        max_delta_step=0.0,
    ),
    dict(
        max_depth=4,
        reg_lambda=0.0,
        reg_alpha=0.5,
        gamma=0.3,
        min_child_weight=0.0,
        max_delta_step=0.0,
    ),
    dict(
        max_depth=2,
        reg_lambda=2.0,
        reg_alpha=0.0,
        gamma=1.0,
        min_child_weight=3.0,
        max_delta_step=0.7,
    ),
    dict(
        max_depth=4,
        reg_lambda=0.5,
        reg_alpha=0.2,
        gamma=0.0,
        min_child_weight=0.5,
        max_delta_step=0.3,
    ),
    dict(
        max_depth=6,
        reg_lambda=1.0,
        reg_alpha=0.0,
        gamma=2.0,
        min_child_weight=1.0,
        max_delta_step=0.0,
    ),
    dict(
        max_depth=3,
        reg_lambda=5.0,
        reg_alpha=1.0,
        gamma=0.5,
        min_child_weight=5.0,
        max_delta_step=0.0,
    ),
]


def xgb_margins(X, y, objective, base_score, p):
    params = dict(
        objective=objective,
        tree_method="exact",
        eta=LR,
        base_score=base_score,
        nthread=1,
        max_depth=p["max_depth"],
        reg_lambda=p["reg_lambda"],
        reg_alpha=p["reg_alpha"],
        gamma=p["gamma"],
        min_child_weight=p["min_child_weight"],
        max_delta_step=p["max_delta_step"],
    )
    d = xgb.DMatrix(X, label=y, missing=np.nan)
    return xgb.train(params, d, N_ROUNDS).predict(d, output_margin=True)


def test_xgboost_version_is_the_one_the_rules_target():
    assert xgb.__version__.startswith("3.2"), xgb.__version__


def check_logistic(data, p):
    X, yb, _ = data
    expected = xgb_margins(X, yb, "binary:logistic", 0.5, p)  # base_score 0.5: margin 0
    bst = jaxboost.train(
        objectives.logistic, X, yb, n_rounds=N_ROUNDS, learning_rate=LR, base_margin=0.0, **p
    )
    np.testing.assert_allclose(bst.predict(X, output_margin=True), expected, atol=1e-5, rtol=0)


def check_squared(data, p):
    X, _, yr = data
    expected = xgb_margins(X, yr, "reg:squarederror", 0.25, p)
    # A plain JAX loss, differentiated by autodiff: 0.5 (y - p)^2 has XGBoost's g and h.
    bst = jaxboost.train(
        lambda y, f: 0.5 * (y - f) ** 2,
        X,
        yr,
        n_rounds=N_ROUNDS,
        learning_rate=LR,
        base_margin=0.25,
        **p,
    )
    np.testing.assert_allclose(bst.predict(X, output_margin=True), expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize("p", GRID, ids=lambda p: "-".join(f"{v:g}" for v in p.values()))
def test_logistic_margins_match_xgboost_exact(data, p):
    check_logistic(data, p)


@pytest.mark.parametrize("p", GRID, ids=lambda p: "-".join(f"{v:g}" for v in p.values()))
def test_squared_margins_match_xgboost_exact(data, p):
    check_squared(data, p)


# The pure-JAX histogram (the GPU/TPU default) on two representative cases, not the whole
# grid (suite time): the clipped score with alpha (logistic), and lambda = 0 with alpha,
# gamma and min_child_weight = 0 (squared).
@pytest.mark.parametrize(
    "check,p",
    [(check_logistic, GRID[3]), (check_squared, GRID[1])],
    ids=["logistic-clipped", "squared-lambda0"],
)
def test_margins_match_xgboost_exact_on_the_pure_jax_histogram(data, check, p, pure_jax_histogram):
    check(data, p)
    assert pure_jax_histogram, "train() did not ask which histogram to use"


@pytest.mark.parametrize(
    "check,p",
    [(check_logistic, GRID[3]), (check_squared, GRID[1])],
    ids=["logistic-clipped", "squared-lambda0"],
)
def test_margins_match_xgboost_exact_in_the_gpus_formulation(
    data, check, p, pure_jax_histogram, monkeypatch
):
    """The GPU's program, run on the CPU (CI has no GPU): the pure-JAX tree builder with
    the int64 fixed-point histogram (``engine.histogram.build_histogram_fixed``) and
    the sibling of each split by subtraction (``training.program.use_subtraction``).
    On an H200 these two cases are what ``benchmarks/gpu_parity_probe.py`` looks into
    (logistic-clipped differed there): here they must hold, so that what differs on a
    GPU is the device's arithmetic, not the formulation."""
    import jax

    from jaxboost.engine import histogram

    used = []
    fixed = histogram.METHODS["fixed"]

    def counted(*args):
        used.append(True)
        return fixed(*args)

    from jaxboost.training import program

    subtract = []
    real = program.use_subtraction
    monkeypatch.setattr(program, "use_subtraction", lambda n: subtract.append(real(n)) or real(n))
    monkeypatch.setitem(histogram.METHODS, "fixed", counted)
    monkeypatch.setenv(histogram.HISTOGRAM_ENV, "fixed")
    monkeypatch.setenv("JAXBOOST_SUBTRACT", "1")
    jax.clear_caches()  # the method is chosen when a program is traced
    check(data, p)
    assert used, "the fixed-point histogram was not traced"
    assert subtract and all(subtract), "the tree builder did not subtract siblings"


def test_tree_structure_matches_xgboost_first_tree(data):
    """Beyond margins: the first tree's split features and gains agree node by node."""
    X, yb, _ = data
    p = GRID[0]
    params = dict(
        objective="binary:logistic",
        tree_method="exact",
        eta=LR,
        base_score=0.5,
        nthread=1,
        max_depth=p["max_depth"],
    )
    d = xgb.DMatrix(X, label=yb, missing=np.nan)
    dump = json.loads(xgb.train(params, d, 1).get_dump(with_stats=True, dump_format="json")[0])
    theirs = []

    def walk(node):
        if "leaf" not in node:
            theirs.append((int(node["split"][1:]), node["gain"]))
            for child in node["children"]:
                walk(child)

    walk(dump)
    bst = jaxboost.train(
        objectives.logistic, X, yb, n_rounds=1, learning_rate=LR, base_margin=0.0, **p
    )
    ens = bst.ensemble
    ours = [
        (int(ens.feature[0, i]), float(ens.gain[0, i]))
        for i in range(ens.feature.shape[1])
        if not bool(ens.is_leaf[0, i])
    ]
    assert sorted(f for f, _ in ours) == sorted(f for f, _ in theirs)
    np.testing.assert_allclose(sorted(g for _, g in ours), sorted(g for _, g in theirs), rtol=1e-5)


QUANTILE_CASES = [
    (objectives.absolute, "reg:absoluteerror", 0.5),
    (objectives.quantile(alpha=0.3), "reg:quantileerror", 0.3),
    (objectives.quantile(alpha=0.9), "reg:quantileerror", 0.9),
]


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("entry, name, alpha", QUANTILE_CASES, ids=["absolute", "q0.3", "q0.9"])
def test_quantile_and_absolute_error_margins_match_xgboost(data, entry, name, alpha, weighted):
    """Absolute error and pinball losses: the leaves are refit to their rows' quantile
    and training starts from the labels' quantile, by XGBoost's rules (interpolated
    without sample weights, the weighted step rule with them), so the margins equal
    XGBoost's from the default start on. XGBoost's ``hist`` method: its ``exact``
    method does not refit leaves (on this data ``hist`` has the exact method's cuts).
    10 rounds: the gradients are signs, so equal gains are common, and ``hist`` breaks
    ties unlike ``exact`` (whose order jaxboost follows): in round 19 of absolute error
    the two isolate one row at either end of a feature, with the same gain."""
    rounds = 10
    X, _, yr = data
    w = np.random.default_rng(1).uniform(0.5, 2.0, len(yr)).astype(np.float32) if weighted else None
    params = dict(objective=name, tree_method="hist", eta=LR, max_depth=3, nthread=1)
    if name == "reg:quantileerror":
        params["quantile_alpha"] = alpha
    d = xgb.DMatrix(X, label=yr, weight=w, missing=np.nan)
    ref = xgb.train(params, d, rounds)
    bst = jaxboost.train(
        entry, X, yr, n_rounds=rounds, learning_rate=LR, max_depth=3, sample_weight=w
    )
    base = xgb_base_score(ref)
    assert np.float32(bst.base_margin) == np.float32(base)
    np.testing.assert_allclose(
        bst.predict(X, output_margin=True), ref.predict(d, output_margin=True), atol=1e-5, rtol=0
    )


def test_quantile_gradient_at_a_zero_residual_is_xgboosts():
    """At f = y XGBoost's ``reg:quantileerror`` takes g = (1 - alpha) w (its
    ``pred - y >= 0`` branch). Rows sit there: the weighted step rule starts training at
    one of the labels. With the tie split in half (g = 0.5 - alpha, the midpoint
    subgradient jaxboost once took) the root's gain here was 113.65 against XGBoost's
    113.08 and a depth-3 split went to another feature in round 1."""
    import jax

    for alpha in (0.1, 0.8):
        g = jax.grad(objectives.robust.quantile_loss, argnums=1)(1.5, 1.5, alpha=alpha)
        assert float(g) == pytest.approx(1.0 - alpha, abs=1e-7)
    rng = np.random.default_rng(0)
    X = (np.round(rng.normal(size=(3000, 4)) * 8) / 8).astype(np.float32)  # < 256 values
    y = (X[:, 0] + rng.standard_t(3, size=3000)).astype(np.float32)
    w = rng.uniform(0.2, 3.0, size=3000).astype(np.float32)
    d = xgb.DMatrix(X, y, weight=w)
    params = dict(objective="reg:quantileerror", quantile_alpha=0.8, tree_method="hist")
    ref = xgb.train(dict(params, eta=LR, max_depth=3, nthread=1), d, 3)
    assert np.sum(y == np.float32(xgb_base_score(ref))) >= 1  # a row starts at its label
    bst = jaxboost.train(
        objectives.quantile(alpha=0.8),
        X,
        y,
        sample_weight=w,
        n_rounds=3,
        max_depth=3,
        learning_rate=LR,
    )
    np.testing.assert_allclose(
        bst.predict(X, output_margin=True), ref.predict(d, output_margin=True), atol=1e-5, rtol=0
    )


@pytest.mark.xfail(
    strict=True,
    reason="known divergence, not yet fixed: jaxboost's cuts lie midway between "
    "neighbouring values (XGBoost hist's on the upper value), and among thresholds of "
    "equal gain (a node's empty bins) jaxboost keeps the highest and sends missing values "
    "left for features that had none in training (XGBoost's exact scan: descending, "
    "missing left), XGBoost's hist the lowest with missing right. Training rows never "
    "fall in such gaps, so the margins on them agree; new values there, and NaN in such a "
    "feature, can go the other way (docs/limits.md)",
)
def test_held_out_predictions_match_xgboost_hist_where_the_cuts_agree():
    rng = np.random.default_rng(0)
    X = (np.round(rng.normal(size=(2000, 4)) * 8) / 8).astype(np.float32)  # < 256 values
    y = (X[:, 0] + X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=2000)).astype(np.float32)
    params = dict(tree_method="hist", max_depth=4, eta=0.3, nthread=1, min_child_weight=0.0)
    xb = xgb.train(params, xgb.DMatrix(X, y), 10)
    ours = jaxboost.train(
        "squared",
        X,
        y,
        n_rounds=10,
        max_depth=4,
        learning_rate=0.3,
        min_child_weight=0.0,
        base_margin=xgb_base_score(xb),
    )
    # every cut is a distinct value on both sides, so the training margins agree ...
    np.testing.assert_allclose(ours.predict(X), xb.predict(xgb.DMatrix(X)), atol=1e-5, rtol=0)
    # ... and held-out values between them (here up to 1.9 apart) should too
    Xt = (rng.normal(size=(2000, 4)) * 1.5).astype(np.float32)
    np.testing.assert_allclose(ours.predict(Xt), xb.predict(xgb.DMatrix(Xt)), atol=1e-5, rtol=0)


def test_xgboost_learning_rate_scheduler_is_a_schedule_shifted_by_one_round():
    """docs/interop.md: XGBoost's ``LearningRateScheduler(f)`` sets the rate after each
    round, so its round 0 runs at ``eta`` (0.3) and round k at ``f(k - 1)``; jaxboost's
    ``learning_rate=f`` uses ``f(k)`` in round k. The shifted schedule gives XGBoost's
    model (200 rows: each value its own bin), the plain one does not."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4)).astype(np.float32)
    y = (X[:, 0] + 0.3 * rng.normal(size=200)).astype(np.float32)
    sched = lambda k: 0.5 * 0.5**k  # noqa: E731
    d = xgb.DMatrix(X, label=y)
    params = dict(tree_method="hist", max_depth=2, min_child_weight=0.0, nthread=1)
    xb = xgb.train(params, d, 3, callbacks=[xgb.callback.LearningRateScheduler(sched)])
    want = xb.predict(d, output_margin=True)
    kw = dict(n_rounds=3, max_depth=2, min_child_weight=0.0, verbose=False)
    shifted = jaxboost.train(
        "squared", X, y, learning_rate=lambda k: 0.3 if k == 0 else sched(k - 1), **kw
    )
    np.testing.assert_allclose(shifted.predict(X, output_margin=True), want, rtol=0, atol=1e-6)
    plain = jaxboost.train("squared", X, y, learning_rate=sched, **kw)
    assert np.abs(plain.predict(X, output_margin=True) - want).max() > 0.1
