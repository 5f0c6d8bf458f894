import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# Four host CPU devices, so sharded training is tested even on a 2-core machine
# (small test data stays on one device unless a test passes a mesh).
os.environ.setdefault("JAXBOOST_CPU_DEVICES", "4")
# Hermetic tests: no persistent compilation cache from earlier runs (its own test
# turns it on in subprocesses).
os.environ["JAXBOOST_COMPILATION_CACHE"] = "0"

import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(scope="session")
def small_binary():
    """300 x 4 Gaussian features, a logistic label from two of them."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=300) > 0).astype(np.float32)
    return X, y


@pytest.fixture(scope="session")
def compile_counter():
    """Count XLA backend compilations while a block runs."""
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
