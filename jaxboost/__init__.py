"""jaxboost: gradient-boosted decision trees where the loss is just JAX code.

The package follows the data's journey, data -> engine -> training -> booster ->
io/adapters: ``_validation`` and ``params`` check what comes in; ``engine/`` turns
arrays into trees (bins, gradients, histograms, splits, one boosting round);
``training/`` runs rounds from one call (``train``, ``train_many``), over devices and
processes with ``parallel/``, measured by ``metrics/``; ``Booster`` holds the result
and predicts; ``io/`` writes and reads it (jaxboost's JSON format and XGBoost's);
``tuning`` learns continuous hyperparameters by gradients through runs;
``compare``, ``explain``, ``sklearn``, ``plotting`` and ``cli`` adapt the public API.
The losses live in the separate ``objectives`` package.

>>> import jax.numpy as jnp, numpy as np, jaxboost
>>> X = np.random.default_rng(0).normal(size=(100, 2)).astype(np.float32)
>>> bst = jaxboost.train(lambda y, p: 0.5 * (y - p) ** 2, X, X[:, 0], n_rounds=20)
>>> bst.predict(X).shape
(100,)
"""

# Importing jaxboost changes no JAX setting: the persistent compilation cache is turned on
# by the first training call (jaxboost.compile_cache), host CPU devices only by an
# explicit jaxboost.sharding.use_cpu_devices(n).
from . import callbacks, compile_cache, metrics, ranking, survival
from ._version import __version__
from .booster import Booster
from .compare import compare
from .errors import DataError, DataWarning, HessianWarning, LossError, MetricError, NonFiniteError
from .io import ModelFormatError, from_xgboost, load, to_xgboost_json
from .parallel import distributed, sharding
from .training import train
from .training.many import train_many
from .tuning import hypergrad, tune

__all__ = ["train", "train_many", "Booster", "load", "DataError", "DataWarning", "LossError",
           "MetricError", "NonFiniteError", "HessianWarning", "ModelFormatError", "compare",
           "metrics", "callbacks", "distributed", "sharding", "ranking", "survival",
           "compile_cache", "to_xgboost_json", "from_xgboost", "hypergrad", "tune",
           "__version__"]
