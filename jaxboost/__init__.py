"""jaxboost: gradient-boosted decision trees where the loss is just JAX code.

The package follows the data's journey, one room per concern, each importing only the
rooms below it (``tests/test_imports.py`` holds the order): ``inputs/`` checks what
comes in (arrays, DataFrames, numbers, categorical and sparse columns); ``native/`` is
the optional C++ kernel and jaxboost's compilation cache; ``engine/`` turns arrays into
trees (bins, gradients, histograms, splits, one boosting round); ``metrics/`` measures
and ``parallel/`` spreads rows over devices and processes; ``model/`` is the result
(``Booster``, its tree parameters, explanations); ``training/`` runs rounds from one
call (``train``, ``train_many``, callbacks); ``io/`` writes and reads models
(jaxboost's JSON format and XGBoost's); ``tuning/`` learns continuous hyperparameters
by gradients through runs; ``adapters/`` (``sklearn``, ``compare``, ``plotting``,
``cli``) adapt the public API. The losses live in the separate ``objectives`` package.

>>> import jax.numpy as jnp, numpy as np, jaxboost
>>> X = np.random.default_rng(0).normal(size=(100, 2)).astype(np.float32)
>>> bst = jaxboost.train(lambda y, p: 0.5 * (y - p) ** 2, X, X[:, 0], n_rounds=20)
>>> bst.predict(X).shape
(100,)
"""

import importlib
import importlib.abc
import importlib.machinery
import sys

# Importing jaxboost changes no JAX setting: the persistent compilation cache is turned on
# by the first training call (jaxboost.compile_cache), host CPU devices only by an
# explicit jaxboost.sharding.use_cpu_devices(n).
from . import metrics
from ._version import __version__
from .adapters.compare import compare
from .adapters.cv import cv
from .errors import (
    DataError,
    DataWarning,
    HessianWarning,
    LossError,
    MetricError,
    MetricWarning,
    NonFiniteError,
)
from .io import ModelFormatError, from_xgboost, load, to_xgboost_json
from .metrics import ranking, survival
from .model.booster import Booster
from .native import compile_cache
from .parallel import distributed, sharding
from .training import callbacks, train
from .training.many import train_many
from .tuning import hypergrad, tune

__all__ = [
    "train",
    "train_many",
    "Booster",
    "load",
    "DataError",
    "DataWarning",
    "LossError",
    "MetricError",
    "MetricWarning",
    "NonFiniteError",
    "HessianWarning",
    "ModelFormatError",
    "compare",
    "cv",
    "metrics",
    "callbacks",
    "distributed",
    "sharding",
    "ranking",
    "survival",
    "compile_cache",
    "to_xgboost_json",
    "from_xgboost",
    "hypergrad",
    "tune",
    "__version__",
]

# The stable public paths: users (and models pickled by earlier versions) import these
# modules by the names they had before the code moved into rooms. Each is the same
# module object as the one where the code lives, found on first import.
STABLE_PATHS = {
    "jaxboost.sklearn": "jaxboost.adapters.sklearn",
    "jaxboost.plotting": "jaxboost.adapters.plotting",
    "jaxboost.compare": "jaxboost.adapters.compare",
    "jaxboost.cli": "jaxboost.adapters.cli",
    "jaxboost.callbacks": "jaxboost.training.callbacks",
    "jaxboost.ranking": "jaxboost.metrics.ranking",
    "jaxboost.survival": "jaxboost.metrics.survival",
    "jaxboost.compile_cache": "jaxboost.native.compile_cache",
    "jaxboost.booster": "jaxboost.model.booster",
    "jaxboost.explain": "jaxboost.model.explain",
    "jaxboost.params": "jaxboost.model.params",
}


class _StablePaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a module of ``STABLE_PATHS`` under its stable name: one module, two names."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in STABLE_PATHS:
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec):
        module = importlib.import_module(STABLE_PATHS[spec.name])
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module):
        # The import system stamped the stable name's spec on the module: restore its own.
        module.__spec__ = module.__spec__.loader_state


# Loaded already: registered now, so that importing them never rebinds a name of this
# package (``jaxboost.compare`` is the function; its module is ``jaxboost.adapters.compare``).
for _old, _new in STABLE_PATHS.items():
    if _new in sys.modules:
        sys.modules.setdefault(_old, sys.modules[_new])
        globals().setdefault(_old.rpartition(".")[2], sys.modules[_new])
if not any(isinstance(f, _StablePaths) for f in sys.meta_path):
    sys.meta_path.append(_StablePaths())
del _old, _new
