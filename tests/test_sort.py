"""objectives._sort: float32 vectors sorted as integer codes, in jnp.argsort's order."""

import jax
import numpy as np
import pytest

from objectives._sort import argsort_stable, run_bounds


@pytest.mark.parametrize("n", [1, 2, 1000, 70_001])
def test_argsort_stable_is_numpys_stable_argsort(n):
    """Ties in row order (many repeated values, -0.0 with 0.0), infinities at the ends
    and NaN last, for sizes whose row fits 1, 10 and 17 bits."""
    rng = np.random.default_rng(n)
    x = rng.choice(np.float32([-np.inf, -3.5, -1e-38, -0.0, 0.0, 1e-38, 2.25, np.inf, np.nan]), n)
    x = np.where(rng.random(n) < 0.5, rng.normal(size=n).astype(np.float32), x)
    got = np.asarray(jax.jit(argsort_stable)(x))
    want = np.argsort(np.where(x == 0, np.float32(0.0), x), kind="stable")
    np.testing.assert_array_equal(got, want)


def test_run_bounds_are_searchsorted_left_and_right():
    rng = np.random.default_rng(0)
    s = np.sort(rng.integers(0, 50, 3000).astype(np.float32))
    s[-5:] = np.inf  # padding rows' times
    first, last = jax.jit(run_bounds)(s)
    np.testing.assert_array_equal(first, np.searchsorted(s, s, side="left"))
    np.testing.assert_array_equal(last, np.searchsorted(s, s, side="right") - 1)


def test_float64_keeps_its_own_order_and_run_ids_are_dense_ranks():
    """Under x64 a float64 vector is ordered by its float64 values: float32 codes would
    tie 1 and 1 + 1e-12 and leave them in row order (Cox on float64 times, the
    float64 C-index). ``run_ids`` numbers a sorted vector's runs of equal values."""
    from objectives._sort import run_ids

    with jax.enable_x64(True):
        x = np.array([1.0 + 1e-12, 1.0, 3.0, 1.0 + 1e-12, -2.0])
        got = np.asarray(jax.jit(argsort_stable)(jax.numpy.asarray(x, jax.numpy.float64)))
        np.testing.assert_array_equal(got, np.argsort(x, kind="stable"))
        s = np.sort(x)
        assert np.asarray(run_ids(jax.numpy.asarray(s))).tolist() == [0, 1, 2, 2, 3]
