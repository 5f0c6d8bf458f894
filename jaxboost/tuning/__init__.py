"""Tuning by gradients: hyperparameters learned through boosting runs.

An adapter over the public API and the engine's replay (``jaxboost.engine.replay``):
``hypergrad`` trains a run and returns a validation loss with its gradient in the
loss's continuous hyperparameters and the booster's (``reg_lambda``, ``reg_alpha``,
the learning rate, ...), the tree structures held fixed; ``tune`` follows those
gradients with an optax optimiser, within bounds, retraining every few steps.
"""

from .hypergrad import BOOSTER_PARAMS, SMOOTH_METRICS, HypergradResult, hypergrad
from .tune import DOMAINS, Transform, TuneResult, closed, tune

__all__ = [
    "hypergrad",
    "HypergradResult",
    "tune",
    "TuneResult",
    "BOOSTER_PARAMS",
    "SMOOTH_METRICS",
    "DOMAINS",
    "Transform",
    "closed",
]
