import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxboost.engine.histogram import build_histogram, build_histogram_naive, pack_gh


def test_matches_naive_reference():
    rng = np.random.default_rng(1)
    F, N, n_nodes, B = 3, 2000, 4, 16
    bins = rng.integers(0, B, size=(F, N)).astype(np.uint8)
    g = rng.normal(size=N).astype(np.float32)
    h = rng.random(N).astype(np.float32)
    node = rng.integers(0, n_nodes + 1, size=N).astype(np.int32)  # n_nodes = dropped
    G, H = jax.jit(build_histogram, static_argnums=(3, 4))(bins, pack_gh(g, h), node, n_nodes, B)
    G_ref, H_ref = build_histogram_naive(bins, g, h, node, n_nodes, B)
    assert G.shape == (F, n_nodes, B)
    np.testing.assert_allclose(np.asarray(G), G_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(H), H_ref, rtol=1e-12, atol=1e-12)
    # Dropped rows contribute nothing.
    kept = node < n_nodes
    np.testing.assert_allclose(np.asarray(G)[0].sum(), g[kept].astype(np.float64).sum(), rtol=1e-10)


def test_four_million_rows_in_one_bin_stay_accurate():
    N = 4_200_000
    rng = np.random.default_rng(2)
    g = rng.random(N, dtype=np.float32)
    h = (rng.random(N, dtype=np.float32) + 0.5).astype(np.float32)
    bins = np.zeros((1, N), np.uint8)
    node = np.zeros(N, np.int32)
    G, H = jax.jit(build_histogram, static_argnums=(3, 4))(bins, pack_gh(g, h), node, 1, 4)
    exact_g = g.astype(np.float64).sum()
    exact_h = h.astype(np.float64).sum()
    assert abs(float(G[0, 0, 0]) - exact_g) / exact_g < 1e-5
    assert abs(float(H[0, 0, 0]) - exact_h) / exact_h < 1e-5
    # The test has teeth: float32 additions in row order (a CPU's scatter-add into one
    # bin) are far off at this size. (A GPU's scatter-add of float32 was within 5e-6 on
    # an H200, so the row-order sum is formed here, not by the backend.)
    naive32 = np.cumsum(g, dtype=np.float32)[-1]
    assert abs(float(naive32) - exact_g) / exact_g > 1e-5


# --------------------------------------------------------------------------------------
# The accelerator formulations, each against the naive float64 twin (on CPU)
# --------------------------------------------------------------------------------------
from jaxboost.engine import histogram as hist_mod  # noqa: E402


def _random_level(seed, F=4, N=3000, n_nodes=8, B=32, scale=1.0):
    rng = np.random.default_rng(seed)
    bins = rng.integers(0, B, size=(F, N)).astype(np.uint8)
    g = (scale * rng.normal(size=N)).astype(np.float32)
    g[::50] *= 1e-6  # values far below the largest: the grid must keep them
    h = rng.random(N).astype(np.float32)
    node = rng.integers(0, n_nodes + 1, size=N).astype(np.int32)  # n_nodes = skipped
    return bins, g, h, node, n_nodes, B


def _run(method, bins, g, h, node, n_nodes, B):
    fn = jax.jit(hist_mod.METHODS[method], static_argnums=(4, 5))
    return [np.asarray(x) for x in fn(bins, g, h, node, n_nodes, B)]


def test_fixed_point_histogram_equals_float64_sums():
    """int64 fixed point keeps 62 - ceil(log2(N + 1)) bits of the largest |g|: at 3,000
    rows 50 bits, so each sum is exact to the last bits of a float64 (here closer to the
    exact sum than float64 addition in row order, which rounds at every step)."""
    for seed, scale in ((0, 1.0), (1, 3e4), (2, 1e-7)):
        bins, g, h, node, n, B = level = _random_level(seed, scale=scale)
        G, H = _run("fixed", *level)
        G_ref, H_ref = build_histogram_naive(bins, g, h, node, n, B)
        for got, ref, x in ((G, G_ref, g), (H, H_ref, h)):
            np.testing.assert_allclose(got, ref, rtol=0, atol=len(x) * np.abs(x).max() * 2.0**-50)
        # a bin by exact (fsum) summation: the fixed-point sum is the correctly rounded one
        import math

        f, k, b = np.argwhere(G_ref != 0)[0]
        rows = (bins[f] == b) & (node == k)
        assert G[f, k, b] == math.fsum(g[rows].astype(np.float64))


def test_fixed_point_histogram_is_order_free():
    """The same rows in another order give the same bits (integer sums): what makes GPU
    atomics deterministic."""
    bins, g, h, node, n, B = _random_level(3, N=5000, scale=7.0)
    perm = np.random.default_rng(4).permutation(len(g))
    a = _run("fixed", bins, g, h, node, n, B)
    b = _run("fixed", bins[:, perm], g[perm], h[perm], node[perm], n, B)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_onehot_histogram_within_its_grid():
    """int8 digits of a 22-bit grid: each sum within N * 2**-23 of the largest |value|
    of the float64 one (several row blocks, the last one padded)."""
    for seed, B in ((5, 16), (6, 256)):
        bins, g, h, node, n, B = _random_level(seed, N=4500, B=B)
        G, H = _run("onehot", bins, g, h, node, n, B)
        G_ref, H_ref = build_histogram_naive(bins, g, h, node, n, B)
        for got, ref, x in ((G, G_ref, g), (H, H_ref, h)):
            bound = len(x) * np.abs(x).max() * 2.0**-23
            assert np.abs(got - ref).max() <= bound
            assert np.abs(got - ref).max() > 0  # it is a grid, not float64


def test_onehot_histogram_digits_round_trip():
    q = jnp.asarray([0, 1, -1, 127, 128, -128, -129, 2**22 - 1, -(2**22) + 1], jnp.int32)
    d = hist_mod._digits(q, 3)
    assert all(int(jnp.min(x)) >= -128 and int(jnp.max(x)) <= 127 for x in d)
    np.testing.assert_array_equal(np.asarray(d[0] + 256 * d[1] + 65536 * d[2]), np.asarray(q))


def test_platform_histogram_is_the_cpu_scatter_on_cpu(monkeypatch):
    level = _random_level(7)
    monkeypatch.delenv(hist_mod.HISTOGRAM_ENV, raising=False)
    auto = jax.jit(hist_mod.histogram, static_argnums=(4, 5))(*level)
    ref = jax.jit(build_histogram, static_argnums=(3, 4))(
        level[0], pack_gh(level[1], level[2]), level[3], level[4], level[5]
    )
    np.testing.assert_array_equal(np.asarray(auto[0]), np.asarray(ref[0]))
    monkeypatch.setenv(hist_mod.HISTOGRAM_ENV, "sorted")
    try:
        hist_mod.forced_method()
    except ValueError as e:
        assert "expected one of auto, scatter, fixed, onehot" in str(e)
    else:
        raise AssertionError("an unknown formulation was accepted")


def test_powers_of_two_of_the_fixed_point_grids_are_exact():
    """``exact.pow2``: the grids' ``2**e`` and ``2**-e`` are the exact powers on every
    backend (``jnp.ldexp`` goes through a floating-point power; on an H200 the fixed-point
    histogram came back 1 ulp from the exact sum with it), over the whole clipped range
    of ``grid_exponent``."""
    from jaxboost.engine.exact import pow2

    for dtype, limit in ((np.float32, 120), (np.float64, 1000)):
        e = np.arange(-limit, limit + 1)
        with jax.enable_x64(dtype == np.float64):
            got = np.asarray(jax.jit(pow2, static_argnums=1)(e, dtype))
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, np.ldexp(np.ones(e.size, dtype), e))
    with pytest.raises(TypeError, match="float32 or float64"):
        pow2(3, np.float16)
    with pytest.raises(TypeError, match="64-bit types"):
        pow2(3, np.float64)
