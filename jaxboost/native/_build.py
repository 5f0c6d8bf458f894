"""How the native kernel is compiled: shared by ``setup.py`` (at install) and
:mod:`jaxboost.native` (the first-use fallback).

Standard library only, so that ``setup.py`` can load this file without importing
jaxboost (or JAX) in the build environment.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_name("hist.cc")
# -fno-trapping-math lets GCC vectorise the split scores' selects; -ffp-contract=off
# keeps every compiler (Clang contracts a * b + c by default where the target has FMA,
# e.g. Apple's arm64) from fusing what the XLA path rounds twice. Neither changes a value.
FLAGS = (
    "-O3",
    "-std=c++17",
    "-fno-trapping-math",
    "-ffp-contract=off",
    "-shared",
    "-fPIC",
    "-pthread",
)
LIB_STEM = "libjaxboost_hist"


def source_hash() -> str:
    """Hash of the kernel's source and flags: names the library built at install, so a
    library built from another version of ``hist.cc`` (an edited editable checkout) is
    never loaded."""
    key = hashlib.sha256(SOURCE.read_bytes())
    key.update(b"\0" + " ".join(FLAGS).encode())
    return key.hexdigest()[:16]


def installed_name() -> str:
    """File name of the library built at install, next to this file."""
    return f"{LIB_STEM}-{source_hash()}.so"


def jaxlib_include_dir() -> str:
    """jaxlib's bundled headers (what ``jax.ffi.include_dir()`` returns), found without
    importing jaxlib."""
    spec = importlib.util.find_spec("jaxlib")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("jaxlib is not installed (its XLA FFI headers are needed)")
    include = os.path.join(list(spec.submodule_search_locations)[0], "include")
    if not os.path.isfile(os.path.join(include, "xla", "ffi", "api", "ffi.h")):
        raise RuntimeError(f"XLA FFI headers not found under {include}")
    return include


def compiler() -> list[str]:
    """``$CXX`` (may hold arguments, e.g. ``"ccache g++"``), else ``c++``, ``g++``,
    ``clang++``."""
    cxx = os.environ.get("CXX")
    if cxx and cxx.strip():
        cmd = shlex.split(cxx)
        exe = shutil.which(cmd[0])
        if exe is None:
            raise RuntimeError(f"CXX={cxx!r} not found on PATH")
        return [exe, *cmd[1:]]
    for name in ("c++", "g++", "clang++"):
        exe = shutil.which(name)
        if exe:
            return [exe]
    raise RuntimeError("no C++ compiler found (set CXX, or install c++/g++)")


def compiler_version(cxx: list[str]) -> str:
    try:
        out = subprocess.run([*cxx, "--version"], capture_output=True, text=True, timeout=60)
        return out.stdout.strip()
    except Exception as e:  # noqa: BLE001 - only part of a cache key
        return f"unknown ({e})"


def build(cxx: list[str], include_dir: str, final: Path) -> Path:
    """Compile ``hist.cc`` into ``final`` atomically (a temporary file in the same
    folder, then ``os.replace``), so a concurrent process never loads a half-written
    file. The folder must exist."""
    final = Path(final)
    fd, tmp = tempfile.mkstemp(prefix=".build-", suffix=".so", dir=final.parent)
    os.close(fd)
    try:
        cmd = [*cxx, *FLAGS, "-I", include_dir, str(SOURCE), "-o", tmp]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            log = (proc.stderr or proc.stdout).strip()
            raise RuntimeError(
                f"compiling {SOURCE.name} failed ({shlex.join(cmd)}):\n{log[-4000:]}"
            )
        os.chmod(tmp, 0o755)
        os.replace(tmp, final)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return final
