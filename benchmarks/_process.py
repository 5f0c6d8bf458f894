"""One measured worker process, for the memory benchmarks (``memory.py``,
``hypergrad_memory.py``): started with ``subprocess.Popen`` and collected with
``os.wait4``, whose resource usage is that child's alone (peak RSS, CPU seconds)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def launch_measured(cmd: list, case: str, timeout: float, tag: str) -> dict:
    """Run ``cmd`` (a worker that prints one ``tag + json`` line) in a fresh process with
    jaxboost's persistent cache off (every case compiles, as a first run).

    Returns ``{case, wall_s, peak_bytes, cpu_s, returncode}`` updated with the worker's
    JSON, or with ``error`` (its stderr's tail) when it failed or printed no result; a
    worker past ``timeout`` seconds is killed.
    """
    env = dict(os.environ)
    env.setdefault("JAX_PLATFORMS", "cpu")
    env.setdefault("JAXBOOST_COMPILATION_CACHE", "0")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        deadline = t0 + timeout
        while True:  # wait4 with a deadline: poll with WNOHANG
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.2)
        rc = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        lines = [ln for ln in out.read().splitlines() if ln.startswith(tag)]
        res = dict(
            case=case,
            wall_s=wall,
            peak_bytes=usage.ru_maxrss * 1024,
            cpu_s=usage.ru_utime + usage.ru_stime,
            returncode=rc,
        )
        if rc != 0 or not lines:
            res["error"] = err.read()[-2000:]
            return res
        res.update(json.loads(lines[-1][len(tag) :]))
        return res
