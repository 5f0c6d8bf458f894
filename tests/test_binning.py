import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from jaxboost.engine.binning import BinEdges, apply_bins, compute_bin_edges


def test_low_cardinality_gets_one_bin_per_value_with_midpoint_cuts():
    X = np.array([[3.0], [1.0], [2.0], [2.0], [10.0], [np.nan]], np.float32)
    e = compute_bin_edges(X, max_bin=256)
    assert e.cuts[0, : e.n_cuts[0]].tolist() == [1.5, 2.5, 6.5]
    assert e.has_missing.tolist() == [True]
    bins = apply_bins(X, e)
    assert bins.shape == (1, 6) and bins.dtype == np.uint8
    # 4 value bins and the missing one fit the smallest bucket, 16 bins: NaN -> bin 15
    assert e.n_bins == 16 and e.missing_bin == 15
    assert bins[0].tolist() == [2, 0, 1, 1, 3, 15]


def test_every_distinct_value_has_its_own_bin_up_to_max_bin_minus_one():
    rng = np.random.default_rng(0)
    X = rng.choice(np.linspace(-5, 5, 255).astype(np.float32), size=(5000, 1))
    X[:255, 0] = np.linspace(-5, 5, 255)  # every value present
    e = compute_bin_edges(X, max_bin=256)
    bins = apply_bins(X, e)[0]
    assert len(np.unique(bins)) == 255
    # Bins order values exactly.
    order = np.argsort(X[:, 0], kind="stable")
    assert np.all(np.diff(bins[order].astype(int)) >= 0)


def test_high_cardinality_respects_max_bin_and_balances_counts():
    X = np.random.default_rng(3).normal(size=(20000, 2)).astype(np.float32)
    e = compute_bin_edges(X, max_bin=16)
    bins = apply_bins(X, e)
    assert bins.max() <= 14  # 15 value bins, bin 15 reserved for missing
    counts = np.bincount(bins[0], minlength=15)
    assert counts.min() > 0.8 * 20000 / 15 and counts.max() < 1.2 * 20000 / 15


def test_sample_weights_move_quantiles():
    x = np.arange(1000, dtype=np.float32)[:, None]
    w = np.where(x[:, 0] < 500, 9.0, 1.0)  # 90 % of the weight below 500
    e = compute_bin_edges(x, max_bin=11, sample_weight=w)
    cuts = e.cuts[0, : e.n_cuts[0]]
    # With 10 value bins of equal weight, 9 cuts fall below 500.
    assert (cuts < 500).sum() == 9


def test_threshold_is_the_float_rule_of_the_bin_rule():
    X = np.array([[0.5], [1.0], [1.5], [7.0]], np.float32)
    e = compute_bin_edges(X)
    assert e.threshold(np.array([0]), np.array([0]))[0] == -np.inf
    assert e.threshold(np.array([0]), np.array([2]))[0] == 1.25
    assert e.threshold(np.array([0]), np.array([4]))[0] == np.inf


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(
        np.float32,
        st.tuples(st.integers(1, 60), st.integers(1, 3)),
        elements=st.one_of(st.floats(-1e6, 1e6, width=32), st.just(np.nan)),
    ),
    st.integers(2, 40),
)
def test_binned_split_equals_float_threshold_split(X, max_bin):
    """For every t, "bin < t" on training data is exactly "x < threshold(t)"."""
    e = compute_bin_edges(X, max_bin=max_bin)
    assert isinstance(e, BinEdges)
    bins = apply_bins(X, e)
    for f in range(X.shape[1]):
        present = ~np.isnan(X[:, f])
        assert np.all(bins[f, ~present] == e.n_bins - 1)
        assert e.n_cuts[f] + 2 <= e.n_bins <= max_bin
        assert np.all(bins[f, present] <= e.n_cuts[f])
        for t in range(0, e.n_cuts[f] + 2):
            thr = e.threshold(np.array([f]), np.array([t]))[0]
            np.testing.assert_array_equal(bins[f, present] < t, X[present, f] < thr)


def test_row_major_and_in_place_padding_agree_with_feature_major():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    X[rng.random(300) < 0.1, 1] = np.nan
    e = compute_bin_edges(X, max_bin=32)
    fm = apply_bins(X, e)
    rm = apply_bins(X, e, row_major=True)
    np.testing.assert_array_equal(rm, fm.T)
    padded = np.full((310, 3), 7, np.uint8)
    apply_bins(X, e, out=padded, row_major=True)
    np.testing.assert_array_equal(padded[:300], fm.T)
    assert (padded[300:] == 7).all()


def test_native_binning_equals_numpy_searchsorted():
    """The native binning kernel against NumPy's searchsorted, both layouts, with NaN,
    +-inf, values on the cuts, few-valued features, and padding rows left alone."""
    from jaxboost import native

    if not native.available():
        pytest.skip(f"native kernel unavailable: {native.unavailable_reason()}")
    rng = np.random.default_rng(5)
    n, F = 3000, 6
    X = rng.normal(size=(n, F)).astype(np.float32)
    X[:, 1] = np.round(X[:, 1])  # few distinct values: exact midpoints
    edges = compute_bin_edges(X, 64)
    X[::7, 2] = np.nan
    X[::11, 3] = np.inf
    X[::13, 3] = -np.inf
    X[::5, 4] = edges.cuts[4, 3]  # exactly on a cut: goes right of it
    ref = np.zeros((F, n), np.uint8)
    for f in range(F):
        b = np.searchsorted(edges.cuts[f, : edges.n_cuts[f]], X[:, f], side="right")
        b[np.isnan(X[:, f])] = edges.missing_bin
        ref[f] = b
    for row_major in (True, False):
        out = np.full((n + 5, F) if row_major else (F, n + 5), 200, np.uint8)
        apply_bins(X, edges, out=out, row_major=row_major)
        got = out[:n].T if row_major else out[:, :n]
        np.testing.assert_array_equal(got, ref)
        pad = out[n:] if row_major else out[:, n:]
        assert np.all(pad == 200)


def _per_column_edges(X, max_bin):
    """The edges of X from ``_feature_cuts``, one column at a time (the path of weighted,
    large and categorical data)."""
    from jaxboost.engine.binning import EdgeBuilder

    e = EdgeBuilder(X.shape[1], max_bin)
    for f in range(X.shape[1]):
        col = X[:, f]
        present = ~np.isnan(col)
        e.add(f, col[present], None, has_missing=not present.all())
    return e.result()


def _assert_same_edges(a, b):
    for name in ("n_cuts", "has_missing", "n_distinct"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    # bit for bit, so that -0.0 / 0.0 and NaN cuts count as what they are
    np.testing.assert_array_equal(a.cuts.view(np.uint32), b.cuts.view(np.uint32))


_ODD_VALUES = np.float32(
    [0.0, -0.0, 1e-45, -1e-45, 2e-45, 3.3e38, 3.4e38, -3.4e38, np.inf, -np.inf, 1.0]
)


@settings(max_examples=80, deadline=None)
@given(
    hnp.arrays(
        np.float32,
        st.tuples(st.integers(1, 80), st.integers(1, 4)),
        elements=st.one_of(
            st.floats(-1e3, 1e3, width=32),
            st.sampled_from(list(_ODD_VALUES)),
            st.just(np.nan),
        ),
    ),
    st.sampled_from([2, 3, 4, 8, 33, 256]),
)
def test_small_data_cuts_from_one_sort_equal_the_per_column_cuts(X, max_bin):
    # small unweighted data is binned from one sort of all columns; its cuts must be
    # those of the per-column path bit for bit (signed zeros, subnormals, overflowing
    # midpoints and infinities included)
    _assert_same_edges(compute_bin_edges(X, max_bin), _per_column_edges(X, max_bin))


@pytest.mark.parametrize("max_bin", [5, 64, 256])
def test_small_data_quantile_cuts_from_one_sort_equal_the_per_column_cuts(max_bin, monkeypatch):
    # more distinct values than bins: the quantile cuts, with ties and missing values
    rng = np.random.default_rng(max_bin)
    X = np.column_stack(
        [
            rng.normal(size=3000),
            np.round(rng.exponential(size=3000) * 40),  # long runs of ties
            rng.integers(0, 300, size=3000),
            rng.choice(_ODD_VALUES, size=3000) + rng.normal(size=3000) * 1e30,
        ]
    ).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    X[:, 2][: max_bin * 4] = np.nan
    assert X.size < 1 << 18
    want, want_reversed = _per_column_edges(X, max_bin), _per_column_edges(X[:, ::-1], max_bin)
    from jaxboost.engine import binning

    def per_column(*args, **kwargs):
        raise AssertionError("small unweighted data is cut from one sort, not per column")

    monkeypatch.setattr(binning, "_feature_cuts", per_column)
    _assert_same_edges(compute_bin_edges(X, max_bin), want)
    _assert_same_edges(compute_bin_edges(X[:, ::-1], max_bin), want_reversed)
