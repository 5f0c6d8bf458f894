"""Rows sharded over host CPU devices give the single-device model."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh

import jaxboost
import objectives
from jaxboost import io
from jaxboost.parallel.sharding import MIN_PADDED_ROWS, auto_mesh, padded_rows, shard_offsets


@pytest.fixture(scope="module")
def mesh4():
    devices = jax.devices("cpu")
    if len(devices) < 4:
        pytest.skip("needs 4 host CPU devices (jaxboost.sharding.use_cpu_devices(4))")
    return Mesh(np.array(devices[:4]), ("rows",))


def test_padding_buckets_and_auto_mesh():
    assert padded_rows(1000, 1) == 1024 and padded_rows(1000, 4) == 1024  # steps of 32
    assert padded_rows(1_000_000, 2) == 1_015_808
    for n in (999, 12345, 10**6):
        p = padded_rows(n, 4)
        assert p >= n and p % 4 == 0 and p - n < 0.07 * n
    # Small data shares one program shape.
    assert {padded_rows(n, 1) for n in (1, 10, 100, 256)} == {MIN_PADDED_ROWS}
    # On CPU one device is faster (see jaxboost.sharding): no automatic sharding.
    assert jax.default_backend() != "cpu" or auto_mesh(1 << 22) is None


def test_shard_offsets_number_rows_as_in_the_concatenated_data():
    # 2 processes with 5 and 3 rows, blocks of 8 rows, 2 shards each.
    assert shard_offsets([5, 3], 8, 2).tolist() == [0, 4, 5, 9]
    assert shard_offsets([1001], 1024, 4).tolist() == [0, 256, 512, 768]


def _data(objective, N, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 5)).astype(np.float32)
    X[rng.random(N) < 0.1, 2] = np.nan
    z = X[:, 0] + np.nan_to_num(X[:, 2]) + 0.3 * rng.normal(size=N)
    y = (np.digitize(z, [-0.5, 0.5]) if objective == "softmax" else z > 0).astype(np.float32)
    w = (0.2 + rng.random(N)).astype(np.float32)
    return X, y, w


# N = 150: not divisible by 4, and padded to 256 rows, 64 per device, so the
# fourth device (rows 192..255) holds no real row.
@pytest.mark.parametrize("N", [150])
@pytest.mark.parametrize("objective", ["logistic", "softmax"])
def test_four_devices_train_the_single_device_model(mesh4, objective, N):
    X, y, w = _data(objective, N)
    assert N % 4 and (padded_rows(N, 4) // 4) * 3 >= N  # one device without real rows
    kw = dict(n_rounds=8, max_depth=3, sample_weight=w, subsample=0.8, colsample_bynode=0.7, seed=5)
    for quantize in (False, True):
        one = jaxboost.train(objective, X, y, mesh=None, quantize=quantize, **kw)
        four = jaxboost.train(objective, X, y, mesh=mesh4, quantize=quantize, **kw)
        a = one.predict(X, output_margin=True)
        b = four.predict(X, output_margin=True)
        if quantize:  # exact sums: bit for bit, trees, base margin and all
            np.testing.assert_array_equal(b, a)
            assert io.dumps(one) == io.dumps(four)
        else:
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(four.base_margin, one.base_margin, rtol=1e-6)
            float_margins = a
    # 24 significant bits per gradient: the grid is far below what moves a split.
    # (Softmax margins are defined up to a constant per row: the intercept fits with
    # float and with exact sums differ along that free direction, so compare centred.)
    if a.ndim == 2:
        a, float_margins = (m - m.mean(axis=1, keepdims=True) for m in (a, float_margins))
    np.testing.assert_allclose(a, float_margins, rtol=1e-4, atol=1e-4)


def test_quantize_refuses_data_too_large_for_exact_sums():
    from jaxboost.engine.exact import check_rows

    check_rows(2**40)  # still 11 bits
    with pytest.raises(ValueError, match="quantize=True"):
        check_rows(2**44)


def test_quantized_grid_sums_are_exact_in_any_order():
    from jaxboost.engine.exact import to_grid

    rng = np.random.default_rng(0)
    g = jnp.asarray((rng.standard_cauchy(100_000) * 10.0).astype(np.float32))
    raw = np.asarray(g, np.float64)
    # float sums depend on the order (this is why devices can disagree) ...
    assert len({raw.sum(), raw[::-1].sum(), raw.reshape(100, 1000).sum(axis=0).sum()}) > 1
    # ... sums of the grid values do not.
    q = np.asarray(to_grid(g, g.shape[0]), np.float64)
    # float64 sums of the grid values, in three orders, and exactly (as integers).
    step = 2.0 ** -(24 - int(np.ceil(np.log2(np.abs(q).max() + 1e-300))))
    ints = np.round(q / step).astype(np.int64)
    assert np.all(ints.astype(np.float64) * step == q)  # on the grid
    exact = float(ints.sum()) * step
    assert q.sum() == exact and q[::-1].sum() == exact
    assert q.reshape(100, 1000).sum(axis=0).sum() == exact
    # and the grid keeps 24 significant bits of the largest value
    assert np.abs(q - np.asarray(g, np.float64)).max() <= step / 2


def test_bad_mesh_is_rejected():
    X = np.zeros((10, 1), np.float32)
    with pytest.raises(TypeError, match="mesh must be a jax.sharding.Mesh"):
        jaxboost.train(objectives.squared, X, np.zeros(10), mesh="cpu")


# huber: its Newton leaf refit sums over the shards too; quantized, those sums are
# exact as well (jaxboost.engine.exact.exact_sum), so the model is the same bit for bit.
def test_sharded_newton_refit_equals_single_device(mesh4):
    rng = np.random.default_rng(1)
    N = 501
    X = rng.normal(size=(N, 4)).astype(np.float32)
    y = (X[:, 0] + rng.standard_t(2, N)).astype(np.float32)
    kw = dict(n_rounds=5, max_depth=3)
    a = jaxboost.train("huber", X, y, quantize=True, **kw)
    b = jaxboost.train("huber", X, y, mesh=mesh4, quantize=True, **kw)
    np.testing.assert_array_equal(
        b.predict(X, output_margin=True), a.predict(X, output_margin=True)
    )
