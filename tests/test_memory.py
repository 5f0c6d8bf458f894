"""Memory in proportion to what is used (issue 16.7), checked on compiled programs.

No timing and no process memory here (``benchmarks/memory.py`` measures those): the
round program is compiled from abstract shapes and its buffers are read from XLA's
``memory_analysis()`` and its optimised HLO text.

* One tree per class reads only the diagonal of the ``K x K`` Hessians: the program of a
  softmax round holds no ``(N, K, K)`` array and its temporaries grow like ``N K``; a
  ``multi_output_tree`` with the full Hessian does hold ``(N, K, K)`` (the check can see
  it). The diagonal equals the full Hessian's, for softmax's closed forms and for a user
  loss by autodiff.
* Wide data: the tree builder's temporaries stop growing with the number of features
  once the level histograms would exceed ``grow.HIST_MEMORY`` (features taken in
  blocks), and blocks grow the same trees as one pass over every feature.
* The vector base-margin fit sums per-row Hessians in chunks of rows: the same sums.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxboost
import objectives
from jaxboost import native as native_kernel
from jaxboost.engine import autodiff, grow
from jaxboost.engine.autodiff import HESSIAN_FLOOR, grad_hess, grad_hess_diagonal
from jaxboost.engine.grow import TreeSpec, feature_block, grow_tree
from jaxboost.engine.round import Hyper, RoundSpec, Rows, Shared, boost_round
from jaxboost.engine.sampling import FeatureSampler
from jaxboost.engine.split import TreeHyper

NATIVE = [
    pytest.param(False, id="pure_jax"),
    pytest.param(
        True,
        id="native",
        marks=pytest.mark.skipif(not native_kernel.available(), reason="native kernel unavailable"),
    ),
]


def sds(shape, dtype):
    return jax.ShapeDtypeStruct(shape, dtype)


def compiled_round(
    loss, N, F, K, *, depth=2, B=32, multi_output_tree=False, native=False, hessian="exact"
):
    """The compiled program of one round (``engine.round.boost_round``) from abstract
    shapes: nothing is allocated or run."""
    spec = RoundSpec(
        loss=loss,
        max_depth=depth,
        max_bin=B,
        n_outputs=K,
        multi_output_tree=multi_output_tree,
        native=native,
        hessian=hessian,
    )
    rows = Rows(
        sds((N, F) if native else (F, N), jnp.uint8),
        sds((N,), jnp.float32),
        sds((N,), jnp.float32),
        sds((N,), jnp.bool_),
    )
    shared = Shared(
        sds((F, B), jnp.float32),
        sds((F,), jnp.bool_),
        sds((1,), jnp.int32),
        sds((), jnp.int32),
        sds((1, 1), jnp.int32),
    )
    f32 = sds((), jnp.float32)
    hyper = Hyper(f32, f32, f32, f32, f32, f32, f32, sds((4,), jnp.float32), sds((), jnp.int32), {})
    fn = jax.jit(functools.partial(boost_round, spec))
    return fn.lower(
        rows, shared, hyper, sds((N, K) if K > 1 else (N,), jnp.float32), sds((), jnp.int32), f32
    ).compile()


# --- the round's row counts: one pass ------------------------------------------------------


@pytest.mark.parametrize("n_masks", [1, 2, 9])
def test_count_rows_equals_separate_sums(n_masks):
    """``autodiff.count_rows`` (one variadic reduction) gives each mask's ``jnp.sum``."""
    rng = np.random.default_rng(n_masks)
    masks = [jnp.asarray(rng.random(100_003) < p) for p in np.linspace(0.0, 1.0, n_masks)]
    got = jax.jit(autodiff.count_rows)(*masks)
    assert got.dtype == jnp.int32 and got.shape == (n_masks,)
    assert got.tolist() == [int(jnp.sum(m)) for m in masks]


@pytest.mark.parametrize("native", NATIVE)
def test_round_counts_its_rows_without_int32_copies(native):
    """The round counts its rows (the Hessian census, the causes of non-finite rows) in
    one fused reduction: as separate sums, XLA's CPU backend wrote every mask out as an
    int32 array, all live at once. Logistic, 65,536 rows: the round's scratch was 36.1
    bytes a row with the native tree (8.0 now) and 72.2 with the XLA one (45.1 now)."""
    N = 1 << 16
    temp = compiled_round(objectives.logistic, N, 4, 1, native=native)
    temp = temp.memory_analysis().temp_size_in_bytes
    bound = (16 if native else 56) * N
    assert temp < bound, (temp, bound)


# --- one tree per class: the diagonal only ------------------------------------------------

N_SM, F_SM, K_SM = 1024, 4, 50


def test_softmax_round_holds_no_k_by_k_array():
    """K = 50 classes at 1,024 rows: (N, K, K) float32 would be 10.2 MB; the round's
    temporaries stay within 64 bytes per row and class (3.3 MB), and no (N, K, K) shape
    is in the program. The full-Hessian vector tree does form it (the check can see it)."""
    N, K = N_SM, K_SM
    c = compiled_round(objectives.softmax(n_classes=K), N, F_SM, K)
    kk = f"f32[{N},{K},{K}]"
    assert kk not in c.as_text()
    temp = c.memory_analysis().temp_size_in_bytes
    assert temp < 64 * N * K, (temp, 64 * N * K)  # was 10.9 MB with (N, K, K)
    full = compiled_round(objectives.softmax(n_classes=K), N, F_SM, K, multi_output_tree=True)
    assert kk in full.as_text()


def coupled(y, f):
    """A vector loss whose Hessian is not diagonal (log-sum-exp plus a cross term)."""
    return jax.nn.logsumexp(f) - f[0] * y + 0.1 * f[0] * f[-1] + 0.05 * jnp.sum(f**4)


def test_user_loss_diagonal_equals_the_hessians_diagonal():
    rng = np.random.default_rng(0)
    N, K = 64, 6
    y = jnp.asarray(rng.normal(size=N), jnp.float32)
    f = jnp.asarray(rng.normal(size=(N, K)), jnp.float32)
    w = jnp.asarray(rng.uniform(0.5, 2.0, N), jnp.float32)
    g, d = jax.jit(lambda y, f: grad_hess_diagonal(coupled, y, f))(y, f)
    H = jax.jit(jax.vmap(jax.hessian(coupled, argnums=1)))(y, f)
    np.testing.assert_allclose(d, jnp.diagonal(H, axis1=1, axis2=2), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(g, jax.jit(jax.vmap(jax.grad(coupled, argnums=1)))(y, f))

    # through grad_hess: weights and policies act on the diagonal entry by entry (each
    # call one program, where op-by-op dispatch compiled every operation)
    @functools.partial(jax.jit, static_argnames=("hessian", "floor", "diagonal"))
    def grad_hess_coupled(y, f, w, hessian, floor=HESSIAN_FLOOR, diagonal=False):
        return grad_hess(coupled, y, f, w, hessian=hessian, floor=floor, diagonal=diagonal)

    gf, hf = grad_hess_coupled(y, f, w, hessian="exact")
    gd, hd = grad_hess_coupled(y, f, w, hessian="exact", diagonal=True)
    assert hf.shape == (N, K, K) and hd.shape == (N, K)
    np.testing.assert_array_equal(gd, gf)
    hf_d = np.asarray(jnp.diagonal(hf, axis1=1, axis2=2))
    np.testing.assert_allclose(hd, hf_d, rtol=1e-6, atol=1e-6)
    _, hc = grad_hess_coupled(y, f, w, hessian="clip", floor=0.5, diagonal=True)
    np.testing.assert_allclose(
        hc, np.maximum(hf_d / w[:, None], 0.5) * w[:, None], rtol=1e-6, atol=1e-6
    )
    _, hk = grad_hess_coupled(y, f, w, hessian="constant", diagonal=True)
    np.testing.assert_array_equal(hk, np.broadcast_to(w[:, None], (N, K)))
    # compiled at K = 50: no (N, K, K) array, as for softmax
    K = K_SM
    hlo = (
        jax.jit(lambda y, f: grad_hess(coupled, y, f, diagonal=True))
        .lower(sds((N_SM,), jnp.float32), sds((N_SM, K), jnp.float32))
        .compile()
        .as_text()
    )
    assert f"f32[{N_SM},{K},{K}]" not in hlo


@pytest.mark.parametrize("curvature", ["exact", "xgboost", "abs_residual"])
def test_softmax_closed_form_diagonal_equals_its_full_hessian(curvature):
    rng = np.random.default_rng(1)
    N, K = 200, 5
    y = jnp.asarray(rng.integers(0, K, N), jnp.float32)
    f = jnp.asarray(rng.normal(scale=3.0, size=(N, K)), jnp.float32)
    obj = objectives.softmax(n_classes=K, curvature=curvature)
    g, d = jax.jit(jax.vmap(obj.row_grad_hess_diag()))(y, f)
    g_full, h_full = jax.jit(jax.vmap(obj.row_grad_hess()))(y, f)
    np.testing.assert_allclose(g, g_full, rtol=0, atol=1e-7)
    np.testing.assert_allclose(d, jnp.diagonal(h_full, axis1=1, axis2=2), rtol=1e-6, atol=1e-7)
    # float64 reference: p (1 - p), 2 p (1 - p), |p - y|; float32's 1 - p near p = 1
    # is good to about 6e-8 absolute, hence atol
    f64 = np.asarray(f, np.float64)
    p = np.exp(f64 - f64.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    r = p - np.eye(K)[np.asarray(y, int)]
    want = {"exact": p * (1 - p), "xgboost": 2 * p * (1 - p), "abs_residual": np.abs(r)}
    np.testing.assert_allclose(
        d, np.maximum(want[curvature], 0 if curvature == "exact" else 1e-16), rtol=2e-6, atol=3e-7
    )


# --- vector base margin: chunks of rows ---------------------------------------------------


@pytest.mark.parametrize("exact", [False, True], ids=["float64", "quantized"])
def test_base_margin_sums_in_chunks_equal_one_pass(exact):
    """(N, K, K) per-row Hessians summed in chunks of 7 rows (N = 100: the last chunk
    padded) equal the one-pass sums: to float64 rounding, exactly on the quantized
    grid."""
    rng = np.random.default_rng(2)
    N, K = 100, 3
    y = jnp.asarray(rng.normal(size=N), jnp.float32)
    gh = autodiff._row_grad_hess(coupled, K)
    c = jnp.asarray([0.3, -0.2, 0.5])
    with jax.enable_x64(True):
        w = jnp.asarray(rng.uniform(0.0, 2.0, N), jnp.float64)
        one = jax.jit(lambda y, w, c: autodiff._vector_sums(gh, y, w, c, K, exact, np.int32(N)))(
            y, w, c
        )
        chunked = jax.jit(
            lambda y, w, c: autodiff._vector_sums(
                gh, y, w, c, K, exact, np.int32(N), chunk=7 * K * K
            )
        )(y, w, c)
        g, h = jax.jit(jax.vmap(gh))(y, jnp.broadcast_to(c.astype(jnp.float32), (N, K)))
        want_G = np.einsum("n,nk->k", np.asarray(w), np.asarray(g, np.float64))
        want_H = np.einsum("n,nij->ij", np.asarray(w), np.asarray(h, np.float64))
    for G, H in (one, chunked):
        np.testing.assert_allclose(G, want_G, rtol=1e-6 if exact else 1e-12)
        np.testing.assert_allclose(H, want_H, rtol=1e-6 if exact else 1e-12)
    if exact:
        np.testing.assert_array_equal(chunked[0], one[0])
        np.testing.assert_array_equal(chunked[1], one[1])


# --- wide data: features in blocks ---------------------------------------------------------


def test_feature_block_sizes():
    W, B = 32, 256  # depth 6
    per = grow.HIST_BYTES_PER_FEATURE * W * B
    assert feature_block(28, W, B) == 28
    n = grow.HIST_MEMORY // per
    assert feature_block(n, W, B) == n and feature_block(n + 1, W, B) == n
    assert feature_block(20_000, W, B, budget=per * 100) == 100
    assert feature_block(20_000, W, B, budget=1) == 1


def blocked_data():
    """300 rows, 7 features of 16 bins; features 3 and 6 copy feature 1 (equal gains:
    the first must win across blocks as within one)."""
    rng = np.random.default_rng(0)
    N, F, B = 300, 7, 16
    bins = rng.integers(0, B - 1, (N, F)).astype(np.uint8)
    bins[rng.random((N, F)) < 0.1] = B - 1  # missing
    bins[:, 3] = bins[:, 1]
    bins[:, 6] = bins[:, 1]
    g = (rng.normal(size=N) + (bins[:, 1] > 7) - 0.5 * (bins[:, 4] < 3)).astype(np.float32)
    h = rng.uniform(0.5, 1.5, N).astype(np.float32)
    cuts = np.full((F, B), np.inf, np.float32)
    cuts[:, 0] = -np.inf
    cuts[:, 1 : B - 1] = np.arange(1, B - 1) - 0.5
    return bins, g, h, cuts


@pytest.mark.parametrize("native", NATIVE)
def test_feature_blocks_grow_the_same_tree(native):
    """Blocks of 1 and 3 features (7 features: the last block of 3 overlaps the one
    before), and with column sampling, grow the tree of one pass over every feature:
    the same splits, leaves to float64-sum rounding."""
    bins, g, h, cuts = blocked_data()
    F, B, D = bins.shape[1], cuts.shape[1], 4
    fok = np.array([True, False, True, False, True, True, False])
    dyn = TreeHyper(*np.float32([0.3, 1.0, 0.0, 0.0, 1.0, 0.0]))
    b = bins if native else np.ascontiguousarray(bins.T)

    @functools.partial(jax.jit, static_argnames=("block", "sample"))
    def run(b, g, h, cuts, fok, *, block, sample):
        features = (
            FeatureSampler(jax.random.key(3), jnp.array([1.0, 0.8, 0.9, 0.7]), F, D)
            if sample
            else None
        )
        return grow_tree(
            b,
            g,
            h,
            dyn,
            cuts,
            fok,
            TreeSpec(D, B, native=native, feature_block=block),
            features=features,
        )

    for sample, blocks in ((False, (1, 3)), (True, (3,))):
        ref, ref_leaf = run(b, g, h, cuts, fok, block=None, sample=sample)
        assert int(np.sum(~np.asarray(ref["is_leaf"]))) >= 5
        used = set(np.asarray(ref["feature"])[~np.asarray(ref["is_leaf"])].tolist())
        if not sample:  # copies of feature 1 never win (sampling may hide feature 1)
            assert not used & {3, 6} and 1 in used, used
        for block in blocks:
            tree, leaf = run(b, g, h, cuts, fok, block=block, sample=sample)
            for k in ("feature", "tbin", "default_left", "is_leaf"):
                np.testing.assert_array_equal(tree[k], ref[k], err_msg=f"{k} {block}")
            np.testing.assert_array_equal(leaf, ref_leaf)
            np.testing.assert_allclose(tree["value"], ref["value"], rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(tree["gain"], ref["gain"], rtol=1e-5)


@pytest.mark.parametrize("native", NATIVE)
def test_wide_tree_memory_does_not_grow_with_features(native):
    """Depth 6, 256 bins, 64 rows: 4,000 features would need about 1.6 GB of level
    histograms in one pass; in blocks the tree builder's temporaries stay under
    ``HIST_MEMORY`` and are the same for 4,000 and 8,000 features."""
    N, B, D = 64, 256, 6
    W = 2 ** (D - 1)
    temps = {}
    for F in (4_000, 8_000):
        assert F * grow.HIST_BYTES_PER_FEATURE * W * B > 2 * grow.HIST_MEMORY
        bins = sds((N, F) if native else (F, N), jnp.uint8)
        fn = jax.jit(functools.partial(grow_tree, spec=TreeSpec(D, B, native=native)))
        c = fn.lower(
            bins,
            sds((N,), jnp.float32),
            sds((N,), jnp.float32),
            TreeHyper(*[sds((), jnp.float32)] * 6),
            sds((F, B), jnp.float32),
            sds((F,), jnp.bool_),
        ).compile()
        temps[F] = c.memory_analysis().temp_size_in_bytes
    assert temps[4_000] < grow.HIST_MEMORY, temps
    # what grows with F is per feature, not per (feature, node, bin): < 4 KB a feature
    assert temps[8_000] - temps[4_000] < 4_000 * 4096, temps


def test_training_in_feature_blocks_gives_the_same_model(monkeypatch):
    """train() with a histogram budget so small that every feature is a block of its
    own (and column sampling on) gives the model of the default budget."""
    bins, g, _, _ = blocked_data()
    X = bins.astype(np.float32)
    X[bins == bins.max()] = np.nan
    y = g
    kw = dict(n_rounds=3, max_depth=3, colsample_bynode=0.8, seed=1, verbose=False)
    ref = jaxboost.train("squared", X, y, **kw)
    jax.clear_caches()  # the same shapes: make train trace its program again
    monkeypatch.setattr(grow, "HIST_MEMORY", 1)
    bst = jaxboost.train("squared", X, y, **kw)
    for a, b in zip(ref.ensemble, bst.ensemble):
        if np.issubdtype(np.asarray(a).dtype, np.floating):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(bst.predict(X), ref.predict(X), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not native_kernel.available(), reason="native kernel unavailable")
def test_a_tree_the_level_loop_would_block_stays_on_the_native_kernel(monkeypatch):
    """The XLA level loop takes a level's features in blocks once their histograms would
    pass ``grow.HIST_MEMORY``; the native whole-tree kernel, whose histograms are about a
    third of the loop's, keeps such a tree while its own fit
    ``NATIVE_TREE_MEMORY_FACTOR`` times that budget (before, wide data and deep trees
    went to the blocked loop: 10,000 x 2,000 rows at depth 6 took 8.0 s there against
    2.96 s on the kernel). With a budget that blocks 30 features ten at a time, training
    takes the kernel and gives the unblocked model bit for bit; with a budget too small
    for the kernel as well, the blocked loop gives the same model to float rounding."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(400, 30)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=400) > 0).astype(np.float32)
    kw = dict(n_rounds=3, max_depth=6, verbose=False)
    calls = []
    kernel = grow._native_tree_grow

    def counted(*args, **kwargs):
        calls.append(1)
        return kernel(*args, **kwargs)

    monkeypatch.setattr(grow, "_native_tree_grow", counted)
    jax.clear_caches()
    ref = jaxboost.train("logistic", X, y, **kw)
    assert calls  # unblocked: the kernel
    B = ref.bin_edges.n_bins
    W = 2 ** (kw["max_depth"] - 1)
    per = grow.HIST_BYTES_PER_FEATURE * W * B  # the level loop's bytes per feature
    monkeypatch.setattr(grow, "HIST_MEMORY", per * 10)
    assert feature_block(30, W, B) == 10  # the level loop would take blocks of 10
    need = native_kernel.tree_scratch_bytes(400, 30, kw["max_depth"], B)
    assert need <= grow.NATIVE_TREE_MEMORY_FACTOR * grow.HIST_MEMORY
    calls.clear()
    jax.clear_caches()  # the same shapes: trace the program again
    bst = jaxboost.train("logistic", X, y, **kw)
    assert calls
    for a, b in zip(ref.ensemble, bst.ensemble):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    monkeypatch.setattr(grow, "HIST_MEMORY", need // grow.NATIVE_TREE_MEMORY_FACTOR - 1)
    calls.clear()
    jax.clear_caches()
    blocked = jaxboost.train("logistic", X, y, **kw)
    assert not calls  # neither fits: the blocked level loop
    np.testing.assert_allclose(blocked.predict(X), ref.predict(X), rtol=1e-5, atol=1e-6)


def test_threaded_binning_hands_its_threads_memory_back(monkeypatch):
    """The bin edges of a large table are computed in threads, whose malloc arenas keep
    the columns they copied and sorted: binning trims them once its threads are done
    (500,000 x 30, four fits in one process: peak 525 -> 494 MiB), and gives the edges
    it gives without threads. So does the NumPy binning of the rows (where the native
    one is unavailable), with the bins of one thread."""
    from jaxboost.engine import binning

    calls = []
    monkeypatch.setattr(binning, "release_free_memory", lambda: calls.append(1))
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1 << 14, 16)).astype(np.float32)  # 2**18 values: threaded
    X[rng.random(X.shape) < 0.1] = np.nan
    monkeypatch.setattr(binning.os, "cpu_count", lambda: 4)  # threads on any machine
    threaded = binning.compute_bin_edges(X, 64)
    assert calls == [1]
    monkeypatch.setattr(binning.os, "cpu_count", lambda: 1)  # one worker: no threads
    alone = binning.compute_bin_edges(X, 64)
    assert calls == [1]
    np.testing.assert_array_equal(threaded.cuts, alone.cuts)
    np.testing.assert_array_equal(threaded.n_cuts, alone.n_cuts)
    monkeypatch.setattr(binning, "_native_binning", lambda *a: False)
    bins_alone = binning.apply_bins(X, alone)
    assert calls == [1]
    monkeypatch.setattr(binning.os, "cpu_count", lambda: 4)
    np.testing.assert_array_equal(binning.apply_bins(X, alone), bins_alone)
    assert calls == [1, 1]


def test_binning_threads_are_started_once(monkeypatch):
    """The threads that compute a large table's bin edges are kept for the process: a
    new pool for every fit spread the columns it copied over new malloc arenas, and the
    process grew fit after fit (500,000 x 30, four fits: peak 448 -> 405 MiB)."""
    import threading

    from jaxboost.engine import binning

    monkeypatch.setattr(binning.os, "cpu_count", lambda: 4)  # threads on any machine
    X = np.random.default_rng(4).normal(size=(1 << 14, 16)).astype(np.float32)

    def pool_threads():
        return {t.ident for t in threading.enumerate() if t.name.startswith("jaxboost-bins")}

    first = binning.compute_bin_edges(X, 64)
    started = pool_threads()
    again = binning.compute_bin_edges(X, 64)
    assert started  # the kept pool's threads (started as work came: at most 4)
    assert started <= pool_threads() and len(pool_threads()) <= 4  # still there
    np.testing.assert_array_equal(first.cuts, again.cuts)


def test_a_new_round_program_hands_the_compilers_memory_back(monkeypatch):
    import platform
    import sys

    from jaxboost.engine import compile as compile_module

    if sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc":
        assert compile_module.release_free_memory() is True  # malloc_trim found and run
    calls = []  # who asked: a program that just compiled, or a training call's end

    def release():
        calls.append(sys._getframe(1).f_code.co_name)

    monkeypatch.setattr(compile_module, "release_free_memory", release)
    rng = np.random.default_rng(7)
    X = rng.normal(size=(77, 3)).astype(np.float32)
    y = X[:, 0] + 0.1 * rng.normal(size=77)
    kw = dict(n_rounds=2, max_depth=3, verbose=False)

    def own_loss(y, p):  # a function of its own: a round program of its own
        return 0.5 * (y - p) ** 2

    jaxboost.train(own_loss, X, y, **kw)
    assert calls == ["__call__"]  # compiled once, trimmed once (a small fit: not at its end)
    jaxboost.train(own_loss, X, y + 1.0, **kw)
    assert calls == ["__call__"]  # the cached program: nothing to hand back
    monkeypatch.setattr(compile_module, "TRIM_AFTER_BYTES", 0)  # as after a large fit
    jaxboost.train(own_loss, X, y + 1.0, **kw)
    assert calls == ["__call__", "freeing"]  # trimmed when the call ended


def _record_mallopt(monkeypatch):
    """``fit_malloc_thresholds``' calls to ``mallopt``, recorded instead of made."""
    from jaxboost.engine import compile as compile_module

    calls = []
    monkeypatch.setattr(compile_module, "_MALLOPT", [lambda p, v: calls.append((p, v)) or 1])
    return compile_module, calls


def test_a_fit_runs_under_malloc_thresholds_and_resets_them(monkeypatch):
    """While a fit runs, blocks of 8 MiB or more come from mmap and the heap's top is
    trimmed past 1 MiB (W1: 1.08 -> 1.00x XGBoost's peak after one fit,
    ``docs/performance.md``); when it ends, glibc's sliding maximum (32 / 64 MiB), at
    which NumPy runs at its usual speed."""
    cm, calls = _record_mallopt(monkeypatch)
    fit = [(cm.M_MMAP_THRESHOLD, 8 << 20), (cm.M_TRIM_THRESHOLD, 1 << 20)]
    after = [(cm.M_MMAP_THRESHOLD, 32 << 20), (cm.M_TRIM_THRESHOLD, 64 << 20)]
    seen = []

    def loss(y, p):  # records the thresholds in force while the fit runs
        seen.append(list(calls))
        return 0.5 * (y - p) ** 2

    rng = np.random.default_rng(7)
    X = rng.normal(size=(77, 3)).astype(np.float32)
    jaxboost.train(loss, X, X[:, 0], n_rounds=2, max_depth=3, verbose=False)
    assert seen and all(s == fit for s in seen)  # traced inside the fit: set, not reset
    assert calls == fit + after
    # nested or concurrent fits: the first sets them, the last resets them
    calls.clear()
    with cm.fit_malloc_thresholds():
        with cm.fit_malloc_thresholds():
            assert calls == fit
        assert calls == fit
    assert calls == fit + after


def test_malloc_thresholds_the_user_set_are_left_alone(monkeypatch):
    from jaxboost.engine import compile as compile_module

    for env in ({"MALLOC_MMAP_THRESHOLD_": "1048576"}, {"JAXBOOST_MALLOC": "0"}):
        monkeypatch.setattr(compile_module, "_MALLOPT", [])  # looked up anew
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        assert compile_module._mallopt() is None
        with compile_module.fit_malloc_thresholds():  # and nothing is called
            pass
        for k in env:
            monkeypatch.delenv(k)
    import platform
    import sys

    monkeypatch.setattr(compile_module, "_MALLOPT", [])
    if sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc":
        assert compile_module._mallopt() is not None  # found: the fits set thresholds
