import jax
import jax.numpy as jnp
import numpy as np

from jaxboost.engine.histogram import build_histogram, build_histogram_naive, pack_gh


def test_matches_naive_reference():
    rng = np.random.default_rng(1)
    F, N, n_nodes, B = 3, 2000, 4, 16
    bins = rng.integers(0, B, size=(F, N)).astype(np.uint8)
    g = rng.normal(size=N).astype(np.float32)
    h = rng.random(N).astype(np.float32)
    node = rng.integers(0, n_nodes + 1, size=N).astype(np.int32)  # n_nodes = dropped
    G, H = jax.jit(build_histogram, static_argnums=(3, 4))(bins, pack_gh(g, h), node,
                                                           n_nodes, B)
    G_ref, H_ref = build_histogram_naive(bins, g, h, node, n_nodes, B)
    assert G.shape == (F, n_nodes, B)
    np.testing.assert_allclose(np.asarray(G), G_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(H), H_ref, rtol=1e-12, atol=1e-12)
    # Dropped rows contribute nothing.
    kept = node < n_nodes
    np.testing.assert_allclose(np.asarray(G)[0].sum(), g[kept].astype(np.float64).sum(),
                               rtol=1e-10)


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
    # The test has teeth: a float32 scatter-add into one bin is far off at this size.
    naive32 = jnp.zeros(4, jnp.float32).at[jnp.zeros(N, jnp.int32)].add(jnp.asarray(g))
    assert abs(float(naive32[0]) - exact_g) / exact_g > 1e-5
