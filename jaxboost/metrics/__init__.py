"""Evaluation metrics (moved from ``jaxboost/metrics.py``; see ``_base``)."""

from ._base import *  # noqa: F401,F403
from ._base import __all__, __doc__, _MeanLoss, _UserFn  # noqa: F401
