"""Ranking entries of the catalogue (objectives.ranknet, lambdarank, listnet): their
closed-form Hessian diagonals, their gradients against XGBoost's, held-out NDCG@10
against XGBoost rank:pairwise / rank:ndcg, model files and errors."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxboost.ranking import ndcg
from xgb_readout import xgb_leaf_grad_hess

import jaxboost
import objectives
from jaxboost import io
from jaxboost.engine.groups import group_grad_hess, group_index
from jaxboost.errors import DataError

xgb = pytest.importorskip("xgboost")

ENTRIES = [
    objectives.ranknet(sigma=2.0),
    objectives.lambdarank,
    objectives.listnet,
    objectives.lambdarank(k=3, sigma=0.5),
]


def _query(seed, S=9):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 5, S).astype(np.float32)
    f = rng.normal(size=S).astype(np.float32)
    return y, f


@pytest.mark.parametrize("entry", ENTRIES, ids=repr)
def test_hess_diag_equals_the_diagonal_of_jax_hessian(entry):
    """On a padded group (mask false on the last rows) and on the unpadded one."""
    y, f = _query(0)
    mask = np.arange(9) < 7
    for m in (np.ones(9, bool), mask):
        # jitted: one program each, where op-by-op dispatch compiled every operation
        hess = jax.jit(jax.hessian(lambda p, m=m: entry(jnp.asarray(y), p, m)))
        h_ref = jnp.diagonal(hess(jnp.asarray(f)))
        h = jax.jit(entry.group_hess_diag())(jnp.asarray(y), jnp.asarray(f), jnp.asarray(m))
        np.testing.assert_allclose(h, np.where(m, h_ref, 0.0), rtol=1e-5, atol=1e-7)
        assert np.all(np.asarray(h) >= 0)
    # padding leaves the real rows' loss unchanged
    full = jax.jit(entry)(jnp.asarray(y[:7]), jnp.asarray(f[:7]), jnp.ones(7, bool))
    assert float(
        jax.jit(entry)(jnp.asarray(y), jnp.asarray(f), jnp.asarray(mask))
    ) == pytest.approx(float(full), rel=1e-6)


def _xgb_grad_hess(objective, y, f0):
    """XGBoost's g and h for one query of one-row leaves (tests/xgb_readout.py)."""
    params = dict(
        objective=objective,
        max_depth=8,
        lambdarank_normalization=False,
        lambdarank_score_normalization=False,
    )
    g, h, _ = xgb_leaf_grad_hess(xgb, params, y, f0, qid=np.zeros(y.shape[0], np.int64))
    return g, h


@pytest.mark.parametrize(
    "entry,objective", [(objectives.ranknet, "rank:pairwise"), (objectives.lambdarank, "rank:ndcg")]
)
def test_gradient_is_xgboosts_lambda(entry, objective):
    """With XGBoost's two normalisations off (lambdarank_normalization,
    lambdarank_score_normalization) its g is our autodiff g; its h is twice our exact
    diagonal (XGBoost doubles the pair Hessian)."""
    y, f = _query(1, S=12)
    idx = jnp.asarray(group_index(np.zeros(12), 12))
    g, h = group_grad_hess(entry, jnp.asarray(y), jnp.asarray(f), None, idx)
    gx, hx = _xgb_grad_hess(objective, y, f)
    np.testing.assert_allclose(g, gx, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(2.0 * np.asarray(h), hx, rtol=1e-4, atol=1e-6)


def _ltr(seed, n_q, per=20, n_features=8):
    """Graded relevance 0..4 from a noisy non-linear score (learnable, not trivially)."""
    rng = np.random.default_rng(seed)
    ids = np.repeat(np.arange(n_q), per)
    X = rng.normal(size=(n_q * per, n_features)).astype(np.float32)
    score = (
        X[:, 0]
        + 0.7 * np.tanh(2 * X[:, 1])
        + 0.5 * X[:, 2] * X[:, 3]
        + 0.8 * rng.normal(size=n_q * per)
    )
    y = np.clip(np.floor(score + 1.0), 0, 4).astype(np.float32)
    return ids, X, y


def test_held_out_ndcg_matches_xgboost():
    """NDCG@10 on 500 held-out queries within 0.01 of XGBoost's (its defaults: every
    pair of these 20-row queries, normalised lambdas) at the same depth, rounds and
    learning rate: ranknet ~ rank:pairwise, lambdarank ~ rank:ndcg."""
    ids, X, y = _ltr(0, 1000)
    tr, te = ids < 500, ids >= 500
    idx = jnp.asarray(group_index(ids[te], int(te.sum())))

    def score(f):
        return float(ndcg(jnp.asarray(y[te]), jnp.asarray(f), idx, 10))

    rounds, depth, lr = 60, 4, 0.3
    random = score(np.random.default_rng(1).normal(size=int(te.sum())))
    got = {}
    for entry, objective in [
        (objectives.ranknet, "rank:pairwise"),
        (objectives.lambdarank, "rank:ndcg"),
    ]:
        bst = jaxboost.train(
            entry,
            X[tr],
            y[tr],
            group=ids[tr],
            n_rounds=rounds,
            max_depth=depth,
            learning_rate=lr,
            verbose=False,
        )
        ours = score(bst.predict(X[te], output_margin=True))
        ref = xgb.train(
            dict(objective=objective, max_depth=depth, eta=lr, tree_method="hist"),
            xgb.DMatrix(X[tr], y[tr], qid=ids[tr]),
            rounds,
        )
        theirs = score(ref.predict(xgb.DMatrix(X[te]), output_margin=True))
        got[entry.name] = (ours, theirs)
        print(
            f"\n{entry.name}: NDCG@10 {ours:.4f}, XGBoost {objective} {theirs:.4f}, "
            f"diff {ours - theirs:+.4f} (random order {random:.4f})"
        )
        assert abs(ours - theirs) <= 0.01
        assert random + 0.3 < ours < 0.95  # learnt, not trivially


def test_entries_train_save_load_and_predict():
    ids, X, y = _ltr(2, 40, per=8, n_features=4)
    for entry in (objectives.listnet, objectives.lambdarank(k=5), objectives.ranknet(sigma=2.0)):
        evals = dict(eval_set=[(X, y)], eval_group=[ids]) if entry.name == "listnet" else {}
        bst = jaxboost.train(entry, X, y, group=ids, n_rounds=3, max_depth=2, **evals)
        assert bst.objective == entry
        if evals:  # the entry's default metric
            assert list(bst.history["validation_0"]) == ["ndcg@10"]
        back = io.loads(io.dumps(bst))
        assert back.objective == entry and isinstance(back.objective, objectives.GroupObjective)
        np.testing.assert_array_equal(back.predict(X), bst.predict(X))  # identity link
        np.testing.assert_array_equal(bst.predict(X), bst.predict(X, output_margin=True))


def test_errors_and_variants():
    ids, X, y = _ltr(2, 4, per=4, n_features=4)
    with pytest.raises(TypeError, match="group=query_ids"):
        jaxboost.train(objectives.ranknet, X, y)
    with pytest.raises(DataError, match="lambdarank needs labels y >= 0"):
        jaxboost.train(objectives.lambdarank, X, y - 1.0, group=ids)
    with pytest.raises(DataError, match="eval set 'validation_0'"):
        jaxboost.train(
            objectives.lambdarank, X, y, group=ids, eval_set=[(X, -y - 1)], eval_group=[ids]
        )
    with pytest.raises(ValueError, match="as eval_group"):  # default metric ndcg@10
        jaxboost.train(objectives.listnet, X, y, group=ids, eval_set=[(X, y)])
    with pytest.raises(TypeError, match="no hyperparameter"):
        objectives.listnet(sigma=1.0)
    with pytest.raises(ValueError, match="sigma > 0"):
        objectives.ranknet(sigma=-1.0)
    with pytest.raises(ValueError, match="k None or an integer"):
        objectives.lambdarank(k=0)
    with pytest.raises(TypeError, match="group loss"):
        objectives.ranknet(jnp.zeros(2), jnp.zeros(2))
    with pytest.raises(TypeError, match="value_check must be True or False"):
        dataclasses.replace(objectives.ranknet, value_check=1)
    assert objectives.lambdarank(k=3) == objectives.lambdarank(k=3)
    assert hash(objectives.lambdarank(k=3)) == hash(objectives.lambdarank(k=3))
    assert repr(objectives.lambdarank(k=3)) == "objectives.lambdarank(k=3)"


@pytest.mark.parametrize("k, n_real", [(3, 24), (10, 17), (23, 24), (20, 19)])
def test_lambdarank_at_k_takes_only_the_pairs_of_the_top_k_rows(k, n_real):
    """lambdarank(k) with k below the query size sums over the k x S pairs of its top-k
    rows; the pairs it leaves out have zero NDCG@k swap weight, so its loss, g (autodiff)
    and h (closed form) equal the all-pairs sum's: on queries with padding, tied labels,
    tied scores and both zeros (-0.0 ties with 0.0, as the ranking's comparisons tie
    them)."""
    from objectives import ranking as R

    def all_pairs(y, f, m):  # the definition: every ordered pair, NDCG@k weights
        pair = R._pairs(y, m)
        w = R._ndcg_swap_weights(y, f, m, k)
        return jnp.sum(jnp.where(pair, w * jnp.logaddexp(0.0, -(f[:, None] - f[None, :])), 0.0))

    rng = np.random.default_rng(k)
    S = 24
    y = jnp.asarray(rng.integers(0, 4, S).astype(np.float32))
    f = np.round(rng.normal(size=S), 1).astype(np.float32)
    f[:3] = [0.0, -0.0, 0.0]
    f = jnp.asarray(f)
    m = jnp.asarray(np.arange(S) < n_real)
    loss = objectives.lambdarank(k=k)

    def ours(p):
        return loss(y, p, m)

    def diag(p):
        return R._lambdarank_hess_diag(y, p, m, k=k)

    jit = jax.jit  # one program per function, not a compile per operation
    np.testing.assert_allclose(jit(ours)(f), jit(all_pairs)(y, f, m), rtol=1e-6)
    np.testing.assert_allclose(
        jit(jax.grad(ours))(f), jit(jax.grad(lambda p: all_pairs(y, p, m)))(f), atol=1e-6
    )
    h_all = jit(lambda p: R._pair_hess_diag(y, p, m, R._ndcg_swap_weights(y, p, m, k), 1.0))(f)
    np.testing.assert_allclose(jit(diag)(f), h_all, atol=1e-6)
    # ... and nothing of S x S is formed (the work is k x S)
    for fn in (ours, diag):
        shapes = {v.aval.shape for e in jax.make_jaxpr(fn)(f).jaxpr.eqns for v in e.outvars}
        assert (S, S) not in shapes


@pytest.mark.parametrize("k", [None, 4])
def test_pair_losses_closed_form_derivatives_equal_autodiff(k):
    """The pair losses carry their derivatives in closed form (``ranking._pair_sum``):
    in the margins and in ``sigma`` (a traced hyperparameter that hypergradients
    differentiate) they equal autodiff of the plain sum, and jax.hessian still works."""
    from objectives import ranking as R

    rng = np.random.default_rng(5)
    S = 12
    y = jnp.asarray(rng.integers(0, 4, S).astype(np.float32))
    f = jnp.asarray(rng.normal(size=S).astype(np.float32))
    m = jnp.asarray(np.arange(S) < 10)

    def plain(f, sigma):  # the definition, differentiated by autodiff
        pair = R._pairs(y, m)
        w = R._ndcg_swap_weights(y, f, m, k)
        z = sigma * (f[:, None] - f[None, :])
        return jnp.sum(jnp.where(pair, w * jnp.logaddexp(0.0, -z), 0.0))

    def ours(f, sigma):
        return R.lambdarank_loss(y, f, m, sigma=sigma, k=k)

    # (compiled: op by op, each transform's first call compiles every primitive)
    for argnum in (0, 1):
        got = jax.jit(jax.grad(ours, argnums=argnum))(f, 1.5)
        want = jax.jit(jax.grad(plain, argnums=argnum))(f, 1.5)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        jnp.diagonal(jax.jit(jax.hessian(ours))(f, 1.5)),
        jnp.diagonal(jax.jit(jax.hessian(plain))(f, 1.5)),
        rtol=1e-4,
        atol=1e-6,
    )
    rn = jax.jit(jax.grad(lambda s: R.ranknet_loss(y, f, m, sigma=s)))(1.5)
    pair = R._pairs(y, m)
    d = f[:, None] - f[None, :]
    want = jnp.sum(jnp.where(pair, -d * jax.nn.sigmoid(-1.5 * d), 0.0))
    np.testing.assert_allclose(rn, want, rtol=1e-5)


@pytest.mark.parametrize(
    "entry",
    [objectives.ranknet, objectives.lambdarank, objectives.lambdarank(k=3)],
    ids=["ranknet", "lambdarank", "lambdarank@3"],
)
def test_pair_losses_train_without_computing_their_value(entry):
    """The pair losses skip their value each round (``value_check=False``): its
    ``S^2`` softplus terms cost more than the closed-form g and h. The compiled round's
    derivatives hold no ``log1p`` (the value's, with ``value_check=True``), and g, h
    and the value flags equal the checked program's."""
    from jaxboost.engine.groups import group_buckets, group_derivatives

    ids, _, y = _ltr(3, 6, per=10, n_features=4)
    f = jnp.asarray(np.random.default_rng(2).normal(size=y.shape[0]).astype(np.float32))
    idx = tuple(map(jnp.asarray, group_buckets(ids, y.shape[0])))
    checked = dataclasses.replace(entry, value_check=True)
    programs = {
        e.value_check: jax.jit(lambda y, f, e=e: group_derivatives(e, y, f, idx))
        for e in (entry, checked)
    }
    text = {c: p.lower(jnp.asarray(y), f).compile().as_text() for c, p in programs.items()}
    assert "log-plus-one" not in text[False] and "log-plus-one" in text[True]
    without, with_value = (programs[c](jnp.asarray(y), f) for c in (False, True))
    for a, b in zip(without, with_value):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)
