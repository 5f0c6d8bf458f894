r"""Classification losses beyond logistic: binary focal loss and multi-class softmax."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._base import Objective, check_binary_labels, sigmoid
from ._base import softmax as softmax_link
from ._checks import check_hyper, is_number, raise_bad_labels


def focal_loss(y, pred, *, gamma=2.0):
    r"""Binary focal loss on the margin (Lin et al., 2017), without class weighting.

    With :math:`p = \sigma(f)`, :math:`q = 1 - p`:

    .. math:: \ell = -y\,q^\gamma \log p - (1 - y)\,p^\gamma \log q

    computed from ``log_sigmoid`` (no overflow; :math:`q^\gamma = e^{\gamma \log q}`).
    The factor :math:`q^\gamma` shrinks the loss of well-classified rows; ``gamma = 0``
    is the logistic loss. Per class (y = 1 and y = 0 terms; y in (0, 1) mixes them
    linearly):

    - g1 = q^g (g p log p - q),  g0 = p^g (p - g q log q)   (g = gamma)
    - h1 = p q^g [g log p (q - g p) + (2g + 1) q],
      h0 = q p^g [g log q (p - g q) + (2g + 1) p]

    For gamma > 0 the Hessian is **negative** for confidently wrong rows (h1 < 0 when
    p is small: with y = 1, for f < -2.79 at gamma = 2, f < -3.10 at gamma = 1,
    f < -4.02 at gamma = 0.5; symmetrically for y = 0), so the loss is not convex
    (h_sign ``"any"``). Labels y in [0, 1]; response sigma(f);
    ``gamma >= 0``.

    Default ``hessian="clip"`` (negative h raised to the engine's floor, so those rows
    act through their gradient only), no refit; metric ``"logloss"``.

    >>> round(float(focal_loss(1.0, 0.0)), 4)
    0.1733
    """
    check_hyper("focal", "gamma", gamma, lambda g: g >= 0, ">= 0")
    log_p = jax.nn.log_sigmoid(pred)
    log_q = jax.nn.log_sigmoid(-pred)
    return -y * jnp.exp(gamma * log_q) * log_p - (1.0 - y) * jnp.exp(gamma * log_p) * log_q


def softmax_loss(y, pred, *, n_classes=None):
    r"""Multi-class cross-entropy on K margins: :math:`\ell = \log\sum_k e^{f_k} - f_y`.

    ``y`` is the class index 0..K-1 stored as a number; ``pred`` is the ``(K,)`` margin
    vector. With :math:`p = \mathrm{softmax}(f)` and :math:`e_y` the one-hot label:
    g = p - e_y (K,), H = diag(p) - p p^T (K, K), positive semidefinite and singular
    (adding a constant to every margin changes nothing); its diagonal p_k (1 - p_k) is
    positive (h_sign ``"positive"``, about the diagonal). Response softmax(f).

    ``n_classes`` (the number of outputs K) may be left None: training infers it as
    ``max(y) + 1``. Default ``hessian="exact"``, metric ``"mlogloss"``.

    >>> round(float(softmax_loss(0.0, jnp.zeros(2))), 4)
    0.6931
    """
    k = pred.shape[-1]
    if n_classes is not None and is_number(n_classes) and k != n_classes:
        raise ValueError(f"objectives.softmax(n_classes={n_classes}) got {k} margins per row")
    onehot = (jnp.arange(k) == y).astype(pred.dtype)
    return jax.nn.logsumexp(pred) - jnp.sum(onehot * pred)


def _check_softmax_labels(y, *, n_classes=None, **_):
    if n_classes is not None and is_number(n_classes) and not n_classes >= 1:
        raise ValueError(f"objectives.softmax needs n_classes >= 1, got {n_classes!r}")
    y = np.asarray(y, dtype=np.float64)
    bad = (y < 0) | (y != np.floor(y))
    domain = "that are class indices 0, 1, ..., K-1 (integers stored as numbers)"
    if n_classes is not None:
        bad |= y >= n_classes
        domain = f"that are class indices 0, 1, ..., {int(n_classes) - 1} (n_classes={n_classes})"
    raise_bad_labels("softmax", domain, bad, y)


def _infer_n_classes(y):
    """K = max(y) + 1 classes."""
    return int(np.max(y)) + 1


focal = Objective("focal", focal_loss, link=sigmoid, check_labels=check_binary_labels("focal"),
                  metric="logloss", hessian="clip", h_sign="any")
softmax = Objective("softmax", softmax_loss, link=softmax_link, check_labels=_check_softmax_labels,
                    metric="mlogloss", n_outputs="n_classes", infer_outputs=_infer_n_classes)
