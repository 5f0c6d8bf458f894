"""The native vector-leaf split search (``jaxboost.native.vector_splits``) against the
XLA one (``split.find_best_vector_splits``), which it replaces on the CPU.

Both scan the same candidates in the same order with the same validity rules and take
the first best; they differ only in how float64 prefix sums are associated (bin order
there, XLA's cumsum here) and in skipping bins without rows (their candidates repeat
the gain before them). So on random data the splits must be the same and the gains
agree to float32 rounding, for diagonal and full Hessians, L1, max_delta_step,
min_child_weight, indefinite Hessians (the damped solve), column masks, the ascending
pass only where ``forward_ok``, and any thread count.
"""

import functools
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxboost
from jaxboost import native as native_kernel
from jaxboost.engine import grow as grow_mod
from jaxboost.engine.split import find_best_vector_splits

pytestmark = pytest.mark.skipif(not native_kernel.available(), reason="native kernel unavailable")

F, NODES, B = 5, 4, 12  # bins 9..10 stay empty; bin 11 = missing


def _dyn(lam=1.0, alpha=0.0, mcw=1.0, mds=0.0):
    f = np.float32
    return types.SimpleNamespace(
        reg_lambda=jnp.asarray(f(lam)),
        reg_alpha=jnp.asarray(f(alpha)),
        min_child_weight=jnp.asarray(f(mcw)),
        max_delta_step=jnp.asarray(f(mds)),
    )


def _histograms(seed, K, diagonal, indefinite, softmax=False, tops=None):
    """``(C, F, n, B)`` sums of 400 rows' gradients and Hessian channels, and ``(C, n)``
    node totals. ``softmax``: softmax's Hessians ``diag(p) - p p'`` (rows summing to 0,
    so every node's ``H`` is singular and always damped). ``tops``: per feature, the
    bins its values fall in are ``0 .. tops[f] - 1`` (default ``B - 3`` each)."""
    rng = np.random.default_rng(seed)
    N = 400
    g = rng.normal(size=(N, K))
    a = rng.normal(size=(N, K, K)) * 0.3
    h = np.einsum("nij,nkj->nik", a, a) + 0.1 * np.eye(K)
    if indefinite:
        h[::5] -= 0.6 * np.eye(K)
    if softmax:
        p = rng.dirichlet(np.ones(K), size=N)
        g = p - np.eye(K)[rng.integers(0, K, size=N)]
        h = p[:, :, None] * np.eye(K) - p[:, :, None] * p[:, None, :]
    ch = np.diagonal(h, axis1=1, axis2=2) if diagonal else h[:, *np.triu_indices(K)]
    vals = np.concatenate([g, ch], axis=1)
    bins = rng.integers(0, B - 3 if tops is None else np.asarray(tops), size=(N, F))
    bins[rng.random((N, F)) < 0.1] = B - 1
    node = rng.integers(0, NODES, size=N)
    S = np.zeros((vals.shape[1], F, NODES, B))
    for f in range(F):
        for c in range(vals.shape[1]):
            np.add.at(S[c, f], (node, bins[:, f]), vals[:, c])
    Sp = np.stack([np.bincount(node, vals[:, c], NODES) for c in range(vals.shape[1])])
    return S, Sp, rng


@functools.partial(jax.jit, static_argnames=("K", "diagonal", "any_forward", "native"))
def _search(S, Sp, dyn, forward_ok, mask, **static):
    """``find_best_vector_splits`` as one program (one compile per static setting, where
    op-by-op dispatch compiled every operation of every shape: 740 compiles)."""
    return find_best_vector_splits(
        S, Sp, types.SimpleNamespace(**dyn), forward_ok, feature_mask=mask, **static
    )


SETTINGS = {
    "plain": {},
    "l1-clipped": dict(alpha=0.5, mds=0.7),
    "heavy-mcw": dict(mcw=4.0, lam=0.0),
}


def _xla_against_native(S, Sp, rng, dyn, **static):
    """Both searches on the histograms (random ``forward_ok`` and node feature masks
    drawn from ``rng``): asserts the same picks and gains to float32 rounding, and
    returns XLA's gains."""
    forward_ok = jnp.asarray(rng.random(F) < 0.6)
    mask = jnp.asarray(rng.random((NODES, F)) < 0.8)
    got = {}
    for native in (False, True):
        with jax.enable_x64(True):
            got[native] = _search(
                jnp.asarray(S), jnp.asarray(Sp), vars(dyn), forward_ok, mask,
                native=native, **static,
            )  # fmt: skip
    xla, nat = ({k: np.asarray(v) for k, v in got[n].items()} for n in (False, True))
    for key in ("feature", "tbin", "default_left"):
        np.testing.assert_array_equal(nat[key], xla[key], err_msg=key)
    np.testing.assert_allclose(nat["gain"], xla["gain"], rtol=1e-6)
    return xla["gain"]


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("any_forward", [True, False], ids=["both-passes", "pass-b"])
@pytest.mark.parametrize("diagonal", [True, False], ids=["diagonal", "full"])
@pytest.mark.parametrize("K", [1, 2, 3, 6])
def test_native_search_picks_the_xla_split(K, diagonal, any_forward, setting):
    S, Sp, rng = _histograms(K * 10 + diagonal, K, diagonal, indefinite=not diagonal)
    gain = _xla_against_native(
        S, Sp, rng, _dyn(**SETTINGS[setting]), K=K, diagonal=diagonal, any_forward=any_forward
    )
    assert np.isfinite(gain).any()  # the case has splits to find


@pytest.mark.parametrize("any_forward", [True, False], ids=["both-passes", "pass-b"])
@pytest.mark.parametrize("K", [3, 6])
def test_native_search_picks_the_xla_split_on_softmax_hessians(K, any_forward):
    """Softmax's node Hessians are singular: the native search knows they need damping
    without a Cholesky test (1'(H - floor I)1 < 0); XLA's search runs the test. Same
    picks, same gains."""
    S, Sp, rng = _histograms(K, K, False, indefinite=False, softmax=True)
    dyn = _dyn(lam=0.0, mcw=0.1)
    gain = _xla_against_native(S, Sp, rng, dyn, K=K, diagonal=False, any_forward=any_forward)
    assert np.isfinite(gain).all()  # every node has a split


def test_native_search_is_the_same_on_any_thread_count():
    S, Sp, rng = _histograms(7, 4, False, indefinite=True)
    hyper = jnp.asarray([1.0, 0.0, 1.0, 0.0])
    args = (jnp.asarray(np.moveaxis(S, 0, -1)), jnp.asarray(Sp.T), hyper)
    out = [
        native_kernel.vector_splits(
            *args,
            jnp.ones(F, bool),
            jnp.ones((NODES, F), bool),
            K=4,
            diagonal=False,
            any_forward=True,
            n_threads=t,
        )
        for t in (1, 2, 3)
    ]
    for other in out[1:]:
        for a, b in zip(out[0], other):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("diagonal", [True, False], ids=["diagonal", "full"])
def test_native_search_reads_no_bin_past_each_features_bins(diagonal):
    """With ``n_valid`` (each feature's bins in use, ``grow.bins_in_use``) the search
    stops there: junk put in the bins past them changes nothing, while a search told
    nothing reads it and picks other splits."""
    K, tops = 3, np.array([9, 3, 1, 6, 2])
    S, Sp, rng = _histograms(11, K, diagonal, indefinite=False, tops=tops)
    junk = S.copy()
    for f, top in enumerate(tops):
        junk[:, f, :, top : B - 1] = rng.normal(size=junk[:, f, :, top : B - 1].shape) ** 2
    hyper = jnp.asarray([1.0, 0.0, 0.5, 0.0])
    mask = jnp.ones((NODES, F), bool)

    def search(S, n_valid=None):
        with jax.enable_x64(True):
            out = native_kernel.vector_splits(
                jnp.asarray(np.moveaxis(S, 0, -1)), jnp.asarray(Sp.T), hyper,
                jnp.ones(F, bool), mask, K=K, diagonal=diagonal, any_forward=True,
                n_valid=None if n_valid is None else jnp.asarray(n_valid, jnp.int32),
            )  # fmt: skip
        return [np.asarray(a) for a in out]

    clean = search(S)
    assert np.isfinite(clean[0]).all() and len(set(clean[1])) > 1  # splits on several features
    for got in (search(junk, tops), search(S, tops)):
        for a, b in zip(got, clean):
            np.testing.assert_array_equal(a, b)
    unaware = search(junk)
    assert any(not np.array_equal(a, b) for a, b in zip(unaware, clean))


def test_bins_in_use_holds_every_value_bin_of_the_data():
    """``grow.bins_in_use(cuts_ext)`` is one past the highest value bin each feature's
    rows can fall in: the highest one the training rows use, for features with 1 to 17
    distinct values in a bucket of 32 bins, with missing values apart."""
    from jaxboost.engine.binning import apply_bins, compute_bin_edges

    rng = np.random.default_rng(12)
    levels = [1, 2, 5, 17, 9]
    X = np.stack([rng.integers(0, k, size=300) * 0.5 for k in levels], axis=1).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    edges = compute_bin_edges(X, max_bin=256)
    bins = np.asarray(apply_bins(X, edges, row_major=True))  # (N, F)
    n_valid = np.asarray(grow_mod.bins_in_use(edges.cuts_ext()))
    assert edges.n_bins == 32
    highest = [bins[~np.isnan(X[:, f]), f].max() for f in range(X.shape[1])]
    np.testing.assert_array_equal(n_valid, np.array(highest) + 1)
    np.testing.assert_array_equal(n_valid, levels)


def test_multi_output_trees_grow_alike_with_the_xla_search(monkeypatch):
    """A softmax ``multi_output_tree`` fit trains the same model with the native search
    as with the XLA one it replaces (forced back by a patched finder)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 4)).astype(np.float32)
    y = np.argmax(X[:, :3] + 0.5 * rng.normal(size=(500, 3)), axis=1).astype(np.float32)
    kw = dict(n_rounds=8, max_depth=3, multi_strategy="multi_output_tree", verbose=False)
    native = jaxboost.train("softmax", X, y, **kw).predict(X)
    xla_finder = grow_mod._vector_finder
    monkeypatch.setattr(
        grow_mod,
        "_vector_finder",
        lambda *a, **k: xla_finder(*a[:5], native=False),
    )
    jax.clear_caches()
    try:
        xla = jaxboost.train("softmax", X, y, **kw).predict(X)
    finally:
        jax.clear_caches()
    np.testing.assert_allclose(native, xla, rtol=0, atol=1e-6)


def test_vector_trees_on_few_valued_features_grow_alike_with_the_xla_search(monkeypatch):
    """Features of 2 to 9 values in a bucket of 16 bins: the native search stops at each
    feature's own bins (``grow.bins_in_use`` from the cuts) and grows the model that
    XLA's search, which scans every bin, grows; the feature with 9 values splits at its
    top bins too (the last value bin is a threshold the search must reach)."""
    rng = np.random.default_rng(6)
    levels = [2, 3, 5, 9]
    X = np.stack([rng.integers(0, k, size=600) for k in levels], axis=1).astype(np.float32)
    y = (X[:, 3] >= 7) + (X[:, 2] >= 4) + 0.0 * X[:, 0]
    y = np.where(rng.random(600) < 0.1, rng.integers(0, 3, size=600), y).astype(np.float32)
    kw = dict(n_rounds=4, max_depth=3, multi_strategy="multi_output_tree", verbose=False)
    native = jaxboost.train("softmax", X, y, **kw)
    assert native.bin_edges.n_bins == 16
    xla_finder = grow_mod._vector_finder
    monkeypatch.setattr(
        grow_mod, "_vector_finder", lambda *a, **k: xla_finder(*a[:5], native=False)
    )
    jax.clear_caches()
    try:
        xla = jaxboost.train("softmax", X, y, **kw)
    finally:
        jax.clear_caches()
    np.testing.assert_allclose(
        native.predict(X, output_margin=True), xla.predict(X, output_margin=True), rtol=0, atol=1e-6
    )
    trees = native.trees
    split = ~np.asarray(trees.is_leaf) & (np.asarray(trees.feature) == 3)
    assert (np.asarray(trees.threshold)[split] > 6).any()  # between its top values


def test_multi_output_trees_grow_alike_on_the_pure_jax_path(request):
    """Vector leaves from the native kernels (all channels' histograms in one pass,
    ``histogram_channels``, and the native search) train the model of the pure-JAX path
    that GPUs and TPUs take (two channels a pass, XLA's search), on a depth whose two
    deepest levels run outside the level loop, with missing values."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(600, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.argmax(X[:, :3] + 0.5 * rng.normal(size=(600, 3)), axis=1).astype(np.float32)
    kw = dict(n_rounds=4, max_depth=5, multi_strategy="multi_output_tree", verbose=False)
    native = jaxboost.train("softmax", X, y, **kw).predict(X, output_margin=True)
    asked = request.getfixturevalue("pure_jax_histogram")
    pure = jaxboost.train("softmax", X, y, **kw).predict(X, output_margin=True)
    assert asked == [False]
    np.testing.assert_allclose(native, pure, rtol=0, atol=1e-6)


def test_train_many_grows_the_vector_trees_of_single_fits():
    """``train_many``'s models of one program search their splits with the kernel one
    after another: each equals its own ``train`` call."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 4)).astype(np.float32)
    y = np.argmax(X[:, :3] + 0.3 * rng.normal(size=(400, 3)), axis=1).astype(np.float32)
    configs = [{"reg_lambda": 1.0}, {"reg_lambda": 2.0, "learning_rate": 0.1}]
    kw = dict(n_rounds=5, max_depth=3, multi_strategy="multi_output_tree")
    many = jaxboost.train_many(configs, X, y, objective="softmax", **kw)
    for model, config in zip(many, configs):
        one = jaxboost.train("softmax", X, y, verbose=False, **kw, **config)
        np.testing.assert_array_equal(model.predict(X), one.predict(X))
