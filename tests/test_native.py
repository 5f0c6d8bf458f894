"""The native (C++ / XLA FFI) histogram kernel against the NumPy reference."""

import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import opt_level_env

from jaxboost import native
from jaxboost.engine.histogram import build_histogram_naive


def _compiler_on_path() -> bool:
    cxx = os.environ.get("CXX", "").strip()
    if cxx:
        return shutil.which(shlex.split(cxx)[0]) is not None
    return any(shutil.which(c) for c in ("c++", "g++", "clang++"))


def _native_should_work() -> bool:
    disabled = os.environ.get("JAXBOOST_NATIVE", "").strip().lower() in ("0", "false", "no", "off")
    return sys.platform.startswith("linux") and _compiler_on_path() and not disabled


@pytest.fixture(scope="module", autouse=True)
def require_native():
    if not native.available():
        if _native_should_work():
            pytest.fail(
                "native kernel should build on Linux with a C++ compiler: "
                f"{native.unavailable_reason()}"
            )
        pytest.skip(f"native kernel unavailable: {native.unavailable_reason()}")


def _data(rng, N, F, n_nodes, B, skip_frac=0.3, missing_frac=0.2):
    bins = rng.integers(0, B, size=(N, F)).astype(np.uint8 if B <= 256 else np.uint16)
    bins[rng.random((N, F)) < missing_frac] = B - 1  # the missing-value bin
    g = rng.normal(size=N).astype(np.float32)
    h = rng.random(N).astype(np.float32)
    node = rng.integers(0, n_nodes, size=N).astype(np.int32)
    node[rng.random(N) < skip_frac] = n_nodes  # skipped rows
    return bins, g, h, node


def _check(G, H, bins, g, h, node, n_nodes, B):
    G_ref, H_ref = build_histogram_naive(bins.T, g, h, node, n_nodes, B)
    assert G.dtype == np.float64 and H.dtype == np.float64
    assert G.shape == H.shape == (bins.shape[1], n_nodes, B)
    np.testing.assert_allclose(np.asarray(G), G_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(H), H_ref, rtol=1e-12, atol=1e-12)


# Shapes cover every compile-time stride (n_bins <= 16, 32, 64, 128, 256), F below,
# at and above the unroll width, and blocks that are all kept, partly kept or all skipped.
@pytest.mark.parametrize(
    "N,F,n_nodes,B",
    [
        (3000, 5, 4, 16),
        (2000, 1, 1, 2),
        (1500, 4, 3, 33),
        (2500, 9, 8, 64),
        (1024, 28, 2, 100),
        (4000, 13, 16, 256),
        (700, 3, 1, 255),
    ],
)
def test_matches_naive_reference(N, F, n_nodes, B):
    rng = np.random.default_rng(N + F + n_nodes + B)
    bins, g, h, node = _data(rng, N, F, n_nodes, B)
    G, H = native.histogram(bins, g, h, node, n_nodes, B)
    _check(G, H, bins, g, h, node, n_nodes, B)


# Threads: rows split into n_threads fixed blocks, each summed into its own histogram.
@pytest.mark.parametrize("xla_pool", [True, False], ids=["xla-pool", "std-thread"])
@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize("N,F,n_nodes,B", [(5001, 7, 4, 64), (3333, 28, 2, 256), (999, 3, 1, 16)])
def test_threads_match_naive_reference(N, F, n_nodes, B, n_threads, xla_pool):
    rng = np.random.default_rng(N + n_threads)
    bins, g, h, node = _data(rng, N, F, n_nodes, B)
    G, H = native.histogram(bins, g, h, node, n_nodes, B, n_threads=n_threads, _xla_pool=xla_pool)
    _check(G, H, bins, g, h, node, n_nodes, B)


@pytest.mark.parametrize("N", [1, 2, 3, 5])
@pytest.mark.parametrize("n_threads", [3, 8])
def test_fewer_rows_than_threads(N, n_threads):
    rng = np.random.default_rng(N)
    bins, g, h, node = _data(rng, N, 5, 2, 8, skip_frac=0.4)
    node[0] = 0  # at least one kept row
    _check(*native.histogram(bins, g, h, node, 2, 8, n_threads=n_threads), bins, g, h, node, 2, 8)


@pytest.mark.parametrize("n_threads", [2, 3])
def test_threads_deterministic(n_threads):
    rng = np.random.default_rng(11)
    N, F, n_nodes, B = 20001, 9, 8, 64
    bins, g, h, node = _data(rng, N, F, n_nodes, B)
    # Large and varied magnitudes so that any change in summation order shows.
    g = (g * np.exp(rng.normal(size=N) * 4)).astype(np.float32)
    f = jax.jit(native.histogram, static_argnums=(4, 5), static_argnames=("n_threads",))
    ref = [
        np.asarray(a) for a in native.histogram(bins, g, h, node, n_nodes, B, n_threads=n_threads)
    ]
    for G, H in [f(bins, g, h, node, n_nodes, B, n_threads=n_threads) for _ in range(3)] + [
        native.histogram(bins, g, h, node, n_nodes, B, n_threads=n_threads, _xla_pool=False)
    ]:
        np.testing.assert_array_equal(np.asarray(G), ref[0])
        np.testing.assert_array_equal(np.asarray(H), ref[1])


@pytest.mark.parametrize("big_node", [False, True])
def test_many_nodes_grouped_by_node(big_node):
    """Many nodes (>= 8 MiB of scratch, or >= 16 MiB over all threads): rows are grouped
    by node and every slot is a sequential sum over its rows, the same for any thread
    count and the same as one-thread row blocks. F=28, 256 bins: 40 nodes take 4.7 MiB
    (row blocks on 1-3 threads, by node on 4+), 80 nodes 9.3 MiB (by node)."""
    rng = np.random.default_rng(13 + big_node)
    N, F, B = 6001, 28, 256
    for n_nodes, threads in ((40, (1, 4, 5)), (80, (1, 2, 3))):
        bins, g, h, node = _data(rng, N, F, n_nodes, B)
        if big_node:  # one node holds most rows: split into feature ranges
            node[rng.random(N) < 0.7] = 3
        g = (g * np.exp(rng.normal(size=N) * 4)).astype(np.float32)
        out = {
            t: [np.asarray(a) for a in native.histogram(bins, g, h, node, n_nodes, B, n_threads=t)]
            for t in threads
        }
        _check(*out[1], bins, g, h, node, n_nodes, B)
        for t in threads[1:]:
            np.testing.assert_array_equal(out[t][0], out[1][0])
            np.testing.assert_array_equal(out[t][1], out[1][1])
    G, H = native.histogram(bins, g, h, node, n_nodes, B, n_threads=3, _xla_pool=False)
    np.testing.assert_array_equal(np.asarray(G), out[1][0])
    np.testing.assert_array_equal(np.asarray(H), out[1][1])


def test_default_threads(monkeypatch):
    monkeypatch.delenv(native.ENV_THREADS, raising=False)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert native.default_threads() == cores
    assert native.default_threads(1_000_000, 28) == cores
    assert native.default_threads(1000, 28) == 1  # too little work to pay for threads
    monkeypatch.setenv(native.ENV_THREADS, "3")
    assert native.default_threads(1_000_000, 28) == 3
    assert native.default_threads(100, 2) == 1
    monkeypatch.setenv(native.ENV_THREADS, "zero")
    with pytest.raises(ValueError, match=native.ENV_THREADS):
        native.default_threads()
    with pytest.raises(ValueError):
        z = np.zeros(5, np.float32)
        native.histogram(np.zeros((5, 2), np.uint8), z, z, np.zeros(5, np.int32), 1, 4, n_threads=0)


def test_env_threads_reach_the_kernel(monkeypatch):
    """The env var is read at trace time and is part of the call (visible in the HLO)."""
    rng = np.random.default_rng(12)
    bins, g, h, node = _data(rng, 20000, 14, 2, 16)
    monkeypatch.setenv(native.ENV_THREADS, "3")
    hlo = jax.jit(native.histogram, static_argnums=(4, 5)).lower(bins, g, h, node, 2, 16).as_text()
    assert "n_threads = 3" in hlo
    G, H = native.histogram(bins, g, h, node, 2, 16)
    G3, H3 = native.histogram(bins, g, h, node, 2, 16, n_threads=3)
    np.testing.assert_array_equal(np.asarray(G), np.asarray(G3))
    np.testing.assert_array_equal(np.asarray(H), np.asarray(H3))


def test_all_kept_and_all_skipped():
    rng = np.random.default_rng(3)
    bins, g, h, node = _data(rng, 2048, 6, 2, 8, skip_frac=0.0)
    _check(*native.histogram(bins, g, h, node, 2, 8), bins, g, h, node, 2, 8)
    node[:] = 2  # every row skipped
    G, H = native.histogram(bins, g, h, node, 2, 8)
    assert not np.asarray(G).any() and not np.asarray(H).any()
    node[:] = -1  # out-of-range nodes below zero are skipped too
    assert not np.asarray(native.histogram(bins, g, h, node, 2, 8)[0]).any()


def test_inside_jit_traced_without_x64():
    assert not jax.config.jax_enable_x64
    rng = np.random.default_rng(4)
    bins, g, h, node = _data(rng, 5000, 7, 4, 32)
    f = jax.jit(native.histogram, static_argnums=(4, 5))
    G, H = f(bins, g, h, node, 4, 32)
    _check(G, H, bins, g, h, node, 4, 32)

    @jax.jit
    def level(bins, g, h, node):  # float64 sums reduced inside the same jit
        G, H = native.histogram(bins, g, h, node, 4, 32)
        with jax.enable_x64(True):
            return G.sum(axis=(1, 2)), H.sum(axis=(1, 2))

    gs, hs = level(bins, g, h, node)
    kept = node < 4
    np.testing.assert_allclose(
        np.asarray(gs), np.full(7, g[kept].astype(np.float64).sum()), rtol=1e-12
    )
    assert gs.dtype == np.float64


def test_inputs_from_jitted_computation():
    rng = np.random.default_rng(5)
    x = rng.random((3000, 6)).astype(np.float32)
    g = rng.normal(size=3000).astype(np.float32)

    @jax.jit
    def make(x, g):
        bins = jnp.floor(x * 15).astype(jnp.uint8)
        node = (x[:, 0] > 0.5).astype(jnp.int32) + (x[:, 1] > 0.7).astype(jnp.int32)
        return bins, node, g * 2.0, jnp.abs(g) + 0.1

    bins, node, gg, hh = make(x, g)  # node 2 = skipped with n_nodes = 2
    G, H = native.histogram(bins, gg, hh, node, 2, 16)
    _check(G, H, np.asarray(bins), np.asarray(gg), np.asarray(hh), np.asarray(node), 2, 16)

    @jax.jit
    def fused(x, g):  # produced and consumed inside one jit
        bins, node, gg, hh = make(x, g)
        return native.histogram(bins, gg, hh, node, 2, 16)

    G2, H2 = fused(x, g)
    np.testing.assert_array_equal(np.asarray(G2), np.asarray(G))
    np.testing.assert_array_equal(np.asarray(H2), np.asarray(H))


def test_float64_gradients():
    rng = np.random.default_rng(6)
    bins, _, _, node = _data(rng, 3000, 4, 3, 20)
    g = rng.normal(size=3000) * 1e-3 + 1.0  # not representable in float32
    h = rng.random(3000)
    with jax.enable_x64(True):
        G, H = native.histogram(bins, jnp.asarray(g), jnp.asarray(h), node, 3, 20)
    _check(G, H, bins, g, h, node, 3, 20)


def test_million_rows_in_one_bin_stay_accurate():
    N = 1_000_000
    rng = np.random.default_rng(7)
    g = rng.random(N, dtype=np.float32)
    h = (rng.random(N, dtype=np.float32) + 0.5).astype(np.float32)
    bins = np.zeros((N, 1), np.uint8)
    node = np.zeros(N, np.int32)
    G, H = jax.jit(native.histogram, static_argnums=(4, 5))(bins, g, h, node, 1, 4)
    exact_g = math.fsum(g.astype(np.float64))
    exact_h = math.fsum(h.astype(np.float64))
    assert abs(float(G[0, 0, 0]) - exact_g) / exact_g < 1e-12
    assert abs(float(H[0, 0, 0]) - exact_h) / exact_h < 1e-12
    assert not np.asarray(G)[0, 0, 1:].any()


def test_empty_inputs():
    z = np.zeros(0, np.float32)
    G, H = native.histogram(np.zeros((0, 3), np.uint8), z, z, np.zeros(0, np.int32), 2, 4)
    assert G.shape == (3, 2, 4) and not np.asarray(G).any() and not np.asarray(H).any()


# uint16 bins (features of more than 256 bins, training's max_bin > 256): every
# compile-time stride above 256 bins; the last case's 100 nodes x 6 features x 1,024
# bins take 9.9 MiB of scratch, so rows are grouped by node there (row blocks below).
@pytest.mark.parametrize(
    "N,F,n_nodes,B,threads",
    [
        (3000, 5, 4, 300, (1, 2)),
        (2000, 3, 1, 512, (1, 3)),
        (1200, 2, 8, 2048, (1,)),
        (900, 3, 3, 4096, (1, 2)),
        (1500, 6, 100, 1024, (1, 2)),
    ],
)
def test_uint16_bins_match_naive_reference(N, F, n_nodes, B, threads):
    rng = np.random.default_rng(N + B)
    bins, g, h, node = _data(rng, N, F, n_nodes, B)
    assert bins.dtype == np.uint16 and bins.max() > 255
    for t in threads:
        _check(
            *native.histogram(bins, g, h, node, n_nodes, B, n_threads=t),
            bins,
            g,
            h,
            node,
            n_nodes,
            B,
        )


def test_bad_arguments_raise():
    z = np.zeros(5, np.float32)
    with pytest.raises(ValueError, match=r"\[1, 256\]"):  # uint8 bins: at most 256
        native.histogram(np.zeros((5, 2), np.uint8), z, z, np.zeros(5, np.int32), 1, 300)
    with pytest.raises(ValueError, match=r"\[1, 4096\]"):  # uint16 bins: at most 4,096
        native.histogram(np.zeros((5, 2), np.uint16), z, z, np.zeros(5, np.int32), 1, 4097)
    with pytest.raises(TypeError):
        native.histogram(np.zeros((5, 2), np.int32), z, z, np.zeros(5, np.int32), 1, 4)
    with pytest.raises(ValueError):
        native.histogram(np.zeros((5, 2), np.uint8), z[:4], z, np.zeros(5, np.int32), 1, 4)


@pytest.fixture
def fresh_state(monkeypatch):
    """Run available() from scratch (its result is cached per process), then restore.

    XLA refuses a second library under the FFI target this process registered already,
    so here a library is loaded and checked but not registered (the subprocess tests
    register for real)."""
    saved = dict(native._state)
    monkeypatch.setattr(jax.ffi, "register_ffi_target", lambda *args, **kwargs: None)
    native._state.update(done=False, ok=False, reason=None, lib=None, path=None)
    yield
    native._state.clear()
    native._state.update(saved)


def test_env_var_disables(monkeypatch, fresh_state):
    monkeypatch.setenv("JAXBOOST_NATIVE", "0")
    assert native.available() is False
    assert "JAXBOOST_NATIVE" in native.unavailable_reason()


def test_env_var_disables_without_a_warning(monkeypatch, fresh_state, recwarn):
    monkeypatch.setenv("JAXBOOST_NATIVE", "0")
    assert native.available() is False
    assert not [w for w in recwarn if issubclass(w.category, native.NativeKernelWarning)]


@pytest.fixture
def no_installed_library(monkeypatch, tmp_path):
    """As if jaxboost had been installed without a compiler: no library in the package."""
    empty = tmp_path / "package"
    empty.mkdir()
    monkeypatch.setattr(native, "_PACKAGE_DIR", empty)


def test_build_failure_is_reported_not_raised(
    monkeypatch, tmp_path, fresh_state, no_installed_library
):
    monkeypatch.setenv("JAXBOOST_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CXX", "no-such-compiler-jaxboost")
    with pytest.warns(native.NativeKernelWarning, match="no-such-compiler-jaxboost"):
        assert native.available() is False
    assert "no-such-compiler-jaxboost" in native.unavailable_reason()


def test_fallback_warns_once(monkeypatch, tmp_path, fresh_state, no_installed_library):
    """No library from the install and no compiler: one warning, then silence."""
    import warnings

    monkeypatch.setenv("JAXBOOST_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CXX", "no-such-compiler-jaxboost")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # count every warning, not once per location
        for _ in range(3):
            assert native.available() is False
        native.unavailable_reason(), native.library_path()
    ours = [w for w in caught if issubclass(w.category, native.NativeKernelWarning)]
    assert len(ours) == 1, [str(w.message) for w in caught]
    assert "pure JAX" in str(ours[0].message)
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").rglob("*.so"))


def test_first_use_build_goes_to_a_private_cache(
    monkeypatch, tmp_path, fresh_state, no_installed_library, copying_cxx
):
    """Without a library from the install, ``available()`` compiles one into a private
    folder of the cache and loads it.

    Where the install built the kernel (``make test``), that build already compiled
    this ``hist.cc`` with ``_build.FLAGS``, so the compiler here is a stand-in that
    copies it (a real compile takes 14 s of the suite's time) and records the command;
    the cache's folder, modes, file name and the load are what is checked. Without an
    installed library, the kernel is compiled for real: a source that does not compile
    fails here, even though installing went on without it."""
    cache = tmp_path / "cache"
    assert not cache.exists()
    monkeypatch.setenv("JAXBOOST_CACHE_DIR", str(cache))
    if copying_cxx is not None:
        monkeypatch.setenv("CXX", copying_cxx[0])
    assert native.available(), native.unavailable_reason()
    path = native.library_path()
    assert path.parent.parent == cache and path.is_file()
    assert (path.parent.stat().st_mode & 0o077) == 0  # the build folder is ours alone
    if copying_cxx is not None:
        cmd = json.loads(copying_cxx[1].read_text().splitlines()[-1])
        assert cmd[: len(native._build.FLAGS)] == list(native._build.FLAGS)
        assert Path(cmd[cmd.index("-I") + 2]) == native._build.SOURCE
        assert Path(cmd[cmd.index("-o") + 1]).parent == path.parent
    _FIRST_USE_BUILD.append(cache)  # a good build for ``built_cache`` to hand out


_FIRST_USE_BUILD = []
# The library the install built, looked up before any test swaps the package folder.
_INSTALLED = native.installed_library()


@pytest.fixture(scope="module")
def copying_cxx(tmp_path_factory):
    """``(CXX, log)`` of a stand-in compiler that copies the library the install built
    (``_COPYING_CXX``) and appends each command to ``log``; ``None`` without an
    installed library. One value for the module: the compiler is part of the cache's
    key, so the builds it makes are found again by the tests that set the same CXX."""
    if _INSTALLED is None:
        return None
    folder = tmp_path_factory.mktemp("cxx")
    stand_in = folder / "cxx.py"
    stand_in.write_text(_COPYING_CXX)
    log = folder / "log"
    return shlex.join([sys.executable, str(stand_in), str(log), str(_INSTALLED)]), Path(
        str(log) + ".cmd"
    )


@pytest.fixture(scope="module")
def built_cache(tmp_path_factory, copying_cxx):
    """A cache folder holding one first-use build, made once for the tests that need a
    good build to start from (each copies it): the one
    ``test_first_use_build_goes_to_a_private_cache`` made, when it ran first. Built
    with ``copying_cxx`` where there is one: tests that load it set the same CXX."""
    if _FIRST_USE_BUILD:
        return _FIRST_USE_BUILD[0]
    root = tmp_path_factory.mktemp("built") / "cache"
    saved = {k: os.environ.get(k) for k in ("JAXBOOST_CACHE_DIR", "CXX")}
    os.environ["JAXBOOST_CACHE_DIR"] = str(root)
    if copying_cxx is not None:
        os.environ["CXX"] = copying_cxx[0]
    try:
        native._build_in_cache()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return root


@pytest.mark.parametrize("where", ["root", "subfolder"])
def test_group_writable_cache_is_refused(
    monkeypatch, tmp_path, fresh_state, no_installed_library, built_cache, copying_cxx, where
):
    """A library in a folder others can write to could be theirs: never loaded."""
    cache = tmp_path / "cache"
    shutil.copytree(built_cache, cache)  # copies the 0700 modes too
    monkeypatch.setenv("JAXBOOST_CACHE_DIR", str(cache))
    if copying_cxx is not None:  # the compiler that made built_cache: the same key
        monkeypatch.setenv("CXX", copying_cxx[0])
    monkeypatch.setattr(native._build, "build", _no_second_build)
    assert native.available(), native.unavailable_reason()  # a good build first
    built = native.library_path()
    native._state.update(done=False, ok=False, reason=None, lib=None, path=None)
    (cache if where == "root" else built.parent).chmod(0o775)
    with pytest.warns(native.NativeKernelWarning, match="writable by group or others"):
        assert native.available() is False
    assert native.library_path() is None
    assert "refusing" in native.unavailable_reason()


def _no_second_build(*args, **kwargs):
    raise AssertionError("the cached build should have been loaded, not rebuilt")


def test_library_owned_by_someone_else_is_refused(
    monkeypatch, tmp_path, fresh_state, no_installed_library
):
    cache = tmp_path / "cache"
    monkeypatch.setenv("JAXBOOST_CACHE_DIR", str(cache))
    cache.mkdir(mode=0o700)
    monkeypatch.setattr(native.os, "getuid", lambda: os.stat(cache).st_uid + 1)
    with pytest.warns(native.NativeKernelWarning, match="not by this user"):
        assert native.available() is False


def _installed_here():
    path = native.installed_library()
    if path is None:
        pytest.skip(
            "no library built at install in this checkout (pip install -e ., or "
            "python setup.py build_ext --inplace)"
        )
    return path


def test_installed_library_is_loaded_and_nothing_is_built(tmp_path):
    """After installation, a fresh process loads the library built at install, from the
    package, and compiles nothing into the cache."""
    installed = _installed_here()
    cache = tmp_path / "cache"
    script = textwrap.dedent("""
        from jaxboost import native
        assert native.available(), native.unavailable_reason()
        print(native.library_path())
    """)
    env = dict(os.environ, JAXBOOST_CACHE_DIR=str(cache), JAX_PLATFORMS="cpu")
    env.pop("JAXBOOST_NATIVE", None)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr[-3000:]
    loaded = out.stdout.strip().splitlines()[-1]
    assert loaded == str(installed)
    assert installed.parent == Path(native.__file__).parent
    assert not cache.exists() or not list(cache.rglob("*.so"))


# A stand-in for the C++ compiler (``CXX``): writes a copy of an earlier real build of
# the same source and flags to the ``-o`` path, and records the command it was given.
_COPYING_CXX = textwrap.dedent("""
    import json, shutil, sys
    args = sys.argv[1:]
    if args[2:] == ["--version"]:
        print("copying stand-in 1.0")
        sys.exit(0)
    with open(args[0] + ".cmd", "a") as f:
        f.write(json.dumps(args[2:]) + "\\n")
    shutil.copyfile(args[1], args[args.index("-o") + 1])
""")


def test_setup_py_builds_the_library_the_package_loads(
    monkeypatch, tmp_path, fresh_state, built_cache
):
    """The install-time build (setup.py's build_ext) puts the library where
    ``available()`` looks first, and nothing is compiled into the cache.

    The compiler is a stand-in that copies the module's one real build (``built_cache``:
    the same source and flags; compiling the kernel again would take 14 s): what is
    checked here is setup.py's part, the compile command it runs (the kernel's source
    with ``_build.FLAGS``), the file it names and where it puts it."""
    root = Path(__file__).resolve().parents[1]
    if not (root / "setup.py").is_file():
        pytest.skip("not a source checkout")
    (prebuilt,) = Path(built_cache).rglob("libjaxboost_hist*.so")
    stand_in = tmp_path / "cxx.py"
    stand_in.write_text(_COPYING_CXX)
    log = tmp_path / "cxx"
    cxx = shlex.join([sys.executable, str(stand_in), str(log), str(prebuilt)])
    build_lib = tmp_path / "lib"
    out = subprocess.run(
        [
            sys.executable,
            "setup.py",
            "-q",
            "build_ext",
            "--build-lib",
            str(build_lib),
            "--build-temp",
            str(tmp_path / "tmp"),
        ],
        cwd=root,
        env=dict(os.environ, CXX=cxx),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    (cmd,) = [json.loads(line) for line in (tmp_path / "cxx.cmd").read_text().splitlines()]
    assert cmd[: len(native._build.FLAGS)] == list(native._build.FLAGS)
    assert Path(cmd[cmd.index("-I") + 2]) == native._build.SOURCE
    package_dir = build_lib / "jaxboost" / "native"
    built = list(package_dir.glob("libjaxboost_hist-*.so"))
    assert [p.name for p in built] == [native._build.installed_name()]
    monkeypatch.setattr(native, "_PACKAGE_DIR", package_dir)
    cache = tmp_path / "cache"
    monkeypatch.setenv("JAXBOOST_CACHE_DIR", str(cache))
    assert native.available(), native.unavailable_reason()
    assert native.library_path() == built[0]
    assert not cache.exists()


def test_setup_py_without_a_compiler_still_succeeds(tmp_path):
    root = Path(__file__).resolve().parents[1]
    if not (root / "setup.py").is_file():
        pytest.skip("not a source checkout")
    env = dict(os.environ, CXX="no-such-compiler-jaxboost")
    out = subprocess.run(
        [
            sys.executable,
            "setup.py",
            "-q",
            "build_ext",
            "--build-lib",
            str(tmp_path / "lib"),
            "--build-temp",
            str(tmp_path / "tmp"),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "native kernel was not built" in out.stderr
    assert not list((tmp_path / "lib").rglob("*.so"))


def test_under_shard_map_on_two_host_devices():
    """Each device calls the kernel on its own rows (concurrently, each call itself on 3
    threads); psum gives the total."""
    script = textwrap.dedent("""
        import os
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
        os.environ["JAX_PLATFORMS"] = "cpu"
        import jax, jax.numpy as jnp, numpy as np
        from jax.sharding import NamedSharding, PartitionSpec as P
        from jaxboost import native
        from jaxboost.engine.histogram import build_histogram_naive
        assert native.available(), native.unavailable_reason()
        rng = np.random.default_rng(0)
        N, F, nn, B = 40000, 6, 4, 32
        bins = rng.integers(0, B, size=(N, F)).astype(np.uint8)
        g = rng.normal(size=N).astype(np.float32)
        h = rng.random(N).astype(np.float32)
        node = rng.integers(0, nn + 1, size=N).astype(np.int32)
        mesh = jax.make_mesh((2,), ("rows",))
        def local(b, g, h, nd):
            G, H = native.histogram(b, g, jnp.maximum(h, 0.0), nd, nn, B, n_threads=3)
            with jax.enable_x64(True):
                return jax.lax.psum(G, "rows"), jax.lax.psum(H, "rows")
        f = jax.jit(jax.shard_map(local, mesh=mesh,
                    in_specs=(P("rows", None), P("rows"), P("rows"), P("rows")),
                    out_specs=(P(), P())))
        put = lambda a, *spec: jax.device_put(a, NamedSharding(mesh, P("rows", *spec)))
        for _ in range(3):
            G, H = f(put(bins, None), put(g), put(h), put(node))
            Gr, Hr = build_histogram_naive(bins.T, g, h, node, nn, B)
            np.testing.assert_allclose(np.asarray(G), Gr, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(np.asarray(H), Hr, rtol=1e-12, atol=1e-12)
        print("ok")
    """)
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    env.update(opt_level_env())  # the suite's XLA optimization level
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


@pytest.mark.skipif(shutil.which("clang++") is None, reason="no clang++ on this machine")
def test_the_kernel_source_compiles_with_clang():
    """macOS builds the kernel with Clang (``c++`` is Clang there). From 26 to 27 Nov 2026
    the source did not compile with it (Clang refuses the address of a vector's element,
    which GCC allows), so every Mac quietly took the pure-JAX path, many times slower.
    A syntax-only pass (seconds, not a full build) with the build's flags."""
    from jaxboost.native import _build

    flags = [f for f in _build.FLAGS if f not in ("-shared", "-fPIC", "-O3")]
    cmd = [
        "clang++",
        "-fsyntax-only",
        *flags,
        "-I",
        _build.jaxlib_include_dir(),
        str(_build.SOURCE),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]


@pytest.mark.parametrize(
    "N,F,n_nodes,B,C,threads",
    [
        (3001, 7, 4, 64, 5, (1, 2, 3)),  # row blocks: one scratch histogram per thread
        (4001, 28, 80, 256, 4, (1, 2)),  # >= 8 MiB of scratch: rows grouped by node
    ],
    ids=["row-blocks", "by-node"],
)
def test_channels_equal_the_pair_histograms_bit_for_bit(N, F, n_nodes, B, C, threads):
    """``histogram_channels`` (all C channels in one pass over the bins, laid out
    ``(F, n, B, C)``) holds, channel pair by channel pair, exactly what ``histogram``
    gives for the same thread count, and the NumPy reference's sums; nodes at or above
    ``n_active`` are zero."""
    rng = np.random.default_rng(N + C)
    bins, _, _, node = _data(rng, N, F, n_nodes, B)
    node[rng.random(N) < 0.5] = 1  # one node with most rows (by node: feature ranges)
    vals = (rng.normal(size=(N, C)) * np.exp(rng.normal(size=(N, C)) * 3)).astype(np.float32)
    for t in threads:
        S = np.asarray(native.histogram_channels(bins, vals, node, n_nodes, B, n_threads=t))
        assert S.shape == (F, n_nodes, B, C) and S.dtype == np.float64
        for c in range(0, C, 2):
            d = min(c + 1, C - 1)
            G, H = native.histogram(bins, vals[:, c], vals[:, d], node, n_nodes, B, n_threads=t)
            np.testing.assert_array_equal(S[..., c], np.asarray(G))
            np.testing.assert_array_equal(S[..., d], np.asarray(H))
    G_ref, H_ref = build_histogram_naive(bins.T, vals[:, 0], vals[:, 1], node, n_nodes, B)
    np.testing.assert_allclose(S[..., 0], G_ref, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(S[..., 1], H_ref, rtol=1e-12, atol=1e-9)
    # (one thread: rows summed in row order under either scheme, which n_active picks)
    S = np.asarray(native.histogram_channels(bins, vals, node, n_nodes, B, n_threads=1))
    part = native.histogram_channels(bins, vals, node, n_nodes, B, n_threads=1, n_active=2)
    part = np.asarray(part)
    np.testing.assert_array_equal(part[:, :2], S[:, :2])
    assert not part[:, 2:].any()


def test_channels_check_their_arguments():
    bins = np.zeros((5, 2), np.uint8)
    node = np.zeros(5, np.int32)
    with pytest.raises(ValueError, match=r"vals must have shape \(5, C\)"):
        native.histogram_channels(bins, np.zeros((4, 3), np.float32), node, 1, 4)
    with pytest.raises(ValueError, match="n_bins must be in"):
        native.histogram_channels(bins, np.zeros((5, 3), np.float32), node, 1, 300)
    with pytest.raises(ValueError, match="n_threads must be in"):
        native.histogram_channels(bins, np.zeros((5, 3), np.float32), node, 1, 4, n_threads=0)
