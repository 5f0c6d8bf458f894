r"""Classification losses beyond logistic: binary focal loss and multi-class softmax."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._base import Objective, check_binary_labels, sigmoid
from ._base import softmax as softmax_link
from ._checks import Interval, check_hyper, is_number, raise_bad_labels, real_hyper


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


MAX_CLASSES = 10_000
"""Most classes (``n_classes``) of a softmax model, and most outputs ``K`` of any model
a file may declare: the one limit training and both model readers share. The dense
``K x K`` Hessian of one row holds ``K**2`` float32 numbers, 400 MB at this limit, and
one boosting round grows ``K`` trees; label spaces larger than this need another
method (hierarchical or sampled softmax, ranking), not a wider softmax. A file that
declares more is refused before anything of that size is allocated."""

SOFTMAX_CURVATURES = ("exact", "xgboost", "abs_residual")
"""Values of ``objectives.softmax``'s ``curvature``: the h the trees see (see
``softmax_loss``)."""


def softmax_loss(y, pred, *, n_classes=None, curvature="exact"):
    r"""Multi-class cross-entropy on K margins: :math:`\ell = \log\sum_k e^{f_k} - f_y`.

    ``y`` is the class index 0..K-1 stored as a number; ``pred`` is the ``(K,)`` margin
    vector. With :math:`p = \mathrm{softmax}(f)` and :math:`e_y` the one-hot label:
    g = p - e_y (K,), H = diag(p) - p p^T (K, K), positive semidefinite and singular
    (adding a constant to every margin changes nothing); its diagonal p_k (1 - p_k) is
    positive (h_sign ``"positive"``, about the diagonal). Response softmax(f).

    ``n_classes`` (the number of outputs K) may be left None: training infers it as
    ``max(y) + 1``. Default ``hessian="exact"``, metric ``"mlogloss"``.

    **Curvature.** ``curvature`` chooses the h the trees are grown on; it does not
    change the loss, its value or g (only the Hessian, through the entry's closed-form
    ``grad_hess``):

    - ``"exact"`` (default): H above, in closed form with each diagonal entry
      :math:`p_k \sum_{j \ne k} p_j` (autodiff's :math:`p_k - p_k^2` cancels to noise
      where one p is near 1, and such rows were flagged as not PSD). With one tree per
      class per round (``multi_strategy="one_output_per_tree"``, the default) class k's
      tree sees the
      diagonal :math:`h_k = p_k (1 - p_k)`, computed in closed form (``O(K)`` per row;
      no ``K x K`` matrix is formed); a ``"multi_output_tree"`` sees all of H.
    - ``"xgboost"``: :math:`h_k = \max(2 p_k (1 - p_k), 10^{-16})` as a diagonal
      matrix, what XGBoost's ``multi:softprob`` / ``multi:softmax`` use (3.2 included;
      the factor 2 dates from its first versions), computed in float32 the way XGBoost
      computes it. :math:`2 p_k (1 - p_k)` is the exact diagonal plus the absolute row
      sum of the off-diagonal terms, :math:`\sum_{j \ne k} p_k p_j = p_k (1 - p_k)`, so
      ``diag(2 p (1 - p)) - H`` is diagonally dominant, hence positive semidefinite: the
      per-class quadratic models bound the exact second-order model from above when
      all K trees step at once.
    - ``"abs_residual"``: :math:`h_k = \max(|p_k - e_{y,k}|, 10^{-16}) = |g_k|`, the
      rule XGBoost's main branch adopted after 3.2 (dmlc/xgboost pull request 12537).
      It is at least the exact diagonal (by the factor :math:`1/(1 - p_k)` off the
      label and :math:`1/p_y` on it), and since :math:`|G| \le \sum |g| = H` in every
      node, every leaf weight is at most 1 in absolute value.

    **What the factor 2 changes.** g is the same, so in every node the ``"xgboost"``
    curvature has :math:`H' = 2H`: the leaf weight is
    :math:`-T_\alpha(G) / (2H + \lambda)`, the split score
    :math:`T_\alpha(G)^2 / (2H + \lambda)`, and ``min_child_weight`` compares against
    :math:`2H`. Scaling by 2 is exact in floating point, so a model with
    ``curvature="xgboost"`` and ``(learning_rate, reg_lambda, min_child_weight,
    gamma, max_delta_step)`` has the same trees and predictions as the default with
    ``(learning_rate / 2, reg_lambda / 2, min_child_weight / 2, 2 gamma,
    2 max_delta_step)`` and the same ``reg_alpha``, up to the rounding of p (XGBoost's
    float32 formula here, autodiff there), the minimum gain 1e-6 a split needs and the
    1e-16 floor, which do not scale (``tests/test_softmax_hessian.py`` asserts equal
    split features and probabilities to 1e-6). At XGBoost's defaults
    (``learning_rate=0.3``, ``reg_lambda=1``) the ``"xgboost"`` steps are therefore
    about half as long as the exact ones where H is much larger than lambda; on that
    test's data the two conventions' probabilities differ by up to 0.19-0.21 after 10
    rounds.

    **Matching XGBoost.** ``objectives.softmax(curvature="xgboost")`` with
    ``base_margin=np.zeros(K)`` (XGBoost: ``base_score=0``; any constant vector gives
    the same probabilities) and the same tree parameters reproduces
    ``multi:softprob``'s probabilities with one tree per class (measured 1.2e-7,
    asserted to 1e-5 in ``tests/test_softmax_hessian.py``: XGBoost 3.2, ``hist`` on
    features with fewer distinct values than ``max_bin``, and ``exact``). With
    ``gamma > 0`` compare with XGBoost's ``exact`` method: ``hist`` refuses low-gain
    splits while growing, where jaxboost post-prunes. XGBoost's
    ``multi_strategy="multi_output_tree"`` is not matched.

    >>> round(float(softmax_loss(0.0, jnp.zeros(2))), 4)
    0.6931
    >>> import objectives
    >>> g, h = objectives.softmax(curvature="xgboost").row_grad_hess()(0.0, jnp.zeros(2))
    >>> g.tolist(), jnp.diagonal(h).tolist()
    ([-0.5, 0.5], [0.5, 0.5])
    """
    _check_softmax_params(curvature=curvature)
    k = pred.shape[-1]
    if n_classes is not None and is_number(n_classes) and k != n_classes:
        raise ValueError(f"objectives.softmax(n_classes={n_classes}) got {k} margins per row")
    onehot = (jnp.arange(k) == y).astype(pred.dtype)
    return jax.nn.logsumexp(pred) - jnp.sum(onehot * pred)


def _softmax_grad_hess(y, pred, *, n_classes=None, curvature="exact"):
    """``(g (K,), h (K, K))`` of one row under ``curvature`` (see ``softmax_loss``)."""
    if curvature == "exact":
        g = jax.grad(softmax_loss, argnums=1)(y, pred, n_classes=n_classes)
        return g, _softmax_hessian(_softmax_probabilities(pred))
    g, h = _softmax_grad_hess_diag(y, pred, n_classes=n_classes, curvature=curvature)
    return g, jnp.diag(h)


def _softmax_hessian(p):
    r"""``(K, K)`` :math:`H = \operatorname{diag}(p) - p p^\top` of probabilities ``p``,
    its diagonal :math:`p_k (1 - p_k)` as ``_softmax_diagonal`` computes it.

    Autodiff forms :math:`p_k - p_k^2` for the diagonal, which loses its digits where
    one p is near 1: in float32 at margins a dozen apart its error reached 60 % of
    H's size, and its smallest eigenvalue -30 % (164 of 2,000 rows not PSD). Here every
    row of H sums to zero up to the rounding of its own terms, so H stays diagonally
    dominant, hence positive semi-definite, to float32 rounding.

    >>> _softmax_hessian(jnp.array([0.5, 0.25, 0.25])).tolist()[0]
    [0.25, -0.125, -0.125]
    """
    eye = jnp.eye(p.shape[-1], dtype=bool)
    return jnp.where(eye, _softmax_diagonal(p)[:, None], -p[:, None] * p[None, :])


def _softmax_diagonal(p):
    r"""``(K,)`` :math:`p_k (1 - p_k)`, with :math:`1 - p_k` of a p above 1/2 (at most
    one class) summed from the other classes' p (``1 - p`` in float32 cancels to
    noise where p is near 1; up to 1/2 it is exact to rounding).

    >>> _softmax_diagonal(jnp.array([1 - 2.0**-20, 2.0**-21, 2.0**-21])).tolist()[0] > 0
    True
    """
    top = p > 0.5
    others = jnp.sum(jnp.where(top, 0.0, p))
    return p * jnp.where(top, others, 1.0 - p)


def _softmax_probabilities(pred):
    """p = softmax(f) in XGBoost's float32 arithmetic: the largest margin, floored at
    FLT_MIN as XGBoost initialises it, is subtracted before exp; p = e_k / sum(e)."""
    wmax = jnp.maximum(jnp.max(pred), jnp.finfo(jnp.float32).tiny)
    e = jnp.exp(pred - wmax)
    return e / jnp.sum(e)


def _softmax_grad_hess_diag(y, pred, *, n_classes=None, curvature="exact"):
    r"""``(g (K,), d (K,))``: g and the diagonal of the h of ``_softmax_grad_hess``,
    in ``O(K)`` (no ``K x K`` matrix): what one tree per class reads.

    ``"exact"``: g by autodiff (as ``_softmax_grad_hess``), :math:`d_k = p_k (1 - p_k)`
    in closed form (``_softmax_diagonal``, the diagonal of the full H; with the same p
    as ``"xgboost"``, whose ``d`` is then exactly twice this one above its floor except
    in a class whose p is above 1/2, where ``1 - p`` is summed from the other classes).
    """
    _check_softmax_params(curvature=curvature)
    p = _softmax_probabilities(pred)
    if curvature == "exact":
        return jax.grad(softmax_loss, argnums=1)(y, pred, n_classes=n_classes), _softmax_diagonal(p)
    g = p - (jnp.arange(pred.shape[-1]) == y).astype(pred.dtype)
    h = 2.0 * p * (1.0 - p) if curvature == "xgboost" else jnp.abs(g)
    return g, jnp.maximum(h, 1e-16)


def _check_softmax_params(*, curvature="exact", n_classes=None, **_):
    if n_classes is not None and not isinstance(n_classes, jax.core.Tracer):
        if isinstance(n_classes, (bool, np.bool_)) or not isinstance(n_classes, (int, np.integer)):
            raise TypeError(
                f"objectives.softmax needs n_classes to be None or an integer, "
                f"got {type(n_classes).__name__} {n_classes!r}"
            )
        if not 1 <= n_classes <= MAX_CLASSES:
            raise ValueError(
                f"objectives.softmax needs n_classes in [1, MAX_CLASSES = "
                f"{MAX_CLASSES}] (objectives.MAX_CLASSES), got {n_classes}"
            )
    if not isinstance(curvature, str) or curvature not in SOFTMAX_CURVATURES:
        raise ValueError(
            f"objectives.softmax needs curvature one of "
            f"{list(SOFTMAX_CURVATURES)}, got {curvature!r}"
        )


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


def _softmax_intercept(y, w, *, n_classes=None, **_):
    """The log of the weighted class shares less their mean (softmax margins are free
    up to a constant; this one sums to 0), or None where a class has no weight."""
    K = n_classes if n_classes is not None else int(np.max(y)) + 1
    shares = np.bincount(y.astype(np.int64), weights=w, minlength=K)[:K] / w.sum()
    if not (shares > 0).all():
        return None
    c = np.log(shares)
    return c - c.mean()


def _infer_n_classes(y):
    """K = max(y) + 1 classes."""
    return int(np.max(y)) + 1


focal = Objective(
    "focal",
    focal_loss,
    link=sigmoid,
    check_labels=check_binary_labels("focal"),
    metric="logloss",
    hessian="clip",
    h_sign="any",
    check_params=real_hyper("focal", "gamma", Interval(lo=0.0, lo_closed=True), ">= 0"),
)
softmax = Objective(
    "softmax",
    softmax_loss,
    link=softmax_link,
    grad_hess=_softmax_grad_hess,
    check_labels=_check_softmax_labels,
    metric="mlogloss",
    n_outputs="n_classes",
    infer_outputs=_infer_n_classes,
    check_params=_check_softmax_params,
    grad_hess_diag=_softmax_grad_hess_diag,
    intercept=_softmax_intercept,
)
