"""`make test-pythons` (.ci/test-pythons) names a Python version it cannot find and
skips it, or fails on it when asked to require every version."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".ci" / "test-pythons"


def run(tmp_path, **env):
    home = tmp_path / "home"  # no ~/.pyenv there
    home.mkdir(exist_ok=True)
    full = dict(os.environ, HOME=str(home), PYTHON_VERSIONS="2.1 3.99", **env)
    return subprocess.run(
        ["bash", str(SCRIPT)], cwd=tmp_path, capture_output=True, text=True, env=full, timeout=60
    )


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_missing_python_is_named_and_skipped(tmp_path):
    # the script changes to the repository root itself; versions that do not exist
    out = run(tmp_path)
    assert out.returncode == 0, out.stderr
    for v in ("2.1", "3.99"):
        assert (
            f"test-pythons: Python {v} is MISSING (no working python{v} on PATH or "
            f"under ~/.pyenv/versions): skipped"
        ) in out.stderr
    assert "passed: none; failed: none; missing: 2.1 3.99" in out.stdout
    assert not (ROOT / ".venv-3.99").exists()
    required = run(tmp_path, REQUIRE_PYTHONS="1")
    assert required.returncode == 1
    assert "REQUIRE_PYTHONS=1 and Python 2.1 3.99 is missing" in required.stderr


def test_make_and_ci_run_it():
    assert "\ntest-pythons:\n\t.ci/test-pythons\n" in (ROOT / "Makefile").read_text()
    ci = (ROOT / ".ci" / "run").read_text().split("\n")
    assert ci.index("make test-pythons") > ci.index("make test")
    assert os.access(SCRIPT, os.X_OK)
