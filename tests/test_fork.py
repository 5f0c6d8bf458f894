"""A process forked after JAX started is refused with a clear error, never a hang
(issue 28, item 3: the child of an ``os.fork`` deadlocked in its first ``train``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_forked_child_gets_a_clear_error_and_the_parent_goes_on():
    code = textwrap.dedent("""
        import os, warnings
        import numpy as np, jaxboost
        warnings.simplefilter("ignore")  # JAX's own at-fork warning
        X = np.random.default_rng(0).normal(size=(100, 3)).astype(np.float32)
        y = (X[:, 0] > 0).astype(np.float32)
        b = jaxboost.train("logistic", X, y, n_rounds=2)
        pid = os.fork()
        if pid == 0:
            codes = []
            for call in (lambda: jaxboost.train("logistic", X, y, n_rounds=2),
                         lambda: b.predict(X)):
                try:
                    call()
                    codes.append(3)
                except RuntimeError as e:
                    ok = (type(e).__name__ == "ForkedProcessError"
                          and "forked" in str(e) and "spawn" in str(e))
                    codes.append(0 if ok else 4)
            os._exit(max(codes))
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status))
        b2 = jaxboost.train("logistic", X, y, n_rounds=2)  # the parent is untouched
        print("parent", bool((b2.predict(X) == b.predict(X)).all()))
    """)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["child", "0", "parent", "True"], out.stdout
