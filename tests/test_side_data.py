"""Per-row side data (issue 15 item 3): margins per row (``base_margin`` as XGBoost's
offsets) and targets that carry several values per row for a loss of your own (a dict
or an ``(N, L)`` array).

The data are the XGBoost parity tests' (``conftest.binnable_features``: jaxboost's and
XGBoost's bins coincide) with Poisson counts over exposures, trained with the parity
tests' first parameter set, so most tests share one round program.
"""

import json

import jax.numpy as jnp
import numpy as np
import pytest
from conftest import binnable_features

import jaxboost
from jaxboost.errors import DataError, DataWarning

N_ROUNDS = 20
LR = 0.3
P = dict(
    max_depth=3, reg_lambda=1.0, reg_alpha=0.0, gamma=0.0, min_child_weight=1.0, max_delta_step=0.0
)  # tests/test_parity_xgboost.py GRID[0]
KW = dict(n_rounds=N_ROUNDS, learning_rate=LR, verbose=False, **P)


@pytest.fixture(scope="module")
def data():
    """400 x 5 binnable features; counts ``c`` over exposures ``t`` with a log rate from
    three features; offsets ``o = log t``."""
    rng = np.random.default_rng(0)
    X = binnable_features(rng)
    N = X.shape[0]
    t = rng.uniform(0.2, 3.0, size=N).astype(np.float32)
    log_rate = 0.12 * np.nan_to_num(X[:, 0] - 6) - 0.5 * X[:, 2] + 0.2 * X[:, 4]
    c = rng.poisson(t * np.exp(log_rate)).astype(np.float32)
    return X, c, t, np.log(t).astype(np.float32)


@pytest.fixture(scope="module")
def offset_model(data):
    """``objectives.poisson`` trained with per-row offsets log(exposure)."""
    X, c, _, o = data
    return jaxboost.train("poisson", X, c, base_margin=o, **KW)


def poisson_exposure(y, f):
    """Poisson NLL of counts ``y["label"]`` over exposure ``y["exposure"]`` at log rate f."""
    return y["exposure"] * jnp.exp(f) - y["label"] * f


# --- XGBoost parity ----------------------------------------------------------------------
def test_poisson_with_exposure_equals_xgboost_count_poisson_with_base_margin(data, offset_model):
    xgb = pytest.importorskip("xgboost")
    X, c, t, o = data
    params = dict(objective="count:poisson", tree_method="exact", eta=LR, nthread=1, **P)
    d = xgb.DMatrix(X, label=c, base_margin=o, missing=np.nan)
    ref = xgb.train(params, d, N_ROUNDS)
    expected = ref.predict(d, output_margin=True)
    got = offset_model.predict(X, output_margin=True, base_margin=o)
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)
    # The same model from side data in the loss: exposure in y, no offset, intercept 0.
    side = jaxboost.train(poisson_exposure, X, {"label": c, "exposure": t}, base_margin=0.0, **KW)
    np.testing.assert_allclose(side.predict(X) + o, expected, atol=1e-5, rtol=0)

    # XGBoost 3.2: with base_margin the row's margin starts at it and base_score is not
    # added; base_score is still estimated from the labels alone and stored, and a
    # prediction without base_margin adds log(base_score) (count:poisson's log link).
    base_score = float(
        json.loads(ref.save_config())["learner"]["learner_model_param"]["base_score"].strip("[]")
    )
    plain = ref.predict(xgb.DMatrix(X, missing=np.nan), output_margin=True)
    np.testing.assert_allclose(plain - (expected - o), np.log(base_score), atol=1e-5)
    # jaxboost stores 0 instead: without offsets a row's offset is 0 (exposure 1).
    assert offset_model.base_margin == 0.0
    with pytest.warns(DataWarning, match="margins per row"):
        no_offsets = offset_model.predict(X, output_margin=True)
    np.testing.assert_allclose(no_offsets, expected - o, atol=1e-5)


# --- round trips --------------------------------------------------------------------------
def test_offsets_round_trip_through_predict_staged_shap_grad_hess_and_files(
    data, offset_model, tmp_path
):
    X, c, _, o = data
    bst = offset_model
    margin = bst.predict(X, output_margin=True, base_margin=o)
    np.testing.assert_allclose(bst.predict(X, base_margin=o), np.exp(margin), rtol=1e-6)
    # staged: row r is the model of r + 1 rounds, offsets included; the last is predict
    staged = bst.staged_predict(X, output_margin=True, base_margin=o)
    assert staged.shape == (N_ROUNDS, X.shape[0])
    np.testing.assert_array_equal(staged[-1], margin)
    np.testing.assert_array_equal(staged[4], bst[:5].predict(X, output_margin=True, base_margin=o))
    # SHAP: the offsets sit in the bias column and every row sums to its margin
    shap = bst.predict(X, pred_contribs=True, base_margin=o)
    np.testing.assert_allclose(shap.sum(axis=1), margin, atol=2e-5)
    with pytest.warns(DataWarning, match="margins per row"):
        plain = bst.predict(X, pred_contribs=True)
    np.testing.assert_allclose(shap[:, -1] - plain[:, -1], o, atol=1e-6)
    np.testing.assert_array_equal(shap[:, :-1], plain[:, :-1])
    # grad_hess at the training margins: Poisson's g = e^m - c, h = e^m
    g, h, m = bst.grad_hess(X, c, iteration=7, base_margin=o)
    np.testing.assert_array_equal(m, staged[6])
    np.testing.assert_allclose(g, np.exp(m) - c, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(h, np.exp(m), rtol=1e-5)
    # the file stores no row's offset: loaded, the model predicts the same with them
    path = tmp_path / "offsets.json"
    bst.save(path)
    assert json.loads(path.read_text())["base_margin"] == 0.0
    loaded = jaxboost.load(path)
    np.testing.assert_array_equal(loaded.predict(X, output_margin=True, base_margin=o), margin)
    assert loaded.base_margin == 0.0


def test_offsets_of_a_k_output_model_round_trip(interop_data):
    """(N, K) offsets: softmax (the interop tests' data and parameters) starts at them and
    predict, staged_predict, SHAP and grad_hess take them back."""
    X, labels = interop_data
    y = labels["softmax"]
    off = np.random.default_rng(5).normal(size=(X.shape[0], 3)).astype(np.float32)
    bst = jaxboost.train("softmax", X, y, base_margin=off, n_rounds=6, max_depth=3, verbose=False)
    assert np.array_equal(bst.base_margin, np.zeros(3))
    margin = bst.predict(X, output_margin=True, base_margin=off)
    np.testing.assert_array_equal(bst.grad_hess(X, y, iteration=0, base_margin=off).margin, off)
    np.testing.assert_array_equal(bst.staged_predict(X, True, base_margin=off)[-1], margin)
    shap = bst.predict(X, pred_contribs=True, base_margin=off)
    assert shap.shape == (X.shape[0], 3, X.shape[1] + 1)
    np.testing.assert_allclose(shap.sum(axis=-1), margin, atol=2e-5)
    np.testing.assert_allclose(bst.predict(X, base_margin=off).sum(axis=1), 1.0, atol=1e-5)


def test_continued_training_from_offsets_equals_one_run(data, offset_model):
    X, c, _, o = data
    half = dict(KW, n_rounds=N_ROUNDS // 2)
    first = jaxboost.train("poisson", X, c, base_margin=o, **half)
    both = jaxboost.train("poisson", X, c, base_margin=o, init_model=first, **half)
    np.testing.assert_array_equal(
        both.predict(X, output_margin=True, base_margin=o),
        offset_model.predict(X, output_margin=True, base_margin=o),
    )
    with pytest.raises(ValueError, match="base_margin cannot be given with init_model"):
        jaxboost.train("poisson", X, c, base_margin=0.5, init_model=first, **half)


def test_offsets_compile_no_new_round_program(data):
    """The round program carries the margins as state: offsets only change where they
    start, so training with them reuses the intercept model's compiled round."""
    from test_compiles import rounds_compiled

    X, c, _, o = data
    kw = dict(KW, n_rounds=10)
    intercept = jaxboost.train("poisson", X, c, base_margin=0.0, **kw)  # warm-up
    new_rounds, _ = rounds_compiled(
        lambda: jaxboost.train("poisson", X, c, base_margin=o + 0.25, **kw)
    )
    assert new_rounds == 0
    offset = jaxboost.train("poisson", X, c, base_margin=o, **kw)
    assert not np.allclose(
        offset.predict(X, output_margin=True, base_margin=np.zeros(len(X))),
        intercept.predict(X, output_margin=True),
    )


def test_eval_sets_take_their_own_offsets(data, offset_model):
    X, c, t, o = data
    sets = {"train": (X, c), "plain": (X, c)}
    # a set without offsets on a model trained with them is refused (issue 29 gap 4) ...
    with pytest.raises(DataError, match="'plain'.*no eval_base_margin"):
        jaxboost.train(
            "poisson", X, c, base_margin=o, eval_set=sets, eval_base_margin={"train": o}, **KW
        )
    # ... and scored at offset 0 when given zeros on purpose
    bst = jaxboost.train(
        "poisson",
        X,
        c,
        base_margin=o,
        eval_set=sets,
        eval_base_margin={"train": o, "plain": np.zeros_like(o)},
        **KW,
    )
    np.testing.assert_array_equal(
        bst.predict(X, base_margin=o), offset_model.predict(X, base_margin=o)
    )
    for name, off in (("train", o), ("plain", np.zeros_like(o))):
        mu = np.float64(bst.predict(X, base_margin=off))
        nll = np.mean(mu - c * np.log(mu))  # poisson_nll up to a term free of mu
        from scipy.special import gammaln

        nll += np.mean(gammaln(c + 1.0))
        assert bst.history[name]["poisson_nll"][-1] == pytest.approx(nll, rel=1e-5)


def test_sklearn_estimator_takes_base_margin(data, offset_model):
    from jaxboost.sklearn import JaxBoostRegressor

    X, c, _, o = data
    reg = JaxBoostRegressor(objective="poisson", n_estimators=N_ROUNDS, learning_rate=LR, **P).fit(
        X, c, base_margin=o, eval_set=[(X, c)], base_margin_eval_set=[o]
    )
    np.testing.assert_array_equal(
        reg.predict(X, base_margin=o), offset_model.predict(X, base_margin=o)
    )
    assert reg.evals_result()["validation_0"]["poisson_nll"][-1] == pytest.approx(
        float(jaxboost.metrics.poisson_nll(c, offset_model.predict(X, base_margin=o))), rel=1e-5
    )
    with pytest.raises(TypeError, match="one margin per row"):
        JaxBoostRegressor(objective="poisson").fit(X, c, base_margin=0.5)


# --- targets with side data ---------------------------------------------------------------
def binomial(y, f):
    """Binomial NLL of ``k`` successes in ``n`` trials at logit f (one row: y = (k, n))."""
    k, n = y[0], y[1]
    return n * jnp.logaddexp(0.0, f) - k * f


def test_dict_and_matrix_targets_equal_the_loss_with_the_values_captured(data):
    """Side data reaches the loss row by row: a dict, an (N, 2) array and a loss that
    captures a constant number of trials give one model (the same trees; margins equal
    up to float32 rounding, as XLA may fold the captured constant)."""
    X, c, _, _ = data
    n = 6.0
    k = np.minimum(c, n).astype(np.float32)

    def captured(y, f):
        return n * jnp.logaddexp(0.0, f) - y * f

    def from_dict(y, f):
        return y["trials"] * jnp.logaddexp(0.0, f) - y["label"] * f

    kw = dict(KW, n_rounds=10)
    ref = jaxboost.train(captured, X, k, **kw)
    as_dict = jaxboost.train(from_dict, X, {"label": k, "trials": np.full_like(k, n)}, **kw)
    as_matrix = jaxboost.train(binomial, X, np.stack([k, np.full_like(k, n)], 1), **kw)
    for bst in (as_dict, as_matrix):
        np.testing.assert_array_equal(bst.ensemble.feature, ref.ensemble.feature)
        np.testing.assert_array_equal(bst.ensemble.threshold, ref.ensemble.threshold)
        np.testing.assert_allclose(bst.predict(X), ref.predict(X), rtol=0, atol=1e-5)
    np.testing.assert_array_equal(as_dict.predict(X), as_matrix.predict(X))
    # the intercept is fitted on the side data too: the log-odds of sum k / sum n
    assert as_matrix.base_margin == pytest.approx(
        np.log(k.sum() / (n * k.size - k.sum())), abs=1e-4
    )


def test_varying_side_data_dict_matrix_and_dataframe_give_one_model(data):
    pd = pytest.importorskip("pandas")
    X, c, t, _ = data

    def from_matrix(y, f):
        return y[1] * jnp.exp(f) - y[0] * f

    kw = dict(KW, n_rounds=10)
    a = jaxboost.train(poisson_exposure, X, {"label": c, "exposure": t}, **kw)
    b = jaxboost.train(from_matrix, X, np.stack([c, t], 1), **kw)
    frame = jaxboost.train(poisson_exposure, X, pd.DataFrame({"label": c, "exposure": t}), **kw)
    np.testing.assert_allclose(b.predict(X), a.predict(X), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(frame.predict(X), a.predict(X))
    g, h, m = a.grad_hess(X, {"label": c, "exposure": t})
    np.testing.assert_allclose(g, t * np.exp(m) - c, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(h, t * np.exp(m), rtol=1e-5)


def test_metrics_read_the_label_or_the_whole_targets(data):
    X, c, t, _ = data
    y = {"label": c, "exposure": t}

    def deviance(y, pred):  # a metric of one's own: receives the dict
        mu = y["exposure"] * jnp.exp(pred)
        return 2.0 * jnp.mean(
            jnp.where(
                y["label"] > 0,
                y["label"] * jnp.log(jnp.where(y["label"] > 0, y["label"], 1.0) / mu),
                0.0,
            )
            - (y["label"] - mu)
        )

    def np_deviance(y, pred):  # NumPy on the host: receives the dict too, copied
        mu = y["exposure"] * np.exp(np.float64(pred))
        lab = np.float64(y["label"])
        return 2.0 * np.mean(
            np.where(lab > 0, lab * np.log(np.where(lab > 0, lab, 1.0) / mu), 0.0) - (lab - mu)
        )

    host_dev = jaxboost.metrics.host(np_deviance, on="margin", name="host_deviance")
    bst = jaxboost.train(
        poisson_exposure,
        X,
        y,
        eval_set=[(X, y)],
        eval_metric=["objective", "rmse", deviance, host_dev],
        **dict(KW, n_rounds=10),
    )
    h = bst.history["validation_0"]
    np.testing.assert_allclose(h["host_deviance"], h["deviance"], rtol=1e-5)
    m = np.float64(bst.predict(X))
    mu = t * np.exp(m)
    assert h["rmse"][-1] == pytest.approx(np.sqrt(np.mean((m - c) ** 2)), rel=1e-5)
    assert h["loss"][-1] == pytest.approx(np.mean(mu - c * m), rel=1e-5)
    dev = 2 * np.mean(np.where(c > 0, c * np.log(np.where(c > 0, c, 1) / mu), 0) - (c - mu))
    assert h["deviance"][-1] == pytest.approx(dev, rel=1e-5)

    # an (N, 2) array, or a dict without "label", names no label: built-ins refuse it
    def from_matrix(y, f):
        return y[1] * jnp.exp(f) - y[0] * f

    def from_count(y, f):
        return y["exposure"] * jnp.exp(f) - y["count"] * f

    with pytest.raises(ValueError, match="does not say which part is the label"):
        jaxboost.train(
            from_matrix,
            X,
            np.stack([c, t], 1),
            eval_set=[(X, np.stack([c, t], 1))],
            eval_metric="rmse",
            **KW,
        )
    with pytest.raises(ValueError, match="without a 'label' entry"):
        jaxboost.train(
            from_count,
            X,
            {"count": c, "exposure": t},
            eval_set=[(X, {"count": c, "exposure": t})],
            eval_metric="auc",
            **KW,
        )


def test_train_many_and_a_mesh_take_side_data_and_offsets(data):
    X, c, t, o = data
    y = {"label": c, "exposure": t}

    def poisson_label(y, f):  # exposure as an offset instead
        return jnp.exp(f) - y["label"] * f

    kw = dict(KW, n_rounds=10)
    one = jaxboost.train(poisson_exposure, X, y, **kw)
    off = jaxboost.train(poisson_label, X, y, base_margin=o, **kw)
    kw.pop("verbose")
    many = jaxboost.train_many(
        [{"objective": poisson_exposure}, {"objective": poisson_label, "base_margin": o}],
        X,
        y,
        **kw,
    )
    np.testing.assert_array_equal(many[0].predict(X), one.predict(X))
    np.testing.assert_array_equal(many[1].predict(X, base_margin=o), off.predict(X, base_margin=o))
    catalogue = jaxboost.train("poisson", X, c, base_margin=o, **dict(kw, verbose=False))
    np.testing.assert_allclose(
        off.predict(X, base_margin=o),
        catalogue.predict(X, output_margin=True, base_margin=o),
        atol=1e-5,
    )


def test_side_data_sharded_over_devices_equals_one_device(data):
    import jax
    from jax.sharding import Mesh

    X, c, t, o = data
    mesh = Mesh(np.array(jax.devices()[:4]), ("rows",))
    y = {"label": c, "exposure": t}
    kw = dict(KW, n_rounds=10, quantize=True)
    one = jaxboost.train(poisson_exposure, X, y, **kw)
    four = jaxboost.train(poisson_exposure, X, y, mesh=mesh, **kw)
    np.testing.assert_array_equal(four.predict(X), one.predict(X))


# --- clear errors -------------------------------------------------------------------------
def test_wrong_offsets_and_targets_are_refused_before_training(data, offset_model):
    X, c, t, o = data
    N = X.shape[0]
    kw = dict(KW, n_rounds=1)
    with pytest.raises(DataError, match=rf"shape \({N},\).*{N - 1} rows, X has {N}"):
        jaxboost.train("poisson", X, c, base_margin=o[:-1], **kw)
    with pytest.raises(DataError, match="NaN or infinite"):
        jaxboost.train("poisson", X, c, base_margin=np.where(c > 2, np.inf, o), **kw)
    with pytest.raises(DataError, match="2 columns, but the model has 3 outputs"):
        jaxboost.train("softmax", X, np.minimum(c, 2), base_margin=np.zeros((N, 2)), **kw)
    with pytest.raises(DataError, match=rf"shape \({N - 2},\)"):
        offset_model.predict(X[:-2], base_margin=o)
    with pytest.raises(DataError, match="per row"):
        offset_model.predict(X, base_margin=0.5)
    with pytest.raises(DataError, match="eval_base_margin"):
        jaxboost.train(
            "poisson", X, c, base_margin=o, eval_set=[(X, c)], eval_base_margin=[o[:10]], **kw
        )
    with pytest.raises(TypeError, match="eval_base_margin must be a list"):
        jaxboost.train("poisson", X, c, eval_set=[(X, c)], eval_base_margin=[o, o], **kw)
    # targets
    with pytest.raises(DataError, match=r"takes one label per row.*'exposure'"):
        jaxboost.train("poisson", X, {"label": c, "exposure": t}, **kw)
    with pytest.raises(DataError, match=r"y\['exposure'\] must hold one value"):
        jaxboost.train(poisson_exposure, X, {"label": c, "exposure": t[:5]}, **kw)
    with pytest.raises(DataError, match=r"y\['exposure'\] has NaN"):
        jaxboost.train(
            poisson_exposure, X, {"label": c, "exposure": np.where(c > 2, np.nan, t)}, **kw
        )
    with pytest.raises(DataError, match="training y"):
        jaxboost.train(
            poisson_exposure,
            X,
            {"label": c, "exposure": t},
            eval_set=[(X, {"label": c, "years": t})],
            **kw,
        )
    with pytest.raises(TypeError, match=r"failed when called.*'exposure'"):
        jaxboost.train(poisson_exposure, X, {"label": c, "years": t}, **kw)


def test_which_base_margin_is_per_row():
    """A number (or K numbers) is the intercept; one margin per row needs one dimension
    more, so a length-K vector stays the intercept also when N == K."""
    from jaxboost.training.config import is_per_row

    assert not is_per_row(0.5, 1) and not is_per_row(np.float32(0.5), 1)
    assert is_per_row(np.zeros(3), 1) and is_per_row([0.5], 1)
    assert not is_per_row(np.zeros(3), 3) and not is_per_row(0.0, 3)
    assert is_per_row(np.zeros((3, 3)), 3)


def test_a_two_dimensional_y_for_a_builtin_loss_trains_its_targets():
    """XGBoost's reg:squarederror takes a 2-D y (multi-target regression); so does the
    catalogue's squared (objectives.multi_target), growing each target's trees as its
    own squared model would, as the summed loss of your own with n_outputs does."""
    rng = np.random.default_rng(0)
    X = binnable_features(rng)
    Y = np.stack([X[:, 2], X[:, 0] - X[:, 4], np.nan_to_num(X[:, 1])], 1).astype(np.float32)
    kw = dict(n_rounds=5, max_depth=3, verbose=False)
    targets = jaxboost.train("squared", X, Y, **kw)
    both = jaxboost.train(lambda y, f: 0.5 * jnp.sum((y - f) ** 2), X, Y, n_outputs=3, **kw)
    each = np.stack([jaxboost.train("squared", X, Y[:, k], **kw).predict(X) for k in range(3)], 1)
    np.testing.assert_array_equal(targets.predict(X), each)
    np.testing.assert_allclose(both.predict(X), each, atol=1e-5)
    with pytest.raises(DataError, match=r"objectives.softmax takes one label per row"):
        jaxboost.train("softmax", X, np.abs(Y[:, :2]).astype(int), **kw)
