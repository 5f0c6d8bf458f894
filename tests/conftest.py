import atexit
import os
import shutil
import tempfile

os.environ.setdefault("JAX_PLATFORMS", "cpu")

# OpenMP and OpenBLAS threads (XGBoost, LightGBM, scikit-learn, NumPy's BLAS): each
# pytest-xdist worker gets its share of the cores. Their threads busy-wait between
# parallel regions, so two workers each running two threads on a 2-core machine spin
# against each other: tests/test_rank_objectives.py's XGBoost comparison took 17 s of CPU
# with two OpenMP threads beside another busy process, 6 s with one; four XGBoost-heavy
# files on two workers, 67 s -> 50 s. Set before NumPy
# or any of them is imported (they read it when loaded); the example scripts the tests
# start inherit it. A value already in the environment is kept. jaxboost itself uses
# no OpenMP (its native kernel runs on XLA's thread pool).
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (_CORES or 1) // max(_WORKERS, 1))))

# jaxboost's own persistent cache stays off in the test processes: nothing from a run
# before this one is read (tests/test_compile_cache.py turns it on in subprocesses).
os.environ["JAXBOOST_COMPILATION_CACHE"] = "0"

# One compilation cache for this session only: it starts empty, is shared by the
# pytest-xdist workers and the example scripts the tests run (they inherit the
# variable), and is deleted when the session that created it ends. The same program
# compiled by two test files, two workers or two example scripts is compiled once.
# JAXBOOST_TEST_XLA_CACHE=0 turns it off.
SESSION_CACHE_ENV = "JAXBOOST_TEST_XLA_CACHE"
if SESSION_CACHE_ENV not in os.environ:
    _root = tempfile.mkdtemp(prefix="jaxboost-test-xla-")
    os.environ[SESSION_CACHE_ENV] = _root
    atexit.register(shutil.rmtree, _root, ignore_errors=True)
SESSION_CACHE = os.environ[SESSION_CACHE_ENV]
if SESSION_CACHE == "0":
    SESSION_CACHE = None

# The suite compiles with two XLA settings that make compiling cheaper: most of its time
# is XLA compiling small programs that then run on a few hundred rows.
# - backend optimization level 0 (about a third less compile time);
# - the CPU backend's older loop emitters instead of its fusion emitters
#   (--xla_cpu_use_fusion_emitters=false): each fused kernel is lowered to LLVM directly,
#   and a training program's LLVM compile takes about a fifth of the time (1.3 s -> 0.25
#   s for a depth-3 logistic program; a small script training seven model kinds went
#   from 24 to 12 s of CPU).
# - LLVM without its expensive passes (--xla_llvm_disable_expensive_passes) and each
#   module compiled as one piece (--xla_cpu_parallel_codegen_split_count=1: the suite's
#   two workers already keep both cores busy): about a fifth less CPU again.
# Trees are the same; some exp/log/cosh evaluations round differently by an ulp or so
# (tests/test_optimization_level.py trains with JAX's defaults in a subprocess and
# compares). The example scripts the tests start inherit the flags.
# JAXBOOST_TEST_FULL_OPT=1 (make test-full-opt) keeps XLA's defaults.
OPT_FLAG = (
    "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false "
    "--xla_llvm_disable_expensive_passes=true "
    "--xla_cpu_parallel_codegen_split_count=1"
)
if os.environ.get(
    "JAXBOOST_TEST_FULL_OPT", "0"
) == "0" and "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {OPT_FLAG}".strip()

import gc  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from jaxboost.parallel.sharding import use_cpu_devices  # noqa: E402

# Python's cyclic garbage collector runs often while JAX traces (tracing allocates many
# small objects) and each full collection walks every object of jax, numpy and the
# suite. The suite freezes what the imports created (never collected: module-level
# objects) and collects less often: 51-53 s instead of 59-61 s for test_readme,
# test_link and test_side_data in one process (on the whole suite the gain is within
# run-to-run noise). Not done by jaxboost itself: that is the application's choice.
if os.environ.get("JAXBOOST_TEST_GC", "1") != "0":
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)

if SESSION_CACHE is not None:
    jax.config.update("jax_compilation_cache_dir", os.path.join(SESSION_CACHE, "xla"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


def opt_level_env() -> dict:
    """``XLA_FLAGS`` for a subprocess whose other XLA flags are dropped (e.g. its device
    count): the suite's compile settings (see ``OPT_FLAG``), or nothing."""
    flags = os.environ.get("XLA_FLAGS", "")
    return {"XLA_FLAGS": OPT_FLAG} if OPT_FLAG in flags else {}


def session_cache_env() -> dict:
    """Environment variables for a subprocess (an example script) that should share the
    session's compilation cache: jaxboost's own cache switched on, in the session's
    folder."""
    if SESSION_CACHE is None:
        return {}
    return {"JAXBOOST_COMPILATION_CACHE": "1", "JAXBOOST_CACHE_DIR": SESSION_CACHE}


# Four host CPU devices, so sharded training is tested even on a 2-core machine (small
# test data stays on one device unless a test passes a mesh). Only this process:
# subprocesses that tests start get JAX's default. XLA_FLAGS may choose another count.
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    use_cpu_devices(4)


def binnable_features(rng, N=400, F=5):
    """Features whose values all fit in the bins, so jaxboost's and XGBoost's hist bins
    coincide: half-integers, a one-decimal normal, a three-level column (one level
    rare), and 15 % NaN in features 1 and 3. Draws from ``rng`` (the caller goes on
    drawing labels from it)."""
    X = rng.integers(0, 25, size=(N, F)).astype(np.float32) * 0.5
    X[:, 2] = rng.normal(size=N).round(1)
    X[:, 4] = rng.integers(0, 3, size=N)
    for f in (1, 3):
        X[rng.random(N) < 0.15, f] = np.nan
    return X


def parity_data():
    """``tests/test_parity_xgboost.py``'s data (also ``benchmarks/gpu_parity_probe.py``'s):
    ``binnable_features`` (seed 0), a logistic label ``yb`` and a noisy regression
    target ``yr`` of one logit."""
    rng = np.random.default_rng(0)
    X = binnable_features(rng)
    N = X.shape[0]
    logit = (
        0.4 * np.nan_to_num(X[:, 0] - 6)
        - 0.8 * X[:, 2]
        + 0.3 * np.nan_to_num(X[:, 1], nan=3.0)
        - 1
        + 0.5 * X[:, 4]
    )
    yb = (rng.random(N) < 1 / (1 + np.exp(-logit))).astype(np.float32)
    yr = (logit + rng.normal(size=N)).astype(np.float32)
    return X, yb, yr


def forest_parity_data():
    """The data of ``tests/test_forest.py``'s exact-forest parity test (also
    ``benchmarks/gpu_parity_probe.py``'s): ``binnable_features`` (seed 0) and a
    logistic label."""
    rng = np.random.default_rng(0)
    X = binnable_features(rng)
    logit = 0.4 * np.nan_to_num(X[:, 0] - 6) - 0.8 * X[:, 2] + 0.5 * X[:, 4] - 1
    y = (rng.random(X.shape[0]) < 1 / (1 + np.exp(-logit))).astype(np.float32)
    return X, y


def sparse_tree_data():
    """``tests/test_io_compact.py``'s data (also ``tests/test_class_trees.py``'s, sharing
    its compiled programs): 120 x 4 Gaussian features, 20 % NaN (seed 7), a regression
    target ``s`` and 3 class labels ``labels`` (``s``'s terciles), as ``(X, s, labels)``.
    Trees of depth 5 stop early on it: most of their nodes are never reached."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(120, 4)).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = np.nan
    s = (np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) + np.isnan(X[:, 2])).astype(
        np.float32
    )
    return X, s, np.digitize(s, np.quantile(s, [1 / 3, 2 / 3])).astype(np.float32)


def noisy_binary():
    """A noisy binary problem (validation loss turns up after a few dozen rounds): 1200 x
    6 Gaussian features, 5 % NaN in feature 3, weights in [0.5, 1.5); returned as
    ``(X, y, w)`` of the first 800 rows, then of the last 400."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 6)).astype(np.float32)
    X[rng.random(1200) < 0.05, 3] = np.nan
    y = (X[:, 0] + 1.5 * rng.normal(size=1200) > 0).astype(np.float32)
    w = (rng.random(1200) + 0.5).astype(np.float32)
    return X[:800], y[:800], w[:800], X[800:], y[800:], w[800:]


@pytest.fixture(scope="session")
def small_binary():
    """300 x 4 Gaussian features, a logistic label from two of them."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=300) > 0).astype(np.float32)
    return X, y


@pytest.fixture(scope="session")
def compile_counter():
    """Count the programs XLA compiled or loaded from the session's compilation cache
    while a block runs (JAX records the same compile event for both; a program served
    from JAX's in-memory caches counts 0)."""
    from jax import monitoring

    class Counter:
        count = 0
        active = False

        def __enter__(self):
            self.count = 0
            self.active = True
            return self

        def __exit__(self, *exc):
            self.active = False

    counter = Counter()

    def listener(name, duration, **kwargs):
        if counter.active and name == "/jax/core/compile/backend_compile_duration":
            counter.count += 1

    monitoring.register_event_duration_secs_listener(listener)
    return counter


@pytest.fixture
def pure_jax_histogram(monkeypatch):
    """Train on the pure-JAX histogram (the GPU/TPU default) even where the native
    kernel is available, so CPU runs test that path too.

    Patches ``jaxboost.training.data.use_native``, where ``train()`` and
    ``train_many()`` look it up. Returns the list of the patched function's answers, so
    a test can check that training asked.
    """
    from jaxboost.training import data

    calls = []

    def no_native():
        calls.append(False)
        return False

    monkeypatch.setattr(data, "use_native", no_native)
    return calls


@pytest.fixture(scope="module", autouse=True)
def _release_compiled_programs():
    """Drop JAX's compiled programs after each test module.

    The suite compiles several hundred training programs (every data shape of the
    scikit-learn estimator checks, every objective); kept for the whole session in one
    process, XLA's CPU compiler aborted late in the run (in `backend_compile_and_load`).
    Modules rarely share shapes, so releasing them costs little.
    """
    yield
    import jax

    jax.clear_caches()


@pytest.fixture(scope="session")
def interop_data():
    """Data for the XGBoost interop and explanation tests: 300 rows x 5 features with
    NaNs and a few-valued feature, labels for squared, logistic and 3-class softmax."""
    rng = np.random.default_rng(7)
    N, F = 300, 5
    X = rng.normal(size=(N, F)).astype(np.float32)
    X[:, 3] = rng.integers(0, 4, size=N)
    X[rng.random((N, F)) < 0.12] = np.nan
    z = (
        np.nan_to_num(X[:, 0])
        - 0.7 * np.nan_to_num(X[:, 1], nan=1.0)
        + 0.4 * np.nan_to_num(X[:, 2] * X[:, 3])
    )
    labels = {
        "squared": (z + 0.3 * rng.normal(size=N)).astype(np.float32),
        "logistic": (rng.random(N) < 1 / (1 + np.exp(-2 * z))).astype(np.float32),
        "softmax": np.digitize(z, [-0.6, 0.6]).astype(np.float32),
    }
    return X, labels


@pytest.fixture(scope="session")
def interop_models(interop_data):
    """One small model per exported objective, trained once for both test files."""
    import jaxboost

    X, labels = interop_data
    return {
        name: jaxboost.train(name, X, labels[name], n_rounds=6, max_depth=3, verbose=False)
        for name in ("squared", "logistic", "softmax")
    }


# The heaviest test files first (seconds of one worker with an empty compilation cache,
# as on CI), so that pytest-xdist's per-file scheduling (--dist loadfile, with
# --no-loadscope-reorder: the Makefile's options; xdist's default reorders files by their
# number of tests) ends with small files on every worker instead of one worker finishing
# a long file alone. Others keep their order.
_HEAVY_FIRST = (
    "test_examples.py",
    "test_distributed.py",
    "test_readme.py",
    "test_research.py",
    "test_optimization_level.py",
    "test_sklearn.py",
    "test_tuning.py",
    "test_memory.py",
    "test_x64.py",
    "test_native.py",
    "test_compile_cache.py",
    "test_sharding.py",
    "test_many.py",
    "test_io_fuzz.py",
    "test_hessian_guard.py",
    "test_cox.py",
    "test_rank_objectives.py",
    "test_plotting.py",
)


def pytest_report_header(config):
    """The backend the tests run on (JAX_PLATFORMS is ``cpu`` unless the environment
    names another: ``benchmarks/gpu.py`` runs the engine tests on the accelerator)."""
    return f"jax {jax.__version__}, backend {jax.default_backend()}: {jax.devices()}"


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(_HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
