"""Prediction streams over row blocks (issue 28, item 11): a dense ``X`` is predicted in
views of ``PREDICT_BLOCK_VALUES // F`` rows into one output array, ``staged_predict``
in blocks whose ``(trees, rows)`` margins stay bounded, and a ``staged_predict`` whose
output cannot fit in the memory available is refused before any work."""

import numpy as np
import pytest

import jaxboost
from jaxboost.model import booster as booster_mod


@pytest.fixture(scope="module")
def model_and_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + X[:, 1] ** 2 > 0.5).astype(np.float32)
    return jaxboost.train("logistic", X, y, n_rounds=6, max_depth=3, verbose=False), X


def test_blocked_predict_equals_one_pass(model_and_data, monkeypatch):
    b, X = model_and_data
    whole = b.predict(X)
    margins = b.predict(X, output_margin=True)
    stages = b.staged_predict(X)
    offsets = np.linspace(-1, 1, X.shape[0]).astype(np.float32)
    with_offsets = b.predict(X, base_margin=offsets)
    leaves = b.predict_leaf(X) if hasattr(b, "predict_leaf") else None
    calls = []
    real = booster_mod.Booster._by_blocks

    def spy(fn, X, offsets=None, axis=0, rows=None):
        calls.append(X.shape[0])
        return real(fn, X, offsets, axis, rows)

    monkeypatch.setattr(booster_mod.Booster, "_by_blocks", staticmethod(spy))
    monkeypatch.setattr(booster_mod, "PREDICT_BLOCK_VALUES", 4 * 512)  # 512 rows
    monkeypatch.setattr(booster_mod, "STAGED_BLOCK_VALUES", 6 * 256)  # 256 rows
    np.testing.assert_array_equal(b.predict(X), whole)
    np.testing.assert_array_equal(b.predict(X, output_margin=True), margins)
    np.testing.assert_array_equal(b.predict(X, base_margin=offsets), with_offsets)
    np.testing.assert_array_equal(b.staged_predict(X), stages)
    if leaves is not None:
        np.testing.assert_array_equal(b.predict_leaf(X), leaves)
    assert calls and all(n == X.shape[0] for n in calls)


def test_blocks_are_views_of_bounded_rows(model_and_data):
    _, X = model_and_data
    seen = []

    def fn(Xb, o):
        seen.append((Xb.shape[0], np.shares_memory(Xb, X)))
        return np.zeros(Xb.shape[0], np.float32)

    out = booster_mod.Booster._by_blocks(fn, X, None, rows=700)  # 512-row blocks
    assert out.shape == (3000,)
    assert [n for n, _ in seen] == [512] * 5 + [440] and all(v for _, v in seen)


def test_staged_predict_too_large_for_memory_is_refused(model_and_data, monkeypatch):
    b, X = model_and_data
    monkeypatch.setattr(booster_mod, "_available_bytes", lambda: 10_000)
    with pytest.raises(
        MemoryError,
        match=r"staged_predict would return a float32 array "
        r"of shape \(6, 3000, 1\).*bst\[:r\]\.predict",
    ):
        b.staged_predict(X)
