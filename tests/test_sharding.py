"""Rows sharded over host CPU devices give the single-device model."""

import jax
import numpy as np
import pytest
from jax.sharding import Mesh

import jaxboost
import objectives
from jaxboost.sharding import auto_mesh, padded_rows


@pytest.fixture(scope="module")
def mesh4():
    devices = jax.devices("cpu")
    if len(devices) < 4:
        pytest.skip("needs 4 host CPU devices (JAXBOOST_CPU_DEVICES=4 before import)")
    return Mesh(np.array(devices[:4]), ("rows",))


def test_sharded_logistic_equals_single_device(mesh4):
    rng = np.random.default_rng(0)
    N = 1001  # not divisible by 4
    X = rng.normal(size=(N, 5)).astype(np.float32)
    X[rng.random(N) < 0.1, 2] = np.nan
    y = (X[:, 0] + np.nan_to_num(X[:, 2]) + 0.3 * rng.normal(size=N) > 0).astype(np.float32)
    w = rng.random(N).astype(np.float32)
    kw = dict(n_rounds=12, max_depth=4, sample_weight=w)
    one = jaxboost.train(objectives.logistic, X, y, mesh=None, **kw)
    four = jaxboost.train(objectives.logistic, X, y, mesh=mesh4, **kw)
    a = one.predict(X, output_margin=True)
    b = four.predict(X, output_margin=True)
    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    assert one.base_margin == pytest.approx(four.base_margin, rel=1e-6)


def test_padding_buckets_and_auto_mesh():
    assert padded_rows(1000, 1) == 1024 and padded_rows(1000, 4) == 1024  # steps of 32
    assert padded_rows(1_000_000, 2) == 1_015_808
    for n in (10, 999, 12345, 10**6):
        p = padded_rows(n, 4)
        assert p >= n and p % 4 == 0 and p - n < max(0.07 * n, 4)
    # On CPU one device is faster (see jaxboost.sharding): no automatic sharding.
    assert jax.default_backend() != "cpu" or auto_mesh(1 << 22) is None


def test_bad_mesh_is_rejected():
    X = np.zeros((10, 1), np.float32)
    with pytest.raises(TypeError, match="mesh must be a jax.sharding.Mesh"):
        jaxboost.train(objectives.squared, X, np.zeros(10), mesh="cpu")


# huber: its Newton leaf refit sums over the shards too
@pytest.mark.parametrize("objective,strategy", [
    ("softmax", "one_output_per_tree"), ("huber", None)])
def test_sharded_vector_outputs_and_refit_equal_single_device(mesh4, objective, strategy):
    rng = np.random.default_rng(1)
    N = 501
    X = rng.normal(size=(N, 4)).astype(np.float32)
    if objective == "softmax":
        y = ((X[:, 0] > 0) * 1.0 + (X[:, 2] > 0)).astype(np.float32)
        kw = dict(multi_strategy=strategy)
    else:
        y = (X[:, 0] + rng.standard_t(2, N)).astype(np.float32)
        kw = {}
    a = jaxboost.train(objective, X, y, n_rounds=5, max_depth=3, **kw)
    b = jaxboost.train(objective, X, y, n_rounds=5, max_depth=3, mesh=mesh4, **kw)
    np.testing.assert_allclose(b.predict(X, output_margin=True),
                               a.predict(X, output_margin=True), rtol=1e-5, atol=1e-6)
