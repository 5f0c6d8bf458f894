"""Builds the optional native histogram kernel at install time (metadata: pyproject.toml).

``jaxboost/native/hist.cc`` is compiled into a plain shared library,
``jaxboost/native/libjaxboost_hist-<source hash>.so``, that ``jaxboost.native`` loads with
ctypes and registers as an XLA FFI target. The headers come from jaxlib (a build
requirement, pinned like the runtime dependency). Works for ``pip install .`` (the library
goes into the wheel) and ``pip install -e .`` (it is copied next to the source). Without a
C++ compiler, or if compiling fails, installation still succeeds, without the library;
``jaxboost.native`` then tries to build it on first use, else uses pure JAX.
"""

import importlib.util
import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "_jaxboost_native_build", os.path.join(_HERE, "jaxboost", "native", "_build.py")
)
_nb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_nb)

_EXT_NAME = "jaxboost.native." + _nb.LIB_STEM


class BuildNativeKernel(build_ext):
    """Compiles the kernel with the same compiler and flags as the first-use build;
    a failure is reported and skipped, never fatal."""

    def get_ext_filename(self, fullname):
        # Called with the full dotted name and (by distutils) with its last part alone.
        parts = fullname.split(".")
        if parts[-1] == _nb.LIB_STEM:
            return os.path.join(*parts[:-1], _nb.installed_name())
        return super().get_ext_filename(fullname)

    def build_extensions(self):
        failed = []
        for ext in self.extensions:
            try:
                self.build_extension(ext)
            except Exception as e:  # noqa: BLE001 - the kernel is optional
                failed.append(ext)
                # Nor ship a library an earlier build left in build/.
                stale = self.get_ext_fullpath(ext.name)
                if os.path.exists(stale):
                    os.unlink(stale)
                print(
                    f"warning: jaxboost's native kernel was not built ({e}); "
                    "jaxboost will try again on first use, else use pure JAX",
                    file=sys.stderr,
                )
        # Skipped extensions are neither copied (editable install) nor recorded.
        self.extensions = [e for e in self.extensions if e not in failed]

    def build_extension(self, ext):
        if ext.name != _EXT_NAME:
            return super().build_extension(ext)
        if sys.platform == "win32":
            raise RuntimeError("the native kernel is built only on Linux and macOS")
        out = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        _nb.build(_nb.compiler(), _nb.jaxlib_include_dir(), out)


setup(
    ext_modules=[Extension(_EXT_NAME, sources=["jaxboost/native/hist.cc"], optional=True)],
    cmdclass={"build_ext": BuildNativeKernel},
)
