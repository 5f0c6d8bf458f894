"""A second process reuses the first one's compiled programs from the disk cache."""

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import collections, json
    from jax import monitoring
    events = collections.Counter()
    monitoring.register_event_listener(lambda name, **kw: events.update([name]))
    import numpy as np, jaxboost, objectives
    X = np.random.default_rng(0).normal(size=(500, 3)).astype(np.float32)
    jaxboost.train(objectives.logistic, X, (X[:, 0] > 0) * 1.0, n_rounds=3, max_depth=3)
    print(json.dumps({"hits": events["/jax/compilation_cache/cache_hits"],
                      "misses": events["/jax/compilation_cache/cache_misses"],
                      "setting": jaxboost._COMPILATION_CACHE}))
""")


def run(env):
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_process_hits_the_cache(tmp_path):
    env = dict(os.environ, JAXBOOST_CACHE_DIR=str(tmp_path), JAXBOOST_COMPILATION_CACHE="1",
               JAX_PLATFORMS="cpu")
    first = run(env)
    assert first["setting"] == f"on at {tmp_path / 'xla'}"
    assert first["misses"] > 0 and first["hits"] == 0
    second = run(env)
    # The training program (seconds to compile) is always cached; programs near the
    # 0.2 s bar may or may not be, depending on machine load.
    assert second["hits"] >= 1 and second["misses"] < first["misses"]


def test_opt_out(tmp_path):
    env = dict(os.environ, JAXBOOST_CACHE_DIR=str(tmp_path), JAXBOOST_COMPILATION_CACHE="0",
               JAX_PLATFORMS="cpu")
    result = run(env)
    assert result["setting"].startswith("off") and result["hits"] == 0
    assert not (tmp_path / "xla").exists()
