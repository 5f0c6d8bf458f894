"""The suite compiles at XLA's backend optimization level 0 and without the CPU
backend's fusion emitters (tests/conftest.py, ``OPT_FLAG``), to spend less of its time
compiling. This test checks that these settings change no model beyond float32
rounding: the same models, trained here with them and in a subprocess with JAX's
defaults, grow the same trees and predict to 1e-5. Level 0 rounds some
``exp``/``log``/``cosh`` evaluations differently by an ulp or so (softmax
probabilities differ by about 2e-6 after 6 rounds; a log-cosh loss, LambdaRank and
Gaussian NLL by 1 to 3 ulps); logistic (the XGBoost parity workhorse, here with
sampling and an eval set) and quantile with leaf refit are equal bit for bit.
``make test-full-opt`` runs the whole suite at the default level.

The models cover the round's program kinds: a catalogue objective with row and column
sampling and an eval set, softmax (K trees per round), a vector loss with vector
leaves, a ranking loss, leaf refit and a plain callable."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
from conftest import OPT_FLAG

MODELS = textwrap.dedent("""
    import numpy as np, jax, jax.numpy as jnp
    import jaxboost, objectives

    def models():
        rng = np.random.default_rng(0)
        X = rng.normal(size=(300, 4)).astype(np.float32)
        X[rng.random(300) < 0.1, 1] = np.nan
        yb = (X[:, 0] + 0.5 * rng.normal(size=300) > 0).astype(np.float32)
        yc = (np.nan_to_num(X[:, 1]) > 0) + (X[:, 2] > 0.5).astype(np.float32)
        yr = (X[:, 0] + 0.3 * rng.normal(size=300)).astype(np.float32)
        kw = dict(n_rounds=6, max_depth=3, verbose=False)
        out = {}
        b = jaxboost.train(objectives.logistic, X, yb, subsample=0.8, colsample_bynode=0.7,
                           eval_set=[(X, yb)], eval_metric=["auc", "logloss"], seed=3, **kw)
        out["logistic"] = [b.predict(X), np.asarray(b.history["validation_0"]["logloss"])]
        out["softmax"] = [jaxboost.train(objectives.softmax, X, yc, **kw).predict(X)]
        out["gaussian_nll"] = [jaxboost.train(
            objectives.gaussian_nll, X, yr, multi_strategy="multi_output_tree",
            **kw).predict(X)]
        qid = np.repeat(np.arange(30), 10)
        out["lambdarank"] = [jaxboost.train(objectives.lambdarank, X, np.clip(
            np.round(yr + 1), 0, 3), group=qid, **kw).predict(X)]
        out["quantile"] = [jaxboost.train(objectives.quantile(alpha=0.8), X, yr,
                                          **kw).predict(X)]
        out["custom"] = [jaxboost.train(lambda y, f: jnp.log(jnp.cosh(y - f)), X, yr,
                                        **kw).predict(X)]
        return {k: [np.asarray(a, np.float32).ravel().tolist() for a in v]
                for k, v in out.items()}
""")


# No transcendental function in their g, h or leaves: equal bit for bit.
BITWISE = ("logistic", "quantile")


def test_models_are_the_same_at_xla_default_optimization_level():
    flags = os.environ.get("XLA_FLAGS", "")
    assert OPT_FLAG in flags or os.environ.get("JAXBOOST_TEST_FULL_OPT", "0") != "0"
    env = dict(os.environ, XLA_FLAGS=flags.replace(OPT_FLAG, "").strip())
    script = MODELS + "\nimport json\nprint(json.dumps(models()))\n"
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    default_level = json.loads(out.stdout.strip().splitlines()[-1])
    scope = {}
    exec(MODELS, scope)
    here = scope["models"]()
    assert sorted(here) == sorted(default_level)
    for name in here:
        for a, b in zip(here[name], default_level[name], strict=True):
            a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
            assert np.isfinite(a).all()
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7, err_msg=name)
            if name in BITWISE:
                assert np.array_equal(a.view(np.int32), b.view(np.int32)), name
