"""Bins follow the data (issue 27): the programs' bin dimension ``B`` is the smallest
bucket that holds the data's bins (``engine.binning.program_bins``), and the models are
bit for bit those of bins padded to ``max_bin`` (``JAXBOOST_PAD_BINS=1``, the layout
before)."""

import numpy as np
import pytest

import jaxboost
from jaxboost.datasets import load_breast_cancer
from jaxboost.engine.binning import PAD_BINS_ENV, compute_bin_edges
from jaxboost.engine.round import run_chunk
from jaxboost.io.format import dumps, loads
from jaxboost.training import loop

KW = dict(verbose=False, learning_rate=0.5)


def few_values(rng, N=400, F=5):
    """Features of few distinct values (17, 2, 9, 12 and 5), NaN in features 0 and 2."""
    X = np.stack(
        [
            rng.integers(0, 17, N),
            rng.integers(0, 2, N),
            rng.integers(0, 9, N) * 0.25,
            rng.normal(size=N).round(0).clip(-6, 5),
            rng.integers(0, 5, N),
        ],
        1,
    )
    X = X[:, :F].astype(np.float32)
    X[rng.random(N) < 0.1, 0] = np.nan
    X[rng.random(N) < 0.2, 2] = np.nan
    return X


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(27)
    X = few_values(rng)
    logit = 0.3 * np.nan_to_num(X[:, 0] - 8) - X[:, 1] + np.nan_to_num(X[:, 2], nan=1.0)
    yb = (rng.random(len(X)) < 1 / (1 + np.exp(-logit))).astype(np.float32)
    yk = np.digitize(logit + 0.5 * rng.normal(size=len(X)), [-1.0, 0.5]).astype(np.float32)
    return X, yb, yk


def spy_specs(monkeypatch):
    """The ``RoundSpec`` s of every chunk ``loop.run_chunk`` runs, as a list."""
    specs = []
    real = loop.run_chunk

    def spy(*args, **kwargs):
        specs.extend(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(loop, "run_chunk", spy)
    return specs


def test_a_feature_of_17_values_gets_17_bins_and_the_program_the_bucket(monkeypatch):
    rng = np.random.default_rng(0)
    X = few_values(rng)
    e = compute_bin_edges(X)
    # value bins n_cuts + 1: the distinct values of each feature
    assert (e.n_cuts + 1).tolist() == [len(np.unique(c[~np.isnan(c)])) for c in X.T]
    assert e.n_cuts[0] + 1 == 17 and e.max_bin == 256
    # 17 value bins + the missing bin -> bucket 32; NaN in bin 31
    assert e.n_bins == 32 and e.missing_bin == 31
    assert e.cuts_ext().shape == (5, 32)
    specs = spy_specs(monkeypatch)
    y = (np.nan_to_num(X[:, 0]) > 8).astype(np.float32)
    bst = jaxboost.train("logistic", X, y, n_rounds=2, max_depth=2, **KW)
    assert {s.max_bin for s in specs} == {32}
    assert specs[0].tree_spec().max_bin == 32
    assert bst.params.max_bin == 256 and bst.bin_edges.n_bins == 32
    # the file stores the user's max_bin; a loaded model's edges find the bucket again
    text = dumps(bst)
    assert '"max_bin":256' in text.replace(" ", "") and "n_bins" not in text
    assert loads(text).bin_edges.n_bins == 32
    # binary columns alone: the smallest bucket; a cap below it wins
    assert compute_bin_edges(X[:, [1]]).n_bins == 16
    assert compute_bin_edges(X[:, [1]], max_bin=8).n_bins == 8
    # padded on request (the layout before)
    monkeypatch.setenv(PAD_BINS_ENV, "1")
    assert compute_bin_edges(X).n_bins == 256


def test_continuous_data_keeps_max_bin():
    X, _, _ = load_breast_cancer()
    e = compute_bin_edges(X)
    assert e.n_cuts.max() == 254 and e.n_bins == 256
    e = compute_bin_edges(X, max_bin=100)
    assert e.n_cuts.max() == 98 and e.n_bins == 100


def test_data_of_one_bucket_shares_the_round_program():
    """A second data set whose features need 18 to 32 bins (17 to 31 distinct values)
    compiles no new tree builder; one that needs more compiles the next bucket's."""
    rng = np.random.default_rng(1)

    def fit(n_values):
        X = rng.integers(0, n_values, size=(300, 3)).astype(np.float32)
        y = (X[:, 0] > n_values / 2).astype(np.float32)
        return jaxboost.train("logistic", X, y, n_rounds=2, max_depth=2, **KW)

    assert fit(17).bin_edges.n_bins == 32
    before = run_chunk._cache_size()
    assert fit(31).bin_edges.n_bins == 32
    assert run_chunk._cache_size() == before
    assert fit(32).bin_edges.n_bins == 64
    assert run_chunk._cache_size() == before + 1


def fit_both(monkeypatch, *args, **kwargs):
    """The model trained with bins padded to ``max_bin`` and with the data's bucket."""
    monkeypatch.setenv(PAD_BINS_ENV, "1")
    padded = jaxboost.train(*args, **kwargs)
    monkeypatch.delenv(PAD_BINS_ENV)
    following = jaxboost.train(*args, **kwargs)
    return padded, following


def assert_bit_identical(padded, following, X, max_bin=256):
    assert padded.bin_edges.n_bins == max_bin > following.bin_edges.n_bins
    a, b = padded.ensemble.to_numpy(), following.ensemble.to_numpy()
    for name, x, y in zip(a._fields, a, b):
        if x is None:
            assert y is None, name
            continue
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert x.tobytes() == y.tobytes(), name  # bit for bit (NaN thresholds included)
    assert dumps(padded) == dumps(following)  # the model files too
    for margin in (True, False):
        p, q = (np.asarray(m.predict(X, output_margin=margin)) for m in (padded, following))
        assert p.tobytes() == q.tobytes()


@pytest.mark.parametrize("objective", ["logistic", "softmax"])
def test_models_equal_those_of_padded_bins(data, monkeypatch, objective):
    X, yb, yk = data
    y = yb if objective == "logistic" else yk
    padded, following = fit_both(
        monkeypatch,
        objective,
        X,
        y,
        n_rounds=6,
        max_depth=4,
        reg_alpha=0.2,
        max_delta_step=0.8,
        **KW,
    )
    assert following.bin_edges.n_bins == 32
    assert padded.ensemble.n_trees == (6 if objective == "logistic" else 18)
    assert_bit_identical(padded, following, X)


def test_models_equal_those_of_padded_bins_on_the_pure_jax_histogram(
    data, monkeypatch, pure_jax_histogram
):
    X, yb, _ = data
    padded, following = fit_both(monkeypatch, "logistic", X, yb, n_rounds=6, max_depth=4, **KW)
    assert pure_jax_histogram
    assert_bit_identical(padded, following, X)


def test_vector_leaf_models_equal_those_of_padded_bins(data, monkeypatch):
    X, _, yk = data
    padded, following = fit_both(
        monkeypatch,
        "softmax",
        X,
        yk,
        n_rounds=4,
        max_depth=3,
        multi_strategy="multi_output_tree",
        **KW,
    )
    assert_bit_identical(padded, following, X)


def test_max_bin_below_256_pads_to_its_own_buckets(data, monkeypatch):
    """``max_bin = 100``: buckets 20, 36, 68, 100 (``B`` equal to ``max_bin`` modulo
    16); the data's 17 values take 20 bins."""
    X, yb, _ = data
    padded, following = fit_both(
        monkeypatch, "logistic", X, yb, n_rounds=4, max_depth=4, max_bin=100, **KW
    )
    assert following.bin_edges.n_bins == 20
    assert_bit_identical(padded, following, X, max_bin=100)


def test_categorical_models_equal_those_of_padded_bins(monkeypatch):
    """Categorical features (one-vs-rest and partition splits, NaN, codes never seen in
    training): the 256-bit category sets are those of padded bins."""
    rng = np.random.default_rng(5)
    N = 500
    X = np.stack(
        [
            rng.integers(0, 3, N),
            rng.integers(0, 11, N),
            rng.integers(0, 6, N) * 0.5,
            rng.integers(0, 14, N),
        ],
        1,
    ).astype(np.float32)
    X[rng.random(N) < 0.1, 1] = np.nan
    X[X[:, 3] == 7, 3] = 12  # code 7 never seen
    y = ((X[:, 0] == 1) ^ np.isin(np.nan_to_num(X[:, 1], nan=2), [2, 5, 9]) ^ (X[:, 3] > 9)).astype(
        np.float32
    )
    padded, following = fit_both(
        monkeypatch, "logistic", X, y, n_rounds=6, max_depth=3, categorical_features=[0, 1, 3], **KW
    )
    # 14 codes: split finding sorts 16 category slots, so B = 32 (> 16), not 16
    assert following.bin_edges.n_bins == 32
    assert np.any(np.asarray(padded.ensemble.cat_bits) != 0)
    assert_bit_identical(padded, following, X)
    unseen = X.copy()
    unseen[:50, 3] = 7
    unseen[50:100, 1] = 200
    np.testing.assert_array_equal(padded.predict(unseen), following.predict(unseen))
