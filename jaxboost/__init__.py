"""jaxboost: gradient-boosted decision trees where the loss is just JAX code.

>>> import jax.numpy as jnp, numpy as np, jaxboost
>>> X = np.random.default_rng(0).normal(size=(100, 2)).astype(np.float32)
>>> bst = jaxboost.train(lambda y, p: 0.5 * (y - p) ** 2, X, X[:, 0], n_rounds=20)
>>> bst.predict(X).shape
(100,)
"""

from .compile_cache import configure_compilation_cache as _configure_compilation_cache
from .sharding import configure_host_devices as _configure_host_devices

# What import did to JAX's configuration (see jaxboost.sharding, jaxboost.compile_cache).
_HOST_DEVICES = _configure_host_devices()
_COMPILATION_CACHE = _configure_compilation_cache()

from . import callbacks, distributed, metrics, ranking, survival  # noqa: E402
from ._version import __version__  # noqa: E402
from .booster import Booster  # noqa: E402
from .compare import compare  # noqa: E402
from .errors import DataError, LossError  # noqa: E402
from .interop import from_xgboost, to_xgboost_json  # noqa: E402,F401
from .io import ModelFormatError, load  # noqa: E402
from .training import train  # noqa: E402
from .training.many import train_many  # noqa: E402

__all__ = ["train", "train_many", "Booster", "load", "DataError", "LossError",
           "ModelFormatError", "compare", "metrics", "callbacks", "distributed", "ranking",
           "survival", "to_xgboost_json", "from_xgboost", "__version__"]
