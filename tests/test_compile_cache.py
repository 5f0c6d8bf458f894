"""A second process reuses the first one's compiled programs from the disk cache, which
jaxboost turns on at the first training call, never at import."""

import json
import os
import subprocess
import sys
import textwrap

from conftest import opt_level_env

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
                      "setting": jaxboost.compile_cache.status()}))
""")


def run(env):
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_process_hits_the_cache(tmp_path):
    env = dict(
        os.environ,
        JAXBOOST_CACHE_DIR=str(tmp_path),
        JAXBOOST_COMPILATION_CACHE="1",
        JAX_PLATFORMS="cpu",
    )
    first = run(env)
    assert first["setting"] == f"on at {tmp_path / 'xla'}"
    assert first["misses"] > 0 and first["hits"] == 0
    second = run(env)
    # The training program (seconds to compile) is always cached; programs near the
    # 0.05 s bar may or may not be, depending on machine load.
    assert second["hits"] >= 1 and second["misses"] < first["misses"]


def test_opt_out(tmp_path):
    env = dict(
        os.environ,
        JAXBOOST_CACHE_DIR=str(tmp_path),
        JAXBOOST_COMPILATION_CACHE="0",
        JAX_PLATFORMS="cpu",
    )
    result = run(env)
    assert result["setting"].startswith("off") and result["hits"] == 0
    assert not (tmp_path / "xla").exists()


SETTINGS = (
    "jax_compilation_cache_dir",
    "jax_persistent_cache_min_compile_time_secs",
    "jax_num_cpu_devices",
    "jax_enable_x64",
)

IMPORT_SCRIPT = textwrap.dedent("""
    import json, sys
    import jax
    mode = sys.argv[1]
    settings = %r
    read = lambda: {k: getattr(jax.config, k) for k in settings}
    if mode == "user_before":
        jax.config.update("jax_compilation_cache_dir", sys.argv[2])
    before = read()
    import numpy as np
    import jaxboost, jaxboost.compile_cache, jaxboost.native, jaxboost.parallel.sharding
    import jaxboost.parallel.distributed, jaxboost.sklearn
    after_import = read()
    if mode == "user_after_import":
        jax.config.update("jax_compilation_cache_dir", sys.argv[2])
    if mode == "disable":
        jaxboost.compile_cache.disable()
    X = np.random.default_rng(0).normal(size=(200, 3)).astype(np.float32)
    jaxboost.train("squared", X, X[:, 0], n_rounds=2, max_depth=2, verbose=False)
    print(json.dumps({"before": before, "after_import": after_import,
                      "after_train": read(), "status": jaxboost.compile_cache.status()}))
""") % (SETTINGS,)


def run_import(mode, tmp_path, user_dir="", switch="1"):
    env = dict(
        os.environ,
        JAXBOOST_CACHE_DIR=str(tmp_path / "jaxboost"),
        JAXBOOST_COMPILATION_CACHE=switch,
        JAX_PLATFORMS="cpu",
    )
    env.pop("XLA_FLAGS", None)
    env.update(opt_level_env())  # the suite's XLA optimization level
    out = subprocess.run(
        [sys.executable, "-c", IMPORT_SCRIPT, mode, user_dir],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_changes_no_jax_setting_and_train_turns_the_cache_on(tmp_path):
    r = run_import("default", tmp_path)
    assert r["after_import"] == r["before"]
    assert r["before"]["jax_compilation_cache_dir"] is None
    ours = str(tmp_path / "jaxboost" / "xla")
    assert r["after_train"]["jax_compilation_cache_dir"] == ours
    assert r["after_train"]["jax_persistent_cache_min_compile_time_secs"] == 0.05
    assert r["status"] == f"on at {ours}"
    # Nothing else changed, by import or by training.
    for k in ("jax_num_cpu_devices", "jax_enable_x64"):
        assert r["after_train"][k] == r["before"][k]


def test_users_cache_dir_is_kept(tmp_path):
    """Set before importing jaxboost or after: training never replaces it."""
    mine = str(tmp_path / "mine")
    for mode in ("user_before", "user_after_import"):
        r = run_import(mode, tmp_path, user_dir=mine)
        assert r["after_import"] == r["before"]
        assert r["after_train"]["jax_compilation_cache_dir"] == mine, mode
        assert r["after_train"]["jax_persistent_cache_min_compile_time_secs"] == 1.0, mode
        assert r["status"].startswith("kept the user's cache"), mode
    assert not (tmp_path / "jaxboost" / "xla").exists()


def test_disable_call_keeps_jax_settings(tmp_path):
    r = run_import("disable", tmp_path)
    assert r["after_train"] == r["before"]
    assert r["status"] == "off (jaxboost.compile_cache.disable())"
    assert not (tmp_path / "jaxboost" / "xla").exists()


def test_env_switch_keeps_jax_settings(tmp_path):
    r = run_import("default", tmp_path, switch="0")
    assert r["after_train"] == r["before"]
    assert r["status"] == "off (JAXBOOST_COMPILATION_CACHE=0)"


def test_use_cpu_devices_is_explicit_and_checked():
    """jaxboost never changes the device count by itself; use_cpu_devices refuses once
    JAX has started (this test process has)."""
    import jax
    import pytest

    from jaxboost.parallel.sharding import use_cpu_devices

    jax.devices()
    with pytest.raises(RuntimeError, match="started already"):
        use_cpu_devices(2)
    with pytest.raises(ValueError):
        use_cpu_devices(0)
