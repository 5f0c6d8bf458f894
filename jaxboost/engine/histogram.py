r"""Gradient histograms: the one step of tree growing that touches every row.

For the nodes of one level, with rows assigned to nodes:

.. math:: \mathrm{hist}[f, n, b] = \Big(\sum_{i:\,node_i = n,\ bin_{f,i} = b} g_i,\;
          \sum_{i:\,node_i = n,\ bin_{f,i} = b} h_i\Big)

Sums accumulate in float64 (inside a scoped ``jax.enable_x64``), so millions of rows in
one bin stay exact to float32 precision and split gains agree with XGBoost, which also
accumulates in double. ``build_histogram`` is the only function whose result must be
summed across devices when rows are sharded (``lax.psum`` of its output).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._types import ACC_DTYPE, INDEX_DTYPE


def pack_gh(g, h):
    """Pack float32 g and h into one complex128 ``g + i h`` (under scoped x64)."""
    with jax.enable_x64(True):
        return g.astype(ACC_DTYPE) + 1j * h.astype(ACC_DTYPE)


def build_histogram(bins_t, gh, node, n_nodes: int, n_bins: int):
    """Histograms of g and h per (feature, node, bin).

    One 1-D scatter-add per feature of the packed ``g + i h`` into ``node * n_bins +
    bin``, with ``lax.scan`` over features (the fastest CPU formulation measured).

    Args:
      bins_t: ``(F, N)`` uint8 bins, feature-major.
      gh: ``(N,)`` complex128 packed gradients (``pack_gh``).
      node: ``(N,)`` int32 node of each row within the level, in ``[0, n_nodes]``;
        rows with ``node == n_nodes`` (finished leaves, padding) are dropped.
      n_nodes: static number of nodes in the level.
      n_bins: static bins per feature.

    Returns:
      ``(G, H)``, each ``(F, n_nodes, n_bins)`` float64.

    Example:
      >>> import numpy as np
      >>> b = np.array([[0, 1, 1]], np.uint8)
      >>> G, H = build_histogram(b, pack_gh(jnp.array([1., 2., 3.]), jnp.ones(3)),
      ...                        jnp.zeros(3, jnp.int32), 1, 2)
      >>> G.tolist(), H.tolist()
      ([[[1.0, 5.0]]], [[[1.0, 2.0]]])
    """
    # Skipped rows land in a dummy node slot that is sliced off: an out-of-range index
    # with mode="drop" made XLA's CPU scatter 3.5x slower when half the rows skipped
    # (branch mispredictions), a dummy slot costs nothing.
    size = (n_nodes + 1) * n_bins
    with jax.enable_x64(True):
        base = jnp.minimum(node.astype(INDEX_DTYPE), n_nodes) * n_bins

        def one_feature(_, b):
            idx = base + b.astype(INDEX_DTYPE)
            return None, jnp.zeros(size, jnp.complex128).at[idx].add(
                gh, mode="promise_in_bounds")

        _, hist = jax.lax.scan(one_feature, None, bins_t, unroll=2)
        hist = hist.reshape(bins_t.shape[0], n_nodes + 1, n_bins)[:, :n_nodes]
        return hist.real, hist.imag


def build_histogram_naive(bins_t, g, h, node, n_nodes: int, n_bins: int):
    """Reference implementation in NumPy float64 (for tests)."""
    bins_t = np.asarray(bins_t)
    g = np.asarray(g, ACC_DTYPE)
    h = np.asarray(h, ACC_DTYPE)
    node = np.asarray(node)
    F = bins_t.shape[0]
    G = np.zeros((F, n_nodes, n_bins))
    H = np.zeros((F, n_nodes, n_bins))
    keep = node < n_nodes
    for f in range(F):
        np.add.at(G[f], (node[keep], bins_t[f, keep]), g[keep])
        np.add.at(H[f], (node[keep], bins_t[f, keep]), h[keep])
    return G, H
