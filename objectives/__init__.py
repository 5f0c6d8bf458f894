"""The catalogue of training objectives.

Each entry is an ``Objective``: a plain per-row JAX loss ``loss(y, pred) -> scalar``
(callable directly) with its inverse link, default metric and label check beside it.
Any plain callable with the same signature works wherever an entry does.

Entries here: ``squared``, ``logistic``, ``exponential``.
"""

from ._base import Objective, identity, sigmoid
from .classic import exponential, logistic, squared

__all__ = ["Objective", "identity", "sigmoid", "squared", "logistic", "exponential"]
