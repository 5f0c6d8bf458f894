"""Hypergradients through boosting runs (jaxboost.tuning, jaxboost.engine.replay).

Every gradient is checked against central finite differences of the same
fixed-structure computation (float64), and against retraining where the structures
do not change; the replay itself against the trained model's predictions.
"""

import math

import jax.numpy as jnp
import numpy as np
import pytest

import jaxboost
import objectives
from jaxboost.tuning.tune import Transform, closed, transforms

N_TRAIN, N_VAL, F = 300, 100, 4
COMMON = dict(n_rounds=10, max_depth=2)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N_TRAIN + N_VAL, F)).astype(np.float32)
    signal = X[:, 0] + 0.5 * X[:, 1] ** 2
    y = (signal + rng.standard_t(3, size=len(X))).astype(np.float32)
    yb = (signal + rng.logistic(size=len(X)) > 0.5).astype(np.float32)
    ypos = np.where(rng.random(len(X)) < 0.3, 0.0, np.exp(0.5 * signal)).astype(np.float32)
    return X, {"reg": y, "bin": yb, "pos": ypos}


def split(X, y):
    return X[:N_TRAIN], y[:N_TRAIN], X[N_TRAIN:], y[N_TRAIN:]


def pseudo_huber_user(y, p, *, delta):
    """A user's loss with a traced hyperparameter (the catalogue's pseudo_huber)."""
    r = p - y
    return delta**2 * (jnp.sqrt(1.0 + (r / delta) ** 2) - 1.0)


CASES = {
    # user loss with a traced keyword; exact h; three parameters
    "user_delta": (
        pseudo_huber_user,
        "reg",
        {"delta": 1.5, "reg_lambda": 2.0, "learning_rate": 0.3},
        "rmse",
        dict(hessian="exact"),
    ),
    # non-convex catalogue loss (h clipped), L1 penalty, row sampling replayed
    "focal_gamma": (
        objectives.focal,
        "bin",
        {"gamma": 1.5, "reg_alpha": 0.3},
        "logloss",
        dict(subsample=0.7, seed=3),
    ),
    # the catalogue's Huber as train() fits it: constant h, leaves refit by damped Newton
    # steps on the true loss (replayed; the step sizes it picks are held like the splits)
    "huber_refit": (objectives.huber, "reg", {"delta": 1.0, "reg_lambda": 1.0}, "mae", {}),
    # log-link GLM, variance power, clipped leaf values
    "tweedie_power": (objectives.tweedie, "pos", {"power": 1.4, "max_delta_step": 0.4}, "rmse", {}),
}


def central_differences(result, rel=1e-4):
    out = {}
    for k, v in result.params.items():
        h = rel * max(1.0, abs(v))
        up, _ = result.at({k: v + h})
        down, _ = result.at({k: v - h})
        out[k] = (up - down) / (2 * h)
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_hypergradients_equal_finite_differences(data, case):
    loss, target, params, val, kw = CASES[case]
    X, ys = data
    r = jaxboost.hypergrad(
        loss, *split(X, ys[target]), params=params, val_loss=val, float64=True, **COMMON, **kw
    )
    fd = central_differences(r)
    assert set(r.grads) == set(params)
    for k in params:
        assert r.grads[k] != 0.0, k  # every parameter moves the validation loss
        assert r.grads[k] == pytest.approx(fd[k], rel=1e-4, abs=1e-9), k
    # the replay is the trained model: same validation margins
    assert r.max_margin_diff < 1e-5


def test_value_is_the_trained_models_validation_loss(data):
    X, ys = data
    Xt, yt, Xv, yv = split(X, ys["reg"])
    r = jaxboost.hypergrad(
        objectives.pseudo_huber,
        Xt,
        yt,
        Xv,
        yv,
        params={"delta": 1.5, "reg_lambda": 2.0},
        val_loss="mae",
        hessian="exact",
        **COMMON,
    )
    pred = r.booster.predict(Xv)
    assert r.value == pytest.approx(float(np.mean(np.abs(pred - yv))), rel=1e-5)
    assert r.booster.n_rounds == COMMON["n_rounds"]
    assert r.params == {"delta": 1.5, "reg_lambda": 2.0}


@pytest.mark.parametrize(
    "kw",
    [
        dict(num_parallel_tree=3, bootstrap=True, subsample=0.8, colsample_bynode=0.5),
        dict(categorical_features=[3], sample_weight=np.linspace(0.2, 2.0, N_TRAIN)),
    ],
    ids=["forest-bootstrap", "categorical-weighted"],
)
def test_replay_follows_forests_categories_and_weights(data, kw):
    """Bootstrap draws of each forest tree, category sets and row weights are replayed:
    the replay gives the trained model's validation margins (hypergrad raises when it
    does not) and the values of the finite differences."""
    X, ys = data
    X = X.copy()
    X[:, 3] = np.floor(np.abs(X[:, 3]) * 2)  # codes 0..6
    r = jaxboost.hypergrad(
        objectives.squared,
        *split(X, ys["reg"]),
        params={"reg_lambda": 2.0, "learning_rate": 0.3},
        float64=True,
        **COMMON,
        **kw,
    )
    assert r.max_margin_diff < 1e-5
    fd = central_differences(r)
    for k in r.params:
        assert r.grads[k] == pytest.approx(fd[k], rel=1e-4), k


def _structure(booster):
    e = booster.ensemble
    return [np.asarray(a) for a in (e.feature, e.tbin, e.is_leaf, e.default_left)]


def test_sign_agrees_with_retraining_when_structures_stay(data):
    """Retrain at theta +- eps: the structures are the same (checked), and the change of
    the trained models' validation loss has the hypergradient's sign (and about its
    size: the two differ only by float32 rounding and the intercept's second order)."""
    X, ys = data
    Xt, yt, Xv, yv = split(X, ys["reg"])
    params = {"delta": 1.5, "reg_lambda": 2.0, "learning_rate": 0.3}
    kw = dict(hessian="exact", **COMMON)
    r = jaxboost.hypergrad(pseudo_huber_user, Xt, yt, Xv, yv, params=params, val_loss="rmse", **kw)
    base = _structure(r.booster)
    for k in params:
        for eps in (0.05, 0.02, 0.01, 0.005):  # the largest step that keeps every split
            boosters = []
            for s in (1, -1):
                p = dict(params, **{k: params[k] + s * eps})
                lp = {"delta": p.pop("delta")}
                boosters.append(
                    jaxboost.train(
                        pseudo_huber_user,
                        Xt,
                        yt,
                        loss_params=lp,
                        refit=None,
                        verbose=False,
                        **p,
                        **kw,
                    )
                )
            if all(np.array_equal(a, c) for b in boosters for a, c in zip(base, _structure(b))):
                break
        else:
            pytest.fail(f"{k}: every step changed a split")
        up, down = (float(np.sqrt(np.mean((b.predict(Xv) - yv) ** 2))) for b in boosters)
        fd = (up - down) / (2 * eps)
        print(f"{k}: eps {eps}, retrained {fd:.6g}, hypergradient {r.grads[k]:.6g}")
        assert np.sign(fd) == np.sign(r.grads[k]), (k, eps, fd, r.grads[k])
        assert fd == pytest.approx(r.grads[k], rel=0.05), (k, eps)


# --- refusals (before any training) --------------------------------------------------------
def test_quantile_refit_refused_with_the_reason():
    X = np.zeros((4, 2), np.float32)
    with pytest.raises(ValueError, match="exact quantiles.*refit=None"):
        jaxboost.hypergrad(
            objectives.quantile,
            X,
            np.zeros(4),
            X,
            np.zeros(4),
            params={"alpha": 0.5},
            val_loss="mae",
        )


@pytest.mark.parametrize(
    "params, kw, error, match",
    [
        ({"max_depth": 3.0}, {}, ValueError, "structure"),
        ({"gamma": 1.0}, {}, ValueError, "structure"),  # the trees' gamma: pseudo_huber has none
        ({"bogus": 1.0}, {}, TypeError, "unknown parameter 'bogus'"),
        ({"delta": 1.0}, {}, TypeError, "val_loss"),
        ({"reg_lambda": 1.0}, {"val_loss": "auc"}, ValueError, "no useful gradient"),
        ({"reg_lambda": 1.0}, {"init_model": None}, ValueError, "init_model"),
        ({"reg_lambda": 1.0}, {"reg_lambda": 2.0}, TypeError, "both"),
        ({"reg_lambda": float("nan")}, {}, ValueError, "finite"),
        ({}, {}, TypeError, "non-empty"),
        ({"reg_lambda": 1.0}, {"learning_rate": lambda r: 0.1}, TypeError, "schedule"),
    ],
)
def test_refusals(params, kw, error, match):
    X = np.zeros((4, 2), np.float32)
    y = np.zeros(4, np.float32)
    with pytest.raises(error, match=match):
        jaxboost.hypergrad(objectives.pseudo_huber, X, y, X, y, params=params, **kw)


def test_validation_set_checked_before_training():
    X = np.zeros((4, 2), np.float32)
    y = np.zeros(4, np.float32)
    with pytest.raises(jaxboost.DataError, match="validation set.*3 labels"):
        jaxboost.hypergrad(objectives.squared, X, y, X, y[:3], params={"reg_lambda": 1.0})
    with pytest.raises(jaxboost.DataError, match="X_val has 3 features, X has 2"):
        jaxboost.tune(objectives.squared, X, y, np.zeros((4, 3)), y, params={"reg_lambda": 1.0})
    with pytest.raises(jaxboost.DataError, match="validation set.*NaN"):
        jaxboost.hypergrad(
            objectives.squared, X, y, X, np.full(4, np.nan), params={"reg_lambda": 1.0}
        )


@pytest.mark.parametrize("objective", [objectives.softmax, objectives.cox])
def test_vector_and_group_losses_refused(objective):
    X = np.zeros((4, 2), np.float32)
    with pytest.raises(ValueError, match="single-output|group loss"):
        jaxboost.hypergrad(objective, X, np.zeros(4), X, np.zeros(4), params={"reg_lambda": 1.0})


def test_side_data_refused_before_training():
    X = np.zeros((4, 2), np.float32)
    y = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="one label per row"):
        jaxboost.hypergrad(
            lambda yy, p: (yy[0] - p) ** 2, X, np.zeros((4, 2)), X, y, params={"reg_lambda": 1.0}
        )


def test_sparse_input_replays_as_its_dense_twin(data):
    """A CSR X (absent = missing) gives the hypergradients of its dense twin with NaN in
    the absent places (the two train the same model)."""
    import scipy.sparse as sp

    X, ys = data
    Xs = np.where(np.abs(X) < 0.5, 0.0, X).astype(np.float32)
    twin = np.where(Xs == 0.0, np.nan, Xs).astype(np.float32)
    kw = dict(params={"reg_lambda": 2.0}, val_loss="rmse", **COMMON)
    a = jaxboost.hypergrad(objectives.squared, *split(sp.csr_matrix(Xs), ys["reg"]), **kw)
    b = jaxboost.hypergrad(objectives.squared, *split(twin, ys["reg"]), **kw)
    assert a.value == b.value and a.grads == b.grads
    assert a.max_margin_diff < 1e-5


def test_tune_refusals():
    X = np.zeros((4, 2), np.float32)
    y = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="strictly inside"):
        jaxboost.tune(objectives.squared, X, y, X, y, params={"reg_alpha": 0.0})
    with pytest.raises(ValueError, match="strictly inside"):
        jaxboost.tune(objectives.quantile, X, y, X, y, params={"alpha": 1.0}, val_loss="mae")
    with pytest.raises(TypeError, match="steps"):
        jaxboost.tune(objectives.squared, X, y, X, y, params={"reg_lambda": 1.0}, steps=0)
    with pytest.raises(TypeError, match="not in params"):
        jaxboost.tune(
            objectives.squared, X, y, X, y, params={"reg_lambda": 1.0}, bounds={"delta": (0, 1)}
        )


@pytest.mark.parametrize(
    "lo, hi, x",
    [(0.0, 1.0, 0.3), (1.0, 2.0, 1.9), (0.0, None, 4.0), (None, 5.0, -2.0), (None, None, -0.7)],
)
def test_transforms_invert_and_differentiate(lo, hi, x):
    t = Transform(lo, hi)
    u = t.inverse(x)
    assert t.value(u) == pytest.approx(x, rel=1e-12)
    h = 1e-6
    assert t.slope(u) == pytest.approx((t.value(u + h) - t.value(u - h)) / (2 * h), rel=1e-6)
    for z in (-30.0, 30.0):  # far out on the unconstrained scale: still inside the bounds
        v = t.value(z)
        assert (lo is None or v >= lo) and (hi is None or v <= hi)


def test_closed_bounds_project_and_start_on_the_bound():
    t = closed(0.0, 5.0)
    assert [t.project(u) for u in (-0.4, 2.0, 7.0)] == [0.0, 2.0, 5.0]
    assert t.value(-0.4) == 0.0 and t.slope(0.0) == 1.0 and t.inverse(2.5) == 2.5
    tf = transforms(objectives.focal, {"gamma": 0.0}, None)  # gamma = 0 may start there
    assert tf["gamma"].closed and tf["gamma"].value(-1.0) == 0.0
    with pytest.raises(ValueError, match="within its bounds"):
        transforms(objectives.focal, {"gamma": -0.5}, None)
    with pytest.raises(ValueError, match="closed"):  # the message offers closed bounds
        transforms(objectives.squared, {"reg_lambda": 0.0}, None)


def test_default_bounds_of_catalogue_hyperparameters():
    tf = transforms(objectives.focal, {"gamma": 2.0, "reg_lambda": 1.0}, None)
    assert (tf["gamma"].lo, tf["gamma"].hi, tf["gamma"].closed) == (0.0, None, True)
    assert (tf["reg_lambda"].lo, tf["reg_lambda"].closed) == (0.0, False)
    tf = transforms(objectives.tweedie, {"power": 1.5}, {"power": (1.1, 1.9)})
    assert (tf["power"].lo, tf["power"].hi) == (1.1, 1.9)


def test_tune_improves_on_a_bad_start_and_reports_a_trained_value(data):
    """From reg_lambda = 200 (leaves shrunk to almost nothing), tuning lowers the
    validation loss; the reported best is a trained model's validation loss."""
    X, ys = data
    Xt, yt, Xv, yv = split(X, ys["reg"])
    res = jaxboost.tune(
        objectives.squared,
        Xt,
        yt,
        Xv,
        yv,
        params={"reg_lambda": 200.0},
        val_loss="rmse",
        steps=6,
        regrow_every=3,
        **COMMON,
    )
    assert res.n_trainings == 3 and len(res.history) == 6
    assert [h["trained"] for h in res.history] == [True, False, False, True, False, False]
    start = res.history[0]["value"]
    assert res.value < start
    assert res.params["reg_lambda"] < 200.0
    rmse = float(np.sqrt(np.mean((res.booster.predict(Xv) - yv) ** 2)))
    assert res.value == pytest.approx(rmse, rel=1e-5)
    assert math.isfinite(res.history[-1]["seconds"])
