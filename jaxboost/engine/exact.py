r"""Quantized sums: the same model whatever the number of devices or processes.

Floating-point addition is not associative, so a histogram summed over 4 devices
(``lax.psum`` of 4 partial sums) can differ in its last bit from the same histogram
summed on one device, and a split decided by that bit grows a different tree. In the
quantized mode (``train(..., quantize=True)``) every value that is summed is first put
on a power-of-two grid, so that every sum is exact, and exact sums do not depend on the
order of the additions:

* per round, the largest :math:`|g_i|` over all rows (``pmax``: exact in any order)
  fixes a grid :math:`2^{-e}` with :math:`\max_i |g_i| < 2^{b - e}`, and each
  :math:`g_i` is rounded to it: :math:`\tilde g_i = \mathrm{round}(g_i 2^e) 2^{-e}`.
  The same for h (its own grid);
* :math:`b = \min(24, 52 - \lceil \log_2 N \rceil)` for :math:`N` rows in all:
  24 significant bits of the largest value (float32's own precision), and a bound
  :math:`N 2^b \le 2^{52}` on any sum in units of the grid, so the float64 histogram
  sums, their cross-device sums, and the sibling subtraction are all exact integers
  times :math:`2^{-e}` (overflow is impossible by construction; ``check_rows`` refuses
  data too large for 8 bits);
* the base-margin fit and the Newton leaf refit sum float64 values on a grid of
  :math:`52 - \lceil \log_2 N \rceil` bits in the same way (``exact_sum``).

Everything else in a round is per row or computed identically on every device from
the exact sums, so the model is bit-identical for 1, 4 or 64 devices and any number of
processes. The price: values below :math:`2^{-24}` of the round's largest are rounded
(to zero, at the extreme).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .._types import FLOAT_DTYPE, INDEX_DTYPE

GRID_BITS = 24  # float32 holds integers up to 2**24 exactly
MIN_BITS = 8


def _identity(x):
    return x


def ceil_log2(n_total):
    """An int32 ``k`` with ``n_total <= 2**k`` (traced-friendly; ``n_total >= 1``; one
    more than needed for exact powers of two).

    Example:
      >>> [int(ceil_log2(n)) for n in (1, 3, 1000, 1024)]
      [1, 2, 10, 11]
    """
    _, k = jnp.frexp(jnp.asarray(n_total, FLOAT_DTYPE))
    return k.astype(INDEX_DTYPE)


def grid_bits(n_total):
    """Significant bits kept per value when ``n_total`` values are summed exactly:
    ``min(24, 52 - ceil_log2(n_total))``.

    Example:
      >>> int(grid_bits(10**6)), int(grid_bits(2**40))
      (24, 11)
    """
    return jnp.minimum(GRID_BITS, 52 - ceil_log2(n_total))


def check_rows(n_total: int) -> None:
    """Refuse data so large that the grid would keep fewer than ``MIN_BITS`` bits.

    Example:
      >>> check_rows(10**9)  # fine: 22 bits
      >>> check_rows(2**45)  # doctest: +ELLIPSIS
      Traceback (most recent call last):
      ...
      ValueError: quantize=True sums 35184372088832 rows exactly in float64, which ...
    """
    if n_total >= 2 ** (52 - MIN_BITS):
        raise ValueError(
            f"quantize=True sums {n_total} rows exactly in float64, which "
            f"leaves fewer than {MIN_BITS} bits per gradient; train with "
            f"quantize=False"
        )


def pow2(e, dtype):
    r"""``2.0 ** e`` in ``dtype`` (float32 or float64), exactly: the float is built from
    its bits (exponent field ``e + bias``, mantissa 0), for integer ``e`` in the normal
    range (``|e| <= 126`` in float32, ``1022`` in float64; ``grid_exponent`` clips to
    120 and 1000).

    ``jnp.ldexp(1.0, e)`` computes ``m * 2.0 ** e`` with a floating-point power: on an
    H200 (jax 0.11.2, ``benchmarks/gpu_parity_probe.py``) it missed the exact power at
    244 of the 2,001 float64 exponents in ``[-1000, 1000]`` (none in float32, none on
    the CPU), and the fixed-point histogram's bins came back 1 ulp from their exact
    sums (``tests/test_histogram.py``).

    Example:
      >>> import jax.numpy as jnp
      >>> pow2(jnp.arange(-2, 3), jnp.float32).tolist()
      [0.25, 0.5, 1.0, 2.0, 4.0]
    """
    if jnp.dtype(dtype) == jnp.float64:
        ints, bias, mantissa = jnp.int64, 1023, 52
    elif jnp.dtype(dtype) == jnp.float32:
        ints, bias, mantissa = jnp.int32, 127, 23
    else:
        raise TypeError(f"pow2 builds float32 or float64 powers, got {jnp.dtype(dtype)}")
    if ints == jnp.int64 and not jax.config.read("jax_enable_x64"):
        raise TypeError("pow2 in float64 needs 64-bit types (inside jax.enable_x64(True))")
    field = (jnp.asarray(e).astype(ints) + bias) << mantissa
    return jax.lax.bitcast_convert_type(field, jnp.dtype(dtype))


def to_grid(x, n_total, *, reduce_max=_identity):
    r"""``x`` (float32, any shape) rounded to the power-of-two grid of this round.

    The grid :math:`2^{-e}` keeps ``grid_bits(n_total)`` significant bits of the largest
    ``|x|`` over all devices (``reduce_max`` takes the maximum across them, e.g. a
    ``lax.pmax``); then any float64 sum of ``n_total`` such values is exact.

    Example:
      >>> import jax.numpy as jnp
      >>> to_grid(jnp.array([1.0, 1e-9, -0.3]), 10).tolist()
      [1.0, 0.0, -0.2999999523162842]
    """
    e = grid_exponent(x, grid_bits(n_total), reduce_max=reduce_max, limit=120)
    return jnp.round(x * pow2(e, x.dtype)) * pow2(-e, x.dtype)


def exact_scale(x, n_total, *, reduce_max=_identity):
    """Power-of-two ``s`` such that ``round(x * s)`` summed over ``n_total`` values stays
    below ``2**52`` (``x`` float64; the maximum taken over every device)."""
    e = grid_exponent(x, 52 - ceil_log2(n_total), reduce_max=reduce_max, limit=1000)
    return pow2(e, x.dtype)


def grid_exponent(x, bits, *, reduce_max=_identity, limit=None):
    """``e`` with ``max |x| * 2**e < 2**bits`` (the maximum over every device), clipped
    to ``[-limit, limit]`` so that ``2**e`` and ``2**-e`` stay finite in ``x``'s dtype
    (``limit`` None: 1000 for float64, else 120). The grids of the quantized mode here
    and of the accelerators' fixed-point histograms (``engine.histogram``)."""
    if limit is None:
        limit = 1000 if x.dtype == jnp.float64 else 120
    _, k = jnp.frexp(reduce_max(jnp.max(jnp.abs(x))))  # max |x| < 2**k
    return jnp.clip(bits - k, -limit, limit)


def exact_sum(x, n_total, *, axis=None, reduce_max=_identity):
    """The sum of float64 ``x`` on a grid fine enough for 52 - log2(N) bits, exactly.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> with jax.enable_x64(True):
      ...     x = jax.random.normal(jax.random.key(0), (1000,), jnp.float64)
      ...     bool(exact_sum(x, 1000) == exact_sum(x[::-1], 1000))
      True
    """
    s = exact_scale(x, n_total, reduce_max=reduce_max)
    return jnp.sum(jnp.round(x * s), axis=axis) / s
