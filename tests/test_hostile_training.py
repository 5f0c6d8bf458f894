"""Hostile and extreme inputs to training (issue 16): every case the issue lists,
reproduced, with the clear error (type and message) or the correct result.

1. bounds before any allocation (classes, rounds); 5. non-finite numbers are never
silent (loss values, the intercept, every round's trees and margins) and the error names
its cause; 6. no lost work (schedules checked before training, exceptions carry the
rounds trained, checkpoint writes that fail); 8. complex input, one-class softmax,
``Comparison.best`` of an unknown name.

The data is conftest's ``small_binary`` (300 x 4) at depth 3, as in test_train.py.
"""

import dataclasses
import errno
import importlib
import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxboost.callbacks import Checkpoint

import jaxboost
import objectives
from jaxboost import DataError, LossError, NonFiniteError
from jaxboost._types import MAX_CLASSES, MAX_ROUNDS
from jaxboost.errors import CheckpointWarning
from jaxboost.training import config

KW = dict(max_depth=3, verbose=False)


def _no_setup(monkeypatch):
    """Make any data preparation fail: an error raised under it came before setup."""
    train_module = importlib.import_module("jaxboost.training.train")

    def prepare(*_):
        raise AssertionError("training was set up")

    monkeypatch.setattr(train_module, "prepare", prepare)


# --- 1. bounds before any allocation ----------------------------------------------------
@pytest.mark.parametrize("label", [1e6, 3e4])  # an abort (f64[1000002000001]); 2.2 TB
def test_softmax_label_beyond_max_classes_names_the_label(small_binary, label, monkeypatch):
    X, _ = small_binary
    y = np.zeros(300, np.float32)
    y[:50] = 1.0
    y[17] = label
    _no_setup(monkeypatch)
    with pytest.raises(
        DataError,
        match=re.escape(
            f"the label {label:g} at row 17 implies "
            f"{int(label) + 1} classes, more than the "
            f"maximum MAX_CLASSES = 10000"
        ),
    ):
        jaxboost.train("softmax", X, y, n_rounds=2, **KW)


def test_outputs_beyond_max_classes_and_one_class_softmax_are_refused(small_binary, monkeypatch):
    X, y = small_binary
    _no_setup(monkeypatch)
    with pytest.raises(ValueError, match=rf"n_outputs must be in \[1, {MAX_CLASSES}\]"):
        jaxboost.train(lambda t, f: jnp.sum(f**2), X, y, n_outputs=MAX_CLASSES + 1, **KW)
    # objectives.softmax refuses the variant at construction (or training would): the
    # message names the count and the maximum
    with pytest.raises(
        ValueError,
        match=r"(has 20000 outputs; at most MAX_CLASSES = 10000"
        r"|MAX_CLASSES = 10000\].*got 20000)",
    ):
        jaxboost.train(objectives.softmax(n_classes=20000), X, y, **KW)
    # One class was a TypeError wrapping an IndexError from inside the loss.
    with pytest.raises(
        DataError,
        match=r"needs at least 2 classes, but every label is 0 "
        r"\(K = max\(y\) \+ 1 = 1\)",
    ):
        jaxboost.train("softmax", X, np.zeros(300), **KW)
    with pytest.raises(ValueError, match="needs at least 2 classes, got 1"):
        jaxboost.train(objectives.softmax(n_classes=1), X, np.zeros(300), **KW)


def test_n_rounds_beyond_int32_is_refused_before_setup(small_binary, monkeypatch):
    X, y = small_binary
    init = jaxboost.train("squared", X, y, n_rounds=3, **KW)
    _no_setup(monkeypatch)
    assert MAX_ROUNDS == 2**30
    with pytest.raises(ValueError, match=r"n_rounds must be <= 1073741824 .*got 2147483648"):
        jaxboost.train("squared", X, y, n_rounds=2**31, **KW)  # was an OverflowError
    with pytest.raises(ValueError, match=r"n_rounds must be <= 1073741821 .*init_model has 3"):
        jaxboost.train("squared", X, y, n_rounds=MAX_ROUNDS - 2, init_model=init, **KW)
    with pytest.raises(ValueError, match=r"n_rounds must be in \[0, 1073741824\]"):
        jaxboost.train_many(["squared"], X, y, n_rounds=2**31, max_depth=3)


def test_float32_range_of_learning_rate_base_margin_and_weights(small_binary, monkeypatch):
    X, y = small_binary
    _no_setup(monkeypatch)
    with pytest.raises(ValueError, match=r"learning_rate must be at most 3.402823e\+38"):
        jaxboost.train("squared", X, y, learning_rate=1e39, **KW)
    with pytest.raises(ValueError, match=r"base_margin must be finite in float32"):
        jaxboost.train("squared", X, y, base_margin=1e39, **KW)
    with pytest.raises(ValueError, match=r"base_margin must be 3 finite numbers .*float32"):
        jaxboost.train("softmax", X, np.arange(300) % 3, base_margin=[0.0, 1e39, 0.0], **KW)
    with pytest.raises(DataError, match="sample_weight has NaN or infinite values"):
        jaxboost.train("squared", X, y, sample_weight=np.full(300, 1e39), **KW)


# --- 5. non-finite numbers are never silent ------------------------------------------
def log_shifted(y, p):
    """Defined for p > 100 (minimum at p = 100 + 1 / (1 + y)); its value is NaN below,
    where its gradient (1 + y) - 1 / (p - 100) is finite."""
    return (p - 100.0) * (1.0 + y) - jnp.log(p - 100.0)


def test_nan_value_with_finite_gradient_at_the_fitted_intercept(small_binary):
    X, y = small_binary
    # Was: the intercept fit silently fell back to 0 and every history value was NaN.
    with pytest.raises(
        LossError,
        match=r"log_shifted returned NaN or an infinite value for "
        r"300 row\(s\) at round 0 \(the start margin "
        r"base_margin=0, fitted",
    ) as e:
        jaxboost.train(log_shifted, X, y, n_rounds=3, eval_set=[(X, y)], **KW)
    assert (e.value.round, e.value.n_rows, e.value.booster) == (0, 300, None)
    # Started inside its domain, the same loss trains: every value finite.
    bst = jaxboost.train(log_shifted, X, y, n_rounds=3, base_margin=101.0, eval_set=[(X, y)], **KW)
    (curve,) = bst.history["validation_0"].values()  # the mean loss
    assert len(curve) == 3 and np.all(np.isfinite(curve))
    assert np.all(bst.predict(X) > 100.0)


def test_where_nan_rows_are_not_dropped_silently(small_binary):
    X, y = small_binary

    def drop_positives(t, p):  # g = 0 on the NaN rows: they used to vanish silently
        return jnp.where(t > 0.5, jnp.nan, (t - p) ** 2)

    with pytest.raises(
        LossError,
        match=r"drop_positives returned NaN .* at round 0 \(the "
        r"start margin base_margin=0, given\).*jnp.where",
    ) as e:
        jaxboost.train(drop_positives, X, y, n_rounds=3, base_margin=0.0, **KW)
    assert e.value.n_rows == int((y > 0.5).sum())


def test_nan_value_at_a_later_round_keeps_the_rounds_before(small_binary):
    X, y = small_binary

    def capped(t, p):  # value NaN once a margin passes 0.6; g stays finite
        return (t - p) ** 2 + 0.0 * jnp.log(0.6 - p)

    with pytest.raises(LossError, match=r"capped returned NaN or an infinite value") as e:
        jaxboost.train(capped, X, y, n_rounds=30, base_margin=0.5, **KW)
    err = e.value
    assert err.round >= 1 and len(err.booster) == err.round
    # The attached model's margins are the ones round `round` saw: exactly n_rows rows
    # are past 0.6, none were a round earlier.
    assert int((err.booster.predict(X, output_margin=True) > 0.6).sum()) == err.n_rows
    earlier = err.booster[: err.round - 1].predict(X, output_margin=True)
    assert int((earlier > 0.6).sum()) == 0


def test_huge_learning_rate_is_named_and_the_model_before_it_saves(small_binary, tmp_path):
    X, y = small_binary
    # Was: NaN/inf predictions, no error, and save() refused the model.
    with pytest.raises(
        NonFiniteError,
        match=r"round 1 at margins of magnitude up to "
        r"[0-9.]+e\+29, where learning_rate=1e\+30 "
        r"\(> 1\)",
    ) as e:
        jaxboost.train("squared", X, y, n_rounds=3, learning_rate=1e30, **KW)
    err = e.value
    assert not isinstance(err, LossError)
    assert (err.cause, err.round, len(err.booster)) == ("learning_rate", 1, 1)
    assert np.all(np.isfinite(err.booster.predict(X)))
    err.booster.save(tmp_path / "m.json")
    assert len(jaxboost.load(tmp_path / "m.json")) == 1


def test_the_last_rounds_trees_are_checked(small_binary):
    X, y = small_binary
    # One round: leaf values ~5e8 (residuals) x 1e30 overflow in the last (only) round.
    with pytest.raises(
        NonFiniteError,
        match=r"round 0's trees have \d+ leaf value\(s\) "
        r"beyond the float32 range .*learning_rate="
        r"1e\+30.*No round completed",
    ) as e:
        jaxboost.train("squared", X, y * 1e9, n_rounds=1, learning_rate=1e30, **KW)
    assert e.value.cause == "learning_rate" and e.value.booster is None


def test_huge_weights_are_named(small_binary):
    X, y = small_binary
    w = np.full(300, 3e38, np.float32)
    # Labels in {0, 1}: g w and h w fit in float32, their node sums do not.
    with pytest.raises(
        NonFiniteError,
        match=r"round 0's trees have \d+ node sum\(s\) of h "
        r"\(cover\) or split gain\(s\) beyond the "
        r"float32 range .*sample_weight \(up to 3e\+38\)",
    ) as e:
        jaxboost.train("squared", X, y, n_rounds=2, sample_weight=w, **KW)
    assert (e.value.cause, e.value.round) == ("sample_weight", 0)
    assert not isinstance(e.value, LossError)
    # Labels +-5: every |g| > 1.2, so g w overflows on every row.
    with pytest.raises(
        NonFiniteError,
        match=r"sample_weight made g or h infinite for 300 "
        r"row\(s\) at round 0: the loss's own g and h "
        r"are finite",
    ) as e:
        jaxboost.train("squared", X, 10.0 * y - 5.0, n_rounds=2, sample_weight=w, **KW)
    assert e.value.cause == "sample_weight"


def test_huge_base_margin_is_named(small_binary):
    X, y = small_binary
    with pytest.raises(
        NonFiniteError,
        match=r"gave a non-finite value for 300 row\(s\) at "
        r"round 0 .*from base_margin=1e\+30",
    ) as e:
        jaxboost.train("squared", X, y, n_rounds=2, base_margin=1e30, **KW)
    assert (e.value.cause, e.value.round, e.value.booster) == ("base_margin", 0, None)
    assert not isinstance(e.value, LossError)


# --- 6. no lost work ----------------------------------------------------------------------
def _nan_from_900_array(r):  # takes the array of round indices
    return np.where(np.asarray(r) < 900, 0.1, np.nan)


def _nan_from_900_scalar(r):  # one round at a time (an array raises)
    return 0.1 if r < 900 else float("nan")


def _raises_from_900(r):
    if r >= 900:
        raise RuntimeError("schedule ran out")
    return 0.1


@pytest.mark.parametrize(
    "schedule, match",
    [
        (_nan_from_900_array, "the learning_rate schedule gave nan at round 900"),
        (_nan_from_900_scalar, "the learning_rate schedule gave nan at round 900"),
        (_raises_from_900, "the learning_rate schedule failed at round 900: RuntimeError"),
    ],
)
def test_schedule_is_checked_for_the_whole_run_before_training(
    small_binary, schedule, match, monkeypatch
):
    X, y = small_binary
    _no_setup(monkeypatch)  # was: raised after 900 rounds, the model discarded
    with pytest.raises(ValueError, match=match):
        jaxboost.train("squared", X, y, n_rounds=1000, learning_rate=schedule, **KW)


def test_schedule_failing_past_the_checked_rounds_keeps_the_rounds_trained(
    small_binary, monkeypatch
):
    X, y = small_binary
    monkeypatch.setattr(config, "SCHEDULE_CHECK_ROUNDS", 5)  # rounds 5.. checked late

    def schedule(r):
        return 0.1 if r < 25 else float("nan")

    with pytest.raises(ValueError, match="gave nan at round 25") as e:
        jaxboost.train("squared", X, y, n_rounds=40, learning_rate=schedule, **KW)
    # Rounds 20..29 were being prepared: the 20 rounds dispatched before are kept.
    bst = e.value.booster
    ref = jaxboost.train("squared", X, y, n_rounds=20, learning_rate=schedule, **KW)
    assert len(bst) == 20
    np.testing.assert_array_equal(bst.predict(X), ref.predict(X))
    assert "attached as error.booster" in e.value.__notes__[-1]


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_exception_in_a_callback_keeps_its_type_and_the_rounds_trained(small_binary, error):
    X, y = small_binary

    def callback(env):
        if env.round == 13:
            raise error
        return False

    with pytest.raises(type(error)) as e:
        jaxboost.train("squared", X, y, n_rounds=30, callbacks=[callback], **KW)
    assert e.value is error
    bst = e.value.booster  # rounds 0..13: the callback saw round 13
    ref = jaxboost.train("squared", X, y, n_rounds=14, **KW)
    assert len(bst) == 14
    np.testing.assert_array_equal(bst.predict(X), ref.predict(X))
    assert e.value.__notes__ == [
        "jaxboost: training ended with this error after 14 "
        "round(s); the model of the rounds completed is attached "
        "as error.booster."
    ]


def test_train_many_exception_carries_every_models_rounds(small_binary):
    X, y = small_binary

    def callback(env):
        if env.round == 12:
            raise RuntimeError("boom")
        return False

    with pytest.raises(RuntimeError, match="boom") as e:
        jaxboost.train_many(
            ["squared", {"objective": "squared", "callbacks": [callback]}],
            X,
            y,
            n_rounds=30,
            max_depth=3,
        )
    first, second = e.value.boosters
    assert (len(first), len(second)) == (20, 13)  # the first read its chunk first
    ref = jaxboost.train("squared", X, y, n_rounds=13, **KW)
    np.testing.assert_array_equal(second.predict(X), ref.predict(X))


def test_checkpoint_directory_must_exist(tmp_path):
    with pytest.raises(ValueError, match=r"its directory .*missing' does not exist"):
        Checkpoint(tmp_path / "missing" / "model.json")


def test_failed_checkpoint_writes_warn_and_training_goes_on(small_binary, tmp_path, monkeypatch):
    X, y = small_binary
    from jaxboost.io import format as fmt

    real, calls = fmt.atomic_write, []

    def disk_full_once(path, data):
        calls.append(path)
        if len(calls) == 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)

    monkeypatch.setattr(fmt, "atomic_write", disk_full_once)
    ck = Checkpoint(tmp_path / "ck.json", every=3)
    with pytest.warns(
        CheckpointWarning,
        match=r"writing .*ck.json' after 3 round\(s\) "
        r"failed \(OSError: \[Errno 28\] No space left"
        r".*no checkpoint was written yet",
    ):
        bst = jaxboost.train("squared", X, y, n_rounds=7, callbacks=[ck], **KW)
    assert len(bst) == 7 and ck.last_round == 7 and [r for r, _ in ck.failures] == [3]
    np.testing.assert_array_equal(jaxboost.load(tmp_path / "ck.json").predict(X), bst.predict(X))

    gone = tmp_path / "gone"  # the directory removed after the Checkpoint was made
    gone.mkdir()
    ck = Checkpoint(gone / "ck.json", every=3)
    gone.rmdir()
    with pytest.warns(CheckpointWarning) as record:
        again = jaxboost.train("squared", X, y, n_rounds=7, callbacks=[ck], **KW)
    assert len(record) == 3 and ck.last_round is None  # rounds 3, 6, 7
    np.testing.assert_array_equal(again.predict(X), bst.predict(X))


# --- 8. complex input, one-class softmax (above), Comparison.best --------------------------
def test_complex_input_is_refused_in_train_and_every_predict_path(small_binary):
    X, y = small_binary
    bst = jaxboost.train("squared", X, y, n_rounds=2, **KW)
    Xc, yc = X.astype(np.complex64), y.astype(np.complex128)
    msg = "must hold real numbers, got complex dtype"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # was: only a ComplexWarning
        for kwargs in (dict(X=Xc), dict(y=yc), dict(sample_weight=yc), dict(eval_set=[(Xc, y)])):
            args = dict(dict(X=X, y=y), **kwargs)
            with pytest.raises(DataError, match=msg):
                jaxboost.train("squared", args.pop("X"), args.pop("y"), n_rounds=2, **args, **KW)
        for call in (
            bst.predict,
            bst.staged_predict,
            bst.predict_leaf,
            lambda Z: bst.predict(Z, pred_contribs=True),
            lambda Z: bst.grad_hess(Z, y),
        ):
            with pytest.raises(DataError, match=f"X {msg}"):
                call(Xc)
        with pytest.raises(DataError, match=f"y {msg}"):
            bst.grad_hess(X, yc)
        pd = pytest.importorskip("pandas")
        frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1] + 1j, "c": X[:, 2], "d": X[:, 3]})
        with pytest.raises(DataError, match=r"1 non-numeric column\(s\): 'b' \(complex"):
            bst.predict(frame)
        with pytest.raises(DataError, match=f"y {msg}"):
            jaxboost.train("squared", X, pd.Series(yc), n_rounds=2, **KW)


def test_comparison_best_of_an_unknown_name_is_a_value_error(small_binary):
    X, y = small_binary
    cmp = jaxboost.compare(["squared"], X, y, n_rounds=2, max_depth=3)
    metric = list(cmp.metrics)[0]
    assert cmp.best("squared", metric)[1] in (1, 2)
    with pytest.raises(
        ValueError, match="unknown objective label 'nope'; this comparison has 'squared'"
    ):
        cmp.best("nope", metric)  # was a KeyError
    with pytest.raises(ValueError, match=f"unknown metric 'nope'; .*'{metric}'"):
        cmp.best("squared", "nope")
    with pytest.raises(ValueError, match="unknown data set 'nope'; .*'train'"):
        cmp.best("squared", metric, data="nope")


def test_value_check_off_is_only_for_losses_finite_at_every_finite_margin(small_binary):
    """``Objective.value_check=False`` skips the per-round value check: the entry that
    sets it (logistic) is finite at every finite margin, extremes included;
    an objective that turns it off is not evaluated (its NaN value goes unnamed) while
    the same loss with the check is stopped at round 0."""
    unchecked = [e for e in objectives.CATALOGUE.values() if not e.value_check]
    assert [e.name for e in unchecked] == ["logistic"]
    margins = np.array([-3e38, -1e30, -88.8, -1.0, 0.0, 1.0, 88.8, 1e30, 3e38], np.float32)
    logistic = jax.vmap(objectives.logistic, in_axes=(None, 0))
    for y in (0.0, 0.3, 1.0):
        assert np.all(np.isfinite(logistic(jnp.float32(y), jnp.asarray(margins))))
    # softmax keeps its check: its value overflows at finite margins where g does not
    value = objectives.softmax(jnp.float32(0.0), jnp.array([-3e38, 3e38], jnp.float32))
    assert not np.isfinite(value)

    X, y = small_binary

    def nan_valued(t, p):  # the squared loss's gradient, a NaN value
        return 0.5 * (t - p) ** 2 + 0.0 * jnp.log(-1.0 - p * p)

    checked = objectives.Objective("nan_valued", nan_valued)
    with pytest.raises(LossError, match="nan_valued returned NaN or an infinite value"):
        jaxboost.train(checked, X, y, n_rounds=2, base_margin=0.0, **KW)
    off = dataclasses.replace(checked, value_check=False)
    bst = jaxboost.train(off, X, y, n_rounds=2, base_margin=0.0, **KW)
    ref = jaxboost.train("squared", X, y, n_rounds=2, base_margin=0.0, **KW)
    np.testing.assert_array_equal(bst.predict(X), ref.predict(X))
    with pytest.raises(TypeError, match="value_check must be True or False"):
        dataclasses.replace(checked, value_check="no")
