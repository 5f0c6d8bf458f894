"""jaxboost: gradient-boosted decision trees where the loss is just JAX code.

>>> import jax.numpy as jnp, numpy as np, jaxboost
>>> X = np.random.default_rng(0).normal(size=(100, 2)).astype(np.float32)
>>> bst = jaxboost.train(lambda y, p: 0.5 * (y - p) ** 2, X, X[:, 0], n_rounds=20)
>>> bst.predict(X).shape
(100,)
"""

from .booster import Booster
from .boosting import train
from .errors import DataError, LossError

__version__ = "0.1.0"
__all__ = ["train", "Booster", "DataError", "LossError", "__version__"]
