"""JAX's global ``jax_enable_x64`` flag changes no model (issue 16, item 4).

Every objective kind (regression, binary, softmax with K trees and with a vector tree,
ranking, survival, multi-output), every sampling option, both leaf refits, evaluation
metrics, a plain loss and schedule written with JAX's default dtypes, and continuing a
checkpoint written without the flag: trained here (flag off) and in one subprocess
started with ``JAX_ENABLE_X64=1``, the model files and predictions are the same bit for
bit. Before the fix, softmax raised a ``cond`` dtype error under the flag and
subsampling, column sampling and lambdarank trained other models.

``main([OUT, CHECKPOINT])`` trains the configurations and writes them to ``OUT``: what
the subprocess the test starts runs.
"""

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np

import jaxboost
from jaxboost import io

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KW = dict(n_rounds=5, max_depth=3, verbose=False)


def data():
    """conftest's ``small_binary`` (300 x 4), with labels for every objective kind."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    yb = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=300) > 0).astype(np.float32)
    yr = (X[:, 0] + 0.3 * rng.normal(size=300)).astype(np.float32)
    y3 = np.digitize(X[:, 0] + 0.3 * X[:, 2], [-0.5, 0.5]).astype(np.float32)
    rel = np.clip(np.round(X[:, 0] + 1.0), 0, 3).astype(np.float32)
    t = np.exp(-X[:, 0]) * rng.exponential(size=300)
    ysurv = np.where(rng.random(300) < 0.8, t, -t).astype(np.float32)
    return X, dict(binary=yb, regression=yr, classes=y3, relevance=rel, survival=ysurv)


def two_outputs(y, f):
    return jnp.sum((f - jnp.stack([y, -y])) ** 2)


def scaled_squared(y, p):
    # jnp.asarray(1.1) is float64 under the flag: the loss would be computed in float64
    return (y - p) ** 2 * jnp.asarray(1.1)


def decaying(r):
    return 0.3 * jnp.exp(-0.05 * r)  # float64 under the flag


def configurations():
    X, y = data()
    qid = np.repeat(np.arange(30), 10)
    sampled = dict(KW, seed=3)
    return X, {
        "regression": lambda: jaxboost.train("squared", X, y["regression"], **KW),
        "binary+eval": lambda: jaxboost.train(
            "logistic",
            X,
            y["binary"],
            eval_set=[(X[:100], y["binary"][:100])],
            eval_metric=["auc", "logloss", "error"],
            **KW,
        ),
        "softmax": lambda: jaxboost.train("softmax", X, y["classes"], **KW),
        "softmax_vector_tree": lambda: jaxboost.train(
            "softmax", X, y["classes"], multi_strategy="multi_output_tree", **KW
        ),
        "lambdarank": lambda: jaxboost.train("lambdarank", X, y["relevance"], group=qid, **KW),
        "cox": lambda: jaxboost.train("cox", X, y["survival"], **KW),
        "multi_output": lambda: jaxboost.train(
            two_outputs, X, y["regression"], n_outputs=2, multi_strategy="multi_output_tree", **KW
        ),
        "gaussian_nll": lambda: jaxboost.train("gaussian_nll", X, y["regression"], **KW),
        # every sampler at once: a different draw from any of them changes the model
        "row_and_column_sampling": lambda: jaxboost.train(
            "logistic",
            X,
            y["binary"],
            subsample=0.7,
            colsample_bytree=0.8,
            colsample_bylevel=0.8,
            colsample_bynode=0.7,
            **sampled,
        ),
        "quantile_refit": lambda: jaxboost.train("absolute", X, y["regression"], **KW),
        "newton_refit": lambda: jaxboost.train("huber", X, y["regression"], **KW),
        "default_dtypes_loss_and_schedule": lambda: jaxboost.train(
            scaled_squared, X, y["regression"], **dict(KW, learning_rate=decaying)
        ),
    }


def fingerprint(bst, X) -> dict:
    return {
        "model": io.dumps(bst),
        "predict": np.asarray(bst.predict(X)).tobytes().hex(),
        "margin": np.asarray(bst.predict(X, output_margin=True)).tobytes().hex(),
    }


def resume_kwargs():
    return dict(max_depth=3, subsample=0.8, colsample_bynode=0.5, verbose=False)


def run_all(checkpoint=None) -> dict:
    X, configs = configurations()
    out = {name: fingerprint(make(), X) for name, make in configs.items()}
    if checkpoint is not None:  # continue a model written without the flag
        _, y = data()
        resumed = jaxboost.train(
            "logistic",
            X,
            y["binary"],
            n_rounds=4,
            init_model=jaxboost.load(checkpoint),
            **resume_kwargs(),
        )
        out["resumed_checkpoint"] = fingerprint(resumed, X)
    out["x64"] = {"flag": bool(jax.config.jax_enable_x64), "arange": str(jnp.arange(2).dtype)}
    return out


def test_global_x64_flag_changes_no_model(tmp_path):
    X, y = data()
    part = jaxboost.train("logistic", X, y["binary"], n_rounds=4, seed=5, **resume_kwargs())
    part.save(tmp_path / "part.json")
    here = run_all()
    whole = jaxboost.train("logistic", X, y["binary"], n_rounds=8, seed=5, **resume_kwargs())
    here["resumed_checkpoint"] = fingerprint(whole, X)

    from conftest import opt_level_env, session_cache_env

    env = dict(
        os.environ, JAX_ENABLE_X64="1", JAX_PLATFORMS="cpu", PYTHONPATH=ROOT, **session_cache_env()
    )
    env.pop("XLA_FLAGS", None)
    env.update(opt_level_env())  # the suite's XLA optimization level
    out = tmp_path / "x64.json"
    # Imported as test_x64 there too: the plain losses' qualnames in the files agree.
    script = "import sys; sys.path.insert(0, 'tests'); import test_x64; test_x64.main(sys.argv[1:])"
    proc = subprocess.run(
        [sys.executable, "-c", script, str(out), str(tmp_path / "part.json")],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    there = json.loads(out.read_text())
    assert there.pop("x64") == {"flag": True, "arange": "int64"}  # the flag was on there
    assert here.pop("x64")["flag"] is False
    assert sorted(there) == sorted(here)
    different = [name for name in here if here[name] != there[name]]
    assert different == []


def test_engine_draws_are_float32_under_the_flag():
    """The engine spells its dtypes: row and column sampling draw the same numbers with
    the flag on, even outside ``float32_programs``."""
    from jaxboost.engine.sampling import FeatureSampler, row_mask

    key = jax.random.key(7)
    ratios = jnp.array([0.5, 0.7, 0.6, 0.5], jnp.float32)

    @jax.jit
    def draws(key, ratios):
        fs = FeatureSampler(key, ratios, 9, 3)
        return [row_mask(key, 1000, ratios[0])] + [fs.level(d, 2**d) for d in range(3)]

    plain = [np.asarray(a) for a in draws(key, ratios)]
    with jax.enable_x64(True):
        wide = [np.asarray(a) for a in draws(key, ratios)]
    assert [a.dtype for a in wide] == [a.dtype for a in plain]
    for a, b in zip(plain, wide):
        np.testing.assert_array_equal(a, b)


def main(argv):
    """``main([OUT, CHECKPOINT])``: train every configuration, write the fingerprints.

    With the test process's four CPU devices (conftest), so that the programs it
    compiled come from the session's compilation cache: the same programs, traced the
    same way with the flag on, are found under the same keys."""
    from jaxboost.parallel.sharding import use_cpu_devices

    use_cpu_devices(4)
    result = run_all(argv[1] if len(argv) > 1 else None)
    with open(argv[0], "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1:])


def _top_class_term(f):
    """0 * the largest margin, picked by ``jnp.argmax``: adds exactly 0 to a loss and to
    its derivatives, but makes index arrays while the loss is traced."""
    return 0.0 * f[jnp.argmax(f)]


def test_a_loss_with_index_arrays_trains_like_the_same_loss_without():
    """The base-margin fits sum in float64 under ``jax.enable_x64(True)``; a loss traced
    there made 64-bit indices and ``jnp.argmax`` in a softmax-like loss failed to
    compile (int32 against int64). Losses are now traced with 64-bit types off, as in
    a training round: with the argmax term the models are the plain ones, bit for bit."""
    X, y = data()
    yr, y3 = y["regression"], y["classes"]

    def plain_vec(y, f):
        return jax.nn.logsumexp(f) - f[y.astype(jnp.int32)]

    def argmax_vec(y, f):
        return plain_vec(y, f) + _top_class_term(f)

    def plain(y, f):
        return 0.5 * (y - f) ** 2

    def argmax_scalar(y, f):
        return plain(y, f) + _top_class_term(jnp.stack([f, -f, y]))

    for a, b, labels, k in [(plain_vec, argmax_vec, y3, 3), (plain, argmax_scalar, yr, None)]:
        want = jaxboost.train(a, X, labels, n_outputs=k, **KW)
        got = jaxboost.train(b, X, labels, n_outputs=k, **KW)
        np.testing.assert_array_equal(got.predict(X), want.predict(X))
