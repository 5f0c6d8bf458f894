r"""Learning-to-rank losses over the rows of a query: RankNet, LambdaRank, ListNet.

Each loss is written for one query, ``loss(y, f, mask) -> scalar`` on ``(S,)`` vectors
(labels: graded relevance, larger is more relevant; ``f``: margins, the ranking
scores; ``mask`` false on padding). Train with ``train(entry, X, y, group=query_ids)``.
Each entry carries its closed-form Hessian diagonal, so every query size gets the
exact diagonal (no Hutchinson estimate).

Notation: :math:`P = \{(i, j) : y_i > y_j\}` the ordered pairs of a query,
:math:`s_{ij} = \sigma (f_i - f_j)`, :math:`p_{ij} = 1 / (1 + e^{s_{ij}})` the modelled
probability that the pair is ranked wrongly.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._checks import LabelsIn, check_hyper, raise_bad_labels
from ._group import GroupObjective
from ._sort import pairwise_ranks


def _pairs(y, mask):
    """``(S, S)`` bool: i and j both real rows of the query and y_i > y_j."""
    return mask[:, None] & mask[None, :] & (y[:, None] > y[None, :])


@jax.custom_jvp
def _pair_sum(fa, fb, valid, w, sign, sigma):
    r"""The pair losses :math:`\sum_{ab} [v_{ab}]\, w_{ab} \log(1 + e^{-z_{ab}})`,
    :math:`z_{ab} = \sigma\, s_{ab} (f^a_a - f^b_b)` over rows ``fa`` ``(A,)`` against
    rows ``fb`` ``(B,)`` (``valid``, ``w``, ``sign`` ``(A, B)``; ``w`` and ``sign`` held
    constant), differentiated in ``fa``, ``fb`` and ``sigma`` by its closed form: with
    :math:`p = 1 / (1 + e^{z})`, :math:`\partial / \partial f^a_a = -\sum_b v w \sigma s p`,
    :math:`\partial / \partial f^b_b = \sum_a v w \sigma s p`. Autodiff of the sum and a
    separate closed-form Hessian took 24 ms where the closed forms take 3 (5,000 queries
    of 20 rows: XLA ran the pair tensors through many passes)."""
    z = sigma * sign * (fa[:, None] - fb[None, :])
    return jnp.sum(jnp.where(valid, w * jnp.logaddexp(0.0, -z), 0.0))


@_pair_sum.defjvp
def _pair_sum_jvp(primals, tangents):
    fa, fb, valid, w, sign, sigma = primals
    dfa, dfb, _, _, _, dsigma = tangents  # no derivative in the weights or signs
    d = sign * (fa[:, None] - fb[None, :])
    p = jax.nn.sigmoid(-sigma * d)
    c = jnp.where(valid, w * p, 0.0)
    value = jnp.sum(jnp.where(valid, w * jnp.logaddexp(0.0, -sigma * d), 0.0))
    cs = c * sign
    tangent = -sigma * (jnp.sum(jnp.sum(cs, axis=1) * dfa) - jnp.sum(jnp.sum(cs, axis=0) * dfb))
    tangent = tangent - jnp.sum(c * d) * dsigma
    return value, tangent


def _pair_hess_diag(y, f, mask, weight, sigma):
    """diag of the Hessian of sum_{(i,j) in P} weight_ij log(1 + exp(-s_ij)) (weight
    constant): each pair adds weight sigma^2 p (1 - p) to both of its rows."""
    pair = _pairs(y, mask)
    s = sigma * (f[:, None] - f[None, :])
    p = jax.nn.sigmoid(-s)
    c = jnp.where(pair, weight * sigma**2 * p * (1.0 - p), 0.0)
    return jnp.where(mask, jnp.sum(c, axis=1) + jnp.sum(c, axis=0), 0.0)


def ranknet_loss(y, f, mask, *, sigma=1.0):
    r"""RankNet's pairwise logistic loss, :math:`L = \sum_{(i,j) \in P} \log(1 + e^{-s_{ij}})`.

    :math:`g_i = -\sigma \sum_{j:(i,j) \in P} p_{ij} + \sigma \sum_{j:(j,i) \in P} p_{ji}`,
    :math:`h_i = \sigma^2 \sum_{\text{pairs} \ni i} p (1 - p) > 0` (Burges et al. 2005).
    Labels: any finite numbers (only their order within a query matters). The same pairs
    and loss as XGBoost's ``rank:pairwise`` when that uses every pair
    (``lambdarank_pair_method="topk"`` with ``lambdarank_num_pair_per_sample`` at least
    the query size). Default metric ``"ndcg@10"``.

    >>> round(float(ranknet_loss(jnp.array([1.0, 0.0]), jnp.zeros(2), jnp.ones(2, bool))), 4)
    0.6931
    """
    check_hyper("ranknet", "sigma", sigma, lambda s: s > 0, "> 0")
    pair = _pairs(y, mask)
    ones = jnp.ones(pair.shape, f.dtype)
    return _pair_sum(f, f, pair, ones, ones, jnp.asarray(sigma, f.dtype))


def _ranknet_hess_diag(y, f, mask, *, sigma=1.0):
    return _pair_hess_diag(y, f, mask, 1.0, sigma)


def _ndcg_swap_weights(y, f, mask, k):
    r""":math:`|\Delta \mathrm{NDCG}_{ij}|` of swapping rows i and j in the ranking by ``f``
    (exponential gain, cut-off ``k``), ``(S, S)``, with no gradient."""
    y, f = jax.lax.stop_gradient(y), jax.lax.stop_gradient(f)
    S = y.shape[0]
    k = S if k is None else min(int(k), S)
    gain = jnp.where(mask, jnp.exp2(y) - 1.0, 0.0)
    rank = pairwise_ranks(jnp.where(mask, -f, jnp.inf))  # position in the ranking by f
    pos = jnp.arange(S, dtype=jnp.float32)  # float32 whatever the global x64 flag
    disc_at = jnp.where(pos < k, 1.0 / jnp.log2(pos + 2.0), 0.0)
    disc = disc_at[rank]
    ideal = jnp.zeros_like(gain).at[pairwise_ranks(-gain)].set(gain)  # gains, largest first
    idcg = jnp.sum(ideal * disc_at)
    delta = jnp.abs(gain[:, None] - gain[None, :]) * jnp.abs(disc[:, None] - disc[None, :])
    return delta / jnp.where(idcg > 0, idcg, 1.0)


def lambdarank_loss(y, f, mask, *, sigma=1.0, k=None):
    r"""LambdaRank: RankNet's pairs weighted by the NDCG change of swapping them.

    :math:`L = \sum_{(i,j) \in P} |\Delta_{ij}| \log(1 + e^{-s_{ij}})` with
    :math:`|\Delta_{ij}| = |G(y_i) - G(y_j)|\,|D(r_i) - D(r_j)| / \mathrm{IDCG@k}`, gain
    :math:`G(y) = 2^y - 1`, discount :math:`D(r) = 1 / \log_2(r + 1)` for the rank
    :math:`r \le k` of a row under the current scores (0 beyond ``k``), and
    :math:`|\Delta_{ij}|` held constant (``jax.lax.stop_gradient``): the gradient is
    then LambdaRank's lambda, :math:`g_i = -\sigma \sum_{j:(i,j) \in P} |\Delta_{ij}|
    p_{ij} + \sigma \sum_{j:(j,i) \in P} |\Delta_{ji}| p_{ji}`, and
    :math:`h_i = \sigma^2 \sum_{\text{pairs} \ni i} |\Delta| p (1 - p) \ge 0`
    (Burges 2010). ``k=None`` weighs the whole query. Labels: graded relevance y >= 0.
    The same pairs and weights as XGBoost's ``rank:ndcg`` (exponential gain) when that
    uses every pair (``lambdarank_pair_method="topk"``, ``lambdarank_num_pair_per_sample``
    >= the query size). ``k`` is NDCG's cut-off, not XGBoost's
    ``lambdarank_num_pair_per_sample=k``, which forms and weighs its top-k pairs
    otherwise (their gradients differ by up to 0.5 on a query of 12 rows): only
    ``k=None`` trains XGBoost's model. Default metric ``"ndcg@10"``.

    >>> y, m = jnp.array([1.0, 0.0]), jnp.ones(2, bool)
    >>> round(float(lambdarank_loss(y, jnp.zeros(2), m)), 4)  # |Delta| = 1 - 1/log2(3)
    0.2558
    """
    check_hyper("lambdarank", "sigma", sigma, lambda s: s > 0, "> 0")
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
        raise ValueError(f"objectives.lambdarank needs k None or an integer >= 1, got {k!r}")
    sigma = jnp.asarray(sigma, f.dtype)
    if k is not None and k < y.shape[0]:  # only pairs with a top-k row carry weight
        top, w, valid, sign = _top_k_pairs(y, f, mask, int(k))
        return _pair_sum(f[top], f, valid, w, sign, sigma)
    w = _ndcg_swap_weights(y, f, mask, k)
    pair = _pairs(y, mask)
    return _pair_sum(f, f, pair, w, jnp.ones(pair.shape, f.dtype), sigma)


def _top_k_pairs(y, f, mask, k):
    r"""The pairs of a query that carry NDCG@k weight, when ``k < S``: a pair whose rows
    both rank k or lower has :math:`|D(r_i) - D(r_j)| = 0`, so only the pairs of each of
    the k top-ranked rows with the rows ranked below it count, ``k x S`` of them instead
    of ``S^2`` (as XGBoost's ``topk`` pair method takes them).

    Returns ``(top, w, valid, sign)``: the top rows ``(k,)`` (ranked by ``f``, ties to
    the earlier row, as ``_ndcg_swap_weights``), the swap weights ``(k, S)`` of top row
    a with row b (no gradient), which pairs count (both real, b ranked below a,
    different labels) and ``sign`` +1 where a is the more relevant row, else -1.
    """
    y, f = jax.lax.stop_gradient(y), jax.lax.stop_gradient(f)
    mask = jnp.asarray(mask)  # a NumPy mask cannot be indexed by traced ranks
    S = y.shape[0]
    gain = jnp.where(mask, jnp.exp2(y) - 1.0, 0.0)
    # ranks 0..k-1; -0.0 taken as 0.0 (top_k orders them, a comparison ties them)
    _, top = jax.lax.top_k(jnp.where(mask, jnp.where(f == 0, 0.0, f), -jnp.inf), k)
    disc_top = 1.0 / jnp.log2(jnp.arange(k, dtype=jnp.float32) + 2.0)
    disc = jnp.zeros(S, disc_top.dtype).at[top].set(disc_top)  # 0 below the top k
    rank = jnp.full(S, k, jnp.int32).at[top].set(jnp.arange(k, dtype=jnp.int32))
    idcg = jnp.sum(jax.lax.top_k(gain, k)[0] * disc_top)
    g_top, y_top = gain[top], y[top]
    w = jnp.abs(g_top[:, None] - gain[None, :]) * jnp.abs(disc_top[:, None] - disc[None, :])
    w = w / jnp.where(idcg > 0, idcg, 1.0)
    below = rank[None, :] > jnp.arange(k, dtype=jnp.int32)[:, None]
    valid = mask[top][:, None] & mask[None, :] & below & (y_top[:, None] != y[None, :])
    sign = jnp.where(y_top[:, None] > y[None, :], 1.0, -1.0)
    return top, w, valid, sign


def _lambdarank_hess_diag(y, f, mask, *, sigma=1.0, k=None):
    if k is not None and k < y.shape[0]:
        top, w, valid, sign = _top_k_pairs(y, f, mask, int(k))
        p = jax.nn.sigmoid(-sigma * sign * (f[top][:, None] - f[None, :]))
        c = jnp.where(valid, w * sigma**2 * p * (1.0 - p), 0.0)
        h = jnp.zeros_like(f).at[top].add(jnp.sum(c, axis=1)) + jnp.sum(c, axis=0)
        return jnp.where(mask, h, 0.0)
    return _pair_hess_diag(y, f, mask, _ndcg_swap_weights(y, f, mask, k), sigma)


def _masked_log_softmax(v, mask):
    v = jnp.where(mask, v, jnp.min(jnp.where(mask, v, jnp.inf)))
    v = v - jax.lax.stop_gradient(jnp.max(v))
    e = jnp.where(mask, jnp.exp(v), 0.0)
    return v - jnp.log(jnp.sum(e))


def listnet_loss(y, f, mask):
    r"""ListNet's top-one cross-entropy, :math:`L = -\sum_i \mathrm{softmax}(y)_i \log
    \mathrm{softmax}(f)_i` over the query's rows (Cao et al. 2007).

    With :math:`p = \mathrm{softmax}(f)`, :math:`q = \mathrm{softmax}(y)`:
    :math:`g_i = p_i - q_i`, :math:`h_i = p_i (1 - p_i) > 0` (the full Hessian is
    :math:`\mathrm{diag}(p) - p p^\top`). Labels: any finite numbers (graded relevance);
    the target distribution is the softmax of the labels. Default metric ``"ndcg@10"``.

    >>> round(float(listnet_loss(jnp.array([1.0, 0.0]), jnp.zeros(2), jnp.ones(2, bool))), 4)
    0.6931
    """
    q = jnp.exp(_masked_log_softmax(y, mask))
    logp = _masked_log_softmax(f, mask)
    return -jnp.sum(jnp.where(mask, q * logp, 0.0))


def _listnet_hess_diag(y, f, mask):
    p = jnp.exp(_masked_log_softmax(f, mask))
    return jnp.where(mask, p * (1.0 - p), 0.0)


def _check_finite(name):
    """A picklable check of finite graded labels (``_checks.LabelsIn``)."""
    return LabelsIn(name, "finite")


def _check_relevance(y, **_):
    y = np.asarray(y)
    raise_bad_labels(
        "lambdarank",
        "y >= 0 and finite (graded relevance, gain 2^y - 1)",
        ~(np.isfinite(y) & (y >= 0)),
        y,
    )


ranknet = GroupObjective(
    "ranknet",
    ranknet_loss,
    hess_diag=_ranknet_hess_diag,
    check_labels=_check_finite("ranknet"),
    metric="ndcg@10",
    value_check=False,  # softplus sums: finite while margin differences are
)
lambdarank = GroupObjective(
    "lambdarank",
    lambdarank_loss,
    hess_diag=_lambdarank_hess_diag,
    check_labels=_check_relevance,
    metric="ndcg@10",
    value_check=False,  # softplus sums: finite while margin differences are
)
listnet = GroupObjective(
    "listnet",
    listnet_loss,
    hess_diag=_listnet_hess_diag,
    check_labels=_check_finite("listnet"),
    metric="ndcg@10",
)
