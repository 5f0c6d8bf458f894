"""objectives.cox: gradient and Hessian against XGBoost survival:cox, the closed-form
diagonal against jax.hessian (ties, censoring, padding), concordance against XGBoost,
metrics, strata, model files and label errors."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxboost.survival import concordance_index
from xgb_readout import xgb_leaf_grad_hess

import jaxboost
import objectives
from jaxboost import io
from jaxboost.engine.groups import group_grad_hess, group_index
from jaxboost.errors import DataError

xgb = pytest.importorskip("xgboost")


def _labels(rng, n, ties=False):
    """Event times (y > 0) or censoring times (y < 0); distinct unless ``ties``."""
    t = rng.exponential(size=n) + 0.01
    if ties:
        t = np.ceil(t * 3) / 3  # a handful of distinct times
    return np.where(rng.random(n) < 0.7, t, -t).astype(np.float32)


def _ours(y, f, idx=None):
    n = y.shape[0]
    idx = jnp.asarray(group_index(np.zeros(n), n) if idx is None else idx)
    return group_grad_hess(objectives.cox, jnp.asarray(y), jnp.asarray(f), None, idx)


def test_gradient_and_hessian_equal_xgboost_survival_cox():
    """One XGBoost round with one row per leaf (feature = row number, exact method,
    lambda 0, eta 1): leaf value = -g/h and cover = h, at random start margins."""
    rng = np.random.default_rng(0)
    n = 60
    y = _labels(rng, n)
    f0 = (0.5 * rng.normal(size=n)).astype(np.float32)
    gx, hx, leaf = xgb_leaf_grad_hess(xgb, dict(objective="survival:cox", max_depth=60), y, f0)
    single = np.array([np.sum(leaf == v) == 1 for v in leaf])
    assert single.sum() >= n - 4  # (a split with zero gain is not made)
    g, h = (np.asarray(a, np.float64) for a in _ours(y, f0))
    G = np.array([g[leaf == v].sum() for v in leaf])
    H = np.array([h[leaf == v].sum() for v in leaf])
    diff = np.abs(g - gx)[single].max()
    print(
        f"\ncox: max |g - g_xgboost| = {diff:.2e} over {single.sum()} one-row leaves, "
        f"max rel |h - h_xgboost| = {np.max(np.abs(h - hx)[single] / hx[single]):.2e}"
    )
    assert diff <= 1e-5
    np.testing.assert_allclose(h[single], hx[single], rtol=1e-4)
    np.testing.assert_allclose(G, gx, atol=1e-5)  # leaves of several rows: the sums
    np.testing.assert_allclose(H, hx, rtol=1e-4)


def test_closed_form_diagonal_and_gradient_with_ties_censoring_and_padding():
    rng = np.random.default_rng(1)
    n = 30
    y = _labels(rng, n, ties=True)
    assert np.unique(np.abs(y)).shape[0] < n // 2  # many ties
    f = rng.normal(size=n)
    with jax.enable_x64(True):
        yj, fj = jnp.asarray(y, jnp.float64), jnp.asarray(f, jnp.float64)
        for m in (np.ones(n, bool), np.arange(n) < 23):
            m = jnp.asarray(m)

            def loss(p, m=m):
                return objectives.cox(yj, p, m)

            h_ref = np.diagonal(np.asarray(jax.jit(jax.hessian(loss))(fj)))
            h = np.asarray(jax.jit(objectives.cox.group_hess_diag())(yj, fj, m))
            np.testing.assert_allclose(h, np.where(m, h_ref, 0.0), rtol=1e-10, atol=1e-12)
            # autodiff g against central differences of the loss
            eps = 1e-6
            steps = eps * jnp.eye(n)
            vl = jax.jit(jax.vmap(loss))
            fd = (vl(fj + steps) - vl(fj - steps)) / (2 * eps)
            np.testing.assert_allclose(jax.jit(jax.grad(loss))(fj), fd, rtol=1e-6, atol=1e-7)
            # padding: the loss of the real rows alone
            k = int(m.sum())
            cox = jax.jit(objectives.cox)  # one program, not a compile per operation
            assert float(jax.jit(loss)(fj)) == pytest.approx(
                float(cox(yj[:k], fj[:k], jnp.ones(k, bool))), rel=1e-12
            )
        # Breslow by hand: event times 1, 1 (tied) and censoring at 1 share S = sum e^f
        y3, f3 = jnp.array([1.0, 1.0, -1.0, 2.0]), jnp.array([0.1, -0.3, 0.2, 0.5])
        S1 = jnp.sum(jnp.exp(f3))
        want = 2 * jnp.log(S1) - 0.1 + 0.3 + jnp.log(jnp.exp(0.5)) - 0.5
        assert float(jax.jit(objectives.cox)(y3, f3, jnp.ones(4, bool))) == pytest.approx(
            float(want)
        )


def _survival(seed, n):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)).astype(np.float32)
    risk = X[:, 0] + 0.5 * np.sin(2 * X[:, 1]) + 0.3 * X[:, 2] * X[:, 3]
    t = rng.exponential(size=n) * np.exp(-risk)
    c = rng.exponential(size=n) * 1.5
    return X, np.where(t <= c, t, -c).astype(np.float32)


def test_concordance_matches_xgboost_and_training_metrics():
    X, y = _survival(0, 4000)
    tr, te = slice(0, 2000), slice(2000, None)
    rounds, depth, lr = 40, 3, 0.1
    bst = jaxboost.train(
        objectives.cox,
        X[tr],
        y[tr],
        n_rounds=rounds,
        max_depth=depth,
        learning_rate=lr,
        eval_set=[(X[te], y[te])],
        eval_metric=["cox-nloglik", "cindex"],
        verbose=False,
    )
    ref = xgb.train(
        dict(
            objective="survival:cox",
            max_depth=depth,
            eta=lr,
            tree_method="hist",
            eval_metric="cox-nloglik",
        ),
        xgb.DMatrix(X[tr], y[tr]),
        rounds,
    )
    ours = concordance_index(y[te], bst.predict(X[te]))
    theirs = concordance_index(y[te], ref.predict(xgb.DMatrix(X[te])))
    print(
        f"\ncox: held-out C-index {ours:.4f}, XGBoost survival:cox {theirs:.4f}, "
        f"diff {ours - theirs:+.4f}"
    )
    assert abs(ours - theirs) <= 0.01 and ours > 0.65
    # predict gives hazard ratios; the metrics during training equal the numbers here
    margin = bst.predict(X[te], output_margin=True)
    np.testing.assert_allclose(bst.predict(X[te]), np.exp(margin), rtol=1e-6)
    hist = bst.history["validation_0"]
    assert hist["cindex"][-1] == pytest.approx(ours, abs=1e-6)
    n_events = int((y[te] > 0).sum())
    loss = float(
        jax.jit(objectives.cox)(
            jnp.asarray(y[te]), jnp.asarray(margin), jnp.ones(y[te].shape[0], bool)
        )
    )
    assert hist["cox-nloglik"][-1] == pytest.approx(loss / n_events, rel=1e-5)
    assert hist["cox-nloglik"][-1] < hist["cox-nloglik"][0]
    # a saved model loads with the same entry and predictions
    back = io.loads(io.dumps(bst))
    assert back.objective is not None and back.objective == objectives.cox
    np.testing.assert_array_equal(back.predict(X[te]), bst.predict(X[te]))


def test_concordance_index_by_hand_and_errors():
    # events at 1 and 3, censored at 2, event at 4: pairs (1,2), (1,3), (1,4), (3,4)
    y = np.array([1.0, -2.0, 3.0, 4.0])
    assert concordance_index(y, [3.0, 1.0, 0.0, 2.0]) == 0.75
    assert concordance_index(y, [1.0, 1.0, 1.0, 1.0]) == 0.5
    assert concordance_index(y, [0.0, 1.0, 2.0, 3.0]) == 0.0
    assert concordance_index(y, [3.0, 1.0, 0.0, 2.0], [1.0, 1.0, 0.0, 1.0]) == 1.0
    from jaxboost.metrics import cindex

    assert float(jax.jit(cindex)(y, np.array([3.0, 1.0, 0.0, 2.0]))) == 0.75
    with pytest.raises(DataError, match="nonzero finite"):
        concordance_index([1.0, 0.0], [0.0, 1.0])


def _concordance_by_pairs(y, r, w):
    """Harrell's C over every pair in float64 NumPy (the definition, O(N^2))."""
    t, event = np.abs(y), y > 0
    comparable = event[:, None] & (t[None, :] > t[:, None])
    pair_w = w[:, None] * w[None, :] * comparable
    score = (r[:, None] > r[None, :]) + 0.5 * (r[:, None] == r[None, :])
    with np.errstate(invalid="ignore"):
        return np.sum(pair_w * score) / np.sum(pair_w)


@pytest.mark.parametrize("n", [2, 3, 4, 7, 8, 9, 64, 100, 257])
def test_concordance_equals_the_sum_over_every_pair(n):
    """The O(N log^2 N) sums (rows by time, aligned blocks sorted by risk) equal the
    definition over every pair: tied times and risks, censoring, weights (some 0),
    sizes at and around powers of two; the float32 metric and the float64 function."""
    from jaxboost.metrics import cindex

    rng = np.random.default_rng(n)
    t = rng.integers(1, max(2, n // 3), size=n).astype(np.float64)  # many tied times
    y = np.where(rng.random(n) < 0.6, t, -t)
    y[0] = abs(y[0])  # at least one event
    r = np.round(rng.normal(size=n), 1)  # tied risks
    w = rng.choice([0.0, 0.5, 1.0, 2.0], size=n)
    w[0] = 1.0
    want = _concordance_by_pairs(y, r, w)
    if np.isnan(want):  # no comparable pair
        assert np.isnan(concordance_index(y, r, w))
        return
    assert concordance_index(y, r, w) == pytest.approx(want, rel=1e-12)
    if n in (8, 100):  # the metric (float32, unpadded): a program per size
        args = (y.astype(np.float32), r.astype(np.float32), w.astype(np.float32))
        got = float(jax.jit(cindex)(*args))
        assert got == pytest.approx(want, rel=1e-6)


def test_strata_errors_and_labels():
    X, y = _survival(1, 40)
    # group= makes strata: each stratum's own risk sets
    strata = np.arange(40) % 2
    f = np.random.default_rng(2).normal(size=40).astype(np.float32)
    g, h = _ours(y, f, group_index(strata, 40))
    for s in (0, 1):
        gs, hs = _ours(y[strata == s], f[strata == s])
        np.testing.assert_allclose(np.asarray(g)[strata == s], gs, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(h)[strata == s], hs, rtol=1e-6)
    bst = jaxboost.train(objectives.cox, X, y, group=strata, n_rounds=2, max_depth=2)
    assert bst.base_margin == 0.0
    bad = y.copy()
    bad[3] = 0.0
    with pytest.raises(DataError, match="cox needs labels nonzero and finite.*row 3"):
        jaxboost.train(objectives.cox, X, bad, n_rounds=1)
    bad[3] = np.nan
    with pytest.raises(DataError, match="index 3"):  # caught by the generic label check
        jaxboost.train(objectives.cox, X, bad, n_rounds=1)
    with pytest.raises(DataError, match="eval set 'validation_0'"):
        jaxboost.train(objectives.cox, X, y, n_rounds=1, eval_set=[(X, bad)])
    with pytest.raises(ValueError, match="hessian"):
        jaxboost.train(objectives.cox, X, y, n_rounds=1, hessian="expected")


def test_tied_times_where_xgboost_differs():
    """Breslow ties: our g is the exact derivative (checked against finite differences
    above). XGBoost accumulates 1/S_i event by event in its sort order, so a row sorted
    before a tied event leaves that event out of its g and h: here rows 0 and 3 (first
    of the ties at times 1 and 2); every other row agrees."""
    y = np.array([1.0, 1.0, -1.0, 2.0, 2.0, 3.0], np.float32)
    f0 = np.array([0.1, -0.3, 0.2, 0.5, -0.1, 0.3], np.float32)
    gx, hx, leaf = xgb_leaf_grad_hess(xgb, dict(objective="survival:cox", max_depth=10), y, f0)
    assert len(set(leaf.tolist())) == 6
    g, h = (np.asarray(a) for a in _ours(y, f0))
    same = np.array([False, True, True, False, True, True])
    np.testing.assert_allclose(g[same], gx[same], atol=1e-5)
    np.testing.assert_allclose(h[same], hx[same], rtol=1e-4)
    assert np.all(np.abs(g - gx)[~same] > 0.1)
    # XGBoost's row 0 omits row 1's event at the same time: 1/S of that event
    e = np.exp(f0.astype(np.float64))
    s1 = e.sum()
    assert gx[0] == pytest.approx(g[0] - e[0] / s1, abs=1e-5)


def test_rows_in_time_order_skip_the_sort():
    """Training hands Cox each stratum's rows in time order (``cox.row_order``, ties in
    row order) and traces the loss in ``rows_ordered()``: no sort in the program, and g
    and h equal those of the rows in their own order, sorted on the device, to float32
    rounding (the two programs fuse, and so round, ``e A - delta`` differently; ties and
    censoring, three strata of unequal sizes, bucketed)."""
    from jaxboost.engine.groups import group_buckets, group_derivatives

    rng = np.random.default_rng(7)
    n = 300
    y = _labels(rng, n, ties=True)
    f = jnp.asarray(rng.normal(size=n).astype(np.float32))
    strata = rng.choice([0, 1, 2], size=n, p=[0.6, 0.3, 0.1])
    by_row = group_buckets(strata, n)
    by_time = group_buckets(strata, n, order_key=objectives.cox.row_order(y))
    for bucket in by_time:  # each stratum's rows by time, padding last
        for row in bucket:
            real = row[row < n]
            assert np.all(np.diff(np.abs(y[real])) >= 0) and np.all(row[len(real) :] >= n)

    def derivs(idx, in_order):
        fn = functools.partial(group_derivatives, objectives.cox, rows_in_order=in_order)
        return jax.jit(lambda y, f, idx: fn(y, f, idx))(jnp.asarray(y), f, idx)

    sorted_on_device = derivs(tuple(map(jnp.asarray, by_row)), False)
    in_order = derivs(tuple(map(jnp.asarray, by_time)), True)
    for a, b in zip(sorted_on_device, in_order):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-6, atol=2e-7)
    jaxpr = str(
        jax.make_jaxpr(
            lambda y, f: group_derivatives(objectives.cox, y, f, by_time, rows_in_order=True)
        )(jnp.asarray(y), f)
    )
    assert " sort[" not in jaxpr and "sort " not in jaxpr
    assert objectives.survival.rows_in_order() is False  # the context was left


def _stratified_brute(y, f, strata):
    """Breslow negative log partial likelihood per event and Harrell's C, each stratum
    its own risk sets and pairs, by every pair in NumPy (float64)."""
    nll = n_events = num = den = 0.0
    for s in np.unique(strata):
        ys, fs = y[strata == s].astype(np.float64), f[strata == s].astype(np.float64)
        for i in np.flatnonzero(ys > 0):
            nll += np.log(np.exp(fs[np.abs(ys) >= ys[i]]).sum()) - fs[i]
            n_events += 1
            later = np.abs(ys) > ys[i]
            num += np.sum(fs[i] > fs[later]) + 0.5 * np.sum(fs[i] == fs[later])
            den += later.sum()
    return nll / n_events, num / den


def test_stratified_metrics_compare_within_strata():
    """A model trained with strata (group=) is scored by the stratified loss it
    minimises: cox-nloglik and cindex take the evaluation set's strata from
    eval_group (size buckets of strata too), and refuse a set without them."""
    X, y = _survival(3, 120)
    strata = np.repeat([0, 1, 2], [12, 40, 68])  # three size buckets
    y = (y * 10.0**strata).astype(np.float32)  # baselines far apart
    kw = dict(group=strata, n_rounds=3, max_depth=2, eval_metric=["cox-nloglik", "cindex"])
    bst = jaxboost.train(objectives.cox, X, y, eval_set=[(X, y)], eval_group=[strata], **kw)
    f = bst.predict(X, output_margin=True)
    nll, c = _stratified_brute(y, f, strata)
    hist = bst.history["validation_0"]
    assert hist["cox-nloglik"][-1] == pytest.approx(nll, rel=1e-5)
    assert hist["cindex"][-1] == pytest.approx(c, rel=1e-5)
    assert concordance_index(y, f, strata=strata) == pytest.approx(c, rel=1e-12)
    assert abs(concordance_index(y, f) - c) > 1e-3  # the strata matter on this data
    with pytest.raises(ValueError, match=r"trained with strata .* as eval_group"):
        jaxboost.train(objectives.cox, X, y, eval_set=[(X, y)], **kw)
    # no comparable pair: NaN from the metric, as from the function
    censored = -np.abs(y)
    bst = jaxboost.train(
        objectives.cox, X, y, n_rounds=1, max_depth=2, eval_set=[(X, censored)],
        eval_metric=["cindex"],
    )  # fmt: skip
    assert np.isnan(bst.history["validation_0"]["cindex"][0])
    assert np.isnan(concordance_index(censored, f))


@pytest.mark.parametrize("entry", ["cox", "lambdarank"])
def test_group_losses_continue_training(entry):
    """init_model continues a group loss's training (its default base margin 0 is not
    one the caller gave): 3 + 3 rounds are the 6-round model."""
    X, y = _survival(4, 60)
    group = np.arange(60) % 3
    if entry == "lambdarank":
        y = np.clip(np.round(X[:, 0] + 1.5), 0, 3).astype(np.float32)
    loss = getattr(objectives, entry)
    kw = dict(group=group, max_depth=2, verbose=False)
    first = jaxboost.train(loss, X, y, n_rounds=3, **kw)
    more = jaxboost.train(loss, X, y, n_rounds=3, init_model=first, **kw)
    whole = jaxboost.train(loss, X, y, n_rounds=6, **kw)
    assert len(more) == 6
    np.testing.assert_array_equal(
        more.predict(X, output_margin=True), whole.predict(X, output_margin=True)
    )
    with pytest.raises(ValueError, match="base_margin cannot be given with init_model"):
        jaxboost.train(loss, X, y, n_rounds=1, init_model=first, base_margin=0.0, **kw)
