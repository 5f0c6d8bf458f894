r"""From a per-row loss to per-row gradients and Hessians.

For a scalar margin ``f`` and loss :math:`\ell(y, f)`:

.. math::  g_i = w_i\,\partial_f \ell(y_i, f_i), \qquad h_i = w_i\,\partial_f^2 \ell(y_i, f_i)

computed in one forward-over-reverse pass, ``jax.jvp`` of ``jax.grad``, vmapped over
rows (one pass instead of a gradient pass plus a Hessian pass).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from objectives import Objective

from .errors import LossError


def loss_name(loss) -> str:
    """A readable name for a loss callable, for error messages."""
    if isinstance(loss, Objective):
        return f"objectives.{loss.name}"
    return getattr(loss, "__qualname__", None) or getattr(loss, "__name__", None) or repr(loss)


def _row_grad_hess(loss):
    if isinstance(loss, Objective) and loss.grad_hess is not None:
        return loss.row_grad_hess()
    d_loss = jax.grad(loss, argnums=1)

    def gh(y, f):
        return jax.jvp(lambda p: d_loss(y, p), (f,), (jnp.ones_like(f),))

    return gh


def grad_hess(loss, y, pred, sample_weight=None):
    """Per-row g and h of ``loss`` at margins ``pred``.

    Args:
      loss: per-row ``loss(y, pred) -> scalar`` (or an ``objectives`` entry).
      y: ``(N,)`` labels.
      pred: ``(N,)`` float32 margins.
      sample_weight: optional ``(N,)`` float32 weights multiplying g and h.

    Returns:
      ``(g, h)``, each ``(N,)`` float32.

    Example:
      >>> import jax.numpy as jnp
      >>> g, h = grad_hess(lambda y, p: 0.5 * (y - p) ** 2, jnp.ones(2), jnp.zeros(2))
      >>> g.tolist(), h.tolist()
      ([-1.0, -1.0], [1.0, 1.0])
    """
    g, h = jax.vmap(_row_grad_hess(loss))(y, pred)
    g = g.astype(jnp.float32)
    h = h.astype(jnp.float32)
    if sample_weight is not None:
        g = g * sample_weight
        h = h * sample_weight
    return g, h


def check_loss(loss, y_row, pred_row):
    """Raise a clear error when ``loss`` cannot be a per-row loss.

    Traces the loss abstractly on one row (no computation): it must accept
    ``(y, pred)`` and return a scalar.
    """
    name = loss_name(loss)
    if not callable(loss):
        raise TypeError(f"objective must be a callable loss(y, pred) or an objectives "
                        f"entry, got {type(loss).__name__}")
    try:
        out = jax.eval_shape(loss, y_row, pred_row)
    except Exception as e:  # the user's code failed while being traced
        raise TypeError(
            f"the loss {name} failed when called as loss(y, pred) on one row "
            f"(y {y_row.shape} {y_row.dtype}, pred {pred_row.shape} {pred_row.dtype}): "
            f"{type(e).__name__}: {e}") from e
    if not hasattr(out, "shape") or out.shape != ():
        shape = getattr(out, "shape", type(out).__name__)
        raise LossError(
            f"the loss {name} must return a scalar for one row, but returned shape "
            f"{shape} (before round 0). Write the loss for a single row "
            f"(y and pred scalars); jaxboost vmaps it over rows.")
    if not jnp.issubdtype(out.dtype, jnp.floating):
        raise LossError(f"the loss {name} must return a floating-point scalar, "
                        f"got dtype {out.dtype} (before round 0)")


def fit_base_margin(loss, y, sample_weight=None, n_steps: int = 30):
    r"""The constant margin minimising the weighted loss, for any loss.

    .. math:: c^* = \arg\min_c \sum_i w_i\,\ell(y_i, c)

    by safeguarded Newton steps: the step :math:`-\sum w g / \sum w h` (a gradient step
    when :math:`\sum w h \le 0`), halved until the loss does not increase, until a step
    leaves the float32 value unchanged (at most ``n_steps``). Sums are
    accumulated in float64. Squared loss gives the weighted mean, logistic the
    log-odds of the weighted mean.

    Args:
      loss: per-row loss.
      y: ``(N,)`` labels (a JAX array).
      sample_weight: optional ``(N,)`` weights.

    Returns:
      float32 scalar (a JAX array).

    Example:
      >>> import jax.numpy as jnp
      >>> c = fit_base_margin(lambda y, p: 0.5 * (y - p) ** 2, jnp.array([1., 2., 6.]))
      >>> round(float(c), 5)
      3.0
    """
    return _fit_base_margin(loss, y, sample_weight, n_steps)


@functools.partial(jax.jit, static_argnums=(0, 3))
def _fit_base_margin(loss, y, sample_weight, n_steps):
    w = jnp.ones(y.shape[0], jnp.float32) if sample_weight is None else sample_weight
    gh = _row_grad_hess(loss)
    with jax.enable_x64(True):
        def total(c):
            f = jnp.full(y.shape[0], c, jnp.float32)
            return jnp.sum(w.astype(jnp.float64) * jax.vmap(loss)(y, f).astype(jnp.float64))

        def step(_, c):
            f = jnp.full(y.shape[0], c, jnp.float32)
            g, h = jax.vmap(gh)(y, f)
            G = jnp.sum(w.astype(jnp.float64) * g.astype(jnp.float64))
            H = jnp.sum(w.astype(jnp.float64) * h.astype(jnp.float64))
            d = jnp.where(H > 0, -G / jnp.where(H > 0, H, 1.0), -G)
            d = jnp.clip(d, -1e3, 1e3)
            l0 = total(c)

            def shrink(state):
                s, _ = state
                return s * 0.5, total((c + s * d).astype(jnp.float32))

            def need(state):
                s, l1 = state
                return (~(l1 <= l0)) & (s > 1e-6)

            init = (jnp.float64(1.0), total((c + d).astype(jnp.float32)))
            s, l1 = jax.lax.while_loop(need, shrink, init)
            return jnp.where(l1 <= l0, (c + s * d).astype(jnp.float32), c)

        # Stop once a step no longer moves c (float32): Newton needs a handful of steps.
        def not_done(state):
            i, c, c_prev = state
            return (i < n_steps) & (c != c_prev)

        def body(state):
            i, c, _ = state
            return i + 1, step(i, c), c

        _, c, _ = jax.lax.while_loop(not_done, body,
                                     (jnp.int32(0), jnp.float32(0.0), jnp.float32(jnp.nan)))
        return c
