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

import os

import jax
import jax.numpy as jnp
import numpy as np

from .._types import ACC_DTYPE, INDEX_DTYPE
from .exact import grid_exponent, pow2


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
            return None, jnp.zeros(size, jnp.complex128).at[idx].add(gh, mode="promise_in_bounds")

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


# --------------------------------------------------------------------------------------
# Accelerator formulations (GPU, TPU), chosen by the platform the program is lowered for
# --------------------------------------------------------------------------------------
HISTOGRAM_ENV = "JAXBOOST_HISTOGRAM"
"""Environment variable that forces one formulation on every platform (read when a
training program is traced): ``scatter``, ``fixed`` or ``onehot``; unset or ``auto``:
the platform's own (see ``histogram``)."""

FIXED_BITS = 62
"""The fixed-point histogram's budget: per-row values keep ``62 - ceil(log2(N + 1))``
bits, so that any int64 sum of ``N`` of them stays below ``2**62``."""

ONEHOT_DIGITS = 3
ONEHOT_ROWS = 2048
"""The one-hot histogram's rows per matrix product (its ``(F, rows, B)`` int8 one-hot
block, 14 MiB at 28 features and 256 bins)."""

ONEHOT_MAX_ROWS = 2**24
"""Rows per device the one-hot histogram accepts: each int32 sum adds at most 128 per
row, so ``2**24`` rows stay below ``2**31``."""


def build_histogram_fixed(bins_t, g, h, node, n_nodes: int, n_bins: int):
    r"""Histograms as exact int64 sums of fixed-point g and h: the GPU formulation.

    Each channel is put on a power-of-two grid fine enough for
    ``FIXED_BITS - ceil(log2(N + 1))`` bits of its largest ``|value|`` (38 bits at 10M
    rows, against float32's own 24), :math:`q_i = \mathrm{round}(g_i 2^e)`, and
    scatter-added as int64, one feature at a time. Integer addition is associative, so
    the histograms are the same bit for bit whatever order the GPU's atomic additions
    take (float atomics would make every model differ in its last bits from run to
    run); the float64 result is the integer sum times :math:`2^{-e}`, exact. The table
    has ``fixed_copies(n_nodes)`` private copies (row ``i`` adds into copy ``i % R``),
    summed at the end, so that a level of few nodes does not serialise its atomics on a
    few hundred addresses. Rows with ``node >= n_nodes`` get an out-of-range index and
    are dropped by the scatter (no atomic at all for them, which on a GPU makes skipped
    rows nearly free).

    Args and result as ``build_histogram``, with the channels ``g``, ``h`` ``(N,)``
    float32 given apart. The sums differ from the float64 ones by at most
    :math:`N 2^{-e-1}` per bin (rounding of each value to the grid).

    Example:
      >>> import numpy as np
      >>> b = np.array([[0, 1, 1]], np.uint8)
      >>> G, H = build_histogram_fixed(b, jnp.array([1., 2., 3.]), jnp.ones(3),
      ...                              jnp.zeros(3, jnp.int32), 1, 2)
      >>> G.tolist(), H.tolist()
      ([[[1.0, 5.0]]], [[[1.0, 2.0]]])
    """
    F, N = bins_t.shape
    bits = FIXED_BITS - int(np.ceil(np.log2(N + 1)))
    size = n_nodes * n_bins
    with jax.enable_x64(True):

        def quantize(x):
            x = x.astype(ACC_DTYPE)
            e = grid_exponent(x, bits)
            q = jnp.round(x * pow2(e, ACC_DTYPE)).astype(jnp.int64)
            return q, pow2(-e, ACC_DTYPE)

        qg, unit_g = quantize(g)
        qh, unit_h = quantize(h)
        q = jnp.stack([qg, qh], axis=1)  # (N, 2) int64
        # R private copies of the table, row i adding into copy i % R: neighbouring
        # rows (one GPU warp) rarely hit one address, which on a shallow level (few
        # nodes x 256 bins) would serialise the atomics; the copies are summed after.
        R = fixed_copies(n_nodes)
        copy = jnp.arange(N, dtype=INDEX_DTYPE) % R
        live = node < n_nodes
        # skipped rows start past the last copy, so every index of theirs is dropped
        base = jnp.where(live, (copy * n_nodes + node.astype(INDEX_DTYPE)) * n_bins, R * size)

        def one_feature(_, b):
            idx = base + b.astype(INDEX_DTYPE)
            table = jnp.zeros((R * size, 2), jnp.int64).at[idx].add(q, mode="drop")
            return None, table.reshape(R, size, 2).sum(axis=0)

        # 4 features per loop step: a GPU loop step costs a launch and a host read of
        # its condition, 28 of them per level would be a large share at 1M rows
        _, hist = jax.lax.scan(one_feature, None, bins_t, unroll=min(4, F))
        hist = hist.reshape(F, n_nodes, n_bins, 2).astype(ACC_DTYPE)
        return hist[..., 0] * unit_g, hist[..., 1] * unit_h


FIXED_TABLE = 1 << 17
"""Table slots (copies x nodes x 256 bins) of the fixed-point histogram: ``fixed_copies``
fills this many with copies, at most 32. The node count is the level's static width,
and below the root a level's live nodes may be one of them (the subtraction loop's
second level: one smaller child of 16 slots), so the copies are sized for the width,
not the live nodes: at 10M rows x 28 features one level of 1 node took 51 ms with one
copy and 10.7 with 32 on an H200, a level of 32 nodes 9.6 with one."""


def fixed_copies(n_nodes: int) -> int:
    """Private copies of the fixed-point histogram's table for ``n_nodes`` nodes of 256
    bins: ``FIXED_TABLE`` slots per feature in all, between 1 and 32 copies (a 2 MiB
    table per feature at most; zeroing and summing it is cheap next to the atomics).

    Example:
      >>> [fixed_copies(n) for n in (1, 4, 16, 32, 256, 1024)]
      [32, 32, 32, 16, 2, 1]
    """
    return int(min(32, max(1, FIXED_TABLE // (256 * n_nodes))))


def _digits(q, n_digits: int):
    """Balanced base-256 digits of int32 ``q`` (each in ``[-128, 127]``), lowest first:
    ``q = sum_c d_c 256**c`` when ``|q| < 2**(8 n_digits - 1)``."""
    out = []
    for _ in range(n_digits):
        d = ((q + 128) & 255) - 128
        out.append(d)
        q = (q - d) >> 8
    return out


def build_histogram_onehot(
    bins_t, g, h, node, n_nodes: int, n_bins: int, rows_per_block: int = ONEHOT_ROWS
):
    r"""Histograms as one-hot matrix products on quantized g and h: the TPU formulation
    (no per-row scatter, no 64-bit type in the row loop).

    g and h are put on a power-of-two grid of ``8 * ONEHOT_DIGITS - 2`` bits (22, about
    a float32 value's own 24) of their largest ``|value|`` and split into
    ``ONEHOT_DIGITS`` balanced base-256 digits, int8 each. Per block of rows, with
    :math:`O_{f,i,b} = [\mathrm{bin}_{f,i} = b]` and
    :math:`V_{i,(n,c)} = [\mathrm{node}_i = n]\, d_{c,i}` (both int8),

    .. math:: S_{f,b,(n,c)} = \sum_i O_{f,i,b}\, V_{i,(n,c)}

    is one int8 x int8 -> int32 matrix product per feature (the matrix unit's native
    type), accumulated over blocks in int32 (exact: at most 128 per row, and
    ``ONEHOT_MAX_ROWS`` rows per device). The digits are recombined at the end,
    :math:`G = 2^{-e} \sum_c 256^c S_c` in float64 (exact: below ``2**47``).

    Args and result as ``build_histogram_fixed``; ``rows_per_block`` rows per product
    (the last block is padded with skipped rows). The sums differ from the float64 ones
    by at most :math:`N 2^{-e-1}` per bin, with :math:`2^{-e}` about ``2**-22`` of the
    largest value.

    Example:
      >>> import numpy as np
      >>> b = np.array([[0, 1, 1]], np.uint8)
      >>> G, H = build_histogram_onehot(b, jnp.array([1., 2., 3.]), jnp.ones(3),
      ...                               jnp.zeros(3, jnp.int32), 1, 2)
      >>> G.tolist(), H.tolist()
      ([[[1.0, 5.0]]], [[[1.0, 2.0]]])
    """
    F, N = bins_t.shape
    if N > ONEHOT_MAX_ROWS:
        raise ValueError(
            f"the one-hot histogram sums at most {ONEHOT_MAX_ROWS} rows per "
            f"device in int32, got {N}; shard the rows over more devices "
            f"or set {HISTOGRAM_ENV}=fixed"
        )
    nd = ONEHOT_DIGITS
    bits = 8 * nd - 2  # the top digit stays below 64: no carry past the last

    def quantize(x):
        e = grid_exponent(x, bits)
        q = jnp.round(x * pow2(e, x.dtype)).astype(jnp.int32)
        return _digits(q, nd), e

    dg, eg = quantize(g.astype(jnp.float32))
    dh, eh = quantize(h.astype(jnp.float32))
    digits = jnp.stack(dg + dh, axis=1).astype(jnp.int8)  # (N, 2 nd)
    R = min(rows_per_block, N)
    n_blocks = -(-N // R)
    pad = n_blocks * R - N
    node_of = jnp.pad(node.astype(INDEX_DTYPE), (0, pad), constant_values=n_nodes)
    digits = jnp.pad(digits, ((0, pad), (0, 0)))
    bins_p = jnp.pad(bins_t, ((0, 0), (0, pad)))
    node_ids = jnp.arange(n_nodes, dtype=INDEX_DTYPE)
    bin_ids = jnp.arange(n_bins, dtype=INDEX_DTYPE)

    def block(acc, k):
        nodes = jax.lax.dynamic_slice_in_dim(node_of, k * R, R)
        dig = jax.lax.dynamic_slice_in_dim(digits, k * R, R)
        b = jax.lax.dynamic_slice_in_dim(bins_p, k * R, R, axis=1)
        vals = jnp.where(
            (nodes[:, None] == node_ids)[:, :, None], dig[:, None, :], jnp.int8(0)
        ).reshape(R, n_nodes * 2 * nd)
        one_hot = (b[:, :, None].astype(INDEX_DTYPE) == bin_ids).astype(jnp.int8)
        return acc + jnp.einsum(
            "frb,rc->fbc", one_hot, vals, preferred_element_type=jnp.int32
        ), None

    acc = jnp.zeros((F, n_bins, n_nodes * 2 * nd), jnp.int32)
    acc, _ = jax.lax.scan(block, acc, jnp.arange(n_blocks, dtype=INDEX_DTYPE))
    acc = acc.reshape(F, n_bins, n_nodes, 2, nd).transpose(3, 4, 0, 2, 1)
    with jax.enable_x64(True):
        weights = jnp.asarray([256.0**c for c in range(nd)], ACC_DTYPE)
        sums = (
            jnp.einsum("cfnb,c->fnb", acc[0].astype(ACC_DTYPE), weights),
            jnp.einsum("cfnb,c->fnb", acc[1].astype(ACC_DTYPE), weights),
        )
        return sums[0] * pow2(-eg, ACC_DTYPE), sums[1] * pow2(-eh, ACC_DTYPE)


def build_histogram_scatter(bins_t, g, h, node, n_nodes: int, n_bins: int):
    """``build_histogram`` with the channels given apart (the CPU formulation)."""
    return build_histogram(bins_t, pack_gh(g, h), node, n_nodes, n_bins)


METHODS = {
    "scatter": build_histogram_scatter,
    "fixed": build_histogram_fixed,
    "onehot": build_histogram_onehot,
}
"""The pure-JAX formulations by name (``HISTOGRAM_ENV``)."""


def forced_method():
    """The formulation ``HISTOGRAM_ENV`` forces, or None (``auto``, unset)."""
    name = os.environ.get(HISTOGRAM_ENV, "auto").strip().lower() or "auto"
    if name == "auto":
        return None
    if name not in METHODS:
        raise ValueError(f"{HISTOGRAM_ENV}={name!r}: expected one of auto, {', '.join(METHODS)}")
    return name


def histogram(bins_t, g, h, node, n_nodes: int, n_bins: int):
    """Histograms of g and h per (feature, node, bin), in the formulation of the
    platform the program is compiled for (``jax.lax.platform_dependent``, so one
    exported program carries each platform's own):

    * CPU: ``build_histogram`` (complex128 scatter, float64 sums: XGBoost's parity);
    * GPU (CUDA, ROCm): ``build_histogram_fixed`` (int64 fixed-point scatter:
      deterministic under atomics, exact);
    * TPU: ``build_histogram_onehot`` (int8 one-hot matrix products, int32 sums).

    ``HISTOGRAM_ENV`` forces one of them everywhere. Args and result as
    ``build_histogram_fixed``.

    Example:
      >>> import numpy as np
      >>> G, H = histogram(np.array([[0, 1, 1]], np.uint8), jnp.array([1., 2., 3.]),
      ...                  jnp.ones(3), jnp.zeros(3, jnp.int32), 1, 2)
      >>> G.tolist(), H.tolist()
      ([[[1.0, 5.0]]], [[[1.0, 2.0]]])
    """
    forced = forced_method()
    if forced is not None:
        return METHODS[forced](bins_t, g, h, node, n_nodes, n_bins)

    def branch(name):
        fn = METHODS[name]
        return lambda b, a, c, n: fn(b, a, c, n, n_nodes, n_bins)

    with jax.enable_x64(True):
        return jax.lax.platform_dependent(
            bins_t,
            g,
            h,
            node,
            cpu=branch("scatter"),
            cuda=branch("fixed"),
            rocm=branch("fixed"),
            tpu=branch("onehot"),
            default=branch("fixed"),
        )
